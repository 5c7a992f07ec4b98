// SPDX-License-Identifier: GPL-2.0
/*
 * A sampling session's lifetime: one session at a time, owned by the file
 * that started it. Start (from the config sampling_ioctl.c has copied and
 * checked): the session, its buffers and its counters (per CPU, or one
 * inherited per-task counter on each thread of a one-process target), then
 * published. Stop (ioctl or close): running = false, unpublish it and
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
#include <linux/random.h>
#include <linux/sched/clock.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include "sampling.h"
#include "unwind_store.h"
#include "compat.h"
#include "windows.h"

DEFINE_MUTEX(tprof_sampling_mutex);
/* The running session, for the sample handler and the hooks (RCU). */
struct tprof_session __rcu *tprof_sampling_live;
/* The session whatever its state, for STATUS; under the mutex. */
struct tprof_session *tprof_sampling_session;
struct workqueue_struct *tprof_map_wq;

static void tprof_wake_reader(struct irq_work *work)
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
static int tprof_sampling_add_cpu(struct tprof_session *s, unsigned int cpu)
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

static const struct tprof_cpu_events_ops tprof_sampling_cpu_ops = {
	.cpu_up = tprof_sampling_cpu_up,
	.cpu_down = tprof_sampling_cpu_down,
};

/* The counter a session samples on. */
static void tprof_sampling_attr(const struct tprof_sampling_config *c,
				struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->pinned = 1;
	if (c->event_type == TPROF_SAMPLE_ON_CLOCK) {
		attr->type = PERF_TYPE_SOFTWARE;
		attr->config = PERF_COUNT_SW_CPU_CLOCK;
		attr->sample_period = NSEC_PER_SEC / c->frequency_hz;
	} else {
		attr->type = c->event_type == TPROF_METRIC_SOFTWARE ?
			PERF_TYPE_SOFTWARE : c->event_type == TPROF_METRIC_HARDWARE ?
			PERF_TYPE_HARDWARE : PERF_TYPE_RAW;
		attr->config = c->event_config;
		attr->sample_period = c->event_period;
	}
}

/*
 * "No PMU" (e.g. a VM) for a non-software event: "not available"; a
 * software event perf does not know (e.g. a config it rejects): EINVAL.
 */
static int tprof_sampling_create_err(const struct perf_event_attr *attr, int err)
{
	if (attr->type != PERF_TYPE_SOFTWARE &&
	    (err == -ENOENT || err == -ENODEV || err == -EOPNOTSUPP))
		return -EOPNOTSUPP;
	if (attr->type == PERF_TYPE_SOFTWARE && err == -ENOENT)
		return -EINVAL;
	return err;
}

/*
 * One-process session: one inherited per-task counter on each thread of
 * the target, created here in the caller's context. Threads and processes
 * created later by a thread with a counter inherit it (perf's inherit);
 * perf itself removes them at an exec into a non-dumpable image.
 */
static int tprof_sampling_task_events(struct tprof_session *s,
				      struct perf_event_attr *attr)
{
	struct task_struct **tasks, *leader, *t;
	unsigned int n = 0, i;
	int ret = 0;

	tasks = kvcalloc(TPROF_SAMPLING_MAX_THREADS, sizeof(*tasks), GFP_KERNEL);
	if (!tasks)
		return -ENOMEM;
	rcu_read_lock();
	leader = pid_task(s->target, PIDTYPE_TGID);
	if (!leader)
		ret = -ESRCH;
	else
		for_each_thread(leader, t) {
			if (n == TPROF_SAMPLING_MAX_THREADS) {
				ret = -E2BIG;
				break;
			}
			get_task_struct(t);
			tasks[n++] = t;
		}
	rcu_read_unlock();
	if (!ret && n) {
		s->task_events = kvcalloc(n, sizeof(*s->task_events), GFP_KERNEL_ACCOUNT);
		if (!s->task_events)
			ret = -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		struct perf_event *ev;

		if (!ret) {
			ev = perf_event_create_kernel_counter(attr, -1, tasks[i],
							      tprof_sample, s);
			if (!IS_ERR(ev))
				s->task_events[s->nr_task_events++] = ev;
			else if (PTR_ERR(ev) != -ESRCH)	/* ESRCH: it exited */
				ret = tprof_sampling_create_err(attr, PTR_ERR(ev));
		}
		put_task_struct(tasks[i]);
	}
	kvfree(tasks);
	if (!ret && !s->nr_task_events)
		ret = -ESRCH;	/* every thread exited meanwhile */
	return ret;
}

/*
 * SAMPLING_START's session, from the config sampling_ioctl.c has copied and
 * checked, the CPU mask it copied (*@sample_cpus, NULL: every CPU) and the
 * target it admitted (*@target, NULL: system-wide; its exec lock is held
 * until the caller's tprof_admit_end()). Mutex held, no session current.
 * Builds the session, its buffers and its counters, makes it current and
 * @owner's, and fills @c's output fields. The session takes *@sample_cpus
 * and *@target (and NULLs them) as soon as it exists: the caller frees
 * what is left either way. 0, or -errno with no session left.
 */
