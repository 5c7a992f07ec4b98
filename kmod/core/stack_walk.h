/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Frame-pointer walks for sample stacks (struct tprof_rec_stack): the stop
 * rules, shared by the kernel part on arm64 and the user part everywhere.
 * x86-64 and AAPCS64 frame records have the same shape: {caller's frame
 * pointer, return address} at the frame pointer.
 */
#ifndef TPROF_CORE_STACK_WALK_H
#define TPROF_CORE_STACK_WALK_H

#include "core_env.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Reads the 16-byte frame record at @addr into rec[0] (next frame
 * pointer) and rec[1] (return address); 0 on success, nonzero on a fault.
 * Must not sleep (the sample handler calls it in IRQ/NMI context).
 */
typedef int (*tprof_frame_read_fn)(void *ctx, u64 addr, u64 rec[2]);

struct tprof_fp_walker {
	u64 fp;			/* the frame pointer to start from */
	u64 floor;		/* the stack pointer: a frame is never below it */
	u64 align;		/* required alignment of fp (power of two) */
	u64 *out;		/* return addresses, innermost first */
	unsigned int max;	/* room in out */
};

/*
 * Appends the return addresses of the frame-pointer chain. Stops at a
 * fault, a frame pointer that is zero, misaligned, below the floor or not
 * above the previous one (a loop or a stack switch), a zero return address,
 * or when @max entries are stored and a further frame exists (*truncated
 * set). Returns the entries stored.
 */
unsigned int tprof_fp_walk(const struct tprof_fp_walker *w, tprof_frame_read_fn read,
			   void *ctx, bool *truncated);

#ifdef __cplusplus
}
#endif

#endif /* TPROF_CORE_STACK_WALK_H */
