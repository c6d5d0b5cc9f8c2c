/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * limiter_int.h - the limiter's parts, shared between its files and nothing
 * else: limiter.c (deciding, the public calls), store.c (the memory store),
 * penalty.c (key escalation), redis/script.c (the script and what is sent
 * to it and read back), redis/pipe.c (the connection, batches, breaker),
 * redis/cluster.c and redis/cluster_lease.c (Redis Cluster).
 */
#ifndef XRL_LIMITER_INT_H
#define XRL_LIMITER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "http/http.h"

#define SHARDS 64
#define PROBE  8

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

enum { BRK_CLOSED = 0, BRK_OPEN = 1, BRK_HALF = 2 };

/* A breaker: the limiter's (one Redis), or a cluster node's. */
struct xrl_brk {
	_Atomic int state;
	_Atomic __u64 until; /* open until (monotonic ns) */
	_Atomic __u32 fails;
	_Atomic int probe; /* a half-open probe is in flight */
};

struct xrl_cluster;
struct xrl_cpipe;
struct xrl_cnode;

struct xrl_limiter {
	struct xrl_http_cfg cfg; /* copy; swapped under cfg_mu */
	pthread_rwlock_t cfg_mu;
	struct xrl_store *mem;	     /* memory backend, or local fallback */
	struct xrl_store *overlimit; /* redis: key -> TAT it was refused against */
	struct xrl_store *pen_block; /* key -> blocked until */
	struct xrl_store *pen_state; /* key -> packed strikes */
	__u64 sip[2];		     /* SipHash key of bucket identities */
	const _Atomic __u64 *clock;  /* tests: the time; NULL: the clocks */
	struct xrl_brk brk;
	struct xrl_cluster *cl; /* redis-cluster://: the slot map, the nodes */
	char sha[41];	       /* SHA1 of xrl_lua_gcra, for EVALSHA */
	__u64 auth;	       /* xrl_redis_auth_tag(&cfg) */
	char *load_cmd;	       /* SCRIPT LOAD xrl_lua_gcra, formatted */
	size_t load_len;
	struct xrl_lease_store *leases;	  /* concurrency slots (memory; local fallback) */
	_Atomic __u64 lease_ctr;	  /* lease nonces: SipHash of a count */
	pthread_mutex_t sync_mu;	  /* xrl_limiter_decide: one at a time */
	struct xrl_redis_pipe *sync_pipe; /* on a pipe of its own */
	struct xrl_limiter_stats st;	  /* updated with atomic adds */
	struct xrl_fleet *fleet;	  /* set once, before the first decision */
	struct xrl_pen_list *pens;	  /* penalties, for xrlctl penalty list|del */
	struct xrl_ovr_tab *ovr;	  /* per-key overrides (override.c) */
	/* the latest end of a penalty put in pen_block (lim_now ns): until it
	 * passes a decision looks its keys up there (and hashes them first);
	 * after it none can be in force, and a decision skips both */
	_Atomic __u64 pen_until;
};

/* The limiter's now on CLOCK_MONOTONIC (or the test's clock). */
static inline __u64 lim_now(const struct xrl_limiter *l)
{
	return l->clock ? atomic_load(l->clock) : xrl_now_ns();
}

#define STAT_ADD(l, f, n) __atomic_fetch_add(&(l)->st.f, (n), __ATOMIC_RELAXED)

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
	 * penalty_ledger.c), and the first 16 bytes of SHA-256 of the key */
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

static inline __u64 ceil_s(__u64 ns)
{
	return (ns + XRL_NSEC_PER_SEC - 1) / XRL_NSEC_PER_SEC;
}

/* ---- Redis: constants, jobs ------------------------------------------------ */

#define REDIS_EPOCH_S 1704067200ULL /* 2024-01-01T00:00:00Z */
#define KEYS_MAX      7168 /* a decision's keys, RESP (8 buckets and 8 slot sets at most) */
#define ARGS_MAX      1536 /* a decision's tau and inc, limit, ttl and lease, RESP */
#define CALL_MAX      XRL_REDIS_CALL_MAX
#define FREE_JOBS_MAX 1024

