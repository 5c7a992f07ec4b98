// PMU programs against the real module: exact counts
// from execution breakpoints, watchpoints, page faults and a syscall
// tracepoint (x86 TCG emulates the debug registers), thresholds and rules
// firing at the exact step, events reaching only the subscribed socket,
// losses counted, bad programs refused with the documented errno.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <linux/netlink.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sys/ioctl.h>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "../common/json.h"
#include "tprof/output/json_format.h"
#include "fresh_pages.h"
#include "guest_env.h"
#include "pmu_events.h"
#include "pmu_fixture.h"
#include "tprof/device/pmu_program.h"

// The routines the tests count. C linkage and noinline, so their symbols
// are what SymbolResolver finds and their first instruction is where a
// breakpoint goes.
extern "C" {
volatile long tprof_pmu_watched;
__attribute__((noinline, used)) void tprof_pmu_visited(void) {
  tprof_pmu_watched = tprof_pmu_watched + 1;
  asm volatile("" ::: "memory");
}
// Touches `pages` fresh pages of `base`: one fault each, inside this routine.
__attribute__((noinline, used)) void tprof_pmu_touch_f(char* base, long pages, long page) {
  for (long i = 0; i < pages; i++) *(volatile char*)(base + i * page) = 1;
}
__attribute__((noinline, used)) void tprof_pmu_touch_g(char* base, long pages, long page) {
  for (long i = 0; i < pages; i++) *(volatile char*)(base + i * page) = 2;
}
}

namespace tprof::test {
namespace {

using pmu::Monitor;
using pmu::Program;
using pmu::ProgramSpec;

const long kPage = ::sysconf(_SC_PAGESIZE);

pmu::SymbolResolver SelfSymbols() {
  auto r = pmu::SymbolResolver::ForProcess(0);
  EXPECT_TRUE(r) << r.error().message();
  return std::move(*r);
}

// Syscall tracepoints need tracefs; the guest's init does not mount it.
void MountTracefs() {
  struct stat st;
  if (::stat("/sys/kernel/tracing/events", &st) == 0) return;
  ::mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr);
}

// A second per-hit counter that moves once per visit, after the visit's
// breakpoint: the routine's write (a watchpoint) where watchpoints trap per
// hit; on arm64, where they only count (its kernel steps over them only for
// perf's own handler), a breakpoint (a uprobe there) on the routine's second
// instruction (straight-line code: once per visit, after the first).
std::string AfterVisitCounter(const std::string& name) {
#if defined(__aarch64__)
  char spec[64];
  std::snprintf(spec, sizeof(spec), "%s=bp:0x%llx", name.c_str(),
                (unsigned long long)(reinterpret_cast<uintptr_t>(&tprof_pmu_visited) + 4));
  return spec;
#else
  return name + "=w:tprof_pmu_watched";
#endif
}

TEST_F(PmuTest, BreakpointCountsVisitsAndWatchpointCountsWritesExactly) {
  Program prog = Create(Spec({"visits=bp:tprof_pmu_visited", "writes=w:tprof_pmu_watched"}));
  for (int i = 0; i < 1000; i++) tprof_pmu_visited();
  tprof_pmu_watched = 0;  // one more write, no visit
  auto v = ReadOrFail(prog);
  EXPECT_EQ(v.values[0], 1000u);
  EXPECT_EQ(v.values[1], 1001u);
  EXPECT_EQ(v.exact, 3u);
}

// What needs a handler per hit is accepted everywhere: on arm64 a
// watchpoint, or a breakpoint in every-CPU scope or outside a file
// mapping, is then paired with a stepper (2 debug registers); an execution
// breakpoint at a user address of a file mapping is a uprobe. The counts
// themselves stay exact when another counter of the program raises events.
TEST_F(PmuTest, BreakpointsAndWatchpointsTakeThresholdsRulesRangesAndArming) {
  auto visited = syms_.Find("tprof_pmu_visited");
  ASSERT_TRUE(visited);
  const int want = 0;
  ProgramSpec plain = Spec({"v=bp:tprof_pmu_visited", "w=w:tprof_pmu_watched"});
  EXPECT_EQ(ErrnoOf(plain.Build(TPROF_PMU_SCOPE_THREAD, 0)), 0);

  // Counter 0: the breakpoint (per hit everywhere); counter 1: the watchpoint.
  for (uint32_t i : {0u, 1u}) {
    const int want_i = i == 0 ? 0 : want;
    ProgramSpec threshold = plain;
    ASSERT_TRUE(threshold.AddThreshold(i == 0 ? "v>=10" : "w>=10"));
    EXPECT_EQ(ErrnoOf(threshold.Build(TPROF_PMU_SCOPE_THREAD, 0)), want_i) << "threshold " << i;
    ProgramSpec rule = plain;
    ASSERT_TRUE(rule.AddRule(i == 0 ? "v>0" : "w>0"));
    EXPECT_EQ(ErrnoOf(rule.Build(TPROF_PMU_SCOPE_THREAD, 0)), want_i) << "rule " << i;
    tprof_pmu_program ranged = plain.Build(TPROF_PMU_SCOPE_THREAD, 0);
    ranged.counters[i].flags |= TPROF_PMU_CTR_RANGE;
    ranged.counters[i].range_start = visited->start;
    ranged.counters[i].range_end = visited->end;
    EXPECT_EQ(ErrnoOf(ranged), want_i) << "range " << i;
    ProgramSpec armer = Spec({"f=page-faults", i == 0 ? "v=bp:tprof_pmu_visited" : "w=w:tprof_pmu_watched"});
    ASSERT_TRUE(armer.AddRule("f>0"));
    tprof_pmu_program armed = armer.Build(TPROF_PMU_SCOPE_THREAD, 0);
    armed.counters[1].armed_by = 1;
    EXPECT_EQ(ErrnoOf(armed), want_i) << "armed_by " << i;
  }
  ProgramSpec bp_only = Spec({"v=bp:tprof_pmu_visited"});
  EXPECT_EQ(ErrnoOf(bp_only.Build(TPROF_PMU_SCOPE_CPUS, 0)), want) << "every CPU";
  // Not in a file mapping (an anonymous page): on arm64 a debug register.
  FreshPages anon(1);
  ASSERT_NE(anon.base, MAP_FAILED);
  char anon_bp[64];
  std::snprintf(anon_bp, sizeof(anon_bp), "a=bp:0x%llx", (unsigned long long)(uintptr_t)anon.base);
  ProgramSpec anon_plain = Spec({anon_bp});
  EXPECT_EQ(ErrnoOf(anon_plain.Build(TPROF_PMU_SCOPE_THREAD, 0)), 0) << "anonymous";
  ProgramSpec anon_threshold = anon_plain;
  ASSERT_TRUE(anon_threshold.AddThreshold("a>=1"));
  EXPECT_EQ(ErrnoOf(anon_threshold.Build(TPROF_PMU_SCOPE_THREAD, 0)), want) << "anonymous threshold";

  // A page-fault threshold beside them: its events, and the exact counts.
  ProgramSpec mixed = plain;
  ASSERT_TRUE(mixed.AddCounter("f=page-faults@tprof_pmu_touch_f", &syms_));
  ASSERT_TRUE(mixed.AddThreshold("f>=3"));
  FreshPages pages(5);
  ASSERT_NE(pages.base, MAP_FAILED);
  Program prog = Create(mixed);
  Monitor mon = SubscribedMonitor(prog);
  for (int i = 0; i < 300; i++) tprof_pmu_visited();
  tprof_pmu_touch_f(pages.base, 5, kPage);
  auto events = CollectAll(mon, prog, 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].values[2], 3u);
  auto v = ReadOrFail(prog);
  EXPECT_EQ(v.values[0], 300u);
  EXPECT_EQ(v.values[1], 300u);
  EXPECT_EQ(v.values[2], 5u);
  EXPECT_EQ(v.exact, 7u);
}

// Per-hit watchpoints (on arm64 each paired with a stepper, see the uapi's
// "Counting"): a threshold fires at exactly the 37th write, with the value
// 37 in its event, and the value is exact afterwards.
TEST_F(PmuTest, PerHitWatchpointThresholdFiresAtExactlyTheNthWrite) {
  ProgramSpec spec = Spec({"w=w:tprof_pmu_watched"});
  ASSERT_TRUE(spec.AddThreshold("w>=37"));
  Program prog = Create(spec);
  Monitor mon = SubscribedMonitor(prog);
  for (long i = 0; i < 100; i++) tprof_pmu_watched = i;
  auto events = CollectAll(mon, prog, 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, uint32_t(TPROF_PMU_EVENT_THRESHOLD));
  EXPECT_EQ(events[0].values[0], 37u);
  auto v = ReadOrFail(prog);
  EXPECT_EQ(v.values[0], 100u);
  EXPECT_EQ(v.threshold_fired[0], 1u);
}

// A rule on a per-hit watchpoint fires at its 50th write and arms a
// breakpoint, which counts only the 30 visits after it; a rule on a
// breakpoint fires at the 50th visit and arms a per-hit watchpoint, which
// counts that visit's write and the 50 after it (51). One watchpoint per
// program: QEMU's x86 TCG keeps reporting a second data register's stale
// hit at the first's accesses (README "Data ranges").
TEST_F(PmuTest, PerHitWatchpointRulesAndArmingAreExact) {
  auto run = [&](bool rule_on_watch) -> tprof_pmu_values {
    ProgramSpec spec;
    if (rule_on_watch) {
      EXPECT_TRUE(spec.AddCounter("w=w:tprof_pmu_watched", &syms_));
      EXPECT_TRUE(spec.AddCounter("v=bp:tprof_pmu_visited", &syms_));
      EXPECT_TRUE(spec.AddRule("w>=50"));
    } else {
      EXPECT_TRUE(spec.AddCounter("v=bp:tprof_pmu_visited", &syms_));
      EXPECT_TRUE(spec.AddCounter("w=w:tprof_pmu_watched", &syms_));
      EXPECT_TRUE(spec.AddRule("v>=50"));
    }
    tprof_pmu_program p = spec.Build(TPROF_PMU_SCOPE_THREAD, 0);
    p.counters[1].armed_by = 1;
    auto prog = Program::Create(dev_, p);
    EXPECT_TRUE(prog) << prog.error().message();
    if (!prog) return {};
    Monitor mon = SubscribedMonitor(*prog);
    if (rule_on_watch) {
      for (long i = 0; i < 60; i++) tprof_pmu_watched = i;
      for (int i = 0; i < 30; i++) tprof_pmu_visited();
    } else {
      for (int i = 0; i < 100; i++) tprof_pmu_visited();
    }
    auto events = CollectAll(mon, *prog, 1);
    EXPECT_EQ(events.size(), 1u);
    if (!events.empty()) {
      EXPECT_EQ(events[0].kind, uint32_t(TPROF_PMU_EVENT_RULE));
      EXPECT_EQ(events[0].values[0], 50u);
      EXPECT_EQ(events[0].values[1], 0u);
    }
    return ReadOrFail(*prog);
  };
  auto v = run(true);
  EXPECT_EQ(v.values[0], 90u);  // 60 writes, and one in each of the 30 visits
  EXPECT_EQ(v.values[1], 30u);
  EXPECT_EQ(v.rule_fired[0], 1u);
  EXPECT_EQ(v.armed, 1u);
  v = run(false);
  EXPECT_EQ(v.values[0], 100u);
  EXPECT_EQ(v.values[1], 51u);
  EXPECT_EQ(v.rule_fired[0], 1u);
}

