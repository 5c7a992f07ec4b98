/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-thread metrics: the entry points the rest of the module
 * calls, then the state shared by metrics.c (enable, disable, thread
 * lifecycle), metrics_switch.c (the context-switch hot path),
 * metrics_ioctl.c (the ioctls: user copies and checks, read-and-zero,
 * drain, status; the self page) and metrics_counters.c (the per-CPU perf
 * counters of event metrics).
 *
 * Per CPU: PCum(M) is read from the CPU's clock, its dispatch count or a
 * pinned per-CPU perf counter, PLastCum(M) is kept in struct
 * tprof_metrics_cpu; on every context switch Delta = PCum - PLastCum,
 * PLastCum = PCum and TCum(M, outgoing thread) += Delta in the thread's slot.
 *
 * Locking (no lock shared by all CPUs on the context-switch path):
 *  - The state of one accounting run (enable to disable) is published with
 *    RCU; the hooks run with preemption off, so disable unpublishes it,
 *    waits for a grace period and drops its reference. Drains hold a
 *    reference across their copies to userspace; the last one frees it.
 *  - PLastCum and the dispatch count of a CPU are only touched by that CPU
 *    with IRQs off (the switch hook, a read of the caller's own thread, the
 *    priming IPI): no lock.
 *  - slot->lock guards one thread's TCum, flags, names, pids and self page.
 *    A switch takes the outgoing thread's slot lock (and, with self pages
 *    mapped, the incoming one's, never both at once).
 *  - cpu->list_lock guards that CPU's nonzero list: slots whose TCum became
 *    nonzero on it (or that exited) wait there for a consumer. A switch
 *    takes only its own CPU's list lock, and only when a slot becomes
 *    nonzero. Drainers take a CPU's list lock to examine at most
 *    TPROF_DRAIN_WALK slots and detach or return at most TPROF_DRAIN_BATCH
 *    of them at a time, leaving other processes' slots in place; while a
 *    slot is listed, its seen_gen is under the list lock, and its tgid
 *    (set before it is first listed) is stable.
 *  - st->table_lock guards the index (key -> slot), the free list and the
 *    FIFO of exited slots: fork, exec, exit, enable's walk and the end of a
 *    drain take it, never a switch.
 *  Order: table_lock -> slot->lock -> cpu->list_lock.
 *  All three are raw spinlocks: the switch hook takes them under the
 *  runqueue lock with IRQs off, where a PREEMPT_RT spinlock_t (a sleeping
 *  lock) is not allowed. Hooks free nothing: they run with preemption off,
 *  where PREEMPT_RT's slab and page allocators (sleeping locks inside)
 *  must not be entered; the references they drop wait in the slot
 *  (dead_pids, dead_page) for st->reap_work.
 *
 * Invariants:
 *  - TPROF_MSLOT_LISTED is set iff the slot is on some CPU's nonzero list
 *    (list_cpu >= 0) or in one drainer's private batch (list_cpu == -1).
 *    Only the slot lock holder sets or clears it.
 *  - Read-and-zero is one critical section of the slot lock: a value is
 *    handed to exactly one consumer (THREAD_READ, READ_SELF, a drain or,
 *    for an exited slot reclaimed under pressure, the reclaimed counter).
 *    A consumer whose copy to userspace faults gives the values back.
 *  - An exited slot stays listed (and on st->exited, but while a drain
 *    delivers its final record: a reclaim takes it off, the drain puts it
 *    back if its copy faults) until consumed; a drain frees it only after
 *    the record reached userspace.
 */
#ifndef TPROF_METRICS_H
#define TPROF_METRICS_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/tprof.h>
#include <linux/workqueue.h>
#include "core/thread_index.h"
#include "cpu_events.h"

struct vm_area_struct;

/*
 * API for the rest of the module: the hooks (hooks.c), the ioctls and the
 * self page's mmap (dev.c), load and unload (main.c).
 */
/* metrics.c */
int tprof_metrics_init(void);
void tprof_metrics_exit(void);
void tprof_metrics_newtask(struct task_struct *p);
void tprof_metrics_exec(struct task_struct *p);
void tprof_metrics_free(struct task_struct *p);
/* metrics_switch.c */
void tprof_metrics_sched_switch(struct task_struct *prev,
				struct task_struct *next);
