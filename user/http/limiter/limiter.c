// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * limiter.c - the identity tier's buckets: in process memory (default) or in
 * Redis, with the GCRA arithmetic of include/xrl_gcra.h.
 *
 * Memory: a fixed-size table, sharded 64 ways with a mutex per shard, open
 * addressing over at most 8 slots. Every slot is 24 bytes (112 bits of a
 * keyed 128-bit SipHash of rule and whole key, its last-use second, and the
 * TAT), allocated once: hostile key cardinality cannot grow it. A bucket
 * whose TAT is in the past is a full bucket, i.e. exactly as if absent, so
 * it is the first thing evicted and losing it loses nothing. Only when all
 * 8 slots hold buckets in use does an insert evict one that still holds
 * state: the least recently used, so a flood of fresh keys cannot reset a
 * key that is being used. Counted.
 *
 * Redis: one script decides a decision's keys atomically (NOSCRIPT
 * reloads), the caller's clock passed in, every key written with an expiry
 * equal to the time until its bucket is full, key names with a hash tag
 * (long keys by their SHA-256). Each server thread's event loop owns a
 * connection, opened without blocking, and pipelines on it: the decisions
 * queued while a batch is in flight go out together in the next, as one
 * script call (see "the Redis pipe"). A breaker stops calling a Redis that
 * fails, so no request waits out a timeout during an outage; each rule then
 * decides per on_backend_error. A key Redis refused keeps its TAT here, and
 * a request that TAT could not admit at its cost is refused without a round
 * trip (the over-limit cache).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>


#include "http/redis/cluster.h"
#include "http/redis/redis_int.h"
#include "limiter_int.h"
#include "log.h"

static struct xrl_kd key_digest(const struct xrl_limiter *l, const struct xrl_http_rule *r,
				const char *key)
{
	return xrl_lim_digest(l, r->name, key);
}

/* Fill the answer from the items: refusing rule with the longest wait, or
 * the admitting rule with the fewest tokens left. */
static void conclude(struct xrl_lim_item *it, int n, __u64 now, struct xrl_decision *d)
{
	__u64 best_wait = 0, best_rem = UINT64_MAX;
	int pick = -1;

	d->allowed = true;
	for (int i = 0; i < n; i++) {
		if (!it[i].ok && !it[i].r->shadow) {
			__u64 w = xrl_gcra_wait(it[i].tat, now, it[i].inc, it[i].g.tau_ns);

			if (d->allowed || w > best_wait) {
				best_wait = w;
				pick = i;
			}
			d->allowed = false;
		}
	}
	if (d->allowed) {
		for (int i = 0; i < n; i++) {
			__u64 t = it[i].ok ? it[i].new_tat : it[i].tat;
			__u64 rem = xrl_gcra_remaining(t, now, it[i].g.emit_ns, it[i].g.tau_ns);

			if (it[i].r->shadow)
				continue; /* invisible to clients: no headers from it */
			if (pick < 0 || rem < best_rem) {
				best_rem = rem;
				pick = i;
			}
		}
	}
	if (pick < 0)
		return;
	d->rule = it[pick].r;
	d->limit = it[pick].g.burst;
	d->rate = it[pick].rate;
	d->tau_ns = it[pick].g.tau_ns;
	if (d->allowed) {
		d->remaining = best_rem;
		d->reset_s =
			ceil_s(xrl_gcra_reset(it[pick].ok ? it[pick].new_tat : it[pick].tat, now));
	} else {
		d->remaining = xrl_gcra_remaining(it[pick].tat, now, it[pick].g.emit_ns,
						  it[pick].g.tau_ns);
		d->retry_after_s = ceil_s(best_wait);
		if (d->retry_after_s < 1)
			d->retry_after_s = 1;
		d->reset_s = ceil_s(xrl_gcra_reset(it[pick].tat, now));
	}
}

/* ---- deciding --------------------------------------------------------------- */

/*
 * The over-limit cache keeps, per key Redis refused, the TAT it was refused
 * against (on our monotonic clock), and follows that key's TAT in every
 * later answer of Redis while it is there. A TAT answers for every cost: a
 * request of cost c conforms from TAT + c x emit - tau on, so a refusal of
 * a large cost never refuses a smaller one that Redis would admit. Other
 * instances can only have moved the TAT later, so a refusal by the cache is
 * one Redis would give too (cfg_mu held).
 */
static void overlimit_note(struct xrl_limiter *l, struct xrl_lim_item *it, int m, __u64 now)
{
	for (int i = 0; i < m; i++) {
		if (it[i].r->shadow)
			continue;
		if (!it[i].ok)
			xrl_store_put(l->overlimit, it[i].k, it[i].tat, now);
		else
			xrl_store_update(l->overlimit, it[i].k, it[i].tat);
	}
}

/* A shadow rule would have refused: counted, in total and for its rule. */
static void shadow_refusal(struct xrl_limiter *l, struct xrl_decision *d,
			   const struct xrl_http_rule *r)
{
	STAT_ADD(l, shadow_refused, 1);
	if (d->n_shadow < XRL_HTTP_MAX_MATCH)
		d->shadow[d->n_shadow++] = r;
}

/* A refusal's strike (cfg_mu held); a penalty it makes is listed and told
 * to the fleet. */
static void strike(struct xrl_limiter *l, struct xrl_lim_item *x, __u64 now)
{
	__u64 ttl;
	__u32 level;

	if (xrl_lim_penalty_strike(l, x, now, &ttl, &level))
		xrl_pen_made(l, x, now + ttl, ttl, level, now);
}

