// SPDX-License-Identifier: GPL-2.0
/*
 * Per-thread metrics, the hot path: the context-switch hook charges this
 * CPU's deltas to the outgoing thread's slot. It runs with IRQs off and the
 * runqueue lock held: it takes the outgoing thread's slot lock and, only
 * when the slot becomes nonzero, this CPU's list lock (see metrics.h). It
 * never allocates, sleeps or wakes anyone.
 */
#include <linux/perf_event.h>
#include <linux/rcupdate.h>
#include <linux/sched/clock.h>
#include "metrics.h"
#include "self_page.h"

/*
 * PCum(M) of this CPU; IRQs off. An event not counting gives no delta and
 * sets *missing (a counter not created yet, or new since the last read).
 * Inlined into the switch path; tprof_metric_read() for everyone else.
 */
static __always_inline u64 __tprof_metric_read(struct tprof_metrics_state *st,
					       struct tprof_metrics_cpu *cs,
					       u32 m, bool *missing)
{
	struct perf_event *ev;
	u64 now;
	u32 gen;

	switch (st->sources[m]) {
	case TPROF_SRC_CLOCK:
		/*
		 * PCum and PLastCum are per CPU, so this CPU's raw clock is
		 * enough: where the sched clock is stable (a constant TSC)
		 * the runqueue clock is sched_clock() plus a constant, so the
		 * deltas are the scheduler's own; local_clock() would add a
		 * call on every switch. (Where it is not, the runqueue filters
		 * each CPU's clock and single slices may differ a little from
		 * schedstat.) A step back is clamped in take_deltas.
		 */
		return sched_clock();
	case TPROF_SRC_DISPATCHES:
		return cs->dispatches;
	default:
		ev = tprof_metrics_cpu_event_gen(m, &gen);
		if (!ev || ev->state != PERF_EVENT_STATE_ACTIVE ||
		    ev->oncpu != smp_processor_id()) {
			/* Not created yet (the CPU just came online). */
			*missing = true;
			return cs->last[m];
		}
		if (st->sources[m] == TPROF_SRC_EVENT_READ)
			ev->pmu->read(ev);
		now = local64_read(&ev->count);
		if (unlikely(gen != cs->gen_seen[m])) {
			/*
			 * A counter created anew since last[] was read (this
			 * CPU went down and up): it counts from here on, and
			 * what came before it was missed.
			 */
			cs->gen_seen[m] = gen;
			cs->last[m] = now;
			*missing = true;
		}
		return now;
	}
}

u64 tprof_metric_read(struct tprof_metrics_state *st,
		      struct tprof_metrics_cpu *cs, u32 m)
{
	bool missing = false;

	return __tprof_metric_read(st, cs, m, &missing);
}

/* Puts @slot on this CPU's nonzero list. Slot lock held, IRQs off. */
void tprof_mslot_list_here(struct tprof_metrics_state *st,
			   struct tprof_mslot *slot)
{
	struct tprof_metrics_cpu *cs = this_cpu_ptr(st->cpu);

	raw_spin_lock(&cs->list_lock);
	list_add_tail(&slot->node, &cs->listed);
	cs->nr_listed++;
	slot->list_cpu = smp_processor_id();
	raw_spin_unlock(&cs->list_lock);
	slot->flags |= TPROF_MSLOT_LISTED;
}

/*
 * Takes @slot off its CPU's list, if it is on one (a slot in a drainer's
 * batch stays there: the drainer skips it if it is zero). Slot lock held.
 */
void tprof_mslot_unlist(struct tprof_metrics_state *st, struct tprof_mslot *slot)
{
	struct tprof_metrics_cpu *cs;
	int cpu = READ_ONCE(slot->list_cpu);

	if (!(slot->flags & TPROF_MSLOT_LISTED) || cpu < 0)
		return;
	cs = per_cpu_ptr(st->cpu, cpu);
	raw_spin_lock(&cs->list_lock);
	/* A drainer may have taken it into its batch meanwhile. */
	if (slot->list_cpu == cpu) {
		list_del_init(&slot->node);
		cs->nr_listed--;
		slot->flags &= ~TPROF_MSLOT_LISTED;
	}
	raw_spin_unlock(&cs->list_lock);
}

