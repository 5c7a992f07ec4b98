// SPDX-License-Identifier: GPL-2.0
/*
 * Counting windows (IPCOM000049216D, the Instruction Address Sampler) and
 * profil(2) on top of the sampling session: every sample tprof_sample()
 * takes is also counted, independently, in each window of the session (the
 * index math is in core/window_math.c, the semantics in the uapi header).
 *
 * Context rules: tprof_windows_sample() runs in the sample handler (hard
 * IRQ, or NMI for hardware events) and the fork/exec/exit hooks with
 * preemption off: they only read the table through RCU and do atomic
 * increments and cmpxchg on memory allocated when the window was added.
 * Shared atomic counters rather than per-CPU arrays: the memory stays
 * bounded by TPROF_WINDOW_MAX_CELLS whatever the number of CPUs, a read is
 * one pass with no summing, and at most TPROF_SAMPLING_MAX_HZ samples per
 * CPU hit them, so contention on a cell's cache line is rare and cheap
 * next to the rest of a sample.
 *
 * Lifetime: the table hangs off its session (tprof_session.windows); it
 * is created by the first WINDOW_ADD of the session and published with
 * rcu_assign_pointer(); windows are only appended (slot
 * filled, then nr published with a store-release) and live until the
 * session's owner file is released, which unpublishes the table, waits for
 * an RCU grace period (every sample handler and hook that could see it has
 * returned) and frees it.
 *
 * The ioctls' side (the session's ownership, copies from and to userspace,
 * checks, permissions) is windows_ioctl.c; it calls tprof_window_add(),
 * tprof_window_read() and tprof_windows_list() here.
 */
#include <linux/atomic.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/coredump.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include "windows.h"
#include "admission.h"
#include "pid_set.h"
#include "sampling.h"
#include "core/window_math.h"

/* Processes a process/profil window follows at once (profil: fork). */
#define TPROF_WINDOW_PROCS 32

struct tprof_window {
	struct tprof_wm_geom g;
	u32 id;
	struct pid *target;	/* as added (referenced), NULL for a kernel window */
	u32 flags;		/* TPROF_WINDOW_* */
	atomic_t *cells;	/* g.nr_cells counters (NULL if none) */
	atomic64_t in_range;
	atomic64_t out_of_range;
	atomic64_t wait;
	atomic64_t untracked_forks;
	/* Processes followed, by identity (pid_set.h): a stale entry of a
	 * process that exited never matches the next one given its number. */
	struct pid *procs[TPROF_WINDOW_PROCS];
};

struct tprof_window_table {
	unsigned int nr;	/* windows published (store-release) */
	u64 cells;		/* budget used; under tprof_windows_mutex */
	struct tprof_window *w[TPROF_MAX_WINDOWS];
};

static DEFINE_MUTEX(tprof_windows_mutex);

static struct tprof_window_table *tprof_windows_locked(struct tprof_session *s)
{
	return rcu_dereference_protected(s->windows,
					 lockdep_is_held(&tprof_windows_mutex));
}

static bool tprof_window_follows(struct tprof_window *w, struct task_struct *p)
{
	return tprof_pid_set_has(w->procs, TPROF_WINDOW_PROCS, task_tgid(p));
}

/* From a hook of a task of @p's process (see pid_set.h). */
static void tprof_window_forget(struct tprof_window *w, struct task_struct *p)
{
	tprof_pid_set_remove(w->procs, TPROF_WINDOW_PROCS, task_tgid(p));
}

/* ---- Sample path and hooks (IRQ/NMI, preemption off) ------------------------ */

void tprof_windows_sample(struct tprof_session *s, u64 pc,
			  struct task_struct *task, bool user)
{
	struct tprof_window_table *t = rcu_dereference_sched(s->windows);
	unsigned int i, n;
	bool idle;

	if (!t)
		return;
	idle = is_idle_task(task);
	n = smp_load_acquire(&t->nr);
	for (i = 0; i < n; i++) {
		struct tprof_window *w = t->w[i];
		u64 idx;
		bool in;

		if (w->g.off)
			continue;
		if (idle) {
			atomic64_inc(&w->wait);
			continue;
		}
		if (w->g.kind == TPROF_WINDOW_KERNEL)
			in = !user && tprof_wm_index(&w->g, pc, &idx);
		else if (tprof_window_follows(w, task))
			in = user && tprof_wm_index(&w->g, pc, &idx);
		else
			continue;	/* not this window's process */
		if (in) {
			atomic_inc(&w->cells[idx]);
			atomic64_inc(&w->in_range);
		} else {
			atomic64_inc(&w->out_of_range);
		}
	}
}

/* A new process forked by a followed one is followed too (profil). */
void tprof_windows_on_fork(struct tprof_session *s, struct task_struct *parent,
			   struct task_struct *child)
{
	struct tprof_window_table *t = rcu_dereference_sched(s->windows);
	unsigned int i, n;

