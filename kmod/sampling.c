// SPDX-License-Identifier: GPL-2.0
/*
 * System-wide sampling (US5355487, the Instruction Address Sampler): a
 * pinned per-CPU perf counter (cpu-clock by default, or another event's
 * overflow) calls tprof_sample() in interrupt context with the interrupted
 * registers; the sample goes into that CPU's double buffer
 * (core/sample_buffer.c), mapped read-only into the recorder. The hooks add
 * process records (fork, exec, exit); address-space records (MAP) are taken
 * from a workqueue for every address space seen in a user-mode sample, with
 * a reference on the mm so short-lived processes still resolve.
 *
 * Context rules: tprof_sample() and the hooks never sleep or allocate; they
 * write with IRQs off and a per-CPU nesting guard (a counter overflow in
 * NMI that lands inside another write is counted as lost). Wake-ups go
 * through irq_work. Every CPU's writer is touched only by that CPU while the
 * session runs, and only under tprof_sampling_mutex once it has stopped.
 *
 * Lifetime: one session at a time, owned by the file that started it. Stop
 * (ioctl or close): running = false, wait for hooks (RCU) and the map
 * worker, remove the CPU-hotplug state (destroys each CPU's counter and
 * publishes its partial half), then POLLHUP once the reader has everything.
 * The buffers are freed when the owner's file is released, which the mmap
 * keeps from happening while mapped.
 */
#include <linux/atomic.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/fs.h>
#include <linux/irq_work.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/perf_event.h>
#include <linux/pid.h>
#include <linux/poll.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/siphash.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <asm/unwind.h>
#include "compat.h"
#include "tprof.h"
#include "core/sample_buffer.h"

#define TPROF_MAP_CACHE 8	/* address spaces remembered per CPU */
#define TPROF_MAP_REQUESTS 64	/* address spaces queued for the worker */

enum { MAP_REQ_FREE, MAP_REQ_FILLING, MAP_REQ_READY };

struct tprof_map_request {
	atomic_t state;
	u32 pid;
	u64 space_id;
	struct mm_struct *mm;	/* mmget() reference */
};

struct tprof_map_cache_entry {
	u64 space_id;
	int map_count;
	int gen;
};

struct tprof_sampling_cpu {
	struct tprof_sbuf_writer writer;
	int nesting;			/* > 0 while this CPU writes a record */
	struct perf_event *event;
	struct tprof_map_cache_entry map_cache[TPROF_MAP_CACHE];
};

struct tprof_session {
	struct file *owner;
	struct tprof_sampling_config config;
	bool show_kernel;		/* owner had CAP_PERFMON at start */
	bool running;			/* read locklessly by samples and hooks */
	bool stopped;
	int cpuhp_state;		/* > 0 while CPU-hotplug callbacks exist */
	void *area;			/* vmalloc_user: control area + halves */
	size_t area_bytes;
	struct tprof_sampling_cpu __percpu *cpus;
	siphash_key_t space_key;	/* space ids never reveal mm pointers */
	atomic_t map_gen;		/* bumped by exec: forget cached spaces */
	struct tprof_map_request map_req[TPROF_MAP_REQUESTS];
	struct work_struct map_work;
	char *path_buf;			/* PATH_MAX, for the map worker only */
	struct irq_work wake_work;
	wait_queue_head_t wait;
};

static DEFINE_MUTEX(tprof_sampling_mutex);
/* The running session, for the sample handler and the hooks (RCU). */
static struct tprof_session __rcu *tprof_sampling_live;
/* The session whatever its state, for STATUS; under the mutex. */
static struct tprof_session *tprof_sampling_session;
static struct workqueue_struct *tprof_map_wq;

static inline struct tprof_buffer_ctl *tprof_ctl(struct tprof_session *s,
						 unsigned int cpu)
{
	return (struct tprof_buffer_ctl *)s->area + cpu;
}

static void tprof_wake_reader(struct irq_work *work)
{
	struct tprof_session *s = container_of(work, struct tprof_session,
					       wake_work);

	wake_up_interruptible(&s->wait);
}

/*
 * Reserves a record in this CPU's buffer. IRQs must be off. Returns NULL
 * (counted as lost) if the buffer is full or this CPU is already writing
 * (an NMI inside a write); on success the caller fills the record and
 * calls tprof_record_end().
 */
