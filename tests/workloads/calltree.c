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
 * unit is the same loop of the same instructions, so on a machine the CPU
 * time splits as the units do: exclusive wl_d 50%, wl_c 30%, wl_a 10%,
 * wl_b 10%; inclusive wl_a 100%, wl_b 60%, wl_lib_call 50%.
 *
 * An emulator need not keep that split (a vCPU it stops while the thread
 * is on the guest's CPU, an interrupt handler that runs for longer in some
 * functions), so each round also measures each function's exclusive thread
 * CPU time between its calls (four clock reads a round, about 1% of it:
 * one in main, two in wl_a, one in wl_b), and the one line it ends with
 * gives those measured shares: what a profile of the run must show.
 */
#include <fcntl.h>
#include <unistd.h>

#include "wl.h"

/* Large enough that a round's clock reads stay near 1% of it. */
#define UNIT_ITERS 50000ul

uint64_t wl_lib_call(uint64_t (*fn)(unsigned long), unsigned long units);
uint64_t wl_c(unsigned long units);

uint64_t wl_d(unsigned long units)
{
	volatile uint64_t x = 1;

	for (unsigned long i = 0; i < units * UNIT_ITERS; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

/*
 * The thread CPU clock at each step of a round: main reads it between
 * rounds, wl_a before calling wl_b and wl_c, wl_b before calling wl_d.
 * Each function's exclusive ns, summed over the rounds, is the difference.
 */
static uint64_t at_b, at_d, at_c;
static uint64_t ns_a, ns_b, ns_c, ns_d;

uint64_t wl_b(void)
{
	volatile uint64_t x = 1;

	for (unsigned long i = 0; i < 10 * UNIT_ITERS; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	at_d = wl_thread_ns();
	return x + wl_lib_call(wl_d, 50);
}

uint64_t wl_a(void)
{
	volatile uint64_t x = 1;

	for (unsigned long i = 0; i < 10 * UNIT_ITERS; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	at_b = wl_thread_ns();
	x += wl_b();
	at_c = wl_thread_ns();
	return x + wl_c(30);
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
	for (uint64_t round_start = start, now;; round_start = now) {
		sink += wl_a();
		now = wl_thread_ns();
		ns_a += at_b - round_start;
		ns_b += at_d - at_b;
		ns_d += at_c - at_d;
		ns_c += now - at_c;
		rounds++;
		spent = now - start;
		if (spent >= (uint64_t)total_ms * 1000000u)
			break;
	}
	/* Integer tenths of a percent: aarch64's long double printf is slow. */
	printf("tprof-wl-calltree: wl_d=%llu ns (%llu\u2030) wl_c=%llu ns (%llu\u2030) wl_a=%llu ns "
	       "(%llu\u2030) wl_b=%llu ns (%llu\u2030) total=%llu ns in %lu rounds (%llu)\n",
	       (unsigned long long)ns_d, (unsigned long long)(1000 * ns_d / spent),
	       (unsigned long long)ns_c, (unsigned long long)(1000 * ns_c / spent),
	       (unsigned long long)ns_a, (unsigned long long)(1000 * ns_a / spent),
	       (unsigned long long)ns_b, (unsigned long long)(1000 * ns_b / spent),
	       (unsigned long long)spent, rounds, (unsigned long long)(sink & 1));
	return 0;
usage:
	fprintf(stderr, "usage: tprof-wl-calltree [--syscalls] [--ms TOTAL_MS]\n");
	return 2;
}
