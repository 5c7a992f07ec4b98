// SPDX-License-Identifier: GPL-2.0
/*
 * Per-thread metrics (US8117599). Per CPU: PCum(M) is read from the CPU's
 * clock, its dispatch count or a pinned per-CPU perf counter, PLastCum(M)
 * is kept here; on every context switch Delta = PCum - PLastCum,
 * PLastCum = PCum and TCum(M, outgoing thread) += Delta in the thread
 * table (core/thread_table.c), which lists threads whose TCum is nonzero.
 *
 * Locking: tprof_metrics_lock (raw spinlock, IRQs off) guards the table and
 * the per-CPU state; the scheduler hook takes it with IRQs already off and
 * never allocates, sleeps or wakes anyone. tprof_metrics_mutex serialises
 * enable/disable/read/drain, so a consumer's slot and the table outlive the
 * copy to userspace, done outside the spinlock.
 *
 * Self pages (self_page.c): a thread's slot holds one reference to its page
 * while the thread lives and accounting is on; every charge to the thread
 * also goes to the page, and its switch-in stamps the TSC there.
 */
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/perf_event.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include "tprof.h"
#include "core/metrics_config.h"
#include "core/thread_table.h"

/*
 * Where PCum(M) comes from, decided once at enable so the switch hook does
 * not look at metric types. Context switches are this CPU's dispatch count
 * (the same number perf's software event gives, without perf's per-switch
 * event machinery); other software events count in place in ev->count, so
 * only the rest need pmu->read().
 */
enum tprof_metric_source {
	TPROF_SRC_CLOCK,	/* sched_clock(): deltas are per CPU */
	TPROF_SRC_DISPATCHES,	/* tprof_metrics_cpu.dispatches */
	TPROF_SRC_EVENT_COUNT,	/* a software perf event's count */
	TPROF_SRC_EVENT_READ,	/* pmu->read(), then the count */
};

struct tprof_metrics_cpu {
	u64 last[TPROF_MAX_METRICS];	/* PLastCum */
	u64 dispatches;			/* PCum of TPROF_METRIC_DISPATCHES */
	bool primed;			/* last[] holds real readings */
	struct perf_event *events[TPROF_MAX_METRICS];	/* read by the hooks */
	struct perf_event *retired[TPROF_MAX_METRICS];	/* CPU went down: release */
};

static DEFINE_PER_CPU(struct tprof_metrics_cpu, tprof_metrics_cpu);
static DEFINE_RAW_SPINLOCK(tprof_metrics_lock);
static DEFINE_MUTEX(tprof_metrics_mutex);

/* Read locklessly by the hooks first, then again under the lock. */
static bool tprof_metrics_active;
static struct tprof_metrics_config tprof_metrics_config;
static u8 tprof_metric_sources[TPROF_MAX_METRICS];	/* enum tprof_metric_source */
static struct tprof_thread_table tprof_table;
static void *tprof_table_mem;
/* Bumped by every enable (under the lock): tells tables apart. */
static u64 tprof_metrics_epoch;
/* Live self pages: the switch hook looks up the incoming thread only if any. */
static u32 tprof_self_pages;

static unsigned int max_threads = 16384;
module_param(max_threads, uint, 0444);
MODULE_PARM_DESC(max_threads, "threads the per-thread metrics table can hold");

static char *metrics;
module_param(metrics, charp, 0444);
MODULE_PARM_DESC(metrics,
		 "turn per-thread metrics on at load, e.g. time,dispatches,page-faults");

static enum tprof_metric_source tprof_metric_source(const struct tprof_metric *m)
{
	switch (m->type) {
	case TPROF_METRIC_TIME:
		return TPROF_SRC_CLOCK;
	case TPROF_METRIC_DISPATCHES:
		return TPROF_SRC_DISPATCHES;
	case TPROF_METRIC_SOFTWARE:
		switch (m->config) {
		case PERF_COUNT_SW_CONTEXT_SWITCHES:
			return TPROF_SRC_DISPATCHES;
		case PERF_COUNT_SW_CPU_CLOCK:
		case PERF_COUNT_SW_TASK_CLOCK:
			return TPROF_SRC_EVENT_READ;	/* hrtimer-driven */
		default:
			return TPROF_SRC_EVENT_COUNT;
		}
	default:
		return TPROF_SRC_EVENT_READ;
	}
}

