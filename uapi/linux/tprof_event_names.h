/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * The one table of event and metric names, for the module parameter
 * metrics=, tprofctl metrics/threads, sampling's --event and PMU program
 * counters (the module and libtprofctl both expand it). X(name, key, type,
 * config, uses): key is the JSON key of a per-thread metric, type a
 * TPROF_METRIC_* value, uses the TPROF_NAME_* contexts that accept it.
 * Raw events are spelled as perf spells them, rHEX ("r1c2"); "raw:CODE"
 * is still accepted where it was. Part of the UAPI so that userspace
 * shares it without reaching into kmod/; it needs <linux/tprof.h> and
 * <linux/perf_event.h> for the values.
 */
#ifndef _UAPI_LINUX_TPROF_EVENT_NAMES_H
#define _UAPI_LINUX_TPROF_EVENT_NAMES_H

#define TPROF_NAME_METRIC 1u /* a per-thread metric */
#define TPROF_NAME_SAMPLE 2u /* an event sampling can overflow on */
#define TPROF_NAME_PMU 4u    /* a PMU program counter */
#define TPROF_NAME_ALL (TPROF_NAME_METRIC | TPROF_NAME_SAMPLE | TPROF_NAME_PMU)

#define TPROF_EVENT_NAMES(X)                                                        \
	X("time", "time_ns", TPROF_METRIC_TIME, 0, TPROF_NAME_METRIC)               \
	X("dispatches", "dispatches", TPROF_METRIC_DISPATCHES, 0, TPROF_NAME_METRIC) \
	X("cpu-clock", "cpu_clock_ns", TPROF_METRIC_SOFTWARE,                       \
	  PERF_COUNT_SW_CPU_CLOCK, TPROF_NAME_METRIC | TPROF_NAME_SAMPLE)           \
	X("task-clock", "task_clock_ns", TPROF_METRIC_SOFTWARE,                     \
	  PERF_COUNT_SW_TASK_CLOCK, TPROF_NAME_SAMPLE)                              \
	X("page-faults", "page_faults", TPROF_METRIC_SOFTWARE,                      \
	  PERF_COUNT_SW_PAGE_FAULTS, TPROF_NAME_ALL)                                \
	X("minor-faults", "minor_faults", TPROF_METRIC_SOFTWARE,                    \
	  PERF_COUNT_SW_PAGE_FAULTS_MIN, TPROF_NAME_METRIC | TPROF_NAME_PMU)        \
	X("major-faults", "major_faults", TPROF_METRIC_SOFTWARE,                    \
	  PERF_COUNT_SW_PAGE_FAULTS_MAJ, TPROF_NAME_METRIC | TPROF_NAME_PMU)        \
	X("context-switches", "context_switches", TPROF_METRIC_SOFTWARE,            \
	  PERF_COUNT_SW_CONTEXT_SWITCHES, TPROF_NAME_ALL)                           \
	X("cpu-migrations", "cpu_migrations", TPROF_METRIC_SOFTWARE,                \
	  PERF_COUNT_SW_CPU_MIGRATIONS, TPROF_NAME_ALL)                             \
	X("alignment-faults", "alignment_faults", TPROF_METRIC_SOFTWARE,            \
	  PERF_COUNT_SW_ALIGNMENT_FAULTS, TPROF_NAME_METRIC | TPROF_NAME_PMU)       \
	X("emulation-faults", "emulation_faults", TPROF_METRIC_SOFTWARE,            \
	  PERF_COUNT_SW_EMULATION_FAULTS, TPROF_NAME_METRIC | TPROF_NAME_PMU)       \
	X("cycles", "cycles", TPROF_METRIC_HARDWARE, PERF_COUNT_HW_CPU_CYCLES,      \
	  TPROF_NAME_ALL)                                                           \
	X("instructions", "instructions", TPROF_METRIC_HARDWARE,                    \
	  PERF_COUNT_HW_INSTRUCTIONS, TPROF_NAME_ALL)                               \
	X("cache-references", "cache_references", TPROF_METRIC_HARDWARE,            \
	  PERF_COUNT_HW_CACHE_REFERENCES, TPROF_NAME_METRIC | TPROF_NAME_PMU)       \
	X("cache-misses", "cache_misses", TPROF_METRIC_HARDWARE,                    \
	  PERF_COUNT_HW_CACHE_MISSES, TPROF_NAME_ALL)                               \
	X("branches", "branches", TPROF_METRIC_HARDWARE,                            \
	  PERF_COUNT_HW_BRANCH_INSTRUCTIONS, TPROF_NAME_METRIC | TPROF_NAME_PMU)    \
	X("branch-misses", "branch_misses", TPROF_METRIC_HARDWARE,                  \
	  PERF_COUNT_HW_BRANCH_MISSES, TPROF_NAME_ALL)

/* Short names PMU programs also accept: X(alias, name). */
#define TPROF_EVENT_ALIASES(X)            \
	X("faults", "page-faults")        \
	X("cs", "context-switches")       \
	X("migrations", "cpu-migrations")

#endif /* _UAPI_LINUX_TPROF_EVENT_NAMES_H */
