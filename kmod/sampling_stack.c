// SPDX-License-Identifier: GPL-2.0
/*
 * Whole stacks of a sample (TPROF_SAMPLING_STACKS; struct tprof_rec_stack):
 * the kernel part from the kernel's own unwinder (arch/stack.h: x86-64's
 * ORC, arm64's frame records), then the user part of a user task from its
 * user registers (the sample's, or those saved at kernel entry when the
 * sample hit the kernel) by walking frame pointers with fault-safe reads.
 * With TPROF_SAMPLING_USER_CFI the user part is walked with the unwind
 * tables the owner loaded for the space (unwind_store.h) instead.
 * With TPROF_SAMPLING_USER_STACK, the user registers and a copy of the user
 * stack follow, for a walk afterwards with the binaries' CFI.
 * Runs in the sample handler (hard IRQ or NMI): no sleeping, no locks.
 */
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/uaccess.h>
#include "sampling.h"
#include "arch/stack.h"
#include "core/stack_walk.h"
#include "core/unwind_walk_inline.h"
#include "unwind_store.h"

static int tprof_read_user_frame(void *ctx, u64 addr, u64 rec[2])
{
	return copy_from_user_nofault(rec, (const void __user *)(unsigned long)addr,
				      2 * sizeof(u64)) ? -EFAULT : 0;
}

/*
 * The user registers of the sampled task: the sample's own in user mode,
 * else those saved when it entered the kernel (none for kernel threads
 * and the idle task, or 32-bit tasks, whose frames differ; nor inside
 * execve(), where the saved registers are the old image's while the mm
 * may already be the new one's: a pc and stack of neither).
 */
static struct pt_regs *tprof_user_regs(struct pt_regs *regs, bool user)
{
	struct task_struct *task = current;
	struct pt_regs *uregs;

	if (user)
		uregs = regs;
	else if (task->mm && !(task->flags & (PF_KTHREAD | PF_EXITING)) &&
		 !task->in_execve)
		uregs = task_pt_regs(task);
	else
		return NULL;
	return tprof_arch_user_regs_walkable(uregs) ? uregs : NULL;
}

struct tprof_cfi_walk {
	struct tprof_unwind_store *store;
	const struct tprof_unwind_space_map *map;
	u32 range_hint;		/* the range the last lookup found */
	u64 last_pc;		/* and its pc and row: recursion repeats both */
	const struct tprof_unwind_row *last_row;
	bool uncovered;
	bool uaccess_ok;	/* a read succeeded: pagefault_disable() is on */
};

static const struct tprof_unwind_row *tprof_cfi_find(void *ctx, u64 pc)
{
	struct tprof_cfi_walk *c = ctx;
	const struct tprof_unwind_row *row = NULL;
	bool covered = false;

	if (c->last_row && pc == c->last_pc)
		return c->last_row;
	if (c->map)
		row = tprof_unwind_space_row(c->store, c->map, pc, &covered, &c->range_hint);
	if (!covered)
		c->uncovered = true;
	c->last_pc = pc;
	c->last_row = row;
	return row;
}

/*
 * The first read by copy_from_user_nofault(), which also says whether user
 * memory may be read here at all (x86's nmi_uaccess_okay() is not for
 * modules); the rest by __get_user() under one pagefault_disable(), as the
 * frame-pointer walk reads (arch/x86/stack.h: a nofault copy per read
 * cost the walk 3x perf's per frame).
 */
static noinline int tprof_read_user_first(struct tprof_cfi_walk *c, u64 addr, u64 *val,
					  unsigned int words)
{
	if (copy_from_user_nofault(val, (const void __user *)(unsigned long)addr,
				   words * sizeof(*val)))
		return -EFAULT;
	c->uaccess_ok = true;
	pagefault_disable();
	return 0;
}

/* Inlined into the walk with the pair read below: no call per frame. */
static inline int tprof_read_user_word(void *ctx, u64 addr, u64 *val)
{
	struct tprof_cfi_walk *c = ctx;

	if (likely(c->uaccess_ok))
		return tprof_arch_read_word_inatomic(addr, val);
	return tprof_read_user_first(c, addr, val, 1);
}

static inline int tprof_read_user_pair(void *ctx, u64 addr, u64 val[2])
{
	struct tprof_cfi_walk *c = ctx;

	if (likely(c->uaccess_ok))
		return tprof_arch_read_frame_inatomic(NULL, addr, val);
	return tprof_read_user_first(c, addr, val, 2);
}

/*
 * The callers of the user registers' pc by the space's unwind tables.
 * Each frame reads at most two words (a signal frame four): the budget
 * bounds a hostile table's
 * walk (a loop of rows is stopped by the rising CFA anyway).
 */
