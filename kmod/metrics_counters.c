// SPDX-License-Identifier: GPL-2.0
/*
 * Per-thread metrics: the pinned per-CPU perf counters behind software and
 * hardware metrics. cpu_events.c owns them (creation outside the hotplug
 * lock, CPU hotplug, release after a grace period); this file only says
 * which counters metrics need and maps a metric to its counter.
 */
#include <linux/perf_event.h>
#include <linux/string.h>
#include "metrics.h"
#include "cpu_events.h"

/* Serialised by the metrics mutex (enable/disable). */
struct tprof_cpu_events tprof_mcounters;
static bool tprof_mcounters_running;
/* Metric -> counter index in tprof_mcounters, or -1. Read by the hooks. */
int tprof_mcounter_of[TPROF_MAX_METRICS];

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

/*
 * Counters for @c's metrics on every online CPU and each that comes
 * online. Returns the first creation error (e.g. EOPNOTSUPP without a PMU);
 * the caller then calls tprof_metrics_counters_stop(). Before publishing
 * the run that reads them.
 */
int tprof_metrics_counters_start(const struct tprof_metrics_config *c)
{
	struct perf_event_attr attrs[TPROF_MAX_METRICS];
	unsigned int nr = 0;
	int ret;
	u32 m;

	for (m = 0; m < TPROF_MAX_METRICS; m++) {
		WRITE_ONCE(tprof_mcounter_of[m], -1);
		if (m < c->nr_metrics &&
		    tprof_mcounters_attr(&c->metrics[m], &attrs[nr]))
			WRITE_ONCE(tprof_mcounter_of[m], nr++);
	}
	if (!nr)
		return 0;
	ret = tprof_cpu_events_start(&tprof_mcounters, attrs, nr, NULL, NULL,
				     NULL);
	/* On error cpu_events has undone everything itself. */
	tprof_mcounters_running = !ret;
	return ret;
}

/* Undoes tprof_metrics_counters_start(), after the run was unpublished. */
void tprof_metrics_counters_stop(void)
{
	u32 m;

	if (tprof_mcounters_running)
		tprof_cpu_events_stop(&tprof_mcounters);
	tprof_mcounters_running = false;
	for (m = 0; m < TPROF_MAX_METRICS; m++)
		WRITE_ONCE(tprof_mcounter_of[m], -1);
}
