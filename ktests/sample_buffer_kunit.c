// SPDX-License-Identifier: GPL-2.0
/*
 * The per-CPU double-buffer protocol (core/sample_buffer.c): filling,
 * publishing, stalling with both halves full, exact loss accounting and the
 * LOST record, flush at stop, and the reader's release rules.
 */
#include <kunit/test.h>
#include "core/sample_buffer.h"

#define HALF 256U
#define REC 48U	/* a record size that does not divide HALF evenly */

struct sbuf_fixture {
	struct tprof_buffer_ctl ctl;
	u8 halves[2 * HALF];
	struct tprof_sbuf_writer w;
};

static struct sbuf_fixture *sbuf_new(struct kunit *test)
{
	struct sbuf_fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	tprof_sbuf_init(&f->w, &f->ctl, f->halves, HALF);
	return f;
}

static bool sbuf_write(struct sbuf_fixture *f, u32 tag)
{
	struct tprof_rec_header *h = tprof_sbuf_reserve(&f->w, REC, true, 7);

	if (!h)
		return false;
	h->type = TPROF_REC_SAMPLE;
	h->size = REC;
	((u32 *)h)[2] = tag;
	return true;
}

static void sbuf_fills_then_publishes_half0(struct kunit *test)
{
	struct sbuf_fixture *f = sbuf_new(test);
	u32 per_half = HALF / REC, i;

	for (i = 0; i < per_half; i++)
		KUNIT_ASSERT_TRUE(test, sbuf_write(f, i));
	KUNIT_EXPECT_EQ(test, f->ctl.full[0], 0U);
	/* The next record does not fit: half 0 is published, half 1 used. */
	KUNIT_ASSERT_TRUE(test, sbuf_write(f, per_half));
	KUNIT_EXPECT_EQ(test, f->ctl.full[0], 1U);
	KUNIT_EXPECT_EQ(test, f->ctl.used[0], per_half * REC);
	KUNIT_EXPECT_EQ(test, f->ctl.seq[0], 0ULL);
	KUNIT_EXPECT_EQ(test, f->w.cur, 1U);
	KUNIT_EXPECT_EQ(test, f->ctl.samples_taken, (u64)per_half + 1);
	KUNIT_EXPECT_EQ(test, f->ctl.lost_samples, 0ULL);
}

static void sbuf_both_full_counts_losses_exactly(struct kunit *test)
{
	struct sbuf_fixture *f = sbuf_new(test);
	u32 per_half = HALF / REC, written = 0, i;

	for (i = 0; i < 3 * per_half; i++)
		written += sbuf_write(f, i);
	/* Two halves' worth got in, the rest was counted as lost. */
	KUNIT_EXPECT_EQ(test, written, 2 * per_half);
	KUNIT_EXPECT_EQ(test, f->ctl.full[0], 1U);
	KUNIT_EXPECT_EQ(test, f->ctl.full[1], 1U);
	KUNIT_EXPECT_EQ(test, f->w.cur, TPROF_SBUF_STALLED);
	KUNIT_EXPECT_EQ(test, f->ctl.samples_taken, (u64)3 * per_half);
	KUNIT_EXPECT_EQ(test, f->ctl.lost_samples, (u64)per_half);
	KUNIT_EXPECT_EQ(test, written + f->ctl.lost_samples, f->ctl.samples_taken);
}

static void sbuf_release_resumes_with_a_lost_record(struct kunit *test)
{
	struct sbuf_fixture *f = sbuf_new(test);
	struct tprof_rec_lost *lost;
	u32 per_half = HALF / REC, i;

	for (i = 0; i < 2 * per_half + 5; i++)
		sbuf_write(f, i);
	KUNIT_ASSERT_EQ(test, f->ctl.lost_samples, 5ULL);
	/* The writer waits for half 0 (published first). */
	KUNIT_EXPECT_EQ(test, tprof_sbuf_release(&f->ctl, 1), 0);
	KUNIT_EXPECT_FALSE(test, sbuf_write(f, 100));
	KUNIT_EXPECT_EQ(test, tprof_sbuf_release(&f->ctl, 0), 0);
	KUNIT_EXPECT_TRUE(test, sbuf_write(f, 101));
	lost = (struct tprof_rec_lost *)f->halves;
	KUNIT_EXPECT_EQ(test, lost->hdr.type, (u32)TPROF_REC_LOST);
	KUNIT_EXPECT_EQ(test, lost->lost_samples, 6ULL);
	KUNIT_EXPECT_EQ(test, lost->lost_records, 0ULL);
	KUNIT_EXPECT_EQ(test, f->w.off, (u32)(sizeof(*lost) + REC));
}

static void sbuf_flush_publishes_partial_half(struct kunit *test)
{
	struct sbuf_fixture *f = sbuf_new(test);

	KUNIT_EXPECT_FALSE(test, tprof_sbuf_flush(&f->w, 1));	/* empty */
	sbuf_write(f, 1);
	KUNIT_EXPECT_TRUE(test, tprof_sbuf_flush(&f->w, 1));
	KUNIT_EXPECT_EQ(test, f->ctl.full[0], 1U);
	KUNIT_EXPECT_EQ(test, f->ctl.used[0], REC);
	KUNIT_EXPECT_EQ(test, f->w.cur, 1U);
	KUNIT_EXPECT_FALSE(test, tprof_sbuf_flush(&f->w, 1));
}

static void sbuf_release_rules(struct kunit *test)
{
	struct sbuf_fixture *f = sbuf_new(test);

	KUNIT_EXPECT_EQ(test, tprof_sbuf_release(&f->ctl, 0), -EINVAL);	/* not full */
	KUNIT_EXPECT_EQ(test, tprof_sbuf_release(&f->ctl, 2), -EINVAL);
	sbuf_write(f, 1);
	tprof_sbuf_flush(&f->w, 1);
	KUNIT_EXPECT_EQ(test, tprof_sbuf_release(&f->ctl, 0), 0);
	KUNIT_EXPECT_EQ(test, tprof_sbuf_release(&f->ctl, 0), -EINVAL);	/* twice */
}

static void sbuf_oversized_record_is_lost(struct kunit *test)
{
	struct sbuf_fixture *f = sbuf_new(test);

	KUNIT_EXPECT_NULL(test, tprof_sbuf_reserve(&f->w, HALF, false, 1));
	KUNIT_EXPECT_EQ(test, f->ctl.lost_records, 1ULL);
	KUNIT_EXPECT_EQ(test, f->ctl.samples_taken, 0ULL);
}

static struct kunit_case tprof_sample_buffer_cases[] = {
	KUNIT_CASE(sbuf_fills_then_publishes_half0),
	KUNIT_CASE(sbuf_both_full_counts_losses_exactly),
	KUNIT_CASE(sbuf_release_resumes_with_a_lost_record),
	KUNIT_CASE(sbuf_flush_publishes_partial_half),
	KUNIT_CASE(sbuf_release_rules),
	KUNIT_CASE(sbuf_oversized_record_is_lost),
	{}
};

static struct kunit_suite tprof_sample_buffer_suite = {
	.name = "tprof_sample_buffer",
	.test_cases = tprof_sample_buffer_cases,
};
kunit_test_suites(&tprof_sample_buffer_suite);
