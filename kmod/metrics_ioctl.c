// SPDX-License-Identifier: GPL-2.0
/*
 * Per-thread metrics, the ioctls: ENABLE and DISABLE (CAP_PERFMON, the
 * config's copy and check; metrics.c enables and disables), then the
 * consumers: STATUS, THREAD_READ and READ_SELF
 * (read-and-zero of one thread), DRAIN (read-and-zero of every listed thread
 * of a process, or all) and the self page's mmap. Locking and invariants:
 * metrics.h. Each value is taken out of its slot under the slot lock and
 * copied to userspace afterwards, with nothing held; if that copy faults,
 * the values go back to the same thread of the same run.
 *
 * Every pid and tid handed out is in the caller's pid namespace; threads of
 * processes the caller's namespace cannot see are not reported.
 */
#include <linux/capability.h>
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/rcupdate.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/uaccess.h>
#include "metrics.h"
#include "admission.h"
#include "self_page.h"
#include "user_limits.h"
#include "core/metrics_config.h"

long tprof_ioctl_metrics_enable(struct tprof_metrics_config __user *uarg)
{
	struct tprof_metrics_config c;
	int ret;

	if (!perfmon_capable())
		return -EPERM;
	if (copy_from_user(&c, uarg, sizeof(c)))
		return -EFAULT;
	ret = tprof_metrics_config_check(&c);
	if (ret)
		return ret;
	return tprof_metrics_enable(&c);
}

long tprof_ioctl_metrics_disable(void)
{
	if (!perfmon_capable())
		return -EPERM;
	tprof_metrics_disable();
	return 0;
}

long tprof_ioctl_metrics_status(struct tprof_metrics_status __user *uarg)
{
	struct tprof_metrics_state *st = tprof_metrics_state_get();
	struct tprof_metrics_status out;
	unsigned long flags;
	unsigned int cpu;

	memset(&out, 0, sizeof(out));
	if (st) {
		out.enabled = 1;
		out.nr_metrics = st->config.nr_metrics;
		memcpy(out.metrics, st->config.metrics, sizeof(out.metrics));
		out.table_capacity = st->index.capacity;
		raw_spin_lock_irqsave(&st->table_lock, flags);
		out.table_used = st->index.used;
		raw_spin_unlock_irqrestore(&st->table_lock, flags);
		out.untracked_threads = atomic64_read(&st->untracked);
		out.reclaimed_threads = atomic64_read(&st->reclaimed);
		out.index_rehashes = atomic64_read(&st->rehashes);
		for_each_possible_cpu(cpu) {
			out.listed += READ_ONCE(per_cpu_ptr(st->cpu, cpu)->nr_listed);
			out.uncounted_switches +=
				READ_ONCE(per_cpu_ptr(st->cpu, cpu)->uncounted);
		}
		tprof_metrics_state_put(st);
	}
	if (copy_to_user(uarg, &out, sizeof(out)))
		return -EFAULT;
	return 0;
}

/* Is the slot's process visible in @ns? (Slot lock held.) */
static bool tprof_mslot_visible(const struct tprof_mslot *slot,
				struct pid_namespace *ns)
{
	return ns == &init_pid_ns || (slot->tgid && pid_nr_ns(slot->tgid, ns));
}

/*
 * A record of @slot for a reader in @ns with @values (the slot's TCum or
 * its totals). Slot lock held.
 */
