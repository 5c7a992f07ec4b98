// SPDX-License-Identifier: GPL-2.0
/* The per-thread metrics table's index: pure logic, see thread_index.h. */
#include "thread_index.h"

u32 tprof_thread_index_hash_size(u32 capacity)
{
	u32 size = 16;

	if (capacity > TPROF_TI_MAX_CAPACITY)
		capacity = TPROF_TI_MAX_CAPACITY;
	while (size < 2 * capacity)
		size <<= 1;
	return size;
}

void tprof_thread_index_init(struct tprof_thread_index *ti,
			     struct tprof_ti_entry *hash, u32 hash_size,
			     u32 *next_free, u32 capacity)
{
	u32 i;

	memset(ti, 0, sizeof(*ti));
	ti->hash = hash;
	ti->next_free = next_free;
	ti->hash_mask = hash_size - 1;
	ti->rehash_at = hash_size / 4;
	ti->capacity = capacity;
	memset(hash, 0, sizeof(*hash) * hash_size);
	for (i = 0; i < capacity; i++)
		next_free[i] = i + 1 < capacity ? i + 1 : TPROF_TI_NONE;
	ti->free_head = capacity ? 0 : TPROF_TI_NONE;
}

/*
 * Entry of @key in @hash (found), else the first reusable entry on its
 * chain, or -1.
 */
static s64 tprof_ti_find_in(const struct tprof_ti_entry *hash, u32 mask,
			    u64 key, bool *found)
{
	u32 i = tprof_thread_index_hash(key) & mask;
	s64 reusable = -1;
	u32 n;

	*found = false;
	for (n = 0; n <= mask; n++, i = (i + 1) & mask) {
		u64 k = hash[i].key;

		if (k == key) {
			*found = true;
			return i;
		}
		if (k == TPROF_TI_TOMBSTONE) {
			if (reusable < 0)
				reusable = i;
			continue;
		}
		if (k == 0)
			return reusable >= 0 ? reusable : (s64)i;
	}
	return reusable;
}

static s64 tprof_ti_find(const struct tprof_thread_index *ti, u64 key,
			 bool *found)
{
	return tprof_ti_find_in(ti->hash, ti->hash_mask, key, found);
}

/*
 * Puts @key -> @slot into @hash at @i (from tprof_ti_find_in(), not found):
 * the index first, then the key, as lockless lookups load them the other
 * way. Returns true if it replaced a tombstone.
 */
static bool tprof_ti_store(struct tprof_ti_entry *hash, s64 i, u64 key, u32 slot)
{
	bool was_tombstone = hash[i].key == TPROF_TI_TOMBSTONE;

	WRITE_ONCE(hash[i].slot, slot);
	smp_store_release(&hash[i].key, key);
	return was_tombstone;
}

/* A rehash in progress: @key -> @slot in its target too, if not there yet. */
static void tprof_ti_fresh_insert(struct tprof_thread_index *ti, u64 key, u32 slot)
{
	bool found;
	s64 i;

	if (!ti->fresh)
		return;
	i = tprof_ti_find_in(ti->fresh, ti->hash_mask, key, &found);
	/* Never full: it holds at most the live keys, fewer than its size. */
	if (found || i < 0)
		return;
	if (tprof_ti_store(ti->fresh, i, key, slot))
		ti->fresh_tombstones--;
}

u32 tprof_thread_index_insert(struct tprof_thread_index *ti, u64 key,
			      bool *existed)
{
	bool found;
	s64 i = tprof_ti_find(ti, key, &found);
	u32 slot;

	*existed = found;
	if (found)
		return ti->hash[i].slot;
	if (i < 0 || ti->free_head == TPROF_TI_NONE)
		return TPROF_TI_NONE;
	slot = ti->free_head;
	ti->free_head = ti->next_free[slot];
	ti->next_free[slot] = TPROF_TI_NONE;
	ti->used++;
	if (tprof_ti_store(ti->hash, i, key, slot))
		ti->tombstones--;
	tprof_ti_fresh_insert(ti, key, slot);
	return slot;
}

/*
 * Forgets @key in @hash. Returns the change in its tombstones: +1 (one
 * left), 0 (not there), or -n (the entry and n tombstones before it
 * became empty again: no chain ran through them).
 */
static int tprof_ti_remove_in(struct tprof_ti_entry *hash, u32 mask, u64 key)
{
	bool found;
	s64 i = tprof_ti_find_in(hash, mask, key, &found);
	int change = 0;
	u32 j;

	if (!found)
		return 0;
	if (hash[(i + 1) & mask].key != 0) {
		WRITE_ONCE(hash[i].key, TPROF_TI_TOMBSTONE);
		return 1;
	}
	WRITE_ONCE(hash[i].key, 0);
	for (j = (u32)(i - 1) & mask; hash[j].key == TPROF_TI_TOMBSTONE && j != (u32)i;
	     j = (j - 1) & mask) {
		WRITE_ONCE(hash[j].key, 0);
		change--;
	}
	return change;
}

void tprof_thread_index_remove(struct tprof_thread_index *ti, u64 key)
{
	ti->tombstones += tprof_ti_remove_in(ti->hash, ti->hash_mask, key);
	if (ti->fresh)
		ti->fresh_tombstones += tprof_ti_remove_in(ti->fresh, ti->hash_mask, key);
}

void tprof_thread_index_rehash_begin(struct tprof_thread_index *ti,
				     struct tprof_ti_entry *fresh)
{
	ti->fresh = fresh;
	ti->fresh_pos = 0;
	ti->fresh_tombstones = 0;
}

struct tprof_ti_entry *tprof_thread_index_rehash_step(struct tprof_thread_index *ti,
						      u32 budget)
{
	struct tprof_ti_entry *old = ti->hash, *fresh = ti->fresh;
	u32 end;

	if (!fresh)
		return NULL;
	if (!budget)
		budget = 1;
	end = ti->hash_mask + 1 - ti->fresh_pos > budget ?
		ti->fresh_pos + budget : ti->hash_mask + 1;
	/* A key a writer put there since the rehash began is not copied twice. */
	for (; ti->fresh_pos < end; ti->fresh_pos++) {
		u64 k = old[ti->fresh_pos].key;

		if (k != 0 && k != TPROF_TI_TOMBSTONE)
			tprof_ti_fresh_insert(ti, k, old[ti->fresh_pos].slot);
	}
	if (ti->fresh_pos <= ti->hash_mask)
		return NULL;
	ti->tombstones = ti->fresh_tombstones;
	ti->fresh = NULL;
	/* Whole before published: lookups load the pointer with acquire. */
	smp_store_release(&ti->hash, fresh);
	return old;
}

struct tprof_ti_entry *tprof_thread_index_rehash(struct tprof_thread_index *ti,
						 struct tprof_ti_entry *fresh)
{
	tprof_thread_index_rehash_begin(ti, fresh);
	return tprof_thread_index_rehash_step(ti, ti->hash_mask + 1);
}

void tprof_thread_index_release(struct tprof_thread_index *ti, u32 slot)
{
	if (slot >= ti->capacity)
		return;
	ti->next_free[slot] = ti->free_head;
	ti->free_head = slot;
	ti->used--;
}
