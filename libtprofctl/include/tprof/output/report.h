// Reports of a Profile: (a) per process, its samples split
// into kernel / user (main executable) / shared library,
// with idle/wait and lost-sample rows; (b) per function within each process
// and space, by count. Formats: aligned text, JSON, and folded stacks
// ("process;caller;function count") for flame-graph tools.
//
// Percentages are of every sample taken: delivered + lost, so the process
// rows, the idle row and the lost row add up to 100%. Idle samples (pid 0,
// or TPROF_SAMPLE_IDLE) form their own row, "idle" with pid 0.
#ifndef TPROF_REPORT_H_
#define TPROF_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tprof/analysis/profile.h"
#include "tprof/analysis/symbolizer.h"

namespace tprof {

enum class ReportFormat { kText, kJson, kFolded };
// kCaller: per process, each caller -> callee pair of the stacks with the
// samples whose stack holds it (perf report's caller view, flattened).
// kThread / kCpu: samples per thread / per CPU (threads from the
// per-sample context, Profile::contexts).
enum class ReportBy { kAll, kProcess, kSymbol, kCaller, kThread, kCpu };

// The order of a function table: by samples (self, or inclusive with
// children), by function name, or by space (the spaces heaviest first,
// each one's functions by samples).
enum class ReportSort { kSamples, kFunction, kSpace };

// Text tables leave out the rows under this share (of their process's
// samples, or of all samples for the process table), as perf report's
// call graphs do below 0.5%; JSON keeps every row unless asked.
inline constexpr double kDefaultTextPercentLimit = 0.5;

struct ReportOptions {
  ReportBy by = ReportBy::kAll;
  std::optional<uint32_t> pid;  // only this process (0: the idle row)
  size_t top = 0;               // rows per table; 0 = all
  // Rows under this percentage are left out, summed per space (function
  // tables) or in one row (processes). nullopt: kDefaultTextPercentLimit
  // in text, 0 in JSON.
  std::optional<double> percent_limit;
  ReportSort sort = ReportSort::kSamples;
  // Function tables show inclusive samples ("children", the samples whose
  // stack holds the function, as perf report --children) beside the
  // self samples, sorted by them.
  bool children = false;
};

// One process's samples by space (FIG. 1).
struct ProcessSummary {
  uint32_t pid = 0;
  std::string name;
  uint64_t samples = 0;
  uint64_t kernel = 0;      // kernel and modules
  uint64_t user = 0;        // main executable
  uint64_t shared = 0;      // shared libraries, [vdso]
  uint64_t jit = 0;         // perf-map JIT code
  uint64_t unresolved = 0;  // user addresses in no known mapping
};

struct FunctionRow {
  Location location;   // of the function's hottest address (for its line)
  std::string space;   // Location::SpaceName()
  std::string function;  // Location::FunctionName()
  uint64_t samples = 0;    // self: the function was the sampled leaf
  uint64_t inclusive = 0;  // its stack held the function (once per sample)
};

// A caller -> callee step of the samples' stacks (functions as in
// FunctionRow), with the samples whose stack takes that step.
struct CallerRow {
  std::string caller_space, caller;
  std::string callee_space, callee;
  uint64_t samples = 0;
};

struct ThreadSummary {
  uint32_t tid = 0;
  uint32_t pid = 0;  // the report's pid: 0 for idle
  std::string name;  // the process's
  uint64_t samples = 0;
};

struct CpuSummary {
  uint32_t cpu = 0;
  uint64_t samples = 0;  // delivered (of the selected pid, if any)
  uint64_t lost_samples = 0;
};

struct ProcessFunctions {
  uint32_t pid = 0;
  std::string name;
  uint64_t samples = 0;
  std::vector<FunctionRow> functions;  // by samples (children: inclusive), descending
  std::vector<CallerRow> callers;      // by samples, descending
};

// What a report's selected samples are made of, for the warnings a
// distorted profile gets (SampleShareWarnings).
struct SampleShares {
  uint64_t samples = 0;            // selected, idle left out
  uint64_t kernel = 0;             // of them in the kernel or a module
  uint64_t unresolved_kernel = 0;  // of those, without a function name
  uint64_t recorder = 0;           // the recorder's own (attribute recorder_pid)
};

struct ReportData {
  uint64_t all_samples = 0;  // delivered + lost: the base of percentages
  uint64_t samples = 0;      // delivered (of the selected pid, if any)
  uint64_t lost_samples = 0;
  uint64_t lost_records = 0;
  uint64_t idle_samples = 0;
  uint64_t unresolved_samples = 0;      // at addresses without a function name
  SampleShares shares;
  std::vector<ProcessSummary> processes;  // by samples, descending; idle excluded
  std::vector<ProcessFunctions> functions;  // by samples, descending; idle as pid 0
  // With ReportBy::kThread / kCpu only, by samples, descending. Threads
  // need the context table: has_context says whether there was one.
  std::vector<ThreadSummary> threads;
  std::vector<CpuSummary> cpus;
  bool has_context = false;
};

ReportData BuildReport(const Profile& profile, Symbolizer& symbolizer,
                       const ReportOptions& options);
// One stack of the folded output, root first: the process name, the
// callers (the whole stack where recorded, else the caller where known),
// the sampled function. Kernel frames end in "_[k]";
// ';' in a name reads ':' (it separates folded frames). The flame graph
// and speedscope exports (flamegraph.h, speedscope.h) draw these rows.
struct StackRow {
  uint32_t pid = 0;                 // the report's pid: 0 for idle
  std::vector<std::string> frames;  // root first
  uint64_t samples = 0;
};

// The stacks of the selected samples, sorted by their folded text (pid
// second), one row per distinct (pid, frames); the samples add up to the
// delivered samples of the selection.
[[nodiscard]] std::vector<StackRow> FoldedStackRows(const Profile& profile,
                                                    Symbolizer& symbolizer,
                                                    const ReportOptions& options);
// Folded stacks, heaviest first (then by text): "name;root;...;function
// count" with the whole stack where one was recorded, "name;caller;function
// count" with only the caller, "name;function count" without either (the
// rows above, processes of the same name summed).
std::string FoldedStacks(const Profile& profile, Symbolizer& symbolizer,
                         const ReportOptions& options);
// The clock rate a recording of every CPU achieved: the samples it took
// (delivered and lost) per second per CPU between its first and last
// sample, beside the rate it asked for. Low when under half of it: the
// machine could not take samples that fast, and the profile then measures
// the sampler as much as the workload (perf throttles and warns there).
struct SamplingRate {
  double requested_hz = 0;
  double achieved_hz = 0;
  bool low = false;
  bool tick = false;  // in the scheduler tick: requested_hz is HZ
};
// nullopt where the profile cannot say: a process's recording (it runs
// only part of the time), samples on an event, a filtered profile, a span
// under half a second.
[[nodiscard]] std::optional<SamplingRate> AchievedSamplingRate(const Profile& profile);
// The warning a low rate gets, with what to do ("" when not low).
[[nodiscard]] std::string LowRateWarning(const SamplingRate& rate);

// When perf throttled the sampling: the clock rate asked for (-F) is above
// kernel.perf_event_max_sample_rate as the recording ended, which perf
// applies to every counter, in-kernel ones too (it lowers the limit
// itself when sample handlers take too long). The warning says so, with
// what to do; "" when not throttled or the file does not say.
[[nodiscard]] std::string ThrottleWarning(const Profile& profile);

// The clock's sampling period in ns (1e9 / frequency_hz): what one sample
// of a CPU stands for. 0 for a profile sampled on an event's overflows.
[[nodiscard]] uint64_t SamplingPeriodNs(const Profile& profile);

// SampleShares of the samples a report selects.
[[nodiscard]] SampleShares CountSampleShares(const Profile& profile, Symbolizer& symbolizer,
                                             const ReportOptions& options);
// The warnings of a distorted profile, a line each with why and what to
// do ("" when none): a tenth or more of the samples at kernel addresses
// without a name; a twentieth or more the recorder's own (a recording of
// every process samples tprofctl too).
[[nodiscard]] std::string SampleShareWarnings(const Profile& profile, const SampleShares& shares);

// The whole report in one format (kFolded ignores `by` and `top`).
std::string RenderReport(const Profile& profile, Symbolizer& symbolizer,
                         const ReportOptions& options, ReportFormat format);

}  // namespace tprof

#endif  // TPROF_REPORT_H_