static void tprof_mslot_record(struct tprof_metrics_state *st,
			       struct tprof_mslot *slot, struct pid_namespace *ns,
			       const u64 *values, struct tprof_thread_metrics *rec)
{
	u32 n = st->config.nr_metrics;

	memset(rec, 0, sizeof(*rec));
	rec->pid = pid_nr_ns(slot->tgid, ns);
	rec->tid = pid_nr_ns(slot->tid, ns);
	rec->identity = slot->identity;
	rec->flags = (slot->flags & TPROF_MSLOT_EXITED) ? TPROF_THREAD_EXITED : 0;
	rec->nr_metrics = n;
	/*
	 * Names change (prctl, exec): the live one while the thread exists.
	 * task->comm is always written whole and NUL-padded (__set_task_comm
	 * uses strscpy_pad), so its last byte is 0 even if a rename races
	 * with this copy: a plain copy is enough, and cheaper.
	 */
	BUILD_BUG_ON(sizeof(rec->comm) != TASK_COMM_LEN);
	if (slot->task)
		memcpy(rec->comm, slot->task->comm, sizeof(rec->comm));
	else
		memcpy(rec->comm, slot->comm, sizeof(rec->comm));
	memcpy(rec->values, values, n * sizeof(u64));
}

/* The record of @slot with its values taken out (read-and-zero). */
static void tprof_mslot_take(struct tprof_metrics_state *st,
			     struct tprof_mslot *slot, struct pid_namespace *ns,
			     struct tprof_thread_metrics *rec)
{
	tprof_mslot_record(st, slot, ns, slot->tcum, rec);
	memset(slot->tcum, 0, sizeof(slot->tcum));
}

/*
 * Gives values whose copy to userspace failed back to thread @identity of
 * run @epoch, if both still exist (else they are gone with it).
 */
static void tprof_metrics_give_back(u64 epoch, struct task_struct *task,
				    u64 identity, const u64 *values)
{
	struct tprof_metrics_state *st;
	struct tprof_mslot *slot;
	unsigned long flags;

	local_irq_save(flags);
	st = rcu_dereference_sched(tprof_metrics_live);
	if (st && st->epoch == epoch) {
		slot = tprof_mslot_of(st, task);
		if (slot) {
			raw_spin_lock(&slot->lock);
			if (slot->key == (u64)(uintptr_t)task &&
			    slot->identity == identity)
				tprof_mslot_give_back(st, slot, values);
			raw_spin_unlock(&slot->lock);
		}
	}
	local_irq_restore(flags);
}

/*
 * Read-and-zero of @task's slot into @rec (the caller's own slice charged
 * first if @task is current), or with @totals its totals, TCum left as it
 * is. IRQs-off section; 0, -ENODATA or -ESRCH.
 */
static int tprof_metrics_read_task(struct task_struct *task, bool totals,
				   struct tprof_thread_metrics *rec, u64 *epoch)
{
	struct pid_namespace *ns = task_active_pid_ns(current);
	u64 delta[TPROF_MAX_METRICS];
	struct tprof_metrics_state *st;
	struct tprof_mslot *slot;
	unsigned long flags;
	int ret = -ESRCH;

	local_irq_save(flags);
	st = rcu_dereference_sched(tprof_metrics_live);
	if (!st) {
		ret = -ENODATA;
		goto out;
	}
	*epoch = st->epoch;
	/* The caller's own current slice counts too (same slot-lock section). */
	if (task != current || !tprof_metrics_take_deltas(st, current, delta))
		memset(delta, 0, sizeof(delta));
	slot = tprof_mslot_of(st, task);
	if (!slot)
		goto out;
	raw_spin_lock(&slot->lock);
	if (slot->key == (u64)(uintptr_t)task) {
		tprof_tcum_add(slot->total, delta, st->config.nr_metrics);
		if (slot->self_page)
			tprof_self_page_charge(slot->self_page, delta);
		if (totals) {
			/* The slice stays in TCum for its consumers (listed). */
			tprof_mslot_give_back(st, slot, delta);
			tprof_mslot_record(st, slot, ns, slot->total, rec);
		} else {
			tprof_tcum_add(slot->tcum, delta, st->config.nr_metrics);
			tprof_mslot_take(st, slot, ns, rec);
			tprof_mslot_unlist(st, slot);
		}
		ret = 0;
	}
	raw_spin_unlock(&slot->lock);
out:
	local_irq_restore(flags);
	return ret;
}