// A per-hit watchpoint with an instruction range counts only the writes
// made inside the range (tprof_pmu_visited's 30), not the test body's 20.
// (One watchpoint: QEMU's x86 TCG reports only the first of two registers
// on one address.)
TEST_F(PmuTest, PerHitWatchpointCountsOnlyWritesInsideItsRange) {
  auto visited = syms_.Find("tprof_pmu_visited");
  ASSERT_TRUE(visited);
  tprof_pmu_program p = Spec({"w=w:tprof_pmu_watched"}).Build(TPROF_PMU_SCOPE_THREAD, 0);
  p.counters[0].flags |= TPROF_PMU_CTR_RANGE;
  p.counters[0].range_start = visited->start;
  p.counters[0].range_end = visited->end;
  Program prog = Create(p);
  for (int i = 0; i < 30; i++) tprof_pmu_visited();
  for (long i = 0; i < 20; i++) tprof_pmu_watched = i;
  auto v = ReadOrFail(prog);
  EXPECT_EQ(v.values[0], 30u);
}

// Every CPU: a per-hit watchpoint and a user-address breakpoint (on arm64
// both with steppers, the breakpoint in an execution register) count this
// process's writes and visits exactly, with a threshold on each.
TEST_F(PmuTest, PerHitWatchpointAndBreakpointInEveryCpuScopeAreExact) {
  ProgramSpec spec = Spec({"w=w:tprof_pmu_watched", "v=bp:tprof_pmu_visited"});
  ASSERT_TRUE(spec.AddThreshold("w>=25"));
  ASSERT_TRUE(spec.AddThreshold("v>=10"));
  Program prog = Create(spec, TPROF_PMU_SCOPE_CPUS, 0);
  Monitor mon = SubscribedMonitor(prog);
  for (int i = 0; i < 40; i++) tprof_pmu_visited();  // a write each
  for (long i = 0; i < 7; i++) tprof_pmu_watched = i;
  auto events = CollectAll(mon, prog, 2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].index, 1u);
  EXPECT_EQ(events[0].values[1], 10u);
  EXPECT_EQ(events[1].index, 0u);
  EXPECT_EQ(events[1].values[0], 25u);
  auto v = ReadOrFail(prog);
  EXPECT_EQ(v.values[0], 47u);
  EXPECT_EQ(v.values[1], 40u);
}

// Many hits: a per-hit watchpoint in process scope, hit 20000 times by
// this thread and 5000 times by a thread created afterwards (an inherited
// copy, with its stepper's copy): both run to completion and every write
// is counted once. A missing step would trap a thread forever here.
TEST_F(PmuTest, PerHitWatchpointTasksRunToCompletionAfterManyHits) {
  ProgramSpec spec = Spec({"w=w:tprof_pmu_watched"});
  ASSERT_TRUE(spec.AddThreshold("w>=1000000000"));
  Program prog = Create(spec, TPROF_PMU_SCOPE_PROCESS, 0);
  for (long i = 0; i < 20000; i++) tprof_pmu_watched = i;
  std::thread later([] {
    for (long i = 0; i < 5000; i++) tprof_pmu_watched = i;
  });
  later.join();
  auto v = ReadOrFail(prog);
  EXPECT_EQ(v.values[0], 25000u);
  EXPECT_EQ(v.threshold_fired[0], 0u);
}

TEST_F(PmuTest, PageFaultsCountOnlyInsideTheRange) {
  ProgramSpec spec = Spec({"f=page-faults@tprof_pmu_touch_f", "g=page-faults@tprof_pmu_touch_g", "all=page-faults"});
  FreshPages a(37), b(53);
  ASSERT_NE(a.base, MAP_FAILED);
  ASSERT_NE(b.base, MAP_FAILED);
  Program prog = Create(spec);
  tprof_pmu_touch_f(a.base, 37, kPage);
  tprof_pmu_touch_g(b.base, 53, kPage);
  auto v = ReadOrFail(prog);
  EXPECT_EQ(v.values[0], 37u);
  EXPECT_EQ(v.values[1], 53u);
  EXPECT_GE(v.values[2], 90u);
}

TEST_F(PmuTest, ThresholdFiresOnceAtTheNthEventAndThenEveryM) {
  ProgramSpec spec = Spec({"once=bp:tprof_pmu_visited", AfterVisitCounter("every")});
  ASSERT_TRUE(spec.AddThreshold("once>=700"));
  ASSERT_TRUE(spec.AddThreshold("every>=250/250"));
  Program prog = Create(spec);
  Monitor mon = SubscribedMonitor(prog);
  for (int i = 0; i < 1000; i++) tprof_pmu_visited();
  auto events = Collect(mon, 5);
  ASSERT_EQ(events.size(), 5u);
  std::vector<uint64_t> every;
  for (const auto& e : events) {
    EXPECT_EQ(e.kind, uint32_t(TPROF_PMU_EVENT_THRESHOLD));
    EXPECT_EQ(e.tid, Gettid());
    EXPECT_EQ(e.pid, uint32_t(::getpid()));
    EXPECT_EQ(e.lost, 0u);
    if (e.index == 0) {
      EXPECT_EQ(e.values[0], 700u);  // at the 700th visit, not later
      // The breakpoint traps before the instruction: the routine's entry.
      EXPECT_EQ(e.ip, reinterpret_cast<uint64_t>(&tprof_pmu_visited));
    } else {
      every.push_back(e.values[1]);
    }
  }
  EXPECT_EQ(every, (std::vector<uint64_t>{250, 500, 750, 1000}));
  auto v = ReadOrFail(prog);
  EXPECT_EQ(v.threshold_fired[0], 1u);
  EXPECT_EQ(v.threshold_fired[1], 4u);
  EXPECT_EQ(v.events_sent, 5u);
  EXPECT_EQ(v.events_lost, 0u);
  EXPECT_EQ(Rest(mon, prog, events.size()).size(), 0u);  // nothing more
}

// 2*faults_in_f - getppid_calls > 0 becomes true at the 3rd fault after 5 calls.
TEST_F(PmuTest, RuleFiresAtTheExactStepItBecomesTrue) {
  MountTracefs();
  ProgramSpec spec = Spec({"f=page-faults@tprof_pmu_touch_f", "g=syscalls:sys_enter_getppid"});
  ASSERT_TRUE(spec.AddRule("2*f-g>0"));
  FreshPages pages(10);
  ASSERT_NE(pages.base, MAP_FAILED);
  Program prog = Create(spec);
  Monitor mon = SubscribedMonitor(prog);
  for (int i = 0; i < 5; i++) ::syscall(SYS_getppid);
  for (long i = 0; i < 10; i++) tprof_pmu_touch_f(pages.base + i * kPage, 1, kPage);
  auto events = CollectAll(mon, prog, 1);
  ASSERT_EQ(events.size(), 1u);  // edge-triggered, once
  EXPECT_EQ(events[0].kind, uint32_t(TPROF_PMU_EVENT_RULE));
  EXPECT_EQ(events[0].index, 0u);
  EXPECT_EQ(events[0].values[0], 3u);
  EXPECT_EQ(events[0].values[1], 5u);
  auto addr = syms_.Find("tprof_pmu_touch_f");
  ASSERT_TRUE(addr);
  EXPECT_GE(events[0].ip, addr->start);  // the faulting instruction
  EXPECT_LT(events[0].ip, addr->end);
  auto v = ReadOrFail(prog);
  EXPECT_EQ(v.values[0], 10u);
  EXPECT_EQ(v.values[1], 5u);
  EXPECT_EQ(v.rule_fired[0], 1u);
}

TEST_F(PmuTest, RearmedRuleFiresAgainAfterItWasFalse) {
  ProgramSpec spec = Spec({"v=bp:tprof_pmu_visited", AfterVisitCounter("w")});
  // Each visit: the breakpoint makes v = w + 1 (true), the routine's write
  // (arm64: its second instruction) then w = v (false again).
  ASSERT_TRUE(spec.AddRule("v-w>0", pmu::Rearm::kOnFalse));
  Program prog = Create(spec);
  Monitor mon = SubscribedMonitor(prog);
  for (int i = 0; i < 3; i++) tprof_pmu_visited();
  auto events = CollectAll(mon, prog, 3);
  EXPECT_EQ(events.size(), 3u);
  EXPECT_EQ(ReadOrFail(prog).rule_fired[0], 3u);
}

