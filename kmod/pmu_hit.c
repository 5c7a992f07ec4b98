// SPDX-License-Identifier: GPL-2.0
/*
 * A PMU program's hit path: perf's overflow handler for the program's
 * events and the u/kprobes' handlers (pmu_probe.c) come here with one
 * event (one hit of a breakpoint, K of a hardware counter). The counter's
 * instruction range and data range (a page fault's address) filter it;
 * it adds to its value, then checks its threshold and the rules that read
 * it, all with atomics: it may run in NMI, IRQ, or with any lock of the
 * code it interrupts held. What fires goes into the program's lock-free
 * queue (pmu.c) and an irq_work kicks the send work (pmu_netlink.c).
 *
 * Also the scope test (which tasks a program counts) and the exec hook
 * that tells a program that a task of its scope left for a setuid image.
 */
#include <linux/bitops.h>
#include <linux/irq_work.h>
#include <linux/perf_event.h>
#include <linux/pid_namespace.h>
#include <linux/ptrace.h>
#include <linux/rculist.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/workqueue.h>
#include "admission.h"
#include "pmu.h"
#include "pmu_plan.h"
#include "core/pmu_rules.h"

static void tprof_pmu_snapshot(struct tprof_pmu_prog *p, u64 *values)
{
	u32 i;

	for (i = 0; i < TPROF_PMU_MAX_COUNTERS; i++)
		values[i] = i < p->config.nr_counters ?
			atomic64_read(&p->ctr[i].value) : 0;
}

/* @addr: the data address of a data-ranged counter's event, else 0. */
static void tprof_pmu_raise(struct tprof_pmu_prog *p, u32 kind, u32 index,
			    struct pt_regs *regs, u64 addr, const u64 *values)
{
	struct tprof_pmu_cell *cell;
	struct tprof_pmu_event *ev;
	u64 seq = atomic64_inc_return(&p->raised);
	u64 ip = regs ? instruction_pointer(regs) : 0;

	ev = tprof_pmu_queue_reserve(p, &cell);
	if (!ev) {
		atomic64_inc(&p->lost);
		atomic64_inc(&p->lost_pending);
		return;
	}
	memset(ev, 0, sizeof(*ev));
	ev->seq = seq;
	ev->time_ns = ktime_get_mono_fast_ns();
	ev->ip = regs && !user_mode(regs) && !p->show_kernel ? 0 : ip;
	ev->addr = p->show_kernel || tprof_pmu_user_address(addr, 1) ? addr : 0;
	ev->kind = kind;
	ev->index = index;
	ev->pid = task_tgid_nr_ns(current, p->pid_ns);
	ev->tid = task_pid_nr_ns(current, p->pid_ns);
	ev->cpu = smp_processor_id();
	ev->nr_counters = p->config.nr_counters;
	memcpy(ev->values, values, sizeof(ev->values));
	tprof_pmu_queue_publish(cell);
	atomic64_inc(&p->queued);
	irq_work_queue(&p->kick);
}

static bool tprof_pmu_in_range(const struct tprof_pmu_counter *c,
			       struct pt_regs *regs)
{
	u64 ip;

	if (!(c->flags & TPROF_PMU_CTR_RANGE))
		return true;
	if (!regs)
		return false;
	ip = instruction_pointer(regs);
	return ip >= c->range_start && ip < c->range_end;
}

/*
 * One event (one hit of a breakpoint, K of a hardware counter), with its
 * data address (perf's sample addr; 0 if it has none): from perf's
 * overflow handler or a u/kprobe's (pmu_probe.c), preemption off.
 */
static void tprof_pmu_count(struct tprof_pmu_ctr *ctr, struct pt_regs *regs,
			    u64 data_addr)
{
	struct tprof_pmu_prog *p = ctr->prog;
	const struct tprof_pmu_counter *c = &p->config.counters[ctr->index];
	u64 values[TPROF_PMU_MAX_COUNTERS], v, next, where;
	bool data = c->flags & TPROF_PMU_CTR_DATA_RANGE;
	unsigned long rules = ctr->rules;
	unsigned int r;

	if (ctr->armed_mask && !(atomic_read(&p->armed) & ctr->armed_mask))
		return;	/* a secondary counter whose rule has not fired */
	if (!tprof_pmu_in_range(c, regs))
		return;
	if (data && !tprof_pmu_in_data_range(c, data_addr))
		return;
	if (!data)
		data_addr = 0;	/* events carry it for data ranges only */
	v = atomic64_add_return(c->period ? c->period : 1, &ctr->value);
	if (ctr->sub) {
		/* The data range's subranges if it has one (see the uapi). */
		where = data ? data_addr : instruction_pointer(regs);
		atomic64_add(c->period ? c->period : 1,
			     &ctr->sub[(where - tprof_pmu_subrange_base(c)) /
				       ctr->sub_width]);
	}

	next = atomic64_read(&ctr->next_threshold);
	while (v >= next) {
		u64 after = c->threshold_every ? next + c->threshold_every : U64_MAX;

		if (atomic64_try_cmpxchg(&ctr->next_threshold, &next, after)) {
			atomic64_inc(&ctr->threshold_fired);
			tprof_pmu_snapshot(p, values);
			tprof_pmu_raise(p, TPROF_PMU_EVENT_THRESHOLD, ctr->index,
					regs, data_addr, values);
			break;
		}
	}

	if (!rules)
		return;
	tprof_pmu_snapshot(p, values);
	for_each_set_bit(r, &rules, TPROF_PMU_MAX_RULES) {
		const struct tprof_pmu_rule *rule = &p->config.rules[r];
		int holds = tprof_pmu_rule_holds(rule, values);

		/* Edge-triggered: false (or never evaluated) -> true. */
		if (atomic_xchg(&p->rule_state[r], holds) || !holds)
			continue;
		if (rule->rearm == TPROF_PMU_REARM_ONCE &&
		    atomic_xchg(&p->rule_done[r], 1))
			continue;
		atomic64_inc(&p->rule_fired[r]);
		/* Its secondary counters count from the next event on. */
		atomic_or(1U << r, &p->armed);
		tprof_pmu_raise(p, TPROF_PMU_EVENT_RULE, r, regs, data_addr,
				values);
	}
}

