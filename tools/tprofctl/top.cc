// tprofctl top: a live profile, as perf top. A Recorder (as `record`'s)
// samples and, every interval, hands over the profile so far; top shows
// the heaviest functions (or processes) of the samples that interval
// added, SamplesSince() the previous refresh's counts, so the tables and
// symbolization are the ones `dump` uses; one Symbolizer serves every
// refresh, so ELF files are opened once. Refreshes are shown from their
// own thread (refresh_thread.h) while the recorder's goes on draining.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <memory>
#include <cstring>
#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "filter_cli.h"
#include "refresh_thread.h"
#include "tprof/analysis/profile.h"
#include "tprof/device/recorder.h"
#include "tprof/output/report.h"
#include "tprof/device/sampling.h"
#include "tprof/analysis/symbolizer.h"

namespace tprof::cli {

namespace {

uint64_t MonotonicNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

struct TopOptions {
  SamplingOptions sampling;
  ReportOptions report;
  double delay_s = 1.0;
  uint64_t iterations = 0;
  bool batch = !::isatty(STDOUT_FILENO);
  std::optional<uint64_t> period;
  bool callers = false;  // -g: whole stacks, and inclusive (children) columns
  std::string call_graph = "cfi";  // --call-graph: how user stacks are walked
};

constexpr uint32_t kTopStackDepth = 64;  // record -g's default

double Share(uint64_t n, uint64_t base) {
  return base ? 100.0 * static_cast<double>(n) / static_cast<double>(base) : 0.0;
}

// The count columns of a row: SAMPLES and SHARE, or with -g CHILDREN
// (the samples whose stack holds the function, as perf top -g) and SELF,
// each with its share.
void PrintCounts(uint64_t self, uint64_t inclusive, uint64_t base, bool children) {
  if (children)
    std::printf("%8" PRIu64 " %5.1f%% %8" PRIu64 " %5.1f%%  ", inclusive, Share(inclusive, base),
                self, Share(self, base));
  else
    std::printf("%8" PRIu64 " %5.1f%%  ", self, Share(self, base));
}

void PrintCountHeader(bool children) {
  if (children)
    std::printf("%8s %6s %8s %6s  ", "CHILDREN", "SHARE", "SELF", "SHARE");
  else
    std::printf("%8s %6s  ", "SAMPLES", "SHARE");
}

// The idle row and top's own samples (its recorder drains and symbolizes
// every interval), which are not function rows: a line each under the
// table.
void PrintIdleAndSelf(uint64_t idle, uint64_t own, uint64_t base, bool children) {
  PrintCounts(idle, idle, base, children);
  std::printf("%7s %-16s\n", "-", "[idle/wait]");
  PrintCounts(own, own, base, children);
  std::printf("%7u %-16s\n", static_cast<unsigned>(::getpid()), "[tprofctl top]");
}

// The interval's heaviest functions over every process, one flat table as
// perf top shows them (dump's text report groups them by process); with
// -g by their inclusive samples.
void PrintFunctions(const ReportData& d, size_t rows, bool children) {
  struct Row {
    const ProcessFunctions* process;
    const FunctionRow* function;
  };
  std::vector<Row> all;
  const uint32_t self = static_cast<uint32_t>(::getpid());
  uint64_t own = 0;
  for (const ProcessFunctions& pf : d.functions) {
    if (pf.pid == self) own += pf.samples;
    if (pf.pid != 0 && pf.pid != self)  // idle/wait and top itself have their own lines
      for (const FunctionRow& f : pf.functions) all.push_back({&pf, &f});
  }
  const auto key = [children](const Row& r) {
    return children ? r.function->inclusive : r.function->samples;
  };
  std::stable_sort(all.begin(), all.end(),
                   [&key](const Row& a, const Row& b) { return key(a) > key(b); });
  PrintCountHeader(children);
  std::printf("%7s %-16s %-40s %s\n", "PID", "PROCESS", "FUNCTION", "SPACE");
  for (size_t i = 0; i < all.size() && (rows == 0 || i < rows); ++i) {
    const Row& r = all[i];
    PrintCounts(r.function->samples, r.function->inclusive, d.all_samples, children);
    std::printf("%7u %-16s %-40s %s\n", r.process->pid, r.process->name.c_str(),
                r.function->function.c_str(), ShortSpaceName(r.function->space).c_str());
  }
  PrintIdleAndSelf(d.idle_samples, own, d.all_samples, children);
}

void PrintProcesses(const ReportData& d, size_t rows) {
  std::printf("%8s %6s  %7s %-16s %7s %7s %7s\n", "SAMPLES", "SHARE", "PID", "PROCESS", "KERNEL",
              "USER", "SHARED");
  const uint32_t self = static_cast<uint32_t>(::getpid());
  uint64_t own = 0;
  size_t shown = 0;
  for (const ProcessSummary& s : d.processes) {
    if (s.pid == self) {
      own += s.samples;
      continue;
    }
    if (rows != 0 && shown == rows) continue;
    ++shown;
    std::printf("%8" PRIu64 " %5.1f%%  %7u %-16s %6.1f%% %6.1f%% %6.1f%%\n", s.samples,
                Share(s.samples, d.all_samples), s.pid, s.name.c_str(),
                Share(s.kernel, d.all_samples), Share(s.user, d.all_samples),
                Share(s.shared, d.all_samples));
  }
  PrintIdleAndSelf(d.idle_samples, own, d.all_samples, false);
}

int RunTop(TopOptions o) {
  SamplingOptions& sampling = o.sampling;
  const ReportOptions& report = o.report;
  const uint64_t iterations = o.iterations;
  const bool batch = o.batch;
  const std::optional<uint64_t>& period = o.period;
  if (sampling.event_type != TPROF_SAMPLE_ON_CLOCK) {
    sampling.event_period = period.value_or(10000);
    sampling.frequency_hz = 0;
  } else if (period) {
    std::fprintf(stderr, "tprofctl top: -c goes with -e\n");
    return kExitUsage;
  }
  if (o.callers && report.by == ReportBy::kProcess) {
    std::fprintf(stderr, "tprofctl top: -g shows functions; it does not go with --by process\n");
    return kExitUsage;
  }
  if (o.callers) sampling.stack_depth = kTopStackDepth;
  if (o.callers && o.call_graph == "cfi") {
    sampling.unwind_tables = true;
    // Copies while a process's tables are not loaded: what the buffers hold.
    sampling.user_stack_bytes = 8192;
    if (sampling.half_bytes)
      sampling.user_stack_bytes = std::min(sampling.user_stack_bytes, sampling.half_bytes / 4 & ~7u);
  }
  if (!CpusExist("top", sampling.cpus)) return kExitUsage;

  // Kernel symbols once, before sampling starts: reading kallsyms each
  // second would cost more than the samples, and while it is read (seconds
  // under emulation) nobody would drain the buffers. Unreadable
  // (unprivileged) leaves kernel rows as addresses, as in dump.
  // One symbolizer for the whole run, over `live`, which each refresh
  // refills: the ELF files are opened once (a new one every refresh made
  // top's own symbolizing, libdw and tprofctl's DWARF, its top rows).
  // Its tables show no source lines: DWARF's line tables are not read.
  Profile live;
  if (auto ks = ReadKallsyms()) live.kernel_symbols = std::move(*ks);
  Symbolizer symbolizer(live, SymbolizerOptions{.source_lines = false});

  // The first refresh's rate counts from here, where sampling starts.
  uint64_t last = MonotonicNs();
  bool stacks_refused = false;
  auto session = SamplingSession::StartPreferringStacks(sampling, &stacks_refused);
  // A module before ABI 1.19: frame pointers.
  if (!session && session.error().code() == std::errc::not_supported && sampling.unwind_tables) {
    sampling.unwind_tables = false;
    sampling.user_stack_bytes = 0;
    session = SamplingSession::StartPreferringStacks(sampling, &stacks_refused);
  }
  if (!session)
    return ReportError(session.error(),
                       sampling.pid == TPROF_PID_ALL ? Doing::kAllCpus : Doing::kSampling);
  if (stacks_refused)
    std::fprintf(stderr, "tprofctl top: the module refused whole stacks (older than ABI 1.8?): "
                         "children count each sample's caller only\n");
  Recorder recorder(std::move(*session));
  recorder.SetContextOptions({.granularity_ns = 0});  // a live view needs no context
  uint64_t n = 0;
  // Runs on the refresh thread, which alone touches `live` and the
  // symbolizer.
  auto show = [&](TopInterval& taken) {
    // The kallsyms table moves from refresh to refresh, never copied.
    KernelSymbols kernel_symbols = std::move(live.kernel_symbols);
    live = std::move(taken.samples);
    live.kernel_symbols = std::move(kernel_symbols);
    symbolizer.ForgetAddresses();  // the mappings may have changed
    const Profile& interval = live;
    ReportOptions all = report;
    all.top = 0;  // the flat table picks its rows across processes
    all.children = o.callers;
    ReportData data = BuildReport(interval, symbolizer, all);
    const double seconds = taken.seconds;
    const uint64_t samples = interval.TotalSamples();
    if (!batch) std::printf("\033[H\033[2J");
    std::printf("tprofctl top: %" PRIu64 " samples in %.2f s (%.0f/s), %" PRIu64
                " lost; %s; refresh %" PRIu64 "%s\n\n",
                samples, seconds, seconds > 0 ? static_cast<double>(samples) / seconds : 0.0,
                interval.TotalLostSamples(),
                sampling.pid == TPROF_PID_ALL ? "every process"
                                              : ("process " + std::to_string(sampling.pid)).c_str(),
                n + 1, batch ? "" : " (Ctrl-C quits)");
    if (report.by == ReportBy::kProcess)
      PrintProcesses(data, report.top);
    else
      PrintFunctions(data, report.top, o.callers);
    if (batch) std::printf("\n");
    std::fflush(stdout);
    return iterations == 0 || ++n < iterations;
  };
  RefreshThread refresher(show, [&recorder] { recorder.RequestStop(); });
  // The previous refresh's counts: each refresh shows what came since.
  ProfileCounts before;
  RecorderRunOptions run;
  run.interval = std::chrono::milliseconds(std::max<long long>(1, std::llround(o.delay_s * 1e3)));
  // On the recorder's thread: hand the interval over and go on draining.
  run.on_interval = [&](const Profile& so_far) {
    refresher.Offer([&] {
      const uint64_t now_ns = MonotonicNs();
      TopInterval taken{SamplesSince(so_far, before), static_cast<double>(now_ns - last) / 1e9};
      before = CountsOf(so_far);
      last = now_ns;
      return taken;
    });
    return true;
  };
  // Until Ctrl-C (or SIGTERM) or the last refresh; the final profile the
  // recorder hands back is not shown.
  auto done = recorder.Run(run);
  refresher.Stop();
  if (!done) return ReportError(done.error());
  return 0;
}

}  // namespace

void AddTopCommand(CommandLine& cli) {
  auto o = std::make_shared<TopOptions>();
  o->report.by = ReportBy::kSymbol;
  o->report.top = 15;
  CLI::App* sub = cli.Add(
      cli.app(), "top",
      "Live view: the heaviest functions or processes, refreshed. It samples like `record` and "
      "shows, every interval, the heaviest functions (or processes) of the samples that "
      "interval took, as perf top does.",
      [o] { return RunTop(*o); });
  sub->add_option("-F,--freq", o->sampling.frequency_hz,
                  "clock samples per second per CPU (default 1000)")
      ->transform(Decimal())
      ->check(CLI::Range(1u, static_cast<unsigned>(TPROF_SAMPLING_MAX_HZ)));
  CLI::Option* pid = sub->add_option("-p,--pid", o->sampling.pid,
                                     "one process and the processes it creates")
                         ->transform(Decimal())
                         ->check(CLI::Range(1u, TPROF_PID_ALL - 1));
  sub->add_flag_callback(
         "-a,--all-cpus", [o] { o->sampling.pid = TPROF_PID_ALL; },
         "every process (the default; CAP_PERFMON or root)")
      ->excludes(pid);
  sub->add_option_function<std::string>(
         "-C,--cpu", IdListParser("--cpu", &o->sampling.cpus),
         "sample only these CPUs (ranges as 0-3; the other CPUs take no sample: ABI 1.16)")
      ->type_name("CPU[,CPU...]");
  sub->add_option_function<std::string>(
      "-e,--event",
      [o](const std::string& name) {
        if (Status st = ParseSampleEvent(name, &o->sampling); !st)
          throw CLI::ValidationError("--event", st.error().message());
      },
      "sample on a counter's overflow (see `record --help`)");
  sub->add_option("-c,--count", o->period, "events per sample with -e (default 10000)")
      ->transform(Decimal())
      ->check(CLI::Range(uint64_t{1}, UINT64_MAX));
  sub->add_option_function<uint32_t>(
         "--buffer-kb", [o](uint32_t kb) { o->sampling.half_bytes = kb * 1024; }, BufferKbHelp())
      ->transform(Decimal())
      ->check(BufferKb());
  sub->add_flag("-g,--callers", o->callers,
                "sample whole stacks and show each function's inclusive samples (CHILDREN: the "
                "samples whose stack holds it, as perf top -g) beside its own (SELF), heaviest "
                "first");
  sub->add_option_function<std::string>(
         "--call-graph",
         [o](const std::string& mode) {
           o->callers = true;
           o->call_graph = mode;
         },
         "as record's: cfi (the default of -g: the module walks user stacks with tables from "
         "the binaries' CFI) or fp (frame pointers only)")
      ->check(CLI::IsMember({"fp", "cfi"}));
  sub->add_option("-d,--delay", o->delay_s,
                  "refresh interval in seconds (default 1; decimals allowed)")
      ->check(CLI::Range(0.05, 3600.0));
  sub->add_option("-n,--iterations", o->iterations, "stop after N refreshes (default: until Ctrl-C)")
      ->transform(Decimal());
  sub->add_option_function<std::string>(
         "--by",
         [o](const std::string& by) {
           o->report.by = by == "process" ? ReportBy::kProcess : ReportBy::kSymbol;
         },
         "function (default) or process")
      ->check(CLI::IsMember({"function", "symbol", "process"}));
  sub->add_option_function<size_t>(
         "--rows", [o](size_t rows) { o->report.top = rows; }, "rows per table (default 15)")
      ->transform(Decimal());
  sub->add_flag("--batch", o->batch, "no screen clearing (implied when stdout is not a terminal)");
}

}  // namespace tprof::cli
