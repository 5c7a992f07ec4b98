// SPDX-License-Identifier: GPL-2.0
/*
 * A PMU program's creation and teardown. PMU_CREATE (pmu_ioctl.c) hands
 * over a checked program; tprof_pmu_create() makes its plan (pmu_plan.c),
 * checks the plan's debug registers (pmu_claims.c) and who may count what
 * (admission.h), then makes each counter as its plan says: perf events of
 * the target's threads at creation (scope THREAD, PROCESS: inherited to
 * children with PROCESS) or of every CPU (through cpu_events.c), a uprobe
 * or a kprobe (arm64, pmu_probe.c). tprof_pmu_free() undoes any prefix of
 * that, so a failed creation leaves nothing behind.
 */
#include <linux/anon_inodes.h>
#include <linux/capability.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include "admission.h"
#include "pmu.h"
#include "pmu_claims.h"
#include "pmu_plan.h"
#include "core/pmu_rules.h"

/*
 * perf events of one program: threads of the target at creation x
 * counters (E2BIG above). With the descriptor limit this bounds what one
 * user makes the kernel hold, as perf's one event per descriptor does.
 */
#define TPROF_PMU_MAX_EVENTS 4096
#define TPROF_PMU_MAX_THREADS TPROF_PMU_MAX_EVENTS

/*
 * @piece: a watchpoint's piece (NULL for other kinds). @counting: a
 * counting event (counts only, or a stepper): perf's handler never runs.
 */
static void tprof_pmu_attr(const struct tprof_pmu_counter *c,
			   const struct tprof_pmu_piece *piece, bool inherit,
			   bool exclude_kernel, bool counting,
			   struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->sample_period = counting ? 0 : c->period ?: 1;
	attr->inherit = inherit;
	attr->exclude_kernel = exclude_kernel || (c->flags & TPROF_PMU_CTR_USER_ONLY);
	attr->exclude_hv = 1;
	attr->config = c->config;
	switch (c->kind) {
	case TPROF_PMU_EV_SOFTWARE:
		attr->type = PERF_TYPE_SOFTWARE;
		break;
	case TPROF_PMU_EV_HARDWARE:
		attr->type = PERF_TYPE_HARDWARE;
		break;
	case TPROF_PMU_EV_RAW:
		attr->type = PERF_TYPE_RAW;
		break;
	case TPROF_PMU_EV_TRACEPOINT:
		attr->type = PERF_TYPE_TRACEPOINT;
		break;
	case TPROF_PMU_EV_BREAKPOINT:
		attr->type = PERF_TYPE_BREAKPOINT;
		attr->config = 0;
		attr->bp_type = HW_BREAKPOINT_X;
		attr->bp_addr = c->addr;
		attr->bp_len = sizeof(long);
		break;
	case TPROF_PMU_EV_WATCHPOINT:
		attr->type = PERF_TYPE_BREAKPOINT;
		attr->config = 0;
		attr->bp_type = c->flags & TPROF_PMU_CTR_WATCH_READ ?
			HW_BREAKPOINT_RW : HW_BREAKPOINT_W;
		/* arm64 takes any bytes of one doubleword (its BAS mask). */
		attr->bp_addr = piece->addr;
		attr->bp_len = piece->len;
		break;
	}
}

/* perf's errors in the UAPI's terms. */
static int tprof_pmu_create_err(const struct tprof_pmu_counter *c, int err)
{
	if ((c->kind == TPROF_PMU_EV_HARDWARE || c->kind == TPROF_PMU_EV_RAW) &&
	    (err == -ENOENT || err == -ENODEV || err == -EOPNOTSUPP))
		return -EOPNOTSUPP;
	if (c->kind == TPROF_PMU_EV_TRACEPOINT && err == -EINVAL)
		return -ENOENT;
	return err;
}

