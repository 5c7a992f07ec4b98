/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sampling sessions: the entry points the rest of the module calls, then
 * what the files that implement them share, one concern each:
 *
 *   sampling_hot.c      the sample handler and record writing (IRQ/NMI)
 *   sampling_tick.c     samples taken in the scheduler tick, idle ticks
 *   sampling_aggregate.c  counts per (process, space, ip) in per-CPU tables
 *   sampling_stack.c    a sample's whole stack (kernel and user part)
 *   sampling_records.c  process records from the hooks, MAP records (worker)
 *   sampling_ioctl.c    the ioctls: user copies, checks, permissions
 *   sampling_session.c  the session's lifetime: globals, start (from a
 *                       checked config), stop, free, mmap, poll, release
 *                       of the owner's file, CPU hotplug
 *   sampling_buffers.c  the buffers' memory: per online CPU, charged,
 *                       mapped on fault, outliving the session while mapped
 *
 * Context rules: the sample handler and the hooks never sleep or allocate;
 * they write with IRQs off and a per-CPU nesting guard (a counter overflow
 * in NMI that lands inside another write is counted as lost). Wake-ups go
 * through irq_work. Every CPU's writer is touched only by that CPU while the
 * session runs, and only under tprof_sampling_mutex once it has stopped.
 */
#ifndef TPROF_SAMPLING_H
#define TPROF_SAMPLING_H

#include <linux/irq_work.h>
#include <linux/mutex.h>
#include <linux/perf_event.h>
#include <linux/siphash.h>
#include <linux/tprof.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include "cpu_events.h"
#include "core/sample_buffer.h"

struct cpumask;
struct file;
struct pid;
struct poll_table_struct;
struct task_struct;
struct tprof_unwind_store;
struct vm_area_struct;

/*
 * API for the rest of the module: the hooks (hooks.c), the ioctls and
 * file operations (dev.c), load and unload (main.c).
 */
/* sampling_records.c */
void tprof_sampling_on_fork(struct task_struct *parent, struct task_struct *child);
void tprof_sampling_on_exec(struct task_struct *p);
void tprof_sampling_on_exit(struct task_struct *p);
/* sampling_ioctl.c */
long tprof_ioctl_sampling_start(struct file *file,
				struct tprof_sampling_config __user *uarg);
long tprof_ioctl_sampling_stop(struct file *file);
long tprof_ioctl_sampling_stop_any(void);
long tprof_ioctl_sampling_flush(struct file *file);
long tprof_ioctl_sampling_release(struct file *file,
				  struct tprof_buffer_release __user *uarg);
long tprof_ioctl_sampling_status(struct tprof_sampling_status __user *uarg);
long tprof_ioctl_sampling_aggregate_read(struct file *file,
					 struct tprof_aggregate_read __user *uarg);
long tprof_ioctl_unwind_load(struct file *file, struct tprof_unwind_load __user *uarg);
long tprof_ioctl_unwind_space(struct file *file, const struct tprof_unwind_space __user *uarg);
/* sampling_session.c */
u32 tprof_sampling_state(void);
int tprof_sampling_mmap(struct file *file, struct vm_area_struct *vma);
__poll_t tprof_sampling_poll(struct file *file, struct poll_table_struct *wait);
void tprof_sampling_file_release(struct file *file);
int tprof_sampling_init(void);
void tprof_sampling_exit(void);

/* The rest is shared between sampling_*.c (and windows.c, on a session). */

#define TPROF_MAP_CACHE 8	/* address spaces remembered per CPU */
#define TPROF_MAP_REQUESTS 64	/* address spaces queued for the worker */
#define TPROF_FOLLOW_MAX 64	/* processes a one-process session follows */
#define TPROF_SAMPLING_MAX_THREADS 4096	/* threads of its target at start */
#define TPROF_EXITED_SETS 256	/* processes remembered as exited: sets x ways */
#define TPROF_EXITED_WAYS 8

enum { MAP_REQ_FREE, MAP_REQ_FILLING, MAP_REQ_READY };

struct tprof_map_request {
	atomic_t state;
	u32 pid;
	u64 space_id;
	/*
	 * When the sample that asked was taken: the MAP records carry it, so
	 * a capture the worker makes after the process exited (it holds the
	 * mm) never looks like a record of whoever reused the pid.
	 */
	u64 time_ns;
	struct mm_struct *mm;	/* mmget() reference */
	/* Whose image it is (get_task_struct()): dumpability is the task's on 7.x. */
	struct task_struct *task;
};

