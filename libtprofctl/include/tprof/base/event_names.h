// Event and metric names: the one table the module also uses
// (linux/tprof_event_names.h), for per-thread metrics, sampling's --event and
// PMU program counters. Raw events are rHEX ("r1c2"), as perf spells them.
#ifndef TPROF_EVENT_NAMES_H_
#define TPROF_EVENT_NAMES_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tprof {

// Where a name is accepted (linux/tprof_event_names.h's TPROF_NAME_*).
enum EventUse : uint32_t { kUseMetric = 1, kUseSample = 2, kUsePmu = 4 };

struct EventName {
  const char* name;    // "page-faults"
  const char* key;     // a metric's JSON key: "page_faults"
  uint32_t type;       // TPROF_METRIC_SOFTWARE, _HARDWARE, _TIME, _DISPATCHES
  uint64_t config;     // PERF_COUNT_*
  uint32_t uses;       // EventUse bits
};

std::span<const EventName> EventNames();
// The entry for a name or alias ("cs") accepted for `use`, or null.
const EventName* FindEventName(std::string_view name, EventUse use);
// The entry of a type and config, or null.
const EventName* FindEvent(uint32_t type, uint64_t config);
// The aliases of a name ("faults" for "page-faults"), space-separated.
std::string EventAliases(std::string_view name);

// "r1c2" for raw code 0x1c2.
std::string RawEventName(uint64_t code);
// rHEX, and "raw:CODE" (hex with 0x, or decimal) where `legacy` is set.
std::optional<uint64_t> ParseRawEventName(std::string_view text, bool legacy = true);

}  // namespace tprof

#endif  // TPROF_EVENT_NAMES_H_
