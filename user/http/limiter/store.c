// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * store.c - the memory store: a fixed-size table of buckets, sharded with a
 * mutex per shard, open addressing over PROBE slots (limiter.c's opening
 * comment says why each choice). Also the over-limit cache and the penalty
 * state, which are stores of their own.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "limiter_int.h"

void *xrl_shards_alloc(size_t size, __u32 n, __u32 cap, __u32 *per)
{
	void *p = aligned_alloc(64, size);

	if (!p)
		return NULL;
	memset(p, 0, size);
	*per = 16;
	while ((__u64)*per * SHARDS < n && *per < cap)
		*per <<= 1;
	return p;
}

struct xrl_store *xrl_store_new(__u32 max_keys)
{
	__u32 per;
	/* no cap: a __u32 max_keys needs at most 2^26 slots a shard */
	struct xrl_store *s = xrl_shards_alloc(sizeof(*s), max_keys, 1u << 31, &per);

	if (!s)
		return NULL;
	for (int i = 0; i < SHARDS; i++) {
		pthread_mutex_init(&s->sh[i].mu, NULL);
		s->sh[i].mask = per - 1;
		s->sh[i].slots = calloc(per, sizeof(struct xrl_slot));
		if (!s->sh[i].slots)
			return NULL; /* leaks on OOM at start-up; the daemon exits */
	}
	return s;
}

void xrl_store_free(struct xrl_store *s)
{
	if (!s)
		return;
	for (int i = 0; i < SHARDS; i++)
		free(s->sh[i].slots);
	free(s);
}

struct xrl_shard *xrl_store_shard(struct xrl_store *s, struct xrl_kd k)
{
	return &s->sh[k.a & (SHARDS - 1)];
}

static bool slot_is(const struct xrl_slot *x, struct xrl_kd k)
{
	return x->h && x->a == k.a && TAG(x->h) == TAG(k.b);
}

/*
 * The slot for k in its (locked) shard, inserting it with v = 0 when absent,
 * and marking it used now. Victims, in order: an empty slot; an idle one
 * (v <= now: a full bucket, an expired refusal, exactly as if absent); among
 * those that owe no more than `cheap` (the newcomer's cost), the one used
 * least recently (a key in use keeps its state against a flood of fresh
 * keys), then the one closest to full; only when all owe more, the one
 * closest to full. So a drained key that waits out its Retry-After is not
 * handed a fresh burst by a flood of one-request keys.
 * Cost: at most PROBE slots of one shard (192 bytes), under the shard's
 * mutex (the caller's).
 */
struct xrl_slot *xrl_store_slot(struct xrl_store *s, struct xrl_shard *sh, struct xrl_kd k,
				__u64 now, __u64 cheap)
{
	__u32 i = (__u32)(k.a >> 6) & sh->mask;
	__u64 sec = (now / XRL_NSEC_PER_SEC) & 0xffff, age, vage = 0;
	struct xrl_slot *free_s = NULL, *idle = NULL, *victim = NULL, *dear = NULL;

	for (int n = 0; n < PROBE; n++, i = (i + 1) & sh->mask) {
		struct xrl_slot *x = &sh->slots[i];

		if (slot_is(x, k)) {
			x->h = TAG(k.b) << 16 | sec;
			return x;
		}
		if (!x->h) {
			if (!free_s)
				free_s = x;
			break; /* nothing beyond an empty slot was ever placed for k */
		}
		age = (sec - (x->h & 0xffff)) & 0xffff;
		if (x->v <= now) {
			if (!idle)
				idle = x;
		} else if (x->v - now > cheap) {
			/* it owes more than the newcomer will: evicting it would
			 * hand its owner more than the newcomer spends */
			if (!dear || x->v < dear->v)
				dear = x;
		} else if (!victim || age > vage || (age == vage && x->v < victim->v)) {
			victim = x;
			vage = age;
		}
	}
	if (free_s) {
		atomic_fetch_add(&s->keys, 1);
	} else if (idle) {
		free_s = idle;
		atomic_fetch_add(&s->ev_idle, 1);
	} else {
		free_s = victim ? victim : dear;
		atomic_fetch_add(&s->ev_active, 1);
	}
	free_s->a = k.a;
	free_s->h = TAG(k.b) << 16 | sec;
	free_s->v = 0;
	return free_s;
}

