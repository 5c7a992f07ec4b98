// PMU programs' cost and latency (issue 11), run by bench/run.sh in an
// --icount guest, where guest time advances 1 ns per instruction:
//   1. the cost per page fault of a loop touching fresh pages: bare, under
//      `perf stat -e page-faults,context-switches` (perf counting the same
//      events), with a tprof program counting them, and with a rule over
//      both evaluated at every fault (granularity 1) that never fires;
//   2. the delay from a threshold crossing to the monitor's callback, in
//      instructions: the event's kernel timestamp against CLOCK_MONOTONIC
//      when the monitoring thread receives it (it waits in poll()).
// Ratios against the bare loop, measured in the same boot.
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tprof/device.h"
#include "tprof/pmu.h"

namespace {

constexpr long kPages = 2000;

uint64_t NowNs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

extern "C" __attribute__((noinline, used)) void tprof_bench_touch(char* base, long pages, long page) {
  for (long i = 0; i < pages; i++) *(volatile char*)(base + i * page) = 1;
}

// ns per fault of touching kPages fresh pages, median of `reps`.
double FaultNs(int reps) {
  const long page = ::sysconf(_SC_PAGESIZE);
  std::vector<double> v;
  for (int r = 0; r < reps; r++) {
    char* base = static_cast<char*>(::mmap(nullptr, kPages * page, PROT_READ | PROT_WRITE,
                                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base == MAP_FAILED) std::exit(1);
    ::madvise(base, kPages * page, MADV_NOHUGEPAGE);
    uint64_t t0 = NowNs();
    tprof_bench_touch(base, kPages, page);
    v.push_back(double(NowNs() - t0) / kPages);
    ::munmap(base, kPages * page);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

tprof::pmu::Program MakeProgram(const tprof::Device& dev, bool with_rule) {
  tprof::pmu::ProgramSpec spec;
  if (!spec.AddCounter("f=page-faults", nullptr) || !spec.AddCounter("cs=context-switches", nullptr) ||
      (with_rule && !spec.AddRule("2*f-cs>1000000000"))) {
    std::fprintf(stderr, "pmu_bench: bad spec\n");
    std::exit(1);
  }
  auto p = tprof::pmu::Program::Create(dev, spec.Build(TPROF_PMU_SCOPE_THREAD, 0));
  if (!p) {
    std::fprintf(stderr, "pmu_bench: %s\n", p.error().message().c_str());
    std::exit(1);
  }
  return std::move(*p);
}

// The fault loop in a child under `perf stat -e page-faults`.
double UnderPerfStat(const char* perf, const char* self, int reps) {
  std::string cmd = std::string(perf) + " stat -x, -e page-faults,context-switches -o /dev/null -- " + self +
                    " --fault-loop " + std::to_string(reps);
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return 0;
  double ns = 0;
  if (std::fscanf(p, "%lf", &ns) != 1) ns = 0;
  ::pclose(p);
  return ns;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  const char* perf = nullptr;
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--fault-loop") && i + 1 < argc) {
      std::printf("%.1f\n", FaultNs(std::atoi(argv[i + 1])));
      return 0;
    }
    if (!std::strcmp(argv[i], "--perf") && i + 1 < argc) perf = argv[++i];
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
  }
  auto dev = tprof::Device::Open();
  if (!dev) {
    std::fprintf(stderr, "pmu_bench: %s\n", dev.error().message().c_str());
    return 1;
  }

  std::printf("PMU programs: cost per page fault (%ld fresh pages, median of %d)\n", kPages, reps);
  double bare = FaultNs(reps);
  std::printf("  %-44s %9.0f ns  1.000x\n", "bare loop", bare);
  if (perf) {
    double ps = UnderPerfStat(perf, argv[0], reps);
    std::printf("  %-44s %9.0f ns  %.3fx\n", "perf stat -e page-faults,context-switches", ps, ps / bare);
  }
  {
    auto prog = MakeProgram(*dev, false);
    double t = FaultNs(reps);
    std::printf("  %-44s %9.0f ns  %.3fx\n", "tprof program, 2 counters (period 1)", t, t / bare);
  }
  {
    auto prog = MakeProgram(*dev, true);
    double t = FaultNs(reps);
    std::printf("  %-44s %9.0f ns  %.3fx\n", "... and a rule on them (granularity 1)", t, t / bare);
  }
  double again = FaultNs(reps);
  std::printf("  %-44s %9.0f ns  %.3fx\n", "bare loop again", again, again / bare);

  // Crossing -> callback delay: a threshold every 50 faults, the monitor
  // waiting in poll() on another thread.
  tprof::pmu::ProgramSpec spec;
  if (!spec.AddCounter("f=page-faults", nullptr) || !spec.AddThreshold("f>=50/50")) return 1;
  auto prog = tprof::pmu::Program::Create(*dev, spec.Build(TPROF_PMU_SCOPE_THREAD, 0));
  auto mon = tprof::pmu::Monitor::Open();
  if (!prog || !mon || !mon->Subscribe(*prog)) {
    std::fprintf(stderr, "pmu_bench: no program or monitor\n");
    return 1;
  }
  std::vector<double> delays;
  std::thread t([&] {
    while (delays.size() < size_t(kPages / 50)) {
      auto n = mon->Wait(std::chrono::milliseconds(3000), [&](const tprof_pmu_event& e) {
        delays.push_back(double(NowNs() - e.time_ns));
      });
      if (!n || *n == 0) break;
    }
  });
  FaultNs(1);
  t.join();
  if (delays.empty()) {
    std::printf("  crossing -> callback: no events\n");
    return 1;
  }
  std::sort(delays.begin(), delays.end());
  std::printf("PMU programs: threshold crossing -> monitor callback (%zu events): median %.0f ns,"
              " p90 %.0f ns (under --icount: instructions)\n",
              delays.size(), delays[delays.size() / 2], delays[delays.size() * 9 / 10]);
  return 0;
}
