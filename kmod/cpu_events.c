// SPDX-License-Identifier: GPL-2.0
/*
 * Per-CPU perf counters that follow CPU hotplug (API in cpu_events.h).
 *
 * Why a work item: perf's software events take cpus_read_lock() when they
 * are created or released (their static keys), and the cpuhp callbacks run
 * with the hotplug lock held for writing, so creating or releasing one
 * inside a callback deadlocks (cpuhp/N hangs). Here the callbacks only
 * publish or unpublish state and queue ce->work, which creates and releases
 * the counters outside the hotplug lock.
 *
 * Locking rules:
 *   - Every instance is an instance of one multi-instance dynamic cpuhp
 *     state (set up by the first start, removed by the last stop, under
 *     tprof_ce_state_lock); its callbacks run on the CPU concerned (in its
 *     cpuhp thread), so the unpublishing WRITE_ONCE() of a CPU's pointers
 *     happens on that CPU.
 *   - ce->lock (raw spinlock, IRQs off) guards every CPU's online/want
 *     flags and own/dead arrays and ce->err. Nothing sleeps under it.
 *     Nobody holds it while creating or releasing a counter.
 *   - live[] (what tprof_cpu_event() returns) is read locklessly by code
 *     running with preemption or IRQs off; it is written under ce->lock:
 *     cleared by the down callback on its CPU, set by the work (store-release)
 *     once the CPU's counters exist and the CPU is still up.
 *   - A counter that was ever published is moved to dead[] when it is
 *     unpublished and released by the work only after synchronize_rcu(), so
 *     a reader that saw it (preemption off) is done. A counter that was
 *     never published is released at once.
 *   - ce->read_lock (mutex) keeps every published counter (own[], dead[])
 *     alive while tprof_cpu_events_read() sums them: the work holds it to
 *     release a dead counter, after adding its count to retired[]. Only
 *     the work and the reader take it; the reader takes no other lock
 *     under it but ce->lock, the work takes perf's (release) under it.
 *   - The work never takes a lock of the caller's; start and stop flush it.
 *     Start and stop are serialised by the caller (one per instance).
 */
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include "cpu_events.h"

static inline struct perf_event **tprof_ce_live(struct tprof_cpu_events *ce,
						struct tprof_cpu_events_pcpu *pc)
{
	return pc->ev;
}

static inline struct perf_event **tprof_ce_own(struct tprof_cpu_events *ce,
					       struct tprof_cpu_events_pcpu *pc)
{
	return pc->ev + ce->nr;
}

static inline struct perf_event **tprof_ce_dead(struct tprof_cpu_events *ce,
						struct tprof_cpu_events_pcpu *pc)
{
	return pc->ev + 2 * ce->nr;
}

static void tprof_ce_release(struct perf_event **evs, unsigned int nr)
{
	unsigned int i;

	for (i = 0; i < nr; i++) {
		if (evs[i])
			perf_event_release_kernel(evs[i]);
		evs[i] = NULL;
	}
}

/* @cpu's counters into @evs (sleeps); all or none. */
static int tprof_ce_create(struct tprof_cpu_events *ce, unsigned int cpu,
			   struct perf_event **evs)
{
	unsigned int i;

	for (i = 0; i < ce->nr; i++) {
		const struct perf_event_attr *attr = &ce->attrs[i];
		/* start_each: a NULL context is a counter of perf's own. */
		bool own = ce->ctxs && !ce->ctxs[i];
		struct perf_event *ev;
		int err;

		ev = perf_event_create_kernel_counter((struct perf_event_attr *)attr,
						      cpu, NULL, own ? NULL : ce->handler,
						      ce->ctxs ? ce->ctxs[i] : ce->ctx);
		if (!IS_ERR(ev)) {
			evs[i] = ev;
			continue;
		}
		err = PTR_ERR(ev);
		tprof_ce_release(evs, ce->nr);
		/* perf says EINVAL for a tracepoint id it does not know. */
		if (attr->type == PERF_TYPE_TRACEPOINT &&
		    (err == -EINVAL || err == -ENOENT))
			err = -ENOENT;
		/* No PMU (e.g. a VM): "not available", not silence. */
		else if (attr->type != PERF_TYPE_SOFTWARE &&
			 (err == -ENOENT || err == -ENODEV || err == -EOPNOTSUPP))
			err = -EOPNOTSUPP;
		return err;
	}
	/* Counters that must not run before the later ones exist. */
	for (i = 0; i < ce->nr; i++)
		if (ce->attrs[i].disabled)
			perf_event_enable(evs[i]);
	return 0;
}

