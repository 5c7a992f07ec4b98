// Per-user bounds on what a user makes the kernel hold (kmod/user_limits.h):
// the perf events of PMU programs (pmu_user_events=) and self page mappings
// (self_pages_per_user=), and on arm64 uprobes (uprobes_per_user=). With a
// bound lowered, an unprivileged user's
// creations beyond it fail with EDQUOT, and once everything is closed or
// unmapped the whole allowance is there again (nothing leaks, failures
// included).
#include <fcntl.h>
#include <linux/perf_event.h>
#include <linux/tprof.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "guest_env.h"
#include "tprof/device/pmu_program.h"

namespace tprof::test {
namespace {

const long kPage = ::sysconf(_SC_PAGESIZE);

// A thread-scope program on the caller with `counters` page-fault counters:
// one perf event each.
tprof_pmu_program PageFaultProgram(uint32_t counters) {
  tprof_pmu_program p{};
  p.scope = TPROF_PMU_SCOPE_THREAD;
  p.nr_counters = counters;
  for (uint32_t i = 0; i < counters; i++) {
    p.counters[i].kind = TPROF_PMU_EV_SOFTWARE;
    p.counters[i].config = PERF_COUNT_SW_PAGE_FAULTS;
  }
  return p;
}

// The program's fd, or -errno.
int Create(int dev, uint32_t counters) {
  tprof_pmu_program p = PageFaultProgram(counters);
  if (::ioctl(dev, TPROF_IOC_PMU_CREATE, &p) != 0) return -errno;
  return p.fd;
}

// Exit codes of the unprivileged children: 0 all good, else which check failed.
#define CHECK_OR_EXIT(cond, code)                                     \
  do {                                                                \
    if (!(cond)) {                                                    \
      std::fprintf(stderr, "check %d failed: %s (errno %d %s)\n", code, \
                   #cond, errno, std::strerror(errno));               \
      return code;                                                    \
    }                                                                 \
  } while (0)

TEST(LimitsTest, PmuEventsPerUserAreBoundedAndGivenBack) {
  ScopedParanoid paranoid(2);  // unprivileged PMU programs on own threads
  ScopedModuleParam bound("pmu_user_events", "4");
  ASSERT_TRUE(bound.ok()) << "no pmu_user_events parameter";
  EXPECT_EQ(RunUnprivileged([] {
              int dev = ::open("/dev/tprof", O_RDWR | O_CLOEXEC);
              CHECK_OR_EXIT(dev >= 0, 1);
              for (int round = 0; round < 2; round++) {
                std::vector<int> fds;
                // 1 + 2 + 1 = 4 events: the whole allowance.
                for (uint32_t n : {1u, 2u, 1u}) {
                  int fd = Create(dev, n);
                  CHECK_OR_EXIT(fd >= 0, 10 + round);
                  fds.push_back(fd);
                }
                // One more event is refused, and so is a program that alone
                // is over the bound after a close.
                CHECK_OR_EXIT(Create(dev, 1) == -EDQUOT, 20 + round);
                ::close(fds.back());
                fds.pop_back();
                CHECK_OR_EXIT(Create(dev, 2) == -EDQUOT, 30 + round);
                int fd = Create(dev, 1);
                CHECK_OR_EXIT(fd >= 0, 40 + round);
                fds.push_back(fd);
                CHECK_OR_EXIT(Create(dev, 1) == -EDQUOT, 50 + round);
                for (int f : fds) ::close(f);
                // Everything closed (the refused ones too): round 2 again
                // gets the whole allowance.
              }
              // A program larger than the bound is refused outright.
              CHECK_OR_EXIT(Create(dev, 5) == -EDQUOT, 60);
              ::close(dev);
              return 0;
            }),
            0);
}

TEST(LimitsTest, PmuEventsOfRootAreNotBounded) {
  ScopedModuleParam bound("pmu_user_events", "1");
  ASSERT_TRUE(bound.ok());
  Device dev = OpenDeviceOrFail();
  int a = Create(dev.fd(), 2);
  int b = Create(dev.fd(), 2);
  EXPECT_GE(a, 0) << std::strerror(-a);
  EXPECT_GE(b, 0) << std::strerror(-b);
  if (a >= 0) ::close(a);
  if (b >= 0) ::close(b);
}

#if defined(__aarch64__)
extern "C" __attribute__((noinline)) void tprof_limits_probed() { asm volatile(""); }

using pmu::Program;
using pmu::ProgramSpec;

// On arm64 a breakpoint counter on the caller's own code, created with
// CAP_PERFMON (without CAP_SYS_ADMIN), is a uprobe on the executable's file,
// which slows every mmap of that file: at most uprobes_per_user per user,
// EDQUOT beyond, all of it back once the programs are closed. Without the
// bound the third program was accepted.
TEST(LimitsTest, UprobesPerUserAreBoundedAndGivenBack) {
  ScopedModuleParam bound("uprobes_per_user", "2");
  ASSERT_TRUE(bound.ok()) << "no uprobes_per_user parameter";
  EXPECT_EQ(RunInChild([] {
              CHECK_OR_EXIT(KeepOnlyPerfmon(), 1);
              auto dev = Device::Open();
              CHECK_OR_EXIT(dev, 2);
              ProgramSpec spec;
              CHECK_OR_EXIT(spec.AddCounter(BreakpointAt(&tprof_limits_probed), nullptr), 3);
              const tprof_pmu_program thread = spec.Build(TPROF_PMU_SCOPE_THREAD, 0);
              for (int round = 0; round < 2; round++) {
                auto a = Program::Create(*dev, thread);
                auto b = Program::Create(*dev, thread);
                CHECK_OR_EXIT(a && b, 10 + round);
                auto c = Program::Create(*dev, thread);
                CHECK_OR_EXIT(!c && c.error().code().value() == EDQUOT, 20 + round);
                // Uprobes, counting each call of the routine.
                for (int i = 0; i < 5; i++) tprof_limits_probed();
                auto va = a->Read();
                CHECK_OR_EXIT(va && va->values[0] == 5, 30 + round);
              }  // closed: round 2 gets the whole allowance again
              return 0;
            }),
            0) << "1 capset, 2 open, 3 spec, 1x creation refused, 2x third not EDQUOT, 3x miscounted";
}
#endif

class LimitsSelfPageTest : public MetricsOnTest {};

void* MapSelf(int dev) {
  return ::mmap(nullptr, kPage, PROT_READ, MAP_SHARED, dev, TPROF_SELF_PAGE_OFFSET);
}

TEST_F(LimitsSelfPageTest, SelfPageMappingsPerUserAreBoundedAndGivenBack) {
  ScopedModuleParam bound("self_pages_per_user", "3");
  ASSERT_TRUE(bound.ok()) << "no self_pages_per_user parameter";
  EXPECT_EQ(RunUnprivileged([] {
              int dev = ::open("/dev/tprof", O_RDWR | O_CLOEXEC);
              CHECK_OR_EXIT(dev >= 0, 1);
              for (int round = 0; round < 2; round++) {
                std::vector<void*> maps;
                for (int i = 0; i < 3; i++) {
                  void* m = MapSelf(dev);
                  CHECK_OR_EXIT(m != MAP_FAILED, 10 + round);
                  maps.push_back(m);
                }
                errno = 0;
                CHECK_OR_EXIT(MapSelf(dev) == MAP_FAILED && errno == EDQUOT, 20 + round);
                // A moved mapping stays charged once (open of the new, close
                // of the old).
                void* hole = ::mmap(nullptr, kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                CHECK_OR_EXIT(hole != MAP_FAILED, 25 + round);
                void* moved = ::mremap(maps[0], kPage, kPage, MREMAP_MAYMOVE | MREMAP_FIXED, hole);
                CHECK_OR_EXIT(moved != MAP_FAILED, 30 + round);
                maps[0] = moved;
                errno = 0;
                CHECK_OR_EXIT(MapSelf(dev) == MAP_FAILED && errno == EDQUOT, 40 + round);
                ::munmap(maps.back(), kPage);
                maps.pop_back();
                void* m = MapSelf(dev);
                CHECK_OR_EXIT(m != MAP_FAILED, 50 + round);
                maps.push_back(m);
                for (void* p : maps) ::munmap(p, kPage);
                // All unmapped: round 2 again gets the whole allowance.
              }
              ::close(dev);
              return 0;
            }),
            0);
}

}  // namespace
}  // namespace tprof::test
