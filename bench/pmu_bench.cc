// PMU programs' cost and latency (issue 11), run by bench/run.sh in an
// --icount guest, where guest time advances 1 ns per instruction:
//   1. the cost per page fault of a loop touching fresh pages: bare, under
//      `perf stat -e page-faults,context-switches` (perf counting the same
//      events), with a tprof program counting them, and with a rule over
//      both evaluated at every fault (granularity 1) that never fires;
//   2. the delay from a threshold crossing to the monitor's callback, in
//      instructions: the event's kernel timestamp against CLOCK_MONOTONIC
//      when the monitoring thread receives it (it waits in poll());
//   3. where the CPU has a hardware PMU (the arm64 guest's emulated PMUv3;
//      x86 TCG has none): the cost of counting instructions and cycles on
//      a workload of known length, under `perf stat -e instructions,cycles`,
//      with a tprof program counting both at granularity K, with a rule
//      over both (3*i-c>0, re-armed whenever false) evaluated at every
//      overflow, and with an event at every K delivered to a monitor thread
//      (and, for reference, perf record sampling both at period K);
//      and the crossing -> callback delay of a threshold on cycles.
// Ratios against the bare workload, measured in the same boot.
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tprof/device/device.h"
#include "tprof/device/pmu_program.h"

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

// The first number a child command prints (a loop's median ns), 0 if none.
double ChildNs(const std::string& cmd) {
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return 0;
  double ns = 0;
  if (std::fscanf(p, "%lf", &ns) != 1) ns = 0;
  ::pclose(p);
  return ns;
}

// The fault loop in a child under `perf stat -e page-faults`.
double UnderPerfStat(const char* perf, const char* self, int reps) {
  return ChildNs(std::string(perf) + " stat -x, -e page-faults,context-switches -o /dev/null -- " + self +
                 " --fault-loop " + std::to_string(reps));
}

// Crossing -> callback delays: `prog`'s events received by a monitor
// thread waiting in poll() while `work` runs, each event's kernel
// timestamp against CLOCK_MONOTONIC in the callback. Stops after `want`
// events or 3 s without one.
std::vector<double> CallbackDelays(const tprof::pmu::Program& prog, size_t want, const std::function<void()>& work) {
  auto mon = tprof::pmu::Monitor::Open();
  if (!mon || !mon->Subscribe(prog)) {
    std::fprintf(stderr, "pmu_bench: no monitor\n");
    std::exit(1);
  }
  std::vector<double> delays;
  std::thread t([&] {
    while (delays.size() < want) {
      auto n = mon->Wait(std::chrono::milliseconds(3000), [&](const tprof_pmu_event& e) {
        delays.push_back(double(NowNs() - e.time_ns));
      });
      if (!n || *n == 0) break;
    }
  });
  work();
  t.join();
  std::sort(delays.begin(), delays.end());
  return delays;
}

// --- Hardware counters (arm64 guest) ---

// A loop of exactly 2 x n instructions (subs + b.ne, dec + jnz).
extern "C" __attribute__((noinline, used)) void tprof_bench_known_loop(uint64_t n) {
#if defined(__aarch64__)
  __asm__ volatile("1: subs %0, %0, #1\n\tb.ne 1b" : "+r"(n) : : "cc");
#elif defined(__x86_64__)
  __asm__ volatile("1: dec %0\n\tjnz 1b" : "+r"(n) : : "cc");
#else
#error "tprof_bench_known_loop: no hand-written loop for this architecture"
#endif
}

// The workload: kHwChunks x (a 2 x kHwChunkIters-instruction loop, then
// getppid()). The system call matters: QEMU 7.2 notices an instruction
// counter's overflow only at the next exception-level change, so a pure
// user loop would defer every overflow to the timer tick.
constexpr uint64_t kHwChunkIters = 1000;
constexpr int kHwChunks = 10000;
constexpr double kHwLoopInstructions = 2.0 * kHwChunkIters * kHwChunks;

