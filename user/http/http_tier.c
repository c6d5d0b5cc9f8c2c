// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * http_tier.c - the identity tier's HTTP server (libmicrohttpd).
 *
 *   /v1/auth        forward-auth (Traefik, Caddy): 200 allow, 429 refuse,
 *                   503 shed; the answer goes to the client unchanged.
 *   /v1/auth/nginx  the same for nginx auth_request, which turns anything
 *                   but 2xx/401/403 into a 500: refusal is 403 and shedding
 *                   401, with the same headers (docs/examples/nginx-xrl.conf
 *                   maps them back to 429 and 503).
 *   /v1/check       POST {"rule","key","cost"} -> the decision as JSON.
 *   /healthz
 *
 * HTTP parsing, header-size bounds (431), connection limits and idle
 * timeouts are libmicrohttpd's; nothing here parses HTTP by hand.
 *
 * Threads: http.threads event loops, each with a libmicrohttpd daemon of
 * its own (external epoll mode, one shared listening socket) and a Redis
 * pipe of its own. A decision that needs Redis is queued on the loop's
 * pipe and its handler returns without an answer; once the loop has served
 * every connection that is ready, whatever is queued goes to Redis in one
 * write, and the loop serves others until the replies are in; the next
 * pass of libmicrohttpd calls those handlers again, and they answer. No
 * thread hands a request to another.
 *
 * Why not MHD_suspend_connection: in epoll mode a suspend takes the socket
 * out of the epoll set and a resume puts it back and reads it once more to
 * EAGAIN: three system calls a decision, measured at ~8 us of the ~25 us
 * xrld spent on a Redis decision (2 vCPUs, 32 connections). A connection
 * whose handler has not answered stays in libmicrohttpd's ready list and is
 * called again on every pass (it returns at once while waiting); the loop
 * does not spin on it: while decisions wait, libmicrohttpd's "run again
 * now" is taken as "within 1 ms" (it also means "a connection waits for its
 * handler"), and the replies from Redis are what wakes the loop.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>
#include <openssl/evp.h>

#include "privs.h"
#include "http.h"
#include "log.h"
#include "report.h"

/*
 * A JSON string into b. The refusal path writes its problem+json body with
 * this rather than jansson: a 429 costs no tree of allocations. Runs of
 * plain characters are copied whole; only escapes are formatted.
 */
static void buf_json_str(struct xrl_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s, *run = p;

	xrl_buf_add(b, "\"", 1);
	for (;; p++) {
		if (*p && *p != '"' && *p != '\\' && *p >= 0x20)
			continue;
		xrl_buf_add(b, (const char *)run, (size_t)(p - run));
		if (!*p)
			break;
		if (*p == '"' || *p == '\\') {
			char e[2] = { '\\', (char)*p };

			xrl_buf_add(b, e, 2);
		} else {
			xrl_buf_printf(b, "\\u%04x", *p);
		}
		run = p + 1;
	}
	xrl_buf_add(b, "\"", 1);
}

#define BODY_MAX 16384

enum { ST_200, ST_400, ST_401, ST_403, ST_404, ST_405, ST_413, ST_414, ST_429, ST_503, ST_MAX };

/*
 * A configuration with the count of requests waiting for Redis with rules
 * of it: a retired one is freed once none does.
 */
struct srv_cfg {
	struct xrl_http_cfg c;
	_Atomic __u32 held;
	struct srv_cfg *next;         /* retired */
};

/* One server thread: its daemon, its Redis pipe, what its epoll holds. */
struct loop {
	struct xrl_http_server *s;
	struct MHD_Daemon *d;
	struct xrl_redis_pipe *pipe;
	pthread_t thr;
	bool started;
	int ep;                       /* the daemon's epoll fd, the pipe's fd, stop_fd */
	int stop_fd;                  /* eventfd: leave the loop */
	int pipe_fd;                  /* the pipe's fd as registered (-1: none) */
	__u32 pipe_gen;
	short pipe_ev;
	int waiting;                  /* handlers that wait for Redis, unanswered */
};

struct xrl_http_server {
	struct loop *loops;
	unsigned n_loops;
	struct xrl_limiter *lim;
	pthread_rwlock_t mu;          /* cfg pointer vs reload */
	struct srv_cfg *cfg;
	struct srv_cfg *retired;      /* still held by a waiting request */
	_Atomic __u64 shed_tat;       /* global capacity bucket (GCRA, CAS) */
	_Atomic __u32 gen;            /* bumped by each reload (refusal cache) */
	_Atomic bool warned_untrusted; /* forwarded headers from an untrusted peer, logged once */
	_Atomic __u64 status[ST_MAX];
	_Atomic __u64 rule_refused[XRL_HTTP_MAX_RULES];
	_Atomic __u64 rule_shadow[XRL_HTTP_MAX_RULES];
	_Atomic __u64 rule_allowed[XRL_HTTP_MAX_RULES];
};

/*
 * One request. A decision that waits for Redis leaves the handler without
 * an answer (libmicrohttpd serves the others meanwhile and calls it again
 * on each pass); the loop's Redis pipe fills `d`, and the handler, called
 * again, answers from it.
 */
enum { RQ_NEW = 0, RQ_WAITING, RQ_DECIDED };
enum { K_AUTH, K_NGINX, K_CHECK };

struct req {
	char  *body;
	size_t len;
	bool   too_big;
	int    phase;                 /* RQ_* */
	bool   orphan;                /* closed while waiting: freed once decided */
	int    kind;                  /* K_*: how to answer */
	struct srv_cfg *cfg;          /* held while waiting: rules point into it */
	int    n;
	const struct xrl_http_rule *rules[XRL_HTTP_MAX_MATCH];
	__u32  cost;
	struct xrl_decision d;
};

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * XRL_NSEC_PER_SEC + (__u64)ts.tv_nsec;
}

/* ---- identity ------------------------------------------------------------------ */

/* The direct peer's address as text ("unknown" when there is none). */
static void peer_text(struct MHD_Connection *conn, char *out, size_t len)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	snprintf(out, len, "unknown");
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)len);
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out, (socklen_t)len);
}

static bool peer_trusted(const struct xrl_http_cfg *c, const char *peer)
{
	struct xrl_prefix p;

	return !xrl_http_addr_parse(peer, strlen(peer), &p) && xrl_http_trusted(c, &p);
}

/* All X-Forwarded-For fields, in order, as one list (RFC 9110 5.3): a proxy
 * may add its own field line after the client's instead of appending. */
static enum MHD_Result xff_join(void *cls, enum MHD_ValueKind kind, const char *key,
				const char *value)
{
	struct xrl_buf *b = cls;

	(void)kind;
	if (key && value && !strcasecmp(key, "X-Forwarded-For"))
		xrl_buf_printf(b, "%s%s", b->len ? "," : "", value);
	return MHD_YES;
}

/* The client address (xrl_http_client_addr): X-Forwarded-For is read only
 * when the peer is a trusted proxy. */
