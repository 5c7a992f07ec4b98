/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Counting windows (IPCOM000049216D) and profil(2): the pure index math and
 * the ADD argument rules. See the "Counting windows" section of the uapi
 * header for the semantics.
 */
#ifndef TPROF_CORE_WINDOW_MATH_H
#define TPROF_CORE_WINDOW_MATH_H

#include "core_env.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A window's geometry as checked by tprof_wm_check_add(). */
struct tprof_wm_geom {
	u32 kind;		/* enum tprof_window_kind */
	u32 block_shift;	/* address windows: log2(block_bytes) */
	u64 start;		/* address windows: start; profil: offset */
	u64 length;		/* address windows: bytes; profil: bufsiz */
	u32 scale;		/* profil */
	u32 cell_bytes;		/* 2 or 4 */
	u64 nr_cells;
	bool off;		/* profil scale 0 or 1 */
};

/*
 * Checks a WINDOW_ADD argument as copied from userspace (output fields are
 * ignored) and fills *g. 0 or -EINVAL. Rights and budgets are the caller's.
 */
int tprof_wm_check_add(const struct tprof_window_add *in, struct tprof_wm_geom *g);

/*
 * Address windows: true and *index if start <= pc < start + length, where
 * index = (pc - start) >> block_shift.
 */
bool tprof_wm_addr_index(const struct tprof_wm_geom *g, u64 pc, u64 *index);

/*
 * profil: the 16-bit cell index of pc, as glibc's profil_count computes it,
 * ((pc - offset) / 2) * scale / 65536 without overflow, or scale 2's
 * convention (cell 0 for every pc >= offset). false if pc < offset or the
 * scale turns profiling off; the result may be >= the number of cells.
 */
bool tprof_wm_profil_index16(u64 offset, u32 scale, u64 pc, u64 *index);

/* profil: true and *index if pc maps to one of the window's cells. */
bool tprof_wm_profil_index(const struct tprof_wm_geom *g, u64 pc, u64 *index);

/*
 * profil: the lowest pc whose 16-bit cell is @index16 (for reports), or
 * false if no pc maps there. Inverse of tprof_wm_profil_index16().
 */
bool tprof_wm_profil_cell_pc(u64 offset, u32 scale, u64 index16, u64 *pc);

/* The window's index of pc (either kind). */
bool tprof_wm_index(const struct tprof_wm_geom *g, u64 pc, u64 *index);

/*
 * A cell as userspace sees it: the kernel counts in 32 bits and profil's
 * 16-bit cells are the low half, so they wrap like profil's (65535 + 1 = 0).
 */
static inline u32 tprof_wm_cell_value(u32 raw, u32 cell_bytes)
{
	return cell_bytes == 2 ? (u32)(u16)raw : raw;
}

#ifdef __cplusplus
}
#endif

#endif /* TPROF_CORE_WINDOW_MATH_H */
