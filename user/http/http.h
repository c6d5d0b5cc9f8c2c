/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * http.h - the identity tier: HTTP rate-limit decisions for traffic that
 * carries identity (API keys, user ids, bearer tokens, login emails).
 *
 * Three parts:
 *  - the configuration (the `http:` section of the policy file),
 *  - the limiter (limiter.c): buckets in process memory or in Redis, the
 *    same GCRA arithmetic as the XDP program, a breaker and fallbacks,
 *  - the server (http_tier.c): libmicrohttpd, forward-auth and decision API.
 */
#ifndef XRL_HTTP_H
#define XRL_HTTP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http_cfg.h"
#include "xrl.h"

/* ---- requests as plain strings (server/request.c; no libmicrohttpd types) --- */

/*
 * One X-Forwarded-For entry, the n bytes at s: an address, with optional
 * whitespace around it, optionally in double quotes (RFC 7239 style),
 * optionally with a port ("203.0.113.1:1111", "[2001:db8::1]:3333",
 * "[2001:db8::1]"). An IPv4-mapped IPv6 address is taken as the IPv4 one.
 * Returns 0 or -EINVAL.
 */
int xrl_http_addr_parse(const char *s, size_t n, struct xrl_prefix *p);
bool xrl_http_trusted(const struct xrl_http_cfg *c, const struct xrl_prefix *a);

/*
 * The client address: peer (the direct peer's address as text) unless it is
 * a trusted proxy; then xff (the X-Forwarded-For field lines joined with
 * ',', xfflen bytes, NULL: none) is walked right to left over trusted hops,
 * and the first untrusted address is the client. A malformed entry stops
 * the walk at the last address vouched for. The address is written in its
 * canonical text form (no port, no brackets) to out.
 */
void xrl_http_client_addr(const struct xrl_http_cfg *c, const char *peer, const char *xff,
			  size_t xfflen, char *out, size_t outlen);

/* The header names that carry the original method and URI for f (NULL:
 * none, the request's own line is used). */
void xrl_http_fwd_headers(enum xrl_fwd_from f, const char **method_hdr, const char **uri_hdr);

/*
 * What rules see of a forward-auth request. method and url: the request's
 * own line (url raw, not %-decoded, without the query); fm and fu: the
 * values of the forwarded headers of the configured kind, passed only when
 * the peer is trusted (NULL: absent); dup: one of them came more than once.
 * With headers of the configured kind, a trusted peer must send both, once.
 * Otherwise (envoy, none, or an untrusted peer) the request's own method
 * and its path after "/v1/auth" are used. Envoy's path-prefix form
 * (/v1/auth/PATH) is taken for every kind when a trusted proxy sent none
 * of the headers (they win when it sent one); /v1/auth/nginx is nginx's
 * endpoint, not a path, unless the kind reads no header. On success *om is the method and
 * path holds the normalised path (pathlen bytes at most).
 * Returns 0, or -EINVAL / -ENAMETOOLONG with *why saying what was wrong.
 */
int xrl_http_original(const struct xrl_http_cfg *c, bool trusted, const char *method,
		      const char *url, const char *fm, const char *fu, bool dup, const char **om,
		      char *path, size_t pathlen, const char **why);

/* r matches the (already normalised) method and path: methods compare
 * case-sensitively (RFC 9110 9.1), path prefixes byte for byte unless
 * c->ignore_path_case. */
/* A method ("": any) and path prefix ("": any, at most prefix_cap bytes)
 * against a request's normalised method and path, as rules match. */
bool xrl_http_match(const struct xrl_http_cfg *c, const char *want_method,
		    const char *want_prefix, size_t prefix_cap, const char *method, const char *path);
bool xrl_http_rule_match(const struct xrl_http_cfg *c, const struct xrl_http_rule *r,
			 const char *method, const char *path);

/* ---- the limiter ----------------------------------------------------------- */

struct xrl_limiter;

