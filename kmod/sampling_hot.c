// SPDX-License-Identifier: GPL-2.0
/*
 * The sampling hot path: the counter's overflow handler (hard IRQ, or NMI
 * for hardware events) and the record writer every producer uses (IRQs off,
 * per-CPU nesting guard). Nothing here sleeps, allocates or takes a lock.
 */
#include <linux/irq_work.h>
#include <linux/mm.h>
#include <linux/perf_event.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/siphash.h>
#include <linux/uaccess.h>
#include "arch/stack.h"
#include "sampling.h"
#include "compat.h"
#include "windows.h"

/*
 * Reserves a record in this CPU's buffer. IRQs must be off. Returns NULL
 * (counted as lost) if the buffer is full or this CPU is already writing
 * (an NMI inside a write); on success the caller fills the record and
 * calls tprof_record_end().
 */
/* A record dropped without touching the writer: counted in the totals. */
static void tprof_count_lost(struct tprof_buffer_ctl *ctl, bool is_sample)
{
	if (is_sample) {
		WRITE_ONCE(ctl->samples_taken, ctl->samples_taken + 1);
		WRITE_ONCE(ctl->lost_samples, ctl->lost_samples + 1);
	} else {
		WRITE_ONCE(ctl->lost_records, ctl->lost_records + 1);
	}
}

void *tprof_record_begin(struct tprof_session *s,
				struct tprof_sampling_cpu **pcp, u32 size,
				bool is_sample)
{
	struct tprof_sampling_cpu *pc = this_cpu_ptr(s->cpus);
	void *rec;

	*pcp = pc;
	if (++pc->nesting != 1 || unlikely(!pc->writer.halves)) {
		/*
		 * The interrupted writer owns the state, or this CPU has no
		 * halves (it came online over the owner's memory limit).
		 */
		tprof_count_lost(pc->writer.ctl, is_sample);
		pc->nesting--;
		return NULL;
	}
	{
		u64 seq = pc->writer.seq;

		rec = tprof_sbuf_reserve(&pc->writer, size, is_sample,
					 local_clock());
		if (pc->writer.seq != seq)
			irq_work_queue(&s->wake_work);
	}
	if (!rec)
		pc->nesting--;
	else
		memset(rec, 0, size);
	return rec;
}

/*
 * An address space's id for the session's life. The mm's address alone is
 * not one: a freed mm_struct's memory is soon another's (tprofctl's forked
 * child execs sh, which execs the command: the command's mm takes the
 * fork's freed slot), and the two spaces' mappings would merge. So the id
 * also hashes what exec gives each image and its mm keeps: the executable's
 * file and the randomised mmap base and stack top. A reused slot with the
 * same three is the same image at the same layout (ASLR off), whose
 * mappings are the same. Only pointer values are read, none dereferenced.
 */
static u64 tprof_space_id(struct tprof_session *s, struct mm_struct *mm)
{
	if (!mm)
		return 0;
	return siphash_4u64((u64)(unsigned long)mm,
			    (u64)(unsigned long)rcu_access_pointer(mm->exe_file),
			    mm->mmap_base, mm->start_stack, &s->space_key);
}

void tprof_sample(struct perf_event *event, struct perf_sample_data *data,
		  struct pt_regs *regs)
{
	struct tprof_session *s = event->overflow_handler_context;
	unsigned long flags;

	if (!READ_ONCE(s->running) || !regs)
		return;
	/*
	 * System-wide: a CPU's counter fires briefly after the CPU was
	 * removed: ignore it. One process: only the target's threads and
	 * their descendants carry (inherited) counters.
	 */
	if (!s->target && tprof_cpu_event(&s->events, 0) != event)
		return;
	/* record -C: one process's counters run everywhere, sample here only. */
	if (s->sample_cpus &&
	    !cpumask_test_cpu(smp_processor_id(), s->sample_cpus))
		return;
	/*
	 * A task counter can fire on a CPU after its cpu_down notification
	 * published the partial half (nothing more goes into that buffer), or
	 * on a CPU without halves: counted as lost.
	 */
	if (s->target && !READ_ONCE(tprof_ctl(s, smp_processor_id())->online)) {
		local_irq_save(flags);
		tprof_count_lost(tprof_ctl(s, smp_processor_id()), true);
		local_irq_restore(flags);
		return;
	}
	tprof_sample_regs(s, regs);
}

