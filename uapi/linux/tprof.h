/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * tprof: the userspace ABI of /dev/tprof.
 *
 * This header is shared, unchanged, by the kernel module (kmod/), the C++
 * library (libtprofctl/) and the tests. It is the whole ABI.
 *
 * Versioning
 *   TPROF_ABI_MAJOR changes only when an existing ioctl or struct changes
 *   incompatibly; the library refuses a module with another major.
 *   TPROF_ABI_MINOR grows when something is added (a new ioctl, a feature bit,
 *   a field carved out of a reserved area). Reserved fields are zero on output
 *   and must be zero on input.
 *
 * Rules every ioctl follows
 *   - The argument is a pointer to one fixed-size struct; its size is encoded
 *     in the ioctl number and checked: an ioctl with a known type and number
 *     but another size fails with EINVAL.
 *   - Unknown ioctl numbers fail with ENOTTY.
 *   - Unreadable or unwritable argument pointers (including pointers embedded
 *     in a struct) fail with EFAULT.
 *   - Nonzero reserved fields, unknown flags or inconsistent sizes fail with
 *     EINVAL.
 *   - Only __u32/__u64 fields, natural alignment, explicit padding: the layout
 *     is the same for 32- and 64-bit callers. Sizes are checked at compile
 *     time in the module and in the library (see the static asserts at the
 *     bottom of this file).
 *
 * Ioctls
 *   TPROF_IOC_GET_INFO (struct tprof_info, read/write)
 *     Anyone who can open the device may call it. Returns the ABI version,
 *     the module version, the number of CPUs, feature bits, the current
 *     state and event counters since the module was loaded, in total and
 *     (if the caller passes an array) per CPU.
 *
 *   Per-thread metrics (ABI 1.1; design: US8117599). Per CPU the module
 *   keeps PCum(M) (the CPU's cumulative value of metric M: its clock, its
 *   dispatch count, a pinned per-CPU perf counter) and PLastCum(M); on every
 *   context switch Delta = PCum - PLastCum, PLastCum = PCum and TCum(M) of
 *   the outgoing thread += Delta. Threads whose TCum became nonzero are on a
 *   list, so a drain costs time in proportion to the threads that ran.
 *
 *   TPROF_IOC_METRICS_ENABLE (struct tprof_metrics_config, write)
 *     CAP_PERFMON or CAP_SYS_ADMIN, else EPERM. Starts (or restarts, with all
 *     accumulators zeroed) accounting of up to TPROF_MAX_METRICS metrics
 *     for every thread of the system, including threads that already exist.
 *     EINVAL: no metric, too many, unknown type, duplicate, nonzero reserved.
 *     EOPNOTSUPP: a hardware metric on a machine without a usable PMU.
 *     ENOMEM: the thread table (module parameter max_threads) cannot be
 *     allocated.
 *   TPROF_IOC_METRICS_DISABLE (no argument)
 *     CAP_PERFMON or CAP_SYS_ADMIN. Stops accounting and frees the table.
 *   TPROF_IOC_METRICS_STATUS (struct tprof_metrics_status, read)
 *     Anyone. Whether accounting is on, its metrics, the table's size and use,
 *     and the number of threads it could not track (table full).
 *   TPROF_IOC_THREAD_READ (struct tprof_thread_read, read/write)
 *     Read-and-zero of one thread's TCum. tid 0 is the calling thread, and
 *     then the value includes the current time slice. Another process's
 *     thread needs CAP_PERFMON/CAP_SYS_ADMIN or the same real and effective
 *     uid as its owner with the target dumpable (ptrace-read rules without
 *     LSM hooks): else EACCES. ESRCH: no such thread, or not tracked.
 *     ENODATA: accounting is off.
 *   TPROF_IOC_DRAIN (struct tprof_drain, read/write)
 *     Copies out every listed thread of the selected process(es) with its
 *     TCum and zeroes what was copied (a delta that arrives meanwhile stays
 *     for the next drain: nothing is lost, also when the buffer is too small
 *     or faults). A thread that exited is reported once more with
 *     TPROF_THREAD_EXITED and then forgotten. pid 0 is the caller's process;
 *     TPROF_PID_ALL needs CAP_PERFMON/CAP_SYS_ADMIN (else EPERM); another pid
 *     needs the TPROF_IOC_THREAD_READ rights over it (else EACCES).
 */
