// SPDX-License-Identifier: GPL-2.0
#include "unwind_walk_inline.h"

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

u32 tprof_unwind_index_size(const struct tprof_unwind_row *rows, u32 n, u32 *shift)
{
	u64 span = n ? rows[n - 1].start - rows[0].start : 0;
	u32 want = n / TPROF_UNWIND_INDEX_ROWS + 1;

	/* The finest pages (from 64 bytes) whose count stays within want. */
	for (*shift = 6; *shift < 32 && (span >> *shift) + 1 > want; (*shift)++)
		;
	return (u32)(span >> *shift) + 1;
}

void tprof_unwind_index_fill(const struct tprof_unwind_row *rows, u32 n,
			     struct tprof_unwind_index *ix)
{
	u32 p, i = 0;

	ix->base = rows[0].start;
	for (p = 0; p < ix->nr; p++) {
		u64 at = (u64)ix->base + ((u64)p << ix->shift);

		while (i + 1 < n && rows[i + 1].start <= at)
			i++;
		ix->first[p] = i;
	}
}

const struct tprof_unwind_row *tprof_unwind_index_find(const struct tprof_unwind_row *rows,
							u32 n, const struct tprof_unwind_index *ix,
							u64 addr)
{
	u64 p;
	u32 lo, hi;

	if (!n || addr < ix->base)
		return NULL;
	p = (addr - ix->base) >> ix->shift;
	if (p >= ix->nr)
		p = ix->nr - 1;
	/* rows[lo] starts at or below addr; the answer is below hi. */
	lo = ix->first[p];
	hi = p + 1 < ix->nr ? ix->first[p + 1] + 1 : n;
	while (hi - lo > 1) {
		u32 mid = lo + (hi - lo) / 2;

		if (rows[mid].start <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return &rows[lo];
}

unsigned int tprof_unwind_walk(const struct tprof_unwind_walker *w, enum tprof_unwind_stop *stop)
{
	return tprof_unwind_walk_inline(w, stop);
}
