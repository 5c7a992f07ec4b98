// SPDX-License-Identifier: GPL-2.0
/* tprof_pmu_rules: PMU program validation and rule evaluation in the kernel. */
#include <kunit/test.h>
#include <linux/slab.h>
#include "core/pmu_rules.h"

static struct tprof_pmu_program *tprof_pmu_one_counter(struct kunit *test)
{
	struct tprof_pmu_program *p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, p);
	p->scope = TPROF_PMU_SCOPE_PROCESS;
	p->nr_counters = 1;
	p->counters[0].kind = TPROF_PMU_EV_SOFTWARE;
	p->counters[0].config = PERF_COUNT_SW_PAGE_FAULTS;
	return p;
}

static void tprof_pmu_check_refuses_bad_programs(struct kunit *test)
{
	struct tprof_pmu_program *p = tprof_pmu_one_counter(test);

	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), 0);
	p->scope = TPROF_PMU_SCOPE_CPUS;		/* every CPU: no target */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), 0);
	p->pid = 1;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	p->scope = TPROF_PMU_SCOPE_CPUS + 1;
	p->pid = 0;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	p->scope = TPROF_PMU_SCOPE_PROCESS;
	p->counters[0].config = PERF_COUNT_SW_CPU_CLOCK;	/* a clock */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	p->counters[0].config = PERF_COUNT_SW_PAGE_FAULTS;
	p->counters[0].flags = TPROF_PMU_CTR_RANGE;	/* empty range */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	p->counters[0].range_start = 0x2000;
	p->counters[0].range_end = 0x1000;		/* inverted */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	p->counters[0].range_end = 0x3000;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), 0);
	p->counters[0].period = 2;			/* exact kinds: period 1 */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	p->counters[0].period = 0;
	p->counters[1].kind = TPROF_PMU_EV_SOFTWARE;	/* unused entry */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	p->counters[1].kind = 0;
	p->nr_counters = TPROF_PMU_MAX_COUNTERS + 1;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	p->nr_counters = 1;
	p->counters[0].kind = TPROF_PMU_EV_WATCHPOINT;
	p->counters[0].config = 0;
	p->counters[0].flags = TPROF_PMU_CTR_WATCH_WRITE;
	p->counters[0].range_start = p->counters[0].range_end = 0;
	p->counters[0].addr = 0x1004;
	p->counters[0].len = 8;				/* 2 pieces */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), 0);
	p->counters[0].len = 0;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	p->counters[0].len = TPROF_PMU_MAX_WATCH_LEN + 1;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	p->counters[0].len = 32;			/* 5 pieces */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	p->counters[0].addr = 0x1000;			/* 4 pieces */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), 0);
	p->counters[0].addr = ~0ULL - 3;		/* wraps */
	p->counters[0].len = 8;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	p->counters[0].addr = 0x1004;
	p->counters[0].len = 4;
	p->counters[0].kind = TPROF_PMU_EV_HARDWARE;	/* no period, addr set */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
}

static void tprof_pmu_check_secondaries_and_subranges(struct kunit *test)
{
	struct tprof_pmu_program *p = tprof_pmu_one_counter(test);
	struct tprof_pmu_counter *c = &p->counters[0];

	c->armed_by = 1;				/* no rule 0 */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	p->nr_rules = 1;
	p->rules[0].nr_terms = 1;
	p->rules[0].op = TPROF_PMU_OP_GE;
	p->rules[0].terms[0].multiplier = 1;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), 0);
	c->nr_subranges = 3;				/* no range */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	c->flags = TPROF_PMU_CTR_RANGE;
	c->range_start = 0x1000;
	c->range_end = 0x1002;				/* 2 bytes, 3 parts */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	c->range_end = 0x100a;				/* 10 bytes: 4, 4, 2 */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), 0);
	KUNIT_EXPECT_EQ(test, tprof_pmu_subrange_width(c), (u64)4);
	c->nr_subranges = 1;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	c->nr_subranges = TPROF_PMU_MAX_SUBRANGES + 1;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
}

