// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * override.c - per-key limits set at run time (`xrlctl override RULE KEY
 * --rate R --burst B --ttl D`): a box-office or partner key gets a rate and
 * burst of its own, for a while, without a policy change.
 *
 * A fixed table of XRL_OVR_MAX entries (open addressing over twice as many
 * slots, keyed by the bucket's own digest of rule and key), so a decision
 * finds its key's override with one probe run, and a decision of a limiter
 * without overrides pays one atomic load. Every change rebuilds the table
 * under the write lock: changes are an operator's, rare; lookups are every
 * request's. Expiry is wall-clock (CLOCK_REALTIME ms), the clock the entries
 * carry when they are shared through Redis between hosts (server/admin.c).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "limiter_int.h"

#define OVR_SLOTS (2 * XRL_OVR_MAX) /* a power of two: the probe masks */

struct ovr_slot {
	bool used;
	struct xrl_kd k;
	struct xrl_gcra_params g;
	struct xrl_ovr e;
};

struct xrl_ovr_tab {
	pthread_rwlock_t mu;
	_Atomic __u32 n; /* entries; 0: no lookup at all */
	struct ovr_slot s[OVR_SLOTS];
};

__u64 xrl_ovr_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * 1000 + (__u64)ts.tv_nsec / 1000000;
}

struct xrl_ovr_tab *xrl_ovr_new(void)
{
	struct xrl_ovr_tab *t = calloc(1, sizeof(*t));

	if (t)
		pthread_rwlock_init(&t->mu, NULL);
	return t;
}

void xrl_ovr_free(struct xrl_ovr_tab *t)
{
	if (t)
		pthread_rwlock_destroy(&t->mu);
	free(t);
}

static struct ovr_slot *probe(struct xrl_ovr_tab *t, struct xrl_kd k, bool want_free)
{
	for (__u32 i = 0, h = (__u32)k.a; i < OVR_SLOTS; i++) {
		struct ovr_slot *s = &t->s[(h + i) & (OVR_SLOTS - 1)];

		if (!s->used)
			return want_free ? s : NULL;
		if (s->k.a == k.a && s->k.b == k.b)
			return s;
	}
	return NULL;
}

bool xrl_lim_ovr_lookup(struct xrl_limiter *l, struct xrl_kd k, struct xrl_gcra_params *g,
			struct xrl_rate *rate)
{
	struct xrl_ovr_tab *t = l->ovr;
	struct ovr_slot *s;
	bool hit = false;

	if (!t || !atomic_load_explicit(&t->n, memory_order_relaxed))
		return false;
	pthread_rwlock_rdlock(&t->mu);
	s = probe(t, k, false);
	if (s && s->e.until_ms > xrl_ovr_now_ms()) {
		*g = s->g;
		*rate = s->e.rate;
		hit = true;
	}
	pthread_rwlock_unlock(&t->mu);
	return hit;
}

/* Check e: its rate and burst make a bucket; 0 or -EINVAL/-ERANGE. */
static int ovr_params(const struct xrl_ovr *e, struct xrl_gcra_params *g)
{
	if (!e->rule[0] || !e->key[0])
		return -EINVAL;
	return xrl_gcra_init(e->rate.tokens, e->rate.period_ns, e->burst, g);
}

/* The entries in force, into a fresh table's slots (write lock held). */
static int rebuild(struct xrl_limiter *l, const struct xrl_ovr *e, int n)
{
	struct xrl_ovr_tab *t = l->ovr;
	__u64 now = xrl_ovr_now_ms();
	__u32 m = 0;

	memset(t->s, 0, sizeof(t->s));
	for (int i = 0; i < n; i++) {
		struct xrl_kd k = xrl_lim_digest(l, e[i].rule, e[i].key);
		struct xrl_gcra_params g;
		struct ovr_slot *s;

		if (e[i].until_ms <= now || ovr_params(&e[i], &g))
			continue;
		s = probe(t, k, true);
		if (!s)
			break;
		if (!s->used)
			m++;
		*s = (struct ovr_slot){ .used = true, .k = k, .g = g, .e = e[i] };
	}
	atomic_store(&t->n, m);
	return 0;
}

/* The entries in force, unordered, into out (max at most). */
static int collect(struct xrl_ovr_tab *t, struct xrl_ovr *out, int max)
{
	__u64 now = xrl_ovr_now_ms();
	int n = 0;

	for (__u32 i = 0; i < OVR_SLOTS && n < max; i++)
		if (t->s[i].used && t->s[i].e.until_ms > now)
			out[n++] = t->s[i].e;
	return n;
}

int xrl_limiter_override_list(struct xrl_limiter *l, struct xrl_ovr *out, int max)
{
	int n;

	pthread_rwlock_rdlock(&l->ovr->mu);
	n = collect(l->ovr, out, max);
	pthread_rwlock_unlock(&l->ovr->mu);
	return n;
}

int xrl_limiter_override_set(struct xrl_limiter *l, const struct xrl_ovr *e)
{
	struct xrl_ovr *all = malloc(sizeof(*all) * (XRL_OVR_MAX + 1));
	struct xrl_gcra_params g;
	int n, rc = ovr_params(e, &g);

	if (!all)
		return -ENOMEM;
	if (rc) {
		free(all);
		return rc;
	}
	pthread_rwlock_wrlock(&l->ovr->mu);
	n = collect(l->ovr, all, XRL_OVR_MAX);
	for (int i = 0; i < n; i++)
		if (!strcmp(all[i].rule, e->rule) && !strcmp(all[i].key, e->key))
			all[i--] = all[--n]; /* replaced */
	if (n >= XRL_OVR_MAX) {
		rc = -ENOSPC;
	} else {
		all[n++] = *e;
		rc = rebuild(l, all, n);
	}
	pthread_rwlock_unlock(&l->ovr->mu);
	free(all);
	return rc;
}

int xrl_limiter_override_del(struct xrl_limiter *l, const char *rule, const char *key)
{
	struct xrl_ovr *all = malloc(sizeof(*all) * XRL_OVR_MAX);
	int n, rc = -ENOENT;

	if (!all)
		return -ENOMEM;
	pthread_rwlock_wrlock(&l->ovr->mu);
	n = collect(l->ovr, all, XRL_OVR_MAX);
	for (int i = 0; i < n; i++)
		if (!strcmp(all[i].rule, rule) && !strcmp(all[i].key, key)) {
			all[i--] = all[--n];
			rc = 0;
		}
	if (!rc)
		rebuild(l, all, n);
	pthread_rwlock_unlock(&l->ovr->mu);
	free(all);
	return rc;
}

void xrl_limiter_override_replace(struct xrl_limiter *l, const struct xrl_ovr *e, int n)
{
	pthread_rwlock_wrlock(&l->ovr->mu);
	rebuild(l, e, n > XRL_OVR_MAX ? XRL_OVR_MAX : n);
	pthread_rwlock_unlock(&l->ovr->mu);
}
