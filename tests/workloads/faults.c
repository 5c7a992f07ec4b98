// tprof-wl-faults: page faults with known counts per function, for the PMU
// program tests. fault_hot touches HOT fresh pages, fault_cold COLD ones;
// each touch of a fresh anonymous page (no huge pages) is one fault inside
// that function. fault_data touches DATA pages of the data symbol
// fault_bss (page-aligned, in .bss: fresh too), for data ranges.
//   tprof-wl-faults [HOT [COLD [DATA]]]   (default 1500, 300 and 0; DATA <= 256)
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

#define FAULT_BSS_PAGES 256
/* Whole pages of its own: no other variable's touch faults them in. */
char fault_bss[FAULT_BSS_PAGES * 4096] __attribute__((aligned(4096)));

__attribute__((noinline)) void fault_data(long pages)
{
	for (long i = 0; i < pages; i++)
		*(volatile char *)(fault_bss + i * 4096) = 3;
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
	long data = argc > 3 ? atol(argv[3]) : 0;
	long page = sysconf(_SC_PAGESIZE);

	if (data < 0 || data > FAULT_BSS_PAGES) {
		fprintf(stderr, "DATA: 0 to %d pages\n", FAULT_BSS_PAGES);
		return 2;
	}
	/* One fault per page, as for the mmap'd buffers. */
	madvise(fault_bss, sizeof(fault_bss), MADV_NOHUGEPAGE);
	fault_data(data);

	fault_cold(fresh(cold, page), cold, page);
	fault_hot(fresh(hot, page), hot, page);
	return 0;
}
