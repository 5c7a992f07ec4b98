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
	ti->capacity = capacity;
	memset(hash, 0, sizeof(*hash) * hash_size);
	for (i = 0; i < capacity; i++)
		next_free[i] = i + 1 < capacity ? i + 1 : TPROF_TI_NONE;
	ti->free_head = capacity ? 0 : TPROF_TI_NONE;
}

/* Entry of @key (found), else the first reusable entry on its chain, or -1. */
static s64 tprof_ti_find(const struct tprof_thread_index *ti, u64 key,
			 bool *found)
{
	u32 i = tprof_thread_index_hash(key) & ti->hash_mask;
	s64 reusable = -1;
	u32 n;

	*found = false;
	for (n = 0; n <= ti->hash_mask; n++, i = (i + 1) & ti->hash_mask) {
		u64 k = ti->hash[i].key;

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
	if (ti->hash[i].key == TPROF_TI_TOMBSTONE)
		ti->tombstones--;
	/* Index first, then the key: lockless lookups load them the other way. */
	WRITE_ONCE(ti->hash[i].slot, slot);
	smp_store_release(&ti->hash[i].key, key);
	return slot;
}

void tprof_thread_index_remove(struct tprof_thread_index *ti, u64 key)
{
	bool found;
	s64 i = tprof_ti_find(ti, key, &found);
	u32 j;

	if (!found)
		return;
	if (ti->hash[(i + 1) & ti->hash_mask].key != 0) {
		WRITE_ONCE(ti->hash[i].key, TPROF_TI_TOMBSTONE);
		ti->tombstones++;
		return;
	}
	/*
	 * The next entry is empty, so no chain runs through this one: it and
	 * the tombstones just before it become empty again.
	 */
	WRITE_ONCE(ti->hash[i].key, 0);
	for (j = (u32)(i - 1) & ti->hash_mask;
	     ti->hash[j].key == TPROF_TI_TOMBSTONE && j != (u32)i;
	     j = (j - 1) & ti->hash_mask) {
		WRITE_ONCE(ti->hash[j].key, 0);
		ti->tombstones--;
	}
}

struct tprof_ti_entry *tprof_thread_index_rehash(struct tprof_thread_index *ti,
						 struct tprof_ti_entry *fresh)
{
	struct tprof_ti_entry *old = ti->hash;
	u32 i, j;

	for (i = 0; i <= ti->hash_mask; i++) {
		u64 k = old[i].key;

		if (k == 0 || k == TPROF_TI_TOMBSTONE)
			continue;
		j = tprof_thread_index_hash(k) & ti->hash_mask;
		while (fresh[j].key)
			j = (j + 1) & ti->hash_mask;
		fresh[j] = old[i];
	}
	ti->tombstones = 0;
	/* Whole before published: lookups load the pointer with acquire. */
	smp_store_release(&ti->hash, fresh);
	return old;
}

void tprof_thread_index_release(struct tprof_thread_index *ti, u32 slot)
{
	if (slot >= ti->capacity)
		return;
	ti->next_free[slot] = ti->free_head;
	ti->free_head = slot;
	ti->used--;
}