static void *tprof_record_begin(struct tprof_session *s,
				struct tprof_sampling_cpu **pcp, u32 size,
				bool is_sample)
{
	struct tprof_sampling_cpu *pc = this_cpu_ptr(s->cpus);
	void *rec;

	*pcp = pc;
	if (++pc->nesting != 1) {
		struct tprof_buffer_ctl *ctl = pc->writer.ctl;

		/* The interrupted writer owns the state: count it raw. */
		if (is_sample) {
			WRITE_ONCE(ctl->samples_taken, ctl->samples_taken + 1);
			WRITE_ONCE(ctl->lost_samples, ctl->lost_samples + 1);
		} else {
			WRITE_ONCE(ctl->lost_records, ctl->lost_records + 1);
		}
		pc->nesting--;
		return NULL;
	}
	{
		u64 seq = pc->writer.seq;

		rec = tprof_sbuf_reserve(&pc->writer, size, is_sample,
					 local_clock());
		if (pc->writer.seq != seq)
			irq_work_queue(&s->wake_work);
	}
	if (!rec)
		pc->nesting--;
	else
		memset(rec, 0, size);
	return rec;
}

static inline void tprof_record_end(struct tprof_sampling_cpu *pc)
{
	pc->nesting--;
}

static u64 tprof_space_id(struct tprof_session *s, struct mm_struct *mm)
{
	return mm ? siphash_1u64((u64)(unsigned long)mm, &s->space_key) : 0;
}

/* The return address of the sampled function, best effort. */
static bool tprof_sample_caller(struct pt_regs *regs, bool user, u64 *caller)
{
#ifdef CONFIG_X86_64
	if (user) {
		unsigned long ret;

		/* Frame-pointer chain: meaningful for code built with it. */
		if (copy_from_user_nofault(&ret, (void __user *)(regs->bp + 8),
					   sizeof(ret)))
			return false;
		*caller = ret;
		return ret != 0;
	} else {
		struct unwind_state state;

		/* Started from @regs, the unwinder is already at the caller. */
		unwind_start(&state, current, regs, NULL);
		if (unwind_done(&state))
			return false;
		*caller = unwind_get_return_address(&state);
		return *caller != 0;
	}
#else
	return false;
#endif
}

/* Queues a MAP capture of current's address space unless recently done. */
static void tprof_request_maps(struct tprof_session *s,
			       struct tprof_sampling_cpu *pc, u64 space_id)
{
	struct mm_struct *mm = current->mm;
	struct tprof_map_cache_entry *e;
	int gen = atomic_read(&s->map_gen);
	int i;

	if (!mm || in_nmi())
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
		r->pid = current->tgid;
		r->space_id = space_id;
		atomic_set_release(&r->state, MAP_REQ_READY);
		queue_work(tprof_map_wq, &s->map_work);
		e->space_id = space_id;
		e->map_count = READ_ONCE(mm->map_count);
		e->gen = gen;
		return;
	}
	/* Every request slot busy: the space may resolve later, or not. */
	WRITE_ONCE(pc->writer.ctl->lost_records, pc->writer.ctl->lost_records + 1);
}

static void tprof_sample(struct perf_event *event, struct perf_sample_data *data,
			 struct pt_regs *regs)
{
	struct tprof_session *s = event->overflow_handler_context;
	struct task_struct *task = current;
	struct tprof_sampling_cpu *pc;
	struct tprof_rec_sample *rec;
	unsigned long flags;
	bool user, idle;

	if (!READ_ONCE(s->running) || !regs)
		return;
	if (s->config.pid != TPROF_PID_ALL && task->tgid != s->config.pid)
		return;
	tprof_windows_sample(s, instruction_pointer(regs), task, user_mode(regs));

