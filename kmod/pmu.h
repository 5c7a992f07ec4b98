/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PMU programs: counters with thresholds and arithmetic rules,
 * evaluated in the perf overflow handlers; events go through a lock-free
 * queue to a work item that sends them over generic netlink (pmu.c's top
 * comment lists the files). The entry points the rest of the module
 * calls, then what the pmu*.c files share.
 */
#ifndef TPROF_PMU_H
#define TPROF_PMU_H

#include <linux/atomic.h>
#include <linux/irq_work.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/tprof.h>
#include <linux/workqueue.h>
#include "cpu_events.h"
#include "user_limits.h"

struct file;
struct perf_event;
struct pt_regs;
struct mm_struct;
struct tprof_pmu_probe;
struct sock;
struct pid_namespace;
struct tprof_pmu_prog;
struct tprof_pmu_plan;
struct task_struct;
struct irq_work;
struct perf_sample_data;

/*
 * API for the rest of the module: the ioctl (dev.c), the exec hook
 * (hooks.c), load and unload (main.c).
 */
/* pmu_ioctl.c */
long tprof_ioctl_pmu_create(struct tprof_pmu_program __user *uarg);
/* pmu_hit.c */
void tprof_pmu_on_exec(struct task_struct *t);
/* pmu.c */
int tprof_pmu_init(void);
void tprof_pmu_exit(void);

/* The rest is shared between pmu*.c only. */

struct tprof_pmu_ctr {
	struct tprof_pmu_prog *prog;
	u32 index;
	u32 rules;		/* bit r: rule r reads this counter */
	/* Per thread of the target at creation, one per piece (watchpoints). */
	struct perf_event **events;
	unsigned int nr_events;
	u32 nr_pieces;		/* perf events per thread: a watchpoint's pieces, else 1 */
	u32 cpu_first;		/* scope CPUS: its first index in cpus */
	atomic64_t value;
	atomic64_t next_threshold;	/* the value that fires next; U64_MAX: never */
	atomic64_t threshold_fired;
	u32 armed_mask;		/* 0, or the rule bit that arms this counter */
	u64 sub_width;		/* bytes per subrange */
	atomic64_t *sub;	/* nr_subranges values, or NULL */
	bool counts_only;	/* perf counts, no handler of ours (COUNT; arm64 registers) */
	/*
	 * arm64, per hit: events[k]'s stepper (a counting event on the same
	 * debug register setup, so the kernel steps over the hit), released
	 * after it, and for a watchpoint its guard (the same, created before
	 * it: pmu_create.c, "Stepped counters"). Scope CPUS: each piece is guard
	 * (watchpoints), ours, stepper in cpus.
	 */
	bool stepped;
	bool guarded;			/* stepped watchpoint: with guards */
	struct perf_event **steppers;
	struct perf_event **guards;	/* watchpoints, or NULL */
	struct tprof_pmu_probe *probe;	/* a u/kprobe instead of events (arm64) */
	/* arm64: its user breakpoint's address, claimed (pmu_claims.c). */
	struct list_head claim_node;
	u64 claim_addr;
	kuid_t claim_uid;	/* the creator's real uid */
	bool claim_uprobe;	/* a uprobe, else a debug register */
	bool claim_every_task;	/* scope CPUS: traps in every process */
	bool claimed;
};

/* A queue cell (Vyukov's bounded queue: producers anywhere, one consumer). */
struct tprof_pmu_cell {
	unsigned long seq;
	struct tprof_pmu_event ev;
};

