// SPDX-License-Identifier: GPL-2.0
/* sched_process_exit's probe takes bool group_dead (6.16). */
#include <linux/kernel.h>
#include <linux/sched.h>
#include <linux/tracepoint.h>
#include <trace/events/sched.h>

static void probe(void *data, struct task_struct *p, bool group_dead)
{
}

static void __maybe_unused check(void)
{
	check_trace_callback_type_sched_process_exit(probe);
}