	if (!t || child->pid != child->tgid)
		return;
	n = smp_load_acquire(&t->nr);
	for (i = 0; i < n; i++) {
		struct tprof_window *w = t->w[i];

		if (w->g.kind != TPROF_WINDOW_PROFIL || w->g.off ||
		    !tprof_window_follows(w, parent))
			continue;
		if (!tprof_pid_set_add(w->procs, TPROF_WINDOW_PROCS, task_tgid(child)))
			atomic64_inc(&w->untracked_forks);
	}
}

/*
 * profil is turned off by exec (for that process only). An exec into a
 * non-dumpable (setuid) image also ends an unprivileged owner's process
 * windows on it: a new security domain (perf exits task counters there).
 */
void tprof_windows_on_exec(struct tprof_session *s, struct task_struct *p)
{
	struct tprof_window_table *t = rcu_dereference_sched(s->windows);
	bool secure;
	unsigned int i, n;

	if (!t)
		return;
	secure = !s->show_kernel && tprof_exec_leaves_observers(p);
	n = smp_load_acquire(&t->nr);
	for (i = 0; i < n; i++)
		if (t->w[i]->g.kind == TPROF_WINDOW_PROFIL ||
		    (secure && t->w[i]->g.kind == TPROF_WINDOW_PROCESS))
			tprof_window_forget(t->w[i], p);
}

/* The last thread of a process exits: its pid may be reused, forget it. */
void tprof_windows_on_exit(struct tprof_session *s, struct task_struct *p)
{
	struct tprof_window_table *t = rcu_dereference_sched(s->windows);
	unsigned int i, n;

	if (!t || atomic_read(&p->signal->live) != 0)
		return;
	n = smp_load_acquire(&t->nr);
	for (i = 0; i < n; i++)
		if (t->w[i]->g.kind != TPROF_WINDOW_KERNEL)
			tprof_window_forget(t->w[i], p);
}

/* ---- What the ioctls do (process context) ------------------------------------ */

/* Process context, once no sample or hook can see @w. */
static void tprof_window_free(struct tprof_window *w)
{
	tprof_pid_set_clear(w->procs, TPROF_WINDOW_PROCS);
	put_pid(w->target);
	kvfree(w->cells);
	kfree(w);
}

/*
 * WINDOW_ADD on @s, with the window windows_ioctl.c has copied and checked
 * (@g, the request's @flags) and, for a process or profil window, admitted:
 * @adm is ended here, once the window is published or refused. 0 with its
 * id in *@id, or -ENOMEM, -ENOSPC.
 */
int tprof_window_add(struct tprof_session *s, const struct tprof_wm_geom *g,
		     u32 flags, struct tprof_admission *adm, u32 *id)
{
	struct tprof_window_table *t;
	struct tprof_window *w;
	int ret;

	w = kzalloc(sizeof(*w), GFP_KERNEL_ACCOUNT);
	if (!w) {
		tprof_admit_end(adm);
		return -ENOMEM;
	}
	if (g->nr_cells) {
		w->cells = kvcalloc(g->nr_cells, sizeof(*w->cells), GFP_KERNEL_ACCOUNT);
		if (!w->cells) {
			kfree(w);
			tprof_admit_end(adm);
			return -ENOMEM;
		}
	}
	w->g = *g;
	w->flags = (flags & TPROF_WINDOW_CELLS32) | (g->off ? TPROF_WINDOW_OFF : 0);
	if (adm->pid) {
		/*
		 * By identity: had the process exited already (a zombie is
		 * admitted), the exit hook that would forget it has run, and
		 * its number may go to another process: that one never matches.
		 */
		w->target = get_pid(adm->pid);
		tprof_pid_set_add(w->procs, TPROF_WINDOW_PROCS, adm->pid);
	}

	mutex_lock(&tprof_windows_mutex);
	t = tprof_windows_locked(s);
	if (!t) {
		ret = -ENOMEM;
		t = kzalloc(sizeof(*t), GFP_KERNEL_ACCOUNT);
		if (!t)
			goto unlock;
		rcu_assign_pointer(s->windows, t);
	}
	if (t->nr >= TPROF_MAX_WINDOWS)
		ret = -ENOSPC;
	else if (t->cells + g->nr_cells > TPROF_WINDOW_MAX_CELLS)
		ret = -ENOMEM;
	else
		ret = 0;
	if (!ret) {
		w->id = t->nr;
		t->cells += g->nr_cells;
		t->w[t->nr] = w;
		smp_store_release(&t->nr, t->nr + 1);
	}
unlock:
	mutex_unlock(&tprof_windows_mutex);
	tprof_admit_end(adm);
	if (ret) {
		tprof_window_free(w);
		return ret;
	}
	*id = w->id;
	return 0;
}

/*
 * The process a window was added for, as the reader's pid namespace numbers
 * it: 0 if it is not visible there or gone.
 */
static u32 tprof_window_pid_vnr(struct pid *target)
{
	if (!target || !pid_has_task(target, PIDTYPE_TGID))
		return 0;
	return pid_vnr(target);
}

