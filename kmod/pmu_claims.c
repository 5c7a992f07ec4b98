// SPDX-License-Identifier: GPL-2.0
/*
 * What PMU programs hold that others could want (pmu_claims.h): debug
 * registers, counted per thread and per CPU, and arm64's claimed user
 * breakpoint addresses.
 */
#include <linux/cred.h>
#include <linux/hw_breakpoint.h>
#include <linux/list.h>
#include <linux/minmax.h>
#include <linux/mutex.h>
#include <linux/perf_event.h>
#include <linux/rcupdate.h>
#include <linux/sched/signal.h>
#include "arch/debug_regs.h"
#include "compat.h"
#include "pmu.h"
#include "pmu_claims.h"
#include "pmu_plan.h"

/*
 * One program at a time checks its threads' debug registers and takes
 * them (tprof_pmu_check_task_slots()): two programs cannot both fit in
 * the last ones.
 */
DEFINE_MUTEX(tprof_pmu_slots_lock);
/* Debug registers scope-CPUS programs hold on every CPU; under that lock. */
static u32 tprof_pmu_cpu_slots_data, tprof_pmu_cpu_slots_exec;

/* ENOSPC before anything is created: the program alone cannot fit. */
int tprof_pmu_check_slots(const struct tprof_pmu_plan *plan)
{
	return plan->data_slots > tprof_arch_data_slots() ||
	       plan->exec_slots > tprof_arch_exec_slots() ? -ENOSPC : 0;
}

/*
 * Breakpoints already in @task's perf context(s), whoever made them and
 * whichever task they target. perf admits a task's breakpoint by counting
 * the ones that target that task (kernel/events/hw_breakpoint.c), but it
 * installs the ones in the context the task holds: at a context switch
 * between two tasks whose contexts are clones (inherited events, siblings
 * of one fork) perf swaps the contexts instead of the events, and when
 * the other task exits it takes this one's events with it, leaving this
 * one holding the dead task's. Count what the task holds, so that tprof
 * never adds past the registers (6.1: "Can't find any breakpoint slot"
 * and a counter that silently stops counting). Under RCU, a context is
 * freed only after a grace period; its lock guards event_list.
 */
static void tprof_pmu_task_slots_used(struct task_struct *task, u32 *data,
				      u32 *exec)
{
	struct perf_event_context *ctx;
	struct perf_event *ev;
	unsigned long flags;
	int i;

	*data = *exec = 0;
	rcu_read_lock();
	for (i = 0; i < TPROF_TASK_PERF_CTXS; i++) {
		ctx = rcu_dereference(tprof_task_perf_ctx(task, i));
		if (!ctx)
			continue;
		raw_spin_lock_irqsave(&ctx->lock, flags);
		list_for_each_entry(ev, &ctx->event_list, event_entry) {
			if (ev->attr.type != PERF_TYPE_BREAKPOINT)
				continue;
			if (IS_ENABLED(CONFIG_HAVE_MIXED_BREAKPOINTS_REGS) ||
			    (ev->attr.bp_type & HW_BREAKPOINT_RW))
				(*data)++;
			else
				(*exec)++;
		}
		raw_spin_unlock_irqrestore(&ctx->lock, flags);
	}
	rcu_read_unlock();
}

/*
 * ENOSPC: some thread's context, with what tprof's scope-CPUS programs
 * hold on every CPU, has no room left for the program's.
 */
int tprof_pmu_check_task_slots(const struct tprof_pmu_plan *plan,
			       struct task_struct **tasks, unsigned int n)
{
	u32 data = plan->data_slots, exec = plan->exec_slots;
	u32 used_data, used_exec;
	unsigned int t;

	lockdep_assert_held(&tprof_pmu_slots_lock);
	if (!data && !exec)
		return 0;
	data += tprof_pmu_cpu_slots_data;
	exec += tprof_pmu_cpu_slots_exec;
	for (t = 0; t < n; t++) {
		tprof_pmu_task_slots_used(tasks[t], &used_data, &used_exec);
		if (used_data + data > tprof_arch_data_slots() ||
		    used_exec + exec > tprof_arch_exec_slots())
			return -ENOSPC;
	}
	return 0;
}

