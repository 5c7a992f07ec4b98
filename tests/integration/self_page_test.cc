// The self page (ABI 1.4) against the real module: a thread reads its own
// CPU time with no system call, and it matches the kernel's own clock for
// the thread; the page follows the thread's switches, is private to each
// thread, is refused when it should be, and dies cleanly (not live) when
// accounting stops or the thread exits.
#include <linux/tprof.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "guest_env.h"
#include "tprof/device/self_meter.h"

namespace tprof::test {
namespace {

using std::chrono::milliseconds;

// The thread's CPU clock read on both sides of one step (a meter's open or
// read): the step happened somewhere in [before, after].
struct Clocked {
  uint64_t before = 0, after = 0;
};
template <class Step>
Clocked Clock(Step&& step) {
  Clocked c;
  c.before = ThreadCpuNs();
  step();
  c.after = ThreadCpuNs();
  return c;
}

// The page's time between two clocked steps against the thread's CPU clock
// over the same interval, within 2% or two scheduler ticks (the issue's
// tolerance for time_ns). The interval lies between the clock's shortest
// reading (to.before - from.after) and its longest (to.after - from.before):
// under TCG a host stall between a page read and a clock read is CPU time of
// the thread's, so a single clock read beside the step could be off by it.
// Never compared with what a burn asked for: the page's current slice is a
// TSC estimate while the clock is the scheduler's, and a loaded host
// stretches both.
::testing::AssertionResult Within(uint64_t ours, Clocked from, Clocked to) {
  const uint64_t shortest = to.before - from.after, longest = to.after - from.before;
  const uint64_t tolerance = std::max<uint64_t>(longest / 50, 2 * kTickNs);
  if (ours + tolerance >= shortest && ours <= longest + tolerance)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "self page " << ours << " ns vs the kernel's "
                                       << shortest << ".." << longest << " ns (tolerance "
                                       << tolerance << ")";
}

class SelfPageTest : public MetricsOnTest {
 protected:
  SelfMeter OpenMeterOrFail() {
    auto m = SelfMeter::Open(dev_);
    if (!m) FailTest(m.error().message());
    return std::move(*m);
  }
};

TEST_F(SelfPageTest, FeatureBitIsAdvertised) {
  Info info = GetInfoOrFail(dev_);
  EXPECT_TRUE(info.features & TPROF_FEAT_SELF_PAGE);
  EXPECT_GE(info.abi_minor, 4u);
}

// The page offers the TSC only where it ticks at a constant rate: the
// kernel's constant_tsc. make check also runs this in a guest whose CPU
// model lacks it (TPROF_VM_CPU=qemu64): there the meter must refuse
// rather than scale cycles of a varying clock.
// On arm64 the page's counter is the generic timer's cntvct_el0, constant
// by the architecture: always offered (Debian's kernels let EL0 read it).
TEST_F(SelfPageTest, TscIsOfferedOnlyWhenItIsConstant) {
#if defined(__aarch64__)
  const bool constant = true;
#else
  std::string cpuinfo;
  ASSERT_EQ(RunCommand("grep -m1 '^flags' /proc/cpuinfo", &cpuinfo), 0);
  const bool constant = cpuinfo.find(" constant_tsc") != std::string::npos;
#endif
  void* m = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, dev_.fd(), TPROF_SELF_PAGE_OFFSET);
  ASSERT_NE(m, MAP_FAILED) << strerror(errno);
  const auto* page = static_cast<const volatile tprof_self_page*>(m);
  EXPECT_EQ((page->flags & TPROF_SELF_TSC) != 0, constant)
      << (constant ? "constant_tsc, but the page offers no TSC"
                   : "no constant_tsc, but the page offers the TSC");
  EXPECT_EQ(munmap(m, 4096), 0);
  auto meter = SelfMeter::Open(dev_);
  EXPECT_EQ(meter.ok(), constant);
  if (!constant && !meter.ok()) {
    EXPECT_EQ(meter.error().code().value(), EOPNOTSUPP);
  }
  std::printf("note: constant_tsc %s\n", constant ? "present" : "absent");
}

TEST_F(SelfPageTest, DescribesTheCallingThread) {
  SelfMeter meter = OpenMeterOrFail();
  EXPECT_EQ(meter.tid(), Gettid());
  EXPECT_EQ(meter.nr_metrics(), 3u);
  EXPECT_EQ(meter.time_index(), 0);
  uint64_t v[TPROF_MAX_METRICS];
  auto identity = dev_.ReadSelf(v);
  ASSERT_TRUE(identity) << identity.error().message();
  EXPECT_EQ(meter.identity(), *identity);
}

TEST_F(SelfPageTest, BusyTimeMatchesTheThreadCpuClock) {
  SelfMeter meter = OpenMeterOrFail();
  uint64_t v[TPROF_MAX_METRICS];
  bool ok = false;
  const Clocked from = Clock([&] { ok = meter.Read(v).ok(); });
  ASSERT_TRUE(ok);
  BurnCpu(milliseconds(300));
  const Clocked to = Clock([&] { ok = meter.Read(v).ok(); });
  ASSERT_TRUE(ok);
  EXPECT_TRUE(Within(v[0], from, to));
}

TEST_F(SelfPageTest, TimeOffTheCpuDoesNotCount) {
  SelfMeter meter = OpenMeterOrFail();
  uint64_t v[TPROF_MAX_METRICS];
  bool ok = false;
  const Clocked from = Clock([&] { ok = meter.Read(v).ok(); });
  ASSERT_TRUE(ok);
  BurnCpu(milliseconds(60));
  std::this_thread::sleep_for(milliseconds(150));
  BurnCpu(milliseconds(60));
  const Clocked to = Clock([&] { ok = meter.Read(v).ok(); });
  ASSERT_TRUE(ok);
  EXPECT_TRUE(Within(v[0], from, to));
  EXPECT_LT(v[0], 150'000'000u) << "the sleep was counted";
  EXPECT_GE(v[1], 1u) << "the sleep is a dispatch";
}

TEST_F(SelfPageTest, ReadTwiceReturnsNearlyZeroTheSecondTime) {
  std::optional<SelfMeter> meter;
  const Clocked opened = Clock([&] { meter.emplace(OpenMeterOrFail()); });
  uint64_t first[TPROF_MAX_METRICS], second[TPROF_MAX_METRICS];
  BurnCpu(milliseconds(50));
  bool ok = false;
  const Clocked read = Clock([&] { ok = meter->Read(first) && meter->Read(second); });
  ASSERT_TRUE(ok);
  EXPECT_TRUE(Within(first[0], opened, read)) << "includes the current slice";
  EXPECT_LE(second[0], read.after - read.before + kTickNs) << "read-and-zero must zero";
}

TEST_F(SelfPageTest, OdometerIsMonotonicAcrossManyReads) {
  SelfMeter meter = OpenMeterOrFail();
  uint64_t prev[TPROF_MAX_METRICS] = {}, now[TPROF_MAX_METRICS];
  uint64_t end = ThreadCpuNs() + 100'000'000;
  int reads = 0;
  while (ThreadCpuNs() < end) {
    ASSERT_TRUE(meter.ReadTotals(now));
    // The current slice is a TSC estimate, the charge at switch-out the
    // scheduler clock: they may differ by a little, never by much.
    ASSERT_GE(now[0] + 1'000'000, prev[0]) << "after " << reads << " reads";
    ASSERT_GE(now[1], prev[1]);
    std::copy(std::begin(now), std::end(now), std::begin(prev));
    ++reads;
  }
  EXPECT_GT(reads, 100);
}

// The page is a private view: reading it zeroes nothing the ioctls report.
TEST_F(SelfPageTest, ReadingThePageLeavesTheAccumulatorsAlone) {
  uint64_t v[TPROF_MAX_METRICS];
  bool ok = false;
  const Clocked zeroed = Clock([&] { ok = dev_.ReadSelf(v).ok(); });  // what came before
  ASSERT_TRUE(ok);
  std::optional<SelfMeter> meter;
  const Clocked opened = Clock([&] { meter.emplace(OpenMeterOrFail()); });
  BurnCpu(milliseconds(50));
  const Clocked read = Clock([&] { ok = meter->Read(v).ok(); });
  ASSERT_TRUE(ok);
  EXPECT_TRUE(Within(v[0], opened, read));
  const Clocked read_self = Clock([&] { ok = dev_.ReadSelf(v).ok(); });
  ASSERT_TRUE(ok);
  EXPECT_TRUE(Within(v[0], zeroed, read_self)) << "READ_SELF lost what the page showed";
}

TEST_F(SelfPageTest, EachThreadHasItsOwnPageAndMappingAgainGivesTheSameOne) {
  SelfMeter a = OpenMeterOrFail();
  SelfMeter b = OpenMeterOrFail();
  uint64_t ta[TPROF_MAX_METRICS], tb[TPROF_MAX_METRICS];
  BurnCpu(milliseconds(20));
  const uint64_t cpu0 = ThreadCpuNs();
  ASSERT_TRUE(a.ReadTotals(ta));
  ASSERT_TRUE(b.ReadTotals(tb));
  const uint64_t cpu1 = ThreadCpuNs();
  EXPECT_EQ(a.identity(), b.identity());
  EXPECT_LE(ta[0], tb[0]);
  EXPECT_LE(tb[0] - ta[0], cpu1 - cpu0 + kTickNs) << "two mappings, one odometer";

  uint64_t other_identity = 0, other_time = 0, other_cpu = 0;
  uint32_t other_tid = 0;
  std::thread([&] {
    auto m = SelfMeter::Open(dev_);
    ASSERT_TRUE(m) << m.error().message();
    uint64_t v[TPROF_MAX_METRICS];
    ASSERT_TRUE(m->ReadTotals(v));
    other_cpu = ThreadCpuNs();  // the new thread's whole life so far
    other_identity = m->identity();
    other_tid = m->tid();
    other_time = v[0];
  }).join();
  EXPECT_NE(other_identity, a.identity());
  EXPECT_NE(other_tid, a.tid());
  EXPECT_LE(other_time, other_cpu + kTickNs) << "a new thread's page starts from zero";
}

TEST_F(SelfPageTest, PageFaultsArriveAtTheNextSwitch) {
  SelfMeter meter = OpenMeterOrFail();
  uint64_t v[TPROF_MAX_METRICS];
  ASSERT_TRUE(meter.Read(v));
  const size_t len = 64 * 4096;
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  std::memset(p, 1, len);
  ::munmap(p, len);
  ASSERT_TRUE(SwitchOutSelf(ContextSwitches(Gettid()))) << "never switched out";  // charges them
  ASSERT_TRUE(meter.Read(v));
  EXPECT_GE(v[2], 64u) << "page-faults";
}

TEST_F(SelfPageTest, StoppingAccountingRetiresThePage) {
  SelfMeter meter = OpenMeterOrFail();
  ASSERT_TRUE(dev_.DisableMetrics());
  uint64_t v[TPROF_MAX_METRICS];
  auto st = meter.Read(v);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code().value(), ENODATA);
  auto again = SelfMeter::Open(dev_);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code().value(), ENODATA);
  // Neutral: what failed, not what to type (tprofctl's hints say that).
  EXPECT_NE(again.error().message().find("per-thread metrics are off"), std::string::npos)
      << again.error().message();

  ASSERT_TRUE(dev_.EnableMetrics(*ParseMetricList("time")));
  ASSERT_FALSE(meter.Read(v)) << "a page of the old run must stay dead";
  std::optional<SelfMeter> fresh;
  const Clocked opened = Clock([&] { fresh.emplace(OpenMeterOrFail()); });
  EXPECT_EQ(fresh->nr_metrics(), 1u);
  BurnCpu(milliseconds(50));
  bool ok = false;
  const Clocked read = Clock([&] { ok = fresh->Read(v).ok(); });
  ASSERT_TRUE(ok);
  EXPECT_TRUE(Within(v[0], opened, read)) << "the fresh page counts";
}