/* "$NNN\r\nxrl:{" RULE ":" KEY "}\r\n" per key; "$NN\r\n" -N.NNN "\r\n" twice */
_Static_assert(XRL_REDIS_KEY_LITERAL >= 65, "a digest's name fits");
_Static_assert(2 * XRL_HTTP_MAX_MATCH *
			       (6 + 7 + XRL_RULE_NAME_LEN + 1 + XRL_REDIS_KEY_LITERAL + 5) <=
		       KEYS_MAX,
	       "KEYS_MAX holds a decision's keys");
_Static_assert(XRL_HTTP_MAX_MATCH *(2 * (5 + 26 + 2) + 3 * (5 + 26 + 2)) <= ARGS_MAX,
	       "ARGS_MAX holds a decision's arguments");

/* J_BADKEY: Redis answered, but a key of the decision is not a string (not
 * Redis failing: the decision falls back alone, the breaker is not told) */
enum { J_OK = 0, J_FAIL, J_SKIP, J_NOSCRIPT, J_PENDING, J_BADKEY, J_MOVED, J_ASK };

/* What a job asks of Redis: a decision (gcra.lua), or, in a cluster, the
 * refund of a decision's part that a later part refused (refund.lua). */
enum { JK_DECIDE = 0, JK_REFUND };

/* The answers a batch awaits before its own: a new connection's AUTH,
 * SELECT, SCRIPT LOAD, or the SCRIPT LOAD after NOSCRIPT (HS_SKIP). */
enum { HS_SKIP = 0, HS_AUTH, HS_SELECT, HS_LOAD, HS_LOAD_NODE };

/*
 * One decision waiting for Redis: its items, its part of the batch's
 * EVALSHA already in the wire format (its keys, and its tau and inc per
 * key), where the answer goes.
 */
/*
 * Spare blocks of a pipe (jobs, cluster requests) kept for reuse, at most a
 * bound of them: each block starts with its next pointer (the first member
 * of struct xrl_redis_job and struct xrl_creq). redis/pipe.c.
 */
struct xrl_freelist {
	void *head;
	__u32 n;
};
/* A spare block, or a new one of size bytes (malloc); NULL: out of memory. */
void *xrl_fl_get(struct xrl_freelist *fl, size_t size);
/* b kept as a spare, or freed if max are kept already. */
void xrl_fl_put(struct xrl_freelist *fl, void *b, __u32 max);
/* Free every spare. */
void xrl_fl_drain(struct xrl_freelist *fl);

struct xrl_redis_job {
	struct xrl_redis_job *next;
	struct xrl_limiter_wait w;
	struct xrl_decision *d;
	struct xrl_lim_item it[XRL_HTTP_MAX_MATCH];
	int m;
	int nc;			 /* its slots (concurrency rules), in ci */
	struct xrl_release *res; /* a release of nc leases (no decision): its answer */
	int st;	    /* J_* */
	int call_n; /* first job of a call: the call's decisions */
	__u64 mnow; /* the batch's now, monotonic (ns) */
	/* a cluster's: the slot of its keys (-1: one Redis), its kind, the
	 * request it is a part of, ASKING ahead of it, the node a redirect
	 * named, redirects followed */
	int slot;
	__u8 kind;
	bool asking, ask_sent;
	bool one_slot; /* not in a node's call of several slots (after "non local key";
			* slot sets, a release: the node script decides rates only) */
	__u16 redir;
	__u8 hops;
	struct xrl_creq *cr;
	struct xrl_crel *crel; /* a cluster's release or give-back (cluster_lease.c) */
	size_t klen, alen;
	/* after klen: a cluster's job_get clears what is before it (nc = 0) */
	struct xrl_conc_item ci[XRL_HTTP_MAX_MATCH];
	char kb[KEYS_MAX];
	char ab[ARGS_MAX];
};

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
__u32 xrl_lease_held(struct xrl_lease_store *s, struct xrl_kd k, __u64 now);
__u64 xrl_lease_store_full(struct xrl_lease_store *s);
/* ---- override.c ------------------------------------------------------------ */
struct xrl_ovr_tab;
struct xrl_ovr_tab *xrl_ovr_new(void);
void xrl_ovr_free(struct xrl_ovr_tab *t);
/* The digest of (rule name, key), as key_digest makes it. */
struct xrl_kd xrl_lim_digest(const struct xrl_limiter *l, const char *rule, const char *key);
/* k's override in force: true with *g and *rate set (cfg_mu held or not). */
bool xrl_lim_ovr_lookup(struct xrl_limiter *l, struct xrl_kd k, struct xrl_gcra_params *g,
			struct xrl_rate *rate);

