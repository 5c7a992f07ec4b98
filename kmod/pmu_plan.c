// SPDX-License-Identifier: GPL-2.0
/*
 * A PMU program's plan (pmu_plan.h): per counter its mechanism, pieces
 * and perf events; for the program its debug registers and what its
 * addresses ask of the caller.
 *
 * Why there are several mechanisms: arm64 steps over a breakpoint or
 * watchpoint only when perf's default overflow handler owns an event that
 * matched the hit (uses_default_overflow_handler() in
 * arch/arm64/kernel/hw_breakpoint.c); with only ours the task would trap
 * on the same instruction forever. There such a counter is, by default, a
 * counting perf event with the default handler ("counts only"): perf
 * counts every hit exactly and the value is read from perf when the
 * program is read, but no handler of ours sees a hit. What needs the hits
 * is "stepped" instead (pmu_create.c). An execution breakpoint may be a
 * uprobe or a kprobe instead of either (pmu_probe.c).
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/kconfig.h>
#include <linux/string.h>
#include "arch/debug_regs.h"
#include "pmu_plan.h"

static bool tprof_pmu_debug_reg(const struct tprof_pmu_counter *c)
{
	return TPROF_ARCH_HIT_NEEDS_STEP &&
	       (c->kind == TPROF_PMU_EV_BREAKPOINT ||
		c->kind == TPROF_PMU_EV_WATCHPOINT);
}

/*
 * arm64: an execution breakpoint at a kernel address is a kprobe, in any
 * scope (unless it counts user mode only: then perf counts, nothing). One
 * at a user address of a thread or process becomes a uprobe when the
 * address is in a file mapping (pmu_probe.c); every CPU would need a
 * uprobe in every process: those only count.
 */
static bool tprof_pmu_may_kprobe(const struct tprof_pmu_counter *k)
{
	return TPROF_ARCH_HIT_NEEDS_STEP && k->kind == TPROF_PMU_EV_BREAKPOINT &&
	       !tprof_pmu_user_address(k->addr, sizeof(long)) &&
	       !(k->flags & TPROF_PMU_CTR_USER_ONLY);
}

/*
 * A uprobe writes a breakpoint into the file's pages in every process
 * that maps it, setuid images included: perf lets only CAP_PERFMON (or
 * CAP_SYS_ADMIN) register one (perf_uprobe_init()). Anyone else's user
 * breakpoint is a debug register of the target's threads, which perf
 * itself removes at an exec into a setuid image. Asked in the caller's
 * context, without an audit record for a "no".
 */
static bool tprof_pmu_caller_may_uprobe(void)
{
	return ns_capable_noaudit(&init_user_ns, CAP_PERFMON) ||
	       ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN);
}

static bool tprof_pmu_may_uprobe(const struct tprof_pmu_program *c,
				 const struct tprof_pmu_counter *k)
{
	return TPROF_ARCH_HIT_NEEDS_STEP && k->kind == TPROF_PMU_EV_BREAKPOINT &&
	       c->scope != TPROF_PMU_SCOPE_CPUS &&
	       tprof_pmu_user_address(k->addr, sizeof(long)) &&
	       tprof_pmu_caller_may_uprobe();
}

/*
 * What needs a per-hit callback: a threshold, a rule reading it, a range,
 * arming; and in scope CPUS any counter but a counts-only one (an arm64
 * debug register there is stepped, as it always was).
 */
static bool tprof_pmu_needs_hits(const struct tprof_pmu_program *c, u32 i)
{
	const struct tprof_pmu_counter *k = &c->counters[i];
	u32 r;

	if (c->scope == TPROF_PMU_SCOPE_CPUS || k->threshold || k->armed_by ||
	    (k->flags & (TPROF_PMU_CTR_RANGE | TPROF_PMU_CTR_DATA_RANGE)))
		return true;
	for (r = 0; r < c->nr_rules; r++)
		if (tprof_pmu_rule_counters(&c->rules[r]) & (1U << i))
			return true;
	return false;
}

/* The perf-event mechanism of counter @i (COUNT excludes debug registers). */
static enum tprof_pmu_mechanism
tprof_pmu_events_mech(const struct tprof_pmu_program *c, u32 i)
{
	const struct tprof_pmu_counter *k = &c->counters[i];

	if (k->flags & TPROF_PMU_CTR_COUNT)
		return TPROF_PMU_MECH_COUNTS_ONLY;	/* checked: nothing needs its hits */
	if (!tprof_pmu_debug_reg(k))
		return TPROF_PMU_MECH_HANDLER;
	return tprof_pmu_needs_hits(c, i) ? TPROF_PMU_MECH_STEPPED :
					    TPROF_PMU_MECH_COUNTS_ONLY;
}