/*
 * A data range (ABI 1.11): page faults only, [addr, addr + len) of any
 * nonzero length that does not wrap; subranges cut it.
 */
static void tprof_pmu_check_data_ranges(struct kunit *test)
{
	static const u64 faults[] = {
		PERF_COUNT_SW_PAGE_FAULTS, PERF_COUNT_SW_PAGE_FAULTS_MIN,
		PERF_COUNT_SW_PAGE_FAULTS_MAJ,
	};
	static const u64 no_address[] = {
		PERF_COUNT_SW_CONTEXT_SWITCHES, PERF_COUNT_SW_CPU_MIGRATIONS,
		PERF_COUNT_SW_ALIGNMENT_FAULTS, PERF_COUNT_SW_EMULATION_FAULTS,
	};
	static const u32 kinds[] = {
		TPROF_PMU_EV_TRACEPOINT, TPROF_PMU_EV_BREAKPOINT, TPROF_PMU_EV_WATCHPOINT,
	};
	struct tprof_pmu_program *p = tprof_pmu_one_counter(test);
	struct tprof_pmu_counter *c = &p->counters[0];
	size_t k;

	p->scope = TPROF_PMU_SCOPE_THREAD;
	c->flags = TPROF_PMU_CTR_DATA_RANGE;
	c->addr = 0x10000;
	c->len = 1ULL << 40;				/* no length limit */
	for (k = 0; k < ARRAY_SIZE(faults); k++) {
		c->config = faults[k];
		KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), 0);
	}
	for (k = 0; k < ARRAY_SIZE(no_address); k++) {
		c->config = no_address[k];		/* no data address */
		KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	}
	c->config = PERF_COUNT_SW_PAGE_FAULTS;
	c->len = 0;					/* empty */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	c->len = ~0ULL - 0x10000 + 1;			/* up to 2^64 exactly */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), 0);
	c->len++;					/* wraps: an inverted range */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	c->len = 4096;
	c->flags |= TPROF_PMU_CTR_RANGE;		/* both ranges */
	c->range_start = 0x400000;
	c->range_end = 0x400010;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), 0);
	c->nr_subranges = 16;	/* the data range's 4096 bytes, not the code's 16 */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), 0);
	KUNIT_EXPECT_EQ(test, tprof_pmu_subrange_base(c), (u64)0x10000);
	KUNIT_EXPECT_EQ(test, tprof_pmu_subrange_width(c), (u64)256);
	c->nr_subranges = 4097;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	c->nr_subranges = 0;
	c->flags = TPROF_PMU_CTR_DATA_RANGE | TPROF_PMU_CTR_WATCH_WRITE;
	c->range_start = c->range_end = 0;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	c->flags = TPROF_PMU_CTR_DATA_RANGE;
	for (k = 0; k < ARRAY_SIZE(kinds); k++) {
		c->kind = kinds[k];
		c->config = 0;
		KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	}
	c->kind = TPROF_PMU_EV_HARDWARE;
	c->config = PERF_COUNT_HW_INSTRUCTIONS;
	c->period = 1000;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	/* Without the flag addr and len stay refused for software events. */
	memset(c, 0, sizeof(*c));
	c->kind = TPROF_PMU_EV_SOFTWARE;
	c->config = PERF_COUNT_SW_PAGE_FAULTS;
	c->addr = 0x10000;
	c->len = 4096;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
}

/* A data range is half open, up to 2^64. */
static void tprof_pmu_in_data_range_is_half_open(struct kunit *test)
{
	struct tprof_pmu_counter c = { .addr = 0x10000, .len = 0x3000 };

	KUNIT_EXPECT_FALSE(test, tprof_pmu_in_data_range(&c, 0xffff));
	KUNIT_EXPECT_TRUE(test, tprof_pmu_in_data_range(&c, 0x10000));
	KUNIT_EXPECT_TRUE(test, tprof_pmu_in_data_range(&c, 0x12fff));
	KUNIT_EXPECT_FALSE(test, tprof_pmu_in_data_range(&c, 0x13000));
	KUNIT_EXPECT_FALSE(test, tprof_pmu_in_data_range(&c, 0));
	c.addr = 0xfffffffffffff000ULL;
	c.len = 0x1000;					/* ends at 2^64 */
	KUNIT_EXPECT_TRUE(test, tprof_pmu_in_data_range(&c, ~0ULL));
	KUNIT_EXPECT_FALSE(test, tprof_pmu_in_data_range(&c, 0));
}

