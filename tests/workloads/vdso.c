/*
 * tprof-wl-vdso: reads CLOCK_MONOTONIC in a loop, for the test that [vdso]
 * samples are named (tprof records the kernel's vDSO image and symbolizes
 * from it). With a clocksource the vDSO can read (TSC, kvm-clock) the reads
 * never enter the kernel and nearly every sample is in the vDSO; with
 * another one the vDSO falls back to the system call, and its share shrinks.
 *
 *   tprof-wl-vdso [--ms MS]   (default 500 ms of CPU time)
 *
 * Prints "reads=N".
 */
#include "wl.h"

__attribute__((noinline)) unsigned long wl_vdso_reads(unsigned long n)
{
	struct timespec ts;
	unsigned long sum = 0;

	for (unsigned long i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sum += (unsigned long)ts.tv_nsec;
	}
	return sum;
}

int main(int argc, char **argv)
{
	unsigned long ms = 500, reads = 0, chunk = 1000;
	volatile unsigned long sink = 0;

	if (wl_parse_ms_only(argc, argv, "tprof-wl-vdso", &ms) != 0)
		return 2;
	struct wl_budget b = { .budget = ms * 1000000ull };
	while (WL_BUDGET_LEFT(&b, chunk)) {
		sink += wl_vdso_reads(chunk);
		reads += chunk;
	}
	printf("reads=%lu\n", reads);
	return 0;
}
