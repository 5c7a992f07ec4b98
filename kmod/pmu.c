// SPDX-License-Identifier: GPL-2.0
/*
 * PMU programs: up to 8 counters of one thread, one process
 * or every CPU (through cpu_events.c), each a perf event with our
 * overflow handler (a watchpoint one per piece of its data range, all
 * with the same counter as context: the value is their sum). Exact kinds (software
 * events, tracepoints, breakpoints, watchpoints) run at period 1, so the
 * handler sees every event; hardware ones every K events. On arm64 an
 * execution breakpoint at a user address of a file mapping is a uprobe
 * and one at a kernel address a kprobe (pmu_probe.c), whose handlers take
 * the same per-hit path; other breakpoints and watchpoints are counting
 * events with perf's own handler there ("counts only": see
 * tprof_pmu_debug_reg()) unless the program needs their hits: then each
 * event of ours has steppers (tprof_pmu_stepped()). The handler checks the
 * counter's instruction range and data range (a page fault's address),
 * adds to its value, then checks its threshold and the rules that read it,
 * all with atomics: it may run in NMI, IRQ, or with any lock of the code
 * it interrupts held. An event goes into the program's lock-free queue and
 * an irq_work kicks the send work (pmu_netlink.c), which sends it to the
 * monitor's socket.
 *
 * The program belongs to the descriptor TPROF_IOC_PMU_CREATE returns;
 * closing it releases the perf events (and their inherited copies), then
 * waits for the irq_work and the send work. The ioctls' side (PMU_CREATE's
 * copy and structural check, the descriptor's number, the descriptor's
 * READ and READ_SUBRANGES) is pmu_ioctl.c.
 */
#include <linux/anon_inodes.h>
#include <linux/capability.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/hw_breakpoint.h>
#include <linux/module.h>
#include <linux/perf_event.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/ptrace.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include "arch/debug_regs.h"
#include "pmu.h"
#include "admission.h"
#include "compat.h"
#include "core/pmu_rules.h"

/*
 * perf events of one program: threads of the target at creation x
 * counters (E2BIG above). With the descriptor limit this bounds what one
 * user makes the kernel hold, as perf's one event per descriptor does.
 */
#define TPROF_PMU_MAX_EVENTS 4096
#define TPROF_PMU_MAX_THREADS TPROF_PMU_MAX_EVENTS

DEFINE_MUTEX(tprof_pmu_programs_lock);
LIST_HEAD(tprof_pmu_programs);

/*
 * One program at a time checks its threads' debug registers and takes
 * them (tprof_pmu_check_task_slots()): two programs cannot both fit in
 * the last ones.
 */
static DEFINE_MUTEX(tprof_pmu_slots_lock);
/* Debug registers scope-CPUS programs hold on every CPU; under that lock. */
static u32 tprof_pmu_cpu_slots_data, tprof_pmu_cpu_slots_exec;

static const struct file_operations tprof_pmu_fops;

struct tprof_pmu_prog *tprof_pmu_prog_from_file(struct file *file)
{
	return file->f_op == &tprof_pmu_fops ? file->private_data : NULL;
}

/* ---- The event queue ---------------------------------------------------- */

/* Any context, NMI included: a slot, or NULL when the queue is full. */
static struct tprof_pmu_event *tprof_pmu_reserve(struct tprof_pmu_prog *p,
						 struct tprof_pmu_cell **cellp)
{
	long pos = atomic_long_read(&p->enqueue_pos);

	for (;;) {
		struct tprof_pmu_cell *cell = &p->cells[pos & (TPROF_PMU_QUEUE_LEN - 1)];
		long dif = (long)smp_load_acquire(&cell->seq) - pos;

		if (dif == 0) {
			if (atomic_long_try_cmpxchg(&p->enqueue_pos, &pos, pos + 1)) {
				*cellp = cell;
				return &cell->ev;
			}
		} else if (dif < 0) {
			return NULL;	/* full: the consumer has not freed it */
		} else {
			pos = atomic_long_read(&p->enqueue_pos);
		}
	}
}

static void tprof_pmu_publish(struct tprof_pmu_cell *cell)
{
	/* The cell's position + 1: ready for the consumer. */
	smp_store_release(&cell->seq, cell->seq + 1);
}

/* The send work only (one consumer). */
bool tprof_pmu_pop(struct tprof_pmu_prog *p, struct tprof_pmu_event *ev)
{
	unsigned long pos = p->dequeue_pos;
	struct tprof_pmu_cell *cell = &p->cells[pos & (TPROF_PMU_QUEUE_LEN - 1)];

	if (smp_load_acquire(&cell->seq) != pos + 1)
		return false;	/* empty, or its producer is still writing */
	*ev = cell->ev;
	p->dequeue_pos = pos + 1;
	smp_store_release(&cell->seq, pos + TPROF_PMU_QUEUE_LEN);
	return true;
}

/* ---- The overflow handler ----------------------------------------------- */

static void tprof_pmu_snapshot(struct tprof_pmu_prog *p, u64 *values)
{
	u32 i;

	for (i = 0; i < TPROF_PMU_MAX_COUNTERS; i++)
		values[i] = i < p->config.nr_counters ?
			atomic64_read(&p->ctr[i].value) : 0;
}

static bool tprof_pmu_user_address(u64 start, u64 len);

/* @addr: the data address of a data-ranged counter's event, else 0. */
static void tprof_pmu_raise(struct tprof_pmu_prog *p, u32 kind, u32 index,
			    struct pt_regs *regs, u64 addr, const u64 *values)
{
	struct tprof_pmu_cell *cell;
	struct tprof_pmu_event *ev;
	u64 seq = atomic64_inc_return(&p->raised);
	u64 ip = regs ? instruction_pointer(regs) : 0;

	ev = tprof_pmu_reserve(p, &cell);
	if (!ev) {
		atomic64_inc(&p->lost);
		atomic64_inc(&p->lost_pending);
		return;
	}
	memset(ev, 0, sizeof(*ev));
	ev->seq = seq;
	ev->time_ns = ktime_get_mono_fast_ns();
	ev->ip = regs && !user_mode(regs) && !p->show_kernel ? 0 : ip;
	ev->addr = p->show_kernel || tprof_pmu_user_address(addr, 1) ? addr : 0;
	ev->kind = kind;
	ev->index = index;
	ev->pid = task_tgid_nr_ns(current, p->pid_ns);
	ev->tid = task_pid_nr_ns(current, p->pid_ns);
	ev->cpu = smp_processor_id();
	ev->nr_counters = p->config.nr_counters;
	memcpy(ev->values, values, sizeof(ev->values));
	tprof_pmu_publish(cell);
	atomic64_inc(&p->queued);
	irq_work_queue(&p->kick);
}

