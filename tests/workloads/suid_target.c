/*
 * tprof-wl-suid-target: the program the exec-safety tests install as a
 * setuid-root copy (tests/integration/exec_safety_test.cc). Built static
 * and not position-independent, so the addresses below are the same in
 * every run and known before the setuid copy runs.
 *
 *   tprof-wl-suid-target --addresses
 *	prints "func ADDR var ADDR msg ADDR bss ADDR bss_pages N text START END"
 *	(hex): suid_func, suid_var, suid_msg, suid_bss and the program's text.
 *   tprof-wl-suid-target [N [K [MS [hold]]]]   (default 1000, 16, 0)
 *	calls suid_func N times, writes suid_var N times, calls getppid N
 *	times, touches K pages of suid_bss (one fault each, K <= 64), burns MS
 *	ms of CPU time, prints suid_msg and exits 0; with "hold", after
 *	printing it waits for the end of its standard input before exiting
 *	(so a test can look at it while it is still alive).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "wl.h"

#define SUID_BSS_PAGES 64

/* 4-byte aligned: on arm64 an instruction could start there. */
const char suid_msg[] __attribute__((aligned(64))) =
	"tprof-wl-suid-target: this message came out intact\n";
volatile long suid_var;
char suid_bss[SUID_BSS_PAGES * 4096] __attribute__((aligned(4096)));
extern char __executable_start[], etext[];

__attribute__((noinline)) void suid_func(void)
{
	asm volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--addresses") == 0) {
		printf("func %lx var %lx msg %lx bss %lx bss_pages %d text %lx %lx\n",
		       (unsigned long)(uintptr_t)suid_func, (unsigned long)(uintptr_t)&suid_var,
		       (unsigned long)(uintptr_t)suid_msg, (unsigned long)(uintptr_t)suid_bss,
		       SUID_BSS_PAGES, (unsigned long)(uintptr_t)__executable_start,
		       (unsigned long)(uintptr_t)etext);
		return 0;
	}
	long n = argc > 1 ? atol(argv[1]) : 1000, k = argc > 2 ? atol(argv[2]) : 16;
	long ms = argc > 3 ? atol(argv[3]) : 0;

	if (k < 0 || k > SUID_BSS_PAGES) {
		fprintf(stderr, "K: 0 to %d pages\n", SUID_BSS_PAGES);
		return 2;
	}
	madvise(suid_bss, sizeof(suid_bss), MADV_NOHUGEPAGE);
	for (long i = 0; i < n; i++)
		suid_func();
	for (long i = 0; i < n; i++)
		suid_var = i;
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	for (long i = 0; i < k; i++)
		*(volatile char *)(suid_bss + i * 4096) = 1;
	if (ms > 0) {
		uint64_t end = wl_thread_ns() + (uint64_t)ms * 1000000u;
		volatile unsigned long x = 0;

		while (wl_thread_ns() < end)
			for (int i = 0; i < 10000; i++)
				x = x + i;
	}
	fputs(suid_msg, stdout);
	fflush(stdout);
	if (argc > 4 && strcmp(argv[4], "hold") == 0) {
		char c;

		while (read(0, &c, 1) > 0)
			;
	}
	return 0;
}