/*
 * Scope CPUS: ENOSPC unless the program fits beside tprof's other
 * scope-CPUS programs and what any thread's context holds (the same
 * reason as above: perf counts a thread's breakpoints by target, the CPU
 * installs the ones its context holds). Walks every thread once. Else the
 * registers are the program's until tprof_pmu_free().
 */
int tprof_pmu_reserve_cpu_slots(struct tprof_pmu_prog *p)
{
	u32 data = p->plan->data_slots, exec = p->plan->exec_slots;
	u32 max_data = 0, max_exec = 0, d, e;
	struct task_struct *g, *t;

	lockdep_assert_held(&tprof_pmu_slots_lock);
	if (!data && !exec)
		return 0;
	rcu_read_lock();
	for_each_process_thread(g, t) {
		tprof_pmu_task_slots_used(t, &d, &e);
		max_data = max(max_data, d);
		max_exec = max(max_exec, e);
	}
	rcu_read_unlock();
	if (data + tprof_pmu_cpu_slots_data + max_data > tprof_arch_data_slots() ||
	    exec + tprof_pmu_cpu_slots_exec + max_exec > tprof_arch_exec_slots())
		return -ENOSPC;
	p->cpu_slots_data = data;
	p->cpu_slots_exec = exec;
	tprof_pmu_cpu_slots_data += data;
	tprof_pmu_cpu_slots_exec += exec;
	return 0;
}

/* Its registers are free again: its events are gone. */
void tprof_pmu_unreserve_cpu_slots(struct tprof_pmu_prog *p)
{
	if (!p->cpu_slots_data && !p->cpu_slots_exec)
		return;
	mutex_lock(&tprof_pmu_slots_lock);
	tprof_pmu_cpu_slots_data -= p->cpu_slots_data;
	tprof_pmu_cpu_slots_exec -= p->cpu_slots_exec;
	mutex_unlock(&tprof_pmu_slots_lock);
}

/*
 * User breakpoints of tprof by address: a uprobe's (in its target's mm at
 * creation) and a debug register's (any scope). The two kinds can meet in
 * one task only when one user's programs target related processes (an
 * inherited breakpoint reaches the target's descendants) or when one of
 * them is every-CPU (it traps in every process): a claim conflicts with
 * the other kind at the same address of the same creator (real uid), or
 * of any creator when either is every-CPU. Another user's per-task claims
 * never make a call EBUSY (nor tell which addresses they watch): their
 * targets are processes this user may not attach to. Programs with
 * breakpoints are few: a list.
 */
static DEFINE_MUTEX(tprof_pmu_claims_lock);
static LIST_HEAD(tprof_pmu_claims);

static bool tprof_pmu_claims_meet(const struct tprof_pmu_ctr *a,
				  const struct tprof_pmu_ctr *b)
{
	return a->claim_addr == b->claim_addr &&
	       a->claim_uprobe != b->claim_uprobe &&
	       (a->claim_every_task || b->claim_every_task ||
		uid_eq(a->claim_uid, b->claim_uid));
}

/*
 * In the creator's context. -EBUSY: the other kind holds @addr where the
 * two could meet (see pmu_probe.c's top comment).
 */
int tprof_pmu_claim(struct tprof_pmu_ctr *ctr, u64 addr, bool uprobe)
{
	struct tprof_pmu_ctr *o;
	int ret = 0;

	ctr->claim_addr = addr;
	ctr->claim_uprobe = uprobe;
	ctr->claim_uid = current_uid();
	ctr->claim_every_task = ctr->prog->config.scope == TPROF_PMU_SCOPE_CPUS;
	mutex_lock(&tprof_pmu_claims_lock);
	list_for_each_entry(o, &tprof_pmu_claims, claim_node) {
		if (tprof_pmu_claims_meet(ctr, o)) {
			ret = -EBUSY;
			break;
		}
	}
	if (!ret) {
		ctr->claimed = true;
		list_add(&ctr->claim_node, &tprof_pmu_claims);
	}
	mutex_unlock(&tprof_pmu_claims_lock);
	return ret;
}

/* Once its uprobe or debug registers are gone. */
void tprof_pmu_unclaim(struct tprof_pmu_ctr *ctr)
{
	if (!ctr->claimed)
		return;
	mutex_lock(&tprof_pmu_claims_lock);
	list_del(&ctr->claim_node);
	mutex_unlock(&tprof_pmu_claims_lock);
	ctr->claimed = false;
}
