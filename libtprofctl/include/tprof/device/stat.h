// Counting a process's events as `perf stat` does: one counts-only PMU
// program (TPROF_PMU_CTR_COUNT, ABI 1.14) per event over the process, its
// threads and the processes it creates from then on, or over every CPU
// (ABI 1.15, perf stat -a), read when it is done.
// One program per event, so that an event this machine cannot count (no
// hardware PMU under QEMU's TCG) leaves the others counting.
#ifndef TPROF_STAT_H_
#define TPROF_STAT_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "tprof/device/device.h"
#include "tprof/base/expected.h"
#include "tprof/device/pmu_program.h"

namespace tprof {

// perf stat's default events, those tprof counts (perf's stalled-cycles
// need raw events).
inline constexpr std::string_view kDefaultStatEvents =
    "task-clock,context-switches,cpu-migrations,page-faults,cycles,instructions,branches,"
    "branch-misses";

struct StatEvent {
  std::string name;  // as given ("cs" stays "cs")
  pmu::EventSpec spec;
  bool clock = false;  // task-clock or cpu-clock: the count is ns of CPU time
};

// A comma-separated list of event names: software and hardware events
// (tprofctl pmu list), task-clock, cpu-clock, rHEX and SYS:TRACEPOINT.
// EINVAL or ENOENT naming the event that is not one.
[[nodiscard]] Expected<std::vector<StatEvent>> ParseStatEvents(std::string_view list);

struct StatCount {
  std::string name;
  bool clock = false;
  std::optional<uint64_t> value;  // nullopt: not counted (error says why)
  std::error_code error;
};

class StatCounters {
 public:
  // Starts counting `events` of process `pid`. Fails as a whole when no
  // event can be counted for a reason that is not the event's own (the
  // admission: EACCES, EPERM, ESRCH; a module older than ABI 1.14: ENOTSUP).
  [[nodiscard]] static Expected<StatCounters> Start(const Device& device, pid_t pid,
                                                    std::vector<StatEvent> events);
  // Starts counting `events` on every CPU, every task (perf stat -a; scope
  // CPUS, ABI 1.15): CAP_PERFMON or CAP_SYS_ADMIN (else EPERM). A CPU that
  // goes offline keeps what it counted in the sums.
  [[nodiscard]] static Expected<StatCounters> StartAllCpus(const Device& device,
                                                           std::vector<StatEvent> events);
  // Every event's count so far, in the order given.
  [[nodiscard]] Expected<std::vector<StatCount>> Read() const;
  // Threads that exec'd an image the caller may not see: not counted from
  // that exec on (perf stops there too).
  [[nodiscard]] uint64_t exec_left() const { return exec_left_; }

 private:
  [[nodiscard]] static Expected<StatCounters> Start(const Device& device, uint32_t scope,
                                                    uint32_t pid, std::vector<StatEvent> events);
  std::vector<StatEvent> events_;
  std::vector<std::optional<pmu::Program>> programs_;  // nullopt where errors_ says why
  std::vector<std::error_code> errors_;
  mutable uint64_t exec_left_ = 0;
};

}  // namespace tprof

#endif  // TPROF_STAT_H_
