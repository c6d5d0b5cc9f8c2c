/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * backend.h - where the limiter's buckets and slots are kept (memory,
 * Redis, Redis Cluster), as the limiter asks of it: the items of a
 * decision, the operations every backend offers, and the completion a
 * decision comes back through. The limiter calls down through the
 * operations; a backend never names the limiter, it calls the completion
 * it was handed.
 */
#ifndef XRL_HTTP_BACKEND_H
#define XRL_HTTP_BACKEND_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "http/http.h"

/*
 * A bucket's identity: 128 bits of SipHash-2-4 over (rule name, NUL, the
 * whole key) under a key drawn from getrandom() when the limiter is made.
 * Keyed, so collisions cannot be searched for offline; over the whole key,
 * so keys that share a prefix (JWTs) never merge. The low 6 bits of a pick
 * its shard and the next ones its first slot; a slot keeps `a` whole and 48
 * bits of `b`: 118 bits tell keys of one shard apart, so two keys share a
 * bucket only with odds of about n^2 / 2^119 (1e-23 for a million keys).
 */
struct xrl_kd {
	__u64 a, b;
};

struct xrl_lim_item {
	const struct xrl_http_rule *r;
	struct xrl_kd k;	  /* the bucket's identity */
	struct xrl_gcra_params g; /* the rule's, or the key's override */
	struct xrl_rate rate;	  /* likewise, for the answer's sentence */
	__u64 inc;	 /* cost * emit, ns */
	bool post;	 /* a post-paid charge: never refused, capped at a drained bucket */
	__u64 tat;	 /* before */
	__u64 new_tat;	 /* after an admit */
	bool ok;
	const char *key;
	/* with penalties on: the penalty's identity, the same in every
	 * instance (SHA-256 of the key, mixed with the rule's name; see
	 * limiter/penalty_ledger.c), and the first 16 bytes of SHA-256 of the key */
	struct xrl_kd pk;
	__u8 kh[16];
	bool pk_set; /* pk and kh computed (xrl_pen_item, only when needed) */
};

/* "$NNN\r\nxrl:{" RULE ":" KEY "}\r\n" per key; longer keys by their SHA-256 */
#define XRL_REDIS_KEY_LITERAL 128

/*
 * A concurrency rule's part of a decision: the set of slots of (rule, key
 * name), the lease it takes, and what the set held (for Retry-After).
 */
struct xrl_conc_item {
	const struct xrl_http_rule *r;
	struct xrl_kd k;    /* the set: rule and key name (memory) */
	struct xrl_kd rate; /* the rule's bucket of this key (post-paid cost) */
	__u64 nonce;	    /* the lease's id */
	__u64 first_exp;    /* the set's earliest lease runs out (monotonic ns); 0: none */
	__u32 held;	    /* leases of the set before this one */
	bool ok;	    /* there was room */
	bool taken;	    /* the lease is held now */
	bool full;	    /* the store had no room for a new key */
	__u8 idx;	    /* a release: the lease's place in the request */
	__u64 tau, inc;	    /* a release: its rule's tau and the post-paid cost x emit */
	size_t knl;
	char kn[XRL_REDIS_KEY_LITERAL]; /* the key's name, as Redis names it */
};

/* How a backend answered a decision. J_BADKEY: Redis answered, but a key of
 * the decision is not a string (not Redis failing: the decision falls back
 * alone, the breaker is not told). J_SKIP: the breaker is open. The others
 * are a job's states on the way (redis/). */
enum { J_OK = 0, J_FAIL, J_SKIP, J_NOSCRIPT, J_PENDING, J_BADKEY, J_MOVED, J_ASK };

/* What the limiter lends a backend: its configuration (read under *cfg_mu;
 * a reload swaps it), its clock (tests), its counters (atomic adds). */
struct xrl_lim_env {
	const struct xrl_http_cfg *cfg;
	pthread_rwlock_t *cfg_mu;
	const _Atomic __u64 *const *clock; /* *clock NULL: CLOCK_MONOTONIC */
	struct xrl_limiter_stats *st;
};

static inline __u64 xrl_env_now(const struct xrl_lim_env *e)
{
	return *e->clock ? atomic_load(*e->clock) : xrl_now_ns();
}

#define ENV_STAT_ADD(e, f, n) __atomic_fetch_add(&(e)->st->f, (n), __ATOMIC_RELAXED)

/*
 * A decision's completion: the backend's answer st (J_OK, or J_FAIL,
 * J_SKIP, J_BADKEY: each rule then falls back per its on_backend_error)
 * for its items it[0..m) and slot sets ci[0..nc), turned into d by whoever
 * handed the completion in. Called with *cfg_mu held for reading, before
 * the waiter's w->decided.
 */
struct xrl_backend_done {
	void (*fn)(void *ctx, struct xrl_lim_item *it, int m, struct xrl_conc_item *ci, int nc,
		   int st, __u64 now, struct xrl_decision *d);
	void *ctx;
};

/*
 * A backend's operations; be is the backend's own state. A remote one
 * (Redis, Redis Cluster) queues on the caller's pipe p and answers later;
 * memory answers in the call (at_once, *cfg_mu held by the caller).
 *
 * decide: it[0..m) (keys copied: the caller's are gone once it returns) and
 *   slot sets ci[0..nc); 1: queued, done->fn then w->decided once answered;
 *   0: d is the answer already (done->fn called with J_FAIL when there was
 *   no memory to queue it).
 * charge: a post-paid charge, it[0] alone with it->post set; as decide.
 * release: give back the slot sets ci[0..nc) (rules[i] their rule names)
 *   and charge their post-paid cost; 1: queued, res filled before
 *   w->decided; 0: not taken (res->backend_error is then the caller's to set).
 * health: 0 closed, 1 open, 2 half-open (the breaker).
 */
struct xrl_backend_ops {
	const char *name;
	bool at_once;
	int (*decide)(void *be, struct xrl_redis_pipe *p, struct xrl_lim_item *it, int m,
		      struct xrl_conc_item *ci, int nc, struct xrl_decision *d,
		      const struct xrl_limiter_wait *w, const struct xrl_backend_done *done);
	int (*charge)(void *be, struct xrl_redis_pipe *p, struct xrl_lim_item *it,
		      struct xrl_decision *d, const struct xrl_limiter_wait *w,
		      const struct xrl_backend_done *done);
	int (*release)(void *be, struct xrl_redis_pipe *p, struct xrl_conc_item *ci, int nc,
		       const char *const *rules, struct xrl_release *res,
		       const struct xrl_limiter_wait *w);
	int (*health)(void *be);
};

#endif /* XRL_HTTP_BACKEND_H */