/* The end of every decision (cfg_mu held): the answer from the items, the
 * counters, the over-limit cache and penalties of a refusal. */
static void conclude_count(struct xrl_limiter *l, struct xrl_lim_item *it, int m, __u64 now,
			   struct xrl_decision *d)
{
	conclude(it, m, now, d);
	xrl_callers_note(l->callers, it, m, now);
	if (l->cfg.redis && !d->backend_error)
		overlimit_note(l, it, m, now);
	if (!d->allowed) {
		STAT_ADD(l, refused, 1);
		for (int i = 0; i < m; i++)
			if (!it[i].ok && !it[i].r->shadow && l->cfg.penalty.enabled)
				strike(l, &it[i], now);
	} else {
		STAT_ADD(l, allowed, 1);
	}
	for (int i = 0; i < m; i++)
		if (!it[i].ok && it[i].r->shadow)
			shadow_refusal(l, d, it[i].r);
}

/*
 * A decision Redis did not answer (st: J_SKIP, the breaker is open; J_FAIL,
 * it failed; J_BADKEY, a key of it is not a string): each rule per its
 * on_backend_error. Or one it did (J_OK).
 */
static void lim_post_finish(struct xrl_limiter *l, struct xrl_lim_item *it, int st, __u64 now,
			    struct xrl_decision *d);

static void lim_finish(struct xrl_limiter *l, struct xrl_lim_item *it, int m, int st, __u64 now,
		       struct xrl_decision *d)
{
	struct xrl_lim_item loc[XRL_HTTP_MAX_MATCH];
	struct xrl_http_rule shr[XRL_HTTP_MAX_MATCH]; /* NODE_SHARE's copies */
	const struct xrl_http_rule *orig[XRL_HTTP_MAX_MATCH];
	__u32 live = 1;
	int k = 0;

	if (m == 1 && it[0].post) {
		lim_post_finish(l, it, st, now, d);
		return;
	}
	if (st == J_OK) {
		conclude_count(l, it, m, now, d);
		return;
	}
	if (st == J_SKIP)
		STAT_ADD(l, breaker_open_skips, 1);
	STAT_ADD(l, backend_errors, 1);
	d->backend_error = true;
	for (int i = 0; i < m; i++) {
		switch (it[i].r->on_backend_error) {
		case XRL_BE_CLOSED:
			STAT_ADD(l, fallback_closed, 1);
			d->allowed = false;
			d->shed = true;
			d->rule = it[i].r;
			d->limit = it[i].g.burst;
			d->retry_after_s = ceil_s(l->cfg.breaker_cooldown_ns);
			STAT_ADD(l, shed, 1);
			return;
		case XRL_BE_LOCAL:
			loc[k++] = it[i];
			break;
		default:
			STAT_ADD(l, fallback_open, 1);
			break;
		}
	}
	if (k) {
		STAT_ADD(l, fallback_local, 1);
		live = xrl_lim_share(l, loc, k, shr, orig);
		xrl_store_decide(l->mem, loc, k, now);
	}
	conclude_count(l, loc, k, now, d);
	if (live > 1)
		xrl_lim_unshare(k, shr, orig, d);
}

/*
 * The over-limit cache (cfg_mu held): true, with d filled, when a rule
 * refuses for its cached TAT at this request's cost; the rule of the
 * longest wait, as Redis would have named.
 */
static bool overlimit_refuses(struct xrl_limiter *l, struct xrl_lim_item *it, int m, __u64 now,
			      struct xrl_decision *d)
{
	__u64 tat = 0, best = 0, wait;
	int pick = -1;

	for (int i = 0; i < m; i++) {
		if (it[i].r->shadow)
			continue;
		it[i].tat = xrl_store_peek(l->overlimit, it[i].k);
		wait = xrl_gcra_wait(it[i].tat, now, it[i].inc, it[i].g.tau_ns);
		if (wait > best) {
			best = wait;
			pick = i;
		}
	}
	if (pick < 0)
		return false;
	/* a refusal, as Redis would give it: it strikes as one of Redis's does
	 * (else a key the cache keeps refusing never earns a second strike) */
	for (int i = 0; i < m && l->cfg.penalty.enabled; i++)
		if (!it[i].r->shadow &&
		    xrl_gcra_wait(it[i].tat, now, it[i].inc, it[i].r->g.tau_ns) > 0)
			strike(l, &it[i], now);
	tat = it[pick].tat;
	d->allowed = false;
	d->rule = it[pick].r;
	d->limit = it[pick].g.burst;
	d->rate = it[pick].rate;
	d->tau_ns = it[pick].g.tau_ns;
	d->remaining = xrl_gcra_remaining(tat, now, it[pick].g.emit_ns, it[pick].g.tau_ns);
	d->retry_after_s = ceil_s(best);
	d->reset_s = ceil_s(xrl_gcra_reset(tat, now));
	STAT_ADD(l, overlimit_cache_hits, 1);
	STAT_ADD(l, refused, 1);
	return true;
}

/* Rule r's part of a decision as a concurrency item: its set, its bucket,
 * a new lease id's nonce (SipHash of a count: unpredictable, never twice). */
static void conc_item(struct xrl_limiter *l, const struct xrl_http_rule *r, const char *key,
		      struct xrl_conc_item *c)
{
	__u64 ctr = atomic_fetch_add(&l->lease_ctr, 1), o[2];