/*
 * A lease id: RULE "." NONCE "." KEY, NONCE 16 hex digits (random), KEY
 * the key's name as Redis names it (the key up to 128 bytes, else '#' and
 * its SHA-256 in hex) in unpadded base64url. Neither part holds a '.', so
 * it parses from the right whatever the rule's name. An id names its slot
 * on any instance that shares the backend; guessing another's takes 2^64
 * tries.
 */
#define XRL_LEASE_ID_MAX (XRL_RULE_NAME_LEN + 1 + 16 + 1 + 172 + 1)

/* What one decision concluded, for the headers and the body. */
struct xrl_decision {
	bool allowed;
	bool shed;			  /* 503: closed on backend error or shedding */
	bool backend_error;		  /* the backend failed; a fallback decided */
	bool missing_key;		  /* refused for a missing identity */
	bool penalized;			  /* refused by a key penalty */
	const struct xrl_http_rule *rule; /* the rule that refused, or the one
					   * with the fewest tokens left */
	__u64 limit;			  /* burst of that rule */
	__u64 remaining;		  /* whole tokens left */
	__u64 reset_s;			  /* seconds until its bucket is full */
	__u64 retry_after_s;		  /* refusals: whole seconds, >= 1 */
	struct xrl_rate rate;		  /* of that rule, or of the key's override */
	__u64 tau_ns;			  /* likewise: an empty bucket's time to fill */
	__u32 n_rules;			  /* rules checked */
	/* shadow rules that would have refused (counted per rule, never told
	 * to the client) */
	__u32 n_shadow;
	const struct xrl_http_rule *shadow[XRL_HTTP_MAX_MATCH];
	bool conc;	  /* refused by a concurrency rule: its slots are all held */
	__u32 n_leases;	  /* admitted: the slots taken, one per concurrency rule */
	char lease[XRL_HTTP_MAX_MATCH][XRL_LEASE_ID_MAX];
};

/*
 * Give back the slots of the lease ids ids[0..n) (as a decision handed them
 * out) and charge cost (0: none) to the bucket of each lease's rule and key
 * (a rule with a rate; capped at an empty bucket: never more than a burst
 * of debt). released[i]: lease i was held (false: given back already, run
 * out, or not an id). Returns 0, or -EINVAL when an id is not one.
 */
struct xrl_release {
	__u32 n;
	__u32 cost;
	bool released[XRL_HTTP_MAX_MATCH];
	bool charged[XRL_HTTP_MAX_MATCH];
	bool backend_error; /* Redis did not answer: the slots run out by lease_ttl */
};
/* A lease id's parts; -EINVAL if it is not one. */
int xrl_lease_id_parse(const char *id, char *rule, size_t rulelen, __u64 *nonce, char *kn,
		       size_t *knl);
int xrl_limiter_release(struct xrl_limiter *l, const char *const *ids, int n, __u32 cost,
			struct xrl_release *res);
/* Charge cost tokens to rule r's bucket of key in process memory (post-paid; capped as above). */
int xrl_limiter_charge(struct xrl_limiter *l, const struct xrl_http_rule *r, const char *key,
		       __u32 cost);

struct xrl_limiter_stats {
	__u64 decisions, allowed, refused, shadow_refused, shed;
	__u64 backend_errors, breaker_open_skips, overlimit_cache_hits;
	__u64 fallback_open, fallback_closed, fallback_local;
	__u64 keys, evictions_idle, evictions_active, penalties;
	__u64 redis_round_trips; /* writes of a batch of EVALSHA */
	__u64 redis_calls;	 /* EVALSHA sent (each up to XRL_REDIS_CALL_MAX decisions) */
	__u64 redis_decisions;	 /* decisions sent in them */
	__u64 leases_full;	 /* slots not taken (admitted): the lease table was full */
};

int xrl_limiter_new(const struct xrl_http_cfg *c, struct xrl_limiter **out);
void xrl_limiter_free(struct xrl_limiter *l);
/* Swap the rule set (on reload); buckets of rules kept by name survive. */
void xrl_limiter_set_cfg(struct xrl_limiter *l, const struct xrl_http_cfg *c);

/*
 * Decide for one request: the rules it matched, the key of each (NULL for
 * a missing key, already resolved per on_missing_key by the caller) and
 * the costs. All must allow; a refusal by one rule spends no tokens of the
 * others (check all, then take from all).
 */
