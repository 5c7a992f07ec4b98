// SPDX-License-Identifier: GPL-2.0
/*
 * Per-user bounds (see user_limits.h): one xarray per bound, indexed by the
 * kuid, holding the count in use as a value entry; no entry means none.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/moduleparam.h>
#include <linux/xarray.h>
#include "user_limits.h"

/*
 * A thread-scope program makes at most 4096 events (E2BIG); a user may hold
 * four such programs' worth by default.
 */
static unsigned int pmu_user_events = 16384;
module_param(pmu_user_events, uint, 0644);
MODULE_PARM_DESC(pmu_user_events,
		 "perf events PMU programs may hold per user (EDQUOT beyond; CAP_SYS_ADMIN exempt)");

/* A self page per thread: enough for max_threads' default by default. */
static unsigned int self_pages_per_user = 16384;
module_param(self_pages_per_user, uint, 0644);
MODULE_PARM_DESC(self_pages_per_user,
		 "self page mappings per user (EDQUOT beyond; CAP_SYS_ADMIN exempt)");

/*
 * A uprobe on a file makes every mmap of it (an exec, a dlopen) look at it,
 * in every process: perf bounds its uprobes only by open files; tprof by
 * 32 programs' worth of breakpoint counters.
 */
static unsigned int uprobes_per_user = 256;
module_param(uprobes_per_user, uint, 0644);
MODULE_PARM_DESC(uprobes_per_user,
		 "uprobes (arm64 user breakpoints seen per hit) per user (EDQUOT beyond; CAP_SYS_ADMIN exempt)");

static struct xarray tprof_limit_counts[TPROF_NR_LIMITS] = {
	[TPROF_LIMIT_PMU_EVENTS] = XARRAY_INIT(tprof_limit_counts[TPROF_LIMIT_PMU_EVENTS], 0),
	[TPROF_LIMIT_SELF_PAGES] = XARRAY_INIT(tprof_limit_counts[TPROF_LIMIT_SELF_PAGES], 0),
	[TPROF_LIMIT_UPROBES] = XARRAY_INIT(tprof_limit_counts[TPROF_LIMIT_UPROBES], 0),
};

static struct xarray *tprof_limit_xa(enum tprof_limit which)
{
	return &tprof_limit_counts[which];
}

static unsigned long tprof_limit_max(enum tprof_limit which)
{
	switch (which) {
	case TPROF_LIMIT_PMU_EVENTS:
		return READ_ONCE(pmu_user_events);
	case TPROF_LIMIT_SELF_PAGES:
		return READ_ONCE(self_pages_per_user);
	default:
		return READ_ONCE(uprobes_per_user);
	}
}

/* Adds @n to @uid's count, refused beyond @max (0: no bound). */
static int tprof_limit_add(enum tprof_limit which, kuid_t uid, u32 n,
			   unsigned long max)
{
	struct xarray *xa = tprof_limit_xa(which);
	unsigned long idx = __kuid_val(uid);
	unsigned long used;
	void *old, *cur;
	int ret = 0;

	xa_lock(xa);
	for (;;) {
		old = xa_load(xa, idx);
		used = old ? xa_to_value(old) : 0;
		if ((max && used + n > max) || used + n < used) {
			ret = -EDQUOT;
			break;
		}
		if (old) {
			/* Replacing a present entry allocates nothing. */
			__xa_store(xa, idx, xa_mk_value(used + n), GFP_NOWAIT);
			break;
		}
		/* May drop the lock to allocate: retried if someone came first. */
		cur = __xa_cmpxchg(xa, idx, NULL, xa_mk_value(n), GFP_KERNEL);
		if (xa_is_err(cur)) {
			ret = xa_err(cur);
			break;
		}
		if (!cur)
			break;
	}
	xa_unlock(xa);
	return ret;
}

int tprof_limit_charge(enum tprof_limit which, u32 n, struct tprof_charge *ch)
{
	kuid_t uid = current_uid();
	int ret;

	ch->uid = uid;
	ch->n = 0;
	if (!n || capable(CAP_SYS_ADMIN))
		return 0;
	/* A bound of 0 refuses everything (it is not "unbounded"). */
	if (!tprof_limit_max(which))
		return -EDQUOT;
	ret = tprof_limit_add(which, uid, n, tprof_limit_max(which));
	if (!ret)
		ch->n = n;
	return ret;
}

void tprof_limit_dup(enum tprof_limit which, const struct tprof_charge *from,
		     struct tprof_charge *to)
{
	to->uid = from->uid;
	to->n = 0;
	if (from->n && !tprof_limit_add(which, from->uid, from->n, 0))
		to->n = from->n;
}

void tprof_limit_uncharge(enum tprof_limit which, struct tprof_charge *ch)
{
	struct xarray *xa = tprof_limit_xa(which);
	unsigned long idx = __kuid_val(ch->uid);
	unsigned long used;
	void *old;

	if (!ch->n)
		return;
	xa_lock(xa);
	old = xa_load(xa, idx);
	used = old ? xa_to_value(old) : 0;
	if (WARN_ON_ONCE(used < ch->n))
		used = ch->n;
	if (used == ch->n)
		__xa_erase(xa, idx);
	else
		__xa_store(xa, idx, xa_mk_value(used - ch->n), GFP_NOWAIT);
	xa_unlock(xa);
	ch->n = 0;
}
