// tprofctl top: a live profile, as perf top. It runs its own sampling
// session and, every interval, shows the heaviest functions (or processes)
// of the samples that interval added: the report of SamplesSince() between
// two copies of the running profile, so the tables and symbolization are
// the ones `dump` uses.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "tprof/profile.h"
#include "tprof/report.h"
#include "tprof/sampling.h"
#include "tprof/symbolizer.h"

namespace tprof::cli {

namespace {

volatile std::sig_atomic_t g_stop = 0;
void OnStopSignal(int) { g_stop = 1; }

uint64_t MonotonicNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: tprofctl top [-F HZ] [-p PID | -a] [-e EVENT [-c N]] [-d SECONDS] [-n N]\n"
               "                    [--by function|process] [--rows N] [--batch]\n\n"
               "Samples like `record` and shows, every interval, the heaviest functions (or\n"
               "processes) of the samples that interval took, as perf top does.\n"
               "  -F, --freq HZ     clock samples per second per CPU (default 1000)\n"
               "  -p, --pid PID     one process and the processes it creates\n"
               "  -a, --all-cpus    every process (the default; CAP_PERFMON or root)\n"
               "  -e, --event NAME  sample on a counter's overflow (see `record --help`)\n"
               "  -c, --count N     events per sample with -e (default 10000)\n"
               "  --buffer-kb N     each half of a CPU's buffer (default 64)\n"
               "  -d, --delay SEC   refresh interval in seconds (default 1; decimals allowed)\n"
               "  -n, --iterations N  stop after N refreshes (default: until Ctrl-C)\n"
               "  --by WHAT         function (default) or process\n"
               "  --rows N          rows per table (default 15)\n"
               "  --batch           no screen clearing (implied when stdout is not a terminal)\n");
}

double Share(uint64_t n, uint64_t base) {
  return base ? 100.0 * static_cast<double>(n) / static_cast<double>(base) : 0.0;
}

// The interval's heaviest functions over every process, one flat table as
// perf top shows them (dump's text report groups them by process).
void PrintFunctions(const ReportData& d, size_t rows) {
  struct Row {
    const ProcessFunctions* process;
    const FunctionRow* function;
  };
  std::vector<Row> all;
  for (const ProcessFunctions& pf : d.functions)
    if (pf.pid != 0)  // idle/wait has its own line
      for (const FunctionRow& f : pf.functions) all.push_back({&pf, &f});
  std::stable_sort(all.begin(), all.end(), [](const Row& a, const Row& b) {
    return a.function->samples > b.function->samples;
  });
  std::printf("%8s %6s  %7s %-16s %-40s %s\n", "SAMPLES", "SHARE", "PID", "PROCESS", "FUNCTION",
              "SPACE");
  for (size_t i = 0; i < all.size() && (rows == 0 || i < rows); ++i) {
    const Row& r = all[i];
    std::printf("%8" PRIu64 " %5.1f%%  %7u %-16s %-40s %s\n", r.function->samples,
                Share(r.function->samples, d.all_samples), r.process->pid,
                r.process->name.c_str(), r.function->function.c_str(), r.function->space.c_str());
  }
  std::printf("%8" PRIu64 " %5.1f%%  %7s %-16s\n", d.idle_samples, Share(d.idle_samples, d.all_samples),
              "-", "[idle/wait]");
}

void PrintProcesses(const ReportData& d, size_t rows) {
  std::printf("%8s %6s  %7s %-16s %7s %7s %7s\n", "SAMPLES", "SHARE", "PID", "PROCESS", "KERNEL",
              "USER", "SHARED");
  for (size_t i = 0; i < d.processes.size() && (rows == 0 || i < rows); ++i) {
    const ProcessSummary& s = d.processes[i];
    std::printf("%8" PRIu64 " %5.1f%%  %7u %-16s %6.1f%% %6.1f%% %6.1f%%\n", s.samples,
                Share(s.samples, d.all_samples), s.pid, s.name.c_str(),
                Share(s.kernel, d.all_samples), Share(s.user, d.all_samples),
                Share(s.shared, d.all_samples));
  }
  std::printf("%8" PRIu64 " %5.1f%%  %7s %-16s\n", d.idle_samples, Share(d.idle_samples, d.all_samples),
              "-", "[idle/wait]");
}

}  // namespace

