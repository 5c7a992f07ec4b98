// SPDX-License-Identifier: GPL-2.0
/*
 * Per-thread metrics: enable and disable, the table of tracked
 * threads and their lifecycle (new task, exec, free). The locking rules and
 * invariants are in metrics.h; the switch hook is in metrics_switch.c, the
 * ioctls (ENABLE and DISABLE's permission check and copy included) in
 * metrics_ioctl.c, the per-CPU perf counters in metrics_counters.c.
 */
#include <linux/log2.h>
#include <linux/moduleparam.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/string.h>
#include "metrics.h"
#include "admission.h"
#include "self_page.h"
#include "core/metrics_config.h"

struct tprof_metrics_state __rcu *tprof_metrics_live;
/* Serialises enable and disable. */
static DEFINE_MUTEX(tprof_metrics_mutex);
static u64 tprof_metrics_epoch;

/* Bounded: the table is kvmalloc'ed whole at enable. */
static unsigned int max_threads = 16384;

/* An unsigned parameter in [min, max]; anything else fails with EINVAL. */
static int tprof_param_set_range(const char *val, const struct kernel_param *kp,
				 unsigned int min, unsigned int max)
{
	unsigned int n;
	int ret = kstrtouint(val, 0, &n);

	if (ret)
		return ret;
	if (n < min || n > max) {
		pr_err("%s=%u: must be %u..%u\n", kp->name, n, min, max);
		return -EINVAL;
	}
	*(unsigned int *)kp->arg = n;
	return 0;
}

static int tprof_max_threads_set(const char *val, const struct kernel_param *kp)
{
	return tprof_param_set_range(val, kp, 1, TPROF_TI_MAX_CAPACITY);
}

static const struct kernel_param_ops tprof_max_threads_ops = {
	.set = tprof_max_threads_set,
	.get = param_get_uint,
};
module_param_cb(max_threads, &tprof_max_threads_ops, &max_threads, 0444);
MODULE_PARM_DESC(max_threads,
		 "threads the per-thread metrics table can hold (1..1048576)");

/*
 * Tombstones (exited threads' keys) that make the thread index rebuild
 * its hash, in percent of it: fewer means shorter lookups and more
 * rebuilds (0: after any removal that leaves one, which keeps a rebuild
 * going under churn). Read at enable.
 */
static unsigned int index_rebuild_pct = 25;

static int tprof_index_rebuild_pct_set(const char *val, const struct kernel_param *kp)
{
	return tprof_param_set_range(val, kp, 0, 50);
}

static const struct kernel_param_ops tprof_index_rebuild_pct_ops = {
	.set = tprof_index_rebuild_pct_set,
	.get = param_get_uint,
};
module_param_cb(index_rebuild_pct, &tprof_index_rebuild_pct_ops, &index_rebuild_pct, 0444);
MODULE_PARM_DESC(index_rebuild_pct,
		 "tombstones in the thread index, in percent of its hash, that make it rebuild (0..50, default 25)");

static char *metrics;
module_param(metrics, charp, 0444);
MODULE_PARM_DESC(metrics,
		 "turn per-thread metrics on at load, e.g. time,dispatches,page-faults");

/*
 * Where PCum(M) comes from, decided once at enable so the switch hook does
 * not look at metric types. Context switches are this CPU's dispatch count
 * (the same number perf's software event gives, without perf's per-switch
 * event machinery); other software events count in place in ev->count, so
 * only the rest need pmu->read().
 */
