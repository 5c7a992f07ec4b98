/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-user bounds on what a user makes tprof hold: the perf events of PMU
 * programs (pmu_user_events=), mapped self pages (self_pages_per_user=) and
 * the uprobes of arm64 breakpoints (uprobes_per_user=).
 * Each is charged to the real uid of the caller that creates the object
 * (like RLIMIT_NPROC and perf's locked_vm) and uncharged when the object
 * is freed; beyond the bound the creation fails with EDQUOT. Callers with
 * CAP_SYS_ADMIN (in the initial user namespace) are not charged: they can
 * raise the bounds anyway (the parameters are writable by root).
 * Process context only (the counts live in an xarray under its lock).
 */
#ifndef TPROF_USER_LIMITS_H
#define TPROF_USER_LIMITS_H

#include <linux/types.h>
#include <linux/uidgid.h>

enum tprof_limit {
	TPROF_LIMIT_PMU_EVENTS,
	TPROF_LIMIT_SELF_PAGES,
	TPROF_LIMIT_UPROBES,
	TPROF_NR_LIMITS
};

/* What one object charged, to give back when it is freed. */
struct tprof_charge {
	kuid_t uid;
	u32 n;
};

/*
 * Charges @n of @which to the caller's real uid into @ch (zeroed when not
 * charged: a privileged caller). 0, or -EDQUOT beyond the bound, -ENOMEM.
 */
int tprof_limit_charge(enum tprof_limit which, u32 n, struct tprof_charge *ch);
/*
 * Charges @from's amount again to its uid, unbounded (a mapping copied by
 * mremap): @to charged nothing if there was no memory.
 */
void tprof_limit_dup(enum tprof_limit which, const struct tprof_charge *from,
		     struct tprof_charge *to);
/* Gives @ch back (nothing if it charged nothing) and zeroes it. */
void tprof_limit_uncharge(enum tprof_limit which, struct tprof_charge *ch);

#endif /* TPROF_USER_LIMITS_H */