static void client_ip(const struct xrl_http_cfg *c, struct MHD_Connection *conn, char *out,
		      size_t len)
{
	char peer[INET6_ADDRSTRLEN];
	struct xrl_buf xb = {};

	peer_text(conn, peer, sizeof(peer));
	if (peer_trusted(c, peer))
		MHD_get_connection_values(conn, MHD_HEADER_KIND, xff_join, &xb);
	xrl_http_client_addr(c, peer, xb.oom ? NULL : xb.p, xb.oom ? 0 : xb.len, out, len);
	xrl_buf_free(&xb);
}

/*
 * The key of a client address: an IPv4 address as it is, an IPv6 address
 * as its /64 (one subscriber's allocation; keying on the full address would
 * give one client 2^64 buckets), as the packet tier does by default.
 */
static void client_key(const char *ip, char *out, size_t len)
{
	struct xrl_prefix p;
	__u32 m[4];

	if (!strchr(ip, ':') || xrl_http_addr_parse(ip, strlen(ip), &p)) {
		snprintf(out, len, "%s", ip);
		return;
	}
	xrl_prefix_mask(XRL_AF_INET6, 64, m);
	for (int i = 0; i < 4; i++)
		p.addr[i] &= m[i];
	p.plen = 64;
	xrl_prefix_str(&p, out, len);
}

/* Bearer tokens are never kept or logged: the key is a SHA-256 prefix. */
static bool bearer_key(struct MHD_Connection *conn, char *out, size_t len)
{
	const char *a = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (!a || strncasecmp(a, "Bearer ", 7))
		return false;
	a += 7;
	while (*a == ' ')
		a++;
	if (!*a || !EVP_Digest(a, strlen(a), md, &mdlen, EVP_sha256(), NULL))
		return false;
	for (unsigned i = 0; i < 16 && 2 * i + 2 < len; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	return true;
}

/* ---- answers ------------------------------------------------------------------- */

static void rate_words(const struct xrl_http_rule *r, char *buf, size_t len)
{
	static const struct { __u64 ns; const char *one, *many; } u[] = {
		{ 86400 * XRL_NSEC_PER_SEC, "day", "days" },
		{ 3600 * XRL_NSEC_PER_SEC, "hour", "hours" },
		{ 60 * XRL_NSEC_PER_SEC, "minute", "minutes" },
		{ XRL_NSEC_PER_SEC, "second", "seconds" },
		{ 1000000, "millisecond", "milliseconds" },
	};
	__u64 per = r->rate.period_ns, tok = r->rate.tokens;

	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
		if (per % u[i].ns)
			continue;
		__u64 n = per / u[i].ns;

		if (tok == 1 && n == 1)
			snprintf(buf, len, "1 per %s", u[i].one);
		else if (tok == 1)
			snprintf(buf, len, "1 every %llu %s", (unsigned long long)n, u[i].many);
		else if (n == 1)
			snprintf(buf, len, "%llu per %s", (unsigned long long)tok, u[i].one);
		else
			snprintf(buf, len, "%llu every %llu %s", (unsigned long long)tok,
				 (unsigned long long)n, u[i].many);
		return;
	}
	snprintf(buf, len, "%llu per %llu ns", (unsigned long long)tok, (unsigned long long)per);
}

static char *put_str(char *p, const char *s, size_t n)
{
	memcpy(p, s, n);
	return p + n;
}

/* The quota headers without printf: they are on every answer. */
static void add_quota_headers(const struct xrl_http_cfg *c, struct MHD_Response *resp,
			      const struct xrl_decision *d)
{
	char v[160], *p;
	size_t nl;

	if (!d->rule)
		return;
	nl = strnlen(d->rule->name, sizeof(d->rule->name));
	if (c->ietf_headers) {
		/* draft-ietf-httpapi-ratelimit-headers: quota q over window w
		 * (the time an empty bucket takes to fill); r left, t to reset */
		p = put_str(v, "\"", 1);
		p = put_str(p, d->rule->name, nl);
		p = put_str(p, "\";q=", 4);
		p = xrl_put_u64(p, d->limit);
		p = put_str(p, ";w=", 3);
		p = xrl_put_u64(p, (d->rule->g.tau_ns + XRL_NSEC_PER_SEC - 1) / XRL_NSEC_PER_SEC);
		*p = '\0';
		MHD_add_response_header(resp, "RateLimit-Policy", v);
		p = put_str(v, "\"", 1);
		p = put_str(p, d->rule->name, nl);
		p = put_str(p, "\";r=", 4);
		p = xrl_put_u64(p, d->remaining);
		p = put_str(p, ";t=", 3);
		p = xrl_put_u64(p, d->reset_s);
		*p = '\0';
		MHD_add_response_header(resp, "RateLimit", v);
	}
	if (c->x_ratelimit_headers) {
		*xrl_put_u64(v, d->limit) = '\0';
		MHD_add_response_header(resp, "X-RateLimit-Limit", v);
		*xrl_put_u64(v, d->remaining) = '\0';
		MHD_add_response_header(resp, "X-RateLimit-Remaining", v);
		*xrl_put_u64(v, (__u64)time(NULL) + d->reset_s) = '\0';
		MHD_add_response_header(resp, "X-RateLimit-Reset", v);
	}
}

