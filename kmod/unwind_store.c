// SPDX-License-Identifier: GPL-2.0
/*
 * A session's unwind tables and the address spaces they cover (see
 * unwind_store.h).
 */
#include <linux/hash.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>
#include "unwind_store.h"
#include "core/unwind_walk.h"

/* Per session: libc's table is ~440 KiB; 64 MiB holds a busy machine's. */
static unsigned int unwind_table_kb = 65536;
module_param(unwind_table_kb, uint, 0644);
MODULE_PARM_DESC(unwind_table_kb,
		 "KiB of unwind tables and mappings a sampling session may load (default 65536)");

#define TPROF_UNWIND_BUCKETS_BITS 8
#define TPROF_UNWIND_CACHE_BITS 8

/*
 * Per CPU, the rows recent samples found: samples repeat their stacks, and
 * a lookup (range search, then the table's index) costs ~100 instructions
 * a frame. An entry holds for the space map of generation gen only: while
 * a sample holds that map (RCU), its tables and so the row are alive, and
 * a generation is never reused. gen is written last and cleared first, so
 * a handler that interrupted the write (an NMI) sees no half entry.
 */
struct tprof_unwind_cache_entry {
	u64 gen, pc;
	const struct tprof_unwind_row *row;
};

struct tprof_unwind_cache {
	struct tprof_unwind_cache_entry e[1 << TPROF_UNWIND_CACHE_BITS];
};

/*
 * A loaded table. users (under the store's mutex): the ranges of published
 * spaces that use it. When a space's replacement or removal takes the last
 * one, the table leaves the id space at once and is freed after a grace
 * period, as that space's old ranges are.
 */
struct tprof_unwind_table {
	struct rcu_head rcu;
	u32 id;
	u32 users;
	size_t bytes;
	struct tprof_unwind_index index;	/* its first[] follows the rows */
	u32 nr_rows;
	struct tprof_unwind_row rows[];
};

struct tprof_unwind_map_range {
	u64 start, end, bias;
	struct tprof_unwind_table *table;
};

struct tprof_unwind_space_map {
	struct hlist_node node;
	struct rcu_head rcu;
	u64 space_id;
	u64 gen;		/* unique in the store: keys the row cache */
	size_t bytes;
	u32 nr;
	struct tprof_unwind_map_range ranges[];
};

struct tprof_unwind_store {
	struct mutex lock;
	struct xarray tables;		/* table_id -> struct tprof_unwind_table */
	struct hlist_head spaces[1 << TPROF_UNWIND_BUCKETS_BITS];
	u32 nr_spaces;
	u64 next_gen;			/* the next space map's generation */
	size_t bytes;			/* tables and spaces held */
	struct tprof_unwind_cache __percpu *cache;
};

struct tprof_unwind_store *tprof_unwind_store_create(void)
{
	struct tprof_unwind_store *u = kzalloc(sizeof(*u), GFP_KERNEL_ACCOUNT);

	if (!u)
		return NULL;
	u->cache = alloc_percpu_gfp(struct tprof_unwind_cache, GFP_KERNEL_ACCOUNT);
	if (!u->cache) {
		kfree(u);
		return NULL;
	}
	u->next_gen = 1;	/* 0: an empty cache entry */
	mutex_init(&u->lock);
	xa_init_flags(&u->tables, XA_FLAGS_ALLOC1);
	return u;
}

static void tprof_unwind_space_free_rcu(struct rcu_head *head)
{
	kvfree(container_of(head, struct tprof_unwind_space_map, rcu));
}

static void tprof_unwind_table_free_rcu(struct rcu_head *head)
{
	kvfree(container_of(head, struct tprof_unwind_table, rcu));
}

void tprof_unwind_store_free(struct tprof_unwind_store *u)
{
	struct tprof_unwind_space_map *m;
	struct hlist_node *tmp;
	struct tprof_unwind_table *t;
	unsigned long id;
	unsigned int i;

	if (!u)
		return;
	for (i = 0; i < ARRAY_SIZE(u->spaces); i++)
		hlist_for_each_entry_safe(m, tmp, &u->spaces[i], node)
			kvfree(m);
	/* Ranges and tables dropped while the session ran: their callbacks first. */
	rcu_barrier();
	xa_for_each(&u->tables, id, t)
		kvfree(t);
	xa_destroy(&u->tables);
	mutex_destroy(&u->lock);
	free_percpu(u->cache);
	kfree(u);
}