enum tprof_metric_source tprof_metric_source(const struct tprof_metric *m)
{
	switch (m->type) {
	case TPROF_METRIC_TIME:
		return TPROF_SRC_CLOCK;
	case TPROF_METRIC_DISPATCHES:
		return TPROF_SRC_DISPATCHES;
	case TPROF_METRIC_SOFTWARE:
		switch (m->config) {
		case PERF_COUNT_SW_CONTEXT_SWITCHES:
			return TPROF_SRC_DISPATCHES;
		case PERF_COUNT_SW_CPU_CLOCK:
		case PERF_COUNT_SW_TASK_CLOCK:
			return TPROF_SRC_EVENT_READ;	/* hrtimer-driven */
		default:
			return TPROF_SRC_EVENT_COUNT;
		}
	default:
		return TPROF_SRC_EVENT_READ;
	}
}

/* ---- The state of one run ------------------------------------------------ */

static void tprof_metrics_state_free(struct kref *ref)
{
	struct tprof_metrics_state *st =
		container_of(ref, struct tprof_metrics_state, ref);
	u32 i, j;

	flush_work(&st->reap_work);	/* enable's walk may have queued it */
	for (i = 0; st->slots && i < st->index.capacity; i++) {
		struct tprof_mslot *slot = &st->slots[i];

		put_pid(slot->tgid);
		put_pid(slot->tid);
		tprof_self_page_put(slot->self_page);
		for (j = 0; j < ARRAY_SIZE(slot->dead_pids); j++)
			put_pid(slot->dead_pids[j]);
		tprof_self_page_put(slot->dead_page);
	}
	free_percpu(st->cpu);
	kvfree(st->slots);
	kvfree(st->index_mem);
	kfree(st);
}

void tprof_metrics_state_put(struct tprof_metrics_state *st)
{
	kref_put(&st->ref, tprof_metrics_state_free);
}

/* A reference on the published run, or NULL (accounting is off). */
struct tprof_metrics_state *tprof_metrics_state_get(void)
{
	struct tprof_metrics_state *st;

	rcu_read_lock();
	st = rcu_dereference(tprof_metrics_live);
	if (st && !kref_get_unless_zero(&st->ref))
		st = NULL;
	rcu_read_unlock();
	return st;
}

/*
 * Entries of the index one rehash step copies under table_lock: the lock
 * (IRQs off) is dropped between steps, so a hash of 2^21 entries never
 * keeps a CPU's interrupts off for more than a few microseconds at a time.
 */
#define TPROF_REHASH_STEP 1024

/*
 * Tombstones piled up in the index: rebuild it into the spare array, a
 * step at a time (forks and exits in between update both arrays), then
 * wait until no lookup can see the old array before it becomes the spare.
 * Disable flushes this work after the hooks that queue it are gone.
 */
static void tprof_metrics_rehash_fn(struct work_struct *work)
{
	struct tprof_metrics_state *st =
		container_of(work, struct tprof_metrics_state, rehash_work);
	size_t bytes = sizeof(struct tprof_ti_entry) * (st->index.hash_mask + 1);
	struct tprof_ti_entry *old;
	unsigned long flags;

	raw_spin_lock_irqsave(&st->table_lock, flags);
	if (!st->spare || !tprof_thread_index_needs_rehash(&st->index)) {
		raw_spin_unlock_irqrestore(&st->table_lock, flags);
		return;
	}
	tprof_thread_index_rehash_begin(&st->index, st->spare);
	st->spare = NULL;
	raw_spin_unlock_irqrestore(&st->table_lock, flags);
	do {
		cond_resched();
		raw_spin_lock_irqsave(&st->table_lock, flags);
		old = tprof_thread_index_rehash_step(&st->index, TPROF_REHASH_STEP);
		raw_spin_unlock_irqrestore(&st->table_lock, flags);
	} while (!old);
	synchronize_rcu();	/* lookups run with preemption or IRQs off */
	memset(old, 0, bytes);
	raw_spin_lock_irqsave(&st->table_lock, flags);
	st->spare = old;
	raw_spin_unlock_irqrestore(&st->table_lock, flags);
	atomic64_inc(&st->rehashes);
}

/* ---- References dropped by the hooks ------------------------------------ */

/*
 * Takes @slot's dead references into @pids / @page (slot lock held).
 * Returns how many pids.
 */
