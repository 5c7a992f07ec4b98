// Data ranges wider than one debug register (issue 11): a watchpoint on
// [addr, addr + len) up to TPROF_PMU_MAX_WATCH_LEN bytes is cut into pieces
// (kmod/core/pmu_rules.c), one perf event each, summed into one counter.
// Known answers: writes to each field of a struct counted exactly, writes
// just outside either end not counted, unaligned ranges, a threshold at the
// Nth write whichever piece it hits, too many pieces refused with nothing
// left behind. x86 guests trap per hit; on arm64 a watchpoint only counts
// unless the program needs its hits, and then each piece takes 3 registers
// (its guard and stepper), so a threshold on 16 or 32 bytes is ENOSPC there
// and the per-hit cases use one doubleword.
#include <pthread.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "guest_env.h"
#include "pmu_events.h"
#include "pmu_fixture.h"
#include "tprof/device/pmu_program.h"

// A 32-byte struct with fields on every piece, between two guard words,
// and a 24-byte one for the data symbol.
struct TprofWide32 {
  long a;      // bytes 0..7
  int b, c;    // 8..11, 12..15
  short d;     // 16..17
  char e[6];   // 18..23
  long f;      // 24..31
};
struct TprofWide24 {
  long x;
  int y, z;
  long w;
};
static_assert(sizeof(TprofWide32) == 32 && sizeof(TprofWide24) == 24);
struct alignas(32) TprofGuarded {
  char pad[24];
  volatile long before;  // bytes 24..31: just below the watched struct
  TprofWide32 w;         // 32..63
  volatile long after;   // 64..71: just above it
};

extern "C" {
__attribute__((used)) TprofGuarded tprof_pmu_guarded;
__attribute__((used)) TprofWide24 tprof_pmu_wide24;
__attribute__((used)) alignas(16) unsigned char tprof_pmu_bytes[64];
}

