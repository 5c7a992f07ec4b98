// PMU program rules (kmod/core/pmu_rules.c) on the host, beyond
// ktests/pmu_rules_kunit.c's cases (which run here too): evaluation against
// a 128-bit reference over random inputs, a maximal program, counts only.
#include <gtest/gtest.h>

#include <random>

#include "core/pmu_rules.h"

namespace {

bool Reference(const tprof_pmu_rule& r, const u64* v) {
  __int128 sum = 0;
  for (uint32_t i = 0; i < r.nr_terms; i++) {
    __int128 x = v[r.terms[i].counter];
    if (x > INT64_MAX) x = INT64_MAX;  // values beyond s64 count as S64_MAX
    sum += x * r.terms[i].multiplier;
  }
  switch (r.op) {
    case TPROF_PMU_OP_GT: return sum > r.constant;
    case TPROF_PMU_OP_GE: return sum >= r.constant;
    case TPROF_PMU_OP_LT: return sum < r.constant;
    case TPROF_PMU_OP_LE: return sum <= r.constant;
  }
  return false;
}

TEST(CorePmuRules, SmallValuesMatchExactArithmetic) {
  std::mt19937_64 rng(42);
  for (int n = 0; n < 100000; n++) {
    tprof_pmu_rule r{};
    u64 v[TPROF_PMU_MAX_COUNTERS];
    for (auto& x : v) x = rng() % 1000000;
    r.nr_terms = 1 + rng() % TPROF_PMU_MAX_TERMS;
    r.op = TPROF_PMU_OP_GT + rng() % 4;
    r.constant = int64_t(rng() % 2000000) - 1000000;
    for (uint32_t i = 0; i < r.nr_terms; i++) {
      r.terms[i].counter = rng() % TPROF_PMU_MAX_COUNTERS;
      r.terms[i].multiplier = int64_t(rng() % 21) - 10;
    }
    ASSERT_EQ(tprof_pmu_rule_holds(&r, v), Reference(r, v)) << n;
  }
}

TEST(CorePmuRules, CheckAcceptsAMaximalProgram) {
  tprof_pmu_program p{};
  p.scope = TPROF_PMU_SCOPE_THREAD;
  p.nr_counters = TPROF_PMU_MAX_COUNTERS;
  p.nr_rules = TPROF_PMU_MAX_RULES;
  for (auto& c : p.counters) {
    c.kind = TPROF_PMU_EV_HARDWARE;
    c.config = PERF_COUNT_HW_INSTRUCTIONS;
    c.period = 1000;
    c.threshold = 5;
    c.threshold_every = 5;
  }
  for (auto& r : p.rules) {
    r.nr_terms = TPROF_PMU_MAX_TERMS;
    r.op = TPROF_PMU_OP_LE;
    r.rearm = TPROF_PMU_REARM_ON_FALSE;
    for (uint32_t i = 0; i < TPROF_PMU_MAX_TERMS; i++) r.terms[i] = {i, 0, 1};
  }
  EXPECT_EQ(tprof_pmu_program_check(&p), 0);
  p.counters[3].threshold = 0;  // every without a threshold
  EXPECT_EQ(tprof_pmu_program_check(&p), -EINVAL);
  p.counters[3].threshold = 1;
  p.scope = 4;
  EXPECT_EQ(tprof_pmu_program_check(&p), -EINVAL);
  p.scope = TPROF_PMU_SCOPE_CPUS;  // every CPU: no pid
  EXPECT_EQ(tprof_pmu_program_check(&p), 0);
  p.pid = 1;
  EXPECT_EQ(tprof_pmu_program_check(&p), -EINVAL);
  p.scope = TPROF_PMU_SCOPE_PROCESS;
  EXPECT_EQ(tprof_pmu_program_check(&p), 0);  // a pid is a process's
  p.flags = 1;
  EXPECT_EQ(tprof_pmu_program_check(&p), -EINVAL);
}

// Counts only (ABI 1.14): perf's count, read; the clocks allowed, period
// 0, nothing that needs single events; any scope (CPUS from 1.15).
TEST(CorePmuRules, CountsOnlyCheck) {
  tprof_pmu_program p{};
  p.scope = TPROF_PMU_SCOPE_PROCESS;
  p.nr_counters = 1;
  tprof_pmu_counter& c = p.counters[0];
  c.flags = TPROF_PMU_CTR_COUNT;
  c.kind = TPROF_PMU_EV_SOFTWARE;
  for (u64 config : {PERF_COUNT_SW_TASK_CLOCK, PERF_COUNT_SW_CPU_CLOCK, PERF_COUNT_SW_PAGE_FAULTS,
                     PERF_COUNT_SW_CONTEXT_SWITCHES}) {
    c.config = config;
    EXPECT_EQ(tprof_pmu_program_check(&p), 0) << config;
  }
  c.flags = 0;
  c.config = PERF_COUNT_SW_TASK_CLOCK;
  EXPECT_EQ(tprof_pmu_program_check(&p), -EINVAL) << "a clock is counted, never per event";
  c.flags = TPROF_PMU_CTR_COUNT;
  c.kind = TPROF_PMU_EV_HARDWARE;
  c.config = PERF_COUNT_HW_INSTRUCTIONS;
  EXPECT_EQ(tprof_pmu_program_check(&p), 0) << "no period";
  c.period = 100000;
  EXPECT_EQ(tprof_pmu_program_check(&p), -EINVAL) << "a period with counts only";
  c.period = 0;
  c.threshold = 10;
  EXPECT_EQ(tprof_pmu_program_check(&p), -EINVAL) << "a threshold needs the events";
  c.threshold = 0;
  c.flags |= TPROF_PMU_CTR_RANGE;
  c.range_start = 0x400000;
  c.range_end = 0x400010;
  EXPECT_EQ(tprof_pmu_program_check(&p), -EINVAL) << "a range needs the events";
  c.flags = TPROF_PMU_CTR_COUNT;
  c.range_start = c.range_end = 0;
  p.scope = TPROF_PMU_SCOPE_CPUS;
  p.pid = 0;
  EXPECT_EQ(tprof_pmu_program_check(&p), 0) << "scope CPUS (1.15: summed over the CPUs)";
  p.scope = TPROF_PMU_SCOPE_THREAD;
  EXPECT_EQ(tprof_pmu_program_check(&p), 0);
  // A rule naming it: refused; naming another counter: fine.
  p.nr_counters = 2;
  p.counters[1].kind = TPROF_PMU_EV_SOFTWARE;
  p.counters[1].config = PERF_COUNT_SW_PAGE_FAULTS;
  p.nr_rules = 1;
  p.rules[0].nr_terms = 1;
  p.rules[0].op = TPROF_PMU_OP_GE;
  p.rules[0].rearm = TPROF_PMU_REARM_ONCE;
  p.rules[0].constant = 1;
  p.rules[0].terms[0] = {1, 0, 1};
  EXPECT_EQ(tprof_pmu_program_check(&p), 0);
  p.rules[0].terms[0] = {0, 0, 1};
  EXPECT_EQ(tprof_pmu_program_check(&p), -EINVAL);
  p.nr_rules = 0;
  p.rules[0] = {};
  for (u32 kind : {TPROF_PMU_EV_BREAKPOINT, TPROF_PMU_EV_WATCHPOINT}) {
    c.kind = kind;
    c.config = 0;
    c.addr = 0x400000;
    c.len = kind == TPROF_PMU_EV_WATCHPOINT ? 8 : 0;
    if (kind == TPROF_PMU_EV_WATCHPOINT) c.flags |= TPROF_PMU_CTR_WATCH_WRITE;
    EXPECT_EQ(tprof_pmu_program_check(&p), -EINVAL) << kind;
  }
}

}  // namespace
