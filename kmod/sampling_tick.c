// SPDX-License-Identifier: GPL-2.0
/*
 * Tick sampling (TPROF_SAMPLE_ON_TICK): each sample is taken in the
 * scheduler tick the kernel already runs on every busy CPU, at HZ, so it
 * costs no interrupt and no timer of its own (perf's cpu-clock is an
 * hrtimer per CPU, and its interrupt is most of a sample's cost).
 *
 * The tick is an hrtimer whose function is tick_sched_timer (named
 * tick_nohz_handler on newer kernels), found once by name. A probe on the
 * hrtimer_expire_entry tracepoint runs before every hrtimer's function in
 * hard IRQ; only the tick's goes further, and get_irq_regs() are the
 * interrupted registers, the ones the tick's own time accounting reads.
 * The probe is attached only while a tick session runs.
 *
 * An idle CPU stops its tick (nohz): at its first tick after, the ticks it
 * skipped are written as one TPROF_REC_IDLE, bounded by the idle time the
 * kernel accounted meanwhile (a tick stopped on a busy nohz_full CPU is
 * not idle). Where highres timers are off, the tick is no hrtimer: start
 * refuses (EOPNOTSUPP) and the recorder falls back to the perf clock.
 */
#include <linux/hrtimer.h>
#include <linux/kallsyms.h>
#include <linux/kernel_stat.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/tick.h>
#include <linux/tracepoint.h>
#include <asm/irq_regs.h>
#include <trace/events/timer.h>
#include "compat.h"
#include "sampling.h"

static bool tick_sampling = true;
module_param(tick_sampling, bool, 0644);
MODULE_PARM_DESC(tick_sampling,
		 "offer sampling in the scheduler tick (0: refuse it, EOPNOTSUPP, as a kernel without the hook)");

/* Found once, under tprof_sampling_mutex; read by the probe. */
static void *tprof_tick_fn;
static struct tracepoint *tprof_tick_tp;

static void tprof_tick_match(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "hrtimer_expire_entry"))
		tprof_tick_tp = tp;
}

/*
 * A kernel function's entry by name (kallsyms_lookup_name is not exported):
 * a kprobe resolves it. The probe may sit past the entry (x86 IBT's endbr
 * is skipped), so the symbol's offset is taken off again.
 */
static void *tprof_function_entry(const char *name)
{
	struct kprobe kp = { .symbol_name = name };
	char sym[KSYM_SYMBOL_LEN];
	size_t len = strlen(name);
	unsigned long off;
	void *addr;

	if (!IS_ENABLED(CONFIG_KPROBES) || register_kprobe(&kp))
		return NULL;
	addr = kp.addr;
	unregister_kprobe(&kp);
	sprint_symbol(sym, (unsigned long)addr);
	if (strncmp(sym, name, len) || sym[len] != '+' ||
	    sscanf(sym + len, "+%lx", &off) != 1)
		return NULL;
	return (u8 *)addr - off;
}

/*
 * System-wide: the ticks this CPU skipped since its previous one, written
 * as a TPROF_REC_IDLE when some were idle time. IRQs off. The kernel's
 * idle and iowait times are read only where ticks were skipped (and at the
 * first tick): their growth since the previous such read bounds the idle
 * ticks (it may include idle time whose ticks were taken, so it bounds
 * from above; a busy nohz_full CPU's stays flat).
 */
