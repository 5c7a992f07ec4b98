/* SPDX-License-Identifier: GPL-2.0 */
/* arm64's user clock (see ../user_clock.h): the generic timer's. */
#ifndef TPROF_ARCH_ARM64_USER_CLOCK_H
#define TPROF_ARCH_ARM64_USER_CLOCK_H

#include <linux/math64.h>
#include <linux/time64.h>
#include <asm/arch_timer.h>

/*
 * arm64: the generic timer's virtual counter (cntvct_el0, what the vDSO
 * reads), which ticks at cntfrq on every CPU whatever their frequency.
 * Offered only while EL0 may read it (CNTKCTL_EL1.EL0VCTEN, which the
 * kernel clears where a timer erratum makes user reads unsafe).
 */
static inline u64 tprof_arch_clock_mult(u32 *shift)
{
	u32 rate = arch_timer_get_cntfrq();	/* arch_timer_get_rate: not exported */

	*shift = 32;
	if (!rate || !(arch_timer_get_cntkctl() & ARCH_TIMER_USR_VCT_ACCESS_EN))
		return 0;
	return div_u64((u64)NSEC_PER_SEC << 32, rate);
}

static inline u64 tprof_arch_clock_now(void)
{
	return __arch_counter_get_cntvct_stable();
}

#endif /* TPROF_ARCH_ARM64_USER_CLOCK_H */
