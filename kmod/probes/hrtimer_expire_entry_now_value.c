// SPDX-License-Identifier: GPL-2.0
/* hrtimer_expire_entry's probe takes ktime_t now, not ktime_t *now (7.2 does, 6.12 not). */
#include <linux/hrtimer.h>
#include <linux/kernel.h>
#include <linux/tracepoint.h>
#include <trace/events/timer.h>

static void probe(void *data, struct hrtimer *timer, ktime_t now)
{
}

static void __maybe_unused check(void)
{
	check_trace_callback_type_hrtimer_expire_entry(probe);
}