	local_irq_save(flags);
	rec = tprof_record_begin(s, &pc, sizeof(*rec), true);
	if (!rec)
		goto out;
	user = user_mode(regs);
	idle = is_idle_task(task);
	rec->hdr.type = TPROF_REC_SAMPLE;
	rec->hdr.size = sizeof(*rec);
	rec->time_ns = local_clock();
	rec->pid = idle ? 0 : task->tgid;
	rec->tid = idle ? 0 : task->pid;
	rec->cpu = smp_processor_id();
	rec->flags = (user ? TPROF_SAMPLE_USER : 0) | (idle ? TPROF_SAMPLE_IDLE : 0);
	if (user || s->show_kernel) {
		rec->ip = instruction_pointer(regs);
		if ((s->config.flags & TPROF_SAMPLING_CALLERS) &&
		    tprof_sample_caller(regs, user, &rec->caller))
			rec->flags |= TPROF_SAMPLE_CALLER;
	} else {
		rec->flags |= TPROF_SAMPLE_HIDDEN;
	}
	if (user) {
		rec->space_id = tprof_space_id(s, task->mm);
		tprof_request_maps(s, pc, rec->space_id);
	}
	tprof_record_end(pc);
out:
	local_irq_restore(flags);
}

/* ---- Process records from the hooks -------------------------------------- */

static struct tprof_session *tprof_live_session(void)
{
	/* Hooks run with preemption off: an RCU read-side section. */
	struct tprof_session *s = rcu_dereference_sched(tprof_sampling_live);

	return s && READ_ONCE(s->running) ? s : NULL;
}

static void tprof_write_comm(struct tprof_session *s, struct task_struct *p,
			     u32 parent_pid, u32 kind)
{
	struct tprof_sampling_cpu *pc;
	struct tprof_rec_comm *rec;
	unsigned long flags;

	if (s->config.pid != TPROF_PID_ALL && p->tgid != s->config.pid)
		return;
	local_irq_save(flags);
	rec = tprof_record_begin(s, &pc, sizeof(*rec), false);
	if (rec) {
		rec->hdr.type = TPROF_REC_COMM;
		rec->hdr.size = sizeof(*rec);
		rec->time_ns = local_clock();
		rec->pid = p->tgid;
		rec->parent_pid = parent_pid;
		rec->kind = kind;
		/* A bounded copy of a name that may change under us. */
		strscpy_pad(rec->comm, p->comm, sizeof(rec->comm));
		tprof_record_end(pc);
	}
	local_irq_restore(flags);
}

void tprof_sampling_on_fork(struct task_struct *parent, struct task_struct *child)
{
	struct tprof_session *s = tprof_live_session();

	tprof_windows_on_fork(parent, child);
	/* New processes only; new threads share their process's records. */
	if (s && child->pid == child->tgid)
		tprof_write_comm(s, child, parent->tgid, TPROF_COMM_FORK);
}

void tprof_sampling_on_exec(struct task_struct *p)
{
	struct tprof_session *s = tprof_live_session();

	tprof_windows_on_exec(p);
	if (!s)
		return;
	atomic_inc(&s->map_gen);
	tprof_write_comm(s, p, 0, TPROF_COMM_EXEC);
}

void tprof_sampling_on_exit(struct task_struct *p)
{
	struct tprof_session *s = tprof_live_session();
	struct tprof_sampling_cpu *pc;
	struct tprof_rec_exit *rec;
	unsigned long flags;

	tprof_windows_on_exit(p);
	/* The last thread of the process: signal->live already counts it out. */
	if (!s || atomic_read(&p->signal->live) != 0)
		return;
	if (s->config.pid != TPROF_PID_ALL && p->tgid != s->config.pid)
		return;
	local_irq_save(flags);
	rec = tprof_record_begin(s, &pc, sizeof(*rec), false);
	if (rec) {
		rec->hdr.type = TPROF_REC_EXIT;
		rec->hdr.size = sizeof(*rec);
		rec->time_ns = local_clock();
		rec->pid = p->tgid;
		tprof_record_end(pc);
	}
	local_irq_restore(flags);
}

/* ---- Address-space records (workqueue) ------------------------------------ */

