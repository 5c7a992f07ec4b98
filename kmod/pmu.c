// SPDX-License-Identifier: GPL-2.0
/*
 * PMU programs: up to 8 counters of one thread, one process or every CPU,
 * each a perf event with tprof's overflow handler (a watchpoint one per
 * piece of its data range, all with the same counter as context: the
 * value is their sum), perf's own counting event, or on arm64 a uprobe or
 * kprobe. Exact kinds (software events, tracepoints, breakpoints,
 * watchpoints) run at period 1, so the handler sees every event; hardware
 * ones every K events. The files:
 *
 *   pmu_plan.c     how each counter is made (mechanism, pieces, registers)
 *   pmu_claims.c   debug registers and claimed addresses: ENOSPC, EBUSY
 *   pmu_create.c   creation from the plan, and teardown
 *   pmu_hit.c      the per-event path: ranges, values, thresholds, rules
 *   pmu_probe.c    arm64: breakpoints as uprobes and kprobes
 *   pmu_netlink.c  the monitor: subscriptions and delivery
 *   pmu_ioctl.c    PMU_CREATE's copy and check, the descriptor's ioctls
 *   pmu.c          this file: the event queue, the descriptor's file, reads
 *
 * The program belongs to the descriptor TPROF_IOC_PMU_CREATE returns;
 * closing it releases the perf events (and their inherited copies), then
 * waits for the irq_work and the send work. Events that fire go through
 * a lock-free queue to a work item that sends them to the monitor's
 * socket.
 */
#include <linux/anon_inodes.h>
#include <linux/atomic.h>
#include <linux/err.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/perf_event.h>
#include <linux/rculist.h>
#include "pmu.h"

DEFINE_MUTEX(tprof_pmu_programs_lock);
LIST_HEAD(tprof_pmu_programs);

static const struct file_operations tprof_pmu_fops;

struct tprof_pmu_prog *tprof_pmu_prog_from_file(struct file *file)
{
	return file->f_op == &tprof_pmu_fops ? file->private_data : NULL;
}

/* ---- The event queue ---------------------------------------------------- */

/* Any context, NMI included: a slot, or NULL when the queue is full. */
struct tprof_pmu_event *tprof_pmu_queue_reserve(struct tprof_pmu_prog *p,
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

void tprof_pmu_queue_publish(struct tprof_pmu_cell *cell)
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
		 * Hits the guard took instead of ours (pmu_create.c: "Stepped counters"). The
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

/*
 * PMU_CREATE, with the program pmu_ioctl.c has copied and checked: the
 * program (pmu_create.c), then its descriptor's file. Returns the
 * descriptor's number, reserved but not installed, with its file in
 * *@filep (the caller installs it or puts both), or -errno with nothing
 * left behind.
 */
int tprof_pmu_create(const struct tprof_pmu_program *c, struct file **filep)
{
	struct tprof_pmu_prog *p;
	struct file *file;
	int fd;

	p = tprof_pmu_prog_create(c);
	if (IS_ERR(p))
		return PTR_ERR(p);
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		tprof_pmu_free(p);
		return fd;
	}
	file = anon_inode_getfile("[tprof_pmu]", &tprof_pmu_fops, p, O_RDWR);
	if (IS_ERR(file)) {
		put_unused_fd(fd);
		tprof_pmu_free(p);
		return PTR_ERR(file);
	}
	mutex_lock(&tprof_pmu_programs_lock);
	list_add_rcu(&p->node, &tprof_pmu_programs);	/* the exec hook reads it */
	mutex_unlock(&tprof_pmu_programs_lock);
	*filep = file;
	return fd;
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