/* metrics_ioctl.c */
long tprof_ioctl_metrics_enable(struct tprof_metrics_config __user *uarg);
long tprof_ioctl_metrics_disable(void);
long tprof_ioctl_metrics_status(struct tprof_metrics_status __user *uarg);
long tprof_ioctl_thread_read(struct tprof_thread_read __user *uarg);
long tprof_ioctl_drain(struct tprof_drain __user *uarg);
long tprof_ioctl_read_self(struct tprof_self_read __user *uarg);
int tprof_metrics_self_mmap(struct vm_area_struct *vma);

/* The rest is shared between metrics*.c only. */

#define TPROF_MSLOT_LISTED (1U << 0)	/* on a nonzero list or a drain batch */
#define TPROF_MSLOT_EXITED (1U << 1)	/* thread gone; final report pending */
#define TPROF_MSLOT_DRAINED (1U << 2)	/* exited; its final record is being copied */

/*
 * Per list-lock hold a drainer examines at most TPROF_DRAIN_WALK slots and
 * detaches at most TPROF_DRAIN_BATCH of them (or returns that many).
 */
#define TPROF_DRAIN_BATCH 64
#define TPROF_DRAIN_WALK 256

struct tprof_self_page;

struct tprof_mslot {
	raw_spinlock_t lock;
	u64 key;			/* task address while tracked, else 0 */
	u64 identity;			/* unique per thread and run */
	u64 tcum[TPROF_MAX_METRICS];	/* TCum */
	/*
	 * Everything ever charged to the thread (an odometer, like the self
	 * page's total[]): read-and-zero consumers do not reset it, so a
	 * live view (TPROF_THREAD_READ_TOTALS) takes nothing from them.
	 */
	u64 total[TPROF_MAX_METRICS];
	u32 flags;			/* TPROF_MSLOT_* */
	int list_cpu;			/* list holding it; -1: a drainer's batch */
	u64 seen_gen;			/* the last drain that visited it */
	struct list_head node;		/* nonzero list / drain batch */
	struct list_head exited;	/* st->exited, under table_lock */
	struct pid *tgid;		/* process identity (reference) */
	struct pid *tid;		/* thread identity (reference) */
	struct task_struct *task;	/* while alive (not a reference) */
	char comm[TASK_COMM_LEN];	/* the name at exit */
	struct tprof_self_page *self_page;
	/*
	 * References the hooks let go of, dropped by st->reap_work: a hook
	 * runs with preemption off, and the last put_pid() or put_page()
	 * frees memory, which PREEMPT_RT allows only where one may sleep.
	 * Per lifetime of a slot at most the previous thread's two pids (a
	 * reclaim), one tid (a non-leader's exec: once, it is then the
	 * leader) and its self page (the free hook) wait here.
	 */
	struct pid *dead_pids[3];
	struct tprof_self_page *dead_page;
	bool reap_queued;		/* on st->reap */
	struct llist_node reap_node;
};

/* Where PCum(M) comes from, decided once at enable (see metrics.c). */
enum tprof_metric_source {
	TPROF_SRC_CLOCK,	/* sched_clock(): deltas are per CPU */
	TPROF_SRC_DISPATCHES,	/* tprof_metrics_cpu.dispatches */
	TPROF_SRC_EVENT_COUNT,	/* a software perf event's count */
	TPROF_SRC_EVENT_READ,	/* pmu->read(), then the count */
};

struct tprof_metrics_cpu {
	u64 last[TPROF_MAX_METRICS];	/* PLastCum */
	u64 dispatches;			/* PCum of dispatches */
	bool primed;			/* last[] holds real readings */
	u64 uncounted;			/* switches with an event counter missing */
	u32 gen_seen[TPROF_MAX_METRICS];	/* counter generation of last[] */
	raw_spinlock_t list_lock;
	struct list_head listed;	/* the nonzero list of this CPU */
	u32 nr_listed;
};

/*
 * One accounting run, from enable to the last reference.
 *
 * Layout (every context switch on every CPU reads the first group and the
 * index's lookup half; fork, exec, exit, free and drains on any CPU write
 * the rest), checked by the static_asserts in metrics.c and by pahole:
 *   line 0       cpu, slots, sources, self_pages, epoch, config.nr_metrics
 *                (written at enable; self_pages by a self page's map/unmap)
 *   lines 0-3    config: read-only after enable
 *   line 4       index.hash, index.hash_mask (written by a rehash only)
 *   line 5       index.free_head/used/tombstones (every insert/remove/release)
 *   line 6...    table_lock, ref, the lists, counters and works
 * so no write by a thread's creation or end, nor a drain's reference,
 * invalidates a line the switch hook reads. The allocation is a power of
 * two (tprof_metrics_state_alloc()), which kmalloc aligns to its size.
 */