/*
 * On the CPU @arg runs on (a cross call, IRQs off): its slice so far is
 * charged now, as the switch-out would. A thread that keeps its CPU is
 * otherwise charged only when it leaves it.
 */
static void tprof_metrics_charge_running(void *arg)
{
	struct tprof_metrics_state *st = rcu_dereference_sched(tprof_metrics_live);

	if (st && current == arg)
		tprof_metrics_charge(st, current);
}

long tprof_ioctl_thread_read(struct tprof_thread_read __user *uarg)
{
	struct tprof_admission adm = {};
	struct tprof_thread_read req;
	struct task_struct *task;
	long ret;
	u64 epoch = 0;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if ((req.flags & ~TPROF_THREAD_READ_TOTALS) || req.resv[0] || req.resv[1])
		return -EINVAL;

	if (req.tid == 0) {
		task = current;	/* cannot go away under us: no reference */
	} else {
		/*
		 * Admitted (admission.h); its exec lock is held over the read
		 * (an exec into a setuid image cannot start a new image's
		 * counts in between), not over the copy to user memory.
		 */
		ret = tprof_admit(req.tid, PIDTYPE_PID, 0, &adm);
		if (ret)
			return ret;
		task = adm.task;
	}

	/*
	 * Totals are for live views: they include what a thread running on
	 * another CPU has run so far (one cross call, only then).
	 */
	if ((req.flags & TPROF_THREAD_READ_TOTALS) && task != current &&
	    READ_ONCE(task->on_cpu))
		smp_call_function_single(task_cpu(task), tprof_metrics_charge_running, task, 1);
	/* No mutex: this is the hot path of runtimes that poll themselves. */
	ret = tprof_metrics_read_task(task, req.flags & TPROF_THREAD_READ_TOTALS,
				      &req.thread, &epoch);
	if (req.tid) {	/* keeps its task reference for a give-back */
		get_task_struct(task);
		tprof_admit_end(&adm);
	}
	if (!ret && copy_to_user(&uarg->thread, &req.thread, sizeof(req.thread))) {
		ret = -EFAULT;
		/* Totals took nothing: there is nothing to give back. */
		if (!(req.flags & TPROF_THREAD_READ_TOTALS))
			tprof_metrics_give_back(epoch, task, req.thread.identity,
						req.thread.values);
	}
	if (req.tid)
		put_task_struct(task);
	return ret;
}

/*
 * The lean read-and-zero of the caller: one IRQs-off section, no input,
 * no task reference, no name. Values go back if the copy faults.
 */
long tprof_ioctl_read_self(struct tprof_self_read __user *uarg)
{
	u64 delta[TPROF_MAX_METRICS] = {};
	struct tprof_metrics_state *st;
	struct tprof_self_read out;
	struct tprof_mslot *slot;
	unsigned long flags;
	long ret = -ESRCH;
	u64 epoch = 0;
	u32 m, n;

	memset(&out, 0, sizeof(out));
	local_irq_save(flags);
	st = rcu_dereference_sched(tprof_metrics_live);
	if (!st) {
		ret = -ENODATA;
		goto out;
	}
	epoch = st->epoch;
	/* The current slice and the slot's TCum in one slot-lock section. */
	if (!tprof_metrics_take_deltas(st, current, delta))
		memset(delta, 0, sizeof(delta));
	slot = tprof_mslot_of(st, current);
	if (!slot)
		goto out;
	n = st->config.nr_metrics;
	raw_spin_lock(&slot->lock);
	if (slot->key == (u64)(uintptr_t)current) {
		out.identity = slot->identity;
		for (m = 0; m < n; m++)
			out.values[m] = slot->tcum[m] + delta[m];
		memset(slot->tcum, 0, sizeof(slot->tcum));
		tprof_tcum_add(slot->total, delta, n);
		if (slot->self_page)
			tprof_self_page_charge(slot->self_page, delta);
		tprof_mslot_unlist(st, slot);
		ret = 0;
	}
	raw_spin_unlock(&slot->lock);
out:
	local_irq_restore(flags);
	if (!ret && copy_to_user(uarg, &out, sizeof(out))) {
		ret = -EFAULT;
		tprof_metrics_give_back(epoch, current, out.identity, out.values);
	}
	return ret;
}

