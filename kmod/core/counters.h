/* SPDX-License-Identifier: GPL-2.0 */
/* Event counters and the GET_INFO argument rules: pure logic. */
#ifndef TPROF_CORE_COUNTERS_H
#define TPROF_CORE_COUNTERS_H

#include "core_env.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dst += src, field by field; reserved fields stay untouched. */
void tprof_counters_add(struct tprof_counters *dst,
			const struct tprof_counters *src);

/*
 * Checks a GET_INFO argument as copied from userspace: 0, or -EINVAL for
 * nonzero reserved fields, a count without a pointer or a pointer without a
 * count. Output fields are ignored, so a struct can be reused.
 */
int tprof_info_check_input(const struct tprof_info *in);

/* Entries GET_INFO writes for a caller array of @requested entries. */
u32 tprof_info_cpu_stats_count(u32 requested, u32 nr_cpu_ids);

#ifdef __cplusplus
}
#endif

#endif /* TPROF_CORE_COUNTERS_H */