static int tprof_mslot_take_dead(struct tprof_mslot *slot, struct pid **pids,
				 struct tprof_self_page **page)
{
	int i, n = 0;

	lockdep_assert_held(&slot->lock);
	for (i = 0; i < ARRAY_SIZE(slot->dead_pids); i++) {
		if (slot->dead_pids[i])
			pids[n++] = slot->dead_pids[i];
		slot->dead_pids[i] = NULL;
	}
	*page = slot->dead_page;
	slot->dead_page = NULL;
	return n;
}

static bool tprof_mslot_has_dead(const struct tprof_mslot *slot)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(slot->dead_pids); i++)
		if (slot->dead_pids[i])
			return true;
	return slot->dead_page;
}

/* Process context: drops the references the hooks left in the slots. */
static void tprof_metrics_reap_fn(struct work_struct *work)
{
	struct tprof_metrics_state *st =
		container_of(work, struct tprof_metrics_state, reap_work);
	struct tprof_mslot *slot, *next;
	struct llist_node *list = llist_del_all(&st->reap);

	llist_for_each_entry_safe(slot, next, list, reap_node) {
		struct pid *pids[ARRAY_SIZE(slot->dead_pids)];
		struct tprof_self_page *page;
		unsigned long flags;
		int n;

		raw_spin_lock_irqsave(&slot->lock, flags);
		n = tprof_mslot_take_dead(slot, pids, &page);
		slot->reap_queued = false;	/* its node is free again */
		raw_spin_unlock_irqrestore(&slot->lock, flags);
		while (n)
			put_pid(pids[--n]);
		tprof_self_page_put(page);
		cond_resched();
	}
}

/*
 * Lists @slot for the reaper (slot lock held). The caller kicks the reaper
 * with tprof_metrics_kick_reap() once it holds no slot lock: queue_work()
 * may wake a worker, which takes a runqueue lock, and the switch hook takes
 * slot locks under its runqueue lock.
 */
static void tprof_mslot_queue_reap(struct tprof_metrics_state *st,
				   struct tprof_mslot *slot)
{
	if (slot->reap_queued)
		return;
	slot->reap_queued = true;
	llist_add(&slot->reap_node, &st->reap);
}

/* No slot lock held (table_lock may be, as for the rehash work). */
static void tprof_metrics_kick_reap(struct tprof_metrics_state *st)
{
	if (!llist_empty(&st->reap))
		queue_work(system_unbound_wq, &st->reap_work);
}

/*
 * Hands a reference a hook drops to the reaper (slot lock held). The bound
 * in metrics.h keeps a free entry; were it broken, the put happens here
 * (right everywhere but PREEMPT_RT) after a warning.
 */
static void tprof_mslot_defer_put_pid(struct tprof_metrics_state *st,
				      struct tprof_mslot *slot, struct pid *pid)
{
	int i;

	if (!pid)
		return;
	for (i = 0; i < ARRAY_SIZE(slot->dead_pids); i++) {
		if (!slot->dead_pids[i]) {
			slot->dead_pids[i] = pid;
			tprof_mslot_queue_reap(st, slot);
			return;
		}
	}
	WARN_ON_ONCE(1);
	put_pid(pid);
}

static void tprof_mslot_defer_put_page(struct tprof_metrics_state *st,
				       struct tprof_mslot *slot,
				       struct tprof_self_page *page)
{
	if (!page)
		return;
	if (WARN_ON_ONCE(slot->dead_page)) {
		tprof_self_page_put(page);
		return;
	}
	slot->dead_page = page;
	tprof_mslot_queue_reap(st, slot);
}

/*
 * The layout of metrics.h: what the switch reads shares no cache line with
 * what fork, exit, free and drains write.
 */
