// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * lease.c - the slots of concurrency rules in process memory: per (rule,
 * key) a set of leases, each a random id and the time it runs out. A slot
 * is taken by a decision and given back by a release, or it is free again
 * once its lease_ttl has passed (a caller that crashed never leaks one).
 *
 * Sharded 64 ways with a mutex per shard, as the bucket store; a shard
 * chains its sets in a fixed array of heads. A set is allocated when its
 * key first takes a slot, with room for the rule's concurrency (at most
 * XRL_HTTP_CONC_MAX), and freed when its last lease goes. The number of
 * sets is bounded (max_sets): when it is reached, a new key's request is
 * admitted without a slot (counted) rather than an old key's leases being
 * forgotten, which would let more of that key's requests in than the rule
 * allows, or every new caller being refused. Work per operation is
 * linear in the key's own leases, at most its concurrency.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "limiter_int.h"

struct xrl_lease {
	__u64 nonce; /* the lease id's random part */
	__u64 exp;   /* runs out at (CLOCK_MONOTONIC ns) */
	struct xrl_kd rate; /* the bucket a post-paid cost is charged to */
};

struct xrl_lease_set {
	struct xrl_lease_set *next;
	struct xrl_kd k;
	__u32 n, cap;
	struct xrl_lease l[];
};

struct xrl_lease_shard {
	pthread_mutex_t mu;
	struct xrl_lease_set **head;
	__u32 mask;
	char pad[64 - (sizeof(pthread_mutex_t) + sizeof(void *) + 4) % 64];
} __attribute__((aligned(64)));

struct xrl_lease_store {
	struct xrl_lease_shard sh[SHARDS];
	_Atomic __u32 sets;
	__u32 max_sets;
	_Atomic __u64 full; /* slots not taken because max_sets was reached */
};

struct xrl_lease_store *xrl_lease_store_new(__u32 max_sets)
{
	__u32 per;
	struct xrl_lease_store *s = xrl_shards_alloc(sizeof(*s), max_sets, 1u << 20, &per);

	if (!s)
		return NULL;
	s->max_sets = max_sets ? max_sets : 1;
	for (int i = 0; i < SHARDS; i++) {
		pthread_mutex_init(&s->sh[i].mu, NULL);
		s->sh[i].mask = per - 1;
		s->sh[i].head = calloc(per, sizeof(*s->sh[i].head));
		if (!s->sh[i].head) {
			xrl_lease_store_free(s);
			return NULL;
		}
	}
	return s;
}

void xrl_lease_store_free(struct xrl_lease_store *s)
{
	if (!s)
		return;
	for (int i = 0; i < SHARDS; i++) {
		for (__u32 j = 0; s->sh[i].head && j <= s->sh[i].mask; j++) {
			struct xrl_lease_set *x = s->sh[i].head[j], *next;

			for (; x; x = next) {
				next = x->next;
				free(x);
			}
		}
		free(s->sh[i].head);
	}
	free(s);
}

static struct xrl_lease_shard *shard_of(struct xrl_lease_store *s, struct xrl_kd k)
{
	return &s->sh[k.a & (SHARDS - 1)];
}

static struct xrl_lease_set **head_of(struct xrl_lease_shard *sh, struct xrl_kd k)
{
	return &sh->head[(k.a >> 6) & sh->mask];
}

/* The set of k in its (locked) shard, or NULL. */
static struct xrl_lease_set *set_find(struct xrl_lease_shard *sh, struct xrl_kd k)
{
	for (struct xrl_lease_set *x = *head_of(sh, k); x; x = x->next)
		if (x->k.a == k.a && x->k.b == k.b)
			return x;
	return NULL;
}

/* Drop the leases of x that ran out by now. */
static void set_expire(struct xrl_lease_set *x, __u64 now)
{
	for (__u32 i = 0; i < x->n;) {
		if (x->l[i].exp <= now)
			x->l[i] = x->l[--x->n];
		else
			i++;
	}
}

/* Unlink and free x if it holds no lease (its shard locked). */
static void set_gc(struct xrl_lease_store *s, struct xrl_lease_shard *sh, struct xrl_lease_set *x)
{
	struct xrl_lease_set **pp = head_of(sh, x->k);

	if (x->n)
		return;
	while (*pp != x)
		pp = &(*pp)->next;
	*pp = x->next;
	free(x);
	atomic_fetch_sub(&s->sets, 1);
}

/*
 * The set of k with room for cap leases (its shard locked), made or grown
 * as needed; NULL when the store is full or out of memory.
 */
static struct xrl_lease_set *set_get(struct xrl_lease_store *s, struct xrl_lease_shard *sh,
				     struct xrl_kd k, __u32 cap)
{
	struct xrl_lease_set *x = set_find(sh, k), **pp;

