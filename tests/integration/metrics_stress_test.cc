// A switch storm: threads that ping-pong, yield and spawn short-lived
// threads on every CPU, a concurrent drainer, READ_SELF callers and self-page
// readers. Every nanosecond a thread ran must reach exactly one consumer:
// per thread, the sum of everything drained and read equals its CPU time as
// the scheduler counts it (CLOCK_THREAD_CPUTIME_ID), within a margin derived
// from its own dispatch count, never from wall time.
#include <linux/tprof.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "guest_env.h"
#include "tprof/self_meter.h"

namespace tprof::test {
namespace {

using std::chrono::milliseconds;

struct Totals {
  uint64_t time = 0, dispatches = 0;
  bool exited = false;
};

class Ledger {
 public:
  void Add(uint64_t identity, uint64_t time, uint64_t dispatches, bool exited = false) {
    std::lock_guard<std::mutex> lock(mu_);
    Totals& t = by_identity_[identity];
    t.time += time;
    t.dispatches += dispatches;
    t.exited |= exited;
  }
  Totals Get(uint64_t identity) {
    std::lock_guard<std::mutex> lock(mu_);
    return by_identity_[identity];
  }

 private:
  std::mutex mu_;
  std::map<uint64_t, Totals> by_identity_;
};

struct WorkerResult {
  uint64_t identity = 0;
  uint64_t cpu_ns = 0;  // CLOCK_THREAD_CPUTIME_ID at its final READ_SELF
};

TEST(MetricsStress, SwitchStormTotalsMatchTheSchedulersCpuTime) {
  Device dev = OpenDeviceOrFail();
  auto specs = ParseMetricList("time,dispatches");
  ASSERT_TRUE(specs);
  ASSERT_TRUE(dev.EnableMetrics(*specs));
  Ledger ledger;
  std::atomic<bool> stop_drain{false};
  std::atomic<uint64_t> drains{0};

  // The drainer takes whatever is listed, concurrently with everything.
  std::thread drainer([&] {
    while (!stop_drain.load()) {
      auto r = dev.Drain(0, 16);  // small buffers: many partial drains
      ASSERT_TRUE(r) << r.error().message();
      for (const ThreadMetrics& t : r->threads)
        ledger.Add(t.identity, t.values[0], t.values[1], t.exited);
      ++drains;
      std::this_thread::yield();
    }
  });

  long ncpu = ::sysconf(_SC_NPROCESSORS_ONLN);
  int nworkers = int(std::max(4L, 2 * ncpu));
  std::vector<WorkerResult> results(static_cast<size_t>(nworkers));
  std::vector<std::thread> workers;
  int pipes[2][2];
  ASSERT_EQ(::pipe(pipes[0]), 0);
  ASSERT_EQ(::pipe(pipes[1]), 0);
  for (int w = 0; w < nworkers; ++w) {
    workers.emplace_back([&, w] {
      uint64_t v[TPROF_MAX_METRICS];
      auto meter = (w % 2) ? SelfMeter::Open(dev) : Expected<SelfMeter>(Error::FromErrno(ENOENT, "no meter for even workers"));
      for (int i = 0; i < 60; ++i) {
        switch ((i + w) % 4) {
          case 0: {  // ping-pong through a pipe pair (workers 0 and 1)
            char c = 0;
            if (w < 2) {
              if (::write(pipes[w][1], &c, 1) != 1) return;
              if (::read(pipes[1 - w][0], &c, 1) != 1) return;
            } else {
              for (int y = 0; y < 20; ++y) ::sched_yield();
            }
            break;
          }
          case 1: {  // a short-lived thread (churn in the table)
            std::thread child([&] {
              BurnCpu(milliseconds(1));
              auto id = dev.ReadSelf(v);
              if (id) ledger.Add(*id, v[0], v[1]);
            });
            child.join();
            break;
          }
          case 2:  // read-and-zero of itself
            if (auto id = dev.ReadSelf(v)) ledger.Add(*id, v[0], v[1]);
            break;
          case 3:  // burn, reading the self page (never consumes)
            BurnCpu(milliseconds(1));
            if (meter) (void)meter->Read(v);
            break;
        }
      }
      results[size_t(w)].cpu_ns = ThreadCpuNs();
      auto id = dev.ReadSelf(v);
      ASSERT_TRUE(id);
      ledger.Add(*id, v[0], v[1]);
      results[size_t(w)].identity = *id;
    });
  }
  for (auto& t : workers) t.join();
  stop_drain = true;
  drainer.join();
  // Exited workers' last records (a few dispatches after their last read).
  auto rest = dev.DrainAll(0);
  ASSERT_TRUE(rest);
  for (const ThreadMetrics& t : rest->threads) ledger.Add(t.identity, t.values[0], t.values[1], t.exited);
  for (int p = 0; p < 2; ++p) {
    ::close(pipes[p][0]);
    ::close(pipes[p][1]);
  }

  EXPECT_GT(drains.load(), 10u);
  for (int w = 0; w < nworkers; ++w) {
    const WorkerResult& r = results[size_t(w)];
    ASSERT_NE(r.identity, 0u);
    Totals t = ledger.Get(r.identity);
    EXPECT_TRUE(t.exited) << "worker " << w << ": no final record";
    // tprof and CFS read clocks at slightly different points of each
    // switch (sched_clock() vs the runqueue clock): allow 30 us per
    // dispatch plus 1%. A lost or doubly counted slice is far larger.
    uint64_t margin = r.cpu_ns / 100 + 30'000 * t.dispatches;
    uint64_t diff = t.time > r.cpu_ns ? t.time - r.cpu_ns : r.cpu_ns - t.time;
    // Time after its final read (its exit) is in t.time, not in cpu_ns.
    EXPECT_LE(diff, margin + 2 * kTickNs)
        << "worker " << w << ": tprof " << t.time << " ns vs thread CPU time " << r.cpu_ns
        << " ns, " << t.dispatches << " dispatches";
  }
  ASSERT_TRUE(dev.DisableMetrics());
}

}  // namespace
}  // namespace tprof::test
