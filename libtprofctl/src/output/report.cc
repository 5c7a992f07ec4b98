#include "tprof/output/report.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "output/function_rows.h"
#include "base/json.h"
#include "base/text_format.h"
#include "tprof/analysis/stacks.h"

namespace tprof {

namespace {

using text::Appendf;
using text::BaseName;
using text::Percent;


std::string SourceText(const Location& loc, bool full_path) {
  if (loc.source_file.empty()) return "";
  return (full_path ? loc.source_file : BaseName(loc.source_file)) + ":" +
         std::to_string(loc.line);
}

bool IsKernel(const Location& loc) {
  return loc.kind == SpaceKind::kKernel || loc.kind == SpaceKind::kModule;
}

// One frame of a folded stack: ';' separates frames and a line is one
// stack, so neither may appear in a name.
std::string Frame(const std::string& name, bool kernel) {
  std::string out = name;
  for (char& c : out) {
    if (c == ';') c = ':';
    if (c == '\n' || c == '\r') c = ' ';
  }
  return kernel ? out + "_[k]" : out;
}

// A folded line's frames: "process;caller;function".
std::string FoldedText(const std::vector<std::string>& frames) {
  std::string text;
  for (const std::string& f : frames) text += (text.empty() ? "" : ";") + f;
  return text;
}

uint32_t ReportPid(const SampleKey& key) { return key.idle() ? 0 : key.pid; }

bool Selected(const ReportOptions& o, const SampleKey& key) {
  return !o.pid || *o.pid == ReportPid(key);
}

std::string ReportName(const Profile& p, uint32_t pid) {
  return pid == 0 ? "idle" : p.ProcessDisplayName(pid);
}

// The recorder's pid where it may have sampled itself (a recording of
// every process), from the attribute the Recorder writes.
std::optional<uint32_t> RecorderPid(const Profile& p) {
  auto it = p.attributes.find(kRecorderPid);
  if (it == p.attributes.end()) return std::nullopt;
  char* end = nullptr;
  const unsigned long pid = std::strtoul(it->second.c_str(), &end, 10);
  if (end == it->second.c_str() || *end != '\0' || pid == 0 || pid > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(pid);
}

size_t Limit(size_t rows, size_t top) { return top ? std::min(rows, top) : rows; }

double PercentLimit(const ReportOptions& o, ReportFormat format) {
  return o.percent_limit.value_or(format == ReportFormat::kText ? kDefaultTextPercentLimit : 0);
}

// How many of the rows, heaviest first, a table shows: those with at least
// `percent` of `base`, at most `top`. One process asked for (--pid) shows.
template <typename Row>
size_t ShownRows(const std::vector<Row>& rows, uint64_t base, double percent, size_t top,
                 const ReportOptions& o) {
  size_t n = 0;
  const double floor = percent / 100.0 * static_cast<double>(base);
  while (n < rows.size() && (o.pid || static_cast<double>(rows[n].samples) >= floor)) ++n;
  return Limit(n, top);
}

}  // namespace

std::optional<SamplingRate> AchievedSamplingRate(const Profile& p) {
  auto attribute = [&p](const char* key) {
    auto it = p.attributes.find(key);
    return it == p.attributes.end() ? std::string() : it->second;
  };
  const std::string hz = attribute("frequency_hz");
  if (attribute("pid") != "all" || hz.empty() || hz == "0" || p.attributes.count("filter") ||
      p.cpus.empty() || p.last_time_ns < p.first_time_ns + 500'000'000)
    return std::nullopt;
  SamplingRate r;
  r.requested_hz = std::strtod(hz.c_str(), nullptr);
  if (!(r.requested_hz > 0)) return std::nullopt;
  const double seconds = static_cast<double>(p.last_time_ns - p.first_time_ns) / 1e9;
  // A tick-sampled CPU's idle ticks are its samples of idle.
  r.achieved_hz =
      static_cast<double>(p.TotalSamples() + p.TotalLostSamples() + p.idle_ticks) / seconds /
      static_cast<double>(p.cpus.size());
  r.low = r.achieved_hz < r.requested_hz / 2;
  r.tick = attribute(kSamplingClock) == "tick";
  return r;
}

std::string LowRateWarning(const SamplingRate& rate) {
  if (!rate.low) return "";
  std::string out;
  if (rate.tick) {
    Appendf(&out,
            "warning: %.0f samples per second per CPU were taken in the scheduler tick, which "
            "runs at HZ %.0f: the kernel's tick is not the hrtimer tprof hooks (highres timers "
            "off?), so most of it was not seen; record again with --clock perf\n",
            rate.achieved_hz, rate.requested_hz);
    return out;
  }
  Appendf(&out,
          "warning: %.0f samples per second per CPU were taken of the %.0f asked for: the "
          "machine could not sample that fast, so the profile shows the sampler's own cost "
          "(interrupts, softirqs) as much as the workload; record again with a lower -F\n",
          rate.achieved_hz, rate.requested_hz);
  return out;
}

namespace {

// A numeric attribute, 0 when absent.
unsigned long long NumberAttribute(const Profile& p, const char* key) {
  auto it = p.attributes.find(key);
  return it == p.attributes.end() ? 0 : std::strtoull(it->second.c_str(), nullptr, 10);
}

}  // namespace

std::string ThrottleWarning(const Profile& p) {
  const unsigned long long hz = NumberAttribute(p, "frequency_hz"),
                           start = NumberAttribute(p, kPerfMaxRateAtStart),
                           end = NumberAttribute(p, kPerfMaxRateAtEnd);
  if (hz == 0 || end == 0 || hz <= end) return "";
  std::string out;
  if (start > end)
    Appendf(&out,
            "warning: the kernel lowered kernel.perf_event_max_sample_rate from %llu to %llu Hz "
            "during the recording (sample handlers took too long; dmesg says \"perf: interrupt "
            "took too long\"), and perf throttles every counter above it: samples at -F %llu "
            "are missing; record again with -F %llu or less\n",
            start, end, hz, end);
  else
    Appendf(&out,
            "warning: -F %llu is above kernel.perf_event_max_sample_rate (%llu Hz), and perf "
            "throttles every counter above it: samples are missing; record with -F %llu or "
            "less, or raise the limit (sysctl kernel.perf_event_max_sample_rate)\n",
            hz, end, end);
  return out;
}

uint64_t SamplingPeriodNs(const Profile& p) {
  auto it = p.attributes.find("frequency_hz");
  if (it == p.attributes.end()) return 0;
  char* end = nullptr;
  const unsigned long long hz = std::strtoull(it->second.c_str(), &end, 10);
  if (end == it->second.c_str() || *end != '\0' || hz == 0) return 0;
  return 1000000000ULL / hz;
}

SampleShares CountSampleShares(const Profile& p, Symbolizer& sym, const ReportOptions& o) {
  SampleShares k;
  const std::optional<uint32_t> recorder = RecorderPid(p);
  for (const auto& [key, count] : p.samples) {
    if (!Selected(o, key) || key.idle()) continue;
    k.samples += count;
    if (recorder && key.pid == *recorder) k.recorder += count;
    if (key.user()) continue;
    k.kernel += count;
    if (!sym.Resolve(key).resolved()) k.unresolved_kernel += count;
  }
  return k;
}

std::string SampleShareWarnings(const Profile& p, const SampleShares& k) {
  std::string out;
  if (k.samples == 0) return out;
  if (k.unresolved_kernel * 10 >= k.samples) {
    Appendf(&out,
            "warning: %.0f%% of the samples (%" PRIu64 " of %" PRIu64
            ", idle left out) are kernel addresses without a function name",
            Percent(k.unresolved_kernel, k.samples), k.unresolved_kernel, k.samples);
    if (!p.kernel_symbols.available)
      out += ": the kernel's symbols were not captured (" +
             (p.kernel_symbols.note.empty() ? std::string("no /proc/kallsyms")
                                            : p.kernel_symbols.note) +
             "); record as root or with CAP_SYSLOG, or with kernel.kptr_restrict=0\n";
    else
      out += ": they are outside the symbols captured with the recording (BPF programs, "
             "modules loaded or code patched since); see /proc/kallsyms and `bpftool prog`\n";
  }
  if (k.recorder * 20 >= k.samples)
    Appendf(&out,
            "warning: %.0f%% of the samples (%" PRIu64 " of %" PRIu64
            ") are the recorder's own (tprofctl, pid %u), which drains and decodes the "
            "samples: record at a lower -F, or with larger buffers (--buffer-kb) so that it "
            "wakes less often\n",
            Percent(k.recorder, k.samples), k.recorder, k.samples, *RecorderPid(p));
  return out;
}

namespace {

// One attribute of the recording as a reader wants it: named, with its
// unit ("frequency_hz: 1000" reads "sampling: on the clock, 1000 Hz per
// CPU"). Keys this does not know print as they are.
void TextAttribute(const Profile& p, const std::string& key, const std::string& value,
                   std::string* out) {
  const unsigned long long n = std::strtoull(value.c_str(), nullptr, 10);
  auto attribute = [&p](const char* k) {
    auto it = p.attributes.find(k);
    return it == p.attributes.end() ? std::string("0") : it->second;
  };
  if (key == kSamplingClock)
    return;  // said with frequency_hz
  if (key == kAggregateSlots) {
    Appendf(out, "counted in the module: tables of %llu entries per CPU, read a few times a second\n",
            n);
    return;
  }
  if (key == kAggregateOverflowed) {
    if (n)
      Appendf(out, "counted in the module: %llu samples found their table full and came as records\n",
              n);
    return;
  }
  if (key == "frequency_hz" && n > 0 && p.attributes.count(kSamplingClock))
    Appendf(out, "sampling: in the scheduler tick, HZ %llu per busy CPU\n", n);
  else if (key == "frequency_hz" && n > 0)
    Appendf(out, "sampling: on the clock, %llu Hz per CPU\n", n);
  else if (key == "frequency_hz")
    Appendf(out, "sampling: on an event's overflows\n");
  else if (key == "half_bytes")
    Appendf(out, "buffers: two halves of %llu KiB per CPU\n", n / 1024);
  else if (key == "pid" && value == "all")
    Appendf(out, "recorded: every process\n");
  else if (key == "pid")
    Appendf(out, "recorded: process %s and the processes it created\n", value.c_str());
  else if (key == "kernel_release")
    Appendf(out, "kernel: %s\n", value.c_str());
  else if (key == "malformed_halves")
    Appendf(out, "malformed buffer halves: %s (their records were skipped)\n", value.c_str());
  else if (key == kLeftAtSetuidExec)
    Appendf(out, "left at a setuid exec: %s\n", value.c_str());
  else if (key == kPerfMaxRateAtStart)
    return;  // the end's limit is what throttled; ThrottleWarning compares them
  else if (key == kPerfMaxRateAtEnd)
    Appendf(out, "perf's sample limit: %llu Hz per counter (kernel.perf_event_max_sample_rate)\n",
            n);
  else if (key == kUserStackBytes && p.attributes.count(kUnwindTables))
    Appendf(out, "stack copies: %llu bytes, only where the tables did not cover a walk\n", n);
  else if (key == kUserStackBytes)
    Appendf(out, "call graph: dwarf, %llu bytes of user stack copied per sample\n", n);
  else if (key == kUnwindTables)
    Appendf(out, "call graph: cfi, %llu unwind tables loaded into the module (%llu KiB, %s built "
                 "from CFI, the rest read from earlier recordings'); %s files sampled through "
                 "had none\n",
            n, std::strtoull(attribute(kUnwindTableBytes).c_str(), nullptr, 10) / 1024,
            attribute(kUnwindTablesBuilt).c_str(), attribute(kUnwindFilesWithout).c_str());
  else if (key == kUnwindTableBytes || key == kUnwindFilesWithout || key == kUnwindTablesBuilt)
    return;  // on the tables' line
  else if (key == kUnwindFailures)
    Appendf(out, "unwind tables refused: %s\n", value.c_str());
  else if (key == kRecorderPid)
    Appendf(out, "recorder: tprofctl, pid %s (its own samples are in the tables)\n", value.c_str());
  else
    Appendf(out, "%s: %s\n", key.c_str(), value.c_str());
}

void TextHeader(const Profile& p, const ReportData& d, std::string* out) {
  Appendf(out, "tprof profile: %" PRIu64 " samples taken (%" PRIu64 " delivered, %" PRIu64
               " lost), %zu CPUs",
          p.TotalSamples() + d.lost_samples, p.TotalSamples(), d.lost_samples, p.cpus.size());
  if (p.last_time_ns > p.first_time_ns)
    Appendf(out, ", %.3f s", static_cast<double>(p.last_time_ns - p.first_time_ns) / 1e9);
  *out += "\n";
  for (const auto& [key, value] : p.attributes) TextAttribute(p, key, value, out);
  if (auto rate = AchievedSamplingRate(p))
    Appendf(out, "sampling rate: %.0f Hz per CPU achieved, %.0f asked for%s%s\n", rate->achieved_hz,
            rate->requested_hz, rate->tick ? " (HZ: in the scheduler tick)" : "",
            rate->low ? " (low: see the warning)" : "");
  // Only where it matters: some samples are in the kernel.
  if (!p.kernel_symbols.available && d.shares.kernel > 0)
    Appendf(out, "kernel symbols: unavailable%s%s\n", p.kernel_symbols.note.empty() ? "" : ": ",
            p.kernel_symbols.note.c_str());
  Appendf(out, "unresolved: %" PRIu64 " samples (%.1f%%) at addresses without a function name\n",
          d.unresolved_samples, Percent(d.unresolved_samples, d.all_samples));
  if (d.lost_records)
    Appendf(out, "lost records: %" PRIu64 " (names, mappings or exits may be missing)\n",
            d.lost_records);
  if (p.idle_ticks)
    Appendf(out, "idle ticks: %" PRIu64 " skipped by CPUs asleep with their tick stopped, %" PRIu64
                 " of them waiting for I/O\n",
            p.idle_ticks, p.iowait_ticks);
  if (p.attributes.count(kUserStackBytes)) {
    // Per sample: how its user stack was found.
    uint64_t cfi = 0, whole = 0, other = 0, in_module = 0, leaf_only = 0;
    for (const auto& [k, n] : p.stack_samples) {
      if (k.stack == 0 || k.stack > p.stacks.size()) continue;
      const RawStack& st = p.stacks[k.stack - 1];
      const uint32_t f = st.flags;
      if (st.user.empty() && !k.sample.user()) continue;  // no user part to find
      if (f & kStackUserByCfi)
        (f & kStackUserWhole ? whole : cfi) += n;
      else if (f & kStackUserLeafOnly)
        leaf_only += n;
      else
        other += n;
      if (f & TPROF_STACK_USER_CFI) in_module += n;
    }
    Appendf(out, "user stacks: %" PRIu64 " whole, %" PRIu64 " cut (a fault, the copy's end, the "
                 "depth) by CFI; %" PRIu64 " by frame pointers (no copy)\n",
            whole, cfi, other);
    if (leaf_only)
      Appendf(out, "user stacks cut to their leaf: %" PRIu64 " (their process's mappings were "
                   "lost: see lost records)\n", leaf_only);
    if (p.attributes.count(kUnwindTables))
      Appendf(out, "user stacks walked in the module: %" PRIu64 " (the others from copies, "
                   "taken while a process's tables were not loaded)\n", in_module);
  }
  if (p.records.malformed || p.records.unknown)
    Appendf(out, "records skipped: %" PRIu64 " malformed, %" PRIu64 " of unknown type\n",
            p.records.malformed, p.records.unknown);
}

void TextProcesses(const ReportData& d, const ReportOptions& o, std::string* out) {
  const uint64_t base = d.all_samples;
  Appendf(out, "\n%7s %-16s %10s %7s %7s %7s %7s %7s\n", "PID", "NAME", "SAMPLES", "TOTAL",
          "KERNEL", "USER", "SHARED", "OTHER");
  const size_t shown =
      ShownRows(d.processes, base, PercentLimit(o, ReportFormat::kText), o.top, o);
  for (size_t i = 0; i < shown; ++i) {
    const ProcessSummary& s = d.processes[i];
    Appendf(out, "%7u %-16s %10" PRIu64 " %6.1f%% %6.1f%% %6.1f%% %6.1f%% %6.1f%%\n", s.pid,
            s.name.c_str(), s.samples, Percent(s.samples, base), Percent(s.kernel, base),
            Percent(s.user, base), Percent(s.shared, base), Percent(s.jit + s.unresolved, base));
  }
  if (shown < d.processes.size()) {
    uint64_t rest = 0;
    for (size_t i = shown; i < d.processes.size(); ++i) rest += d.processes[i].samples;
    Appendf(out, "%7s %-16s %10" PRIu64 " %6.1f%%\n", "...",
            ("(" + std::to_string(d.processes.size() - shown) + " more)").c_str(), rest,
            Percent(rest, base));
  }
  if (!o.pid || *o.pid == 0)
    Appendf(out, "%7u %-16s %10" PRIu64 " %6.1f%%\n", 0u, "[idle/wait]", d.idle_samples,
            Percent(d.idle_samples, base));
  Appendf(out, "%7s %-16s %10" PRIu64 " %6.1f%%\n", "-", "[lost]", d.lost_samples,
          Percent(d.lost_samples, base));
  Appendf(out,
          "TOTAL/KERNEL/USER/SHARED/OTHER: %% of all samples taken; USER = main executable, "
          "SHARED = shared libraries and [vdso], OTHER = JIT code and addresses in no known "
          "mapping\n");
}

// The width of a text column: its widest cell, within [min, max] (a longer
// cell overflows its row alone).
size_t ColumnWidth(size_t min, size_t max, const std::vector<std::string>& cells) {
  size_t w = min;
  for (const std::string& c : cells) w = std::max(w, c.size());
  return std::min(w, max);
}

// Drops the blanks a padded last column leaves before the line's end.
void TrimLineEnd(std::string* out) {
  if (out->empty() || out->back() != '\n') return;
  out->pop_back();
  while (!out->empty() && out->back() == ' ') out->pop_back();
  out->push_back('\n');
}

void TextFunctionTable(const ReportData& d, const ProcessFunctions& pf, const ReportOptions& o,
                       std::string* out) {
  const FunctionTableCut cut = CutFunctionRows(
      pf.functions, pf.samples, PercentLimit(o, ReportFormat::kText), o.top, o.children);
  std::vector<std::string> spaces, names;
  for (size_t i : cut.shown) {
    spaces.push_back(pf.functions[i].location.ShortSpaceName());
    names.push_back(pf.functions[i].function);
  }
  for (const LeftOutRows& l : cut.left_out) spaces.push_back(l.first->location.ShortSpaceName());
  const int sw = static_cast<int>(ColumnWidth(5, 40, spaces));
  const int fw = static_cast<int>(ColumnWidth(8, 48, names));
  if (o.children)
    Appendf(out, "%10s %10s %7s %7s  %-*s %-*s %s\n", "CHILDREN", "SELF", "CHILD%", "SELF%", sw,
            "SPACE", fw, "FUNCTION", "SOURCE");
  else
    Appendf(out, "%10s %7s %7s  %-*s %-*s %s\n", "SAMPLES", "PROC", "ALL", sw, "SPACE", fw,
            "FUNCTION", "SOURCE");
  for (size_t k = 0; k < cut.shown.size(); ++k) {
    const FunctionRow& f = pf.functions[cut.shown[k]];
    const std::string source = SourceText(f.location, false);
    if (o.children)
      Appendf(out, "%10" PRIu64 " %10" PRIu64 " %6.1f%% %6.1f%%  %-*s %-*s %s\n", f.inclusive,
              f.samples, Percent(f.inclusive, pf.samples), Percent(f.samples, pf.samples), sw,
              spaces[k].c_str(), fw, names[k].c_str(), source.c_str());
    else
      Appendf(out, "%10" PRIu64 " %6.1f%% %6.1f%%  %-*s %-*s %s\n", f.samples,
              Percent(f.samples, pf.samples), Percent(f.samples, d.all_samples), sw,
              spaces[k].c_str(), fw, names[k].c_str(), source.c_str());
    TrimLineEnd(out);
  }
  // The rows left out, one per space: their self samples (inclusive
  // samples do not add up across functions).
  for (size_t k = 0; k < cut.left_out.size(); ++k) {
    const LeftOutRows& l = cut.left_out[k];
    const std::string what = "(" + std::to_string(l.functions) + " more function" +
                             (l.functions == 1 ? "" : "s") + ")";
    const char* space = spaces[cut.shown.size() + k].c_str();
    if (o.children)
      Appendf(out, "%10s %10" PRIu64 " %7s %6.1f%%  %-*s %s\n", "-", l.samples, "-",
              Percent(l.samples, pf.samples), sw, space, what.c_str());
    else
      Appendf(out, "%10" PRIu64 " %6.1f%% %6.1f%%  %-*s %s\n", l.samples,
              Percent(l.samples, pf.samples), Percent(l.samples, d.all_samples), sw, space,
              what.c_str());
  }
}

void TextFunctions(const ReportData& d, const ReportOptions& o, std::string* out) {
  const double percent = PercentLimit(o, ReportFormat::kText);
  const size_t procs = ShownRows(d.functions, d.all_samples, percent, o.top, o);
  for (size_t i = 0; i < procs; ++i) {
    const ProcessFunctions& pf = d.functions[i];
    Appendf(out, "\nPID %u %s: %" PRIu64 " samples, %.1f%% of all\n", pf.pid, pf.name.c_str(),
            pf.samples, Percent(pf.samples, d.all_samples));
    TextFunctionTable(d, pf, o, out);
  }
  if (procs < d.functions.size())
    Appendf(out, "\n(%zu more processes, under %g%% of all samples or past --top: lower "
                 "--percent-limit, raise --top or pick one with --pid)\n",
            d.functions.size() - procs, percent);
  if (o.children)
    *out += "CHILDREN: samples whose stack holds the function; SELF: samples in the function "
            "itself; CHILD%/SELF%: of the process's samples; rows under the --percent-limit "
            "are summed per space\n";
  else
    *out += "SAMPLES: samples in the function itself; PROC: % of the process's samples; ALL: % "
            "of all samples taken; rows under the --percent-limit are summed per space\n";
}

void TextCallers(const ReportData& d, const ReportOptions& o, std::string* out) {
  size_t procs = Limit(d.functions.size(), o.top);
  for (size_t i = 0; i < procs; ++i) {
    const ProcessFunctions& pf = d.functions[i];
    Appendf(out, "\nPID %u %s: %" PRIu64 " samples, %.1f%% of all\n", pf.pid, pf.name.c_str(),
            pf.samples, Percent(pf.samples, d.all_samples));
    Appendf(out, "%10s %7s  %s\n", "SAMPLES", "PROC", "CALLER -> CALLEE");
    size_t rows = Limit(pf.callers.size(), o.top);
    for (size_t r = 0; r < rows; ++r) {
      const CallerRow& c = pf.callers[r];
      Appendf(out, "%10" PRIu64 " %6.1f%%  %s -> %s\n", c.samples, Percent(c.samples, pf.samples),
              c.caller.c_str(), c.callee.c_str());
    }
    if (pf.callers.empty())
      *out += "  (no callers recorded: record with --callers)\n";
  }
}

void TextThreads(const ReportData& d, const ReportOptions& o, std::string* out) {
  if (!d.has_context) {
    *out += "\n(no per-sample context in this profile, so no threads: it was recorded by an "
            "older tprofctl or with --time-granularity 0)\n";
    return;
  }
  Appendf(out, "\n%7s %7s %-16s %10s %7s\n", "TID", "PID", "PROCESS", "SAMPLES", "TOTAL");
  for (size_t i = 0; i < Limit(d.threads.size(), o.top); ++i) {
    const ThreadSummary& t = d.threads[i];
    Appendf(out, "%7u %7u %-16s %10" PRIu64 " %6.1f%%\n", t.tid, t.pid, t.name.c_str(), t.samples,
            Percent(t.samples, d.all_samples));
  }
  if (Limit(d.threads.size(), o.top) < d.threads.size())
    Appendf(out, "(%zu more threads)\n", d.threads.size() - Limit(d.threads.size(), o.top));
}

void TextCpus(const ReportData& d, const ReportOptions& o, std::string* out) {
  Appendf(out, "\n%5s %10s %10s %7s\n", "CPU", "SAMPLES", "LOST", "TOTAL");
  for (size_t i = 0; i < Limit(d.cpus.size(), o.top); ++i) {
    const CpuSummary& c = d.cpus[i];
    Appendf(out, "%5u %10" PRIu64 " %10" PRIu64 " %6.1f%%\n", c.cpu, c.samples, c.lost_samples,
            Percent(c.samples, d.all_samples));
  }
}

void JsonReport(const Profile& p, const ReportData& d, const ReportOptions& o,
                const Symbolizer& sym, std::string* out) {
  const uint64_t base = d.all_samples;
  Json j;
  j["format_version"] = kJsonFormatVersion;
  j["attributes"] = Json::object();
  for (const auto& [k, v] : p.attributes) j["attributes"][k] = v;
  j["samples_taken"] = p.TotalSamples() + d.lost_samples;
  j["samples"] = d.samples;
  j["lost_samples"] = d.lost_samples;
  j["lost_records"] = d.lost_records;
  j["idle_samples"] = d.idle_samples;
  j["idle_ticks"] = p.idle_ticks;
  j["iowait_ticks"] = p.iowait_ticks;
  j["unresolved_samples"] = d.unresolved_samples;
  j["unresolved_addresses"] = sym.stats().unresolved;
  j["duration_ns"] = p.last_time_ns - p.first_time_ns;
  if (auto rate = AchievedSamplingRate(p))
    j["sampling_rate"] = {{"requested_hz", rate->requested_hz},
                          {"achieved_hz", rate->achieved_hz},
                          {"low", rate->low},
                          {"warning", LowRateWarning(*rate)}};
  if (p.attributes.count(kPerfMaxRateAtEnd)) {
    const std::string warning = ThrottleWarning(p);
    j["sampling_throttle"] = {
        {"max_sample_rate_at_start", NumberAttribute(p, kPerfMaxRateAtStart)},
        {"max_sample_rate_at_end", NumberAttribute(p, kPerfMaxRateAtEnd)},
        {"throttled", !warning.empty()},
        {"warning", warning}};
  }
  j["kernel_symbols_available"] = p.kernel_symbols.available;
  j["kernel_symbols_note"] = p.kernel_symbols.note;
  j["sample_shares"] = {{"samples", d.shares.samples},
                        {"kernel", d.shares.kernel},
                        {"unresolved_kernel", d.shares.unresolved_kernel},
                        {"recorder", d.shares.recorder},
                        {"warnings", SampleShareWarnings(p, d.shares)}};
  j["records"] = {{"samples", p.records.samples}, {"comms", p.records.comms},
                  {"exits", p.records.exits},     {"maps", p.records.maps},
                  {"lost", p.records.losts},      {"unknown", p.records.unknown},
                  {"malformed", p.records.malformed}};
  Json cpus = Json::array();
  for (const auto& [cpu, c] : p.cpus) {
    Json row = {{"cpu", cpu}, {"samples", c.samples}};
    if (c.has_control_totals) {
      row["samples_taken"] = c.samples_taken;
      row["lost_samples"] = c.lost_samples;
      row["lost_records"] = c.lost_records;
    }
    cpus.push_back(std::move(row));
  }
  j["cpus"] = std::move(cpus);
  j["idle"] = {{"samples", d.idle_samples}, {"percent", DecimalPercent(d.idle_samples, base)}};
  j["lost"] = {{"samples", d.lost_samples},
               {"records", d.lost_records},
               {"percent", DecimalPercent(d.lost_samples, base)}};
  if (o.by == ReportBy::kThread) {
    Json threads = Json::array();
    for (size_t i = 0; i < Limit(d.threads.size(), o.top); ++i) {
      const ThreadSummary& t = d.threads[i];
      threads.push_back({{"tid", t.tid},
                         {"pid", t.pid},
                         {"name", t.name},
                         {"samples", t.samples},
                         {"percent", DecimalPercent(t.samples, base)}});
    }
    j["threads"] = std::move(threads);
    j["has_context"] = d.has_context;
  }
  if (o.by != ReportBy::kSymbol) {
    Json procs = Json::array();
    const size_t shown =
        ShownRows(d.processes, base, PercentLimit(o, ReportFormat::kJson), o.top, o);
    for (size_t i = 0; i < shown; ++i) {
      const ProcessSummary& s = d.processes[i];
      auto proc = p.processes.find(s.pid);
      bool exited = proc != p.processes.end() && proc->second.exited;
      Json names = Json::array();
      if (proc != p.processes.end()) {
        for (const ProcessName& n : proc->second.names) {
          static const char* const kKinds[] = {"existing", "fork", "exec"};
          names.push_back({{"name", n.name},
                           {"time_ns", n.time_ns},
                           {"kind", n.kind < 3 ? kKinds[n.kind] : "unknown"}});
        }
      }
      procs.push_back({{"pid", s.pid},
                       {"name", s.name},
                       {"exited", exited},
                       {"names", std::move(names)},
                       {"samples", s.samples},
                       {"percent", DecimalPercent(s.samples, base)},
                       {"kernel", s.kernel},
                       {"user", s.user},
                       {"shared", s.shared},
                       {"jit", s.jit},
                       {"unresolved", s.unresolved}});
    }
    j["processes"] = std::move(procs);
  }
  if (o.by != ReportBy::kProcess) {
    Json tables = Json::array();
    const double percent = PercentLimit(o, ReportFormat::kJson);
    const size_t procs = ShownRows(d.functions, base, percent, o.top, o);
    for (size_t i = 0; i < procs; ++i) {
      const ProcessFunctions& pf = d.functions[i];
      const FunctionTableCut cut = CutFunctionRows(pf.functions, pf.samples, percent, o.top, o.children);
      Json rows = Json::array();
      for (size_t r : cut.shown) {
        const FunctionRow& f = pf.functions[r];
        rows.push_back({{"space", f.space},
                        {"kind", SpaceKindName(f.location.kind)},
                        {"object", f.location.object},
                        {"function", f.function},
                        {"resolved", f.location.resolved()},
                        {"samples", f.samples},
                        {"percent", DecimalPercent(f.samples, base)},
                        {"process_percent", DecimalPercent(f.samples, pf.samples)},
                        {"inclusive", f.inclusive},
                        {"inclusive_percent", DecimalPercent(f.inclusive, base)},
                        {"source", SourceText(f.location, true)}});
      }
      Json callers = Json::array();
      for (size_t r = 0; r < Limit(pf.callers.size(), o.top); ++r) {
        const CallerRow& c = pf.callers[r];
        callers.push_back({{"caller_space", c.caller_space},
                           {"caller", c.caller},
                           {"callee_space", c.callee_space},
                           {"callee", c.callee},
                           {"samples", c.samples}});
      }
      Json left_out = Json::array();
      for (const LeftOutRows& l : cut.left_out)
        left_out.push_back({{"space", l.first->space},
                            {"functions", l.functions},
                            {"samples", l.samples},
                            {"percent", DecimalPercent(l.samples, base)}});
      tables.push_back({{"pid", pf.pid},
                        {"name", pf.name},
                        {"samples", pf.samples},
                        {"functions", std::move(rows)},
                        {"left_out", std::move(left_out)},
                        {"callers", std::move(callers)}});
    }
    j["functions"] = std::move(tables);
  }
  *out += j.dump();
  *out += "\n";
}

}  // namespace

ReportData BuildReport(const Profile& p, Symbolizer& sym, const ReportOptions& o) {
  ReportData d;
  d.lost_samples = p.TotalLostSamples();
  d.lost_records = p.TotalLostRecords();
  d.all_samples = p.TotalSamples() + d.lost_samples;
  d.shares = CountSampleShares(p, sym, o);
  std::map<uint32_t, ProcessSummary> procs;
  struct Aggregate {
    FunctionRow row;
    uint64_t hottest = 0;  // samples of the address row.location describes
  };
  std::map<uint32_t, std::map<std::pair<std::string, std::string>, Aggregate>> functions;
  for (const auto& [key, count] : p.samples) {
    if (!Selected(o, key)) continue;
    const uint32_t pid = ReportPid(key);
    const Location& loc = sym.Resolve(key);
    d.samples += count;
    if (!loc.resolved()) d.unresolved_samples += count;
    if (pid == 0) {
      d.idle_samples += count;
    } else {
      ProcessSummary& s = procs[pid];
      s.samples += count;
      switch (loc.kind) {
        case SpaceKind::kKernel:
        case SpaceKind::kModule:
          s.kernel += count;
          break;
        case SpaceKind::kMainExecutable:
          s.user += count;
          break;
        case SpaceKind::kSharedLibrary:
          s.shared += count;
          break;
        case SpaceKind::kJit:
          s.jit += count;
          break;
        case SpaceKind::kUnresolved:
          s.unresolved += count;
          break;
      }
    }
    Aggregate& a = functions[pid][{loc.SpaceName(), loc.FunctionName()}];
    a.row.samples += count;
    if (count > a.hottest) {
      a.hottest = count;
      a.row.location = loc;
    }
  }
  // Inclusive samples and caller -> callee steps: each counted once per
  // sample, however often recursion repeats it.
  using Name = std::pair<std::string, std::string>;
  std::map<uint32_t, std::map<std::pair<Name, Name>, uint64_t>> steps;
  std::set<Name> seen;
  std::set<std::pair<Name, Name>> seen_steps;
  ForEachSampleStack(p, sym, [&](const SampleKey& key, const std::vector<StackFrame>& frames,
                                 uint64_t count) {
    if (!Selected(o, key)) return;
    const uint32_t pid = ReportPid(key);
    seen.clear();
    seen_steps.clear();
    const Name* callee = nullptr;
    Name prev;
    for (const StackFrame& frame : frames) {
      const Location& loc = ResolveFrame(sym, key, frame);
      // Inlined functions are frames of their own, under the function
      // they were inlined into.
      for (std::string& fn : loc.FrameNames()) {
        Name name{loc.SpaceName(), std::move(fn)};
        if (seen.insert(name).second) {
          Aggregate& a = functions[pid][name];
          if (a.row.samples == 0 && a.row.inclusive == 0) a.row.location = loc;
          a.row.inclusive += count;
        }
        if (callee && seen_steps.insert({name, *callee}).second)
          steps[pid][{name, *callee}] += count;
        prev = std::move(name);
        callee = &prev;
      }
    }
  });
  for (auto& [s_pid, s] : procs) {
    const uint32_t pid = s_pid;
    s.pid = pid;
    s.name = ReportName(p, pid);
    d.processes.push_back(s);
  }
  d.has_context = p.context_granularity_ns != 0;
  if (o.by == ReportBy::kThread) {
    std::map<std::pair<uint32_t, uint32_t>, uint64_t> threads;  // (tid, pid)
    for (const auto& [key, count] : p.contexts)
      if (Selected(o, key.sample)) threads[{key.tid, ReportPid(key.sample)}] += count;
    for (const auto& [id, count] : threads)
      d.threads.push_back({id.first, id.second, ReportName(p, id.second), count});
    std::stable_sort(d.threads.begin(), d.threads.end(),
                     [](const ThreadSummary& a, const ThreadSummary& b) { return a.samples > b.samples; });
  }
  if (o.by == ReportBy::kCpu) {
    std::map<uint32_t, CpuSummary> cpus;
    // One process's samples per CPU come from the context; its losses are unknown.
    for (const auto& [cpu, c] : p.cpus)
      cpus[cpu] = {cpu, o.pid ? 0 : c.samples, o.pid ? 0 : c.lost_samples};
    if (o.pid)
      for (const auto& [key, count] : p.contexts) {
        if (!Selected(o, key.sample)) continue;
        cpus[key.cpu].cpu = key.cpu;
        cpus[key.cpu].samples += count;
      }
    for (const auto& [cpu, c] : cpus) d.cpus.push_back(c);
    std::stable_sort(d.cpus.begin(), d.cpus.end(),
                     [](const CpuSummary& a, const CpuSummary& b) { return a.samples > b.samples; });
  }
  std::sort(d.processes.begin(), d.processes.end(),
            [](const ProcessSummary& a, const ProcessSummary& b) {
              return a.samples != b.samples ? a.samples > b.samples : a.pid < b.pid;
            });
  for (auto& [pid, rows] : functions) {
    ProcessFunctions pf{pid, ReportName(p, pid), 0, {}};
    for (auto& [name, a] : rows) {
      // Without --children a table lists sampled functions only.
      if (!o.children && a.row.samples == 0) continue;
      a.row.space = name.first;
      a.row.function = name.second;
      pf.samples += a.row.samples;
      pf.functions.push_back(std::move(a.row));
    }
    OrderFunctionRows(o.sort, o.children, &pf.functions);
    for (const auto& [step, count] : steps[pid])
      pf.callers.push_back({step.first.first, step.first.second, step.second.first,
                            step.second.second, count});
    std::stable_sort(pf.callers.begin(), pf.callers.end(),
                     [](const CallerRow& a, const CallerRow& b) { return a.samples > b.samples; });
    d.functions.push_back(std::move(pf));
  }
  std::sort(d.functions.begin(), d.functions.end(),
            [](const ProcessFunctions& a, const ProcessFunctions& b) {
              return a.samples != b.samples ? a.samples > b.samples : a.pid < b.pid;
            });
  return d;
}

std::vector<StackRow> FoldedStackRows(const Profile& p, Symbolizer& sym, const ReportOptions& o) {
  // Keyed by the folded text first, so the rows sort as FoldedStacks prints.
  std::map<std::pair<std::string, uint32_t>, StackRow> rows;
  auto add = [&rows](uint32_t pid, std::vector<std::string> frames, uint64_t count) {
    StackRow& row = rows[{FoldedText(frames), pid}];
    if (row.frames.empty()) {
      row.pid = pid;
      row.frames = std::move(frames);
    }
    row.samples += count;
  };
  ForEachSampleStack(p, sym, [&](const SampleKey& key, const std::vector<StackFrame>& stack,
                                 uint64_t count) {
    if (!Selected(o, key)) return;
    const uint32_t pid = ReportPid(key);
    std::vector<std::string> frames{Frame(ReportName(p, pid), false)};
    for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
      const Location& loc = ResolveFrame(sym, key, *it);
      std::vector<std::string> names = loc.FrameNames();  // leaf first
      for (auto n = names.rbegin(); n != names.rend(); ++n)
        frames.push_back(Frame(*n, IsKernel(loc)));
    }
    add(pid, std::move(frames), count);
  });
  std::vector<StackRow> out;
  out.reserve(rows.size());
  for (auto& [key, row] : rows) out.push_back(std::move(row));
  return out;
}

std::string FoldedStacks(const Profile& p, Symbolizer& sym, const ReportOptions& o) {
  // Processes of one name share their lines, as flame-graph tools merge them.
  std::map<std::string, uint64_t> stacks;
  for (const StackRow& row : FoldedStackRows(p, sym, o))
    stacks[FoldedText(row.frames)] += row.samples;
  std::vector<std::pair<std::string, uint64_t>> heaviest(stacks.begin(), stacks.end());
  std::stable_sort(heaviest.begin(), heaviest.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [stack, count] : heaviest)
    Appendf(&out, "%s %" PRIu64 "\n", stack.c_str(), count);
  return out;
}

std::string RenderReport(const Profile& p, Symbolizer& sym, const ReportOptions& o,
                         ReportFormat format) {
  if (format == ReportFormat::kFolded) return FoldedStacks(p, sym, o);
  ReportData d = BuildReport(p, sym, o);
  std::string out;
  if (format == ReportFormat::kJson) {
    JsonReport(p, d, o, sym, &out);
    return out;
  }
  TextHeader(p, d, &out);
  if (o.by == ReportBy::kCaller) {
    TextCallers(d, o, &out);
    return out;
  }
  if (o.by == ReportBy::kThread || o.by == ReportBy::kCpu) {
    (o.by == ReportBy::kThread ? TextThreads : TextCpus)(d, o, &out);
    return out;
  }
  if (o.by != ReportBy::kSymbol) TextProcesses(d, o, &out);
  if (o.by != ReportBy::kProcess) TextFunctions(d, o, &out);
  return out;
}

}  // namespace tprof