#define TPROF_ST_LINE(f) (offsetof(struct tprof_metrics_state, f) / SMP_CACHE_BYTES)
#define TPROF_ST_LAST_LINE(f) \
	((offsetofend(struct tprof_metrics_state, f) - 1) / SMP_CACHE_BYTES)
/* The switch's fields: one line, then the index's lookup half on another. */
static_assert(TPROF_ST_LINE(cpu) == 0 && TPROF_ST_LAST_LINE(epoch) == 0);
static_assert(TPROF_ST_LAST_LINE(config.nr_metrics) == 0);
static_assert(TPROF_ST_LINE(index.hash) == TPROF_ST_LAST_LINE(index.hash_mask));
/* Everything written after enable (but self_pages) lies past them. */
static_assert(TPROF_ST_LINE(index.free_head) > TPROF_ST_LAST_LINE(index.hash_mask));
static_assert(TPROF_ST_LINE(index.free_head) > TPROF_ST_LAST_LINE(config));
static_assert(TPROF_ST_LINE(table_lock) > TPROF_ST_LAST_LINE(index.hash_mask));
static_assert(offsetof(struct tprof_metrics_state, index.free_head) <
	      offsetof(struct tprof_metrics_state, table_lock));

static struct tprof_metrics_state *tprof_metrics_state_alloc(u32 capacity)
{
	u32 hash_size = tprof_thread_index_hash_size(capacity);
	struct tprof_ti_entry *hash;
	struct tprof_metrics_state *st;
	unsigned int cpu;
	u32 i;

	/* A power of two: kmalloc aligns it to its size (the layout's lines). */
	st = kzalloc(roundup_pow_of_two(sizeof(*st)), GFP_KERNEL);
	if (!st)
		return NULL;
	kref_init(&st->ref);
	INIT_WORK(&st->reap_work, tprof_metrics_reap_fn);	/* state_free flushes it */
	init_llist_head(&st->reap);
	st->slots = kvcalloc(capacity, sizeof(*st->slots), GFP_KERNEL);
	/* Two hash arrays (the live one and the rehash spare), the free list. */
	st->index_mem = kvzalloc((size_t)hash_size * 2 * sizeof(*hash) +
				 (size_t)capacity * sizeof(u32), GFP_KERNEL);
	st->cpu = alloc_percpu(struct tprof_metrics_cpu);
	if (!st->slots || !st->index_mem || !st->cpu) {
		tprof_metrics_state_put(st);
		return NULL;
	}
	hash = st->index_mem;
	tprof_thread_index_init(&st->index, hash, hash_size,
				(u32 *)(hash + 2 * hash_size), capacity);
	st->index.rehash_at = (u32)((u64)hash_size * index_rebuild_pct / 100);
	st->spare = hash + hash_size;
	INIT_WORK(&st->rehash_work, tprof_metrics_rehash_fn);
	for (i = 0; i < capacity; i++) {
		raw_spin_lock_init(&st->slots[i].lock);
		INIT_LIST_HEAD(&st->slots[i].node);
		INIT_LIST_HEAD(&st->slots[i].exited);
		st->slots[i].list_cpu = -1;
		if (!(i & 4095))
			cond_resched();	/* up to 2^20 slots */
	}
	for_each_possible_cpu(cpu) {
		struct tprof_metrics_cpu *cs = per_cpu_ptr(st->cpu, cpu);

		raw_spin_lock_init(&cs->list_lock);
		INIT_LIST_HEAD(&cs->listed);
	}
	raw_spin_lock_init(&st->table_lock);
	INIT_LIST_HEAD(&st->exited);
	st->next_identity = 1;
	atomic64_set(&st->untracked, 0);
	atomic64_set(&st->reclaimed, 0);
	atomic64_set(&st->drain_gen, 0);
	atomic_set(&st->self_pages, 0);
	return st;
}

/* ---- Slots: track, reclaim, free ----------------------------------------- */