TEST_F(PmuTest, EventsReachOnlyTheSubscribedSocket) {
  ProgramSpec spec = Spec({"v=bp:tprof_pmu_visited"});
  ASSERT_TRUE(spec.AddThreshold("v>=1/1"));
  Program prog = Create(spec);
  auto other = Monitor::Open();
  ASSERT_TRUE(other);
  Monitor mon = SubscribedMonitor(prog);
  for (int i = 0; i < 10; i++) tprof_pmu_visited();
  EXPECT_EQ(Collect(mon, 10).size(), 10u);
  EXPECT_EQ(Rest(mon, prog, 10).size(), 0u);
  EXPECT_EQ(Pending(*other).size(), 0u);

  // A descriptor that is not a program, and one that is not open.
  ProgramSpec none;
  auto bad_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(bad_fd, 0);
  std::string err;
  EXPECT_EQ(other->SubscribeFd(bad_fd).error().code().value(), EINVAL);
  EXPECT_EQ(other->SubscribeFd(dev_.fd()).error().code().value(), EINVAL);
  ::close(bad_fd);
  EXPECT_EQ(other->SubscribeFd(bad_fd).error().code().value(), EBADF);

  // Another user's process cannot name our program: its fd table has none.
  int fd = prog.fd();
  EXPECT_EQ(RunUnprivileged([fd] {
              auto m = Monitor::Open();  // first: it must not take fd's number
              if (!m) return 1;
              ::close(fd);  // the inherited copy: now the number names nothing
              auto st = m->SubscribeFd(fd);
              return !st && st.error().code().value() == EBADF ? 0 : 2;
            }),
            0);
}

// A closing socket frees its port id before netlink announces the release
// (and a send in flight may have read it already): a socket that binds the
// port id at once must get none of the program's events. Before the
// module queued events on the subscribed socket itself, about one cycle in
// ten of the fuzzer's OpPortIdRace delivered one to such a socket.
TEST_F(PmuTest, ASocketThatTakesAClosedMonitorsPortIdGetsNoEvents) {
  std::atomic<bool> stop{false};
  std::atomic<int> tid{0};
  std::thread burner([&] {  // a page fault, so an event, every few microseconds
    tid = int(::syscall(SYS_gettid));
    while (!stop.load()) {
      void* m = ::mmap(nullptr, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) continue;
      for (int i = 0; i < 4; i++) static_cast<volatile char*>(m)[i * 4096] = 1;
      ::munmap(m, 4 * 4096);
    }
  });
  while (!tid.load()) std::this_thread::yield();
  ProgramSpec spec;
  EXPECT_TRUE(spec.AddCounter("f=page-faults", nullptr));
  EXPECT_TRUE(spec.AddThreshold("f>=1/1"));
  auto prog = Program::Create(dev_, spec.Build(TPROF_PMU_SCOPE_THREAD, uint32_t(tid.load())));
  int taken = 0, leaked = 0;
  std::vector<int> thieves;
  for (int cycle = 0; prog && cycle < 60; cycle++) {
    auto mon = Monitor::Open();
    if (!mon || !mon->Subscribe(*prog)) {
      ADD_FAILURE() << "cycle " << cycle << ": cannot subscribe";
      break;
    }
    sockaddr_nl a{};
    socklen_t al = sizeof(a);
    ::getsockname(mon->fd(), reinterpret_cast<sockaddr*>(&a), &al);
    int thief = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_GENERIC);
    std::atomic<bool> won{false};
    std::thread t([&] {  // spins on bind() while the monitor closes
      sockaddr_nl b{};
      b.nl_family = AF_NETLINK;
      b.nl_pid = a.nl_pid;
      for (auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
           std::chrono::steady_clock::now() < until;)
        if (::bind(thief, reinterpret_cast<sockaddr*>(&b), sizeof(b)) == 0) {
          won = true;
          break;
        }
    });
    { Monitor closing = std::move(*mon); }
    t.join();
    if (won.load()) {
      taken++;
      thieves.push_back(thief);  // it sent nothing: nothing may come
    } else {
      ::close(thief);
    }
  }
  // One quiet period for all the thieves, with the burner still sending:
  // a message queued late (by a work item on a loaded host) arrives in it.
  const auto quiet_end = std::chrono::steady_clock::now() + kQuietPeriod;
  std::vector<pollfd> fds;
  for (int fd : thieves) fds.push_back(pollfd{fd, POLLIN, 0});
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(quiet_end - std::chrono::steady_clock::now());
    if (left.count() <= 0 || fds.empty()) break;
    if (::poll(fds.data(), fds.size(), int(left.count())) <= 0) continue;
    char buf[4096];
    for (const pollfd& p : fds)
      if (p.revents & POLLIN)
        while (::recv(p.fd, buf, sizeof(buf), 0) > 0) leaked++;
  }
  stop = true;
  burner.join();
  for (int fd : thieves) ::close(fd);
  ASSERT_TRUE(prog) << prog.error().message();
  EXPECT_EQ(leaked, 0) << "messages reached sockets that bound a closed monitor's port id (" << taken
                       << " port ids taken)";
  EXPECT_GT(taken, 0) << "no closed monitor's port id was taken: the test tested nothing";
}

TEST_F(PmuTest, LostEventsAreCountedNeverSilent) {
  ProgramSpec spec = Spec({"v=bp:tprof_pmu_visited"});
  ASSERT_TRUE(spec.AddThreshold("v>=1/1"));
  Program prog = Create(spec);
  // No monitor yet: the queue holds TPROF_PMU_QUEUE_LEN, the rest is lost.
  for (int i = 0; i < 1000; i++) tprof_pmu_visited();
  auto v = ReadOrFail(prog);
  EXPECT_EQ(v.events_queued, uint64_t(TPROF_PMU_QUEUE_LEN));
  EXPECT_EQ(v.events_lost, 1000u - TPROF_PMU_QUEUE_LEN);
  Monitor mon = SubscribedMonitor(prog);
  auto events = CollectAll(mon, prog, TPROF_PMU_QUEUE_LEN);
  ASSERT_EQ(events.size(), size_t(TPROF_PMU_QUEUE_LEN));
  uint64_t lost = 0;
  for (size_t i = 0; i < events.size(); i++) {
    EXPECT_EQ(events[i].seq, i + 1);
    lost += events[i].lost;
  }
  EXPECT_EQ(events.size() + lost, 1000u);  // every event delivered or counted
}

TEST_F(PmuTest, ProcessScopeFollowsChildrenCreatedLater) {
  ProgramSpec spec = Spec({"v=bp:tprof_pmu_visited"});
  Program prog = Create(spec, TPROF_PMU_SCOPE_PROCESS);
  std::thread t([] {
    for (int i = 0; i < 100; i++) tprof_pmu_visited();
  });
  t.join();
  EXPECT_EQ(RunInChild([] {
              for (int i = 0; i < 50; i++) tprof_pmu_visited();
              return 0;
            }),
            0);
  for (int i = 0; i < 7; i++) tprof_pmu_visited();
  EXPECT_EQ(ReadOrFail(prog).values[0], 157u);

  // A thread-scoped program sees only its thread.
  Program mine = Create(spec, TPROF_PMU_SCOPE_THREAD);
  std::thread u([] { tprof_pmu_visited(); });
  u.join();
  tprof_pmu_visited();
  EXPECT_EQ(ReadOrFail(mine).values[0], 1u);
}

// A breakpoint counts its program's scope only, never another process
// running the same code (on arm64 it is a uprobe of the binary's file,
// which every process mapping that file may hit): another user's process
// forked before the program, orphaned and reparented to this process (a
// subreaper: its parent chain reaches this process, but perf's inherit
// would not count it; the fuzzer's strangers found arm64 counting it),
// and another user's child of a thread-scoped program's thread (it
// inherits the breakpoint's page) run the routine uncounted.
TEST_F(PmuTest, BreakpointsCountTheirScopeNotOtherProcessesOfTheBinary) {
  ProgramSpec spec = Spec({"v=bp:tprof_pmu_visited"});
  ASSERT_TRUE(spec.AddThreshold("v>=1/1"));

  struct Subreaper {
    Subreaper() { (void)::prctl(PR_SET_CHILD_SUBREAPER, 1); }
    ~Subreaper() { (void)::prctl(PR_SET_CHILD_SUBREAPER, 0); }
  } subreaper;
  int go[2], done[2], told[2];
  ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(done, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(told, O_CLOEXEC), 0);
  pid_t mid = ::fork();
  ASSERT_GE(mid, 0);
  if (mid == 0) {
    const pid_t gc = ::fork();
    if (gc != 0) _exit(::write(told[1], &gc, sizeof(gc)) == sizeof(gc) ? 0 : 1);  // the grandchild goes on
    while (::getppid() == mid) ::sched_yield();  // reparented to this test
    char c;
    if (::setresgid(65534, 65534, 65534) || ::setresuid(65534, 65534, 65534)) ::_exit(1);
    // Dumpable again, as a process the user started: only the scope keeps
    // it out, not the uid change.
    if (::prctl(PR_SET_DUMPABLE, 1) != 0) ::_exit(1);
    if (::read(go[0], &c, 1) != 1) ::_exit(2);
    for (int i = 0; i < 50; i++) tprof_pmu_visited();
    ::_exit(::write(done[1], "x", 1) == 1 ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(mid, &status, 0), mid);
  pid_t grandchild = -1;
  ASSERT_EQ(::read(told[0], &grandchild, sizeof(grandchild)), ssize_t(sizeof(grandchild)));
  ASSERT_GT(grandchild, 0);
  for (int fd : {go[0], done[1], told[0], told[1]}) ::close(fd);

  Program prog = Create(spec, TPROF_PMU_SCOPE_PROCESS);
  Monitor mon = SubscribedMonitor(prog);
  // A program of the grandchild's own puts the breakpoint in its address
  // space (on arm64 the same uprobe: both programs' handlers see its hits).
  auto theirs = Program::Create(dev_, spec.Build(TPROF_PMU_SCOPE_PROCESS, uint32_t(grandchild)));
  EXPECT_TRUE(theirs) << theirs.error().message();
  char c;
  EXPECT_EQ(::write(go[1], "x", 1), 1);
  EXPECT_EQ(::read(done[0], &c, 1), 1) << "the other user's process did not run the routine";
  ::close(go[1]);
  ::close(done[0]);
  EXPECT_EQ(::waitpid(grandchild, &status, 0), grandchild);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the grandchild's status " << status;
  if (theirs) {
    EXPECT_EQ(ReadOrFail(*theirs).values[0], 50u) << "the grandchild's own program";
  }
  for (int i = 0; i < 7; i++) tprof_pmu_visited();
  auto events = CollectAll(mon, prog, 7);
  EXPECT_EQ(events.size(), 7u);
  for (const auto& e : events) EXPECT_EQ(e.pid, uint32_t(::getpid()));
  EXPECT_EQ(ReadOrFail(prog).values[0], 7u);

  Program mine = Create(spec, TPROF_PMU_SCOPE_THREAD);
  EXPECT_EQ(RunUnprivileged([] {
              for (int i = 0; i < 50; i++) tprof_pmu_visited();
              return 0;
            }),
            0);
  tprof_pmu_visited();
  EXPECT_EQ(ReadOrFail(mine).values[0], 1u);
}

TEST_F(PmuTest, ClosingAProgramWhileItsEventsFireIsClean) {
  ProgramSpec spec = Spec({"v=bp:tprof_pmu_visited", "f=page-faults"});
  // arm64: the breakpoint's hits come from a uprobe's handler.
  ASSERT_TRUE(spec.AddThreshold("v>=1/1"));
  ASSERT_TRUE(spec.AddRule("v-f>=0", pmu::Rearm::kOnFalse));
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop.load()) tprof_pmu_visited();
  });
  for (int round = 0; round < 30; round++) {
    // Not ASSERT (nor Create, which throws): returning would destroy the
    // joinable thread (abort) and lose the message.
    auto prog = Program::Create(dev_, spec.Build(TPROF_PMU_SCOPE_PROCESS, 0));
    if (!prog) {
      ADD_FAILURE() << "round " << round << ": " << prog.error().message();
      break;
    }
    auto mon = Monitor::Open();
    if (!mon) {
      ADD_FAILURE() << "round " << round << ": " << mon.error().message();
      break;
    }
    if (auto st = mon->Subscribe(*prog); !st) {
      ADD_FAILURE() << "round " << round << ": " << st.error().message();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (round % 2) mon = Monitor::Open();  // the socket closes first
  }
  stop = true;
  busy.join();
}

