// SPDX-License-Identifier: GPL-2.0
/*
 * Process records (COMM, EXIT) written from the scheduler hooks, and
 * address-space records (MAP) written by a workqueue for every address
 * space seen in a user-mode sample, with an mmget() reference so
 * short-lived processes still resolve.
 */
#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/hash.h>
#include <linux/irq_work.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/coredump.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include "arch/vdso.h"
#include "sampling.h"
#include "admission.h"
#include "pid_set.h"
#include "windows.h"

/* Queues a MAP capture of current's address space unless recently done. */
void tprof_request_maps(struct tprof_session *s,
			struct tprof_sampling_cpu *pc, u64 space_id)
{
	struct mm_struct *mm = current->mm;
	struct tprof_map_cache_entry *e;
	int gen = atomic_read(&s->map_gen);
	int i;

	/*
	 * Hardware counters overflow in NMI: everything below is NMI-safe
	 * (atomics, mmget_not_zero()), and the work is queued through irq_work.
	 */
	if (!mm)
		return;
	e = &pc->map_cache[space_id % TPROF_MAP_CACHE];
	if (e->space_id == space_id && e->map_count == READ_ONCE(mm->map_count) &&
	    e->gen == gen)
		return;
	for (i = 0; i < TPROF_MAP_REQUESTS; i++) {
		struct tprof_map_request *r = &s->map_req[i];

		if (atomic_cmpxchg(&r->state, MAP_REQ_FREE, MAP_REQ_FILLING) !=
		    MAP_REQ_FREE)
			continue;
		if (!mmget_not_zero(mm)) {
			atomic_set(&r->state, MAP_REQ_FREE);
			return;
		}
		r->mm = mm;
		get_task_struct(current);	/* a refcount: NMI-safe */
		r->task = current;
		r->pid = task_tgid_nr_ns(current, s->pid_ns);
		r->space_id = space_id;
		r->time_ns = local_clock();
		atomic_set_release(&r->state, MAP_REQ_READY);
		irq_work_queue(&s->map_kick);
		e->space_id = space_id;
		e->map_count = READ_ONCE(mm->map_count);
		e->gen = gen;
		return;
	}
	/* Every request slot busy: the space may resolve later, or not. */
	WRITE_ONCE(pc->writer.ctl->lost_records, pc->writer.ctl->lost_records + 1);
}

/* ---- The processes a one-process session follows --------------------------- */

bool tprof_session_follows(struct tprof_session *s, struct task_struct *p)
{
	return !s->target || tprof_pid_set_has(s->follow, TPROF_FOLLOW_MAX, task_tgid(p));
}

/* Takes a reference on @pid in a free slot; false if none is free. */
bool tprof_follow_add(struct tprof_session *s, struct pid *pid)
{
	return tprof_pid_set_add(s->follow, TPROF_FOLLOW_MAX, pid);
}

/*
 * Stops following @pid; true if it was followed (once). Called from the
 * exec and exit hooks of a task of that process (see pid_set.h).
 */
bool tprof_follow_remove(struct tprof_session *s, struct pid *pid)
{
	return tprof_pid_set_remove(s->follow, TPROF_FOLLOW_MAX, pid);
}

/* Session end (process context): drops every reference left. */
void tprof_follow_clear(struct tprof_session *s)
{
	tprof_pid_set_clear(s->follow, TPROF_FOLLOW_MAX);
}

void tprof_write_comm(struct tprof_session *s, struct task_struct *p,
		      u32 parent_pid, u32 kind)
{
	struct tprof_sampling_cpu *pc;
	struct tprof_rec_comm *rec;
	unsigned long flags;

	if (!tprof_session_follows(s, p))
		return;
	local_irq_save(flags);
	rec = tprof_record_begin(s, &pc, sizeof(*rec), false);
	if (rec) {
		rec->hdr.type = TPROF_REC_COMM;
		rec->hdr.size = sizeof(*rec);
		rec->time_ns = local_clock();
		rec->pid = task_tgid_nr_ns(p, s->pid_ns);
		rec->parent_pid = parent_pid;
		rec->kind = kind;
		/* A bounded copy of a name that may change under us. */
		strscpy_pad(rec->comm, p->comm, sizeof(rec->comm));
		tprof_record_end(pc);
	}
	local_irq_restore(flags);
}