static void tprof_tick_idle(struct tprof_session *s, unsigned int cpu)
{
	struct tprof_sampling_cpu *pc = this_cpu_ptr(s->cpus);
	u64 now = local_clock(), last = pc->tick_last_ns;
	u64 idle_us, iowait_us, skipped, slept, iowait = 0;
	struct tprof_rec_idle *rec;

	pc->tick_last_ns = now;
	if (last && now - last < 3 * TICK_NSEC / 2)
		return;		/* the usual tick: none skipped */
	idle_us = get_cpu_idle_time_us(cpu, NULL);
	iowait_us = get_cpu_iowait_time_us(cpu, NULL);
	if (!last) {
		pc->tick_idle_us = idle_us;
		pc->tick_iowait_us = iowait_us;
		return;
	}
	skipped = div64_u64(now - last + TICK_NSEC / 2, TICK_NSEC) - 1;
	if (idle_us != (u64)-1 && iowait_us != (u64)-1) {
		/* Only what the kernel counted as idle: not a busy nohz_full CPU. */
		iowait = (iowait_us - pc->tick_iowait_us) * NSEC_PER_USEC;
		slept = (idle_us - pc->tick_idle_us) * NSEC_PER_USEC + iowait;
		skipped = min(skipped, div64_u64(slept + TICK_NSEC / 2, TICK_NSEC));
		iowait = min(skipped, div64_u64(iowait + TICK_NSEC / 2, TICK_NSEC));
	}
	pc->tick_idle_us = idle_us;
	pc->tick_iowait_us = iowait_us;
	if (!skipped)
		return;
	rec = tprof_record_begin(s, &pc, sizeof(*rec), false);
	if (!rec)
		return;
	rec->hdr.type = TPROF_REC_IDLE;
	rec->hdr.size = sizeof(*rec);
	rec->time_ns = now;
	rec->cpu = cpu;
	rec->idle_ticks = min_t(u64, skipped, U32_MAX);
	rec->iowait_ticks = min_t(u64, iowait, U32_MAX);
	tprof_record_end(pc);
}

static void tprof_tick_probe(void *data, TPROF_HRTIMER_EXPIRE_ENTRY_PROTO)
{
	struct task_struct *p = current;
	struct tprof_session *s;
	struct pt_regs *regs;
	unsigned long flags;
	unsigned int cpu;

	if ((void *)ACCESS_PRIVATE(timer, function) != READ_ONCE(tprof_tick_fn))
		return;
	s = tprof_live_session();
	regs = get_irq_regs();
	if (!s || s->config.event_type != TPROF_SAMPLE_ON_TICK || !regs)
		return;
	cpu = smp_processor_id();
	/* Not before this CPU has its halves, nor after it published them. */
	if (!READ_ONCE(tprof_ctl(s, cpu)->online))
		return;
	if (s->sample_cpus && !cpumask_test_cpu(cpu, s->sample_cpus))
		return;
	if (!s->target) {
		local_irq_save(flags);
		tprof_tick_idle(s, cpu);
		local_irq_restore(flags);
	} else if (is_idle_task(p) || !tprof_session_follows(s, p)) {
		return;
	}
	if (s->exclude_kernel && !user_mode(regs))
		return;
	tprof_sample_regs(s, regs);
}

static inline void tprof_tick_check_probe_type(void)
{
	check_trace_callback_type_hrtimer_expire_entry(tprof_tick_probe);
}

int tprof_tick_start(struct tprof_session *s)
{
	static const char *const names[] = { "tick_sched_timer", "tick_nohz_handler" };
	size_t i;
	int ret;

	lockdep_assert_held(&tprof_sampling_mutex);
	(void)tprof_tick_check_probe_type;
	if (!READ_ONCE(tick_sampling))
		return -EOPNOTSUPP;
	/*
	 * Low resolution (highres=off, or no CONFIG_HIGH_RES_TIMERS): the tick
	 * is no hrtimer, the probe would see none. clock_getres() reads the same.
	 */
	if (hrtimer_resolution != 1)
		return -EOPNOTSUPP;
	if (!tprof_tick_tp)
		for_each_kernel_tracepoint(tprof_tick_match, NULL);
	for (i = 0; !tprof_tick_fn && i < ARRAY_SIZE(names); i++)
		WRITE_ONCE(tprof_tick_fn, tprof_function_entry(names[i]));
	if (!tprof_tick_tp || !tprof_tick_fn)
		return -EOPNOTSUPP;
	ret = tracepoint_probe_register(tprof_tick_tp, tprof_tick_probe, NULL);
	if (ret)
		return ret == -ENOMEM ? ret : -EOPNOTSUPP;
	s->tick_on = true;
	return 0;
}

void tprof_tick_stop(struct tprof_session *s)
{
	if (!s->tick_on)
		return;
	tracepoint_probe_unregister(tprof_tick_tp, tprof_tick_probe, NULL);
	tracepoint_synchronize_unregister();
	s->tick_on = false;
}