/* PCum(M) of this CPU; IRQs off. An event not counting gives no delta. */
static u64 tprof_metric_read(struct tprof_metrics_cpu *cs, u32 m)
{
	struct perf_event *ev;

	switch (tprof_metric_sources[m]) {
	case TPROF_SRC_CLOCK:
		/*
		 * PCum and PLastCum are per CPU, so this CPU's raw clock is
		 * enough (local_clock() adds cross-CPU filtering we do not need;
		 * a step back is clamped in tprof_metrics_charge()).
		 */
		return sched_clock();
	case TPROF_SRC_DISPATCHES:
		return cs->dispatches;
	default:
		ev = cs->events[m];
		if (!ev || ev->state != PERF_EVENT_STATE_ACTIVE ||
		    ev->oncpu != smp_processor_id())
			return cs->last[m];
		if (tprof_metric_sources[m] == TPROF_SRC_EVENT_READ)
			ev->pmu->read(ev);
		return local64_read(&ev->count);
	}
}

static struct tprof_thread_slot *tprof_metrics_track_locked(struct task_struct *p);

/*
 * io_uring and io-wq workers come from create_io_thread(), which does not
 * fire sched_process_fork: they are tracked at their first switch instead,
 * from the preallocated table (nothing is allocated here). With the table
 * full they are not retried (nor counted untracked) on every switch. Lock
 * held.
 */
static struct tprof_thread_slot *tprof_metrics_track_late(struct task_struct *p)
{
	if (!(p->flags & PF_IO_WORKER) || tprof_table.free_head == TPROF_TT_NONE)
		return NULL;
	return tprof_metrics_track_locked(p);
}

/* Charges this CPU's deltas since the last switch to @task. Lock held. */
static void tprof_metrics_charge(struct task_struct *task)
{
	struct tprof_metrics_cpu *cs = this_cpu_ptr(&tprof_metrics_cpu);
	u32 n = tprof_metrics_config.nr_metrics;
	u64 delta[TPROF_MAX_METRICS];	/* [0, n) used: not zeroed, it is hot */
	struct tprof_thread_slot *slot;
	u32 m;

	for (m = 0; m < n; m++) {
		u64 now = tprof_metric_read(cs, m);

		delta[m] = (s64)(now - cs->last[m]) > 0 ? now - cs->last[m] : 0;
		cs->last[m] = now;
	}
	if (!cs->primed) {
		cs->primed = true;
		return;
	}
	if (is_idle_task(task))
		return;
	slot = tprof_thread_table_lookup(&tprof_table, (u64)(uintptr_t)task);
	if (unlikely(!slot))
		slot = tprof_metrics_track_late(task);
	if (!slot)
		return;
	tprof_thread_table_account(&tprof_table, slot, delta);
	if (slot->self_page)
		tprof_self_page_charge(slot->self_page, delta);
}

/* sched_switch: IRQs off, runqueue lock held. */
void tprof_metrics_sched_switch(struct task_struct *prev,
				struct task_struct *next)
{
	struct tprof_thread_slot *slot;

	if (!READ_ONCE(tprof_metrics_active))
		return;
	raw_spin_lock(&tprof_metrics_lock);
	if (tprof_metrics_active) {
		this_cpu_inc(tprof_metrics_cpu.dispatches);
		tprof_metrics_charge(prev);
		if (tprof_self_pages && !is_idle_task(next)) {
			slot = tprof_thread_table_lookup(&tprof_table,
							 (u64)(uintptr_t)next);
			if (slot && slot->self_page)
				tprof_self_page_switch_in(slot->self_page);
		}
	}
	raw_spin_unlock(&tprof_metrics_lock);
}

/* Takes a slot's self page away from it (lock held); the caller puts it. */
static struct tprof_self_page *tprof_metrics_detach_self_page(struct tprof_thread_slot *slot)
{
	struct tprof_self_page *page = slot->self_page;

	if (page) {
		tprof_self_page_retire(page);
		slot->self_page = NULL;
		tprof_self_pages--;
	}
	return page;
}

/* Inserting may fail (table full: counted as untracked). */
static struct tprof_thread_slot *tprof_metrics_track_locked(struct task_struct *p)
{
	struct tprof_thread_slot *slot;