TEST_F(SelfPageTest, PageOfAnExitedThreadIsNotLive) {
  const long page_size = ::sysconf(_SC_PAGESIZE);
  void* addr = MAP_FAILED;
  std::thread([&] {
    addr = ::mmap(nullptr, page_size, PROT_READ, MAP_SHARED, dev_.fd(), TPROF_SELF_PAGE_OFFSET);
  }).join();
  ASSERT_NE(addr, MAP_FAILED) << std::strerror(errno);
  auto* page = static_cast<const tprof_self_page*>(addr);
  // The kernel forgets a thread when its task is freed (after an RCU grace period).
  EXPECT_TRUE(WaitFor([page] { return !(__atomic_load_n(&page->flags, __ATOMIC_ACQUIRE) & TPROF_SELF_LIVE); }))
      << "the exited thread's page stayed live";
  ::munmap(addr, page_size);
}

TEST_F(SelfPageTest, BadMappingsAreRefused) {
  const long page_size = ::sysconf(_SC_PAGESIZE);
  void* p = ::mmap(nullptr, page_size, PROT_READ | PROT_WRITE, MAP_SHARED, dev_.fd(),
                   TPROF_SELF_PAGE_OFFSET);
  EXPECT_EQ(p, MAP_FAILED);
  EXPECT_EQ(errno, EPERM) << "a writable self page";
  p = ::mmap(nullptr, 2 * page_size, PROT_READ, MAP_SHARED, dev_.fd(), TPROF_SELF_PAGE_OFFSET);
  EXPECT_EQ(p, MAP_FAILED);
  EXPECT_EQ(errno, EINVAL) << "two pages";
  p = ::mmap(nullptr, page_size, PROT_READ, MAP_SHARED, dev_.fd(), TPROF_SELF_PAGE_OFFSET);
  ASSERT_NE(p, MAP_FAILED) << std::strerror(errno);
  EXPECT_NE(::mprotect(p, page_size, PROT_READ | PROT_WRITE), 0) << "made writable later";
  ::munmap(p, page_size);
}