/*
 * The EXIT of a process is written by the first of its last threads to get
 * here: each looks for its signal_struct in the exited table and only the
 * one that does not find it (and inserts it) writes the record. Under a
 * lock, so two threads never both miss it. A full set replaces one of its
 * 8 entries in turn: that process's exit is long over (its threads pass
 * here within microseconds of each other).
 */
static bool tprof_exit_claim(struct tprof_session *s, struct signal_struct *sig)
{
	struct signal_struct **set =
		&s->exited[hash_ptr(sig, ilog2(TPROF_EXITED_SETS)) * TPROF_EXITED_WAYS];
	unsigned long flags;
	int i, free = -1;
	bool first = true;

	raw_spin_lock_irqsave(&s->exited_lock, flags);
	for (i = 0; i < TPROF_EXITED_WAYS; i++) {
		if (set[i] == sig) {
			first = false;
			break;
		}
		if (!set[i] && free < 0)
			free = i;
	}
	if (first)
		set[free >= 0 ? free : s->exited_victim++ % TPROF_EXITED_WAYS] = sig;
	raw_spin_unlock_irqrestore(&s->exited_lock, flags);
	return first;
}

/* A new process reuses @sig: it has not exited. */
static void tprof_exit_forget(struct tprof_session *s, struct signal_struct *sig)
{
	struct signal_struct **set =
		&s->exited[hash_ptr(sig, ilog2(TPROF_EXITED_SETS)) * TPROF_EXITED_WAYS];
	unsigned long flags;
	int i;

	raw_spin_lock_irqsave(&s->exited_lock, flags);
	for (i = 0; i < TPROF_EXITED_WAYS; i++)
		if (set[i] == sig)
			set[i] = NULL;
	raw_spin_unlock_irqrestore(&s->exited_lock, flags);
}

void tprof_sampling_on_fork(struct task_struct *parent, struct task_struct *child)
{
	struct tprof_session *s = tprof_live_session();

	if (!s)
		return;
	tprof_windows_on_fork(s, parent, child);
	/* New processes only; new threads share their process's records. */
	if (child->pid != child->tgid)
		return;
	tprof_exit_forget(s, child->signal);
	if (s->target) {
		if (!tprof_session_follows(s, parent))
			return;
		if (!tprof_follow_add(s, task_tgid(child))) {
			/* No slot: its process records are lost, counted. */
			struct tprof_buffer_ctl *ctl =
				tprof_ctl(s, smp_processor_id());

			WRITE_ONCE(ctl->lost_records, ctl->lost_records + 1);
			return;
		}
	}
	tprof_write_comm(s, child, task_tgid_nr_ns(parent, s->pid_ns),
			 TPROF_COMM_FORK);
}

/* An EXIT record of @p's process; @flags: TPROF_EXIT_*. */
static void tprof_write_exit(struct tprof_session *s, struct task_struct *p,
			     u32 flags)
{
	struct tprof_sampling_cpu *pc;
	struct tprof_rec_exit *rec;
	unsigned long irqs;

	local_irq_save(irqs);
	rec = tprof_record_begin(s, &pc, sizeof(*rec), false);
	if (rec) {
		rec->hdr.type = TPROF_REC_EXIT;
		rec->hdr.size = sizeof(*rec);
		rec->time_ns = local_clock();
		rec->pid = task_tgid_nr_ns(p, s->pid_ns);
		rec->flags = flags;
		tprof_record_end(pc);
	}
	local_irq_restore(irqs);
}

void tprof_sampling_on_exec(struct task_struct *p)
{
	struct tprof_session *s = tprof_live_session();

	if (!s)
		return;
	tprof_windows_on_exec(s, p);
	atomic_inc(&s->map_gen);
	/*
	 * A non-dumpable (e.g. setuid) image is a new security domain: perf
	 * has already exited the process's task counters (begin_new_exec()),
	 * and its records end here too.
	 */
	if (s->target && tprof_exec_leaves_observers(p)) {
		/* The owner learns that it left, and why (not what it became). */
		if (tprof_follow_remove(s, task_tgid(p)))
			tprof_write_exit(s, p, TPROF_EXIT_SECURE_EXEC);
		return;
	}
	tprof_write_comm(s, p, 0, TPROF_COMM_EXEC);
}