int xrl_limiter_decide(struct xrl_limiter *l, const struct xrl_http_rule *const *rules,
		       const char *const *keys, const __u32 *costs, int n, struct xrl_decision *d);

/*
 * Per-key overrides (override.c): rule's bucket for key gets rate and burst
 * until until_ms (CLOCK_REALTIME ms). At most XRL_OVR_MAX in force.
 */
#define XRL_OVR_MAX 512
/* An override ends at most this far ahead (ms): --ttl longer is refused, an
 * entry read from Redis ending later is held to it. */
#define XRL_OVR_TTL_MAX_MS (30ULL * 24 * 3600 * 1000)
struct xrl_ovr {
	char rule[XRL_RULE_NAME_LEN];
	char key[XRL_HTTP_KEY_MAX + 1];
	struct xrl_rate rate;
	__u32 burst;
	__u64 until_ms;
};
__u64 xrl_ovr_now_ms(void);
/* 0, -EINVAL/-ERANGE (no bucket has that rate and burst), -ENOSPC (full). */
int xrl_limiter_override_set(struct xrl_limiter *l, const struct xrl_ovr *e);
/* 0, -ENOENT. */
int xrl_limiter_override_del(struct xrl_limiter *l, const char *rule, const char *key);
/* The entries in force (max at most), unordered; returns how many. */
int xrl_limiter_override_list(struct xrl_limiter *l, struct xrl_ovr *out, int max);
/* The whole set, as Redis holds it (server/admin.c's refresh). */
void xrl_limiter_override_replace(struct xrl_limiter *l, const struct xrl_ovr *e, int n);

/*
 * A Redis pipe: one connection, driven by one thread's event loop. The
 * decisions queued on it go out together whenever it is free (one write,
 * then their replies as they arrive), so a decision waits for at most the
 * batch in flight and its own; no timer adds delay.
 */
struct xrl_redis_pipe;

/* The decimal digits of v at p, not terminated; returns their end. */
static inline char *xrl_put_u64(char *p, __u64 v)
{
	char t[20];
	int n = 0;

	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = t[--n];
	return p;
}

/* Decisions carried by one EVALSHA of a batch at most. */
#define XRL_REDIS_CALL_MAX 128

struct xrl_redis_pipe *xrl_limiter_pipe_new(struct xrl_limiter *l);
/* Every decision still queued or in flight falls back now (w->decided); then free. */
void xrl_limiter_pipe_free(struct xrl_redis_pipe *p);
void xrl_limiter_pipe_abort(struct xrl_redis_pipe *p); /* the same, the pipe stays */
/*
 * What the loop waits for: returns the fd (-1: none) with the poll events
 * wanted and the time until the batch in flight times out (UINT64_MAX:
 * none); *gen changes with every new connection (a new fd to register).
 */
int xrl_limiter_pipe_poll(struct xrl_redis_pipe *p, short *events, __u64 *timeout_ns, __u32 *gen);
/* After the fd was ready (revents), the timeout passed, or decisions were
 * queued (revents 0): write, read, time out, hand back the decisions of a
 * batch that is over, and send the next batch when the pipe is free.
 * Returns the number of decisions handed back (w->decided called). */
int xrl_limiter_pipe_run(struct xrl_redis_pipe *p, short revents);
bool xrl_limiter_pipe_busy(const struct xrl_redis_pipe *p);

/*
 * As xrl_limiter_decide without blocking on Redis. Returns 0 when d is the
 * decision already (the memory backend, a missing key, a penalty, the
 * over-limit cache), -E2BIG as above, or 1: the decision is queued on the
 * pipe p, which sends it with the next batch (xrl_limiter_pipe_run).
 * w->queued(w->arg), if set, is called before it is queued, and
 * w->decided(w->arg) by xrl_limiter_pipe_run once d is filled. The keys are
 * copied; the rules and d must stay until w->decided.
 */
