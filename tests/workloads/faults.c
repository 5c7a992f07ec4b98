// tprof-wl-faults: page faults with known counts per function, for the PMU
// program tests. fault_hot touches HOT fresh pages, fault_cold COLD ones;
// each touch of a fresh anonymous page (no huge pages) is one fault inside
// that function.
//   tprof-wl-faults [HOT [COLD]]   (default 1500 and 300)
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "wl.h"

static char *fresh(long pages, long page)
{
	char *p = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	madvise(p, pages * page, MADV_NOHUGEPAGE);
	return p;
}

__attribute__((noinline)) void fault_hot(char *base, long pages, long page)
{
	for (long i = 0; i < pages; i++)
		*(volatile char *)(base + i * page) = 1;
}

__attribute__((noinline)) void fault_cold(char *base, long pages, long page)
{
	for (long i = 0; i < pages; i++)
		*(volatile char *)(base + i * page) = 2;
}

int main(int argc, char **argv)
{
	long hot = argc > 1 ? atol(argv[1]) : 1500, cold = argc > 2 ? atol(argv[2]) : 300;
	long page = sysconf(_SC_PAGESIZE);

	fault_cold(fresh(cold, page), cold, page);
	fault_hot(fresh(hot, page), hot, page);
	return 0;
}