static bool tprof_unwind_fits(struct tprof_unwind_store *u, size_t more)
{
	return u->bytes + more <= (size_t)READ_ONCE(unwind_table_kb) * 1024;
}

long tprof_unwind_load(struct tprof_unwind_store *u, struct tprof_unwind_load __user *uarg)
{
	struct tprof_unwind_load arg;
	struct tprof_unwind_table *t;
	size_t bytes;
	u32 id, index_nr, index_shift;
	int ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.resv[0] || arg.resv[1] || !arg.nr_rows ||
	    arg.nr_rows > TPROF_UNWIND_MAX_ROWS)
		return -EINVAL;
	/* The index's size is known from the rows only: room for the most. */
	index_nr = arg.nr_rows / TPROF_UNWIND_INDEX_ROWS + 1;
	bytes = struct_size(t, rows, arg.nr_rows) + index_nr * sizeof(u32);
	mutex_lock(&u->lock);
	ret = -EDQUOT;
	if (!tprof_unwind_fits(u, bytes))
		goto out;
	ret = -ENOMEM;
	t = kvmalloc(bytes, GFP_KERNEL_ACCOUNT);
	if (!t)
		goto out;
	t->nr_rows = arg.nr_rows;
	t->users = 0;
	t->bytes = bytes;
	ret = -EFAULT;
	if (copy_from_user(t->rows, u64_to_user_ptr(arg.rows), arg.nr_rows * sizeof(t->rows[0])))
		goto free;
	ret = tprof_unwind_table_check(t->rows, t->nr_rows);
	if (ret)
		goto free;
	t->index.nr = tprof_unwind_index_size(t->rows, t->nr_rows, &index_shift);
	t->index.shift = index_shift;
	t->index.first = (u32 *)&t->rows[t->nr_rows];
	tprof_unwind_index_fill(t->rows, t->nr_rows, &t->index);
	ret = xa_alloc(&u->tables, &id, t, xa_limit_31b, GFP_KERNEL_ACCOUNT);
	if (ret)
		goto free;
	t->id = id;
	arg.table_id = id;
	if (copy_to_user(uarg, &arg, sizeof(arg))) {
		/* Unnamed, it could never be used: take it back. */
		xa_erase(&u->tables, id);
		ret = -EFAULT;
		goto free;
	}
	u->bytes += bytes;
	mutex_unlock(&u->lock);
	return 0;
free:
	kvfree(t);
out:
	mutex_unlock(&u->lock);
	return ret;
}

static struct hlist_head *tprof_unwind_bucket(struct tprof_unwind_store *u, u64 space_id)
{
	return &u->spaces[hash_64(space_id, TPROF_UNWIND_BUCKETS_BITS)];
}

/* An RCU reader (the handler) or the mutex's holder (the ioctls). */
static struct tprof_unwind_space_map *tprof_unwind_space_lookup(struct tprof_unwind_store *u,
								 u64 space_id)
{
	struct tprof_unwind_space_map *m;

	hlist_for_each_entry_rcu(m, tprof_unwind_bucket(u, space_id), node,
				 lockdep_is_held(&u->lock))
		if (m->space_id == space_id)
			return m;
	return NULL;
}

/* The ranges from userspace, checked, their tables looked up. Mutex held. */
static int tprof_unwind_fill_ranges(struct tprof_unwind_store *u,
				    struct tprof_unwind_space_map *m,
				    const struct tprof_unwind_range __user *from)
{
	struct tprof_unwind_range r;
	u32 i;

	for (i = 0; i < m->nr; i++) {
		struct tprof_unwind_map_range *d = &m->ranges[i];

		if (copy_from_user(&r, from + i, sizeof(r)))
			return -EFAULT;
		if (r.resv || r.start >= r.end || (i && r.start < m->ranges[i - 1].end))
			return -EINVAL;
		d->table = r.table_id ? xa_load(&u->tables, r.table_id) : NULL;
		if (!d->table)
			return -EINVAL;
		d->start = r.start;
		d->end = r.end;
		d->bias = r.bias;
	}
	return 0;
}

/*
 * Counts @m's ranges as users of their tables (@delta 1) or no longer
 * (-1: @m is unpublished). A table that loses its last user goes. Mutex
 * held.
 */