	slot = tprof_thread_table_insert(&tprof_table, (u64)(uintptr_t)p,
					 p->pid, p->tgid, p->comm);
	if (slot)
		slot->task = p;
	return slot;
}

void tprof_metrics_fork(struct task_struct *child)
{
	unsigned long flags;

	if (!READ_ONCE(tprof_metrics_active))
		return;
	raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
	if (tprof_metrics_active)
		tprof_metrics_track_locked(child);
	raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
}

/* exec: new name, and a thread that execs becomes the leader (new tid). */
void tprof_metrics_exec(struct task_struct *p)
{
	struct tprof_thread_slot *slot;
	unsigned long flags;

	if (!READ_ONCE(tprof_metrics_active))
		return;
	raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
	if (tprof_metrics_active) {
		slot = tprof_thread_table_lookup(&tprof_table, (u64)(uintptr_t)p);
		if (slot) {
			slot->tid = p->pid;
			slot->pid = p->tgid;
			tprof_thread_table_set_comm(slot, p->comm);
		}
	}
	raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
}

/* sched_process_free: after the task's last switch; from an RCU callback. */
void tprof_metrics_free(struct task_struct *p)
{
	struct tprof_self_page *page = NULL;
	struct tprof_thread_slot *slot;
	unsigned long flags;

	if (!READ_ONCE(tprof_metrics_active))
		return;
	raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
	if (tprof_metrics_active) {
		slot = tprof_thread_table_lookup(&tprof_table, (u64)(uintptr_t)p);
		if (slot) {
			/* Keep the last name for the final report. */
			tprof_thread_table_set_comm(slot, p->comm);
			page = tprof_metrics_detach_self_page(slot);
			tprof_thread_table_exit(&tprof_table, slot);
		}
	}
	raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
	tprof_self_page_put(page);
}

/* IPI: start this CPU's PLastCum from its current readings. */
static void tprof_metrics_prime_cpu(void *unused)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
	if (tprof_metrics_active) {
		struct tprof_metrics_cpu *cs = this_cpu_ptr(&tprof_metrics_cpu);
		u32 m;

		for (m = 0; m < tprof_metrics_config.nr_metrics; m++)
			cs->last[m] = tprof_metric_read(cs, m);
		cs->primed = true;
	}
	raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
}

/*
 * Per-CPU counters follow CPU hotplug. perf's software events take
 * cpus_read_lock() when they are created or released (static keys), so the
 * cpuhp callbacks, which run under the hotplug lock, only mark the CPU and
 * queue tprof_metrics_cpu_work, which creates and releases counters outside
 * it. Enable creates the first counters through the same work and waits.
 * The work never takes tprof_metrics_mutex, so enable/disable may flush it.
 */
static int tprof_metrics_cpuhp_state;	/* > 0 while the callbacks exist */
static bool tprof_metrics_counters_on;	/* the work may install counters */
static struct cpumask tprof_metrics_cpus_wanting; /* online, need counters */
static int tprof_metrics_counter_err;	/* first creation error */
static bool tprof_metrics_counters_started; /* enable has its counters */
static void tprof_metrics_cpu_work_fn(struct work_struct *work);
static DECLARE_WORK(tprof_metrics_cpu_work, tprof_metrics_cpu_work_fn);

/* The perf event behind metric @m, if it needs one. */
static bool tprof_metrics_event_attr(const struct tprof_metric *m,
				     struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->config = m->config;
	attr->pinned = 1;
	if (tprof_metric_source(m) == TPROF_SRC_DISPATCHES)
		return false;
	switch (m->type) {
	case TPROF_METRIC_SOFTWARE:
		attr->type = PERF_TYPE_SOFTWARE;
		return true;
	case TPROF_METRIC_HARDWARE:
		attr->type = PERF_TYPE_HARDWARE;
		return true;
	case TPROF_METRIC_RAW:
		attr->type = PERF_TYPE_RAW;
		return true;
	default:
		return false;
	}
}

static bool tprof_metrics_need_events(const struct tprof_metrics_config *c)
{
	struct perf_event_attr attr;
	u32 m;

	for (m = 0; m < c->nr_metrics; m++)
		if (tprof_metrics_event_attr(&c->metrics[m], &attr))
			return true;
	return false;
}