static struct MHD_Response *make_response(const char *ctype, struct xrl_buf *b,
					  const struct xrl_http_cfg *c, const struct xrl_decision *d)
{
	struct MHD_Response *resp;
	char v[32];

	resp = b->len ? MHD_create_response_from_buffer(b->len, b->p, MHD_RESPMEM_MUST_COPY)
		      : MHD_create_response_from_buffer(0, (char *)"", MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return NULL;
	if (ctype)
		MHD_add_response_header(resp, "Content-Type", ctype);
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	if (c && d) {
		add_quota_headers(c, resp, d);
		if (!d->allowed) {
			snprintf(v, sizeof(v), "%llu", (unsigned long long)d->retry_after_s);
			MHD_add_response_header(resp, "Retry-After", v);
			if (d->rule)
				MHD_add_response_header(resp, "X-XRL-Rule", d->rule->name);
		}
	}
	return resp;
}

static enum MHD_Result send_buf(struct MHD_Connection *conn, unsigned status, const char *ctype,
				struct xrl_buf *b, const struct xrl_http_cfg *c,
				const struct xrl_decision *d)
{
	struct MHD_Response *resp = make_response(ctype, b, c, d);
	enum MHD_Result ret;

	if (!resp)
		return MHD_NO;
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result problem(struct MHD_Connection *conn, unsigned status, const char *title,
			       const char *detail)
{
	struct xrl_buf b = {};
	enum MHD_Result r;

	xrl_buf_printf(&b, "{\"type\":\"about:blank\",\"title\":");
	buf_json_str(&b, title);
	xrl_buf_printf(&b, ",\"status\":%u,\"detail\":", status);
	buf_json_str(&b, detail);
	xrl_buf_printf(&b, "}\n");
	r = send_buf(conn, status, "application/problem+json", &b, NULL, NULL);
	xrl_buf_free(&b);
	return r;
}

/* 429/503 body: which limit, in a sentence a person understands. */
static void refusal_body(struct xrl_buf *b, const struct xrl_decision *d, unsigned status)
{
	char rate[96], detail[512];
	const char *rn = d->rule ? d->rule->name : "capacity";

	if (d->rule)
		rate_words(d->rule, rate, sizeof(rate));
	if (d->shed && d->backend_error)
		snprintf(detail, sizeof(detail),
			 "The rate-limit store for \"%s\" is unavailable and this limit fails closed; "
			 "try again in %llu second%s.", rn, (unsigned long long)d->retry_after_s,
			 d->retry_after_s == 1 ? "" : "s");
	else if (d->shed)
		snprintf(detail, sizeof(detail),
			 "The service is shedding load; try again in %llu second%s.",
			 (unsigned long long)d->retry_after_s, d->retry_after_s == 1 ? "" : "s");
	else if (d->missing_key)
		snprintf(detail, sizeof(detail),
			 "Requests to this route are limited per caller (rule \"%s\") and this request "
			 "did not say who the caller is.", rn);
	else if (d->penalized)
		snprintf(detail, sizeof(detail),
			 "You went over the limit \"%s\" (%s, bursts of %llu) repeatedly and are blocked "
			 "for %llu more second%s.", rn, rate, (unsigned long long)d->limit,
			 (unsigned long long)d->retry_after_s, d->retry_after_s == 1 ? "" : "s");
	else
		snprintf(detail, sizeof(detail),
			 "You have used up the limit \"%s\": %s, in bursts of up to %llu. "
			 "Try again in %llu second%s.", rn, rate, (unsigned long long)d->limit,
			 (unsigned long long)d->retry_after_s, d->retry_after_s == 1 ? "" : "s");
	xrl_buf_printf(b, "{\"type\":\"about:blank\",\"title\":\"%s\",\"status\":%u,\"detail\":",
		       status == 503 ? "Service Unavailable" : "Too Many Requests", status);
	buf_json_str(b, detail);
	xrl_buf_printf(b, ",\"rule\":");
	buf_json_str(b, rn);
	xrl_buf_printf(b, ",\"limit\":%llu,\"remaining\":%llu,\"retry_after\":%llu}\n",
		       (unsigned long long)d->limit, (unsigned long long)d->remaining,
		       (unsigned long long)d->retry_after_s);
}

/*
 * A refusal is the same answer, byte for byte, for as long as its numbers
 * are (the same rule, remaining, reset, retry-after, in the same second):
 * a key that floods gets one response object per thread and second, queued
 * again and again (libmicrohttpd counts its references).
 */
struct refusal_cache {
	const struct xrl_http_server *srv;
	__u32 gen;
	const struct xrl_http_rule *rule;
	__u64 limit, remaining, reset_s, retry_after_s;
	time_t now_s;
	unsigned status;
	bool missing, penalized;
	struct MHD_Response *resp;
};
static __thread struct refusal_cache tl_refusal;

static enum MHD_Result send_refusal(struct xrl_http_server *s, const struct xrl_http_cfg *c,
				    struct MHD_Connection *conn, unsigned status,
				    const struct xrl_decision *d)
{
	struct refusal_cache *rc = &tl_refusal;
	__u32 gen = atomic_load(&s->gen);
	time_t now_s = time(NULL);

	if (!rc->resp || rc->srv != s || rc->gen != gen || rc->rule != d->rule ||
	    rc->status != status || rc->limit != d->limit || rc->remaining != d->remaining ||
	    rc->reset_s != d->reset_s || rc->retry_after_s != d->retry_after_s ||
	    rc->now_s != now_s || rc->missing != d->missing_key || rc->penalized != d->penalized) {
		struct xrl_buf b = {};
		struct MHD_Response *resp;

		refusal_body(&b, d, 429);
		resp = make_response("application/problem+json", &b, c, d);
		xrl_buf_free(&b);
		if (!resp)
			return MHD_NO;
		if (rc->resp)
			MHD_destroy_response(rc->resp);
		*rc = (struct refusal_cache){ .srv = s, .gen = gen, .rule = d->rule, .limit = d->limit,
					      .remaining = d->remaining, .reset_s = d->reset_s,
					      .retry_after_s = d->retry_after_s, .now_s = now_s,
					      .status = status, .missing = d->missing_key,
					      .penalized = d->penalized, .resp = resp };
	}
	return MHD_queue_response(conn, status, rc->resp);
}

/* The global capacity bucket: one CAS on a shared TAT. */
static bool shed_check(struct xrl_http_server *s, const struct xrl_http_cfg *c, __u64 *wait)
{
	__u64 now = mono_ns(), old, nt;

	if (!c->shed_enabled)
		return false;
	old = atomic_load(&s->shed_tat);
	for (int i = 0; i < 8; i++) {
		if (!xrl_gcra_decide(old, now, c->shed_g.emit_ns, c->shed_g.tau_ns, &nt)) {
			*wait = xrl_gcra_wait(old, now, c->shed_g.emit_ns, c->shed_g.tau_ns);
			return true;
		}
		if (atomic_compare_exchange_weak(&s->shed_tat, &old, nt))
			return false;
	}
	return false;
}

static int rule_index(const struct xrl_http_cfg *c, const struct xrl_http_rule *r)
{
	return r ? (int)(r - c->rules) : -1;
}

static void count_decision(struct xrl_http_server *s, const struct xrl_http_cfg *c,
			   const struct xrl_http_rule *const *rules, int n,
			   const struct xrl_decision *d)
{
	int ri = rule_index(c, d->rule);

	if (d->allowed) {
		for (int i = 0; i < n; i++)
			atomic_fetch_add(&s->rule_allowed[rule_index(c, rules[i])], 1);
	} else if (ri >= 0 && ri < XRL_HTTP_MAX_RULES) {
		atomic_fetch_add(&s->rule_refused[ri], 1);
	}
}

/* The loop of the thread running (a handler runs in its loop's thread). */
static __thread struct loop *tl_loop;

/* Waiting for Redis: called before the decision is queued. */
static void rq_wait(void *arg)
{
	struct req *rq = arg;

	atomic_fetch_add(&rq->cfg->held, 1);
	rq->phase = RQ_WAITING;
	tl_loop->waiting++;
}

/* From the loop's pipe: rq->d is the decision; the next pass answers it. */
static void rq_decided(void *arg)
{
	struct req *rq = arg;

	rq->phase = RQ_DECIDED;
	if (rq->orphan) {
		atomic_fetch_sub(&rq->cfg->held, 1);
		free(rq->body);
		free(rq);
	}
}

static void rq_release(struct req *rq)
{
	if (rq->cfg && rq->phase != RQ_NEW)
		atomic_fetch_sub(&rq->cfg->held, 1);
	rq->cfg = NULL;
	rq->phase = RQ_NEW;
}

/*
 * Decide into rq->d: 0 decided (or -E2BIG), 1 when it waits for Redis
 * (answered on a later call). The rules are of sc (s->mu held).
 */
static int decide(struct xrl_http_server *s, struct srv_cfg *sc, struct req *rq,
		  const struct xrl_http_rule *const *rules, const char *const *keys,
		  const __u32 *costs, int n)
{
	struct xrl_limiter_wait w = { .queued = rq_wait, .decided = rq_decided, .arg = rq };
	int rc;

	if (!tl_loop || tl_loop->s != s)
		return xrl_limiter_decide(s->lim, rules, keys, costs, n, &rq->d);
	rq->cfg = sc;
	rq->n = n;
	memcpy(rq->rules, rules, sizeof(rules[0]) * (size_t)n);
	rc = xrl_limiter_decide_async(s->lim, tl_loop->pipe, rules, keys, costs, n, &rq->d, &w);
	if (rc != 1)
		rq->cfg = NULL;
	return rc;
}

/* The answer to /v1/auth and /v1/auth/nginx once decided. */
static enum MHD_Result auth_answer(struct xrl_http_server *s, const struct srv_cfg *sc,
				   struct MHD_Connection *conn, bool nginx,
				   const struct xrl_http_rule *const *rules, int n,
				   const struct xrl_decision *d)
{
	const struct xrl_http_cfg *c = &sc->c;
	struct xrl_buf b = {};
	enum MHD_Result ret;
	unsigned status;

	/* the per-rule counters are by index in the configuration in force */
	if (rules && sc == s->cfg)
		count_decision(s, c, rules, n, d);
	if (d->allowed) {
		status = MHD_HTTP_OK;
		atomic_fetch_add(&s->status[ST_200], 1);
	} else if (d->shed) {
		status = nginx ? MHD_HTTP_UNAUTHORIZED : MHD_HTTP_SERVICE_UNAVAILABLE;
		atomic_fetch_add(&s->status[nginx ? ST_401 : ST_503], 1);
		refusal_body(&b, d, 503);
	} else {
		status = nginx ? MHD_HTTP_FORBIDDEN : MHD_HTTP_TOO_MANY_REQUESTS;
		atomic_fetch_add(&s->status[nginx ? ST_403 : ST_429], 1);
		return send_refusal(s, c, conn, status, d);
	}
	ret = send_buf(conn, status, d->allowed ? "text/plain" : "application/problem+json", &b, c, d);
	xrl_buf_free(&b);
	return ret;
}

/* The forwarded headers of the configured kind: their values, and whether
 * one came twice (a client's copy beside the proxy's). */
struct fwd_scan {
	const char *mh, *uh, *m, *u;
	bool dup;
};

static enum MHD_Result fwd_scan_one(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	struct fwd_scan *f = cls;

	(void)kind;
	if (key && !strcasecmp(key, f->mh)) {
		f->dup |= f->m != NULL;
		f->m = value ? value : "";
	} else if (key && !strcasecmp(key, f->uh)) {
		f->dup |= f->u != NULL;
		f->u = value ? value : "";
	}
	return MHD_YES;
}

/*
 * The method and normalised path rules see (xrl_http_original): the
 * headers of http.forwarded_from, from a trusted proxy only. Returns 0, or
 * -errno once a 400 or 414 is queued (*ret its result).
 */
static int original_of(struct xrl_http_server *s, const struct xrl_http_cfg *c,
		       struct MHD_Connection *conn, const char *method, const char *url,
		       const char **om, char *path, size_t pathlen, enum MHD_Result *ret)
{
	struct fwd_scan f = {};
	char peer[INET6_ADDRSTRLEN];
	const char *why = "";
	bool trusted = false;
	int rc;

	xrl_http_fwd_headers(c->forwarded_from, &f.mh, &f.uh);
	if (f.mh) {
		peer_text(conn, peer, sizeof(peer));
		trusted = peer_trusted(c, peer);
		if (trusted)
			MHD_get_connection_values(conn, MHD_HEADER_KIND, fwd_scan_one, &f);
		else if (MHD_lookup_connection_value(conn, MHD_HEADER_KIND, f.uh) &&
			 !atomic_exchange(&s->warned_untrusted, true))
			log_warnx("http: %s from %s is ignored, as %s is not in http.trusted_proxies: "
				  "rules see the request's own line (said once)", f.uh, peer, peer);
	}
	rc = xrl_http_original(c, trusted, method, url, f.m, f.u, f.dup, om, path, pathlen, &why);
	if (!rc)
		return 0;
	if (rc == -ENAMETOOLONG) {
		atomic_fetch_add(&s->status[ST_414], 1);
		*ret = problem(conn, 414, "URI Too Long", why);
	} else {
		atomic_fetch_add(&s->status[ST_400], 1);
		*ret = problem(conn, 400, "Bad Request", why);
	}
	return rc;
}

/* The key of rule r for this request into kb (NULL: the request has none,
 * before on_missing_key); ip is the client address, found once. */
static const char *rule_key(const struct xrl_http_cfg *c, struct MHD_Connection *conn,
			    const struct xrl_http_rule *r, char *kb, size_t kblen, char *ip,
			    size_t iplen)
{
	const char *v = NULL;

	switch (r->key_kind) {
	case XRL_KEY_HEADER:
		v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, r->header);
		if (!v || !*v)
			return NULL;
		return v; /* whole: the limiter copies what it keeps (a 4 KiB JWT too) */
	case XRL_KEY_BEARER:
		return bearer_key(conn, kb, kblen) ? kb : NULL;
	case XRL_KEY_CLIENT_IP:
		break;
	}
	if (!ip[0])
		client_ip(c, conn, ip, iplen);
	client_key(ip, kb, kblen);
	return kb;
}

/*
 * Forward-auth: which rules match the original request, their keys, one
 * decision. nginx: refusals as 403 and shedding as 401 (see the top).
 */
static enum MHD_Result do_auth(struct xrl_http_server *s, struct srv_cfg *sc,
			       struct MHD_Connection *conn, struct req *rq, const char *method,
			       const char *url, bool nginx)
{
	const struct xrl_http_cfg *c = &sc->c;
	const struct xrl_http_rule *rules[XRL_HTTP_MAX_MATCH];
	char keybuf[XRL_HTTP_MAX_MATCH][XRL_HTTP_KEY_MAX + 1];
	const char *keys[XRL_HTTP_MAX_MATCH];
	const char *om;
	char path[XRL_HTTP_PATH_MAX + 1], ip[INET6_ADDRSTRLEN] = "";
	enum MHD_Result ret;
	__u64 wait;
	int n = 0;

	if (original_of(s, c, conn, method, url, &om, path, sizeof(path), &ret))
		return ret;
	if (shed_check(s, c, &wait)) {
		struct xrl_decision d = { .allowed = false, .shed = true };

		d.retry_after_s = (wait + XRL_NSEC_PER_SEC - 1) / XRL_NSEC_PER_SEC;
		if (!d.retry_after_s)
			d.retry_after_s = 1;
		return auth_answer(s, sc, conn, nginx, NULL, 0, &d);
	}

	for (__u32 i = 0; i < c->n_rules && n < XRL_HTTP_MAX_MATCH; i++) {
		const struct xrl_http_rule *r = &c->rules[i];
		const char *v;

		if (!xrl_http_rule_match(c, r, om, path))
			continue;
		v = rule_key(c, conn, r, keybuf[n], sizeof(keybuf[n]), ip, sizeof(ip));
		if (!v) {
			if (r->on_missing_key == XRL_MISSING_SKIP)
				continue;
			if (r->on_missing_key == XRL_MISSING_CLIENT_IP) {
				if (!ip[0])
					client_ip(c, conn, ip, sizeof(ip));
				client_key(ip, keybuf[n], sizeof(keybuf[n]));
				v = keybuf[n];
			}
		}
		rules[n] = r;
		keys[n] = v;
		n++;
	}
	rq->kind = nginx ? K_NGINX : K_AUTH;
	if (decide(s, sc, rq, rules, keys, NULL, n) == 1)
		return MHD_YES; /* answered once Redis has decided */
	return auth_answer(s, sc, conn, nginx, rules, n, &rq->d);
}

/* The answer to /v1/check once decided. */
static enum MHD_Result check_answer(struct xrl_http_server *s, const struct srv_cfg *sc,
				    struct MHD_Connection *conn, const struct xrl_http_rule *r,
				    struct xrl_decision *d)
{
	const struct xrl_http_cfg *c = &sc->c;
	struct xrl_buf b = {};
	enum MHD_Result ret;
	unsigned status;

	if (sc == s->cfg)
		count_decision(s, c, &r, 1, d);
	if (!d->rule) {
		d->rule = r;
		d->limit = r->burst;
		d->remaining = r->burst;
	}
	status = d->allowed ? 200 : d->shed ? 503 : 429;
	atomic_fetch_add(&s->status[d->allowed ? ST_200 : d->shed ? ST_503 : ST_429], 1);
	xrl_buf_printf(&b, "{\"allowed\":%s,\"rule\":", d->allowed ? "true" : "false");
	buf_json_str(&b, r->name);
	xrl_buf_printf(&b, ",\"limit\":%llu,\"remaining\":%llu,\"retry_after\":%llu,\"reset\":%llu",
		       (unsigned long long)d->limit, (unsigned long long)d->remaining,
		       (unsigned long long)(d->allowed ? 0 : d->retry_after_s), (unsigned long long)d->reset_s);
	if (!d->allowed) {
		struct xrl_buf t = {};

		refusal_body(&t, d, status);
		/* the sentence of the problem body, for the application to show */
		json_t *pj = json_loadb(t.p, t.len, 0, NULL);

		xrl_buf_printf(&b, ",\"detail\":");
		buf_json_str(&b, pj ? json_string_value(json_object_get(pj, "detail")) : "");
		json_decref(pj);
		xrl_buf_free(&t);
	}
	xrl_buf_printf(&b, "}\n");
	ret = send_buf(conn, status, "application/json", &b, c, d);
	xrl_buf_free(&b);
	return ret;
}

static enum MHD_Result do_check(struct xrl_http_server *s, struct srv_cfg *sc,
				struct MHD_Connection *conn, struct req *rq)
{
	const struct xrl_http_cfg *c = &sc->c;
	const struct xrl_http_rule *r = NULL;
	const char *rule, *key;
	json_error_t je;
	json_t *j, *jc;
	__u32 cost;
	int rc;

	if (rq->too_big)
		return problem(conn, 413, "Payload Too Large", "the body of /v1/check is at most 16 KiB");
	j = json_loadb(rq->body ? rq->body : "", rq->len, 0, &je);
	if (!j || !json_is_object(j)) {
		char msg[300];

		snprintf(msg, sizeof(msg), "expected a JSON object {\"rule\":...,\"key\":...,\"cost\":...}: %s",
			 j ? "not an object" : je.text);
		json_decref(j);
		atomic_fetch_add(&s->status[ST_400], 1);
		return problem(conn, 400, "Bad Request", msg);
	}
	rule = json_string_value(json_object_get(j, "rule"));
	key = json_string_value(json_object_get(j, "key"));
	jc = json_object_get(j, "cost");
	if (!rule || !key || !*key || (jc && (!json_is_integer(jc) || json_integer_value(jc) < 0 ||
					       json_integer_value(jc) > 100000000))) {
		json_decref(j);
		atomic_fetch_add(&s->status[ST_400], 1);
		return problem(conn, 400, "Bad Request",
			       "\"rule\" and \"key\" must be non-empty strings and \"cost\", if given, a whole number >= 0");
	}
	for (__u32 i = 0; i < c->n_rules; i++)
		if (!strcmp(c->rules[i].name, rule))
			r = &c->rules[i];
	if (!r) {
		char msg[128];

		snprintf(msg, sizeof(msg), "no http rule named \"%.64s\"", rule);
		json_decref(j);
		atomic_fetch_add(&s->status[ST_404], 1);
		return problem(conn, 404, "Not Found", msg);
	}
	cost = jc ? (__u32)json_integer_value(jc) : r->cost;
	{
		const char *keys[1] = { key }; /* whole: the limiter copies what it keeps */

		rq->kind = K_CHECK;
		rq->cost = cost;
		rc = decide(s, sc, rq, &r, keys, &cost, 1);
	}
	json_decref(j);
	if (rc == 1)
		return MHD_YES; /* answered once Redis has decided */
	if (rc == -E2BIG) {
		char msg[160];

		snprintf(msg, sizeof(msg), "cost %u is above the burst %u of rule \"%s\" and could never be allowed",
			 cost, r->burst, r->name);
		atomic_fetch_add(&s->status[ST_400], 1);
		return problem(conn, 400, "Bad Request", msg);
	}
	return check_answer(s, sc, conn, r, &rq->d);
}

/* Envoy's ext_authz (and none) ask with the original method and path, after
 * the path_prefix /v1/auth: every path under it is the auth endpoint. */
static bool own_line(const struct xrl_http_cfg *c)
{
	return c->forwarded_from == XRL_FWD_ENVOY || c->forwarded_from == XRL_FWD_NONE;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct xrl_http_server *s = cls;
	struct req *rq = *con_cls;
	enum MHD_Result ret;
	bool post = !strcmp(method, MHD_HTTP_METHOD_POST);

	(void)version;
	if (!rq) {
		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		*con_cls = rq;
		/* answer on the next call, once the request (and any body) is
		 * read: a 4xx queued before that makes libmicrohttpd close the
		 * connection, and refusals must keep it alive like admits */
		return MHD_YES;
	}
	if (rq->phase == RQ_WAITING)
		return MHD_YES; /* no answer yet: called again on the next pass */
	if (rq->phase == RQ_DECIDED) {
		/* Redis has decided; the rules are of rq->cfg, held */
		tl_loop->waiting--;
		pthread_rwlock_rdlock(&s->mu);
		if (rq->kind == K_CHECK)
			ret = check_answer(s, rq->cfg, conn, rq->rules[0], &rq->d);
		else
			ret = auth_answer(s, rq->cfg, conn, rq->kind == K_NGINX, rq->rules, rq->n, &rq->d);
		rq_release(rq);
		pthread_rwlock_unlock(&s->mu);
		return ret;
	}
	if (*upload_size) {
		if (!rq->too_big && rq->len + *upload_size <= BODY_MAX) {
			char *nb = realloc(rq->body, rq->len + *upload_size + 1);

			if (nb) {
				memcpy(nb + rq->len, upload, *upload_size);
				rq->body = nb;
				rq->len += *upload_size;
			}
		} else {
			rq->too_big = true;
		}
		*upload_size = 0;
		return MHD_YES;
	}

	pthread_rwlock_rdlock(&s->mu);
	if (!strcmp(url, "/v1/auth") || (own_line(&s->cfg->c) && !strncmp(url, "/v1/auth/", 9)))
		ret = do_auth(s, s->cfg, conn, rq, method, url, false);
	else if (!strcmp(url, "/v1/auth/nginx"))
		ret = do_auth(s, s->cfg, conn, rq, method, url, true);
	else if (!strcmp(url, "/v1/check")) {
		if (!post) {
			atomic_fetch_add(&s->status[ST_405], 1);
			ret = problem(conn, 405, "Method Not Allowed", "/v1/check takes POST");
		} else {
			ret = do_check(s, s->cfg, conn, rq);
		}
	} else if (!strcmp(url, "/healthz")) {
		struct xrl_buf b = {};
		int bs = xrl_limiter_breaker_state(s->lim);

		xrl_buf_printf(&b, "ok%s\n", !s->cfg->c.redis ? "" : bs == 0 ? " (redis: up)"
				     : " (redis: down, rules on their fallback)");
		ret = send_buf(conn, 200, "text/plain", &b, NULL, NULL);
		xrl_buf_free(&b);
	} else {
		atomic_fetch_add(&s->status[ST_404], 1);
		ret = problem(conn, 404, "Not Found", "try /v1/auth, /v1/auth/nginx, /v1/check or /healthz");
	}
	pthread_rwlock_unlock(&s->mu);
	return ret;
}

static void on_done(void *cls, struct MHD_Connection *conn, void **con_cls,
		    enum MHD_RequestTerminationCode toe)
{
	struct req *rq = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (!rq)
		return;
	*con_cls = NULL;
	/* closed before it was answered (the client went away, or stop) */
	if (rq->phase != RQ_NEW && tl_loop)
		tl_loop->waiting--;
	if (rq->phase == RQ_WAITING) {
		rq->orphan = true; /* the pipe still writes its decision */
		return;
	}
	rq_release(rq);
	free(rq->body);
	free(rq);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];

	(void)cls;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	log_debug("http: %s", buf);
}

