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
#else
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
typedef uint8_t u8;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;
#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif
#endif

#include <linux/tprof.h>

#endif /* TPROF_CORE_ENV_H */
