/*
 * tprof-wl-annotate: a function whose hot source line is known, for
 * `tprofctl annotate`'s tests and `make demo`.
 *
 *   tprof-wl-annotate [--ms MS]     burn MS ms of CPU (default 1000) in wl_lines
 *   tprof-wl-annotate --lines       print "hot=N warm=M": the two loops' lines
 *
 * wl_lines runs two loops of the same body, each written on one line (so
 * every instruction of a loop, its test and increment too, is on its line):
 * the hot one 16 times as many iterations as the warm one. Of wl_lines's
 * samples about 16/17 land on the hot line and 1/17 on the warm one; the rest
 * of the function is the clock read every ~2 ms.
 */
#include "wl.h"

static unsigned long chunk = 1000; /* hot loop iterations between clock reads */

static const unsigned hot_line = __LINE__ + 10;
static const unsigned warm_line = __LINE__ + 10;

uint64_t wl_lines(uint64_t budget_ns)
{
	uint64_t start = wl_thread_ns(), now = start, t;
	volatile uint64_t x = 1;

	while (now - start < budget_ns) {
		/* The next two lines are hot_line and warm_line: keep them there. */
		for (unsigned long i = 0; i < chunk; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
		for (unsigned long i = 0; i < chunk / 16; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
		t = wl_thread_ns();
		chunk = wl_next_chunk(chunk, t - now);
		now = t;
	}
	return now - start;
}

int main(int argc, char **argv)
{
	unsigned long ms = 1000;

	if (argc == 2 && strcmp(argv[1], "--lines") == 0) {
		printf("hot=%u warm=%u\n", hot_line, warm_line);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "--ms") == 0) {
		if (wl_parse_ulong(argv[2], 1, 3600000, &ms) != 0)
			return 2;
	} else if (argc != 1) {
		fprintf(stderr, "usage: tprof-wl-annotate [--ms MS] | --lines\n");
		return 2;
	}
	printf("tprof-wl-annotate: %llu ns in wl_lines\n",
	       (unsigned long long)wl_lines((uint64_t)ms * 1000000u));
	return 0;
}
