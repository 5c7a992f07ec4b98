// SPDX-License-Identifier: GPL-2.0
/*
 * Table-driven stack walks (core/unwind_walk.c) over a fake stack and fake
 * tables: callers found through frameless frames, the frame-pointer
 * fallback where no row covers a pc, the PLT, link-register and signal-frame
 * rules, and
 * every stop rule (end, fault, bad frame, no return address, depth, budget).
 */
#include <kunit/test.h>
#include "core/unwind_walk.h"

#define UW_BASE 0x10000ULL
#define UW_WORDS 32

struct uw_env {
	u64 words[UW_WORDS];	/* word i is at UW_BASE + 8 * i */
	const struct tprof_unwind_row *rows;
	u32 nrows;
	unsigned int pair_reads;
};

static int uw_read(void *ctx, u64 addr, u64 *val)
{
	struct uw_env *e = ctx;

	if (addr < UW_BASE || addr + 8 > UW_BASE + 8 * UW_WORDS || (addr & 7))
		return -EFAULT;
	*val = e->words[(addr - UW_BASE) / 8];
	return 0;
}

/* As the sample handler reads a frame record: one access for both words. */
static int uw_read_pair(void *ctx, u64 addr, u64 val[2])
{
	struct uw_env *e = ctx;

	e->pair_reads++;
	return uw_read(ctx, addr, &val[0]) || uw_read(ctx, addr + 8, &val[1]) ? -EFAULT : 0;
}

static const struct tprof_unwind_row *uw_find(void *ctx, u64 pc)
{
	struct uw_env *e = ctx;

	return tprof_unwind_table_find(e->rows, e->nrows, pc);
}

static u64 uw_at(unsigned int word)
{
	return UW_BASE + 8 * word;
}

/* An x86-64-shaped row: CFA from sp, the return address just below it. */
#define UW_SP_ROW(at, off) { .start = (at), .cfa_offset = (off), .ra_offset = -8, \
			     .cfa_base = TPROF_UNWIND_CFA_SP }
/* After push rbp; mov rsp, rbp: CFA = fp + 16, the caller's fp at CFA - 16. */
#define UW_FP_ROW(at) { .start = (at), .cfa_offset = 16, .fp_offset = -16, .ra_offset = -8, \
			.cfa_base = TPROF_UNWIND_CFA_FP, .fp_rule = TPROF_UNWIND_FP_AT_CFA }
#define UW_ROW(at, base) { .start = (at), .cfa_base = (base) }

/*
 * A at 0x1000 (16-byte frame, no frame pointer), B at 0x2000 (32-byte frame,
 * none either), C at 0x3000 (a frame pointer), D at 0x4000 (the outermost).
 */
#define UW_CHAIN_ROWS							\
	UW_ROW(0x800, TPROF_UNWIND_CFA_NONE),				\
	UW_SP_ROW(0x1000, 16),						\
	UW_SP_ROW(0x2000, 32),						\
	UW_FP_ROW(0x3000),						\
	UW_ROW(0x4000, TPROF_UNWIND_CFA_END),				\
	UW_ROW(0x5000, TPROF_UNWIND_CFA_NONE)

static const struct tprof_unwind_row uw_rows[] = { UW_CHAIN_ROWS };

/* The stack of D -> C -> B -> A, interrupted in A at 0x1010 with sp at word 0. */
static void uw_stack(struct uw_env *e)
{
	memset(e, 0, sizeof(*e));
	e->rows = uw_rows;
	e->nrows = ARRAY_SIZE(uw_rows);
	e->words[1] = 0x2005;		/* A's return into B: CFA word 2 */
	e->words[5] = 0x3005;		/* B's return into C: CFA word 6 */
	e->words[8] = 0;		/* C's saved fp (D's): CFA word 10 */
	e->words[9] = 0x4005;		/* C's return into D */
}

static unsigned int uw_walk(struct uw_env *e, struct tprof_unwind_regs regs, unsigned int max,
			    u64 *out, u8 *how, enum tprof_unwind_stop *stop)
{
	struct tprof_unwind_walker w = {
		.regs = regs, .find = uw_find, .read = uw_read, .read_pair = uw_read_pair,
		.ctx = e, .out = out, .how = how, .max = max, .max_reads = 64,
	};

	return tprof_unwind_walk(&w, stop);
}

