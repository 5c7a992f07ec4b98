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
 *   - The errors each ioctl documents below are also a table, one row per
 *     (ioctl, errno), in <linux/tprof_errors.h>.
 *
 * Ioctls
 *   TPROF_IOC_GET_INFO (struct tprof_info, read/write)
 *     Anyone who can open the device may call it. Returns the ABI version,
 *     the module version, the number of CPUs, feature bits, the current
 *     state and event counters since the module was loaded, in total and
 *     (if the caller passes an array) per CPU.
 *
 *   Per-thread metrics (ABI 1.1; design: docs/design.md). Per CPU the module
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
 *     CAP_PERFMON or CAP_SYS_ADMIN, else EPERM. Stops accounting and frees
 *     the table.
 *   TPROF_IOC_METRICS_STATUS (struct tprof_metrics_status, read)
 *     Anyone. Whether accounting is on, its metrics, the table's size and use,
 *     the number of threads it could not track (table full) and of exited
 *     threads dropped undrained to make room (reclaimed_threads, ABI 1.5),
 *     and the switches whose event metrics went uncounted because that
 *     CPU's counter was not created yet (uncounted_switches, ABI 1.6).
 *   TPROF_IOC_THREAD_READ (struct tprof_thread_read, read/write)
 *     Read-and-zero of one thread's TCum. tid 0 is the calling thread, and
 *     then the value includes the current time slice. Another process's
 *     thread needs CAP_PERFMON/CAP_SYS_ADMIN or ptrace-read rights over it
 *     (perf's PTRACE_MODE_READ_REALCREDS without LSM hooks: the caller's
 *     real uid and gid are all of the target's, the target's permitted
 *     capabilities a subset of the caller's in the same user namespace
 *     (or CAP_SYS_PTRACE over it), the target dumpable): else EACCES.
 *     ESRCH: no such thread, or not tracked. EINTR: a signal arrived while
 *     the target was exec'ing (its exec_update_lock is taken, as perf
 *     does). ENODATA: accounting is off. A thread that execs a
 *     non-dumpable (setuid, setgid, file capabilities) image gets a new
 *     identity and totals from zero (its deltas not yet read stay).
 *     flags TPROF_THREAD_READ_TOTALS (ABI 1.8): a read that takes nothing:
 *     the values are everything charged to the thread since accounting
 *     (re)started or the thread appeared (an odometer, as the self page's
 *     total[]), including the slice it is running now on any CPU (charged
 *     then, as a switch-out would), and TCum stays for the read-and-zero
 *     consumers. Live views
 *     (tprofctl threads --top) difference two such reads. Other flags:
 *     EINVAL.
 *   TPROF_IOC_READ_SELF (struct tprof_self_read, read)
 *     The calling thread's THREAD_READ (tid 0), lean: identity and values
 *     only. ENODATA: accounting is off; ESRCH: the caller is not tracked
 *     (table full); EFAULT: the values stay with the thread.
 *   TPROF_IOC_DRAIN (struct tprof_drain, read/write)
 *     Copies out every listed thread of the selected process(es) with its
 *     TCum and zeroes what was copied (a delta that arrives meanwhile stays
 *     for the next drain: nothing is lost, also when the buffer is too small
 *     or faults). A thread that exited is reported once more with
 *     TPROF_THREAD_EXITED and then forgotten. pid 0 is the caller's process;
 *     TPROF_PID_ALL needs CAP_PERFMON/CAP_SYS_ADMIN (else EPERM); another pid
 *     needs the TPROF_IOC_THREAD_READ rights over it (else EACCES; ESRCH:
 *     no such process). ENODATA: accounting is off. ENOMEM: no memory.
 *     Processes are matched by identity: a pid reused by a new process does
 *     not reach a dead one's threads. Every pid and tid is in the caller's
 *     pid namespace, and threads of processes that namespace cannot see are
 *     not reported (also with TPROF_PID_ALL). Read-and-zero is atomic per
 *     thread across every consumer (THREAD_READ, READ_SELF, concurrent
 *     drains): each value is handed out once. remaining counts the matching
 *     threads this drain saw listed and had no room for; threads that become
 *     nonzero while it runs are left for the next drain. While one drain
 *     runs, a few threads it is looking at may briefly be invisible to a
 *     concurrent one (they are not lost: the next drain sees them).
 *
 *   The self page (ABI 1.4): a thread reads its own metrics without a
 *   system call. mmap(NULL, page size, PROT_READ, MAP_SHARED, fd,
 *   TPROF_SELF_PAGE_OFFSET) maps the *calling thread's* page (struct
 *   tprof_self_page), read-only, not inherited by fork (VM_DONTCOPY). Every
 *   thread maps its own; mapping it again returns the same page. The
 *   kernel adds every delta it charges to the thread to total[] (an
 *   odometer: consumers of TCum, THREAD_READ and DRAIN, do not reset it)
 *   and, at each switch-in, stamps tsc_in. Read it in a seqcount loop, see
 *   tprof_self_page. EINVAL: a length other than one page. EPERM:
 *   PROT_WRITE. ENODATA: accounting is off. ESRCH: the caller is not
 *   tracked (table full). EDQUOT: the caller's user (real uid) already has
 *   self_pages_per_user mappings (a module parameter, default 16384;
 *   CAP_SYS_ADMIN callers are not counted): each mapping counts until it
 *   is unmapped. The page is charged to the caller's memory cgroup; one
 *   zapped (MADV_DONTNEED) is gone from the mapping (SIGBUS). The page
 *   stays mapped when accounting stops, the thread exits or it execs a
 *   non-dumpable (setuid) image, with TPROF_SELF_LIVE cleared and no longer
 *   updated; after a restart (or in the new image) map a new one.
 *
 *   Sampling (ABI 1.2; design: docs/design.md).
 *   One session at a time, owned by the file descriptor that started it;
 *   closing that descriptor ends it. Per CPU a buffer in two halves of
 *   half_bytes each, mapped read-only into the owner with mmap() (length
 *   tprof_sampling_config.map_bytes, offset 0):
 *
 *     [ control area: struct tprof_buffer_ctl[nr_cpu_ids], ctl_bytes ]
 *     [ CPU 0: half 0 | half 1 ][ CPU 1: half 0 | half 1 ] ...
 *
 *   CPU c's half h starts at ctl_bytes + (2 * c + h) * half_bytes. The
 *   kernel fills one half with records (struct tprof_rec_header first,
 *   8-byte aligned, size includes the header). When a record does not fit
 *   it publishes the half: used[h] = bytes written, seq[h] = a per-CPU
 *   sequence number, then full[h] = 1 (store-release; read it with
 *   load-acquire), wakes poll() and continues in the other half if that
 *   one has been handed back. If both are full, records are counted as
 *   lost (lost_samples, lost_records) and the next half written starts
 *   with a TPROF_REC_LOST record, so for every CPU
 *       samples delivered + lost_samples == samples_taken, exactly.
 *   The reader hands a half back with TPROF_IOC_SAMPLING_RELEASE.
 *   poll() reports POLLIN when some half is full, POLLHUP once the session
 *   is stopped and every half has been handed back.
 *
 *   TPROF_IOC_SAMPLING_START (struct tprof_sampling_config, read/write)
 *     pid TPROF_PID_ALL (system-wide) needs CAP_PERFMON/CAP_SYS_ADMIN, else
 *     EPERM; one process needs the TPROF_IOC_THREAD_READ rights over it,
 *     else EACCES (ESRCH: no such process; EINTR: a signal while it was
 *     exec'ing: the check and the session's counters are made under its
 *     exec_update_lock, as perf does, so an exec into a setuid image
 *     either comes first and is refused, or after and ends them). Without CAP_PERFMON perf's
 *     kernel.perf_event_paranoid applies: 3 and above refuse (EACCES), 2
 *     samples user mode only, 1 and below also kernel mode with ip = caller
 *     = 0. One process is sampled with inherited per-task counters (as perf
 *     record -p): its threads at start (E2BIG above 4096) and every thread
 *     and process created from them afterwards; the session follows the
 *     process's identity, not its number (a process that later gets the
 *     same pid is not seen). A followed process that execs a non-dumpable
 *     (e.g. setuid) program leaves the session: no samples, COMM or MAP of
 *     it any more; an EXIT record with TPROF_EXIT_SECURE_EXEC says so. EBUSY: a session is running.
 *     TPROF_SAMPLING_STACKS (ABI 1.8) makes every sample carry its whole
 *     stack, kernel and user part, at most stack_depth frames (see struct
 *     tprof_rec_stack); TPROF_SAMPLING_CALLERS keeps filling caller.
 *     TPROF_SAMPLING_USER_STACK (ABI 1.18, with STACKS) also copies each
 *     user-task sample's user registers and up to user_stack_bytes of its
 *     user stack from sp into the record (struct tprof_rec_user_stack), as
 *     perf's --call-graph dwarf does, for a walk afterwards with the
 *     binaries' CFI (<linux/tprof_unwind.h>) where frame pointers fail.
 *     TPROF_SAMPLING_USER_CFI (ABI 1.19, with STACKS) walks the user part
 *     in the sample handler with the unwind tables the owner loaded for the
 *     sampled address space (TPROF_IOC_UNWIND_LOAD, _SPACE), frame
 *     pointers where none covers a frame; with USER_STACK as well, a copy
 *     is taken only for a sample whose walk met code no table covers
 *     (TPROF_STACK_USER_UNCOVERED: the tables are not loaded yet, or JIT
 *     code), for a walk afterwards.
 *     cpus and cpus_bytes (ABI 1.16; both 0: every CPU) choose the CPUs
 *     samples are taken on, as perf record -C: a bitmap at user address
 *     cpus of cpus_bytes bytes (a multiple of 8, at most
 *     TPROF_SAMPLING_MAX_CPUS_BYTES), 64-bit words, bit n%64 of word n/64
 *     for CPU n. Bits past the possible CPUs are ignored. System-wide, no
 *     counter exists on the other CPUs; one process's counters take no
 *     sample there. Records other than samples (COMM, MAP, EXIT) come
 *     from every CPU, so that the chosen CPUs' samples can be named.
 *     EFAULT: the bitmap cannot be read.
 *     EINVAL: bad flags, frequency, buffer size or event, nonzero reserved,
 *     stack_depth 0 or above TPROF_MAX_STACK_DEPTH with STACKS, nonzero
 *     without; USER_STACK without STACKS, user_stack_bytes not a multiple
 *     of 8 in [8, TPROF_MAX_USER_STACK_BYTES] and at most a quarter of the
 *     half in effect with USER_STACK, nonzero without; only one of cpus and cpus_bytes set, a bad cpus_bytes, or
 *     a bitmap naming no possible CPU.
 *     EOPNOTSUPP: a hardware event on a machine without a usable PMU, or
 *     TPROF_SAMPLE_ON_TICK where the tick cannot be hooked (the module
 *     parameter tick_sampling=0 says so too, for tests of a fallback).
 *     ENOMEM: no memory for the buffers.
 *     At start, one TPROF_REC_COMM (TPROF_COMM_EXISTING) per existing
 *     process is written (into the starting CPU's buffer).
 *   TPROF_IOC_SAMPLING_STOP (no argument)
 *     The owner only (another descriptor: EPERM). Stops the
 *     sampling on every CPU and publishes every partial half, then POLLHUP
 *     once all are handed back. The mapping stays valid until the
 *     descriptor is closed. ENODATA: no session on this descriptor.
 *   TPROF_IOC_SAMPLING_RELEASE (struct tprof_buffer_release, write)
 *     Hands CPU cpu's half back to the kernel. EINVAL: cpu or half out of
 *     range, or that half is not full. The owner only (another descriptor:
 *     EPERM; ENODATA: no session).
 *   TPROF_IOC_SAMPLING_STATUS (struct tprof_sampling_status, read)
 *     Anyone. Whether a session runs, its settings and totals.
 *   TPROF_IOC_SAMPLING_FLUSH (no argument; ABI 1.8)
 *     The owner only (another descriptor: EPERM; ENODATA: no session).
 *     Publishes every online CPU's partial half now, as a full one would
 *     be (POLLIN), while sampling goes on: a live view (tprofctl top) sees
 *     samples, names and mappings within one refresh instead of when a
 *     half fills, which on a CPU the target rarely runs on may be never.
 *     A sample that hits a CPU while its half is being published is
 *     counted as lost. A stopped session: nothing to do (0). Each call
 *     interrupts every online CPU, so a session gets at most one round per
 *     TPROF_SAMPLING_FLUSH_INTERVAL_MS (10 ms): a FLUSH sooner after the
 *     previous one first sleeps until the interval is over (EINTR: a
 *     signal came meanwhile; nothing was flushed).
 *   TPROF_IOC_SAMPLING_AGGREGATE_READ (struct tprof_aggregate_read,
 *     read/write; ABI 1.21)
 *     The owner only (another descriptor: EPERM; ENODATA: no session; a
 *     session without TPROF_SAMPLING_AGGREGATE: EINVAL). Takes CPU cpu's
 *     counts (struct tprof_aggregate_entry, in no order) and resets them,
 *     running or stopped; a CPU taken offline keeps its counts for the
 *     next read. EINVAL: cpu out of range, nonzero resv; ENOSPC:
 *     max_entries below aggregate_slots; EFAULT: entries not writable (the
 *     counts are kept for the next read). Samples counted as aggregated
 *     are in the control area's samples_taken, so per CPU
 *       aggregated + sample records delivered + lost_samples == samples_taken.
 *   TPROF_IOC_SAMPLING_STOP_ANY (no argument; ABI 1.5)
 *     CAP_PERFMON or CAP_SYS_ADMIN (else EPERM): stops the running session
 *     whoever owns it, as SAMPLING_STOP would, and detaches it: STATUS no
 *     longer shows it and a new session may start; its owner still drains
 *     it and closes. ENODATA: no session.
 *   TPROF_IOC_UNWIND_LOAD (struct tprof_unwind_load, read/write; ABI 1.19)
 *     The owner only (another descriptor: EPERM; ENODATA: no session).
 *     Copies one file's unwind table (<linux/tprof_unwind.h>) into the
 *     session and names it by table_id (1, 2, ...). A table lives until
 *     the last space whose ranges use it is replaced or forgotten (its id
 *     is unknown from then on: load it again), one never used until the
 *     session is freed. Tables and ranges are charged to the caller's
 *     memory cgroup and bounded per session by the module parameter
 *     unwind_table_kb (EDQUOT beyond). EINVAL: a session without
 *     TPROF_SAMPLING_USER_CFI, nonzero resv, nr_rows 0 or above
 *     TPROF_UNWIND_MAX_ROWS, rows not strictly increasing or with a rule
 *     out of range or a nonzero reserved byte. EFAULT: rows unreadable.
 *     ENOMEM: no memory for the table.
 *   TPROF_IOC_UNWIND_SPACE (struct tprof_unwind_space, write; ABI 1.19)
 *     The owner only (another descriptor: EPERM; ENODATA: no session).
 *     Replaces the executable mappings the sample handler
 *     knows for address space space_id (TPROF_REC_MAP's) by nr_ranges
 *     ranges, each walked with a loaded table; nr_ranges 0 forgets the
 *     space (the recorder does when its process exits or execs). Ranges
 *     sorted by start, not overlapping, start < end. Samples taken while
 *     it changes use the old or the new ranges, never a mix. EINVAL: bad
 *     ranges, an unknown table_id, nonzero resv, nr_ranges above
 *     TPROF_UNWIND_MAX_RANGES, or a session without USER_CFI. EDQUOT:
 *     above TPROF_UNWIND_MAX_SPACES spaces or the memory bound. EFAULT:
 *     ranges unreadable. ENOMEM: no memory for the ranges.
 *   Limits (ABI 1.5): the buffers are charged to the owner's user like
 *   perf's ring buffers: locked memory beyond RLIMIT_MEMLOCK plus the module
 *   parameter sampling_mlock_kb per online CPU (perf's perf_event_mlock_kb)
 *   fails SAMPLING_START with EPERM, as perf's mmap() does, unless the
 *   caller has CAP_IPC_LOCK; the charge ends when the memory is freed. Only
 *   the control area and the halves of CPUs online at start are allocated
 *   and charged then; a CPU that comes online later gets (and is charged)
 *   its halves at that moment, or, over the limit, none: its ctl.online
 *   stays 0 and its samples are counted in lost_samples. The mapping keeps
 *   the layout above; reading the halves of a CPU that has none is SIGBUS
 *   (the kernel never marks them full). Closing the owner's descriptor ends the session even
 *   while the buffers are mapped: the mapping stays readable (nothing is
 *   written any more) until unmapped. Mappings are never inherited by fork
 *   (VM_DONTCOPY); PROT_WRITE and PROT_EXEC fail with EPERM.
 *
 *   Counting windows (ABI 1.3; design: IPCOM000049216D, the Instruction
 *   Address Sampler, and profil(2)). Up to TPROF_MAX_WINDOWS windows per
 *   sampling session, added on the owner's descriptor and freed with the
 *   session. Every sample the session takes (after its pid filter) updates
 *   every window independently: a sample of the idle task adds 1 to wait;
 *   otherwise, if the sample belongs to the window and its address maps to a
 *   cell, that cell and in_range get 1, else out_of_range gets 1.
 *     TPROF_WINDOW_KERNEL   kernel-mode samples of any task; [start,
 *                           start + length) in blocks of block_bytes (a
 *                           power of two). User-mode samples: out of range.
 *     TPROF_WINDOW_PROCESS  samples of one process (pid); user-mode
 *                           addresses only (its kernel-mode samples are out
 *                           of range). Follows the pid until it exits.
 *     TPROF_WINDOW_PROFIL   profil(2): samples of process pid and of every
 *                           process it (or a followed child) forks after the
 *                           window was added, all into the one histogram;
 *                           a process stops being followed when it execs or
 *                           exits. start = offset, length = bufsiz (bytes),
 *                           scale in 0..0x10000. Cell of a user pc >= offset:
 *                             i16 = ((pc - offset) / 2) * scale / 65536
 *                           (glibc's profil_count, integer division), except
 *                           scale 2 (by convention every pc >= offset goes to
 *                           cell 0). 16-bit cells (bufsiz / 2 of them, that
 *                           wrap silently) or, with TPROF_WINDOW_CELLS32,
 *                           32-bit cells (bufsiz / 4) at index i16 / 2 (the
 *                           same bytes of buff: sprofil(2)). Scale 0 or 1: the
 *                           window is off (TPROF_WINDOW_OFF) and counts
 *                           nothing.
 *   Address-window cells are 32-bit and wrap; in_range, out_of_range and
 *   wait are 64-bit. Samples taken before a window was added are not in it.
 *   Counter memory is bounded per session: TPROF_WINDOW_MAX_CELLS cells in
 *   all windows (4 bytes each in the kernel, whatever cell_bytes).
 *
 *   TPROF_IOC_WINDOW_ADD (struct tprof_window_add, read/write)
 *     The session's owner only: EPERM on another descriptor while a session
 *     runs, ENODATA if none does. A kernel window needs CAP_PERFMON or
 *     CAP_SYS_ADMIN (else EPERM); a process or profil window the
 *     TPROF_IOC_THREAD_READ rights over pid (else EACCES; ESRCH: no such
 *     process; pid 0 is the caller's process). EINVAL: unknown kind or flags,
 *     nonzero reserved, length 0 or wrapping, block_bytes not a power of two,
 *     scale above 0x10000, more than TPROF_WINDOW_MAX_CELLS cells. ENOSPC:
 *     TPROF_MAX_WINDOWS windows already. ENOMEM: the session's cell budget is
 *     used up, or no memory. Out: id, nr_cells, cell_bytes.
 *   TPROF_IOC_WINDOW_READ (struct tprof_window_read, read/write)
 *     Owner only (EPERM/ENODATA as above), while running and after stop.
 *     Copies cells [first, first + capacity) (clipped to nr_cells) to the
 *     user array of cell_bytes-wide counters and returns the window's info.
 *     Reading does not reset anything, so nothing is lost on EFAULT or a
 *     short buffer. EINVAL: unknown id, flags or nonzero reserved. ENOMEM:
 *     no memory.
 *   TPROF_IOC_WINDOW_LIST (struct tprof_window_list, read/write)
 *     Owner only (EPERM/ENODATA as above). Writes min(capacity, count)
 *     window infos; count = the session's number of windows.
 */
#ifndef _UAPI_LINUX_TPROF_H
#define _UAPI_LINUX_TPROF_H

#include <linux/ioctl.h>
#include <linux/types.h>
#include <linux/tprof_unwind.h> /* struct tprof_unwind_row (UNWIND_LOAD) */

#define TPROF_ABI_MAJOR 1
#define TPROF_ABI_MINOR 22 /* 1.22: stacks counted in the module (AGGREGATE with STACKS) */

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
#define TPROF_FEAT_SAMPLING (1ULL << 2)       /* sampling into mmap'd double buffers */
#define TPROF_FEAT_WINDOWS (1ULL << 3)        /* counting windows, profil (ABI 1.3) */
#define TPROF_FEAT_SELF_PAGE (1ULL << 4)      /* per-thread self page (ABI 1.4) */
#define TPROF_FEAT_PMU_PROGRAMS (1ULL << 5)   /* PMU programs, generic netlink (ABI 1.7) */
#define TPROF_FEAT_THREAD_TOTALS (1ULL << 6)  /* THREAD_READ_TOTALS, SAMPLING_FLUSH (ABI 1.8) */
/*
 * Every addition has its bit (ABI 1.17). A module of 1.9 to 1.16 sets
 * none of those below: what its minor version had is implied (for a
 * library, tprof::FeaturesOf() does that once).
 */
#define TPROF_FEAT_PMU_SUBSCRIBE_REPLY (1ULL << 7) /* the subscription's reply (ABI 1.9) */
#define TPROF_FEAT_PMU_WIDE_WATCHPOINTS (1ULL << 8) /* watchpoints up to 32 bytes (ABI 1.10) */
#define TPROF_FEAT_PMU_DATA_RANGES (1ULL << 9) /* TPROF_PMU_CTR_DATA_RANGE (ABI 1.11) */
#define TPROF_FEAT_EXEC_TRANSITION (1ULL << 10) /* exec_left, EXIT's flags, EDQUOT (ABI 1.12) */
#define TPROF_FEAT_INDEX_REHASHES (1ULL << 11) /* metrics status' index_rehashes (ABI 1.13) */
#define TPROF_FEAT_PMU_COUNTS_ONLY (1ULL << 12) /* TPROF_PMU_CTR_COUNT (ABI 1.14) */
#define TPROF_FEAT_PMU_COUNTS_ONLY_CPUS (1ULL << 13) /* counts only in scope CPUS (ABI 1.15) */
#define TPROF_FEAT_SAMPLING_CPUS (1ULL << 14) /* tprof_sampling_config.cpus (ABI 1.16) */
#define TPROF_FEAT_SAMPLING_USER_STACK (1ULL << 15) /* TPROF_SAMPLING_USER_STACK (ABI 1.18) */
#define TPROF_FEAT_UNWIND_TABLES (1ULL << 16) /* TPROF_SAMPLING_USER_CFI, UNWIND_LOAD/SPACE (ABI 1.19) */
#define TPROF_FEAT_UNWIND_SIGNAL_FRAMES (1ULL << 17) /* TPROF_UNWIND_CFA_SIGNAL rows (ABI 1.20) */
#define TPROF_FEAT_SAMPLING_TICK (1ULL << 18) /* TPROF_SAMPLE_ON_TICK, TPROF_REC_IDLE (ABI 1.21) */
#define TPROF_FEAT_SAMPLING_AGGREGATE (1ULL << 19) /* TPROF_SAMPLING_AGGREGATE, _AGGREGATE_READ (ABI 1.21) */
#define TPROF_FEAT_SAMPLING_AGGREGATE_STACKS (1ULL << 20) /* AGGREGATE with STACKS, TPROF_SAMPLE_STACK_KEY (ABI 1.22) */

/* tprof_info.state */
enum tprof_state {
	TPROF_STATE_IDLE = 0,     /* loaded, hooks counting, nothing recording */
	TPROF_STATE_SAMPLING = 1, /* a sampling session is running */
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
	__u32 listed;             /* threads on the nonzero lists now */
	__u32 __pad;
	/*
	 * (ABI 1.5) exited threads whose final report nobody drained before
	 * the table ran full: their slots were reused, their last values
	 * dropped (counted here, never silently).
	 */
	__u64 reclaimed_threads;
	/*
	 * (ABI 1.6) context switches whose event metrics (page-faults,
	 * hardware counters, ...) could not be read because that CPU's counter
	 * did not exist: a CPU's counters are created by a work item shortly
	 * after it comes online. Time and dispatches are still charged; the
	 * events of those slices are missing (counted here, never silently).
	 */
	__u64 uncounted_switches;
	/*
	 * (ABI 1.13) rebuilds of the thread index (exited threads leave
	 * tombstones in its hash; a rebuild clears them a few thousand entries
	 * at a time, IRQs on in between), since enable: diagnostics.
	 */
	__u64 index_rehashes;
	__u64 resv[1];
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
	__u32 flags;   /* in: 0 or TPROF_THREAD_READ_TOTALS */
	struct tprof_thread_metrics thread; /* out */
	__u64 resv[2];
};

/* tprof_thread_read.flags */
#define TPROF_THREAD_READ_TOTALS (1U << 0) /* odometer values, nothing zeroed (ABI 1.8) */

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

/*
 * The calling thread's read-and-zero, lean (ABI 1.3): what THREAD_READ with
 * tid 0 returns, without input, names or ids, for runtimes that poll
 * themselves on every method entry and exit.
 */
struct tprof_self_read {
	__u64 identity;   /* out: as in tprof_thread_metrics */
	__u64 values[TPROF_MAX_METRICS]; /* out: in the configured order */
};

#define TPROF_IOC_READ_SELF _IOR(TPROF_IOC_MAGIC, 0x15, struct tprof_self_read)

/* The self page (ABI 1.4): mmap offset, and tprof_self_page.flags. */
#define TPROF_SELF_PAGE_OFFSET 0x40000000ULL
#define TPROF_SELF_LIVE (1U << 0) /* the kernel updates this page */
#define TPROF_SELF_TSC  (1U << 1) /* tsc_in/tsc_mult/tsc_shift are valid:
                                   * the TSC ticks at a constant rate
                                   * (x86 constant_tsc; on arm64 the
                                   * "TSC" is cntvct_el0, when EL0 may
                                   * read it); without it time
                                   * is total[] alone, as of the last
                                   * switch or charge */
#define TPROF_SELF_NO_TIME 0xffffffffU /* time_index: time is not configured */

/*
 * The calling thread's odometer, written by the kernel only while the
 * thread is off the CPU, being switched in, or in its own ioctl:
 *
 *   do {
 *           seq = load_acquire(&page->seq);   // odd: being written, retry
 *           copy total[], tsc_in; now = rdtsc();  // arm64: isb; mrs cntvct_el0
 *   } while (seq & 1 || load_acquire(&page->seq) != seq);
 *   time_ns = total[time_index] +
 *             (((unsigned __int128)(now - tsc_in) * tsc_mult) >> tsc_shift);
 *
 * Any switch-out of the reader changes seq, so the TSC difference is
 * always taken on one CPU. total[] of the other metrics is exact up to
 * the thread's last switch-in (or its last READ_SELF/THREAD_READ); use
 * READ_SELF when the current slice's counts matter.
 */
struct tprof_self_page {
	__u32 seq;         /* even when stable */
	__u32 flags;       /* TPROF_SELF_* */
	__u64 identity;    /* the thread's identity (tprof_thread_metrics) */
	__u32 tid;         /* the thread it belongs to (when mapped) */
	__u32 nr_metrics;
	__u32 time_index;  /* index of the time metric, or TPROF_SELF_NO_TIME */
	__u32 tsc_shift;
	__u64 tsc_mult;    /* ns = (cycles * tsc_mult) >> tsc_shift */
	__u64 tsc_in;      /* TSC at the last switch-in or charge */
	__u64 total[TPROF_MAX_METRICS]; /* charged since the page was mapped */
	__u64 resv[4];
};

/* ---- Sampling (ABI 1.2) --------------------------------------------------- */

/* tprof_sampling_config.flags */
#define TPROF_SAMPLING_CALLERS (1U << 0) /* also record the caller's return address */
#define TPROF_SAMPLING_STACKS (1U << 1)  /* whole stacks, stack_depth frames (ABI 1.8) */
#define TPROF_SAMPLING_USER_STACK (1U << 2) /* and user stack copies (ABI 1.18) */
#define TPROF_SAMPLING_USER_CFI (1U << 3) /* user parts walked with unwind tables (ABI 1.19) */
/*
 * ABI 1.21: counts per (process, address space, ip) in per-CPU tables in
 * the kernel instead of a record per sample; TPROF_IOC_SAMPLING_AGGREGATE_READ
 * takes them. Not with CALLERS, nor USER_STACK without USER_CFI. A sample
 * that finds no room in its CPU's table is written as a record, so nothing
 * is lost.
 * AGGREGATE_RECORDS (with AGGREGATE, a check): every sample is written as
 * a record too, and counted as taken once.
 * ABI 1.22, with STACKS: a sample with a stack is counted by its stack's
 * key (a keyed hash of ip and frames, TPROF_SAMPLE_STACK_KEY in the
 * entry's flags, the key in its ip). The first sample of a key in a table
 * is also written as a record with TPROF_SAMPLE_STACK_KEY | _COUNTED and
 * the key in caller: it defines the key, and is counted in the table, not
 * as a record. It is in the buffer before the count is in the table, so a
 * reader that takes a table, then flushes and reads the buffers, has every
 * key it holds. A definition that cannot be written is not counted either
 * (a lost sample). Samples without a stack (idle, or an NMI inside a walk)
 * are counted by ip. With USER_CFI and USER_STACK, a sample whose user
 * walk the tables did not cover is written as a record with its copy (for
 * the reader to walk), not counted.
 */
#define TPROF_SAMPLING_AGGREGATE (1U << 4)
#define TPROF_SAMPLING_AGGREGATE_RECORDS (1U << 5)

/* tprof_sampling_config.stack_depth: 1..TPROF_MAX_STACK_DEPTH with
 * TPROF_SAMPLING_STACKS, else 0. */
#define TPROF_MAX_STACK_DEPTH 127
/* tprof_sampling_config.user_stack_bytes: with TPROF_SAMPLING_USER_STACK. */
#define TPROF_MAX_USER_STACK_BYTES 32768

/* tprof_sampling_config.event_type */
#define TPROF_SAMPLE_ON_CLOCK 0 /* frequency_hz samples/s per CPU (cpu-clock) */
/*
 * ABI 1.21: in the scheduler tick the kernel already takes (HZ per busy
 * CPU): no timer of its own. frequency_hz 0 (frequency_out says HZ); a CPU
 * whose tick stopped while idle (nohz) writes a TPROF_REC_IDLE with the
 * ticks it skipped at its next tick. EOPNOTSUPP where the hook is missing
 * or timers are not high resolution (highres=off: the tick is no hrtimer).
 */
#define TPROF_SAMPLE_ON_TICK 0x100
/* otherwise TPROF_METRIC_SOFTWARE, _HARDWARE or _RAW with event_config and
 * event_period: one sample every event_period occurrences of the event. */

#define TPROF_SAMPLING_DEFAULT_HZ 1000
#define TPROF_SAMPLING_MAX_HZ 100000
#define TPROF_SAMPLING_DEFAULT_HALF_BYTES (64 * 1024)
#define TPROF_SAMPLING_MIN_HALF_BYTES 4096
#define TPROF_SAMPLING_MAX_HALF_BYTES (16 * 1024 * 1024)
/* tprof_sampling_config.cpus_bytes: bitmaps of up to 8192 CPUs (NR_CPUS's
 * largest configuration). */
#define TPROF_SAMPLING_MAX_CPUS_BYTES 1024
/* tprof_sampling_config.aggregate_slots: entries per CPU table (two per CPU). */
#define TPROF_AGGREGATE_DEFAULT_SLOTS 2048
#define TPROF_AGGREGATE_MIN_SLOTS 64
#define TPROF_AGGREGATE_MAX_SLOTS 16384

struct tprof_sampling_config {
	__u32 flags;          /* in: TPROF_SAMPLING_* */
	__u32 pid;            /* in: TPROF_PID_ALL or one process */
	__u32 frequency_hz;   /* in: clock sampling, 0 = default; 1..MAX_HZ */
	__u32 half_bytes;     /* in: 0 = default; power of two in [MIN, MAX] */
	__u32 event_type;     /* in: TPROF_SAMPLE_ON_CLOCK or a TPROF_METRIC_* type */
	__u32 stack_depth;    /* in: with TPROF_SAMPLING_STACKS, else 0 (ABI 1.8) */
	__u64 event_config;   /* in: PERF_COUNT_SW_* / PERF_COUNT_HW_* / raw code */
	__u64 event_period;   /* in: events per sample (counter sampling), >= 1 */
	/* out: the mapping to mmap() */
	__u32 nr_cpu_ids;     /* out: CPU ids in the layout (0..nr_cpu_ids-1) */
	__u32 ctl_bytes;      /* out: bytes of the control area, page aligned */
	__u64 map_bytes;      /* out: ctl_bytes + nr_cpu_ids * 2 * half_bytes */
	__u32 half_bytes_out; /* out: the half size in effect */
	__u32 frequency_out;  /* out: the clock frequency in effect (0 if counter) */
	__u64 cpus;           /* in: user address of a CPU bitmap, 0 = every CPU (ABI 1.16) */
	__u32 cpus_bytes;     /* in: its size: a multiple of 8; 0 with cpus 0 */
	__u32 user_stack_bytes; /* in: with TPROF_SAMPLING_USER_STACK, else 0 (ABI 1.18) */
	__u32 aggregate_slots; /* in/out: with AGGREGATE, 0 = default, else a power of two
				* in [MIN, MAX]; without, 0 (ABI 1.21) */
	__u32 __pad3;
	__u64 resv[1];
};

/*
 * TPROF_IOC_SAMPLING_AGGREGATE_READ: one CPU's counts since its previous
 * read (or the start), taken and reset. The CPU's samples go into its
 * other table meanwhile, so none is missed or counted twice.
 */
struct tprof_aggregate_entry {
	__u64 ip;             /* 0 with TPROF_SAMPLE_HIDDEN; the key with _STACK_KEY */
	__u64 space_id;       /* user samples: as tprof_rec_sample's; else 0 */
	__u32 pid;            /* in the owner's pid namespace; 0: the idle task */
	__u32 flags;          /* TPROF_SAMPLE_USER, _IDLE, _HIDDEN, _STACK_KEY */
	__u64 count;
};

struct tprof_aggregate_read {
	__u32 cpu;            /* in */
	__u32 max_entries;    /* in: at least aggregate_slots */
	__u64 entries;        /* in: user address of tprof_aggregate_entry[max_entries] */
	__u32 nr_entries;     /* out: entries written */
	__u32 __pad;
	__u64 samples;        /* out: the sum of their counts */
	__u64 overflowed;     /* out: samples that found no room: written as records */
	__u64 start_ns;       /* out: local_clock() of the CPU when the counts began */
	__u64 end_ns;         /* out: and when they were taken */
	__u64 resv[2];
};

/* One CPU's view in the control area. Written by the kernel only. */
struct tprof_buffer_ctl {
	__u32 full[2];        /* 1: half i is ready for the reader */
	__u32 used[2];        /* bytes of records in half i, valid when full */
	__u64 seq[2];         /* per-CPU publication order of half i */
	__u64 samples_taken;  /* samples taken on this CPU */
	__u64 lost_samples;   /* samples dropped: both halves full */
	__u64 lost_records;   /* other records dropped: both halves full */
	__u32 online;         /* 1 while this CPU is sampling */
	__u32 __pad;
};

struct tprof_buffer_release {
	__u32 cpu;
	__u32 half;           /* 0 or 1 */
	__u64 resv[1];
};

struct tprof_sampling_status {
	__u32 active;         /* 1 while a session exists (running or stopped) */
	__u32 running;        /* 1 while samples are taken */
	__u32 pid;            /* as configured */
	__u32 frequency_hz;
	__u32 half_bytes;
	__u32 event_type;
	__u64 samples_taken;  /* totals over all CPUs */
	__u64 lost_samples;
	__u64 lost_records;
	__u64 resv[4];
};

/* Records in the buffers. */
enum tprof_record_type {
	TPROF_REC_SAMPLE = 1,
	TPROF_REC_COMM = 2,   /* a process's name: existing, forked, or exec'd */
	TPROF_REC_EXIT = 3,   /* a process (its last thread) exited */
	TPROF_REC_MAP = 4,    /* an executable file mapping of a sampled address space */
	TPROF_REC_LOST = 5,   /* records dropped on this CPU before this one */
	TPROF_REC_IDLE = 6,   /* ticks an idle CPU skipped (TPROF_SAMPLE_ON_TICK, ABI 1.21) */
};

struct tprof_rec_header {
	__u32 type;           /* enum tprof_record_type */
	__u32 size;           /* bytes including this header, multiple of 8 */
};

/* tprof_rec_sample.flags */
#define TPROF_SAMPLE_USER (1U << 0)     /* the CPU was in user mode */
#define TPROF_SAMPLE_IDLE (1U << 1)     /* the CPU was idle (wait state) */
#define TPROF_SAMPLE_CALLER (1U << 2)   /* caller is valid */
#define TPROF_SAMPLE_HIDDEN (1U << 3)   /* kernel addresses withheld (no CAP_PERFMON) */
#define TPROF_SAMPLE_STACK (1U << 4)    /* a struct tprof_rec_stack follows (ABI 1.8) */
#define TPROF_SAMPLE_USER_STACK (1U << 5) /* a struct tprof_rec_user_stack follows it (ABI 1.18) */
#define TPROF_SAMPLE_STACK_KEY (1U << 6) /* caller holds the stack's aggregate key (ABI 1.22) */
#define TPROF_SAMPLE_COUNTED (1U << 7)   /* a key's definition: the sample is in the table (ABI 1.22) */

struct tprof_rec_sample {
	struct tprof_rec_header hdr;
	__u64 time_ns;        /* local_clock() of the sampling CPU */
	__u32 pid;            /* thread group id; 0 for the idle task */
	__u32 tid;
	__u64 ip;             /* interrupted instruction address */
	__u64 caller;         /* return address of its function (if TPROF_SAMPLE_CALLER),
			       * or the stack key (if TPROF_SAMPLE_STACK_KEY) */
	__u64 space_id;       /* address-space id (user samples), matches tprof_rec_map;
			       * one space's for the session's life: never an
			       * earlier space's whose memory the kernel reused */
	__u32 flags;          /* TPROF_SAMPLE_* */
	__u32 cpu;
};

/*
 * The stack of a sample (TPROF_SAMPLING_STACKS, ABI 1.8): right after the
 * struct tprof_rec_sample, inside hdr.size, followed by nr_kernel +
 * nr_user __u64 addresses (a reader that stops at sizeof(struct
 * tprof_rec_sample) skips it). First the kernel part, innermost first:
 * the return addresses the kernel's unwinder finds from the sampled
 * registers (none for a user-mode sample, or with TPROF_SAMPLE_HIDDEN).
 * Then the user part of a user task, innermost first:
 *   - with TPROF_STACK_USER_IP, the user-mode ip (the sample hit the
 *     kernel: the address the task entered it from);
 *   - with TPROF_STACK_LEAF_RA, the user leaf's possible return address:
 *     the word at the user stack pointer (x86-64) or the link register
 *     (arm64). It is the leaf's caller only where the leaf has no frame
 *     (yet); the reader decides, e.g. from the leaf's CFI;
 *   - the return addresses of the frame-pointer chain (fault-safe reads;
 *     the walk stops at a fault, a misaligned or non-increasing frame
 *     pointer, a zero return address or the depth).
 * Return addresses (every entry but the user ip) point after the call.
 * The kernel and frame-chain entries are at most stack_depth together;
 * TPROF_STACK_TRUNCATED says the depth ended the walk. The record's size
 * stays a multiple of 8 and far below TPROF_SAMPLING_MIN_HALF_BYTES.
 */
#define TPROF_STACK_USER_IP (1U << 0)
#define TPROF_STACK_LEAF_RA (1U << 1)
#define TPROF_STACK_TRUNCATED (1U << 2)
/*
 * With TPROF_SAMPLING_USER_CFI (ABI 1.19) the user part after the user ip
 * is the walk with the space's unwind tables (TPROF_IOC_UNWIND_SPACE;
 * frame-pointer steps where no table covers a frame; no LEAF_RA):
 */
#define TPROF_STACK_USER_CFI (1U << 3)       /* walked with unwind tables */
#define TPROF_STACK_USER_WHOLE (1U << 4)     /* it reached the outermost frame */
#define TPROF_STACK_USER_UNCOVERED (1U << 5) /* it met code no loaded table covers */
#define TPROF_STACK_USER_BY_FP (1U << 6)     /* some callers came from frame pointers */

struct tprof_rec_stack {
	__u16 nr_kernel;
	__u16 nr_user;
	__u32 flags;          /* TPROF_STACK_* */
	/* __u64 frames[nr_kernel + nr_user]; */
};

/*
 * A user task's registers and a copy of its user stack (TPROF_SAMPLING_USER_STACK,
 * ABI 1.18): after the stack's frames, with TPROF_SAMPLE_USER_STACK, for a
 * sample whose user registers the kernel has (those of struct
 * tprof_rec_stack's user part). bytes of the stack from sp follow, then
 * zeros up to the record's end: bytes is less than asked where the stack
 * ends sooner (a fault-safe copy stops there), a multiple of 8.
 */
struct tprof_rec_user_stack {
	__u64 pc;             /* the user-mode ip */
	__u64 sp;
	__u64 fp;             /* rbp, x29 */
	__u64 lr;             /* x30 on arm64, else 0 */
	__u64 pac_mask;       /* bits of a return address that are not the
			       * address (arm64 pointer authentication), else 0 */
	__u32 bytes;          /* of stack copied from sp */
	__u32 asked;          /* user_stack_bytes: the room that follows */
	/* __u8 stack[asked]; */
};

/* tprof_rec_comm.kind */
#define TPROF_COMM_EXISTING 0 /* the process existed at start */
#define TPROF_COMM_FORK 1     /* new process; parent_pid names its parent */
#define TPROF_COMM_EXEC 2     /* the process exec'd: new name, new space */

struct tprof_rec_comm {
	struct tprof_rec_header hdr;
	__u64 time_ns;
	__u32 pid;
	__u32 parent_pid;
	__u32 kind;           /* TPROF_COMM_* */
	__u32 __pad;
	char comm[16];        /* NUL-padded */
};

/* tprof_rec_exit.flags (ABI 1.12; 0 before) */
#define TPROF_EXIT_SECURE_EXEC (1U << 0) /* it did not exit: it exec'd an image the
                                          * owner may not see (setuid, setgid, file
                                          * capabilities) and left the session */

struct tprof_rec_exit {
	struct tprof_rec_header hdr;
	__u64 time_ns;
	__u32 pid;
	__u32 flags;          /* TPROF_EXIT_* */
};

/* Followed by the mapped file's path, NUL-terminated, padded to 8 bytes. */
struct tprof_rec_map {
	struct tprof_rec_header hdr;
	__u64 time_ns;        /* of the sample that saw this address space: the
			       * mappings are read a moment later, at most
			       * once per change of the space, and come before
			       * the process's EXIT in time */
	__u32 pid;
	__u32 __pad;
	__u64 space_id;       /* the address space these mappings belong to */
	__u64 start;          /* [start, end) of the mapping */
	__u64 end;
	__u64 pgoff;          /* file offset of start, in bytes */
};

struct tprof_rec_lost {
	struct tprof_rec_header hdr;
	__u64 time_ns;
	__u64 lost_samples;   /* since the previous TPROF_REC_LOST of this CPU */
	__u64 lost_records;
};

/*
 * Tick sampling, system-wide: the ticks CPU cpu did not take since its
 * previous sample because it slept in idle with its tick stopped (the
 * kernel's own idle time bounds them), written at its first tick after.
 * iowait_ticks of them had a task of that CPU waiting for I/O. Not a
 * sample: lost with the other records (lost_records).
 */
struct tprof_rec_idle {
	struct tprof_rec_header hdr;
	__u64 time_ns;
	__u32 cpu;
	__u32 idle_ticks;
	__u32 iowait_ticks;
	__u32 __pad;
};

/* TPROF_IOC_UNWIND_LOAD */
#define TPROF_UNWIND_MAX_ROWS (1U << 22)
struct tprof_unwind_load {
	__u64 rows;           /* in: user address of struct tprof_unwind_row[nr_rows] */
	__u32 nr_rows;        /* in: 1..TPROF_UNWIND_MAX_ROWS */
	__u32 table_id;       /* out: >= 1 */
	__u64 resv[2];
};

/* TPROF_IOC_UNWIND_SPACE */
#define TPROF_UNWIND_MAX_RANGES 1024
#define TPROF_UNWIND_MAX_SPACES 4096
struct tprof_unwind_range {
	__u64 start;          /* [start, end): an executable mapping */
	__u64 end;
	__u64 bias;           /* pc - bias: the address in the table's file */
	__u32 table_id;
	__u32 resv;
};

struct tprof_unwind_space {
	__u64 space_id;       /* in: the space of TPROF_REC_MAP records */
	__u64 ranges;         /* in: user address of struct tprof_unwind_range[nr_ranges] */
	__u32 nr_ranges;      /* in: 0 forgets the space */
	__u32 resv;
	__u64 resv2;
};

#define TPROF_IOC_SAMPLING_START _IOWR(TPROF_IOC_MAGIC, 0x20, struct tprof_sampling_config)
#define TPROF_IOC_SAMPLING_STOP _IO(TPROF_IOC_MAGIC, 0x21)
#define TPROF_IOC_SAMPLING_RELEASE _IOW(TPROF_IOC_MAGIC, 0x22, struct tprof_buffer_release)
#define TPROF_IOC_SAMPLING_STATUS _IOR(TPROF_IOC_MAGIC, 0x23, struct tprof_sampling_status)
#define TPROF_IOC_SAMPLING_STOP_ANY _IO(TPROF_IOC_MAGIC, 0x24) /* ABI 1.5 */
#define TPROF_IOC_SAMPLING_FLUSH _IO(TPROF_IOC_MAGIC, 0x25)    /* ABI 1.8 */
#define TPROF_IOC_UNWIND_LOAD _IOWR(TPROF_IOC_MAGIC, 0x26, struct tprof_unwind_load) /* ABI 1.19 */
#define TPROF_IOC_UNWIND_SPACE _IOW(TPROF_IOC_MAGIC, 0x27, struct tprof_unwind_space) /* ABI 1.19 */
#define TPROF_IOC_SAMPLING_AGGREGATE_READ \
	_IOWR(TPROF_IOC_MAGIC, 0x28, struct tprof_aggregate_read) /* ABI 1.21 */
/* SAMPLING_FLUSH: one round of cross-CPU calls per session per interval */
#define TPROF_SAMPLING_FLUSH_INTERVAL_MS 10

/* ---- Counting windows (ABI 1.3) ------------------------------------------ */

#define TPROF_MAX_WINDOWS 16
#define TPROF_WINDOW_MAX_CELLS (4U * 1024 * 1024) /* per session: 16 MiB */
#define TPROF_PROFIL_MAX_SCALE 0x10000U

enum tprof_window_kind {
	TPROF_WINDOW_KERNEL = 1,
	TPROF_WINDOW_PROCESS = 2,
	TPROF_WINDOW_PROFIL = 3,
};

/* tprof_window_add.flags, tprof_window_info.flags */
#define TPROF_WINDOW_CELLS32 (1U << 0) /* in: profil with 32-bit cells */
#define TPROF_WINDOW_OFF (1U << 1)     /* out: profil scale 0 or 1, counts nothing */

struct tprof_window_add {
	__u32 kind;           /* in: enum tprof_window_kind */
	__u32 pid;            /* in: PROCESS/PROFIL: 0 = caller's process; KERNEL: 0 */
	__u64 start;          /* in: first address (profil: offset) */
	__u64 length;         /* in: bytes of addresses (profil: bufsiz) */
	__u32 block_bytes;    /* in: KERNEL/PROCESS: power of two; PROFIL: 0 */
	__u32 scale;          /* in: PROFIL: 0..0x10000; else 0 */
	__u32 flags;          /* in: TPROF_WINDOW_CELLS32 (profil only) */
	__u32 id;             /* out: the window's id (0..TPROF_MAX_WINDOWS-1) */
	__u64 nr_cells;       /* out: counters of the window */
	__u32 cell_bytes;     /* out: 2 (profil) or 4 */
	__u32 __pad;
	__u64 resv[2];
};

struct tprof_window_info {
	__u32 id;
	__u32 kind;           /* enum tprof_window_kind */
	__u32 pid;            /* PROCESS/PROFIL: in the reader's pid namespace
	                       * (0: not visible there, or gone); 0 for KERNEL */
	__u32 flags;          /* TPROF_WINDOW_* */
	__u64 start;          /* as added */
	__u64 length;
	__u32 block_bytes;
	__u32 scale;
	__u64 nr_cells;
	__u32 cell_bytes;
	__u32 nr_procs;       /* processes followed now (PROCESS/PROFIL) */
	__u64 in_range;       /* samples counted in a cell */
	__u64 out_of_range;   /* samples of the window's scope in no cell */
	__u64 wait;           /* samples of the idle task (wait state) */
	__u64 untracked_forks; /* profil: children not followed (table full) */
	__u64 resv[2];
};

struct tprof_window_read {
	__u32 id;             /* in */
	__u32 flags;          /* in: 0 */
	__u64 cells;          /* in: pointer to cell_bytes-wide counters, or 0 */
	__u64 capacity;       /* in: counters at cells */
	__u64 first;          /* in: first cell to copy */
	struct tprof_window_info info; /* out */
	__u64 copied;         /* out: counters written */
	__u64 resv[2];
};

struct tprof_window_list {
	__u64 windows;        /* in: pointer to struct tprof_window_info[capacity] */
	__u32 capacity;       /* in */
	__u32 count;          /* out: windows of the session */
	__u64 resv[2];
};

#define TPROF_IOC_WINDOW_ADD _IOWR(TPROF_IOC_MAGIC, 0x30, struct tprof_window_add)
#define TPROF_IOC_WINDOW_READ _IOWR(TPROF_IOC_MAGIC, 0x31, struct tprof_window_read)
#define TPROF_IOC_WINDOW_LIST _IOWR(TPROF_IOC_MAGIC, 0x32, struct tprof_window_list)

/* ---- PMU programs (ABI 1.7; design: docs/pmu-programs.md) ----------------
 *
 * A PMU program is up to TPROF_PMU_MAX_COUNTERS counters over one thread,
 * one process (its threads, and the threads and processes they create
 * afterwards) or every CPU (whatever runs there: every process, the kernel,
 * CPUs that come online later), with per-counter thresholds and up to
 * TPROF_PMU_MAX_RULES arithmetic rules
 *     m0*c[i0] + m1*c[i1] + ... OP constant      (up to 4 terms)
 * evaluated in the kernel whenever a member counter moves. A threshold
 * crossing or a rule that becomes true raises an event to the program's
 * monitor: a generic netlink socket (family TPROF_PMU_GENL_NAME) that
 * subscribed with the program's descriptor. Nothing is broadcast.
 *
 * Counting. Each counter is a perf event of the target with an overflow
 * handler. Software events, tracepoints, breakpoints and watchpoints are
 * counted at period 1: every event is seen, and the value, the thresholds,
 * the instruction range and the rules are exact (TPROF_PMU_EXACT in
 * tprof_pmu_values.exact). Hardware and raw events are counted at the
 * counter's period K (granularity): the value moves by K at each overflow,
 * rules and thresholds are evaluated then, and an instruction range is
 * checked against the overflow's address (an estimate, as sampling is).
 * On arm64 an execution breakpoint at a user address of scope THREAD or
 * PROCESS is, for a caller with CAP_PERFMON or CAP_SYS_ADMIN, a uprobe of
 * the file mapped there at creation (an executable private file mapping),
 * and one at a kernel address (any scope, CAP_SYS_ADMIN) a kprobe;
 * both are seen per hit and exact as on x86, and count the scope's tasks
 * only (the thread; the process and the descendants whose parent chain
 * reaches it through a child forked after the program, as perf's inherit
 * counts them; for CPUS every task, interrupts included). A kprobe refuses
 * what kprobes cannot probe and tprof.ko's own code (EINVAL). Every other
 * breakpoint (any caller's without CAP_PERFMON, user addresses outside a
 * file mapping, user addresses in scope CPUS, TPROF_PMU_CTR_USER_ONLY at a
 * kernel address) and every
 * watchpoint is a debug register there, which the kernel steps over only
 * for perf's own overflow handler. Without a threshold, a rule, a range,
 * arming (armed_by) or scope CPUS it only counts: a counting perf event
 * whose value (exact) is perf's count when the program is read (events
 * raised by the other counters carry its value as of the last read). With
 * any of them it is seen per hit and exact as on x86: each of its perf
 * events (each piece of a watchpoint) is paired with a second, counting
 * one on the same address and task or CPU (a "stepper"), which makes the
 * kernel step over the hit; a watchpoint's piece also gets a "guard", the
 * same counting event in the register below ours, which the kernel picks
 * when the reported address lies outside every watched byte (a wide or
 * paired access on some CPUs; never in QEMU): that hit is stepped over but
 * no handler of ours sees it, and tprof_pmu_values.hits_missed counts it
 * (scope THREAD and PROCESS; in scope CPUS it is not counted). Such a
 * counter takes 3 watchpoint registers per piece, or 2 breakpoint
 * registers (see ENOSPC).
 * Counts only (TPROF_PMU_CTR_COUNT, ABI 1.14; perf stat's counting): the
 * counter is a counting perf event (no period, no handler of ours) whose
 * value is perf's exact count of the scope, inherited copies included,
 * taken when the program is read (events the other counters raise carry
 * the value of the last read). For software, hardware, raw and tracepoint
 * kinds; software ones may then be task-clock and cpu-clock too (ns of CPU
 * time). Its period is 0, and it takes no range, data range, subranges,
 * threshold, arming or rule (else EINVAL). In scope CPUS (ABI 1.15; 1.14
 * refuses it with EINVAL) the value is the sum over every CPU's counter,
 * a CPU that went offline keeping what it counted (perf stat -a). Its bit
 * in tprof_pmu_values.exact is set.
 * A uprobe and a debug-register breakpoint with perf's handler at the same
 * user instruction make arm64's kernel kill the task that runs it
 * (SIGILL: the breakpoint's single-step swallows the uprobe's), so a user
 * breakpoint of tprof's that would be a debug register at an address where
 * one of tprof's uprobes is, or a uprobe where one of tprof's debug-register
 * breakpoints is, is EBUSY: when both programs have the same creator (real
 * uid), in any process, or when either is scope CPUS. Other users'
 * per-task breakpoints never make it EBUSY.
 *
 * Instruction range (TPROF_PMU_CTR_RANGE): only events whose user-mode
 * instruction address (the interrupted or faulting instruction; for a
 * syscall tracepoint the caller's) is in [range_start, range_end) count. A
 * range in kernel addresses needs CAP_PERFMON. Visits of a range: an
 * execution breakpoint (TPROF_PMU_EV_BREAKPOINT) on its first instruction
 * counts every execution of that instruction, exactly.
 * Data range of a counter (TPROF_PMU_CTR_DATA_RANGE, ABI 1.11): only events
 * whose data address is in [addr, addr + len) count, len 1 up to the whole
 * address space (not wrapping). Only kinds whose events carry a data
 * address take one: the software events page-faults, minor-faults and
 * major-faults, whose data address is the faulting address (perf's
 * sample addr); exact at period 1. Any other kind (alignment and emulation
 * faults carry the instruction's address, other events none) is EINVAL;
 * a watchpoint's own [addr, addr + len) is its data range. A counter may
 * have both ranges: an event counts when both hold. A data range in
 * kernel addresses needs CAP_PERFMON. An event raised by such a counter
 * (its threshold, or a rule at one of its events) carries the data
 * address in tprof_pmu_event.addr. With nr_subranges K the data range,
 * not the instruction range, is cut into K parts.
 *
 * Watchpoint: a watchpoint (TPROF_PMU_EV_WATCHPOINT) on [addr, addr + len),
 * len 1..TPROF_PMU_MAX_WATCH_LEN (32) bytes at any address, counts every
 * access of its kind. The range is cut into pieces, one debug register
 * each: x86 the fewest naturally aligned pieces of 1, 2, 4 or 8 bytes (a
 * 32-byte range aligned to 8 is 4 pieces), arm64 one piece per 8-byte
 * doubleword it touches; a range of more than TPROF_PMU_MAX_WATCH_PIECES
 * (4) pieces is EINVAL. The counter's value is the sum over its pieces: an
 * access touching two pieces (an unaligned store across a piece
 * boundary) counts once per piece it touches, and each of those hits
 * goes through thresholds and rules. All the watchpoint pieces of a
 * program (on x86 with its breakpoints: they share the 4 debug
 * registers) must fit the CPU's data debug registers, else ENOSPC; on
 * arm64 a per-hit piece (see Counting) takes three, and breakpoints that
 * are debug registers (not u/kprobes) in scope CPUS must fit the execution
 * ones (ID_AA64DFR0_EL1.BRPs + 1; two each when per hit).
 *
 * TPROF_IOC_PMU_CREATE (struct tprof_pmu_program, read/write)
 *   Creates a program and returns a new descriptor for it in fd (O_CLOEXEC):
 *   the program counts from now until that descriptor is closed. Scope
 *   THREAD: tid (0 = the calling thread); PROCESS: pid (0 = the caller's
 *   process) with inherited counters (as perf stat -p); CPUS: pid 0 (else
 *   EINVAL), each counter a perf event on every online CPU (as perf stat
 *   -a), created on a CPU that comes online and released on one that goes
 *   offline while the program lives (its value keeps what was counted
 *   there); an event's pid and tid are the task's that was running on that
 *   CPU (0 for the idle task). CPUS needs CAP_PERFMON or CAP_SYS_ADMIN of
 *   the caller at any kernel.perf_event_paranoid (else EPERM). THREAD and
 *   PROCESS: permissions as sampling: TPROF_IOC_THREAD_READ rights over the
 *   target (EACCES, ESRCH)
 *   and, without CAP_PERFMON, kernel.perf_event_paranoid <= 2 (else EACCES);
 *   at 2, or with TPROF_PMU_CTR_USER_ONLY, kernel mode is not counted;
 *   kernel addresses (breakpoints, watchpoints, ranges, data ranges) need CAP_PERFMON
 *   (EACCES); without it an event's ip is 0 when it is a kernel address.
 *   Breakpoints and watchpoints at kernel addresses need CAP_SYS_ADMIN
 *   in every scope, as perf's (EPERM with CAP_PERFMON alone). THREAD and
 *   PROCESS are checked and created under the target's exec_update_lock
 *   (EINTR: a signal meanwhile). A thread of the scope that execs a
 *   non-dumpable (setuid, setgid, file capabilities) image is no longer
 *   counted from that exec on: perf exits its events, and on arm64 the
 *   uprobes (below) are neither installed in nor counted for such an
 *   image. On arm64 a user-address execution breakpoint is a uprobe
 *   only for a caller with CAP_PERFMON or CAP_SYS_ADMIN (perf's rule for
 *   its uprobe PMU); anyone else's is a debug register of the target's
 *   threads (with a stepper when seen per hit: ENOSPC when they do not fit).
 *   EINVAL: no counter or too many, unknown kind/flags/scope/op/rearm, a
 *   rule term naming no counter, more than 4 terms or none, |multiplier|
 *   above TPROF_PMU_MAX_MULTIPLIER, an empty or inverted range, a data
 *   range that is empty (len 0) or wraps, or on a kind other than
 *   page-faults, minor-faults, major-faults, a bad
 *   watchpoint length (0, above TPROF_PMU_MAX_WATCH_LEN, more than
 *   TPROF_PMU_MAX_WATCH_PIECES pieces, or wrapping), a hardware counter without a period,
 *   period above 1 for an exact kind, armed_by naming no rule, nr_subranges
 *   1 or above TPROF_PMU_MAX_SUBRANGES or without a range (data range, else
 *   instruction range) of at least K bytes, nonzero reserved fields; on arm64 a kernel-address breakpoint
 *   kprobes refuse (not kernel text, not an instruction's address, an
 *   instruction they cannot step over, a function on the kprobe blacklist
 *   or NOKPROBE_SYMBOL, code patched by jump labels or static calls) or in
 *   tprof.ko's own code (its hits would recurse); on arm64 any execution
 *   breakpoint at an address not 4-byte aligned (no instruction starts
 *   there).
 *   EPERM: scope CPUS without CAP_PERFMON/CAP_SYS_ADMIN; a kernel-address
 *   breakpoint or watchpoint without CAP_SYS_ADMIN.
 *   ENOENT: no such event (unknown software event or tracepoint id).
 *   EOPNOTSUPP: hardware events without a usable PMU; on arm64 an
 *   instruction a uprobe cannot step over. EBUSY (arm64): a user breakpoint
 *   at an address where another program of tprof's (the same user's, or
 *   an every-CPU one) has a uprobe while this one would be a debug
 *   register, or the other way round (see Counting).
 *   ENOSPC: no free
 *   debug register for a breakpoint or watchpoint, counting the
 *   breakpoints a target thread's perf context holds (any thread's in
 *   scope CPUS) and those of tprof's scope-CPUS programs (also: the program's
 *   watchpoint pieces, x86 with its breakpoints, exceed the CPU's debug
 *   registers; on arm64 counting three per per-hit piece, see Data range).
 *   E2BIG: more than 4096 perf events (the target's threads at
 *   creation x perf events per thread: one per counter, one per piece of
 *   a watchpoint, on arm64 three a watchpoint piece and two a breakpoint
 *   when per hit). EDQUOT: the caller's user (its real uid) would hold
 *   more perf events in PMU programs than the module parameter
 *   pmu_user_events allows (default 16384; callers with CAP_SYS_ADMIN are
 *   not counted): a program counts its threads at creation x its perf
 *   events per thread (as for E2BIG), scope CPUS its events x every
 *   possible CPU, until its descriptor is closed; or, on arm64, more
 *   uprobes (breakpoints seen per hit) than uprobes_per_user allows
 *   (default 256, one per such counter). EMFILE, ENOMEM: no
 *   descriptor or memory (the program's memory is charged to the caller's
 *   memory cgroup).
 *   Rules are edge-triggered: a rule is first evaluated when one of its
 *   counters first moves, and fires when it holds then and had not (or,
 *   with TPROF_PMU_REARM_ON_FALSE, whenever it goes from false to true).
 *
 * Secondary counters (armed_by = r + 1) are created with the program but
 * count nothing until rule r first fires; the rule's handler arms them, in
 * the kernel, so they count from the very next event. A secondary counter
 * may carry rules of its own (which may arm tertiary ones, and so on: any
 * depth up to TPROF_PMU_MAX_RULES levels). With nr_subranges K a counter's
 * range (its data range if it has one, else its instruction range) is
 * also cut into K parts of width ceil(len / K) bytes (the last
 * one shorter), each counted on its own (TPROF_IOC_PMU_READ_SUBRANGES).
 *
 * On the program's descriptor:
 * TPROF_IOC_PMU_READ (struct tprof_pmu_values, read)
 *   The counters' values now, which are exact, how often each rule and
 *   threshold fired, events queued, sent and lost, which rules have armed
 *   their secondary counters (armed, bit r).
 * TPROF_IOC_PMU_READ_SUBRANGES (struct tprof_pmu_subranges, read/write)
 *   Copies min(K, capacity) per-subrange values of one counter. EINVAL: the
 *   counter has no subranges, nonzero reserved fields; EFAULT: values.
 *
 * Events (generic netlink, family TPROF_PMU_GENL_NAME, version 1):
 *   TPROF_PMU_CMD_SUBSCRIBE (userspace -> kernel), attribute
 *     TPROF_PMU_A_PROGRAM_FD (u32): a descriptor of a program in the
 *     sending process. Its events go to the sending socket from then on (a
 *     program has one monitor; a new subscription replaces the old one).
 *     EBADF: not an open descriptor; EINVAL: not a PMU program; EAGAIN:
 *     the socket's receive buffer is full (read it, then subscribe again);
 *     ENOMEM. Generic netlink itself refuses a malformed message before
 *     the handler runs: EOPNOTSUPP (another command, or a dump), EINVAL
 *     (headers cut short, an attribute running past the message, no
 *     TPROF_PMU_A_PROGRAM_FD), ERANGE (TPROF_PMU_A_PROGRAM_FD shorter
 *     than 4 bytes, TPROF_PMU_A_EVENT longer than its struct), ENOENT (no
 *     such family id); a message without NLM_F_REQUEST is not handled.
 *     Since 1.9 the kernel first replies with an empty
 *     TPROF_PMU_CMD_SUBSCRIBE message, queued ahead of the program's
 *     events: that is the success to wait for, since the netlink ACK
 *     (NLM_F_ACK) comes behind the events and is dropped when they fill
 *     the receive buffer.
 *   TPROF_PMU_CMD_EVENT (kernel -> the monitor), attribute
 *     TPROF_PMU_A_EVENT: a struct tprof_pmu_event. Events are numbered per
 *     program from 1; an event that could not be queued (the program's queue
 *     of TPROF_PMU_QUEUE_LEN is full) or delivered (the socket's receive
 *     buffer is full: no ENOBUFS is raised for it) is counted, and the next
 *     delivered event carries that count in lost: seq + lost accounts for
 *     every event. Events are queued on the subscribing socket itself,
 *     never on a socket that binds its port id after it closed.
 *   When the monitor's socket closes the program has none until the next
 *   subscription: events meanwhile wait in the program's queue (what does
 *   not fit is lost, and counted).
 */
#define TPROF_PMU_GENL_NAME "tprof_pmu"
#define TPROF_PMU_GENL_VERSION 1

enum tprof_pmu_genl_cmd {
	TPROF_PMU_CMD_UNSPEC = 0,
	TPROF_PMU_CMD_SUBSCRIBE = 1,
	TPROF_PMU_CMD_EVENT = 2,
};

enum tprof_pmu_genl_attr {
	TPROF_PMU_A_UNSPEC = 0,
	TPROF_PMU_A_PROGRAM_FD = 1, /* u32 */
	TPROF_PMU_A_EVENT = 2,      /* struct tprof_pmu_event */
	__TPROF_PMU_A_MAX,
};
#define TPROF_PMU_A_MAX (__TPROF_PMU_A_MAX - 1)

#define TPROF_PMU_MAX_COUNTERS 8
#define TPROF_PMU_MAX_RULES 8
#define TPROF_PMU_MAX_TERMS 4
#define TPROF_PMU_MAX_MULTIPLIER (1LL << 24)
#define TPROF_PMU_QUEUE_LEN 256
#define TPROF_PMU_MAX_SUBRANGES 4096
#define TPROF_PMU_MAX_WATCH_LEN 32   /* bytes of one watchpoint's data range */
#define TPROF_PMU_MAX_WATCH_PIECES 4 /* debug registers of one watchpoint */

/* tprof_pmu_counter.kind */
enum tprof_pmu_event_kind {
	TPROF_PMU_EV_SOFTWARE = 1,   /* config: PERF_COUNT_SW_* (cpu-clock/task-clock: counts only) */
	TPROF_PMU_EV_HARDWARE = 2,   /* config: PERF_COUNT_HW_*; period >= 1 */
	TPROF_PMU_EV_RAW = 3,        /* config: the PMU's raw event code; period >= 1 */
	TPROF_PMU_EV_TRACEPOINT = 4, /* config: tracefs events/<sys>/<name>/id */
	TPROF_PMU_EV_BREAKPOINT = 5, /* execution of the instruction at addr */
	TPROF_PMU_EV_WATCHPOINT = 6, /* accesses to [addr, addr + len) */
};

/* tprof_pmu_counter.flags */
#define TPROF_PMU_CTR_RANGE (1U << 0)      /* count only ip in [range_start, range_end) */
#define TPROF_PMU_CTR_USER_ONLY (1U << 1)  /* do not count kernel mode */
#define TPROF_PMU_CTR_WATCH_READ (1U << 2) /* watchpoint: reads (and writes) */
#define TPROF_PMU_CTR_WATCH_WRITE (1U << 3) /* watchpoint: writes */
#define TPROF_PMU_CTR_DATA_RANGE (1U << 4) /* count only data address in [addr, addr + len) (1.11) */
#define TPROF_PMU_CTR_COUNT (1U << 5)      /* counts only: perf's count at each read (1.14) */
#define TPROF_PMU_CTR_FLAGS 0x3fU

struct tprof_pmu_counter {
	__u32 kind;            /* enum tprof_pmu_event_kind */
	__u32 flags;           /* TPROF_PMU_CTR_* */
	__u64 config;          /* software/hardware/raw/tracepoint: the event */
	__u64 addr;            /* breakpoint, watchpoint, data range: the address */
	__u64 len;             /* watchpoint: 1..TPROF_PMU_MAX_WATCH_LEN; data range:
	                        * >= 1, addr + len not wrapping; otherwise 0 */
	__u64 period;          /* 0 or 1 for exact kinds; hardware/raw: K >= 1;
	                        * TPROF_PMU_CTR_COUNT: 0 */
	__u64 range_start;     /* with TPROF_PMU_CTR_RANGE */
	__u64 range_end;
	__u64 threshold;       /* 0: none; else fire when the value reaches it */
	__u64 threshold_every; /* 0: fire once; N: again at each further N */
	__u32 armed_by;        /* 0: counts from the start; r + 1: a secondary
	                        * counter, counting from when rule r first fires */
	__u32 nr_subranges;    /* 0; or K in 2..TPROF_PMU_MAX_SUBRANGES: also
	                        * count per K equal parts of the range */
	__u64 resv[1];
};

/* tprof_pmu_rule.op */
enum tprof_pmu_op {
	TPROF_PMU_OP_GT = 1,
	TPROF_PMU_OP_GE = 2,
	TPROF_PMU_OP_LT = 3,
	TPROF_PMU_OP_LE = 4,
};

/* tprof_pmu_rule.rearm: after firing (the rule went from false to true) */
enum tprof_pmu_rearm {
	TPROF_PMU_REARM_ONCE = 0,     /* never fire again */
	TPROF_PMU_REARM_ON_FALSE = 1, /* fire again once it has been false */
};

struct tprof_pmu_term {
	__u32 counter;         /* index into the program's counters */
	__u32 __pad;
	__s64 multiplier;      /* nonzero, |m| <= TPROF_PMU_MAX_MULTIPLIER */
};

struct tprof_pmu_rule {
	__u32 nr_terms;        /* 1..TPROF_PMU_MAX_TERMS */
	__u32 op;              /* enum tprof_pmu_op */
	__u32 rearm;           /* enum tprof_pmu_rearm */
	__u32 __pad;
	__s64 constant;        /* the right-hand side */
	struct tprof_pmu_term terms[TPROF_PMU_MAX_TERMS];
	__u64 resv[2];
};

/* tprof_pmu_program.scope */
enum tprof_pmu_scope {
	TPROF_PMU_SCOPE_THREAD = 1,
	TPROF_PMU_SCOPE_PROCESS = 2,
	TPROF_PMU_SCOPE_CPUS = 3,    /* every CPU (pid 0; CAP_PERFMON) */
};

struct tprof_pmu_program {
	__u32 scope;           /* in: enum tprof_pmu_scope */
	__u32 pid;             /* in: tid or pid (see scope); 0 = the caller's;
	                        * CPUS: 0 */
	__u32 flags;           /* in: 0 */
	__u32 nr_counters;     /* in: 1..TPROF_PMU_MAX_COUNTERS */
	__u32 nr_rules;        /* in: 0..TPROF_PMU_MAX_RULES */
	__s32 fd;              /* out: the program's descriptor */
	struct tprof_pmu_counter counters[TPROF_PMU_MAX_COUNTERS];
	struct tprof_pmu_rule rules[TPROF_PMU_MAX_RULES];
	__u64 resv[4];
};

/* tprof_pmu_values.exact: bit i set if counter i's value is exact */
struct tprof_pmu_values {
	__u32 nr_counters;
	__u32 exact;
	__u64 values[TPROF_PMU_MAX_COUNTERS];
	__u64 threshold_fired[TPROF_PMU_MAX_COUNTERS];
	__u64 rule_fired[TPROF_PMU_MAX_RULES];
	__u64 events_queued;   /* raised and queued */
	__u64 events_sent;     /* delivered to the monitor's socket */
	__u64 events_lost;     /* raised but not delivered */
	__u32 armed;           /* bit r: rule r fired and armed its secondary counters */
	__u32 __pad;
	__u64 hits_missed;     /* arm64: watchpoint hits no handler saw (see Counting) */
	__u64 exec_left;       /* threads of the scope that exec'd an image the
	                        * creator may not see (setuid...), not counted
	                        * from that exec on (ABI 1.12) */
	__u64 resv[1];
};

/* tprof_pmu_event.kind */
enum tprof_pmu_event_type {
	TPROF_PMU_EVENT_THRESHOLD = 1, /* index: the counter */
	TPROF_PMU_EVENT_RULE = 2,      /* index: the rule */
};

struct tprof_pmu_event {
	__u64 seq;             /* per program, from 1 */
	__u64 lost;            /* events lost since the previous delivered one */
	__u64 time_ns;         /* CLOCK_MONOTONIC */
	__u64 ip;              /* instruction address (0: withheld kernel address) */
	__u32 kind;            /* enum tprof_pmu_event_type */
	__u32 index;
	__u32 pid;             /* in the program creator's pid namespace (0: not visible there) */
	__u32 tid;
	__u32 cpu;
	__u32 nr_counters;
	__u64 values[TPROF_PMU_MAX_COUNTERS]; /* every counter at that moment */
	__u64 addr;            /* raised by a counter with a data range: the
	                        * event's data address (1.11); else 0 */
	__u64 resv[1];
};

/* TPROF_IOC_PMU_READ_SUBRANGES: a counter's per-subrange values. */
struct tprof_pmu_subranges {
	__u32 counter;         /* in: a counter with nr_subranges */
	__u32 capacity;        /* in: __u64s at values */
	__u64 values;          /* in: pointer to __u64[capacity] */
	__u32 nr_subranges;    /* out: the counter's K; min(K, capacity) written */
	__u32 __pad;
	__u64 width;           /* out: bytes per subrange (the last may be shorter) */
	__u64 resv[2];
};

#define TPROF_IOC_PMU_CREATE _IOWR(TPROF_IOC_MAGIC, 0x40, struct tprof_pmu_program)
#define TPROF_IOC_PMU_READ _IOR(TPROF_IOC_MAGIC, 0x41, struct tprof_pmu_values)
#define TPROF_IOC_PMU_READ_SUBRANGES _IOWR(TPROF_IOC_MAGIC, 0x42, struct tprof_pmu_subranges)

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
TPROF_STATIC_ASSERT(sizeof(struct tprof_self_read) == 72, "tprof_self_read size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_self_page) == 144, "tprof_self_page size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_sampling_config) == 96, "tprof_sampling_config size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_buffer_ctl) == 64, "tprof_buffer_ctl size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_buffer_release) == 16, "tprof_buffer_release size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_sampling_status) == 80, "tprof_sampling_status size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_rec_header) == 8, "tprof_rec_header size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_rec_sample) == 56, "tprof_rec_sample size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_rec_stack) == 8, "tprof_rec_stack size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_rec_comm) == 48, "tprof_rec_comm size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_rec_exit) == 24, "tprof_rec_exit size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_rec_idle) == 32, "tprof_rec_idle size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_aggregate_entry) == 32, "tprof_aggregate_entry size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_aggregate_read) == 72, "tprof_aggregate_read size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_rec_map) == 56, "tprof_rec_map size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_rec_user_stack) == 48, "tprof_rec_user_stack size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_rec_lost) == 32, "tprof_rec_lost size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_unwind_load) == 32, "tprof_unwind_load size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_unwind_range) == 32, "tprof_unwind_range size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_unwind_space) == 32, "tprof_unwind_space size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_window_add) == 72, "tprof_window_add size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_window_info) == 104, "tprof_window_info size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_window_read) == 160, "tprof_window_read size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_window_list) == 32, "tprof_window_list size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_pmu_counter) == 88, "tprof_pmu_counter size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_pmu_term) == 16, "tprof_pmu_term size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_pmu_rule) == 104, "tprof_pmu_rule size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_pmu_program) == 1592, "tprof_pmu_program size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_pmu_values) == 256, "tprof_pmu_values size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_pmu_event) == 136, "tprof_pmu_event size");
TPROF_STATIC_ASSERT(sizeof(struct tprof_pmu_subranges) == 48, "tprof_pmu_subranges size");

#endif /* _UAPI_LINUX_TPROF_H */
