// tprofctl dump: reports of a recorded profile (tprof.data).
#ifndef TPROF_TOOLS_TPROFCTL_DUMP_H_
#define TPROF_TOOLS_TPROFCTL_DUMP_H_

#include <optional>
#include <string>

#include "command_line.h"
#include "tprof/analysis/profile_file.h"
#include "tprof/output/report.h"
#include "tprof/analysis/sample_filter.h"

namespace tprof::cli {

struct DumpOptions {
  std::string input = kDefaultProfilePath;
  std::optional<std::string> output;  // the report's file (default stdout)
  ReportOptions report;
  std::string format = "text";  // text, json, folded, svg, speedscope, pprof
  SampleFilter filter;          // dump: --tid, --cpu, --comm, --time
  std::string symfs;            // dump --symfs: a `tprofctl archive` directory
};

// Adds --by, --top, --percent-limit, --sort and --format (the report's
// shape), which record shares.
void AddReportOptions(CLI::App* sub, DumpOptions& o);

// The usage error of --top, --by, --percent-limit or --sort with an export format (folded, svg,
// speedscope, pprof), which has no tables to cut or group; "" if none.
// record asks before it records anything.
[[nodiscard]] std::string ShapeConflict(const DumpOptions& o);

// Prints (or writes) the report; returns the exit status.
int RunDump(const DumpOptions& o);

}  // namespace tprof::cli

#endif  // TPROF_TOOLS_TPROFCTL_DUMP_H_