	c->r = r;
	c->knl = xrl_redis_key_name(key, c->kn);
	c->k = xrl_lim_set_digest(l, r->name, c->kn, c->knl);
	c->rate = r->has_rate ? key_digest(l, r, key) : (struct xrl_kd){ 0, 0 };
	xrl_siphash128(l->sip, &ctr, sizeof(ctr), o);
	c->nonce = o[0] ^ o[1];
	c->ok = c->taken = c->full = false;
}

/* A key under penalty is refused until its block ends (cfg_mu held). */
static int items(struct xrl_limiter *l, const struct xrl_http_rule *const *rules,
		 const char *const *keys, const __u32 *costs, int n, struct xrl_decision *d,
		 struct xrl_lim_item *it, int *pm, struct xrl_conc_item *ci, int *pnc)
{
	int m = 0, nc = 0;

	for (int i = 0; i < n; i++) {
		const struct xrl_http_rule *r = rules[i];
		__u32 cost = costs ? costs[i] : r->cost;

		if (!keys[i]) {		 /* on_missing_key: refuse, decided by the caller */
			if (r->shadow) { /* a shadow refusal: counted, not enforced */
				shadow_refusal(l, d, r);
				continue;
			}
			d->allowed = false;
			d->missing_key = true;
			d->rule = r;
			d->limit = r->burst;
			/* no Retry-After: waiting never brings an identity (401) */
			d->retry_after_s = 0;
			STAT_ADD(l, refused, 1);
			return 1;
		}
		if (cost == 0)
			continue; /* counted, never refused: no token, no slot */
		if (r->concurrency)
			conc_item(l, r, keys[i], &ci[nc++]);
		if (!r->has_rate)
			continue;
		it[m] = (struct xrl_lim_item){ .r = r,
					       .k = key_digest(l, r, keys[i]),
					       .g = r->g,
					       .rate = r->rate,
					       .key = keys[i] };
		/* a key's override (xrlctl override) replaces the rule's rate and burst */
		xrl_lim_ovr_lookup(l, it[m].k, &it[m].g, &it[m].rate);
		if (cost > it[m].g.burst)
			return -E2BIG;
		it[m].inc = (__u64)cost * it[m].g.emit_ns;
		m++;
	}
	*pm = m;
	*pnc = nc;
	return 0;
}

/* ---- concurrency ------------------------------------------------------------ */

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* The lease id of c into out (XRL_LEASE_ID_MAX bytes; http.h says its form). */
static void lease_id(const struct xrl_conc_item *c, char *out)
{
	const unsigned char *k = (const unsigned char *)c->kn;
	size_t nl = strnlen(c->r->name, sizeof(c->r->name));
	char *p = out;
	__u32 v = 0;
	int bits = 0;

	memcpy(p, c->r->name, nl);
	p += nl;
	*p++ = '.';
	for (int i = 15; i >= 0; i--)
		*p++ = "0123456789abcdef"[(c->nonce >> (4 * i)) & 15];
	*p++ = '.';
	for (size_t i = 0; i < c->knl; i++) {
		v = v << 8 | k[i];
		for (bits += 8; bits >= 6; bits -= 6)
			*p++ = b64url[(v >> (bits - 6)) & 63];
	}
	if (bits)
		*p++ = b64url[(v << (6 - bits)) & 63];
	*p = '\0';
}

int xrl_lease_id_parse(const char *id, char *rule, size_t rulelen, __u64 *nonce, char *kn,
		       size_t *knl)
{
	const char *d2 = strrchr(id, '.'), *d1, *q;
	size_t o = 0, rl;
	__u32 v = 0;
	int bits = 0;

	if (!d2 || d2 - id < 18 || d2[-17] != '.')
		return -EINVAL;
	d1 = d2 - 17;
	rl = (size_t)(d1 - id);
	if (!rl || rl >= rulelen || rl >= XRL_RULE_NAME_LEN)
		return -EINVAL;
	memcpy(rule, id, rl);
	rule[rl] = '\0';
	*nonce = 0;
	for (q = d1 + 1; q < d2; q++) {
		const char *h = *q ? strchr("0123456789abcdef", *q) : NULL;

		if (!h)
			return -EINVAL;
		*nonce = *nonce << 4 | (__u64)(h - "0123456789abcdef");
	}
	for (q = d2 + 1; *q; q++) {
		const char *b = strchr(b64url, *q);

		if (!b)
			return -EINVAL;
		v = v << 6 | (__u32)(b - b64url);
		bits += 6;
		if (bits >= 8) {
			if (o >= XRL_REDIS_KEY_LITERAL)
				return -EINVAL;
			kn[o++] = (char)((v >> (bits - 8)) & 0xff);
			bits -= 8;
		}
	}
	if (!o)
		return -EINVAL;
	*knl = o;
	return 0;
}

/*
 * Refused by a concurrency rule (the first without room): Retry-After is
 * the time until the earliest lease of its key runs out, at least 1 s and
 * at most 30 s (a slot is usually given back long before its lease_ttl).
 * A rule on the global key is the service's capacity: 503 (d->shed); one
 * keyed per caller is the caller's own doing: 429 (docs/policy.md).
 */