namespace tprof::test {
namespace {

using pmu::Monitor;
using pmu::Program;
using pmu::ProgramSpec;

// The compiler must emit each store: through volatile lvalues.
template <typename T>
void Store(T* p, T v) {
  *const_cast<volatile T*>(p) = v;
}

void Repeat(int n, const std::function<void()>& f) {
  for (int i = 0; i < n; i++) f();
}

std::string Hex(const void* p) {
  char s[32];
  std::snprintf(s, sizeof(s), "0x%llx", (unsigned long long)reinterpret_cast<uintptr_t>(p));
  return s;
}

tprof_pmu_program Build(const std::vector<std::string>& counters) {
  ProgramSpec spec;
  for (const auto& c : counters) {
    auto st = spec.AddCounter(c, nullptr);
    EXPECT_TRUE(st) << c << ": " << st.error().message();
  }
  return spec.Build(TPROF_PMU_SCOPE_THREAD, 0);
}

uint64_t ValueOf(const Program& p, int i = 0) {
  auto v = p.Read();
  EXPECT_TRUE(v) << v.error().message();
  return v ? v->values[i] : ~0ULL;
}

// Every field of a 32-byte struct (4 pieces) written a known number of
// times, the words just below and above it too: only the struct counts.
// Fields in piece order (QEMU's stale hit flags: README "Data ranges").
TEST_F(PmuTest, WideWatchpointCountsEveryFieldAndNothingOutside) {
  TprofWide32* w = &tprof_pmu_guarded.w;
  Program prog = Create(Build({"w=w:" + Hex(w) + "/32"}));
  Repeat(3, [&] { Store(&w->a, 1L); });
  Repeat(5, [&] { Store(&w->b, 2); });
  Repeat(7, [&] { Store(&w->c, 3); });
  Repeat(11, [&] { Store(&w->d, short(4)); });
  Repeat(13, [&] { Store(&w->e[5], char(5)); });  // the struct's byte 23
  Repeat(17, [&] { Store(&w->f, 6L); });
  Repeat(19, [&] { tprof_pmu_guarded.before = 7; });
  Repeat(23, [&] { tprof_pmu_guarded.after = 8; });
  EXPECT_EQ(ValueOf(prog), 3u + 5 + 7 + 11 + 13 + 17);
  auto v = prog.Read();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->exact, 1u);
}

// An unaligned range, bytes 3..15 of tprof_pmu_bytes (x86: 1 + 4 + 8 bytes,
// arm64: 2 doublewords): its first and last bytes count, bytes 2 and 16 do
// not, a 4-byte store over bytes 0..3 counts once (one piece).
TEST_F(PmuTest, UnalignedWatchpointRangeCountsItsBytesOnly) {
  unsigned char* b = tprof_pmu_bytes;
  Program prog = Create(Build({"r=w:" + Hex(b + 3) + "/13"}));
  Repeat(5, [&] { Store(&b[2], (unsigned char)1); });
  Repeat(7, [&] { Store(&b[3], (unsigned char)1); });
  Repeat(11, [&] { Store(&b[15], (unsigned char)1); });
  Repeat(13, [&] { Store(&b[16], (unsigned char)1); });
  Repeat(2, [&] { Store(reinterpret_cast<uint32_t*>(b), 0u); });
  EXPECT_EQ(ValueOf(prog), 7u + 11 + 2);
}

#if !defined(__aarch64__)
// The documented rule for one access over a piece boundary: it counts at
// least once and at most once per piece it touches (the CPU reports each
// debug register that matched; QEMU's TCG only the first), the same every
// time. An 8-byte store to bytes 4..11 of a 16-byte range at 0 (pieces
// 0..7 and 8..15) counts 1 or 2, one to bytes 8..15 exactly 1.
TEST_F(PmuTest, AnAccessAcrossTwoPiecesCountsOncePerPiece) {
  unsigned char* b = tprof_pmu_bytes + 16;
  Program prog = Create(Build({"x=w:" + Hex(b) + "/16"}));
  typedef uint64_t unaligned_u64 __attribute__((aligned(1)));
  Repeat(10, [&] { Store(reinterpret_cast<unaligned_u64*>(b + 4), uint64_t(1)); });
  const uint64_t across = ValueOf(prog);
  EXPECT_TRUE(across == 10 || across == 20) << across;
  Repeat(3, [&] { Store(reinterpret_cast<uint64_t*>(b + 8), uint64_t(1)); });
  EXPECT_EQ(ValueOf(prog), across + 3);
}

// A threshold at the 10th write fires exactly there, the writes going
// through every piece of a 32-byte range, each moving the value by 1.
TEST_F(PmuTest, WideWatchpointThresholdFiresAtTheNthWriteAcrossPieces) {
  TprofWide32* w = &tprof_pmu_guarded.w;
  ProgramSpec spec = Spec({"w=w:" + Hex(w) + "/32"});
  ASSERT_TRUE(spec.AddThreshold("w>=10"));
  Program prog = Create(spec);
  auto mon = Monitor::Open();
  ASSERT_TRUE(mon) << mon.error().message();
  ASSERT_TRUE(mon->Subscribe(prog));
  // Each write moves the value by exactly 1, whichever piece it hits.
  auto expect_value = [&](uint64_t want, uint64_t fired) {
    auto r = prog.Read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->values[0], want);
    EXPECT_EQ(r->threshold_fired[0], fired) << "at " << want;
  };
  // In piece order: QEMU's TCG leaves a watchpoint's hit flag set until
  // an access misses it, so going back to a lower piece would also report
  // a stale higher one there (not on hardware); see README "Data ranges".
  Repeat(4, [&] { Store(&w->a, 1L); });
  expect_value(4, 0);
  Store(&w->b, 2);
  expect_value(5, 0);
  Store(&w->c, 3);
  expect_value(6, 0);
  Store(&w->d, short(4));
  expect_value(7, 0);
  Repeat(2, [&] { Store(&w->e[5], char(5)); });
  expect_value(9, 0);
  auto v = prog.Read();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->values[0], 9u);
  EXPECT_EQ(v->threshold_fired[0], 0u);
  Store(&w->f, 6L);  // the 10th, on the fourth piece
  Repeat(5, [&] { Store(&w->f, 7L); });
  std::vector<tprof_pmu_event> events = Collect(*mon, 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, uint32_t(TPROF_PMU_EVENT_THRESHOLD));
  EXPECT_EQ(events[0].values[0], 10u);
  v = prog.Read();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->values[0], 15u);
  EXPECT_EQ(v->threshold_fired[0], 1u);
}
#else
// arm64: a per-hit piece takes 3 watchpoint registers (its guard, ours,
// its stepper), so a threshold on 32 bytes (4 pieces, 12 registers) or 16
// bytes (6) is ENOSPC before anything is made, while 32 bytes without one
// only count (4 registers) and fit; a threshold on one doubleword fits and
// fires at exactly the 10th write, bytes next to it not counted.
TEST_F(PmuTest, WideWatchpointThresholdTakesThreeRegistersPerPiece) {
  TprofWide32* w = &tprof_pmu_guarded.w;
  ProgramSpec wide = Spec({"w=w:" + Hex(w) + "/32"});
  ProgramSpec wide_threshold = wide;
  ASSERT_TRUE(wide_threshold.AddThreshold("w>=10"));
  EXPECT_EQ(ErrnoOf(wide_threshold.Build(TPROF_PMU_SCOPE_THREAD, 0)), ENOSPC);
  ProgramSpec two_pieces = Spec({"w=w:" + Hex(w) + "/16"});
  ASSERT_TRUE(two_pieces.AddThreshold("w>=10"));
  EXPECT_EQ(ErrnoOf(two_pieces.Build(TPROF_PMU_SCOPE_THREAD, 0)), ENOSPC);
  {
    Program counts = Create(wide);
    Repeat(3, [&] { Store(&w->f, 1L); });
    EXPECT_EQ(ValueOf(counts), 3u);
  }
  ProgramSpec spec = Spec({"w=w:" + Hex(w) + "/8"});
  ASSERT_TRUE(spec.AddThreshold("w>=10"));
  Program prog = Create(spec);
  auto mon = Monitor::Open();
  ASSERT_TRUE(mon) << mon.error().message();
  ASSERT_TRUE(mon->Subscribe(prog));
  Repeat(9, [&] { Store(&w->a, 1L); });
  Repeat(4, [&] { Store(&w->b, 2); });  // outside: bytes 8..11
  auto v = prog.Read();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->values[0], 9u);
  EXPECT_EQ(v->threshold_fired[0], 0u);
  Store(&w->a, 3L);  // the 10th
  Repeat(5, [&] { Store(&w->a, 4L); });
  std::vector<tprof_pmu_event> events = CollectAll(*mon, prog, 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, uint32_t(TPROF_PMU_EVENT_THRESHOLD));
  EXPECT_EQ(events[0].values[0], 10u);
  v = prog.Read();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->values[0], 15u);
  EXPECT_EQ(v->threshold_fired[0], 1u);
  EXPECT_EQ(v->hits_missed, 0u);  // QEMU reports an address inside the range
}

