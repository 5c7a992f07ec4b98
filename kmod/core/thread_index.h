/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The per-thread metrics table's index: which slot tracks which
 * thread, and which slots are free. Pure logic (see core_env.h): the caller
 * provides the memory and the locking.
 *
 * Threads are keyed by an opaque u64 (the kernel uses the task_struct
 * address, which stays the thread's across exec and tid changes) in an
 * open-addressing hash with linear probing. Writers (insert, remove,
 * alloc/release) are serialised by the caller. Lookups may run locklessly,
 * concurrently with writers, because:
 *  - insert stores the slot index before it publishes the key (release),
 *    and lookup loads the key (acquire) before the index;
 *  - remove turns the key into a tombstone; tombstones followed by an empty
 *    entry become empty again (no probe chain goes past an empty entry, so
 *    no lookup can miss a key that is present);
 *  - when tombstones pile up (tprof_thread_index_needs_rehash()), the caller
 *    rebuilds the hash into a second, zeroed array, a bounded number of
 *    entries per step (rehash_begin(), then rehash_step() until it returns
 *    the old array) so that its lock need not be held for the whole hash;
 *    writers between steps change both arrays. The last step publishes the
 *    new array with one pointer store (release); lookups load that pointer
 *    once (acquire), so they see the old array whole or the new one whole.
 *    The old array may be reused only after every lookup that could see it
 *    has finished (the kernel waits for an RCU grace period);
 *  - a lookup may still return the slot of a key removed meanwhile: the
 *    caller validates the slot (its own key field, under its own lock).
 */
#ifndef TPROF_CORE_THREAD_INDEX_H
#define TPROF_CORE_THREAD_INDEX_H

#include "core_env.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TPROF_TI_NONE 0xffffffffU	/* "no slot" */
#define TPROF_TI_TOMBSTONE (~0ULL)	/* a removed key */
/* max_threads above this is refused: the memory would be absurd. */
#define TPROF_TI_MAX_CAPACITY (1U << 20)

struct tprof_ti_entry {
	u64 key;		/* 0 = empty, TPROF_TI_TOMBSTONE = removed */
	u32 slot;		/* slot of key */
	u32 __pad;
};

/*
 * Two halves on two cache lines: what every lookup reads (the hash and its
 * mask, written only at init and by a rehash), and what only writers touch
 * (the free list head and the counters, written by every insert, remove and
 * release). A lookup on one CPU (the context-switch hook) then never misses
 * because a thread was created or freed on another.
 */
struct tprof_thread_index {
	/* Read by lookups. */
	struct tprof_ti_entry *hash;	/* hash_mask + 1 entries */
	u32 hash_mask;		/* hash size - 1 (a power of two >= 2 * capacity) */
	u32 capacity;
	u32 *next_free;		/* capacity entries: the free list */
	/* Written by writers only: a line of their own. */
	u32 free_head TPROF_CACHELINE_ALIGNED;
	u32 used;		/* slots allocated */
	u32 tombstones;		/* removed keys still in the hash */
	u32 rehash_at;		/* more tombstones than this: rebuild (a quarter) */
	/* A rehash in progress: its target (never read by lookups), else NULL. */
	struct tprof_ti_entry *fresh;
	u32 fresh_pos;		/* entries of the live hash below it are copied */
	u32 fresh_tombstones;	/* removals since the rehash began, in fresh */
};

/* Hash entries for @capacity slots (capacity <= TPROF_TI_MAX_CAPACITY). */
u32 tprof_thread_index_hash_size(u32 capacity);

/* An empty index over caller memory (@hash zeroed); every slot free. */
void tprof_thread_index_init(struct tprof_thread_index *ti,
			     struct tprof_ti_entry *hash, u32 hash_size,
			     u32 *next_free, u32 capacity);

static inline u32 tprof_thread_index_hash(u64 key)
{
	/* Fibonacci hashing: task addresses differ mostly in middle bits. */
	return (u32)((key * 0x9E3779B97F4A7C15ULL) >> 32);
}

/*
 * The slot of @key, or TPROF_TI_NONE. Lockless (see the top of this file);
 * inline: the context-switch hook calls it on every switch.
 */
static inline u32 tprof_thread_index_lookup(const struct tprof_thread_index *ti,
					    u64 key)
{
	struct tprof_ti_entry *hash = smp_load_acquire(&ti->hash);
	u32 i = tprof_thread_index_hash(key) & ti->hash_mask;
	u32 n;

	for (n = 0; n <= ti->hash_mask; n++, i = (i + 1) & ti->hash_mask) {
		u64 k = smp_load_acquire(&hash[i].key);

		if (k == key)
			return READ_ONCE(hash[i].slot);
		if (k == 0)
			return TPROF_TI_NONE;
	}
	return TPROF_TI_NONE;
}

/*
 * Maps @key (not 0, not TOMBSTONE) to a newly allocated slot. Returns the
 * slot, or TPROF_TI_NONE if there is no free slot. *@existed is set (and
 * nothing allocated) if the key is already present.
 */
u32 tprof_thread_index_insert(struct tprof_thread_index *ti, u64 key,
			      bool *existed);

/* Forgets @key (its slot stays allocated until released). */
void tprof_thread_index_remove(struct tprof_thread_index *ti, u64 key);

/* True when tombstones pass rehash_at (no rebuild under way): time to rehash. */
static inline bool tprof_thread_index_needs_rehash(const struct tprof_thread_index *ti)
{
	return !ti->fresh && ti->tombstones > ti->rehash_at;
}

/*
 * Starts rebuilding the hash without tombstones into @fresh (hash_mask + 1
 * zeroed entries). Until the last step, inserts and removals go to both
 * arrays and lookups still use the live one.
 */
void tprof_thread_index_rehash_begin(struct tprof_thread_index *ti,
				     struct tprof_ti_entry *fresh);

/*
 * Copies up to @budget entries of the live hash (at least one). Returns
 * NULL while entries remain; after the last one it publishes the new array
 * and returns the old one (reusable as the next @fresh once no lookup can
 * see it any more).
 */
struct tprof_ti_entry *tprof_thread_index_rehash_step(struct tprof_thread_index *ti,
						      u32 budget);

/* The whole rehash in one call (begin, then one step over every entry). */
struct tprof_ti_entry *tprof_thread_index_rehash(struct tprof_thread_index *ti,
						 struct tprof_ti_entry *fresh);

/* Gives a slot back to the free list. */
void tprof_thread_index_release(struct tprof_thread_index *ti, u32 slot);

/*
 * Accounting math: tcum += delta for @n metrics. Returns true if the sum
 * went from all-zero to nonzero (the slot must be listed).
 */
static inline bool tprof_tcum_add(u64 *tcum, const u64 *delta, u32 n)
{
	u64 before = 0, any = 0;
	u32 m;

	for (m = 0; m < n; m++) {
		before |= tcum[m];
		tcum[m] += delta[m];
		any |= delta[m];
	}
	return !before && any;
}

static inline bool tprof_tcum_is_zero(const u64 *tcum, u32 n)
{
	u32 m;

	for (m = 0; m < n; m++)
		if (tcum[m])
			return false;
	return true;
}

#ifdef __cplusplus
}
#endif

#endif /* TPROF_CORE_THREAD_INDEX_H */