static void tprof_write_map(struct tprof_session *s, u32 pid, u64 space_id,
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
		rec->time_ns = local_clock();
		rec->pid = pid;
		rec->space_id = space_id;
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

	mmap_read_lock(r->mm);
	for_each_vma(vmi, vma) {
		char *path;

		if (!(vma->vm_flags & VM_EXEC))
			continue;
		if (!vma->vm_file) {
#ifdef CONFIG_X86
			/* Code every process runs (clock_gettime...): name it. */
			if (vma->vm_start == (unsigned long)r->mm->context.vdso)
				tprof_write_map(s, r->pid, r->space_id, vma, "[vdso]");
#endif
			continue;
		}
		path = d_path(&vma->vm_file->f_path, buf, PATH_MAX);
		if (IS_ERR(path))
			continue;
		tprof_write_map(s, r->pid, r->space_id, vma, path);
	}
	mmap_read_unlock(r->mm);
}

static void tprof_map_worker(struct work_struct *work)
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
		r->mm = NULL;
		atomic_set_release(&r->state, MAP_REQ_FREE);
	}
}

/* ---- Per-CPU counters and CPU hotplug -------------------------------------- */

static int tprof_sampling_cpu_online(unsigned int cpu)
{
	struct tprof_session *s = tprof_sampling_session;
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.pinned = 1,
	};
	struct perf_event *ev;

	if (s->config.event_type == TPROF_SAMPLE_ON_CLOCK) {
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = PERF_COUNT_SW_CPU_CLOCK;
		attr.sample_period = NSEC_PER_SEC / s->config.frequency_hz;
	} else {
		attr.type = s->config.event_type == TPROF_METRIC_SOFTWARE ?
			PERF_TYPE_SOFTWARE : s->config.event_type == TPROF_METRIC_HARDWARE ?
			PERF_TYPE_HARDWARE : PERF_TYPE_RAW;
		attr.config = s->config.event_config;
		attr.sample_period = s->config.event_period;
	}
	ev = perf_event_create_kernel_counter(&attr, cpu, NULL, tprof_sample, s);
	if (IS_ERR(ev)) {
		int err = PTR_ERR(ev);

		/* No PMU (e.g. a VM): "not available", not silence. */
		if (attr.type != PERF_TYPE_SOFTWARE &&
		    (err == -ENOENT || err == -ENODEV || err == -EOPNOTSUPP))
			err = -EOPNOTSUPP;
		return err;
	}
	per_cpu_ptr(s->cpus, cpu)->event = ev;
	WRITE_ONCE(tprof_ctl(s, cpu)->online, 1);
	return 0;
}

/* Runs on @cpu as it goes offline, and on every CPU at stop. */
static int tprof_sampling_cpu_offline(unsigned int cpu)
{
	struct tprof_session *s = tprof_sampling_session;
	struct tprof_sampling_cpu *pc = per_cpu_ptr(s->cpus, cpu);
	unsigned long flags;

	if (pc->event) {
		perf_event_release_kernel(pc->event);
		pc->event = NULL;
	}
	/* Its samples so far reach the reader now, not at the next switch. */
	local_irq_save(flags);
	if (!pc->nesting && tprof_sbuf_flush(&pc->writer, local_clock()))
		irq_work_queue(&s->wake_work);
	local_irq_restore(flags);
	WRITE_ONCE(tprof_ctl(s, cpu)->online, 0);
	return 0;
}

/* ---- Session start/stop ------------------------------------------------------ */

static int tprof_sampling_check_config(struct tprof_sampling_config *c)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(c->resv); i++)
		if (c->resv[i])
			return -EINVAL;
	if (c->flags & ~TPROF_SAMPLING_CALLERS || c->__pad)
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
 * Who may sample what: perf's rules (see perm.c). On success *pid is the
 * process's global id (callers in a pid namespace name their own).
 */
static int tprof_sampling_check_access(u32 *pid)
{
	if (*pid == TPROF_PID_ALL)
		return perfmon_capable() ? 0 : -EPERM;
	return tprof_check_process_access(pid);
}

static void tprof_write_existing_processes(struct tprof_session *s)
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

static void tprof_session_free(struct tprof_session *s)
{
	irq_work_sync(&s->wake_work);
	free_percpu(s->cpus);
	vfree(s->area);
	kfree(s->path_buf);
	kfree(s);
}

static long tprof_sampling_start(struct file *file,
				 struct tprof_sampling_config __user *uarg)
{
	struct tprof_sampling_config c;
	struct tprof_session *s;
	size_t ctl_bytes;
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
	ret = tprof_sampling_check_access(&c.pid);
	if (ret)
		return ret;

