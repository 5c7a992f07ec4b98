/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The per-thread metrics table of US8117599: TCum(M, t) for every tracked
 * thread, and the list of threads whose TCum is nonzero. Pure logic (see
 * core_env.h): the caller provides the memory and the locking (tprof.ko
 * holds one raw spinlock around every call).
 *
 * Threads are keyed by an opaque u64 (the kernel uses the task_struct
 * address, which stays the thread's across exec and tid changes) in an
 * open-addressing hash. Slots come from a free list; a slot is released
 * only after its thread exited *and* its final values were consumed, so
 * an exiting thread is reported exactly once more.
 */
#ifndef TPROF_CORE_THREAD_TABLE_H
#define TPROF_CORE_THREAD_TABLE_H

#include "core_env.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TPROF_SLOT_USED   (1U << 0)
#define TPROF_SLOT_LISTED (1U << 1) /* on the nonzero list */
#define TPROF_SLOT_EXITED (1U << 2) /* thread gone; final report pending */

#define TPROF_TT_NONE 0xffffffffU /* "no slot" in links */

struct tprof_thread_slot {
	u64 key;
	u64 identity;
	u64 tcum[TPROF_MAX_METRICS];
	u32 tid;
	u32 pid;
	u32 flags;
	u32 list_prev, list_next; /* nonzero list, or free list (list_next) */
	u32 seen_gen;             /* drain generation that last reported it */
	char comm[16];
	void *task;               /* owner's task while alive (kernel only) */
	void *self_page;          /* its self page, if mapped (kernel only) */
};

struct tprof_thread_table {
	struct tprof_thread_slot *slots;
	u32 capacity;
	u64 *hash_keys;   /* 0 = empty, TPROF_TT_TOMBSTONE = deleted */
	u32 *hash_slots;
	u32 hash_mask;    /* hash size - 1 (a power of two >= 2 * capacity) */
	u32 nr_metrics;
	u32 free_head;
	u32 list_head, list_tail;
	u32 used, listed;
	u32 drain_gen;
	u64 untracked;    /* inserts refused because the table was full */
	u64 next_identity;
};

#define TPROF_TT_TOMBSTONE (~0ULL)

/* Hash entries needed for @capacity slots. */
u32 tprof_thread_table_hash_size(u32 capacity);

/* Sets up an empty table over caller memory (slots and hash arrays). */
void tprof_thread_table_init(struct tprof_thread_table *t,
			     struct tprof_thread_slot *slots, u32 capacity,
			     u64 *hash_keys, u32 *hash_slots, u32 hash_size,
			     u32 nr_metrics);

static inline u32 tprof_thread_table_hash(u64 key)
{
	/* Fibonacci hashing: task addresses differ mostly in middle bits. */
	return (u32)((key * 0x9E3779B97F4A7C15ULL) >> 32);
}

/*
 * The slot tracking @key, or NULL. Inline: the context-switch hook calls it
 * on every switch.
 */
static inline struct tprof_thread_slot *
tprof_thread_table_lookup(struct tprof_thread_table *t, u64 key)
{
	u32 i = tprof_thread_table_hash(key) & t->hash_mask;
	u32 n;

	for (n = 0; n <= t->hash_mask; n++, i = (i + 1) & t->hash_mask) {
		u64 k = t->hash_keys[i];

		if (k == key)
			return &t->slots[t->hash_slots[i]];
		if (k == 0)
			return NULL;	/* tombstones are skipped, empties end it */
	}
	return NULL;
}

/*
 * Tracks a thread (key != 0, != TOMBSTONE). Returns its slot, the existing
 * one if the key is already tracked, or NULL (and counts it untracked) when
 * the table is full.
 */
struct tprof_thread_slot *tprof_thread_table_insert(struct tprof_thread_table *t,
						    u64 key, u32 tid, u32 pid,
						    const char *comm);

/* Sets the slot's name from a NUL-terminated (or 16-byte) string. */
void tprof_thread_table_set_comm(struct tprof_thread_slot *s, const char *comm);

/* Puts the slot on the nonzero list (if it is not there yet). */
void tprof_thread_table_list(struct tprof_thread_table *t,
			     struct tprof_thread_slot *s);

/* TCum += delta; lists the slot when it becomes nonzero. Inline: hot. */
static inline void tprof_thread_table_account(struct tprof_thread_table *t,
					      struct tprof_thread_slot *s,
					      const u64 *delta)
{
	u64 any = 0;
	u32 m;

	for (m = 0; m < t->nr_metrics; m++) {
		s->tcum[m] += delta[m];
		any |= delta[m];
	}
	if (any && !(s->flags & TPROF_SLOT_LISTED))
		tprof_thread_table_list(t, s);
}

/*
 * The thread exited: forgets its key (so a new thread can use the key) and
 * lists it for one final report.
 */
void tprof_thread_table_exit(struct tprof_thread_table *t,
			     struct tprof_thread_slot *s);

/*
 * Consumer side: after values were handed out, TCum -= reported. A slot
 * left at zero is unlinked; an exited one is then released.
 */
void tprof_thread_table_consume(struct tprof_thread_table *t,
				struct tprof_thread_slot *s,
				const u64 *reported);

/* Fills a uapi record from a slot (comm from the slot). */
void tprof_thread_table_fill(const struct tprof_thread_table *t,
			     const struct tprof_thread_slot *s,
			     struct tprof_thread_metrics *rec);

static inline u32 tprof_thread_table_index(const struct tprof_thread_table *t,
					   const struct tprof_thread_slot *s)
{
	return (u32)(s - t->slots);
}

#ifdef __cplusplus
}
#endif

#endif /* TPROF_CORE_THREAD_TABLE_H */