/* The target's threads (a reference each): one, or a process's. */
static int tprof_pmu_targets(const struct tprof_pmu_program *c, struct pid *pid,
			     struct task_struct ***tasksp, unsigned int *nr)
{
	struct task_struct **tasks, *leader, *t;
	unsigned int n = 0;
	int ret = 0;

	tasks = kvcalloc(c->scope == TPROF_PMU_SCOPE_THREAD ? 1 : TPROF_PMU_MAX_THREADS,
			 sizeof(*tasks), GFP_KERNEL_ACCOUNT);
	if (!tasks)
		return -ENOMEM;
	rcu_read_lock();
	if (c->scope == TPROF_PMU_SCOPE_THREAD) {
		t = pid_task(pid, PIDTYPE_PID);
		if (t) {
			get_task_struct(t);
			tasks[n++] = t;
		}
	} else {
		leader = pid_task(pid, PIDTYPE_TGID);
		if (leader)
			for_each_thread(leader, t) {
				if (n == TPROF_PMU_MAX_THREADS) {
					ret = -E2BIG;
					break;
				}
				get_task_struct(t);
				tasks[n++] = t;
			}
	}
	rcu_read_unlock();
	if (!ret && !n)
		ret = -ESRCH;
	*tasksp = tasks;
	*nr = n;
	return ret;
}

/*
 * The last event of ours with its stepper and guard: ours first, so that
 * it never exists without them (a task would trap forever).
 */
static void tprof_pmu_release_one(struct tprof_pmu_ctr *ctr)
{
	u32 k = --ctr->nr_events;

	perf_event_release_kernel(ctr->events[k]);
	if (ctr->steppers)
		perf_event_release_kernel(ctr->steppers[k]);
	if (ctr->guards)
		perf_event_release_kernel(ctr->guards[k]);
}

struct tprof_pmu_unregister_work {
	struct work_struct work;
	struct tprof_pmu_prog *prog;
};

static void tprof_pmu_unregister_probes(struct work_struct *work)
{
	struct tprof_pmu_unregister_work *w =
		container_of(work, struct tprof_pmu_unregister_work, work);
	bool probes = false;
	u32 i;

	for (i = 0; i < TPROF_PMU_MAX_COUNTERS; i++)
		probes |= tprof_pmu_probe_unregister(&w->prog->ctr[i]);
	if (probes)	/* no uprobe handler runs past this */
		tprof_pmu_probe_sync();
}

/*
 * Unregistering a uprobe writes the original instruction back into every
 * mm that has it, with get_user_pages_remote(), which fails with EINTR
 * when the caller has a fatal signal pending: the uprobe then stays, its
 * breakpoint too ("failed to unregister, leaking uprobe" on 6.12). A
 * program's last close can run there (the task_work of a close() that a
 * group exit interrupted, before get_signal() drops the SIGKILL), so the
 * probes are unregistered by a kworker, which has no signals, and waited for.
 */
static void tprof_pmu_release_probes(struct tprof_pmu_prog *p)
{
	struct tprof_pmu_unregister_work w = { .prog = p };
	u32 i;

	for (i = 0; i < TPROF_PMU_MAX_COUNTERS; i++)
		if (p->ctr[i].probe)
			break;
	if (i == TPROF_PMU_MAX_COUNTERS)
		return;
	INIT_WORK_ONSTACK(&w.work, tprof_pmu_unregister_probes);
	queue_work(system_unbound_wq, &w.work);
	flush_work(&w.work);
	destroy_work_on_stack(&w.work);
}

static void tprof_pmu_release_events(struct tprof_pmu_prog *p)
{
	u32 i;

	if (p->on_cpus) {	/* every CPU's counters, hotplug undone */
		tprof_cpu_events_stop(&p->cpus);
		p->on_cpus = false;
	}
	tprof_pmu_release_probes(p);
	for (i = 0; i < TPROF_PMU_MAX_COUNTERS; i++) {
		struct tprof_pmu_ctr *ctr = &p->ctr[i];

		tprof_pmu_probe_free(ctr);
		/*
		 * With the copies inherited from them; ours before its stepper,
		 * never a window with ours alone (a task would trap forever).
		 */
		while (ctr->nr_events)
			tprof_pmu_release_one(ctr);
		kvfree(ctr->events);
		ctr->events = NULL;
		kvfree(ctr->steppers);
		ctr->steppers = NULL;
		kvfree(ctr->guards);
		ctr->guards = NULL;
		kvfree(ctr->sub);
		ctr->sub = NULL;
		tprof_pmu_unclaim(ctr);	/* its uprobe or registers are gone */
	}
}