// Closing a program while a thread keeps hitting its breakpoint (on arm64 a
// uprobe, or a kprobe at a kernel address: unregistered and waited for at
// close), then unloading the module under that load: the unload succeeds
// and the thread runs on unharmed (a breakpoint left behind would trap it
// with nowhere to go). The module unloads only with none of its
// descriptors open: the tests close their fixture's device first
// (CloseDevice), and each call here opens its own (the module is loaded
// afresh after it).
void UnloadRightAfterClosingUnderLoad(const tprof_pmu_program& program, void (*hit)()) {
  std::atomic<bool> stop{false};
  std::atomic<long> visits{0};
  std::thread busy([&] {
    while (!stop.load()) {
      hit();
      visits++;
    }
  });
  uint64_t counted = 0;
  {
    Device dev = OpenDeviceOrFail();
    auto prog = Program::Create(dev, program);
    EXPECT_TRUE(prog) << prog.error().message();
    if (prog) {
      Monitor mon = SubscribedMonitor(*prog);
      (void)WaitFor([&] { return (counted = ReadOrFail(*prog).values[0]) > 0; });
    }
  }
  int err = UnloadModule();
  long after_unload = visits.load();
  const bool ran_on = WaitFor([&] { return visits.load() > after_unload + 1; });
  stop = true;
  busy.join();
  EXPECT_EQ(err, 0) << "rmmod tprof: " << std::strerror(err);
  EXPECT_GT(counted, 0u) << "the breakpoint was never hit: the test tested nothing";
  EXPECT_TRUE(ran_on) << "the thread stopped running the routine";
  if (err == 0) {
    ASSERT_EQ(LoadModule(ModulePath()), 0) << "insmod " << ModulePath();
  }
}

TEST_F(PmuTest, UnloadingRightAfterClosingABreakpointUnderLoadIsClean) {
  CloseDevice();
  ProgramSpec spec = Spec({"v=bp:tprof_pmu_visited"});
  ASSERT_TRUE(spec.AddThreshold("v>=1/1"));
  UnloadRightAfterClosingUnderLoad(spec.Build(TPROF_PMU_SCOPE_PROCESS, 0), tprof_pmu_visited);
}

// The same with a per-hit watchpoint (on arm64 released before its
// stepper, never a moment alone), in process and in every-CPU scope.
TEST_F(PmuTest, UnloadingRightAfterClosingAPerHitWatchpointUnderLoadIsClean) {
  CloseDevice();
  ProgramSpec spec = Spec({"w=w:tprof_pmu_watched"});
  ASSERT_TRUE(spec.AddThreshold("w>=1/1"));
  UnloadRightAfterClosingUnderLoad(spec.Build(TPROF_PMU_SCOPE_PROCESS, 0), tprof_pmu_visited);
  UnloadRightAfterClosingUnderLoad(spec.Build(TPROF_PMU_SCOPE_CPUS, 0), tprof_pmu_visited);
}

// The kernel's getppid system call handler, read from /proc/kallsyms (as
// root): a kernel function the tests call a known number of times.
uint64_t KernelGetppid() {
#if defined(__aarch64__)
  const std::string want = "__arm64_sys_getppid";
#else
  const std::string want = "__x64_sys_getppid";
#endif
  std::ifstream in("/proc/kallsyms");
  std::string addr, type, name;
  while (in >> addr >> type >> name) {
    if (name == want) return std::stoull(addr, nullptr, 16);
    in.ignore(1 << 20, '\n');
  }
  ADD_FAILURE() << "no " << want << " in /proc/kallsyms";
  return 0;
}

std::string KernelBreakpoint(const std::string& name, uint64_t addr) {
  char spec[80];
  std::snprintf(spec, sizeof(spec), "%s=bp:0x%llx", name.c_str(), (unsigned long long)addr);
  return spec;
}

void CallGetppid() { ::syscall(SYS_getppid); }

void CallGetppid(int times) {
  for (int i = 0; i < times; i++) CallGetppid();
}

// An execution breakpoint at a kernel address is seen per hit (x86: a
// debug register; arm64: a kprobe): a threshold fires at exactly the 37th
// getppid call and a rule at the 50th, with the handler's address as ip; a
// rule on page faults arms a second breakpoint there, which counts only the
// calls after it.
TEST_F(PmuTest, KernelBreakpointsFireAtTheExactCallAndCanBeArmed) {
  const uint64_t getppid = KernelGetppid();
  ASSERT_NE(getppid, 0u);
  ProgramSpec spec =
      Spec({KernelBreakpoint("k", getppid), "f=page-faults@tprof_pmu_touch_f", KernelBreakpoint("after", getppid)});
  ASSERT_TRUE(spec.AddThreshold("k>=37"));
  ASSERT_TRUE(spec.AddRule("k>=50"));
  ASSERT_TRUE(spec.AddRule("f>=3"));
  tprof_pmu_program program = spec.Build(TPROF_PMU_SCOPE_THREAD, 0);
  program.counters[2].armed_by = 2;  // rule 1 (f>=3)
  FreshPages pages(3);
  ASSERT_NE(pages.base, MAP_FAILED);
  Program prog = Create(program);
  Monitor mon = SubscribedMonitor(prog);
  CallGetppid(80);
  tprof_pmu_touch_f(pages.base, 3, kPage);
  CallGetppid(20);
  auto events = CollectAll(mon, prog, 3);
  ASSERT_EQ(events.size(), 3u);
  for (const auto& e : events) {
    EXPECT_EQ(e.pid, uint32_t(::getpid()));
    EXPECT_EQ(e.tid, Gettid());
  }
  EXPECT_EQ(events[0].kind, uint32_t(TPROF_PMU_EVENT_THRESHOLD));
  EXPECT_EQ(events[0].values[0], 37u) << "the threshold fired late or early";
  EXPECT_EQ(events[0].ip, getppid) << "the breakpoint traps before the handler's first instruction";
  EXPECT_EQ(events[1].kind, uint32_t(TPROF_PMU_EVENT_RULE));
  EXPECT_EQ(events[1].index, 0u);
  EXPECT_EQ(events[1].values[0], 50u);
  EXPECT_EQ(events[1].ip, getppid);
  EXPECT_EQ(events[2].kind, uint32_t(TPROF_PMU_EVENT_RULE));
  EXPECT_EQ(events[2].index, 1u);
  EXPECT_EQ(events[2].values[0], 80u);
  EXPECT_EQ(events[2].values[1], 3u);
  EXPECT_EQ(events[2].values[2], 0u);
  auto v = ReadOrFail(prog);
  EXPECT_EQ(v.values[0], 100u);
  EXPECT_EQ(v.values[1], 3u);
  EXPECT_EQ(v.values[2], 20u) << "the armed breakpoint counts the calls after its rule only";
  EXPECT_EQ(v.threshold_fired[0], 1u);
  EXPECT_EQ(v.rule_fired[0], 1u);
  EXPECT_EQ(v.rule_fired[1], 1u);
  EXPECT_EQ(v.armed, 3u);  // both rules fired
  EXPECT_EQ(v.exact, 7u);
}

// A kernel breakpoint counts its scope: a thread program only its thread's
// calls, a process program the process's threads and a child forked after
// it, an every-CPU program all of them, each call an event naming the task
// (7 calls here, 30 in another thread, 40 in a child process).
TEST_F(PmuTest, KernelBreakpointsCountTheirScope) {
  const uint64_t getppid = KernelGetppid();
  ASSERT_NE(getppid, 0u);
  ProgramSpec spec = Spec({KernelBreakpoint("k", getppid)});
  ASSERT_TRUE(spec.AddThreshold("k>=1/1"));
  Program thread = Create(spec, TPROF_PMU_SCOPE_THREAD);
  Program process = Create(spec, TPROF_PMU_SCOPE_PROCESS);
  Program cpus = Create(spec, TPROF_PMU_SCOPE_CPUS);
  Monitor thread_mon = SubscribedMonitor(thread);
  Monitor cpus_mon = SubscribedMonitor(cpus);

  CallGetppid(7);
  uint32_t other_tid = 0;
  std::thread other([&] {
    other_tid = Gettid();
    CallGetppid(30);
  });
  other.join();
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    CallGetppid(40);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  EXPECT_EQ(ReadOrFail(thread).values[0], 7u) << "a thread program counted another thread's calls";
  EXPECT_EQ(ReadOrFail(process).values[0], 77u);
  auto mine = CollectAll(thread_mon, thread, 7);
  EXPECT_EQ(mine.size(), 7u);
  for (const auto& e : mine) EXPECT_EQ(e.tid, Gettid());
  // Every CPU: whatever else calls getppid meanwhile is counted too; each
  // of ours is an event naming its task (in this pid namespace).
  std::map<std::pair<uint32_t, uint32_t>, int> calls;
  for (const auto& e : CollectAll(cpus_mon, cpus, 77)) calls[{e.pid, e.tid}]++;
  const uint32_t pid = ::getpid();
  EXPECT_EQ((calls[{pid, Gettid()}]), 7);
  EXPECT_EQ((calls[{pid, other_tid}]), 30);
  EXPECT_EQ((calls[{uint32_t(child), uint32_t(child)}]), 40);
  auto v = ReadOrFail(cpus);
  EXPECT_GE(v.values[0], 77u);
  EXPECT_EQ(v.events_lost, 0u);
}

