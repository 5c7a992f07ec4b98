/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a sample's stack walk (sampling_stack.c) and caller
 * (sampling_hot.c) need from the architecture, inline: they run in the
 * sample handler (hard IRQ or NMI).
 *
 * tprof_arch_read_frame_inatomic(ctx, addr, rec)
 *	One user frame record (saved frame pointer, return address) under
 *	pagefault_disable(), for a walk whose user access was checked: 0 or
 *	-EFAULT. A tprof_fp_walk() reader.
 * tprof_arch_kernel_frames(regs, out, max, truncated)
 *	The kernel's return addresses from a kernel-mode sample, innermost
 *	first.
 * tprof_arch_user_regs_walkable(uregs)
 *	Whether a walk understands these user registers (a 64-bit task).
 * tprof_arch_user_leaf(uregs, fp, ra)
 *	The frame pointer to walk from, and whether the leaf's return address
 *	(*ra) is known: then the check copy_from_user_nofault() makes besides
 *	the copy (nmi_uaccess_okay()) was made, and the walk may read inatomic.
 * tprof_arch_strip(frames, n, user)
 *	What is not the address (arm64's pointer authentication codes) off.
 * tprof_arch_sample_caller(regs, user, caller)
 *	The return address of the sampled function (TPROF_SAMPLING_CALLERS),
 *	best effort: true if found.
 * tprof_arch_user_unwind_regs(uregs, us)
 *	The registers a walk from a user stack copy starts from (struct
 *	tprof_rec_user_stack: pc, sp, fp, lr, pac_mask).
 */
#ifndef TPROF_ARCH_STACK_H
#define TPROF_ARCH_STACK_H

#if defined(CONFIG_X86_64)
#include "x86/stack.h"
#elif defined(CONFIG_ARM64)
#include "arm64/stack.h"
#else
/* Elsewhere samples carry no stack. */
#include <linux/ptrace.h>
#include <linux/uaccess.h>
#include <linux/tprof.h>

static inline int tprof_arch_read_frame_inatomic(void *ctx, u64 addr, u64 rec[2])
{
	return -EFAULT;
}

static inline unsigned int tprof_arch_kernel_frames(struct pt_regs *regs, u64 *out,
						    unsigned int max, bool *truncated)
{
	*truncated = false;
	return 0;
}

static inline bool tprof_arch_user_regs_walkable(struct pt_regs *uregs)
{
	return false;
}

static inline bool tprof_arch_user_leaf(struct pt_regs *uregs, u64 *fp, u64 *ra)
{
	*fp = 0;
	return false;
}

static inline void tprof_arch_strip(u64 *frames, unsigned int n, bool user)
{
}

static inline bool tprof_arch_sample_caller(struct pt_regs *regs, bool user, u64 *caller)
{
	return false;
}

static inline void tprof_arch_user_unwind_regs(struct pt_regs *uregs,
					       struct tprof_rec_user_stack *us)
{
}
#endif

#endif /* TPROF_ARCH_STACK_H */
