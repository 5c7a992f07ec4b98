/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How each counter of a PMU program is made, decided once before anything
 * exists, from the program, the architecture and the caller's capabilities.
 * Creation (pmu_create.c) dispatches on the mechanism, the debug-register
 * budget (pmu_claims.c) and the permission check read the totals: none of
 * them asks the architecture or the counter's flags again.
 */
#ifndef TPROF_PMU_PLAN_H
#define TPROF_PMU_PLAN_H

#include <linux/sched.h>
#include <linux/tprof.h>
#include <linux/types.h>
#include "core/pmu_rules.h"

enum tprof_pmu_mechanism {
	/* perf events with tprof's overflow handler: it sees every event */
	TPROF_PMU_MECH_HANDLER,
	/* perf's own counting events, summed when the program is read */
	TPROF_PMU_MECH_COUNTS_ONLY,
	/*
	 * arm64 debug registers whose hits tprof needs: each event of ours
	 * with a stepper, and a watchpoint's with a guard (pmu_create.c)
	 */
	TPROF_PMU_MECH_STEPPED,
	/* arm64: a uprobe; outside a file mapping, .fallback instead */
	TPROF_PMU_MECH_UPROBE,
	/* arm64: a kprobe at a kernel address, in any scope */
	TPROF_PMU_MECH_KPROBE,
};

struct tprof_pmu_ctr_plan {
	enum tprof_pmu_mechanism mech;
	/*
	 * The perf-event mechanism: mech itself, or for a probe the one it
	 * falls back to (UPROBE) or would be (KPROBE, which sizes the charge).
	 */
	enum tprof_pmu_mechanism events_mech;
	/*
	 * arm64: a user breakpoint as a debug register claims its address
	 * against tprof's uprobes (pmu_claims.c: EBUSY).
	 */
	bool claims_address;
	u32 nr_pieces;		/* a watchpoint's pieces (see the uapi), else 1 */
	struct tprof_pmu_piece pieces[TPROF_PMU_MAX_WATCH_PIECES];
	/* Perf events per piece: ours, a stepper's, a guard's. */
	u32 per_piece;
};

struct tprof_pmu_plan {
	struct tprof_pmu_ctr_plan ctr[TPROF_PMU_MAX_COUNTERS];
	/* Perf events per thread or CPU: each counter's pieces x per_piece. */
	u32 events_per_thread;
	/* Debug registers per thread or CPU (u/kprobes take none). */
	u32 data_slots, exec_slots;
	bool kernel_addresses;	/* breakpoints, watchpoints, ranges: CAP_PERFMON */
	bool kernel_debug_regs;	/* kernel breakpoints, watchpoints: CAP_SYS_ADMIN */
	bool misaligned_insn;	/* a breakpoint between instructions: EINVAL */
};

/*
 * In the caller's context (a uprobe needs its CAP_PERFMON), for a program
 * that passed tprof_pmu_program_check().
 */
void tprof_pmu_plan_make(const struct tprof_pmu_program *c,
			 struct tprof_pmu_plan *plan);

static inline bool tprof_pmu_user_address(u64 start, u64 len)
{
	return len <= TASK_SIZE && start <= TASK_SIZE - len;
}

#endif /* TPROF_PMU_PLAN_H */