TEST_F(PmuTest, UnloadingRightAfterClosingAKernelBreakpointUnderLoadIsClean) {
  CloseDevice();
  const uint64_t getppid = KernelGetppid();
  ASSERT_NE(getppid, 0u);
  ProgramSpec spec = Spec({KernelBreakpoint("k", getppid)});
  ASSERT_TRUE(spec.AddThreshold("k>=1/1"));
  UnloadRightAfterClosingUnderLoad(spec.Build(TPROF_PMU_SCOPE_CPUS, 0), [] { CallGetppid(); });
}

#if defined(__aarch64__)
// arm64's kernel breakpoints are kprobes: what a kprobe cannot probe, or
// must not (tprof.ko's own code, whose hits would recurse), is EINVAL.
TEST_F(PmuTest, KernelBreakpointsKprobesCannotTakeAreRefused) {
  const uint64_t getppid = KernelGetppid();
  ASSERT_NE(getppid, 0u);
  uint64_t own = 0;
  {
    std::ifstream in("/proc/kallsyms");
    std::string addr, type, name;
    while (own == 0 && in >> addr >> type >> name) {
      if (name == "tprof_pmu_hit") own = std::stoull(addr, nullptr, 16);
      in.ignore(1 << 20, '\n');
    }
  }
  ASSERT_NE(own, 0u) << "no tprof_pmu_hit in /proc/kallsyms";
  auto errno_of = [&](uint64_t addr) {
    ProgramSpec spec;
    EXPECT_TRUE(spec.AddCounter(KernelBreakpoint("k", addr), nullptr));
    return ErrnoOf(spec.Build(TPROF_PMU_SCOPE_THREAD, 0));
  };
  EXPECT_EQ(errno_of(getppid), 0);
  EXPECT_EQ(errno_of(getppid + 2), EINVAL) << "not an instruction's address";
  EXPECT_EQ(errno_of(own), EINVAL) << "tprof.ko's own code";
}
#endif

#if defined(__aarch64__)
// A routine whose first instruction a uprobe steps out of line (an add: a
// branch, adr/adrp, ldr literal or ret would be simulated, with no step).
extern "C" void tprof_pmu_xol_visited(void);
asm(".text\n.globl tprof_pmu_xol_visited\n.type tprof_pmu_xol_visited,%function\n.balign 16\n"
    "tprof_pmu_xol_visited:\n\tadd x9, x9, #1\n\tret\n.size tprof_pmu_xol_visited, .-tprof_pmu_xol_visited\n");

// A uprobe and a debug-register breakpoint with perf's handler at the same
// user instruction make arm64's kernel kill the task that runs it (SIGILL:
// tests/arm64/bp-uprobe-sigill.c shows it without tprof). tprof never
// places both: a thread program's breakpoint (a uprobe) where an every-CPU
// program's (a debug register with a stepper) is, or the other way round,
// is EBUSY; the first keeps counting every call exactly, the task lives,
// and once the first is closed the second is accepted. In a child, so that
// a SIGILL shows as its death.
TEST_F(PmuTest, UprobeAndDebugRegisterBreakpointAtOneInstructionAreEbusy) {
  ProgramSpec spec = Spec({BreakpointAt(&tprof_pmu_xol_visited)});
  const tprof_pmu_program cpus = spec.Build(TPROF_PMU_SCOPE_CPUS, 0);
  const tprof_pmu_program thread = spec.Build(TPROF_PMU_SCOPE_THREAD, 0);
  for (bool cpus_first : {true, false}) {
    std::fflush(stdout);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      auto first = Program::Create(dev_, cpus_first ? cpus : thread);
      if (!first) _exit(10);
      auto second = Program::Create(dev_, cpus_first ? thread : cpus);
      const int err = second ? 0 : second.error().code().value();
      for (int i = 0; i < 100; i++) tprof_pmu_xol_visited();  // SIGILL here if both exist
      if (err != EBUSY) _exit(11);
      auto v = first->Read();
      if (!v || v->values[0] != 100) _exit(12);
      { Program closing = std::move(*first); }  // closed: its claim on the address goes with it
      auto later = Program::Create(dev_, cpus_first ? thread : cpus);
      if (!later) _exit(13);
      for (int i = 0; i < 30; i++) tprof_pmu_xol_visited();
      auto w = later->Read();
      _exit(w && w->values[0] == 30 ? 0 : 14);
    }
    int st = 0;
    ASSERT_EQ(::waitpid(child, &st, 0), child);
    const char* order = cpus_first ? "every-CPU program first" : "thread program first";
    ASSERT_FALSE(WIFSIGNALED(st)) << order << ": the child died of signal " << WTERMSIG(st)
                                  << " (both breakpoints were placed)";
    EXPECT_EQ(WEXITSTATUS(st), 0) << order << ": 10 first refused, 11 second not EBUSY, 12 first "
                                     "miscounted, 13 second refused after the first closed, 14 "
                                     "second miscounted";
  }
}

// Claims are per user (issue 25 item 8): root's uprobe (a thread program
// of a caller with CAP_PERFMON) at an address does not make an
// unprivileged user's debug-register breakpoint at the same address of
// its own process EBUSY, nor the other way round; both count exactly and
// the user's process lives. It failed with EBUSY when claims were keyed by
// the address alone: one user learnt, and was blocked by, what another
// watched.
TEST_F(PmuTest, AnotherUsersUprobeAtTheSameAddressIsNoConflict) {
  ScopedParanoid level(2);  // the user's own thread, user-mode events
  const tprof_pmu_program thread = Spec({BreakpointAt(&tprof_pmu_xol_visited)}).Build(TPROF_PMU_SCOPE_THREAD, 0);
  int go[2], ready[2];
  ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
  std::fflush(stdout);
  // Forked before root's uprobe exists: its mm never gets the uprobe's BRK.
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char c;
    if (::setresgid(65534, 65534, 65534) || ::setresuid(65534, 65534, 65534)) ::_exit(1);
    // The uid change left it non-dumpable: as a process the user started.
    if (::prctl(PR_SET_DUMPABLE, 1) != 0) ::_exit(1);
    if (::read(go[0], &c, 1) != 1) ::_exit(2);
    auto user_dev = Device::Open();  // the user's own descriptor
    if (!user_dev) ::_exit(4);
    auto own = Program::Create(*user_dev, thread);  // a debug register: no CAP_PERFMON
    const char verdict = own ? 'y' : static_cast<char>(own.error().code().value());
    if (::write(ready[1], &verdict, 1) != 1 || !own) ::_exit(own ? 3 : 10);
    if (::read(go[0], &c, 1) != 1) ::_exit(2);  // root made a second uprobe meanwhile
    for (int i = 0; i < 100; i++) tprof_pmu_xol_visited();
    auto v = own->Read();
    ::_exit(v && v->values[0] == 100 ? 0 : 11);
  }
  ::close(go[0]);
  ::close(ready[1]);
  auto first = Program::Create(dev_, thread);  // root: a uprobe
  ASSERT_TRUE(first) << first.error().message();
  char verdict = 0;
  EXPECT_EQ(::write(go[1], "x", 1), 1);
  EXPECT_EQ(::read(ready[0], &verdict, 1), 1);
  EXPECT_EQ(verdict, 'y') << "the user's breakpoint failed with errno " << int(verdict)
                          << (verdict == EBUSY ? " (EBUSY: root's uprobe claimed the address)" : "");
  auto second = Program::Create(dev_, thread);  // while the user's debug register exists
  EXPECT_TRUE(second) << (second ? "" : second.error().message())
                      << ": another user's debug register must not make root's uprobe EBUSY";
  for (int i = 0; i < 50; i++) tprof_pmu_xol_visited();
  auto a = first->Read();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->values[0], 50u) << "root's uprobe counts its own calls only";
  if (second) {
    auto b = second->Read();
    ASSERT_TRUE(b);
    EXPECT_EQ(b->values[0], 50u);
  }
  EXPECT_EQ(::write(go[1], "x", 1), 1);
  ::close(go[1]);
  ::close(ready[0]);
  int st = 0;
  ASSERT_EQ(::waitpid(child, &st, 0), child);
  ASSERT_FALSE(WIFSIGNALED(st)) << "the user's process died of signal " << WTERMSIG(st);
  EXPECT_EQ(WEXITSTATUS(st), 0)
      << "1 could not drop root, 4 could not open the device, 10 refused, 11 miscounted";
}
#endif

TEST_F(PmuTest, PermissionsFollowPerfsRules) {
  ProgramSpec spec = Spec({"v=bp:tprof_pmu_visited"});
  tprof_pmu_program own = spec.Build(TPROF_PMU_SCOPE_PROCESS, 0);
  tprof_pmu_program roots = spec.Build(TPROF_PMU_SCOPE_PROCESS, uint32_t(::getpid()));
  tprof_pmu_program kernel_bp = Spec({"k=bp:0xffffffff81000000"}).Build(TPROF_PMU_SCOPE_THREAD, 0);
  auto as_user = [&](int paranoid) {
    ScopedParanoid p(paranoid);
    return RunUnprivileged([&] {
      auto d = Device::Open();
      if (!d) return 10;
      auto mine = Program::Create(*d, own);
      if (paranoid > 2) return !mine && mine.error().code().value() == EACCES ? 0 : 11;
      if (!mine) return 12;
      for (int i = 0; i < 3; i++) tprof_pmu_visited();
      auto v = mine->Read();
      if (!v || v->values[0] != 3) return 13;
      auto theirs = Program::Create(*d, roots);  // root's process: not ours
      if (theirs || theirs.error().code().value() != EACCES) return 14;
      auto kbp = Program::Create(*d, kernel_bp);
      if (kbp || kbp.error().code().value() != EACCES) return 15;
      return 0;
    });
  };
  EXPECT_EQ(as_user(2), 0);
  EXPECT_EQ(as_user(3), 0);
}

