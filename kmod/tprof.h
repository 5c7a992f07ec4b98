/* SPDX-License-Identifier: GPL-2.0 */
/* tprof.ko internals shared between its files. */
#ifndef TPROF_H
#define TPROF_H

#include <linux/percpu.h>
#include <linux/tprof.h>

#define TPROF_MODULE_VERSION_STR "0.1.0"
#define TPROF_MODULE_VERSION ((0 << 16) | (1 << 8) | 0)

/* stats.c: per-CPU event counters, written by the hooks. */
DECLARE_PER_CPU(struct tprof_counters, tprof_cpu_counters);
void tprof_stats_read_cpu(unsigned int cpu, struct tprof_counters *out);
void tprof_stats_read_total(struct tprof_counters *out);

/* hooks.c: scheduler tracepoint probes. */
int tprof_hooks_init(void);
void tprof_hooks_exit(void);

/* dev.c: /dev/tprof. */
int tprof_dev_init(void);
void tprof_dev_exit(void);

#endif /* TPROF_H */