static void tprof_window_fill_info(struct tprof_window *w, struct tprof_window_info *i)
{
	memset(i, 0, sizeof(*i));
	i->id = w->id;
	i->kind = w->g.kind;
	i->pid = tprof_window_pid_vnr(w->target);
	i->flags = w->flags;
	i->start = w->g.start;
	i->length = w->g.length;
	i->block_bytes = w->g.kind == TPROF_WINDOW_PROFIL ? 0 : 1U << w->g.block_shift;
	i->scale = w->g.scale;
	i->nr_cells = w->g.nr_cells;
	i->cell_bytes = w->g.cell_bytes;
	i->nr_procs = tprof_pid_set_count(w->procs, TPROF_WINDOW_PROCS);
	i->in_range = atomic64_read(&w->in_range);
	i->out_of_range = atomic64_read(&w->out_of_range);
	i->wait = atomic64_read(&w->wait);
	i->untracked_forks = atomic64_read(&w->untracked_forks);
}

/* Copies cells [first, first + n) to @ucells through a bounce page. */
static long tprof_window_copy_cells(struct tprof_window *w, void __user *ucells,
				    u64 first, u64 n)
{
	u32 cb = w->g.cell_bytes, per = PAGE_SIZE / cb;
	long ret = 0;
	u64 done = 0;
	void *buf;

	buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	while (done < n) {
		u32 k, chunk = n - done < per ? n - done : per;

		for (k = 0; k < chunk; k++) {
			u32 v = tprof_wm_cell_value(atomic_read(&w->cells[first + done + k]), cb);

			if (cb == 2)
				((u16 *)buf)[k] = v;
			else
				((u32 *)buf)[k] = v;
		}
		if (copy_to_user((u8 __user *)ucells + done * cb, buf, (size_t)chunk * cb)) {
			ret = -EFAULT;
			break;
		}
		done += chunk;
		cond_resched();
	}
	kfree(buf);
	return ret;
}

/*
 * WINDOW_READ on @s, with the request windows_ioctl.c has copied and
 * checked: window r->id's totals into r->info, then up to r->capacity of
 * its cells from r->first on to r->cells, their number in r->copied. The
 * cells go to userspace from here, under the windows mutex, as the totals
 * are read. 0, or -EINVAL (no such window), -ENOMEM, -EFAULT.
 */
int tprof_window_read(struct tprof_session *s, struct tprof_window_read *r)
{
	struct tprof_window_table *t;
	struct tprof_window *w;
	int ret;

	mutex_lock(&tprof_windows_mutex);
	t = tprof_windows_locked(s);
	ret = -EINVAL;
	if (!t || r->id >= t->nr)
		goto unlock;
	w = t->w[r->id];
	/* Totals first: cells only grow, so they cover at least in_range. */
	tprof_window_fill_info(w, &r->info);
	r->copied = 0;
	ret = 0;
	if (r->cells && r->capacity && r->first < w->g.nr_cells) {
		u64 n = w->g.nr_cells - r->first;

		if (n > r->capacity)
			n = r->capacity;
		ret = tprof_window_copy_cells(w, u64_to_user_ptr(r->cells), r->first, n);
		if (!ret)
			r->copied = n;
	}
unlock:
	mutex_unlock(&tprof_windows_mutex);
	return ret;
}

/*
 * WINDOW_LIST on @s, with the request windows_ioctl.c has copied and
 * checked: the number of windows in l->count, and the first l->capacity
 * of them to l->windows (userspace, from here, under the windows mutex).
 * 0 or -EFAULT.
 */
int tprof_windows_list(struct tprof_session *s, struct tprof_window_list *l)
{
	struct tprof_window_info __user *uinfo;
	struct tprof_window_info info;
	struct tprof_window_table *t;
	unsigned int i;
	int ret = 0;

	uinfo = u64_to_user_ptr(l->windows);
	mutex_lock(&tprof_windows_mutex);
	t = tprof_windows_locked(s);
	l->count = t ? t->nr : 0;
	for (i = 0; i < l->count && i < l->capacity; i++) {
		tprof_window_fill_info(t->w[i], &info);
		if (copy_to_user(&uinfo[i], &info, sizeof(info))) {
			ret = -EFAULT;
			break;
		}
	}
	mutex_unlock(&tprof_windows_mutex);
	return ret;
}

/* The session is stopped and being freed: free its windows. */
void tprof_windows_session_end(struct tprof_session *s)
{
	struct tprof_window_table *t;
	unsigned int i;

	mutex_lock(&tprof_windows_mutex);
	t = tprof_windows_locked(s);
	if (!t) {
		mutex_unlock(&tprof_windows_mutex);
		return;
	}
	RCU_INIT_POINTER(s->windows, NULL);
	mutex_unlock(&tprof_windows_mutex);
	synchronize_rcu();	/* samples and hooks that saw it are done */
	for (i = 0; i < t->nr; i++)
		tprof_window_free(t->w[i]);
	kfree(t);
}