// A scope thread that execs a setuid-root program leaves the program (perf
// exits its events there): PMU_READ's exec_left says how many did, so the
// creator learns why the counts stopped. A plain exec leaves nothing.
TEST_F(PmuTest, ExecLeftCountsScopeThreadsThatExecASetuidImage) {
  ScopedParanoid level(2);
  ScopedSetuidCopy copy("/usr/bin/tprof-wl-child", "/tmp/tprof-wl-child-suid-pmu");
  ASSERT_TRUE(copy.ok());
  const char* suid = copy.path();
  tprof_pmu_program own = Spec({"f=page-faults"}).Build(TPROF_PMU_SCOPE_PROCESS, 0);
  int rc = RunUnprivileged([&] {
    auto d = Device::Open();
    if (!d) return 10;
    for (int setuid = 0; setuid < 2; ++setuid) {
      auto prog = Program::Create(*d, own);  // inherited by the child below
      if (!prog) return 11;
      const char* path = setuid ? suid : "/usr/bin/tprof-wl-child";
      pid_t c = fork();
      if (c == 0) {
        execl(path, path, "--ms", "20", static_cast<char*>(nullptr));
        _exit(127);
      }
      int st = 0;
      if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st)) return 12;
      auto v = prog->Read();
      if (!v) return 13;
      if (v->exec_left != uint64_t(setuid)) return 20 + setuid;
    }
    return 0;
  });
  EXPECT_EQ(rc, 0) << "20: a plain exec counted in exec_left; 21: the setuid exec not counted "
                      "once (1x: the child did not run)";
}

// A rule arms secondary counters in the kernel: they count from the next
// event on, with no round trip to userspace; a secondary counter may also
// count per subrange of its range.
TEST_F(PmuTest, SecondaryCountersCountOnlyAfterTheirRuleFires) {
  ProgramSpec spec = Spec({"v=bp:tprof_pmu_visited", AfterVisitCounter("w"), "f=page-faults@tprof_pmu_touch_f"});
  ASSERT_TRUE(spec.AddRule("v>=500"));
  tprof_pmu_program raw = spec.Build(TPROF_PMU_SCOPE_THREAD, 0);
  auto f = syms_.Find("tprof_pmu_touch_f");
  ASSERT_TRUE(f);
  const uint32_t k = uint32_t(f->end - f->start);  // one byte per subrange
  raw.counters[1].armed_by = 1;  // rule 0
  raw.counters[2].armed_by = 1;
  raw.counters[2].nr_subranges = k;
  FreshPages pages(20);
  ASSERT_NE(pages.base, MAP_FAILED);
  Program prog = Create(raw);

  tprof_pmu_touch_f(pages.base, 5, kPage);  // before arming: not counted
  for (int i = 0; i < 1000; i++) tprof_pmu_visited();
  tprof_pmu_touch_f(pages.base + 5 * kPage, 15, kPage);
  auto v = ReadOrFail(prog);
  EXPECT_EQ(v.armed, 1u);
  EXPECT_EQ(v.rule_fired[0], 1u);
  EXPECT_EQ(v.values[0], 1000u);
  // The 500th visit's breakpoint armed it; that visit's own write (arm64:
  // its second instruction) counts.
  EXPECT_EQ(v.values[1], 501u);
  EXPECT_EQ(v.values[2], 15u);

  std::vector<uint64_t> cells(k + 8, ~0ULL);
  tprof_pmu_subranges sr{};
  sr.counter = 2;
  sr.capacity = uint32_t(cells.size());
  sr.values = reinterpret_cast<uint64_t>(cells.data());
  ASSERT_EQ(::ioctl(prog.fd(), TPROF_IOC_PMU_READ_SUBRANGES, &sr), 0) << std::strerror(errno);
  EXPECT_EQ(sr.nr_subranges, k);
  EXPECT_EQ(sr.width, 1u);
  uint64_t sum = 0, nonzero = 0;
  for (uint32_t i = 0; i < k; i++) {
    sum += cells[i];
    nonzero += cells[i] != 0;
  }
  EXPECT_EQ(sum, 15u);
  EXPECT_EQ(nonzero, 1u);  // every fault at the one store instruction
  EXPECT_EQ(cells[k], ~0ULL);  // nothing written past K
  sr.counter = 0;  // no subranges
  EXPECT_EQ(::ioctl(prog.fd(), TPROF_IOC_PMU_READ_SUBRANGES, &sr), -1);
  EXPECT_EQ(errno, EINVAL);

  auto bad = raw;
  bad.counters[2].nr_subranges = 1;
  EXPECT_EQ(Program::Create(dev_, bad).error().code().value(), EINVAL);
  bad = raw;
  bad.counters[1].armed_by = 2;  // no rule 1
  EXPECT_EQ(Program::Create(dev_, bad).error().code().value(), EINVAL);
  bad = raw;
  bad.counters[0].nr_subranges = 4;  // no range
  EXPECT_EQ(Program::Create(dev_, bad).error().code().value(), EINVAL);
}

TEST_F(PmuTest, BadProgramsAreRefusedWithTheDocumentedErrno) {
  tprof_pmu_program good{};
  good.scope = TPROF_PMU_SCOPE_THREAD;
  good.nr_counters = 1;
  good.counters[0].kind = TPROF_PMU_EV_SOFTWARE;
  good.counters[0].config = PERF_COUNT_SW_PAGE_FAULTS;
  EXPECT_EQ(ErrnoOf(good), 0);

  auto p = good;
  p.counters[0].config = 999;  // unknown software event
  EXPECT_EQ(ErrnoOf(p), EINVAL);
  p = good;
  p.counters[0].kind = TPROF_PMU_EV_TRACEPOINT;
  p.counters[0].config = 0x7fffffff;  // no such tracepoint id
  EXPECT_EQ(ErrnoOf(p), ENOENT);
  p = good;
  p.nr_counters = TPROF_PMU_MAX_COUNTERS + 1;
  EXPECT_EQ(ErrnoOf(p), EINVAL);
  p = good;
  p.nr_rules = 1;
  p.rules[0].nr_terms = TPROF_PMU_MAX_TERMS + 1;
  p.rules[0].op = TPROF_PMU_OP_GT;
  EXPECT_EQ(ErrnoOf(p), EINVAL);
  p.rules[0].nr_terms = 1;
  p.rules[0].terms[0].multiplier = TPROF_PMU_MAX_MULTIPLIER * 2;  // overflowing
  EXPECT_EQ(ErrnoOf(p), EINVAL);
  p = good;
  p.counters[0].flags = TPROF_PMU_CTR_RANGE;  // empty range
  p.counters[0].range_start = p.counters[0].range_end = 0x400000;
  EXPECT_EQ(ErrnoOf(p), EINVAL);
  p.counters[0].range_end = 0x3fffff;  // inverted
  EXPECT_EQ(ErrnoOf(p), EINVAL);
  p = good;
  p.resv[0] = 1;
  EXPECT_EQ(ErrnoOf(p), EINVAL);
  p = good;
  p.pid = 0x7ffffff0;  // no such thread
  EXPECT_EQ(ErrnoOf(p), ESRCH);
  p = good;
  p.counters[0].kind = TPROF_PMU_EV_HARDWARE;
  p.counters[0].config = PERF_COUNT_HW_CPU_CYCLES;
  p.counters[0].period = 100000;
  EXPECT_EQ(ErrnoOf(p), HasHardwarePmu() ? 0 : EOPNOTSUPP);
  // More watchpoints than the CPU has debug registers (x86 and QEMU's
  // arm64 "max" CPU: 4).
  p = good;
  p.nr_counters = 5;
  static volatile long words[5];
  for (int i = 0; i < 5; i++) {
    p.counters[i] = {};
    p.counters[i].kind = TPROF_PMU_EV_WATCHPOINT;
    p.counters[i].flags = TPROF_PMU_CTR_WATCH_WRITE;
    p.counters[i].addr = reinterpret_cast<uint64_t>(&words[i]);
    p.counters[i].len = 8;
  }
  EXPECT_EQ(ErrnoOf(p), ENOSPC);

  // The raw ioctl: a wrong size is EINVAL, a bad pointer EFAULT.
  EXPECT_EQ(::ioctl(dev_.fd(), _IOC(_IOC_READ | _IOC_WRITE, TPROF_IOC_MAGIC, 0x40, 8), &good), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(::ioctl(dev_.fd(), TPROF_IOC_PMU_CREATE, 16), -1);
  EXPECT_EQ(errno, EFAULT);
}

// Puts the calling thread on one CPU (and checks it runs there).
bool PinTo(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return ::sched_setaffinity(0, sizeof(one), &one) == 0 && ::sched_getcpu() == cpu;
}

// Lets the calling thread run anywhere again.
void Unpin() {
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int i = 0; i < CPU_SETSIZE; i++) CPU_SET(i, &all);
  ::sched_setaffinity(0, sizeof(all), &all);
}