/*
 * The path as it came, not %-decoded: xrl_http_path_norm decodes it once,
 * with the same rules as the forwarded URI (libmicrohttpd's own decoding
 * would turn %00 into the end of the string and %2F into a '/' before the
 * normaliser could refuse or count them).
 */
static size_t url_as_is(void *cls, struct MHD_Connection *conn, char *uri)
{
	(void)cls;
	(void)conn;
	return strlen(uri);
}

static int parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[80];
	int port;

	if (xrl_hostport_parse(s, strlen(s), host, sizeof(host), &port))
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	if (strchr(host, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
			return -EINVAL;
		*len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			return -EINVAL;
		*len = sizeof(*a);
	}
	return 0;
}

/* ---- the event loops ------------------------------------------------------------ */

enum { EV_MHD = 0, EV_STOP, EV_PIPE };

/* The pipe's fd in the loop's epoll, as it is now (a new connection is a
 * new fd; a closed one left the epoll set when it was closed). */
static void loop_pipe_reg(struct loop *lp, int fd, short ev, __u32 gen)
{
	struct epoll_event e = { .events = (ev & POLLIN ? EPOLLIN : 0u) | (ev & POLLOUT ? EPOLLOUT : 0u),
				 .data.u32 = EV_PIPE };

	if (fd == lp->pipe_fd && gen == lp->pipe_gen && ev == lp->pipe_ev)
		return;
	if (fd >= 0) {
		if (fd == lp->pipe_fd && gen == lp->pipe_gen)
			epoll_ctl(lp->ep, EPOLL_CTL_MOD, fd, &e);
		else if (epoll_ctl(lp->ep, EPOLL_CTL_ADD, fd, &e) && errno == EEXIST)
			epoll_ctl(lp->ep, EPOLL_CTL_MOD, fd, &e);
	}
	lp->pipe_fd = fd;
	lp->pipe_gen = gen;
	lp->pipe_ev = ev;
}