struct tprof_metrics_state {
	/* Read by every switch. */
	struct tprof_metrics_cpu __percpu *cpu;
	struct tprof_mslot *slots;	/* index.capacity of them */
	u8 sources[TPROF_MAX_METRICS];	/* enum tprof_metric_source */
	atomic_t self_pages;		/* mapped self pages of live threads */
	u64 epoch;			/* tells runs apart */
	struct tprof_metrics_config config;
	/* Lookup half read by every switch, writer half on its own line. */
	struct tprof_thread_index index;
	/* Written by writers and drains, on lines the switch does not read. */
	raw_spinlock_t table_lock ____cacheline_aligned_in_smp;
	struct kref ref;
	struct tprof_ti_entry *spare;	/* the next rehash's array, or NULL */
	struct work_struct rehash_work;
	atomic64_t rehashes;		/* completed, for the status */
	struct llist_head reap;		/* slots with dead references */
	struct work_struct reap_work;
	void *index_mem;
	struct list_head exited;	/* exited, still listed: oldest first (busy ones moved back by reclaim) */
	u64 next_identity;		/* table_lock */
	atomic64_t untracked;		/* inserts refused: table full */
	atomic64_t reclaimed;		/* exited slots dropped undrained */
	atomic64_t drain_gen;
};

/* The published run, for the hooks (RCU) and the ioctls. */
extern struct tprof_metrics_state __rcu *tprof_metrics_live;

static inline struct tprof_mslot *tprof_mslot_of(struct tprof_metrics_state *st,
						 const struct task_struct *t)
{
	u32 i = tprof_thread_index_lookup(&st->index, (u64)(uintptr_t)t);

	return i == TPROF_TI_NONE ? NULL : &st->slots[i];
}

/* metrics_ioctl.c: the drain's chunk cache (module load / unload) */
int tprof_metrics_ioctl_init(void);
void tprof_metrics_ioctl_exit(void);

/* metrics_switch.c */
bool tprof_metrics_take_deltas(struct tprof_metrics_state *st,
			       struct task_struct *task, u64 *delta);
void tprof_metrics_charge(struct tprof_metrics_state *st,
			  struct task_struct *task);
u64 tprof_metric_read(struct tprof_metrics_state *st,
		      struct tprof_metrics_cpu *cs, u32 m);
void tprof_mslot_list_here(struct tprof_metrics_state *st,
			   struct tprof_mslot *slot);
void tprof_mslot_give_back(struct tprof_metrics_state *st,
			   struct tprof_mslot *slot, const u64 *values);
void tprof_mslot_unlist(struct tprof_metrics_state *st,
			struct tprof_mslot *slot);

/* metrics_counters.c */
extern struct tprof_cpu_events tprof_mcounters;
extern int tprof_mcounter_of[TPROF_MAX_METRICS];	/* counter index or -1 */

/* This CPU's counter of metric @m, or NULL. IRQs off. */
static inline struct perf_event *tprof_metrics_cpu_event(u32 m)
{
	int idx = READ_ONCE(tprof_mcounter_of[m]);

	return idx < 0 ? NULL : tprof_cpu_event(&tprof_mcounters, idx);
}

/* The same, with its generation (tprof_cpu_event_gen()). IRQs off. */
static inline struct perf_event *tprof_metrics_cpu_event_gen(u32 m, u32 *gen)
{
	int idx = READ_ONCE(tprof_mcounter_of[m]);

	return idx < 0 ? NULL : tprof_cpu_event_gen(&tprof_mcounters, idx, gen);
}
int tprof_metrics_counters_start(const struct tprof_metrics_config *c);
void tprof_metrics_counters_stop(void);

/* metrics.c */
int tprof_metrics_enable(const struct tprof_metrics_config *c);
void tprof_metrics_disable(void);
enum tprof_metric_source tprof_metric_source(const struct tprof_metric *m);
void tprof_metrics_state_put(struct tprof_metrics_state *st);
struct tprof_metrics_state *tprof_metrics_state_get(void);
void tprof_mslot_free(struct tprof_metrics_state *st, struct tprof_mslot *slot);

#endif /* TPROF_METRICS_H */
