// SPDX-License-Identifier: GPL-2.0
/*
 * Who may attach what to which task: perf's rules in perf's order, and the
 * exec transition's test (admission.h). ptrace_may_access() is not
 * exported to modules, so __ptrace_may_access()'s credential rules for
 * PTRACE_MODE_READ_REALCREDS and cap_ptrace_access_check()'s capability
 * rule are applied here, without the LSM hooks (e.g. Yama's ptrace_scope
 * is not consulted).
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
#include <linux/rwsem.h>
#include <linux/sched.h>
#include <linux/sched/coredump.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include "admission.h"
#include "compat.h"

bool tprof_image_user_dumpable(struct task_struct *task, struct mm_struct *mm)
{
	return tprof_user_dumpable(task, mm);
}

bool tprof_exec_leaves_observers(struct task_struct *p)
{
	return p->mm && !tprof_user_dumpable(p, p->mm);
}

bool tprof_may_read_task(struct task_struct *task)
{
	const struct cred *cred = current_cred(), *tcred;
	struct mm_struct *mm;
	bool ok;

	if (same_thread_group(task, current) || perfmon_capable())
		return true;

	rcu_read_lock();
	tcred = __task_cred(task);
	/* __ptrace_may_access(): the caller's real ids are all of the target's. */
	ok = uid_eq(cred->uid, tcred->euid) && uid_eq(cred->uid, tcred->suid) &&
	     uid_eq(cred->uid, tcred->uid) && gid_eq(cred->gid, tcred->egid) &&
	     gid_eq(cred->gid, tcred->sgid) && gid_eq(cred->gid, tcred->gid);
	if (!ok)
		ok = ns_capable_noaudit(tcred->user_ns, CAP_SYS_PTRACE);
	/*
	 * cap_ptrace_access_check(): without CAP_SYS_PTRACE over the target,
	 * its permitted capabilities must be a subset of the caller's, and
	 * both in one user namespace: full capabilities in a namespace of
	 * one's own are nothing over a process outside it.
	 */
	if (ok && !(cred->user_ns == tcred->user_ns &&
		    cap_issubset(tcred->cap_permitted, cred->cap_permitted)) &&
	    !ns_capable_noaudit(tcred->user_ns, CAP_SYS_PTRACE))
		ok = false;
	rcu_read_unlock();
	if (!ok)
		return false;

	task_lock(task);
	mm = task->mm;
	if (mm && !tprof_may_see_image(task, mm))
		ok = false;
	task_unlock(task);
	return ok;
}

int tprof_admit(u32 vpid, enum pid_type type, unsigned int flags,
		struct tprof_admission *a)
{
	struct task_struct *task;
	struct pid *pid;
	int ret;

	memset(a, 0, sizeof(*a));
	a->privileged = perfmon_capable();
	/* 1. perf_event_paranoid (perf_event_open(), Debian's level 3 too). */
	if ((flags & TPROF_ADMIT_PERF) && !a->privileged) {
		int paranoid = tprof_perf_event_paranoid();

		if (paranoid > 2)
			return -EACCES;
		a->exclude_kernel = paranoid > 1;
	}
	/* 2. The target, by identity from here on. */
	if (vpid == 0)
		pid = get_pid(type == PIDTYPE_PID ? task_pid(current) :
			      task_tgid(current));
	else
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
	/* 3. No exec may change its credentials until tprof_admit_end(). */
	ret = down_read_interruptible(&task->signal->exec_update_lock);
	if (ret) {
		put_task_struct(task);
		put_pid(pid);
		return ret;
	}
	/* 4. perf_check_permission(). */
	if (!tprof_may_read_task(task)) {
		up_read(&task->signal->exec_update_lock);
		put_task_struct(task);
		put_pid(pid);
		return -EACCES;
	}
	a->task = task;
	a->pid = pid;
	return 0;
}

void tprof_admit_end(struct tprof_admission *a)
{
	if (a->task) {
		up_read(&a->task->signal->exec_update_lock);
		put_task_struct(a->task);
		a->task = NULL;
	}
	put_pid(a->pid);
	a->pid = NULL;
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
