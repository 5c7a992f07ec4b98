/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a process's vDSO is mapped, to name its mapping "[vdso]" in MAP
 * records (it has no file): the architecture keeps it in mm->context.
 */
#ifndef TPROF_ARCH_VDSO_H
#define TPROF_ARCH_VDSO_H

#include <linux/mm_types.h>

/* The vDSO's start in mm, 0 when unknown. */
static inline unsigned long tprof_arch_vdso_start(struct mm_struct *mm)
{
#if defined(CONFIG_X86) || defined(CONFIG_ARM64)
	return (unsigned long)mm->context.vdso;
#else
	return 0;
#endif
}

#endif /* TPROF_ARCH_VDSO_H */