/* Everything it holds; the last close (pmu.c), or a creation that failed. */
void tprof_pmu_free(struct tprof_pmu_prog *p)
{
	tprof_pmu_release_events(p);
	/*
	 * A released event's handler may still be running: software and
	 * tracepoint events and x86 user debug exceptions run theirs with
	 * IRQs on, perf's removal IPI can land inside one, and it resumes
	 * after the release returned. Each runs inside an RCU read-side
	 * section (perf's swevent hash, the tracepoint, the breakpoint
	 * handler's lookup; NMIs are one), so after a grace period none is
	 * left to touch p->cells or queue p->kick.
	 */
	synchronize_rcu();
	tprof_pmu_unreserve_cpu_slots(p);
	/* No handler runs any more: flush what it queued to the monitor. */
	irq_work_sync(&p->kick);
	flush_work(&p->send_work);
	tprof_pmu_drop_monitor(p);
	if (p->pid_ns)
		put_pid_ns(p->pid_ns);
	put_pid(p->target);
	if (p->target_mm)
		mmdrop(p->target_mm);
	tprof_limit_uncharge(TPROF_LIMIT_PMU_EVENTS, &p->charge);	/* its events are gone */
	kvfree(p->cells);
	kfree(p->plan);
	kfree(p);
}

/*
 * Stepped counters (arm64, a debug register whose hits we need): each
 * event of ours is paired with a "stepper", a counting event (period 0,
 * perf's default handler) on the same address, length, type and task or
 * CPU. The kernel's handlers report a hit to every event whose register
 * matched and step over it when one of them has the default handler, so
 * ours sees every hit once and the task goes on. The stepper's count is
 * never read.
 *
 * The watchpoint handler keeps the step decision of the LAST exactly
 * matching register (step = watchpoint_report(), not |=, in 6.1 and 6.12),
 * and registers are handed out lowest free first in perf's scheduling
 * order (creation order within a context): so ours is created disabled,
 * and enabled only once its stepper exists, so that it is never scheduled
 * without the stepper after it (tprof_pmu_create_one()).
 *
 * When no register matches the reported address exactly (a CPU may report
 * any address of a wide or paired access, e.g. stp across the watched
 * bytes; QEMU reports one inside them), the handler reports only the
 * FIRST closest register and steps only if that one is perf's. So a
 * watchpoint also gets a "guard" created before ours, the same counting
 * event: it is that closest register, the task steps, and ours misses
 * that one hit; guard minus stepper counts such misses exactly
 * (hits_missed, read with the program). Breakpoints match exactly and
 * step if any match is perf's (|=): no guard. Registers: 3 per watchpoint
 * piece, 2 per breakpoint.
 */

/*
 * One event of ours on @task and, stepped, its guard before it
 * (watchpoints) and its stepper after it (see "Stepped counters" above): ours
 * is created disabled and enabled once the stepper exists, which
 * reschedules the task's breakpoints in creation order (guard, ours,
 * stepper: ascending registers). Stored only together.
 */
static int tprof_pmu_create_one(struct tprof_pmu_ctr *ctr,
				const struct perf_event_attr *attr,
				struct task_struct *task, bool counts_only)
{
	struct perf_event_attr a = *attr, counting = *attr;
	struct perf_event *ev, *st, *guard = NULL;

