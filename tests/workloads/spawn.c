/*
 * tprof-wl-spawn: a fork/exec workload of many short-lived processes, for
 * tprof's sampling tests and `make demo`.
 *
 *   tprof-wl-spawn [--children N] [--ms-each MS] [--parallel P]
 *
 * Forks N children (default 20), P at a time (default 1, at most 2), each of
 * which execs tprof-wl-child from the directory of this program
 * (/proc/self/exe) with --ms MS (default 30): every child burns MS ms of CPU
 * in wl_child_work and exits. So a profile should show N processes named
 * tprof-wl-child, each with about MS ms of user time in wl_child_work, and
 * this parent with almost none. Exits 0 if every child exited 0.
 */
#include <libgen.h>
#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wl.h"

static void usage(void)
{
	fprintf(stderr, "usage: tprof-wl-spawn [--children N] [--ms-each MS] [--parallel 1|2]\n"
			"  forks N children (default 20), each execs tprof-wl-child to burn\n"
			"  MS ms of CPU (default 30) in wl_child_work\n");
	exit(2);
}

/* Waits for one child; returns 0 if it exited 0, 1 if not. */
static int reap(void)
{
	int status;
	pid_t pid = wait(&status);

	if (pid < 0) {
		perror("tprof-wl-spawn: wait");
		exit(1);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		fprintf(stderr, "tprof-wl-spawn: child %d exited %d\n", (int)pid, WEXITSTATUS(status));
	else
		fprintf(stderr, "tprof-wl-spawn: child %d killed by signal %d\n", (int)pid,
			WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	return 1;
}

int main(int argc, char **argv)
{
	unsigned long children = 20, ms_each = 30, parallel = 1, running = 0, failed = 0;
	char exe[PATH_MAX], child[PATH_MAX + 32], ms_arg[32];
	pid_t first = 0, last = 0;
	ssize_t n;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--children") == 0 && i + 1 < argc) {
			if (wl_parse_ulong(argv[++i], 0, 100000, &children) != 0)
				usage();
		} else if (strcmp(argv[i], "--ms-each") == 0 && i + 1 < argc) {
			if (wl_parse_ulong(argv[++i], 0, 3600000, &ms_each) != 0)
				usage();
		} else if (strcmp(argv[i], "--parallel") == 0 && i + 1 < argc) {
			if (wl_parse_ulong(argv[++i], 1, 2, &parallel) != 0)
				usage();
		} else {
			usage();
		}
	}

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0) {
		perror("tprof-wl-spawn: readlink /proc/self/exe");
		return 1;
	}
	exe[n] = '\0';
	snprintf(child, sizeof(child), "%s/tprof-wl-child", dirname(exe));
	if (access(child, X_OK) != 0) {
		fprintf(stderr, "tprof-wl-spawn: %s: %s\n", child, strerror(errno));
		return 1;
	}
	snprintf(ms_arg, sizeof(ms_arg), "%lu", ms_each);

	fflush(stdout);
	for (unsigned long k = 0; k < children; k++) {
		pid_t pid;

		if (running == parallel) {
			failed += reap();
			running--;
		}
		pid = fork();
		if (pid < 0) {
			perror("tprof-wl-spawn: fork");
			return 1;
		}
		if (pid == 0) {
			char *args[] = { "tprof-wl-child", "--ms", ms_arg, NULL };

			execv(child, args);
			fprintf(stderr, "tprof-wl-spawn: exec %s: %s\n", child, strerror(errno));
			_exit(127);
		}
		if (k == 0)
			first = pid;
		last = pid;
		running++;
	}
	while (running > 0) {
		failed += reap();
		running--;
	}

	printf("tprof-wl-spawn: %lu children (pids %d..%d), %lu at a time, ran %s --ms %lu; %lu failed\n",
	       children, (int)first, (int)last, parallel, child, ms_each, failed);
	return failed == 0 ? 0 : 1;
}
