/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Table-driven stack walks (<linux/tprof_unwind.h>): each step finds the
 * row covering the frame's pc and applies its rules; where no table covers
 * the pc it takes one frame-pointer step instead, as tprof_fp_walk() does.
 * Pure logic: the caller supplies the row lookup and fault-safe reads, so
 * the same walk runs in the sample handler (IRQ/NMI context: the callbacks
 * must not sleep or take locks), in KUnit and in the host unit tests.
 */
#ifndef TPROF_CORE_UNWIND_WALK_H
#define TPROF_CORE_UNWIND_WALK_H

#include "core_env.h"
#include <linux/tprof_unwind.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The registers a walk starts from (lr: arm64's x30, 0 elsewhere). */
struct tprof_unwind_regs {
	u64 pc, sp, fp, lr;
};

/* Reads the 8-byte word at @addr; 0 on success, nonzero on a fault. */
typedef int (*tprof_word_read_fn)(void *ctx, u64 addr, u64 *val);
/* Reads the words at @addr and @addr + 8 likewise, as one access. */
typedef int (*tprof_pair_read_fn)(void *ctx, u64 addr, u64 val[2]);
/*
 * The row covering @pc in the table of the file mapped there (its load
 * bias applied), or NULL where no table covers it.
 */
typedef const struct tprof_unwind_row *(*tprof_row_find_fn)(void *ctx, u64 pc);

/* How a caller was found, per frame. */
enum tprof_unwound_by {
	TPROF_UNWOUND_CFI = 1,	/* a table row */
	TPROF_UNWOUND_FP = 2,	/* the frame-pointer record (no row) */
};

/* Why a walk ended. */
enum tprof_unwind_stop {
	TPROF_UNWIND_STOP_END,	     /* the outermost frame: the stack is whole */
	TPROF_UNWIND_STOP_FAULT,     /* a read failed */
	TPROF_UNWIND_STOP_BAD_FRAME, /* a CFA or frame pointer misaligned, below sp or not rising */
	TPROF_UNWIND_STOP_NO_RA,     /* a zero return address, or lr above the innermost frame */
	TPROF_UNWIND_STOP_DEPTH,     /* out is full and a caller remains */
	TPROF_UNWIND_STOP_BUDGET,    /* the reads allowed are spent */
	TPROF_UNWIND_STOP_UNSTATED,  /* a row of TPROF_UNWIND_CFA_UNSTATED */
};

struct tprof_unwind_walker {
	struct tprof_unwind_regs regs;	/* the interrupted frame's */
	tprof_row_find_fn find;
	tprof_word_read_fn read;
	tprof_pair_read_fn read_pair;	/* NULL: two reads */
	void *ctx;
	u64 ra_strip;		/* bits cleared from return addresses (arm64 PAC) */
	u64 *out;		/* return addresses, innermost first */
	u8 *how;		/* enum tprof_unwound_by per entry, or NULL */
	unsigned int max;	/* room in out (and how) */
	unsigned int max_reads;	/* the walk's budget of word reads */
};

/* 0 if @rows is a table the walk may use: sorted, rules in range. */
int tprof_unwind_table_check(const struct tprof_unwind_row *rows, u32 n);

/* The row covering @addr (file address), or NULL before the first. */
const struct tprof_unwind_row *tprof_unwind_table_find(const struct tprof_unwind_row *rows,
							u32 n, u64 addr);

/*
 * A table's page index, so that a lookup searches a handful of rows rather
 * than all of libc's ~30,000: first[p] is the row covering base + (p << shift),
 * so the row covering an address of page p is between first[p] and
 * first[p + 1]. About one entry per TPROF_UNWIND_INDEX_ROWS rows.
 */
#define TPROF_UNWIND_INDEX_ROWS 4
struct tprof_unwind_index {
	u32 base;	/* rows[0].start */
	u32 shift;
	u32 nr;		/* entries in first */
	u32 *first;
};

/* The entries @rows' index needs (at least 1, at most n / 4 + 1), and its shift. */
u32 tprof_unwind_index_size(const struct tprof_unwind_row *rows, u32 n, u32 *shift);
/* Fills ix->first (ix->nr entries, ix->shift as sized) for @rows, n >= 1. */
void tprof_unwind_index_fill(const struct tprof_unwind_row *rows, u32 n,
			     struct tprof_unwind_index *ix);
/* As tprof_unwind_table_find(), through the index. */
const struct tprof_unwind_row *tprof_unwind_index_find(const struct tprof_unwind_row *rows,
							u32 n, const struct tprof_unwind_index *ix,
							u64 addr);

/*
 * Appends the return addresses of the callers of w->regs.pc, stopping for
 * the reason stored in *stop. Returns the entries stored.
 */
unsigned int tprof_unwind_walk(const struct tprof_unwind_walker *w, enum tprof_unwind_stop *stop);

#ifdef __cplusplus
}
#endif

#endif /* TPROF_CORE_UNWIND_WALK_H */
