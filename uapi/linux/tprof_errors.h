/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * tprof: what each ioctl's errors mean, one row per (ioctl, errno).
 *
 * tprof.h's "Ioctls" text explains each error in context; this table is
 * the same set as data. The library's messages and the fuzzer's allowed
 * errnos come from it, and a unit test (tests/unit/ioctl_error_table_test.cc)
 * checks that every errno the text names for an ioctl has its row here,
 * and the reverse. The rows are per ioctl because one errno means
 * different things to different ioctls (ENODATA: metrics are off, or no
 * sampling session).
 *
 * Every ioctl may also fail with TPROF_COMMON_ERRORS: a bad argument
 * pointer (EFAULT), a malformed argument or another size (EINVAL), an
 * ioctl this module does not know (ENOTTY).
 *
 * TPROF_IOCTL_ERRORS(X) expands X(name, errno, meaning) per row, name
 * being the ioctl without its TPROF_IOC_ prefix.
 */
#ifndef _UAPI_LINUX_TPROF_ERRORS_H
#define _UAPI_LINUX_TPROF_ERRORS_H

#define TPROF_COMMON_ERRORS(X)                                                                   \
	X(EFAULT, "an argument pointer cannot be read or written")                               \
	X(EINVAL, "invalid argument (nonzero reserved field, unknown flag, bad size)")           \
	X(ENOTTY, "not a tprof device, or a module too old for this library")

