// SPDX-License-Identifier: GPL-2.0
#include "unwind_walk.h"

int tprof_unwind_table_check(const struct tprof_unwind_row *rows, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		const struct tprof_unwind_row *r = &rows[i];

		if (i && r->start <= rows[i - 1].start)
			return -EINVAL;
		if (r->cfa_base > TPROF_UNWIND_CFA_MAX || r->fp_rule > TPROF_UNWIND_FP_MAX ||
		    r->ra_rule > TPROF_UNWIND_RA_MAX || r->reserved)
			return -EINVAL;
	}
	return 0;
}

const struct tprof_unwind_row *tprof_unwind_table_find(const struct tprof_unwind_row *rows,
							u32 n, u64 addr)
{
	u32 lo = 0, hi = n;

	/* The last row whose start is <= addr. */
	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (rows[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &rows[lo - 1] : NULL;
}

struct tprof_unwind_frame {
	struct tprof_unwind_regs r;
	bool innermost;		/* r.pc is where the task was interrupted */
	bool fp_known;		/* r.fp holds the frame pointer */
	unsigned int reads;
};

static int tprof_unwind_read(const struct tprof_unwind_walker *w, struct tprof_unwind_frame *f,
			     u64 addr, u64 *val, enum tprof_unwind_stop *stop)
{
	if (f->reads >= w->max_reads) {
		*stop = TPROF_UNWIND_STOP_BUDGET;
		return -1;
	}
	f->reads++;
	if (w->read(w->ctx, addr, val)) {
		*stop = TPROF_UNWIND_STOP_FAULT;
		return -1;
	}
	return 0;
}

/* The caller's registers by the frame-pointer record {fp, ra} at fp. */
static int tprof_unwind_fp_step(const struct tprof_unwind_walker *w,
				struct tprof_unwind_frame *f, struct tprof_unwind_regs *c,
				enum tprof_unwind_stop *stop)
{
	u64 fp = f->r.fp;

	if (f->fp_known && !fp) {
		*stop = TPROF_UNWIND_STOP_END;	/* the chain's conventional end */
		return -1;
	}
	if (!f->fp_known || (fp & 7) || fp < f->r.sp || fp > (u64)-16) {
		*stop = TPROF_UNWIND_STOP_BAD_FRAME;
		return -1;
	}
	if (tprof_unwind_read(w, f, fp, &c->fp, stop) || tprof_unwind_read(w, f, fp + 8, &c->pc, stop))
		return -1;
	c->sp = fp + 16;
	return 0;
}

/* Through a signal frame: the interrupted registers, as saved there. */
static int tprof_unwind_signal_step(const struct tprof_unwind_walker *w,
				    struct tprof_unwind_frame *f,
				    const struct tprof_unwind_row *row,
				    struct tprof_unwind_regs *c, enum tprof_unwind_stop *stop)
{
	u64 slot = f->r.sp + (s64)row->cfa_offset;

	if (slot & 7) {
		*stop = TPROF_UNWIND_STOP_BAD_FRAME;
		return -1;
	}
	if (tprof_unwind_read(w, f, slot, &c->sp, stop) ||
	    tprof_unwind_read(w, f, slot + (s64)row->ra_offset, &c->pc, stop) ||
	    tprof_unwind_read(w, f, slot + (s64)row->fp_offset, &c->fp, stop))
		return -1;
	c->lr = 0;
	return 0;
}

static int tprof_unwind_cfi_step(const struct tprof_unwind_walker *w,
				 struct tprof_unwind_frame *f, const struct tprof_unwind_row *row,
				 struct tprof_unwind_regs *c, bool *fp_known,
				 enum tprof_unwind_stop *stop)
{
	u64 cfa;

	/* Above the innermost frame, lr was overwritten by the call made. */
	if (row->ra_rule == TPROF_UNWIND_RA_IN_LR && !f->innermost) {
		*stop = TPROF_UNWIND_STOP_NO_RA;
		return -1;
	}
	switch (row->cfa_base) {
	case TPROF_UNWIND_CFA_SP:
		cfa = f->r.sp + (s64)row->cfa_offset;
		break;
	case TPROF_UNWIND_CFA_FP:
		if (!f->fp_known)
			goto bad;
		cfa = f->r.fp + (s64)row->cfa_offset;
		break;
	case TPROF_UNWIND_CFA_PLT:
		cfa = f->r.sp + (s64)row->cfa_offset + ((f->r.pc & 15) >= 11 ? 8 : 0);
		break;
	default:
		goto bad;
	}
	/*
	 * The CFA is the caller's sp: above this frame's, except in a frame
	 * that has not touched the stack, which only the innermost can be.
	 */
	if ((cfa & 7) || cfa < f->r.sp || (cfa == f->r.sp && !f->innermost))
		goto bad;
	if (row->ra_rule == TPROF_UNWIND_RA_IN_LR)
		c->pc = f->r.lr;
	else if (tprof_unwind_read(w, f, cfa + (s64)row->ra_offset, &c->pc, stop))
		return -1;
	*fp_known = f->fp_known;
	c->fp = f->r.fp;
	if (row->fp_rule == TPROF_UNWIND_FP_AT_CFA) {
		if (tprof_unwind_read(w, f, cfa + (s64)row->fp_offset, &c->fp, stop))
			return -1;
		*fp_known = true;
	} else if (row->fp_rule == TPROF_UNWIND_FP_UNKNOWN) {
		*fp_known = false;
	}
	c->sp = cfa;
	return 0;
bad:
	*stop = TPROF_UNWIND_STOP_BAD_FRAME;
	return -1;
}

unsigned int tprof_unwind_walk(const struct tprof_unwind_walker *w, enum tprof_unwind_stop *stop)
{
	struct tprof_unwind_frame f = {
		.r = w->regs, .innermost = true, .fp_known = true,
	};
	unsigned int n = 0;

	for (;;) {
		struct tprof_unwind_regs c = { 0 };
		const struct tprof_unwind_row *row;
		bool fp_known = true, interrupted = false;
		u8 by;

		/* A caller's pc is a return address: the call is just before it. */
		row = w->find(w->ctx, f.innermost ? f.r.pc : f.r.pc - 1);
		if (row && row->cfa_base == TPROF_UNWIND_CFA_END) {
			*stop = TPROF_UNWIND_STOP_END;
			break;
		}
		if (row && row->cfa_base == TPROF_UNWIND_CFA_UNSTATED) {
			*stop = TPROF_UNWIND_STOP_UNSTATED;
			break;
		}
		if (row && row->cfa_base == TPROF_UNWIND_CFA_SIGNAL) {
			if (tprof_unwind_signal_step(w, &f, row, &c, stop))
				break;
			/* Its pc is exact, as the innermost frame's is. */
			interrupted = true;
			by = TPROF_UNWOUND_CFI;
		} else if (!row || row->cfa_base == TPROF_UNWIND_CFA_NONE) {
			if (tprof_unwind_fp_step(w, &f, &c, stop))
				break;
			by = TPROF_UNWOUND_FP;
		} else {
			if (tprof_unwind_cfi_step(w, &f, row, &c, &fp_known, stop))
				break;
			by = TPROF_UNWOUND_CFI;
		}
		c.pc &= ~w->ra_strip;
		if (!c.pc) {
			*stop = TPROF_UNWIND_STOP_NO_RA;
			break;
		}
		if (n == w->max) {
			*stop = TPROF_UNWIND_STOP_DEPTH;
			break;
		}
		w->out[n] = c.pc;
		if (w->how)
			w->how[n] = by;
		n++;
		f.r = c;
		f.innermost = interrupted;
		f.fp_known = fp_known;
	}
	return n;
}