static void tprof_pmu_check_refuses_bad_rules(struct kunit *test)
{
	struct tprof_pmu_program *p = tprof_pmu_one_counter(test);
	struct tprof_pmu_rule *r = &p->rules[0];

	p->nr_rules = 1;
	r->nr_terms = 1;
	r->op = TPROF_PMU_OP_GE;
	r->terms[0].multiplier = 3;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), 0);
	r->terms[0].counter = 1;			/* no such counter */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	r->terms[0].counter = 0;
	r->terms[0].multiplier = TPROF_PMU_MAX_MULTIPLIER + 1;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	r->terms[0].multiplier = 0;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	r->terms[0].multiplier = -TPROF_PMU_MAX_MULTIPLIER;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), 0);
	r->nr_terms = TPROF_PMU_MAX_TERMS + 1;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	r->nr_terms = 0;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	r->nr_terms = 1;
	r->op = 5;
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
	r->op = TPROF_PMU_OP_LT;
	r->terms[2].multiplier = 1;			/* beyond nr_terms */
	KUNIT_EXPECT_EQ(test, tprof_pmu_program_check(p), -EINVAL);
}

static void tprof_pmu_rules_saturate(struct kunit *test)
{
	struct tprof_pmu_rule r = { .nr_terms = 2, .op = TPROF_PMU_OP_GT };
	u64 v[TPROF_PMU_MAX_COUNTERS] = { 3, 10 };

	/* 3*a - b > 0 is CPI > 3 with a = instructions, b = cycles. */
	r.terms[0] = (struct tprof_pmu_term){ .counter = 0, .multiplier = 3 };
	r.terms[1] = (struct tprof_pmu_term){ .counter = 1, .multiplier = -1 };
	KUNIT_EXPECT_FALSE(test, tprof_pmu_rule_holds(&r, v));
	v[0] = 4;
	KUNIT_EXPECT_TRUE(test, tprof_pmu_rule_holds(&r, v));
	/* Huge values saturate instead of wrapping to the other sign. */
	v[0] = U64_MAX;
	v[1] = 0;
	KUNIT_EXPECT_TRUE(test, tprof_pmu_rule_holds(&r, v));
	v[0] = 0;
	v[1] = U64_MAX;
	KUNIT_EXPECT_FALSE(test, tprof_pmu_rule_holds(&r, v));
	KUNIT_EXPECT_EQ(test, tprof_pmu_rule_counters(&r), 3U);
	/* One term at the largest multiplier: saturates, never wraps negative. */
	r.nr_terms = 1;
	r.terms[0].multiplier = TPROF_PMU_MAX_MULTIPLIER;
	v[0] = U64_MAX;
	KUNIT_EXPECT_TRUE(test, tprof_pmu_rule_holds(&r, v));
	r.terms[0].multiplier = -TPROF_PMU_MAX_MULTIPLIER;
	KUNIT_EXPECT_FALSE(test, tprof_pmu_rule_holds(&r, v));
}

static struct kunit_case tprof_pmu_rules_cases[] = {
	KUNIT_CASE(tprof_pmu_check_refuses_bad_programs),
	KUNIT_CASE(tprof_pmu_check_data_ranges),
	KUNIT_CASE(tprof_pmu_in_data_range_is_half_open),
	KUNIT_CASE(tprof_pmu_check_refuses_bad_rules),
	KUNIT_CASE(tprof_pmu_check_secondaries_and_subranges),
	KUNIT_CASE(tprof_pmu_rules_saturate),
	{}
};

static struct kunit_suite tprof_pmu_rules_suite = {
	.name = "tprof_pmu_rules",
	.test_cases = tprof_pmu_rules_cases,
};

kunit_test_suites(&tprof_pmu_rules_suite);