// arm64: every-CPU user-address breakpoints take 2 execution registers
// each (QEMU's "max" CPU has 6): 3 fit, 4 are ENOSPC up front.
TEST_F(PmuTest, EveryCpuBreakpointsTakeTwoExecutionRegistersEach) {
  auto bps = [](int n) {
    tprof_pmu_program p{};
    p.scope = TPROF_PMU_SCOPE_CPUS;
    p.nr_counters = n;
    for (int i = 0; i < n; i++) {
      p.counters[i].kind = TPROF_PMU_EV_BREAKPOINT;
      p.counters[i].addr = reinterpret_cast<uintptr_t>(&Hex) + 4 * i;
      p.counters[i].threshold = 1000;
    }
    return p;
  };
  EXPECT_EQ(ErrnoOf(bps(3)), 0);
  EXPECT_EQ(ErrnoOf(bps(4)), ENOSPC);
  // No instruction starts at an address not 4-byte aligned: EINVAL in
  // every scope (a debug register there would never match its hit, and
  // the task died with SIGILL: found by the fuzzer).
  for (uint32_t scope : {TPROF_PMU_SCOPE_CPUS, TPROF_PMU_SCOPE_THREAD}) {
    tprof_pmu_program odd = bps(1);
    odd.scope = scope;
    odd.counters[0].addr += 2;
    EXPECT_EQ(ErrnoOf(odd), EINVAL) << scope;
  }
}
#endif