/*
 * A self page mapping is charged to the user who made it
 * (self_pages_per_user=, see user_limits.h) until it is unmapped: the mapping
 * holds the page after its thread exited, so the threads' count alone does
 * not bound the pages. vm_private_data holds the charge: (uid << 1) | 1,
 * NULL when nothing was charged. mremap copies the mapping (open) and
 * closes the old one.
 */
static void tprof_self_vma_charge(struct vm_area_struct *vma,
				  struct tprof_charge *ch)
{
	unsigned long v = (unsigned long)vma->vm_private_data;

	ch->uid = KUIDT_INIT((uid_t)(v >> 1));
	ch->n = v & 1;
}

static void tprof_self_vma_set_charge(struct vm_area_struct *vma,
				      const struct tprof_charge *ch)
{
	vma->vm_private_data = ch->n ?
		(void *)(((unsigned long)__kuid_val(ch->uid) << 1) | 1) : NULL;
}

static void tprof_self_vm_open(struct vm_area_struct *vma)
{
	struct tprof_charge from, to;

	tprof_self_vma_charge(vma, &from);
	tprof_limit_dup(TPROF_LIMIT_SELF_PAGES, &from, &to);
	tprof_self_vma_set_charge(vma, &to);
}

static void tprof_self_vm_close(struct vm_area_struct *vma)
{
	struct tprof_charge ch;

	tprof_self_vma_charge(vma, &ch);
	tprof_limit_uncharge(TPROF_LIMIT_SELF_PAGES, &ch);
	vma->vm_private_data = NULL;
}

/* No fault handler: the page is inserted at mmap; zapped, it is gone (SIGBUS). */
static const struct vm_operations_struct tprof_self_vm_ops = {
	.open = tprof_self_vm_open,
	.close = tprof_self_vm_close,
};

/*
 * mmap of TPROF_SELF_PAGE_OFFSET: the caller's self page, created on the
 * first call. Runs under the caller's mmap_lock; takes only its slot lock.
 * EDQUOT: the caller's user holds self_pages_per_user mappings.
 */
int tprof_metrics_self_mmap(struct vm_area_struct *vma)
{
	struct tprof_charge charge;
	struct tprof_self_page *fresh, *page = NULL, *dead = NULL;
	struct tprof_metrics_state *st;
	struct tprof_mslot *slot;
	unsigned long flags;
	int ret = -ESRCH;

	ret = tprof_self_page_check_vma(vma);
	if (ret)
		return ret;
	fresh = tprof_self_page_alloc();
	if (!fresh)
		return -ENOMEM;

	ret = -ESRCH;
	local_irq_save(flags);
	st = rcu_dereference_sched(tprof_metrics_live);
	if (!st) {
		ret = -ENODATA;
		goto out;
	}
	/* Charge the slice so far, so the odometer starts now. */
	tprof_metrics_charge(st, current);
	slot = tprof_mslot_of(st, current);
	if (!slot)
		goto out;
	raw_spin_lock(&slot->lock);
	if (slot->key == (u64)(uintptr_t)current) {
		if (!slot->self_page) {
			/*
			 * The page an exec retired, if the reaper has not put
			 * it yet: ours to put, so the slot holds at most one.
			 */
			dead = slot->dead_page;
			slot->dead_page = NULL;
			tprof_self_page_init(fresh, slot->identity,
					     task_pid_vnr(current), &st->config);
			slot->self_page = fresh;
			atomic_inc(&st->self_pages);
			fresh = NULL;
		}
		page = slot->self_page;
		/* Ours until the mapping holds its own. */
		get_page(tprof_self_page_page(page));
		ret = 0;
	}
	raw_spin_unlock(&slot->lock);
out:
	local_irq_restore(flags);
	tprof_self_page_put(dead);
	tprof_self_page_put(fresh);
	if (ret)
		return ret;
	ret = tprof_limit_charge(TPROF_LIMIT_SELF_PAGES, 1, &charge);
	if (!ret)
		ret = vm_insert_page(vma, vma->vm_start, tprof_self_page_page(page));
	tprof_self_page_put(page);
	if (ret) {
		/* ->mmap failed: no close will come. */
		tprof_limit_uncharge(TPROF_LIMIT_SELF_PAGES, &charge);
		return ret;
	}
	tprof_self_vma_set_charge(vma, &charge);
	vma->vm_ops = &tprof_self_vm_ops;
	return 0;
}