static void tprof_unwind_use(struct tprof_unwind_store *u, struct tprof_unwind_space_map *m,
			     int delta)
{
	u32 i;

	for (i = 0; m && i < m->nr; i++) {
		struct tprof_unwind_table *t = m->ranges[i].table;

		t->users += delta;
		if (!t->users) {
			xa_erase(&u->tables, t->id);
			u->bytes -= t->bytes;
			call_rcu(&t->rcu, tprof_unwind_table_free_rcu);
		}
	}
}

long tprof_unwind_set_space(struct tprof_unwind_store *u,
			    const struct tprof_unwind_space __user *uarg)
{
	struct tprof_unwind_space_map *old, *m = NULL;
	struct tprof_unwind_space arg;
	size_t bytes = 0;
	int ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.resv || arg.resv2 || arg.nr_ranges > TPROF_UNWIND_MAX_RANGES)
		return -EINVAL;
	mutex_lock(&u->lock);
	old = tprof_unwind_space_lookup(u, arg.space_id);
	if (arg.nr_ranges) {
		bytes = struct_size(m, ranges, arg.nr_ranges);
		ret = -EDQUOT;
		if ((!old && u->nr_spaces >= TPROF_UNWIND_MAX_SPACES) ||
		    !tprof_unwind_fits(u, bytes - (old ? old->bytes : 0)))
			goto out;
		ret = -ENOMEM;
		m = kvmalloc(bytes, GFP_KERNEL_ACCOUNT);
		if (!m)
			goto out;
		m->space_id = arg.space_id;
		m->gen = u->next_gen++;
		m->bytes = bytes;
		m->nr = arg.nr_ranges;
		ret = tprof_unwind_fill_ranges(u, m, u64_to_user_ptr(arg.ranges));
		if (ret) {
			kvfree(m);
			goto out;
		}
	}
	/* Samples see the old ranges or the new ones, whole. */
	if (old && m) {
		hlist_replace_rcu(&old->node, &m->node);
	} else if (m) {
		hlist_add_head_rcu(&m->node, tprof_unwind_bucket(u, arg.space_id));
		u->nr_spaces++;
	} else if (old) {
		hlist_del_rcu(&old->node);
		u->nr_spaces--;
	}
	tprof_unwind_use(u, m, 1);
	if (old) {
		tprof_unwind_use(u, old, -1);
		u->bytes -= old->bytes;
		call_rcu(&old->rcu, tprof_unwind_space_free_rcu);
	}
	u->bytes += bytes;
	ret = 0;
out:
	mutex_unlock(&u->lock);
	return ret;
}

const struct tprof_unwind_space_map *tprof_unwind_space_find(struct tprof_unwind_store *u,
							     u64 space_id)
{
	return tprof_unwind_space_lookup(u, space_id);
}

static const struct tprof_unwind_row *tprof_unwind_search(const struct tprof_unwind_space_map *m,
							  u64 pc, bool *covered, u32 *hint)
{
	const struct tprof_unwind_map_range *r;
	u32 lo = 0, hi = m->nr;
	u64 addr;

	if (*hint < m->nr && pc >= m->ranges[*hint].start && pc < m->ranges[*hint].end) {
		lo = *hint + 1;
		hi = lo;
	}
	/* The last range starting at or below pc. */
	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (m->ranges[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	*covered = lo && pc < m->ranges[lo - 1].end;
	if (!*covered)
		return NULL;
	*hint = lo - 1;
	r = &m->ranges[lo - 1];
	addr = pc - r->bias;
	if (addr > U32_MAX)
		return NULL;
	return tprof_unwind_index_find(r->table->rows, r->table->nr_rows, &r->table->index, addr);
}

const struct tprof_unwind_row *tprof_unwind_space_row(struct tprof_unwind_store *u,
						      const struct tprof_unwind_space_map *m,
						      u64 pc, bool *covered, u32 *hint)
{
	struct tprof_unwind_cache_entry *e =
		&this_cpu_ptr(u->cache)->e[hash_64(pc, TPROF_UNWIND_CACHE_BITS)];
	const struct tprof_unwind_row *row;

	if (READ_ONCE(e->gen) == m->gen && e->pc == pc) {
		*covered = true;
		return e->row;
	}
	row = tprof_unwind_search(m, pc, covered, hint);
	if (row) {
		WRITE_ONCE(e->gen, 0);
		barrier();
		e->pc = pc;
		e->row = row;
		barrier();
		WRITE_ONCE(e->gen, m->gen);
	}
	return row;
}