static void tprof_metrics_release(struct perf_event **evs)
{
	u32 m;

	for (m = 0; m < TPROF_MAX_METRICS; m++)
		if (evs[m])
			perf_event_release_kernel(evs[m]);
}

/* @cpu's counters into @evs (may sleep); all or none. */
static int tprof_metrics_create_cpu(unsigned int cpu, struct perf_event **evs)
{
	struct perf_event_attr attr;
	u32 m;

	for (m = 0; m < tprof_metrics_config.nr_metrics; m++) {
		struct perf_event *ev;

		if (!tprof_metrics_event_attr(&tprof_metrics_config.metrics[m], &attr))
			continue;
		ev = perf_event_create_kernel_counter(&attr, cpu, NULL, NULL, NULL);
		if (IS_ERR(ev)) {
			int err = PTR_ERR(ev);

			tprof_metrics_release(evs);
			memset(evs, 0, sizeof(*evs) * TPROF_MAX_METRICS);
			/* No PMU (e.g. a VM): "not available", not zero. */
			if (attr.type != PERF_TYPE_SOFTWARE &&
			    (err == -ENOENT || err == -ENODEV || err == -EOPNOTSUPP))
				err = -EOPNOTSUPP;
			return err;
		}
		evs[m] = ev;
	}
	return 0;
}

static void tprof_metrics_cpu_work_fn(struct work_struct *work)
{
	unsigned long flags;
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct tprof_metrics_cpu *cs = per_cpu_ptr(&tprof_metrics_cpu, cpu);
		struct perf_event *old[TPROF_MAX_METRICS];
		struct perf_event *evs[TPROF_MAX_METRICS] = {};
		bool want, started;
		int err;

		raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
		memcpy(old, cs->retired, sizeof(old));
		memset(cs->retired, 0, sizeof(cs->retired));
		want = cpumask_test_and_clear_cpu(cpu, &tprof_metrics_cpus_wanting);
		raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
		tprof_metrics_release(old);
		if (!want)
			continue;

		err = tprof_metrics_create_cpu(cpu, evs);
		raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
		if (err && !tprof_metrics_counter_err)
			tprof_metrics_counter_err = err;
		started = tprof_metrics_counters_started;
		if (!err && tprof_metrics_counters_on) {
			/* A counter of an earlier life of this CPU goes. */
			memcpy(old, cs->events, sizeof(old));
			memcpy(cs->events, evs, sizeof(evs));
			cs->primed = false;	/* its next switch starts it */
		} else {
			memcpy(old, evs, sizeof(old));
		}
		raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
		tprof_metrics_release(old);
		/* At enable the error goes to the caller; later, to the log. */
		if (err && started)
			pr_warn_ratelimited("cpu %u: no per-thread metric counters: %d\n",
					    cpu, err);
	}
}

/* cpuhp: under the hotplug lock, so only mark and queue. */
static int tprof_metrics_cpu_online(unsigned int cpu)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
	cpumask_set_cpu(cpu, &tprof_metrics_cpus_wanting);
	raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
	schedule_work(&tprof_metrics_cpu_work);
	return 0;
}

/* Runs on @cpu as it goes down: the hooks stop reading its counters now. */
static int tprof_metrics_cpu_offline(unsigned int cpu)
{
	struct tprof_metrics_cpu *cs = per_cpu_ptr(&tprof_metrics_cpu, cpu);
	unsigned long flags;
	u32 m;

	raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
	cpumask_clear_cpu(cpu, &tprof_metrics_cpus_wanting);
	for (m = 0; m < TPROF_MAX_METRICS; m++) {
		if (!cs->events[m])
			continue;
		/* The work has run since the last online: retired is empty. */
		WARN_ON_ONCE(cs->retired[m]);
		cs->retired[m] = cs->events[m];
		cs->events[m] = NULL;
	}
	cs->primed = false;
	raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
	schedule_work(&tprof_metrics_cpu_work);
	return 0;
}

/*
 * Counters on every online CPU and on each that comes online. Returns the
 * first creation error (e.g. EOPNOTSUPP without a PMU), everything undone.
 */
