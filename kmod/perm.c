// SPDX-License-Identifier: GPL-2.0
/*
 * Who may read whose data. perf's model: CAP_PERFMON (or CAP_SYS_ADMIN) for
 * anything; otherwise a process may read its own threads, and another
 * process's only with ptrace-read rights. ptrace_may_access() is not
 * exported to modules, so this applies its credential rules (same uid and
 * gid as the target's real, effective and saved ids, target dumpable)
 * without the LSM hooks (e.g. Yama's ptrace_scope is not consulted).
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/coredump.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include "tprof.h"

bool tprof_may_read_task(struct task_struct *task)
{
	const struct cred *cred = current_cred(), *tcred;
	struct mm_struct *mm;
	bool ok;

	if (same_thread_group(task, current) || perfmon_capable())
		return true;

	rcu_read_lock();
	tcred = __task_cred(task);
	ok = uid_eq(cred->uid, tcred->euid) && uid_eq(cred->uid, tcred->suid) &&
	     uid_eq(cred->uid, tcred->uid) && gid_eq(cred->gid, tcred->egid) &&
	     gid_eq(cred->gid, tcred->sgid) && gid_eq(cred->gid, tcred->gid);
	rcu_read_unlock();
	if (!ok)
		return false;

	task_lock(task);
	mm = task->mm;
	if (mm && get_dumpable(mm) != SUID_DUMP_USER)
		ok = false;
	task_unlock(task);
	return ok;
}

/*
 * May the caller read process *@pid (a pid in the caller's namespace)?
 * 0 and *@pid turned into the global thread-group id, or -ESRCH (no such
 * process) or -EACCES.
 */
int tprof_check_process_access(u32 *pid)
{
	struct task_struct *task;
	bool ok;

	rcu_read_lock();
	task = pid_task(find_vpid(*pid), PIDTYPE_TGID);
	if (task)
		get_task_struct(task);
	rcu_read_unlock();
	if (!task)
		return -ESRCH;
	ok = tprof_may_read_task(task);
	*pid = task->tgid;
	put_task_struct(task);
	return ok ? 0 : -EACCES;
}

/*
 * The process @vpid (in the caller's pid namespace) as an identity: 0 and a
 * reference on its thread-group struct pid in *@tgid if the caller may read
 * it, else -ESRCH or -EACCES. Callers compare identities, never numbers
 * (a number can be reused by another process meanwhile).
 */
int tprof_get_readable_process(u32 vpid, struct pid **tgid)
{
	struct task_struct *task;
	bool ok;

	rcu_read_lock();
	task = pid_task(find_vpid(vpid), PIDTYPE_TGID);
	if (task)
		get_task_struct(task);
	rcu_read_unlock();
	if (!task)
		return -ESRCH;
	ok = tprof_may_read_task(task);
	*tgid = ok ? get_pid(task_tgid(task)) : NULL;
	put_task_struct(task);
	return ok ? 0 : -EACCES;
}