static const struct tprof_unwind_regs uw_in_a = {
	.pc = 0x1010, .sp = UW_BASE, .fp = UW_BASE + 8 * 8,
};

static void uw_walks_through_frameless_callers(struct kunit *test)
{
	struct uw_env e;
	enum tprof_unwind_stop stop;
	u64 out[8];
	u8 how[8];

	uw_stack(&e);
	KUNIT_ASSERT_EQ(test, uw_walk(&e, uw_in_a, 8, out, how, &stop), 3U);
	KUNIT_EXPECT_EQ(test, out[0], 0x2005ULL);
	KUNIT_EXPECT_EQ(test, out[1], 0x3005ULL);
	KUNIT_EXPECT_EQ(test, out[2], 0x4005ULL);
	KUNIT_EXPECT_EQ(test, how[0], (u8)TPROF_UNWOUND_CFI);
	KUNIT_EXPECT_EQ(test, how[2], (u8)TPROF_UNWOUND_CFI);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_END);
	/* C's saved {fp, ra}, adjacent below the CFA, is one read. */
	KUNIT_EXPECT_EQ(test, e.pair_reads, 1U);
}

static void uw_uses_frame_pointers_where_no_row_covers(struct kunit *test)
{
	struct tprof_unwind_regs r = { .pc = 0x900, .sp = uw_at(4), .fp = uw_at(8) };
	struct uw_env e;
	enum tprof_unwind_stop stop;
	u64 out[8];
	u8 how[8];

	/* In a NONE row: C's record at fp gives D; D's row ends the walk. */
	uw_stack(&e);
	KUNIT_ASSERT_EQ(test, uw_walk(&e, r, 8, out, how, &stop), 1U);
	KUNIT_EXPECT_EQ(test, out[0], 0x4005ULL);
	KUNIT_EXPECT_EQ(test, how[0], (u8)TPROF_UNWOUND_FP);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_END);
	/* Below every table (find gives NULL): the same. */
	r.pc = 0x10;
	KUNIT_EXPECT_EQ(test, uw_walk(&e, r, 8, out, how, &stop), 1U);
	/* A zero saved frame pointer is the chain's end. */
	e.words[9] = 0x50;
	KUNIT_EXPECT_EQ(test, uw_walk(&e, r, 8, out, how, &stop), 1U);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_END);
}

static void uw_plt_rows_follow_the_push(struct kunit *test)
{
	const struct tprof_unwind_row rows[] = {
		{ .start = 0x100, .cfa_offset = 8, .ra_offset = -8,
		  .cfa_base = TPROF_UNWIND_CFA_PLT },
		UW_ROW(0x200, TPROF_UNWIND_CFA_END),
	};
	struct tprof_unwind_regs r = { .pc = 0x106, .sp = uw_at(0) };
	struct uw_env e;
	enum tprof_unwind_stop stop;
	u64 out[4];

	memset(&e, 0, sizeof(e));
	e.rows = rows;
	e.nrows = ARRAY_SIZE(rows);
	e.words[0] = 0x205;	/* the return address before the push */
	e.words[1] = 0x209;	/* and after it */
	KUNIT_ASSERT_EQ(test, uw_walk(&e, r, 4, out, NULL, &stop), 1U);
	KUNIT_EXPECT_EQ(test, out[0], 0x205ULL);
	r.pc = 0x10b;		/* pc & 15 >= 11: past the push, 8 more */
	KUNIT_ASSERT_EQ(test, uw_walk(&e, r, 4, out, NULL, &stop), 1U);
	KUNIT_EXPECT_EQ(test, out[0], 0x209ULL);
}

