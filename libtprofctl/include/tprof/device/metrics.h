// Per-thread metrics (docs/design.md, "Per-thread metrics"): which metrics to account, and the
// records the module hands back (read-and-zero of one thread, and the drain
// of every thread whose accumulators are nonzero). Device (device.h) has
// the calls; this header has the types and the metric names.
#ifndef TPROF_METRICS_H_
#define TPROF_METRICS_H_

#include <linux/tprof.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tprof/base/expected.h"

namespace tprof {

// One metric to account, e.g. {TPROF_METRIC_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS}.
struct MetricSpec {
  uint32_t type = TPROF_METRIC_NONE;  // enum tprof_metric_type
  uint64_t config = 0;

  bool operator==(const MetricSpec&) const = default;
};

// The name tprofctl shows and accepts: "time", "dispatches", "page-faults",
// "context-switches", "cpu-migrations", "cycles", "instructions", "raw:0x1c2"...
std::string MetricName(const MetricSpec& metric);
// The JSON key of a metric: "time_ns", "dispatches", "page_faults"...
std::string MetricKey(const MetricSpec& metric);
// Parses a comma-separated list of names (see MetricName); EINVAL with a
// message listing the known names on error.
Expected<std::vector<MetricSpec>> ParseMetricList(std::string_view list);
// Every name ParseMetricList accepts (raw:CODE aside).
std::vector<std::string> KnownMetricNames();

// One thread's deltas since it was last read or drained.
struct ThreadMetrics {
  uint32_t pid = 0;       // thread group id
  uint32_t tid = 0;
  uint64_t identity = 0;  // differs when a tid is reused by a new thread
  bool exited = false;    // final report of a thread that exited
  std::string comm;
  std::vector<uint64_t> values;  // in the order of the enabled metrics
};

struct DrainResult {
  std::vector<ThreadMetrics> threads;
  uint32_t remaining = 0;           // listed threads left for another call
  uint64_t untracked_threads = 0;   // threads the kernel table could not hold
};

struct MetricsStatus {
  bool enabled = false;
  std::vector<MetricSpec> metrics;
  uint32_t table_capacity = 0;
  uint32_t table_used = 0;
  uint64_t untracked_threads = 0;
  uint64_t reclaimed_threads = 0;  // exited threads dropped undrained (table full)
  uint64_t index_rehashes = 0;     // thread-index rebuilds since enable (diagnostics)
  uint64_t uncounted_switches = 0;  // slices whose event metrics were missed (a CPU just online)
  uint32_t listed = 0;
};

// Converts a kernel record; exposed for tests.
ThreadMetrics ThreadMetricsFromRecord(const tprof_thread_metrics& record);

}  // namespace tprof

#endif  // TPROF_METRICS_H_