static void conc_refuse(struct xrl_limiter *l, struct xrl_conc_item *ci, int nc, __u64 now,
			struct xrl_decision *d)
{
	for (int i = 0; i < nc; i++) {
		const struct xrl_http_rule *r = ci[i].r;
		__u64 w = ci[i].first_exp > now ? ci[i].first_exp - now : 0;

		if (ci[i].ok || r->shadow)
			continue;
		d->allowed = false;
		d->conc = true;
		d->shed = r->key_kind == XRL_KEY_GLOBAL;
		d->rule = r;
		d->limit = r->concurrency;
		d->remaining = 0;
		d->retry_after_s = ceil_s(w < 30 * XRL_NSEC_PER_SEC ? w : 30 * XRL_NSEC_PER_SEC);
		if (d->retry_after_s < 1)
			d->retry_after_s = 1;
		d->reset_s = d->retry_after_s;
		break;
	}
	STAT_ADD(l, refused, 1);
	for (int i = 0; i < nc; i++)
		if (!ci[i].ok && ci[i].r->shadow)
			shadow_refusal(l, d, ci[i].r);
}

/* The slots a decision took, once its buckets decided: given back if one
 * refused, else handed out as lease ids; shadow rules without room counted. */
static void conc_conclude(struct xrl_limiter *l, struct xrl_conc_item *ci, int nc,
			  struct xrl_decision *d)
{
	for (int i = 0; i < nc; i++) {
		if (!ci[i].taken) {
			if (!ci[i].ok && ci[i].r->shadow)
				shadow_refusal(l, d, ci[i].r);
			continue;
		}
		if (!d->allowed)
			xrl_lease_release(l->leases, ci[i].k, ci[i].nonce, NULL);
		else
			lease_id(&ci[i], d->lease[d->n_leases++]);
	}
}

/*
 * A decision with slots that went to Redis (cfg_mu held). Answered:
 * gcra.lua took the slots only if every rule admitted, so a refusal has
 * nothing to give back. Not answered: each concurrency rule per its
 * on_backend_error (closed: 503; local: a slot in this instance's memory,
 * given back if a bucket refuses; open: admitted without a slot), then
 * the buckets as lim_finish decides them.
 */
static void lim_finish_conc(struct xrl_limiter *l, struct xrl_lim_item *it, int m,
			    struct xrl_conc_item *ci, int nc, int st, __u64 now,
			    struct xrl_decision *d)
{
	struct xrl_conc_item loc[XRL_HTTP_MAX_MATCH];
	int k = 0;

	if (m == 1 && !nc && it[0].post) {
		lim_post_finish(l, it, st, now, d);
		return;
	}
	for (int i = 0; st == J_OK && i < nc; i++)
		if (!ci[i].ok && !ci[i].r->shadow) {
			conc_refuse(l, ci, nc, now, d);
			return;
		}
	if (st == J_OK) {
		conclude_count(l, it, m, now, d);
		for (int i = 0; i < nc; i++)
			if (ci[i].taken && d->allowed)
				lease_id(&ci[i], d->lease[d->n_leases++]);
			else if (!ci[i].ok && ci[i].r->shadow)
				shadow_refusal(l, d, ci[i].r);
		return;
	}
	for (int i = 0; i < nc; i++) {
		if (ci[i].r->on_backend_error == XRL_BE_CLOSED) {
			lim_finish(l, &(struct xrl_lim_item){ .r = ci[i].r }, 1, st, now, d);
			d->limit = ci[i].r->concurrency;
			return;
		}
		if (ci[i].r->on_backend_error == XRL_BE_LOCAL)
			loc[k++] = ci[i];
	}
	if (k && !xrl_lease_acquire(l->leases, loc, k, now)) {
		d->backend_error = true;
		STAT_ADD(l, backend_errors, 1);
		STAT_ADD(l, fallback_local, 1);
		conc_refuse(l, loc, k, now, d);
		return;
	}
	lim_finish(l, it, m, st, now, d);
	conc_conclude(l, loc, k, d);
}

/*
 * Memory (cfg_mu held): slots first, then buckets. A refusal by either
 * leaves nothing taken: slots are given back exactly, and the buckets are
 * not charged when a slot was refused.
 */
static void mem_decide(struct xrl_limiter *l, struct xrl_lim_item *it, int m,
		       struct xrl_conc_item *ci, int nc, __u64 now, struct xrl_decision *d)
{
	if (nc && !xrl_lease_acquire(l->leases, ci, nc, now)) {
		conc_refuse(l, ci, nc, now, d);
		return;
	}
	xrl_store_decide(l->mem, it, m, now);
	conclude_count(l, it, m, now, d);
	conc_conclude(l, ci, nc, d);
}

/*
 * The debt of a post-paid cost in ns of rule r's bucket: cost * emit_ns, at
 * most tau (an empty bucket). A cost is up to 10^8 and emit_ns up to a day
 * (8.64e13 ns), so the product can pass 2^64: wrapped, a cost of millions
 * at 1/h was a fraction of a token, or made the bucket full again.
 */
static __u64 post_paid_inc(const struct xrl_http_rule *r, __u32 cost)
{
	if (r->g.emit_ns && cost > r->g.tau_ns / r->g.emit_ns)
		return r->g.tau_ns;
	return (__u64)cost * r->g.emit_ns;
}

