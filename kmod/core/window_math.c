// SPDX-License-Identifier: GPL-2.0
/* Counting windows and profil(2): index math (see core_env.h, window_math.h). */
#include "window_math.h"

static bool tprof_wm_pow2(u32 v)
{
	return v && !(v & (v - 1));
}

static u32 tprof_wm_log2(u32 v)
{
	u32 s = 0;

	while (v > 1) {
		v >>= 1;
		s++;
	}
	return s;
}

int tprof_wm_check_add(const struct tprof_window_add *in, struct tprof_wm_geom *g)
{
	memset(g, 0, sizeof(*g));
	if (in->__pad || in->resv[0] || in->resv[1])
		return -EINVAL;
	g->kind = in->kind;
	g->start = in->start;
	g->length = in->length;
	switch (in->kind) {
	case TPROF_WINDOW_KERNEL:
	case TPROF_WINDOW_PROCESS:
		if ((in->kind == TPROF_WINDOW_KERNEL && in->pid) || in->scale ||
		    in->flags || !tprof_wm_pow2(in->block_bytes) || !in->length ||
		    in->start + (in->length - 1) < in->start)
			return -EINVAL;
		g->block_shift = tprof_wm_log2(in->block_bytes);
		g->cell_bytes = 4;
		/* ceil(length / block) without overflow */
		g->nr_cells = (in->length >> g->block_shift) +
			      ((in->length & (in->block_bytes - 1)) ? 1 : 0);
		break;
	case TPROF_WINDOW_PROFIL:
		if (in->block_bytes || in->scale > TPROF_PROFIL_MAX_SCALE ||
		    (in->flags & ~TPROF_WINDOW_CELLS32))
			return -EINVAL;
		g->scale = in->scale;
		g->cell_bytes = (in->flags & TPROF_WINDOW_CELLS32) ? 4 : 2;
		g->nr_cells = in->length / g->cell_bytes;	/* like glibc's nsamples */
		g->off = in->scale < 2;
		break;
	default:
		return -EINVAL;
	}
	if (g->nr_cells > TPROF_WINDOW_MAX_CELLS)
		return -EINVAL;
	return 0;
}

bool tprof_wm_addr_index(const struct tprof_wm_geom *g, u64 pc, u64 *index)
{
	u64 d = pc - g->start;

	if (pc < g->start || d >= g->length)
		return false;
	*index = d >> g->block_shift;
	return true;
}

bool tprof_wm_profil_index16(u64 offset, u32 scale, u64 pc, u64 *index)
{
	u64 d;

	if (scale < 2 || scale > TPROF_PROFIL_MAX_SCALE || pc < offset)
		return false;
	if (scale == 2) {
		/* profil(2): 0x0002 maps (by convention) the whole region to cell 0. */
		*index = 0;
		return true;
	}
	d = (pc - offset) / 2;
	/* d * scale / 65536, exactly, in 64 bits: (h * 2^16 + l) * s >> 16. */
	if ((d >> 16) > (~0ULL >> 17))
		return false;	/* beyond any buffer: index > 2^47 */
	*index = (d >> 16) * scale + (((d & 0xffff) * scale) >> 16);
	return true;
}

bool tprof_wm_profil_index(const struct tprof_wm_geom *g, u64 pc, u64 *index)
{
	u64 i;

	if (g->off || !tprof_wm_profil_index16(g->start, g->scale, pc, &i))
		return false;
	if (g->cell_bytes == 4)
		i >>= 1;	/* the same bytes of buff, 4-byte counters */
	if (i >= g->nr_cells)
		return false;
	*index = i;
	return true;
}

bool tprof_wm_profil_cell_pc(u64 offset, u32 scale, u64 index16, u64 *pc)
{
	u64 q, d2;

	if (scale < 2 || scale > TPROF_PROFIL_MAX_SCALE)
		return false;
	if (scale == 2) {
		if (index16)
			return false;
		*pc = offset;
		return true;
	}
	/* smallest d with d * scale / 65536 >= index16: ceil(index16 * 2^16 / s) */
	if (index16 > (~0ULL >> 17))
		return false;
	q = index16 << 16;
	d2 = q / scale + (q % scale ? 1 : 0);
	/* scale <= 0x10000 steps by at most one cell per d: d2 hits index16 */
	if (((d2 >> 16) * scale + (((d2 & 0xffff) * scale) >> 16)) != index16)
		return false;
	if (d2 > (~0ULL - offset) / 2)
		return false;
	*pc = offset + 2 * d2;
	return true;
}

bool tprof_wm_index(const struct tprof_wm_geom *g, u64 pc, u64 *index)
{
	if (g->kind == TPROF_WINDOW_PROFIL)
		return tprof_wm_profil_index(g, pc, index);
	return tprof_wm_addr_index(g, pc, index);
}
