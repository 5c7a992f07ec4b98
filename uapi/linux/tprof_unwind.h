/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * Unwind tables: how to find a function's caller from its registers, per
 * address range of one ELF file, derived by userspace from the file's CFI
 * (.eh_frame) so that the sampler can walk stacks without frame pointers.
 * The compact form of the OpenTelemetry eBPF profiler's "stack deltas":
 * only the rules a profiler needs (the CFA, the return address and the
 * frame pointer), one row per change.
 *
 * A table is an array of rows sorted by start, strictly increasing; a row
 * covers [start, next row's start), the last row ends its table. Addresses
 * are the file's own virtual addresses (ELF p_vaddr space): the walker
 * subtracts the mapping's load bias first.
 *
 * One step from a frame with registers {pc, sp, fp, lr} (lr on arm64):
 *   CFA    = base + cfa_offset, base by cfa_base (sp or fp);
 *   caller pc = the word at CFA + ra_offset (TPROF_UNWIND_RA_AT_CFA) or lr
 *            (TPROF_UNWIND_RA_IN_LR: arm64, before the function saved it);
 *   caller fp = the word at CFA + fp_offset (TPROF_UNWIND_FP_AT_CFA) or fp
 *            (TPROF_UNWIND_FP_SAME: not changed yet);
 *   caller sp = CFA.
 */
#ifndef _UAPI_LINUX_TPROF_UNWIND_H
#define _UAPI_LINUX_TPROF_UNWIND_H

#include <linux/types.h>

/* cfa_base */
#define TPROF_UNWIND_CFA_NONE 0	   /* no CFI here: walk frame pointers */
#define TPROF_UNWIND_CFA_SP 1	   /* CFA = sp + cfa_offset */
#define TPROF_UNWIND_CFA_FP 2	   /* CFA = fp + cfa_offset */
/* x86-64 lazy-binding PLT: sp + cfa_offset, plus 8 past a push (pc & 15 >= 11) */
#define TPROF_UNWIND_CFA_PLT 3
#define TPROF_UNWIND_CFA_END 4	   /* the outermost frame (_start, a thread's entry) */
/*
 * CFI the table cannot state (a CFA from another register, as in glibc's
 * lazy-binding resolver; a signal frame): the walk stops there, cut,
 * rather than read frame pointers through code that has none.
 */
#define TPROF_UNWIND_CFA_UNSTATED 5
/*
 * A signal trampoline (x86-64's __restore_rt, arm64's vDSO
 * __kernel_rt_sigreturn): the interrupted registers are in the signal
 * frame at sp. The caller's sp is the word at sp + cfa_offset, its pc the
 * word at that + ra_offset and its fp the word at that + fp_offset; with
 * ra_rule TPROF_UNWIND_RA_IN_LR (arm64) its lr is the word after its fp.
 * The caller's pc is where it was interrupted, not a return address.
 */
#define TPROF_UNWIND_CFA_SIGNAL 6 /* ABI 1.20 (TPROF_FEAT_UNWIND_SIGNAL_FRAMES) */
#define TPROF_UNWIND_CFA_MAX TPROF_UNWIND_CFA_SIGNAL

/* fp_rule */
#define TPROF_UNWIND_FP_SAME 0	   /* the caller's fp is this frame's fp */
#define TPROF_UNWIND_FP_AT_CFA 1   /* saved at CFA + fp_offset */
#define TPROF_UNWIND_FP_UNKNOWN 2  /* clobbered: no frame-pointer fallback above */
#define TPROF_UNWIND_FP_MAX TPROF_UNWIND_FP_UNKNOWN

/* ra_rule */
#define TPROF_UNWIND_RA_AT_CFA 0   /* saved at CFA + ra_offset */
#define TPROF_UNWIND_RA_IN_LR 1	   /* still in the link register (arm64) */
#define TPROF_UNWIND_RA_MAX TPROF_UNWIND_RA_IN_LR

struct tprof_unwind_row {
	__u32 start;	  /* first address the row covers */
	__s32 cfa_offset;
	__s16 fp_offset;  /* with TPROF_UNWIND_FP_AT_CFA, else 0 */
	__s16 ra_offset;  /* with TPROF_UNWIND_RA_AT_CFA, else 0 */
	__u8 cfa_base;	  /* TPROF_UNWIND_CFA_* */
	__u8 fp_rule;	  /* TPROF_UNWIND_FP_* */
	__u8 ra_rule;	  /* TPROF_UNWIND_RA_* */
	__u8 reserved;	  /* 0 */
};

#endif /* _UAPI_LINUX_TPROF_UNWIND_H */