/* Charge inc to bucket k of rule r (post-paid): at most to an empty bucket. */
static void mem_charge(struct xrl_limiter *l, const struct xrl_http_rule *r, struct xrl_kd k,
		       __u64 inc, __u64 now)
{
	struct xrl_shard *sh = xrl_store_shard(l->mem, k);
	struct xrl_slot *x;
	__u64 t;

	pthread_mutex_lock(&sh->mu);
	x = xrl_store_slot(l->mem, sh, k, now, ~0ULL);
	t = (x->v > now ? x->v : now) + inc;
	x->v = t < now + r->g.tau_ns ? t : now + r->g.tau_ns;
	pthread_mutex_unlock(&sh->mu);
}

/* ---- the backends ---------------------------------------------------------- */

/* A backend's answer for it[0..m) and ci[0..nc) (backend.h's completion;
 * cfg_mu held): d as each rule's answer, or its on_backend_error. */
static void lim_done(void *ctx, struct xrl_lim_item *it, int m, struct xrl_conc_item *ci, int nc,
		     int st, __u64 now, struct xrl_decision *d)
{
	lim_finish_conc(ctx, it, m, ci, nc, st, now, d);
}

/* Cost: the memory store's lookups (a shard's mutex, at most PROBE slots an
 * item), the lease store's likewise for slot sets; no syscall. */
static int mem_decide_op(void *be, struct xrl_redis_pipe *p, struct xrl_lim_item *it, int m,
			 struct xrl_conc_item *ci, int nc, struct xrl_decision *d,
			 const struct xrl_limiter_wait *w, const struct xrl_backend_done *done)
{
	struct xrl_limiter *l = be;

	mem_decide(l, it, m, ci, nc, lim_now(l), d);
	return 0;
}

static int mem_charge_op(void *be, struct xrl_redis_pipe *p, struct xrl_lim_item *it,
			 struct xrl_decision *d, const struct xrl_limiter_wait *w,
			 const struct xrl_backend_done *done)
{
	struct xrl_limiter *l = be;

	mem_charge(l, it->r, it->k, it->inc, lim_now(l));
	return 0;
}

/* The breaker of the Redis this limiter last used (none: closed): a reload
 * from redis:// to memory leaves it as it was. */
static int mem_health(void *be)
{
	struct xrl_limiter *l = be;

	return xrl_redis_ops.health(l->rd);
}

/* Memory: decided in the call, under the caller's cfg_mu. Its leases are
 * given back by release_prepare, every one of them: no release here. */
static const struct xrl_backend_ops mem_ops = {
	.name = "memory",
	.at_once = true,
	.decide = mem_decide_op,
	.charge = mem_charge_op,
	.health = mem_health,
};

/* The backend of l->cfg (cfg_mu held for writing, or l not yet shared). */
static void lim_pick(struct xrl_limiter *l)
{
	l->ops = l->cfg.redis ? &xrl_redis_ops : &mem_ops;
}

/* The state ops work on: the limiter's for memory, Redis's otherwise. */
static void *lim_be(struct xrl_limiter *l, const struct xrl_backend_ops *ops)
{
	return ops->at_once ? (void *)l : (void *)l->rd;
}

static const struct xrl_backend_done *lim_completion(struct xrl_limiter *l,
						     struct xrl_backend_done *done)
{
	*done = (struct xrl_backend_done){ .fn = lim_done, .ctx = l };
	return done;
}

/* The rule of that name in force (cfg_mu held), or NULL. */
static const struct xrl_http_rule *rule_named(const struct xrl_limiter *l, const char *name)
{
	for (__u32 i = 0; i < l->cfg.n_rules; i++)
		if (!strcmp(l->cfg.rules[i].name, name))
			return &l->cfg.rules[i];
	return NULL;
}

/*
 * A post-paid charge Redis did or did not take (cfg_mu held): d->allowed
 * says it was charged. Not answered: on_backend_error local charges this
 * instance's bucket; open and closed charge nothing (a charge is never
 * refused, so closed has nothing to close). No decision is counted.
 */
static void lim_post_finish(struct xrl_limiter *l, struct xrl_lim_item *it, int st, __u64 now,
			    struct xrl_decision *d)
{
	d->allowed = st == J_OK && it->ok;
	d->rule = it->r;
	d->limit = it->g.burst;
	if (st == J_OK)
		return;
	STAT_ADD(l, backend_errors, 1);
	d->backend_error = true;
	if (it->r->on_backend_error == XRL_BE_LOCAL) {
		mem_charge(l, it->r, it->k, it->inc, now);
		d->allowed = true;
	}
}

int xrl_limiter_charge_async(struct xrl_limiter *l, struct xrl_redis_pipe *p,
			     const struct xrl_http_rule *r, const char *key, __u32 cost,
			     struct xrl_decision *d, const struct xrl_limiter_wait *w)
{
	const struct xrl_backend_ops *ops;
	struct xrl_backend_done done;
	struct xrl_lim_item it;

	memset(d, 0, sizeof(*d));
	if (!r->has_rate)
		return -EINVAL;
	d->rule = r;
	d->allowed = true;
	if (!cost)
		return 0;
	pthread_rwlock_rdlock(&l->cfg_mu);
	ops = l->ops;
	it = (struct xrl_lim_item){ .r = r,
				    .k = key_digest(l, r, key),
				    .g = r->g,
				    .rate = r->rate,
				    .key = key,
				    .post = true,
				    .ok = true };
	/* the bucket as decisions see it: a key's override's rate and burst */
	xrl_lim_ovr_lookup(l, it.k, &it.g, &it.rate);
	it.inc = it.g.emit_ns && cost > it.g.tau_ns / it.g.emit_ns ? it.g.tau_ns
								     : (__u64)cost * it.g.emit_ns;
	if (ops->at_once)
		ops->charge(l, p, &it, d, w, NULL);
	pthread_rwlock_unlock(&l->cfg_mu);
	if (ops->at_once)
		return 0;
	if (!p) { /* no pipe: as if Redis had failed */
		pthread_rwlock_rdlock(&l->cfg_mu);
		lim_post_finish(l, &it, J_FAIL, lim_now(l), d);
		pthread_rwlock_unlock(&l->cfg_mu);
		return 0;
	}
	return ops->charge(l->rd, p, &it, d, w, lim_completion(l, &done));
}

