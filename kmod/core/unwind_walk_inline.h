/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The body of tprof_unwind_walk(), for a caller whose walker has constant
 * find and read callbacks: inlined there, they become direct calls (or
 * inline code) instead of three indirect calls a frame, which were most of
 * the sample handler's per-frame cost (retpolines, prologues). Include it
 * in one .c file per caller; everyone else calls tprof_unwind_walk().
 */
#ifndef TPROF_CORE_UNWIND_WALK_INLINE_H
#define TPROF_CORE_UNWIND_WALK_INLINE_H

#include "unwind_walk.h"

struct tprof_unwind_frame {
	struct tprof_unwind_regs r;
	bool innermost;		/* r.pc is where the task was interrupted */
	bool fp_known;		/* r.fp holds the frame pointer */
	unsigned int reads;
};

static __always_inline int tprof_unwind_read(const struct tprof_unwind_walker *w,
					     struct tprof_unwind_frame *f, u64 addr, u64 *val,
					     enum tprof_unwind_stop *stop)
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

/* The words at @addr and @addr + 8: a frame record {fp, ra}. */
static __always_inline int tprof_unwind_read_pair(const struct tprof_unwind_walker *w,
						  struct tprof_unwind_frame *f, u64 addr,
						  u64 val[2], enum tprof_unwind_stop *stop)
{
	if (!w->read_pair)
		return tprof_unwind_read(w, f, addr, &val[0], stop) ||
		       tprof_unwind_read(w, f, addr + 8, &val[1], stop) ? -1 : 0;
	if (f->reads + 2 > w->max_reads) {
		*stop = TPROF_UNWIND_STOP_BUDGET;
		return -1;
	}
	f->reads += 2;
	if (w->read_pair(w->ctx, addr, val)) {
		*stop = TPROF_UNWIND_STOP_FAULT;
		return -1;
	}
	return 0;
}

/* The caller's registers by the frame-pointer record {fp, ra} at fp. */
static __always_inline int
tprof_unwind_fp_step(const struct tprof_unwind_walker *w,
		     struct tprof_unwind_frame *f, struct tprof_unwind_regs *c,
		     enum tprof_unwind_stop *stop)
{
	u64 fp = f->r.fp, rec[2];

	if (f->fp_known && !fp) {
		*stop = TPROF_UNWIND_STOP_END;	/* the chain's conventional end */
		return -1;
	}
	if (!f->fp_known || (fp & 7) || fp < f->r.sp || fp > (u64)-16) {
		*stop = TPROF_UNWIND_STOP_BAD_FRAME;
		return -1;
	}
	if (tprof_unwind_read_pair(w, f, fp, rec, stop))
		return -1;
	c->fp = rec[0];
	c->pc = rec[1];
	c->sp = fp + 16;
	return 0;
}

/* Through a signal frame: the interrupted registers, as saved there. */
static __always_inline int
tprof_unwind_signal_step(const struct tprof_unwind_walker *w,
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
	/* arm64: the interrupted frame may be a leaf whose caller is in lr. */
	c->lr = 0;
	if (row->ra_rule == TPROF_UNWIND_RA_IN_LR &&
	    tprof_unwind_read(w, f, slot + (s64)row->fp_offset + 8, &c->lr, stop))
		return -1;
	return 0;
}

static __always_inline int
tprof_unwind_cfi_step(const struct tprof_unwind_walker *w,
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
	*fp_known = f->fp_known;
	c->fp = f->r.fp;
	c->sp = cfa;
	/* The usual prologue's pair, {fp, ra} just below the CFA: one read. */
	if (row->ra_rule == TPROF_UNWIND_RA_AT_CFA && row->fp_rule == TPROF_UNWIND_FP_AT_CFA &&
	    row->ra_offset == row->fp_offset + 8) {
		u64 rec[2];

		if (tprof_unwind_read_pair(w, f, cfa + (s64)row->fp_offset, rec, stop))
			return -1;
		c->fp = rec[0];
		c->pc = rec[1];
		*fp_known = true;
		return 0;
	}
	if (row->ra_rule == TPROF_UNWIND_RA_IN_LR)
		c->pc = f->r.lr;
	else if (tprof_unwind_read(w, f, cfa + (s64)row->ra_offset, &c->pc, stop))
		return -1;
	if (row->fp_rule == TPROF_UNWIND_FP_AT_CFA) {
		if (tprof_unwind_read(w, f, cfa + (s64)row->fp_offset, &c->fp, stop))
			return -1;
		*fp_known = true;
	} else if (row->fp_rule == TPROF_UNWIND_FP_UNKNOWN) {
		*fp_known = false;
	}
	return 0;
bad:
	*stop = TPROF_UNWIND_STOP_BAD_FRAME;
	return -1;
}

static __always_inline unsigned int
tprof_unwind_walk_inline(const struct tprof_unwind_walker *w, enum tprof_unwind_stop *stop)
{
	struct tprof_unwind_frame f = {
		.r = w->regs, .innermost = true, .fp_known = true,
	};
	unsigned int n = 0;

	for (;;) {
		struct tprof_unwind_regs c;
		const struct tprof_unwind_row *row;
		bool fp_known = true, interrupted = false;
		u8 by;

		c.lr = 0;
		/* A caller's pc is a return address: the call is just before it. */
		row = w->find(w->ctx, f.innermost ? f.r.pc : f.r.pc - 1);
		/* The usual row first: a CFA from sp or fp. */
		if (likely(row && row->cfa_base >= TPROF_UNWIND_CFA_SP &&
			   row->cfa_base <= TPROF_UNWIND_CFA_PLT)) {
			if (tprof_unwind_cfi_step(w, &f, row, &c, &fp_known, stop))
				break;
			by = TPROF_UNWOUND_CFI;
		} else if (row && row->cfa_base == TPROF_UNWIND_CFA_END) {
			*stop = TPROF_UNWIND_STOP_END;
			break;
		} else if (row && row->cfa_base == TPROF_UNWIND_CFA_UNSTATED) {
			*stop = TPROF_UNWIND_STOP_UNSTATED;
			break;
		} else if (row && row->cfa_base == TPROF_UNWIND_CFA_SIGNAL) {
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
			*stop = TPROF_UNWIND_STOP_BAD_FRAME;	/* a base tprof_unwind_table_check() refused */
			break;
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

#endif /* TPROF_CORE_UNWIND_WALK_INLINE_H */