struct tprof_map_cache_entry {
	u64 space_id;
	int map_count;
	int gen;
};

struct tprof_sampling_cpu {
	struct tprof_sbuf_writer writer;
	int nesting;			/* > 0 while this CPU writes a record */
	/*
	 * A sample's stack is collected here before its record is reserved
	 * (its size depends on it); an NMI sample that lands meanwhile
	 * (stack_busy) goes without a stack.
	 */
	int stack_busy;
	u64 stack[TPROF_MAX_STACK_DEPTH + 2];
	struct tprof_map_cache_entry map_cache[TPROF_MAP_CACHE];
	/* Tick sampling: this CPU's previous tick and idle times (sampling_tick.c). */
	u64 tick_last_ns;
	u64 tick_idle_us;
	u64 tick_iowait_us;
};

struct tprof_window_table;

struct tprof_session {
	struct file *owner;
	struct tprof_sampling_config config;
	bool show_kernel;		/* owner had CAP_PERFMON at start */
	bool exclude_kernel;		/* paranoid 2: user-mode samples only */
	bool tick_on;			/* sampling_tick.c's hook attached */
	bool running;			/* read locklessly by samples and hooks */
	bool stopped;
	bool counters_on;		/* cpu_events started */
	u64 last_flush_ns;		/* FLUSH's last IPI round (sampling mutex) */
	struct tprof_cpu_events events;	/* per-CPU counters (system-wide) + hotplug */
	/*
	 * One-process sessions: the target's identity and one inherited
	 * per-task counter per thread it had at start (children and threads
	 * created later inherit them, as with perf record -p). follow[] holds
	 * the processes whose COMM/EXIT records the owner gets: the target and
	 * the processes forked from followed ones after start; a process that
	 * execs a non-dumpable (setuid) image, or exits, leaves it. Slots are
	 * claimed with cmpxchg from the hooks. Each holds a get_pid() reference.
	 */
	struct pid_namespace *pid_ns;	/* the owner's: pids in records */
	struct pid *target;		/* NULL: system-wide */
	struct perf_event **task_events;
	unsigned int nr_task_events;
	struct pid *follow[TPROF_FOLLOW_MAX];
	struct tprof_buffers *buffers;	/* owned by buf_file */
	struct file *buf_file;		/* the mappings hold it too */
	struct tprof_buffer_ctl *ctl_area;	/* [nr_cpu_ids], in buffers */
	size_t area_bytes;		/* of the mapping (uapi map_bytes) */
	struct tprof_sampling_cpu __percpu *cpus;
	/* TPROF_SAMPLING_USER_CFI: the owner's unwind tables, else NULL. */
	struct tprof_unwind_store *unwind;
	/* config.cpus (record -C): samples only on these; NULL: every CPU. */
	struct cpumask *sample_cpus;
	siphash_key_t space_key;	/* space ids never reveal mm pointers */
	atomic_t map_gen;		/* bumped by exec: forget cached spaces */
	struct tprof_map_request map_req[TPROF_MAP_REQUESTS];
	struct work_struct map_work;
	struct irq_work map_kick;	/* queues map_work: NMI-safe */
	/*
	 * Processes whose EXIT was written (signal_struct; see on_exit): a
	 * set-associative table under exited_lock (exits and forks only,
	 * never the switch path).
	 */
	raw_spinlock_t exited_lock;
	unsigned int exited_victim;
	struct signal_struct *exited[TPROF_EXITED_SETS * TPROF_EXITED_WAYS];
	char *path_buf;			/* PATH_MAX, for the map worker only */
	struct irq_work wake_work;
	wait_queue_head_t wait;
	/* AGGREGATE: two count tables per CPU (sampling_aggregate.c). */
	struct tprof_agg_cpu __percpu *agg;
	struct mutex agg_lock;		/* one AGGREGATE_READ at a time */
	/* Counting windows (windows.c), RCU; under tprof_windows_mutex. */
	struct tprof_window_table __rcu *windows;
};