int xrl_limiter_charge(struct xrl_limiter *l, const struct xrl_http_rule *r, const char *key,
		       __u32 cost)
{
	if (!r->has_rate)
		return -EINVAL;
	if (!cost)
		return 0;
	pthread_rwlock_rdlock(&l->cfg_mu);
	mem_charge(l, r, key_digest(l, r, key), post_paid_inc(r, cost), lim_now(l));
	pthread_rwlock_unlock(&l->cfg_mu);
	return 0;
}

/*
 * The leases of ids given back (cfg_mu held): those this instance holds in
 * memory (the memory backend, or Redis's local fallback) at once, with
 * their cost charged; with Redis, the others into ci[]/names[] for the
 * script (*pnc of them). Ids that are not ids are not held.
 */
static void release_prepare(struct xrl_limiter *l, const char *const *ids, int n, __u32 cost,
			    struct xrl_release *res, struct xrl_conc_item *ci,
			    char (*names)[XRL_RULE_NAME_LEN], int *pnc)
{
	__u64 now = lim_now(l);
	int nc = 0;

	for (int i = 0; i < n; i++) {
		char rule[XRL_RULE_NAME_LEN], kn[XRL_REDIS_KEY_LITERAL];
		const struct xrl_http_rule *r;
		struct xrl_kd rate = { 0, 0 };
		__u64 nonce;
		size_t knl;

		if (xrl_lease_id_parse(ids[i], rule, sizeof(rule), &nonce, kn, &knl))
			continue;
		res->released[i] = xrl_lease_release(l->leases, xrl_lim_set_digest(l, rule, kn, knl),
						     nonce, &rate);
		r = rule_named(l, rule);
		if (!res->released[i] && l->cfg.redis) { /* not a local fallback's: Redis's */
			struct xrl_conc_item *c = &ci[nc];

			memset(c, 0, sizeof(*c));
			memcpy(c->kn, kn, knl);
			c->knl = knl;
			c->nonce = nonce;
			c->idx = (__u8)i;
			c->tau = r && r->has_rate ? r->g.tau_ns : 0;
			c->inc = r && r->has_rate ? (__u64)cost * r->g.emit_ns : 0;
			memcpy(names[nc++], rule, sizeof(rule));
			continue;
		}
		if (res->released[i] && cost && r && r->has_rate && (rate.a || rate.b)) {
			mem_charge(l, r, rate, post_paid_inc(r, cost), now);
			res->charged[i] = true;
		}
	}
	*pnc = nc;
}

int xrl_limiter_release_async(struct xrl_limiter *l, struct xrl_redis_pipe *p,
			      const char *const *ids, int n, __u32 cost, struct xrl_release *res,
			      const struct xrl_limiter_wait *w)
{
	struct xrl_conc_item ci[XRL_HTTP_MAX_MATCH];
	char names[XRL_HTTP_MAX_MATCH][XRL_RULE_NAME_LEN];
	const char *np[XRL_HTTP_MAX_MATCH];
	const struct xrl_backend_ops *ops;
	int nc = 0, rc = 0;

	memset(res, 0, sizeof(*res));
	if (n > XRL_HTTP_MAX_MATCH)
		return -E2BIG;
	res->n = (__u32)n;
	res->cost = cost;
	pthread_rwlock_rdlock(&l->cfg_mu);
	release_prepare(l, ids, n, cost, res, ci, names, &nc);
	for (int i = 0; i < nc; i++)
		np[i] = names[i];
	ops = l->ops;
	if (nc && (!p || !ops->release || !ops->release(l->rd, p, ci, nc, np, res, w)))
		res->backend_error = true;
	else if (nc)
		rc = 1;
	pthread_rwlock_unlock(&l->cfg_mu);
	return rc;
}

/* A blocking call's waiter: its answer is in. */
static void sync_done(void *arg)
{
	*(bool *)arg = true;
}

int xrl_limiter_release(struct xrl_limiter *l, const char *const *ids, int n, __u32 cost,
			struct xrl_release *res)
{
	bool done = false, redis;
	struct xrl_limiter_wait w = { .decided = sync_done, .arg = &done };
	int rc;

	pthread_rwlock_rdlock(&l->cfg_mu);
	redis = l->cfg.redis;
	pthread_rwlock_unlock(&l->cfg_mu);
	if (!redis) /* nothing waits: no pipe, no one-at-a-time */
		return xrl_limiter_release_async(l, NULL, ids, n, cost, res, &w);
	pthread_mutex_lock(&l->sync_mu);
	if (!l->sync_pipe)
		l->sync_pipe = xrl_limiter_pipe_new(l);
	if (!l->sync_pipe) {
		pthread_mutex_unlock(&l->sync_mu);
		return -ENOMEM;
	}
	rc = xrl_limiter_release_async(l, l->sync_pipe, ids, n, cost, res, &w);
	if (rc == 1) {
		xrl_redis_pipe_sync_wait(l->sync_pipe, &done);
		rc = 0;
	}
	pthread_mutex_unlock(&l->sync_mu);
	return rc;
}