/* ---- DRAIN ---------------------------------------------------------------- */

struct tprof_drain_ctx {
	struct tprof_metrics_state *st;
	struct pid_namespace *ns;
	struct pid *tgid;		/* the process drained, NULL for all */
	u64 gen;
	u32 capacity, count, remaining;
	struct tprof_thread_metrics __user *urecs;
	/* The current chunk: records taken and not yet copied out. */
	u32 n;
	struct tprof_thread_metrics *buf;	/* TPROF_DRAIN_BATCH records */
	struct tprof_mslot **slots;		/* their slots */
};

static bool tprof_drain_match(struct tprof_drain_ctx *d, struct tprof_mslot *slot)
{
	if (d->tgid)
		return slot->tgid == d->tgid;
	return tprof_mslot_visible(slot, d->ns);
}

/*
 * One slot out of a batch: taken into the chunk (read-and-zero), dropped
 * (zero and alive: nothing to report) or returned to the tail of @cpu's
 * list (another process's, or no room). IRQs off.
 */
static void tprof_drain_slot(struct tprof_drain_ctx *d, struct tprof_mslot *slot,
			     unsigned int cpu)
{
	struct tprof_metrics_cpu *cs = per_cpu_ptr(d->st->cpu, cpu);
	u32 nr = d->st->config.nr_metrics;

	raw_spin_lock(&slot->lock);
	list_del_init(&slot->node);
	slot->seen_gen = d->gen;
	if (!(slot->flags & TPROF_MSLOT_EXITED) &&
	    tprof_tcum_is_zero(slot->tcum, nr)) {
		/* Zeroed by a THREAD_READ while it was in our batch. */
		slot->flags &= ~TPROF_MSLOT_LISTED;
	} else if (tprof_drain_match(d, slot) && d->count + d->n < d->capacity) {
		tprof_mslot_take(d->st, slot, d->ns, &d->buf[d->n]);
		slot->flags &= ~TPROF_MSLOT_LISTED;
		if (slot->flags & TPROF_MSLOT_EXITED)
			slot->flags |= TPROF_MSLOT_DRAINED;
		d->slots[d->n++] = slot;
	} else {
		if (tprof_drain_match(d, slot))
			d->remaining++;
		raw_spin_lock(&cs->list_lock);
		list_add_tail(&slot->node, &cs->listed);
		cs->nr_listed++;
		slot->list_cpu = cpu;
		raw_spin_unlock(&cs->list_lock);
	}
	raw_spin_unlock(&slot->lock);
}

/*
 * Copies the chunk out. Delivered exited slots are freed; on a fault every
 * value of the chunk goes back to its slot (nothing lost) and -EFAULT.
 */
