/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The clock a thread reads in user space without a system call, which the
 * self page (self_page.c) stamps at each switch-in (tsc_in):
 *
 * tprof_arch_clock_mult(shift)
 *	Its ticks -> ns as mult/shift; 0 when it cannot be used.
 * tprof_arch_clock_now()
 *	Its value now, on this CPU.
 */
#ifndef TPROF_ARCH_USER_CLOCK_H
#define TPROF_ARCH_USER_CLOCK_H

#if defined(CONFIG_X86_TSC)
#include "x86/user_clock.h"
#elif defined(CONFIG_ARM64)
#include "arm64/user_clock.h"
#else
#include <linux/types.h>

static inline u64 tprof_arch_clock_mult(u32 *shift)
{
	*shift = 0;
	return 0;
}

static inline u64 tprof_arch_clock_now(void)
{
	return 0;
}
#endif

#endif /* TPROF_ARCH_USER_CLOCK_H */