struct tprof_pmu_prog {
	struct tprof_pmu_program config;
	struct tprof_pmu_plan *plan;	/* how its counters are made (pmu_plan.h) */
	struct tprof_pmu_ctr ctr[TPROF_PMU_MAX_COUNTERS];
	atomic_t rule_state[TPROF_PMU_MAX_RULES];	/* last truth value */
	atomic_t rule_done[TPROF_PMU_MAX_RULES];	/* a ONCE rule that fired */
	atomic64_t rule_fired[TPROF_PMU_MAX_RULES];
	atomic_t armed;		/* bit r: rule r fired (its secondaries count) */
	bool show_kernel;	/* kernel addresses may reach the monitor */
	/* Scope CPUS: counter i is cpus' counter i on every online CPU. */
	struct tprof_cpu_events cpus;
	bool on_cpus;		/* cpus started (stopped at release) */
	/* Its perf events, charged to its creator (pmu_user_events=). */
	struct tprof_charge charge;
	/* Debug registers it holds on every CPU (tprof_pmu_reserve_cpu_slots()). */
	u32 cpu_slots_data, cpu_slots_exec;
	struct pid_namespace *pid_ns;	/* the creator's: pids in events */
	/* Probes: the target (its pid or tgid) and its mm at creation. */
	struct pid *target;
	u64 target_since_ns;	/* creation (ktime_get_ns()): later children */
	struct mm_struct *target_mm;	/* mmgrab()ed: compared, never used */

	struct tprof_pmu_cell *cells;	/* TPROF_PMU_QUEUE_LEN */
	atomic_long_t enqueue_pos;
	unsigned long dequeue_pos;	/* the send work's */
	atomic64_t raised, queued, sent, lost, lost_pending;
	atomic64_t exec_left;	/* scope threads gone into a setuid image */
	struct irq_work kick;	/* from the overflow handler (any context) */
	struct work_struct send_work;

	/* The monitor: the generic netlink socket that subscribed. */
	spinlock_t monitor_lock;
	struct sock *monitor;	/* holds a reference; NULL: no monitor */
	/* With a monitor: in pmu_netlink.c's index, by its port id. */
	struct hlist_node monitor_node;
	u32 monitor_portid;
	struct list_head node;	/* tprof_pmu_programs, for the exec hook */
};

/* pmu.c */
int tprof_pmu_create(const struct tprof_pmu_program *c, struct file **filep);
u64 tprof_pmu_read_counts(struct tprof_pmu_prog *p);
struct tprof_pmu_event *tprof_pmu_queue_reserve(struct tprof_pmu_prog *p,
						struct tprof_pmu_cell **cellp);
void tprof_pmu_queue_publish(struct tprof_pmu_cell *cell);
bool tprof_pmu_pop(struct tprof_pmu_prog *p, struct tprof_pmu_event *ev);
struct tprof_pmu_prog *tprof_pmu_prog_from_file(struct file *file);
extern struct mutex tprof_pmu_programs_lock;
extern struct list_head tprof_pmu_programs;

/* pmu_create.c */
struct tprof_pmu_prog *tprof_pmu_prog_create(const struct tprof_pmu_program *c);
void tprof_pmu_free(struct tprof_pmu_prog *p);

/* pmu_hit.c */
void tprof_pmu_overflow(struct perf_event *event, struct perf_sample_data *data,
			struct pt_regs *regs);
void tprof_pmu_kick(struct irq_work *work);
void tprof_pmu_hit(struct tprof_pmu_ctr *ctr, struct pt_regs *regs);
bool tprof_pmu_in_scope(const struct tprof_pmu_prog *p, struct task_struct *t);

/* pmu_ioctl.c: the descriptor's ioctl (pmu.c's file operations) */
long tprof_pmu_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

/* pmu_netlink.c */
int tprof_pmu_netlink_init(void);
void tprof_pmu_netlink_exit(void);
void tprof_pmu_send_work(struct work_struct *work);
void tprof_pmu_drop_monitor(struct tprof_pmu_prog *p);

/* pmu_probe.c */
int tprof_pmu_probe_create(struct tprof_pmu_ctr *ctr, struct task_struct *task);
int tprof_pmu_kprobe_create(struct tprof_pmu_ctr *ctr);
bool tprof_pmu_probe_unregister(struct tprof_pmu_ctr *ctr);
void tprof_pmu_probe_sync(void);
void tprof_pmu_probe_free(struct tprof_pmu_ctr *ctr);

#endif /* TPROF_PMU_H */