/* TCum += delta, listed if it became nonzero. Slot lock held, IRQs off. */
static inline void tprof_mslot_account(struct tprof_metrics_state *st,
				       struct tprof_mslot *slot,
				       const u64 *delta)
{
	tprof_tcum_add(slot->tcum, delta, st->config.nr_metrics);
	if (!(slot->flags & TPROF_MSLOT_LISTED) &&
	    !tprof_tcum_is_zero(slot->tcum, st->config.nr_metrics))
		tprof_mslot_list_here(st, slot);
}

/*
 * A consumer's copy to userspace failed: the values go back to the thread
 * they were taken from (same slot, same identity checked by the caller).
 * Slot lock held, IRQs off.
 */
void tprof_mslot_give_back(struct tprof_metrics_state *st,
			   struct tprof_mslot *slot, const u64 *values)
{
	tprof_mslot_account(st, slot, values);
}

/*
 * This CPU's deltas since its last switch (Delta = PCum - PLastCum,
 * PLastCum = PCum) into @delta. Returns false if they belong to nobody
 * (the CPU was not primed yet, or @task is its idle task). IRQs off.
 */
static __always_inline bool __tprof_metrics_take_deltas(
	struct tprof_metrics_state *st, struct task_struct *task, u64 *delta)
{
	struct tprof_metrics_cpu *cs = this_cpu_ptr(st->cpu);
	u32 n = st->config.nr_metrics;
	bool missing = false;
	u32 m;

	for (m = 0; m < n; m++) {
		u64 now = __tprof_metric_read(st, cs, m, &missing);

		delta[m] = (s64)(now - cs->last[m]) > 0 ? now - cs->last[m] : 0;
		cs->last[m] = now;
	}
	/* Only this CPU writes it (IRQs off); the status sums all CPUs. */
	if (unlikely(missing))
		WRITE_ONCE(cs->uncounted, cs->uncounted + 1);
	if (unlikely(!cs->primed)) {
		cs->primed = true;
		return false;
	}
	return !is_idle_task(task);
}

bool tprof_metrics_take_deltas(struct tprof_metrics_state *st,
			       struct task_struct *task, u64 *delta)
{
	return __tprof_metrics_take_deltas(st, task, delta);
}

/* Charges this CPU's deltas since the last switch to @task. IRQs off. */
static __always_inline void __tprof_metrics_charge(struct tprof_metrics_state *st,
						   struct task_struct *task)
{
	u64 delta[TPROF_MAX_METRICS];	/* [0, n) used: not zeroed, it is hot */
	struct tprof_mslot *slot;

	if (!__tprof_metrics_take_deltas(st, task, delta))
		return;
	slot = tprof_mslot_of(st, task);
	if (unlikely(!slot))
		return;
	raw_spin_lock(&slot->lock);
	/* The index is read locklessly: is the slot still this thread's? */
	if (likely(slot->key == (u64)(uintptr_t)task)) {
		tprof_mslot_account(st, slot, delta);
		tprof_tcum_add(slot->total, delta, st->config.nr_metrics);
		if (slot->self_page)
			tprof_self_page_charge(slot->self_page, delta);
	}
	raw_spin_unlock(&slot->lock);
}

void tprof_metrics_charge(struct tprof_metrics_state *st,
			  struct task_struct *task)
{
	__tprof_metrics_charge(st, task);
}

/* Stamps the switch-in time on @next's self page. IRQs off. */
static void tprof_metrics_switch_in(struct tprof_metrics_state *st,
				    struct task_struct *next)
{
	struct tprof_mslot *slot = tprof_mslot_of(st, next);

	if (!slot)
		return;
	raw_spin_lock(&slot->lock);
	if (slot->key == (u64)(uintptr_t)next && slot->self_page)
		tprof_self_page_switch_in(slot->self_page);
	raw_spin_unlock(&slot->lock);
}

/* sched_switch: IRQs off, runqueue lock held. */
void tprof_metrics_sched_switch(struct task_struct *prev,
				struct task_struct *next)
{
	struct tprof_metrics_state *st = rcu_dereference_sched(tprof_metrics_live);

	if (!st)
		return;
	this_cpu_ptr(st->cpu)->dispatches++;
	__tprof_metrics_charge(st, prev);
	if (atomic_read(&st->self_pages) && !is_idle_task(next))
		tprof_metrics_switch_in(st, next);
}
