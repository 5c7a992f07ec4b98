// SPDX-License-Identifier: GPL-2.0
/*
 * A sampling session's lifetime: one session at a time, owned by the file
 * that started it. Stop (ioctl or close): running = false, unpublish it and
 * wait for the hooks and samples (RCU) and the map worker, stop the per-CPU
 * counters (cpu_events.c: each CPU's partial half is published by the
 * cpu_down notification, on that CPU), then POLLHUP once the reader has
 * everything. The session ends when the owner's file is released (mappings
 * do not keep it open); the buffers outlive it while mapped.
 *
 * CPU hotplug: the per-CPU counters and their hotplug state belong to
 * cpu_events.c; the notifications here only mark a CPU's buffer online or
 * offline and publish the partial half of one going down.
 */
#include <linux/capability.h>
#include <linux/cpumask.h>
#include <linux/cred.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/irq_work.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/signal.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/poll.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>
#include "sampling.h"
#include "compat.h"
#include "windows.h"

DEFINE_MUTEX(tprof_sampling_mutex);
/* The running session, for the sample handler and the hooks (RCU). */
struct tprof_session __rcu *tprof_sampling_live;
/* The session whatever its state, for STATUS; under the mutex. */
struct tprof_session *tprof_sampling_session;
struct workqueue_struct *tprof_map_wq;

void tprof_wake_reader(struct irq_work *work)
{
	struct tprof_session *s = container_of(work, struct tprof_session,
					       wake_work);

	wake_up_interruptible(&s->wait);
}

/*
 * @cpu's writer on its halves (allocated now if it has none yet). Before
 * the session is published any CPU may do it; afterwards only @cpu itself,
 * with the nesting guard up so a sample meanwhile is counted as lost.
 * Returns 0, -EPERM (over the owner's limit) or -ENOMEM: then the CPU's
 * samples are counted as lost.
 */
int tprof_sampling_add_cpu(struct tprof_session *s, unsigned int cpu)
{
	struct tprof_sampling_cpu *pc = per_cpu_ptr(s->cpus, cpu);
	unsigned long flags;
	u8 *halves;
	int ret;

	if (pc->writer.halves)
		return 0;
	ret = tprof_buffers_add_cpu(s->buffers, cpu, &halves);
	if (ret)
		return ret;
	local_irq_save(flags);
	pc->nesting++;
	barrier();
	tprof_sbuf_init(&pc->writer, tprof_ctl(s, cpu), halves,
			s->config.half_bytes);
	barrier();
	pc->nesting--;
	local_irq_restore(flags);
	return 0;
}

/*
 * cpuhp, on @cpu (each CPU online at start, and each coming online): a CPU
 * that came online after start gets its halves now. Sleeping allocations
 * are allowed in cpuhp callbacks; creating perf events is not (and none
 * are created here).
 */
static void tprof_sampling_cpu_up(unsigned int cpu, void *ctx)
{
	struct tprof_session *s = ctx;

	if (tprof_sampling_add_cpu(s, cpu) == 0)
		WRITE_ONCE(tprof_ctl(s, cpu)->online, 1);
}

/* cpuhp, on @cpu going offline, and on every CPU at stop. */
static void tprof_sampling_cpu_down(unsigned int cpu, void *ctx)
{
	struct tprof_session *s = ctx;
	struct tprof_sampling_cpu *pc = per_cpu_ptr(s->cpus, cpu);
	unsigned long flags;

	/* Its samples so far reach the reader now, not at the next switch. */
	local_irq_save(flags);
	if (!pc->nesting && tprof_sbuf_flush(&pc->writer, local_clock()))
		irq_work_queue(&s->wake_work);
	local_irq_restore(flags);
	WRITE_ONCE(tprof_ctl(s, cpu)->online, 0);
}

const struct tprof_cpu_events_ops tprof_sampling_cpu_ops = {
	.cpu_up = tprof_sampling_cpu_up,
	.cpu_down = tprof_sampling_cpu_down,
};

