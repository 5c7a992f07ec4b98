// SPDX-License-Identifier: GPL-2.0
/* task_newtask's clone_flags is u64 (7.x), not unsigned long. */
#include <linux/kernel.h>
#include <linux/sched.h>
#include <linux/tracepoint.h>
#include <trace/events/task.h>

static void probe(void *data, struct task_struct *p, u64 clone_flags)
{
}

static void __maybe_unused check(void)
{
	check_trace_callback_type_task_newtask(probe);
}
