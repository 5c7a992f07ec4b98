/* SPDX-License-Identifier: GPL-2.0 */
/*
 * x86-64's part of a sample's stack (see ../stack.h): the kernel part from
 * ORC through unwind_start/unwind_next_frame, as perf_callchain_kernel()
 * does; the user part from rbp chains, with the return address at rsp for
 * a leaf that has not pushed a frame yet.
 */
#ifndef TPROF_ARCH_X86_STACK_H
#define TPROF_ARCH_X86_STACK_H

#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/uaccess.h>
#include <asm/unwind.h>
#include <linux/tprof.h>

/*
 * Two word reads, as perf's callchain code reads a frame (__get_user()
 * under one pagefault_disable()): a copy_from_user_nofault() per frame
 * cost 3x perf's per-frame cost, and a 16-byte copy_user_generic() ~77
 * instructions against perf's ~46 (bench/sampling_bench.cc, section 4 and
 * --frames 8 against 32). access_ok() warns in interrupt context on debug
 * kernels, hence __access_ok().
 */
static inline int tprof_arch_read_frame_inatomic(void *ctx, u64 addr, u64 rec[2])
{
	const u64 __user *p = (const u64 __user *)(unsigned long)addr;

	if (!__access_ok(p, 2 * sizeof(u64)))
		return -EFAULT;
	if (__get_user(rec[0], p) || __get_user(rec[1], p + 1))
		return -EFAULT;
	return 0;
}

/* One word, as the frame reads above (the CFI walk's reads). */
static inline int tprof_arch_read_word_inatomic(u64 addr, u64 *val)
{
	const u64 __user *p = (const u64 __user *)(unsigned long)addr;

	if (!__access_ok(p, sizeof(u64)) || __get_user(*val, p))
		return -EFAULT;
	return 0;
}

static inline unsigned int tprof_arch_kernel_frames(struct pt_regs *regs, u64 *out,
						    unsigned int max, bool *truncated)
{
	struct unwind_state state;
	unsigned long addr;
	unsigned int n = 0;

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
	return n;
}

static inline bool tprof_arch_user_regs_walkable(struct pt_regs *uregs)
{
	return user_64bit_mode(uregs);
}

/* The leaf's return address is the word at rsp until it pushes rbp. */
static inline bool tprof_arch_user_leaf(struct pt_regs *uregs, u64 *fp, u64 *ra)
{
	*fp = uregs->bp;
	return !copy_from_user_nofault(ra, (const void __user *)user_stack_pointer(uregs),
				       sizeof(*ra));
}

static inline void tprof_arch_strip(u64 *frames, unsigned int n, bool user)
{
}

static inline void tprof_arch_user_unwind_regs(struct pt_regs *uregs,
					       struct tprof_rec_user_stack *us)
{
	us->pc = instruction_pointer(uregs);
	us->sp = user_stack_pointer(uregs);
	us->fp = uregs->bp;
}

static inline bool tprof_arch_sample_caller(struct pt_regs *regs, bool user, u64 *caller)
{
	if (user) {
		unsigned long ret;

		/* Frame-pointer chain: meaningful for code built with it. */
		if (copy_from_user_nofault(&ret, (void __user *)(regs->bp + 8),
					   sizeof(ret)))
			return false;
		*caller = ret;
		return ret != 0;
	} else {
		struct unwind_state state;

		/* Started from @regs, the unwinder is already at the caller. */
		unwind_start(&state, current, regs, NULL);
		if (unwind_done(&state))
			return false;
		*caller = unwind_get_return_address(&state);
		return *caller != 0;
	}
}

#endif /* TPROF_ARCH_X86_STACK_H */