static int tprof_drain_flush(struct tprof_drain_ctx *d)
{
	unsigned long flags;
	bool fault;
	u32 i;

	if (!d->n)
		return 0;
	fault = copy_to_user(d->urecs + d->count, d->buf, d->n * sizeof(*d->buf));
	for (i = 0; i < d->n; i++) {
		struct tprof_mslot *slot = d->slots[i];

		if (!fault) {
			if (slot->flags & TPROF_MSLOT_DRAINED)
				tprof_mslot_free(d->st, slot);
			continue;
		}
		/* table_lock: an exited slot goes back on st->exited. */
		raw_spin_lock_irqsave(&d->st->table_lock, flags);
		raw_spin_lock(&slot->lock);
		if (slot->identity != d->buf[i].identity) {
			/*
			 * Taken alive; it exited since and its slot was
			 * reclaimed (counted there), perhaps for another
			 * thread: the values are gone with it.
			 */
		} else if (!(d->buf[i].flags & TPROF_THREAD_EXITED) &&
			   (slot->flags & TPROF_MSLOT_DRAINED)) {
			/*
			 * Taken alive; it exited since and another drain is
			 * delivering its final record and will free the slot:
			 * dropped with it, counted like a reclaimed slot.
			 */
			atomic64_inc(&d->st->reclaimed);
		} else {
			slot->flags &= ~TPROF_MSLOT_DRAINED;
			tprof_mslot_give_back(d->st, slot, d->buf[i].values);
			/* An exited slot is listed even at zero (final report). */
			if (!(slot->flags & TPROF_MSLOT_LISTED))
				tprof_mslot_list_here(d->st, slot);
			/* A reclaim took it off the FIFO while we held it. */
			if ((slot->flags & TPROF_MSLOT_EXITED) &&
			    list_empty(&slot->exited))
				list_add_tail(&slot->exited, &d->st->exited);
		}
		raw_spin_unlock(&slot->lock);
		raw_spin_unlock_irqrestore(&d->st->table_lock, flags);
	}
	if (!fault)
		d->count += d->n;
	d->n = 0;
	return fault ? -EFAULT : 0;
}

/*
 * Visits each slot listed on @cpu at the start at most once: under the list
 * lock, examines at most TPROF_DRAIN_WALK slots, moving up to
 * TPROF_DRAIN_BATCH of the drained process's into a private batch and
 * leaving other processes' slots in place, read only (a one-process drain
 * compares slot->tgid, stable while the slot is listed); then handles the
 * batch with only each slot's own lock and copies it out with nothing held.
 * When it must stop early, the slots it left in place are the list's
 * prefix: one splice moves them to the tail, the first marked with this
 * drain's generation (seen_gen, under the list lock while listed), so the
 * next round stops when it comes back to them.
 */
static int tprof_drain_cpu(struct tprof_drain_ctx *d, unsigned int cpu)
{
	struct tprof_metrics_cpu *cs = per_cpu_ptr(d->st->cpu, cpu);
	u32 budget = READ_ONCE(cs->nr_listed);
	unsigned long flags;
	int ret = 0;

	while (budget && !ret) {
		struct tprof_mslot *slot, *next, *last_kept = NULL;
		LIST_HEAD(batch);
		u32 taken = 0, examined = 0;
		bool more = false;

		local_irq_save(flags);
		raw_spin_lock(&cs->list_lock);
		list_for_each_entry_safe(slot, next, &cs->listed, node) {
			/* Back at slots this drain already examined: done. */
			if (examined == budget || slot->seen_gen == d->gen)
				break;
			if (taken == TPROF_DRAIN_BATCH ||
			    examined == TPROF_DRAIN_WALK) {
				more = true;
				break;
			}
			examined++;
			if (d->tgid && READ_ONCE(slot->tgid) != d->tgid) {
				last_kept = slot;
				continue;
			}
			list_move_tail(&slot->node, &batch);
			slot->list_cpu = -1;
			cs->nr_listed--;
			taken++;
		}
		if (more && last_kept) {
			LIST_HEAD(seen);

			list_first_entry(&cs->listed, struct tprof_mslot,
					 node)->seen_gen = d->gen;
			list_cut_position(&seen, &cs->listed, &last_kept->node);
			list_splice_tail(&seen, &cs->listed);
		}
		raw_spin_unlock(&cs->list_lock);
		list_for_each_entry_safe(slot, next, &batch, node)
			tprof_drain_slot(d, slot, cpu);
		local_irq_restore(flags);

		ret = tprof_drain_flush(d);
		if (!more)
			break;
		budget -= examined;
		cond_resched();
	}
	return ret;
}

