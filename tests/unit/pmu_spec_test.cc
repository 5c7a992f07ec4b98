// PMU program specs (libtprofctl/src/device/pmu_spec.cc, pmu_symbols.cc) on the
// host: event names, ranges, thresholds, the rule grammar, symbols of the
// test binary itself.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include "tprof/device/pmu_spec.h"

extern "C" __attribute__((noinline, used)) int tprof_pmu_spec_probe(int x) { return x * 3 + 1; }
static __attribute__((noinline, used)) int tprof_pmu_spec_local(int x) { return x + 2; }
// A data symbol wider than one debug register, and one wider than a watchpoint.
struct TprofPmuSpecWide {
  long a;
  int b, c;
  long d;
};
extern "C" {
__attribute__((used)) TprofPmuSpecWide tprof_pmu_spec_wide24;
__attribute__((used)) char tprof_pmu_spec_wide40[40];
}

namespace tprof::pmu {
namespace {

TEST(PmuSpec, EventNames) {
  auto e = ParseEvent("page-faults", nullptr);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, uint32_t(TPROF_PMU_EV_SOFTWARE));
  EXPECT_EQ(e->config, uint64_t(PERF_COUNT_SW_PAGE_FAULTS));
  e = ParseEvent("cycles:5000", nullptr);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, uint32_t(TPROF_PMU_EV_HARDWARE));
  EXPECT_EQ(e->period, 5000u);
  EXPECT_EQ(ParseEvent("instructions", nullptr)->period, kDefaultHardwarePeriod);
  e = ParseEvent("r1c2:100", nullptr);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, uint32_t(TPROF_PMU_EV_RAW));
  EXPECT_EQ(e->config, 0x1c2u);
  e = ParseEvent("bp:0x401000", nullptr);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, uint32_t(TPROF_PMU_EV_BREAKPOINT));
  EXPECT_EQ(e->addr, 0x401000u);
  e = ParseEvent("rw:0x1000/4", nullptr);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, uint32_t(TPROF_PMU_EV_WATCHPOINT));
  EXPECT_EQ(e->len, 4u);
  EXPECT_EQ(e->flags, uint32_t(TPROF_PMU_CTR_WATCH_READ));
  EXPECT_EQ(ParseEvent("w:0x1000", nullptr)->len, 8u);
  // Data ranges of any length up to TPROF_PMU_MAX_WATCH_LEN, at any address
  // (the kernel cuts them into debug registers).
  e = ParseEvent("w:0x1003/13", nullptr);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->addr, 0x1003u);
  EXPECT_EQ(e->len, 13u);
  EXPECT_EQ(ParseEvent("rw:0x1000/32", nullptr)->len, 32u);
  EXPECT_EQ(ParseEvent("w:0x1000/33", nullptr).error().code().value(), EINVAL);
  EXPECT_EQ(ParseEvent("w:0x1000/0", nullptr).error().code().value(), EINVAL);
  EXPECT_EQ(ParseEvent("w:0xfffffffffffffffc/8", nullptr).error().code().value(), EINVAL);  // wraps
  EXPECT_EQ(ParseEvent("bogus", nullptr).error().code().value(), ENOENT);
  EXPECT_EQ(ParseEvent("cycles:0", nullptr).error().code().value(), EINVAL);
  EXPECT_EQ(ParseEvent("bp:main", nullptr).error().code().value(), EINVAL);  // no symbols
  EXPECT_EQ(ParseEvent("nosuchsys:nosuchevent", nullptr).error().code().value(), ENOENT);
}

TEST(PmuSpec, Ranges) {
  auto r = ParseRange("0x1000-0x2000", nullptr);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->start, 0x1000u);
  EXPECT_EQ(r->end, 0x2000u);
  r = ParseRange("0x1000+16", nullptr);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->end, 0x1010u);
  EXPECT_FALSE(ParseRange("0x2000-0x1000", nullptr));
  EXPECT_FALSE(ParseRange("0x2000-0x2000", nullptr));
  EXPECT_FALSE(ParseRange("0x1000+0", nullptr));
}