// Two threads that inherited the same breakpoints (from a process-scoped
// program) have perf contexts that are clones: at a context switch from
// one to the other perf swaps the contexts instead of the events. When the
// second exits holding the first's context it takes the first's
// breakpoints with it and leaves it holding the dead one's. Either way the
// survivor holds two, so a program has room for two more there (four
// debug-register watchpoints on x86 and on QEMU's arm64), never three.
// perf alone admits three when the survivor's own are gone (it counts the
// breakpoints that target a task, not those it holds): 6.1 then warns
// "Can't find any breakpoint slot" and a counter silently stops.
TEST_F(PmuTest, InheritedBreakpointsLeaveRoomOnlyForTheRestWhicheverThreadHoldsThem) {
  static volatile long words[8];
  auto watch = [](tprof_pmu_program& p, uint32_t i, int word) {
    p.counters[i] = {};
    p.counters[i].kind = TPROF_PMU_EV_WATCHPOINT;
    p.counters[i].flags = TPROF_PMU_CTR_WATCH_WRITE;
    p.counters[i].addr = reinterpret_cast<uint64_t>(&words[word]);
    p.counters[i].len = 8;
  };
  const int cpu = int(::sysconf(_SC_NPROCESSORS_ONLN)) - 1;
  for (int round = 0; round < 6; round++) {
    tprof_pmu_program inherited{};
    inherited.scope = TPROF_PMU_SCOPE_PROCESS;
    inherited.nr_counters = 2;
    watch(inherited, 0, 0);
    watch(inherited, 1, 1);
    Program first = Create(inherited);

    int to_exiter[2], go[2], done[2];
    ASSERT_EQ(::pipe(to_exiter), 0);
    ASSERT_EQ(::pipe(go), 0);
    ASSERT_EQ(::pipe(done), 0);
    std::atomic<pid_t> survivor_tid{0}, exiter_tid{0};
    // Both on one CPU, so that the survivor's wakeup of the exiter is a
    // switch from one straight to the other.
    std::thread exiter([&] {
      PinTo(cpu);
      exiter_tid = pid_t(::syscall(SYS_gettid));
      char c;
      (void)!::read(to_exiter[0], &c, 1);
    });
    std::thread survivor([&] {
      PinTo(cpu);
      survivor_tid = pid_t(::syscall(SYS_gettid));
      char c;
      (void)!::read(go[0], &c, 1);
      (void)!::write(to_exiter[1], "x", 1);
      (void)!::read(done[0], &c, 1);
      words[2 + round % 2] = round;  // runs with whatever it holds
    });
    while (!survivor_tid || !exiter_tid) std::this_thread::yield();
    EXPECT_TRUE(WaitFor([&] { return ThreadState(survivor_tid) == 'S' && ThreadState(exiter_tid) == 'S'; }))
        << "round " << round << ": the two threads never both blocked";
    ASSERT_EQ(::write(go[1], "x", 1), 1);
    exiter.join();
    // perf releases an exiting thread's events after pthread_join returns
    // (before the thread leaves /proc).
    const std::string task = "/proc/self/task/" + std::to_string(exiter_tid.load());
    EXPECT_TRUE(WaitFor([&] { return ::access(task.c_str(), F_OK) != 0; })) << "the exiter stayed in /proc";

    tprof_pmu_program more{};
    more.scope = TPROF_PMU_SCOPE_THREAD;
    more.pid = uint32_t(survivor_tid.load());
    more.nr_counters = 3;
    for (uint32_t i = 0; i < 3; i++) watch(more, i, 2 + int(i));
    auto three = Program::Create(dev_, more);
    EXPECT_FALSE(three) << "round " << round << ": three more watchpoints fitted beside two inherited";
    if (!three) {
      EXPECT_EQ(three.error().code().value(), ENOSPC);
    }
    more.nr_counters = 2;
    more.counters[2] = {};
    auto two = Program::Create(dev_, more);
    EXPECT_TRUE(two) << "round " << round << ": " << (two ? "" : two.error().message());

    ASSERT_EQ(::write(done[1], "x", 1), 1);
    survivor.join();
    if (two) {
      EXPECT_EQ(ReadOrFail(*two).values[round % 2], 1u) << "round " << round;
    }
    for (int fd : {to_exiter[0], to_exiter[1], go[0], go[1], done[0], done[1]}) ::close(fd);
  }
  Unpin();
}

