// SPDX-License-Identifier: GPL-2.0
/*
 * tprof_thread_table: the accounting math and the nonzero-list rules of the
 * per-thread metrics table (kmod/core/thread_table.c).
 */
#include <kunit/test.h>
#include "core/thread_table.h"

struct tprof_tt_fixture {
	struct tprof_thread_table t;
};

/* A table of @capacity slots with 2 metrics, memory owned by the test. */
static struct tprof_thread_table *tprof_tt_new(struct kunit *test, u32 capacity)
{
	struct tprof_tt_fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	u32 hash = tprof_thread_table_hash_size(capacity);
	void *slots = kunit_kcalloc(test, capacity, sizeof(struct tprof_thread_slot), GFP_KERNEL);
	u64 *keys = kunit_kcalloc(test, hash, sizeof(u64), GFP_KERNEL);
	u32 *idx = kunit_kcalloc(test, hash, sizeof(u32), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	KUNIT_ASSERT_NOT_NULL(test, slots);
	KUNIT_ASSERT_NOT_NULL(test, keys);
	KUNIT_ASSERT_NOT_NULL(test, idx);
	tprof_thread_table_init(&f->t, slots, capacity, keys, idx, hash, 2);
	return &f->t;
}

static void tprof_tt_delta_accumulates_into_tcum(struct kunit *test)
{
	struct tprof_thread_table *t = tprof_tt_new(test, 4);
	struct tprof_thread_slot *s = tprof_thread_table_insert(t, 0x1000, 10, 10, "a");
	u64 d1[2] = { 100, 1 }, d2[2] = { 50, 1 };

	KUNIT_ASSERT_NOT_NULL(test, s);
	tprof_thread_table_account(t, s, d1);
	tprof_thread_table_account(t, s, d2);
	KUNIT_EXPECT_EQ(test, s->tcum[0], 150ULL);
	KUNIT_EXPECT_EQ(test, s->tcum[1], 2ULL);
	KUNIT_EXPECT_PTR_EQ(test, tprof_thread_table_lookup(t, 0x1000), s);
	KUNIT_EXPECT_PTR_EQ(test, tprof_thread_table_insert(t, 0x1000, 10, 10, "a"), s);
	KUNIT_EXPECT_EQ(test, t->used, 1U);
}

static void tprof_tt_listed_on_zero_to_nonzero_only(struct kunit *test)
{
	struct tprof_thread_table *t = tprof_tt_new(test, 4);
	struct tprof_thread_slot *a = tprof_thread_table_insert(t, 0x1000, 1, 1, "a");
	struct tprof_thread_slot *b = tprof_thread_table_insert(t, 0x2000, 2, 2, "b");
	u64 zero[2] = { 0, 0 }, one[2] = { 1, 0 };

	tprof_thread_table_account(t, a, zero);
	KUNIT_EXPECT_EQ_MSG(test, t->listed, 0U, "a zero delta must not list a thread");
	tprof_thread_table_account(t, b, one);
	tprof_thread_table_account(t, a, one);
	tprof_thread_table_account(t, b, one);
	KUNIT_EXPECT_EQ(test, t->listed, 2U);
	/* List order is first-nonzero order: b, then a. */
	KUNIT_EXPECT_EQ(test, t->list_head, tprof_thread_table_index(t, b));
	KUNIT_EXPECT_EQ(test, t->list_tail, tprof_thread_table_index(t, a));
}

static void tprof_tt_consume_zeroes_and_unlinks(struct kunit *test)
{
	struct tprof_thread_table *t = tprof_tt_new(test, 4);
	struct tprof_thread_slot *s = tprof_thread_table_insert(t, 0x1000, 1, 1, "a");
	u64 d[2] = { 100, 3 }, reported[2] = { 100, 3 }, later[2] = { 7, 0 };

	tprof_thread_table_account(t, s, d);
	tprof_thread_table_account(t, s, later);
	/* Reported 100/3 while 107/3 had accumulated: 7 stays, still listed. */
	tprof_thread_table_consume(t, s, reported);
	KUNIT_EXPECT_EQ(test, s->tcum[0], 7ULL);
	KUNIT_EXPECT_EQ(test, t->listed, 1U);
	tprof_thread_table_consume(t, s, later);
	KUNIT_EXPECT_EQ(test, s->tcum[0], 0ULL);
	KUNIT_EXPECT_EQ(test, t->listed, 0U);
	KUNIT_EXPECT_EQ(test, t->list_head, TPROF_TT_NONE);
	KUNIT_EXPECT_EQ_MSG(test, t->used, 1U, "a live thread keeps its slot");
}

static void tprof_tt_exited_reported_once_then_freed(struct kunit *test)
{
	struct tprof_thread_table *t = tprof_tt_new(test, 1);
	struct tprof_thread_slot *s = tprof_thread_table_insert(t, 0x1000, 5, 5, "old");
	struct tprof_thread_metrics rec;
	u64 old_identity = s->identity;

	tprof_thread_table_exit(t, s);
	KUNIT_EXPECT_NULL(test, tprof_thread_table_lookup(t, 0x1000));
	KUNIT_EXPECT_EQ_MSG(test, t->listed, 1U, "an exited thread is listed even at zero");
	tprof_thread_table_fill(t, s, &rec);
	KUNIT_EXPECT_EQ(test, rec.flags, (u32)TPROF_THREAD_EXITED);
	KUNIT_EXPECT_EQ(test, rec.tid, 5U);
	tprof_thread_table_consume(t, s, rec.values);
	KUNIT_EXPECT_EQ(test, t->listed, 0U);
	KUNIT_EXPECT_EQ(test, t->used, 0U);
	/* The slot (the only one) is free again, with a new identity. */
	s = tprof_thread_table_insert(t, 0x1000, 5, 5, "new");
	KUNIT_ASSERT_NOT_NULL(test, s);
	KUNIT_EXPECT_NE(test, s->identity, old_identity);
}

static void tprof_tt_overflow_is_counted(struct kunit *test)
{
	struct tprof_thread_table *t = tprof_tt_new(test, 2);

	KUNIT_EXPECT_NOT_NULL(test, tprof_thread_table_insert(t, 0x1000, 1, 1, "a"));
	KUNIT_EXPECT_NOT_NULL(test, tprof_thread_table_insert(t, 0x2000, 2, 2, "b"));
	KUNIT_EXPECT_NULL(test, tprof_thread_table_insert(t, 0x3000, 3, 3, "c"));
	KUNIT_EXPECT_NULL(test, tprof_thread_table_insert(t, 0x4000, 4, 4, "d"));
	KUNIT_EXPECT_EQ(test, t->untracked, 2ULL);
}

static void tprof_tt_churn_reuses_tombstones(struct kunit *test)
{
	struct tprof_thread_table *t = tprof_tt_new(test, 8);
	struct tprof_thread_metrics rec;
	u64 key;

	/* Many short-lived threads through a small table: nothing leaks. */
	for (key = 1; key <= 10000; key++) {
		struct tprof_thread_slot *s = tprof_thread_table_insert(t, key << 12, 1, 1, "x");

		KUNIT_ASSERT_NOT_NULL(test, s);
		tprof_thread_table_exit(t, s);
		tprof_thread_table_fill(t, s, &rec);
		tprof_thread_table_consume(t, s, rec.values);
	}
	KUNIT_EXPECT_EQ(test, t->used, 0U);
	KUNIT_EXPECT_EQ(test, t->untracked, 0ULL);
	KUNIT_EXPECT_NOT_NULL(test, tprof_thread_table_insert(t, 0x77000, 1, 1, "y"));
	KUNIT_EXPECT_NOT_NULL(test, tprof_thread_table_lookup(t, 0x77000));
}

static struct kunit_case tprof_thread_table_cases[] = {
	KUNIT_CASE(tprof_tt_delta_accumulates_into_tcum),
	KUNIT_CASE(tprof_tt_listed_on_zero_to_nonzero_only),
	KUNIT_CASE(tprof_tt_consume_zeroes_and_unlinks),
	KUNIT_CASE(tprof_tt_exited_reported_once_then_freed),
	KUNIT_CASE(tprof_tt_overflow_is_counted),
	KUNIT_CASE(tprof_tt_churn_reuses_tombstones),
	{}
};

static struct kunit_suite tprof_thread_table_suite = {
	.name = "tprof_thread_table",
	.test_cases = tprof_thread_table_cases,
};

kunit_test_suites(&tprof_thread_table_suite);
