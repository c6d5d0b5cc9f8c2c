/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * server_int.h - what the files of server/ share (and nothing else): the
 * server's state, a request's, a loop's, and what each file offers the
 * others.
 */
#ifndef XRL_SERVER_INT_H
#define XRL_SERVER_INT_H

#include <stdbool.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "http/http.h"
#include "report.h"
#include "topk.h"

#define BODY_MAX 16384

enum {
	ST_200,
	ST_400,
	ST_401,
	ST_403,
	ST_404,
	ST_405,
	ST_413,
	ST_414,
	ST_429,
	ST_503,
	ST_431,
	ST_MAX
};

/* Why a caller was refused (403), and why xrld closed a connection. */
enum { XRL_CALLER_ADDRESS, XRL_CALLER_SECRET, XRL_CALLER_MAX };
enum { XRL_CONN_HEAD_TIMEOUT, XRL_CONN_EVICTED, XRL_CONN_MAX };

/*
 * One rule's decision counters, found by the rule's name: every
 * configuration that has the rule points at the same one (reload.c), so a
 * rule a reload keeps goes on counting, a request still waiting under a
 * retired configuration counts where the new one is read, and a rule the
 * reload removed loses its counters with the last configuration that has
 * it; a new rule starts at 0. The request path only adds to them (atomics,
 * no lock, as before they were by name); refs changes with s->mu held for
 * writing, or before and after the threads run.
 */
struct xrl_srv_rule_ctr {
	_Atomic __u64 allowed, refused, shadow;
	_Atomic __u64 fallback; /* decided by on_backend_error */
	unsigned refs;		/* configurations that point at it */
};

/*
 * A configuration with its rules' counters and the count of requests
 * waiting for Redis with rules of it: a retired one is freed once none
 * does.
 */
struct xrl_srv_cfg {
	struct xrl_http_cfg c;
	struct xrl_srv_rule_ctr *ctr[XRL_HTTP_MAX_RULES]; /* by index of c.rules */
	_Atomic __u32 held;
	struct xrl_srv_cfg *next; /* retired */
};

/* n in force, the old one retired (s->mu held for writing; reload.c); n's
 * rules take over the counters of the rules of the same name. */
void xrl_srv_cfg_swap(struct xrl_http_server *s, struct xrl_srv_cfg *n);
/* reload.c: n's counters, each rule's the one of the same name in from
 * (NULL: none), else a new one at 0 (if none can be had, a shared spare
 * that no scrape reads: the count is lost, not the request). Returns how
 * many rules got the spare. Called by xrl_srv_cfg_swap when n has none. */
int xrl_srv_cfg_counters(struct xrl_srv_cfg *n, const struct xrl_srv_cfg *from);
/* reload.c: x freed, and its hold on its counters let go. */
void xrl_srv_cfg_free(struct xrl_srv_cfg *x);

struct xrl_srv_loop;

/*
 * One fd of a loop's epoll with the handler it wakes (redis ae.c's file
 * events, as xrld's struct xrld_io): epoll's data.ptr points at it, so the
 * loop calls what it stored instead of switching on a tag. A handler only
 * notes what the pass must do next (run_mhd, stop, pipe_rev).
 */
struct xrl_srv_io {
	int fd;
	void (*fn)(struct xrl_srv_loop *lp, struct xrl_srv_io *io, unsigned events);
};

/* One server thread: its daemon, its Redis pipe, what its epoll holds. */
struct xrl_srv_loop {
	struct xrl_http_server *s;
	struct MHD_Daemon *d;
	struct xrl_redis_pipe *pipe;
	pthread_t thr;
	bool started;
	int ep;	     /* the daemon's epoll fd, the pipe's fd, stop_fd */
	int stop_fd; /* eventfd: leave the loop */
	struct xrl_srv_io mhd_io;  /* the daemon's epoll fd */
	struct xrl_srv_io stop_io; /* stop_fd */
	struct xrl_srv_io pipe_io; /* the pipe's fd as registered (-1: none) */
	__u32 pipe_gen;
	short pipe_ev;
	/* what this pass's handlers noted */
	bool run_mhd;
	bool stop;
	short pipe_rev; /* the pipe's poll events */
	int waiting;	/* handlers that wait for Redis, unanswered */
	/* its daemon's connections (conn.c), the listening socket */
	struct xrl_srv_conn *conns;
	unsigned n_conns;
	int lfd;
	__u64 tick_next;   /* the next walk of conns is due (monotonic ns) */
	__u64 head_to;	   /* http.head_timeout as the last walk read it */
	unsigned conn_max; /* this loop's share of max_connections, likewise */
	bool run_soon;	   /* a slot came free at the limit: run the daemon again now */
};

/*
 * Decision latency, from the request read to its answer (Redis round trips
 * included), as a histogram of fixed buckets (XRL_LAT_LE_NS, in ns;
 * one more for +Inf). One per server thread, written only by it with
 * relaxed stores (no locked instruction, no shared cache line: each is
 * aligned to one), summed by the scrape; the last one, shared, takes
 * decisions made off the loops (atomic adds).
 */