/*
 * Gives an unlisted, private slot back (table_lock and the slot lock held:
 * a consumer that still holds the slot's address, such as a drain whose
 * copy faulted, sees identity 0 and keeps its hands off). Returns its pids.
 */
static void tprof_mslot_release_locked(struct tprof_metrics_state *st,
				       struct tprof_mslot *slot,
				       struct pid **tgid, struct pid **tid)
{
	lockdep_assert_held(&st->table_lock);
	lockdep_assert_held(&slot->lock);
	list_del_init(&slot->exited);
	*tgid = slot->tgid;
	*tid = slot->tid;
	slot->tgid = slot->tid = NULL;
	slot->key = 0;
	slot->identity = 0;
	slot->flags = 0;
	slot->list_cpu = -1;
	memset(slot->tcum, 0, sizeof(slot->tcum));
	memset(slot->total, 0, sizeof(slot->total));
	tprof_thread_index_release(&st->index, slot - st->slots);
}

/* A drain delivered an exited slot's final record: the slot is free. */
void tprof_mslot_free(struct tprof_metrics_state *st, struct tprof_mslot *slot)
{
	struct pid *tgid, *tid, *dead[ARRAY_SIZE(slot->dead_pids)];
	struct tprof_self_page *page;
	unsigned long flags;
	int n;

	raw_spin_lock_irqsave(&st->table_lock, flags);
	raw_spin_lock(&slot->lock);
	tprof_mslot_release_locked(st, slot, &tgid, &tid);
	/* Process context: the next life of the slot starts with none. */
	n = tprof_mslot_take_dead(slot, dead, &page);
	raw_spin_unlock(&slot->lock);
	raw_spin_unlock_irqrestore(&st->table_lock, flags);
	put_pid(tgid);
	put_pid(tid);
	while (n)
		put_pid(dead[--n]);
	tprof_self_page_put(page);
}

/*
 * Exited slots a reclaim examines at most (under table_lock, IRQs off). No
 * number of busy slots can hold the FIFO's head (they were once, 8 of them
 * enough): a drain stalled in its copy to userspace (a userfaultfd or FUSE
 * page) holds up to TPROF_DRAIN_BATCH slots whose final records it is
 * delivering, each drainer its own, for as long as the user likes. Those
 * (DRAINED) leave st->exited: the drain frees them, or on a fault puts
 * them back at its tail (tprof_drain_flush()). Slots busy for a moment (in
 * a drainer's batch, references for the reaper) go to the tail.
 */
#define TPROF_RECLAIM_SCAN 16

/*
 * The table is full: the oldest exited slot whose final report nobody
 * collected is dropped (counted in reclaimed_threads), so exited threads
 * cannot keep the table full. Busy slots are skipped (see above). Its pids
 * go to the reaper (this runs in the new-task hook). Returns whether a
 * slot was freed; table_lock held.
 */
static bool tprof_metrics_reclaim_locked(struct tprof_metrics_state *st)
{
	struct tprof_mslot *slot, *next;
	struct pid *tgid, *tid;
	int tries = 0;

	list_for_each_entry_safe(slot, next, &st->exited, exited) {
		bool busy;

		if (tries++ == TPROF_RECLAIM_SCAN)
			break;
		raw_spin_lock(&slot->lock);
		tprof_mslot_unlist(st, slot);
		/* In a drainer's batch, or its record on its way out. */
		busy = slot->flags & (TPROF_MSLOT_LISTED | TPROF_MSLOT_DRAINED) ||
		       tprof_mslot_has_dead(slot);
		if (!busy) {	/* in the same section: nobody lists it between */
			tprof_mslot_release_locked(st, slot, &tgid, &tid);
			tprof_mslot_defer_put_pid(st, slot, tgid);
			tprof_mslot_defer_put_pid(st, slot, tid);
		}
		if (slot->flags & TPROF_MSLOT_DRAINED)
			list_del_init(&slot->exited);	/* its drain's now */
		else if (busy)	/* behind the rest; @next stays valid */
			list_move_tail(&slot->exited, &st->exited);
		raw_spin_unlock(&slot->lock);
		if (busy)
			continue;
		atomic64_inc(&st->reclaimed);
		return true;
	}
	return false;
}