static bool tprof_pmu_in_range(const struct tprof_pmu_counter *c,
			       struct pt_regs *regs)
{
	u64 ip;

	if (!(c->flags & TPROF_PMU_CTR_RANGE))
		return true;
	if (!regs)
		return false;
	ip = instruction_pointer(regs);
	return ip >= c->range_start && ip < c->range_end;
}

/*
 * One event (one hit of a breakpoint, K of a hardware counter), with its
 * data address (perf's sample addr; 0 if it has none): from perf's
 * overflow handler or a u/kprobe's (pmu_probe.c), preemption off.
 */
static void tprof_pmu_count(struct tprof_pmu_ctr *ctr, struct pt_regs *regs,
			    u64 data_addr)
{
	struct tprof_pmu_prog *p = ctr->prog;
	const struct tprof_pmu_counter *c = &p->config.counters[ctr->index];
	u64 values[TPROF_PMU_MAX_COUNTERS], v, next, where;
	bool data = c->flags & TPROF_PMU_CTR_DATA_RANGE;
	unsigned long rules = ctr->rules;
	unsigned int r;

	if (ctr->armed_mask && !(atomic_read(&p->armed) & ctr->armed_mask))
		return;	/* a secondary counter whose rule has not fired */
	if (!tprof_pmu_in_range(c, regs))
		return;
	if (data && !tprof_pmu_in_data_range(c, data_addr))
		return;
	if (!data)
		data_addr = 0;	/* events carry it for data ranges only */
	v = atomic64_add_return(c->period ? c->period : 1, &ctr->value);
	if (ctr->sub) {
		/* The data range's subranges if it has one (see the uapi). */
		where = data ? data_addr : instruction_pointer(regs);
		atomic64_add(c->period ? c->period : 1,
			     &ctr->sub[(where - tprof_pmu_subrange_base(c)) /
				       ctr->sub_width]);
	}

	next = atomic64_read(&ctr->next_threshold);
	while (v >= next) {
		u64 after = c->threshold_every ? next + c->threshold_every : U64_MAX;

		if (atomic64_try_cmpxchg(&ctr->next_threshold, &next, after)) {
			atomic64_inc(&ctr->threshold_fired);
			tprof_pmu_snapshot(p, values);
			tprof_pmu_raise(p, TPROF_PMU_EVENT_THRESHOLD, ctr->index,
					regs, data_addr, values);
			break;
		}
	}

	if (!rules)
		return;
	tprof_pmu_snapshot(p, values);
	for_each_set_bit(r, &rules, TPROF_PMU_MAX_RULES) {
		const struct tprof_pmu_rule *rule = &p->config.rules[r];
		int holds = tprof_pmu_rule_holds(rule, values);

		/* Edge-triggered: false (or never evaluated) -> true. */
		if (atomic_xchg(&p->rule_state[r], holds) || !holds)
			continue;
		if (rule->rearm == TPROF_PMU_REARM_ONCE &&
		    atomic_xchg(&p->rule_done[r], 1))
			continue;
		atomic64_inc(&p->rule_fired[r]);
		/* Its secondary counters count from the next event on. */
		atomic_or(1U << r, &p->armed);
		tprof_pmu_raise(p, TPROF_PMU_EVENT_RULE, r, regs, data_addr,
				values);
	}
}

/*
 * The thread; or the process and its descendants (perf's inherit); or,
 * for scope CPUS, every task.
 */
bool tprof_pmu_in_scope(const struct tprof_pmu_prog *p, struct task_struct *t)
{
	bool in = false;

	if (p->config.scope == TPROF_PMU_SCOPE_CPUS)
		return true;
	if (p->config.scope == TPROF_PMU_SCOPE_THREAD)
		return task_pid(t) == p->target;
	rcu_read_lock();
	/* Up to the idle task (pid 0), the parent of init and kthreadd. */
	for (; t->pid; t = rcu_dereference(t->real_parent)) {
		if (task_tgid(t) == p->target) {
			in = true;
			break;
		}
	}
	rcu_read_unlock();
	return in;
}

/*
 * sched_process_exec (preemption off): @t exec'd an image its observers
 * may not see. perf has exited its events (perf_event_exit_task()) and
 * the probes refuse its new mm (pmu_probe.c); each program of a thread or
 * process that had it in scope counts that it left (exec_left), so that
 * its creator learns why the counts stop. Setuid execs are rare: a walk.
 */
void tprof_pmu_on_exec(struct task_struct *t)
{
	struct tprof_pmu_prog *p;

	if (!tprof_exec_leaves_observers(t))
		return;
	rcu_read_lock();
	list_for_each_entry_rcu(p, &tprof_pmu_programs, node)
		if (p->config.scope != TPROF_PMU_SCOPE_CPUS && p->target &&
		    tprof_pmu_in_scope(p, t))
			atomic64_inc(&p->exec_left);
	rcu_read_unlock();
}

/* A probe's hit (pmu_probe.c): breakpoints carry no data address. */
void tprof_pmu_hit(struct tprof_pmu_ctr *ctr, struct pt_regs *regs)
{
	tprof_pmu_count(ctr, regs, 0);
}

/* Scope CPUS: a piece's events in cpus (guard, ours, stepper; arm64). */
static u32 tprof_pmu_cpu_stride(const struct tprof_pmu_ctr *ctr)
{
	return ctr->stepped ? (ctr->guarded ? 3 : 2) : 1;
}

static void tprof_pmu_overflow(struct perf_event *event,
			       struct perf_sample_data *data,
			       struct pt_regs *regs)
{
	struct tprof_pmu_ctr *ctr = event->overflow_handler_context;
	struct tprof_pmu_prog *p = ctr->prog;

	/* Every CPU: a counter fires a short while after its CPU went down. */
	if (p->config.scope == TPROF_PMU_SCOPE_CPUS) {
		u32 i, stride = tprof_pmu_cpu_stride(ctr);
		u32 ours = ctr->guarded ? 1 : 0;	/* after its guard */

		for (i = 0; i < ctr->nr_pieces; i++)
			if (tprof_cpu_event(&p->cpus, ctr->cpu_first + i * stride + ours) == event)
				break;
		if (i == ctr->nr_pieces)
			return;
	}
	/* perf_sample_data_init() sets addr only when it is nonzero. */
	tprof_pmu_count(ctr, regs, data->sample_flags & PERF_SAMPLE_ADDR ?
			data->addr : 0);
}

static void tprof_pmu_kick(struct irq_work *work)
{
	struct tprof_pmu_prog *p = container_of(work, struct tprof_pmu_prog, kick);

	queue_work(system_unbound_wq, &p->send_work);
}

/* ---- Creation ----------------------------------------------------------- */