static void *loop_main(void *arg)
{
	struct loop *lp = arg;
	struct epoll_event ev[8];
	bool run_mhd = true;
	sigset_t all;

	/* signals are for the main thread */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	tl_loop = lp;
	/* this thread parses what clients send: no capability, no bpf() */
	prctl(PR_SET_NAME, "xrld-http", 0, 0, 0);
	if (xrl_thread_confine())
		log_warnx("couldn't confine an identity-tier thread (seccomp): it runs with xrld's privileges");
	for (;;) {
		MHD_UNSIGNED_LONG_LONG mto;
		__u64 pto;
		short pev = 0, prev = 0;
		__u32 gen;
		int fd, n, ms = -1;

		if (run_mhd)
			MHD_run(lp->d);
		/* every ready connection is served: what they queued for Redis
		 * goes out now, if the pipe is free (else with the next batch).
		 * Decided at once (the breaker is open): answer them first */
		run_mhd = xrl_limiter_pipe_run(lp->pipe, 0) > 0;
		if (run_mhd)
			continue;
		fd = xrl_limiter_pipe_poll(lp->pipe, &pev, &pto, &gen);
		loop_pipe_reg(lp, fd, pev, gen);
		if (MHD_get_timeout(lp->d, &mto) == MHD_YES)
			ms = mto > INT_MAX ? INT_MAX : (int)mto;
		/* "now" is (also) the handlers waiting for Redis: within 1 ms */
		if (ms == 0 && lp->waiting > 0)
			ms = 1;
		if (pto != UINT64_MAX) {
			__u64 pms = (pto + 999999) / 1000000;

			if (ms < 0 || pms < (__u64)ms)
				ms = (int)pms;
		}
		n = epoll_wait(lp->ep, ev, 8, ms);
		run_mhd = n <= 0; /* a timeout: libmicrohttpd's idle connections */
		for (int i = 0; i < n; i++) {
			switch (ev[i].data.u32) {
			case EV_STOP:
				goto out;
			case EV_MHD:
				run_mhd = true;
				break;
			default:
				prev = (short)((ev[i].events & EPOLLIN ? POLLIN : 0) |
					       (ev[i].events & EPOLLOUT ? POLLOUT : 0) |
					       (ev[i].events & EPOLLERR ? POLLERR : 0) |
					       (ev[i].events & EPOLLHUP ? POLLHUP : 0));
				break;
			}
		}
		/* replies, or the batch's timeout: libmicrohttpd's next pass
		 * answers the decided */
		if ((prev || pto != UINT64_MAX) && xrl_limiter_pipe_run(lp->pipe, prev) > 0)
			run_mhd = true;
	}
out:
	/* whatever still waits for Redis falls back (the daemon closes
	 * those connections as it stops) */
	xrl_limiter_pipe_abort(lp->pipe);
	if (tl_refusal.resp) /* a response, once queued, is libmicrohttpd's too */
		MHD_destroy_response(tl_refusal.resp);
	tl_refusal.resp = NULL;
	return NULL;
}