static int tprof_metrics_start_counters(const struct tprof_metrics_config *c)
{
	unsigned long flags;
	unsigned int cpu;
	int ret;

	if (!tprof_metrics_need_events(c))
		return 0;
	raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
	tprof_metrics_counters_on = true;
	tprof_metrics_counter_err = 0;
	raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
	ret = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "tprof:metrics",
					tprof_metrics_cpu_online,
					tprof_metrics_cpu_offline);
	if (ret >= 0) {
		tprof_metrics_cpuhp_state = ret;
		/* CPUs that come online from here on are marked by the callback. */
		cpus_read_lock();
		raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
		for_each_online_cpu(cpu)
			cpumask_set_cpu(cpu, &tprof_metrics_cpus_wanting);
		raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
		cpus_read_unlock();
		schedule_work(&tprof_metrics_cpu_work);
		flush_work(&tprof_metrics_cpu_work);
		raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
		ret = tprof_metrics_counter_err;
		tprof_metrics_counters_started = !ret;
		raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
	}
	return ret;
}

/* Undoes tprof_metrics_start_counters(); the hooks no longer read them. */
static void tprof_metrics_stop_counters(void)
{
	unsigned long flags;
	unsigned int cpu;

	if (tprof_metrics_cpuhp_state > 0)
		cpuhp_remove_state_nocalls(tprof_metrics_cpuhp_state);
	tprof_metrics_cpuhp_state = 0;
	raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
	tprof_metrics_counters_on = false;
	tprof_metrics_counters_started = false;
	cpumask_clear(&tprof_metrics_cpus_wanting);
	raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
	flush_work(&tprof_metrics_cpu_work);
	for_each_possible_cpu(cpu) {
		struct tprof_metrics_cpu *cs = per_cpu_ptr(&tprof_metrics_cpu, cpu);
		struct perf_event *old[2][TPROF_MAX_METRICS];

		raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
		memcpy(old[0], cs->events, sizeof(old[0]));
		memcpy(old[1], cs->retired, sizeof(old[1]));
		memset(cs->events, 0, sizeof(cs->events));
		memset(cs->retired, 0, sizeof(cs->retired));
		raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
		tprof_metrics_release(old[0]);
		tprof_metrics_release(old[1]);
	}
}

static void tprof_metrics_disable_locked(void)
{
	unsigned long flags;
	u32 i;

	lockdep_assert_held(&tprof_metrics_mutex);
	if (!tprof_metrics_active)
		return;
	/* After this no hook touches the table or the per-CPU state. */
	raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
	WRITE_ONCE(tprof_metrics_active, false);
	raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
	/* Mapped self pages stay with their processes, marked not live. */
	for (i = 0; i < tprof_table.capacity; i++)
		tprof_self_page_put(tprof_metrics_detach_self_page(&tprof_table.slots[i]));
	tprof_metrics_stop_counters();
	kvfree(tprof_table_mem);
	tprof_table_mem = NULL;
}

static int tprof_metrics_enable_locked(const struct tprof_metrics_config *c)
{
	u32 capacity = max_threads ? max_threads : 1;
	u32 hash_size = tprof_thread_table_hash_size(capacity);
	struct tprof_thread_slot *slots;
	struct task_struct *g, *p;
	unsigned long flags;
	unsigned int cpu;
	size_t slots_bytes;
	void *mem;
	int ret;
	u32 m;

	lockdep_assert_held(&tprof_metrics_mutex);
	tprof_metrics_disable_locked();

	slots_bytes = ALIGN(sizeof(*slots) * capacity, sizeof(u64));
	mem = kvzalloc(slots_bytes + hash_size * (sizeof(u64) + sizeof(u32)),
		       GFP_KERNEL);
	if (!mem)
		return -ENOMEM;

	/* Not active yet (disabled above): the hooks do not read these. */
	raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
	tprof_metrics_config = *c;
	for (m = 0; m < TPROF_MAX_METRICS; m++)
		tprof_metric_sources[m] = m < c->nr_metrics ?
			tprof_metric_source(&c->metrics[m]) : TPROF_SRC_DISPATCHES;
	raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);

	ret = tprof_metrics_start_counters(c);
	if (ret) {
		tprof_metrics_stop_counters();
		kvfree(mem);
		return ret;
	}

	raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
	slots = mem;
	tprof_thread_table_init(&tprof_table, slots, capacity,
				mem + slots_bytes,
				mem + slots_bytes + hash_size * sizeof(u64),
				hash_size, c->nr_metrics);
	tprof_table_mem = mem;
	for_each_possible_cpu(cpu) {
		struct tprof_metrics_cpu *cs = per_cpu_ptr(&tprof_metrics_cpu, cpu);

		memset(cs->last, 0, sizeof(cs->last));
		cs->primed = false;
	}
	tprof_metrics_epoch++;
	WRITE_ONCE(tprof_metrics_active, true);
	raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);

	/* Threads that already exist; new ones come through the fork hook. */
	rcu_read_lock();
	for_each_process_thread(g, p) {
		raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
		tprof_metrics_track_locked(p);
		raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
	}
	rcu_read_unlock();

	on_each_cpu(tprof_metrics_prime_cpu, NULL, 1);
	return 0;
}

