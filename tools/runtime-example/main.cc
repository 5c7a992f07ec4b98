// tprof-runtime-example: a toy "language runtime" embedding
// tprof::RuntimeProfiler, the way a JVM would.
//
// A pool of kernel threads (--workers) runs many short-lived runtime threads
// (--runtime-threads), so kernel threads are reused. Every runtime thread
// calls main -> parse -> lex, then main -> render, each burning a known
// amount of CPU: parse 2 units, lex 1, render 1 (a unit is --unit-ms of
// thread CPU time), so parse's base is twice render's and its cumulative
// three times. Every third runtime thread ends without an end event, as a
// runtime recycling its kernel thread might: the next runtime thread on that
// kernel thread then takes the reuse path. The main thread polls
// (drains) meanwhile and prints the tree at the end.
//
// Needs per-thread accounting on: `tprofctl metrics on`.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tprof/device/device.h"
#include "tprof/device/metrics.h"
#include "tprof/device/runtime_profiler.h"

namespace {

constexpr char kProgram[] = "tprof-runtime-example";

struct Options {
  uint32_t workers = 4;
  uint32_t runtime_threads = 40;
  uint32_t unit_ms = 2;
  bool json = false;
  tprof::ReusePolicy policy = tprof::ReusePolicy::kChargePrevious;
};

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: %s [--workers N] [--runtime-threads N] [--unit-ms N] [--json] "
               "[--charge-new]\n"
               "  --workers N          kernel threads in the pool (default 4)\n"
               "  --runtime-threads N  runtime threads to run on them (default 40)\n"
               "  --unit-ms N          CPU time of one work unit (default 2)\n"
               "  --json               print the profile as JSON\n"
               "  --charge-new         charge a reused kernel thread's pending delta to the\n"
               "                       new runtime thread instead of the previous one\n"
               "Needs per-thread metrics on: run `tprofctl metrics on` first.\n",
               kProgram);
}

bool ParseCount(const char* name, const char* text, uint32_t* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long v = text != nullptr ? std::strtoul(text, &end, 10) : 0;
  if (text == nullptr || *text == '\0' || *text == '-' || *end != '\0' || errno != 0 || v == 0 ||
      v > 1000000) {
    std::fprintf(stderr, "%s: %s needs a number from 1 to 1000000\n", kProgram, name);
    return false;
  }
  *out = static_cast<uint32_t>(v);
  return true;
}

// 0: run; 1: bad usage (already reported); 2: --help.
int ParseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (arg == "--workers") {
      if (!ParseCount("--workers", value, &o->workers)) return 1;
      ++i;
    } else if (arg == "--runtime-threads") {
      if (!ParseCount("--runtime-threads", value, &o->runtime_threads)) return 1;
      ++i;
    } else if (arg == "--unit-ms") {
      if (!ParseCount("--unit-ms", value, &o->unit_ms)) return 1;
      ++i;
    } else if (arg == "--json") {
      o->json = true;
    } else if (arg == "--charge-new") {
      o->policy = tprof::ReusePolicy::kChargeNew;
    } else if (arg == "--help" || arg == "-h") {
      return 2;
    } else {
      std::fprintf(stderr, "%s: unknown option '%s'\n", kProgram, arg.c_str());
      Usage(stderr);
      return 1;
    }
  }
  return 0;
}

uint64_t ThreadCpuNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Spins until this thread has used `ns` more CPU time: a method's "work".
void Burn(uint64_t ns) {
  uint64_t until = ThreadCpuNs() + ns;
  volatile uint64_t sink = 0;
  while (ThreadCpuNs() < until)
    for (int i = 0; i < 1000; ++i) sink = sink + static_cast<uint64_t>(i);
}

class Runtime {
 public:
  Runtime(tprof::RuntimeProfiler& profiler, const Options& options)
      : profiler_(profiler),
        options_(options),
        unit_ns_(uint64_t{options.unit_ms} * 1000000),
        kernel_tids_(options.workers, 0) {}

  // One kernel thread of the pool: runs runtime threads until none are left.
  void Worker(size_t index) {
    const auto tid = static_cast<uint32_t>(::gettid());
    kernel_tids_[index] = tid;
    for (;;) {
      uint32_t n = next_.fetch_add(1);
      if (n >= options_.runtime_threads) return;
      Burn(unit_ns_ / 4);  // the runtime's own scheduling work, between runtime threads
      RunRuntimeThread(n, tid);
    }
  }