#ifndef _UAPI_LINUX_TPROF_H
#define _UAPI_LINUX_TPROF_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define TPROF_ABI_MAJOR 1
#define TPROF_ABI_MINOR 1

/* The device node the module creates. */
#define TPROF_DEVICE_PATH "/dev/tprof"

/* The one ioctl magic of tprof (free in Documentation/.../ioctl-number.rst). */
#define TPROF_IOC_MAGIC 0xD7

/* Module version, packed as (major << 16) | (minor << 8) | patch. */
#define TPROF_VERSION_MAJOR(v) (((v) >> 16) & 0xffff)
#define TPROF_VERSION_MINOR(v) (((v) >> 8) & 0xff)
#define TPROF_VERSION_PATCH(v) ((v) & 0xff)

/* tprof_info.features: what this module can do. */
#define TPROF_FEAT_SCHED_COUNTERS (1ULL << 0) /* switch/fork/exec/exit counters */
#define TPROF_FEAT_THREAD_METRICS (1ULL << 1) /* per-thread metrics, drain */

/* tprof_info.state */
enum tprof_state {
	TPROF_STATE_IDLE = 0, /* loaded, hooks counting, nothing recording */
};

/*
 * Event counters, from the scheduler tracepoints, since the module was
 * loaded (or per CPU: on that CPU since load).
 *   context_switches  sched_switch calls (prev != next)
 *   forks             sched_process_fork: new processes and new threads
 *   execs             sched_process_exec: successful execve()
 *   exits             sched_process_exit: threads that exited
 *   frees             sched_process_free: task structs released
 */
struct tprof_counters {
	__u64 context_switches;
	__u64 forks;
	__u64 execs;
	__u64 exits;
	__u64 frees;
	__u64 resv[3];
};

/* One CPU's counters. online is 1 if the CPU was online when read. */
struct tprof_cpu_stats {
	__u32 cpu;
	__u32 online;
	struct tprof_counters counters;
};

/*
 * TPROF_IOC_GET_INFO argument.
 *
 * In:  cpu_stats        user pointer to an array of struct tprof_cpu_stats,
 *                       or 0 for none
 *      cpu_stats_count  number of entries at cpu_stats (0 if none)
 *      __pad, resv      zero; the output fields are ignored
 * Out: everything below; cpu_stats_count is set to the number of entries
 *      written, which is min(cpu_stats_count in, nr_cpu_ids). Callers size
 *      the array with nr_cpu_ids from a first call with cpu_stats_count 0.
 */
struct tprof_info {
	__u32 abi_major;        /* out: TPROF_ABI_MAJOR of the module */
	__u32 abi_minor;        /* out: TPROF_ABI_MINOR of the module */
	__u32 module_version;   /* out: see TPROF_VERSION_*() */
	__u32 state;            /* out: enum tprof_state */
	__u32 nr_cpu_ids;       /* out: highest possible CPU id + 1 */
	__u32 nr_online_cpus;   /* out: CPUs online now */
	__u64 features;         /* out: TPROF_FEAT_* */
	struct tprof_counters total; /* out: sum over all possible CPUs */
	__u64 cpu_stats;        /* in: pointer to struct tprof_cpu_stats[] */
	__u32 cpu_stats_count;  /* in: array entries; out: entries written */
	__u32 __pad;
	__u64 resv[8];
};

#define TPROF_IOC_GET_INFO _IOWR(TPROF_IOC_MAGIC, 0x00, struct tprof_info)

/* ---- Per-thread metrics (ABI 1.1) ---------------------------------------- */

#define TPROF_MAX_METRICS 8

