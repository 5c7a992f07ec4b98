// SPDX-License-Identifier: GPL-2.0
/* One perf context per task for all PMUs (6.2), not one per kind. */
#include <linux/perf_event.h>
#include <linux/sched.h>

static struct perf_event_context * __maybe_unused check(struct task_struct *t)
{
	return t->perf_event_ctxp;
}