/* Starts tracking @p (idempotent). The table full: counted as untracked. */
static void tprof_metrics_track(struct tprof_metrics_state *st,
				struct task_struct *p)
{
	u64 key = (u64)(uintptr_t)p;
	struct pid *tgid, *tid;
	struct tprof_mslot *slot;
	unsigned long flags;
	bool existed;
	u32 i;

	if (is_idle_task(p))
		return;
	/*
	 * enable's walk can meet a thread that is being released: its pids are
	 * already detached (NULL), its last switch is behind it, and it would
	 * be reported as tid 0. It is not tracked.
	 */
	tgid = get_task_pid(p, PIDTYPE_TGID);
	tid = get_task_pid(p, PIDTYPE_PID);
	if (!tgid || !tid) {
		put_pid(tgid);
		put_pid(tid);
		return;
	}
	raw_spin_lock_irqsave(&st->table_lock, flags);
	i = tprof_thread_index_insert(&st->index, key, &existed);
	if (i == TPROF_TI_NONE && tprof_metrics_reclaim_locked(st))
		i = tprof_thread_index_insert(&st->index, key, &existed);
	if (i == TPROF_TI_NONE) {
		atomic64_inc(&st->untracked);
	} else if (!existed) {
		slot = &st->slots[i];
		raw_spin_lock(&slot->lock);
		slot->key = key;
		slot->identity = st->next_identity++;
		memset(slot->tcum, 0, sizeof(slot->tcum));
		memset(slot->total, 0, sizeof(slot->total));
		slot->flags = 0;
		slot->list_cpu = -1;
		slot->seen_gen = 0;
		slot->tgid = tgid;
		slot->tid = tid;
		tgid = tid = NULL;	/* the slot's references now */
		slot->task = p;
		strscpy_pad(slot->comm, p->comm, sizeof(slot->comm));
		raw_spin_unlock(&slot->lock);
	}
	raw_spin_unlock_irqrestore(&st->table_lock, flags);
	tprof_metrics_kick_reap(st);
	/* Untracked or already tracked: @p holds these pids, never the last. */
	put_pid(tgid);
	put_pid(tid);
}

/*
 * task_newtask: every new task, including io_uring/io-wq and vhost workers
 * (which skip sched_process_fork), after copy_process()'s point of no
 * return and before it first runs.
 */
void tprof_metrics_newtask(struct task_struct *p)
{
	struct tprof_metrics_state *st = rcu_dereference_sched(tprof_metrics_live);

	if (st)
		tprof_metrics_track(st, p);
}

static struct tprof_self_page *tprof_mslot_detach_self_page(struct tprof_metrics_state *st,
							    struct tprof_mslot *slot);

/*
 * exec: new name, and a thread that execs becomes the leader (new tid).
 * An exec into an image its observers may not see (admission.h) makes it
 * a new thread for them: a new identity, totals from zero, and its self
 * page retired (a CLONE_VM parent may still map it: it stops moving).
 * The deltas not yet read stay, under the new identity: they are older
 * than the exec, never the new image's.
 */