static void uw_link_register_only_in_the_innermost_frame(struct kunit *test)
{
	const struct tprof_unwind_row rows[] = {
		{ .start = 0x100, .cfa_base = TPROF_UNWIND_CFA_SP,
		  .ra_rule = TPROF_UNWIND_RA_IN_LR },
		UW_SP_ROW(0x200, 16),
		UW_ROW(0x300, TPROF_UNWIND_CFA_END),
	};
	struct tprof_unwind_regs r = { .pc = 0x100, .sp = uw_at(0), .lr = 0x205 };
	struct uw_env e;
	enum tprof_unwind_stop stop;
	u64 out[4];

	memset(&e, 0, sizeof(e));
	e.rows = rows;
	e.nrows = ARRAY_SIZE(rows);
	e.words[1] = 0x305;
	/* A leaf that has not touched the stack: CFA = sp, the caller in lr. */
	KUNIT_ASSERT_EQ(test, uw_walk(&e, r, 4, out, NULL, &stop), 2U);
	KUNIT_EXPECT_EQ(test, out[0], 0x205ULL);
	KUNIT_EXPECT_EQ(test, out[1], 0x305ULL);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_END);
	/* A caller whose row says lr: lr is not its return address any more. */
	r.lr = 0x105;
	KUNIT_EXPECT_EQ(test, uw_walk(&e, r, 4, out, NULL, &stop), 1U);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_NO_RA);
}

/*
 * A handler H at 0x6000 (16-byte frame) returns into a signal trampoline at
 * 0x7000 whose SIGNAL row finds the interrupted registers in the frame at
 * the trampoline's sp + 8: sp, then pc and fp 8 and 16 bytes above it.
 */
/* uw_rows, then H. */
#define UW_ROWS_AND_HANDLER UW_CHAIN_ROWS, UW_SP_ROW(0x6000, 16)

static const struct tprof_unwind_row uw_signal_rows[] = {
	UW_ROWS_AND_HANDLER,
	{ .start = 0x7000, .cfa_offset = 8, .ra_offset = 8, .fp_offset = 16,
	  .cfa_base = TPROF_UNWIND_CFA_SIGNAL, .fp_rule = TPROF_UNWIND_FP_AT_CFA },
	UW_ROW(0x7100, TPROF_UNWIND_CFA_NONE),
};

static void uw_walks_through_signal_frames(struct kunit *test)
{
	struct tprof_unwind_regs in_h = { .pc = 0x6010, .sp = uw_at(20) };
	struct tprof_unwind_row rows[ARRAY_SIZE(uw_signal_rows)];
	struct uw_env e;
	enum tprof_unwind_stop stop;
	u64 out[8];
	u8 how[8];

	uw_stack(&e);
	e.rows = uw_signal_rows;
	e.nrows = ARRAY_SIZE(uw_signal_rows);
	e.words[21] = 0x7001;		/* H's return into the trampoline */
	e.words[23] = uw_at(2);		/* the interrupted sp (below: sigaltstack) */
	e.words[24] = 0x2000;		/* the interrupted pc: B's first instruction */
	e.words[25] = uw_at(8);		/* the interrupted fp */
	/*
	 * The interrupted pc is looked up as is (B's row), not as a return
	 * address (0x1fff: A's row would read the wrong words).
	 */
	KUNIT_ASSERT_EQ(test, uw_walk(&e, in_h, 8, out, how, &stop), 4U);
	KUNIT_EXPECT_EQ(test, out[0], 0x7001ULL);
	KUNIT_EXPECT_EQ(test, out[1], 0x2000ULL);
	KUNIT_EXPECT_EQ(test, out[2], 0x3005ULL);
	KUNIT_EXPECT_EQ(test, out[3], 0x4005ULL);
	KUNIT_EXPECT_EQ(test, how[1], (u8)TPROF_UNWOUND_CFI);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_END);
	/* A misaligned frame stops the walk, as does one outside the stack. */
	memcpy(rows, uw_signal_rows, sizeof(rows));
	rows[7].cfa_offset = 4;
	e.rows = rows;
	KUNIT_EXPECT_EQ(test, uw_walk(&e, in_h, 8, out, how, &stop), 1U);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_BAD_FRAME);
	rows[7].cfa_offset = 8 * UW_WORDS;
	KUNIT_EXPECT_EQ(test, uw_walk(&e, in_h, 8, out, how, &stop), 1U);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_FAULT);
}

/*
 * arm64's trampoline row (ra_rule IN_LR): the frame's lr, the word after
 * its fp, is the caller of an interrupted leaf (a row whose caller is lr).
 */