TEST_F(SelfPageTest, ForkedChildMustOpenItsOwnMeter) {
  SelfMeter meter = OpenMeterOrFail();
  Device* dev = &dev_;
  int rc = RunInChild([&]() -> int {
    uint64_t v[TPROF_MAX_METRICS];
    auto inherited = meter.Read(v);
    if (inherited || inherited.error().code().value() != ECHILD) return 1;
    Expected<SelfMeter> own = Error::FromErrno(ENOENT, "not opened");
    const Clocked opened = Clock([&] { own = SelfMeter::Open(*dev); });
    if (!own) return 2;
    if (own->tid() != Gettid()) return 3;
    BurnCpu(milliseconds(20));
    bool ok = false;
    const Clocked read = Clock([&] { ok = own->Read(v).ok(); });
    if (!ok || !Within(v[0], opened, read)) return 4;
    return 0;
  });
  EXPECT_EQ(rc, 0) << "failed check #" << rc
                   << " (1 inherited meter not refused, 2 open, 3 tid, 4 child's time)";
}

TEST_F(SelfPageTest, UnprivilegedThreadMapsItsOwnPage) {
  int rc = RunUnprivileged([]() -> int {
    auto dev = Device::Open();
    if (!dev) return 1;
    Expected<SelfMeter> meter = Error::FromErrno(ENOENT, "not opened");
    const Clocked opened = Clock([&] { meter = SelfMeter::Open(*dev); });
    if (!meter) return 2;
    BurnCpu(milliseconds(20));
    uint64_t v[TPROF_MAX_METRICS];
    bool ok = false;
    const Clocked read = Clock([&] { ok = meter->Read(v).ok(); });
    if (!ok || !Within(v[0], opened, read)) return 3;
    return 0;
  });
  EXPECT_EQ(rc, 0) << "failed check #" << rc << " (1 open device, 2 map, 3 read)";
}

}  // namespace
}  // namespace tprof::test
