/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A sampling session's unwind tables (TPROF_IOC_UNWIND_LOAD) and, per
 * address space, the executable mappings they cover (TPROF_IOC_UNWIND_SPACE),
 * for the sample handler's table-driven walk (core/unwind_walk.h).
 * Writers are the owner's ioctls, under the store's mutex. The handler reads
 * without locks, as an RCU reader (IRQs off, or NMI): a space's ranges are
 * replaced whole and freed after a grace period; tables live as long as
 * the store, which is freed with the session once no sample can run.
 * Memory is charged to the loader's memory cgroup and bounded per session
 * (unwind_table_kb=).
 */
#ifndef TPROF_UNWIND_STORE_H
#define TPROF_UNWIND_STORE_H

#include <linux/tprof.h>
#include <linux/tprof_unwind.h>

struct tprof_unwind_store;
struct tprof_unwind_space_map;

/* Process context. NULL: no memory. */
struct tprof_unwind_store *tprof_unwind_store_create(void);
/* Once no sample handler can run with it (the session stopped). */
void tprof_unwind_store_free(struct tprof_unwind_store *u);

/* The ioctls' work (uapi/linux/tprof.h documents them). */
long tprof_unwind_load(struct tprof_unwind_store *u, struct tprof_unwind_load __user *uarg);
long tprof_unwind_set_space(struct tprof_unwind_store *u,
			    const struct tprof_unwind_space __user *uarg);

/* IRQ or NMI context, IRQs off. The space's ranges, or NULL. */
const struct tprof_unwind_space_map *tprof_unwind_space_find(struct tprof_unwind_store *u,
							     u64 space_id);
/*
 * The row covering @pc in @m's tables (@m from tprof_unwind_space_find()
 * on @u, in the same RCU read-side section), or NULL; *covered: some range
 * covers @pc (false: a table not loaded yet, or code that has none).
 * *hint: the index of the range tried first and the one found (a walk's
 * frames are mostly in the file of the frame before). Rows found are kept
 * in a per-CPU cache, so the same stacks' next samples skip the search.
 */
const struct tprof_unwind_row *tprof_unwind_space_row(struct tprof_unwind_store *u,
						      const struct tprof_unwind_space_map *m,
						      u64 pc, bool *covered, u32 *hint);

#endif /* TPROF_UNWIND_STORE_H */
