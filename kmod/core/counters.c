// SPDX-License-Identifier: GPL-2.0
/* Event counters and the GET_INFO argument rules: pure logic (see core_env.h). */
#include "counters.h"

void tprof_counters_add(struct tprof_counters *dst,
			const struct tprof_counters *src)
{
	dst->context_switches += src->context_switches;
	dst->forks += src->forks;
	dst->execs += src->execs;
	dst->exits += src->exits;
	dst->frees += src->frees;
}

static bool tprof_all_zero(const void *p, size_t len)
{
	const u8 *b = (const u8 *)p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

int tprof_info_check_input(const struct tprof_info *in)
{
	/* Output fields are ignored on input; reserved ones must be zero. */
	if (in->__pad || !tprof_all_zero(in->resv, sizeof(in->resv)))
		return -EINVAL;
	if (!in->cpu_stats != !in->cpu_stats_count)
		return -EINVAL;
	return 0;
}

u32 tprof_info_cpu_stats_count(u32 requested, u32 nr_cpu_ids)
{
	return requested < nr_cpu_ids ? requested : nr_cpu_ids;
}