static void uw_signal_frames_give_the_interrupted_lr(struct kunit *test)
{
	static const struct tprof_unwind_row rows[] = {
		UW_ROWS_AND_HANDLER,
		{ .start = 0x7000, .cfa_offset = 24, .ra_offset = 8, .fp_offset = -16,
		  .cfa_base = TPROF_UNWIND_CFA_SIGNAL, .fp_rule = TPROF_UNWIND_FP_AT_CFA,
		  .ra_rule = TPROF_UNWIND_RA_IN_LR },
		UW_ROW(0x7100, TPROF_UNWIND_CFA_NONE),
		{ .start = 0x8000, .cfa_base = TPROF_UNWIND_CFA_SP,
		  .ra_rule = TPROF_UNWIND_RA_IN_LR },
		UW_ROW(0x8100, TPROF_UNWIND_CFA_NONE),
	};
	struct tprof_unwind_regs in_h = { .pc = 0x6010, .sp = uw_at(20) };
	struct uw_env e;
	enum tprof_unwind_stop stop;
	u64 out[8];
	u8 how[8];

	uw_stack(&e);
	e.rows = rows;
	e.nrows = ARRAY_SIZE(rows);
	e.words[21] = 0x7001;		/* H's return into the trampoline */
	e.words[23] = uw_at(8);		/* the interrupted fp (x29) */
	e.words[24] = 0x2005;		/* its lr (x30): the leaf's caller, B */
	e.words[25] = uw_at(2);		/* its sp */
	e.words[26] = 0x8010;		/* its pc, in the leaf */
	KUNIT_ASSERT_EQ(test, uw_walk(&e, in_h, 8, out, how, &stop), 5U);
	KUNIT_EXPECT_EQ(test, out[0], 0x7001ULL);
	KUNIT_EXPECT_EQ(test, out[1], 0x8010ULL);
	KUNIT_EXPECT_EQ(test, out[2], 0x2005ULL);
	KUNIT_EXPECT_EQ(test, out[3], 0x3005ULL);
	KUNIT_EXPECT_EQ(test, out[4], 0x4005ULL);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_END);
}

static void uw_stops_on_bad_frames(struct kunit *test)
{
	struct tprof_unwind_row rows[ARRAY_SIZE(uw_rows)];
	struct tprof_unwind_regs r = uw_in_a;
	struct uw_env e;
	enum tprof_unwind_stop stop;
	u64 out[8];

	memcpy(rows, uw_rows, sizeof(rows));
	uw_stack(&e);
	e.rows = rows;
	/* A CFA below sp. */
	rows[2].cfa_offset = -16;
	KUNIT_EXPECT_EQ(test, uw_walk(&e, r, 8, out, NULL, &stop), 1U);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_BAD_FRAME);
	/* A CFA equal to sp above the innermost frame: no progress, a loop. */
	rows[2].cfa_offset = 0;
	KUNIT_EXPECT_EQ(test, uw_walk(&e, r, 8, out, NULL, &stop), 1U);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_BAD_FRAME);
	/* Misaligned. */
	rows[2].cfa_offset = 36;
	KUNIT_EXPECT_EQ(test, uw_walk(&e, r, 8, out, NULL, &stop), 1U);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_BAD_FRAME);
	/* Off the stack: a fault. */
	rows[2].cfa_offset = 8 * UW_WORDS;
	KUNIT_EXPECT_EQ(test, uw_walk(&e, r, 8, out, NULL, &stop), 1U);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_FAULT);
	/* A zero return address. */
	memcpy(rows, uw_rows, sizeof(rows));
	e.words[5] = 0;
	KUNIT_EXPECT_EQ(test, uw_walk(&e, r, 8, out, NULL, &stop), 1U);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_NO_RA);
	/* B clobbers the frame pointer: C's CFA from fp cannot be had. */
	uw_stack(&e);
	e.rows = rows;
	rows[2].fp_rule = TPROF_UNWIND_FP_UNKNOWN;
	KUNIT_EXPECT_EQ(test, uw_walk(&e, r, 8, out, NULL, &stop), 2U);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_BAD_FRAME);
	/* Nor a frame-pointer step where C has no row. */
	rows[3].cfa_base = TPROF_UNWIND_CFA_NONE;
	KUNIT_EXPECT_EQ(test, uw_walk(&e, r, 8, out, NULL, &stop), 2U);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_BAD_FRAME);
	/* C's CFI in terms the table cannot state: B's caller is C, no further. */
	uw_stack(&e);
	e.rows = rows;
	memcpy(rows, uw_rows, sizeof(rows));
	rows[3] = (struct tprof_unwind_row)UW_ROW(0x3000, TPROF_UNWIND_CFA_UNSTATED);
	KUNIT_EXPECT_EQ(test, uw_walk(&e, r, 8, out, NULL, &stop), 2U);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_UNSTATED);
	KUNIT_EXPECT_EQ(test, tprof_unwind_table_check(rows, ARRAY_SIZE(rows)), 0);
}