static void loops_stop(struct xrl_http_server *s)
{
	for (unsigned i = 0; i < s->n_loops; i++) {
		__u64 one = 1;

		if (s->loops[i].started && write(s->loops[i].stop_fd, &one, sizeof(one)) != sizeof(one))
			log_warnx("http: couldn't stop server thread %u", i);
	}
	for (unsigned i = 0; i < s->n_loops; i++)
		if (s->loops[i].started)
			pthread_join(s->loops[i].thr, NULL);
	/* the others share the first one's listening socket: only it closes it */
	for (unsigned i = s->n_loops; i-- > 0;) {
		struct loop *lp = &s->loops[i];

		if (lp->d) {
			if (i > 0)
				MHD_quiesce_daemon(lp->d);
			MHD_stop_daemon(lp->d);
		}
		xrl_limiter_pipe_free(lp->pipe);
		if (lp->ep >= 0)
			close(lp->ep);
		if (lp->stop_fd >= 0)
			close(lp->stop_fd);
	}
	free(s->loops);
	s->loops = NULL;
	s->n_loops = 0;
}

int xrl_http_start(const struct xrl_http_cfg *c, struct xrl_http_server **out, char *err,
		   size_t errlen)
{
	struct xrl_http_server *s = calloc(1, sizeof(*s));
	struct sockaddr_storage ss;
	socklen_t sl;
	/* no internal thread: each server thread runs a daemon in its own loop */
	unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	unsigned n = c->threads ? c->threads : 2, maxc = c->max_connections ? c->max_connections : 1024;
	MHD_socket lfd = MHD_INVALID_SOCKET;
	int rc;

	if (!s)
		return -ENOMEM;
	if (parse_listen(c->listen, &ss, &sl)) {
		snprintf(err, errlen, "http listen: expected HOST:PORT or [V6]:PORT, got '%s'", c->listen);
		free(s);
		return -EINVAL;
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->cfg = calloc(1, sizeof(*s->cfg));
	s->loops = calloc(n, sizeof(*s->loops));
	if (!s->cfg || !s->loops) {
		free(s->cfg);
		free(s->loops);
		free(s);
		return -ENOMEM;
	}
	s->n_loops = n;
	s->cfg->c = *c;
	pthread_rwlock_init(&s->mu, NULL);
	rc = xrl_limiter_new(c, &s->lim);
	if (rc) {
		snprintf(err, errlen, "couldn't set up the buckets: %s", strerror(-rc));
		free(s->cfg);
		free(s->loops);
		free(s);
		return rc;
	}
	for (unsigned i = 0; i < n; i++) {
		struct loop *lp = &s->loops[i];
		/* the connection limit, shared out as libmicrohttpd's thread pool does */
		unsigned limit = maxc / n + (i < maxc % n);

		lp->s = s;
		lp->ep = lp->stop_fd = lp->pipe_fd = -1;
		lp->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
					 i ? MHD_OPTION_LISTEN_SOCKET : MHD_OPTION_SOCK_ADDR,
					 i ? (void *)(intptr_t)lfd : (void *)&ss,
					 MHD_OPTION_CONNECTION_LIMIT, limit ? limit : 1,
					 /* whole seconds, rounded up: 0 would mean none
					  * (the parser takes 1 s to 1 day) */
					 MHD_OPTION_CONNECTION_TIMEOUT,
					 (unsigned)((c->idle_timeout_ns + XRL_NSEC_PER_SEC - 1) / XRL_NSEC_PER_SEC),
					 MHD_OPTION_UNESCAPE_CALLBACK, url_as_is, NULL,
					 /* request line + headers live in this pool: its size is the
					  * header bound, beyond which libmicrohttpd answers 431 */
					 MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)c->max_header_bytes + 4096,
					 MHD_OPTION_NOTIFY_COMPLETED, on_done, s,
					 MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
					 MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024U,
					 MHD_OPTION_END);
		if (!lp->d) {
			if (!i)
				snprintf(err, errlen, "couldn't listen on %s (in use, or not an address of this host?)",
					 c->listen);
			else
				snprintf(err, errlen, "couldn't start http server thread %u", i);
			rc = i ? -ENOMEM : -EADDRINUSE;
			goto fail;
		}
		if (!i) {
			const union MHD_DaemonInfo *di = MHD_get_daemon_info(lp->d, MHD_DAEMON_INFO_LISTEN_FD);

			lfd = di ? di->listen_fd : MHD_INVALID_SOCKET;
		}
		{
			const union MHD_DaemonInfo *di = MHD_get_daemon_info(lp->d, MHD_DAEMON_INFO_EPOLL_FD);
			struct epoll_event e = { .events = EPOLLIN };

			lp->ep = epoll_create1(EPOLL_CLOEXEC);
			lp->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			lp->pipe = xrl_limiter_pipe_new(s->lim);
			rc = -ENOMEM;
			if (!di || lp->ep < 0 || lp->stop_fd < 0 || !lp->pipe || lfd == MHD_INVALID_SOCKET) {
				snprintf(err, errlen, "couldn't set up http server thread %u", i);
				goto fail;
			}
			e.data.u32 = EV_MHD;
			if (epoll_ctl(lp->ep, EPOLL_CTL_ADD, di->epoll_fd, &e))
				goto fail;
			e.data.u32 = EV_STOP;
			if (epoll_ctl(lp->ep, EPOLL_CTL_ADD, lp->stop_fd, &e))
				goto fail;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		if (pthread_create(&s->loops[i].thr, NULL, loop_main, &s->loops[i])) {
			snprintf(err, errlen, "couldn't start http server thread %u", i);
			rc = -EAGAIN;
			goto fail;
		}
		s->loops[i].started = true;
	}
	log_info("identity tier listening on %s, %u rules, backend %s, %u threads", c->listen,
		 c->n_rules, c->redis ? "redis" : "memory", n);
	*out = s;
	return 0;
fail:
	loops_stop(s);
	xrl_limiter_free(s->lim);
	free(s->cfg);
	free(s);
	return rc;
}

