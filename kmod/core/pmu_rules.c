// SPDX-License-Identifier: GPL-2.0
/* PMU programs: pure logic, see pmu_rules.h. */
#include "pmu_rules.h"

#define TPROF_S64_MAX ((s64)(~0ULL >> 1))
#define TPROF_S64_MIN (-TPROF_S64_MAX - 1)

static bool tprof_pmu_zero(const void *p, size_t n)
{
	const u8 *b = p;

	while (n--)
		if (*b++)
			return false;
	return true;
}

bool tprof_pmu_kind_is_exact(u32 kind)
{
	return kind == TPROF_PMU_EV_SOFTWARE || kind == TPROF_PMU_EV_TRACEPOINT ||
	       kind == TPROF_PMU_EV_BREAKPOINT || kind == TPROF_PMU_EV_WATCHPOINT;
}

/* Software events that are counted event by event (not the clocks). */
static bool tprof_pmu_sw_ok(u64 config)
{
	switch (config) {
	case PERF_COUNT_SW_PAGE_FAULTS:
	case PERF_COUNT_SW_CONTEXT_SWITCHES:
	case PERF_COUNT_SW_CPU_MIGRATIONS:
	case PERF_COUNT_SW_PAGE_FAULTS_MIN:
	case PERF_COUNT_SW_PAGE_FAULTS_MAJ:
	case PERF_COUNT_SW_ALIGNMENT_FAULTS:
	case PERF_COUNT_SW_EMULATION_FAULTS:
		return true;
	default:
		return false;
	}
}

bool tprof_pmu_kind_has_data_addr(u32 kind, u64 config)
{
	if (kind != TPROF_PMU_EV_SOFTWARE)
		return false;
	/* Their perf sample addr is the faulting address. */
	return config == PERF_COUNT_SW_PAGE_FAULTS ||
	       config == PERF_COUNT_SW_PAGE_FAULTS_MIN ||
	       config == PERF_COUNT_SW_PAGE_FAULTS_MAJ;
}

bool tprof_pmu_in_data_range(const struct tprof_pmu_counter *c, u64 addr)
{
	/* One compare: the range does not wrap (checked at creation). */
	return addr - c->addr < c->len;
}

