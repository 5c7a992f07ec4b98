/*
 * libtprofwl.so: the shared-library part of tprof-wl-split (split.c), a
 * workload for tprof's sampling tests and `make demo`. wl_lib_spin burns
 * CPU in user mode inside this library, so a profile of tprof-wl-split must
 * attribute that share to libtprofwl.so and the function wl_lib_spin.
 */
#include "wl.h"

/* Burns about MS ms of this thread's CPU time in this function's own loop;
 * returns the CPU ns it spent. */
uint64_t wl_lib_spin(unsigned ms)
{
	struct wl_budget b = { .budget = (uint64_t)ms * 1000000u };
	static unsigned long chunk = 1000;
	volatile uint64_t x = 12345;

	while (WL_BUDGET_LEFT(&b, chunk))
		for (unsigned long i = 0; i < chunk; i++)
			x = (x ^ (x >> 11)) * 0x2545f4914f6cdd1dull;
	return WL_BUDGET_SPENT(&b);
}

/* Calls fn(units) from this library, so stacks through it have a frame here
 * (tprof-wl-calltree). */
uint64_t wl_lib_call(uint64_t (*fn)(unsigned long), unsigned long units)
{
	return fn(units) + 1;
}
