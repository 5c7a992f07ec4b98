// SPDX-License-Identifier: GPL-2.0
/*
 * tprof_thread_index: the key -> slot index of the per-thread metrics table
 * (kmod/core/thread_index.c), in the kernel.
 */
#include <kunit/test.h>
#include "core/thread_index.h"

static struct tprof_thread_index *tprof_ti_new(struct kunit *test, u32 capacity)
{
	struct tprof_thread_index *ti = kunit_kzalloc(test, sizeof(*ti), GFP_KERNEL);
	u32 hash = tprof_thread_index_hash_size(capacity);
	struct tprof_ti_entry *entries = kunit_kcalloc(test, hash, sizeof(*entries), GFP_KERNEL);
	u32 *next_free = kunit_kcalloc(test, capacity, sizeof(u32), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, ti);
	KUNIT_ASSERT_NOT_NULL(test, entries);
	KUNIT_ASSERT_NOT_NULL(test, next_free);
	tprof_thread_index_init(ti, entries, hash, next_free, capacity);
	return ti;
}

static void tprof_ti_insert_lookup_remove(struct kunit *test)
{
	struct tprof_thread_index *ti = tprof_ti_new(test, 4);
	bool existed;
	u32 a = tprof_thread_index_insert(ti, 0x1000, &existed);
	u32 b = tprof_thread_index_insert(ti, 0x2000, &existed);

	KUNIT_ASSERT_NE(test, a, TPROF_TI_NONE);
	KUNIT_ASSERT_NE(test, b, TPROF_TI_NONE);
	KUNIT_EXPECT_NE(test, a, b);
	KUNIT_EXPECT_EQ(test, tprof_thread_index_lookup(ti, 0x1000), a);
	KUNIT_EXPECT_EQ(test, tprof_thread_index_insert(ti, 0x1000, &existed), a);
	KUNIT_EXPECT_TRUE(test, existed);
	tprof_thread_index_remove(ti, 0x1000);
	KUNIT_EXPECT_EQ(test, tprof_thread_index_lookup(ti, 0x1000), TPROF_TI_NONE);
	KUNIT_EXPECT_EQ(test, tprof_thread_index_lookup(ti, 0x2000), b);
	KUNIT_EXPECT_EQ(test, ti->used, 2U);
	tprof_thread_index_release(ti, a);
	KUNIT_EXPECT_EQ(test, ti->used, 1U);
}

static void tprof_ti_full_table_refuses(struct kunit *test)
{
	struct tprof_thread_index *ti = tprof_ti_new(test, 2);
	bool existed;

	KUNIT_EXPECT_NE(test, tprof_thread_index_insert(ti, 0x1000, &existed), TPROF_TI_NONE);
	KUNIT_EXPECT_NE(test, tprof_thread_index_insert(ti, 0x2000, &existed), TPROF_TI_NONE);
	KUNIT_EXPECT_EQ(test, tprof_thread_index_insert(ti, 0x3000, &existed), TPROF_TI_NONE);
}

/* Churn far beyond the hash size: tombstones are reclaimed, lookups end. */
static void tprof_ti_churn_reclaims_tombstones(struct kunit *test)
{
	struct tprof_thread_index *ti = tprof_ti_new(test, 8);
	u64 key;

	for (key = 1; key < 20000; key++) {
		bool existed;
		u32 s = tprof_thread_index_insert(ti, key << 12, &existed);

		KUNIT_ASSERT_NE(test, s, TPROF_TI_NONE);
		tprof_thread_index_remove(ti, key << 12);
		tprof_thread_index_release(ti, s);
	}
	KUNIT_EXPECT_EQ(test, ti->used, 0U);
	KUNIT_EXPECT_EQ(test, ti->tombstones, 0U);
}

