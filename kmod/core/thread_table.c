// SPDX-License-Identifier: GPL-2.0
/* Per-thread metrics table: pure logic, see thread_table.h. */
#include "thread_table.h"

u32 tprof_thread_table_hash_size(u32 capacity)
{
	u32 size = 16;

	while (size < 2 * capacity)
		size <<= 1;
	return size;
}

void tprof_thread_table_init(struct tprof_thread_table *t,
			     struct tprof_thread_slot *slots, u32 capacity,
			     u64 *hash_keys, u32 *hash_slots, u32 hash_size,
			     u32 nr_metrics)
{
	u32 i;

	memset(t, 0, sizeof(*t));
	t->slots = slots;
	t->capacity = capacity;
	t->hash_keys = hash_keys;
	t->hash_slots = hash_slots;
	t->hash_mask = hash_size - 1;
	t->nr_metrics = nr_metrics;
	t->list_head = t->list_tail = TPROF_TT_NONE;
	t->next_identity = 1;
	memset(slots, 0, sizeof(*slots) * capacity);
	memset(hash_keys, 0, sizeof(*hash_keys) * hash_size);
	for (i = 0; i < capacity; i++)
		slots[i].list_next = i + 1 < capacity ? i + 1 : TPROF_TT_NONE;
	t->free_head = capacity ? 0 : TPROF_TT_NONE;
}

/* Index of @key's hash entry, or of the first free one if absent (-1 if full). */
static s64 tprof_tt_find(const struct tprof_thread_table *t, u64 key, bool *found)
{
	u32 i = tprof_thread_table_hash(key) & t->hash_mask;
	s64 first_free = -1;
	u32 n;

	*found = false;
	for (n = 0; n <= t->hash_mask; n++, i = (i + 1) & t->hash_mask) {
		u64 k = t->hash_keys[i];

		if (k == key) {
			*found = true;
			return i;
		}
		if (k == TPROF_TT_TOMBSTONE) {
			if (first_free < 0)
				first_free = i;
			continue;
		}
		if (k == 0)
			return first_free >= 0 ? first_free : (s64)i;
	}
	return first_free;
}

void tprof_thread_table_set_comm(struct tprof_thread_slot *s, const char *comm)
{
	size_t i;

	/* Up to the first NUL: @comm may be shorter than the slot's buffer. */
	memset(s->comm, 0, sizeof(s->comm));
	for (i = 0; comm && i < sizeof(s->comm) - 1 && comm[i]; i++)
		s->comm[i] = comm[i];
}

struct tprof_thread_slot *tprof_thread_table_insert(struct tprof_thread_table *t,
						    u64 key, u32 tid, u32 pid,
						    const char *comm)
{
	struct tprof_thread_slot *s;
	bool found;
	s64 i = tprof_tt_find(t, key, &found);
	u32 idx;

	if (found)
		return &t->slots[t->hash_slots[i]];
	if (i < 0 || t->free_head == TPROF_TT_NONE) {
		t->untracked++;
		return NULL;
	}
	idx = t->free_head;
	s = &t->slots[idx];
	t->free_head = s->list_next;
	memset(s, 0, sizeof(*s));
	s->key = key;
	s->identity = t->next_identity++;
	s->tid = tid;
	s->pid = pid;
	s->flags = TPROF_SLOT_USED;
	s->list_prev = s->list_next = TPROF_TT_NONE;
	tprof_thread_table_set_comm(s, comm);
	t->hash_keys[i] = key;
	t->hash_slots[i] = idx;
	t->used++;
	return s;
}

void tprof_thread_table_list(struct tprof_thread_table *t,
			     struct tprof_thread_slot *s)
{
	u32 idx = tprof_thread_table_index(t, s);

	if (s->flags & TPROF_SLOT_LISTED)
		return;
	s->flags |= TPROF_SLOT_LISTED;
	s->list_next = TPROF_TT_NONE;
	s->list_prev = t->list_tail;
	if (t->list_tail != TPROF_TT_NONE)
		t->slots[t->list_tail].list_next = idx;
	else
		t->list_head = idx;
	t->list_tail = idx;
	t->listed++;
}

static void tprof_tt_list_del(struct tprof_thread_table *t,
			      struct tprof_thread_slot *s)
{
	if (!(s->flags & TPROF_SLOT_LISTED))
		return;
	if (s->list_prev != TPROF_TT_NONE)
		t->slots[s->list_prev].list_next = s->list_next;
	else
		t->list_head = s->list_next;
	if (s->list_next != TPROF_TT_NONE)
		t->slots[s->list_next].list_prev = s->list_prev;
	else
		t->list_tail = s->list_prev;
	s->flags &= ~TPROF_SLOT_LISTED;
	s->list_prev = s->list_next = TPROF_TT_NONE;
	t->listed--;
}

static bool tprof_tt_is_zero(const struct tprof_thread_table *t,
			     const struct tprof_thread_slot *s)
{
	u32 m;

	for (m = 0; m < t->nr_metrics; m++)
		if (s->tcum[m])
			return false;
	return true;
}

void tprof_thread_table_exit(struct tprof_thread_table *t,
			     struct tprof_thread_slot *s)
{
	bool found;
	s64 i;

	if (s->flags & TPROF_SLOT_EXITED)
		return;
	i = tprof_tt_find(t, s->key, &found);
	if (found)
		t->hash_keys[i] = TPROF_TT_TOMBSTONE;
	s->flags |= TPROF_SLOT_EXITED;
	s->task = NULL;
	tprof_thread_table_list(t, s);
}

void tprof_thread_table_consume(struct tprof_thread_table *t,
				struct tprof_thread_slot *s,
				const u64 *reported)
{
	u32 m;

	for (m = 0; m < t->nr_metrics; m++)
		s->tcum[m] -= reported[m] < s->tcum[m] ? reported[m] : s->tcum[m];
	if (!tprof_tt_is_zero(t, s))
		return;
	tprof_tt_list_del(t, s);
	if (s->flags & TPROF_SLOT_EXITED) {
		u32 idx = tprof_thread_table_index(t, s);

		memset(s, 0, sizeof(*s));
		s->list_prev = TPROF_TT_NONE;
		s->list_next = t->free_head;
		t->free_head = idx;
		t->used--;
	}
}

void tprof_thread_table_fill(const struct tprof_thread_table *t,
			     const struct tprof_thread_slot *s,
			     struct tprof_thread_metrics *rec)
{
	u32 m;

	memset(rec, 0, sizeof(*rec));
	rec->pid = s->pid;
	rec->tid = s->tid;
	rec->identity = s->identity;
	rec->flags = (s->flags & TPROF_SLOT_EXITED) ? TPROF_THREAD_EXITED : 0;
	rec->nr_metrics = t->nr_metrics;
	memcpy(rec->comm, s->comm, sizeof(rec->comm));
	for (m = 0; m < t->nr_metrics; m++)
		rec->values[m] = s->tcum[m];
}
