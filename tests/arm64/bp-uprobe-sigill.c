// SPDX-License-Identifier: GPL-2.0
/*
 * tprof-bp-uprobe-sigill: a kernel bug that tprof.ko avoids, reproduced
 * without it. A counting perf execution breakpoint (perf's default overflow
 * handler) and a tracefs uprobe on the same user instruction, one the uprobe
 * steps out of line: arm64's breakpoint_handler() starts a single-step
 * (bps_disabled), the uprobe then moves the pc to its out-of-line slot and
 * relies on the step exception, which reinstall_suspended_bps() swallows,
 * so the task runs past the slot and dies of SIGILL (Debian's arm64 6.1 and
 * 6.12). Runs the function 10 times in a child with the breakpoint alone,
 * the uprobe alone, then both, and prints how each child ended. Exit
 * status: 1 when a child died (the bug), 0 when none did, 2 on a setup
 * error. As root (tracefs); e.g.
 *
 *   tools/tprof-vm --arch arm64 --kernel 6.12 -- tprof-bp-uprobe-sigill
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__aarch64__)
// Its first instruction is one a uprobe steps out of line (a branch or
// `ret` would be simulated, with no single-step).
void f(void);
__asm__(".text\n.globl f\n.type f,%function\n.balign 64\nf:\n\tadd x9, x9, #1\n\tret\n.size f, .-f\n");
#else
__attribute__((noinline, aligned(64))) void f(void) { __asm__ volatile("" ::: "memory"); }
#endif

static int write_file(const char *path, const char *text, int append) {
  int fd = open(path, O_WRONLY | (append ? O_APPEND : O_TRUNC));
  if (fd < 0) { perror(path); return -1; }
  ssize_t n = write(fd, text, strlen(text));
  if (n < 0) perror(path);
  close(fd);
  return n < 0 ? -1 : 0;
}

static int file_offset(uintptr_t addr, char *path, size_t len, unsigned long *off) {
  FILE *m = fopen("/proc/self/maps", "r");
  char line[512];
  while (fgets(line, sizeof line, m)) {
    unsigned long s, e, pg; char perm[8]; char p[256] = "";
    if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %255s", &s, &e, perm, &pg, p) >= 4 && addr >= s && addr < e && p[0] == '/') {
      snprintf(path, len, "%s", p); *off = addr - s + pg; fclose(m); return 0;
    }
  }
  fclose(m);
  return -1;
}

static int run(int use_bp, int use_uprobe) {
  char path[256], def[512];
  unsigned long off;
  if (file_offset((uintptr_t)&f, path, sizeof path, &off)) { fprintf(stderr, "no file mapping\n"); return 2; }
  if (use_uprobe) {
    snprintf(def, sizeof def, "p:repro/f %s:0x%lx", path, off);
    if (write_file("/sys/kernel/tracing/uprobe_events", def, 1)) return 2;
    if (write_file("/sys/kernel/tracing/events/repro/f/enable", "1", 0)) return 2;
  }
  pid_t pid = fork();
  if (pid == 0) {
    int fd = -1;
    if (use_bp) {
      struct perf_event_attr a;
      memset(&a, 0, sizeof a);
      a.size = sizeof a; a.type = PERF_TYPE_BREAKPOINT; a.bp_type = HW_BREAKPOINT_X;
      a.bp_addr = (uintptr_t)&f; a.bp_len = sizeof(long); a.exclude_kernel = 1; a.exclude_hv = 1;
      fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
      if (fd < 0) { perror("perf_event_open"); _exit(2); }
    }
    for (int i = 0; i < 10; i++) f();
    uint64_t c = 0;
    if (fd >= 0 && read(fd, &c, sizeof c) != sizeof c) c = ~0ULL;
    printf("  child: 10 calls, breakpoint counted %llu\n", (unsigned long long)c);
    _exit(0);
  }
  int st;
  waitpid(pid, &st, 0);
  if (use_uprobe) {
    write_file("/sys/kernel/tracing/events/repro/f/enable", "0", 0);
    write_file("/sys/kernel/tracing/uprobe_events", "-:repro/f", 1);
  }
  printf("bp=%d uprobe=%d: child %s %d\n", use_bp, use_uprobe, WIFSIGNALED(st) ? "killed by signal" : "exited",
         WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  return WIFSIGNALED(st) ? 1 : 0;
}

int main(void) {
  mkdir("/sys/kernel/tracing", 0755);
  mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL);
  int r = 0;
  r |= run(1, 0);
  r |= run(0, 1);
  r |= run(1, 1);
  printf(r ? "REPRODUCED: a process died\n" : "no process died\n");
  return r;
}
