// The live per-thread table (tprofctl threads --top): every refresh reads
// each thread's totals (Device::ReadThreadTotals, which takes nothing from
// the read-and-zero consumers a runtime relies on), and the rows are the
// differences from the previous refresh, matched by thread identity (a
// reused tid is a new thread), with %CPU from the on-CPU time metric.
#ifndef TPROF_THREAD_TOP_H_
#define TPROF_THREAD_TOP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tprof/device/device.h"
#include "tprof/base/expected.h"
#include "tprof/device/metrics.h"

namespace tprof {

// One read of every thread's totals.
struct ThreadTotals {
  std::vector<ThreadMetrics> threads;  // values: totals, in the metrics' order
  uint32_t unreadable = 0;  // threads the caller may not read (EACCES)
};

// Reads the totals of every thread of process pid (TPROF_PID_ALL: of every
// process), listed from proc_root/PID/task. Threads that exit meanwhile or
// are not tracked (ESRCH) are left out; ENODATA (accounting off) fails.
[[nodiscard]] Expected<ThreadTotals> ReadThreadTotals(const Device& device, uint32_t pid,
                                                      const std::string& proc_root = "/proc");

struct ThreadTopRow {
  ThreadMetrics thread;     // values: what the interval added
  double cpu_percent = -1;  // of one CPU over the interval; -1: no time metric
};

struct ThreadTopFrame {
  uint64_t interval_ns = 0;
  std::vector<ThreadTopRow> rows;  // threads that moved, heaviest first
  size_t threads = 0;              // threads read
  uint32_t unreadable = 0;
};

// The interval's rows: now - before per thread identity (a thread new in
// `now` counts from zero), threads that did not move left out, sorted by
// the time metric (or the first one) descending, then by tid. time_metric:
// the index of TPROF_METRIC_TIME in the values, or -1.
[[nodiscard]] ThreadTopFrame DiffThreadTotals(const ThreadTotals& before, const ThreadTotals& now,
                                              uint64_t interval_ns, int time_metric);

// The index of the on-CPU time metric in `metrics`, or -1.
int TimeMetricIndex(const std::vector<MetricSpec>& metrics);

}  // namespace tprof

#endif  // TPROF_THREAD_TOP_H_