#define XRL_LAT_BUCKETS 15
struct xrl_srv_lat {
	_Alignas(64) _Atomic __u64 n[XRL_LAT_BUCKETS + 1]; /* per bucket, not cumulative */
	_Atomic __u64 sum_ns;
};

struct xrl_http_server {
	struct xrl_srv_loop *loops;
	unsigned n_loops;
	struct xrl_limiter *lim;
	pthread_rwlock_t mu; /* cfg pointer vs reload */
	struct xrl_srv_cfg *cfg;
	struct xrl_srv_cfg *retired;   /* still held by a waiting request */
	_Atomic __u64 shed_tat;	       /* global capacity bucket (GCRA, CAS) */
	_Atomic __u64 shed_route_tat[XRL_HTTP_MAX_SHED]; /* http.shed's list, by index */
	_Atomic __u32 gen;	       /* bumped by each reload (refusal cache) */
	_Atomic bool warned_untrusted; /* forwarded headers from an untrusted peer, logged once */
	_Atomic bool warned_caller;    /* a refused caller, logged once */
	_Atomic __u64 callers_refused[XRL_CALLER_MAX];
	_Atomic __u64 conn_closed[XRL_CONN_MAX];
	_Atomic __u64 status[ST_MAX];
	struct xrl_srv_lat *lat; /* n_loops + 1 */
	_Atomic(xrl_http_vouch_fn) vouch_fn; /* xrl_http_set_vouch */
	void *_Atomic vouch_arg;
	struct xrl_topk *topk;	 /* most refused keys per rule */
	/* `xrlctl shadow RULE on|off` of HTTP rules, kept over reloads (mu) */
	char shadow_name[XRL_HTTP_MAX_RULES][XRL_RULE_NAME_LEN];
	bool shadow_on[XRL_HTTP_MAX_RULES];
	int n_shadow;
	struct xrl_ovr_sync *ovr_sync; /* overrides shared through Redis (admin.c) */
};

/*
 * One request. A decision that waits for Redis leaves the handler without
 * an answer (libmicrohttpd serves the others meanwhile and calls it again
 * on each pass); the loop's Redis pipe fills `d`, and the handler, called
 * again, answers from it.
 */
enum { RQ_NEW = 0, RQ_WAITING, RQ_DECIDED };
enum { K_AUTH, K_NGINX, K_CHECK, K_RELEASE, K_LEASE_DEL, K_CHARGE };

struct xrl_srv_req {
	char *body;
	size_t len;
	bool too_big;
	int phase;		 /* RQ_* */
	bool orphan;		 /* closed while waiting: freed once decided */
	int kind;		 /* K_*: how to answer */
	struct xrl_srv_cfg *cfg; /* held while waiting: rules point into it */
	int n;
	const struct xrl_http_rule *rules[XRL_HTTP_MAX_MATCH];
	__u32 cost;
	struct xrl_decision d;
	__u64 t0_ns; /* CLOCK_MONOTONIC when it was read whole */
	bool timed;  /* a decision: its latency is observed when answered */
	struct xrl_release rel; /* K_RELEASE, K_LEASE_DEL: what Redis gave back */
	long rel_cost;
	/* waiting for Redis: the keys as top --http counts them */
	struct xrl_topk_key tk[XRL_HTTP_MAX_MATCH];
};

extern __thread struct xrl_srv_loop *xrl_srv_tl_loop;

/* conn.c: the door and the connections' deadlines (see its top) */
void xrl_srv_conn_notify(void *cls, struct MHD_Connection *conn, void **ctx,
			 enum MHD_ConnectionNotificationCode code);
void *xrl_srv_conn_uri(void *cls, const char *uri, struct MHD_Connection *conn);
void xrl_srv_conn_done(struct MHD_Connection *conn);
int xrl_srv_conn_tick(struct xrl_srv_loop *lp);
int xrl_srv_door(struct xrl_http_server *s, const struct xrl_http_cfg *c,
		 struct MHD_Connection *conn, const char *method, const char *url,
		 const char *version, enum MHD_Result *ret);
/* How many times header name came (*v: its last value, NULL: none). */
int xrl_srv_header_count(struct MHD_Connection *conn, const char *name, const char **v);

void xrl_srv_client_ip(const struct xrl_http_cfg *c, struct MHD_Connection *conn, char *out,
		       size_t len);
void xrl_srv_client_key(const char *ip, char *out, size_t len);
enum MHD_Result xrl_srv_send_buf(struct MHD_Connection *conn, unsigned status, const char *ctype,
				 struct xrl_buf *b, const struct xrl_http_cfg *c,
				 const struct xrl_decision *d);
enum MHD_Result xrl_srv_problem(struct MHD_Connection *conn, unsigned status, const char *title,
				const char *detail);
/* 405 with Allow: allow (RFC 9110 15.5.6) and a problem+json body. */
enum MHD_Result xrl_srv_not_allowed(struct MHD_Connection *conn, const char *allow,
				    const char *detail);