/*
 * Drain chunks come from a cache with a constructor: such caches are exempt
 * from init_on_alloc (on by default in Debian's kernels), which would zero
 * the 7 KiB chunk on every call, a quarter of a small drain's cost. Every
 * record is written whole (tprof_mslot_take) before it is copied out.
 */
static struct kmem_cache *tprof_drain_cache;

static void tprof_drain_chunk_ctor(void *chunk)
{
}

int tprof_metrics_ioctl_init(void)
{
	/* The records are copied to userspace: whitelisted (usercopy). */
	tprof_drain_cache = kmem_cache_create_usercopy("tprof_drain_chunk",
		TPROF_DRAIN_BATCH * (sizeof(struct tprof_thread_metrics) +
				     sizeof(struct tprof_mslot *)),
		0, SLAB_ACCOUNT, 0,
		TPROF_DRAIN_BATCH * sizeof(struct tprof_thread_metrics),
		tprof_drain_chunk_ctor);
	return tprof_drain_cache ? 0 : -ENOMEM;
}

void tprof_metrics_ioctl_exit(void)
{
	kmem_cache_destroy(tprof_drain_cache);
	tprof_drain_cache = NULL;
}

long tprof_ioctl_drain(struct tprof_drain __user *uarg)
{
	struct tprof_drain_ctx d = {};
	struct tprof_drain req;
	unsigned int cpu;
	long ret = 0;
	u32 i;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	for (i = 0; i < ARRAY_SIZE(req.resv); i++)
		if (req.resv[i])
			return -EINVAL;
	if (!req.records != !req.capacity)
		return -EINVAL;

	if (req.pid == TPROF_PID_ALL) {
		if (!perfmon_capable())
			return -EPERM;
	} else if (req.pid == 0 || req.pid == task_tgid_vnr(current)) {
		d.tgid = get_pid(task_tgid(current));
	} else {
		struct tprof_admission adm;

		/* A read, not an attachment: no lock over the drain's copies. */
		ret = tprof_admit(req.pid, PIDTYPE_TGID, 0, &adm);
		if (ret)
			return ret;
		d.tgid = tprof_admit_take_pid(&adm);
		tprof_admit_end(&adm);
	}

	d.st = tprof_metrics_state_get();
	if (!d.st) {
		ret = -ENODATA;
		goto out;
	}
	d.buf = kmem_cache_alloc(tprof_drain_cache, GFP_KERNEL);
	if (!d.buf) {
		ret = -ENOMEM;
		goto out;
	}
	d.slots = (struct tprof_mslot **)(d.buf + TPROF_DRAIN_BATCH);
	d.ns = task_active_pid_ns(current);
	d.gen = atomic64_inc_return(&d.st->drain_gen);
	d.capacity = req.capacity;
	d.urecs = u64_to_user_ptr(req.records);

	for_each_possible_cpu(cpu) {
		ret = tprof_drain_cpu(&d, cpu);
		if (ret)
			break;
	}
	/* Records already delivered are reported as a short drain. */
	if (ret == -EFAULT && d.count)
		ret = 0;
	if (!ret) {
		req.count = d.count;
		req.remaining = d.remaining;
		req.untracked_threads = atomic64_read(&d.st->untracked);
		if (copy_to_user(uarg, &req, sizeof(req)))
			ret = -EFAULT;
	}
out:
	if (d.buf)
		kmem_cache_free(tprof_drain_cache, d.buf);
	if (d.st)
		tprof_metrics_state_put(d.st);
	put_pid(d.tgid);
	return ret;
}