  void Method(tprof::RuntimeThreadId t, const char* name, uint64_t units,
              const std::function<void()>& callees = {}) {
    profiler_.OnMethodEnter(t, name);
    Burn(units * unit_ns_);
    if (callees) callees();
    profiler_.OnMethodExit(t);
  }

  void RunRuntimeThread(uint32_t n, uint32_t tid) {
    tprof::RuntimeThreadId t = profiler_.OnThreadStart("rt-" + std::to_string(n), tid);
    Method(t, "main", 0, [&] {
      Method(t, "parse", 2, [&] { Method(t, "lex", 1); });
      Method(t, "render", 1);
    });
    // Every third runtime thread "forgets" its end event (see the top).
    if (n % 3 != 2) profiler_.OnThreadEnd(t);
  }

  bool done() const { return next_.load() >= options_.runtime_threads; }

  // Whether a runtime thread is still bound to a pool thread (after join:
  // its kernel thread's exit has not been drained yet).
  bool AnyBound() const {
    for (uint32_t tid : kernel_tids_)
      if (tid != 0 && profiler_.ThreadOnKernelTid(tid)) return true;
    return false;
  }

 private:
  tprof::RuntimeProfiler& profiler_;
  const Options& options_;
  const uint64_t unit_ns_;
  std::atomic<uint32_t> next_{0};
  std::vector<uint32_t> kernel_tids_;  // one slot per worker, written by it before join
};

// Sums each method's base value of metric `index` over all threads.
void SumBase(const tprof::NodeSnapshot& node, size_t index, std::map<std::string, uint64_t>& sums) {
  for (const tprof::NodeSnapshot& c : node.children) {
    sums[c.name] += c.base[index];
    SumBase(c, index, sums);
  }
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", kProgram, message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (int rc = ParseOptions(argc, argv, &options); rc != 0) {
    if (rc == 2) Usage(stdout);
    return rc == 2 ? 0 : 2;
  }

  auto device = tprof::Device::Open();
  if (!device) return Fail(device.error().message());
  auto status = device->GetMetricsStatus();
  if (!status) return Fail(status.error().message());
  if (!status->enabled) return Fail("per-thread metrics are off: run `tprofctl metrics on` first");
  std::vector<std::string> metric_names;
  for (const tprof::MetricSpec& m : status->metrics) metric_names.push_back(tprof::MetricKey(m));

  // The first read tells whether this thread can be read at all; it also
  // zeroes what the main thread used before profiling starts.
  tprof::DeviceMetricsSource source(*device);
  if (auto first = source.ReadThread(0); !first) {
    if (first.error().code().value() == ENODATA)
      return Fail("per-thread metrics are off: run `tprofctl metrics on` first");
    return Fail(first.error().message());
  }

  tprof::RuntimeProfiler profiler(source, metric_names, options.policy);
  Runtime runtime(profiler, options);
  std::vector<std::thread> pool;
  for (size_t i = 0; i < options.workers; ++i)
    pool.emplace_back([&runtime, i] { runtime.Worker(i); });
  // Poll while the pool runs, as a runtime's sampler thread would.
  while (!runtime.done()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (auto polled = profiler.Poll(); !polled) {
      for (std::thread& w : pool) w.join();
      return Fail(polled.error().message());
    }
  }
  for (std::thread& w : pool) w.join();
  // The pool's exit reports: runtime threads whose end was never reported
  // end here, with their kernel thread. The module flags a thread exited
  // when its task is freed (an RCU callback after join), so poll a while.
  for (int i = 0; i < 200; ++i) {
    if (auto polled = profiler.Poll(); !polled) return Fail(polled.error().message());
    if (!runtime.AnyBound()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  if (options.json) {
    std::printf("%s\n", profiler.ToJson().c_str());
  } else {
    std::fputs(profiler.ToText().c_str(), stdout);
  }

  tprof::ProfileSnapshot snapshot = profiler.Snapshot();
  if (!options.json) {
    // What the user can check: parse's base should be about 2x render's.
    for (size_t i = 0; i < snapshot.metrics.size(); ++i) {
      if (snapshot.metrics[i] != "time_ns") continue;
      std::map<std::string, uint64_t> sums;
      for (const tprof::ThreadSnapshot& t : snapshot.threads) SumBase(t.root, i, sums);
      if (sums["render"] != 0)
        std::printf("parse/render base time: %.2f (the work is 2:1)\n",
                    static_cast<double>(sums["parse"]) / static_cast<double>(sums["render"]));
    }
  }
  if (snapshot.read_errors != 0)
    return Fail(std::to_string(snapshot.read_errors) +
                " metric reads failed; last: " + snapshot.last_error);
  return 0;
}
