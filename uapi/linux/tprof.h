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
 */
#ifndef _UAPI_LINUX_TPROF_H
#define _UAPI_LINUX_TPROF_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define TPROF_ABI_MAJOR 1
#define TPROF_ABI_MINOR 0

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

/* Size checks: a change here is an ABI change. */
#ifdef __cplusplus
#define TPROF_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define TPROF_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
TPROF_STATIC_ASSERT(sizeof(struct tprof_counters) == 64, "tprof_counters size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_cpu_stats) == 72, "tprof_cpu_stats size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_info) == 176, "tprof_info size");

#endif /* _UAPI_LINUX_TPROF_H */