/* After stop (or a failed start): no hook or sample sees @s any more. */
void tprof_session_free(struct tprof_session *s)
{
	irq_work_sync(&s->wake_work);
	irq_work_sync(&s->map_kick);
	kvfree(s->task_events);
	tprof_follow_clear(s);
	put_pid(s->target);
	if (s->pid_ns)
		put_pid_ns(s->pid_ns);
	free_percpu(s->cpus);
	kfree(s->sample_cpus);
	if (s->buf_file)
		fput(s->buf_file);	/* the mappings keep the buffers */
	kfree(s->path_buf);
	kfree(s);
}

/* Stops sampling everywhere and publishes partial halves. Mutex held. */
void tprof_sampling_stop_locked(struct tprof_session *s)
{
	lockdep_assert_held(&tprof_sampling_mutex);
	if (s->stopped)
		return;
	WRITE_ONCE(s->running, false);
	RCU_INIT_POINTER(tprof_sampling_live, NULL);
	synchronize_rcu();		/* no hook writes any more */
	irq_work_sync(&s->map_kick);	/* nor queues the map worker */
	flush_workqueue(tprof_map_wq);	/* nor the map worker */
	while (s->nr_task_events)	/* with the counters inherited from them */
		perf_event_release_kernel(s->task_events[--s->nr_task_events]);
	if (s->counters_on)
		tprof_cpu_events_stop(&s->events);	/* counters gone, flushed */
	s->counters_on = false;
	s->stopped = true;
	wake_up_interruptible(&s->wait);
}

u32 tprof_sampling_state(void)
{
	u32 state;

	mutex_lock(&tprof_sampling_mutex);
	state = tprof_sampling_session && tprof_sampling_session->running ?
		TPROF_STATE_SAMPLING : TPROF_STATE_IDLE;
	mutex_unlock(&tprof_sampling_mutex);
	return state;
}

/*
 * No tprof_sampling_mutex here: mmap() runs under the caller's mmap_lock,
 * and the map worker (flushed under the mutex at stop) takes mmap_locks.
 * The session cannot go away meanwhile: only the release of this very file
 * frees it.
 */
int tprof_sampling_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct tprof_session *s = smp_load_acquire(&file->private_data);

	if (!s)
		return -ENODATA;
	return tprof_buffers_mmap(s, vma);
}

__poll_t tprof_sampling_poll(struct file *file, poll_table *wait)
{
	struct tprof_session *s = smp_load_acquire(&file->private_data);
	__poll_t mask = 0;
	unsigned int cpu;

	if (!s)
		return EPOLLERR;
	poll_wait(file, &s->wait, wait);
	for_each_possible_cpu(cpu) {
		struct tprof_buffer_ctl *ctl = tprof_ctl(s, cpu);

		if (smp_load_acquire(&ctl->full[0]) ||
		    smp_load_acquire(&ctl->full[1]))
			mask |= EPOLLIN | EPOLLRDNORM;
	}
	if (READ_ONCE(s->stopped) && !mask)
		mask |= EPOLLHUP;
	return mask;
}

/* The owner's file is going away: end its session and free it. */
void tprof_sampling_file_release(struct file *file)
{
	struct tprof_session *s = file->private_data;

	if (!s)
		return;
	mutex_lock(&tprof_sampling_mutex);
	tprof_sampling_stop_locked(s);
	tprof_windows_session_end(s);
	if (tprof_sampling_session == s)	/* not if an admin detached it */
		tprof_sampling_session = NULL;
	mutex_unlock(&tprof_sampling_mutex);
	file->private_data = NULL;
	tprof_session_free(s);
}

int tprof_sampling_init(void)
{
	tprof_map_wq = alloc_workqueue("tprof_maps", WQ_UNBOUND, 0);
	return tprof_map_wq ? 0 : -ENOMEM;
}

void tprof_sampling_exit(void)
{
	/* No session can exist: every file is closed before unload. */
	destroy_workqueue(tprof_map_wq);
}