static void tprof_ce_work(struct work_struct *work)
{
	struct tprof_cpu_events *ce = container_of(work, struct tprof_cpu_events,
						   work);
	unsigned int nr = ce->nr, cpu, i;
	struct perf_event **evs;
	unsigned long flags;
	bool buried = false;

	evs = kcalloc(nr, sizeof(*evs), GFP_KERNEL_ACCOUNT);
	for_each_possible_cpu(cpu) {
		struct tprof_cpu_events_pcpu *pc = per_cpu_ptr(ce->pcpu, cpu);
		struct perf_event **live = tprof_ce_live(ce, pc);
		struct perf_event **own = tprof_ce_own(ce, pc);
		struct perf_event **dead = tprof_ce_dead(ce, pc);
		bool want, started;
		int err;

		raw_spin_lock_irqsave(&ce->lock, flags);
		if (!pc->online) {
			/* Unpublished by the down callback: bury until a GP. */
			for (i = 0; i < nr; i++) {
				if (!own[i])
					continue;
				WARN_ON_ONCE(dead[i]);
				dead[i] = own[i];
				own[i] = NULL;
				buried = true;
			}
		}
		want = pc->want && evs;
		if (want)
			pc->want = false;
		raw_spin_unlock_irqrestore(&ce->lock, flags);
		if (!want)
			continue;

		err = tprof_ce_create(ce, cpu, evs);
		raw_spin_lock_irqsave(&ce->lock, flags);
		started = ce->started;
		if (!pc->online) {
			/* Went down meanwhile: never published, release now. */
			err = 0;
		} else if (err) {
			if (!ce->err)
				ce->err = err;
		} else {
			WRITE_ONCE(pc->gen, pc->gen + 1);
			for (i = 0; i < nr; i++) {
				if (own[i]) {
					/* An earlier life of this CPU (cannot be live). */
					WARN_ON_ONCE(dead[i]);
					dead[i] = own[i];
					buried = true;
				}
				own[i] = evs[i];
				smp_store_release(&live[i], evs[i]);
				evs[i] = NULL;
			}
		}
		raw_spin_unlock_irqrestore(&ce->lock, flags);
		tprof_ce_release(evs, nr);
		if (err && started)
			pr_warn_ratelimited("cpu %u: no perf counters: %d\n", cpu, err);
	}
	if (!evs) {
		/* Cannot create now; tell start, and try again at the next event. */
		raw_spin_lock_irqsave(&ce->lock, flags);
		if (!ce->err)
			ce->err = -ENOMEM;
		raw_spin_unlock_irqrestore(&ce->lock, flags);
	}
	kfree(evs);
	if (!buried)
		return;
	synchronize_rcu();	/* readers of the unpublished pointers are done */
	mutex_lock(&ce->read_lock);
	for_each_possible_cpu(cpu) {
		struct tprof_cpu_events_pcpu *pc = per_cpu_ptr(ce->pcpu, cpu);
		struct perf_event **dead = tprof_ce_dead(ce, pc);
		u64 enabled, running;

		/* What it counted stays in the sum (tprof_cpu_events_read()). */
		for (i = 0; i < nr; i++)
			if (dead[i])
				ce->retired[i] += perf_event_read_value(dead[i], &enabled,
									&running);
		/* Only this work fills dead[]: ce->lock is not needed to empty
		 * it; read_lock keeps it from a reader. */
		tprof_ce_release(dead, nr);
	}
	mutex_unlock(&ce->read_lock);
}

/* cpuhp, on @cpu: mark it and let the work create its counters. */
static int tprof_ce_cpu_up(unsigned int cpu, struct hlist_node *node)
{
	struct tprof_cpu_events *ce = hlist_entry(node, struct tprof_cpu_events,
						  node);
	struct tprof_cpu_events_pcpu *pc = per_cpu_ptr(ce->pcpu, cpu);
	unsigned long flags;

	raw_spin_lock_irqsave(&ce->lock, flags);
	pc->online = true;
	pc->want = ce->nr > 0 && (!ce->cpus || cpumask_test_cpu(cpu, ce->cpus));
	raw_spin_unlock_irqrestore(&ce->lock, flags);
	if (ce->ops && ce->ops->cpu_up)
		ce->ops->cpu_up(cpu, ce->ctx);
	if (ce->nr)
		schedule_work(&ce->work);
	return 0;
}

