// PMU programs' specification (uapi/linux/tprof.h, "PMU programs"; design:
// docs/pmu-programs.md); pmu_program.h creates and monitors them.
//
//   SymbolResolver  names -> run-time addresses of a live process
//                   (/proc/PID/maps + ELF symbol tables, libelf; pmu_symbols.cc)
//   ParseEvent      perf-style event names -> EventSpec
//   ProgramSpec     counters "NAME=EVENT[@RANGE][@data:RANGE]", thresholds "NAME>=N[/M]",
//                   rules "3*ins-cyc<0" -> the TPROF_IOC_PMU_CREATE argument
#ifndef TPROF_PMU_SPEC_H_
#define TPROF_PMU_SPEC_H_

#include <linux/tprof.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tprof/base/expected.h"

namespace tprof::pmu {

// The default granularity of hardware and raw counters ("cycles" = "cycles:100000").
constexpr uint64_t kDefaultHardwarePeriod = 100000;

struct EventSpec {
  uint32_t kind = 0;  // enum tprof_pmu_event_kind
  uint64_t config = 0;
  uint64_t addr = 0, len = 0;  // breakpoint / watchpoint
  uint32_t flags = 0;          // TPROF_PMU_CTR_WATCH_*
  uint64_t period = 0;         // hardware / raw granularity K
};

struct AddressRange {
  uint64_t start = 0, end = 0;  // [start, end)
};

class SymbolResolver {
 public:
  // pid 0: the calling process.
  [[nodiscard]] static Expected<SymbolResolver> ForProcess(pid_t pid);
  // "func", "file.c:func" (a local symbol of that source file), or a data
  // symbol: its run-time [start, start + size). ENOENT: not found; EINVAL:
  // the symbol has no size.
  [[nodiscard]] Expected<AddressRange> Find(std::string_view symbol) const;

  struct Symbol {
    std::string name, file;  // file: the STT_FILE before a local symbol, else ""
    uint64_t start = 0, size = 0;
  };

 private:
  std::vector<Symbol> symbols_;
};

// Software: page-faults (faults), minor-faults, major-faults,
// context-switches (cs), cpu-migrations (migrations), alignment-faults,
// emulation-faults. Hardware: cycles, instructions, branches,
// branch-misses, cache-references, cache-misses, with ":K" for the
// granularity (default kDefaultHardwarePeriod); raw "rHEX[:K]".
// Tracepoints "sys:name" (tracefs id). Breakpoint "bp:ADDR|SYMBOL";
// watchpoints "w:ADDR|SYMBOL[/LEN]" (writes) and "rw:..." (reads and
// writes), LEN 1 to TPROF_PMU_MAX_WATCH_LEN (32) bytes at any address
// (default: a data symbol's whole size, 8 for a number). `resolver` may be null: then only numeric addresses.
[[nodiscard]] Expected<EventSpec> ParseEvent(std::string_view text, const SymbolResolver* resolver);
// "0xSTART-0xEND", "0xSTART+LEN" or a symbol.
[[nodiscard]] Expected<AddressRange> ParseRange(std::string_view text, const SymbolResolver* resolver);

enum class Rearm { kOnce, kOnFalse };

class ProgramSpec {
 public:
  // "[NAME=]EVENT[@RANGE[/K]][@data:RANGE[/K]]" (without NAME=, the event
  // names the counter: "page-faults" page_faults, "cycles:10000" cycles,
  // "bp:parse" bp_parse): an instruction range, a
  // data range (page-faults, minor-faults, major-faults only: events whose
  // faulting address is in it; a data symbol stands for its whole size),
  // or both; K splits the range into K counted parts (the data range's
  // when there is one).
  [[nodiscard]] Status AddCounter(std::string_view definition, const SymbolResolver* resolver);
  [[nodiscard]] Status AddCounter(std::string name, EventSpec event,
                                  std::optional<AddressRange> range = {}, uint32_t subranges = 0,
                                  std::optional<AddressRange> data_range = {});
  // "NAME>=N" or "NAME>=N/EVERY".
  [[nodiscard]] Status AddThreshold(std::string_view definition);
  // TERM (('+'|'-') TERM)* OP INTEGER, TERM = [INTEGER['*']]NAME, OP one of
  // > >= < <=; at most 4 distinct names (a name twice is merged).
  [[nodiscard]] Status AddRule(std::string_view expression, Rearm rearm = Rearm::kOnce);
  // Makes counter `name` secondary: it counts from when rule `rule` first fires.
  [[nodiscard]] Status ArmBy(std::string_view name, size_t rule);

  // scope TPROF_PMU_SCOPE_THREAD (pid: a tid), _PROCESS (a pid) or _CPUS
  // (every CPU: pid 0; the kernel refuses it without CAP_PERFMON, EPERM).
  [[nodiscard]] tprof_pmu_program Build(uint32_t scope, uint32_t pid) const;
  const std::vector<std::string>& counter_names() const { return names_; }
  const std::vector<std::string>& rule_texts() const { return rule_texts_; }
  [[nodiscard]] std::optional<size_t> CounterIndex(std::string_view name) const;

 private:
  std::vector<std::string> names_;
  std::vector<tprof_pmu_counter> counters_;
  std::vector<std::string> rule_texts_;
  std::vector<tprof_pmu_rule> rules_;
};

}  // namespace tprof::pmu

#endif  // TPROF_PMU_SPEC_H_