/* ---- ioctls ------------------------------------------------------------ */

long tprof_ioctl_metrics_enable(struct tprof_metrics_config __user *uarg)
{
	struct tprof_metrics_config c;
	int ret;

	if (!perfmon_capable())
		return -EPERM;
	if (copy_from_user(&c, uarg, sizeof(c)))
		return -EFAULT;
	ret = tprof_metrics_config_check(&c);
	if (ret)
		return ret;
	mutex_lock(&tprof_metrics_mutex);
	ret = tprof_metrics_enable_locked(&c);
	mutex_unlock(&tprof_metrics_mutex);
	return ret;
}

long tprof_ioctl_metrics_disable(void)
{
	if (!perfmon_capable())
		return -EPERM;
	mutex_lock(&tprof_metrics_mutex);
	tprof_metrics_disable_locked();
	mutex_unlock(&tprof_metrics_mutex);
	return 0;
}

long tprof_ioctl_metrics_status(struct tprof_metrics_status __user *uarg)
{
	struct tprof_metrics_status st;
	unsigned long flags;

	memset(&st, 0, sizeof(st));
	mutex_lock(&tprof_metrics_mutex);
	raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
	if (tprof_metrics_active) {
		st.enabled = 1;
		st.nr_metrics = tprof_metrics_config.nr_metrics;
		memcpy(st.metrics, tprof_metrics_config.metrics, sizeof(st.metrics));
		st.table_capacity = tprof_table.capacity;
		st.table_used = tprof_table.used;
		st.untracked_threads = tprof_table.untracked;
		st.listed = tprof_table.listed;
	}
	raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
	mutex_unlock(&tprof_metrics_mutex);
	if (copy_to_user(uarg, &st, sizeof(st)))
		return -EFAULT;
	return 0;
}

/* Names change (prctl, exec): take the live one while the thread exists. */
static void tprof_fill_record(const struct tprof_thread_slot *slot,
			      struct tprof_thread_metrics *rec)
{
	tprof_thread_table_fill(&tprof_table, slot, rec);
	if (slot->task) {
		const struct task_struct *t = slot->task;

		memcpy(rec->comm, t->comm, sizeof(rec->comm));
		((char *)rec->comm)[sizeof(rec->comm) - 1] = '\0';
	}
}

long tprof_ioctl_thread_read(struct tprof_thread_read __user *uarg)
{
	struct tprof_thread_slot *slot;
	struct tprof_thread_read req;
	struct task_struct *task;
	unsigned long flags;
	long ret = 0;
	u64 epoch;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags || req.resv[0] || req.resv[1])
		return -EINVAL;

	if (req.tid == 0) {
		task = current;	/* cannot go away under us: no reference */
	} else {
		rcu_read_lock();
		task = pid_task(find_vpid(req.tid), PIDTYPE_PID);
		if (task)
			get_task_struct(task);
		rcu_read_unlock();
		if (!task)
			return -ESRCH;
		if (!tprof_may_read_task(task)) {
			put_task_struct(task);
			return -EACCES;
		}
	}

	/*
	 * One locked section reads and zeroes; the copy to userspace comes
	 * after it (it may fault). If the copy fails, the values go back to the
	 * same thread of the same accounting epoch, so nothing is lost. No
	 * mutex: this is the hot path of runtimes that poll themselves.
	 */
	memset(&req.thread, 0, sizeof(req.thread));
	raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
	epoch = tprof_metrics_epoch;
	if (!tprof_metrics_active) {
		ret = -ENODATA;
	} else {
		/* The caller's own current slice counts too. */
		if (task == current)
			tprof_metrics_charge(current);
		slot = tprof_thread_table_lookup(&tprof_table, (u64)(uintptr_t)task);
		if (slot) {
			tprof_fill_record(slot, &req.thread);
			tprof_thread_table_consume(&tprof_table, slot,
						   req.thread.values);
		} else {
			ret = -ESRCH;
		}
	}
	raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);

	if (!ret && copy_to_user(&uarg->thread, &req.thread, sizeof(req.thread))) {
		ret = -EFAULT;
		raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
		if (tprof_metrics_active && tprof_metrics_epoch == epoch) {
			slot = tprof_thread_table_lookup(&tprof_table,
							 (u64)(uintptr_t)task);
			if (slot && slot->identity == req.thread.identity)
				tprof_thread_table_account(&tprof_table, slot,
							   req.thread.values);
		}
		raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
	}
	if (req.tid)
		put_task_struct(task);
	return ret;
}