/* ---- penalty.c ------------------------------------------------------------- */
void xrl_lim_penalty_strike(struct xrl_limiter *l, struct xrl_lim_item *x, __u64 now);
bool xrl_lim_penalty_refuses(struct xrl_limiter *l, struct xrl_lim_item *it, int m, __u64 now,
			     struct xrl_decision *d);

/* ---- penalty_ledger.c ------------------------------------------------------ */
struct xrl_pen_list *xrl_pen_list_new(void);
/* The identity of rule's penalty for the key whose SHA-256 starts kh. */
struct xrl_kd xrl_pen_identity(const char *rule, const __u8 kh[16]);
/* it's pk and kh, once (SHA-256 of the key): false when they are not set
 * and can no longer be (the key is gone: never after prepare()) */
bool xrl_pen_item(struct xrl_lim_item *it);
/* A penalty of pk until until (lim_now ns) into pen_block. */
void xrl_pen_block(struct xrl_limiter *l, struct xrl_kd pk, __u64 until, __u64 now);
/* A penalty was made here (until: monotonic ns): listed, and told to the fleet. */
void xrl_pen_made(struct xrl_limiter *l, const struct xrl_lim_item *x, __u64 until, __u64 ttl,
		  __u32 level, __u64 now);
/* Forget the escalation state of pk (penalty.c). */
void xrl_lim_penalty_forget(struct xrl_limiter *l, struct xrl_kd pk);
/* Set pk's offence count to at least level (penalty.c). */
void xrl_lim_penalty_level(struct xrl_limiter *l, struct xrl_kd pk, __u32 level, __u64 now);

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

/* ---- limiter.c ------------------------------------------------------------- */
void xrl_lim_finish(struct xrl_limiter *l, struct xrl_lim_item *it, int m, int st, __u64 now,
		    struct xrl_decision *d);
void xrl_lim_finish_conc(struct xrl_limiter *l, struct xrl_lim_item *it, int m,
			 struct xrl_conc_item *ci, int nc, int st, __u64 now,
			 struct xrl_decision *d);

/* ---- redis/script.c -------------------------------------------------------- */
/* gcra.lua, embedded at build time (build/gcra.lua.h); xrl_lua_gcra_len bytes. */
extern const char xrl_lua_gcra[];
extern const size_t xrl_lua_gcra_len;
__u64 xrl_redis_now_ns(void);
char *xrl_redis_put_us(char *p, __u64 ns);
char *xrl_redis_put_bulk(char *p, const char *s, size_t n);
__u64 xrl_redis_parse_us(const char *s);
size_t xrl_redis_key_name(const char *key, char out[XRL_REDIS_KEY_LITERAL]);
void xrl_redis_job_format(struct xrl_redis_job *j, const char *const *keys);
void xrl_redis_release_format(struct xrl_redis_job *j, const char *const *rules);

/* ---- redis/pipe.c ---------------------------------------------------------- */
__u64 xrl_redis_auth_tag(const struct xrl_http_cfg *c);
int xrl_redis_pipe_queue(struct xrl_redis_pipe *p, struct xrl_lim_item *it, int m,
			 struct xrl_conc_item *ci, int nc, struct xrl_decision *d,
			 const struct xrl_limiter_wait *w);

/* A post-paid charge's end (limiter.c): d->allowed is "charged". */
void xrl_lim_post_finish(struct xrl_limiter *l, struct xrl_lim_item *it, int st, __u64 now,
			 struct xrl_decision *d);
int xrl_redis_pipe_queue_release(struct xrl_redis_pipe *p, struct xrl_conc_item *ci, int nc,
				 const char *const *rules, struct xrl_release *res,
				 const struct xrl_limiter_wait *w);
