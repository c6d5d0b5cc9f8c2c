// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * topk.c - the most refused keys of each HTTP rule, for `xrlctl top --http
 * RULE`: a space-saving summary (Metwally, Agrawal and El Abbadi, 2005) of
 * XRL_TOPK_K counters per rule. A key already counted is incremented; a
 * new one takes a free counter, or replaces the smallest and inherits its
 * count as its possible error. Any key refused more than N/K times of N
 * refusals is in it, and memory stays K entries per rule under a flood of
 * unique keys. Each update is O(K) (K = 32), on the refusal path only;
 * admits never come here.
 *
 * The refusal path is the hot one: each server thread counts into a shard
 * of its own (its mutex is only ever contended by a reader, xrlctl), and
 * decisions made off the loops into one more; a read merges the shards
 * (counts and errors of one key summed): with one summary per rule, two
 * threads refusing one key would take turns on one mutex.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "topk.h"

struct xrl_topk_rule {
	pthread_mutex_t mu;
	__u32 n;
	struct xrl_topk_ent e[XRL_TOPK_K];
} __attribute__((aligned(64)));

struct xrl_topk {
	__u64 sip[2]; /* keyed: a flood cannot aim at one counter */
	unsigned shards;
	struct xrl_topk_rule *r; /* [shards][XRL_HTTP_MAX_RULES] */
};

struct xrl_topk *xrl_topk_new(unsigned shards)
{
	struct xrl_topk *t = calloc(1, sizeof(*t));
	size_t n = (size_t)shards * XRL_HTTP_MAX_RULES;

	if (!t || !shards)
		return free(t), NULL;
	t->shards = shards;
	t->r = aligned_alloc(64, n * sizeof(*t->r));
	if (!t->r || getrandom(t->sip, sizeof(t->sip), 0) != sizeof(t->sip)) {
		free(t->r);
		free(t);
		return NULL;
	}
	memset(t->r, 0, n * sizeof(*t->r));
	for (size_t i = 0; i < n; i++)
		pthread_mutex_init(&t->r[i].mu, NULL);
	return t;
}

void xrl_topk_free(struct xrl_topk *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < (size_t)t->shards * XRL_HTTP_MAX_RULES; i++)
		pthread_mutex_destroy(&t->r[i].mu);
	free(t->r);
	free(t);
}

void xrl_topk_reset(struct xrl_topk *t)
{
	for (size_t i = 0; i < (size_t)t->shards * XRL_HTTP_MAX_RULES; i++) {
		pthread_mutex_lock(&t->r[i].mu);
		t->r[i].n = 0;
		pthread_mutex_unlock(&t->r[i].mu);
	}
}

void xrl_topk_key(const struct xrl_topk *t, const char *key, struct xrl_topk_key *out)
{
	size_t n = strlen(key), i;
	__u64 h[2];

	xrl_siphash128(t->sip, key, n, h);
	out->h = h[0] | 1; /* 0 is never a key's */
	for (i = 0; i < n && i < XRL_TOPK_SHOW; i++) {
		unsigned char c = (unsigned char)key[i];

		out->show[i] = c > 0x20 && c < 0x7f ? (char)c : '?';
	}
	if (n > XRL_TOPK_SHOW) {
		memcpy(out->show + XRL_TOPK_SHOW, "...", 3);
		i += 3;
	}
	out->show[i] = '\0';
}

void xrl_topk_note(struct xrl_topk *t, unsigned shard, unsigned rule, const struct xrl_topk_key *k,
		   __u64 now_s)
{
	struct xrl_topk_rule *r;
	struct xrl_topk_ent *min = NULL;

	if (!t || rule >= XRL_HTTP_MAX_RULES)
		return;
	if (shard >= t->shards)
		shard = t->shards - 1;
	r = &t->r[(size_t)shard * XRL_HTTP_MAX_RULES + rule];
	pthread_mutex_lock(&r->mu);
	for (__u32 i = 0; i < r->n; i++) {
		if (r->e[i].h == k->h) {
			r->e[i].count++;
			r->e[i].last_s = now_s;
			pthread_mutex_unlock(&r->mu);
			return;
		}
		if (!min || r->e[i].count < min->count)
			min = &r->e[i];
	}
	if (r->n < XRL_TOPK_K) {
		r->e[r->n++] = (struct xrl_topk_ent){ .h = k->h, .count = 1, .last_s = now_s };
		memcpy(r->e[r->n - 1].show, k->show, sizeof(k->show));
	} else {
		/* the smallest goes; the newcomer may have had its count */
		min->err = min->count;
		min->count++;
		min->h = k->h;
		min->last_s = now_s;
		memcpy(min->show, k->show, sizeof(k->show));
	}
	pthread_mutex_unlock(&r->mu);
}

static int cmp_count(const void *a, const void *b)
{
	const struct xrl_topk_ent *x = a, *y = b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : strcmp(x->show, y->show);
}

/* Shard r's counters merged into all[0..*n): one key's summed. */
static void merge(struct xrl_topk_rule *r, struct xrl_topk_ent *all, int *n)
{
	pthread_mutex_lock(&r->mu);
	for (__u32 i = 0; i < r->n; i++) {
		int k;

		for (k = 0; k < *n && all[k].h != r->e[i].h; k++)
			;
		if (k == *n) {
			all[(*n)++] = r->e[i];
			continue;
		}
		all[k].count += r->e[i].count;
		all[k].err += r->e[i].err;
		if (r->e[i].last_s > all[k].last_s)
			all[k].last_s = r->e[i].last_s;
	}
	pthread_mutex_unlock(&r->mu);
}

int xrl_topk_read(struct xrl_topk *t, unsigned rule, struct xrl_topk_ent *out, int max)
{
	struct xrl_topk_ent *all;
	int n = 0;

	if (!t || rule >= XRL_HTTP_MAX_RULES || max <= 0)
		return 0;
	all = calloc((size_t)t->shards * XRL_TOPK_K, sizeof(*all));
	if (!all)
		return 0;
	for (unsigned s = 0; s < t->shards; s++)
		merge(&t->r[(size_t)s * XRL_HTTP_MAX_RULES + rule], all, &n);
	qsort(all, (size_t)n, sizeof(all[0]), cmp_count);
	/* K counters a rule are what was promised: the merge's first K */
	if (n > XRL_TOPK_K)
		n = XRL_TOPK_K;
	if (n > max)
		n = max;
	memcpy(out, all, sizeof(*all) * (size_t)n);
	free(all);
	return n;
}
