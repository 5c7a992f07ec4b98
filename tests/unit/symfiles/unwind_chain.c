// SPDX-License-Identifier: GPL-2.0
/*
 * A call chain main -> uw_a -> uw_b -> uw_c -> uw_d built without frame
 * pointers (-O2 -fomit-frame-pointer): uw_b keeps a stack frame and works
 * after its call, so it is a frameless non-leaf, the case frame-pointer
 * walks lose. uw_d captures its registers, the stack above them and each
 * level's return address (__builtin_return_address(0), always right), and
 * writes them to argv[1] as struct chain_capture (unwind_table_test.cc):
 * the known answer a table-driven walk must reproduce. /proc/self/maps
 * follows, for the mappings a recording would report.
 *
 * With --signal, uw_c raises SIGUSR1 instead and the handler calls uw_d:
 * the walk must go through libc's signal trampoline to the interrupted pc
 * (saved in the handler's ucontext) and on to uw_c's callers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <ucontext.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CHAIN_STACK_BYTES 16384

struct chain_capture {
	uint64_t pc, sp, fp, lr;	/* uw_d's, at the capture */
	uint64_t bias;			/* the program's load bias */
	uint64_t ra[4];			/* uw_d's return address (into uw_c) first */
	uint64_t stack_len;		/* bytes of stack from sp */
	uint64_t libc_base;		/* libc's load bias (--signal) */
	uint64_t interrupted_pc;	/* where SIGUSR1 interrupted (--signal) */
	char libc_path[256];
	uint8_t stack[CHAIN_STACK_BYTES];
};

static struct chain_capture cap;
volatile uint64_t sink;

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uint64_t *)data = info->dlpi_addr;
	return 1;
}

/* The end of the mapping that holds addr, from /proc/self/maps. */
static uint64_t mapping_end(uint64_t addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi;
	char line[512];
	uint64_t end = addr;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && addr >= lo && addr < hi)
			end = hi;
	if (f)
		fclose(f);
	return end;
}

__attribute__((noinline)) void uw_d(void)
{
	uint64_t pc, sp, fp, lr = 0;

#if defined(__x86_64__)
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(pc), "=r"(sp), "=r"(fp));
#elif defined(__aarch64__)
	__asm__ volatile("adr %0, .\n\tmov %1, sp\n\tmov %2, x29\n\tmov %3, x30"
			 : "=r"(pc), "=r"(sp), "=r"(fp), "=r"(lr));
#else
#error "x86-64 and arm64 only"
#endif
	cap.pc = pc;
	cap.sp = sp;
	cap.fp = fp;
	cap.lr = lr;
	cap.stack_len = mapping_end(sp) - sp;
	if (cap.stack_len > CHAIN_STACK_BYTES)
		cap.stack_len = CHAIN_STACK_BYTES;
	memcpy(cap.stack, (const void *)(uintptr_t)sp, cap.stack_len);
	cap.ra[0] = (uint64_t)(uintptr_t)__builtin_return_address(0);
}

static int use_signal;

static void on_signal(int sig, siginfo_t *info, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	(void)info;
#if defined(__x86_64__)
	cap.interrupted_pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
#else
	cap.interrupted_pc = (uint64_t)uc->uc_mcontext.pc;
#endif
	uw_d();
}

__attribute__((noinline)) void uw_c(int n)
{
	if (use_signal)
		raise(SIGUSR1);
	else
		uw_d();
	cap.ra[1] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	sink += (uint64_t)n;
}

__attribute__((noinline)) void uw_b(int n)
{
	volatile uint64_t local[8];
	int i;

	for (i = 0; i < 8; i++)
		local[i] = (uint64_t)(n + i);
	uw_c(n + 1);
	cap.ra[2] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	for (i = 0; i < 8; i++)
		sink += local[i];
}

__attribute__((noinline)) void uw_a(int n)
{
	uw_b(n * 2);
	cap.ra[3] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	sink += (uint64_t)n;
}

int main(int argc, char **argv)
{
	FILE *out;

	if (argc == 3 && strcmp(argv[2], "--signal") == 0) {
		struct sigaction sa;
		Dl_info dl;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_signal;
		sa.sa_flags = SA_SIGINFO;
		if (sigaction(SIGUSR1, &sa, NULL) || !dladdr((void *)&raise, &dl))
			return 1;
		cap.libc_base = (uint64_t)(uintptr_t)dl.dli_fbase;
		snprintf(cap.libc_path, sizeof(cap.libc_path), "%s", dl.dli_fname);
		use_signal = 1;
		argc = 2;
	}
	if (argc != 2)
		return 2;
	dl_iterate_phdr(first_object, &cap.bias);
	uw_a(argc);
	out = fopen(argv[1], "wb");
	if (!out || fwrite(&cap, sizeof(cap), 1, out) != 1)
		return 1;
	{
		FILE *maps = fopen("/proc/self/maps", "r");
		char buf[4096];
		size_t n;

		while (maps && (n = fread(buf, 1, sizeof(buf), maps)) > 0)
			fwrite(buf, 1, n, out);
		if (maps)
			fclose(maps);
	}
	return fclose(out) ? 1 : 0;
}
