// PMU programs: event names, ranges, thresholds and rules -> the
// TPROF_IOC_PMU_CREATE argument (see tprof/pmu_spec.h).
#include <linux/perf_event.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "tprof/base/event_names.h"
#include "tprof/device/pmu_spec.h"

namespace tprof::pmu {
namespace {

Error Invalid(const std::string& what) { return Error::FromErrno(EINVAL, what); }

// A whole unsigned number (decimal or 0x hex).
std::optional<uint64_t> Number(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::string str(s);
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(str.c_str(), &end, 0);
  if (errno || *end || str[0] == '-' || str[0] == '+') return std::nullopt;
  return v;
}

std::optional<int64_t> Signed(std::string_view s) {
  bool neg = !s.empty() && s[0] == '-';
  auto v = Number(neg ? s.substr(1) : s);
  if (!v || *v > uint64_t(INT64_MAX)) return std::nullopt;
  return neg ? -int64_t(*v) : int64_t(*v);
}

bool ValidName(std::string_view n) {
  if (n.empty() || !(std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_')) return false;
  for (char c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// PMU counters' software and hardware events: the shared name table's
// (tprof/event_names.h), with its aliases.
std::map<std::string, uint64_t> PmuEvents(uint32_t type) {
  std::map<std::string, uint64_t> m;
  for (const EventName& e : EventNames()) {
    if (!(e.uses & kUsePmu) || e.type != type) continue;
    m[e.name] = e.config;
    std::istringstream aliases(EventAliases(e.name));
    for (std::string a; aliases >> a;) m[a] = e.config;
  }
  return m;
}

const std::map<std::string, uint64_t, std::less<>>& SoftwareEvents() {
  static const std::map<std::string, uint64_t, std::less<>> m = [] {
    auto events = PmuEvents(TPROF_METRIC_SOFTWARE);
    return std::map<std::string, uint64_t, std::less<>>(events.begin(), events.end());
  }();
  return m;
}

const std::map<std::string, uint64_t, std::less<>>& HardwareEvents() {
  static const std::map<std::string, uint64_t, std::less<>> m = [] {
    auto events = PmuEvents(TPROF_METRIC_HARDWARE);
    return std::map<std::string, uint64_t, std::less<>>(events.begin(), events.end());
  }();
  return m;
}

Expected<uint64_t> TracepointId(std::string_view sys, std::string_view name) {
  for (const char* root : {"/sys/kernel/tracing/events/", "/sys/kernel/debug/tracing/events/"}) {
    std::ifstream in(std::string(root) + std::string(sys) + "/" + std::string(name) + "/id");
    uint64_t id;
    if (in >> id) return id;
  }
  return Error::FromErrno(ENOENT, "no tracepoint " + std::string(sys) + ":" + std::string(name) +
                                      " in /sys/kernel/tracing/events (is tracefs mounted?)");
}

// ADDR or SYMBOL -> address (and the symbol's size, 0 for a number).
Expected<AddressRange> Address(std::string_view text, const SymbolResolver* resolver) {
  if (auto v = Number(text)) return AddressRange{*v, *v};
  if (!resolver) return Invalid("'" + std::string(text) + "' is not an address (no symbols here)");
  return resolver->Find(text);
}

}  // namespace

Expected<EventSpec> ParseEvent(std::string_view text, const SymbolResolver* resolver) {
  EventSpec e;
  if (auto it = SoftwareEvents().find(text); it != SoftwareEvents().end()) {
    e.kind = TPROF_PMU_EV_SOFTWARE;
    e.config = it->second;
    return e;
  }
  auto colon = text.find(':');
  std::string_view head = text.substr(0, colon), tail = colon == std::string_view::npos ? "" : text.substr(colon + 1);
  if (auto it = HardwareEvents().find(head); it != HardwareEvents().end() ||
      (head.size() > 1 && head[0] == 'r' && Number("0x" + std::string(head.substr(1))))) {
    e.kind = it != HardwareEvents().end() ? TPROF_PMU_EV_HARDWARE : TPROF_PMU_EV_RAW;
    e.config = it != HardwareEvents().end() ? it->second : *Number("0x" + std::string(head.substr(1)));
    e.period = kDefaultHardwarePeriod;
    if (colon != std::string_view::npos) {
      auto k = Number(tail);
      if (!k || *k == 0) return Invalid("bad granularity in '" + std::string(text) + "' (want NAME:K, K >= 1)");
      e.period = *k;
    }
    return e;
  }
  if (colon == std::string_view::npos || tail.empty())
    return Error::FromErrno(ENOENT, "unknown event '" + std::string(text) + "'");
  if (head == "bp") {
    auto a = Address(tail, resolver);
    if (!a) return a.error();
    e.kind = TPROF_PMU_EV_BREAKPOINT;
    e.addr = a->start;
    return e;
  }
  if (head == "w" || head == "rw") {
    auto slash = tail.find('/');
    auto a = Address(tail.substr(0, slash), resolver);
    if (!a) return a.error();
    uint64_t len = a->end - a->start;  // a data symbol's whole size; 0 for a number
    if (slash != std::string_view::npos) {
      auto l = Number(tail.substr(slash + 1));
      if (!l) return Invalid("bad watchpoint length in '" + std::string(text) + "'");
      len = *l;
    } else if (len == 0) {
      len = 8;
    }
    // The kernel refuses a range needing more than TPROF_PMU_MAX_WATCH_PIECES
    // debug registers (EINVAL) or more than the CPU has (ENOSPC).
    if (len == 0 || len > TPROF_PMU_MAX_WATCH_LEN || a->start + len - 1 < a->start)
      return Invalid("watchpoint '" + std::string(text) + "' covers " + std::to_string(len) +
                     " bytes: 1 to " + std::to_string(TPROF_PMU_MAX_WATCH_LEN) +
                     " (give /LEN for part of a larger symbol)");
    e.kind = TPROF_PMU_EV_WATCHPOINT;
    e.addr = a->start;
    e.len = len;
    e.flags = head == "w" ? TPROF_PMU_CTR_WATCH_WRITE : TPROF_PMU_CTR_WATCH_READ;
    return e;
  }
  auto id = TracepointId(head, tail);
  if (!id) return id.error();
  e.kind = TPROF_PMU_EV_TRACEPOINT;
  e.config = *id;
  return e;
}

Expected<AddressRange> ParseRange(std::string_view text, const SymbolResolver* resolver) {
  if (auto dash = text.find('-'); dash != std::string_view::npos) {
    auto a = Number(text.substr(0, dash)), b = Number(text.substr(dash + 1));
    if (a && b) {
      if (*a >= *b) return Invalid("empty or inverted range '" + std::string(text) + "'");
      return AddressRange{*a, *b};
    }
  }
  if (auto plus = text.find('+'); plus != std::string_view::npos) {
    auto a = Number(text.substr(0, plus)), n = Number(text.substr(plus + 1));
    if (a && n) {
      if (*n == 0 || *a + *n < *a) return Invalid("empty or wrapping range '" + std::string(text) + "'");
      return AddressRange{*a, *a + *n};
    }
  }
  if (!resolver) return Invalid("'" + std::string(text) + "' is not a range (no symbols here)");
  return resolver->Find(text);
}

std::optional<size_t> ProgramSpec::CounterIndex(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); i++)
    if (names_[i] == name) return i;
  return std::nullopt;
}

Status ProgramSpec::AddCounter(std::string name, EventSpec event, std::optional<AddressRange> range,
                               uint32_t subranges, std::optional<AddressRange> data_range) {
  if (!ValidName(name)) return Invalid("bad counter name '" + name + "' (letters, digits, _)");
  if (CounterIndex(name)) return Invalid("counter '" + name + "' given twice");
  if (names_.size() == TPROF_PMU_MAX_COUNTERS)
    return Invalid("at most " + std::to_string(TPROF_PMU_MAX_COUNTERS) + " counters");
  tprof_pmu_counter c{};
  c.kind = event.kind;
  c.config = event.config;
  c.addr = event.addr;
  c.len = event.len;
  c.flags = event.flags;
  c.period = event.period;
  if (range) {
    c.flags |= TPROF_PMU_CTR_RANGE;
    c.range_start = range->start;
    c.range_end = range->end;
  }
  if (data_range) {
    // The kernel takes [addr, addr + len); it refuses other kinds (EINVAL).
    if (event.kind != TPROF_PMU_EV_SOFTWARE ||
        (event.config != PERF_COUNT_SW_PAGE_FAULTS && event.config != PERF_COUNT_SW_PAGE_FAULTS_MIN &&
         event.config != PERF_COUNT_SW_PAGE_FAULTS_MAJ))
      return Invalid("counter '" + name +
                     "': a data range needs page-faults, minor-faults or major-faults (their faulting address)");
    c.flags |= TPROF_PMU_CTR_DATA_RANGE;
    c.addr = data_range->start;
    c.len = data_range->end - data_range->start;
  }
  c.nr_subranges = subranges;
  names_.push_back(std::move(name));
  counters_.push_back(c);
  return OkStatus();
}

// The name of a counter given without NAME= (`-e cycles`, as perf's -e):
// its event up to the first range, a hardware granularity (":10000") left
// out, every other character that a name cannot hold made '_'
// ("page-faults" -> page_faults, "bp:parse" -> bp_parse).
std::string NameOfEvent(std::string_view event) {
  event = event.substr(0, event.find('@'));
  if (auto colon = event.rfind(':'); colon != std::string_view::npos && colon + 1 < event.size() &&
                                     event.find_first_not_of("0123456789", colon + 1) == std::string_view::npos)
    event = event.substr(0, colon);
  std::string name;
  for (char c : event) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (!name.empty() && std::isdigit(static_cast<unsigned char>(name[0]))) name.insert(0, "_");
  return name;
}

Status ProgramSpec::AddCounter(std::string_view definition, const SymbolResolver* resolver) {
  auto eq = definition.find('=');
  std::string derived;
  if (eq == std::string_view::npos) derived = NameOfEvent(definition);
  std::string_view name = eq == std::string_view::npos ? std::string_view(derived) : definition.substr(0, eq);
  std::string_view rest = eq == std::string_view::npos ? definition : definition.substr(eq + 1);
  // The data range comes last: "@data:" up to the end.
  std::string_view data_text;
  bool has_data = false;
  if (auto d = rest.find("@data:"); d != std::string_view::npos) {
    data_text = rest.substr(d + 6);
    rest = rest.substr(0, d);
    has_data = true;
  }
  auto at = rest.find('@');
  auto event = ParseEvent(rest.substr(0, at), resolver);
  if (!event) return event.error();
  uint32_t subranges = 0;
  // RANGE[/K] -> the range; K into subranges.
  auto parse = [&](std::string_view r) -> Expected<AddressRange> {
    if (auto slash = r.rfind('/'); slash != std::string_view::npos) {
      auto k = Number(r.substr(slash + 1));
      if (!k || *k < 2 || *k > TPROF_PMU_MAX_SUBRANGES)
        return Invalid("bad subrange count in '" + std::string(definition) + "'");
      if (subranges) return Invalid("'" + std::string(definition) + "': /K given twice");
      subranges = uint32_t(*k);
      r = r.substr(0, slash);
    }
    return ParseRange(r, resolver);
  };
  std::optional<AddressRange> range, data_range;
  if (at != std::string_view::npos) {
    auto rr = parse(rest.substr(at + 1));
    if (!rr) return rr.error();
    range = *rr;
  }
  if (has_data) {
    if (subranges)
      return Invalid("'" + std::string(definition) + "': with a data range, /K splits the data range (give it there)");
    auto rr = parse(data_text);
    if (!rr) return rr.error();
    data_range = *rr;
  }
  return AddCounter(std::string(name), *event, range, subranges, data_range);
}

Status ProgramSpec::AddThreshold(std::string_view definition) {
  auto ge = definition.find(">=");
  if (ge == std::string_view::npos) return Invalid("threshold '" + std::string(definition) + "': want NAME>=N[/EVERY]");
  auto idx = CounterIndex(definition.substr(0, ge));
  if (!idx) return Invalid("threshold on unknown counter '" + std::string(definition.substr(0, ge)) + "'");
  std::string_view rest = definition.substr(ge + 2);
  auto slash = rest.find('/');
  auto n = Number(rest.substr(0, slash));
  std::optional<uint64_t> every = uint64_t(0);
  if (slash != std::string_view::npos) every = Number(rest.substr(slash + 1));
  if (!n || *n == 0 || !every || (slash != std::string_view::npos && *every == 0))
    return Invalid("bad threshold '" + std::string(definition) + "' (N >= 1, EVERY >= 1)");
  counters_[*idx].threshold = *n;
  counters_[*idx].threshold_every = *every;
  return OkStatus();
}

Status ProgramSpec::AddRule(std::string_view expression, Rearm rearm) {
  std::string e;
  for (char c : expression)
    if (!std::isspace(static_cast<unsigned char>(c))) e += c;
  const std::string text = e;
  // The comparison: the first of < > (with an optional =).
  size_t op_pos = e.find_first_of("<>");
  if (op_pos == std::string::npos) return Invalid("rule '" + text + "': no comparison (> >= < <=)");
  tprof_pmu_rule r{};
  bool eq = op_pos + 1 < e.size() && e[op_pos + 1] == '=';
  r.op = e[op_pos] == '>' ? (eq ? TPROF_PMU_OP_GE : TPROF_PMU_OP_GT) : (eq ? TPROF_PMU_OP_LE : TPROF_PMU_OP_LT);
  auto constant = Signed(std::string_view(e).substr(op_pos + (eq ? 2 : 1)));
  if (!constant) return Invalid("rule '" + text + "': the right-hand side must be an integer");
  r.constant = *constant;
  std::string lhs = e.substr(0, op_pos);
  if (lhs.empty()) return Invalid("rule '" + text + "': no terms");
  std::map<size_t, __int128> terms;
  std::vector<size_t> order;
  size_t i = 0;
  while (i < lhs.size()) {
    int sign = 1;
    if (lhs[i] == '+' || lhs[i] == '-') {
      sign = lhs[i] == '-' ? -1 : 1;
      i++;
    } else if (i != 0) {
      return Invalid("rule '" + text + "': expected + or - at '" + lhs.substr(i) + "'");
    }
    size_t j = i;
    while (j < lhs.size() && std::isdigit(static_cast<unsigned char>(lhs[j]))) j++;
    __int128 mult = 1;
    if (j > i) {
      auto m = Number(std::string_view(lhs).substr(i, j - i));
      if (!m || *m > uint64_t(TPROF_PMU_MAX_MULTIPLIER))
        return Invalid("rule '" + text + "': multiplier above " + std::to_string(TPROF_PMU_MAX_MULTIPLIER));
      mult = *m;
      if (j < lhs.size() && lhs[j] == '*') j++;
    }
    size_t k = j;
    while (k < lhs.size() && lhs[k] != '+' && lhs[k] != '-') k++;
    std::string name = lhs.substr(j, k - j);
    auto idx = CounterIndex(name);
    if (!idx) return Invalid("rule '" + text + "': unknown counter '" + name + "'");
    if (!terms.count(*idx)) order.push_back(*idx);
    terms[*idx] += sign * mult;
    i = k;
  }
  for (size_t idx : order) {
    __int128 m = terms[idx];
    if (m == 0) continue;  // a - a
    if (m > TPROF_PMU_MAX_MULTIPLIER || m < -TPROF_PMU_MAX_MULTIPLIER)
      return Invalid("rule '" + text + "': multiplier above " + std::to_string(TPROF_PMU_MAX_MULTIPLIER));
    if (r.nr_terms == TPROF_PMU_MAX_TERMS)
      return Invalid("rule '" + text + "': at most " + std::to_string(TPROF_PMU_MAX_TERMS) + " counters");
    r.terms[r.nr_terms].counter = uint32_t(idx);
    r.terms[r.nr_terms].multiplier = int64_t(m);
    r.nr_terms++;
  }
  if (r.nr_terms == 0) return Invalid("rule '" + text + "': every term cancels out");
  if (rules_.size() == TPROF_PMU_MAX_RULES)
    return Invalid("at most " + std::to_string(TPROF_PMU_MAX_RULES) + " rules");
  r.rearm = rearm == Rearm::kOnFalse ? TPROF_PMU_REARM_ON_FALSE : TPROF_PMU_REARM_ONCE;
  rules_.push_back(r);
  rule_texts_.push_back(text);
  return OkStatus();
}

Status ProgramSpec::ArmBy(std::string_view name, size_t rule) {
  auto idx = CounterIndex(name);
  if (!idx) return Invalid("unknown counter '" + std::string(name) + "'");
  if (rule >= rules_.size()) return Invalid("no rule " + std::to_string(rule));
  counters_[*idx].armed_by = uint32_t(rule + 1);
  return OkStatus();
}

tprof_pmu_program ProgramSpec::Build(uint32_t scope, uint32_t pid) const {
  tprof_pmu_program p{};
  p.scope = scope;
  p.pid = pid;
  p.nr_counters = uint32_t(counters_.size());
  p.nr_rules = uint32_t(rules_.size());
  for (size_t i = 0; i < counters_.size(); i++) p.counters[i] = counters_[i];
  for (size_t i = 0; i < rules_.size(); i++) p.rules[i] = rules_[i];
  return p;
}

}  // namespace tprof::pmu
