#include "tprof/analysis/sample_filter.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <set>
#include <string>
#include <vector>

#include "base/text_format.h"

namespace tprof {

namespace {

Error Invalid(const std::string& what) { return Error::FromErrno(EINVAL, what); }

bool ParseU32(std::string_view s, uint32_t* out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// "1.25" with a unit of `unit_ns` nanoseconds, without floating point.
bool ParseDecimal(std::string_view s, uint64_t unit_ns, uint64_t* ns) {
  const size_t dot = s.find('.');
  std::string_view whole = s.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view() : s.substr(dot + 1);
  if (whole.empty() && frac.empty()) return false;
  uint64_t w = 0;
  if (!whole.empty()) {
    auto r = std::from_chars(whole.data(), whole.data() + whole.size(), w);
    if (r.ec != std::errc() || r.ptr != whole.data() + whole.size()) return false;
  }
  if (w > UINT64_MAX / unit_ns) return false;
  uint64_t f = 0, scale = unit_ns;
  for (char c : frac) {
    if (c < '0' || c > '9') return false;
    scale /= 10;  // digits finer than a nanosecond are dropped
    f += static_cast<uint64_t>(c - '0') * scale;
  }
  *ns = w * unit_ns + f;
  return true;
}

bool ParseBound(std::string_view s, TimeBound* out) {
  out->absolute = s.starts_with('@');
  if (out->absolute) s.remove_prefix(1);
  uint64_t unit = out->absolute ? 1 : 1'000'000'000;
  static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {
      {"ns", 1}, {"us", 1'000}, {"ms", 1'000'000}, {"s", 1'000'000'000}};
  for (const auto& [suffix, ns] : kUnits) {
    if (s.ends_with(suffix)) {
      s.remove_suffix(suffix.size());
      unit = ns;
      break;
    }
  }
  return ParseDecimal(s, unit, &out->ns);
}

std::string IdText(const std::vector<uint32_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ids[i]);
    if (j > i) out += "-" + std::to_string(ids[j]);
    i = j;
  }
  return out;
}

std::string BoundText(const std::optional<TimeBound>& b, const char* open) {
  if (!b) return open;
  if (b->absolute) return "@" + std::to_string(b->ns) + " ns";
  std::string s;
  text::Appendf(&s, "%.9f", static_cast<double>(b->ns) / 1e9);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s + " s";
}

uint32_t ReportPid(const SampleKey& key) { return key.idle() ? 0 : key.pid; }

}  // namespace

