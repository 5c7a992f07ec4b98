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

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--ms") == 0 && i + 1 < argc) {
			if (wl_parse_ulong(argv[++i], 1, 3600000, &ms) != 0) {
				fprintf(stderr, "tprof-wl-vdso: --ms takes 1..3600000\n");
				return 2;
			}
		} else {
			fprintf(stderr, "usage: tprof-wl-vdso [--ms MS]\n");
			return 2;
		}
	}
	uint64_t start = wl_thread_ns();
	for (;;) {
		uint64_t t0 = wl_thread_ns();
		if (t0 - start >= ms * 1000000ull)
			break;
		sink += wl_vdso_reads(chunk);
		reads += chunk;
		chunk = wl_next_chunk(chunk, wl_thread_ns() - t0);
	}
	printf("reads=%lu\n", reads);
	return 0;
}