TEST(PmuSpec, SymbolsOfThisProcessAreAtTheirRunTimeAddresses) {
  auto syms = SymbolResolver::ForProcess(0);
  ASSERT_TRUE(syms) << syms.error().message();
  auto f = syms->Find("tprof_pmu_spec_probe");
  ASSERT_TRUE(f) << f.error().message();
  EXPECT_EQ(f->start, reinterpret_cast<uint64_t>(&tprof_pmu_spec_probe));
  EXPECT_GT(f->end, f->start);
  auto local = syms->Find("pmu_spec_test.cc:tprof_pmu_spec_local");
  ASSERT_TRUE(local) << local.error().message();
  EXPECT_EQ(local->start, reinterpret_cast<uint64_t>(&tprof_pmu_spec_local));
  EXPECT_EQ(syms->Find("other.cc:tprof_pmu_spec_local").error().code().value(), ENOENT);
  EXPECT_EQ(syms->Find("no_such_symbol_here").error().code().value(), ENOENT);
  auto e = ParseEvent("bp:tprof_pmu_spec_probe", &*syms);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->addr, f->start);
}

// A data symbol is watched whole (a 24-byte struct: 24 bytes), a part of a
// larger one with /LEN; one above TPROF_PMU_MAX_WATCH_LEN is refused.
TEST(PmuSpec, DataSymbolsAreWatchedWhole) {
  auto syms = SymbolResolver::ForProcess(0);
  ASSERT_TRUE(syms) << syms.error().message();
  auto e = ParseEvent("w:tprof_pmu_spec_wide24", &*syms);
  ASSERT_TRUE(e) << e.error().message();
  EXPECT_EQ(e->addr, reinterpret_cast<uint64_t>(&tprof_pmu_spec_wide24));
  EXPECT_EQ(e->len, 24u);
  EXPECT_EQ(ParseEvent("w:tprof_pmu_spec_wide40", &*syms).error().code().value(), EINVAL);
  e = ParseEvent("rw:tprof_pmu_spec_wide40/16", &*syms);
  ASSERT_TRUE(e) << e.error().message();
  EXPECT_EQ(e->addr, reinterpret_cast<uint64_t>(&tprof_pmu_spec_wide40));
  EXPECT_EQ(e->len, 16u);
}

// `-e EVENT` as perf's -e: without NAME=, the event names the counter.
TEST(PmuSpec, ACounterWithoutANameIsNamedByItsEvent) {
  ProgramSpec s;
  ASSERT_TRUE(s.AddCounter("page-faults@0x1000-0x2000", nullptr));
  ASSERT_TRUE(s.AddCounter("cycles:10000", nullptr));
  ASSERT_TRUE(s.AddCounter("bp:0x401000", nullptr));
  EXPECT_EQ(s.CounterIndex("page_faults"), std::optional<size_t>(0));
  EXPECT_EQ(s.CounterIndex("cycles"), std::optional<size_t>(1));
  EXPECT_EQ(s.CounterIndex("bp_0x401000"), std::optional<size_t>(2));
  EXPECT_TRUE(s.AddRule("page_faults - cycles > 0"));
  EXPECT_FALSE(s.AddCounter("page-faults", nullptr)) << "the same event twice: the name is taken";
  EXPECT_FALSE(s.AddCounter("no-such-event", nullptr));
}

