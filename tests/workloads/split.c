/*
 * tprof-wl-split: a workload with a known split between user time in the
 * main executable, user time in a shared library and kernel time, for
 * tprof's sampling tests and `make demo`.
 *
 *   tprof-wl-split [--ms TOTAL_MS] [--shares MAIN,LIB,KERNEL]
 *
 * Burns TOTAL_MS ms (default 2000) of this thread's CPU time, interleaved in
 * 10 ms quanta by a deterministic deficit schedule, in the proportions
 * MAIN:LIB:KERNEL (default 40,30,30):
 *   - wl_main_spin (this executable): a volatile arithmetic loop, user time;
 *   - wl_lib_spin (libtprofwl.so, found through an rpath of $ORIGIN, i.e.
 *     next to this program): the same kind of loop, user time in the library;
 *   - wl_kernel_spin (this executable): read() of 64 KiB from /dev/zero in a
 *     loop, so nearly all of it is kernel time (clearing the user buffer).
 * Time is thread CPU time (CLOCK_THREAD_CPUTIME_ID), so the split holds under
 * a slow emulator. Ends with one line: CPU ns in each part and the process's
 * user and system time from getrusage.
 */
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "wl.h"

#define QUANTUM_MS 10u

uint64_t wl_lib_spin(unsigned ms); /* libtprofwl.so */

static int zero_fd = -1;
static char zero_buf[64 * 1024];

/* User time in the main executable; returns the CPU ns spent. */
uint64_t wl_main_spin(unsigned ms)
{
	struct wl_budget b = { .budget = (uint64_t)ms * 1000000u };
	static unsigned long chunk = 1000;
	volatile uint64_t x = 1;

	while (WL_BUDGET_LEFT(&b, chunk))
		for (unsigned long i = 0; i < chunk; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	return WL_BUDGET_SPENT(&b);
}

/* Kernel time: read() 64 KiB of zeros at a time; returns the CPU ns spent. */
uint64_t wl_kernel_spin(unsigned ms)
{
	uint64_t start = wl_thread_ns(), now = start, budget = (uint64_t)ms * 1000000u;

	while (now - start < budget) {
		for (int i = 0; i < 8; i++) {
			if (read(zero_fd, zero_buf, sizeof(zero_buf)) != (ssize_t)sizeof(zero_buf)) {
				perror("tprof-wl-split: read /dev/zero");
				exit(1);
			}
		}
		now = wl_thread_ns();
	}
	return now - start;
}

static void usage(void)
{
	fprintf(stderr, "usage: tprof-wl-split [--ms TOTAL_MS] [--shares MAIN,LIB,KERNEL]\n"
			"  burns TOTAL_MS ms of CPU (default 2000): wl_main_spin (user, this\n"
			"  program), wl_lib_spin (user, libtprofwl.so), wl_kernel_spin (kernel,\n"
			"  read of /dev/zero) in the proportions given (default 40,30,30)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const char *const names[3] = { "main", "lib", "kernel" };
	uint64_t (*const fns[3])(unsigned) = { wl_main_spin, wl_lib_spin, wl_kernel_spin };
	unsigned long total_ms = 2000, shares[3] = { 40, 30, 30 };
	uint64_t spent[3] = { 0, 0, 0 }, total_ns, done_ns = 0;
	struct rusage ru;

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

	zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (zero_fd < 0) {
		perror("tprof-wl-split: open /dev/zero");
		return 1;
	}

	/* Budgets are whole ms; the schedule goes by what was really spent. */
	total_ns = (uint64_t)total_ms * 1000000u;
	while (done_ns < total_ns) {
		int k = wl_pick(shares, spent);
		uint64_t left_ms = (total_ns - done_ns + 999999) / 1000000;
		uint64_t took = fns[k](left_ms < QUANTUM_MS ? (unsigned)left_ms : QUANTUM_MS);

		spent[k] += took;
		done_ns += took;
	}
	close(zero_fd);

	if (getrusage(RUSAGE_SELF, &ru) != 0) {
		perror("tprof-wl-split: getrusage");
		return 1;
	}
	printf("tprof-wl-split:");
	for (int k = 0; k < 3; k++)
		printf(" %s=%llu ns (%.1f%%)", names[k], (unsigned long long)spent[k],
		       100.0 * (double)spent[k] / (double)done_ns);
	printf(" total=%llu ns; rusage user=%ld ms sys=%ld ms\n", (unsigned long long)done_ns,
	       ru.ru_utime.tv_sec * 1000 + ru.ru_utime.tv_usec / 1000,
	       ru.ru_stime.tv_sec * 1000 + ru.ru_stime.tv_usec / 1000);
	return 0;
}
