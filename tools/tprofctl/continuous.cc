#include "continuous.h"

#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <utility>

#include "refresh_thread.h"
#include "tprof/analysis/symbolizer.h"
#include "tprof/output/pprof_series.h"

namespace tprof::cli {
namespace {

int64_t RealtimeNs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::string HostName() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) return "";
  return host;
}

}  // namespace

struct ContinuousRecording::State {
  explicit State(const ContinuousOptions& o)
      : options(o), series({.dir = o.out_dir, .host = HostName(), .keep = o.keep}),
        live(KernelSymbolsOnly()), symbolizer(live, SymbolizerOptions{.source_lines = false}) {}
  // As top: kernel symbols once, before sampling (reading kallsyms every
  // interval would cost more than the samples), and one symbolizer over
  // `live`, which each interval refills, so ELF files are opened once.
  static Profile KernelSymbolsOnly() {
    Profile p;
    if (auto ks = ReadKallsyms()) p.kernel_symbols = std::move(*ks);
    return p;
  }
  ContinuousOptions options;
  PprofSeries series;
  Profile live;
  Symbolizer symbolizer;
};

ContinuousRecording::ContinuousRecording(const ContinuousOptions& options)
    : s_(std::make_unique<State>(options)) {}
ContinuousRecording::~ContinuousRecording() = default;

Expected<ContinuousResult> ContinuousRecording::Record(Recorder& recorder, RecorderRunOptions run) {
  const ContinuousOptions& options = s_->options;
  PprofSeries& series = s_->series;
  Profile& live = s_->live;
  Symbolizer& symbolizer = s_->symbolizer;
  size_t files = 0, failed = 0;
  uint64_t samples = 0;  // in the intervals taken
  // On the writer thread (or, for the last interval, after it ended).
  auto write = [&](TopInterval& taken) {
    KernelSymbols kernel_symbols = std::move(live.kernel_symbols);
    live = std::move(taken.samples);
    // The interval's JIT maps, build ids and vDSO; the kernel's symbols
    // are those read at start.
    SnapshotSystemState(&live, {.kernel_symbols = false});
    live.kernel_symbols = std::move(kernel_symbols);
    symbolizer.ForgetAddresses();  // the mappings may have changed
    const int64_t end_ns = RealtimeNs();
    const auto duration_ns = static_cast<int64_t>(std::llround(taken.seconds * 1e9));
    auto path = series.Write(live, symbolizer, end_ns, duration_ns);
    if (!path) {
      ++failed;
      std::fprintf(stderr, "tprofctl: interval of %" PRIu64 " samples not written: %s\n",
                   live.TotalSamples(), path.error().message().c_str());
    } else {
      ++files;
      if (!options.quiet)
        std::fprintf(stderr, "tprofctl: %" PRIu64 " samples, %" PRIu64 " lost in %.2f s: %s\n",
                     live.TotalSamples(), live.TotalLostSamples(), taken.seconds, path->c_str());
    }
    return true;
  };
  RefreshThread writer(write, [] {});
  auto last = std::chrono::steady_clock::now();
  auto seconds_since_last = [&] {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - last).count();
    last = now;
    return s;
  };
  run.interval = std::chrono::milliseconds(std::max<long long>(1, std::llround(options.interval_s * 1e3)));
  // On the recorder's thread: take the interval out of the recorder (it
  // keeps no more than one interval's stacks) and go on draining; while
  // the previous file is being written the recorder keeps counting, and
  // its samples go into the next.
  run.on_interval = [&](const Profile&) {
    writer.Offer([&] {
      TopInterval taken{recorder.TakeInterval(), seconds_since_last()};
      samples += taken.samples.TotalSamples();
      return taken;
    });
    return true;
  };
  recorder.SetSnapshotOptions({.kernel_symbols = false});  // write() has them
  auto profile = recorder.Run(run);
  writer.StopAfterPending();
  if (!profile) return profile.error();
  // What came after the last interval: the last file. Its losses are the
  // whole recording's (the control area's totals), said in the summary.
  ContinuousResult result{.samples = samples + profile->TotalSamples(),
                          .lost = profile->TotalLostSamples()};
  TopInterval rest{std::move(*profile), seconds_since_last()};
  rest.samples.kernel_symbols = {};  // write() keeps live's
  for (auto& [cpu, totals] : rest.samples.cpus) totals.has_control_totals = false;
  write(rest);
  result.files = files;
  result.failed = failed;
  return result;
}

}  // namespace tprof::cli