int tprof_sampling_start_locked(struct file *owner,
				struct tprof_sampling_config *c,
				struct cpumask **sample_cpus, struct pid **target,
				bool show_kernel, bool exclude_kernel)
{
	struct perf_event_attr attr;
	struct tprof_session *s;
	size_t ctl_bytes;
	unsigned int cpu;
	int ret;

	lockdep_assert_held(&tprof_sampling_mutex);
	ret = -ENOMEM;
	s = kzalloc(sizeof(*s), GFP_KERNEL_ACCOUNT);
	if (!s)
		return ret;
	s->owner = owner;
	s->config = *c;
	s->show_kernel = show_kernel;
	s->exclude_kernel = exclude_kernel;
	s->pid_ns = get_pid_ns(task_active_pid_ns(current));
	s->target = *target;	/* the session's reference now */
	*target = NULL;
	s->sample_cpus = *sample_cpus;	/* and its mask */
	*sample_cpus = NULL;
	init_waitqueue_head(&s->wait);
	raw_spin_lock_init(&s->exited_lock);
	init_irq_work(&s->wake_work, tprof_wake_reader);
	INIT_WORK(&s->map_work, tprof_map_worker);
	init_irq_work(&s->map_kick, tprof_map_kick);
	if (s->target && !tprof_follow_add(s, s->target))
		goto err_free;
	get_random_bytes(&s->space_key, sizeof(s->space_key));
	ctl_bytes = PAGE_ALIGN(nr_cpu_ids * sizeof(struct tprof_buffer_ctl));
	s->area_bytes = ctl_bytes + (size_t)nr_cpu_ids * 2 * c->half_bytes;
	ret = tprof_buffers_create(s, ctl_bytes, c->half_bytes);
	if (ret)
		goto err_free;
	ret = -ENOMEM;
	s->cpus = alloc_percpu(struct tprof_sampling_cpu);
	s->path_buf = kmalloc(PATH_MAX, GFP_KERNEL_ACCOUNT);
	if (c->flags & TPROF_SAMPLING_USER_CFI)
		s->unwind = tprof_unwind_store_create();
	if (!s->cpus || !s->path_buf || (!s->unwind && (c->flags & TPROF_SAMPLING_USER_CFI)))
		goto err_free;
	if (c->flags & TPROF_SAMPLING_AGGREGATE) {
		ret = tprof_agg_create(s);
		if (ret)
			goto err_free;
	}
	/*
	 * Halves for the CPUs online now (not published yet: any CPU may set
	 * them up); one that comes online later gets its own in cpu_up.
	 */
	for_each_possible_cpu(cpu)
		tprof_sbuf_init(&per_cpu_ptr(s->cpus, cpu)->writer,
				tprof_ctl(s, cpu), NULL, c->half_bytes);
	for_each_online_cpu(cpu) {
		ret = tprof_sampling_add_cpu(s, cpu);
		if (ret)
			goto err_free;
	}

	tprof_sampling_session = s;
	WRITE_ONCE(s->running, true);
	tprof_write_existing_processes(s);
	rcu_assign_pointer(tprof_sampling_live, s);
	tprof_sampling_attr(c, &attr);
	if (c->event_type == TPROF_SAMPLE_ON_TICK) {
		/* Hotplug notifications only: the kernel's tick takes the samples. */
		ret = tprof_cpu_events_start(&s->events, NULL, 0, NULL, s,
					     &tprof_sampling_cpu_ops);
		s->counters_on = !ret;
		if (!ret)
			ret = tprof_tick_start(s);
	} else if (s->target) {
		/* Hotplug notifications only: the counters follow the tasks. */
		ret = tprof_cpu_events_start(&s->events, NULL, 0, NULL, s,
					     &tprof_sampling_cpu_ops);
		if (ret)
			goto err_unpublish;
		s->counters_on = true;
		attr.inherit = 1;
		attr.exclude_kernel = exclude_kernel;
		ret = tprof_sampling_task_events(s, &attr);
	} else {
		ret = tprof_cpu_events_start_on(&s->events, s->sample_cpus,
						&attr, 1, tprof_sample, s,
						&tprof_sampling_cpu_ops);
		s->counters_on = !ret;
	}
	if (ret)
		goto err_unpublish;

	c->nr_cpu_ids = nr_cpu_ids;
	c->ctl_bytes = ctl_bytes;
	c->map_bytes = s->area_bytes;
	c->half_bytes_out = c->half_bytes;
	c->frequency_out = c->event_type == TPROF_SAMPLE_ON_CLOCK ? c->frequency_hz :
			   c->event_type == TPROF_SAMPLE_ON_TICK ? HZ : 0;
	/* Published last: mmap() and poll() read it without the mutex. */
	smp_store_release(&owner->private_data, s);
	return 0;

err_unpublish:
	tprof_sampling_stop_locked(s);
	tprof_sampling_session = NULL;
err_free:
	tprof_session_free(s);
	return ret;
}

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
	tprof_unwind_store_free(s->unwind);
	tprof_agg_free(s);
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
	tprof_tick_stop(s);		/* nor the tick (after its last run) */
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
