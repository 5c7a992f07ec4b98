/* SPDX-License-Identifier: GPL-2.0 */
/* Per-CPU event counters: bumped by the hooks, summed for GET_INFO. */
#ifndef TPROF_STATS_H
#define TPROF_STATS_H

#include <linux/percpu.h>
#include <linux/tprof.h>

/* Written only by the hooks of the CPU it belongs to (this_cpu_inc). */
DECLARE_PER_CPU(struct tprof_counters, tprof_cpu_counters);

void tprof_stats_read_cpu(unsigned int cpu, struct tprof_counters *out);
void tprof_stats_read_total(struct tprof_counters *out);

#endif /* TPROF_STATS_H */
