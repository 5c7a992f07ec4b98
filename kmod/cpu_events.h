/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One owner for per-CPU perf counters and CPU hotplug (see cpu_events.c for
 * the locking rules).
 *
 *   tprof_cpu_events_start(ce, attrs, nr, handler, ctx, ops)
 *     Creates nr counters (attrs[0..nr-1], copied) on every online CPU and
 *     on every CPU that comes online until stop; handler (may be NULL) is
 *     their overflow handler, with event->overflow_handler_context == ctx.
 *     nr may be 0: then only the hotplug notifications. Process context,
 *     no cpus_read_lock() held. Waits until every online CPU has its
 *     counters. Returns 0 or the first creation error, "no PMU" for a
 *     non-software type (ENOENT, ENODEV, EOPNOTSUPP) as -EOPNOTSUPP, a
 *     tracepoint id perf does not know as -ENOENT, with everything undone.
 *     ops (may be NULL): cpu_up(cpu, ctx) runs on @cpu when it is added
 *     (each CPU online at start, and each that comes online), cpu_down(cpu,
 *     ctx) on @cpu when it is removed (going offline, and every CPU at
 *     stop), both from cpuhp callbacks: they must not create or release
 *     perf events nor wait for anything that does. cpu_up may run before
 *     that CPU's counters are published, cpu_down runs after they were
 *     unpublished.
 *   tprof_cpu_events_start_on(ce, cpus, attrs, nr, handler, ctx, ops)
 *     As start, with counters only on the CPUs of the mask cpus (NULL:
 *     every CPU; the caller keeps it until stop). ops still run on every
 *     CPU.
 *   tprof_cpu_events_start_each(ce, attrs, nr, handler, ctxs, ops)
 *     As start, for one owner of several independent counters (a PMU
 *     program): counter idx's overflow handler context is ctxs[idx] (the
 *     array is copied; nr >= 1), and ops get a NULL ctx. A NULL ctxs[idx]
 *     makes counter idx one with perf's default handler (no handler).
 *     In both, a counter whose attr has disabled set is created disabled
 *     and enabled (perf_event_enable()) once all its CPU's counters exist:
 *     it never runs on a CPU without the counters after it.
 *   tprof_cpu_events_stop(ce)
 *     Unpublishes every counter (cpu_down on each CPU), waits for readers
 *     (an RCU grace period) and releases every counter. Process context.
 *   tprof_cpu_events_read(ce, idx)
 *     Counter idx's count summed over every CPU: the counters that exist
 *     (perf_event_read_value()) and every one released since start (its
 *     count is taken just before its release), so a CPU that went offline
 *     keeps what it counted. Process context (sleeps); not after stop.
 *   tprof_cpu_event(ce, idx), tprof_cpu_event_gen(ce, idx, &gen)
 *     This CPU's counter idx, or NULL (not created yet, CPU going down,
 *     stopped). The caller has preemption or IRQs off; the pointer is valid
 *     until it enables them again. An overflow handler must check that
 *     tprof_cpu_event(ce, idx) == event before it trusts the sample: a
 *     counter fires for a short while after its CPU was removed.
 */
#ifndef TPROF_CPU_EVENTS_H
#define TPROF_CPU_EVENTS_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/perf_event.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

struct tprof_cpu_events_ops {
	void (*cpu_up)(unsigned int cpu, void *ctx);
	void (*cpu_down)(unsigned int cpu, void *ctx);
};

/*
 * Per CPU: flags, then live[nr], own[nr], dead[nr]. Private to
 * cpu_events.c; here only so that tprof_cpu_event() inlines into the
 * context-switch path.
 */
struct tprof_cpu_events_pcpu {
	bool online;		/* between this CPU's up and down callbacks */
	bool want;		/* the work should create this CPU's counters */
	u32 gen;		/* bumped before each publication of new counters */
	struct perf_event *ev[];
};

/* Embeddable; every field is private to cpu_events.c. */
struct tprof_cpu_events {
	struct perf_event_attr *attrs;
	unsigned int nr;
	perf_overflow_handler_t handler;
	void *ctx;
	void **ctxs;		/* start_each: per counter, else NULL */
	const struct tprof_cpu_events_ops *ops;
	const struct cpumask *cpus;	/* counters only there; NULL: every CPU */
	struct tprof_cpu_events_pcpu __percpu *pcpu;
	struct hlist_node node;
	struct work_struct work;
	raw_spinlock_t lock;
	struct mutex read_lock;	/* read vs. release of published counters */
	u64 *retired;		/* [nr]: counts of released counters, under read_lock */
	int err;		/* first creation error, under lock */
	bool started;		/* start returned 0: errors go to the log */
};

int tprof_cpu_events_start(struct tprof_cpu_events *ce,
			   const struct perf_event_attr *attrs, unsigned int nr,
			   perf_overflow_handler_t handler, void *ctx,
			   const struct tprof_cpu_events_ops *ops);
int tprof_cpu_events_start_on(struct tprof_cpu_events *ce,
			      const struct cpumask *cpus,
			      const struct perf_event_attr *attrs,
			      unsigned int nr, perf_overflow_handler_t handler,
			      void *ctx, const struct tprof_cpu_events_ops *ops);
int tprof_cpu_events_start_each(struct tprof_cpu_events *ce,
				const struct perf_event_attr *attrs,
				unsigned int nr, perf_overflow_handler_t handler,
				void *const *ctxs,
				const struct tprof_cpu_events_ops *ops);
void tprof_cpu_events_stop(struct tprof_cpu_events *ce);
u64 tprof_cpu_events_read(struct tprof_cpu_events *ce, unsigned int idx);
static inline struct perf_event *tprof_cpu_event(struct tprof_cpu_events *ce,
						 unsigned int idx)
{
	if (idx >= ce->nr)
		return NULL;
	return READ_ONCE(this_cpu_ptr(ce->pcpu)->ev[idx]);
}

/*
 * As tprof_cpu_event(), with the generation of this CPU's counters in
 * *@gen: it changes each time they are created anew (the CPU came online
 * again), so a reader that keeps a counter's last value knows when that
 * value belongs to an earlier counter. Same context rules.
 */
static inline struct perf_event *tprof_cpu_event_gen(struct tprof_cpu_events *ce,
						     unsigned int idx, u32 *gen)
{
	struct tprof_cpu_events_pcpu *pc = this_cpu_ptr(ce->pcpu);
	struct perf_event *ev;

	if (idx >= ce->nr)
		return NULL;
	/* Pairs with the publication's release: a new counter, a new gen. */
	ev = smp_load_acquire(&pc->ev[idx]);
	*gen = READ_ONCE(pc->gen);
	return ev;
}

#endif /* TPROF_CPU_EVENTS_H */
