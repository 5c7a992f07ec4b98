// SPDX-License-Identifier: GPL-2.0
/*
 * tprof-perf-count: does the guest's CPU count hardware events? Opens a
 * perf group {cycles, instructions} on itself (user mode only), runs a loop
 * of a known number of instructions between enable and disable, and prints
 *
 *   loop=N expected=E instructions=I cycles=C
 *
 * The loop is hand-written (aarch64: subs + b.ne, 2 instructions per
 * iteration; x86-64: dec + jnz, also 2), so E = 2 * N. Exit status: 0 when
 * I is within [E, E + 64] (the few instructions between the enable ioctl's
 * return and the disable ioctl's entry), 1 when it is not, 2 when the
 * counters cannot be opened (no hardware PMU: QEMU x86 TCG; or no
 * instructions event: QEMU arm64 without -icount, then the cycles alone are
 * printed, with instructions=n/a). Under QEMU's
 * -icount shift=S, C = 2^S * I exactly; that is for the caller to check.
 *
 *   tprof-perf-count [N]      (default 1000000)
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int open_counter(uint64_t config, int group)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_HARDWARE;
	attr.config = config;
	attr.disabled = group < 0;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	attr.read_format = PERF_FORMAT_GROUP;
	return (int)syscall(SYS_perf_event_open, &attr, 0, -1, group, 0);
}

static void loop(uint64_t n)
{
#if defined(__aarch64__)
	__asm__ volatile("1: subs %0, %0, #1\n\tb.ne 1b" : "+r"(n) : : "cc");
#elif defined(__x86_64__)
	__asm__ volatile("1: dec %0\n\tjnz 1b" : "+r"(n) : : "cc");
#else
#error "tprof-perf-count: no hand-written loop for this architecture"
#endif
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000000;
	struct { uint64_t nr, values[2]; } r;
	uint64_t expected = 2 * n;
	int leader, member;

	if (n == 0) {
		fprintf(stderr, "tprof-perf-count: N must be > 0\n");
		return 2;
	}
	leader = open_counter(PERF_COUNT_HW_CPU_CYCLES, -1);
	if (leader < 0) {
		printf("cycles: perf_event_open: %s\n", strerror(errno));
		return 2;
	}
	member = open_counter(PERF_COUNT_HW_INSTRUCTIONS, leader);
	if (member < 0) {
		/* QEMU arm64 TCG counts instructions only with -icount. */
		int err = errno;

		ioctl(leader, PERF_EVENT_IOC_RESET, 0);
		ioctl(leader, PERF_EVENT_IOC_ENABLE, 0);
		loop(n);
		ioctl(leader, PERF_EVENT_IOC_DISABLE, 0);
		if (read(leader, &r, sizeof(uint64_t) * 2) != (ssize_t)sizeof(uint64_t) * 2)
			r.values[0] = 0;
		printf("loop=%llu expected=%llu instructions=n/a (%s) cycles=%llu\n",
		       (unsigned long long)n, (unsigned long long)expected,
		       strerror(err), (unsigned long long)r.values[0]);
		return 2;
	}
	ioctl(leader, PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP);
	ioctl(leader, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
	loop(n);
	ioctl(leader, PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
	if (read(leader, &r, sizeof(r)) != (ssize_t)sizeof(r) || r.nr != 2) {
		printf("read: %s\n", strerror(errno));
		return 2;
	}
	printf("loop=%llu expected=%llu instructions=%llu cycles=%llu\n",
	       (unsigned long long)n, (unsigned long long)expected,
	       (unsigned long long)r.values[1], (unsigned long long)r.values[0]);
	return r.values[1] >= expected && r.values[1] <= expected + 64 ? 0 : 1;
}
