/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Admission: the one place that decides who may attach anything to a task
 * (a sampling session, a PMU program, a counting window) or read another
 * thread's metrics, with perf's rules in perf_event_open()'s order:
 *
 *   1. kernel.perf_event_paranoid, for callers without CAP_PERFMON:
 *      above 2 nothing (EACCES); 2 user mode only (exclude_kernel);
 *   2. the target, by its number in the caller's pid namespace (ESRCH);
 *   3. the target's signal->exec_update_lock, read, interruptibly (EINTR),
 *      held until tprof_admit_end(): an exec cannot change the target's
 *      credentials (nor run perf_event_exit_task()) between the check and
 *      the moment the caller has published what it attaches;
 *   4. CAP_PERFMON, or ptrace-read rights over the target
 *      (PTRACE_MODE_READ_REALCREDS: same real ids, the capability-subset
 *      rule inside one user namespace, a dumpable mm), else EACCES.
 *
 * All in the caller's context: never call it from a kernel worker.
 *
 * The exec transition: tprof_exec_leaves_observers() tells, at the
 * sched_process_exec hook, that the task has just exec'd into an image its
 * observers may no longer see (begin_new_exec() marked its mm not
 * dumpable: setuid, setgid, file capabilities). perf has then already
 * exited every per-task event (perf_event_exit_task()); each feature ends
 * what it holds on the task in its own exec hook (hooks.c calls them all).
 */
#ifndef TPROF_ADMISSION_H
#define TPROF_ADMISSION_H

#include <linux/pid.h>
#include <linux/types.h>

struct task_struct;
struct mm_struct;

struct tprof_admission {
	struct pid *pid;		/* the target's identity (referenced) */
	struct task_struct *task;	/* referenced; its exec_update_lock is held */
	bool privileged;		/* CAP_PERFMON: kernel data may be shown */
	bool exclude_kernel;		/* paranoid 2 without CAP_PERFMON */
};

/* tprof_admit() flags */
#define TPROF_ADMIT_PERF	(1U << 0)	/* perf_event_paranoid applies */

/*
 * Admits the caller to @vpid (0: itself), a thread (PIDTYPE_PID) or a
 * process (PIDTYPE_TGID). 0 with @a filled and the target's exec lock
 * held; -EACCES, -ESRCH, -EINTR with nothing held.
 */
int tprof_admit(u32 vpid, enum pid_type type, unsigned int flags,
		struct tprof_admission *a);
/* Releases the exec lock and what @a still references. */
void tprof_admit_end(struct tprof_admission *a);
/* Takes the target's struct pid out of @a (the caller's reference now). */
static inline struct pid *tprof_admit_take_pid(struct tprof_admission *a)
{
	struct pid *pid = a->pid;

	a->pid = NULL;
	return pid;
}

/* Rule 4 alone, for a read that attaches nothing (no lock held). */
bool tprof_may_read_task(struct task_struct *task);
int tprof_perf_event_paranoid(void);

/*
 * @task's image, @mm, may be seen by ordinary observers (dumpable: not
 * made by a setuid, setgid or file-capability exec). Not for a
 * kernel-mode sample's mm: use it from the task's own context or under
 * references to both.
 */
bool tprof_image_user_dumpable(struct task_struct *task, struct mm_struct *mm);

/* At sched_process_exec: @p's new image is not for its observers. */
bool tprof_exec_leaves_observers(struct task_struct *p);

#endif /* TPROF_ADMISSION_H */
