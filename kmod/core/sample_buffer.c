// SPDX-License-Identifier: GPL-2.0
/* The double-buffer protocol of one CPU; see sample_buffer.h. */
#include "sample_buffer.h"

void tprof_sbuf_init(struct tprof_sbuf_writer *w, struct tprof_buffer_ctl *ctl,
		     u8 *halves, u32 half_bytes)
{
	memset(w, 0, sizeof(*w));
	w->ctl = ctl;
	w->halves = halves;
	w->half_bytes = half_bytes;
	w->cur = 0;
}

static void tprof_sbuf_publish(struct tprof_sbuf_writer *w)
{
	struct tprof_buffer_ctl *ctl = w->ctl;
	u32 h = w->cur;

	WRITE_ONCE(ctl->used[h], w->off);
	WRITE_ONCE(ctl->seq[h], w->seq++);
	smp_store_release(&ctl->full[h], 1U);
	w->next = h ^ 1;
	w->cur = TPROF_SBUF_STALLED;
	w->off = 0;
}

/* Moves a stalled writer into its next half if the reader handed it back. */
static bool tprof_sbuf_resume(struct tprof_sbuf_writer *w, u64 now_ns)
{
	struct tprof_rec_lost *lost;

	if (w->cur != TPROF_SBUF_STALLED)
		return true;
	if (smp_load_acquire(&w->ctl->full[w->next]))
		return false;
	w->cur = w->next;
	w->off = 0;
	if (!w->pending_lost_samples && !w->pending_lost_records)
		return true;
	/* Tell the reader what it missed, first thing in the fresh half. */
	lost = (struct tprof_rec_lost *)(w->halves + (u64)w->cur * w->half_bytes);
	memset(lost, 0, sizeof(*lost));
	lost->hdr.type = TPROF_REC_LOST;
	lost->hdr.size = sizeof(*lost);
	lost->time_ns = now_ns;
	lost->lost_samples = w->pending_lost_samples;
	lost->lost_records = w->pending_lost_records;
	w->off = sizeof(*lost);
	w->pending_lost_samples = 0;
	w->pending_lost_records = 0;
	return true;
}

void *tprof_sbuf_reserve(struct tprof_sbuf_writer *w, u32 size, bool is_sample,
			 u64 now_ns)
{
	struct tprof_buffer_ctl *ctl = w->ctl;
	void *rec;

	if (is_sample)
		WRITE_ONCE(ctl->samples_taken, ctl->samples_taken + 1);
	if (size > w->half_bytes - sizeof(struct tprof_rec_lost))
		goto lost;	/* could never fit: drop it, counted */
	if (!tprof_sbuf_resume(w, now_ns))
		goto lost;
	if (w->off + size > w->half_bytes) {
		tprof_sbuf_publish(w);
		if (!tprof_sbuf_resume(w, now_ns))
			goto lost;
	}
	rec = w->halves + (u64)w->cur * w->half_bytes + w->off;
	w->off += size;
	return rec;

lost:
	if (is_sample) {
		w->pending_lost_samples++;
		WRITE_ONCE(ctl->lost_samples, ctl->lost_samples + 1);
	} else {
		w->pending_lost_records++;
		WRITE_ONCE(ctl->lost_records, ctl->lost_records + 1);
	}
	return NULL;
}

bool tprof_sbuf_flush(struct tprof_sbuf_writer *w, u64 now_ns)
{
	/* A stalled writer may owe a LOST record: deliver it if it can. */
	if (w->cur == TPROF_SBUF_STALLED && !tprof_sbuf_resume(w, now_ns))
		return false;
	if (w->off == 0)
		return false;
	tprof_sbuf_publish(w);
	tprof_sbuf_resume(w, now_ns);
	return true;
}

int tprof_sbuf_release(struct tprof_buffer_ctl *ctl, u32 half)
{
	if (half > 1 || !smp_load_acquire(&ctl->full[half]))
		return -EINVAL;
	smp_store_release(&ctl->full[half], 0U);
	return 0;
}
