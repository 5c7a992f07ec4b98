// SPDX-License-Identifier: GPL-2.0
/*
 * Scheduler hooks. The sched tracepoints are not exported to modules, so
 * they are found by name with for_each_kernel_tracepoint() and attached with
 * tracepoint_probe_register().
 *
 * Probes run with preemption off; sched_switch also with IRQs off and the
 * runqueue lock held. They bump this CPU's counters and feed the per-thread
 * metrics (metrics.c): no allocation, no sleeping, no wake-ups, no printk.
 */
#include <linux/kernel.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <trace/events/sched.h>
#include <trace/events/task.h>
#include "hooks.h"
#include "compat.h"
#include "metrics.h"
#include "pmu.h"
#include "sampling.h"
#include "stats.h"

static void tprof_probe_sched_switch(void *data, bool preempt,
				     struct task_struct *prev,
				     struct task_struct *next,
				     unsigned int prev_state)
{
	this_cpu_inc(tprof_cpu_counters.context_switches);
	tprof_metrics_sched_switch(prev, next);
}

static void tprof_probe_sched_process_fork(void *data,
					   struct task_struct *parent,
					   struct task_struct *child)
{
	this_cpu_inc(tprof_cpu_counters.forks);
	tprof_sampling_on_fork(parent, child);
}

/*
 * Every new task, io_uring/io-wq and vhost workers included (they skip
 * sched_process_fork), once copy_process() can no longer fail.
 */
static void tprof_probe_task_newtask(void *data, struct task_struct *p,
				     tprof_clone_flags_t clone_flags)
{
	tprof_metrics_newtask(p);
}

static void tprof_probe_sched_process_exec(void *data, struct task_struct *p,
					   pid_t old_pid,
					   struct linux_binprm *bprm)
{
	this_cpu_inc(tprof_cpu_counters.execs);
	/* Each ends what it holds on @p if it left its observers (admission.h). */
	tprof_metrics_exec(p);
	tprof_sampling_on_exec(p);
	tprof_pmu_on_exec(p);
}

static void tprof_probe_sched_process_exit(void *data,
					   TPROF_SCHED_PROCESS_EXIT_PROTO)
{
	this_cpu_inc(tprof_cpu_counters.exits);
	tprof_sampling_on_exit(p);
}

static void tprof_probe_sched_process_free(void *data, struct task_struct *p)
{
	this_cpu_inc(tprof_cpu_counters.frees);
	tprof_metrics_free(p);
}

/* Compile-time checks that each probe matches its tracepoint's prototype. */
static inline void tprof_check_probe_types(void)
{
	check_trace_callback_type_sched_switch(tprof_probe_sched_switch);
	check_trace_callback_type_sched_process_fork(tprof_probe_sched_process_fork);
	check_trace_callback_type_sched_process_exec(tprof_probe_sched_process_exec);
	check_trace_callback_type_sched_process_exit(tprof_probe_sched_process_exit);
	check_trace_callback_type_sched_process_free(tprof_probe_sched_process_free);
	check_trace_callback_type_task_newtask(tprof_probe_task_newtask);
}

struct tprof_hook {
	const char *name;
	void *probe;
	struct tracepoint *tp;	/* found at init */
	bool registered;
};

static struct tprof_hook tprof_hooks[] = {
	{ .name = "sched_switch", .probe = tprof_probe_sched_switch },
	{ .name = "sched_process_fork", .probe = tprof_probe_sched_process_fork },
	{ .name = "sched_process_exec", .probe = tprof_probe_sched_process_exec },
	{ .name = "sched_process_exit", .probe = tprof_probe_sched_process_exit },
	{ .name = "sched_process_free", .probe = tprof_probe_sched_process_free },
	{ .name = "task_newtask", .probe = tprof_probe_task_newtask },
};

static void tprof_match_tracepoint(struct tracepoint *tp, void *priv)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(tprof_hooks); i++)
		if (!strcmp(tp->name, tprof_hooks[i].name))
			tprof_hooks[i].tp = tp;
}

int tprof_hooks_init(void)
{
	size_t i;
	int ret;

	(void)tprof_check_probe_types;
	for_each_kernel_tracepoint(tprof_match_tracepoint, NULL);
	for (i = 0; i < ARRAY_SIZE(tprof_hooks); i++) {
		if (!tprof_hooks[i].tp) {
			pr_err("tracepoint %s not found\n", tprof_hooks[i].name);
			return -ENOENT;
		}
	}
	for (i = 0; i < ARRAY_SIZE(tprof_hooks); i++) {
		ret = tracepoint_probe_register(tprof_hooks[i].tp,
						tprof_hooks[i].probe, NULL);
		if (ret) {
			pr_err("cannot attach to %s: %d\n", tprof_hooks[i].name,
			       ret);
			goto err_unregister_probes;
		}
		tprof_hooks[i].registered = true;
	}
	return 0;

err_unregister_probes:
	tprof_hooks_exit();
	return ret;
}

/* Detaches every probe and waits until none is still running. */
void tprof_hooks_exit(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(tprof_hooks); i++) {
		if (!tprof_hooks[i].registered)
			continue;
		tracepoint_probe_unregister(tprof_hooks[i].tp,
					    tprof_hooks[i].probe, NULL);
		tprof_hooks[i].registered = false;
	}
	tracepoint_synchronize_unregister();
}