int RunTop(const Args& args) {
  SamplingOptions sampling;
  ReportOptions report;
  report.by = ReportBy::kSymbol;
  report.top = 15;
  double delay_s = 1.0;
  uint64_t iterations = 0;
  bool batch = !::isatty(STDOUT_FILENO);
  std::optional<uint64_t> period;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string* {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "tprofctl top: %s needs a value\n", a.c_str());
        return nullptr;
      }
      return &args[++i];
    };
    if (a == "-h" || a == "--help") {
      Usage(stdout);
      return 0;
    } else if (a == "-a" || a == "--all-cpus") {
      sampling.pid = TPROF_PID_ALL;
    } else if (a == "--batch") {
      batch = true;
    } else if (a == "-d" || a == "--delay") {
      const std::string* v = value();
      if (!v) return 2;
      char* end = nullptr;
      delay_s = std::strtod(v->c_str(), &end);
      if (end == v->c_str() || *end || !(delay_s >= 0.05 && delay_s <= 3600)) {
        std::fprintf(stderr, "tprofctl top: -d takes seconds from 0.05 to 3600, got '%s'\n",
                     v->c_str());
        return 2;
      }
    } else if (a == "--buffer-kb") {
      const std::string* v = value();
      if (!v) return 2;
      auto n = ParseNumber(a, *v);
      if (!n || *n == 0 || *n > 16384) return 2;
      sampling.half_bytes = static_cast<uint32_t>(*n * 1024);
    } else if (a == "-F" || a == "--freq" || a == "-p" || a == "--pid" || a == "-n" ||
               a == "--iterations" || a == "--rows" || a == "-c" || a == "--count") {
      const std::string* v = value();
      if (!v) return 2;
      auto n = ParseNumber(a, *v);
      if (!n) return 2;
      if (a == "-F" || a == "--freq") {
        if (*n == 0 || *n > TPROF_SAMPLING_MAX_HZ) {
          std::fprintf(stderr, "tprofctl top: -F must be 1..%u\n", TPROF_SAMPLING_MAX_HZ);
          return 2;
        }
        sampling.frequency_hz = static_cast<uint32_t>(*n);
      } else if (a == "-p" || a == "--pid") {
        if (*n == 0 || *n >= TPROF_PID_ALL) {
          std::fprintf(stderr, "tprofctl top: -p needs a process id\n");
          return 2;
        }
        sampling.pid = static_cast<uint32_t>(*n);
      } else if (a == "-n" || a == "--iterations") {
        iterations = *n;
      } else if (a == "--rows") {
        report.top = *n;
      } else {
        period = *n;
      }
    } else if (a == "-e" || a == "--event") {
      const std::string* v = value();
      if (!v) return 2;
      if (Status st = ParseSampleEvent(*v, &sampling); !st) {
        std::fprintf(stderr, "tprofctl top: %s\n", st.error().message().c_str());
        return 2;
      }
    } else if (a == "--by") {
      const std::string* v = value();
      if (!v) return 2;
      if (*v == "function" || *v == "symbol") {
        report.by = ReportBy::kSymbol;
      } else if (*v == "process") {
        report.by = ReportBy::kProcess;
      } else {
        std::fprintf(stderr, "tprofctl top: --by takes function or process, got '%s'\n",
                     v->c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr, "tprofctl top: unexpected '%s'\n\n", a.c_str());
      Usage(stderr);
      return 2;
    }
  }
  if (sampling.event_type != TPROF_SAMPLE_ON_CLOCK) {
    sampling.event_period = period.value_or(10000);
    sampling.frequency_hz = 0;
  } else if (period) {
    std::fprintf(stderr, "tprofctl top: -c goes with -e\n");
    return 2;
  }

  auto session = SamplingSession::Start(sampling);
  if (!session) return ReportError(session.error());
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  // Kernel symbols once: reading kallsyms each second would cost more
  // than the samples. Unreadable (unprivileged) leaves kernel rows as
  // addresses, as in dump.
  KernelSymbols kernel_symbols;
  if (auto ks = ReadKallsyms()) kernel_symbols = std::move(*ks);

  ProfileBuilder builder;
  Profile before;
  const uint64_t delay_ns = static_cast<uint64_t>(std::llround(delay_s * 1e9));
  uint64_t last = MonotonicNs();
  for (uint64_t n = 0; iterations == 0 || n < iterations; ++n) {
    const uint64_t deadline = last + delay_ns;
    for (uint64_t now = MonotonicNs(); now < deadline && !g_stop; now = MonotonicNs()) {
      (void)session->Wait(static_cast<int>(std::min<uint64_t>((deadline - now) / 1'000'000 + 1, 100)));
      auto consumed = session->Consume([&](uint32_t, const tprof_rec_header* h, size_t avail) {
        return builder.AddRecord(h, avail) != 0;
      });
      if (!consumed) return ReportError(consumed.error());
    }
    if (g_stop) break;
    // Whatever the partial halves hold belongs to this interval too.
    if (Status st = session->Flush(); !st) return ReportError(st.error());
    auto flushed = session->Consume([&](uint32_t, const tprof_rec_header* h, size_t avail) {
      return builder.AddRecord(h, avail) != 0;
    });
    if (!flushed) return ReportError(flushed.error());
    const uint64_t now_ns = MonotonicNs();
    Profile current = builder.profile();
    Profile interval = SamplesSince(current, before);
    before = std::move(current);
    interval.kernel_symbols = kernel_symbols;
    Symbolizer symbolizer(interval);
    ReportOptions all = report;
    all.top = 0;  // the flat table picks its rows across processes
    ReportData data = BuildReport(interval, symbolizer, all);
    const double seconds = static_cast<double>(now_ns - last) / 1e9;
    last = now_ns;
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
      PrintFunctions(data, report.top);
    if (batch) std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace tprof::cli
