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

/*
 * A counter's subranges cut its data range if it has one, else its
 * instruction range: where they start, how many bytes they cover, and
 * the bytes per subrange of a counter with nr_subranges (ceil(len / K)).
 */
u64 tprof_pmu_subrange_base(const struct tprof_pmu_counter *c);
u64 tprof_pmu_subrange_len(const struct tprof_pmu_counter *c);
u64 tprof_pmu_subrange_width(const struct tprof_pmu_counter *c);

/*
 * Kinds whose perf events carry a data address (perf's sample addr), so
 * that a data range (TPROF_PMU_CTR_DATA_RANGE) may qualify them: the page
 * fault software events (the faulting address).
 */
bool tprof_pmu_kind_has_data_addr(u32 kind, u64 config);

/* Whether @addr is in counter @c's (checked) data range [addr, addr + len). */
bool tprof_pmu_in_data_range(const struct tprof_pmu_counter *c, u64 addr);

/*
 * How a watchpoint's range is cut into pieces of one debug register each:
 * x86 watches 1, 2, 4 or 8 naturally aligned bytes; arm64 any bytes of
 * one 8-byte-aligned doubleword (its byte-address-select mask).
 */
#if (defined(__KERNEL__) && defined(CONFIG_ARM64)) || \
	(!defined(__KERNEL__) && defined(__aarch64__))
#define TPROF_PMU_WATCH_DWORD_MASKS true
#else
#define TPROF_PMU_WATCH_DWORD_MASKS false
#endif

struct tprof_pmu_piece {
	u64 addr, len;
};

/*
 * Cuts [addr, addr + len) into the fewest pieces: naturally aligned 1, 2,
 * 4 or 8 bytes, or with @dword_masks one per doubleword it touches. Fills
 * up to TPROF_PMU_MAX_WATCH_PIECES of @out (may be NULL) and returns
 * their number, or -EINVAL: len 0 or above TPROF_PMU_MAX_WATCH_LEN, a
 * range that wraps, or one of more than TPROF_PMU_MAX_WATCH_PIECES.
 */
int tprof_pmu_watch_pieces(u64 addr, u64 len, bool dword_masks,
			   struct tprof_pmu_piece *out);

/* Bit i set for each counter rule @r reads. */
u32 tprof_pmu_rule_counters(const struct tprof_pmu_rule *r);

#ifdef __cplusplus
}
#endif

#endif /* TPROF_CORE_PMU_RULES_H */