/*
 * The lean read-and-zero of the caller: one IRQs-off section, no input,
 * no task reference, no name. Values go back if the copy faults.
 */
long tprof_ioctl_read_self(struct tprof_self_read __user *uarg)
{
	struct tprof_thread_slot *slot;
	struct tprof_self_read out;
	unsigned long flags;
	long ret = 0;
	u64 epoch;
	u32 m, n;

	memset(&out, 0, sizeof(out));
	raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
	epoch = tprof_metrics_epoch;
	n = tprof_metrics_config.nr_metrics;
	if (!tprof_metrics_active) {
		ret = -ENODATA;
	} else {
		tprof_metrics_charge(current);
		slot = tprof_thread_table_lookup(&tprof_table,
						 (u64)(uintptr_t)current);
		if (slot) {
			out.identity = slot->identity;
			for (m = 0; m < n; m++)
				out.values[m] = slot->tcum[m];
			tprof_thread_table_consume(&tprof_table, slot, out.values);
		} else {
			ret = -ESRCH;
		}
	}
	raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);

	if (!ret && copy_to_user(uarg, &out, sizeof(out))) {
		ret = -EFAULT;
		raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
		if (tprof_metrics_active && tprof_metrics_epoch == epoch) {
			slot = tprof_thread_table_lookup(&tprof_table,
							 (u64)(uintptr_t)current);
			if (slot && slot->identity == out.identity)
				tprof_thread_table_account(&tprof_table, slot,
							   out.values);
		}
		raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
	}
	return ret;
}

/*
 * mmap of TPROF_SELF_PAGE_OFFSET: the caller's self page, created on the
 * first call. Runs under the caller's mmap_lock, so no tprof_metrics_mutex
 * (the drain holds it while it copies to userspace, which takes mmap_lock).
 */
int tprof_metrics_self_mmap(struct vm_area_struct *vma)
{
	struct tprof_self_page *fresh, *page = NULL;
	struct tprof_thread_slot *slot;
	unsigned long flags;
	int ret;

	ret = tprof_self_page_check_vma(vma);
	if (ret)
		return ret;
	fresh = tprof_self_page_alloc();
	if (!fresh)
		return -ENOMEM;

	raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
	if (!tprof_metrics_active) {
		ret = -ENODATA;
		goto out_unlock;
	}
	slot = tprof_thread_table_lookup(&tprof_table, (u64)(uintptr_t)current);
	if (!slot) {
		ret = -ESRCH;
		goto out_unlock;
	}
	if (!slot->self_page) {
		/* Charge the slice so far, so the odometer starts now. */
		tprof_metrics_charge(current);
		tprof_self_page_init(fresh, slot->identity, current->pid,
				     &tprof_metrics_config);
		slot->self_page = fresh;
		tprof_self_pages++;
		fresh = NULL;
	}
	page = slot->self_page;
	/* Ours until the mapping holds its own. */
	get_page(tprof_self_page_page(page));
out_unlock:
	raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
	tprof_self_page_put(fresh);
	if (ret)
		return ret;
	ret = vm_insert_page(vma, vma->vm_start, tprof_self_page_page(page));
	tprof_self_page_put(page);
	return ret;
}

#define TPROF_DRAIN_CHUNK 64

