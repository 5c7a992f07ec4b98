/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel-version differences, in one place. Targets: Debian 12's 6.1 and
 * 6.12 kernels; later kernels are handled where the difference is known.
 */
#ifndef TPROF_COMPAT_H
#define TPROF_COMPAT_H

#include <linux/version.h>

/* sched_process_exit gained a group_dead argument in 6.16. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 16, 0)
#define TPROF_SCHED_PROCESS_EXIT_PROTO struct task_struct *p, bool group_dead
#else
#define TPROF_SCHED_PROCESS_EXIT_PROTO struct task_struct *p
#endif

/* vm_flags became read-only behind helpers in 6.3. */
#include <linux/mm.h>
static inline void tprof_vm_flags_clear(struct vm_area_struct *vma,
					unsigned long flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

static inline void tprof_vm_flags_set(struct vm_area_struct *vma,
				      unsigned long flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
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
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
#define TPROF_UPROBE_HANDLER_PROTO struct uprobe_consumer *uc, struct pt_regs *regs, \
	__u64 *data
#else
#define TPROF_UPROBE_HANDLER_PROTO struct uprobe_consumer *uc, struct pt_regs *regs
#endif
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#define TPROF_UPROBE_FILTER_PROTO struct uprobe_consumer *uc, struct mm_struct *mm
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
#define TPROF_UPROBE_FILTER_PROTO struct uprobe_consumer *uc, \
	enum uprobe_filter_ctx ctx, struct mm_struct *mm
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
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
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
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define TPROF_TASK_PERF_CTXS 1
#define tprof_task_perf_ctx(task, i) ((task)->perf_event_ctxp)
#else
#define TPROF_TASK_PERF_CTXS perf_nr_task_contexts
#define tprof_task_perf_ctx(task, i) ((task)->perf_event_ctxp[i])
#endif

#endif /* TPROF_COMPAT_H */
