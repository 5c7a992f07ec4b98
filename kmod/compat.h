/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel API differences, in one place. Each is chosen by a probe compiled
 * against the kernel's own headers at build time (probes/NAME.c, which
 * defines TPROF_HAVE_NAME in probed.h: see Kbuild), never by version
 * number. Targets: Debian's 6.1, 6.12 and newest (7.x) kernels.
 */
#ifndef TPROF_COMPAT_H
#define TPROF_COMPAT_H

#include "probed.h"

/* sched_process_exit gained a group_dead argument (6.16). */
#ifdef TPROF_HAVE_SCHED_PROCESS_EXIT_GROUP_DEAD
#define TPROF_SCHED_PROCESS_EXIT_PROTO struct task_struct *p, bool group_dead
#else
#define TPROF_SCHED_PROCESS_EXIT_PROTO struct task_struct *p
#endif

/* hrtimer_expire_entry passes the base's time by value (7.2 does, 6.12 not). */
#ifdef TPROF_HAVE_HRTIMER_EXPIRE_ENTRY_NOW_VALUE
#define TPROF_HRTIMER_EXPIRE_ENTRY_PROTO struct hrtimer *timer, ktime_t now
#else
#define TPROF_HRTIMER_EXPIRE_ENTRY_PROTO struct hrtimer *timer, ktime_t *now
#endif

/* task_newtask's clone_flags became u64 (7.x). */
#ifdef TPROF_HAVE_TASK_NEWTASK_U64_FLAGS
typedef u64 tprof_clone_flags_t;
#else
typedef unsigned long tprof_clone_flags_t;
#endif

/*
 * Dumpability: whether a task's image may be seen by ordinary observers
 * (perf's and ptrace's rule: not after an exec of a setuid, setgid or
 * file-capability image). Flags of the mm until 7.x, where it moved to
 * the task's exec state with the user namespace the image was made in.
 * Callers pass the task and its mm; each kernel reads its own.
 */
#include <linux/capability.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/coredump.h>
#ifdef TPROF_HAVE_TASK_EXEC_STATE
#include <linux/sched/exec_state.h>
static inline bool tprof_user_dumpable(struct task_struct *task,
				       struct mm_struct *mm)
{
	struct task_exec_state *es;
	bool ok;

	rcu_read_lock();
	es = rcu_dereference(task->exec_state);
	ok = es && READ_ONCE(es->dumpable) == TASK_DUMPABLE_OWNER;
	rcu_read_unlock();
	return ok;
}

/* ptrace's image rule: dumpable, or CAP_SYS_PTRACE where it was made. */
static inline bool tprof_may_see_image(struct task_struct *task,
				       struct mm_struct *mm)
{
	struct task_exec_state *es;
	bool ok;

	rcu_read_lock();
	es = rcu_dereference(task->exec_state);
	ok = es && (READ_ONCE(es->dumpable) == TASK_DUMPABLE_OWNER ||
		    ns_capable_noaudit(es->user_ns, CAP_SYS_PTRACE));
	rcu_read_unlock();
	return ok;
}
#else
static inline bool tprof_user_dumpable(struct task_struct *task,
				       struct mm_struct *mm)
{
	return get_dumpable(mm) == SUID_DUMP_USER;
}

static inline bool tprof_may_see_image(struct task_struct *task,
				       struct mm_struct *mm)
{
	return get_dumpable(mm) == SUID_DUMP_USER ||
	       ns_capable_noaudit(mm->user_ns, CAP_SYS_PTRACE);
}
#endif

