// SPDX-License-Identifier: GPL-2.0
/*
 * Whole stacks of a sample (TPROF_SAMPLING_STACKS; struct tprof_rec_stack):
 * the kernel part from the kernel's own unwinder (x86-64: ORC through
 * unwind_start/unwind_next_frame, as perf_callchain_kernel does; arm64: the
 * frame records x29 points at), then the user part of a user task from its
 * user registers (the sample's, or those saved at kernel entry when the
 * sample hit the kernel) by walking frame pointers with fault-safe reads.
 * Runs in the sample handler (hard IRQ or NMI): no sleeping, no locks.
 */
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/uaccess.h>
#ifdef CONFIG_X86_64
#include <asm/unwind.h>
#endif
#include "sampling.h"
#include "compat.h"
#include "core/stack_walk.h"

static int tprof_read_user_frame(void *ctx, u64 addr, u64 rec[2])
{
	return copy_from_user_nofault(rec, (const void __user *)(unsigned long)addr,
				      2 * sizeof(u64)) ? -EFAULT : 0;
}

/*
 * The same read for a walk that runs under one pagefault_disable(), as
 * perf's callchain code reads frames with __get_user(): a
 * copy_from_user_nofault() per frame cost 3x perf's per-frame cost
 * (bench/sampling_bench.cc, section 4). What copy_from_user_nofault()
 * adds besides is nmi_uaccess_okay() (not exported; always true on
 * arm64): on x86 this reader is used only after a copy_from_user_nofault()
 * of the same handler succeeded, so that check was made. x86's
 * access_ok() warns in interrupt context on debug kernels, hence
 * __access_ok() there.
 */
static int tprof_read_user_frame_inatomic(void *ctx, u64 addr, u64 rec[2])
{
	const u64 __user *p = (const u64 __user *)(unsigned long)addr;

#ifdef CONFIG_X86_64
	if (!__access_ok(p, 2 * sizeof(u64)))
		return -EFAULT;
	/*
	 * Two word reads, as perf reads a frame: a 16-byte
	 * copy_user_generic() made a frame cost ~77 instructions against
	 * perf's ~46 (bench/sampling_bench.cc, --frames 8 against 32).
	 */
	if (__get_user(rec[0], p) || __get_user(rec[1], p + 1))
		return -EFAULT;
	return 0;
#else
	if (!access_ok(p, 2 * sizeof(u64)))
		return -EFAULT;
	return __copy_from_user_inatomic(rec, p, 2 * sizeof(u64)) ? -EFAULT : 0;
#endif
}

#ifdef CONFIG_ARM64
static int tprof_read_kernel_frame(void *ctx, u64 addr, u64 rec[2])
{
	return copy_from_kernel_nofault(rec, (const void *)(unsigned long)addr,
					2 * sizeof(u64)) ? -EFAULT : 0;
}

static void tprof_strip_all(u64 *frames, unsigned int n, bool user)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		frames[i] = tprof_strip_pac(frames[i], user);
}
#endif

/* Kernel return addresses from @regs (a kernel-mode sample), innermost first. */
static unsigned int tprof_kernel_frames(struct pt_regs *regs, u64 *out,
					unsigned int max, bool *truncated)
{
	unsigned int n = 0;
#ifdef CONFIG_X86_64
	struct unwind_state state;
	unsigned long addr;

	*truncated = false;
	/*
	 * Started from @regs, the unwinder is already at the caller. Software
	 * events hand over partial registers (perf_fetch_caller_regs() leaves
	 * X86_EFLAGS_FIXED clear): then start from the stack pointer, as
	 * perf_callchain_kernel() does.
	 */
	if (regs->flags & X86_EFLAGS_FIXED)
		unwind_start(&state, current, regs, NULL);
	else
		unwind_start(&state, current, NULL, (unsigned long *)regs->sp);
	for (; !unwind_done(&state); unwind_next_frame(&state)) {
		addr = unwind_get_return_address(&state);
		if (!addr)
			break;
		if (n == max) {
			*truncated = true;
			break;
		}
		out[n++] = addr;
	}
#elif defined(CONFIG_ARM64)
	struct tprof_fp_walker w = {
		.fp = regs->regs[29], .floor = regs->sp, .align = 16,
		.out = out, .max = max,
	};

	n = tprof_fp_walk(&w, tprof_read_kernel_frame, NULL, truncated);
	tprof_strip_all(out, n, false);
#else
	*truncated = false;
#endif
	return n;
}

/*
 * The user registers of the sampled task: the sample's own in user mode,
 * else those saved when it entered the kernel (none for kernel threads
 * and the idle task, or 32-bit tasks, whose frames differ).
 */
static struct pt_regs *tprof_user_regs(struct pt_regs *regs, bool user)
{
	struct task_struct *task = current;
	struct pt_regs *uregs;

	if (user)
		uregs = regs;
	else if (task->mm && !(task->flags & (PF_KTHREAD | PF_EXITING)))
		uregs = task_pt_regs(task);
	else
		return NULL;
#ifdef CONFIG_X86_64
	return user_64bit_mode(uregs) ? uregs : NULL;
#elif defined(CONFIG_ARM64)
	return compat_user_mode(uregs) ? NULL : uregs;
#else
	return NULL;
#endif
}

unsigned int tprof_sample_stack(struct tprof_session *s, struct pt_regs *regs,
				bool user, struct tprof_rec_stack *st, u64 *frames)
{
	unsigned int depth = s->config.stack_depth, nk = 0, nu = 0;
	struct pt_regs *uregs;
	bool truncated = false, uaccess_checked = false;
	u64 fp, sp, ra;

	memset(st, 0, sizeof(*st));
	if (!user && s->show_kernel)
		nk = tprof_kernel_frames(regs, frames, depth, &truncated);
	uregs = truncated ? NULL : tprof_user_regs(regs, user);
	if (uregs) {
		struct tprof_fp_walker w = { .align = 8 };
		u64 *u = frames + nk;
		unsigned int walked;

		if (!user) {
			u[nu++] = instruction_pointer(uregs);
			st->flags |= TPROF_STACK_USER_IP;
		}
		sp = user_stack_pointer(uregs);
#ifdef CONFIG_X86_64
		fp = uregs->bp;
		if (!copy_from_user_nofault(&ra, (const void __user *)(unsigned long)sp,
					    sizeof(ra))) {
			u[nu++] = ra;
			st->flags |= TPROF_STACK_LEAF_RA;
			uaccess_checked = true;
		}
#elif defined(CONFIG_ARM64)
		fp = uregs->regs[29];
		ra = tprof_strip_pac(uregs->regs[30], true);
		u[nu++] = ra;
		st->flags |= TPROF_STACK_LEAF_RA;
		uaccess_checked = true;	/* nmi_uaccess_okay() is always true */
#else
		fp = 0;
#endif
		w.fp = fp;
		w.floor = sp;
		w.out = u + nu;
		w.max = depth - nk;
		if (uaccess_checked) {
			pagefault_disable();
			walked = tprof_fp_walk(&w, tprof_read_user_frame_inatomic,
					       NULL, &truncated);
			pagefault_enable();
		} else {
			walked = tprof_fp_walk(&w, tprof_read_user_frame, NULL,
					       &truncated);
		}
#ifdef CONFIG_ARM64
		tprof_strip_all(w.out, walked, true);
#endif
		nu += walked;
	}
	if (truncated)
		st->flags |= TPROF_STACK_TRUNCATED;
	st->nr_kernel = nk;
	st->nr_user = nu;
	return nk + nu;
}