void tprof_metrics_exec(struct task_struct *p)
{
	struct tprof_metrics_state *st = rcu_dereference_sched(tprof_metrics_live);
	bool leaves = tprof_exec_leaves_observers(p);
	struct tprof_mslot *slot;
	unsigned long flags;

	if (!st)
		return;
	slot = tprof_mslot_of(st, p);
	if (!slot)
		return;
	if (leaves)	/* next_identity is the table's */
		raw_spin_lock_irqsave(&st->table_lock, flags);
	else
		local_irq_save(flags);
	raw_spin_lock(&slot->lock);
	if (slot->key == (u64)(uintptr_t)p && leaves) {
		slot->identity = st->next_identity++;
		memset(slot->total, 0, sizeof(slot->total));
		/* Free: the mmap path takes a dead page before it maps anew. */
		tprof_mslot_defer_put_page(st, slot,
			tprof_mslot_detach_self_page(st, slot));
	}
	if (slot->key == (u64)(uintptr_t)p) {
		if (slot->tid != task_pid(p)) {
			/*
			 * The old tid went to the old leader, which de_thread()
			 * released: ours may be its last reference.
			 */
			tprof_mslot_defer_put_pid(st, slot, slot->tid);
			slot->tid = get_pid(task_pid(p));
		}
		strscpy_pad(slot->comm, p->comm, sizeof(slot->comm));
	}
	raw_spin_unlock(&slot->lock);
	if (leaves)
		raw_spin_unlock_irqrestore(&st->table_lock, flags);
	else
		local_irq_restore(flags);
	tprof_metrics_kick_reap(st);
}

/* Takes a slot's self page away from it (slot lock held); caller puts it. */
static struct tprof_self_page *tprof_mslot_detach_self_page(struct tprof_metrics_state *st,
							    struct tprof_mslot *slot)
{
	struct tprof_self_page *page = slot->self_page;

	if (page) {
		tprof_self_page_retire(page);
		slot->self_page = NULL;
		atomic_dec(&st->self_pages);
	}
	return page;
}

/* sched_process_free: after the task's last switch; from an RCU callback. */
void tprof_metrics_free(struct task_struct *p)
{
	struct tprof_metrics_state *st = rcu_dereference_sched(tprof_metrics_live);
	u64 key = (u64)(uintptr_t)p;
	struct tprof_mslot *slot;
	unsigned long flags;

	if (!st)
		return;
	raw_spin_lock_irqsave(&st->table_lock, flags);
	slot = tprof_mslot_of(st, p);
	if (slot) {
		tprof_thread_index_remove(&st->index, key);
		if (tprof_thread_index_needs_rehash(&st->index) && st->spare)
			queue_work(system_unbound_wq, &st->rehash_work);
		raw_spin_lock(&slot->lock);
		if (slot->key == key) {
			slot->key = 0;
			slot->task = NULL;
			/* Keep the last name for the final report. */
			strscpy_pad(slot->comm, p->comm, sizeof(slot->comm));
			slot->flags |= TPROF_MSLOT_EXITED;
			/* The mappings may be gone: ours may be the last. */
			tprof_mslot_defer_put_page(st, slot,
				tprof_mslot_detach_self_page(st, slot));
			/* Listed for one final report, even at zero. */
			if (!(slot->flags & TPROF_MSLOT_LISTED))
				tprof_mslot_list_here(st, slot);
			list_add_tail(&slot->exited, &st->exited);
		}
		raw_spin_unlock(&slot->lock);
	}
	raw_spin_unlock_irqrestore(&st->table_lock, flags);
	tprof_metrics_kick_reap(st);
}

/* ---- Enable / disable ------------------------------------------------------ */

/* IPI: start this CPU's PLastCum from its current readings. */
static void tprof_metrics_prime_cpu(void *data)
{
	struct tprof_metrics_state *st = data;
	struct tprof_metrics_cpu *cs = this_cpu_ptr(st->cpu);
	u32 m;

	for (m = 0; m < st->config.nr_metrics; m++)
		cs->last[m] = tprof_metric_read(st, cs, m);
	cs->primed = true;
}

