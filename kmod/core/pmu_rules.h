/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PMU programs: validation of TPROF_IOC_PMU_CREATE's argument and the
 * evaluation of arithmetic rules (pure logic; the permission checks and
 * the perf events are kmod/pmu.c's).
 */
#ifndef TPROF_CORE_PMU_RULES_H
#define TPROF_CORE_PMU_RULES_H

#include "core_env.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * 0, or -EINVAL for anything the UAPI lists under EINVAL for
 * TPROF_IOC_PMU_CREATE (counters, ranges, watchpoints, rules, reserved
 * fields, unused entries). Output fields (fd) are ignored.
 */
int tprof_pmu_program_check(const struct tprof_pmu_program *p);

/* Counted at period 1, so every event is seen (value, range, rules exact). */
bool tprof_pmu_kind_is_exact(u32 kind);

/*
 * Whether rule @r holds for the counter values @values. The sum is taken
 * in 64 bits with saturation: a term or sum beyond the s64 range is
 * S64_MAX or S64_MIN, so a rule never flips on wrap-around.
 */
bool tprof_pmu_rule_holds(const struct tprof_pmu_rule *r, const u64 *values);

/* Bytes per subrange of a counter with nr_subranges (ceil(len / K)). */
u64 tprof_pmu_subrange_width(const struct tprof_pmu_counter *c);

/* Bit i set for each counter rule @r reads. */
u32 tprof_pmu_rule_counters(const struct tprof_pmu_rule *r);

#ifdef __cplusplus
}
#endif

#endif /* TPROF_CORE_PMU_RULES_H */