int xrl_http_reload(struct xrl_http_server *s, const struct xrl_http_cfg *c)
{
	struct srv_cfg *n = calloc(1, sizeof(*n)), **pp, *x;
	char changed[160];

	if (!n)
		return -ENOMEM;
	n->c = *c;
	pthread_rwlock_wrlock(&s->mu);
	/* libmicrohttpd was started with these: they stay as they run, and the
	 * configuration in force says so */
	if (xrl_http_cfg_restart_diff(&s->cfg->c, c, changed, sizeof(changed))) {
		snprintf(n->c.listen, sizeof(n->c.listen), "%s", s->cfg->c.listen);
		n->c.idle_timeout_ns = s->cfg->c.idle_timeout_ns;
		n->c.max_connections = s->cfg->c.max_connections;
		n->c.max_header_bytes = s->cfg->c.max_header_bytes;
		n->c.memory_max_keys = s->cfg->c.memory_max_keys;
		n->c.threads = s->cfg->c.threads;
	}
	s->cfg->next = s->retired;
	s->retired = s->cfg;
	s->cfg = n;
	/* no request in a handler holds one (we have the write lock); those
	 * waiting for Redis count theirs */
	for (pp = &s->retired; (x = *pp);) {
		if (atomic_load(&x->held)) {
			pp = &x->next;
		} else {
			*pp = x->next;
			free(x);
		}
	}
	atomic_fetch_add(&s->gen, 1);
	xrl_limiter_set_cfg(s->lim, &n->c);
	memset((void *)s->rule_refused, 0, sizeof(s->rule_refused));
	memset((void *)s->rule_allowed, 0, sizeof(s->rule_allowed));
	pthread_rwlock_unlock(&s->mu);
	if (changed[0])
		log_warnx("http: couldn't apply %s on reload: the server keeps running as started "
			  "(restart xrld for the change)", changed);
	return 0;
}