/*
 * A check of cost 0 on the memory backend (cfg_mu held): nothing was
 * charged, so no rule answered and d would show a full bucket. Show each
 * bucket as it is instead, the one with the fewest tokens: peeked, not
 * made (a cost 0 still creates no bucket), so it costs a lookup. With
 * Redis that would be a round trip: not done (docs/policy.md).
 */
static void zero_peek(struct xrl_limiter *l, const struct xrl_http_rule *const *rules,
		      const char *const *keys, const __u32 *costs, int n, __u64 now,
		      struct xrl_decision *d)
{
	__u64 best = UINT64_MAX;

	for (int i = 0; i < n; i++) {
		const struct xrl_http_rule *r = rules[i];
		__u64 tat, rem;

		if (costs[i] || !keys[i] || !r->has_rate || r->shadow)
			continue;
		tat = xrl_store_peek(l->mem, key_digest(l, r, keys[i]));
		rem = xrl_gcra_remaining(tat, now, r->g.emit_ns, r->g.tau_ns);
		if (rem >= best)
			continue;
		best = rem;
		d->rule = r;
		d->limit = r->burst;
		d->remaining = rem;
		d->reset_s = ceil_s(xrl_gcra_reset(tat, now));
	}
}

/*
 * Everything before the backend: the items, missing keys, penalties; the
 * memory backend decides here, and so does the over-limit cache. Returns 0
 * when d is the decision, 1 when the backend *pops must decide it[0..*m)
 * and ci[0..*pnc), -E2BIG.
 * Everything that reads l->cfg does so under cfg_mu (a reload swaps it).
 * Cost: a SipHash per rule, the override and penalty lookups only while
 * any is in force, and a read lock; memory adds its store's lookups.
 */
static int prepare(struct xrl_limiter *l, const struct xrl_http_rule *const *rules,
		   const char *const *keys, const __u32 *costs, int n, struct xrl_decision *d,
		   struct xrl_lim_item *it, int *pm, struct xrl_conc_item *ci, int *pnc,
		   const struct xrl_backend_ops **pops)
{
	__u64 now = lim_now(l);
	int m = 0, nc = 0, rc;

	memset(d, 0, sizeof(*d));
	if (n > XRL_HTTP_MAX_MATCH)
		n = XRL_HTTP_MAX_MATCH;
	d->allowed = true;
	d->n_rules = (__u32)n;
	STAT_ADD(l, decisions, 1);
	if (!n) {
		STAT_ADD(l, allowed, 1);
		return 0;
	}

	pthread_rwlock_rdlock(&l->cfg_mu);
	rc = items(l, rules, keys, costs, n, d, it, &m, ci, &nc);
	if (rc) {
		pthread_rwlock_unlock(&l->cfg_mu);
		return rc == 1 ? 0 : rc;
	}
	rc = 0;
	if (xrl_lim_penalty_refuses(l, it, m, now, d)) {
		/* d is the decision */
	} else if (l->ops->at_once) {
		l->ops->decide(l, NULL, it, m, ci, nc, d, NULL, NULL);
		if (d->allowed && !d->rule && costs)
			zero_peek(l, rules, keys, costs, n, now, d);
	} else if (overlimit_refuses(l, it, m, now, d)) {
		/* refused without a round trip (and without a slot) */
	} else if (!m && !nc) { /* nothing to charge: costs of 0, shadow rules without a key */
		conclude_count(l, it, m, now, d);
	} else {
		/* to Redis: the keys are the caller's, gone before the answer, and
		 * a refusal there strikes by the penalty identity: made now (a
		 * round trip costs far more than the hash) */
		for (int i = 0; i < m && l->cfg.penalty.enabled; i++)
			xrl_pen_item(&it[i]);
		*pm = m;
		*pnc = nc; /* Redis takes the slots in the rate decision's call */
		*pops = l->ops;
		rc = 1;
	}
	pthread_rwlock_unlock(&l->cfg_mu);
	return rc;
}

/* ---- public ---------------------------------------------------------------- */

int xrl_limiter_new(const struct xrl_http_cfg *c, struct xrl_limiter **out)
{
	struct xrl_limiter *l = calloc(1, sizeof(*l));
	__u32 cap = c->memory_max_keys ? c->memory_max_keys : 1000000;
	int rc = 0;

	if (!l)
		return -ENOMEM;
	l->cfg = *c;
	/* the bucket identities' key: unknown outside this process */
	if (getrandom(l->sip, sizeof(l->sip), 0) != sizeof(l->sip)) {
		int err = -errno;

		free(l);
		return err ? err : -EIO;
	}
	pthread_rwlock_init(&l->cfg_mu, NULL);
	pthread_mutex_init(&l->sync_mu, NULL);
	/* memory: the buckets (or the local fallback when the backend is Redis) */
	l->mem = xrl_store_new(c->redis ? cap / 4 : cap);
	l->overlimit = xrl_store_new(c->redis ? cap / 4 : 1024);
	l->pen_block = xrl_store_new(cap / 16);
	l->pen_state = xrl_store_new(cap / 16);
	l->leases = xrl_lease_store_new(cap / 16 > 1024 ? cap / 16 : 1024);
	l->pens = xrl_pen_ledger_new();
	l->ovr = xrl_ovr_new();
	l->callers = xrl_callers_new(cap / 4);
	if (!l->mem || !l->overlimit || !l->pen_block || !l->pen_state || !l->leases || !l->pens ||
	    !l->ovr || !l->callers)
		rc = -ENOMEM;
	else
		rc = xrl_redis_new(&(struct xrl_lim_env){ .cfg = &l->cfg,
							  .cfg_mu = &l->cfg_mu,
							  .clock = &l->clock,
							  .st = &l->st },
				   &l->rd);
	if (rc) {
		xrl_limiter_free(l);
		return rc;
	}
	lim_pick(l);
	*out = l;
	return 0;
}

