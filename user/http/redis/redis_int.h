/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * redis_int.h - the Redis backend's parts, shared between its files and
 * nothing else: redis.c (its state and the operations the limiter calls),
 * script.c (the script and what is sent to it and read back), pipe.c (the
 * connection, batches, breaker), cluster.c and cluster_lease.c (Redis
 * Cluster). The limiter takes redis.c's section and calls the rest through
 * the operations.
 */
#ifndef XRL_REDIS_INT_H
#define XRL_REDIS_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "http/backend.h"


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

/* The Redis backend of one limiter: standalone, or a cluster (cl). */
struct xrl_redis {
	struct xrl_lim_env env; /* the limiter's configuration, clock, counters */
	struct xrl_brk brk;
	struct xrl_cluster *cl; /* redis-cluster://: the slot map, the nodes */
	char sha[41];		/* SHA1 of xrl_lua_gcra, for EVALSHA */
	__u64 auth;		/* xrl_redis_auth_tag(cfg) */
	char *load_cmd;		/* SCRIPT LOAD xrl_lua_gcra, formatted */
	size_t load_len;
};

/* The limiter's now on CLOCK_MONOTONIC (or the test's clock). */
static inline __u64 rd_now(const struct xrl_redis *rd)
{
	return xrl_env_now(&rd->env);
}

#define RD_STAT_ADD(rd, f, n) ENV_STAT_ADD(&(rd)->env, f, n)

/* ---- redis.c --------------------------------------------------------------- */
/* The operations of a standalone Redis or a Redis Cluster (rd->cl). */
extern const struct xrl_backend_ops xrl_redis_ops;
/* The backend of env's configuration: the script's SHA1 and SCRIPT LOAD,
 * and a cluster's slot map and nodes when it names redis-cluster://. */
int xrl_redis_new(const struct xrl_lim_env *env, struct xrl_redis **out);
void xrl_redis_free(struct xrl_redis *rd);
/* A reload's configuration is in force (cfg_mu held for writing). */
void xrl_redis_set_cfg(struct xrl_redis *rd);
/* A pipe for one thread's loop (a cluster's: the face of one per node). */
struct xrl_redis_pipe *xrl_redis_pipe_new(struct xrl_redis *rd);

/* ---- jobs ------------------------------------------------------------------ */

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
	struct xrl_backend_done done; /* how its decision goes back */
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

/* ---- redis/script.c -------------------------------------------------------- */
/* gcra.lua, embedded at build time (build/gcra.lua.h); xrl_lua_gcra_len bytes. */
extern const char xrl_lua_gcra[];
extern const size_t xrl_lua_gcra_len;
/* A cluster's refund of a decision's part (a Lua script's text). */
extern const char xrl_lua_refund[];
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
			 const struct xrl_limiter_wait *w, const struct xrl_backend_done *done);

int xrl_redis_pipe_queue_release(struct xrl_redis_pipe *p, struct xrl_conc_item *ci, int nc,
				 const char *const *rules, struct xrl_release *res,
				 const struct xrl_limiter_wait *w);
void xrl_redis_pipe_sync_wait(struct xrl_redis_pipe *p, const bool *done);
/* A cluster's pipe: the face of one per node (cluster.c), or NULL. */
struct xrl_cpipe *xrl_redis_pipe_face(const struct xrl_redis_pipe *p);
/* A cluster node's pipe: connects to node, hands its jobs to cp. */
/*
 * What a node pipe asks of its cluster (cluster.c's): its node's address,
 * breaker and script, what a redirect names, a batch's time; and where its
 * jobs go once their batch is over.
 */
struct xrl_node_hooks {
	const char *(*name)(const struct xrl_cnode *n, int *port);
	struct xrl_brk *(*brk)(struct xrl_cnode *n);
	void (*batch)(struct xrl_cnode *n, __u64 ns, bool ok);
	const char *(*script)(struct xrl_cnode *n, const char **cmd, size_t *len);
	int (*redirect)(struct xrl_cnode *from, const char *err, size_t n, __u16 *to);
	void (*job_done)(struct xrl_cpipe *cp, struct xrl_redis_job *j);
};
struct xrl_redis_pipe *xrl_redis_node_pipe_new(struct xrl_redis *rd, struct xrl_cnode *node,
					       struct xrl_cpipe *cp,
					       const struct xrl_node_hooks *nh);