struct xrl_limiter_wait {
	void (*queued)(void *arg);
	void (*decided)(void *arg);
	void *arg;
};
/*
 * Charge cost tokens to rule r's bucket of key where its decisions are
 * made (post-paid; capped as above): in memory at once (0), or in Redis
 * (1: queued on p, d filled and w->decided called once it answered).
 * d->allowed: charged; d->backend_error: Redis did not take it (rule's
 * on_backend_error local: charged in this instance's memory instead).
 * -EINVAL: r has no rate.
 */
int xrl_limiter_charge_async(struct xrl_limiter *l, struct xrl_redis_pipe *p,
			     const struct xrl_http_rule *r, const char *key, __u32 cost,
			     struct xrl_decision *d, const struct xrl_limiter_wait *w);
int xrl_limiter_decide_async(struct xrl_limiter *l, struct xrl_redis_pipe *p,
			     const struct xrl_http_rule *const *rules, const char *const *keys,
			     const __u32 *costs, int n, struct xrl_decision *d,
			     const struct xrl_limiter_wait *w);
/*
 * As xrl_limiter_release without blocking on Redis: 0 when res is the
 * answer already (leases held in memory, the memory backend), or 1: the
 * leases Redis holds are queued on p, and w->decided tells when res is
 * filled (res must stay until then; the ids are read at once).
 */
int xrl_limiter_release_async(struct xrl_limiter *l, struct xrl_redis_pipe *p,
			      const char *const *ids, int n, __u32 cost, struct xrl_release *res,
			      const struct xrl_limiter_wait *w);
void xrl_limiter_get_stats(struct xrl_limiter *l, struct xrl_limiter_stats *s);
/*
 * The callers' peaks of the epoch that ends now, per rule (limiter/callers.c),
 * and a new epoch: {"rules": {RULE: histogram}, "untracked": N}, or NULL
 * when out of memory.
 */
struct json_t;
struct json_t *xrl_limiter_peaks_take(struct xrl_limiter *l);
/* Redis breaker state for status/metrics: 0 closed, 1 open, 2 half-open. */
int xrl_limiter_breaker_state(struct xrl_limiter *l);
/* The backend's Prometheus families beyond the limiter's counters (a Redis
 * Cluster's nodes, slot map, redirects and refunds). */
struct xrl_buf;
void xrl_limiter_backend_metrics(struct xrl_limiter *l, struct xrl_buf *b);
/* The limiter's side of xrl_http_set_fleet, xrl_http_penalties and
 * xrl_http_penalty_del (limiter/penalty_ledger.c). */
struct xrl_fleet;
struct json_t;
void xrl_limiter_set_fleet(struct xrl_limiter *l, struct xrl_fleet *f);
struct json_t *xrl_limiter_penalties(struct xrl_limiter *l);
int xrl_limiter_penalty_del(struct xrl_limiter *l, const char *hex, int *lifted);
/* Tests: read the time from *now_ns (ns; the Redis script is given it as
 * its now as well) instead of CLOCK_MONOTONIC and CLOCK_REALTIME. NULL: the
 * clocks. Set before the first decision. */
void xrl_limiter_set_clock(struct xrl_limiter *l, const _Atomic __u64 *now_ns);
/* SipHash-2-4 with 128-bit output of in[0..n) under key k (k[0] the first
 * 8 key bytes, little-endian); out[0] the first 8 output bytes, likewise. */
void xrl_siphash128(const __u64 k[2], const void *in, size_t n, __u64 out[2]);

/*
 * The walk of a reply of the limiter's Redis script (limiter.c, and
 * tests/fuzz/fuzz_resp.c): n decisions, decision d of nkeys[d] keys; st[d]
 * and keys[] (all decisions' keys in turn) filled. 0, -ENOEXEC (NOSCRIPT),
 * -EIO (an error answer), -EBADMSG (not that shape).
 */
enum { XRL_SCRIPT_OK = 0, XRL_SCRIPT_BADKEY = 1 };
struct xrl_script_key {
	bool ok;      /* admitted, or would be (a slot set: it had room) */
	bool taken;   /* a slot set: the lease was added */
	__u32 held;   /* a slot set: leases before this one */
	__u64 rel_ns; /* its TAT after (a slot set: its earliest lease's end),
		       * relative to the call's now; 0: past */
};
struct redisReply;
struct redisReader;
int xrl_script_reply(const struct redisReply *r, const int *nkeys, int n, int *st,
		     struct xrl_script_key *keys);