	counting.disabled = 0;
	counting.sample_period = 0;
	if (ctr->guards) {
		guard = perf_event_create_kernel_counter(&counting, -1, task,
							 NULL, NULL);
		if (IS_ERR(guard))
			return PTR_ERR(guard);
	}
	a.disabled = ctr->stepped;
	ev = perf_event_create_kernel_counter(&a, -1, task,
					      counts_only ? NULL : tprof_pmu_overflow,
					      ctr);
	if (IS_ERR(ev)) {
		if (guard)
			perf_event_release_kernel(guard);
		return PTR_ERR(ev);
	}
	if (ctr->stepped) {
		st = perf_event_create_kernel_counter(&counting, -1, task,
						      NULL, NULL);
		if (IS_ERR(st)) {
			perf_event_release_kernel(ev);
			if (guard)
				perf_event_release_kernel(guard);
			return PTR_ERR(st);
		}
		perf_event_enable(ev);
		ctr->steppers[ctr->nr_events] = st;
		if (guard)
			ctr->guards[ctr->nr_events] = guard;
	}
	ctr->events[ctr->nr_events++] = ev;
	return 0;
}

/*
 * Its perf events' mechanism (the plan's, or a uprobe's fallback) and, for
 * an arm64 user breakpoint, its address claimed against uprobes.
 */
static int tprof_pmu_use_events(struct tprof_pmu_ctr *ctr,
				const struct tprof_pmu_ctr_plan *cp)
{
	const struct tprof_pmu_counter *c = &ctr->prog->config.counters[ctr->index];

	ctr->counts_only = cp->events_mech == TPROF_PMU_MECH_COUNTS_ONLY;
	ctr->stepped = cp->events_mech == TPROF_PMU_MECH_STEPPED;
	ctr->guarded = ctr->stepped && c->kind == TPROF_PMU_EV_WATCHPOINT;
	ctr->nr_pieces = cp->nr_pieces;
	return cp->claims_address ? tprof_pmu_claim(ctr, c->addr, false) : 0;
}

/* Counter @i's events on each of the @n threads (one per piece, with steppers). */
static int tprof_pmu_create_task_events(struct tprof_pmu_prog *p, u32 i,
					struct task_struct **tasks, unsigned int n,
					bool exclude_kernel)
{
	const struct tprof_pmu_counter *c = &p->config.counters[i];
	const struct tprof_pmu_ctr_plan *cp = &p->plan->ctr[i];
	struct tprof_pmu_ctr *ctr = &p->ctr[i];
	struct perf_event_attr attr;
	unsigned int made, t;
	int ret;

	ret = tprof_pmu_use_events(ctr, cp);
	if (ret)
		return ret;
	ctr->events = kvcalloc(n * ctr->nr_pieces, sizeof(*ctr->events),
			       GFP_KERNEL_ACCOUNT);
	if (!ctr->events)
		return -ENOMEM;
	if (ctr->stepped) {
		ctr->steppers = kvcalloc(n * ctr->nr_pieces, sizeof(*ctr->steppers),
					 GFP_KERNEL_ACCOUNT);
		if (!ctr->steppers)
			return -ENOMEM;
	}
	if (ctr->guarded) {
		ctr->guards = kvcalloc(n * ctr->nr_pieces, sizeof(*ctr->guards),
				       GFP_KERNEL_ACCOUNT);
		if (!ctr->guards)
			return -ENOMEM;
	}
	for (t = 0; t < n; t++) {
		int err = 0;

		for (made = 0; made < ctr->nr_pieces; made++) {
			tprof_pmu_attr(c, &cp->pieces[made],
				       p->config.scope == TPROF_PMU_SCOPE_PROCESS,
				       exclude_kernel, ctr->counts_only, &attr);
			err = tprof_pmu_create_one(ctr, &attr, tasks[t],
						   ctr->counts_only);
			if (err)
				break;
		}
		if (!err)
			continue;
		/* A thread counts with all its pieces or none. */
		while (made--)
			tprof_pmu_release_one(ctr);
		if (err != -ESRCH)	/* -ESRCH: it exited */
			return tprof_pmu_create_err(c, err);
	}
	return ctr->nr_events ? 0 : -ESRCH;	/* every thread exited meanwhile */
}

