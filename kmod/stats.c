// SPDX-License-Identifier: GPL-2.0
/*
 * Per-CPU event counters. Each CPU's counters are written only by the hooks
 * running on that CPU (this_cpu_inc, preemption is off in tracepoints), and
 * read from any CPU with READ_ONCE: a reader may see a CPU's fields at
 * slightly different moments, never a torn value.
 */
#include <linux/cpumask.h>
#include "stats.h"
#include "core/counters.h"

DEFINE_PER_CPU(struct tprof_counters, tprof_cpu_counters);

void tprof_stats_read_cpu(unsigned int cpu, struct tprof_counters *out)
{
	const struct tprof_counters *c = per_cpu_ptr(&tprof_cpu_counters, cpu);

	memset(out, 0, sizeof(*out));
	out->context_switches = READ_ONCE(c->context_switches);
	out->forks = READ_ONCE(c->forks);
	out->execs = READ_ONCE(c->execs);
	out->exits = READ_ONCE(c->exits);
	out->frees = READ_ONCE(c->frees);
}

void tprof_stats_read_total(struct tprof_counters *out)
{
	struct tprof_counters one;
	unsigned int cpu;

	memset(out, 0, sizeof(*out));
	for_each_possible_cpu(cpu) {
		tprof_stats_read_cpu(cpu, &one);
		tprof_counters_add(out, &one);
	}
}
