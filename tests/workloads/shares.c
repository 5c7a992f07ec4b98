/*
 * tprof-wl-shares: a CPU-bound workload with a known split between three
 * functions, for tprof's sampling tests and `make demo`.
 *
 *   tprof-wl-shares [--ms TOTAL_MS] [--shares A,B,C]
 *
 * Burns TOTAL_MS ms (default 2000) of this thread's CPU time in wl_alpha,
 * wl_beta and wl_gamma in the proportions A:B:C (default 60,30,10),
 * interleaved in 5 ms quanta by a deterministic deficit schedule, so the
 * split is close to A:B:C at any point of the run, not just at the end.
 * Time is thread CPU time (CLOCK_THREAD_CPUTIME_ID), so the split holds
 * under a slow or overcommitted emulator. Each function spins in its own
 * body (a volatile arithmetic loop), so samples land inside it; the only
 * other code is the clock read every ~2 ms. Ends with one line giving the
 * CPU ns spent in each function.
 */
#include "wl.h"

#define QUANTUM_NS 5000000ull

static unsigned long chunk = 1000; /* loop iterations between clock reads */

/* The three functions the profile must tell apart; not static, so they are
 * in .symtab. Each returns the CPU ns it spent. */
uint64_t wl_alpha(uint64_t budget_ns)
{
	struct wl_budget b = { .budget = budget_ns };
	volatile uint64_t x = 1;

	while (WL_BUDGET_LEFT(&b, chunk))
		for (unsigned long i = 0; i < chunk; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	return WL_BUDGET_SPENT(&b);
}

uint64_t wl_beta(uint64_t budget_ns)
{
	struct wl_budget b = { .budget = budget_ns };
	volatile uint64_t x = 88172645463325252ull;

	while (WL_BUDGET_LEFT(&b, chunk)) {
		for (unsigned long i = 0; i < chunk; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
	}
	return WL_BUDGET_SPENT(&b);
}

uint64_t wl_gamma(uint64_t budget_ns)
{
	struct wl_budget b = { .budget = budget_ns };
	volatile uint32_t x = 7;

	while (WL_BUDGET_LEFT(&b, chunk))
		for (unsigned long i = 0; i < chunk; i++)
			x = x + (x >> 3) + 0x9e3779b9u;
	return WL_BUDGET_SPENT(&b);
}

static void usage(void)
{
	fprintf(stderr, "usage: tprof-wl-shares [--ms TOTAL_MS] [--shares A,B,C]\n"
			"  burns TOTAL_MS ms of CPU (default 2000) in wl_alpha, wl_beta,\n"
			"  wl_gamma in the proportions A:B:C (default 60,30,10)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const char *const names[3] = { "wl_alpha", "wl_beta", "wl_gamma" };
	uint64_t (*const fns[3])(uint64_t) = { wl_alpha, wl_beta, wl_gamma };
	unsigned long total_ms = 2000, shares[3] = { 60, 30, 10 };
	uint64_t spent[3] = { 0, 0, 0 }, total_ns, done = 0;
	unsigned long quanta = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--ms") == 0 && i + 1 < argc) {
			if (wl_parse_ulong(argv[++i], 1, 3600000, &total_ms) != 0)
				usage();
		} else if (strcmp(argv[i], "--shares") == 0 && i + 1 < argc) {
			if (wl_parse_shares(argv[++i], shares) != 0)
				usage();
		} else {
			usage();
		}
	}

	total_ns = (uint64_t)total_ms * 1000000u;
	while (done < total_ns) {
		int k = wl_pick(shares, spent);
		uint64_t budget = total_ns - done < QUANTUM_NS ? total_ns - done : QUANTUM_NS;
		uint64_t took = fns[k](budget);

		spent[k] += took;
		done += took;
		quanta++;
	}

	printf("tprof-wl-shares:");
	for (int k = 0; k < 3; k++)
		printf(" %s=%llu ns (%.1f%%)", names[k], (unsigned long long)spent[k],
		       100.0 * (double)spent[k] / (double)done);
	printf(" total=%llu ns in %lu quanta\n", (unsigned long long)done, quanta);
	return 0;
}
