#include "tprof/base/event_names.h"

#include <linux/perf_event.h>
#include <linux/tprof.h>

#include <charconv>
#include <cstdio>

#include <linux/tprof_event_names.h>

namespace tprof {

namespace {

#define TPROF_EVENT_ENTRY(name, key, type, config, uses) {name, key, type, config, uses},
constexpr EventName kEventNames[] = {TPROF_EVENT_NAMES(TPROF_EVENT_ENTRY)};
#undef TPROF_EVENT_ENTRY

struct Alias {
  const char* alias;
  const char* name;
};
#define TPROF_EVENT_ALIAS(alias, name) {alias, name},
constexpr Alias kAliases[] = {TPROF_EVENT_ALIASES(TPROF_EVENT_ALIAS)};
#undef TPROF_EVENT_ALIAS

static_assert(kUseMetric == TPROF_NAME_METRIC && kUseSample == TPROF_NAME_SAMPLE &&
              kUsePmu == TPROF_NAME_PMU);

std::optional<uint64_t> Hex(std::string_view s, int base) {
  uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::span<const EventName> EventNames() { return kEventNames; }

const EventName* FindEventName(std::string_view name, EventUse use) {
  for (const Alias& a : kAliases)
    if (name == a.alias) name = a.name;
  for (const EventName& e : kEventNames)
    if (name == e.name) return (e.uses & use) ? &e : nullptr;
  return nullptr;
}

const EventName* FindEvent(uint32_t type, uint64_t config) {
  for (const EventName& e : kEventNames)
    if (e.type == type && e.config == config) return &e;
  return nullptr;
}

std::string EventAliases(std::string_view name) {
  std::string out;
  for (const Alias& a : kAliases)
    if (name == a.name) out += (out.empty() ? "" : " ") + std::string(a.alias);
  return out;
}

std::string RawEventName(uint64_t code) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "r%llx", static_cast<unsigned long long>(code));
  return buf;
}

std::optional<uint64_t> ParseRawEventName(std::string_view text, bool legacy) {
  if (legacy && text.substr(0, 4) == "raw:") {
    std::string_view code = text.substr(4);
    if (code.substr(0, 2) == "0x" || code.substr(0, 2) == "0X") return Hex(code.substr(2), 16);
    return Hex(code, 10);
  }
  if (text.size() > 1 && text[0] == 'r') return Hex(text.substr(1), 16);
  return std::nullopt;
}

}  // namespace tprof
