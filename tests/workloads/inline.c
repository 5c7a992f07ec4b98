/*
 * tprof-wl-inline: a hot loop in a function forced inline into its caller,
 * for the test that reports name inlined functions (from DWARF). Built -O2
 * -g without -fno-inline (the Makefile's own rule): wl_inline_hot exists
 * only as DWARF's inlined instance inside wl_inline_outer.
 *
 *   tprof-wl-inline [--ms MS]   (default 500 ms of CPU time)
 */
#include "wl.h"

static volatile unsigned long wl_inline_sink;

static inline __attribute__((always_inline)) void wl_inline_hot(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		wl_inline_sink = wl_inline_sink * 31 + i;
}

__attribute__((noinline)) void wl_inline_outer(unsigned long n)
{
	wl_inline_hot(n);
}

int main(int argc, char **argv)
{
	unsigned long ms = 500, chunk = 1000;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--ms") == 0 && i + 1 < argc) {
			if (wl_parse_ulong(argv[++i], 1, 3600000, &ms) != 0) {
				fprintf(stderr, "tprof-wl-inline: --ms takes 1..3600000\n");
				return 2;
			}
		} else {
			fprintf(stderr, "usage: tprof-wl-inline [--ms MS]\n");
			return 2;
		}
	}
	uint64_t start = wl_thread_ns();
	for (;;) {
		uint64_t t0 = wl_thread_ns();
		if (t0 - start >= ms * 1000000ull)
			break;
		wl_inline_outer(chunk);
		chunk = wl_next_chunk(chunk, wl_thread_ns() - t0);
	}
	return 0;
}