void xrl_http_stop(struct xrl_http_server *s)
{
	struct srv_cfg *x;

	if (!s)
		return;
	loops_stop(s);
	xrl_limiter_free(s->lim);
	while ((x = s->retired)) {
		s->retired = x->next;
		free(x);
	}
	free(s->cfg);
	free(s);
}

void xrl_http_metrics(struct xrl_http_server *s, struct xrl_buf *b)
{
	static const char *sn[ST_MAX] = { "200", "400", "401", "403", "404", "405", "413", "414", "429", "503" };
	struct xrl_limiter_stats st;

	xrl_limiter_get_stats(s->lim, &st);
	xrl_buf_printf(b, "# HELP xrl_http_responses_total Identity-tier answers by status.\n"
		       "# TYPE xrl_http_responses_total counter\n");
	for (int i = 0; i < ST_MAX; i++)
		xrl_buf_printf(b, "xrl_http_responses_total{status=\"%s\"} %llu\n", sn[i],
			       (unsigned long long)atomic_load(&s->status[i]));
	xrl_buf_printf(b, "# HELP xrl_http_rule_decisions_total Identity-tier decisions per rule.\n"
		       "# TYPE xrl_http_rule_decisions_total counter\n");
	pthread_rwlock_rdlock(&s->mu);
	for (__u32 i = 0; i < s->cfg->c.n_rules; i++) {
		xrl_buf_printf(b, "xrl_http_rule_decisions_total{rule=\"%s\",verdict=\"allowed\"} %llu\n",
			       s->cfg->c.rules[i].name, (unsigned long long)atomic_load(&s->rule_allowed[i]));
		xrl_buf_printf(b, "xrl_http_rule_decisions_total{rule=\"%s\",verdict=\"refused\"} %llu\n",
			       s->cfg->c.rules[i].name, (unsigned long long)atomic_load(&s->rule_refused[i]));
	}
	pthread_rwlock_unlock(&s->mu);
	xrl_buf_printf(b,
		       "# TYPE xrl_http_decisions_total counter\nxrl_http_decisions_total %llu\n"
		       "# TYPE xrl_http_shadow_refusals_total counter\nxrl_http_shadow_refusals_total %llu\n"
		       "# TYPE xrl_http_backend_errors_total counter\nxrl_http_backend_errors_total %llu\n"
		       "# TYPE xrl_http_breaker_skips_total counter\nxrl_http_breaker_skips_total %llu\n"
		       "# TYPE xrl_http_overlimit_cache_hits_total counter\nxrl_http_overlimit_cache_hits_total %llu\n"
		       "# TYPE xrl_http_fallback_total counter\n"
		       "xrl_http_fallback_total{mode=\"open\"} %llu\nxrl_http_fallback_total{mode=\"closed\"} %llu\n"
		       "xrl_http_fallback_total{mode=\"local\"} %llu\n"
		       "# TYPE xrl_http_keys gauge\nxrl_http_keys %llu\n"
		       "# TYPE xrl_http_key_evictions_total counter\n"
		       "xrl_http_key_evictions_total{state=\"idle\"} %llu\nxrl_http_key_evictions_total{state=\"active\"} %llu\n"
		       "# TYPE xrl_http_penalties_total counter\nxrl_http_penalties_total %llu\n"
		       "# TYPE xrl_http_redis_breaker_open gauge\nxrl_http_redis_breaker_open %d\n"
		       "# HELP xrl_http_redis_round_trips_total Batches written to Redis.\n"
		       "# TYPE xrl_http_redis_round_trips_total counter\nxrl_http_redis_round_trips_total %llu\n"
		       "# HELP xrl_http_redis_calls_total Script calls sent to Redis.\n"
		       "# TYPE xrl_http_redis_calls_total counter\nxrl_http_redis_calls_total %llu\n"
		       "# HELP xrl_http_redis_decisions_total Decisions sent to Redis in those calls.\n"
		       "# TYPE xrl_http_redis_decisions_total counter\nxrl_http_redis_decisions_total %llu\n",
		       (unsigned long long)st.decisions, (unsigned long long)st.shadow_refused,
		       (unsigned long long)st.backend_errors, (unsigned long long)st.breaker_open_skips,
		       (unsigned long long)st.overlimit_cache_hits, (unsigned long long)st.fallback_open,
		       (unsigned long long)st.fallback_closed, (unsigned long long)st.fallback_local,
		       (unsigned long long)st.keys, (unsigned long long)st.evictions_idle,
		       (unsigned long long)st.evictions_active, (unsigned long long)st.penalties,
		       xrl_limiter_breaker_state(s->lim) != 0, (unsigned long long)st.redis_round_trips,
		       (unsigned long long)st.redis_calls, (unsigned long long)st.redis_decisions);
}