	if (x && x->cap >= cap)
		return x;
	if (x) { /* the rule allows more since a reload */
		struct xrl_lease_set *nx;

		for (pp = head_of(sh, k); *pp != x;)
			pp = &(*pp)->next;
		nx = realloc(x, sizeof(*x) + (size_t)cap * sizeof(x->l[0]));
		if (!nx)
			return NULL;
		nx->cap = cap;
		*pp = nx;
		return nx;
	}
	if (atomic_fetch_add(&s->sets, 1) >= s->max_sets) {
		atomic_fetch_sub(&s->sets, 1);
		atomic_fetch_add(&s->full, 1);
		return NULL;
	}
	x = malloc(sizeof(*x) + (size_t)cap * sizeof(x->l[0]));
	if (!x) {
		atomic_fetch_sub(&s->sets, 1);
		return NULL;
	}
	x->k = k;
	x->n = 0;
	x->cap = cap;
	pp = head_of(sh, k);
	x->next = *pp;
	*pp = x;
	return x;
}

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/* Lock (or unlock) the shards of it[0..n), each once, in order. */
static void lock_all(struct xrl_lease_store *s, const struct xrl_conc_item *it, int n, bool lock)
{
	__u32 idx[XRL_HTTP_MAX_MATCH];

	for (int i = 0; i < n; i++)
		idx[i] = (__u32)(it[i].k.a & (SHARDS - 1));
	qsort(idx, (size_t)n, sizeof(idx[0]), cmp_u32);
	for (int i = 0; i < n; i++) {
		if (i && idx[i] == idx[i - 1])
			continue;
		if (lock)
			pthread_mutex_lock(&s->sh[idx[i]].mu);
		else
			pthread_mutex_unlock(&s->sh[idx[i]].mu);
	}
}

/*
 * One slot for each item, all or none (a shadow item that finds no room
 * takes none and refuses nothing). Fills ok, held (leases of the key after
 * the expired ones went, this one not counted) and first_exp (when the
 * earliest of them runs out). Returns 1 when all that must were taken, 0
 * when not (none was taken). Cost: per item a shard's mutex and a walk of
 * its chain and set (at most the rule's concurrency leases).
 */
int xrl_lease_acquire(struct xrl_lease_store *s, struct xrl_conc_item *it, int n, __u64 now)
{
	struct xrl_lease_set *x[XRL_HTTP_MAX_MATCH];
	bool all = true;

	lock_all(s, it, n, true);
	for (int i = 0; i < n; i++) {
		struct xrl_lease_shard *sh = shard_of(s, it[i].k);

		x[i] = set_get(s, sh, it[i].k, it[i].r->concurrency);
		it[i].held = 0;
		it[i].first_exp = 0;
		if (x[i]) {
			set_expire(x[i], now);
			it[i].held = x[i]->n;
			for (__u32 j = 0; j < x[i]->n; j++)
				if (!it[i].first_exp || x[i]->l[j].exp < it[i].first_exp)
					it[i].first_exp = x[i]->l[j].exp;
		}
		/* two items of one set (two rules cannot share one: the name is in
		 * k). A full table admits without a slot (counted in
		 * leases_full): a flood of unique keys holding leases must not
		 * turn into "refuse every new caller" */
		it[i].ok = !x[i] || x[i]->n < it[i].r->concurrency;
		it[i].full = !x[i];
		if (!it[i].ok && !it[i].r->shadow)
			all = false;
	}
	for (int i = 0; i < n; i++) {
		if (all && it[i].ok && x[i]) {
			x[i]->l[x[i]->n++] = (struct xrl_lease){ .nonce = it[i].nonce,
								  .exp = now + it[i].r->lease_ttl_ns,
								  .rate = it[i].rate };
		} else if (x[i]) {
			set_gc(s, shard_of(s, it[i].k), x[i]);
		}
		if (!all)
			it[i].taken = false;
		else
			it[i].taken = it[i].ok && x[i];
	}
	lock_all(s, it, n, false);
	return all;
}

/* Give back the lease nonce of set k: true if it was there (then *rate is
 * the bucket of its key, for a post-paid cost). */
bool xrl_lease_release(struct xrl_lease_store *s, struct xrl_kd k, __u64 nonce,
		       struct xrl_kd *rate)
{
	struct xrl_lease_shard *sh = shard_of(s, k);
	struct xrl_lease_set *x;
	bool found = false;

	pthread_mutex_lock(&sh->mu);
	x = set_find(sh, k);
	for (__u32 i = 0; x && i < x->n; i++) {
		if (x->l[i].nonce != nonce)
			continue;
		if (rate)
			*rate = x->l[i].rate;
		x->l[i] = x->l[--x->n];
		found = true;
		break;
	}
	if (x)
		set_gc(s, sh, x);
	pthread_mutex_unlock(&sh->mu);
	return found;
}

__u64 xrl_lease_store_full(struct xrl_lease_store *s)
{
	return atomic_load(&s->full);
}
