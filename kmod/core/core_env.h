/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The environment of kmod/core/: pure logic with no allocation, locks,
 * per-CPU data or printk, compiled into tprof.ko, into the KUnit test module
 * (ktests/) and, with libc, into the host unit tests (tests/unit/) under
 * ASan/UBSan. Only the names defined here may be used by core code.
 */
#ifndef TPROF_CORE_ENV_H
#define TPROF_CORE_ENV_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/compiler.h>
#include <linux/cache.h>
#include <asm/barrier.h>
#include <uapi/linux/perf_event.h>
/* Starts a member on a cache line of its own (see thread_index.h). */
#define TPROF_CACHELINE_ALIGNED ____cacheline_aligned_in_smp
#else
#include <linux/perf_event.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <linux/types.h>
/* The kernel's names, on the same __uXX types the uapi header uses. */
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;
#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif
/* Memory-ordering primitives with the kernel's meaning. */
#define smp_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define smp_load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define WRITE_ONCE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define READ_ONCE(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define TPROF_CACHELINE_ALIGNED __attribute__((aligned(64)))
#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#endif
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#endif

#include <linux/tprof.h>

#endif /* TPROF_CORE_ENV_H */
