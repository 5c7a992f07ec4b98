// SPDX-License-Identifier: GPL-2.0
/*
 * Frame-pointer walks (core/stack_walk.c) over a fake stack: the chain's
 * return addresses innermost first, and every stop rule (fault, zero,
 * misaligned, below the stack pointer, not increasing, depth).
 */
#include <kunit/test.h>
#include "core/stack_walk.h"

#define SW_BASE 0x10000ULL
#define SW_WORDS 64

struct sw_stack {
	u64 words[SW_WORDS];	/* word i is at SW_BASE + 8 * i */
};

static int sw_read(void *ctx, u64 addr, u64 rec[2])
{
	struct sw_stack *st = ctx;
	u64 i;

	if (addr < SW_BASE || addr + 16 > SW_BASE + 8 * SW_WORDS || (addr & 7))
		return -EFAULT;
	i = (addr - SW_BASE) / 8;
	rec[0] = st->words[i];
	rec[1] = st->words[i + 1];
	return 0;
}

/* A chain of @n frames 4 words apart from word 2, return address 0x100 + k. */
static void sw_chain(struct sw_stack *st, unsigned int n)
{
	unsigned int k;

	memset(st, 0, sizeof(*st));
	for (k = 0; k < n; k++) {
		u64 at = 2 + 4 * k;

		st->words[at] = k + 1 < n ? SW_BASE + 8 * (at + 4) : 0;
		st->words[at + 1] = 0x100 + k;
	}
}

static unsigned int sw_walk(struct sw_stack *st, u64 fp, unsigned int max,
			    u64 *out, bool *truncated)
{
	struct tprof_fp_walker w = {
		.fp = fp, .floor = SW_BASE, .align = 8, .out = out, .max = max,
	};

	return tprof_fp_walk(&w, sw_read, st, truncated);
}

static void sw_walks_the_whole_chain(struct kunit *test)
{
	struct sw_stack st;
	u64 out[16];
	bool trunc;

	sw_chain(&st, 5);
	KUNIT_ASSERT_EQ(test, sw_walk(&st, SW_BASE + 16, 16, out, &trunc), 5U);
	KUNIT_EXPECT_EQ(test, out[0], 0x100ULL);
	KUNIT_EXPECT_EQ(test, out[4], 0x104ULL);
	KUNIT_EXPECT_FALSE(test, trunc);
}

static void sw_stops_at_depth_and_says_so(struct kunit *test)
{
	struct sw_stack st;
	u64 out[16];
	bool trunc;

	sw_chain(&st, 5);
	KUNIT_EXPECT_EQ(test, sw_walk(&st, SW_BASE + 16, 3, out, &trunc), 3U);
	KUNIT_EXPECT_TRUE(test, trunc);
	KUNIT_EXPECT_EQ(test, sw_walk(&st, SW_BASE + 16, 5, out, &trunc), 5U);
	KUNIT_EXPECT_FALSE(test, trunc);
}

static void sw_stops_on_bad_frames(struct kunit *test)
{
	struct sw_stack st;
	u64 out[16];
	bool trunc;

	sw_chain(&st, 5);
	/* Pointing back down: a loop. */
	st.words[6] = SW_BASE + 16;
	KUNIT_EXPECT_EQ(test, sw_walk(&st, SW_BASE + 16, 16, out, &trunc), 2U);
	/* Misaligned. */
	sw_chain(&st, 5);
	st.words[6] = SW_BASE + 8 * 10 + 4;
	KUNIT_EXPECT_EQ(test, sw_walk(&st, SW_BASE + 16, 16, out, &trunc), 2U);
	/* Off the stack: a fault after the frame that points there. */
	sw_chain(&st, 5);
	st.words[6] = SW_BASE + 8 * SW_WORDS;
	KUNIT_EXPECT_EQ(test, sw_walk(&st, SW_BASE + 16, 16, out, &trunc), 2U);
	/* A zero return address ends the chain. */
	sw_chain(&st, 5);
	st.words[7] = 0;
	KUNIT_EXPECT_EQ(test, sw_walk(&st, SW_BASE + 16, 16, out, &trunc), 1U);
	/* A start below the stack pointer or zero: nothing. */
	KUNIT_EXPECT_EQ(test, sw_walk(&st, SW_BASE - 16, 16, out, &trunc), 0U);
	KUNIT_EXPECT_EQ(test, sw_walk(&st, 0, 16, out, &trunc), 0U);
}

static struct kunit_case tprof_stack_walk_cases[] = {
	KUNIT_CASE(sw_walks_the_whole_chain),
	KUNIT_CASE(sw_stops_at_depth_and_says_so),
	KUNIT_CASE(sw_stops_on_bad_frames),
	{}
};

static struct kunit_suite tprof_stack_walk_suite = {
	.name = "tprof_stack_walk",
	.test_cases = tprof_stack_walk_cases,
};
kunit_test_suites(&tprof_stack_walk_suite);