	mutex_lock(&tprof_sampling_mutex);
	if (tprof_sampling_session) {
		ret = -EBUSY;
		goto out_unlock;
	}
	ret = -ENOMEM;
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		goto out_unlock;
	s->owner = file;
	s->config = c;
	s->show_kernel = perfmon_capable();
	init_waitqueue_head(&s->wait);
	init_irq_work(&s->wake_work, tprof_wake_reader);
	INIT_WORK(&s->map_work, tprof_map_worker);
	get_random_bytes(&s->space_key, sizeof(s->space_key));
	ctl_bytes = PAGE_ALIGN(nr_cpu_ids * sizeof(struct tprof_buffer_ctl));
	s->area_bytes = ctl_bytes + (size_t)nr_cpu_ids * 2 * c.half_bytes;
	s->area = vmalloc_user(s->area_bytes);
	s->cpus = alloc_percpu(struct tprof_sampling_cpu);
	s->path_buf = kmalloc(PATH_MAX, GFP_KERNEL);
	if (!s->area || !s->cpus || !s->path_buf)
		goto err_free;
	for_each_possible_cpu(cpu)
		tprof_sbuf_init(&per_cpu_ptr(s->cpus, cpu)->writer,
				tprof_ctl(s, cpu),
				(u8 *)s->area + ctl_bytes +
					(size_t)cpu * 2 * c.half_bytes,
				c.half_bytes);

	tprof_sampling_session = s;
	WRITE_ONCE(s->running, true);
	tprof_write_existing_processes(s);
	rcu_assign_pointer(tprof_sampling_live, s);
	ret = cpuhp_setup_state(CPUHP_AP_ONLINE_DYN, "tprof:sampling",
				tprof_sampling_cpu_online,
				tprof_sampling_cpu_offline);
	if (ret < 0)
		goto err_unpublish;
	s->cpuhp_state = ret;

	c.nr_cpu_ids = nr_cpu_ids;
	c.ctl_bytes = ctl_bytes;
	c.map_bytes = s->area_bytes;
	c.half_bytes_out = c.half_bytes;
	c.frequency_out = c.event_type == TPROF_SAMPLE_ON_CLOCK ? c.frequency_hz : 0;
	/* Published last: mmap() and poll() read it without the mutex. */
	smp_store_release(&file->private_data, s);
	mutex_unlock(&tprof_sampling_mutex);
	if (copy_to_user(uarg, &c, sizeof(c)))
		return -EFAULT;	/* the session runs; the owner can stop it */
	return 0;

err_unpublish:
	WRITE_ONCE(s->running, false);
	RCU_INIT_POINTER(tprof_sampling_live, NULL);
	synchronize_rcu();
	flush_workqueue(tprof_map_wq);
	tprof_sampling_session = NULL;
err_free:
	tprof_session_free(s);
out_unlock:
	mutex_unlock(&tprof_sampling_mutex);
	return ret;
}

/* Stops sampling everywhere and publishes partial halves. Mutex held. */
static void tprof_sampling_stop_locked(struct tprof_session *s)
{
	lockdep_assert_held(&tprof_sampling_mutex);
	if (s->stopped)
		return;
	WRITE_ONCE(s->running, false);
	RCU_INIT_POINTER(tprof_sampling_live, NULL);
	synchronize_rcu();		/* no hook writes any more */
	flush_workqueue(tprof_map_wq);	/* nor the map worker */
	if (s->cpuhp_state > 0)
		cpuhp_remove_state(s->cpuhp_state);	/* counters gone, flushed */
	s->cpuhp_state = 0;
	s->stopped = true;
	wake_up_interruptible(&s->wait);
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
		st.pid = s->config.pid;
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
	if (vma->vm_pgoff != 0 || vma->vm_end - vma->vm_start != s->area_bytes)
		return -EINVAL;
	/* Read-only for the reader: only the kernel writes the buffers. */
	if (vma->vm_flags & VM_WRITE)
		return -EPERM;
	tprof_vm_flags_clear(vma, VM_MAYWRITE);
	return remap_vmalloc_range(vma, s->area, 0);
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