/*
 * A breakpoint or watchpoint at a kernel address: perf wants CAP_SYS_ADMIN
 * for it (hw_breakpoint_parse(): trap recursion in the kernel's own trap
 * path), whatever the scope.
 */
static bool tprof_pmu_kernel_debug_reg(const struct tprof_pmu_counter *k)
{
	if (k->kind == TPROF_PMU_EV_BREAKPOINT)
		return !tprof_pmu_user_address(k->addr, sizeof(long));
	return k->kind == TPROF_PMU_EV_WATCHPOINT &&
	       !tprof_pmu_user_address(k->addr, k->len);
}

/* Kernel addresses (breakpoints, watchpoints, ranges, data ranges). */
static bool tprof_pmu_kernel_address(const struct tprof_pmu_counter *k)
{
	return tprof_pmu_kernel_debug_reg(k) ||
	       (k->flags & TPROF_PMU_CTR_DATA_RANGE &&
		!tprof_pmu_user_address(k->addr, k->len)) ||
	       (k->flags & TPROF_PMU_CTR_RANGE &&
		!tprof_pmu_user_address(k->range_start,
					k->range_end - k->range_start));
}

static void tprof_pmu_plan_counter(const struct tprof_pmu_program *c, u32 i,
				   struct tprof_pmu_plan *plan)
{
	const struct tprof_pmu_counter *k = &c->counters[i];
	struct tprof_pmu_ctr_plan *cp = &plan->ctr[i];
	bool probe;
	int n = 1;

	cp->events_mech = tprof_pmu_events_mech(c, i);
	if (tprof_pmu_may_kprobe(k))
		cp->mech = TPROF_PMU_MECH_KPROBE;
	else if (tprof_pmu_may_uprobe(c, k))
		cp->mech = TPROF_PMU_MECH_UPROBE;
	else
		cp->mech = cp->events_mech;
	probe = cp->mech == TPROF_PMU_MECH_KPROBE || cp->mech == TPROF_PMU_MECH_UPROBE;
	/* arm64: perf's default handler, its own or its stepper's. */
	cp->claims_address = TPROF_ARCH_HIT_NEEDS_STEP &&
			     k->kind == TPROF_PMU_EV_BREAKPOINT &&
			     tprof_pmu_user_address(k->addr, sizeof(long));

	if (k->kind == TPROF_PMU_EV_WATCHPOINT)
		n = tprof_pmu_watch_pieces(k->addr, k->len,
					   TPROF_PMU_WATCH_DWORD_MASKS, cp->pieces);
	cp->nr_pieces = n > 0 ? n : 1;	/* checked by tprof_pmu_program_check() */
	/*
	 * Registers: 3 per stepped watchpoint piece (guard, ours, stepper),
	 * 2 per stepped breakpoint (pmu_create.c).
	 */
	if (cp->events_mech == TPROF_PMU_MECH_STEPPED)
		cp->per_piece = k->kind == TPROF_PMU_EV_WATCHPOINT ? 3 : 2;
	else
		cp->per_piece = 1;
	plan->events_per_thread += cp->nr_pieces * cp->per_piece;

	/*
	 * A breakpoint that may become a u/kprobe takes none; if it falls
	 * back, perf decides.
	 */
	if (k->kind == TPROF_PMU_EV_WATCHPOINT)
		plan->data_slots += cp->nr_pieces * cp->per_piece;
	else if (k->kind == TPROF_PMU_EV_BREAKPOINT &&
		 IS_ENABLED(CONFIG_HAVE_MIXED_BREAKPOINTS_REGS))
		plan->data_slots++;
	else if (k->kind == TPROF_PMU_EV_BREAKPOINT && !probe)
		plan->exec_slots += cp->nr_pieces * cp->per_piece;

	plan->kernel_addresses |= tprof_pmu_kernel_address(k);
	plan->kernel_debug_regs |= tprof_pmu_kernel_debug_reg(k);
	/*
	 * arm64 instructions are 4 bytes, aligned. A debug register elsewhere
	 * would be aligned down by hw_breakpoint_arch_parse() with a
	 * byte-select the breakpoint handler never matches, and the task
	 * would die with SIGILL (found by the fuzzer in scope CPUS); kprobes
	 * and uprobes refuse it anyway.
	 */
	if (k->kind == TPROF_PMU_EV_BREAKPOINT &&
	    (k->addr & (TPROF_ARCH_INSN_ALIGN - 1)))
		plan->misaligned_insn = true;
}

void tprof_pmu_plan_make(const struct tprof_pmu_program *c,
			 struct tprof_pmu_plan *plan)
{
	u32 i;

	memset(plan, 0, sizeof(*plan));
	for (i = 0; i < c->nr_counters; i++)
		tprof_pmu_plan_counter(c, i, plan);
}