/* cpuhp, on @cpu: unpublish its counters now; the work releases them. */
static int tprof_ce_cpu_down(unsigned int cpu, struct hlist_node *node)
{
	struct tprof_cpu_events *ce = hlist_entry(node, struct tprof_cpu_events,
						  node);
	struct tprof_cpu_events_pcpu *pc = per_cpu_ptr(ce->pcpu, cpu);
	unsigned long flags;
	unsigned int i;

	raw_spin_lock_irqsave(&ce->lock, flags);
	pc->online = false;
	pc->want = false;
	for (i = 0; i < ce->nr; i++)
		WRITE_ONCE(tprof_ce_live(ce, pc)[i], NULL);
	raw_spin_unlock_irqrestore(&ce->lock, flags);
	if (ce->ops && ce->ops->cpu_down)
		ce->ops->cpu_down(cpu, ce->ctx);
	if (ce->nr)
		schedule_work(&ce->work);
	return 0;
}

/*
 * One multi-instance dynamic cpuhp state for every instance (the dynamic
 * states are few and shared with the rest of the kernel): set up by the
 * first instance that starts, removed when the last one stops.
 */
static DEFINE_MUTEX(tprof_ce_state_lock);
static int tprof_ce_state;
static unsigned int tprof_ce_users;

static int tprof_ce_get_state(void)
{
	int ret = 0;

	mutex_lock(&tprof_ce_state_lock);
	if (!tprof_ce_users) {
		ret = cpuhp_setup_state_multi(CPUHP_AP_ONLINE_DYN, "tprof:cpu_events",
					      tprof_ce_cpu_up, tprof_ce_cpu_down);
		if (ret >= 0) {
			tprof_ce_state = ret;
			ret = 0;
		}
	}
	if (!ret)
		tprof_ce_users++;
	mutex_unlock(&tprof_ce_state_lock);
	return ret;
}

static void tprof_ce_put_state(void)
{
	mutex_lock(&tprof_ce_state_lock);
	if (!--tprof_ce_users)
		cpuhp_remove_multi_state(tprof_ce_state);
	mutex_unlock(&tprof_ce_state_lock);
}

/* What start allocated (also on its error paths). */
static void tprof_ce_free(struct tprof_cpu_events *ce)
{
	free_percpu(ce->pcpu);
	kfree(ce->attrs);
	kfree(ce->ctxs);
	kfree(ce->retired);
	ce->pcpu = NULL;
	ce->attrs = NULL;
	ce->ctxs = NULL;
	ce->retired = NULL;
}

