/*
 * wl.h: helpers shared by the workload programs in tests/workloads/ (the
 * programs tprof's sampling tests and `make demo` profile). Only clocks, the
 * budget loop's bookkeeping and argument parsing live here; the CPU-burning
 * loops are written out in each workload function's own body, so a sampled
 * instruction address lands in that function and not in a shared helper.
 */
#ifndef TPROF_WL_H
#define TPROF_WL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPU time (user + system) this thread has used, in nanoseconds. */
static inline uint64_t wl_thread_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) {
		perror("clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
		exit(1);
	}
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Loop iterations until the next clock read, adapted so that reads are
 * about 2 ms apart (1 to 4 ms). Reading the thread's CPU clock is a system
 * call: under TCG one costs tens of microseconds (arm64 most), which the
 * workload charges to the function that reads it while a profile shows it
 * as kernel time. Reads every 0.5 ms put 5-9 points of a profile there on
 * arm64; every 2 ms keeps it to one or two.
 */
static inline unsigned long wl_next_chunk(unsigned long cur, uint64_t took_ns)
{
	if (took_ns < 1000000 && cur < (1ul << 40))
		return cur * 2;
	if (took_ns > 4000000 && cur > 1)
		return cur / 2;
	return cur;
}

/*
 * A budget of this thread's CPU time, spent in chunks of loop iterations:
 *
 *	struct wl_budget b = { .budget = budget_ns };
 *	while (WL_BUDGET_LEFT(&b, chunk))
 *		for (unsigned long i = 0; i < chunk; i++)
 *			... the workload function's own loop body ...;
 *	return WL_BUDGET_SPENT(&b);
 *
 * The clock is read once per chunk (wl_next_chunk() adapts the chunk).
 * Macros, not inline functions: DWARF names an inlined function as a frame
 * of its own (folded stacks, pprof), and every sample of a workload
 * function's loop must be that function's.
 */
struct wl_budget {
	uint64_t start, now, budget;
	int running; /* the clock has been read: start is set */
};

/* Reads the clock (adapting chunk after the first time); whether budget remains. */
#define WL_BUDGET_LEFT(b, chunk)						\
	({									\
		uint64_t wl_t_ = wl_thread_ns();				\
										\
		if ((b)->running)						\
			(chunk) = wl_next_chunk((chunk), wl_t_ - (b)->now);	\
		else								\
			(b)->start = wl_t_;					\
		(b)->running = 1;						\
		(b)->now = wl_t_;						\
		(b)->now - (b)->start < (b)->budget;				\
	})

/* The CPU ns spent until the last clock read. */
#define WL_BUDGET_SPENT(b) ((b)->now - (b)->start)

/* Parses a decimal number in [min, max]; returns 0 on success, -1 if not. */
static inline int wl_parse_ulong(const char *s, unsigned long min, unsigned long max,
				 unsigned long *out)
{
	char *end;
	unsigned long v;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/*
 * Parses a command line of only [--ms MS] (MS in 1..3600000) into *ms;
 * prints "usage: NAME [--ms MS]" and returns -1 on anything else.
 */
static inline int wl_parse_ms_only(int argc, char **argv, const char *name, unsigned long *ms)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--ms") == 0 && i + 1 < argc &&
		    wl_parse_ulong(argv[i + 1], 1, 3600000, ms) == 0) {
			i++;
			continue;
		}
		fprintf(stderr, "usage: %s [--ms MS]   (MS: 1..3600000)\n", name);
		return -1;
	}
	return 0;
}

/* Parses "A,B,C" (three non-negative integers, sum > 0) into shares[3]. */
static inline int wl_parse_shares(const char *s, unsigned long shares[3])
{
	char buf[64], *save = NULL, *tok;
	int n = 0;

	if (s == NULL || strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		if (n == 3 || wl_parse_ulong(tok, 0, 1000000, &shares[n]) != 0)
			return -1;
		n++;
	}
	if (n != 3 || shares[0] + shares[1] + shares[2] == 0)
		return -1;
	return 0;
}

/*
 * Deficit scheduling of three activities: returns the one furthest behind
 * its share of the CPU time spent so far (ties to the lowest index), so at
 * any point the split is within about one quantum of the target.
 */
static inline int wl_pick(const unsigned long shares[3], const uint64_t spent[3])
{
	double best = 0;
	int pick = -1;

	for (int i = 0; i < 3; i++) {
		double per_share;

		if (shares[i] == 0)
			continue;
		per_share = (double)spent[i] / (double)shares[i];
		if (pick < 0 || per_share < best) {
			best = per_share;
			pick = i;
		}
	}
	return pick;
}

#endif /* TPROF_WL_H */
