/*
 * The frameless leaf of tprof-wl-calltree (calltree.c), built with
 * -fomit-frame-pointer: it never sets up a frame, so a frame-pointer walk
 * from inside it skips its caller, which only the return address at the
 * stack pointer names (the stack tests check it is recovered).
 */
#include <stdint.h>

#define UNIT_ITERS 50000ul /* as in calltree.c */

uint64_t wl_c(unsigned long units)
{
	volatile uint64_t x = 1;

	for (unsigned long i = 0; i < units * UNIT_ITERS; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}