#define TPROF_IOCTL_ERRORS(X)                                                                    \
	X(METRICS_ENABLE, EPERM, "permission denied: needs CAP_PERFMON or CAP_SYS_ADMIN")        \
	X(METRICS_ENABLE, EINVAL, "no metric, too many, an unknown type or a duplicate")         \
	X(METRICS_ENABLE, EOPNOTSUPP,                                                            \
	  "a hardware metric is not available on this machine (no usable PMU, e.g. in a VM)")    \
	X(METRICS_ENABLE, ENOMEM, "the thread table (module parameter max_threads) cannot be allocated") \
	X(METRICS_DISABLE, EPERM, "permission denied: needs CAP_PERFMON or CAP_SYS_ADMIN")       \
	X(THREAD_READ, EACCES,                                                                   \
	  "permission denied: another user's process needs CAP_PERFMON or CAP_SYS_ADMIN")        \
	X(THREAD_READ, ESRCH, "no such thread, or it is not tracked")                            \
	X(THREAD_READ, EINTR, "a signal arrived while the thread was exec'ing")                  \
	X(THREAD_READ, ENODATA, "per-thread metrics are off (ENODATA)")                          \
	X(THREAD_READ, EINVAL, "unknown flags")                                                  \
	X(READ_SELF, ENODATA, "per-thread metrics are off (ENODATA)")                            \
	X(READ_SELF, ESRCH, "this thread is not tracked (table full: a larger max_threads=)")    \
	X(READ_SELF, EFAULT, "the values could not be written; they stay with the thread")       \
	X(DRAIN, EPERM, "permission denied: every process needs CAP_PERFMON or CAP_SYS_ADMIN")   \
	X(DRAIN, EACCES,                                                                         \
	  "permission denied: another user's process needs CAP_PERFMON or CAP_SYS_ADMIN")        \
	X(DRAIN, ESRCH, "no such process")                                                       \
	X(DRAIN, ENODATA, "per-thread metrics are off (ENODATA)")                                \
	X(DRAIN, ENOMEM, "no memory")                                                            \
	X(SAMPLING_START, EPERM,                                                                 \
	  "permission denied: system-wide sampling needs CAP_PERFMON or CAP_SYS_ADMIN, and the " \
	  "buffers must fit the locked-memory allowance")                                         \
	X(SAMPLING_START, EACCES,                                                                \
	  "permission denied: that process belongs to another user (needs CAP_PERFMON or "       \
	  "CAP_SYS_ADMIN), or kernel.perf_event_paranoid is above 2")                            \
	X(SAMPLING_START, ESRCH, "no such process")                                              \
	X(SAMPLING_START, EINTR, "a signal arrived while the process was exec'ing")              \
	X(SAMPLING_START, E2BIG, "the process has more than 4096 threads")                       \
	X(SAMPLING_START, EBUSY,                                                                 \
	  "a sampling session is already running; only the program that started it can stop it") \
	X(SAMPLING_START, EFAULT, "the CPU bitmap cannot be read")                               \
	X(SAMPLING_START, EINVAL,                                                                \
	  "invalid settings (frequency 1..100000 Hz, buffer a power of two from 4 KiB to 16 MiB, " \
	  "event period >= 1)")                                                                   \
	X(SAMPLING_START, EOPNOTSUPP,                                                            \
	  "that event needs a hardware PMU, which this machine does not offer (e.g. in a VM), or " \
	  "the module cannot hook this kernel's scheduler tick")                                  \
	X(SAMPLING_START, ENOMEM, "no memory for the buffers")                                   \
	X(SAMPLING_STOP, EPERM, "the sampling session belongs to another descriptor")            \
	X(SAMPLING_STOP, ENODATA, "no sampling session on this descriptor")                      \
	X(SAMPLING_RELEASE, EINVAL, "no such CPU or half, or that half is not full")             \
	X(SAMPLING_RELEASE, EPERM, "the sampling session belongs to another descriptor")         \
	X(SAMPLING_RELEASE, ENODATA, "no sampling session on this descriptor")                   \
	X(SAMPLING_FLUSH, EPERM, "the sampling session belongs to another descriptor")           \
	X(SAMPLING_FLUSH, ENODATA, "no sampling session on this descriptor")                     \
	X(SAMPLING_FLUSH, EINTR, "a signal arrived before the flush; nothing was flushed")       \
	X(SAMPLING_AGGREGATE_READ, EPERM, "the sampling session belongs to another descriptor")  \
	X(SAMPLING_AGGREGATE_READ, ENODATA, "no sampling session on this descriptor")            \
	X(SAMPLING_AGGREGATE_READ, EINVAL, "no such CPU, or a session that does not aggregate")  \
	X(SAMPLING_AGGREGATE_READ, ENOSPC, "less room than the session's aggregate_slots")       \
	X(SAMPLING_AGGREGATE_READ, EFAULT, "the entries cannot be written (the counts are kept)") \
	X(UNWIND_LOAD, EPERM, "the sampling session belongs to another descriptor")              \
	X(UNWIND_LOAD, ENODATA, "no sampling session on this descriptor")                        \
	X(UNWIND_LOAD, EINVAL,                                                                   \
	  "a bad table (rows not sorted, a rule out of range), or a session without unwind tables") \
	X(UNWIND_LOAD, EDQUOT, "the session's unwind tables are at their bound (unwind_table_kb)") \
	X(UNWIND_LOAD, EFAULT, "the table's rows cannot be read")                                \
	X(UNWIND_LOAD, ENOMEM, "no memory for the table")                                        \
	X(UNWIND_SPACE, EPERM, "the sampling session belongs to another descriptor")             \
	X(UNWIND_SPACE, ENODATA, "no sampling session on this descriptor")                       \
	X(UNWIND_SPACE, EINVAL,                                                                  \
	  "bad ranges (unsorted, overlapping, an unknown table), or a session without unwind tables") \
	X(UNWIND_SPACE, EDQUOT,                                                                  \
	  "the session holds its most address spaces or unwind memory (unwind_table_kb)")        \
	X(UNWIND_SPACE, EFAULT, "the ranges cannot be read")                                     \
	X(UNWIND_SPACE, ENOMEM, "no memory for the ranges")                                      \
	X(SAMPLING_STOP_ANY, EPERM, "permission denied: needs CAP_PERFMON or CAP_SYS_ADMIN")     \
	X(SAMPLING_STOP_ANY, ENODATA, "no sampling session is running")                          \
	X(WINDOW_ADD, EPERM,                                                                     \
	  "permission denied: only the sampling session's owner may use its windows, and a "     \
	  "kernel window needs CAP_PERFMON or CAP_SYS_ADMIN")                                     \
	X(WINDOW_ADD, ENODATA, "no sampling session runs on this descriptor")                    \
	X(WINDOW_ADD, EACCES,                                                                    \
	  "permission denied: that process belongs to another user (needs CAP_PERFMON or "       \
	  "CAP_SYS_ADMIN)")                                                                       \
	X(WINDOW_ADD, ESRCH, "no such process")                                                  \
	X(WINDOW_ADD, EINVAL,                                                                    \
	  "invalid window (length > 0, block a power of two, profil scale 0..0x10000, at most "  \
	  "4194304 counters)")                                                                    \
	X(WINDOW_ADD, ENOSPC, "the session has 16 windows already")                              \
	X(WINDOW_ADD, ENOMEM, "the session's windows would exceed 4194304 counters, or no memory") \
	X(WINDOW_READ, EPERM, "only the sampling session's owner may use its windows")           \
	X(WINDOW_READ, ENODATA, "no sampling session runs on this descriptor")                   \
	X(WINDOW_READ, EFAULT, "the counters could not be written; nothing was reset")           \
	X(WINDOW_READ, EINVAL, "no such window, or unknown flags")                               \
	X(WINDOW_READ, ENOMEM, "no memory")                                                      \
	X(WINDOW_LIST, EPERM, "only the sampling session's owner may use its windows")           \
	X(WINDOW_LIST, ENODATA, "no sampling session runs on this descriptor")                   \
	X(PMU_CREATE, EPERM,                                                                     \
	  "permission denied: every-CPU scope needs CAP_PERFMON or CAP_SYS_ADMIN, a kernel "     \
	  "breakpoint or watchpoint CAP_SYS_ADMIN")                                               \
	X(PMU_CREATE, EACCES,                                                                    \
	  "permission denied: another user's process, a kernel address, or "                    \
	  "kernel.perf_event_paranoid > 2")                                                       \
	X(PMU_CREATE, ESRCH, "no such thread or process")                                        \
	X(PMU_CREATE, EINTR, "a signal arrived while the target was exec'ing")                   \
	X(PMU_CREATE, EINVAL, "a malformed program")                                             \
	X(PMU_CREATE, ENOENT, "no such event (unknown software event or tracepoint id)")         \
	X(PMU_CREATE, EOPNOTSUPP, "no usable hardware PMU here, or an instruction a uprobe cannot step over") \
	X(PMU_CREATE, EBUSY,                                                                     \
	  "(arm64) another program of tprof's has a breakpoint of the other kind at that address") \
	X(PMU_CREATE, ENOSPC, "no free debug register for a breakpoint or watchpoint")           \
	X(PMU_CREATE, E2BIG, "more than 4096 perf events")                                       \
	X(PMU_CREATE, EDQUOT, "your user's PMU programs hold the module's pmu_user_events perf events") \
	X(PMU_CREATE, EMFILE, "no free file descriptor")                                         \
	X(PMU_CREATE, ENOMEM, "no memory")                                                       \
	X(PMU_READ_SUBRANGES, EINVAL, "the counter has no subranges, or nonzero reserved fields") \
	X(PMU_READ_SUBRANGES, EFAULT, "the values could not be written")

#endif /* _UAPI_LINUX_TPROF_ERRORS_H */
