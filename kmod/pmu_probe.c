// SPDX-License-Identifier: GPL-2.0
/*
 * arm64 execution breakpoints seen per hit: uprobes at user addresses,
 * kprobes at kernel addresses.
 *
 * arm64's kernel steps over a hardware breakpoint only for perf's own
 * overflow handler (pmu.c: "counts only"); a uprobe steps over by itself
 * and calls its consumer in the hitting task's context with its registers,
 * so the per-hit path (range, thresholds, rules, arming) runs as it does
 * for x86's breakpoint handler. The user address is resolved to (file,
 * offset) through the target's mapping at creation.
 *
 * A uprobe belongs to the file: every process mapping it may hit it. The
 * filter asks for it only in the target's mm and in the mms of tasks of
 * the program's scope that map the file later (an exec); the handler
 * counts only hits of the scope (the thread; or the process and its
 * descendants), so another process mapping the same file is never counted,
 * whoever installed the probe there.
 *
 * A kprobe (a kernel address, CAP_PERFMON) traps every task; its
 * pre_handler runs in the hitting task (BRK exception, preemption off,
 * possibly in IRQ context) and counts the same scope, or every task for
 * scope CPUS. unregister_kprobe() waits for running handlers.
 *
 * arm64's kernel kills a task (SIGILL) that hits a uprobe and a hardware
 * breakpoint with perf's default handler at the same instruction: the
 * breakpoint's handler starts a single-step (bps_disabled), the uprobe then
 * moves the pc to its out-of-line slot and relies on the step exception,
 * which reinstall_suspended_bps() swallows, so the task runs past the slot
 * (6.1 and 6.12; tests/arm64/bp-uprobe-sigill.c shows it with perf and
 * tracefs alone). tprof's own user breakpoints that are debug registers
 * (counts-only, steppers, every-CPU) have perf's handler, so tprof never
 * places one and a uprobe at the same user address: each claims its
 * address, and the later of the two kinds is EBUSY (tprof_pmu_claim()).
 */
#include <linux/cred.h>
#include <linux/errno.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pid.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include "pmu.h"
#include "pmu_claims.h"
#include "admission.h"
#include "compat.h"

struct tprof_pmu_probe {
	struct uprobe_consumer uc;
	struct kprobe kp;	/* kernel: a kprobe instead of the uprobe */
	struct tprof_pmu_ctr *ctr;
	struct file *file;	/* holds the inode while the uprobe exists */
	loff_t offset;
	struct tprof_uprobe up;
	struct tprof_charge charge;	/* a uprobe's, to its creator (uprobes_per_user=) */
	bool kernel;
	bool registered;
};

/*
 * The exec transition for probes: an mm other than the one admitted at
 * creation is the scope's only while it is dumpable for ordinary
 * observers. A task of the scope that execs a setuid image gets a new,
 * non-dumpable mm (begin_new_exec() sets it before the image is mapped,
 * so the filter below sees it): no breakpoint is written there and no hit
 * of it counts, as perf_event_exit_task() ends perf's per-task events.
 */
static bool tprof_pmu_probe_mm_ok(const struct tprof_pmu_prog *p,
				  struct mm_struct *mm)
{
	/* Both callers ask about current's own mm. */
	return mm == p->target_mm ||
	       (mm && tprof_image_user_dumpable(current, mm));
}

/* Which mms get the breakpoint: the target's, and the scope's own. */
static bool tprof_pmu_probe_filter(TPROF_UPROBE_FILTER_PROTO)
{
	struct tprof_pmu_probe *pr = container_of(uc, struct tprof_pmu_probe, uc);
	const struct tprof_pmu_prog *p = pr->ctr->prog;

	return mm == p->target_mm ||
	       (mm == current->mm && tprof_pmu_probe_mm_ok(p, mm) &&
		tprof_pmu_in_scope(p, current));
}

/* Task context, before the probed instruction runs (regs->pc: its address). */
static int tprof_pmu_probe_handler(TPROF_UPROBE_HANDLER_PROTO)
{
	struct tprof_pmu_probe *pr = container_of(uc, struct tprof_pmu_probe, uc);

	if (!tprof_pmu_probe_mm_ok(pr->ctr->prog, current->mm) ||
	    !tprof_pmu_in_scope(pr->ctr->prog, current))
		return 0;
	/* The per-hit path expects what perf's handlers run with. */
	preempt_disable();
	tprof_pmu_hit(pr->ctr, regs);
	preempt_enable();
	return 0;
}

/*
 * The counter's breakpoint as a uprobe, in the file @task maps at the
 * address. -ENOENT: the address is not in an executable private file
 * mapping of @task (the caller may fall back to counting).
 */
