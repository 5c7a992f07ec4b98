// SPDX-License-Identifier: GPL-2.0
/*
 * In-kernel aggregation (TPROF_SAMPLING_AGGREGATE): a sample adds one to
 * its (pid, address space, ip or stack key, flags) entry in its CPU's table
 * instead of writing a record (sampling_hot.c defines a stack's key), so a
 * recorder reads counts once per interval instead of every sample. Each
 * CPU has two tables: samples go into the active one; AGGREGATE_READ makes
 * the other active on that CPU (a cross-CPU call: the writers run there
 * with IRQs off, an NMI writer runs to its end before the call goes on),
 * then copies the one it took and clears it.
 *
 * A table is open addressing with a short probe; it is kept at most three
 * quarters full. A sample that finds no room is written as a record by the
 * caller and counted in the table's overflowed: nothing is lost, and the
 * tables' memory is fixed at start (charged to the owner).
 */
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/hash.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/uaccess.h>
#include "sampling.h"

#define TPROF_AGG_PROBES 8

struct tprof_agg_table {
	u32 used;		/* entries with a count */
	u64 overflowed;		/* samples that found no room */
	u64 start_ns;		/* when its counts began */
	struct tprof_aggregate_entry e[];
};

/* One CPU's pair; the active index is written only on that CPU. */
struct tprof_agg_cpu {
	struct tprof_agg_table *t[2];
	unsigned int active;
};

static u32 tprof_agg_hash(u64 ip, u64 space_id, u32 pid, u32 flags)
{
	return hash_64(ip ^ space_id ^ ((u64)pid << 32 | flags), 32);
}

/*
 * Adds one sample to this CPU's active table. IRQs off, nesting guard up.
 * Returns its entry (*fresh: new in the table), or NULL where it found no
 * room: the caller writes a record instead.
 */
struct tprof_aggregate_entry *tprof_agg_add(struct tprof_session *s, u64 ip, u64 space_id,
					    u32 pid, u32 flags, bool *fresh)
{
	struct tprof_agg_cpu *ac = this_cpu_ptr(s->agg);
	struct tprof_agg_table *t = ac->t[READ_ONCE(ac->active)];
	u32 mask = s->config.aggregate_slots - 1, h = tprof_agg_hash(ip, space_id, pid, flags);
	unsigned int i;

	for (i = 0; i < TPROF_AGG_PROBES; i++) {
		struct tprof_aggregate_entry *e = &t->e[(h + i) & mask];

		if (!e->count) {
			if (t->used >= s->config.aggregate_slots / 4 * 3)
				break;
			e->ip = ip;
			e->space_id = space_id;
			e->pid = pid;
			e->flags = flags;
			e->count = 1;
			t->used++;
			*fresh = true;
			return e;
		}
		if (e->ip == ip && e->space_id == space_id && e->pid == pid && e->flags == flags) {
			e->count++;
			*fresh = false;
			return e;
		}
	}
	t->overflowed++;
	return NULL;
}

/*
 * Takes back a sample tprof_agg_add() just counted, on the same CPU with
 * IRQs still off (the table cannot have been swapped). An entry it made is
 * emptied: a key an NMI added past it meanwhile may then be found no more
 * and get a second entry, whose counts a reader adds up.
 */
void tprof_agg_unadd(struct tprof_session *s, struct tprof_aggregate_entry *e)
{
	struct tprof_agg_cpu *ac = this_cpu_ptr(s->agg);

	if (--e->count)
		return;
	memset(e, 0, sizeof(*e));
	ac->t[ac->active]->used--;
}

static size_t tprof_agg_table_bytes(u32 slots)
{
	return sizeof(struct tprof_agg_table) + (size_t)slots * sizeof(struct tprof_aggregate_entry);
}

/* Session start: both tables of every possible CPU, charged. */
int tprof_agg_create(struct tprof_session *s)
{
	u64 now = local_clock();
	unsigned int cpu, i;

	s->agg = alloc_percpu_gfp(struct tprof_agg_cpu, GFP_KERNEL_ACCOUNT);
	if (!s->agg)
		return -ENOMEM;
	mutex_init(&s->agg_lock);
	for_each_possible_cpu(cpu) {
		struct tprof_agg_cpu *ac = per_cpu_ptr(s->agg, cpu);

		for (i = 0; i < 2; i++) {
			ac->t[i] = kvzalloc(tprof_agg_table_bytes(s->config.aggregate_slots),
					    GFP_KERNEL_ACCOUNT);
			if (!ac->t[i])
				return -ENOMEM;	/* tprof_agg_free() frees what there is */
			ac->t[i]->start_ns = now;
		}
	}
	return 0;
}

void tprof_agg_free(struct tprof_session *s)
{
	unsigned int cpu;

	if (!s->agg)
		return;
	for_each_possible_cpu(cpu) {
		struct tprof_agg_cpu *ac = per_cpu_ptr(s->agg, cpu);

		kvfree(ac->t[0]);
		kvfree(ac->t[1]);
	}
	free_percpu(s->agg);
	s->agg = NULL;
}

/* On the table's CPU (or while it is offline): the empty spare takes over. */
static void tprof_agg_swap(void *info)
{
	struct tprof_agg_cpu *ac = info;
	unsigned int next = !ac->active;

	ac->t[next]->start_ns = local_clock();
	WRITE_ONCE(ac->active, next);
}

/*
 * AGGREGATE_READ (checked by sampling_ioctl.c: the owner's session with
 * AGGREGATE, cpu possible, room for every slot): takes @cpu's counts into
 * @out and @uentries. The copy runs without any lock but the session's own
 * agg_lock, so a stalled copy holds up only its owner's next read.
 */
int tprof_agg_read(struct tprof_session *s, unsigned int cpu,
		   struct tprof_aggregate_read *out,
		   struct tprof_aggregate_entry __user *uentries)
{
	struct tprof_agg_cpu *ac = per_cpu_ptr(s->agg, cpu);
	struct tprof_agg_table *t;
	u32 i, n = 0;
	int ret = 0;

	mutex_lock(&s->agg_lock);
	t = ac->t[!READ_ONCE(ac->active)];	/* no writer uses the spare */
	/* The spare holds counts only where a copy failed: those go first. */
	if (!t->used && !t->overflowed) {
		cpus_read_lock();
		if (cpu_online(cpu))
			smp_call_function_single(cpu, tprof_agg_swap, ac, 1);
		else
			tprof_agg_swap(ac);
		cpus_read_unlock();
		t = ac->t[!READ_ONCE(ac->active)];
	}
	out->end_ns = local_clock();
	out->start_ns = t->start_ns;
	out->overflowed = t->overflowed;
	out->samples = 0;
	/*
	 * The entries with counts to the front, then one copy (a copy each
	 * cost more than the walk). No writer adds to the spare, so its slots
	 * need not stay where they hash; a failed copy leaves them compacted.
	 */
	for (i = 0; i < s->config.aggregate_slots; i++) {
		if (!t->e[i].count)
			continue;
		out->samples += t->e[i].count;
		if (i != n) {
			t->e[n] = t->e[i];
			memset(&t->e[i], 0, sizeof(t->e[i]));
		}
		n++;
	}
	if (n && copy_to_user(uentries, t->e, n * sizeof(t->e[0])))
		ret = -EFAULT;
	out->nr_entries = n;
	/* A failed copy keeps the counts in the spare, for the next read. */
	if (!ret) {
		memset(t->e, 0, n * sizeof(t->e[0]));	/* the rest is zero */
		t->used = 0;
		t->overflowed = 0;
	}
	mutex_unlock(&s->agg_lock);
	return ret;
}
