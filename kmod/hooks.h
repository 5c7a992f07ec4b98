/* SPDX-License-Identifier: GPL-2.0 */
/* Scheduler tracepoint probes: feed stats, metrics, sampling and PMU programs. */
#ifndef TPROF_HOOKS_H
#define TPROF_HOOKS_H

int tprof_hooks_init(void);
void tprof_hooks_exit(void);

#endif /* TPROF_HOOKS_H */
