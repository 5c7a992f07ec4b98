/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A fixed array of processes followed by identity: each slot holds a
 * referenced struct pid (the thread-group pid), never a pid number, so a
 * process that exits while followed can never be mistaken for the next
 * process given its number. Used by one-process sampling sessions
 * (tprof_session.follow) and process/profil windows (tprof_window.procs).
 *
 * Context: has() reads with READ_ONCE and is safe anywhere (NMI included);
 * add() and remove() use cmpxchg and may run in the fork/exec/exit hooks
 * (preemption off); clear() runs in process context once no reader can
 * see the array any more (after an RCU grace period).
 *
 * remove() is called from a hook of a task of that process, which holds a
 * reference on its own thread-group pid (the group leader's, kept until the
 * whole group is reaped), so its put_pid() never frees it there.
 */
#ifndef TPROF_PID_SET_H
#define TPROF_PID_SET_H

#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/pid.h>

static inline bool tprof_pid_set_has(struct pid *const *set, unsigned int n,
				     const struct pid *pid)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (READ_ONCE(set[i]) == pid)
			return true;
	return false;
}

/* Takes a reference on @pid in a free slot; false (and none) if all are taken. */
static inline bool tprof_pid_set_add(struct pid **set, unsigned int n, struct pid *pid)
{
	unsigned int i;

	get_pid(pid);
	for (i = 0; i < n; i++)
		if (!cmpxchg(&set[i], NULL, pid))
			return true;
	put_pid(pid);
	return false;
}

/* Drops @pid; true for the one caller that found it (cmpxchg). */
static inline bool tprof_pid_set_remove(struct pid **set, unsigned int n, struct pid *pid)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (READ_ONCE(set[i]) == pid && cmpxchg(&set[i], pid, NULL) == pid) {
			put_pid(pid);
			return true;
		}
	}
	return false;
}

static inline unsigned int tprof_pid_set_count(struct pid *const *set, unsigned int n)
{
	unsigned int i, count = 0;

	for (i = 0; i < n; i++)
		count += READ_ONCE(set[i]) != NULL;
	return count;
}

/* Drops every reference left (process context, no reader left). */
static inline void tprof_pid_set_clear(struct pid **set, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		put_pid(xchg(&set[i], NULL));
}

#endif /* TPROF_PID_SET_H */