/* sampling_session.c */
extern struct mutex tprof_sampling_mutex;
extern struct tprof_session __rcu *tprof_sampling_live;
extern struct tprof_session *tprof_sampling_session;
extern struct workqueue_struct *tprof_map_wq;
int tprof_sampling_start_locked(struct file *owner,
				struct tprof_sampling_config *c,
				struct cpumask **sample_cpus, struct pid **target,
				bool show_kernel, bool exclude_kernel);
void tprof_sampling_stop_locked(struct tprof_session *s);
void tprof_session_free(struct tprof_session *s);

static inline struct tprof_buffer_ctl *tprof_ctl(struct tprof_session *s,
						 unsigned int cpu)
{
	return s->ctl_area + cpu;
}

/* sampling_buffers.c */
struct tprof_buffers;
int tprof_buffers_create(struct tprof_session *s, size_t ctl_bytes,
			 u32 half_bytes);
int tprof_buffers_add_cpu(struct tprof_buffers *b, unsigned int cpu,
			  u8 **halves);
int tprof_buffers_mmap(struct tprof_session *s, struct vm_area_struct *vma);

/* The running session, for the hooks (preemption off: RCU-sched reader). */
static inline struct tprof_session *tprof_live_session(void)
{
	struct tprof_session *s = rcu_dereference_sched(tprof_sampling_live);

	return s && READ_ONCE(s->running) ? s : NULL;
}

/* sampling_hot.c */
void *tprof_record_begin(struct tprof_session *s,
			 struct tprof_sampling_cpu **pcp, u32 size,
			 bool is_sample);
static inline void tprof_record_end(struct tprof_sampling_cpu *pc)
{
	pc->nesting--;
}
void tprof_sample(struct perf_event *event, struct perf_sample_data *data,
		  struct pt_regs *regs);
void tprof_sample_regs(struct tprof_session *s, struct pt_regs *regs);

/*
 * sampling_stack.c: fills *st and frames[stack_depth + 2]; returns the
 * count. *uregs: the user registers the user part started from, or NULL.
 */
unsigned int tprof_sample_stack(struct tprof_session *s, struct pt_regs *regs,
				bool user, u64 space_id, struct tprof_rec_stack *st,
				u64 *frames, struct pt_regs **uregs);
/* Fills *us but asked, and copies up to us->asked bytes of stack to @dst. */
void tprof_sample_user_stack(struct pt_regs *uregs, struct tprof_rec_user_stack *us, u8 *dst);

/*
 * sampling_tick.c: attaches the tick hook for @s (mutex held, @s running
 * and published): 0, or -EOPNOTSUPP where the tick cannot be hooked.
 * Detach after @s was unpublished; it waits for the hook's last run.
 */
int tprof_tick_start(struct tprof_session *s);
void tprof_tick_stop(struct tprof_session *s);

/*
 * sampling_aggregate.c: the tables (created at start, freed with the
 * session), a sample's count (IRQs off, nesting guard up; false: no room,
 * write a record) and AGGREGATE_READ's work.
 */
struct tprof_agg_cpu;
struct tprof_aggregate_read;
struct tprof_aggregate_entry;
int tprof_agg_create(struct tprof_session *s);
void tprof_agg_free(struct tprof_session *s);
struct tprof_aggregate_entry *tprof_agg_add(struct tprof_session *s, u64 ip, u64 space_id,
					    u32 pid, u32 flags, bool *fresh);
void tprof_agg_unadd(struct tprof_session *s, struct tprof_aggregate_entry *e);
int tprof_agg_read(struct tprof_session *s, unsigned int cpu,
		   struct tprof_aggregate_read *out,
		   struct tprof_aggregate_entry __user *uentries);

/* sampling_records.c */
void tprof_request_maps(struct tprof_session *s, struct tprof_sampling_cpu *pc,
			u64 space_id);
void tprof_write_comm(struct tprof_session *s, struct task_struct *p,
		      u32 parent_pid, u32 kind);
void tprof_write_existing_processes(struct tprof_session *s);
void tprof_map_worker(struct work_struct *work);
void tprof_map_kick(struct irq_work *work);
bool tprof_session_follows(struct tprof_session *s, struct task_struct *p);
bool tprof_follow_add(struct tprof_session *s, struct pid *pid);
bool tprof_follow_remove(struct tprof_session *s, struct pid *pid);
void tprof_follow_clear(struct tprof_session *s);

#endif /* TPROF_SAMPLING_H */