void HwWorkload() {
  for (int i = 0; i < kHwChunks; i++) {
    tprof_bench_known_loop(kHwChunkIters);
    ::syscall(SYS_getppid);
  }
}

// ns of one workload run, median of `reps`.
double HwNs(int reps) {
  std::vector<double> v;
  for (int r = 0; r < reps; r++) {
    uint64_t t0 = NowNs();
    HwWorkload();
    v.push_back(double(NowNs() - t0));
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The workload's median ns in a child that `perf_cmd` runs.
double HwUnder(const std::string& perf_cmd, const char* self, int reps) {
  return ChildNs(perf_cmd + " -- " + self + " --hw-loop " + std::to_string(reps));
}

// The workload in a child under `perf stat -e instructions,cycles`; the
// counts perf printed (CSV) go to `counts`, so a run where perf counted
// nothing is visible.
double HwUnderPerfStat(const char* perf, const char* self, int reps, std::string* counts) {
  const std::string out = "/tmp/tprof-pmu-bench-perf-stat.csv";
  const double ns = HwUnder(std::string(perf) + " stat -x, -e instructions,cycles -o " + out, self, reps);
  std::ifstream f(out);
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    // "VALUE,UNIT,EVENT,..."
    std::stringstream ss(line);
    std::string value, unit, event;
    std::getline(ss, value, ',');
    std::getline(ss, unit, ',');
    std::getline(ss, event, ',');
    *counts += (counts->empty() ? "" : ", ") + event + " " + value;
  }
  return ns;
}

std::string ReadSysctl(const char* path) {
  std::ifstream f(path);
  std::string v;
  f >> v;
  return v;
}

void WriteSysctl(const char* path, const std::string& v) {
  std::ofstream f(path);
  f << v << "\n";
}

// Sets a sysctl for this scope; the old value comes back at its end.
class SysctlOverride {
 public:
  SysctlOverride(const char* path, const std::string& value) : path_(path), old_(ReadSysctl(path)) {
    WriteSysctl(path_, value);
  }
  ~SysctlOverride() { WriteSysctl(path_, old_); }
  SysctlOverride(const SysctlOverride&) = delete;
  SysctlOverride& operator=(const SysctlOverride&) = delete;
  const std::string& old() const { return old_; }

 private:
  const char* path_;
  std::string old_;
};

// What a configuration adds to the counters: nothing, the rule, or the
// rule and a threshold on c at every K (an event at every c overflow).
enum class HwExtra { kNone, kRule, kRuleAndEvents };

// i=instructions:K and c=cycles:K of this thread, optionally the rule
// 3*i-c>0 (re-armed whenever it is false) over both, and a threshold
// c>=K/K.
tprof::Expected<tprof::pmu::Program> HwProgram(const tprof::Device& dev, uint64_t k, HwExtra extra) {
  tprof::pmu::ProgramSpec spec;
  const std::string ks = std::to_string(k);
  if (!spec.AddCounter("i=instructions:" + ks, nullptr) || !spec.AddCounter("c=cycles:" + ks, nullptr) ||
      (extra != HwExtra::kNone && !spec.AddRule("3*i-c>0", tprof::pmu::Rearm::kOnFalse)) ||
      (extra == HwExtra::kRuleAndEvents && !spec.AddThreshold("c>=" + ks + "/" + ks))) {
    std::fprintf(stderr, "pmu_bench: bad spec\n");
    std::exit(1);
  }
  return tprof::pmu::Program::Create(dev, spec.Build(TPROF_PMU_SCOPE_THREAD, 0));
}

// A monitor thread draining a program's events until destroyed: how many
// arrived and how many the kernel reported lost (queue or socket full).
class EventDrain {
 public:
  explicit EventDrain(const tprof::pmu::Program& prog) {
    auto mon = tprof::pmu::Monitor::Open();
    if (!mon || !mon->Subscribe(prog)) {
      std::fprintf(stderr, "pmu_bench: no monitor\n");
      std::exit(1);
    }
    mon_.emplace(std::move(*mon));
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        auto n = mon_->Wait(std::chrono::milliseconds(50), [this](const tprof_pmu_event& e) {
          received_++;
          lost_ += e.lost;
        });
        if (!n) break;
      }
    });
  }
  ~EventDrain() { Stop(); }
  EventDrain(const EventDrain&) = delete;
  EventDrain& operator=(const EventDrain&) = delete;
  void Stop() {
    if (!stop_.exchange(true)) thread_.join();
  }
  // Read after Stop().
  uint64_t received() const { return received_; }
  uint64_t lost() const { return lost_; }

 private:
  std::optional<tprof::pmu::Monitor> mon_;
  std::atomic<bool> stop_{false};
  uint64_t received_ = 0, lost_ = 0;
  std::thread thread_;
};

