// SPDX-License-Identifier: GPL-2.0
/*
 * Per-thread metrics: the pinned per-CPU perf counters behind software and
 * hardware metrics, following CPU hotplug.
 *
 * perf's software events take cpus_read_lock() when they are created or
 * released (static keys), so the cpuhp callbacks, which run under the
 * hotplug lock, only unpublish or mark the CPU and queue a work item that
 * creates and releases counters outside it. Readers (the switch hook, IRQs
 * off) load this CPU's pointer; a counter is released only after it was
 * unpublished and an RCU grace period passed. Start creates the first
 * counters through the same work and waits for it.
 */
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/perf_event.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include "metrics.h"
#include "tprof.h"

struct tprof_mcounters_cpu {
	struct perf_event *events[TPROF_MAX_METRICS];	/* read by the hooks */
	struct perf_event *retired[TPROF_MAX_METRICS];	/* CPU went down */
};

static DEFINE_PER_CPU(struct tprof_mcounters_cpu, tprof_mcounters_cpu);
/* Guards the bookkeeping below; never taken by the switch hook. */
static DEFINE_SPINLOCK(tprof_mcounters_lock);
static struct tprof_metrics_config tprof_mcounters_config;
static int tprof_mcounters_cpuhp_state;	/* > 0 while the callbacks exist */
static bool tprof_mcounters_on;		/* the work may install counters */
static struct cpumask tprof_mcounters_wanting;	/* online, need counters */
static int tprof_mcounters_err;		/* first creation error */
static bool tprof_mcounters_started;	/* start has its counters */
static void tprof_mcounters_work_fn(struct work_struct *work);
static DECLARE_WORK(tprof_mcounters_work, tprof_mcounters_work_fn);

/* This CPU's counter of metric @m, or NULL. IRQs off. */
struct perf_event *tprof_metrics_cpu_event(u32 m)
{
	return READ_ONCE(this_cpu_ptr(&tprof_mcounters_cpu)->events[m]);
}