/* A rehash keeps every live key and drops every tombstone. */
static void tprof_ti_rehash_keeps_live_keys(struct kunit *test)
{
	struct tprof_thread_index *ti = tprof_ti_new(test, 16);
	u32 hash = ti->hash_mask + 1;
	struct tprof_ti_entry *fresh = kunit_kcalloc(test, hash, sizeof(*fresh), GFP_KERNEL);
	u32 slot[16];
	u64 key;

	KUNIT_ASSERT_NOT_NULL(test, fresh);
	for (key = 1; key <= 16; key++) {
		bool existed;

		slot[key - 1] = tprof_thread_index_insert(ti, key * 4096, &existed);
		KUNIT_ASSERT_NE(test, slot[key - 1], TPROF_TI_NONE);
	}
	for (key = 1; key <= 16; key += 2)
		tprof_thread_index_remove(ti, key * 4096);
	tprof_thread_index_rehash(ti, fresh);
	KUNIT_EXPECT_PTR_EQ(test, ti->hash, fresh);
	KUNIT_EXPECT_EQ(test, ti->tombstones, 0U);
	for (key = 1; key <= 16; key++)
		KUNIT_EXPECT_EQ(test, tprof_thread_index_lookup(ti, key * 4096),
				key % 2 ? TPROF_TI_NONE : slot[key - 1]);
}

/*
 * A rehash one entry per step, with an insert and a removal between every
 * two steps (the kernel drops table_lock between steps): the published
 * array holds exactly the live keys.
 */
static void tprof_ti_incremental_rehash_with_writers(struct kunit *test)
{
	struct tprof_thread_index *ti = tprof_ti_new(test, 64);
	u32 hash = ti->hash_mask + 1;
	struct tprof_ti_entry *fresh = kunit_kcalloc(test, hash, sizeof(*fresh), GFP_KERNEL);
	struct tprof_ti_entry *old = NULL;
	u32 slot[64];
	u64 key, next = 33;
	bool existed;

	KUNIT_ASSERT_NOT_NULL(test, fresh);
	for (key = 1; key <= 32; key++) {
		slot[key - 1] = tprof_thread_index_insert(ti, key * 4096, &existed);
		KUNIT_ASSERT_NE(test, slot[key - 1], TPROF_TI_NONE);
	}
	tprof_thread_index_rehash_begin(ti, fresh);
	KUNIT_EXPECT_FALSE(test, tprof_thread_index_needs_rehash(ti));
	for (key = 1; !old; key++) {
		old = tprof_thread_index_rehash_step(ti, 1);
		if (key <= 32 && key % 2) {	/* odd keys go ... */
			tprof_thread_index_remove(ti, key * 4096);
			tprof_thread_index_release(ti, slot[key - 1]);
		}
		if (next <= 64) {		/* ... new ones come */
			slot[next - 1] = tprof_thread_index_insert(ti, next * 4096, &existed);
			KUNIT_ASSERT_NE(test, slot[next - 1], TPROF_TI_NONE);
			next++;
		}
	}
	KUNIT_EXPECT_PTR_EQ(test, ti->hash, fresh);
	for (key = 1; key < next; key++)
		KUNIT_EXPECT_EQ(test, tprof_thread_index_lookup(ti, key * 4096),
				key <= 32 && key % 2 ? TPROF_TI_NONE : slot[key - 1]);
}

static void tprof_ti_capacity_is_bounded(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, tprof_thread_index_hash_size(TPROF_TI_MAX_CAPACITY),
			2 * TPROF_TI_MAX_CAPACITY);
	/* Larger requests are clamped, never overflow 2 * capacity. */
	KUNIT_EXPECT_EQ(test, tprof_thread_index_hash_size(0x7fffffffU),
			2 * TPROF_TI_MAX_CAPACITY);
	KUNIT_EXPECT_EQ(test, tprof_thread_index_hash_size(0xffffffffU),
			2 * TPROF_TI_MAX_CAPACITY);
}

static struct kunit_case tprof_ti_cases[] = {
	KUNIT_CASE(tprof_ti_insert_lookup_remove),
	KUNIT_CASE(tprof_ti_full_table_refuses),
	KUNIT_CASE(tprof_ti_churn_reclaims_tombstones),
	KUNIT_CASE(tprof_ti_rehash_keeps_live_keys),
	KUNIT_CASE(tprof_ti_incremental_rehash_with_writers),
	KUNIT_CASE(tprof_ti_capacity_is_bounded),
	{}
};

static struct kunit_suite tprof_ti_suite = {
	.name = "tprof_thread_index",
	.test_cases = tprof_ti_cases,
};

kunit_test_suites(&tprof_ti_suite);
