/* SPDX-License-Identifier: GPL-2.0 */
/*
 * arm64's part of a sample's stack (see ../stack.h): frame records that
 * x29 points at, in the kernel and in user space; the leaf's return
 * address is x30. Return addresses may carry pointer authentication codes.
 */
#ifndef TPROF_ARCH_ARM64_STACK_H
#define TPROF_ARCH_ARM64_STACK_H

#include <linux/ptrace.h>
#include <linux/uaccess.h>
#include <linux/tprof.h>
#include "../../compat.h"
#include "../../core/stack_walk.h"

static inline int tprof_arch_read_frame_inatomic(void *ctx, u64 addr, u64 rec[2])
{
	const u64 __user *p = (const u64 __user *)(unsigned long)addr;

	if (!access_ok(p, 2 * sizeof(u64)))
		return -EFAULT;
	return __copy_from_user_inatomic(rec, p, 2 * sizeof(u64)) ? -EFAULT : 0;
}

static inline int tprof_arch_read_word_inatomic(u64 addr, u64 *val)
{
	const u64 __user *p = (const u64 __user *)(unsigned long)addr;

	if (!access_ok(p, sizeof(u64)))
		return -EFAULT;
	return __copy_from_user_inatomic(val, p, sizeof(u64)) ? -EFAULT : 0;
}

static inline void tprof_arch_strip(u64 *frames, unsigned int n, bool user)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		frames[i] = tprof_strip_pac(frames[i], user);
}

static inline int tprof_arch_read_kernel_frame(void *ctx, u64 addr, u64 rec[2])
{
	return copy_from_kernel_nofault(rec, (const void *)(unsigned long)addr,
					2 * sizeof(u64)) ? -EFAULT : 0;
}

static inline unsigned int tprof_arch_kernel_frames(struct pt_regs *regs, u64 *out,
						    unsigned int max, bool *truncated)
{
	struct tprof_fp_walker w = {
		.fp = regs->regs[29], .floor = regs->sp, .align = 16,
		.out = out, .max = max,
	};
	unsigned int n = tprof_fp_walk(&w, tprof_arch_read_kernel_frame, NULL, truncated);

	tprof_arch_strip(out, n, false);
	return n;
}

/* lr and the saved return addresses in the copy keep their codes. */
static inline void tprof_arch_user_unwind_regs(struct pt_regs *uregs,
					       struct tprof_rec_user_stack *us)
{
	us->pc = instruction_pointer(uregs);
	us->sp = user_stack_pointer(uregs);
	us->fp = uregs->regs[29];
	us->lr = uregs->regs[30];
	/* User addresses are below bit 55: what stripping clears above it. */
	us->pac_mask = ~(u64)tprof_strip_pac(GENMASK_ULL(54, 0), true);
}

static inline bool tprof_arch_user_regs_walkable(struct pt_regs *uregs)
{
	return !compat_user_mode(uregs);
}

/* The leaf's return address is x30; nmi_uaccess_okay() is always true. */
static inline bool tprof_arch_user_leaf(struct pt_regs *uregs, u64 *fp, u64 *ra)
{
	*fp = uregs->regs[29];
	*ra = tprof_strip_pac(uregs->regs[30], true);
	return true;
}

/*
 * The AAPCS64 frame record {fp, lr} that x29 points at: the step the
 * kernel's own unwinder (and so perf's kernel callchain) takes first from
 * @regs; the kernel always keeps frame records on arm64, user code when
 * built with frame pointers.
 */
static inline bool tprof_arch_sample_caller(struct pt_regs *regs, bool user, u64 *caller)
{
	unsigned long ret;

	if (user) {
		if (compat_user_mode(regs) ||
		    copy_from_user_nofault(&ret, (void __user *)(regs->regs[29] + 8),
					   sizeof(ret)))
			return false;
	} else {
		if (copy_from_kernel_nofault(&ret, (void *)(regs->regs[29] + 8),
					     sizeof(ret)))
			return false;
	}
	ret = tprof_strip_pac(ret, user);
	*caller = ret;
	return ret != 0;
}

#endif /* TPROF_ARCH_ARM64_STACK_H */
