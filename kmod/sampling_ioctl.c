// SPDX-License-Identifier: GPL-2.0
/*
 * The sampling ioctls: SAMPLING_START (the config's checks, the CPU mask's
 * copy, permissions; the session itself is built by sampling_session.c),
 * STOP, STOP_ANY, FLUSH, RELEASE and STATUS. Everything from userspace is
 * copied and checked here; output structs are zeroed before they are filled.
 */
#include <linux/capability.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/perf_event.h>
#include <linux/pid.h>
#include <linux/sched/signal.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include "sampling.h"
#include "admission.h"
#include "unwind_store.h"

static int tprof_sampling_check_config(struct tprof_sampling_config *c)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(c->resv); i++)
		if (c->resv[i])
			return -EINVAL;
	if (!c->cpus != !c->cpus_bytes ||
	    c->cpus_bytes % sizeof(u64) ||
	    c->cpus_bytes > TPROF_SAMPLING_MAX_CPUS_BYTES)
		return -EINVAL;
	if (c->flags & ~(TPROF_SAMPLING_CALLERS | TPROF_SAMPLING_STACKS | TPROF_SAMPLING_USER_STACK |
			 TPROF_SAMPLING_USER_CFI | TPROF_SAMPLING_AGGREGATE |
			 TPROF_SAMPLING_AGGREGATE_RECORDS))
		return -EINVAL;
	if (c->__pad3 || ((c->flags & TPROF_SAMPLING_AGGREGATE_RECORDS) &&
			  !(c->flags & TPROF_SAMPLING_AGGREGATE)))
		return -EINVAL;
	/*
	 * Counts per address or stack: a caller alone is no key, and copies
	 * only for the walks unwind tables did not cover (they go as records).
	 */
	if (c->flags & TPROF_SAMPLING_AGGREGATE) {
		if ((c->flags & TPROF_SAMPLING_CALLERS) ||
		    ((c->flags & TPROF_SAMPLING_USER_STACK) && !(c->flags & TPROF_SAMPLING_USER_CFI)))
			return -EINVAL;
		if (!c->aggregate_slots)
			c->aggregate_slots = TPROF_AGGREGATE_DEFAULT_SLOTS;
		if (c->aggregate_slots < TPROF_AGGREGATE_MIN_SLOTS ||
		    c->aggregate_slots > TPROF_AGGREGATE_MAX_SLOTS ||
		    !is_power_of_2(c->aggregate_slots))
			return -EINVAL;
	} else if (c->aggregate_slots) {
		return -EINVAL;
	}
	if ((c->flags & TPROF_SAMPLING_USER_CFI) && !(c->flags & TPROF_SAMPLING_STACKS))
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
	/* A copy takes at most a quarter of a half: a record never spans two. */
	if ((c->flags & TPROF_SAMPLING_USER_STACK) ?
	    !(c->flags & TPROF_SAMPLING_STACKS) || !c->user_stack_bytes ||
	    c->user_stack_bytes % sizeof(u64) ||
	    c->user_stack_bytes > TPROF_MAX_USER_STACK_BYTES ||
	    c->user_stack_bytes > c->half_bytes / 4 :
	    c->user_stack_bytes)
		return -EINVAL;
	switch (c->event_type) {
	case TPROF_SAMPLE_ON_CLOCK:
		if (!c->frequency_hz)
			c->frequency_hz = TPROF_SAMPLING_DEFAULT_HZ;
		if (c->frequency_hz > TPROF_SAMPLING_MAX_HZ || c->event_config ||
		    c->event_period)
			return -EINVAL;
		break;
	case TPROF_SAMPLE_ON_TICK:	/* at HZ */
		if (c->frequency_hz || c->event_config || c->event_period)
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

static long tprof_sampling_start(struct file *file,
				 struct tprof_sampling_config __user *uarg)
{
	struct tprof_sampling_config c;
	struct tprof_admission adm = {};
	struct cpumask *sample_cpus = NULL;
	struct pid *target = NULL;
	bool privileged, exclude_kernel = false;
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
	ret = tprof_sampling_start_locked(file, &c, &sample_cpus, &target,
					  privileged, exclude_kernel);
	if (ret)
		goto out_unlock;
	mutex_unlock(&tprof_sampling_mutex);
	tprof_admit_end(&adm);
	if (copy_to_user(uarg, &c, sizeof(c)))
		return -EFAULT;	/* the session runs; the owner can stop it */
	return 0;

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

long tprof_ioctl_sampling_aggregate_read(struct file *file,
					 struct tprof_aggregate_read __user *uarg)
{
	struct tprof_aggregate_read rd;
	struct tprof_session *s;
	long ret;

	if (copy_from_user(&rd, uarg, sizeof(rd)))
		return -EFAULT;
	if (rd.resv[0] || rd.resv[1] || rd.cpu >= nr_cpu_ids || !cpu_possible(rd.cpu))
		return -EINVAL;
	mutex_lock(&tprof_sampling_mutex);
	s = tprof_owned_session(file, &ret);
	mutex_unlock(&tprof_sampling_mutex);
	/* The session lives as long as the file this ioctl holds. */
	if (!s)
		return ret;
	if (!(s->config.flags & TPROF_SAMPLING_AGGREGATE))
		return -EINVAL;
	if (rd.max_entries < s->config.aggregate_slots)
		return -ENOSPC;
	ret = tprof_agg_read(s, rd.cpu, &rd, u64_to_user_ptr(rd.entries));
	if (ret)
		return ret;
	rd.__pad = 0;
	if (copy_to_user(uarg, &rd, sizeof(rd)))
		return -EFAULT;
	return 0;
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
		st.frequency_hz = s->config.event_type == TPROF_SAMPLE_ON_TICK ? HZ :
				  s->config.frequency_hz;
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
 * The owner's unwind tables: the store has its own mutex, so a copy from
 * the owner that stalls (userfaultfd) holds up nobody else's session calls.
 * The session lives until its owner's file is released, which cannot
 * happen during this call.
 */
static struct tprof_unwind_store *tprof_owned_unwind(struct file *file, long *err)
{
	struct tprof_session *s;

	mutex_lock(&tprof_sampling_mutex);
	s = tprof_owned_session(file, err);
	mutex_unlock(&tprof_sampling_mutex);
	if (s && !s->unwind)
		*err = -EINVAL;
	return s ? s->unwind : NULL;
}

long tprof_ioctl_unwind_load(struct file *file, struct tprof_unwind_load __user *uarg)
{
	struct tprof_unwind_store *u;
	long ret;

	u = tprof_owned_unwind(file, &ret);
	return u ? tprof_unwind_load(u, uarg) : ret;
}

long tprof_ioctl_unwind_space(struct file *file, const struct tprof_unwind_space __user *uarg)
{
	struct tprof_unwind_store *u;
	long ret;

	u = tprof_owned_unwind(file, &ret);
	return u ? tprof_unwind_set_space(u, uarg) : ret;
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
