// SPDX-License-Identifier: GPL-2.0
/*
 * Who may read whose data. perf's model: CAP_PERFMON (or CAP_SYS_ADMIN) for
 * anything; otherwise a process may read its own threads, and another
 * process's only with ptrace-read rights. ptrace_may_access() is not
 * exported to modules, so this applies its credential rules (same uid and
 * gid as the target's real, effective and saved ids, target dumpable, its
 * permitted capabilities a subset of the caller's) without the LSM hooks (e.g. Yama's ptrace_scope is not consulted).
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/file.h>
#include <linux/fs_struct.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
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
	/*
	 * ptrace's capability rule (cap_ptrace_access_check()): without
	 * CAP_SYS_PTRACE over the target, the target's permitted capabilities
	 * must be a subset of the caller's (a same-uid process that kept
	 * capabilities is not readable by one that has none).
	 */
	if (ok && !cap_issubset(tcred->cap_permitted, cred->cap_permitted) &&
	    !ns_capable_noaudit(tcred->user_ns, CAP_SYS_PTRACE))
		ok = false;
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
 * As tprof_check_process_access(), but returns a reference on the process's
 * struct pid (its identity: the number may be reused once it exits).
 */
int tprof_get_process(u32 vpid, struct pid **pidp)
{
	return tprof_get_target(vpid, PIDTYPE_TGID, pidp);
}

/*
 * The same for a thread (PIDTYPE_PID) or a process (PIDTYPE_TGID): a
 * reference on its struct pid if the caller may read it; -ESRCH, -EACCES.
 */
int tprof_get_target(u32 vpid, enum pid_type type, struct pid **pidp)
{
	struct task_struct *task;
	struct pid *pid;
	bool ok;

	pid = find_get_pid(vpid);
	if (!pid)
		return -ESRCH;
	rcu_read_lock();
	task = pid_task(pid, type);
	if (task)
		get_task_struct(task);
	rcu_read_unlock();
	if (!task) {
		put_pid(pid);
		return -ESRCH;
	}
	ok = tprof_may_read_task(task);
	put_task_struct(task);
	if (!ok) {
		put_pid(pid);
		return -EACCES;
	}
	*pidp = pid;
	return 0;
}

/*
 * kernel.perf_event_paranoid. The variable is not exported to modules, so
 * this reads the sysctl file through the root of the initial pid
 * namespace's init (never through the caller's root or mount namespace,
 * which the caller may control). Anything unexpected (no procfs there, an
 * unreadable value) reads as 3, the most restrictive level: fail closed.
 */
int tprof_perf_event_paranoid(void)
{
	struct task_struct *init;
	struct path root = {};
	struct file *f;
	char buf[16] = {};
	loff_t pos = 0;
	ssize_t n;
	int val;

	rcu_read_lock();
	init = READ_ONCE(init_pid_ns.child_reaper);
	if (init)
		get_task_struct(init);
	rcu_read_unlock();
	if (!init)
		return 3;
	task_lock(init);
	if (init->fs)
		get_fs_root(init->fs, &root);
	task_unlock(init);
	put_task_struct(init);
	if (!root.mnt)
		return 3;
	f = file_open_root(&root, "proc/sys/kernel/perf_event_paranoid",
			   O_RDONLY, 0);
	path_put(&root);
	if (IS_ERR(f))
		return 3;
	n = kernel_read(f, buf, sizeof(buf) - 1, &pos);
	fput(f);
	if (n <= 0 || kstrtoint(strim(buf), 10, &val))
		return 3;
	return val;
}
