/*
 * tprof-wl-child: the short-lived child tprof-wl-spawn (spawn.c) execs, a
 * workload for tprof's sampling tests and `make demo`.
 *
 *   tprof-wl-child [--ms MS]
 *
 * Burns MS ms (default 30) of CPU time in wl_child_work, its own volatile
 * arithmetic loop, then exits 0 without printing anything, so all of its
 * user time belongs to wl_child_work in this executable.
 */
#include "wl.h"

/* Burns about MS ms of this thread's CPU time; returns the CPU ns spent. */
uint64_t wl_child_work(unsigned ms)
{
	struct wl_budget b = { .budget = (uint64_t)ms * 1000000u };
	unsigned long chunk = 1000;
	volatile uint64_t x = 3;

	while (WL_BUDGET_LEFT(&b, chunk))
		for (unsigned long i = 0; i < chunk; i++)
			x = x * 2862933555777941757ull + 3037000493ull;
	return WL_BUDGET_SPENT(&b);
}

int main(int argc, char **argv)
{
	unsigned long ms = 30;

	if (argc == 3 && strcmp(argv[1], "--ms") == 0 && wl_parse_ulong(argv[2], 0, 3600000, &ms) == 0) {
		/* ok */
	} else if (argc != 1) {
		fprintf(stderr, "usage: tprof-wl-child [--ms MS]\n"
				"  burns MS ms of CPU (default 30) in wl_child_work and exits\n");
		return 2;
	}
	wl_child_work((unsigned)ms);
	return 0;
}