static bool tprof_drain_match(const struct tprof_thread_slot *s, u32 pid, u32 gen)
{
	return s->seen_gen != gen && (pid == TPROF_PID_ALL || s->pid == pid);
}

long tprof_ioctl_drain(struct tprof_drain __user *uarg)
{
	struct tprof_thread_metrics __user *urecs;
	struct tprof_thread_metrics *buf;
	u32 *idx, count = 0, remaining = 0, gen, pid, i, n;
	struct tprof_drain req;
	unsigned long flags;
	long ret = 0;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	for (i = 0; i < ARRAY_SIZE(req.resv); i++)
		if (req.resv[i])
			return -EINVAL;
	if (!req.records != !req.capacity)
		return -EINVAL;

	pid = req.pid;
	if (pid == 0 || pid == task_tgid_nr(current)) {
		pid = task_tgid_nr(current);
	} else if (pid == TPROF_PID_ALL) {
		if (!perfmon_capable())
			return -EPERM;
	} else {
		ret = tprof_check_process_access(&pid);
		if (ret)
			return ret;
	}

	buf = kmalloc_array(TPROF_DRAIN_CHUNK, sizeof(*buf) + sizeof(*idx),
			    GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	idx = (u32 *)(buf + TPROF_DRAIN_CHUNK);
	urecs = u64_to_user_ptr(req.records);

	mutex_lock(&tprof_metrics_mutex);
	if (!READ_ONCE(tprof_metrics_active)) {
		ret = -ENODATA;
		goto out_unlock;
	}
	raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
	gen = ++tprof_table.drain_gen;
	raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);

	while (count < req.capacity) {
		u32 s;

		/* Snapshot a chunk; each thread at most once per drain. */
		n = 0;
		raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
		for (s = tprof_table.list_head;
		     s != TPROF_TT_NONE && n < TPROF_DRAIN_CHUNK &&
		     count + n < req.capacity;
		     s = tprof_table.slots[s].list_next) {
			struct tprof_thread_slot *slot = &tprof_table.slots[s];

			if (!tprof_drain_match(slot, pid, gen))
				continue;
			slot->seen_gen = gen;
			tprof_fill_record(slot, &buf[n]);
			idx[n++] = s;
		}
		raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
		if (!n)
			break;

		if (copy_to_user(urecs + count, buf, n * sizeof(*buf))) {
			/*
			 * Nothing of this chunk is consumed: nothing lost. Records
			 * already delivered are reported as a short drain.
			 */
			if (!count)
				ret = -EFAULT;
			break;
		}
		raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
		for (i = 0; i < n; i++)
			tprof_thread_table_consume(&tprof_table,
						   &tprof_table.slots[idx[i]],
						   buf[i].values);
		raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);
		count += n;
	}

	raw_spin_lock_irqsave(&tprof_metrics_lock, flags);
	for (i = tprof_table.list_head; i != TPROF_TT_NONE;
	     i = tprof_table.slots[i].list_next)
		if (tprof_drain_match(&tprof_table.slots[i], pid, gen))
			remaining++;
	req.untracked_threads = tprof_table.untracked;
	raw_spin_unlock_irqrestore(&tprof_metrics_lock, flags);

	if (!ret) {
		req.count = count;
		req.remaining = remaining;
		if (copy_to_user(uarg, &req, sizeof(req)))
			ret = -EFAULT;
	}
out_unlock:
	mutex_unlock(&tprof_metrics_mutex);
	kfree(buf);
	return ret;
}

/* ---- load / unload ------------------------------------------------------ */

int tprof_metrics_init(void)
{
	struct tprof_metrics_config c;
	int ret;

	if (!metrics || !*metrics)
		return 0;
	ret = tprof_metrics_parse_list(metrics, &c);
	if (ret) {
		pr_err("metrics=%s: unknown or invalid metric list\n", metrics);
		return ret;
	}
	mutex_lock(&tprof_metrics_mutex);
	ret = tprof_metrics_enable_locked(&c);
	mutex_unlock(&tprof_metrics_mutex);
	if (ret)
		pr_err("metrics=%s: cannot enable: %d\n", metrics, ret);
	return ret;
}

void tprof_metrics_exit(void)
{
	mutex_lock(&tprof_metrics_mutex);
	tprof_metrics_disable_locked();
	mutex_unlock(&tprof_metrics_mutex);
}