static int tprof_pmu_counter_check(const struct tprof_pmu_counter *c,
				   u32 nr_rules)
{
	bool watch = c->kind == TPROF_PMU_EV_WATCHPOINT;
	bool data = c->flags & TPROF_PMU_CTR_DATA_RANGE;
	bool count = c->flags & TPROF_PMU_CTR_COUNT;
	u32 watch_flags = c->flags & (TPROF_PMU_CTR_WATCH_READ | TPROF_PMU_CTR_WATCH_WRITE);

	if (c->flags & ~TPROF_PMU_CTR_FLAGS || !tprof_pmu_zero(c->resv, sizeof(c->resv)))
		return -EINVAL;
	if (count) {
		/* perf's count, read: nothing of ours looks at single events. */
		if (c->kind == TPROF_PMU_EV_BREAKPOINT || watch || c->period ||
		    c->flags & (TPROF_PMU_CTR_RANGE | TPROF_PMU_CTR_DATA_RANGE) ||
		    c->threshold || c->armed_by || c->nr_subranges)
			return -EINVAL;
	}
	switch (c->kind) {
	case TPROF_PMU_EV_SOFTWARE:
		/* The clocks sample from a timer: counted, never per event. */
		if (!tprof_pmu_sw_ok(c->config) &&
		    !(count && (c->config == PERF_COUNT_SW_TASK_CLOCK ||
				c->config == PERF_COUNT_SW_CPU_CLOCK)))
			return -EINVAL;
		break;
	case TPROF_PMU_EV_HARDWARE:
		if (c->config >= PERF_COUNT_HW_MAX)
			return -EINVAL;
		break;
	case TPROF_PMU_EV_RAW:
	case TPROF_PMU_EV_TRACEPOINT:
		break;
	case TPROF_PMU_EV_BREAKPOINT:
		if (c->config || c->len || !c->addr)
			return -EINVAL;
		break;
	case TPROF_PMU_EV_WATCHPOINT:
		if (c->config || !c->addr || !watch_flags)
			return -EINVAL;
		if (tprof_pmu_watch_pieces(c->addr, c->len,
					   TPROF_PMU_WATCH_DWORD_MASKS, NULL) < 0)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (data) {
		/* Not empty, not wrapping; an end at 2^64 is fine. */
		if (!tprof_pmu_kind_has_data_addr(c->kind, c->config) ||
		    c->len == 0 || c->addr + c->len - 1 < c->addr)
			return -EINVAL;
	} else {
		if (!watch && (watch_flags || c->len))
			return -EINVAL;
		if (c->kind != TPROF_PMU_EV_BREAKPOINT && !watch && c->addr)
			return -EINVAL;
	}
	if (data && watch_flags)
		return -EINVAL;
	/* Exact kinds are seen event by event; hardware ones every K. */
	if (!count && (tprof_pmu_kind_is_exact(c->kind) ? c->period > 1 : c->period == 0))
		return -EINVAL;
	if (c->flags & TPROF_PMU_CTR_RANGE) {
		if (c->range_start >= c->range_end)
			return -EINVAL;
	} else if (c->range_start || c->range_end) {
		return -EINVAL;
	}
	if (!c->threshold && c->threshold_every)
		return -EINVAL;
	if (c->armed_by > nr_rules)
		return -EINVAL;
	if (c->nr_subranges) {
		if (c->nr_subranges < 2 || c->nr_subranges > TPROF_PMU_MAX_SUBRANGES ||
		    !(c->flags & (TPROF_PMU_CTR_RANGE | TPROF_PMU_CTR_DATA_RANGE)) ||
		    tprof_pmu_subrange_len(c) < c->nr_subranges)
			return -EINVAL;
	}
	return 0;
}

int tprof_pmu_watch_pieces(u64 addr, u64 len, bool dword_masks,
			   struct tprof_pmu_piece *out)
{
	u64 pos = addr, end = addr + len;
	int n = 0;

	if (len == 0 || len > TPROF_PMU_MAX_WATCH_LEN || end - 1 < addr)
		return -EINVAL;
	while (pos != end) {
		u64 size;

		if (dword_masks) {
			size = ((pos | 7) + 1) - pos;	/* to the doubleword's end */
			if (size > end - pos)
				size = end - pos;
		} else {
			/* The largest aligned power of two that fits: fewest pieces. */
			size = 8;
			while (size > 1 && ((pos & (size - 1)) || size > end - pos))
				size >>= 1;
		}
		if (n == TPROF_PMU_MAX_WATCH_PIECES)
			return -EINVAL;
		if (out) {
			out[n].addr = pos;
			out[n].len = size;
		}
		n++;
		pos += size;
	}
	return n;
}

u64 tprof_pmu_subrange_base(const struct tprof_pmu_counter *c)
{
	return c->flags & TPROF_PMU_CTR_DATA_RANGE ? c->addr : c->range_start;
}

u64 tprof_pmu_subrange_len(const struct tprof_pmu_counter *c)
{
	return c->flags & TPROF_PMU_CTR_DATA_RANGE ? c->len :
		c->range_end - c->range_start;
}

u64 tprof_pmu_subrange_width(const struct tprof_pmu_counter *c)
{
	u64 len = tprof_pmu_subrange_len(c);

	return len / c->nr_subranges + (len % c->nr_subranges != 0);
}

static int tprof_pmu_rule_check(const struct tprof_pmu_rule *r, u32 nr_counters)
{
	u32 i;

	if (r->nr_terms < 1 || r->nr_terms > TPROF_PMU_MAX_TERMS)
		return -EINVAL;
	if (r->op < TPROF_PMU_OP_GT || r->op > TPROF_PMU_OP_LE)
		return -EINVAL;
	if (r->rearm > TPROF_PMU_REARM_ON_FALSE || r->__pad ||
	    !tprof_pmu_zero(r->resv, sizeof(r->resv)))
		return -EINVAL;
	for (i = 0; i < TPROF_PMU_MAX_TERMS; i++) {
		const struct tprof_pmu_term *t = &r->terms[i];

		if (i >= r->nr_terms) {
			if (!tprof_pmu_zero(t, sizeof(*t)))
				return -EINVAL;
			continue;
		}
		if (t->counter >= nr_counters || t->__pad || t->multiplier == 0 ||
		    t->multiplier > TPROF_PMU_MAX_MULTIPLIER ||
		    t->multiplier < -TPROF_PMU_MAX_MULTIPLIER)
			return -EINVAL;
	}
	return 0;
}

int tprof_pmu_program_check(const struct tprof_pmu_program *p)
{
	u32 i;

	if (p->scope != TPROF_PMU_SCOPE_THREAD && p->scope != TPROF_PMU_SCOPE_PROCESS &&
	    p->scope != TPROF_PMU_SCOPE_CPUS)
		return -EINVAL;
	if (p->scope == TPROF_PMU_SCOPE_CPUS && p->pid)
		return -EINVAL;	/* every CPU: no target */
	if (p->flags || !tprof_pmu_zero(p->resv, sizeof(p->resv)))
		return -EINVAL;
	if (p->nr_counters < 1 || p->nr_counters > TPROF_PMU_MAX_COUNTERS ||
	    p->nr_rules > TPROF_PMU_MAX_RULES)
		return -EINVAL;
	for (i = 0; i < TPROF_PMU_MAX_COUNTERS; i++) {
		if (i >= p->nr_counters) {
			if (!tprof_pmu_zero(&p->counters[i], sizeof(p->counters[i])))
				return -EINVAL;
		} else if (tprof_pmu_counter_check(&p->counters[i], p->nr_rules)) {
			return -EINVAL;
		}
	}
	for (i = 0; i < TPROF_PMU_MAX_RULES; i++) {
		if (i >= p->nr_rules) {
			if (!tprof_pmu_zero(&p->rules[i], sizeof(p->rules[i])))
				return -EINVAL;
		} else if (tprof_pmu_rule_check(&p->rules[i], p->nr_counters)) {
			return -EINVAL;
		}
	}
	/*
	 * A counts-only counter is read, never seen per event: no rule may
	 * name it. In scope CPUS (1.15) its per-CPU counts are summed, those
	 * of CPUs gone offline included (cpu_events.h).
	 */
	for (i = 0; i < p->nr_counters; i++) {
		u32 r;

		if (!(p->counters[i].flags & TPROF_PMU_CTR_COUNT))
			continue;
		for (r = 0; r < p->nr_rules; r++)
			if (tprof_pmu_rule_counters(&p->rules[r]) & (1U << i))
				return -EINVAL;
	}
	return 0;
}

static s64 tprof_pmu_sat_add(s64 a, s64 b)
{
	s64 sum;

	if (__builtin_add_overflow(a, b, &sum))
		return b > 0 ? TPROF_S64_MAX : TPROF_S64_MIN;
	return sum;
}

bool tprof_pmu_rule_holds(const struct tprof_pmu_rule *r, const u64 *values)
{
	s64 sum = 0, term;
	u32 i;

	for (i = 0; i < r->nr_terms && i < TPROF_PMU_MAX_TERMS; i++) {
		const struct tprof_pmu_term *t = &r->terms[i];
		u64 v = values[t->counter % TPROF_PMU_MAX_COUNTERS];
		s64 sv = v > (u64)TPROF_S64_MAX ? TPROF_S64_MAX : (s64)v;

		if (__builtin_mul_overflow(sv, t->multiplier, &term))
			term = t->multiplier > 0 ? TPROF_S64_MAX : TPROF_S64_MIN;
		sum = tprof_pmu_sat_add(sum, term);
	}
	switch (r->op) {
	case TPROF_PMU_OP_GT:
		return sum > r->constant;
	case TPROF_PMU_OP_GE:
		return sum >= r->constant;
	case TPROF_PMU_OP_LT:
		return sum < r->constant;
	case TPROF_PMU_OP_LE:
		return sum <= r->constant;
	}
	return false;
}

u32 tprof_pmu_rule_counters(const struct tprof_pmu_rule *r)
{
	u32 mask = 0, i;

	for (i = 0; i < r->nr_terms && i < TPROF_PMU_MAX_TERMS; i++)
		mask |= 1U << (r->terms[i].counter % TPROF_PMU_MAX_COUNTERS);
	return mask;
}
