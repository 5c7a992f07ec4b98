/*
 * tprof-wl-inline: a hot loop in a function forced inline into its caller,
 * for the test that reports name inlined functions (from DWARF). Built -O2
 * -g without -fno-inline (the Makefile's own rule): wl_inline_hot exists
 * only as DWARF's inlined instance inside wl_inline_outer.
 *
 *   tprof-wl-inline [--ms MS]   (default 500 ms of CPU time)
 */
#include "wl.h"

static volatile unsigned long wl_inline_sink;

static inline __attribute__((always_inline)) void wl_inline_hot(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		wl_inline_sink = wl_inline_sink * 31 + i;
}

__attribute__((noinline)) void wl_inline_outer(unsigned long n)
{
	wl_inline_hot(n);
}

int main(int argc, char **argv)
{
	unsigned long ms = 500, chunk = 1000;

	if (wl_parse_ms_only(argc, argv, "tprof-wl-inline", &ms) != 0)
		return 2;
	struct wl_budget b = { .budget = ms * 1000000ull };
	while (WL_BUDGET_LEFT(&b, chunk))
		wl_inline_outer(chunk);
	return 0;
}