/*
 * Bound what reader r may allocate for the arrays of one reply (hiredis
 * 0.14 allocates "*N" up front, N the peer's to choose): NULL on no memory.
 * Reset it after each whole reply; free() it after the reader is freed.
 */
struct xrl_reader_guard;
struct xrl_reader_guard *xrl_reader_guard_new(struct redisReader *r);
void xrl_reader_guard_reset(struct xrl_reader_guard *g);

/* ---- the server ------------------------------------------------------------ */

struct xrl_http_server;

int xrl_http_start(const struct xrl_http_cfg *c, struct xrl_http_server **out, char *err,
		   size_t errlen);
/* The same on listen_fd, a listening socket made by xrl_http_listen_socket
 * (-1: bind c->listen here). The server takes it over. */
int xrl_http_start_fd(const struct xrl_http_cfg *c, int listen_fd, struct xrl_http_server **out,
		      char *err, size_t errlen);
/* A non-blocking listening socket on HOST:PORT (backlog 1024), or -errno with err. */
int xrl_http_listen_socket(const struct xrl_http_cfg *c, char *err, size_t errlen);
/* Reload: new rules and limits; the listener stays. */
/* Whether c can be reloaded into s as it runs: -EINVAL with err when a
 * rule needs what the backend kept (a restart's change) cannot give;
 * none does today (every backend does every operation). */
int xrl_http_reload_check(struct xrl_http_server *s, const struct xrl_http_cfg *c, char *err,
			  size_t errlen);
int xrl_http_reload(struct xrl_http_server *s, const struct xrl_http_cfg *c);
/*
 * Fields libmicrohttpd is started with (server/reload.c), which a reload cannot change: the
 * names of those that differ between the running configuration and the
 * new one, comma-separated, into out (empty when none does). Returns how
 * many differ.
 */
int xrl_http_cfg_restart_diff(const struct xrl_http_cfg *run, const struct xrl_http_cfg *next,
			      char *out, size_t outlen);
/* The same, and n keeps run's values of them (the backend too when its
 * kind would change): what a reload of the identity tier applies, so
 * xrld's copy of the policy says what runs. */
int xrl_http_cfg_keep_running(const struct xrl_http_cfg *run, struct xrl_http_cfg *n, char *out,
			      size_t outlen);
void xrl_http_stop(struct xrl_http_server *s);
/* The fleet this tier counts in and shares its penalties with: set once,
 * before the fleet's thread runs. */
struct xrl_fleet;
void xrl_http_set_fleet(struct xrl_http_server *s, struct xrl_fleet *f);
/* The penalties in force: [{rule, key_hash, level, remaining_s}]. */
struct json_t;
struct json_t *xrl_http_penalties(struct xrl_http_server *s);
/* Lift the penalties whose key hash starts with hex (here and, in a
 * fleet, everywhere); *lifted: how many. */
int xrl_http_penalty_del(struct xrl_http_server *s, const char *hex, int *lifted);
/*
 * A request that rules with vouch: true admitted (/v1/auth): fn(arg,
 * client, ttl_ns) with the client's address as the tier determined it
 * (trusted proxies walked) and the longest vouch_ttl of those rules. Called
 * on a server thread, which may not make bpf() calls (seccomp): fn only
 * queues. Set once, after xrl_http_start; NULL: nobody listens.
 */
typedef void (*xrl_http_vouch_fn)(void *arg, const struct xrl_prefix *client, __u64 ttl_ns);
void xrl_http_set_vouch(struct xrl_http_server *s, xrl_http_vouch_fn fn, void *arg);
/* Prometheus lines for the tier (appended to xrld's /metrics). */
struct xrl_buf;
void xrl_http_metrics(struct xrl_http_server *s, struct xrl_buf *b);

#endif /* XRL_HTTP_H */
