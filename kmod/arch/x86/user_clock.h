/* SPDX-License-Identifier: GPL-2.0 */
/* x86's user clock (see ../user_clock.h): the TSC, when it is constant. */
#ifndef TPROF_ARCH_X86_USER_CLOCK_H
#define TPROF_ARCH_X86_USER_CLOCK_H

#include <linux/math64.h>
#include <linux/time64.h>
#include <asm/tsc.h>

/*
 * The thread compares two TSC readings taken on one CPU while it runs there
 * (seq changes when it leaves), so what matters is that the TSC ticks at
 * one rate whatever the CPU's frequency: a constant TSC. It need not be
 * synchronized across CPUs, nor keep ticking in deep idle (the CPU is not
 * idle while the thread runs), so the kernel marking it "unstable" for
 * either reason does not disqualify it.
 */
static inline bool tprof_tsc_usable(void)
{
	return boot_cpu_has(X86_FEATURE_TSC) && tsc_khz &&
	       boot_cpu_has(X86_FEATURE_CONSTANT_TSC);
}

/* TSC -> ns as mult/shift; 0 when the TSC cannot be used. */
static inline u64 tprof_arch_clock_mult(u32 *shift)
{
	*shift = 32;
	if (!tprof_tsc_usable())
		return 0;
	return div_u64((u64)NSEC_PER_MSEC << 32, tsc_khz);
}

static inline u64 tprof_arch_clock_now(void)
{
	return rdtsc();
}

#endif /* TPROF_ARCH_X86_USER_CLOCK_H */