/* A pipe of rd's that is no cluster's yet; set_face makes it the face of
 * cp's node pipes (redis.c). */
struct xrl_redis_pipe *xrl_redis_pipe_alloc(struct xrl_redis *rd);
void xrl_redis_pipe_set_face(struct xrl_redis_pipe *p, struct xrl_cpipe *cp);
/* One Redis's pipe (a node's, or a standalone's): xrl_limiter_pipe_* less
 * the face of a cluster (redis.c hands those to cluster.c). */
void xrl_redis_pipe_abort(struct xrl_redis_pipe *p);
void xrl_redis_pipe_free(struct xrl_redis_pipe *p);
int xrl_redis_pipe_poll(struct xrl_redis_pipe *p, short *events, __u64 *timeout_ns, __u32 *gen);
int xrl_redis_pipe_run(struct xrl_redis_pipe *p, short revents);
bool xrl_redis_pipe_busy(const struct xrl_redis_pipe *p);
void xrl_redis_pipe_push(struct xrl_redis_pipe *p, struct xrl_redis_job *j);
/* Jobs queued and no batch in flight: the next run sends them. */
bool xrl_redis_pipe_waiting(const struct xrl_redis_pipe *p);
void xrl_redis_pipe_hold(struct xrl_redis_pipe *p, bool hold);
__u64 xrl_redis_pipe_out(const struct xrl_redis_pipe *p);

/* ---- redis/cluster.c ------------------------------------------------------- */
int xrl_cluster_new(struct xrl_redis *rd);
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
/* What a cluster's pipe asks of its leases (cluster_lease.c's, handed in by
 * redis.c): give back the leases a decision's part took, and end a
 * release's or give-back's job. */
struct xrl_lease_hooks {
	void (*give_back)(struct xrl_cpipe *cp, const struct xrl_redis_job *part);
	void (*job_done)(struct xrl_cpipe *cp, struct xrl_redis_job *j, int st);
};
struct xrl_cpipe *xrl_cpipe_new(struct xrl_redis *rd, const struct xrl_lease_hooks *lh);
void xrl_cpipe_free(struct xrl_cpipe *cp);
void xrl_cpipe_abort(struct xrl_cpipe *cp);
int xrl_cpipe_poll(struct xrl_cpipe *cp, short *events, __u64 *timeout_ns, __u32 *gen);
int xrl_cpipe_run(struct xrl_cpipe *cp, short revents);
bool xrl_cpipe_busy(const struct xrl_cpipe *cp);
int xrl_cpipe_queue(struct xrl_cpipe *cp, struct xrl_lim_item *it, int m,
		    struct xrl_conc_item *ci, int nc, struct xrl_decision *d,
		    const struct xrl_limiter_wait *w, const struct xrl_backend_done *done);
/* A cleared job of cp's (slot -1), or NULL; back to cp's spares. */
struct xrl_redis_job *xrl_cpipe_job_get(struct xrl_cpipe *cp);
void xrl_cpipe_job_put(struct xrl_cpipe *cp, struct xrl_redis_job *j);
/* j onto the node serving its slot (to < 0) or node to: 0, -ENOMEM. */
int xrl_cpipe_job_send(struct xrl_cpipe *cp, struct xrl_redis_job *j, int to);
/* A request of cp's started (busy until it ends), or ended (handed back). */
void xrl_cpipe_track(struct xrl_cpipe *cp, bool started);
/* A give-back of leases sent (ok), or not sent or not answered. */
void xrl_cpipe_giveback(struct xrl_cpipe *cp, bool ok);

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

#endif /* XRL_REDIS_INT_H */