void tprof_sampling_on_exit(struct task_struct *p)
{
	struct tprof_session *s = tprof_live_session();

	if (!s)
		return;
	tprof_windows_on_exit(s, p);
	/*
	 * The last thread of the process: signal->live already counts it out.
	 * Several threads exiting together can all see it at zero here (the
	 * decrement happens earlier in do_exit()), so the process's
	 * signal_struct is claimed once in exited[] (tprof_exit_claim): one
	 * EXIT per process. A slot is cleared when a new process reuses that
	 * signal_struct (fork hook, before the new process can run or exit).
	 */
	if (atomic_read(&p->signal->live) != 0)
		return;
	if (!tprof_exit_claim(s, p->signal))
		return;	/* another thread wrote it */
	if (s->target && !tprof_follow_remove(s, task_tgid(p)))
		return;
	tprof_write_exit(s, p, 0);
}

/* ---- Address-space records (workqueue) ------------------------------------ */

static void tprof_write_map(struct tprof_session *s,
			    const struct tprof_map_request *r,
			    struct vm_area_struct *vma, const char *path)
{
	size_t len = strlen(path) + 1;
	u32 size = tprof_rec_size(sizeof(struct tprof_rec_map) + len);
	struct tprof_sampling_cpu *pc;
	struct tprof_rec_map *rec;
	unsigned long flags;

	local_irq_save(flags);
	rec = tprof_record_begin(s, &pc, size, false);
	if (rec) {
		rec->hdr.type = TPROF_REC_MAP;
		rec->hdr.size = size;
		rec->time_ns = r->time_ns;
		rec->pid = r->pid;
		rec->space_id = r->space_id;
		rec->start = vma->vm_start;
		rec->end = vma->vm_end;
		rec->pgoff = (u64)vma->vm_pgoff << PAGE_SHIFT;
		memcpy(rec + 1, path, len);
		tprof_record_end(pc);
	}
	local_irq_restore(flags);
}

static void tprof_capture_maps(struct tprof_session *s,
			       struct tprof_map_request *r, char *buf)
{
	struct vm_area_struct *vma;
	VMA_ITERATOR(vmi, r->mm, 0);

	/*
	 * A sample between exec_mmap() and the exec hook may have asked for
	 * a setuid image's maps: not for an owner without CAP_PERFMON.
	 */
	if (!s->show_kernel && !tprof_image_user_dumpable(r->task, r->mm))
		return;
	mmap_read_lock(r->mm);
	for_each_vma(vmi, vma) {
		char *path;

		if (!(vma->vm_flags & VM_EXEC))
			continue;
		if (!vma->vm_file) {
			/* Code every process runs (clock_gettime...): name it. */
			if (vma->vm_start == tprof_arch_vdso_start(r->mm))
				tprof_write_map(s, r, vma, "[vdso]");
			continue;
		}
		path = d_path(&vma->vm_file->f_path, buf, PATH_MAX);
		if (IS_ERR(path))
			continue;
		tprof_write_map(s, r, vma, path);
	}
	mmap_read_unlock(r->mm);
}

/*
 * irq_work (hard IRQ; the irq_work thread on PREEMPT_RT): queue_work() is
 * not NMI-safe, irq_work_queue() is.
 */
void tprof_map_kick(struct irq_work *work)
{
	struct tprof_session *s = container_of(work, struct tprof_session,
					       map_kick);

	queue_work(tprof_map_wq, &s->map_work);
}

void tprof_map_worker(struct work_struct *work)
{
	struct tprof_session *s = container_of(work, struct tprof_session,
					       map_work);
	int i;

	/* A work item never runs concurrently with itself: path_buf is ours. */
	for (i = 0; i < TPROF_MAP_REQUESTS; i++) {
		struct tprof_map_request *r = &s->map_req[i];

		if (atomic_read_acquire(&r->state) != MAP_REQ_READY)
			continue;
		if (READ_ONCE(s->running))
			tprof_capture_maps(s, r, s->path_buf);
		mmput(r->mm);
		put_task_struct(r->task);
		r->mm = NULL;
		r->task = NULL;
		atomic_set_release(&r->state, MAP_REQ_FREE);
	}
}

void tprof_write_existing_processes(struct tprof_session *s)
{
	struct task_struct *p;

	/* IRQs go off per record inside: a long list does not stall this CPU. */
	rcu_read_lock();
	for_each_process(p) {
		preempt_disable();
		tprof_write_comm(s, p, 0, TPROF_COMM_EXISTING);
		preempt_enable();
	}
	rcu_read_unlock();
}