static unsigned int tprof_sample_user_cfi(struct tprof_session *s, struct pt_regs *uregs,
					  u64 space_id, u64 *out, unsigned int max,
					  u32 *flags, bool *truncated)
{
	struct tprof_cfi_walk c = {
		.store = s->unwind,
		.map = tprof_unwind_space_find(s->unwind, space_id),
	};
	struct tprof_rec_user_stack r = {};
	struct tprof_unwind_walker w = {
		.find = tprof_cfi_find,
		.read = tprof_read_user_word,
		.read_pair = tprof_read_user_pair,
		.ctx = &c,
		.out = out,
		.max = max,
		.max_reads = 2 * max + 8,
	};
	enum tprof_unwind_stop stop = TPROF_UNWIND_STOP_END;
	u8 how[TPROF_MAX_STACK_DEPTH];
	unsigned int n, i;

	tprof_arch_user_unwind_regs(uregs, &r);
	w.regs = (struct tprof_unwind_regs){ r.pc, r.sp, r.fp, r.lr };
	w.ra_strip = r.pac_mask;
	w.how = how;
	if (w.max > ARRAY_SIZE(how))
		w.max = ARRAY_SIZE(how);
	n = tprof_unwind_walk_inline(&w, &stop);
	if (c.uaccess_ok)
		pagefault_enable();
	*flags |= TPROF_STACK_USER_CFI;
	if (stop == TPROF_UNWIND_STOP_END)
		*flags |= TPROF_STACK_USER_WHOLE;
	if (stop == TPROF_UNWIND_STOP_DEPTH || stop == TPROF_UNWIND_STOP_BUDGET)
		*truncated = true;
	if (c.uncovered)
		*flags |= TPROF_STACK_USER_UNCOVERED;
	for (i = 0; i < n; i++)
		if (how[i] == TPROF_UNWOUND_FP)
			*flags |= TPROF_STACK_USER_BY_FP;
	return n;
}

unsigned int tprof_sample_stack(struct tprof_session *s, struct pt_regs *regs,
				bool user, u64 space_id, struct tprof_rec_stack *st,
				u64 *frames, struct pt_regs **uregs_out)
{
	unsigned int depth = s->config.stack_depth, nk = 0, nu = 0;
	struct pt_regs *uregs;
	bool truncated = false, uaccess_checked = false;
	u64 fp, sp, ra;

	memset(st, 0, sizeof(*st));
	if (!user && s->show_kernel)
		nk = tprof_arch_kernel_frames(regs, frames, depth, &truncated);
	uregs = truncated ? NULL : tprof_user_regs(regs, user);
	*uregs_out = uregs;
	if (uregs) {
		struct tprof_fp_walker w = { .align = 8 };
		u64 *u = frames + nk;
		unsigned int walked;

		if (!user) {
			u[nu++] = instruction_pointer(uregs);
			st->flags |= TPROF_STACK_USER_IP;
		}
		if (s->unwind) {
			nu += tprof_sample_user_cfi(s, uregs, space_id, u + nu, depth - nk,
						    &st->flags, &truncated);
			goto done;
		}
		sp = user_stack_pointer(uregs);
		if (tprof_arch_user_leaf(uregs, &fp, &ra)) {
			u[nu++] = ra;
			st->flags |= TPROF_STACK_LEAF_RA;
			uaccess_checked = true;
		}
		w.fp = fp;
		w.floor = sp;
		w.out = u + nu;
		w.max = depth - nk;
		if (uaccess_checked) {
			pagefault_disable();
			walked = tprof_fp_walk(&w, tprof_arch_read_frame_inatomic,
					       NULL, &truncated);
			pagefault_enable();
		} else {
			walked = tprof_fp_walk(&w, tprof_read_user_frame, NULL,
					       &truncated);
		}
		tprof_arch_strip(w.out, walked, true);
		nu += walked;
	}
done:
	if (truncated)
		st->flags |= TPROF_STACK_TRUNCATED;
	st->nr_kernel = nk;
	st->nr_user = nu;
	return nk + nu;
}

void tprof_sample_user_stack(struct pt_regs *uregs, struct tprof_rec_user_stack *us, u8 *dst)
{
	u64 at;
	u32 done = 0;

	tprof_arch_user_unwind_regs(uregs, us);
	/*
	 * Page by page: a fault-safe copy fails whole, and the stack's
	 * mapping ends at a page boundary, often within the bytes asked.
	 */
	at = us->sp;
	while (done < us->asked) {
		u32 chunk = min_t(u64, us->asked - done, PAGE_SIZE - (at & (PAGE_SIZE - 1)));

		if (copy_from_user_nofault(dst + done, (const void __user *)(unsigned long)at, chunk))
			break;
		done += chunk;
		at += chunk;
	}
	us->bytes = done & ~7U;
}
