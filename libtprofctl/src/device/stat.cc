#include "tprof/device/stat.h"

#include <linux/perf_event.h>
#include <linux/tprof.h>

#include <algorithm>
#include <cerrno>
#include <utility>

namespace tprof {

namespace {

// The clocks PMU programs take only as counts-only counters.
std::optional<uint64_t> ClockEvent(std::string_view name) {
  if (name == "task-clock") return PERF_COUNT_SW_TASK_CLOCK;
  if (name == "cpu-clock") return PERF_COUNT_SW_CPU_CLOCK;
  return std::nullopt;
}

// Errors that say nothing about the event but about the caller or the
// target: every event would fail the same way.
bool AdmissionError(const std::error_code& code) {
  return code.value() == EACCES || code.value() == EPERM || code.value() == ESRCH ||
         code.value() == ENODEV || code.value() == ENOTTY;
}

}  // namespace

Expected<std::vector<StatEvent>> ParseStatEvents(std::string_view list) {
  std::vector<StatEvent> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    const size_t comma = list.find(',', pos);
    const std::string_view name =
        list.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    pos = comma == std::string_view::npos ? list.size() + 1 : comma + 1;
    if (name.empty()) return Error::FromErrno(EINVAL, "an empty event name in '" + std::string(list) + "'");
    StatEvent e;
    e.name = std::string(name);
    if (auto clock = ClockEvent(name)) {
      e.spec.kind = TPROF_PMU_EV_SOFTWARE;
      e.spec.config = *clock;
      e.clock = true;
    } else {
      auto spec = pmu::ParseEvent(name, nullptr);
      if (!spec) return spec.error();
      e.spec = *spec;
      if (e.spec.kind == TPROF_PMU_EV_BREAKPOINT || e.spec.kind == TPROF_PMU_EV_WATCHPOINT)
        return Error::FromErrno(EINVAL, "'" + e.name +
                                            "' is a breakpoint or watchpoint: count those with "
                                            "`tprofctl pmu watch`");
      if (name.find(':') != std::string_view::npos &&
          (e.spec.kind == TPROF_PMU_EV_HARDWARE || e.spec.kind == TPROF_PMU_EV_RAW))
        return Error::FromErrno(EINVAL, "'" + e.name + "': stat counts every event, no :K granularity");
      e.spec.period = 0;  // counts only
    }
    out.push_back(std::move(e));
  }
  if (out.size() > 64) return Error::FromErrno(EINVAL, "more than 64 events");
  return out;
}

Expected<StatCounters> StatCounters::Start(const Device& device, pid_t pid,
                                           std::vector<StatEvent> events) {
  return Start(device, TPROF_PMU_SCOPE_PROCESS, static_cast<uint32_t>(pid), std::move(events));
}

Expected<StatCounters> StatCounters::StartAllCpus(const Device& device,
                                                  std::vector<StatEvent> events) {
  return Start(device, TPROF_PMU_SCOPE_CPUS, 0, std::move(events));
}

Expected<StatCounters> StatCounters::Start(const Device& device, uint32_t scope, uint32_t pid,
                                           std::vector<StatEvent> events) {
  auto info = device.GetInfo();
  if (!info) return info.error();
  // Counts-only counters came with 1.14, in scope CPUS with 1.15.
  const bool cpus = scope == TPROF_PMU_SCOPE_CPUS;
  const uint32_t needed = cpus ? 15 : 14;
  if (!info->Has(cpus ? TPROF_FEAT_PMU_COUNTS_ONLY_CPUS : TPROF_FEAT_PMU_COUNTS_ONLY))
    return Error::FromErrno(ENOTSUP, std::string(scope == TPROF_PMU_SCOPE_CPUS
                                                     ? "counting every CPU"
                                                     : "counting") +
                                         " needs a module of ABI 1." + std::to_string(needed) +
                                         " or later (this one is " + info->AbiVersionString() +
                                         "): load this tprof's tprof.ko");
  StatCounters s;
  s.events_ = std::move(events);
  for (const StatEvent& e : s.events_) {
    tprof_pmu_program p{};
    p.scope = scope;
    p.pid = pid;
    p.nr_counters = 1;
    tprof_pmu_counter& c = p.counters[0];
    c.kind = e.spec.kind;
    c.config = e.spec.config;
    c.flags = TPROF_PMU_CTR_COUNT;
    auto program = pmu::Program::Create(device, p);
    if (!program && AdmissionError(program.error().code())) return program.error();
    s.errors_.push_back(program ? std::error_code() : program.error().code());
    s.programs_.push_back(program ? std::optional<pmu::Program>(std::move(*program)) : std::nullopt);
  }
  return s;
}

Expected<std::vector<StatCount>> StatCounters::Read() const {
  std::vector<StatCount> out;
  uint64_t exec_left = 0;
  for (size_t i = 0; i < events_.size(); ++i) {
    StatCount c;
    c.name = events_[i].name;
    c.clock = events_[i].clock;
    c.error = errors_[i];
    if (programs_[i]) {
      auto v = programs_[i]->Read();
      if (!v) return v.error();
      c.value = v->values[0];
      exec_left = std::max<uint64_t>(exec_left, v->exec_left);
    }
    out.push_back(std::move(c));
  }
  exec_left_ = exec_left;
  return out;
}

}  // namespace tprof
