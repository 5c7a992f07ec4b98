/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How many debug registers the CPU has for PMU programs' breakpoints and
 * watchpoints (pmu.c checks a program's pieces against them before perf
 * would refuse it with ENOSPC):
 *
 * tprof_arch_data_slots()
 *	Data (watchpoint) registers. x86's 4 are shared with execution
 *	breakpoints (CONFIG_HAVE_MIXED_BREAKPOINTS_REGS); arm64's are
 *	ID_AA64DFR0_EL1.WRPs + 1 (hw_breakpoint_slots() is not exported there).
 * tprof_arch_exec_slots()
 *	arm64's execution breakpoint registers, ID_AA64DFR0_EL1.BRPs + 1;
 *	U32_MAX where they are the data ones (x86).
 * TPROF_ARCH_HIT_NEEDS_STEP
 *	1 where a debug register traps before the instruction or access and
 *	the kernel steps over it only for perf's default overflow handler
 *	(arm64): with a handler of tprof's alone the task would trap there
 *	forever, so pmu.c counts such hits through perf, or steps them, or
 *	makes an execution breakpoint a uprobe or kprobe instead.
 * TPROF_ARCH_INSN_ALIGN
 *	Instructions start at multiples of it: an execution breakpoint
 *	elsewhere is EINVAL.
 */
#ifndef TPROF_ARCH_DEBUG_REGS_H
#define TPROF_ARCH_DEBUG_REGS_H

#include <linux/hw_breakpoint.h>
#include <linux/limits.h>
#include <linux/tprof.h>

#if defined(CONFIG_ARM64)
#include <asm/cpufeature.h>
#include <asm/sysreg.h>

#define TPROF_ARCH_HIT_NEEDS_STEP 1
#define TPROF_ARCH_INSN_ALIGN 4

static inline u32 tprof_arch_data_slots(void)
{
	return ((read_sanitised_ftr_reg(SYS_ID_AA64DFR0_EL1) >> 20) & 0xf) + 1;
}

static inline u32 tprof_arch_exec_slots(void)
{
	return ((read_sanitised_ftr_reg(SYS_ID_AA64DFR0_EL1) >> 12) & 0xf) + 1;
}
#else
#define TPROF_ARCH_HIT_NEEDS_STEP 0
#define TPROF_ARCH_INSN_ALIGN 1

static inline u32 tprof_arch_data_slots(void)
{
#ifdef hw_breakpoint_slots
	return hw_breakpoint_slots(TYPE_DATA);
#else
	return TPROF_PMU_MAX_WATCH_PIECES;	/* perf's ENOSPC decides */
#endif
}

static inline u32 tprof_arch_exec_slots(void)
{
	return U32_MAX;
}
#endif

#endif /* TPROF_ARCH_DEBUG_REGS_H */