/* Scope THREAD or PROCESS: each counter as its plan says. */
static int tprof_pmu_create_events(struct tprof_pmu_prog *p,
				   struct task_struct **tasks, unsigned int n,
				   bool exclude_kernel)
{
	unsigned int i, t;
	int ret;

	/* Every event it may make (E2BIG bounds them), before any exists. */
	ret = tprof_limit_charge(TPROF_LIMIT_PMU_EVENTS,
				 n * p->plan->events_per_thread, &p->charge);
	if (ret)
		return ret;
	for (i = 0; i < p->config.nr_counters; i++) {
		struct tprof_pmu_ctr *ctr = &p->ctr[i];

		switch (p->plan->ctr[i].mech) {
		case TPROF_PMU_MECH_KPROBE:
			ret = tprof_pmu_kprobe_create(ctr);
			break;
		case TPROF_PMU_MECH_UPROBE:
			/* Any thread that still has its mm. */
			ret = -ESRCH;
			for (t = 0; t < n && ret == -ESRCH; t++)
				ret = tprof_pmu_probe_create(ctr, tasks[t]);
			if (ret != -ENOENT)
				break;
			/* Not a file mapping: a debug register. */
			fallthrough;
		default:
			ret = tprof_pmu_create_task_events(p, i, tasks, n,
							   exclude_kernel);
			break;
		}
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Scope CPUS: each counter on every online CPU and on each CPU that comes
 * online; cpu_events.c owns them and their hotplug (created and released
 * by its work item, never in a cpuhp callback). A kprobe (arm64) sees
 * every CPU by itself: it takes no slot there.
 */
static int tprof_pmu_create_cpu_events(struct tprof_pmu_prog *p)
{
	/* A watchpoint's pieces are consecutive events of its counter. */
	/* With guards and steppers (arm64): up to 3 events per piece. */
	enum { TPROF_PMU_MAX_CPU_EVENTS = 3 * TPROF_PMU_MAX_COUNTERS * TPROF_PMU_MAX_WATCH_PIECES };
	void **ctxs;
	u32 i, j, n = 0;
	struct perf_event_attr *attrs;
	int ret = 0;

	/* Up to 32 x 136 bytes: not on the kernel stack (KASAN's frame limit). */
	attrs = kcalloc(TPROF_PMU_MAX_CPU_EVENTS, sizeof(*attrs), GFP_KERNEL);
	ctxs = kcalloc(TPROF_PMU_MAX_CPU_EVENTS, sizeof(*ctxs), GFP_KERNEL);
	if (!attrs || !ctxs) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < p->config.nr_counters; i++) {
		const struct tprof_pmu_counter *c = &p->config.counters[i];
		const struct tprof_pmu_ctr_plan *cp = &p->plan->ctr[i];
		struct tprof_pmu_ctr *ctr = &p->ctr[i];

		/* Never a uprobe here: one would be needed in every process. */
		if (cp->mech == TPROF_PMU_MECH_KPROBE) {
			ret = tprof_pmu_kprobe_create(ctr);
			if (ret)
				goto out;
			continue;
		}
		/* Counts only: perf's own counter, summed when read. */
		ret = tprof_pmu_use_events(ctr, cp);
		if (ret)
			goto out;
		ctr->cpu_first = n;
		for (j = 0; j < ctr->nr_pieces; j++, n++) {
			tprof_pmu_attr(c, &cp->pieces[j], false, false,
				       ctr->counts_only, &attrs[n]);
			ctxs[n] = ctr->counts_only ? NULL : ctr;
			if (!ctr->stepped)
				continue;
			/*
			 * Guard before, stepper after (see "Stepped counters" above):
			 * cpu_events.c makes a NULL context a counting event of
			 * perf's own, creates a CPU's counters in index order and
			 * enables a disabled one once its CPU's others exist.
			 */
			attrs[n].disabled = 1;
			if (ctr->guarded) {
				attrs[n + 1] = attrs[n];
				attrs[n] = attrs[n + 1];
				attrs[n].disabled = 0;
				attrs[n].sample_period = 0;
				ctxs[n] = NULL;
				ctxs[n + 1] = ctr;
				n++;
			}
			n++;
			attrs[n] = attrs[n - 1];
			attrs[n].disabled = 0;
			attrs[n].sample_period = 0;
			ctxs[n] = NULL;
		}
	}
	if (!n)
		goto out;
	/* Each on every CPU that is or comes online. */
	ret = tprof_limit_charge(TPROF_LIMIT_PMU_EVENTS, n * nr_cpu_ids,
				 &p->charge);
	if (ret)
		goto out;
	/* Copies attrs and ctxs; waits until every online CPU counts. */
	ret = tprof_cpu_events_start_each(&p->cpus, attrs, n, tprof_pmu_overflow,
					  ctxs, NULL);
	if (!ret)
		p->on_cpus = true;
out:
	kfree(attrs);
	kfree(ctxs);
	return ret;
}

/* On success the program owns @plan. */
static struct tprof_pmu_prog *tprof_pmu_alloc(const struct tprof_pmu_program *c,
					      struct tprof_pmu_plan *plan)
{
	struct tprof_pmu_prog *p;
	u32 i;

	p = kzalloc(sizeof(*p), GFP_KERNEL_ACCOUNT);
	if (!p)
		return NULL;
	p->cells = kvcalloc(TPROF_PMU_QUEUE_LEN, sizeof(*p->cells), GFP_KERNEL_ACCOUNT);
	if (!p->cells) {
		kfree(p);
		return NULL;
	}
	for (i = 0; i < TPROF_PMU_QUEUE_LEN; i++)
		p->cells[i].seq = i;
	p->config = *c;
	p->plan = plan;
	for (i = 0; i < TPROF_PMU_MAX_COUNTERS; i++) {
		const struct tprof_pmu_counter *k = &c->counters[i];
		struct tprof_pmu_ctr *ctr = &p->ctr[i];

		ctr->prog = p;
		ctr->index = i;
		atomic64_set(&ctr->next_threshold, k->threshold ?: U64_MAX);
		if (k->armed_by)
			ctr->armed_mask = 1U << (k->armed_by - 1);
		if (i < c->nr_counters && k->nr_subranges) {
			ctr->sub_width = tprof_pmu_subrange_width(k);
			ctr->sub = kvcalloc(k->nr_subranges, sizeof(*ctr->sub),
					    GFP_KERNEL_ACCOUNT);
			if (!ctr->sub)
				goto err;
		}
	}
	for (i = 0; i < c->nr_rules; i++) {
		u32 mask = tprof_pmu_rule_counters(&c->rules[i]), j;

		for (j = 0; j < TPROF_PMU_MAX_COUNTERS; j++)
			if (mask & (1U << j))
				p->ctr[j].rules |= 1U << i;
	}
	init_irq_work(&p->kick, tprof_pmu_kick);
	INIT_WORK(&p->send_work, tprof_pmu_send_work);
	spin_lock_init(&p->monitor_lock);
	INIT_LIST_HEAD(&p->node);
	p->pid_ns = get_pid_ns(task_active_pid_ns(current));
	return p;

err:
	for (i = 0; i < TPROF_PMU_MAX_COUNTERS; i++)
		kvfree(p->ctr[i].sub);
	kvfree(p->cells);
	kfree(p);
	return NULL;
}

/*
 * Who may count what (admission.h): every CPU needs CAP_PERFMON (EPERM);
 * a thread or process perf's rules, kernel addresses CAP_PERFMON (EACCES)
 * and kernel breakpoints and watchpoints CAP_SYS_ADMIN (EPERM). On 0
 * with a target, @a holds it and its exec lock until its events exist.
 */
static int tprof_pmu_check_access(const struct tprof_pmu_program *c,
				  const struct tprof_pmu_plan *plan,
				  struct tprof_admission *a)
{
	bool privileged = perfmon_capable();

	memset(a, 0, sizeof(*a));
	if (c->scope == TPROF_PMU_SCOPE_CPUS && !privileged)	/* system-wide data */
		return -EPERM;
	if (!privileged && plan->kernel_addresses)
		return -EACCES;
	/* Asked here, never of the kernel worker that makes every-CPU events. */
	if (plan->kernel_debug_regs && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (c->scope == TPROF_PMU_SCOPE_CPUS) {
		a->privileged = true;
		return 0;
	}
	return tprof_admit(c->pid, c->scope == TPROF_PMU_SCOPE_THREAD ?
			   PIDTYPE_PID : PIDTYPE_TGID, TPROF_ADMIT_PERF, a);
}

/*
 * A program from one pmu_ioctl.c has copied and checked
 * (tprof_pmu_program_check()): its plan, the checks that need it (debug
 * registers, instruction alignment, who may count what), then its events.
 * Returns the program, or an ERR_PTR with nothing left behind.
 */
struct tprof_pmu_prog *tprof_pmu_prog_create(const struct tprof_pmu_program *c)
{
	struct task_struct **tasks = NULL;
	struct tprof_admission adm;
	struct tprof_pmu_plan *plan;
	struct tprof_pmu_prog *p;
	unsigned int n = 0, i;
	int ret;

	/* Up to 8 x 88 bytes: not on the kernel stack (KASAN's frame limit). */
	plan = kmalloc(sizeof(*plan), GFP_KERNEL_ACCOUNT);
	if (!plan)
		return ERR_PTR(-ENOMEM);
	tprof_pmu_plan_make(c, plan);
	ret = tprof_pmu_check_slots(plan);
	if (!ret && plan->misaligned_insn)
		ret = -EINVAL;
	if (!ret)
		ret = tprof_pmu_check_access(c, plan, &adm);
	if (ret) {
		kfree(plan);
		return ERR_PTR(ret);
	}
	p = tprof_pmu_alloc(c, plan);
	if (!p) {
		kfree(plan);
		tprof_admit_end(&adm);
		return ERR_PTR(-ENOMEM);
	}
	p->show_kernel = adm.privileged;
	if (c->scope == TPROF_PMU_SCOPE_CPUS) {
		mutex_lock(&tprof_pmu_slots_lock);
		ret = tprof_pmu_reserve_cpu_slots(p);
		if (!ret)
			ret = tprof_pmu_create_cpu_events(p);
		mutex_unlock(&tprof_pmu_slots_lock);
	} else {
		p->target = tprof_admit_take_pid(&adm);	/* probes: who is in scope */
		p->target_since_ns = ktime_get_ns();
		/* Probes: the admitted mm; any other must be dumpable (pmu_probe.c). */
		task_lock(adm.task);
		if (adm.task->mm) {
			mmgrab(adm.task->mm);
			p->target_mm = adm.task->mm;
		}
		task_unlock(adm.task);
		ret = tprof_pmu_targets(c, p->target, &tasks, &n);
		if (!ret && n * plan->events_per_thread > TPROF_PMU_MAX_EVENTS)
			ret = -E2BIG;
		if (!ret) {
			mutex_lock(&tprof_pmu_slots_lock);
			ret = tprof_pmu_check_task_slots(plan, tasks, n);
			if (!ret)
				ret = tprof_pmu_create_events(p, tasks, n,
							      adm.exclude_kernel);
			mutex_unlock(&tprof_pmu_slots_lock);
		}
		for (i = 0; i < n; i++)
			put_task_struct(tasks[i]);
		kvfree(tasks);
	}
	/* Its events exist: an exec from here on is perf's to end (and ours). */
	tprof_admit_end(&adm);
	if (ret) {
		tprof_pmu_free(p);
		return ERR_PTR(ret);
	}
	return p;
}