void xrl_redis_pipe_sync_wait(struct xrl_redis_pipe *p, const bool *done);
/* A cluster node's pipe: connects to node, hands its jobs to cp. */
struct xrl_redis_pipe *xrl_redis_node_pipe_new(struct xrl_limiter *l, struct xrl_cnode *node,
					       struct xrl_cpipe *cp);
void xrl_redis_pipe_push(struct xrl_redis_pipe *p, struct xrl_redis_job *j);
/* Jobs queued and no batch in flight: the next run sends them. */
bool xrl_redis_pipe_waiting(const struct xrl_redis_pipe *p);
void xrl_redis_pipe_hold(struct xrl_redis_pipe *p, bool hold);
__u64 xrl_redis_pipe_out(const struct xrl_redis_pipe *p);

/* ---- redis/cluster.c ------------------------------------------------------- */
int xrl_cluster_new(struct xrl_limiter *l);
void xrl_cluster_free(struct xrl_cluster *cl);
const char *xrl_cnode_name(const struct xrl_cnode *n, int *port);
struct xrl_brk *xrl_cnode_brk(struct xrl_cnode *n);
void xrl_cnode_batch(struct xrl_cnode *n, __u64 ns, bool ok);
/* The node script (a call of several slots of one node): its SHA1, and
 * its SCRIPT LOAD formatted (*cmd, *len). */
const char *xrl_cnode_script(struct xrl_cnode *n, const char **cmd, size_t *len);
/* J_MOVED or J_ASK and the node named (*to), when err is a redirect; 0 */
int xrl_cnode_redirect(struct xrl_cnode *from, const char *err, size_t n, __u16 *to);
/* A node pipe's batch is over: its jobs, each now the cluster's */
void xrl_cpipe_job_done(struct xrl_cpipe *cp, struct xrl_redis_job *j);
struct xrl_cpipe *xrl_cpipe_new(struct xrl_limiter *l);
void xrl_cpipe_free(struct xrl_cpipe *cp);
void xrl_cpipe_abort(struct xrl_cpipe *cp);
int xrl_cpipe_poll(struct xrl_cpipe *cp, short *events, __u64 *timeout_ns, __u32 *gen);
int xrl_cpipe_run(struct xrl_cpipe *cp, short revents);
bool xrl_cpipe_busy(const struct xrl_cpipe *cp);
int xrl_cpipe_queue(struct xrl_cpipe *cp, struct xrl_lim_item *it, int m,
		    struct xrl_conc_item *ci, int nc, struct xrl_decision *d,
		    const struct xrl_limiter_wait *w);
extern const char xrl_lua_refund[];
/* A cleared job of cp's (slot -1), or NULL; back to cp's spares. */
struct xrl_redis_job *xrl_cpipe_job_get(struct xrl_cpipe *cp);
void xrl_cpipe_job_put(struct xrl_cpipe *cp, struct xrl_redis_job *j);
/* j onto the node serving its slot (to < 0) or node to: 0, -ENOMEM. */
int xrl_cpipe_job_send(struct xrl_cpipe *cp, struct xrl_redis_job *j, int to);
/* A request of cp's started (busy until it ends), or ended (handed back). */
void xrl_cpipe_track(struct xrl_cpipe *cp, bool started);

/* ---- cluster_lease.c ------------------------------------------------------- */
struct xrl_crel;
/* A release of ci[0..nc) on a cluster, a call per slot: 1, or 0 when none
 * could be queued (res says not held). */
int xrl_cpipe_queue_release(struct xrl_cpipe *cp, struct xrl_conc_item *ci, int nc,
			    const char *const *rules, struct xrl_release *res,
			    const struct xrl_limiter_wait *w);
/* The leases a decision's part took, given back (a later part refused). */
void xrl_clease_give_back(struct xrl_cpipe *cp, const struct xrl_redis_job *part);
/* A release's or give-back's job is over (st: J_*). */
void xrl_clease_job_done(struct xrl_cpipe *cp, struct xrl_redis_job *j, int st);

#endif /* XRL_LIMITER_INT_H */