std::string SampleFilter::Describe() const {
  std::string out;
  auto part = [&out](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
  if (!tids.empty()) part("tid " + IdText(tids));
  if (!cpus.empty()) part("cpu " + IdText(cpus));
  if (!comms.empty()) {
    std::string names;
    for (const std::string& c : comms) names += (names.empty() ? "" : ",") + c;
    part("comm " + names);
  }
  if (start || end) part("time [" + BoundText(start, "start") + ", " + BoundText(end, "end") + ")");
  return out;
}

Expected<std::vector<uint32_t>> ParseIdList(std::string_view text) {
  std::set<uint32_t> ids;
  const std::string what(text);
  while (true) {
    const size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    const size_t dash = item.find('-');
    uint32_t lo = 0, hi = 0;
    if (!ParseU32(item.substr(0, dash), &lo) ||
        !ParseU32(dash == std::string_view::npos ? item : item.substr(dash + 1), &hi) || hi < lo)
      return Invalid("`" + what + "` is not a list of numbers and ranges (e.g. 0-3,7)");
    if (hi - lo >= 1u << 20) return Invalid("`" + what + "`: a range of over 2^20 numbers");
    for (uint64_t i = lo; i <= hi; ++i) ids.insert(static_cast<uint32_t>(i));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return std::vector<uint32_t>(ids.begin(), ids.end());
}

Status ParseTimeRange(std::string_view text, SampleFilter* filter) {
  const size_t comma = text.find(',');
  const std::string what(text);
  if (comma == std::string_view::npos || text.find(',', comma + 1) != std::string_view::npos)
    return Invalid("`" + what + "` is not START,END (e.g. 0.5,1.5; either may be left out)");
  std::optional<TimeBound> bounds[2];
  std::string_view parts[2] = {text.substr(0, comma), text.substr(comma + 1)};
  for (int i = 0; i < 2; ++i) {
    if (parts[i].empty()) continue;
    TimeBound b;
    if (!ParseBound(parts[i], &b))
      return Invalid("`" + std::string(parts[i]) +
                     "` is not a time: seconds from the first sample (0.5, 500ms), or "
                     "@NANOSECONDS on the sampling clock");
    bounds[i] = b;
  }
  if (bounds[0] && bounds[1] && bounds[0]->absolute == bounds[1]->absolute &&
      bounds[1]->ns < bounds[0]->ns)
    return Invalid("`" + what + "`: the end is before the start");
  filter->start = bounds[0];
  filter->end = bounds[1];
  return OkStatus();
}

Expected<Profile> FilterProfile(const Profile& p, const SampleFilter& f) {
  if (f.empty()) return p;
  if (f.NeedsContext() && p.context_granularity_ns == 0)
    return Error::FromErrno(ENODATA,
                            "the profile has no per-sample context (thread, CPU, time): it was "
                            "written by an older tprofctl (format 1.1) or recorded without it");
  const std::set<uint32_t> tids(f.tids.begin(), f.tids.end());
  const std::set<uint32_t> cpus(f.cpus.begin(), f.cpus.end());
  const std::set<std::string> comms(f.comms.begin(), f.comms.end());
  auto comm_ok = [&](const SampleKey& key) {
    if (comms.empty()) return true;
    const uint32_t pid = ReportPid(key);
    return comms.count(pid == 0 ? std::string("idle") : p.ProcessDisplayName(pid)) != 0;
  };

  Profile out = p;
  out.samples.clear();
  out.caller_edges.clear();
  out.stack_samples.clear();
  out.contexts.clear();
  out.lost_samples_in_records = 0;  // LOST records say no thread, CPU or time
  out.lost_records_in_records = 0;
  out.idle_ticks = out.iowait_ticks = 0;  // nor do idle ticks: no thread was sampled
  const bool cpu_only = tids.empty() && comms.empty() && !f.start && !f.end;
  const uint64_t lost_before = p.TotalLostSamples();

  if (p.context_granularity_ns == 0) {
    // --comm alone: the aggregates carry the pid.
    for (const auto& [key, count] : p.samples)
      if (comm_ok(key)) out.samples[key] = count;
    for (const auto& [key, count] : p.caller_edges)
      if (comm_ok(key.sample)) out.caller_edges[key] = count;
    for (const auto& [key, count] : p.stack_samples)
      if (comm_ok(key.sample)) out.stack_samples[key] = count;
  } else {
    const uint64_t g = p.context_granularity_ns;
    auto bucket_of = [&](const TimeBound& b) {
      return (b.absolute ? b.ns : p.first_time_ns + b.ns) / g;
    };
    const std::optional<uint64_t> first_bucket =
        f.start ? std::optional(bucket_of(*f.start)) : std::nullopt;
    const std::optional<uint64_t> end_bucket =
        f.end ? std::optional(bucket_of(*f.end)) : std::nullopt;
    for (auto& [cpu, c] : out.cpus) c.samples = 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const auto& [key, count] : p.contexts) {
      if (!tids.empty() && !tids.count(key.tid)) continue;
      if (!cpus.empty() && !cpus.count(key.cpu)) continue;
      if (first_bucket && key.bucket < *first_bucket) continue;
      if (end_bucket && key.bucket >= *end_bucket) continue;
      if (!comm_ok(key.sample)) continue;
      out.contexts[key] = count;
      out.samples[key.sample] += count;
      if (key.caller) out.caller_edges[{key.sample, key.caller}] += count;
      if (key.stack) out.stack_samples[{key.sample, key.stack}] += count;
      out.cpus[key.cpu].samples += count;
      lo = std::min(lo, key.bucket);
      hi = std::max(hi, key.bucket);
    }
    if (out.samples.empty()) {
      out.first_time_ns = out.last_time_ns = 0;
    } else {
      out.first_time_ns = std::max(p.first_time_ns, lo * g);
      out.last_time_ns = std::min(p.last_time_ns, (hi + 1) * g - 1);
    }
  }
  for (auto it = out.cpus.begin(); it != out.cpus.end();) {
    if (!cpus.empty() && !cpus.count(it->first)) {
      it = out.cpus.erase(it);
      continue;
    }
    CpuTotals& c = it->second;
    if (!cpu_only) {  // a thread's, process's or time's share of the losses is unknown
      c.lost_samples = 0;
      c.lost_records = 0;
    }
    if (c.has_control_totals) c.samples_taken = c.samples + c.lost_samples;
    ++it;
  }
  // The sample records of the selection (a report checks its samples
  // against them; the rest were read but left out).
  out.records.samples = out.TotalSamples();
  std::string what = f.Describe();
  const uint64_t lost_dropped = lost_before - std::min(lost_before, out.TotalLostSamples());
  if (!cpu_only && lost_dropped)
    what += " (" + std::to_string(lost_dropped) +
            " lost samples left out: their thread, process and time are unknown)";
  out.attributes["filter"] = what;
  return out;
}

std::string DescribeSelectable(const Profile& p, const SampleFilter& f) {
  constexpr size_t kShown = 12;
  std::string out;
  auto part = [&out](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
  auto ids = [&](const char* what, const std::set<uint32_t>& set) {
    std::vector<uint32_t> shown;
    for (uint32_t id : set) {
      if (shown.size() == kShown) break;
      shown.push_back(id);
    }
    std::string s = std::string(what) + " " + IdText(shown);
    if (set.size() > kShown) s += " and " + std::to_string(set.size() - kShown) + " more";
    part(s);
  };
  if (!f.tids.empty()) {
    std::set<uint32_t> tids;
    for (const auto& [key, count] : p.contexts) tids.insert(key.tid);
    ids("the sampled threads:", tids);
  }
  if (!f.cpus.empty()) {
    std::set<uint32_t> cpus;
    for (const auto& [cpu, totals] : p.cpus)
      if (totals.samples) cpus.insert(cpu);
    ids("the sampled CPUs:", cpus);
  }
  if (!f.comms.empty()) {
    std::set<std::string> names;
    for (const auto& [key, count] : p.samples) {
      const uint32_t pid = ReportPid(key);
      names.insert(pid == 0 ? std::string("idle") : p.ProcessDisplayName(pid));
    }
    std::string s;
    size_t n = 0;
    for (const std::string& name : names) {
      if (n++ == kShown) break;
      s += (s.empty() ? "" : ", ") + name;
    }
    if (names.size() > kShown) s += " and " + std::to_string(names.size() - kShown) + " more";
    part("the processes: " + s);
  }
  if (f.start || f.end) {
    std::string s;
    text::Appendf(&s, "the samples span 0 to %.2f s (@%llu to @%llu ns on the sampling clock)",
                  static_cast<double>(p.last_time_ns - std::min(p.last_time_ns, p.first_time_ns)) / 1e9,
                  static_cast<unsigned long long>(p.first_time_ns),
                  static_cast<unsigned long long>(p.last_time_ns));
    part(s);
  }
  return out;
}

}  // namespace tprof
