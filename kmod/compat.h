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

#endif /* TPROF_COMPAT_H */
