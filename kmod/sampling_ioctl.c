// SPDX-License-Identifier: GPL-2.0
/*
 * The sampling ioctls: SAMPLING_START (checks, permissions, allocation, the
 * counters), STOP, RELEASE and STATUS. Everything from userspace is checked
 * here; output structs are zeroed before they are filled.
 */
#include <linux/capability.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/perf_event.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/random.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include "sampling.h"
#include "admission.h"

static int tprof_sampling_check_config(struct tprof_sampling_config *c)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(c->resv); i++)
		if (c->resv[i])
			return -EINVAL;
	if (c->__pad2 || !c->cpus != !c->cpus_bytes ||
	    c->cpus_bytes % sizeof(u64) ||
	    c->cpus_bytes > TPROF_SAMPLING_MAX_CPUS_BYTES)
		return -EINVAL;
	if (c->flags & ~(TPROF_SAMPLING_CALLERS | TPROF_SAMPLING_STACKS))
		return -EINVAL;
	if ((c->flags & TPROF_SAMPLING_STACKS) ?
	    !c->stack_depth || c->stack_depth > TPROF_MAX_STACK_DEPTH :
	    c->stack_depth)
		return -EINVAL;
	if (!c->half_bytes)
		c->half_bytes = TPROF_SAMPLING_DEFAULT_HALF_BYTES;
	if (c->half_bytes < TPROF_SAMPLING_MIN_HALF_BYTES ||
	    c->half_bytes > TPROF_SAMPLING_MAX_HALF_BYTES ||
	    !is_power_of_2(c->half_bytes) || c->half_bytes < PAGE_SIZE)
		return -EINVAL;
	switch (c->event_type) {
	case TPROF_SAMPLE_ON_CLOCK:
		if (!c->frequency_hz)
			c->frequency_hz = TPROF_SAMPLING_DEFAULT_HZ;
		if (c->frequency_hz > TPROF_SAMPLING_MAX_HZ || c->event_config ||
		    c->event_period)
			return -EINVAL;
		break;
	case TPROF_METRIC_SOFTWARE:
		/* perf knows no software event past its table (ENOENT). */
		if (c->event_config >= PERF_COUNT_SW_MAX)
			return -EINVAL;
		fallthrough;
	case TPROF_METRIC_HARDWARE:
	case TPROF_METRIC_RAW:
		if (c->frequency_hz || !c->event_period)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

/*
 * config.cpus as a kernel mask, allocated (charged) into *mask; NULL for
 * every CPU. The user's 64-bit words are read bit by bit, so the layout
 * is the same on every architecture. EINVAL: no possible CPU in it.
 */
static int tprof_sampling_copy_cpus(const struct tprof_sampling_config *c,
				    struct cpumask **mask)
{
	unsigned int nr = c->cpus_bytes / sizeof(u64), w;
	u64 *words;

	*mask = NULL;
	if (!c->cpus)
		return 0;
	words = memdup_user(u64_to_user_ptr(c->cpus), c->cpus_bytes);
	if (IS_ERR(words))
		return PTR_ERR(words);
	*mask = kzalloc(cpumask_size(), GFP_KERNEL_ACCOUNT);
	if (!*mask) {
		kfree(words);
		return -ENOMEM;
	}
	for (w = 0; w < nr; w++) {
		u64 bits = words[w];

		while (bits) {
			unsigned long cpu = (unsigned long)w * 64 + __ffs64(bits);

			bits &= bits - 1;
			if (cpu < nr_cpu_ids && cpu_possible(cpu))
				cpumask_set_cpu(cpu, *mask);
		}
	}
	kfree(words);
	if (cpumask_empty(*mask)) {
		kfree(*mask);
		*mask = NULL;
		return -EINVAL;
	}
	return 0;
}

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

static long tprof_sampling_start(struct file *file,
				 struct tprof_sampling_config __user *uarg)
{
	struct tprof_sampling_config c;
	struct perf_event_attr attr;
	struct tprof_admission adm = {};
	struct cpumask *sample_cpus = NULL;
	struct pid *target = NULL;
	struct tprof_session *s;
	size_t ctl_bytes;
	bool privileged, exclude_kernel = false;
	unsigned int cpu;
	int ret;

	if (copy_from_user(&c, uarg, sizeof(c)))
		return -EFAULT;
	/* Output fields are ignored on input, so a struct can be reused. */
	c.nr_cpu_ids = c.ctl_bytes = c.half_bytes_out = c.frequency_out = 0;
	c.map_bytes = 0;
	if (c.pid == 0)
		c.pid = task_tgid_vnr(current);
	ret = tprof_sampling_check_config(&c);
	if (ret)
		return ret;
	ret = tprof_sampling_copy_cpus(&c, &sample_cpus);
	if (ret)
		return ret;
	/*
	 * Who may sample what (admission.h): the whole machine needs
	 * CAP_PERFMON (EPERM); one process perf's rules (EACCES, ESRCH,
	 * EINTR), at paranoid 2 user mode only, below it kernel mode with its
	 * addresses withheld. The target's exec lock is held until its
	 * counters exist, so an exec into a setuid image either comes first
	 * (and is refused here) or after them (and ends them: hooks.c). The
	 * session holds the process's identity (struct pid), never its number.
	 */
	privileged = perfmon_capable();
	if (c.pid == TPROF_PID_ALL) {
		ret = -EPERM;
		if (!privileged)
			goto out_mask;
	} else {
		ret = tprof_admit(c.pid, PIDTYPE_TGID, TPROF_ADMIT_PERF, &adm);
		if (ret)
			goto out_mask;
		target = tprof_admit_take_pid(&adm);
		c.pid = pid_vnr(target);
		exclude_kernel = adm.exclude_kernel;
	}

	mutex_lock(&tprof_sampling_mutex);
	if (tprof_sampling_session) {
		ret = -EBUSY;
		goto out_unlock;
	}
	ret = -ENOMEM;
	s = kzalloc(sizeof(*s), GFP_KERNEL_ACCOUNT);
	if (!s)
		goto out_unlock;
	s->owner = file;
	s->config = c;
	s->show_kernel = privileged;
	s->pid_ns = get_pid_ns(task_active_pid_ns(current));
	s->target = target;	/* the session's reference now */
	target = NULL;
	s->sample_cpus = sample_cpus;	/* and its mask */
	sample_cpus = NULL;
	init_waitqueue_head(&s->wait);
	raw_spin_lock_init(&s->exited_lock);
	init_irq_work(&s->wake_work, tprof_wake_reader);
	INIT_WORK(&s->map_work, tprof_map_worker);
	init_irq_work(&s->map_kick, tprof_map_kick);
	if (s->target && !tprof_follow_add(s, s->target))
		goto err_free;
	get_random_bytes(&s->space_key, sizeof(s->space_key));
	ctl_bytes = PAGE_ALIGN(nr_cpu_ids * sizeof(struct tprof_buffer_ctl));
	s->area_bytes = ctl_bytes + (size_t)nr_cpu_ids * 2 * c.half_bytes;
	ret = tprof_buffers_create(s, ctl_bytes, c.half_bytes);
	if (ret)
		goto err_free;
	ret = -ENOMEM;
	s->cpus = alloc_percpu(struct tprof_sampling_cpu);
	s->path_buf = kmalloc(PATH_MAX, GFP_KERNEL_ACCOUNT);
	if (!s->cpus || !s->path_buf)
		goto err_free;
	/*
	 * Halves for the CPUs online now (not published yet: any CPU may set
	 * them up); one that comes online later gets its own in cpu_up.
	 */
	for_each_possible_cpu(cpu)
		tprof_sbuf_init(&per_cpu_ptr(s->cpus, cpu)->writer,
				tprof_ctl(s, cpu), NULL, c.half_bytes);
	for_each_online_cpu(cpu) {
		ret = tprof_sampling_add_cpu(s, cpu);
		if (ret)
			goto err_free;
	}

	tprof_sampling_session = s;
	WRITE_ONCE(s->running, true);
	tprof_write_existing_processes(s);
	rcu_assign_pointer(tprof_sampling_live, s);
	tprof_sampling_attr(&c, &attr);
	if (s->target) {
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

	c.nr_cpu_ids = nr_cpu_ids;
	c.ctl_bytes = ctl_bytes;
	c.map_bytes = s->area_bytes;
	c.half_bytes_out = c.half_bytes;
	c.frequency_out = c.event_type == TPROF_SAMPLE_ON_CLOCK ? c.frequency_hz : 0;
	/* Published last: mmap() and poll() read it without the mutex. */
	smp_store_release(&file->private_data, s);
	mutex_unlock(&tprof_sampling_mutex);
	tprof_admit_end(&adm);
	if (copy_to_user(uarg, &c, sizeof(c)))
		return -EFAULT;	/* the session runs; the owner can stop it */
	return 0;

err_unpublish:
	tprof_sampling_stop_locked(s);
	tprof_sampling_session = NULL;
err_free:
	tprof_session_free(s);
out_unlock:
	mutex_unlock(&tprof_sampling_mutex);
	tprof_admit_end(&adm);
	put_pid(target);
out_mask:
	kfree(sample_cpus);
	return ret;
}

static struct tprof_session *tprof_owned_session(struct file *file, long *err)
{
	struct tprof_session *s = file->private_data;

	*err = 0;
	if (!s) {
		*err = tprof_sampling_session ? -EPERM : -ENODATA;
		return NULL;
	}
	return s;
}

long tprof_ioctl_sampling_start(struct file *file,
				struct tprof_sampling_config __user *uarg)
{
	if (file->private_data)
		return -EBUSY;
	return tprof_sampling_start(file, uarg);
}

long tprof_ioctl_sampling_stop(struct file *file)
{
	struct tprof_session *s;
	long ret;

	mutex_lock(&tprof_sampling_mutex);
	s = tprof_owned_session(file, &ret);
	if (s)
		tprof_sampling_stop_locked(s);
	mutex_unlock(&tprof_sampling_mutex);
	return ret;
}

long tprof_ioctl_sampling_release(struct file *file,
				  struct tprof_buffer_release __user *uarg)
{
	struct tprof_buffer_release rel;
	struct tprof_session *s;
	long ret;

	if (copy_from_user(&rel, uarg, sizeof(rel)))
		return -EFAULT;
	if (rel.resv[0] || rel.cpu >= nr_cpu_ids || !cpu_possible(rel.cpu) ||
	    rel.half > 1)
		return -EINVAL;
	mutex_lock(&tprof_sampling_mutex);
	s = tprof_owned_session(file, &ret);
	if (s) {
		ret = tprof_sbuf_release(tprof_ctl(s, rel.cpu), rel.half);
		/* Stopped: this CPU's writer is idle; hand over what is left. */
		if (!ret && s->stopped) {
			struct tprof_sbuf_writer *w =
				&per_cpu_ptr(s->cpus, rel.cpu)->writer;

			tprof_sbuf_flush(w, local_clock());
		}
	}
	mutex_unlock(&tprof_sampling_mutex);
	return ret;
}

long tprof_ioctl_sampling_status(struct tprof_sampling_status __user *uarg)
{
	struct tprof_sampling_status st;
	struct tprof_session *s;
	unsigned int cpu;

	memset(&st, 0, sizeof(st));
	mutex_lock(&tprof_sampling_mutex);
	s = tprof_sampling_session;
	if (s) {
		st.active = 1;
		st.running = READ_ONCE(s->running);
		/* In the reader's pid namespace (0: not visible there). */
		st.pid = s->target ? pid_vnr(s->target) : TPROF_PID_ALL;
		st.frequency_hz = s->config.frequency_hz;
		st.half_bytes = s->config.half_bytes;
		st.event_type = s->config.event_type;
		for_each_possible_cpu(cpu) {
			struct tprof_buffer_ctl *ctl = tprof_ctl(s, cpu);

			st.samples_taken += READ_ONCE(ctl->samples_taken);
			st.lost_samples += READ_ONCE(ctl->lost_samples);
			st.lost_records += READ_ONCE(ctl->lost_records);
		}
	}
	mutex_unlock(&tprof_sampling_mutex);
	return copy_to_user(uarg, &st, sizeof(st)) ? -EFAULT : 0;
}

/*
 * An administrator stops whoever's session runs: stopped as by its owner
 * (who still drains it and closes), and detached, so another may start.
 */
/*
 * On each CPU in turn (a cross call: IRQs off), its partial half goes to
 * the reader. The nesting guard is up meanwhile, so an NMI sample on this
 * CPU is counted as lost rather than written into a half being published.
 */
static void tprof_sampling_flush_cpu(void *arg)
{
	struct tprof_session *s = arg;
	struct tprof_sampling_cpu *pc = this_cpu_ptr(s->cpus);

	if (pc->nesting++ == 0 && pc->writer.halves &&
	    READ_ONCE(tprof_ctl(s, smp_processor_id())->online) &&
	    tprof_sbuf_flush(&pc->writer, local_clock()))
		irq_work_queue(&s->wake_work);
	pc->nesting--;
}

/*
 * FLUSH interrupts every online CPU: one round per session per
 * TPROF_SAMPLING_FLUSH_INTERVAL_MS at most, however often its owner asks.
 * A call inside the interval waits for its end (interruptibly, without the
 * mutex), then flushes.
 */
long tprof_ioctl_sampling_flush(struct file *file)
{
	struct tprof_session *s;
	unsigned int cpu;
	long ret;
	u64 now, next;

again:
	mutex_lock(&tprof_sampling_mutex);
	s = tprof_owned_session(file, &ret);
	if (s && !s->stopped) {
		now = ktime_get_ns();
		next = s->last_flush_ns + TPROF_SAMPLING_FLUSH_INTERVAL_MS * NSEC_PER_MSEC;
		if (s->last_flush_ns && now < next) {
			mutex_unlock(&tprof_sampling_mutex);
			if (msleep_interruptible(DIV_ROUND_UP_ULL(next - now, NSEC_PER_MSEC)))
				return -EINTR;
			goto again;
		}
		s->last_flush_ns = now;
		cpus_read_lock();
		for_each_online_cpu(cpu)
			smp_call_function_single(cpu, tprof_sampling_flush_cpu, s, 1);
		cpus_read_unlock();
	}
	mutex_unlock(&tprof_sampling_mutex);
	return ret;
}

long tprof_ioctl_sampling_stop_any(void)
{
	struct tprof_session *s;

	if (!perfmon_capable())
		return -EPERM;
	mutex_lock(&tprof_sampling_mutex);
	s = tprof_sampling_session;
	if (s) {
		tprof_sampling_stop_locked(s);
		tprof_sampling_session = NULL;
	}
	mutex_unlock(&tprof_sampling_mutex);
	return s ? 0 : -ENODATA;
}