bool xrl_srv_shed_check(struct xrl_http_server *s, const struct xrl_http_cfg *c, __u64 *wait);
enum MHD_Result xrl_srv_auth_answer(struct xrl_http_server *s, const struct xrl_srv_cfg *sc,
				    struct MHD_Connection *conn, bool nginx,
				    const struct xrl_http_rule *const *rules, int n,
				    const struct xrl_decision *d);
int xrl_srv_original_of(struct xrl_http_server *s, const struct xrl_http_cfg *c,
			struct MHD_Connection *conn, const char *method, const char *url,
			const char **om, char *path, size_t pathlen, enum MHD_Result *ret);
const char *xrl_srv_rule_key(const struct xrl_http_cfg *c, struct MHD_Connection *conn,
			     const struct xrl_http_rule *r, char *kb, size_t kblen, char *ip,
			     size_t iplen);
enum MHD_Result xrl_srv_check_answer(struct xrl_http_server *s, const struct xrl_srv_cfg *sc,
				     struct MHD_Connection *conn, const struct xrl_http_rule *r,
				     struct xrl_decision *d);
void *xrl_srv_loop_main(void *arg);
/* release.c: POST /v1/release, DELETE /v1/lease/ID */
enum MHD_Result xrl_srv_release(struct xrl_http_server *s, const struct xrl_http_cfg *c,
				struct MHD_Connection *conn, struct xrl_srv_req *rq);
enum MHD_Result xrl_srv_lease_delete(struct xrl_http_server *s, struct MHD_Connection *conn,
				     struct xrl_srv_req *rq, const char *id);
enum MHD_Result xrl_srv_release_answer(struct xrl_http_server *s, struct MHD_Connection *conn,
				       struct xrl_srv_req *rq);
enum MHD_Result xrl_srv_charge_answer(struct xrl_http_server *s, struct MHD_Connection *conn,
				      struct xrl_srv_req *rq);
/* decide.c: a post-paid charge into rq->d: 0 done, 1 waiting for Redis */
int xrl_srv_charge_start(struct xrl_http_server *s, struct xrl_srv_req *rq,
			 const struct xrl_http_rule *r, const char *key, __u32 cost);
/* decide.c: a decision into rq->d: 0 decided (or -E2BIG), 1 waiting for
 * the backend (answered on a later call); the rules are of sc (s->mu held). */
int xrl_srv_decide(struct xrl_http_server *s, struct xrl_srv_cfg *sc, struct xrl_srv_req *rq,
		   const struct xrl_http_rule *const *rules, const char *const *keys,
		   const __u32 *costs, int n);
/* decide.c: rq no longer holds its configuration (a wait is over). */
void xrl_srv_rq_release(struct xrl_srv_req *rq);
/* decide.c: give leases back into rq->rel: 0 done, 1 waiting for Redis */
int xrl_srv_release_start(struct xrl_http_server *s, struct xrl_srv_req *rq,
			  const char *const *ids, int n, __u32 cost);
/* shed.c: http.exempt and the shedding of a route */
bool xrl_srv_exempt(const struct xrl_http_cfg *c, const char *method, const char *path);
enum MHD_Result xrl_srv_exempt_answer(struct MHD_Connection *conn);
bool xrl_srv_shed_route(struct xrl_http_server *s, const struct xrl_http_cfg *c,
			const char *method, const char *path, __u64 *wait);
void xrl_srv_loops_stop(struct xrl_http_server *s);
void xrl_srv_refusal_drop(void);
/* A decision answered ns after its request was read (xrl_srv_lat). */
void xrl_srv_lat_observe(struct xrl_http_server *s, __u64 ns);
int xrl_srv_loop_init(struct xrl_srv_loop *lp);
/* A decision refused a key: counted for `top --http` (s->mu held). */
void xrl_srv_note_refused(struct xrl_http_server *s, const struct xrl_srv_cfg *sc,
			  const struct xrl_decision *d, const struct xrl_http_rule *const *rules,
			  const struct xrl_topk_key *tk, int n);
/* identity.c: an admitted request's client vouched for (xrl_http_set_vouch's
 * fn) when a rule that admitted it, not one that only counted a shadow
 * refusal, says vouch: true. */
void xrl_srv_vouch_admitted(struct xrl_http_server *s, const struct xrl_http_cfg *c,
			    struct MHD_Connection *conn, const struct xrl_http_rule *const *rules,
			    int n, const struct xrl_decision *d);
/* identity.c: the direct peer's address as text into out; "unknown" and
 * false when it has none (AF_UNIX). */
bool xrl_srv_peer_text(struct MHD_Connection *conn, char *out, size_t len);
/* reload.c: xrlctl's shadow switches onto c. */
void xrl_srv_shadow_apply(struct xrl_http_server *s, struct xrl_http_cfg *c);
/* admin.c: the Redis sync of overrides. */
int xrl_srv_ovr_sync_start(struct xrl_http_server *s);
void xrl_srv_ovr_sync_stop(struct xrl_http_server *s);
/* The override sync's counters (a full hash, ends held to the max). */
void xrl_srv_ovr_metrics(struct xrl_http_server *s, struct xrl_buf *b);

#endif /* XRL_SERVER_INT_H */
