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
#include <linux/anon_inodes.h>
#include <linux/capability.h>
#include <linux/cpumask.h>
#include <linux/cred.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/irq_work.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/poll.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include "compat.h"
#include "sampling.h"

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

/* cpuhp, on @cpu (a CPU online at start, or coming online). */
static void tprof_sampling_cpu_up(unsigned int cpu, void *ctx)
{
	struct tprof_session *s = ctx;

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

/*
 * The buffers are a refcounted object of their own, an anonymous file that
 * every mapping holds (vma_set_file()): the owner's descriptor does not stay
 * open because the buffers are mapped, so closing it ends the session, and
 * the mappings stay readable (nothing writes any more) until unmapped.
 * Their memory is charged like perf's ring buffers: to the owner's
 * user->locked_vm, against RLIMIT_MEMLOCK plus a per-user allowance of
 * sampling_mlock_kb per online CPU (perf_event_mlock_kb); CAP_IPC_LOCK is
 * exempt. Uncharged when the memory is freed. The buffers are sized for
 * nr_cpu_ids CPUs (every possible CPU, so a CPU that comes online later has
 * its buffer) and charged in full.
 */
static unsigned int sampling_mlock_kb = 512 + (PAGE_SIZE >> 10);
module_param(sampling_mlock_kb, uint, 0644);
MODULE_PARM_DESC(sampling_mlock_kb,
		 "per-user sample buffer allowance per online CPU, KiB, on top of RLIMIT_MEMLOCK (as perf_event_mlock_kb)");

struct tprof_buffers {
	void *area;
	struct user_struct *user;	/* charged; NULL: CAP_IPC_LOCK */
	unsigned long pages;
};

static void tprof_buffers_free(struct tprof_buffers *b)
{
	vfree(b->area);
	if (b->user) {
		atomic_long_sub(b->pages, &b->user->locked_vm);
		free_uid(b->user);
	}
	kfree(b);
}

static int tprof_buffers_release(struct inode *inode, struct file *file)
{
	tprof_buffers_free(file->private_data);
	return 0;
}

static const struct file_operations tprof_buffers_fops = {
	.owner = THIS_MODULE,
	.release = tprof_buffers_release,
	.llseek = noop_llseek,
};

/* s->area and s->buf_file, charged to the caller; 0, -EPERM or -ENOMEM. */
int tprof_buffers_alloc(struct tprof_session *s, size_t bytes)
{
	unsigned long pages = PAGE_ALIGN(bytes) >> PAGE_SHIFT, limit;
	struct tprof_buffers *b;
	struct file *f;

	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	if (!capable(CAP_IPC_LOCK)) {
		b->user = get_current_user();
		limit = (rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT) +
			(READ_ONCE(sampling_mlock_kb) >> (PAGE_SHIFT - 10)) *
			num_online_cpus();
		if (atomic_long_add_return(pages, &b->user->locked_vm) > limit) {
			atomic_long_sub(pages, &b->user->locked_vm);
			free_uid(b->user);
			kfree(b);
			return -EPERM;	/* as perf's mmap() */
		}
		b->pages = pages;
	}
	b->area = vmalloc_user(bytes);
	if (!b->area) {
		tprof_buffers_free(b);
		return -ENOMEM;
	}
	f = anon_inode_getfile("[tprof_buffers]", &tprof_buffers_fops, b, O_RDONLY);
	if (IS_ERR(f)) {
		tprof_buffers_free(b);
		return PTR_ERR(f);
	}
	s->area = b->area;
	s->buf_file = f;
	return 0;
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
	int ret;

	if (!s)
		return -ENODATA;
	if (vma->vm_pgoff != 0 || vma->vm_end - vma->vm_start != s->area_bytes)
		return -EINVAL;
	/* Read-only for the reader: only the kernel writes the buffers. */
	if (vma->vm_flags & (VM_WRITE | VM_EXEC))
		return -EPERM;
	tprof_vm_flags_clear(vma, VM_MAYWRITE | VM_MAYEXEC);
	/* Not inherited: a forked child holds no session memory. */
	tprof_vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND);
	ret = remap_vmalloc_range(vma, s->area, 0);
	if (!ret)
		vma_set_file(vma, s->buf_file);	/* pins the buffers, not @file */
	return ret;
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