enum tprof_metric_type {
	TPROF_METRIC_NONE = 0,
	TPROF_METRIC_TIME = 1,       /* on-CPU time in ns (always available) */
	TPROF_METRIC_DISPATCHES = 2, /* times the thread was switched out */
	TPROF_METRIC_SOFTWARE = 3,   /* perf software event, config PERF_COUNT_SW_* */
	TPROF_METRIC_HARDWARE = 4,   /* perf hardware event, config PERF_COUNT_HW_* */
	TPROF_METRIC_RAW = 5,        /* raw PMU event code in config */
};

struct tprof_metric {
	__u32 type;   /* enum tprof_metric_type */
	__u32 __pad;
	__u64 config; /* event for SOFTWARE/HARDWARE/RAW, else 0 */
};

struct tprof_metrics_config {
	__u32 nr_metrics; /* 1..TPROF_MAX_METRICS */
	__u32 flags;      /* 0 */
	struct tprof_metric metrics[TPROF_MAX_METRICS];
	__u64 resv[4];
};

struct tprof_metrics_status {
	__u32 enabled;            /* 1 while accounting is on */
	__u32 nr_metrics;
	struct tprof_metric metrics[TPROF_MAX_METRICS];
	__u32 table_capacity;     /* threads the table can hold (max_threads) */
	__u32 table_used;         /* threads tracked now, exited-undrained included */
	__u64 untracked_threads;  /* threads not tracked: table full, since enable */
	__u32 listed;             /* threads on the nonzero list now */
	__u32 __pad;
	__u64 resv[4];
};

/* tprof_thread_metrics.flags */
#define TPROF_THREAD_EXITED (1U << 0) /* final report of a thread that exited */

/* One thread's metric values, in the order of the configured metrics. */
struct tprof_thread_metrics {
	__u32 pid;        /* thread group id */
	__u32 tid;
	__u64 identity;   /* unique per thread; differs when a tid is reused */
	__u32 flags;      /* TPROF_THREAD_* */
	__u32 nr_metrics;
	__u64 comm[2];    /* the thread's name: 16 bytes, NUL-padded */
	__u64 values[TPROF_MAX_METRICS];
};

struct tprof_thread_read {
	__u32 tid;     /* in: thread id (global pid namespace), 0 = caller */
	__u32 flags;   /* in: 0 */
	struct tprof_thread_metrics thread; /* out */
	__u64 resv[2];
};

#define TPROF_PID_ALL 0xffffffffU

struct tprof_drain {
	__u64 records;   /* in: pointer to struct tprof_thread_metrics[capacity] */
	__u32 capacity;  /* in: entries at records */
	__u32 pid;       /* in: 0 = caller's process, TPROF_PID_ALL, or a pid */
	__u32 count;     /* out: entries written */
	__u32 remaining; /* out: listed threads left for a next call */
	__u64 untracked_threads; /* out: as in tprof_metrics_status */
	__u64 resv[4];
};

#define TPROF_IOC_METRICS_ENABLE _IOW(TPROF_IOC_MAGIC, 0x10, struct tprof_metrics_config)
#define TPROF_IOC_METRICS_DISABLE _IO(TPROF_IOC_MAGIC, 0x11)
#define TPROF_IOC_METRICS_STATUS _IOR(TPROF_IOC_MAGIC, 0x12, struct tprof_metrics_status)
#define TPROF_IOC_THREAD_READ _IOWR(TPROF_IOC_MAGIC, 0x13, struct tprof_thread_read)
#define TPROF_IOC_DRAIN _IOWR(TPROF_IOC_MAGIC, 0x14, struct tprof_drain)

/* Size checks: a change here is an ABI change. */
#ifdef __cplusplus
#define TPROF_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define TPROF_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
TPROF_STATIC_ASSERT(sizeof(struct tprof_counters) == 64, "tprof_counters size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_cpu_stats) == 72, "tprof_cpu_stats size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_info) == 176, "tprof_info size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_metric) == 16, "tprof_metric size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_metrics_config) == 168, "tprof_metrics_config size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_metrics_status) == 192, "tprof_metrics_status size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_thread_metrics) == 104, "tprof_thread_metrics size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_thread_read) == 128, "tprof_thread_read size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_drain) == 64, "tprof_drain size");

#endif /* _UAPI_LINUX_TPROF_H */
