/*
 * tprof-wl-frameless: a call chain built entirely without frame pointers
 * (-O2 -fomit-frame-pointer), as Debian builds its programs and libraries,
 * for the stack tests of `record --call-graph dwarf`.
 *
 *   tprof-wl-frameless [--qsort] [--ms TOTAL_MS]   (default 2000 ms of CPU)
 *
 * Each round: main -> fl_a -> fl_b -> fl_c -> fl_d. fl_b keeps a stack
 * frame of its own and works after its call: a frameless non-leaf, whose
 * caller a frame-pointer walk cannot find. fl_d burns nearly all of the
 * time, so nearly every sample's whole stack is main;fl_a;fl_b;fl_c;fl_d.
 *
 * --qsort: main -> fl_sort -> libc's qsort (Debian's, without frame
 * pointers) -> fl_cmp, a comparator that burns: the samples in fl_cmp must
 * reach fl_sort and main through libc's frames.
 *
 * --signal: the rounds run while a profiling timer (ITIMER_PROF, every
 * millisecond of CPU) interrupts them; its handler fl_on_signal calls
 * fl_sig_burn, which burns most of the time: its samples must reach
 * main through libc's signal trampoline and the interrupted round.
 */
#include <signal.h>
#include <sys/time.h>

#include "wl.h"

#define ROUND_ITERS 200000ul

volatile uint64_t fl_sink;

__attribute__((noinline)) uint64_t fl_d(unsigned long iters)
{
	volatile uint64_t x = 1;

	for (unsigned long i = 0; i < iters; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

__attribute__((noinline)) uint64_t fl_c(unsigned long iters)
{
	uint64_t r = fl_d(iters);

	fl_sink += r;
	return r + 1;
}

__attribute__((noinline)) uint64_t fl_b(unsigned long iters)
{
	volatile uint64_t local[8];
	uint64_t sum = 0;

	for (int i = 0; i < 8; i++)
		local[i] = iters + (uint64_t)i;
	sum = fl_c(iters);
	for (int i = 0; i < 8; i++)
		sum += local[i];
	return sum;
}

__attribute__((noinline)) uint64_t fl_a(unsigned long iters)
{
	uint64_t r = fl_b(iters);

	fl_sink += r;
	return r + 2;
}

#define SORT_N 512

__attribute__((noinline)) int fl_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	/* The work of a costly key comparison: nearly every sample is here. */
	fl_sink += fl_d(200);
	return x < y ? -1 : x > y;
}

__attribute__((noinline)) uint64_t fl_sort(uint64_t seed)
{
	static uint64_t v[SORT_N];

	for (int i = 0; i < SORT_N; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		v[i] = seed >> 16;
	}
	qsort(v, SORT_N, sizeof(v[0]), fl_cmp);
	return v[0] + seed;
}

/* Four rounds a signal: most of the CPU time is the handler's. */
__attribute__((noinline)) uint64_t fl_sig_burn(void)
{
	return fl_d(4 * ROUND_ITERS);
}

static void fl_on_signal(int sig)
{
	(void)sig;
	fl_sink += fl_sig_burn();
}

static int fl_start_timer(void)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fl_on_signal;
	sa.sa_flags = SA_RESTART;
	return sigaction(SIGPROF, &sa, NULL) || setitimer(ITIMER_PROF, &it, NULL);
}

int main(int argc, char **argv)
{
	uint64_t ms = 2000, start, seed = 1;
	int sort = 0, i = 1;

	if (argc > i && strcmp(argv[i], "--qsort") == 0) {
		sort = 1;
		i++;
	} else if (argc > i && strcmp(argv[i], "--signal") == 0) {
		if (fl_start_timer())
			return 1;
		i++;
	}
	if (argc == i + 2 && strcmp(argv[i], "--ms") == 0)
		ms = strtoull(argv[i + 1], NULL, 10);
	else if (argc != i) {
		fprintf(stderr, "usage: tprof-wl-frameless [--qsort|--signal] [--ms TOTAL_MS]\n");
		return 2;
	}
	start = wl_thread_ns();
	while (wl_thread_ns() - start < ms * 1000000u)
		fl_sink += sort ? fl_sort(seed++) : fl_a(ROUND_ITERS);
	printf("frameless: %llu ms\n", (unsigned long long)ms);
	return 0;
}