/* vm_flags became read-only behind helpers (6.3). */
#include <linux/mm.h>
static inline void tprof_vm_flags_clear(struct vm_area_struct *vma,
					unsigned long flags)
{
#ifdef TPROF_HAVE_VM_FLAGS_SET
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

static inline void tprof_vm_flags_set(struct vm_area_struct *vma,
				      unsigned long flags)
{
#ifdef TPROF_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

/*
 * uprobes (pmu_probe.c). 6.12 returns the uprobe from uprobe_register()
 * (which takes a ref_ctr_offset), unregisters without waiting
 * (uprobe_unregister_sync() waits for running handlers; 6.1's
 * uprobe_unregister() excludes them itself) and dropped the filter's
 * context argument; 6.13 gave the handler a session cookie.
 */
#include <linux/err.h>
#include <linux/uprobes.h>
#ifdef TPROF_HAVE_UPROBE_HANDLER_DATA
#define TPROF_UPROBE_HANDLER_PROTO struct uprobe_consumer *uc, struct pt_regs *regs, \
	__u64 *data
#else
#define TPROF_UPROBE_HANDLER_PROTO struct uprobe_consumer *uc, struct pt_regs *regs
#endif
#ifdef TPROF_HAVE_UPROBE_FILTER_NO_CTX
#define TPROF_UPROBE_FILTER_PROTO struct uprobe_consumer *uc, struct mm_struct *mm
#else
#define TPROF_UPROBE_FILTER_PROTO struct uprobe_consumer *uc, \
	enum uprobe_filter_ctx ctx, struct mm_struct *mm
#endif
#ifdef TPROF_HAVE_UPROBE_REGISTER_RETURNS_UPROBE
struct tprof_uprobe {
	struct uprobe *uprobe;
};

static inline int tprof_uprobe_register(struct tprof_uprobe *u, struct inode *inode,
					loff_t offset, struct uprobe_consumer *uc)
{
	struct uprobe *up = uprobe_register(inode, offset, 0, uc);

	if (IS_ERR_OR_NULL(up))
		return up ? PTR_ERR(up) : -ENOMEM;
	u->uprobe = up;
	return 0;
}

static inline void tprof_uprobe_unregister_nosync(struct tprof_uprobe *u,
						  struct inode *inode, loff_t offset,
						  struct uprobe_consumer *uc)
{
	uprobe_unregister_nosync(u->uprobe, uc);
}

static inline void tprof_uprobe_unregister_sync(void)
{
	uprobe_unregister_sync();
}
#else
struct tprof_uprobe {
};

static inline int tprof_uprobe_register(struct tprof_uprobe *u, struct inode *inode,
					loff_t offset, struct uprobe_consumer *uc)
{
	return uprobe_register(inode, offset, uc);
}

/* Takes the uprobe's register_rwsem: no handler of uc runs afterwards. */
static inline void tprof_uprobe_unregister_nosync(struct tprof_uprobe *u,
						  struct inode *inode, loff_t offset,
						  struct uprobe_consumer *uc)
{
	uprobe_unregister(inode, offset, uc);
}

static inline void tprof_uprobe_unregister_sync(void)
{
}
#endif

#ifdef CONFIG_ARM64
/*
 * A return address read from an arm64 frame record may carry a pointer
 * authentication code: strip it. 6.4 split the helper by kernel/user.
 */
#include <asm/pointer_auth.h>
static inline unsigned long tprof_strip_pac(unsigned long ptr, bool user)
{
#ifdef TPROF_HAVE_PTRAUTH_STRIP_USER_INSN_PAC
	return user ? ptrauth_strip_user_insn_pac(ptr) :
		      ptrauth_strip_kernel_insn_pac(ptr);
#else
	return ptrauth_strip_insn_pac(ptr);
#endif
}
#endif

/*
 * A task's perf contexts: one per kind (hardware, software) before 6.2's
 * rewrite of perf's context handling, one for all PMUs since. RCU-managed.
 */
#include <linux/perf_event.h>
#include <linux/sched.h>
#ifdef TPROF_HAVE_PERF_TASK_SINGLE_CTX
#define TPROF_TASK_PERF_CTXS 1
#define tprof_task_perf_ctx(task, i) ((task)->perf_event_ctxp)
#else
#define TPROF_TASK_PERF_CTXS perf_nr_task_contexts
#define tprof_task_perf_ctx(task, i) ((task)->perf_event_ctxp[i])
#endif

#endif /* TPROF_COMPAT_H */
