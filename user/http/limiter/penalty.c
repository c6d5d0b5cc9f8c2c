// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * penalty.c - key escalation in the identity tier: a key refused in
 * `strikes` separate windows is blocked, doubling up to max, as the packet
 * tier's penalties do for source prefixes.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "limiter_int.h"
#include "log.h"

/* ---- a penalty's identity (the same in every instance: penalty_ledger.c
 * says why), and its block -------------------------------------------------- */

static __u64 le64(const __u8 *b)
{
	__u64 v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

struct xrl_kd xrl_pen_identity(const char *rule, const __u8 kh[16])
{
	__u64 h = 0xcbf29ce484222325ULL; /* FNV-1a of the rule's name */
	struct xrl_kd k;

	for (const char *q = rule; *q; q++)
		h = (h ^ (unsigned char)*q) * 0x100000001b3ULL;
	k.a = le64(kh);
	k.b = le64(kh + 8) ^ h;
	if (!TAG(k.b))
		k.b |= 1ULL << 16; /* a zero tag would read as empty */
	return k;
}

static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

/* Fetched once: EVP_sha256() makes EVP_Digest look the implementation up
 * at every call (OpenSSL 3), about 60 % of the digest's cost. */
static void sha256_fetch(void)
{
	sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

bool xrl_pen_item(struct xrl_lim_item *it)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	if (it->pk_set)
		return true;
	if (!it->key)
		return false;
	pthread_once(&sha256_once, sha256_fetch);
	if (!EVP_Digest(it->key, strlen(it->key), md, &n, sha256_md ? sha256_md : EVP_sha256(),
			NULL) ||
	    n < 16)
		memset(md, 0, 16); /* no digest: every key shares one (fails safe: a penalty
				    * then blocks more, never none) */
	memcpy(it->kh, md, 16);
	it->pk = xrl_pen_identity(it->r->name, it->kh);
	it->pk_set = true;
	return true;
}

void xrl_pen_block(struct xrl_limiter *l, struct xrl_kd pk, __u64 until, __u64 now)
{
	__u64 was = atomic_load(&l->pen_until);

	xrl_store_put(l->pen_block, pk, until, now);
	while (until > was && !atomic_compare_exchange_weak(&l->pen_until, &was, until))
		;
}

/* ---- escalation -------------------------------------------------------------- */

/* Packed state: [63..24] window index, [23..16] strikes, [15..8] offenses. */
bool xrl_lim_penalty_strike(struct xrl_limiter *l, struct xrl_lim_item *x, __u64 now,
			    __u64 *pttl, __u32 *plevel)
{
	__u64 win = now / l->cfg.penalty.window_ns, st, ttl;
	struct xrl_shard *sh;
	__u32 strikes, offenses;
	struct xrl_slot *s;

	if (!xrl_pen_item(x))
		return false;
	sh = xrl_store_shard(l->pen_state, x->pk);
	pthread_mutex_lock(&sh->mu);
	s = xrl_store_slot(l->pen_state, sh, x->pk, 0, ~0ULL);
	st = s->v;
	strikes = (st >> 16) & 0xff;
	offenses = (st >> 8) & 0xff;
	if (st && (st >> 24) == win) {
		pthread_mutex_unlock(&sh->mu);
		return false;
	}
	if (st && win - (st >> 24) > l->cfg.penalty.strikes)
		strikes = 0;
	/* as in the packet tier: more than 2 x max without an offence forgives
	 * (measured from the last strike, which is never before the last offence) */
	if (st && offenses &&
	    win - (st >> 24) > 2 * l->cfg.penalty.max_ns / l->cfg.penalty.window_ns)
		offenses = 0;
	strikes++;
	ttl = 0;
	if (strikes >= l->cfg.penalty.strikes) {
		ttl = l->cfg.penalty.base_ns;
		for (__u32 i = 0; i < offenses && ttl < l->cfg.penalty.max_ns; i++)
			ttl *= 2;
		if (ttl > l->cfg.penalty.max_ns)
			ttl = l->cfg.penalty.max_ns;
		strikes = 0;
		if (offenses < 0xff)
			offenses++;
	}
	s->v = (win << 24) | ((__u64)strikes << 16) | ((__u64)offenses << 8) | 1;
	pthread_mutex_unlock(&sh->mu);
	if (!ttl)
		return false;
	xrl_pen_block(l, x->pk, now + ttl, now);
	STAT_ADD(l, penalties, 1);
	char key[XRL_RULE_NAME_LEN + 32];

	/* one line per rule per interval: a flood of keys is one line */
	snprintf(key, sizeof(key), "identity tier: rule %s", x->r->name);
	log_agg(XRL_LOG_INFO, key, "keys blocked", "a key refused in %u windows: blocked for %llus",
		l->cfg.penalty.strikes, (unsigned long long)(ttl / XRL_NSEC_PER_SEC));
	*pttl = ttl;
	*plevel = offenses;
	return true;
}

bool xrl_lim_penalty_refuses(struct xrl_limiter *l, struct xrl_lim_item *it, int m, __u64 now,
			     struct xrl_decision *d)
{
	if (!l->cfg.penalty.enabled || now >= atomic_load(&l->pen_until))
		return false; /* no penalty in force anywhere: no hash, no lookup */
	for (int i = 0; i < m; i++) {
		__u64 until = xrl_pen_item(&it[i]) ? xrl_store_peek(l->pen_block, it[i].pk) : 0;

		if (until > now && !it[i].r->shadow) {
			d->allowed = false;
			d->penalized = true;
			d->rule = it[i].r;
			d->limit = it[i].g.burst;
			d->retry_after_s = ceil_s(until - now);
			/* nothing is left until the block ends: RateLimit's t= is
			 * that end too, as Retry-After says (not the bucket's) */
			d->remaining = 0;
			d->reset_s = d->retry_after_s;
			STAT_ADD(l, refused, 1);
			return true;
		}
	}
	return false;
}

void xrl_lim_penalty_forget(struct xrl_limiter *l, struct xrl_kd pk)
{
	xrl_store_update(l->pen_block, pk, 0);
	xrl_store_update(l->pen_state, pk, 0);
}

/* A penalty of another instance: this one escalates from its level on. */
void xrl_lim_penalty_level(struct xrl_limiter *l, struct xrl_kd pk, __u32 level, __u64 now)
{
	struct xrl_shard *sh = xrl_store_shard(l->pen_state, pk);
	__u64 win = now / l->cfg.penalty.window_ns;
	struct xrl_slot *s;

	if (level > 0xff)
		level = 0xff;
	pthread_mutex_lock(&sh->mu);
	s = xrl_store_slot(l->pen_state, sh, pk, 0, ~0ULL);
	if (!s->v || ((s->v >> 8) & 0xff) < level)
		s->v = (win << 24) | ((__u64)level << 8) | 1; /* no strike pending */
	pthread_mutex_unlock(&sh->mu);
}

/*
 * The items of a request (cfg_mu held): 0 and *pm, or 1 when d is the
 * decision already (a missing key refuses), -E2BIG.
 */
