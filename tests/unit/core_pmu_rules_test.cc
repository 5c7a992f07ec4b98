// PMU program rules (kmod/core/pmu_rules.c) on the host: evaluation against
// a 128-bit reference over random inputs, saturation at the s64 edges.
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

TEST(CorePmuRules, HugeValuesSaturateInsteadOfWrapping) {
  tprof_pmu_rule r{};
  r.nr_terms = 1;
  r.op = TPROF_PMU_OP_GT;
  r.terms[0].multiplier = TPROF_PMU_MAX_MULTIPLIER;
  u64 v[TPROF_PMU_MAX_COUNTERS] = {~0ULL};
  EXPECT_TRUE(tprof_pmu_rule_holds(&r, v));  // wraps negative without saturation
  r.terms[0].multiplier = -TPROF_PMU_MAX_MULTIPLIER;
  EXPECT_FALSE(tprof_pmu_rule_holds(&r, v));
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

}  // namespace
