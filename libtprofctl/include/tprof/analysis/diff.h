// Comparing two recorded profiles (tprofctl diff A B): per function or per
// process, each row's share of A's and of B's samples, the change in
// percentage points and the sample counts.
//
// Each profile's rows come from BuildReport (report.h), so a function is
// what the report calls one: (space, function name) within a process. Pids
// differ between recordings, so rows are matched by process name (the
// report's name: the comm, "idle" for the idle/wait samples) instead; the
// processes of one name are added up. Shares are of every sample a
// profile took (delivered + lost), as in the report. Rows are sorted by the
// absolute change in points, largest first; a row found in one profile
// only is shown with 0 samples in the other.
#ifndef TPROF_DIFF_H_
#define TPROF_DIFF_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tprof/analysis/profile.h"
#include "tprof/output/report.h"
#include "tprof/analysis/symbolizer.h"

namespace tprof {

// Version of the JSON output's layout: a new field keeps it, a changed
// or removed one raises it.
inline constexpr int kDiffJsonFormatVersion = 1;

enum class DiffBy { kFunction, kProcess };
enum class DiffFormat { kText, kJson };

struct DiffOptions {
  DiffBy by = DiffBy::kFunction;
  std::optional<uint32_t> pid;  // only this pid in both profiles (0: idle)
  size_t top = 0;               // rows shown; 0 = all
};

// What the header says about one profile.
struct DiffSide {
  std::string label;          // e.g. the file's path
  uint64_t samples_taken = 0;  // delivered + lost: the base of its shares
  uint64_t samples = 0;       // delivered (of the selected pid, if any)
  uint64_t lost_samples = 0;
  uint64_t duration_ns = 0;   // first to last sample; 0 if unknown
  std::string frequency_hz;   // the recorder's attribute; "" if unknown
};

struct DiffRow {
  std::string process;   // process name ("idle" for idle/wait)
  std::string space;     // Location::SpaceName(); "" in process rows
  std::string function;  // Location::FunctionName(); "" in process rows
  uint64_t samples_a = 0;
  uint64_t samples_b = 0;
  double percent_a = 0;  // of A's samples taken
  double percent_b = 0;

  double delta_points() const { return percent_b - percent_a; }
  int64_t delta_samples() const {
    return static_cast<int64_t>(samples_b) - static_cast<int64_t>(samples_a);
  }
};

struct DiffData {
  DiffBy by = DiffBy::kFunction;
  DiffSide a, b;
  std::vector<DiffRow> rows;  // every row, by |delta_points|, descending
};

// One profile to compare: what it is called in the output and how to
// resolve its addresses.
struct DiffInput {
  const Profile& profile;
  Symbolizer& symbolizer;
  std::string label;
};

// The rows of two reports (the core of BuildDiff; the ReportData must come
// from BuildReport). Ignores options.top: every row is returned.
[[nodiscard]] std::vector<DiffRow> DiffReports(const ReportData& a, const ReportData& b,
                                               DiffBy by);
[[nodiscard]] DiffData BuildDiff(const DiffInput& a, const DiffInput& b,
                                 const DiffOptions& options);
// Text: a header line per profile, then the table. JSON: format_version,
// the two sides, the rows with decimal percentages; --top applies to both.
[[nodiscard]] std::string RenderDiff(const DiffData& diff, const DiffOptions& options,
                                     DiffFormat format);

}  // namespace tprof

#endif  // TPROF_DIFF_H_
