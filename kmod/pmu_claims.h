/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What PMU programs hold that others could want: debug registers, and
 * (arm64) user breakpoint addresses claimed against tprof's uprobes. The
 * admission of a program's counters beyond who may attach (admission.h):
 *
 *   tprof_pmu_check_slots()       ENOSPC: the program alone cannot fit
 *   tprof_pmu_check_task_slots()  ENOSPC: a target thread has no room left
 *   tprof_pmu_reserve_cpu_slots() ENOSPC, else scope CPUS holds its
 *                                 registers on every CPU until unreserved
 *   tprof_pmu_claim()             EBUSY: a uprobe and a debug register
 *                                 would meet at one address
 *
 * The slot checks and the creation they admit run under
 * tprof_pmu_slots_lock, so two programs cannot both fit in the last ones.
 */
#ifndef TPROF_PMU_CLAIMS_H
#define TPROF_PMU_CLAIMS_H

#include <linux/mutex.h>
#include <linux/types.h>

struct task_struct;
struct tprof_pmu_ctr;
struct tprof_pmu_plan;
struct tprof_pmu_prog;

extern struct mutex tprof_pmu_slots_lock;

int tprof_pmu_check_slots(const struct tprof_pmu_plan *plan);
int tprof_pmu_check_task_slots(const struct tprof_pmu_plan *plan,
			       struct task_struct **tasks, unsigned int n);
int tprof_pmu_reserve_cpu_slots(struct tprof_pmu_prog *p);
void tprof_pmu_unreserve_cpu_slots(struct tprof_pmu_prog *p);

int tprof_pmu_claim(struct tprof_pmu_ctr *ctr, u64 addr, bool uprobe);
void tprof_pmu_unclaim(struct tprof_pmu_ctr *ctr);

#endif /* TPROF_PMU_CLAIMS_H */
