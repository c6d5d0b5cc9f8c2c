/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * limiter_int.h - the limiter's own parts, shared between the files of
 * limiter/ and nothing else (the unit tests aside): its state, the memory
 * store's and lease store's tables, and what each of its files offers the
 * others. What a backend sees of the limiter is backend.h.
 */
#ifndef XRL_LIMITER_INT_H
#define XRL_LIMITER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "http/backend.h"

#define SHARDS 64
#define PROBE  8

/*
 * A slot: the digest (a, and the top 48 bits of b in `h` above the second
 * it was last used, mod 2^16, so that eviction can spare the keys in use);
 * and the bucket's TAT (or "until") in `v`. 24 bytes.
 */
struct xrl_slot {
	__u64 a; /* kd.a */
	__u64 h; /* kd.b >> 16 << 16 | last-use second; 0 = empty */
	__u64 v; /* TAT or "until", CLOCK_MONOTONIC ns */
};

#define TAG(h) ((h) >> 16)

struct xrl_shard {
	pthread_mutex_t mu;
	struct xrl_slot *slots;
	__u32 mask;
	char pad[64 - sizeof(pthread_mutex_t) % 64];
} __attribute__((aligned(64)));

struct xrl_store {
	struct xrl_shard sh[SHARDS];
	_Atomic __u64 keys, ev_idle, ev_active;
};

struct xrl_redis;

struct xrl_limiter {
	struct xrl_http_cfg cfg; /* copy; swapped under cfg_mu */
	pthread_rwlock_t cfg_mu;
	struct xrl_store *mem;	     /* memory backend, or local fallback */
	struct xrl_store *overlimit; /* redis: key -> TAT it was refused against */
	struct xrl_store *pen_block; /* key -> blocked until */
	struct xrl_store *pen_state; /* key -> packed strikes */
	__u64 sip[2];		     /* SipHash key of bucket identities */
	const _Atomic __u64 *clock;  /* tests: the time; NULL: the clocks */
	struct xrl_redis *rd; /* Redis's state (redis/), also while the backend is memory */
	/* the backend of cfg (cfg_mu): memory (be = this), Redis or a cluster (be = rd) */
	const struct xrl_backend_ops *ops;
	void *be;
	struct xrl_lease_store *leases;	  /* concurrency slots (memory; local fallback) */
	_Atomic __u64 lease_ctr;	  /* lease nonces: SipHash of a count */
	pthread_mutex_t sync_mu;	  /* xrl_limiter_decide: one at a time */
	struct xrl_redis_pipe *sync_pipe; /* on a pipe of its own */
	struct xrl_limiter_stats st;	  /* updated with atomic adds */
	struct xrl_fleet *fleet;	  /* set once, before the first decision */
	struct xrl_pen_ledger *pens;	  /* penalties, for xrlctl penalty list|del */
	struct xrl_ovr_tab *ovr;	  /* per-key overrides (override.c) */
	/* the latest end of a penalty put in pen_block (lim_now ns): until it
	 * passes a decision looks its keys up there (and hashes them first);
	 * after it none can be in force, and a decision skips both */
	_Atomic __u64 pen_until;
	struct xrl_callers *callers; /* callers' peaks this epoch (callers.c) */
};

/* The limiter's now on CLOCK_MONOTONIC (or the test's clock). */
static inline __u64 lim_now(const struct xrl_limiter *l)
{
	return l->clock ? atomic_load(l->clock) : xrl_now_ns();
}

#define STAT_ADD(l, f, n) __atomic_fetch_add(&(l)->st.f, (n), __ATOMIC_RELAXED)

static inline __u64 ceil_s(__u64 ns)
{
	return (ns + XRL_NSEC_PER_SEC - 1) / XRL_NSEC_PER_SEC;
}

/* ---- store.c --------------------------------------------------------------- */
/*
 * A sharded table's allocation (store.c, lease.c): size bytes, zeroed and
 * 64-byte aligned (each shard on its own cache lines); *per is the entries
 * a shard: a power of two, 16 or more, the first whose SHARDS shards hold
 * n, but no more than cap (a power of two). NULL when out of memory.
 */
void *xrl_shards_alloc(size_t size, __u32 n, __u32 cap, __u32 *per);
struct xrl_store *xrl_store_new(__u32 max_keys);
void xrl_store_free(struct xrl_store *s);
struct xrl_shard *xrl_store_shard(struct xrl_store *s, struct xrl_kd k);
struct xrl_slot *xrl_store_slot(struct xrl_store *s, struct xrl_shard *sh, struct xrl_kd k,
				__u64 now, __u64 cheap);
__u64 xrl_store_peek(struct xrl_store *s, struct xrl_kd k);
void xrl_store_put(struct xrl_store *s, struct xrl_kd k, __u64 v, __u64 now);
void xrl_store_update(struct xrl_store *s, struct xrl_kd k, __u64 v);
/* Check all items against one store, then take from all or from none. */
void xrl_store_decide(struct xrl_store *s, struct xrl_lim_item *it, int n, __u64 now);

