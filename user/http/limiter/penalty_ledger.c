// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * penalty_ledger.c - the identity tier's penalties by name: which rule, which
 * key (by the first bytes of its SHA-256, never the key: a bearer token
 * must not reach a terminal or a log), what level, until when. Listed and
 * lifted by `xrlctl penalty list|del`, and shared with the fleet.
 *
 * A penalty's identity (penalty.c makes it) is the same in every
 * instance: SHA-256 of the key (a collision with a chosen victim's key is a
 * second preimage of SHA-256), its second half mixed with the rule's name.
 * The buckets' SipHash key is drawn per process and could not be. It is
 * computed per item only when penalties are on.
 *
 * The list is bounded (PEN_MAX slots, open addressing over PEN_PROBE): a
 * flood of penalised keys replaces the entries that end soonest; the
 * penalties themselves are in the limiter's stores and stand regardless.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "http/fleet/fleet.h"
#include "limiter_int.h"
#include "log.h"

#define PEN_MAX	  4096
#define PEN_PROBE 16

struct xrl_pen_rec {
	bool used;
	char rule[XRL_RULE_NAME_LEN];
	__u8 kh[16];
	struct xrl_kd pk;
	__u64 until; /* CLOCK_MONOTONIC ns (the limiter's clock) */
	__u32 level;
};

struct xrl_pen_ledger {
	pthread_mutex_t mu;
	struct xrl_pen_rec r[PEN_MAX];
};

struct xrl_pen_ledger *xrl_pen_ledger_new(void)
{
	struct xrl_pen_ledger *p = calloc(1, sizeof(*p));

	if (p)
		pthread_mutex_init(&p->mu, NULL);
	return p;
}

static void hex16(const __u8 *kh, char out[33])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", kh[i]);
}

/* Note (or refresh) a penalty in the list. */
static void pen_note(struct xrl_pen_ledger *p, const char *rule, const __u8 kh[16], struct xrl_kd pk,
		     __u64 until, __u32 level, __u64 now)
{
	struct xrl_pen_rec *x = NULL, *soonest = NULL;
	__u32 i = (__u32)(pk.a % PEN_MAX);

	pthread_mutex_lock(&p->mu);
	for (int n = 0; n < PEN_PROBE; n++, i = (i + 1) % PEN_MAX) {
		struct xrl_pen_rec *e = &p->r[i];

		if (e->used && e->pk.a == pk.a && e->pk.b == pk.b) {
			x = e;
			break;
		}
		if (!e->used || e->until <= now) {
			if (!x)
				x = e;
		} else if (!soonest || e->until < soonest->until) {
			soonest = e;
		}
	}
	if (!x)
		x = soonest;
	x->used = true;
	snprintf(x->rule, sizeof(x->rule), "%s", rule);
	memcpy(x->kh, kh, 16);
	x->pk = pk;
	x->until = until;
	x->level = level;
	pthread_mutex_unlock(&p->mu);
}

void xrl_pen_made(struct xrl_limiter *l, const struct xrl_lim_item *x, __u64 until, __u64 ttl,
		  __u32 level, __u64 now)
{
	struct xrl_fleet_entry e = { .op = XRL_FLEET_ADD, .kind = XRL_FLEET_PEN, .level = level };
	struct timespec ts;
	char h[33];

	pen_note(l->pens, x->r->name, x->kh, x->pk, until, level, now);
	if (!l->fleet)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	hex16(x->kh, h);
	snprintf(e.field, sizeof(e.field), "%s %s", x->r->name, h);
	e.until_ms = (__u64)ts.tv_sec * 1000 + (__u64)ts.tv_nsec / 1000000 + ttl / 1000000;
	xrl_fleet_publish(l->fleet, &e);
}

/* "RULE HEX32" into rule and kh. */
static bool pen_field(const char *f, char *rule, __u8 kh[16])
{
	const char *sp = strchr(f, ' ');
	size_t n;

	if (!sp || (n = (size_t)(sp - f)) == 0 || n >= XRL_RULE_NAME_LEN || strlen(sp + 1) != 32)
		return false;
	memcpy(rule, f, n);
	rule[n] = '\0';
	for (int i = 0; i < 16; i++) {
		unsigned v;

		if (sscanf(sp + 1 + 2 * i, "%2x", &v) != 1)
			return false;
		kh[i] = (__u8)v;
	}
	return true;
}

/* The longest block a fleet entry makes on a host without penalties of
 * its own (penalty.max is the bound on one with them). */
