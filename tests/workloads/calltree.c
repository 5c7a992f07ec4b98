/*
 * tprof-wl-calltree: a known call tree for tprof's stack tests.
 *
 *   tprof-wl-calltree [--ms TOTAL_MS]        the call tree (default 2000 ms)
 *   tprof-wl-calltree --syscalls [--ms MS]    getppid/read loop in wl_syscalls
 *
 * Each round: main -> wl_a, which burns 10 units and calls wl_b and wl_c;
 * wl_b burns 10 units and calls wl_d through libtprofwl.so's wl_lib_call
 * (a frame in a shared library); wl_d burns 50 units; wl_c, a frameless
 * leaf (calltree_leaf.c, built with -fomit-frame-pointer), burns 30. Every
 * unit is the same loop of the same instructions, so the CPU time splits
 * as the units do: exclusive wl_d 50%, wl_c 30%, wl_a 10%, wl_b 10%;
 * inclusive wl_a 100%, wl_b 60%, wl_lib_call 50%. The clock is read once
 * per round (about 1% of a round), in main. Ends with one line of the
 * shares and the CPU ns spent.
 */
#include <fcntl.h>
#include <unistd.h>

#include "wl.h"

#define UNIT_ITERS 20000ul

uint64_t wl_lib_call(uint64_t (*fn)(unsigned long), unsigned long units);
uint64_t wl_c(unsigned long units);

uint64_t wl_d(unsigned long units)
{
	volatile uint64_t x = 1;

	for (unsigned long i = 0; i < units * UNIT_ITERS; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

uint64_t wl_b(void)
{
	volatile uint64_t x = 1;

	for (unsigned long i = 0; i < 10 * UNIT_ITERS; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x + wl_lib_call(wl_d, 50);
}

uint64_t wl_a(void)
{
	volatile uint64_t x = 1;

	for (unsigned long i = 0; i < 10 * UNIT_ITERS; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x + wl_b() + wl_c(30);
}

/* System calls in a loop: the kernel's samples must sit under this function. */
uint64_t wl_syscalls(uint64_t budget_ns)
{
	uint64_t start = wl_thread_ns(), now = start, calls = 0;
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	char byte;

	if (fd < 0) {
		perror("/dev/zero");
		exit(1);
	}
	while (now - start < budget_ns) {
		for (int i = 0; i < 200; i++) {
			calls += getppid() > 0;
			calls += read(fd, &byte, 1) == 1;
		}
		now = wl_thread_ns();
	}
	close(fd);
	return calls;
}

int main(int argc, char **argv)
{
	unsigned long total_ms = 2000, rounds = 0;
	uint64_t start, spent, sink = 0;
	int syscalls = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--ms") == 0 && i + 1 < argc) {
			if (wl_parse_ulong(argv[++i], 1, 3600000, &total_ms) != 0)
				goto usage;
		} else if (strcmp(argv[i], "--syscalls") == 0) {
			syscalls = 1;
		} else {
			goto usage;
		}
	}
	start = wl_thread_ns();
	if (syscalls) {
		sink = wl_syscalls((uint64_t)total_ms * 1000000u);
		spent = wl_thread_ns() - start;
		printf("tprof-wl-calltree: wl_syscalls=%llu ns (100.0%%) calls=%llu total=%llu ns\n",
		       (unsigned long long)spent, (unsigned long long)sink, (unsigned long long)spent);
		return 0;
	}
	do {
		sink += wl_a();
		rounds++;
		spent = wl_thread_ns() - start;
	} while (spent < (uint64_t)total_ms * 1000000u);
	printf("tprof-wl-calltree: wl_d=%llu ns (50.0%%) wl_c=%llu ns (30.0%%) wl_a=%llu ns "
	       "(10.0%%) wl_b=%llu ns (10.0%%) total=%llu ns in %lu rounds (%llu)\n",
	       (unsigned long long)(spent / 2), (unsigned long long)(spent * 3 / 10),
	       (unsigned long long)(spent / 10), (unsigned long long)(spent / 10),
	       (unsigned long long)spent, rounds, (unsigned long long)(sink & 1));
	return 0;
usage:
	fprintf(stderr, "usage: tprof-wl-calltree [--syscalls] [--ms TOTAL_MS]\n");
	return 2;
}