/*
 * AGGREGATE: counts the sample under @ip (an address, or a stack's key) in
 * this CPU's table (IRQs off). Returns its entry (*fresh: new there), or
 * NULL where the table had no room or an NMI sample landed inside another
 * write: the record path then writes it or counts it lost.
 */
static struct tprof_aggregate_entry *
tprof_sample_count(struct tprof_session *s, struct tprof_sampling_cpu *pc, u64 ip,
		   u64 space_id, u32 pid, u32 flags, bool *fresh)
{
	struct tprof_aggregate_entry *e = NULL;

	if (++pc->nesting == 1)
		e = tprof_agg_add(s, ip, space_id, pid, flags, fresh);
	pc->nesting--;
	return e;
}

/* A count whose record could not be written: the sample is lost, not counted. */
static void tprof_sample_uncount(struct tprof_session *s, struct tprof_sampling_cpu *pc,
				 struct tprof_aggregate_entry *e)
{
	pc->nesting++;	/* an NMI's sample meanwhile is lost, not put in this slot */
	tprof_agg_unadd(s, e);
	pc->nesting--;
}

/*
 * A stack's key in the counting tables: a hash of the sample's ip and
 * walk, keyed by the session so that no process can make two stacks
 * collide; the entry adds pid, space and flags.
 */
static u64 tprof_stack_key(struct tprof_session *s, u64 ip, const struct tprof_rec_stack *st,
			   const u64 *frames, unsigned int nframes)
{
	return siphash_3u64(siphash(frames, nframes * sizeof(u64), &s->space_key), ip,
			    (u64)st->nr_kernel << 48 | (u64)st->nr_user << 32 | st->flags,
			    &s->space_key);
}

/*
 * One sample of current at @regs, from any producer (a counter's overflow,
 * the tick) once it decided the sample is the session's.
 */
