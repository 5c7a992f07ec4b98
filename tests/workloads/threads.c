/*
 * tprof-wl-threads: two threads spinning in two different functions, for
 * the tests of per-sample context (dump --tid/--cpu/--time).
 *
 *   tprof-wl-threads [--ms MS]
 *
 * The main thread burns MS ms (default 1000) of its own CPU time in
 * wl_thread_one, a second thread as much in wl_thread_two, at the same
 * time. Prints "one tid T" and "two tid T" (the threads' ids) when both
 * are done.
 */
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "wl.h"

static uint64_t budget_ns = 1000000000ull;

/* The loops are written out in each function so that samples land in it. */
uint64_t wl_thread_one(uint64_t budget)
{
	struct wl_budget b = { .budget = budget };
	unsigned long chunk = 1000;
	volatile uint64_t x = 1;

	while (WL_BUDGET_LEFT(&b, chunk))
		for (unsigned long i = 0; i < chunk; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	return WL_BUDGET_SPENT(&b);
}

uint64_t wl_thread_two(uint64_t budget)
{
	struct wl_budget b = { .budget = budget };
	unsigned long chunk = 1000;
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

static long two_tid;

static void *second(void *arg)
{
	(void)arg;
	two_tid = syscall(SYS_gettid);
	wl_thread_two(budget_ns);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long ms = 1000;
	pthread_t thread;

	if (wl_parse_ms_only(argc, argv, "tprof-wl-threads", &ms) != 0)
		return 2;
	budget_ns = ms * 1000000ull;
	if (pthread_create(&thread, NULL, second, NULL) != 0) {
		perror("pthread_create");
		return 1;
	}
	wl_thread_one(budget_ns);
	pthread_join(thread, NULL);
	printf("one tid %ld\ntwo tid %ld\n", (long)syscall(SYS_gettid), two_tid);
	return 0;
}