static void uw_stops_at_depth_and_budget(struct kunit *test)
{
	struct tprof_unwind_walker w = {
		.regs = uw_in_a, .find = uw_find, .read = uw_read,
		.max = 8, .max_reads = 64,
	};
	struct uw_env e;
	enum tprof_unwind_stop stop;
	u64 out[8];

	uw_stack(&e);
	w.ctx = &e;
	w.out = out;
	KUNIT_EXPECT_EQ(test, uw_walk(&e, uw_in_a, 2, out, NULL, &stop), 2U);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_DEPTH);
	KUNIT_EXPECT_EQ(test, uw_walk(&e, uw_in_a, 3, out, NULL, &stop), 3U);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_END);
	/* A and B read a word each, C two (as a pair or not): with three, C's step stops. */
	w.max_reads = 3;
	KUNIT_EXPECT_EQ(test, tprof_unwind_walk(&w, &stop), 2U);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_BUDGET);
	w.max_reads = 4;
	KUNIT_EXPECT_EQ(test, tprof_unwind_walk(&w, &stop), 3U);
	w.read_pair = uw_read_pair;
	w.max_reads = 3;
	KUNIT_EXPECT_EQ(test, tprof_unwind_walk(&w, &stop), 2U);
	KUNIT_EXPECT_EQ(test, (int)stop, (int)TPROF_UNWIND_STOP_BUDGET);
	w.max_reads = 4;
	KUNIT_EXPECT_EQ(test, tprof_unwind_walk(&w, &stop), 3U);
	/* Pointer-authentication bits are stripped from return addresses. */
	e.words[1] = 0x2005 | (0x7fULL << 48);
	w.ra_strip = 0xffULL << 48;
	KUNIT_EXPECT_EQ(test, tprof_unwind_walk(&w, &stop), 3U);
	KUNIT_EXPECT_EQ(test, out[0], 0x2005ULL);
}

static void uw_checks_and_searches_tables(struct kunit *test)
{
	struct tprof_unwind_row rows[ARRAY_SIZE(uw_rows)];

	memcpy(rows, uw_rows, sizeof(rows));
	KUNIT_EXPECT_EQ(test, tprof_unwind_table_check(rows, ARRAY_SIZE(rows)), 0);
	KUNIT_EXPECT_EQ(test, tprof_unwind_table_check(rows, 0), 0);
	rows[2].start = rows[1].start;
	KUNIT_EXPECT_EQ(test, tprof_unwind_table_check(rows, ARRAY_SIZE(rows)), -EINVAL);
	memcpy(rows, uw_rows, sizeof(rows));
	rows[1].cfa_base = TPROF_UNWIND_CFA_MAX + 1;
	KUNIT_EXPECT_EQ(test, tprof_unwind_table_check(rows, ARRAY_SIZE(rows)), -EINVAL);
	memcpy(rows, uw_rows, sizeof(rows));
	rows[1].fp_rule = TPROF_UNWIND_FP_MAX + 1;
	KUNIT_EXPECT_EQ(test, tprof_unwind_table_check(rows, ARRAY_SIZE(rows)), -EINVAL);
	memcpy(rows, uw_rows, sizeof(rows));
	rows[1].ra_rule = TPROF_UNWIND_RA_MAX + 1;
	KUNIT_EXPECT_EQ(test, tprof_unwind_table_check(rows, ARRAY_SIZE(rows)), -EINVAL);
	memcpy(rows, uw_rows, sizeof(rows));
	rows[1].reserved = 1;
	KUNIT_EXPECT_EQ(test, tprof_unwind_table_check(rows, ARRAY_SIZE(rows)), -EINVAL);

	KUNIT_EXPECT_PTR_EQ(test, tprof_unwind_table_find(uw_rows, ARRAY_SIZE(uw_rows), 0x7ff),
			    (const struct tprof_unwind_row *)NULL);
	KUNIT_EXPECT_PTR_EQ(test, tprof_unwind_table_find(uw_rows, ARRAY_SIZE(uw_rows), 0x2000),
			    &uw_rows[2]);
	KUNIT_EXPECT_PTR_EQ(test, tprof_unwind_table_find(uw_rows, ARRAY_SIZE(uw_rows), 0x2fff),
			    &uw_rows[2]);
	KUNIT_EXPECT_PTR_EQ(test, tprof_unwind_table_find(uw_rows, ARRAY_SIZE(uw_rows), ~0ULL),
			    &uw_rows[5]);
	KUNIT_EXPECT_PTR_EQ(test, tprof_unwind_table_find(uw_rows, 0, 0x2000),
			    (const struct tprof_unwind_row *)NULL);
}