// Section 3; returns false when something that should work did not.
bool HardwareSection(const tprof::Device& dev, const char* perf, const char* self, int reps) {
  {
    auto probe = HwProgram(dev, 100000, HwExtra::kNone);
    if (!probe) {
      std::printf("PMU programs, hardware counters: none here (%s): rows skipped\n",
                  probe.error().message().c_str());
      return true;
    }
  }
  const char* icount = std::getenv("TPROF_VM_ICOUNT_SHIFT");
  // Overflows at K = 10^4 come 100,000 times a guest second per counter:
  // lift perf's sample-rate limit (default 100,000/s, 400 a tick at
  // HZ=250, lowered further when handlers take long) so that no counter
  // is throttled; the values read back show it. (The rate first: the
  // kernel refuses to set it while perf_cpu_time_max_percent is 0.)
  // (Restored in the reverse order, the percentage first.)
  const char* kRate = "/proc/sys/kernel/perf_event_max_sample_rate";
  const char* kPercent = "/proc/sys/kernel/perf_cpu_time_max_percent";
  const SysctlOverride rate(kRate, "1000000");
  const SysctlOverride percent(kPercent, "0");
  std::printf("PMU programs, hardware counters: a workload of %d x (%.0f-instruction loop + getppid),"
              " median of %d (icount shift %s; perf_event_max_sample_rate %s -> %s,"
              " perf_cpu_time_max_percent %s -> %s)\n",
              kHwChunks, 2.0 * kHwChunkIters, reps, icount ? icount : "none", rate.old().c_str(),
              ReadSysctl(kRate).c_str(), percent.old().c_str(), ReadSysctl(kPercent).c_str());
  bool ok = true;
  const double bare = HwNs(reps);
  auto row = [&](const std::string& what, double ns, double against_perf) {
    std::printf("  %-52s %12.0f ns  %.4fx  %+10.0f", what.c_str(), ns, ns / bare, ns - bare);
    if (against_perf > 0) std::printf("  %.4fx perf stat", ns / against_perf);
    std::printf("\n");
  };
  row("bare workload (" + std::to_string(long(kHwLoopInstructions)) + " loop instructions)", bare, 0);
  double ps = 0;
  if (perf) {
    std::string counts;
    ps = HwUnderPerfStat(perf, self, reps, &counts);
    if (ps <= 0) {
      std::printf("  perf stat -e instructions,cycles: no result\n");
      ok = false;
    } else {
      row("perf stat -e instructions,cycles", ps, 0);
      std::printf("    (perf counted %s over the child's %d runs)\n", counts.c_str(), reps);
    }
  }
  for (uint64_t k : {10000ull, 100000ull, 1000000ull}) {
    for (HwExtra extra : {HwExtra::kNone, HwExtra::kRule, HwExtra::kRuleAndEvents}) {
      auto prog = HwProgram(dev, k, extra);
      if (!prog) {
        std::printf("  K=%llu: %s\n", (unsigned long long)k, prog.error().message().c_str());
        ok = false;
        continue;
      }
      std::optional<EventDrain> drain;
      if (extra == HwExtra::kRuleAndEvents) drain.emplace(*prog);
      const double t = HwNs(reps);
      auto v = prog->Read();
      if (drain) drain->Stop();
      const std::string what = "tprof, i and c at K=" + std::to_string(k) +
                               (extra == HwExtra::kNone   ? ""
                                : extra == HwExtra::kRule ? ", rule 3*i-c>0"
                                                          : ", rule, event every K");
      row(what, t, ps);
      if (v) {
        // Each counter's value moves by K at its overflow: the overflows
        // of one run, and what each cost the workload.
        const double overflows = double(v->values[0] + v->values[1]) / double(k) / reps;
        std::printf("    (values i=%llu c=%llu over %d runs: %.0f overflows a run, %.0f ns each;"
                    " rule fired %llu",
                    (unsigned long long)v->values[0], (unsigned long long)v->values[1], reps, overflows,
                    overflows > 0 ? (t - bare) / overflows : 0.0,
                    (unsigned long long)(extra != HwExtra::kNone ? v->rule_fired[0] : 0));
        if (drain) {
          std::printf("; events received %llu, lost %llu", (unsigned long long)drain->received(),
                      (unsigned long long)drain->lost());
        }
        std::printf(")\n");
      }
    }
  }
  // For reference, what an interrupt every K costs perf: sampling both
  // counters at period K (perf record -c K, to a file in the guest's RAM;
  // perf's process wakes to copy the samples out, on the same CPU).
  if (perf) {
    for (uint64_t k : {10000ull, 100000ull, 1000000ull}) {
      const std::string ks = std::to_string(k);
      const double t = HwUnder(std::string(perf) + " record -q -e instructions,cycles -c " + ks +
                                   " -o /tmp/tprof-pmu-bench-perf.data",
                               self, reps);
      if (t <= 0) {
        std::printf("  perf record -c %s: no result\n", ks.c_str());
        ok = false;
        continue;
      }
      row("perf record -e instructions,cycles -c " + ks, t, ps);
    }
    ::unlink("/tmp/tprof-pmu-bench-perf.data");
  }
  row("bare workload again", HwNs(reps), 0);

  // Crossing -> callback: a threshold every 250,000 cycles (K = 10^4), the
  // monitor waiting in poll() on another thread of the one CPU.
  tprof::pmu::ProgramSpec spec;
  if (!spec.AddCounter("c=cycles:10000", nullptr) || !spec.AddThreshold("c>=250000/250000")) return false;
  auto prog = tprof::pmu::Program::Create(dev, spec.Build(TPROF_PMU_SCOPE_THREAD, 0));
  if (!prog) {
    std::printf("  threshold program: %s\n", prog.error().message().c_str());
    return false;
  }
  const size_t want = size_t(kHwLoopInstructions / 250000) - 2;
  auto delays = CallbackDelays(*prog, want, [] { HwWorkload(); });
  if (delays.empty()) {
    std::printf("  hardware crossing -> callback: no events\n");
    ok = false;
  } else {
    std::printf("PMU programs: cycles threshold crossing -> monitor callback (%zu events): median %.0f ns,"
                " p90 %.0f ns (under --icount: instructions)\n",
                delays.size(), delays[delays.size() / 2], delays[delays.size() * 9 / 10]);
  }
  return ok;
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
    if (!std::strcmp(argv[i], "--hw-loop") && i + 1 < argc) {
      std::printf("%.1f\n", HwNs(std::atoi(argv[i + 1])));
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
  if (!prog) {
    std::fprintf(stderr, "pmu_bench: no program\n");
    return 1;
  }
  auto delays = CallbackDelays(*prog, size_t(kPages / 50), [] { FaultNs(1); });
  if (delays.empty()) {
    std::printf("  crossing -> callback: no events\n");
    return 1;
  }
  std::printf("PMU programs: threshold crossing -> monitor callback (%zu events): median %.0f ns,"
              " p90 %.0f ns (under --icount: instructions)\n",
              delays.size(), delays[delays.size() / 2], delays[delays.size() * 9 / 10]);
  return HardwareSection(*dev, perf, argv[0], reps) ? 0 : 1;
}
