// SPDX-License-Identifier: GPL-2.0
#include "stack_walk.h"

static bool tprof_fp_usable(u64 fp, u64 floor, u64 align)
{
	return fp && !(fp & (align - 1)) && fp >= floor && fp <= (u64)-16;
}

unsigned int tprof_fp_walk(const struct tprof_fp_walker *w, tprof_frame_read_fn read,
			   void *ctx, bool *truncated)
{
	u64 fp = w->fp, rec[2];
	unsigned int n = 0;

	*truncated = false;
	if (!tprof_fp_usable(fp, w->floor, w->align))
		return 0;
	while (!read(ctx, fp, rec) && rec[1]) {
		if (n == w->max) {
			*truncated = true;
			break;
		}
		w->out[n++] = rec[1];
		/* Strictly upwards: a corrupt chain cannot loop. */
		if (rec[0] <= fp || !tprof_fp_usable(rec[0], w->floor, w->align))
			break;
		fp = rec[0];
	}
	return n;
}
