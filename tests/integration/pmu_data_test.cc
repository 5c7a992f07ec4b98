// Data ranges of page-fault counters (issue 11, ABI 1.11): a counter with
// TPROF_PMU_CTR_DATA_RANGE counts only faults whose address is in [addr,
// addr + len), at any length. Known answers: a process touches N fresh
// pages of buffer A and M of buffer B (MAP_PRIVATE|MAP_ANONYMOUS, no
// populate, no huge pages: one fault per page, at the address written), so
// a data range on A counts exactly N and one on B exactly M; a threshold
// fires at the Nth fault with that fault's address; a rule over two
// data-ranged counters fires at the exact step; bad ranges and kinds are
// refused with EINVAL, a kernel range without CAP_PERFMON with EACCES.
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../common/json.h"
#include "fresh_pages.h"
#include "guest_env.h"
#include "pmu_fixture.h"
#include "pmu_events.h"
#include "tprof/device/pmu_program.h"

// pmu_test.cc's routines: each touches `pages` pages of `base`, one fault each.
extern "C" {
void tprof_pmu_touch_f(char* base, long pages, long page);
void tprof_pmu_touch_g(char* base, long pages, long page);
}

namespace tprof::test {
namespace {

using pmu::Monitor;
using pmu::Program;
using pmu::ProgramSpec;

const long kPageSize = ::sysconf(_SC_PAGESIZE);

// "@data:0xADDR+LEN" over all of @pages.
std::string DataRange(const FreshPages& pages) {
  char s[64];
  std::snprintf(s, sizeof(s), "@data:0x%llx+%ld", (unsigned long long)pages.addr(), pages.bytes());
  return s;
}

// The PMU suite's fixture (pmu_fixture.h): the device, this process's
// symbols, Spec, Create and ErrnoOf.
class PmuDataRange : public PmuTest {};

// N pages of A and M of B: each data range counts its own buffer's faults,
// exactly; minor-faults too (anonymous faults are minor), major-faults
// none; with an instruction range as well both must hold; K subranges of
// one page each count one fault each.
TEST_F(PmuDataRange, FaultsCountOnlyInsideTheirDataRange) {
  constexpr long kN = 37, kM = 53;
  FreshPages a(kN), b(kM);
  ASSERT_NE(a.base, MAP_FAILED);
  ASSERT_NE(b.base, MAP_FAILED);
  Program prog = Create(Spec({
      "a=page-faults" + DataRange(a),
      "b=page-faults" + DataRange(b),
      "amin=minor-faults" + DataRange(a) + "/" + std::to_string(kN),
      "amaj=major-faults" + DataRange(a),
      "af=page-faults@tprof_pmu_touch_f" + DataRange(a),  // both hold
      "ag=page-faults@tprof_pmu_touch_g" + DataRange(a),  // the code range misses
      "all=page-faults",
  }));
  tprof_pmu_touch_f(a.base, kN, kPageSize);
  tprof_pmu_touch_g(b.base, kM, kPageSize);
  auto v = ReadOrFail(prog);
  EXPECT_EQ(v.values[0], uint64_t(kN)) << "faults in A";
  EXPECT_EQ(v.values[1], uint64_t(kM)) << "faults in B";
  EXPECT_EQ(v.values[2], uint64_t(kN)) << "minor faults in A";
  EXPECT_EQ(v.values[3], 0u) << "major faults in A";
  EXPECT_EQ(v.values[4], uint64_t(kN)) << "faults in A by tprof_pmu_touch_f";
  EXPECT_EQ(v.values[5], 0u) << "faults in A by tprof_pmu_touch_g";
  EXPECT_GE(v.values[6], uint64_t(kN + kM));
  EXPECT_EQ(v.exact & 0x7f, 0x7fu) << "page faults at period 1 are exact";
  auto sub = prog.ReadSubranges(2);
  ASSERT_TRUE(sub) << sub.error().message();
  EXPECT_EQ(*sub, std::vector<uint64_t>(kN, 1)) << "one fault per page of A";
}

// A threshold at the 20th fault of A: one event, with the counter at 20
// and that fault's data address (the 20th page's first byte) and an ip in
// the touching routine.
TEST_F(PmuDataRange, ThresholdFiresAtTheNthFaultWithItsAddress) {
  constexpr long kN = 30, kM = 10;
  FreshPages a(kN), b(kM);
  ASSERT_NE(a.base, MAP_FAILED);
  ASSERT_NE(b.base, MAP_FAILED);
  ProgramSpec spec = Spec({"a=page-faults" + DataRange(a), "b=page-faults" + DataRange(b)});
  ASSERT_TRUE(spec.AddThreshold("a>=20"));
  Program prog = Create(spec);
  Monitor mon = SubscribedMonitor(prog);
  tprof_pmu_touch_g(b.base, kM, kPageSize);
  tprof_pmu_touch_f(a.base, kN, kPageSize);
  auto events = CollectAll(mon, prog, 1);
  ASSERT_EQ(events.size(), 1u) << "one threshold event, nothing else";
  const tprof_pmu_event& e = events[0];
  EXPECT_EQ(e.kind, uint32_t(TPROF_PMU_EVENT_THRESHOLD));
  EXPECT_EQ(e.index, 0u);
  EXPECT_EQ(e.values[0], 20u);
  EXPECT_EQ(e.values[1], uint64_t(kM)) << "B's faults came first";
  EXPECT_EQ(e.addr, a.addr() + 19 * kPageSize) << "the 20th fault's address";
  EXPECT_EQ(e.tid, Gettid());
  EXPECT_NE(e.ip, 0u);
  auto v = ReadOrFail(prog);
  EXPECT_EQ(v.values[0], uint64_t(kN));
  EXPECT_EQ(v.threshold_fired[0], 1u);
}

// 2*a - b > 0 over two data-ranged counters: after 10 faults in B, it
// becomes true at the 6th fault in A (12 - 10), not the 5th (10 - 10).
TEST_F(PmuDataRange, RuleOverTwoDataRangesFiresAtTheExactFault) {
  FreshPages a(8), b(10);
  ASSERT_NE(a.base, MAP_FAILED);
  ASSERT_NE(b.base, MAP_FAILED);
  ProgramSpec spec = Spec({"a=page-faults" + DataRange(a), "b=page-faults" + DataRange(b)});
  ASSERT_TRUE(spec.AddRule("2*a - b > 0"));
  Program prog = Create(spec);
  Monitor mon = SubscribedMonitor(prog);
  tprof_pmu_touch_g(b.base, 10, kPageSize);
  tprof_pmu_touch_f(a.base, 8, kPageSize);
  auto events = CollectAll(mon, prog, 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, uint32_t(TPROF_PMU_EVENT_RULE));
  EXPECT_EQ(events[0].values[0], 6u);
  EXPECT_EQ(events[0].values[1], 10u);
  EXPECT_EQ(events[0].addr, a.addr() + 5 * kPageSize) << "raised by A's 6th fault";
  auto v = ReadOrFail(prog);
  EXPECT_EQ(v.values[0], 8u);
  EXPECT_EQ(v.values[1], 10u);
  EXPECT_EQ(v.rule_fired[0], 1u);
}

// Every CPU (CAP_PERFMON): the data range still selects this process's
// buffer exactly, whichever CPU faulted.
TEST_F(PmuDataRange, EveryCpuScopeCountsTheRangeExactly) {
  FreshPages a(25);
  ASSERT_NE(a.base, MAP_FAILED);
  Program prog = Create(Spec({"a=page-faults" + DataRange(a)}), TPROF_PMU_SCOPE_CPUS);
  tprof_pmu_touch_f(a.base, 25, kPageSize);
  EXPECT_EQ(ReadOrFail(prog).values[0], 25u);
}

// One counter of `config` with a data range [addr, addr + len), built by
// hand: the library refuses most of these itself.
tprof_pmu_program Raw(uint32_t kind, uint64_t config, uint64_t addr, uint64_t len) {
  tprof_pmu_program p{};
  p.scope = TPROF_PMU_SCOPE_THREAD;
  p.nr_counters = 1;
  p.counters[0].kind = kind;
  p.counters[0].config = config;
  p.counters[0].flags = TPROF_PMU_CTR_DATA_RANGE;
  p.counters[0].addr = addr;
  p.counters[0].len = len;
  return p;
}

TEST_F(PmuDataRange, BadRangesAndKindsAreRefused) {
  const uint32_t sw = TPROF_PMU_EV_SOFTWARE;
  const uint64_t pf = PERF_COUNT_SW_PAGE_FAULTS;
  EXPECT_EQ(ErrnoOf(Raw(sw, pf, 0x10000, 4096)), 0);
  EXPECT_EQ(ErrnoOf(Raw(sw, pf, 0x10000, 1ULL << 46)), 0) << "any length";
  EXPECT_EQ(ErrnoOf(Raw(sw, pf, 0x10000, 0)), EINVAL) << "empty";
  EXPECT_EQ(ErrnoOf(Raw(sw, pf, 0x20000, uint64_t(0x10000) - 0x20000)), EINVAL) << "inverted";
  EXPECT_EQ(ErrnoOf(Raw(sw, pf, ~0ULL - 0xfff, 0x2000)), EINVAL) << "wrapping";
  for (uint64_t config : {uint64_t(PERF_COUNT_SW_CONTEXT_SWITCHES), uint64_t(PERF_COUNT_SW_CPU_MIGRATIONS),
                          uint64_t(PERF_COUNT_SW_ALIGNMENT_FAULTS), uint64_t(PERF_COUNT_SW_EMULATION_FAULTS)})
    EXPECT_EQ(ErrnoOf(Raw(sw, config, 0x10000, 4096)), EINVAL) << "no data address: " << config;
  auto hw = Raw(TPROF_PMU_EV_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 0x10000, 4096);
  hw.counters[0].period = 1000;  // valid but for the data range
  EXPECT_EQ(ErrnoOf(hw), EINVAL);
  EXPECT_EQ(ErrnoOf(Raw(TPROF_PMU_EV_BREAKPOINT, 0, 0x10000, 4096)), EINVAL);
  auto wp = Raw(TPROF_PMU_EV_WATCHPOINT, 0, 0x10000, 8);
  wp.counters[0].flags |= TPROF_PMU_CTR_WATCH_WRITE;
  EXPECT_EQ(ErrnoOf(wp), EINVAL) << "a watchpoint's range is its own";

  // Kernel addresses: CAP_PERFMON (root here) may; uid 65534 gets EACCES,
  // while its own user range is fine.
  const auto kernel = Raw(sw, pf, 0xffff800000000000ULL, 1ULL << 40);
  const auto user = Raw(sw, pf, 0x10000, 4096);
  EXPECT_EQ(ErrnoOf(kernel), 0);
  ScopedParanoid paranoid(2);
  EXPECT_EQ(RunUnprivileged([&] {
              auto d = Device::Open();
              if (!d) return 10;
              auto errno_of = [&](const tprof_pmu_program& p) {
                auto r = Program::Create(*d, p);
                return r ? 0 : r.error().code().value();
              };
              if (errno_of(user) != 0) return 11;
              return errno_of(kernel) == EACCES ? 0 : 12;
            }),
            0)
      << "10: no device, 11: a user data range refused, 12: a kernel one not EACCES";
}

// The CLI: a data symbol of the command (tprof-wl-faults' page-aligned
// fault_bss) as the data range, alone and with an instruction range, and a
// threshold's event at the 25th fault.
TEST(TprofctlPmu, DataRangeOfACommandsDataSymbolCountsItsFaults) {
  Result r = Sh("tprofctl pmu watch --json --counter d=page-faults@data:fault_bss "
                "--counter dd=page-faults@fault_data@data:fault_bss "
                "--counter dh=page-faults@fault_hot@data:fault_bss --counter h=page-faults@fault_hot "
                "--threshold 'd>=25' -- tprof-wl-faults 150 30 40");
  ASSERT_EQ(r.rc, 0) << r.out;
  std::vector<Json> lines;
  size_t pos = 0;
  while (pos < r.out.size()) {
    size_t nl = r.out.find('\n', pos);
    std::string line = r.out.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? r.out.size() : nl + 1;
    if (line.empty() || line[0] != '{') continue;
    std::string error;
    auto doc = ParseJson(line, &error);
    ASSERT_TRUE(doc) << error << ": " << line;
    lines.push_back(*doc);
  }
  ASSERT_EQ(lines.size(), 2u) << "one event, then the totals: " << r.out;
  EXPECT_EQ(lines[0].at("event").get<std::string>(), "threshold");
  EXPECT_EQ(lines[0].at("values").at("d").get<double>(), 25) << r.out;
  // fault_data writes each page's first byte.
  const uint64_t addr = lines[0].at("addr").get<uint64_t>();
  EXPECT_NE(addr, 0u) << r.out;
  EXPECT_EQ(addr % 4096, 0u) << r.out;
  const Json& totals = lines[1].at("totals");
  EXPECT_EQ(totals.at("d").at("value").get<double>(), 40) << r.out;
  EXPECT_EQ(totals.at("dd").at("value").get<double>(), 40) << r.out;
  EXPECT_EQ(totals.at("dh").at("value").get<double>(), 0) << r.out;
  EXPECT_EQ(totals.at("h").at("value").get<double>(), 150) << r.out;
  EXPECT_TRUE(totals.at("d").at("exact").get<bool>());

  // A kind without a data address: refused before anything runs.
  r = Sh("tprofctl pmu watch --counter c=context-switches@data:fault_bss -- tprof-wl-faults 1 1 1");
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "data range")) << r.out;
}

}  // namespace
}  // namespace tprof::test