void xrl_limiter_free(struct xrl_limiter *l)
{
	if (!l)
		return;
	xrl_limiter_pipe_free(l->sync_pipe);
	xrl_redis_free(l->rd);
	xrl_store_free(l->mem);
	xrl_store_free(l->overlimit);
	xrl_store_free(l->pen_block);
	xrl_store_free(l->pen_state);
	xrl_lease_store_free(l->leases);
	free(l->pens);
	xrl_ovr_free(l->ovr);
	xrl_callers_free(l->callers);
	free(l);
}

void xrl_limiter_set_cfg(struct xrl_limiter *l, const struct xrl_http_cfg *c)
{
	pthread_rwlock_wrlock(&l->cfg_mu);
	l->cfg = *c;
	lim_pick(l);
	xrl_redis_set_cfg(l->rd);
	pthread_rwlock_unlock(&l->cfg_mu);
}

struct json_t *xrl_limiter_peaks_take(struct xrl_limiter *l)
{
	struct json_t *j;

	pthread_rwlock_rdlock(&l->cfg_mu);
	j = xrl_callers_take(l->callers, &l->cfg);
	pthread_rwlock_unlock(&l->cfg_mu);
	return j;
}

void xrl_limiter_set_clock(struct xrl_limiter *l, const _Atomic __u64 *now_ns)
{
	l->clock = now_ns;
}

int xrl_limiter_breaker_state(struct xrl_limiter *l)
{
	const struct xrl_backend_ops *ops;

	pthread_rwlock_rdlock(&l->cfg_mu);
	ops = l->ops;
	pthread_rwlock_unlock(&l->cfg_mu);
	return ops->health(lim_be(l, ops));
}

void xrl_limiter_get_stats(struct xrl_limiter *l, struct xrl_limiter_stats *s)
{
	/* field by field: each counter is read atomically, the set need not be */
	for (size_t i = 0; i < sizeof(*s) / sizeof(__u64); i++)
		((__u64 *)s)[i] = __atomic_load_n(&((__u64 *)&l->st)[i], __ATOMIC_RELAXED);
	s->keys = atomic_load(&l->mem->keys);
	s->evictions_idle = atomic_load(&l->mem->ev_idle);
	s->evictions_active = atomic_load(&l->mem->ev_active);
	s->leases_full = xrl_lease_store_full(l->leases);
}

/* The request path's decision. Cost: prepare's, then the backend's decide
 * (memory: nothing more; Redis: a job queued, no syscall). */
int xrl_limiter_decide_async(struct xrl_limiter *l, struct xrl_redis_pipe *p,
			     const struct xrl_http_rule *const *rules, const char *const *keys,
			     const __u32 *costs, int n, struct xrl_decision *d,
			     const struct xrl_limiter_wait *w)
{
	struct xrl_lim_item it[XRL_HTTP_MAX_MATCH];
	struct xrl_conc_item ci[XRL_HTTP_MAX_MATCH];
	const struct xrl_backend_ops *ops = NULL;
	struct xrl_backend_done done;
	int m = 0, nc = 0, rc;

	rc = prepare(l, rules, keys, costs, n, d, it, &m, ci, &nc, &ops);
	if (rc != 1)
		return rc;
	return ops->decide(lim_be(l, ops), p, it, m, ci, nc, d, w, lim_completion(l, &done));
}

/* One decision at a time on the limiter's own pipe, driven by poll(). */
int xrl_limiter_decide(struct xrl_limiter *l, const struct xrl_http_rule *const *rules,
		       const char *const *keys, const __u32 *costs, int n, struct xrl_decision *d)
{
	bool done = false;
	struct xrl_limiter_wait w = { .decided = sync_done, .arg = &done };
	struct xrl_redis_pipe *p;
	int rc;

	pthread_mutex_lock(&l->sync_mu);
	if (!l->sync_pipe)
		l->sync_pipe = xrl_limiter_pipe_new(l);
	p = l->sync_pipe;
	if (!p) {
		pthread_mutex_unlock(&l->sync_mu);
		return -ENOMEM;
	}
	rc = xrl_limiter_decide_async(l, p, rules, keys, costs, n, d, &w);
	if (rc == 1) {
		xrl_redis_pipe_sync_wait(p, &done);
		rc = 0;
	}
	pthread_mutex_unlock(&l->sync_mu);
	return rc;
}

struct xrl_redis_pipe *xrl_limiter_pipe_new(struct xrl_limiter *l)
{
	return xrl_redis_pipe_new(l->rd);
}

void xrl_limiter_backend_metrics(struct xrl_limiter *l, struct xrl_buf *b)
{
	xrl_cluster_metrics(l->rd, b);
}