/*
 * The thread; or the process and its descendants (perf's inherit); or,
 * for scope CPUS, every task.
 */
bool tprof_pmu_in_scope(const struct tprof_pmu_prog *p, struct task_struct *t)
{
	bool in = false;

	if (p->config.scope == TPROF_PMU_SCOPE_CPUS)
		return true;
	if (p->config.scope == TPROF_PMU_SCOPE_THREAD)
		return task_pid(t) == p->target;
	if (task_tgid(t) == p->target)
		return true;
	/*
	 * A descendant counts as perf's inherit would count it: only if the
	 * process that links it to the target was forked after the program
	 * was created. An orphan forked before, reparented to a subreaper in
	 * the target, is not (nor is an older child).
	 */
	rcu_read_lock();
	/* Up to the idle task (pid 0), the parent of init and kthreadd. */
	for (; t->pid; t = rcu_dereference(t->real_parent)) {
		struct task_struct *parent = rcu_dereference(t->real_parent);

		if (parent->pid && task_tgid(parent) == p->target) {
			in = READ_ONCE(t->group_leader)->start_time >=
			     p->target_since_ns;
			break;
		}
	}
	rcu_read_unlock();
	return in;
}

/*
 * sched_process_exec (preemption off): @t exec'd an image its observers
 * may not see. perf has exited its events (perf_event_exit_task()) and
 * the probes refuse its new mm (pmu_probe.c); each program of a thread or
 * process that had it in scope counts that it left (exec_left), so that
 * its creator learns why the counts stop. Setuid execs are rare: a walk.
 */
void tprof_pmu_on_exec(struct task_struct *t)
{
	struct tprof_pmu_prog *p;

	if (!tprof_exec_leaves_observers(t))
		return;
	rcu_read_lock();
	list_for_each_entry_rcu(p, &tprof_pmu_programs, node)
		if (p->config.scope != TPROF_PMU_SCOPE_CPUS && p->target &&
		    tprof_pmu_in_scope(p, t))
			atomic64_inc(&p->exec_left);
	rcu_read_unlock();
}

/* A probe's hit (pmu_probe.c): breakpoints carry no data address. */
void tprof_pmu_hit(struct tprof_pmu_ctr *ctr, struct pt_regs *regs)
{
	tprof_pmu_count(ctr, regs, 0);
}

/* Scope CPUS: a piece's events in cpus (guard, ours, stepper; arm64). */
static u32 tprof_pmu_cpu_stride(const struct tprof_pmu_ctr *ctr)
{
	return ctr->stepped ? (ctr->guarded ? 3 : 2) : 1;
}

void tprof_pmu_overflow(struct perf_event *event, struct perf_sample_data *data,
			struct pt_regs *regs)
{
	struct tprof_pmu_ctr *ctr = event->overflow_handler_context;
	struct tprof_pmu_prog *p = ctr->prog;

	/* Every CPU: a counter fires a short while after its CPU went down. */
	if (p->config.scope == TPROF_PMU_SCOPE_CPUS) {
		u32 i, stride = tprof_pmu_cpu_stride(ctr);
		u32 ours = ctr->guarded ? 1 : 0;	/* after its guard */

		for (i = 0; i < ctr->nr_pieces; i++)
			if (tprof_cpu_event(&p->cpus, ctr->cpu_first + i * stride + ours) == event)
				break;
		if (i == ctr->nr_pieces)
			return;
	}
	/* perf_sample_data_init() sets addr only when it is nonzero. */
	tprof_pmu_count(ctr, regs, data->sample_flags & PERF_SAMPLE_ADDR ?
			data->addr : 0);
}

void tprof_pmu_kick(struct irq_work *work)
{
	struct tprof_pmu_prog *p = container_of(work, struct tprof_pmu_prog, kick);

	queue_work(system_unbound_wq, &p->send_work);
}
