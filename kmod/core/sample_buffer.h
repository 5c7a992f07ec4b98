/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The double-buffer protocol of one CPU (see "Sampling" in the uapi header):
 * pure logic, so KUnit and the host unit tests can drive every state.
 *
 * The writer (that CPU, IRQs off, never nested) fills one half. A record
 * that does not fit publishes the half (used, seq, then full = 1 with
 * release ordering) and moves to the other half if the reader handed it
 * back, else the writer stalls and counts what it drops until it is. The
 * first record of a half after drops is a TPROF_REC_LOST with their counts.
 * The reader (ioctl) hands a half back by clearing its full flag.
 */
#ifndef TPROF_CORE_SAMPLE_BUFFER_H
#define TPROF_CORE_SAMPLE_BUFFER_H

#include "core_env.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TPROF_SBUF_STALLED 2U	/* writer.cur: both halves with the reader */

struct tprof_sbuf_writer {
	struct tprof_buffer_ctl *ctl;	/* shared with the reader (mmap) */
	u8 *halves;			/* 2 * half_bytes */
	u32 half_bytes;
	u32 cur;			/* half being filled, or STALLED */
	u32 off;			/* bytes used in cur */
	u32 next;			/* when STALLED: the half to wait for */
	u64 seq;			/* next publication number */
	u64 pending_lost_samples;	/* dropped since the last LOST record */
	u64 pending_lost_records;
};

/* Sets up an empty writer on half 0. half_bytes is a multiple of 8, >= 64. */
void tprof_sbuf_init(struct tprof_sbuf_writer *w, struct tprof_buffer_ctl *ctl,
		     u8 *halves, u32 half_bytes);

/*
 * Room for one record of @size bytes (multiple of 8, header included), or
 * NULL when both halves are with the reader: then the record is counted as
 * lost (a sample if @is_sample, else another record). Samples are counted
 * as taken either way. The caller fills the record before the next call.
 * @now_ns stamps a LOST record written in front of it.
 */
void *tprof_sbuf_reserve(struct tprof_sbuf_writer *w, u32 size, bool is_sample,
			 u64 now_ns);

/*
 * Publishes the half being filled if it holds anything (stop, CPU going
 * offline). Returns true if a half was published.
 */
bool tprof_sbuf_flush(struct tprof_sbuf_writer *w, u64 now_ns);

/*
 * Reader side: hands @half back. -EINVAL if @half > 1 or it is not full.
 * Safe against the writer on another CPU (release/acquire on full[]).
 */
int tprof_sbuf_release(struct tprof_buffer_ctl *ctl, u32 half);

/* Record sizes are rounded up to 8 bytes. */
static inline u32 tprof_rec_size(u32 bytes)
{
	return (bytes + 7) & ~7U;
}

#ifdef __cplusplus
}
#endif

#endif /* TPROF_CORE_SAMPLE_BUFFER_H */