TEST(PmuSpec, CountersThresholdsAndBuild) {
  ProgramSpec s;
  ASSERT_TRUE(s.AddCounter("f=page-faults@0x1000-0x2000/4", nullptr));
  ASSERT_TRUE(s.AddCounter("cs=context-switches", nullptr));
  EXPECT_FALSE(s.AddCounter("f=cs", nullptr));          // duplicate name
  EXPECT_FALSE(s.AddCounter("9x=page-faults", nullptr)); // bad name
  EXPECT_FALSE(s.AddCounter("nofunc", nullptr));
  ASSERT_TRUE(s.AddThreshold("f>=100/10"));
  EXPECT_FALSE(s.AddThreshold("zz>=1"));
  EXPECT_FALSE(s.AddThreshold("f>=0"));
  EXPECT_FALSE(s.AddThreshold("f>=5/0"));
  ASSERT_TRUE(s.AddRule("2*f - cs > 0"));
  ASSERT_TRUE(s.ArmBy("cs", 0));
  EXPECT_FALSE(s.ArmBy("cs", 1));
  tprof_pmu_program p = s.Build(TPROF_PMU_SCOPE_PROCESS, 42);
  EXPECT_EQ(p.scope, uint32_t(TPROF_PMU_SCOPE_PROCESS));
  EXPECT_EQ(p.pid, 42u);
  EXPECT_EQ(p.nr_counters, 2u);
  EXPECT_EQ(p.counters[0].flags, uint32_t(TPROF_PMU_CTR_RANGE));
  EXPECT_EQ(p.counters[0].range_start, 0x1000u);
  EXPECT_EQ(p.counters[0].nr_subranges, 4u);
  EXPECT_EQ(p.counters[0].threshold, 100u);
  EXPECT_EQ(p.counters[0].threshold_every, 10u);
  EXPECT_EQ(p.counters[1].armed_by, 1u);
  EXPECT_EQ(p.nr_rules, 1u);
  EXPECT_EQ(p.rules[0].op, uint32_t(TPROF_PMU_OP_GT));
  EXPECT_EQ(p.rules[0].nr_terms, 2u);
  EXPECT_EQ(p.rules[0].terms[0].multiplier, 2);
  EXPECT_EQ(p.rules[0].terms[1].counter, 1u);
  EXPECT_EQ(p.rules[0].terms[1].multiplier, -1);
  EXPECT_EQ(p.rules[0].rearm, uint32_t(TPROF_PMU_REARM_ONCE));
}

// Data ranges (ABI 1.11): "@data:RANGE" last, after an optional
// instruction range; /K cuts the data range; page-fault kinds only.
TEST(PmuSpec, DataRanges) {
  ProgramSpec s;
  ASSERT_TRUE(s.AddCounter("a=page-faults@data:0x10000+0x25000", nullptr));
  ASSERT_TRUE(s.AddCounter("b=minor-faults@0x401000-0x401100@data:0x40000-0x80000/64", nullptr));
  ASSERT_TRUE(s.AddCounter("c=major-faults@data:0x7f0000000000+0x1000000000", nullptr));  // 64 GiB
  EXPECT_EQ(s.AddCounter("d=context-switches@data:0x1000+16", nullptr).error().code().value(), EINVAL);
  EXPECT_EQ(s.AddCounter("d=alignment-faults@data:0x1000+16", nullptr).error().code().value(), EINVAL);
  EXPECT_EQ(s.AddCounter("d=cycles@data:0x1000+16", nullptr).error().code().value(), EINVAL);
  EXPECT_EQ(s.AddCounter("d=w:0x1000/8@data:0x1000+16", nullptr).error().code().value(), EINVAL);
  EXPECT_EQ(s.AddCounter("d=page-faults@data:0x2000-0x1000", nullptr).error().code().value(), EINVAL);
  EXPECT_EQ(s.AddCounter("d=page-faults@data:0x2000-0x2000", nullptr).error().code().value(), EINVAL);
  EXPECT_EQ(s.AddCounter("d=page-faults@data:0x1000+0", nullptr).error().code().value(), EINVAL);
  EXPECT_EQ(s.AddCounter("d=page-faults@data:0xfffffffffffff000+0x2000", nullptr).error().code().value(),
            EINVAL);  // wraps
  EXPECT_EQ(s.AddCounter("d=page-faults@0x1000-0x2000/4@data:0x1000+64", nullptr).error().code().value(),
            EINVAL);  // /K belongs to the data range
  EXPECT_EQ(s.AddCounter("d=page-faults@data:main", nullptr).error().code().value(), EINVAL);  // no symbols
  EXPECT_EQ(s.AddCounter("d=page-faults@data:", nullptr).error().code().value(), EINVAL);
  tprof_pmu_program p = s.Build(TPROF_PMU_SCOPE_PROCESS, 0);
  ASSERT_EQ(p.nr_counters, 3u);
  EXPECT_EQ(p.counters[0].flags, uint32_t(TPROF_PMU_CTR_DATA_RANGE));
  EXPECT_EQ(p.counters[0].addr, 0x10000u);
  EXPECT_EQ(p.counters[0].len, 0x25000u);
  EXPECT_EQ(p.counters[0].nr_subranges, 0u);
  EXPECT_EQ(p.counters[1].flags, uint32_t(TPROF_PMU_CTR_DATA_RANGE | TPROF_PMU_CTR_RANGE));
  EXPECT_EQ(p.counters[1].config, uint64_t(PERF_COUNT_SW_PAGE_FAULTS_MIN));
  EXPECT_EQ(p.counters[1].range_start, 0x401000u);
  EXPECT_EQ(p.counters[1].range_end, 0x401100u);
  EXPECT_EQ(p.counters[1].addr, 0x40000u);
  EXPECT_EQ(p.counters[1].len, 0x40000u);
  EXPECT_EQ(p.counters[1].nr_subranges, 64u);
  EXPECT_EQ(p.counters[2].len, 0x1000000000u);
}