// Lengths and piece counts out of bounds are EINVAL; pieces beyond the
// CPU's debug registers (4 on x86 and QEMU's arm64 "max" CPU) ENOSPC,
// also when perf runs out midway; nothing stays behind: afterwards one
// program takes all 4 and counts.
TEST_F(PmuTest, TooManyWatchpointPiecesAreRefusedAndLeakNothing) {
  unsigned char* b = tprof_pmu_bytes;
  auto one = [&](uint64_t addr, uint64_t len) {
    tprof_pmu_program p{};
    p.scope = TPROF_PMU_SCOPE_THREAD;
    p.nr_counters = 1;
    p.counters[0].kind = TPROF_PMU_EV_WATCHPOINT;
    p.counters[0].flags = TPROF_PMU_CTR_WATCH_WRITE;
    p.counters[0].addr = addr;
    p.counters[0].len = len;
    return p;
  };
  const uint64_t base = reinterpret_cast<uintptr_t>(b);
  EXPECT_EQ(ErrnoOf(one(base, 0)), EINVAL);
  EXPECT_EQ(ErrnoOf(one(base, TPROF_PMU_MAX_WATCH_LEN + 1)), EINVAL);
  EXPECT_EQ(ErrnoOf(one(base + 1, 32)), EINVAL);  // 7 pieces (arm64: 5)
  EXPECT_EQ(ErrnoOf(one(~0ULL - 3, 8)), EINVAL);    // wraps
  // Two 32-byte ranges: 8 pieces.
  tprof_pmu_program two = one(base, 32);
  two.nr_counters = 2;
  two.counters[1] = two.counters[0];
  two.counters[1].addr = base + 32;
  EXPECT_EQ(ErrnoOf(two), ENOSPC);
  // 3 + 2 pieces (x86: 3..15 is 1 + 4 + 8; arm64: 3 + 2 doublewords with 17..31).
  tprof_pmu_program five = one(base + 3, 13);
  five.nr_counters = 2;
  five.counters[1] = five.counters[0];
#if defined(__aarch64__)
  five.counters[0] = one(base + 1, 20).counters[0];  // doublewords 0, 1, 2
#endif
  five.counters[1].addr = base + 32;
  five.counters[1].len = 16;
  EXPECT_EQ(ErrnoOf(five), ENOSPC);
  {
    // One register held by another program of this thread: the 4 pieces
    // pass the up-front check, perf refuses the 4th, the 3 made are undone.
    Program holder = Create(one(base + 48, 8));
    EXPECT_EQ(ErrnoOf(one(base, 32)), ENOSPC);
    Store(reinterpret_cast<uint64_t*>(b + 48), uint64_t(1));
    EXPECT_EQ(ValueOf(holder), 1u);
  }
  Program all = Create(one(base, 32));
  Repeat(4, [&] { Store(reinterpret_cast<uint64_t*>(b + 24), uint64_t(1)); });
  Store(reinterpret_cast<uint64_t*>(b + 32), uint64_t(1));  // outside
  EXPECT_EQ(ValueOf(all), 4u);
}