/*
 * arm64 steps over a breakpoint or watchpoint only when perf's default
 * overflow handler owns an event that matched the hit
 * (uses_default_overflow_handler() in arch/arm64/kernel/hw_breakpoint.c);
 * with only ours the task would trap on the same instruction forever.
 * There such a counter is, by default, a counting perf event with the
 * default handler ("counts only"): perf counts every hit exactly and the
 * value is read from perf when the program is read, but no handler of
 * ours sees a hit. What needs the hits is "stepped" instead (see
 * tprof_pmu_stepped()). An execution breakpoint may be a uprobe or a
 * kprobe instead of either (tprof_pmu_may_probe()).
 */
static bool tprof_pmu_debug_reg(const struct tprof_pmu_counter *c)
{
	return TPROF_ARCH_HIT_NEEDS_STEP &&
	       (c->kind == TPROF_PMU_EV_BREAKPOINT ||
		c->kind == TPROF_PMU_EV_WATCHPOINT);
}

static bool tprof_pmu_user_address(u64 start, u64 len)
{
	return len <= TASK_SIZE && start <= TASK_SIZE - len;
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
 * arm64: a user-address breakpoint that is a debug register (perf's default
 * handler, its own or its stepper's) claims its address against tprof's
 * uprobes (tprof_pmu_claim(): EBUSY).
 */
static bool tprof_pmu_user_debug_bp(const struct tprof_pmu_counter *k)
{
	return TPROF_ARCH_HIT_NEEDS_STEP && k->kind == TPROF_PMU_EV_BREAKPOINT &&
	       tprof_pmu_user_address(k->addr, sizeof(long));
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

static bool tprof_pmu_may_probe(const struct tprof_pmu_program *c,
				const struct tprof_pmu_counter *k)
{
	if (tprof_pmu_may_kprobe(k))
		return true;
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

/*
 * arm64, a debug register whose hits we need: each event of ours is paired
 * with a "stepper", a counting event (period 0, perf's default handler) on
 * the same address, length, type and task or CPU. The kernel's handlers
 * report a hit to every event whose register matched and step over it
 * when one of them has the default handler, so ours sees every hit once
 * and the task goes on. The stepper's count is never read.
 *
 * The watchpoint handler keeps the step decision of the LAST exactly
 * matching register (step = watchpoint_report(), not |=, in 6.1 and 6.12),
 * and registers are handed out lowest free first in perf's scheduling
 * order (creation order within a context): so ours is created disabled,
 * and enabled only once its stepper exists, so that it is never scheduled
 * without the stepper after it (tprof_pmu_create_one()).
 *
 * When no register matches the reported address exactly (a CPU may report
 * any address of a wide or paired access, e.g. stp across the watched
 * bytes; QEMU reports one inside them), the handler reports only the
 * FIRST closest register and steps only if that one is perf's. So a
 * watchpoint also gets a "guard" created before ours, the same counting
 * event: it is that closest register, the task steps, and ours misses
 * that one hit; guard minus stepper counts such misses exactly
 * (hits_missed, read with the program). Breakpoints match exactly and
 * step if any match is perf's (|=): no guard. Registers: 3 per watchpoint
 * piece, 2 per breakpoint.
 */
static bool tprof_pmu_stepped(const struct tprof_pmu_program *c, u32 i)
{
	return tprof_pmu_debug_reg(&c->counters[i]) && tprof_pmu_needs_hits(c, i);
}

/* Perf events per piece: ours, its stepper and a watchpoint's guard. */
static u32 tprof_pmu_stepped_events(const struct tprof_pmu_counter *k)
{
	return k->kind == TPROF_PMU_EV_WATCHPOINT ? 3 : 2;
}

static bool tprof_pmu_counts_only(const struct tprof_pmu_program *c, u32 i)
{
	if (c->counters[i].flags & TPROF_PMU_CTR_COUNT)
		return true;	/* checked: nothing needs its hits */
	return tprof_pmu_debug_reg(&c->counters[i]) && !tprof_pmu_needs_hits(c, i);
}

/*
 * A counter's perf events per thread or CPU: a watchpoint's pieces (see
 * the uapi's Data range), anything else 1. @pieces: TPROF_PMU_MAX_WATCH_PIECES.
 */
static u32 tprof_pmu_pieces(const struct tprof_pmu_counter *c,
			    struct tprof_pmu_piece *pieces)
{
	int n = 1;

	if (c->kind == TPROF_PMU_EV_WATCHPOINT)
		n = tprof_pmu_watch_pieces(c->addr, c->len,
					   TPROF_PMU_WATCH_DWORD_MASKS, pieces);
	/* Checked by tprof_pmu_program_check(). */
	return n > 0 ? n : 1;
}

/* Perf events per thread or CPU of counter @i: pieces, with steppers. */
static u32 tprof_pmu_ctr_events(const struct tprof_pmu_program *c, u32 i)
{
	struct tprof_pmu_piece pieces[TPROF_PMU_MAX_WATCH_PIECES];

	return tprof_pmu_pieces(&c->counters[i], pieces) *
	       (tprof_pmu_stepped(c, i) ?
		tprof_pmu_stepped_events(&c->counters[i]) : 1);
}

static u32 tprof_pmu_events_per_thread(const struct tprof_pmu_program *c)
{
	u32 i, sum = 0;

	for (i = 0; i < c->nr_counters; i++)
		sum += tprof_pmu_ctr_events(c, i);
	return sum;
}

/*
 * Debug registers the program takes on each thread or CPU: its pieces
 * (with their steppers and guards: 3 registers a watchpoint piece, 2 a
 * breakpoint). A breakpoint that may become a u/kprobe takes none here;
 * if it falls back, perf decides.
 */
static void tprof_pmu_slots_needed(const struct tprof_pmu_program *c,
				   u32 *data, u32 *exec)
{
	u32 i;

	*data = *exec = 0;
	for (i = 0; i < c->nr_counters; i++) {
		const struct tprof_pmu_counter *k = &c->counters[i];

		if (k->kind == TPROF_PMU_EV_WATCHPOINT)
			*data += tprof_pmu_ctr_events(c, i);
		else if (k->kind == TPROF_PMU_EV_BREAKPOINT &&
			 IS_ENABLED(CONFIG_HAVE_MIXED_BREAKPOINTS_REGS))
			(*data)++;
		else if (k->kind == TPROF_PMU_EV_BREAKPOINT &&
			 !tprof_pmu_may_probe(c, k))
			*exec += tprof_pmu_ctr_events(c, i);
	}
}

/* ENOSPC before anything is created: the program alone cannot fit. */
static int tprof_pmu_check_slots(const struct tprof_pmu_program *c)
{
	u32 data, exec;

	tprof_pmu_slots_needed(c, &data, &exec);
	return data > tprof_arch_data_slots() || exec > tprof_arch_exec_slots() ?
		-ENOSPC : 0;
}

/*
 * Breakpoints already in @task's perf context(s), whoever made them and
 * whichever task they target. perf admits a task's breakpoint by counting
 * the ones that target that task (kernel/events/hw_breakpoint.c), but it
 * installs the ones in the context the task holds: at a context switch
 * between two tasks whose contexts are clones (inherited events, siblings
 * of one fork) perf swaps the contexts instead of the events, and when
 * the other task exits it takes this one's events with it, leaving this
 * one holding the dead task's. Count what the task holds, so that tprof
 * never adds past the registers (6.1: "Can't find any breakpoint slot"
 * and a counter that silently stops counting). Under RCU, a context is
 * freed only after a grace period; its lock guards event_list.
 */
static void tprof_pmu_task_slots_used(struct task_struct *task, u32 *data,
				      u32 *exec)
{
	struct perf_event_context *ctx;
	struct perf_event *ev;
	unsigned long flags;
	int i;

	*data = *exec = 0;
	rcu_read_lock();
	for (i = 0; i < TPROF_TASK_PERF_CTXS; i++) {
		ctx = rcu_dereference(tprof_task_perf_ctx(task, i));
		if (!ctx)
			continue;
		raw_spin_lock_irqsave(&ctx->lock, flags);
		list_for_each_entry(ev, &ctx->event_list, event_entry) {
			if (ev->attr.type != PERF_TYPE_BREAKPOINT)
				continue;
			if (IS_ENABLED(CONFIG_HAVE_MIXED_BREAKPOINTS_REGS) ||
			    (ev->attr.bp_type & HW_BREAKPOINT_RW))
				(*data)++;
			else
				(*exec)++;
		}
		raw_spin_unlock_irqrestore(&ctx->lock, flags);
	}
	rcu_read_unlock();
}

/*
 * ENOSPC: some thread's context, with what tprof's scope-CPUS programs
 * hold on every CPU, has no room left for the program's.
 */
static int tprof_pmu_check_task_slots(const struct tprof_pmu_program *c,
				      struct task_struct **tasks, unsigned int n)
{
	u32 data, exec, used_data, used_exec;
	unsigned int t;

	lockdep_assert_held(&tprof_pmu_slots_lock);
	tprof_pmu_slots_needed(c, &data, &exec);
	if (!data && !exec)
		return 0;
	data += tprof_pmu_cpu_slots_data;
	exec += tprof_pmu_cpu_slots_exec;
	for (t = 0; t < n; t++) {
		tprof_pmu_task_slots_used(tasks[t], &used_data, &used_exec);
		if (used_data + data > tprof_arch_data_slots() ||
		    used_exec + exec > tprof_arch_exec_slots())
			return -ENOSPC;
	}
	return 0;
}

/*
 * Scope CPUS: ENOSPC unless the program fits beside tprof's other
 * scope-CPUS programs and what any thread's context holds (the same
 * reason as above: perf counts a thread's breakpoints by target, the CPU
 * installs the ones its context holds). Walks every thread once. Else the
 * registers are the program's until tprof_pmu_free().
 */
static int tprof_pmu_reserve_cpu_slots(struct tprof_pmu_prog *p)
{
	u32 data, exec, max_data = 0, max_exec = 0, d, e;
	struct task_struct *g, *t;

	lockdep_assert_held(&tprof_pmu_slots_lock);
	tprof_pmu_slots_needed(&p->config, &data, &exec);
	if (!data && !exec)
		return 0;
	rcu_read_lock();
	for_each_process_thread(g, t) {
		tprof_pmu_task_slots_used(t, &d, &e);
		max_data = max(max_data, d);
		max_exec = max(max_exec, e);
	}
	rcu_read_unlock();
	if (data + tprof_pmu_cpu_slots_data + max_data > tprof_arch_data_slots() ||
	    exec + tprof_pmu_cpu_slots_exec + max_exec > tprof_arch_exec_slots())
		return -ENOSPC;
	p->cpu_slots_data = data;
	p->cpu_slots_exec = exec;
	tprof_pmu_cpu_slots_data += data;
	tprof_pmu_cpu_slots_exec += exec;
	return 0;
}

/*
 * @piece: a watchpoint's piece (NULL for other kinds). @counting: a
 * counting event (counts only, or a stepper): perf's handler never runs.
 */
static void tprof_pmu_attr(const struct tprof_pmu_counter *c,
			   const struct tprof_pmu_piece *piece, bool inherit,
			   bool exclude_kernel, bool counting,
			   struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->sample_period = counting ? 0 : c->period ?: 1;
	attr->inherit = inherit;
	attr->exclude_kernel = exclude_kernel || (c->flags & TPROF_PMU_CTR_USER_ONLY);
	attr->exclude_hv = 1;
	attr->config = c->config;
	switch (c->kind) {
	case TPROF_PMU_EV_SOFTWARE:
		attr->type = PERF_TYPE_SOFTWARE;
		break;
	case TPROF_PMU_EV_HARDWARE:
		attr->type = PERF_TYPE_HARDWARE;
		break;
	case TPROF_PMU_EV_RAW:
		attr->type = PERF_TYPE_RAW;
		break;
	case TPROF_PMU_EV_TRACEPOINT:
		attr->type = PERF_TYPE_TRACEPOINT;
		break;
	case TPROF_PMU_EV_BREAKPOINT:
		attr->type = PERF_TYPE_BREAKPOINT;
		attr->config = 0;
		attr->bp_type = HW_BREAKPOINT_X;
		attr->bp_addr = c->addr;
		attr->bp_len = sizeof(long);
		break;
	case TPROF_PMU_EV_WATCHPOINT:
		attr->type = PERF_TYPE_BREAKPOINT;
		attr->config = 0;
		attr->bp_type = c->flags & TPROF_PMU_CTR_WATCH_READ ?
			HW_BREAKPOINT_RW : HW_BREAKPOINT_W;
		/* arm64 takes any bytes of one doubleword (its BAS mask). */
		attr->bp_addr = piece->addr;
		attr->bp_len = piece->len;
		break;
	}
}

/* perf's errors in the UAPI's terms. */
static int tprof_pmu_create_err(const struct tprof_pmu_counter *c, int err)
{
	if ((c->kind == TPROF_PMU_EV_HARDWARE || c->kind == TPROF_PMU_EV_RAW) &&
	    (err == -ENOENT || err == -ENODEV || err == -EOPNOTSUPP))
		return -EOPNOTSUPP;
	if (c->kind == TPROF_PMU_EV_TRACEPOINT && err == -EINVAL)
		return -ENOENT;
	return err;
}

/*
 * A breakpoint or watchpoint at a kernel address: perf wants CAP_SYS_ADMIN
 * for it (hw_breakpoint_parse(): trap recursion in the kernel's own trap
 * path), whatever the scope, and asks the caller, never the kernel worker
 * that makes every-CPU events (cpu_events.c).
 */
static bool tprof_pmu_kernel_debug_reg(const struct tprof_pmu_counter *ctr)
{
	if (ctr->kind == TPROF_PMU_EV_BREAKPOINT)
		return !tprof_pmu_user_address(ctr->addr, sizeof(long));
	return ctr->kind == TPROF_PMU_EV_WATCHPOINT &&
	       !tprof_pmu_user_address(ctr->addr, ctr->len);
}

static bool tprof_pmu_kernel_debug_regs(const struct tprof_pmu_program *c)
{
	u32 i;

	for (i = 0; i < c->nr_counters; i++)
		if (tprof_pmu_kernel_debug_reg(&c->counters[i]))
			return true;
	return false;
}

/* Kernel addresses (breakpoints, watchpoints, ranges, data ranges) need CAP_PERFMON. */
static bool tprof_pmu_kernel_addresses(const struct tprof_pmu_program *c)
{
	u32 i;

	for (i = 0; i < c->nr_counters; i++) {
		const struct tprof_pmu_counter *ctr = &c->counters[i];

		if (tprof_pmu_kernel_debug_reg(ctr))
			return true;
		if (ctr->flags & TPROF_PMU_CTR_DATA_RANGE &&
		    !tprof_pmu_user_address(ctr->addr, ctr->len))
			return true;
		if (ctr->flags & TPROF_PMU_CTR_RANGE &&
		    !tprof_pmu_user_address(ctr->range_start,
					    ctr->range_end - ctr->range_start))
			return true;
	}
	return false;
}

/* The target's threads (a reference each): one, or a process's. */
static int tprof_pmu_targets(const struct tprof_pmu_program *c, struct pid *pid,
			     struct task_struct ***tasksp, unsigned int *nr)
{
	struct task_struct **tasks, *leader, *t;
	unsigned int n = 0;
	int ret = 0;

	tasks = kvcalloc(c->scope == TPROF_PMU_SCOPE_THREAD ? 1 : TPROF_PMU_MAX_THREADS,
			 sizeof(*tasks), GFP_KERNEL_ACCOUNT);
	if (!tasks)
		return -ENOMEM;
	rcu_read_lock();
	if (c->scope == TPROF_PMU_SCOPE_THREAD) {
		t = pid_task(pid, PIDTYPE_PID);
		if (t) {
			get_task_struct(t);
			tasks[n++] = t;
		}
	} else {
		leader = pid_task(pid, PIDTYPE_TGID);
		if (leader)
			for_each_thread(leader, t) {
				if (n == TPROF_PMU_MAX_THREADS) {
					ret = -E2BIG;
					break;
				}
				get_task_struct(t);
				tasks[n++] = t;
			}
	}
	rcu_read_unlock();
	if (!ret && !n)
		ret = -ESRCH;
	*tasksp = tasks;
	*nr = n;
	return ret;
}

/*
 * The last event of ours with its stepper and guard: ours first, so that
 * it never exists without them (a task would trap forever).
 */
static void tprof_pmu_release_one(struct tprof_pmu_ctr *ctr)
{
	u32 k = --ctr->nr_events;

	perf_event_release_kernel(ctr->events[k]);
	if (ctr->steppers)
		perf_event_release_kernel(ctr->steppers[k]);
	if (ctr->guards)
		perf_event_release_kernel(ctr->guards[k]);
}

struct tprof_pmu_unregister_work {
	struct work_struct work;
	struct tprof_pmu_prog *prog;
};

static void tprof_pmu_unregister_probes(struct work_struct *work)
{
	struct tprof_pmu_unregister_work *w =
		container_of(work, struct tprof_pmu_unregister_work, work);
	bool probes = false;
	u32 i;

	for (i = 0; i < TPROF_PMU_MAX_COUNTERS; i++)
		probes |= tprof_pmu_probe_unregister(&w->prog->ctr[i]);
	if (probes)	/* no uprobe handler runs past this */
		tprof_pmu_probe_sync();
}

/*
 * Unregistering a uprobe writes the original instruction back into every
 * mm that has it, with get_user_pages_remote(), which fails with EINTR
 * when the caller has a fatal signal pending: the uprobe then stays, its
 * breakpoint too ("failed to unregister, leaking uprobe" on 6.12). A
 * program's last close can run there (the task_work of a close() that a
 * group exit interrupted, before get_signal() drops the SIGKILL), so the
 * probes are unregistered by a kworker, which has no signals, and waited for.
 */
static void tprof_pmu_release_probes(struct tprof_pmu_prog *p)
{
	struct tprof_pmu_unregister_work w = { .prog = p };
	u32 i;

	for (i = 0; i < TPROF_PMU_MAX_COUNTERS; i++)
		if (p->ctr[i].probe)
			break;
	if (i == TPROF_PMU_MAX_COUNTERS)
		return;
	INIT_WORK_ONSTACK(&w.work, tprof_pmu_unregister_probes);
	queue_work(system_unbound_wq, &w.work);
	flush_work(&w.work);
	destroy_work_on_stack(&w.work);
}

static void tprof_pmu_release_events(struct tprof_pmu_prog *p)
{
	u32 i;

	if (p->on_cpus) {	/* every CPU's counters, hotplug undone */
		tprof_cpu_events_stop(&p->cpus);
		p->on_cpus = false;
	}
	tprof_pmu_release_probes(p);
	for (i = 0; i < TPROF_PMU_MAX_COUNTERS; i++) {
		struct tprof_pmu_ctr *ctr = &p->ctr[i];

		tprof_pmu_probe_free(ctr);
		/*
		 * With the copies inherited from them; ours before its stepper,
		 * never a window with ours alone (a task would trap forever).
		 */
		while (ctr->nr_events)
			tprof_pmu_release_one(ctr);
		kvfree(ctr->events);
		ctr->events = NULL;
		kvfree(ctr->steppers);
		ctr->steppers = NULL;
		kvfree(ctr->guards);
		ctr->guards = NULL;
		kvfree(ctr->sub);
		ctr->sub = NULL;
		tprof_pmu_unclaim(ctr);	/* its uprobe or registers are gone */
	}
}

static void tprof_pmu_free(struct tprof_pmu_prog *p)
{
	tprof_pmu_release_events(p);
	/*
	 * A released event's handler may still be running: software and
	 * tracepoint events and x86 user debug exceptions run theirs with
	 * IRQs on, perf's removal IPI can land inside one, and it resumes
	 * after the release returned. Each runs inside an RCU read-side
	 * section (perf's swevent hash, the tracepoint, the breakpoint
	 * handler's lookup; NMIs are one), so after a grace period none is
	 * left to touch p->cells or queue p->kick.
	 */
	synchronize_rcu();
	if (p->cpu_slots_data || p->cpu_slots_exec) {
		mutex_lock(&tprof_pmu_slots_lock);
		tprof_pmu_cpu_slots_data -= p->cpu_slots_data;
		tprof_pmu_cpu_slots_exec -= p->cpu_slots_exec;
		mutex_unlock(&tprof_pmu_slots_lock);
	}
	/* No handler runs any more: flush what it queued to the monitor. */
	irq_work_sync(&p->kick);
	flush_work(&p->send_work);
	tprof_pmu_drop_monitor(p);
	if (p->pid_ns)
		put_pid_ns(p->pid_ns);
	put_pid(p->target);
	if (p->target_mm)
		mmdrop(p->target_mm);
	tprof_limit_uncharge(TPROF_LIMIT_PMU_EVENTS, &p->charge);	/* its events are gone */
	kvfree(p->cells);
	kfree(p);
}


/*
 * One event of ours on @task and, stepped, its guard before it
 * (watchpoints) and its stepper after it (see tprof_pmu_stepped()): ours
 * is created disabled and enabled once the stepper exists, which
 * reschedules the task's breakpoints in creation order (guard, ours,
 * stepper: ascending registers). Stored only together.
 */
static int tprof_pmu_create_one(struct tprof_pmu_ctr *ctr,
				const struct perf_event_attr *attr,
				struct task_struct *task, bool counts_only)
{
	struct perf_event_attr a = *attr, counting = *attr;
	struct perf_event *ev, *st, *guard = NULL;

	counting.disabled = 0;
	counting.sample_period = 0;
	if (ctr->guards) {
		guard = perf_event_create_kernel_counter(&counting, -1, task,
							 NULL, NULL);
		if (IS_ERR(guard))
			return PTR_ERR(guard);
	}
	a.disabled = ctr->stepped;
	ev = perf_event_create_kernel_counter(&a, -1, task,
					      counts_only ? NULL : tprof_pmu_overflow,
					      ctr);
	if (IS_ERR(ev)) {
		if (guard)
			perf_event_release_kernel(guard);
		return PTR_ERR(ev);
	}
	if (ctr->stepped) {
		st = perf_event_create_kernel_counter(&counting, -1, task,
						      NULL, NULL);
		if (IS_ERR(st)) {
			perf_event_release_kernel(ev);
			if (guard)
				perf_event_release_kernel(guard);
			return PTR_ERR(st);
		}
		perf_event_enable(ev);
		ctr->steppers[ctr->nr_events] = st;
		if (guard)
			ctr->guards[ctr->nr_events] = guard;
	}
	ctr->events[ctr->nr_events++] = ev;
	return 0;
}

static int tprof_pmu_create_events(struct tprof_pmu_prog *p,
				   struct task_struct **tasks, unsigned int n,
				   bool exclude_kernel)
{
	struct tprof_pmu_piece pieces[TPROF_PMU_MAX_WATCH_PIECES];
	struct perf_event_attr attr;
	unsigned int i, t;
	int ret;

	/* Every event it may make (E2BIG bounds them), before any exists. */
	ret = tprof_limit_charge(TPROF_LIMIT_PMU_EVENTS,
				 n * tprof_pmu_events_per_thread(&p->config),
				 &p->charge);
	if (ret)
		return ret;
	for (i = 0; i < p->config.nr_counters; i++) {
		const struct tprof_pmu_counter *c = &p->config.counters[i];
		struct tprof_pmu_ctr *ctr = &p->ctr[i];
		unsigned int made;
		int ret = -ESRCH;

		if (tprof_pmu_may_kprobe(c)) {
			ret = tprof_pmu_kprobe_create(ctr);
			if (ret)
				return ret;
			continue;
		}
		if (tprof_pmu_may_probe(&p->config, c)) {
			/* Any thread that still has its mm. */
			for (t = 0; t < n && ret == -ESRCH; t++)
				ret = tprof_pmu_probe_create(ctr, tasks[t]);
			if (!ret)
				continue;
			if (ret != -ENOENT)
				return ret;
			/* Not a file mapping: a debug register (below). */
		}
		if (tprof_pmu_user_debug_bp(c)) {
			ret = tprof_pmu_claim(ctr, c->addr, false);
			if (ret)
				return ret;
		}
		ctr->counts_only = tprof_pmu_counts_only(&p->config, i);
		ctr->stepped = tprof_pmu_stepped(&p->config, i);
		ctr->nr_pieces = tprof_pmu_pieces(c, pieces);
		ctr->events = kvcalloc(n * ctr->nr_pieces, sizeof(*ctr->events),
				       GFP_KERNEL_ACCOUNT);
		if (!ctr->events)
			return -ENOMEM;
		if (ctr->stepped) {
			ctr->steppers = kvcalloc(n * ctr->nr_pieces,
						 sizeof(*ctr->steppers),
						 GFP_KERNEL_ACCOUNT);
			if (!ctr->steppers)
				return -ENOMEM;
		}
		ctr->guarded = ctr->stepped && c->kind == TPROF_PMU_EV_WATCHPOINT;
		if (ctr->guarded) {
			ctr->guards = kvcalloc(n * ctr->nr_pieces,
					       sizeof(*ctr->guards),
					       GFP_KERNEL_ACCOUNT);
			if (!ctr->guards)
				return -ENOMEM;
		}
		for (t = 0; t < n; t++) {
			int err = 0;

			for (made = 0; made < ctr->nr_pieces; made++) {
				tprof_pmu_attr(c, &pieces[made],
					       p->config.scope == TPROF_PMU_SCOPE_PROCESS,
					       exclude_kernel, ctr->counts_only, &attr);
				err = tprof_pmu_create_one(ctr, &attr, tasks[t],
							   ctr->counts_only);
				if (err)
					break;
			}
			if (!err)
				continue;
			/* A thread counts with all its pieces or none. */
			while (made--)
				tprof_pmu_release_one(ctr);
			if (err != -ESRCH)	/* -ESRCH: it exited */
				return tprof_pmu_create_err(c, err);
		}
		if (!ctr->nr_events)
			return -ESRCH;	/* every thread exited meanwhile */
	}
	return 0;
}

/*
 * Scope CPUS: each counter on every online CPU and on each CPU that comes
 * online; cpu_events.c owns them and their hotplug (created and released
 * by its work item, never in a cpuhp callback). A kprobe (arm64) sees
 * every CPU by itself: it takes no slot there.
 */
static int tprof_pmu_create_cpu_events(struct tprof_pmu_prog *p)
{
	/* A watchpoint's pieces are consecutive events of its counter. */
	/* With guards and steppers (arm64): up to 3 events per piece. */
	enum { TPROF_PMU_MAX_CPU_EVENTS = 3 * TPROF_PMU_MAX_COUNTERS * TPROF_PMU_MAX_WATCH_PIECES };
	struct tprof_pmu_piece pieces[TPROF_PMU_MAX_WATCH_PIECES];
	void **ctxs;
	u32 i, j, n = 0;
	struct perf_event_attr *attrs;
	int ret = 0;

	/* Up to 32 x 136 bytes: not on the kernel stack (KASAN's frame limit). */
	attrs = kcalloc(TPROF_PMU_MAX_CPU_EVENTS, sizeof(*attrs), GFP_KERNEL);
	ctxs = kcalloc(TPROF_PMU_MAX_CPU_EVENTS, sizeof(*ctxs), GFP_KERNEL);
	if (!attrs || !ctxs) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < p->config.nr_counters; i++) {
		const struct tprof_pmu_counter *c = &p->config.counters[i];
		struct tprof_pmu_ctr *ctr = &p->ctr[i];

		if (tprof_pmu_may_kprobe(c)) {
			ret = tprof_pmu_kprobe_create(ctr);
			if (ret)
				goto out;
			continue;
		}
		if (tprof_pmu_user_debug_bp(c)) {
			ret = tprof_pmu_claim(ctr, c->addr, false);
			if (ret)
				goto out;
		}
		ctr->nr_pieces = tprof_pmu_pieces(c, pieces);
		ctr->stepped = tprof_pmu_stepped(&p->config, i);
		ctr->cpu_first = n;
		ctr->guarded = ctr->stepped && c->kind == TPROF_PMU_EV_WATCHPOINT;
		/* Counts only: perf's own counter, summed when read. */
		ctr->counts_only = tprof_pmu_counts_only(&p->config, i);
		for (j = 0; j < ctr->nr_pieces; j++, n++) {
			tprof_pmu_attr(c, &pieces[j], false, false,
				       ctr->counts_only, &attrs[n]);
			ctxs[n] = ctr->counts_only ? NULL : ctr;
			if (!ctr->stepped)
				continue;
			/*
			 * Guard before, stepper after (see tprof_pmu_stepped()):
			 * cpu_events.c makes a NULL context a counting event of
			 * perf's own, creates a CPU's counters in index order and
			 * enables a disabled one once its CPU's others exist.
			 */
			attrs[n].disabled = 1;
			if (ctr->guarded) {
				attrs[n + 1] = attrs[n];
				attrs[n] = attrs[n + 1];
				attrs[n].disabled = 0;
				attrs[n].sample_period = 0;
				ctxs[n] = NULL;
				ctxs[n + 1] = ctr;
				n++;
			}
			n++;
			attrs[n] = attrs[n - 1];
			attrs[n].disabled = 0;
			attrs[n].sample_period = 0;
			ctxs[n] = NULL;
		}
	}
	if (!n)
		goto out;
	/* Each on every CPU that is or comes online. */
	ret = tprof_limit_charge(TPROF_LIMIT_PMU_EVENTS, n * nr_cpu_ids,
				 &p->charge);
	if (ret)
		goto out;
	/* Copies attrs and ctxs; waits until every online CPU counts. */
	ret = tprof_cpu_events_start_each(&p->cpus, attrs, n, tprof_pmu_overflow,
					  ctxs, NULL);
	if (!ret)
		p->on_cpus = true;
out:
	kfree(attrs);
	kfree(ctxs);
	return ret;
}

static struct tprof_pmu_prog *tprof_pmu_alloc(const struct tprof_pmu_program *c)
{
	struct tprof_pmu_prog *p;
	u32 i;

	p = kzalloc(sizeof(*p), GFP_KERNEL_ACCOUNT);
	if (!p)
		return NULL;
	p->cells = kvcalloc(TPROF_PMU_QUEUE_LEN, sizeof(*p->cells), GFP_KERNEL_ACCOUNT);
	if (!p->cells) {
		kfree(p);
		return NULL;
	}
	for (i = 0; i < TPROF_PMU_QUEUE_LEN; i++)
		p->cells[i].seq = i;
	p->config = *c;
	for (i = 0; i < TPROF_PMU_MAX_COUNTERS; i++) {
		const struct tprof_pmu_counter *k = &c->counters[i];
		struct tprof_pmu_ctr *ctr = &p->ctr[i];

		ctr->prog = p;
		ctr->index = i;
		atomic64_set(&ctr->next_threshold, k->threshold ?: U64_MAX);
		if (k->armed_by)
			ctr->armed_mask = 1U << (k->armed_by - 1);
		if (i < c->nr_counters && k->nr_subranges) {
			ctr->sub_width = tprof_pmu_subrange_width(k);
			ctr->sub = kvcalloc(k->nr_subranges, sizeof(*ctr->sub),
					    GFP_KERNEL_ACCOUNT);
			if (!ctr->sub)
				goto err;
		}
	}
	for (i = 0; i < c->nr_rules; i++) {
		u32 mask = tprof_pmu_rule_counters(&c->rules[i]), j;

		for (j = 0; j < TPROF_PMU_MAX_COUNTERS; j++)
			if (mask & (1U << j))
				p->ctr[j].rules |= 1U << i;
	}
	init_irq_work(&p->kick, tprof_pmu_kick);
	INIT_WORK(&p->send_work, tprof_pmu_send_work);
	spin_lock_init(&p->monitor_lock);
	INIT_LIST_HEAD(&p->node);
	p->pid_ns = get_pid_ns(task_active_pid_ns(current));
	return p;

err:
	for (i = 0; i < TPROF_PMU_MAX_COUNTERS; i++)
		kvfree(p->ctr[i].sub);
	kvfree(p->cells);
	kfree(p);
	return NULL;
}

/*
 * Who may count what (admission.h): every CPU needs CAP_PERFMON (EPERM);
 * a thread or process perf's rules, kernel addresses CAP_PERFMON (EACCES)
 * and kernel breakpoints and watchpoints CAP_SYS_ADMIN (EPERM). On 0
 * with a target, @a holds it and its exec lock until its events exist.
 */
static int tprof_pmu_check_access(const struct tprof_pmu_program *c,
				  struct tprof_admission *a)
{
	bool privileged = perfmon_capable();

	memset(a, 0, sizeof(*a));
	if (c->scope == TPROF_PMU_SCOPE_CPUS && !privileged)	/* system-wide data */
		return -EPERM;
	if (!privileged && tprof_pmu_kernel_addresses(c))
		return -EACCES;
	if (tprof_pmu_kernel_debug_regs(c) && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (c->scope == TPROF_PMU_SCOPE_CPUS) {
		a->privileged = true;
		return 0;
	}
	return tprof_admit(c->pid, c->scope == TPROF_PMU_SCOPE_THREAD ?
			   PIDTYPE_PID : PIDTYPE_TGID, TPROF_ADMIT_PERF, a);
}

/*
 * arm64 instructions are 4 bytes, aligned: an execution breakpoint
 * elsewhere is EINVAL. A debug register there would be aligned down by
 * hw_breakpoint_arch_parse() with a byte-select the breakpoint handler
 * never matches, and the task would die with SIGILL (found by the fuzzer
 * in scope CPUS); kprobes and uprobes refuse it anyway.
 */
static int tprof_pmu_check_insn_alignment(const struct tprof_pmu_program *c)
{
	u32 i;

	for (i = 0; i < c->nr_counters; i++)
		if (c->counters[i].kind == TPROF_PMU_EV_BREAKPOINT &&
		    (c->counters[i].addr & (TPROF_ARCH_INSN_ALIGN - 1)))
			return -EINVAL;
	return 0;
}

/*
 * PMU_CREATE, with the program pmu_ioctl.c has copied and checked
 * (tprof_pmu_program_check()): the checks that need this file's knowledge
 * of counters (debug registers, instruction alignment, who may count what),
 * then the program, its events, its descriptor's file. Returns the
 * descriptor's number, reserved but not installed, with its file in
 * *@filep (the caller installs it or puts both), or -errno with nothing
 * left behind.
 */
int tprof_pmu_create(const struct tprof_pmu_program *c, struct file **filep)
{
	struct task_struct **tasks = NULL;
	struct tprof_admission adm;
	struct tprof_pmu_prog *p;
	unsigned int n = 0, i;
	struct file *file;
	int ret, fd;

	ret = tprof_pmu_check_slots(c);
	if (ret)
		return ret;
	ret = tprof_pmu_check_insn_alignment(c);
	if (ret)
		return ret;
	ret = tprof_pmu_check_access(c, &adm);
	if (ret)
		return ret;
	p = tprof_pmu_alloc(c);
	if (!p) {
		tprof_admit_end(&adm);
		return -ENOMEM;
	}
	p->show_kernel = adm.privileged;
	if (c->scope == TPROF_PMU_SCOPE_CPUS) {
		mutex_lock(&tprof_pmu_slots_lock);
		ret = tprof_pmu_reserve_cpu_slots(p);
		if (!ret)
			ret = tprof_pmu_create_cpu_events(p);
		mutex_unlock(&tprof_pmu_slots_lock);
	} else {
		p->target = tprof_admit_take_pid(&adm);	/* probes: who is in scope */
		/* Probes: the admitted mm; any other must be dumpable (pmu_probe.c). */
		task_lock(adm.task);
		if (adm.task->mm) {
			mmgrab(adm.task->mm);
			p->target_mm = adm.task->mm;
		}
		task_unlock(adm.task);
		ret = tprof_pmu_targets(c, p->target, &tasks, &n);
		if (!ret && n * tprof_pmu_events_per_thread(c) > TPROF_PMU_MAX_EVENTS)
			ret = -E2BIG;
		if (!ret) {
			mutex_lock(&tprof_pmu_slots_lock);
			ret = tprof_pmu_check_task_slots(c, tasks, n);
			if (!ret)
				ret = tprof_pmu_create_events(p, tasks, n,
							      adm.exclude_kernel);
			mutex_unlock(&tprof_pmu_slots_lock);
		}
		for (i = 0; i < n; i++)
			put_task_struct(tasks[i]);
		kvfree(tasks);
	}
	/* Its events exist: an exec from here on is perf's to end (and ours). */
	tprof_admit_end(&adm);
	if (ret)
		goto err_free;

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto err_free;
	}
	file = anon_inode_getfile("[tprof_pmu]", &tprof_pmu_fops, p, O_RDWR);
	if (IS_ERR(file)) {
		put_unused_fd(fd);
		ret = PTR_ERR(file);
		goto err_free;
	}
	mutex_lock(&tprof_pmu_programs_lock);
	list_add_rcu(&p->node, &tprof_pmu_programs);	/* the exec hook reads it */
	mutex_unlock(&tprof_pmu_programs_lock);
	*filep = file;
	return fd;

err_free:
	tprof_pmu_free(p);
	return ret;
}

/* ---- The program's descriptor ------------------------------------------- */

/*
 * Counts-only counters take perf's counts of their events, inherited
 * copies included (live or exited). Counts only grow: a concurrent read
 * that summed earlier never moves the value back.
 */
/* Returns the hits guards took instead of ours (arm64, scope THREAD/PROCESS). */
u64 tprof_pmu_read_counts(struct tprof_pmu_prog *p)
{
	u64 sum, old, enabled, running, missed = 0;
	unsigned int t;
	u32 i;

	for (i = 0; i < p->config.nr_counters; i++) {
		struct tprof_pmu_ctr *ctr = &p->ctr[i];

		/*
		 * Hits the guard took instead of ours (tprof_pmu_stepped()). The
		 * stepper first: a hit counts in the guard before the stepper, so
		 * the difference cannot go below 0 while the task runs; an exiting
		 * child's counts may reach the parent's stepper before its guard:
		 * a pair that reads lower for now counts 0.
		 */
		for (t = 0; ctr->guards && t < ctr->nr_events; t++) {
			u64 st = perf_event_read_value(ctr->steppers[t], &enabled,
						       &running);
			u64 gu = perf_event_read_value(ctr->guards[t], &enabled,
						       &running);

			missed += gu > st ? gu - st : 0;
		}
		if (!ctr->counts_only)
			continue;
		sum = 0;
		if (p->on_cpus)	/* every CPU's, those gone offline included */
			sum = tprof_cpu_events_read(&p->cpus, ctr->cpu_first);
		for (t = 0; t < ctr->nr_events; t++)
			sum += perf_event_read_value(ctr->events[t], &enabled,
						     &running);
		old = atomic64_read(&ctr->value);
		while (sum > old && !atomic64_try_cmpxchg(&ctr->value, &old, sum))
			;
	}
	return missed;
}

static int tprof_pmu_release(struct inode *inode, struct file *file)
{
	struct tprof_pmu_prog *p = file->private_data;

	mutex_lock(&tprof_pmu_programs_lock);
	list_del_rcu(&p->node);	/* freed after a grace period */
	mutex_unlock(&tprof_pmu_programs_lock);
	tprof_pmu_free(p);
	return 0;
}

static const struct file_operations tprof_pmu_fops = {
	.owner = THIS_MODULE,
	.release = tprof_pmu_release,
	.unlocked_ioctl = tprof_pmu_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

int tprof_pmu_init(void)
{
	return tprof_pmu_netlink_init();
}

void tprof_pmu_exit(void)
{
	/* Programs hold the module: none is left here. */
	tprof_pmu_netlink_exit();
}