/* The index finds the row the whole table's search finds, at every edge. */
static void uw_index_finds_what_the_search_finds(struct kunit *test)
{
	static struct tprof_unwind_row rows[97];
	u32 first[ARRAY_SIZE(rows) / TPROF_UNWIND_INDEX_ROWS + 1];
	struct tprof_unwind_index ix;
	u32 i, n, at = 0x400, x = 1, shift;
	s64 d;

	/* Irregular gaps, one of them 1 MiB (a file's second text segment). */
	for (i = 0; i < ARRAY_SIZE(rows); i++) {
		x = x * 1103515245 + 12345;
		rows[i].start = at;
		at += 1 + (x >> 16) % 200 + (i == 40 ? 0x100000 : 0);
	}
	for (n = 1; n <= ARRAY_SIZE(rows); n += 16) {
		ix.nr = tprof_unwind_index_size(rows, n, &shift);
		KUNIT_ASSERT_GE(test, ix.nr, 1U);
		KUNIT_ASSERT_LE(test, ix.nr, n / TPROF_UNWIND_INDEX_ROWS + 1);
		ix.shift = shift;
		ix.first = first;
		tprof_unwind_index_fill(rows, n, &ix);
		KUNIT_EXPECT_PTR_EQ(test, tprof_unwind_index_find(rows, n, &ix, 0),
				    (const struct tprof_unwind_row *)NULL);
		KUNIT_EXPECT_PTR_EQ(test, tprof_unwind_index_find(rows, n, &ix, ~0ULL), &rows[n - 1]);
		for (i = 0; i < n; i++)
			for (d = -1; d <= 1; d++) {
				u64 a = rows[i].start + d;

				KUNIT_EXPECT_PTR_EQ(test, tprof_unwind_index_find(rows, n, &ix, a),
						    tprof_unwind_table_find(rows, n, a));
			}
	}
}

static struct kunit_case tprof_unwind_walk_cases[] = {
	KUNIT_CASE(uw_walks_through_frameless_callers),
	KUNIT_CASE(uw_uses_frame_pointers_where_no_row_covers),
	KUNIT_CASE(uw_plt_rows_follow_the_push),
	KUNIT_CASE(uw_link_register_only_in_the_innermost_frame),
	KUNIT_CASE(uw_walks_through_signal_frames),
	KUNIT_CASE(uw_signal_frames_give_the_interrupted_lr),
	KUNIT_CASE(uw_stops_on_bad_frames),
	KUNIT_CASE(uw_stops_at_depth_and_budget),
	KUNIT_CASE(uw_checks_and_searches_tables),
	KUNIT_CASE(uw_index_finds_what_the_search_finds),
	{}
};

static struct kunit_suite tprof_unwind_walk_suite = {
	.name = "tprof_unwind_walk",
	.test_cases = tprof_unwind_walk_cases,
};
kunit_test_suites(&tprof_unwind_walk_suite);