/* ---- lease.c --------------------------------------------------------------- */
struct xrl_lease_store;
struct xrl_lease_store *xrl_lease_store_new(__u32 max_sets);
void xrl_lease_store_free(struct xrl_lease_store *s);
int xrl_lease_acquire(struct xrl_lease_store *s, struct xrl_conc_item *it, int n, __u64 now);
bool xrl_lease_release(struct xrl_lease_store *s, struct xrl_kd k, __u64 nonce,
		       struct xrl_kd *rate);
__u64 xrl_lease_store_full(struct xrl_lease_store *s);
/* ---- callers.c ------------------------------------------------------------ */
struct xrl_callers;
struct json_t;
struct xrl_callers *xrl_callers_new(__u32 max_callers);
void xrl_callers_free(struct xrl_callers *t);
void xrl_callers_note(struct xrl_callers *t, const struct xrl_lim_item *it, int m, __u64 now);
struct json_t *xrl_callers_take(struct xrl_callers *t, const struct xrl_http_cfg *cfg);

/* ---- digest.c -------------------------------------------------------------- */
/* The digest of (rule name, key): a bucket's identity. */
struct xrl_kd xrl_lim_digest(const struct xrl_limiter *l, const char *rule, const char *key);
/* The digest of rule's slot set of the key whose Redis name is kn[0..knl). */
struct xrl_kd xrl_lim_set_digest(const struct xrl_limiter *l, const char *rule, const char *kn,
				 size_t knl);

/* ---- override.c ------------------------------------------------------------ */
struct xrl_ovr_tab;
struct xrl_ovr_tab *xrl_ovr_new(void);
void xrl_ovr_free(struct xrl_ovr_tab *t);
/* k's override in force: true with *g and *rate set (cfg_mu held or not). */
bool xrl_lim_ovr_lookup(struct xrl_limiter *l, struct xrl_kd k, struct xrl_gcra_params *g,
			struct xrl_rate *rate);

/* ---- penalty.c ------------------------------------------------------------- */
/* The identity of rule's penalty for the key whose SHA-256 starts kh. */
struct xrl_kd xrl_pen_identity(const char *rule, const __u8 kh[16]);
/* it's pk and kh, once (SHA-256 of the key): false when they are not set
 * and can no longer be (the key is gone: never after prepare()) */
bool xrl_pen_item(struct xrl_lim_item *it);
/* A penalty of pk until until (lim_now ns) into pen_block. */
void xrl_pen_block(struct xrl_limiter *l, struct xrl_kd pk, __u64 until, __u64 now);
/* A refusal's strike: true when it made a penalty, of *pttl ns at *plevel. */
bool xrl_lim_penalty_strike(struct xrl_limiter *l, struct xrl_lim_item *x, __u64 now,
			    __u64 *pttl, __u32 *plevel);
bool xrl_lim_penalty_refuses(struct xrl_limiter *l, struct xrl_lim_item *it, int m, __u64 now,
			     struct xrl_decision *d);
/* Forget the escalation state of pk. */
void xrl_lim_penalty_forget(struct xrl_limiter *l, struct xrl_kd pk);
/* Set pk's offence count to at least level. */
void xrl_lim_penalty_level(struct xrl_limiter *l, struct xrl_kd pk, __u32 level, __u64 now);

/* ---- penalty_ledger.c ------------------------------------------------------ */
struct xrl_pen_ledger *xrl_pen_ledger_new(void);
/* A penalty was made here (until: monotonic ns): listed, and told to the fleet. */
void xrl_pen_made(struct xrl_limiter *l, const struct xrl_lim_item *x, __u64 until, __u64 ttl,
		  __u32 level, __u64 now);

/* ---- node_share.c ---------------------------------------------------------- */
/* Local fallback of a fleet: loc's rules replaced by copies at rate/live
 * and burst/live (floored at 1 token) in tmp; orig keeps the originals.
 * Returns live (1: nothing changed). */
__u32 xrl_lim_share(struct xrl_limiter *l, struct xrl_lim_item *loc, int k,
		    struct xrl_http_rule *tmp, const struct xrl_http_rule **orig);
/* xrl_lim_share at a given live count (the unit tests'). */
__u32 xrl_lim_share_at(struct xrl_lim_item *loc, int k, struct xrl_http_rule *tmp,
		       const struct xrl_http_rule **orig, __u32 live);
/* d's rule pointers back from the copies to the rules. */
void xrl_lim_unshare(int k, const struct xrl_http_rule *tmp, const struct xrl_http_rule **orig,
		     struct xrl_decision *d);

#endif /* XRL_LIMITER_INT_H */