// A data symbol stands for its whole size, whatever its length.
TEST(PmuSpec, DataRangeOfADataSymbolIsItsWholeSize) {
  auto syms = SymbolResolver::ForProcess(0);
  ASSERT_TRUE(syms) << syms.error().message();
  ProgramSpec s;
  ASSERT_TRUE(s.AddCounter("f=page-faults@data:tprof_pmu_spec_wide40", &*syms));
  ASSERT_TRUE(s.AddCounter("g=page-faults@tprof_pmu_spec_probe@data:tprof_pmu_spec_wide24/2", &*syms));
  tprof_pmu_program p = s.Build(TPROF_PMU_SCOPE_THREAD, 0);
  EXPECT_EQ(p.counters[0].addr, reinterpret_cast<uint64_t>(&tprof_pmu_spec_wide40));
  EXPECT_EQ(p.counters[0].len, 40u);
  EXPECT_EQ(p.counters[1].addr, reinterpret_cast<uint64_t>(&tprof_pmu_spec_wide24));
  EXPECT_EQ(p.counters[1].len, 24u);
  EXPECT_EQ(p.counters[1].range_start, reinterpret_cast<uint64_t>(&tprof_pmu_spec_probe));
  EXPECT_EQ(p.counters[1].nr_subranges, 2u);
}

TEST(PmuSpec, RuleGrammar) {
  ProgramSpec s;
  for (const char* c : {"a=page-faults", "b=cs", "c=migrations", "d=minor-faults", "e=major-faults"})
    ASSERT_TRUE(s.AddCounter(c, nullptr));
  EXPECT_TRUE(s.AddRule("3*a-b<0"));
  EXPECT_TRUE(s.AddRule("-a+2b>=-5"));
  EXPECT_TRUE(s.AddRule("a+a+a-b<=7", Rearm::kOnFalse));  // merged: 3*a - b
  tprof_pmu_program p = s.Build(TPROF_PMU_SCOPE_THREAD, 0);
  EXPECT_EQ(p.rules[1].terms[0].multiplier, -1);
  EXPECT_EQ(p.rules[1].terms[1].multiplier, 2);
  EXPECT_EQ(p.rules[1].constant, -5);
  EXPECT_EQ(p.rules[2].nr_terms, 2u);
  EXPECT_EQ(p.rules[2].terms[0].multiplier, 3);
  EXPECT_EQ(p.rules[2].rearm, uint32_t(TPROF_PMU_REARM_ON_FALSE));
  EXPECT_FALSE(s.AddRule("a+b+c+d+e>0"));     // 5 counters
  EXPECT_FALSE(s.AddRule("a-a>0"));           // nothing left
  EXPECT_FALSE(s.AddRule("99999999999*a>0")); // multiplier too large
  EXPECT_FALSE(s.AddRule("a+zz>0"));          // unknown counter
  EXPECT_FALSE(s.AddRule("a==1"));            // no such operator
  EXPECT_FALSE(s.AddRule("a>"));              // no constant
  EXPECT_FALSE(s.AddRule("a>b"));             // constant must be a number
  EXPECT_FALSE(s.AddRule(">0"));
}

}  // namespace
}  // namespace tprof::pmu