/* The (locked) slot of k, or NULL. */
static struct xrl_slot *slot_find(struct xrl_shard *sh, struct xrl_kd k)
{
	__u32 i = (__u32)(k.a >> 6) & sh->mask;

	for (int n = 0; n < PROBE; n++, i = (i + 1) & sh->mask) {
		if (slot_is(&sh->slots[i], k))
			return &sh->slots[i];
		if (!sh->slots[i].h)
			break;
	}
	return NULL;
}

/* Peek without inserting: the value, or 0. Cost: a shard's mutex, at most
 * PROBE slots. */
__u64 xrl_store_peek(struct xrl_store *s, struct xrl_kd k)
{
	struct xrl_shard *sh = xrl_store_shard(s, k);
	struct xrl_slot *x;
	__u64 v;

	pthread_mutex_lock(&sh->mu);
	x = slot_find(sh, k);
	v = x ? x->v : 0;
	pthread_mutex_unlock(&sh->mu);
	return v;
}

void xrl_store_put(struct xrl_store *s, struct xrl_kd k, __u64 v, __u64 now)
{
	struct xrl_shard *sh = xrl_store_shard(s, k);

	pthread_mutex_lock(&sh->mu);
	xrl_store_slot(s, sh, k, now, ~0ULL)->v = v;
	pthread_mutex_unlock(&sh->mu);
}

/* Set k's value if k is there already (no insert, no eviction). */
void xrl_store_update(struct xrl_store *s, struct xrl_kd k, __u64 v)
{
	struct xrl_shard *sh = xrl_store_shard(s, k);
	struct xrl_slot *x;

	pthread_mutex_lock(&sh->mu);
	x = slot_find(sh, k);
	if (x)
		x->v = v;
	pthread_mutex_unlock(&sh->mu);
}

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/* Check all items against one store, then take from all or from none.
 * Cost: a sort of at most 8 shard numbers, each shard's mutex once, and
 * xrl_store_slot twice an item (check, then take). */
void xrl_store_decide(struct xrl_store *s, struct xrl_lim_item *it, int n, __u64 now)
{
	__u32 idx[XRL_HTTP_MAX_MATCH];
	int m = 0;
	bool all_ok = true;

	for (int i = 0; i < n; i++)
		idx[m++] = (__u32)(it[i].k.a & (SHARDS - 1));
	qsort(idx, (size_t)m, sizeof(idx[0]), cmp_u32);
	/* lock each shard once, in order: no deadlock between requests */
	for (int i = 0; i < m; i++)
		if (!i || idx[i] != idx[i - 1])
			pthread_mutex_lock(&s->sh[idx[i]].mu);
	for (int i = 0; i < n; i++) {
		struct xrl_slot *x =
			xrl_store_slot(s, xrl_store_shard(s, it[i].k), it[i].k, now, it[i].inc);

		it[i].tat = x->v;
		it[i].ok = xrl_gcra_decide(x->v, now, it[i].inc, it[i].g.tau_ns, &it[i].new_tat);
		if (!it[i].ok && !it[i].r->shadow)
			all_ok = false;
	}
	if (all_ok)
		for (int i = 0; i < n; i++)
			if (it[i].ok)
				xrl_store_slot(s, xrl_store_shard(s, it[i].k), it[i].k, now,
					       it[i].inc)
					->v = it[i].new_tat;
	for (int i = m - 1; i >= 0; i--)
		if (!i || idx[i] != idx[i - 1])
			pthread_mutex_unlock(&s->sh[idx[i]].mu);
}