void tprof_sample_regs(struct tprof_session *s, struct pt_regs *regs)
{
	struct task_struct *task = current;
	struct tprof_sampling_cpu *pc;
	struct tprof_rec_sample *rec;
	struct tprof_rec_stack st = {};
	struct tprof_aggregate_entry *counted = NULL;
	struct pt_regs *uregs = NULL;
	u64 key = 0;
	unsigned int nframes = 0;
	bool user, idle, stack = false, ustack;
	unsigned long flags;
	u64 space_id;
	u32 size;

	tprof_windows_sample(s, instruction_pointer(regs), task, user_mode(regs));

	local_irq_save(flags);
	user = user_mode(regs);
	idle = is_idle_task(task);
	pc = this_cpu_ptr(s->cpus);
	space_id = user || (s->config.flags & TPROF_SAMPLING_STACKS) ? tprof_space_id(s, task->mm) : 0;
	if ((s->config.flags & TPROF_SAMPLING_STACKS) && !idle && !pc->stack_busy) {
		pc->stack_busy = 1;
		nframes = tprof_sample_stack(s, regs, user, space_id, &st, pc->stack, &uregs);
		stack = true;
	}
	/* With unwind tables, a copy only where they did not cover the walk. */
	ustack = uregs && (s->config.flags & TPROF_SAMPLING_USER_STACK) &&
		 (!s->unwind || (st.flags & TPROF_STACK_USER_UNCOVERED));
	/*
	 * Counted in the table: a sample already there is taken (unless a
	 * record is asked for too); a stack new there is written below as its
	 * key's definition, before any reader can take the count. A stack the
	 * tables did not cover goes as a record with its copy, for the reader
	 * to walk: its key would be the partial walk's.
	 */
	if ((s->config.flags & TPROF_SAMPLING_AGGREGATE) && !ustack) {
		const bool shown = user || s->show_kernel;
		u32 eflags = (user ? TPROF_SAMPLE_USER : 0) | (idle ? TPROF_SAMPLE_IDLE : 0) |
			     (shown ? 0 : TPROF_SAMPLE_HIDDEN);
		u64 ip = shown ? instruction_pointer(regs) : 0;
		bool fresh = false;

		if (stack) {
			key = tprof_stack_key(s, ip, &st, pc->stack, nframes);
			eflags |= TPROF_SAMPLE_STACK_KEY;
		}
		counted = tprof_sample_count(s, pc, stack ? key : ip,
					     user || (st.flags & TPROF_STACK_USER_IP) ? space_id : 0,
					     idle ? 0 : task_tgid_nr_ns(task, s->pid_ns), eflags, &fresh);
		if (counted && (user || (st.flags & TPROF_STACK_USER_IP)))
			tprof_request_maps(s, pc, space_id);
		if (counted && !(s->config.flags & TPROF_SAMPLING_AGGREGATE_RECORDS) &&
		    !(stack && fresh)) {
			WRITE_ONCE(pc->writer.ctl->samples_taken, pc->writer.ctl->samples_taken + 1);
			goto out;
		}
	}
	size = sizeof(*rec) + (stack ? sizeof(st) + nframes * sizeof(u64) : 0) +
	       (ustack ? sizeof(struct tprof_rec_user_stack) + s->config.user_stack_bytes : 0);
	rec = tprof_record_begin(s, &pc, size, true);
	if (!rec) {
		if (counted)
			tprof_sample_uncount(s, pc, counted);
		goto out;
	}
	rec->hdr.type = TPROF_REC_SAMPLE;
	rec->hdr.size = size;
	rec->time_ns = local_clock();
	/* In the owner's pid namespace (0 outside it). */
	rec->pid = idle ? 0 : task_tgid_nr_ns(task, s->pid_ns);
	rec->tid = idle ? 0 : task_pid_nr_ns(task, s->pid_ns);
	rec->cpu = smp_processor_id();
	rec->flags = (user ? TPROF_SAMPLE_USER : 0) | (idle ? TPROF_SAMPLE_IDLE : 0);
	if (user || s->show_kernel) {
		rec->ip = instruction_pointer(regs);
		if ((s->config.flags & TPROF_SAMPLING_CALLERS) &&
		    tprof_arch_sample_caller(regs, user, &rec->caller))
			rec->flags |= TPROF_SAMPLE_CALLER;
	} else {
		rec->flags |= TPROF_SAMPLE_HIDDEN;
	}
	if (stack) {
		rec->flags |= TPROF_SAMPLE_STACK;
		memcpy(rec + 1, &st, sizeof(st));
		memcpy((u8 *)(rec + 1) + sizeof(st), pc->stack, nframes * sizeof(u64));
		if (counted) {
			rec->caller = key;
			rec->flags |= TPROF_SAMPLE_STACK_KEY |
				      (s->config.flags & TPROF_SAMPLING_AGGREGATE_RECORDS ?
				       0 : TPROF_SAMPLE_COUNTED);
		}
	}
	if (ustack) {
		struct tprof_rec_user_stack *us = (void *)((u8 *)(rec + 1) + sizeof(st) +
							   nframes * sizeof(u64));

		us->asked = s->config.user_stack_bytes;
		tprof_sample_user_stack(uregs, us, (u8 *)(us + 1));
		rec->flags |= TPROF_SAMPLE_USER_STACK;
	}
	/* A kernel-mode sample's stack reaches into its user space too. */
	if (user || (st.flags & TPROF_STACK_USER_IP)) {
		rec->space_id = space_id;
		tprof_request_maps(s, pc, rec->space_id);
	}
	tprof_record_end(pc);
out:
	if (stack)
		pc->stack_busy = 0;
	local_irq_restore(flags);
}