int tprof_pmu_probe_create(struct tprof_pmu_ctr *ctr, struct task_struct *task)
{
	struct tprof_pmu_prog *p = ctr->prog;
	u64 addr = p->config.counters[ctr->index].addr;
	struct vm_area_struct *vma;
	struct tprof_pmu_probe *pr;
	struct mm_struct *mm;
	int ret;

	mm = get_task_mm(task);
	if (!mm)
		return -ESRCH;
	pr = kzalloc(sizeof(*pr), GFP_KERNEL_ACCOUNT);
	if (!pr) {
		mmput(mm);
		return -ENOMEM;
	}
	mmap_read_lock(mm);
	vma = vma_lookup(mm, addr);
	/* What uprobes install into (valid_vma() in kernel/events/uprobes.c). */
	if (vma && vma->vm_file && (vma->vm_flags & VM_EXEC) &&
	    !(vma->vm_flags & (VM_WRITE | VM_MAYSHARE | VM_HUGETLB))) {
		pr->file = get_file(vma->vm_file);
		pr->offset = addr - vma->vm_start +
			((loff_t)vma->vm_pgoff << PAGE_SHIFT);
	}
	mmap_read_unlock(mm);
	if (!pr->file) {
		mmput(mm);
		kfree(pr);
		return -ENOENT;
	}
	ret = tprof_pmu_claim(ctr, addr, true);
	if (ret) {
		fput(pr->file);
		mmput(mm);
		kfree(pr);
		return ret;
	}
	if (!p->target_mm) {
		mmgrab(mm);
		p->target_mm = mm;
	}
	mmput(mm);

	pr->ctr = ctr;
	pr->uc.handler = tprof_pmu_probe_handler;
	pr->uc.filter = tprof_pmu_probe_filter;
	/* Published first: released with the program whatever happens next. */
	ctr->probe = pr;
	/* Each uprobe on a file slows every mmap of it, system-wide: bounded. */
	ret = tprof_limit_charge(TPROF_LIMIT_UPROBES, 1, &pr->charge);
	if (ret)
		return ret;
	ret = tprof_uprobe_register(&pr->up, file_inode(pr->file), pr->offset,
				    &pr->uc);
	if (ret)
		return ret == -ENOTSUPP ? -EOPNOTSUPP : ret;
	pr->registered = true;
	return 0;
}

/* BRK exception of the hitting task, preemption off, before the instruction. */
static int tprof_pmu_kprobe_handler(struct kprobe *kp, struct pt_regs *regs)
{
	struct tprof_pmu_probe *pr = container_of(kp, struct tprof_pmu_probe, kp);

	const struct tprof_pmu_prog *p = pr->ctr->prog;

	/* A thread or process scope ends at a setuid exec, as with uprobes. */
	if (tprof_pmu_in_scope(p, current) &&
	    (p->config.scope == TPROF_PMU_SCOPE_CPUS || !current->mm ||
	     tprof_pmu_probe_mm_ok(p, current->mm)))
		tprof_pmu_hit(pr->ctr, regs);
	return 0;	/* single-step the instruction */
}

/*
 * The counter's breakpoint (a kernel address) as a kprobe. -EINVAL: an
 * address kprobes refuse (not kernel text, not an instruction they can
 * step, blacklisted) or tprof.ko's own text, whose hits would recurse
 * into the handler.
 */
int tprof_pmu_kprobe_create(struct tprof_pmu_ctr *ctr)
{
	u64 addr = ctr->prog->config.counters[ctr->index].addr;
	struct tprof_pmu_probe *pr;
	int ret;

	if (within_module(addr, THIS_MODULE))
		return -EINVAL;
	pr = kzalloc(sizeof(*pr), GFP_KERNEL_ACCOUNT);
	if (!pr)
		return -ENOMEM;
	pr->ctr = ctr;
	pr->kernel = true;
	pr->kp.addr = (kprobe_opcode_t *)(unsigned long)addr;
	pr->kp.pre_handler = tprof_pmu_kprobe_handler;
	/* Published first: released with the program whatever happens next. */
	ctr->probe = pr;
	ret = register_kprobe(&pr->kp);
	if (ret)	/* EBUSY, EILSEQ, ...: not an address to probe */
		return ret == -ENOMEM ? ret : -EINVAL;
	pr->registered = true;
	return 0;
}

/*
 * No new hit after it. A kprobe's handlers are waited for here; a
 * uprobe's (6.12) only by tprof_pmu_probe_sync(): true when it is needed.
 */
bool tprof_pmu_probe_unregister(struct tprof_pmu_ctr *ctr)
{
	struct tprof_pmu_probe *pr = ctr->probe;

	if (!pr || !pr->registered)
		return false;
	pr->registered = false;
	if (pr->kernel) {
		unregister_kprobe(&pr->kp);
		return false;
	}
	tprof_uprobe_unregister_nosync(&pr->up, file_inode(pr->file),
				       pr->offset, &pr->uc);
	return true;
}

/* Waits for the handlers still running after the unregisters. */
void tprof_pmu_probe_sync(void)
{
	tprof_uprobe_unregister_sync();
}

void tprof_pmu_probe_free(struct tprof_pmu_ctr *ctr)
{
	struct tprof_pmu_probe *pr = ctr->probe;

	if (!pr)
		return;
	if (pr->file)
		fput(pr->file);
	tprof_limit_uncharge(TPROF_LIMIT_UPROBES, &pr->charge);
	kfree(pr);
	ctr->probe = NULL;
}