// Every CPU: each piece is a per-CPU event of the same counter (the
// handler checks an event against all of its counter's pieces). On arm64
// every-CPU scope needs the hits: 3 registers per piece, so 32 and 16
// bytes are ENOSPC and one doubleword (guard, ours, stepper) is exact.
TEST_F(PmuTest, WideWatchpointInEveryCpuScopeSumsItsPieces) {
  TprofWide32* w = &tprof_pmu_guarded.w;
  tprof_pmu_program p = Build({"w=w:" + Hex(w) + "/32"});
  p.scope = TPROF_PMU_SCOPE_CPUS;
  p.pid = 0;
#if defined(__aarch64__)
  EXPECT_EQ(ErrnoOf(p), ENOSPC);
  p.counters[0].len = 16;
  EXPECT_EQ(ErrnoOf(p), ENOSPC);
  p.counters[0].len = 8;
  Program prog = Create(p);
  Repeat(3, [&] { Store(&w->a, 1L); });
  Repeat(4, [&] { Store(&w->c, 2); });  // outside: bytes 12..15
  tprof_pmu_guarded.before = 5;         // outside
  EXPECT_EQ(ValueOf(prog), 3u);
#else
  Program prog = Create(p);
  Repeat(3, [&] { Store(&w->a, 1L); });
  Repeat(4, [&] { Store(&w->c, 2); });
  Repeat(5, [&] { Store(&w->e[0], char(3)); });
  Repeat(6, [&] { Store(&w->f, 4L); });
  tprof_pmu_guarded.after = 5;  // outside
  EXPECT_EQ(ValueOf(prog), 3u + 4 + 5 + 6);
#endif
}

// E2BIG counts perf events, a watchpoint's pieces each: 1100 threads x 4
// pieces is above 4096 (1100 x 1 would not be), refused before anything
// is made.
TEST_F(PmuTest, EventBoundCountsEveryWatchpointPiece) {
  constexpr int kThreads = 1100;
  pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&gate);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  std::vector<pthread_t> threads;
  auto wait_gate = [](void* g) -> void* {
    pthread_mutex_lock(static_cast<pthread_mutex_t*>(g));
    pthread_mutex_unlock(static_cast<pthread_mutex_t*>(g));
    return nullptr;
  };
  for (int i = 0; i < kThreads; i++) {
    pthread_t t;
    if (pthread_create(&t, &attr, wait_gate, &gate) != 0) break;
    threads.push_back(t);
  }
  pthread_attr_destroy(&attr);
  EXPECT_EQ(threads.size(), size_t(kThreads));
  tprof_pmu_program p = Build({"w=w:" + Hex(&tprof_pmu_guarded.w) + "/32"});
  p.scope = TPROF_PMU_SCOPE_PROCESS;
  EXPECT_EQ(ErrnoOf(p), E2BIG);
  pthread_mutex_unlock(&gate);
  for (pthread_t t : threads) pthread_join(t, nullptr);
}

// A data symbol is watched whole: a 24-byte struct, 3 pieces, each field
// counted.
TEST_F(PmuTest, DataSymbolOfAStructIsWatchedWhole) {
  auto e = pmu::ParseEvent("w:tprof_pmu_wide24", &syms_);
  ASSERT_TRUE(e) << e.error().message();
  EXPECT_EQ(e->addr, reinterpret_cast<uint64_t>(&tprof_pmu_wide24));
  EXPECT_EQ(e->len, 24u);
  Program prog = Create(Spec({"s=w:tprof_pmu_wide24"}));
  Repeat(2, [&] { Store(&tprof_pmu_wide24.x, 1L); });
  Repeat(3, [&] { Store(&tprof_pmu_wide24.y, 1); });
  Repeat(4, [&] { Store(&tprof_pmu_wide24.z, 1); });
  Repeat(5, [&] { Store(&tprof_pmu_wide24.w, 1L); });
  EXPECT_EQ(ValueOf(prog), 14u);
}

}  // namespace
}  // namespace tprof::test