static void tprof_metrics_disable_locked(void)
{
	struct tprof_metrics_state *st;
	u32 i;

	lockdep_assert_held(&tprof_metrics_mutex);
	st = rcu_dereference_protected(tprof_metrics_live,
				       lockdep_is_held(&tprof_metrics_mutex));
	if (!st)
		return;
	/* After this no hook and no IRQs-off ioctl section uses the run. */
	RCU_INIT_POINTER(tprof_metrics_live, NULL);
	synchronize_rcu();
	flush_work(&st->rehash_work);	/* nothing queues it any more */
	flush_work(&st->reap_work);	/* nor this: the hooks' puts are done */
	tprof_metrics_counters_stop();
	/* Mapped self pages stay with their processes, marked not live. */
	for (i = 0; i < st->index.capacity; i++) {
		struct tprof_mslot *slot = &st->slots[i];
		struct tprof_self_page *page;
		unsigned long flags;

		raw_spin_lock_irqsave(&slot->lock, flags);
		page = tprof_mslot_detach_self_page(st, slot);
		raw_spin_unlock_irqrestore(&slot->lock, flags);
		tprof_self_page_put(page);
		if (!(i & 4095))
			cond_resched();	/* up to 2^20 slots */
	}
	/* Drains in flight hold their own references. */
	tprof_metrics_state_put(st);
}

static int tprof_metrics_enable_locked(const struct tprof_metrics_config *c)
{
	struct tprof_metrics_state *st;
	struct task_struct *g, *p;
	int ret;
	u32 m;

	lockdep_assert_held(&tprof_metrics_mutex);
	tprof_metrics_disable_locked();

	st = tprof_metrics_state_alloc(max_threads);
	if (!st)
		return -ENOMEM;
	st->config = *c;
	for (m = 0; m < TPROF_MAX_METRICS; m++)
		st->sources[m] = m < c->nr_metrics ?
			tprof_metric_source(&c->metrics[m]) : TPROF_SRC_DISPATCHES;
	ret = tprof_metrics_counters_start(c);
	if (ret) {
		tprof_metrics_counters_stop();
		tprof_metrics_state_put(st);
		return ret;
	}
	st->epoch = ++tprof_metrics_epoch;
	rcu_assign_pointer(tprof_metrics_live, st);

	/*
	 * Threads that already exist. New ones come through task_newtask,
	 * which fires after the task is on the task list: each thread is seen
	 * by the walk, by the hook, or by both (tracking is idempotent).
	 */
	rcu_read_lock();
	for_each_process_thread(g, p)
		tprof_metrics_track(st, p);
	rcu_read_unlock();

	on_each_cpu(tprof_metrics_prime_cpu, st, 1);
	return 0;
}

/* METRICS_ENABLE, with the config metrics_ioctl.c has copied and checked. */
int tprof_metrics_enable(const struct tprof_metrics_config *c)
{
	int ret;

	mutex_lock(&tprof_metrics_mutex);
	ret = tprof_metrics_enable_locked(c);
	mutex_unlock(&tprof_metrics_mutex);
	return ret;
}

/* METRICS_DISABLE. */
void tprof_metrics_disable(void)
{
	mutex_lock(&tprof_metrics_mutex);
	tprof_metrics_disable_locked();
	mutex_unlock(&tprof_metrics_mutex);
}

/* ---- load / unload ------------------------------------------------------ */

int tprof_metrics_init(void)
{
	struct tprof_metrics_config c;
	int ret;

	ret = tprof_metrics_ioctl_init();
	if (ret)
		return ret;
	if (!metrics || !*metrics)
		return 0;
	ret = tprof_metrics_parse_list(metrics, &c);
	if (ret) {
		pr_err("metrics=%s: unknown or invalid metric list\n", metrics);
		goto err;
	}
	ret = tprof_metrics_enable(&c);
	if (ret) {
		pr_err("metrics=%s: cannot enable: %d\n", metrics, ret);
		goto err;
	}
	return 0;
err:
	tprof_metrics_ioctl_exit();
	return ret;
}

void tprof_metrics_exit(void)
{
	tprof_metrics_disable();
	tprof_metrics_ioctl_exit();
}
