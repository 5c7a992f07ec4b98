/*
 * tprof-wl-jit: a workload that runs code from an anonymous executable
 * mapping, the way a JIT does, for tprof's sampling tests and `make demo`.
 *
 *   tprof-wl-jit [--ms MS] [--cleanup]
 *
 * Maps an anonymous region (read-write, then mprotect to read-execute),
 * copies in a hand-assembled x86-64 or arm64 function jit_hot_loop(n) (count n down
 * to zero, ret), writes /tmp/perf-<pid>.map with the line
 * "<start> <size> jit_hot_loop" (perf's format: hex without 0x) and calls
 * the function repeatedly until MS ms (default 1000) of CPU time are spent.
 * So nearly all samples land in the anonymous mapping, between start and
 * start+size, and a profiler that reads the perf map names them
 * jit_hot_loop. The map file is left in place (the profiler copies it when
 * it stops) unless --cleanup is given.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "wl.h"

/* uint64_t jit_hot_loop(uint64_t n), n >= 1; returns 0. */
#if defined(__x86_64__)
static const unsigned char hot_loop_code[] = {
	0x48, 0x89, 0xf8, /*       mov  %rdi,%rax */
	0x48, 0xff, 0xc8, /* 1:    dec  %rax      */
	0x75, 0xfb,       /*       jnz  1b        */
	0xc3,             /*       ret            */
};
#elif defined(__aarch64__)
static const unsigned char hot_loop_code[] = {
	0x00, 0x04, 0x00, 0xf1, /* 1:  subs x0, x0, #1 */
	0xe1, 0xff, 0xff, 0x54, /*     b.ne 1b         */
	0xc0, 0x03, 0x5f, 0xd6, /*     ret             */
};
#else
#error "tprof-wl-jit hand-assembles x86-64 or arm64 code"
#endif

static void usage(void)
{
	fprintf(stderr, "usage: tprof-wl-jit [--ms MS] [--cleanup]\n"
			"  burns MS ms of CPU (default 1000) in jit_hot_loop, code in an\n"
			"  anonymous executable mapping named by /tmp/perf-<pid>.map\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long ms = 1000, calls = 0, n = 10000;
	uint64_t (*hot_loop)(uint64_t);
	uint64_t start, now, budget;
	char map_path[64];
	int cleanup = 0;
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *code;
	FILE *map;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--ms") == 0 && i + 1 < argc) {
			if (wl_parse_ulong(argv[++i], 1, 3600000, &ms) != 0)
				usage();
		} else if (strcmp(argv[i], "--cleanup") == 0) {
			cleanup = 1;
		} else {
			usage();
		}
	}

	code = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED) {
		perror("tprof-wl-jit: mmap");
		return 1;
	}
	memcpy(code, hot_loop_code, sizeof(hot_loop_code));
	if (mprotect(code, (size_t)page, PROT_READ | PROT_EXEC) != 0) {
		perror("tprof-wl-jit: mprotect");
		return 1;
	}
	__builtin___clear_cache((char *)code, (char *)code + sizeof(hot_loop_code));
	hot_loop = (uint64_t (*)(uint64_t))(void *)code;

	snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)getpid());
	map = fopen(map_path, "w");
	if (map == NULL || fprintf(map, "%lx %zx jit_hot_loop\n", (unsigned long)code,
				   sizeof(hot_loop_code)) < 0 || fclose(map) != 0) {
		fprintf(stderr, "tprof-wl-jit: write %s: %s\n", map_path, strerror(errno));
		return 1;
	}

	/* Calls of about 2 ms each, so the clock reads cost next to nothing. */
	budget = (uint64_t)ms * 1000000u;
	start = now = wl_thread_ns();
	while (now - start < budget) {
		uint64_t t;

		hot_loop(n);
		calls++;
		t = wl_thread_ns();
		n = wl_next_chunk(n, t - now);
		now = t;
	}

	printf("tprof-wl-jit: pid %d ran jit_hot_loop at %#lx size %#zx: %lu calls, %llu ns; map %s%s\n",
	       (int)getpid(), (unsigned long)code, sizeof(hot_loop_code), calls,
	       (unsigned long long)(now - start), map_path, cleanup ? " (removed)" : "");
	if (cleanup && unlink(map_path) != 0) {
		fprintf(stderr, "tprof-wl-jit: unlink %s: %s\n", map_path, strerror(errno));
		return 1;
	}
	return 0;
}