#define PEN_FLEET_MAX_NS (24 * 3600 * XRL_NSEC_PER_SEC)

/* A penalty of another instance (the fleet's thread): enforced here too. */
static void pen_from_fleet(void *arg, const struct xrl_fleet_entry *e)
{
	struct xrl_limiter *l = arg;
	char rule[XRL_RULE_NAME_LEN];
	struct timespec ts;
	__u64 now = lim_now(l), rnow, left, max;
	struct xrl_kd pk;
	__u8 kh[16];

	if (!pen_field(e->field, rule, kh))
		return;
	pk = xrl_pen_identity(rule, kh);
	if (e->op == XRL_FLEET_DEL) {
		xrl_lim_penalty_forget(l, pk);
		pthread_mutex_lock(&l->pens->mu);
		for (int i = 0; i < PEN_MAX; i++)
			if (l->pens->r[i].used && l->pens->r[i].pk.a == pk.a &&
			    l->pens->r[i].pk.b == pk.b)
				l->pens->r[i].used = false;
		pthread_mutex_unlock(&l->pens->mu);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	rnow = (__u64)ts.tv_sec * 1000 + (__u64)ts.tv_nsec / 1000000;
	if (e->until_ms && e->until_ms <= rnow)
		return; /* over already; 0 ("until removed") is held to the max below */
	pthread_rwlock_rdlock(&l->cfg_mu);
	/* this host's penalty.max is the longest block it enforces: an entry
	 * anyone wrote into Redis for 10 years (or 2^64 ms, whose ns wrapped)
	 * blocks a key no longer than a penalty made here */
	max = l->cfg.penalty.enabled ? l->cfg.penalty.max_ns : PEN_FLEET_MAX_NS;
	left = e->until_ms && e->until_ms - rnow < max / 1000000 ? (e->until_ms - rnow) * 1000000ULL
								  : max;
	xrl_pen_block(l, pk, now + left, now);
	if (l->cfg.penalty.enabled && l->cfg.penalty.window_ns)
		xrl_lim_penalty_level(l, pk, e->level, now);
	pthread_rwlock_unlock(&l->cfg_mu);
	pen_note(l->pens, rule, kh, pk, now + left, e->level, now);
}

void xrl_limiter_set_fleet(struct xrl_limiter *l, struct xrl_fleet *f)
{
	l->fleet = f;
	xrl_fleet_on(f, XRL_FLEET_PEN, pen_from_fleet, l);
}

json_t *xrl_limiter_penalties(struct xrl_limiter *l)
{
	json_t *a = json_array();
	__u64 now = lim_now(l);
	char h[33];

	pthread_mutex_lock(&l->pens->mu);
	for (int i = 0; i < PEN_MAX; i++) {
		struct xrl_pen_rec *e = &l->pens->r[i];

		if (!e->used || e->until <= now)
			continue;
		hex16(e->kh, h);
		json_array_append_new(a, json_pack("{s:s,s:s,s:i,s:I}", "rule", e->rule, "key_hash",
						   h, "level", (int)e->level, "remaining_s",
						   (json_int_t)ceil_s(e->until - now)));
	}
	pthread_mutex_unlock(&l->pens->mu);
	return a;
}

int xrl_limiter_penalty_del(struct xrl_limiter *l, const char *hex, int *lifted)
{
	struct xrl_pen_rec hit[64];
	size_t n = strlen(hex) < 32 ? strlen(hex) : 32;
	int k = 0;
	char h[33];

	pthread_mutex_lock(&l->pens->mu);
	for (int i = 0; i < PEN_MAX && k < 64; i++) {
		struct xrl_pen_rec *e = &l->pens->r[i];

		if (!e->used)
			continue;
		hex16(e->kh, h);
		if (strncmp(h, hex, n))
			continue;
		hit[k++] = *e;
		e->used = false;
	}
	pthread_mutex_unlock(&l->pens->mu);
	for (int i = 0; i < k; i++) {
		xrl_lim_penalty_forget(l, hit[i].pk);
		if (l->fleet) {
			struct xrl_fleet_entry e = { .op = XRL_FLEET_DEL, .kind = XRL_FLEET_PEN };

			hex16(hit[i].kh, h);
			snprintf(e.field, sizeof(e.field), "%s %s", hit[i].rule, h);
			xrl_fleet_publish(l->fleet, &e);
		}
	}
	*lifted = k;
	return 0;
}