static int tprof_ce_start(struct tprof_cpu_events *ce,
			  const struct perf_event_attr *attrs, unsigned int nr,
			  perf_overflow_handler_t handler, void *ctx,
			  void *const *ctxs,
			  const struct tprof_cpu_events_ops *ops,
			  const struct cpumask *cpus)
{
	unsigned long flags;
	int ret;

	memset(ce, 0, sizeof(*ce));
	ce->cpus = cpus;
	ce->nr = nr;
	ce->handler = handler;
	ce->ctx = ctx;
	ce->ops = ops;
	raw_spin_lock_init(&ce->lock);
	mutex_init(&ce->read_lock);
	INIT_WORK(&ce->work, tprof_ce_work);
	INIT_HLIST_NODE(&ce->node);
	if (nr) {
		ce->attrs = kmemdup(attrs, nr * sizeof(*attrs), GFP_KERNEL_ACCOUNT);
		if (!ce->attrs)
			return -ENOMEM;
	}
	if (nr) {
		ce->retired = kcalloc(nr, sizeof(*ce->retired), GFP_KERNEL_ACCOUNT);
		if (!ce->retired) {
			tprof_ce_free(ce);
			return -ENOMEM;
		}
	}
	if (nr && ctxs) {
		ce->ctxs = kmemdup(ctxs, nr * sizeof(*ctxs), GFP_KERNEL_ACCOUNT);
		if (!ce->ctxs) {
			tprof_ce_free(ce);
			return -ENOMEM;
		}
	}
	ce->pcpu = __alloc_percpu(sizeof(struct tprof_cpu_events_pcpu) +
				  3 * nr * sizeof(struct perf_event *),
				  __alignof__(struct tprof_cpu_events_pcpu));
	if (!ce->pcpu) {
		tprof_ce_free(ce);
		return -ENOMEM;
	}
	ret = tprof_ce_get_state();
	if (ret) {
		tprof_ce_free(ce);
		return ret;
	}
	/* Runs tprof_ce_cpu_up() on every online CPU, on that CPU. */
	ret = cpuhp_state_add_instance(tprof_ce_state, &ce->node);
	if (ret) {
		/* Not added, or removed again (cpu_down ran): no callback left. */
		flush_work(&ce->work);
		tprof_ce_work(&ce->work);	/* nothing can queue it now */
		tprof_ce_put_state();
		tprof_ce_free(ce);
		return ret;
	}
	flush_work(&ce->work);
	raw_spin_lock_irqsave(&ce->lock, flags);
	ret = ce->err;
	ce->started = !ret;
	raw_spin_unlock_irqrestore(&ce->lock, flags);
	if (ret)
		tprof_cpu_events_stop(ce);
	return ret;
}

int tprof_cpu_events_start(struct tprof_cpu_events *ce,
			   const struct perf_event_attr *attrs, unsigned int nr,
			   perf_overflow_handler_t handler, void *ctx,
			   const struct tprof_cpu_events_ops *ops)
{
	return tprof_ce_start(ce, attrs, nr, handler, ctx, NULL, ops, NULL);
}

int tprof_cpu_events_start_on(struct tprof_cpu_events *ce,
			      const struct cpumask *cpus,
			      const struct perf_event_attr *attrs,
			      unsigned int nr, perf_overflow_handler_t handler,
			      void *ctx, const struct tprof_cpu_events_ops *ops)
{
	return tprof_ce_start(ce, attrs, nr, handler, ctx, NULL, ops, cpus);
}

int tprof_cpu_events_start_each(struct tprof_cpu_events *ce,
				const struct perf_event_attr *attrs,
				unsigned int nr, perf_overflow_handler_t handler,
				void *const *ctxs,
				const struct tprof_cpu_events_ops *ops)
{
	if (!nr || !ctxs)
		return -EINVAL;
	return tprof_ce_start(ce, attrs, nr, handler, NULL, ctxs, ops, NULL);
}

void tprof_cpu_events_stop(struct tprof_cpu_events *ce)
{
	if (!ce->pcpu)
		return;
	/* Runs tprof_ce_cpu_down() on every online CPU, on that CPU. */
	cpuhp_state_remove_instance(tprof_ce_state, &ce->node);
	/* No callback can queue the work any more: its last run buries all. */
	flush_work(&ce->work);
	tprof_ce_work(&ce->work);
	tprof_ce_put_state();
	tprof_ce_free(ce);
}

u64 tprof_cpu_events_read(struct tprof_cpu_events *ce, unsigned int idx)
{
	u64 sum, enabled, running;
	unsigned int cpu;

	if (!ce->pcpu || idx >= ce->nr)
		return 0;
	mutex_lock(&ce->read_lock);
	sum = ce->retired[idx];
	for_each_possible_cpu(cpu) {
		struct tprof_cpu_events_pcpu *pc = per_cpu_ptr(ce->pcpu, cpu);
		struct perf_event *own, *dead;
		unsigned long flags;

		/*
		 * Both at once: the work moves own to dead under ce->lock, so
		 * a counter is seen once. read_lock keeps them alive after.
		 */
		raw_spin_lock_irqsave(&ce->lock, flags);
		own = tprof_ce_own(ce, pc)[idx];
		dead = tprof_ce_dead(ce, pc)[idx];
		raw_spin_unlock_irqrestore(&ce->lock, flags);
		if (own)
			sum += perf_event_read_value(own, &enabled, &running);
		if (dead)
			sum += perf_event_read_value(dead, &enabled, &running);
	}
	mutex_unlock(&ce->read_lock);
	return sum;
}
