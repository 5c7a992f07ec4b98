// SPDX-License-Identifier: GPL-2.0
/* tprof_counters: the per-CPU counter sums and GET_INFO argument rules. */
#include <kunit/test.h>
#include "core/counters.h"

static void tprof_counters_add_sums_every_field(struct kunit *test)
{
	struct tprof_counters total = { .resv = { 7 } };
	struct tprof_counters cpu = { 1, 2, 3, 4, 5, { 9, 9, 9 } };

	tprof_counters_add(&total, &cpu);
	tprof_counters_add(&total, &cpu);
	KUNIT_EXPECT_EQ(test, total.context_switches, 2ULL);
	KUNIT_EXPECT_EQ(test, total.forks, 4ULL);
	KUNIT_EXPECT_EQ(test, total.execs, 6ULL);
	KUNIT_EXPECT_EQ(test, total.exits, 8ULL);
	KUNIT_EXPECT_EQ(test, total.frees, 10ULL);
	KUNIT_EXPECT_EQ_MSG(test, total.resv[0], 7ULL, "reserved fields must not be summed");
	KUNIT_EXPECT_EQ(test, total.resv[1], 0ULL);
}

struct tprof_info_input_case {
	const char *name;
	u64 cpu_stats;
	u32 cpu_stats_count;
	u32 pad;
	u64 resv_last;
	u32 abi_major;	/* an output field left over from an earlier call */
	int expected;
};

static const struct tprof_info_input_case tprof_info_input_cases[] = {
	{ "zeroed", 0, 0, 0, 0, 0, 0 },
	{ "array", 0x1000, 4, 0, 0, 0, 0 },
	{ "stale_outputs", 0, 0, 0, 0, 5, 0 },
	{ "count_without_pointer", 0, 4, 0, 0, 0, -EINVAL },
	{ "pointer_without_count", 0x1000, 0, 0, 0, 0, -EINVAL },
	{ "nonzero_pad", 0, 0, 1, 0, 0, -EINVAL },
	{ "nonzero_resv", 0, 0, 0, 1, 0, -EINVAL },
};

static void tprof_info_input_desc(const struct tprof_info_input_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(tprof_info_input, tprof_info_input_cases, tprof_info_input_desc);

static void tprof_counters_info_input_is_validated(struct kunit *test)
{
	const struct tprof_info_input_case *c = test->param_value;
	struct tprof_info in = {
		.cpu_stats = c->cpu_stats,
		.cpu_stats_count = c->cpu_stats_count,
		.__pad = c->pad,
		.abi_major = c->abi_major,
	};

	in.resv[ARRAY_SIZE(in.resv) - 1] = c->resv_last;
	KUNIT_EXPECT_EQ(test, tprof_info_check_input(&in), c->expected);
}

static void tprof_counters_cpu_stats_count_is_clamped(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, tprof_info_cpu_stats_count(0, 4), 0U);
	KUNIT_EXPECT_EQ(test, tprof_info_cpu_stats_count(3, 4), 3U);
	KUNIT_EXPECT_EQ(test, tprof_info_cpu_stats_count(4, 4), 4U);
	KUNIT_EXPECT_EQ(test, tprof_info_cpu_stats_count(U32_MAX, 4), 4U);
}

static struct kunit_case tprof_counters_cases[] = {
	KUNIT_CASE(tprof_counters_add_sums_every_field),
	KUNIT_CASE_PARAM(tprof_counters_info_input_is_validated, tprof_info_input_gen_params),
	KUNIT_CASE(tprof_counters_cpu_stats_count_is_clamped),
	{}
};

static struct kunit_suite tprof_counters_suite = {
	.name = "tprof_counters",
	.test_cases = tprof_counters_cases,
};

kunit_test_suites(&tprof_counters_suite);