// Scope CPUS counts whatever runs on each CPU: another process's faults
// (a child forked before the program), the events name the task that ran,
// and the counters follow CPU hotplug. The range (the routine both
// processes fault in) keeps the answer exact whatever else runs in the
// guest; an unranged counter beside it sees at least as much.
TEST_F(PmuTest, EveryCpuScopeCountsEveryProcessAndFollowsCpuHotplug) {
  ASSERT_GE(::sysconf(_SC_NPROCESSORS_ONLN), 2) << "the guest needs 2 CPUs";
  ProgramSpec spec = Spec({"f=page-faults@tprof_pmu_touch_f", "all=page-faults"});
  ASSERT_TRUE(spec.AddThreshold("f>=40"));

  struct Restore {
    ~Restore() {
      SetCpuOnline(1, true);
      Unpin();
    }
  } restore;
  ASSERT_TRUE(PinTo(0));
  FreshPages child_pages(45), mine(20 + 10 + 25 + 200);
  ASSERT_NE(child_pages.base, MAP_FAILED);
  ASSERT_NE(mine.base, MAP_FAILED);
  volatile long no_pages = 0;  // a call the compiler cannot drop or specialise
  int go[2], ready[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // waits for the program, then faults 45 times on cpu1
    ::close(go[1]);
    ::close(ready[0]);
    char c;
    // The routine's first call in a fresh fork may fault on its own text or
    // stack page (fork copies no file-backed page tables; the stack is
    // copy-on-write), inside the range: make it before the program.
    if (!PinTo(1)) ::_exit(1);
    tprof_pmu_touch_f(child_pages.base, no_pages, kPage);
    if (::write(ready[1], "r", 1) != 1 || ::read(go[0], &c, 1) != 1) ::_exit(1);
    tprof_pmu_touch_f(child_pages.base, 45, kPage);
    ::_exit(::sched_getcpu() == 1 ? 0 : 2);
  }
  ::close(go[0]);
  ::close(ready[1]);
  char ready_byte;
  ASSERT_EQ(::read(ready[0], &ready_byte, 1), 1) << "the child did not start";
  ::close(ready[0]);
  tprof_pmu_touch_f(mine.base, no_pages, kPage);  // the same here

  auto prog = Program::Create(dev_, spec.Build(TPROF_PMU_SCOPE_CPUS, 0));
  if (!prog) {
    ::close(go[1]);
    ::waitpid(child, nullptr, 0);
    FAIL() << prog.error().message();
  }
  Monitor mon = SubscribedMonitor(*prog);
  char* next = mine.base;
  tprof_pmu_touch_f(next, 20, kPage);  // this process, cpu0
  next += 20 * kPage;
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  ::close(go[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  auto v = ReadOrFail(*prog);
  EXPECT_EQ(v.values[0], 65u) << "20 faults here and 45 in the child";
  EXPECT_GE(v.values[1], 65u);
  EXPECT_TRUE(v.exact & 1);
  auto events = Collect(mon, 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, uint32_t(TPROF_PMU_EVENT_THRESHOLD));
  EXPECT_EQ(events[0].values[0], 40u);
  EXPECT_EQ(events[0].pid, uint32_t(child)) << "the 40th fault was the child's";
  EXPECT_EQ(events[0].tid, uint32_t(child));
  EXPECT_EQ(events[0].cpu, 1u);

  // cpu1 offline: its counters go, cpu0's keep counting.
  ASSERT_TRUE(SetCpuOnline(1, false)) << "cpu1 cannot go offline: kernel without CPU hotplug?";
  tprof_pmu_touch_f(next, 10, kPage);
  next += 10 * kPage;
  EXPECT_EQ(ReadOrFail(*prog).values[0], 75u);

  // cpu1 back: its counters are created again by a work item a moment
  // after it came online. Probe with one fault at a time until one counts,
  // then 25 more are counted exactly.
  ASSERT_TRUE(SetCpuOnline(1, true));
  ASSERT_TRUE(PinTo(1));
  uint64_t base = 75;
  for (int i = 0; i < 200 && base == 75; i++) {
    tprof_pmu_touch_f(next, 1, kPage);
    next += kPage;
    base = ReadOrFail(*prog).values[0];
    if (base == 75) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(base, 76u) << "cpu1's counters never came back";
  tprof_pmu_touch_f(next, 25, kPage);
  EXPECT_EQ(::sched_getcpu(), 1);
  EXPECT_EQ(ReadOrFail(*prog).values[0], base + 25);
}

// An every-CPU watchpoint holds its registers on every CPU: a thread
// program has room for the rest only (x86: 1 taken, 3 left; arm64: 3
// taken with its guard and stepper, 1 left), and gets them all back once
// the every-CPU program closes.
TEST_F(PmuTest, EveryCpuWatchpointsLeaveTheRestAndGiveThemBackOnClose) {
  static volatile long words[5];
  auto watch = [](tprof_pmu_program& p, uint32_t n) {
    p.nr_counters = n;
    for (auto& k : p.counters) k = {};  // unused counters must be zero
    for (uint32_t i = 0; i < n; i++) {
      p.counters[i].kind = TPROF_PMU_EV_WATCHPOINT;
      p.counters[i].flags = TPROF_PMU_CTR_WATCH_WRITE;
      p.counters[i].addr = reinterpret_cast<uint64_t>(&words[i]);
      p.counters[i].len = 8;
    }
  };
#if defined(__aarch64__)
  const uint32_t left = 1;
#else
  const uint32_t left = 3;
#endif
  tprof_pmu_program mine{};
  mine.scope = TPROF_PMU_SCOPE_THREAD;
  {
    tprof_pmu_program every{};
    every.scope = TPROF_PMU_SCOPE_CPUS;
    watch(every, 1);
    Program cpus = Create(every);
    watch(mine, left + 1);
    auto too_many = Program::Create(dev_, mine);
    ASSERT_FALSE(too_many);
    EXPECT_EQ(too_many.error().code().value(), ENOSPC);
    watch(mine, left);
    auto rest = Program::Create(dev_, mine);
    EXPECT_TRUE(rest) << (rest ? "" : rest.error().message());
  }  // the every-CPU program closes
  watch(mine, left + 1);
  auto all = Program::Create(dev_, mine);
  EXPECT_TRUE(all) << (all ? "" : all.error().message());
}

// Every CPU is system-wide data: CAP_PERFMON at any paranoid level (EPERM),
// and it names no target (a pid: EINVAL).
TEST_F(PmuTest, EveryCpuScopeNeedsPerfmonAndNoTarget) {
  ProgramSpec spec = Spec({"f=page-faults"});
  auto with_pid = Program::Create(dev_, spec.Build(TPROF_PMU_SCOPE_CPUS, uint32_t(::getpid())));
  ASSERT_FALSE(with_pid);
  EXPECT_EQ(with_pid.error().code().value(), EINVAL);
  tprof_pmu_program tp = spec.Build(TPROF_PMU_SCOPE_CPUS, 0);
  tp.counters[0].kind = TPROF_PMU_EV_TRACEPOINT;
  tp.counters[0].config = 0x7fffffff;  // no such tracepoint id
  auto no_tp = Program::Create(dev_, tp);
  ASSERT_FALSE(no_tp);
  EXPECT_EQ(no_tp.error().code().value(), ENOENT);
  EXPECT_TRUE(Program::Create(dev_, spec.Build(TPROF_PMU_SCOPE_CPUS, 0)));

  tprof_pmu_program all = spec.Build(TPROF_PMU_SCOPE_CPUS, 0);
  for (int paranoid : {-1, 2, 3}) {
    ScopedParanoid p(paranoid);
    EXPECT_EQ(RunUnprivileged([&] {
                auto d = Device::Open();
                if (!d) return 10;
                auto prog = Program::Create(*d, all);
                return !prog && prog.error().code().value() == EPERM ? 0 : 11;
              }),
              0)
        << "paranoid " << paranoid;
  }
}

// Hardware counters at granularity K: each value moves by K at an overflow,
// so a rule's sum can be off by |multiplier| x K per term (plus, in QEMU
// 7.2, an instruction-counter overflow that is noticed only at the next
// exception-level change: the loops below enter the kernel every K/8).
// Under -icount shift=S the emulated PMU's cycles are exactly 2^S x
// instructions, so CPI is 2^S by construction; the constants +-3K absorb
// the granularity (the README works the bound out). K is large enough that
// perf's sample-rate throttling (400 interrupts per tick by default) never
// stops a counter here.
TEST(PmuHardwareTest, CpiRulesFireByTheIcountShift) {
  Device dev = OpenDeviceOrFail();
  constexpr uint64_t K = 100000;
  ProgramSpec spec;
  ASSERT_TRUE(spec.AddCounter("ins=instructions:100000", nullptr));
  ASSERT_TRUE(spec.AddCounter("cyc=cycles:100000", nullptr));
  ASSERT_TRUE(spec.AddRule("3*ins-cyc>300000"));   // CPI < 3
  ASSERT_TRUE(spec.AddRule("3*ins-cyc<-300000"));  // CPI > 3
  auto prog = Program::Create(dev, spec.Build(TPROF_PMU_SCOPE_THREAD, 0));
  // QEMU's PMU offers instructions only under -icount; x86 TCG has no PMU.
  if (!HasHardwarePmu() || IcountShift() < 0) {
    ASSERT_FALSE(prog);
    EXPECT_EQ(prog.error().code().value(), EOPNOTSUPP);
    return;
  }
  ASSERT_TRUE(prog) << prog.error().message();
  for (int i = 0; i < 400; i++) {
    tprof_known_loop(K / 16);  // K/8 instructions
    ::syscall(SYS_getppid);
  }
  auto v = ReadOrFail(*prog);
  const int shift = IcountShift();
  EXPECT_NEAR(double(v.values[1]), double(v.values[0] << shift), double((2 * K) << shift));
  EXPECT_EQ(v.exact, 0u);
  EXPECT_EQ(v.rule_fired[0], (1 << shift) < 3 ? 1u : 0u) << "shift " << shift;
  EXPECT_EQ(v.rule_fired[1], (1 << shift) > 3 ? 1u : 0u) << "shift " << shift;
}

// A threshold on cycles inside one routine's range fires from the
// overflow interrupt, at an address inside the routine. (Cycles, not
// instructions: QEMU 7.2 raises an instruction-counter overflow only at
// the next exception-level change, outside any user routine.)
TEST(PmuHardwareTest, RangeThresholdFiresFromTheOverflowInterrupt) {
  Device dev = OpenDeviceOrFail();
  auto syms = SelfSymbols();
  ProgramSpec spec;
  // Period 20000: a few hundred interrupts per tick at most, below perf's
  // throttling (which would stop the counter for the rest of the tick).
  ASSERT_TRUE(spec.AddCounter("c=cycles:20000@tprof_known_loop", &syms));
  ASSERT_TRUE(spec.AddThreshold("c>=200000"));
  auto prog = Program::Create(dev, spec.Build(TPROF_PMU_SCOPE_THREAD, 0));
  if (!HasHardwarePmu()) {
    ASSERT_FALSE(prog);
    EXPECT_EQ(prog.error().code().value(), EOPNOTSUPP);
    return;
  }
  ASSERT_TRUE(prog) << prog.error().message();
  Monitor mon = SubscribedMonitor(*prog);
  tprof_known_loop(1000000);
  auto events = CollectAll(mon, *prog, 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, uint32_t(TPROF_PMU_EVENT_THRESHOLD));
  EXPECT_EQ(events[0].values[0], 200000u);
  auto loop = syms.Find("tprof_known_loop");
  ASSERT_TRUE(loop);
  EXPECT_GE(events[0].ip, loop->start);
  EXPECT_LT(events[0].ip, loop->end);
  EXPECT_GE(ReadOrFail(*prog).values[0], 200000u);
}

}  // namespace
}  // namespace tprof::test

// The acceptance command: tprofctl pmu watch on a command it starts, a
// range resolved from the command's own symbols after its exec.
namespace tprof::test {
namespace {

// The last non-empty line of a command's output (`pmu watch --json` ends
// with its totals).
std::string LastLine(const std::string& out) {
  std::string text = out.substr(0, out.find_last_not_of('\n') + 1);
  return text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
}

// Breakpoint totals through the CLI (exact everywhere), and a threshold on a
// breakpoint (on arm64 a uprobe's).
TEST(TprofctlPmu, BreakpointTotalsAndThresholdsAreExact) {
  std::string out;
  ASSERT_EQ(RunCommand("tprofctl pmu watch --json --counter hot=bp:fault_hot "
                       "--counter cold=bp:fault_cold --counter f=page-faults@fault_hot "
                       "-- tprof-wl-faults 150 30",
                       &out),
            0)
      << out;
  std::string error;
  auto totals = ParseJson(LastLine(out), &error);
  ASSERT_TRUE(totals) << error << ": " << out;
  EXPECT_EQ((*totals).at("totals").at("hot").at("value").get<double>(), 1) << out;
  EXPECT_EQ((*totals).at("totals").at("cold").at("value").get<double>(), 1) << out;
  EXPECT_TRUE((*totals).at("totals").at("hot").at("exact").get<bool>());
  EXPECT_EQ((*totals).at("totals").at("f").at("value").get<double>(), 150) << out;

  int rc = RunCommand("tprofctl pmu watch --counter hot=bp:fault_hot --threshold 'hot>=1' "
                      "-- tprof-wl-faults 15 3 2>&1",
                      &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("threshold of hot #1: hot=1"), std::string::npos) << out;
}

TEST(TprofctlPmu, WatchPrintsOneEventAtTheThousandthFaultAndTheTotals) {
  std::string out;
  ASSERT_EQ(RunCommand("tprofctl pmu watch --json --counter f=page-faults@fault_hot "
                       "--counter all=page-faults --when 'f >= 1000' -- tprof-wl-faults 1500 300",
                       &out),
            0)
      << out;
  std::vector<Json> lines;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t nl = out.find('\n', pos);
    std::string line = out.substr(pos, nl == std::string::npos ? nl : nl - pos);
    pos = nl == std::string::npos ? out.size() : nl + 1;
    std::string error;
    auto doc = ParseJson(line, &error);
    ASSERT_TRUE(doc) << error << ": " << line;
    lines.push_back(*doc);
  }
  ASSERT_EQ(lines.size(), 2u) << out;  // one event, then the totals
  for (const Json& l : lines)
    EXPECT_EQ(l.value("format_version", 0), tprof::kJsonFormatVersion) << "every line: " << out;
  EXPECT_EQ(lines[0].at("event").get<std::string>(), "rule");
  EXPECT_EQ(lines[0].at("values").at("f").get<double>(), 1000);
  // The 300 cold faults came first.
  EXPECT_GE(lines[0].at("values").at("all").get<double>(), 1300);
  EXPECT_EQ(lines[1].at("totals").at("f").at("value").get<double>(), 1500);
  EXPECT_TRUE(lines[1].at("totals").at("f").at("exact").get<bool>());
  EXPECT_EQ(lines[1].at("rules")[0].at("fired").get<double>(), 1);
  EXPECT_EQ(lines[1].at("events_lost").get<double>(), 0);

  // The text form, and a usage error without a target.
  ASSERT_EQ(RunCommand("tprofctl pmu watch --counter f=page-faults@fault_hot --threshold 'f>=100' "
                       "-- tprof-wl-faults 150 10",
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("threshold of f #1: f=100"), std::string::npos) << out;
  EXPECT_NE(out.find("exact"), std::string::npos) << out;
  EXPECT_EQ(RunCommand("tprofctl pmu watch --counter f=page-faults 2>&1", &out), 2) << out;
  EXPECT_EQ(RunCommand("tprofctl pmu watch -a --pid 1 --counter f=page-faults 2>&1", &out), 2) << out;

  // Every CPU (-a) while the command runs: its faults in its own routine
  // exactly (the range comes from its symbols), and the machine's context
  // switches; without CAP_PERFMON a refusal that says what is missing.
  ASSERT_EQ(RunCommand("tprofctl pmu watch -a --json --counter f=page-faults@fault_hot "
                       "--counter cs=context-switches -- tprof-wl-faults 1500 300",
                       &out),
            0)
      << out;
  std::string error;
  auto totals = ParseJson(LastLine(out), &error);
  ASSERT_TRUE(totals) << error << ": " << out;
  EXPECT_EQ((*totals).at("totals").at("f").at("value").get<double>(), 1500) << out;
  EXPECT_TRUE((*totals).at("totals").at("f").at("exact").get<bool>());
  EXPECT_GT((*totals).at("totals").at("cs").at("value").get<double>(), 0) << out;
  EXPECT_EQ(RunUnprivileged([] {
              std::string o;
              int rc = RunCommand("tprofctl pmu watch -a --counter f=page-faults -- true 2>&1", &o);
              return rc == 1 && o.find("CAP_PERFMON") != std::string::npos ? 0 : 1;
            }),
            0)
      << "tprofctl pmu watch -a unprivileged: not refused with the CAP_PERFMON hint";
  EXPECT_EQ(RunCommand("tprofctl pmu list", &out), 0) << out;
  EXPECT_NE(out.find("page-faults"), std::string::npos) << out;
}

}  // namespace
}  // namespace tprof::test