/* The perf event behind metric @m, if it needs one. */
static bool tprof_mcounters_attr(const struct tprof_metric *m,
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

static bool tprof_mcounters_needed(const struct tprof_metrics_config *c)
{
	struct perf_event_attr attr;
	u32 m;

	for (m = 0; m < c->nr_metrics; m++)
		if (tprof_mcounters_attr(&c->metrics[m], &attr))
			return true;
	return false;
}

static void tprof_mcounters_release(struct perf_event **evs)
{
	u32 m;

	for (m = 0; m < TPROF_MAX_METRICS; m++)
		if (evs[m])
			perf_event_release_kernel(evs[m]);
}

static bool tprof_mcounters_any(struct perf_event **evs)
{
	u32 m;

	for (m = 0; m < TPROF_MAX_METRICS; m++)
		if (evs[m])
			return true;
	return false;
}

/* @cpu's counters into @evs (may sleep); all or none. */
static int tprof_mcounters_create_cpu(unsigned int cpu, struct perf_event **evs)
{
	struct perf_event_attr attr;
	u32 m;

	for (m = 0; m < tprof_mcounters_config.nr_metrics; m++) {
		struct perf_event *ev;

		if (!tprof_mcounters_attr(&tprof_mcounters_config.metrics[m], &attr))
			continue;
		ev = perf_event_create_kernel_counter(&attr, cpu, NULL, NULL, NULL);
		if (IS_ERR(ev)) {
			int err = PTR_ERR(ev);

			tprof_mcounters_release(evs);
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

static void tprof_mcounters_work_fn(struct work_struct *work)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct tprof_mcounters_cpu *cc = per_cpu_ptr(&tprof_mcounters_cpu, cpu);
		struct perf_event *old[TPROF_MAX_METRICS];
		struct perf_event *evs[TPROF_MAX_METRICS] = {};
		bool want, started;
		int err;

		spin_lock(&tprof_mcounters_lock);
		memcpy(old, cc->retired, sizeof(old));
		memset(cc->retired, 0, sizeof(cc->retired));
		want = cpumask_test_and_clear_cpu(cpu, &tprof_mcounters_wanting);
		spin_unlock(&tprof_mcounters_lock);
		/* Unpublished by the offline callback: wait out its readers. */
		if (tprof_mcounters_any(old))
			synchronize_rcu();
		tprof_mcounters_release(old);
		if (!want)
			continue;

		err = tprof_mcounters_create_cpu(cpu, evs);
		spin_lock(&tprof_mcounters_lock);
		if (err && !tprof_mcounters_err)
			tprof_mcounters_err = err;
		started = tprof_mcounters_started;
		memset(old, 0, sizeof(old));
		if (!err && tprof_mcounters_on) {
			u32 m;

			/* A counter of an earlier life of this CPU goes. */
			for (m = 0; m < TPROF_MAX_METRICS; m++) {
				old[m] = cc->events[m];
				WRITE_ONCE(cc->events[m], evs[m]);
			}
		} else {
			memcpy(old, evs, sizeof(old));
		}
		spin_unlock(&tprof_mcounters_lock);
		if (tprof_mcounters_any(old))
			synchronize_rcu();
		tprof_mcounters_release(old);
		/* At start the error goes to the caller; later, to the log. */
		if (err && started)
			pr_warn_ratelimited("cpu %u: no per-thread metric counters: %d\n",
					    cpu, err);
	}
}

/* cpuhp: under the hotplug lock, so only mark and queue. */
static int tprof_mcounters_cpu_online(unsigned int cpu)
{
	spin_lock(&tprof_mcounters_lock);
	cpumask_set_cpu(cpu, &tprof_mcounters_wanting);
	spin_unlock(&tprof_mcounters_lock);
	schedule_work(&tprof_mcounters_work);
	return 0;
}

/* Runs on @cpu as it goes down: the hooks stop reading its counters now. */
static int tprof_mcounters_cpu_offline(unsigned int cpu)
{
	struct tprof_mcounters_cpu *cc = per_cpu_ptr(&tprof_mcounters_cpu, cpu);
	u32 m;

	spin_lock(&tprof_mcounters_lock);
	cpumask_clear_cpu(cpu, &tprof_mcounters_wanting);
	for (m = 0; m < TPROF_MAX_METRICS; m++) {
		if (!cc->events[m])
			continue;
		/* The work has run since the last online: retired is empty. */
		WARN_ON_ONCE(cc->retired[m]);
		cc->retired[m] = cc->events[m];
		WRITE_ONCE(cc->events[m], NULL);
	}
	spin_unlock(&tprof_mcounters_lock);
	schedule_work(&tprof_mcounters_work);
	return 0;
}

/*
 * Counters on every online CPU and on each that comes online. Returns the
 * first creation error (e.g. EOPNOTSUPP without a PMU); the caller then
 * calls tprof_metrics_counters_stop().
 */
int tprof_metrics_counters_start(const struct tprof_metrics_config *c)
{
	unsigned int cpu;
	int ret;

	if (!tprof_mcounters_needed(c))
		return 0;
	spin_lock(&tprof_mcounters_lock);
	tprof_mcounters_config = *c;
	tprof_mcounters_on = true;
	tprof_mcounters_err = 0;
	spin_unlock(&tprof_mcounters_lock);
	ret = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "tprof:metrics",
					tprof_mcounters_cpu_online,
					tprof_mcounters_cpu_offline);
	if (ret < 0)
		return ret;
	tprof_mcounters_cpuhp_state = ret;
	/* CPUs that come online from here on are marked by the callback. */
	cpus_read_lock();
	spin_lock(&tprof_mcounters_lock);
	for_each_online_cpu(cpu)
		cpumask_set_cpu(cpu, &tprof_mcounters_wanting);
	spin_unlock(&tprof_mcounters_lock);
	cpus_read_unlock();
	schedule_work(&tprof_mcounters_work);
	flush_work(&tprof_mcounters_work);
	spin_lock(&tprof_mcounters_lock);
	ret = tprof_mcounters_err;
	tprof_mcounters_started = !ret;
	spin_unlock(&tprof_mcounters_lock);
	return ret;
}

/* Undoes tprof_metrics_counters_start(); the hooks no longer read them. */
void tprof_metrics_counters_stop(void)
{
	struct perf_event *old[2][TPROF_MAX_METRICS];
	unsigned int cpu;

	if (tprof_mcounters_cpuhp_state > 0)
		cpuhp_remove_state_nocalls(tprof_mcounters_cpuhp_state);
	tprof_mcounters_cpuhp_state = 0;
	spin_lock(&tprof_mcounters_lock);
	tprof_mcounters_on = false;
	tprof_mcounters_started = false;
	cpumask_clear(&tprof_mcounters_wanting);
	spin_unlock(&tprof_mcounters_lock);
	flush_work(&tprof_mcounters_work);
	/* The run is unpublished (the caller waited for a grace period). */
	for_each_possible_cpu(cpu) {
		struct tprof_mcounters_cpu *cc = per_cpu_ptr(&tprof_mcounters_cpu, cpu);
		u32 m;

		spin_lock(&tprof_mcounters_lock);
		for (m = 0; m < TPROF_MAX_METRICS; m++) {
			old[0][m] = cc->events[m];
			old[1][m] = cc->retired[m];
			WRITE_ONCE(cc->events[m], NULL);
			cc->retired[m] = NULL;
		}
		spin_unlock(&tprof_mcounters_lock);
		tprof_mcounters_release(old[0]);
		tprof_mcounters_release(old[1]);
	}
}
