// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * pipe.c - the connection to Redis: a non-blocking pipe driven by one
 * thread's event loop, its handshake, batches and their replies, and the
 * breaker that stops calling a Redis that fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include "redis_int.h"
#include "log.h"

/* ---- the breaker -------------------------------------------------------------- */

static bool brk_allow(struct xrl_brk *b, __u64 now, bool *probe)
{
	int st = atomic_load(&b->state);

	*probe = false;
	if (st == BRK_CLOSED)
		return true;
	if (now < atomic_load(&b->until))
		return false;
	int expect = 0;

	if (!atomic_compare_exchange_strong(&b->probe, &expect, 1))
		return false;
	atomic_store(&b->state, BRK_HALF);
	*probe = true;
	return true;
}

/* ---- the Redis pipe ------------------------------------------------------------ */

/*
 * One connection to Redis, driven by one thread: a server thread's event
 * loop, or poll() in xrl_limiter_decide. Decisions are queued on it and go
 * out whenever it is free: all that are queued, in one write; the replies
 * are read as they arrive, and when the last is in, every decision of the
 * batch is handed back (w.decided). So a decision waits for at most the
 * batch in flight and its own, no timer adds delay, and under load one
 * write and one read serve many decisions, in xrld and in Redis. When Redis
 * fails, the whole batch falls back at once, and so does every batch after
 * it while the breaker is open: no decision waits out a timeout but those
 * of the batch that met it.
 */
struct xrl_redis_pipe {
	struct xrl_redis *rd;
	const struct xrl_node_hooks *nh; /* a cluster node's pipe: its cluster's */
	redisContext *c;		/* connected and non-blocking, or NULL */
	struct xrl_reader_guard *guard; /* of c's reader */
	__u32 gen;			/* bumped with every new connection */
	char host[128];			/* where c is connected */
	int port, db;
	__u64 auth;			  /* the limiter's auth when c was opened */
	struct xrl_redis_job *q, *q_tail; /* queued */
	struct xrl_redis_job *b;	  /* the batch in flight; NULL: free */
	struct xrl_redis_job *cur;	  /* the next reply is this one's */
	__u8 hs[4];			  /* answers due before the batch's (HS_*) */
	int hs_n, hs_i;			  /* how many; how many are in */
	bool fresh;			  /* c is new: the handshake goes first */
	__u64 t0, deadline;		  /* the batch's start; it fails at deadline */
	bool probe;			  /* the batch is the breaker's probe */
	bool reused;			  /* c was open before the batch */
	bool retried, reloaded;		  /* sent once more: on a new connection; after NOSCRIPT */
	bool answered;			  /* a reply of the batch came in */
	bool aborting;			  /* pipe_abort: not Redis's failure */
	bool hold;			  /* a cluster's node: no new batch now */
	char *wb;			  /* the batch's bytes; wb[woff..wlen) unwritten */
	size_t wlen, woff, wcap;
	struct xrl_freelist spare; /* spare jobs */
	__u32 handed;	 /* decisions handed back (pipe_run's count) */
	const char *why; /* what failed, for the log */
	char why_buf[160];
	struct xrl_cnode *node; /* a cluster node's pipe: that node; else NULL */
	struct xrl_cpipe *cp;	/* the cluster's pipe: this one's, or its owner */
};

static struct xrl_brk *pipe_brk(struct xrl_redis_pipe *p, const char **host, int *port)
{
	if (p->node) {
		*host = p->nh->name(p->node, port);
		return p->nh->brk(p->node);
	}
	*host = p->rd->env.cfg->redis_host;
	*port = p->rd->env.cfg->redis_port;
	return &p->rd->brk;
}

static void brk_result(struct xrl_redis_pipe *p, bool ok, bool probe, __u64 now, const char *why)
{
	struct xrl_redis *rd = p->rd;
	const char *host;
	int port;
	struct xrl_brk *b = pipe_brk(p, &host, &port);

	if (ok) {
		atomic_store(&b->fails, 0);
		if (atomic_exchange(&b->state, BRK_CLOSED) != BRK_CLOSED)
			log_info("redis %s:%d answers again: shared limits resumed", host, port);
	} else {
		/* one timeout is enough: the next request must not wait it out too */
		if (atomic_exchange(&b->state, BRK_OPEN) == BRK_CLOSED)
			log_warnx("redis %s:%d failed (%s): breaker open, rules fall back to on_backend_error",
				  host, port, why ? why : "?");
		atomic_store(&b->until, now + rd->env.cfg->breaker_cooldown_ns);
		atomic_fetch_add(&b->fails, 1);
	}
	if (probe)
		atomic_store(&b->probe, 0);
}

/*
 * hiredis 0.14 allocates an array's element pointers as soon as it reads
 * "*N", and N is the peer's to choose: "*400000000" costs 3.2 GB before a
 * single element arrives (found by tests/fuzz/fuzz_resp.c). The guard lets
 * the arrays of one reply hold REPLY_ELEMENTS_MAX elements in all, the
 * most any answer we ask for has (a full call: CALL_MAX decisions of
 * XRL_HTTP_MAX_MATCH keys); beyond it the reader fails, and the pipe drops
 * the connection ("not the Redis protocol") as for any garbage.
 */
#define REPLY_ELEMENTS_MAX (CALL_MAX * (1 + 4 * XRL_HTTP_MAX_MATCH)) /* buckets and slot sets */

struct xrl_reader_guard {
	redisReplyObjectFunctions fn; /* hiredis's, createArray wrapped */
	const redisReplyObjectFunctions *orig;
	long left; /* elements this reply may still have */
};

static void *guard_array(const redisReadTask *t, int n)
{
	struct xrl_reader_guard *g = t->privdata;

	if (!g || n < 0 || n > g->left)
		return NULL; /* the reader reports it as out of memory: an error */
	g->left -= n;
	return g->orig->createArray(t, n);
}

struct xrl_reader_guard *xrl_reader_guard_new(struct redisReader *r)
{
	struct xrl_reader_guard *g = calloc(1, sizeof(*g));

	if (!g || !r->fn || !r->fn->createArray) {
		free(g);
		return NULL;
	}
	g->orig = r->fn;
	g->fn = *r->fn;
	g->fn.createArray = guard_array;
	g->left = REPLY_ELEMENTS_MAX;
	r->fn = &g->fn;
	r->privdata = g;
	return g;
}

void xrl_reader_guard_reset(struct xrl_reader_guard *g)
{
	g->left = REPLY_ELEMENTS_MAX;
}

static void pipe_drop(struct xrl_redis_pipe *p)
{
	if (p->c)
		redisFree(p->c);
	p->c = NULL;
	free(p->guard);
	p->guard = NULL;
}

/* What tells one user and password from another (a reload that changes
 * them takes a new connection), without keeping a copy of the password. */
__u64 xrl_redis_auth_tag(const struct xrl_http_cfg *c)
{
	__u64 h = 0xcbf29ce484222325ULL; /* FNV-1a over user, NUL, password */

	for (const char *q = c->redis_user;; q++) {
		h = (h ^ (unsigned char)*q) * 0x100000001b3ULL;
		if (!*q)
			break;
	}
	for (const char *q = c->redis_pass; *q; q++)
		h = (h ^ (unsigned char)*q) * 0x100000001b3ULL;
	return h;
}

/*
 * A connection to the configured Redis (cfg_mu held): the open one, or a
 * new one, connecting without blocking. Its AUTH, SELECT and SCRIPT LOAD
 * go out ahead of the batch in the same write (pipe_handshake) and are
 * answered before it, all within the batch's deadline: no thread waits for
 * a connect or a handshake, and a Redis that never answers costs the batch
 * its timeout and nothing more (then the breaker). Only a host name's
 * lookup (getaddrinfo) still blocks; an address in the URL needs none.
 */
static int pipe_connect(struct xrl_redis_pipe *p)
{
	const struct xrl_http_cfg *c = p->rd->env.cfg;
	const char *host = c->redis_host;
	int port = c->redis_port;

	if (p->node)
		host = p->nh->name(p->node, &port);
	p->reused = p->fresh = false;
	if (p->c && p->port == port && p->db == c->redis_db && !strcmp(p->host, host) &&
	    p->auth == p->rd->auth) {
		p->reused = true;
		return 0;
	}
	pipe_drop(p);
	p->c = redisConnectNonBlock(host, port);
	if (p->c && !p->c->err)
		p->guard = xrl_reader_guard_new(p->c->reader);
	if (!p->c || p->c->err || !p->guard) {
		snprintf(p->why_buf, sizeof(p->why_buf), "connect: %.100s",
			 p->c && p->c->err ? p->c->errstr : "out of memory");
		p->why = p->why_buf;
		pipe_drop(p);
		return -EIO;
	}
	snprintf(p->host, sizeof(p->host), "%s", host);
	p->port = port;
	p->db = c->redis_db;
	p->auth = p->rd->auth;
	p->gen++;
	p->fresh = true;
	return 0;
}

static int wb_add(struct xrl_redis_pipe *p, const char *s, size_t n)
{
	if (p->wlen + n > p->wcap) {
		size_t cap = p->wcap ? p->wcap : 16384;
		char *nb;

		while (cap < p->wlen + n)
			cap *= 2;
		nb = realloc(p->wb, cap);
		if (!nb)
			return -ENOMEM;
		p->wb = nb;
		p->wcap = cap;
	}
	memcpy(p->wb + p->wlen, s, n);
	p->wlen += n;
	return 0;
}

/* A formatted command into the batch's bytes, wiped from the heap after
 * (it may hold the password); answered as `kind`. */
static int wb_cmd(struct xrl_redis_pipe *p, int kind, const char *fmt, ...)
{
	char *cmd = NULL;
	va_list ap;
	int len, rc;

	va_start(ap, fmt);
	len = redisvFormatCommand(&cmd, fmt, ap);
	va_end(ap);
	if (len < 0)
		return -ENOMEM;
	rc = wb_add(p, cmd, (size_t)len);
	explicit_bzero(cmd, (size_t)len);
	redisFreeCommand(cmd);
	if (!rc)
		p->hs[p->hs_n++] = (__u8)kind;
	return rc;
}

/* A new connection's commands, ahead of the batch (cfg_mu held). */
static int pipe_handshake(struct xrl_redis_pipe *p)
{
	const struct xrl_http_cfg *c = p->rd->env.cfg;
	int rc = 0;

	if (c->redis_pass[0])
		rc = c->redis_user[0]
			     ? wb_cmd(p, HS_AUTH, "AUTH %s %s", c->redis_user, c->redis_pass)
			     : wb_cmd(p, HS_AUTH, "AUTH %s", c->redis_pass);
	if (!rc && c->redis_db)
		rc = wb_cmd(p, HS_SELECT, "SELECT %d", c->redis_db);
	if (!rc)
		rc = wb_add(p, p->rd->load_cmd, p->rd->load_len);
	if (!rc)
		p->hs[p->hs_n++] = HS_LOAD;
	if (!rc && p->node) {
		const char *cmd;
		size_t len;

		p->nh->script(p->node, &cmd, &len);
		rc = wb_add(p, cmd, len);
		if (!rc)
			p->hs[p->hs_n++] = HS_LOAD_NODE;
	}
	return rc;
}

/* The answer r to a handshake command: NULL, or what is wrong (cfg_mu
 * not needed: the user name is the pipe's copy of the configuration's). */
static const char *hs_check(struct xrl_redis_pipe *p, int kind, const redisReply *r)
{
	const char *err = r->type == REDIS_REPLY_ERROR ? r->str : "unexpected answer";

	switch (kind) {
	case HS_AUTH:
		if (r->type == REDIS_REPLY_STATUS)
			return NULL;
		/* Redis's answer never repeats the password; neither does the log */
		snprintf(p->why_buf, sizeof(p->why_buf), "AUTH: %.120s", err);
		return p->why_buf;
	case HS_SELECT:
		if (r->type == REDIS_REPLY_STATUS)
			return NULL;
		snprintf(p->why_buf, sizeof(p->why_buf), "SELECT: %.120s", err);
		return p->why_buf;
	case HS_LOAD:
		if (r->type == REDIS_REPLY_STRING && r->len == 40 && !memcmp(r->str, p->rd->sha, 40))
			return NULL;
		if (r->type == REDIS_REPLY_STRING && r->len == 40)
			log_warnx("redis: SCRIPT LOAD gave %.40s, not the SHA1 %s of the script",
				  r->str, p->rd->sha);
		snprintf(p->why_buf, sizeof(p->why_buf), "SCRIPT LOAD: %.120s", err);
		return p->why_buf;
	case HS_LOAD_NODE: {
		const char *cmd, *sha = p->nh->script(p->node, &cmd, &(size_t){ 0 });

		if (r->type == REDIS_REPLY_STRING && r->len == 40 && !memcmp(r->str, sha, 40))
			return NULL;
		snprintf(p->why_buf, sizeof(p->why_buf), "SCRIPT LOAD (node script): %.100s", err);
		return p->why_buf;
	}
	default:
		return NULL; /* HS_SKIP: the load after NOSCRIPT; the retry tells */
	}
}

/* Write what the socket takes. 0 (all written, or EAGAIN), or -errno.
 * Cost: one send() a call, usually the whole batch in it. */
static int pipe_write(struct xrl_redis_pipe *p)
{
	while (p->woff < p->wlen) {
		ssize_t n = send(p->c->fd, p->wb + p->woff, p->wlen - p->woff, MSG_NOSIGNAL);

		if (n > 0)
			p->woff += (size_t)n;
		else if (n < 0 && errno == EINTR)
			continue;
		else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		else
			return n < 0 ? -errno : -EIO;
	}
	return 0;
}

/* A RESP bulk string of a number; "M/C" when c (a decision's buckets and
 * slot sets); "rC" for a release of c leases (v ~0). */
static int wb_num2(struct xrl_redis_pipe *p, __u64 v, __u64 c)
{
	char t[64], n[48], *e = n;

	if (v == ~0ULL)
		*e++ = 'r';
	else
		e = xrl_put_u64(e, v);
	if (v == ~0ULL) {
		e = xrl_put_u64(e, c);
	} else if (c) {
		*e++ = '/';
		e = xrl_put_u64(e, c);
	}
	return wb_add(p, t, (size_t)(xrl_redis_put_bulk(t, n, (size_t)(e - n)) - t));
}

/* A RESP bulk string of n bytes at s. */
static int wb_num_str(struct xrl_redis_pipe *p, const char *s, size_t n)
{
	char t[32], *e = t;

	*e++ = '$';
	e = xrl_put_u64(e, n);
	*e++ = '\r';
	*e++ = '\n';
	if (wb_add(p, t, (size_t)(e - t)) || wb_add(p, s, n))
		return -ENOMEM;
	return wb_add(p, "\r\n", 2);
}

static int wb_num(struct xrl_redis_pipe *p, __u64 v)
{
	return wb_num2(p, v, 0);
}

/*
 * A refund (a cluster's, JK_REFUND): EVAL refund.lua, its keys, now, the
 * inc of each key (its ab: one bulk string a key). Rare: sent as text, so
 * no script cache has to hold it.
 */
static int wb_refund(struct xrl_redis_pipe *p, struct xrl_redis_job *j, const char *now, __u64 mnow)
{
	char hdr[32], *h = hdr;
	size_t sl = strlen(xrl_lua_refund);

	*h++ = '*';
	h = xrl_put_u64(h, (__u64)(3 + 2 * j->m + 1));
	*h++ = '\r';
	*h++ = '\n';
	if (wb_add(p, hdr, (size_t)(h - hdr)) || wb_add(p, "$4\r\nEVAL\r\n", 10) ||
	    wb_num_str(p, xrl_lua_refund, sl) || wb_num(p, (__u64)j->m) ||
	    wb_add(p, j->kb, j->klen) || wb_add(p, now, strlen(now)) || wb_add(p, j->ab, j->alen))
		return -ENOMEM;
	j->mnow = mnow;
	j->call_n = 1;
	return 0;
}

/*
 * One EVALSHA for the n pending jobs from j on: their keys, now (already a
 * RESP bulk string), n, their key counts, their arguments. The first job
 * records n (its reply is the call's); each job records the monotonic now
 * its TATs are relative to.
 */
static int wb_call(struct xrl_redis_pipe *p, struct xrl_redis_job *j, int n, const char *now,
		   __u64 mnow)
{
	struct xrl_redis *rd = p->rd;
	char hdr[64], *h = hdr;
	int keys = 0, args = 0;
	struct xrl_redis_job *x;
	bool xs = false; /* keys of several slots (a cluster node's call) */
	int i;

	if (j->asking) {
		/* ASK: this once, the node importing the slot (cluster.c) */
		if (wb_add(p, "*1\r\n$6\r\nASKING\r\n", 16))
			return -ENOMEM;
		j->ask_sent = true;
	}
	if (j->kind == JK_REFUND)
		return wb_refund(p, j, now, mnow);
	for (x = j, i = 0; i < n; x = x->next)
		if (x->st == J_PENDING) {
			keys += x->m + (x->res ? 2 : 1) * x->nc;
			args += 2 * x->m + 3 * x->nc;
			xs |= p->node && x->slot != j->slot; /* only a node's call */
			i++;
		}
	*h++ = '*';
	h = xrl_put_u64(h, (__u64)(3 + keys + 2 + n + args + (xs ? 2 : 0)));
	*h++ = '\r';
	*h++ = '\n';
	if (xs) {
		/* the node script: KEYS one key (Redis routes by it: MOVED,
		 * ASK), ARGV the key count and every key, then as gcra.lua */
		const char *sha =
			p->nh->script(p->node, &(const char *){ NULL }, &(size_t){ 0 });
		size_t k1 = 0;

		for (const char *q = j->kb + 1; *q >= '0' && *q <= '9'; q++)
			k1 = k1 * 10 + (size_t)(*q - '0');
		k1 += (size_t)snprintf(NULL, 0, "%zu", k1) + 5; /* "$N\r\n" ... "\r\n" */
		if (wb_add(p, hdr, (size_t)(h - hdr)) ||
		    wb_add(p, "$7\r\nEVALSHA\r\n$40\r\n", 18) || wb_add(p, sha, 40) ||
		    wb_add(p, "\r\n$1\r\n1\r\n", 9) || wb_add(p, j->kb, k1) ||
		    wb_num(p, (__u64)keys))
			return -ENOMEM;
	} else if (wb_add(p, hdr, (size_t)(h - hdr)) || wb_add(p, "$7\r\nEVALSHA\r\n$40\r\n", 18) ||
		   wb_add(p, rd->sha, 40) || wb_add(p, "\r\n", 2) || wb_num(p, (__u64)keys)) {
		return -ENOMEM;
	}
	for (x = j, i = 0; i < n; x = x->next)
		if (x->st == J_PENDING) {
			if (wb_add(p, x->kb, x->klen))
				return -ENOMEM;
			i++;
		}
	if (wb_add(p, now, strlen(now)) || wb_num(p, (__u64)n))
		return -ENOMEM;
	for (x = j, i = 0; i < n; x = x->next)
		if (x->st == J_PENDING) {
			if (wb_num2(p, x->res ? ~0ULL : (__u64)x->m, (__u64)x->nc))
				return -ENOMEM;
			i++;
		}
	for (x = j, i = 0; i < n; x = x->next)
		if (x->st == J_PENDING) {
			if (wb_add(p, x->ab, x->alen))
				return -ENOMEM;
			x->mnow = mnow;
			x->call_n = i ? 0 : n;
			i++;
		}
	return 0;
}

/*
 * Send the batch's pending jobs (cfg_mu held), CALL_MAX decisions to an
 * EVALSHA, on the open connection or a new one; after NOSCRIPT, SCRIPT
 * LOAD first. -EIO: no connection; -EPIPE: the connection failed as it was
 * written to. Cost: a copy of each job's keys and arguments into the
 * write buffer, then pipe_write; one clock read a batch.
 */
static int pipe_send(struct xrl_redis_pipe *p)
{
	struct xrl_redis *rd = p->rd;
	__u64 rnow, mnow, calls = 0, decisions = 0;
	char now[48], us[32]; /* the batch's now as a RESP bulk string, "$N\r\nUS.NNN\r\n" */
	struct xrl_redis_job *first = NULL;
	bool one = false, xs = false; /* first's call: holds a job of one slot; several slots */
	int n = 0;

	if (pipe_connect(p))
		return -EIO;
	rnow = *rd->env.clock ? atomic_load(*rd->env.clock) : xrl_redis_now_ns();
	mnow = rd_now(rd);
	*xrl_redis_put_bulk(now, us, (size_t)(xrl_redis_put_us(us, rnow) - us)) = '\0';
	p->wlen = p->woff = 0;
	p->hs_n = p->hs_i = 0;
	if (p->fresh) {
		if (pipe_handshake(p))
			goto oom;
	} else if (p->reloaded) {
		if (wb_add(p, rd->load_cmd, rd->load_len))
			goto oom;
		p->hs[p->hs_n++] = HS_SKIP;
		if (p->node) {
			const char *cmd;
			size_t len;

			p->nh->script(p->node, &cmd, &len);
			if (wb_add(p, cmd, len))
				goto oom;
			p->hs[p->hs_n++] = HS_SKIP;
		}
	}
	for (struct xrl_redis_job *j = p->b; j; j = j->next) {
		/* one Redis, or a cluster node: every decision of a call (a
		 * node's of several slots by its node script); an ASK or a
		 * refund alone; a job of one slot (after "non local key", or
		 * with slot sets) only in a call of that slot alone */
		bool alone = j->asking || j->kind != JK_DECIDE;

		if (j->st != J_PENDING)
			continue;
		decisions += j->kind == JK_DECIDE;
		if (first && (alone || ((j->one_slot || one) && (j->slot != first->slot || xs)))) {
			if (wb_call(p, first, n, now, mnow))
				goto oom;
			calls++;
			first = NULL;
			n = 0;
		}
		if (!first) {
			first = j;
			one = xs = false;
		}
		one |= j->one_slot;
		xs |= j->slot != first->slot;
		if (++n == CALL_MAX || alone) {
			if (wb_call(p, first, n, now, mnow))
				goto oom;
			calls++;
			first = NULL;
			n = 0;
		}
	}
	if (n) {
		if (wb_call(p, first, n, now, mnow))
			goto oom;
		calls++;
	}
	RD_STAT_ADD(rd, redis_round_trips, 1);
	RD_STAT_ADD(rd, redis_calls, calls);
	RD_STAT_ADD(rd, redis_decisions, decisions);
	p->cur = p->b;
	p->deadline = mnow + rd->env.cfg->redis_timeout_ns;
	return pipe_write(p) ? -EPIPE : 0;
oom:
	p->why = "out of memory";
	return -EIO;
}

/*
 * The reply r to the call of the n pending jobs from j on: each job's
 * share of it (an error is every job's). Returns the job after the call.
 */
static struct xrl_redis_job *call_reply(struct xrl_redis_job *j, int n, redisReply *r)
{
	struct xrl_script_key keys[CALL_MAX * 2 * XRL_HTTP_MAX_MATCH];
	int nk[CALL_MAX] = { 0 }, sts[CALL_MAX], i, k = 0, rc, st = J_PENDING;
	struct xrl_redis_job *x;

	for (x = j, i = 0; i < n; x = x->next)
		if (x->st == J_PENDING)
			nk[i++] = x->m + (x->res ? 2 : 1) * x->nc;
	rc = xrl_script_reply(r, nk, n, sts, keys);
	if (rc == -ENOEXEC) {
		st = J_NOSCRIPT;
	} else if (rc == -EIO) {
		log_warnx("redis: %s", r->str);
		st = J_FAIL;
	} else if (rc) {
		log_warnx("redis: an answer of %zu elements to %d decisions, not the shape asked for",
			  r->type == REDIS_REPLY_ARRAY ? r->elements : 0, n);
		st = J_FAIL;
	}
	for (x = j, i = 0; i < n; x = x->next) {
		if (x->st != J_PENDING)
			continue;
		if (st != J_PENDING) {
			x->st = st;
		} else if (sts[i] == XRL_SCRIPT_BADKEY) {
			log_warnx("redis: a key of rule %s is not a string (WRONGTYPE): that decision "
				  "falls back",
				  x->m ? x->it[0].r->name : x->ci[0].r->name);
			x->st = J_BADKEY;
			k += x->m + (x->res ? 2 : 1) * x->nc;
		} else if (x->res) {
			/* a release: per lease, its set's 'A' (it was held) and
			 * its bucket's 'A' (the cost was charged) */
			for (int q = 0; q < x->nc; q++, k += 2) {
				x->res->released[x->ci[q].idx] = keys[k].taken;
				x->res->charged[x->ci[q].idx] = keys[k + 1].taken;
			}
			x->st = J_OK;
		} else {
			/* TATs relative to the batch's now: on our monotonic clock */
			for (int q = 0; q < x->m; q++, k++) {
				x->it[q].ok = keys[k].ok;
				x->it[q].tat = keys[k].rel_ns ? x->mnow + keys[k].rel_ns : 0;
				x->it[q].new_tat = x->it[q].tat;
			}
			for (int q = 0; q < x->nc; q++, k++) {
				x->ci[q].ok = keys[k].ok;
				x->ci[q].taken = keys[k].taken;
				x->ci[q].held = keys[k].held;
				x->ci[q].first_exp = keys[k].rel_ns ? x->mnow + keys[k].rel_ns : 0;
			}
			x->st = J_OK;
		}
		i++;
	}
	return x;
}

/*
 * A cluster node's reply to the call of the n pending jobs from j on: a
 * redirect (every job of the call goes where it says), a refund's answer,
 * or a decision's (call_reply).
 */
static struct xrl_redis_job *node_reply(struct xrl_redis_pipe *p, struct xrl_redis_job *j, int n,
					redisReply *r)
{
	__u16 to = 0;
	int st = 0, i;
	struct xrl_redis_job *x;

	if (r->type == REDIS_REPLY_ERROR)
		st = p->nh->redirect(p->node, r->str, r->len, &to);
	if (!st && r->type == REDIS_REPLY_ERROR && strstr(r->str, "non local key")) {
		/* a key of the node's call is in a slot the node no longer
		 * serves (the node script reads every key before it writes
		 * one): each decision again, by its own slot */
		st = J_MOVED;
		for (x = j, i = 0; i < n; x = x->next)
			if (x->st == J_PENDING) {
				x->one_slot = true;
				i++;
			}
	}
	if (!st && j->kind != JK_REFUND)
		return call_reply(j, n, r);
	if (!st) {
		st = r->type == REDIS_REPLY_ERROR ? J_FAIL : J_OK;
		if (st == J_FAIL)
			log_warnx("redis: a refund failed: %s", r->str);
	}
	for (x = j, i = 0; i < n; x = x->next)
		if (x->st == J_PENDING) {
			x->st = st;
			x->redir = to;
			i++;
		}
	return x;
}

/* A cluster node's batch is over: its jobs go back to the cluster's pipe,
 * which decides what each means for its request. */
static void node_end(struct xrl_redis_pipe *p)
{
	struct xrl_redis_job *b = p->b, *next;
	bool ok = true, skipped = false;

	for (struct xrl_redis_job *j = b; j; j = j->next) {
		ok &= j->st == J_OK || j->st == J_BADKEY || j->st == J_MOVED || j->st == J_ASK;
		skipped |= j->st == J_SKIP;
	}
	pthread_rwlock_rdlock(p->rd->env.cfg_mu);
	if (!skipped && !p->aborting) {
		brk_result(p, ok, p->probe, p->t0, p->why);
		p->nh->batch(p->node, rd_now(p->rd) - p->t0, ok);
	} else if (p->probe) {
		atomic_store(&p->nh->brk(p->node)->probe, 0);
	}
	pthread_rwlock_unlock(p->rd->env.cfg_mu);
	p->b = NULL;
	p->probe = false;
	for (struct xrl_redis_job *j = b; j; j = next) {
		next = j->next;
		j->next = NULL;
		p->handed++;
		p->nh->job_done(p->cp, j);
	}
}

/* The batch is over: the breaker, the decisions, back to their callers. */
static void pipe_end(struct xrl_redis_pipe *p)
{
	struct xrl_redis *rd = p->rd;
	struct xrl_redis_job *b = p->b, *next;
	bool ok = true, skipped = false;
	__u64 now;

	if (p->node) {
		node_end(p);
		return;
	}
	for (struct xrl_redis_job *j = b; j; j = j->next) {
		ok &= j->st == J_OK || j->st == J_BADKEY;
		skipped |= j->st == J_SKIP;
	}
	pthread_rwlock_rdlock(rd->env.cfg_mu);
	if (!skipped && !p->aborting)
		brk_result(p, ok, p->probe, p->t0, p->why);
	else if (p->probe)
		atomic_store(&rd->brk.probe, 0); /* the probe is given up */
	now = rd_now(rd);
	for (struct xrl_redis_job *j = b; j; j = j->next) {
		if (j->res) /* a release Redis did not answer: the slots wait out lease_ttl */
			j->res->backend_error |= j->st != J_OK;
		else
			j->done.fn(j->done.ctx, j->it, j->m, j->ci, j->nc, j->st, now, j->d);
	}
	pthread_rwlock_unlock(rd->env.cfg_mu);
	p->b = NULL;
	p->probe = false;
	for (struct xrl_redis_job *j = b; j; j = next) {
		next = j->next;
		j->w.decided(j->w.arg); /* d is the caller's again */
		p->handed++;
		xrl_fl_put(&p->spare, j, FREE_JOBS_MAX);
	}
}

/*
 * The connection failed (closed: Redis closed it, rather than a timeout
 * or an error answer). One that Redis closed while it was idle (a restart,
 * its client timeout) is not an outage: if nothing was answered on it, the
 * batch goes once more on a new one. Otherwise what is unanswered fails.
 */
static void pipe_fail(struct xrl_redis_pipe *p, bool closed, const char *why)
{
	if (why)
		p->why = why;
	pipe_drop(p);
	if (closed && p->reused && !p->answered && !p->retried) {
		int rc;

		p->retried = true;
		pthread_rwlock_rdlock(p->rd->env.cfg_mu);
		rc = pipe_send(p);
		pthread_rwlock_unlock(p->rd->env.cfg_mu);
		if (!rc)
			return;
		pipe_drop(p);
	}
	for (struct xrl_redis_job *j = p->b; j; j = j->next)
		if (j->st == J_PENDING || j->st == J_NOSCRIPT)
			j->st = J_FAIL;
	pipe_end(p);
}

static void pipe_start(struct xrl_redis_pipe *p)
{
	struct xrl_redis *rd = p->rd;
	int rc;

	p->b = p->q;
	p->q = p->q_tail = NULL;
	for (struct xrl_redis_job *j = p->b; j; j = j->next)
		j->st = J_PENDING;
	p->t0 = rd_now(rd);
	p->retried = p->reloaded = p->answered = false;
	p->why = NULL;
	pthread_rwlock_rdlock(rd->env.cfg_mu);
	if (!brk_allow(pipe_brk(p, &(const char *){ NULL }, &(int){ 0 }), p->t0, &p->probe)) {
		pthread_rwlock_unlock(rd->env.cfg_mu);
		for (struct xrl_redis_job *j = p->b; j; j = j->next)
			j->st = J_SKIP;
		pipe_end(p);
		return;
	}
	rc = pipe_send(p);
	pthread_rwlock_unlock(rd->env.cfg_mu);
	if (rc)
		pipe_fail(p, rc == -EPIPE, rc == -EPIPE ? "write" : NULL);
}

/* Replies that have arrived. Cost: one recv() a call into hiredis's
 * reader, a walk of each reply (xrl_script_reply), no allocation but the
 * reader's own. */
static void pipe_read(struct xrl_redis_pipe *p)
{
	bool noscript = false, bad = false;

	if (redisBufferRead(p->c) != REDIS_OK) {
		int err = errno;

		snprintf(p->why_buf, sizeof(p->why_buf), "read: %.100s", p->c->errstr);
		pipe_fail(p,
			  p->c->err == REDIS_ERR_EOF ||
				  (p->c->err == REDIS_ERR_IO && err != EAGAIN && err != EINTR),
			  p->why_buf);
		return;
	}
	for (;;) {
		redisReply *r = NULL;

		if (redisGetReplyFromReader(p->c, (void **)&r) != REDIS_OK) {
			pipe_fail(p, false, "not the Redis protocol");
			return;
		}
		if (!r)
			break;
		xrl_reader_guard_reset(p->guard); /* a reply is whole: the next one's budget */
		if (p->hs_i < p->hs_n) {
			const char *why = hs_check(p, p->hs[p->hs_i++], r);

			freeReplyObject(r);
			if (why) {
				pipe_fail(p, false, why); /* not fit to decide: the breaker */
				return;
			}
			continue;
		}
		while (p->cur && p->cur->st != J_PENDING)
			p->cur = p->cur->next;
		if (p->cur && p->cur->ask_sent) {
			p->cur->ask_sent = false; /* ASKING's +OK; the call tells */
			freeReplyObject(r);
			continue;
		}
		if (!p->cur || p->cur->call_n <= 0) {
			freeReplyObject(r);
			pipe_fail(p, false, "an answer too many");
			return;
		}
		if (p->node)
			p->cur = node_reply(p, p->cur, p->cur->call_n, r);
		else
			p->cur = call_reply(p->cur, p->cur->call_n, r);
		p->answered = true;
		freeReplyObject(r);
	}
	while (p->cur && p->cur->st != J_PENDING)
		p->cur = p->cur->next;
	if (p->cur || p->hs_i < p->hs_n)
		return; /* more to come */
	for (struct xrl_redis_job *j = p->b; j; j = j->next) {
		noscript |= j->st == J_NOSCRIPT;
		bad |= j->st == J_FAIL;
	}
	if (noscript && !p->reloaded) {
		/* a flushed script cache: load it, and those once more */
		int rc;

		p->reloaded = true;
		for (struct xrl_redis_job *j = p->b; j; j = j->next)
			if (j->st == J_NOSCRIPT)
				j->st = J_PENDING;
		pthread_rwlock_rdlock(p->rd->env.cfg_mu);
		rc = pipe_send(p);
		pthread_rwlock_unlock(p->rd->env.cfg_mu);
		if (rc)
			pipe_fail(p, false, rc == -EPIPE ? "write" : NULL);
		return;
	}
	for (struct xrl_redis_job *j = p->b; j; j = j->next)
		if (j->st == J_NOSCRIPT)
			j->st = J_FAIL;
	if (noscript || bad) {
		p->why = noscript ? "NOSCRIPT after SCRIPT LOAD" : "an error answer";
		pipe_drop(p); /* Redis is not fit to decide */
	}
	pipe_end(p);
}

struct xrl_redis_pipe *xrl_redis_pipe_alloc(struct xrl_redis *rd)
{
	struct xrl_redis_pipe *p = calloc(1, sizeof(*p));

	if (p)
		p->rd = rd;
	return p;
}

void xrl_redis_pipe_set_face(struct xrl_redis_pipe *p, struct xrl_cpipe *cp)
{
	p->cp = cp;
}

struct xrl_redis_pipe *xrl_redis_node_pipe_new(struct xrl_redis *rd, struct xrl_cnode *node,
					       struct xrl_cpipe *cp,
					       const struct xrl_node_hooks *nh)
{
	struct xrl_redis_pipe *p = calloc(1, sizeof(*p));

	if (p) {
		p->rd = rd;
		p->node = node;
		p->cp = cp;
		p->nh = nh;
	}
	return p;
}

/* A cluster's job onto a node's queue; it goes with the node's next batch. */
void xrl_redis_pipe_push(struct xrl_redis_pipe *p, struct xrl_redis_job *j)
{
	j->next = NULL;
	j->st = J_PENDING;
	if (p->q_tail)
		p->q_tail->next = j;
	else
		p->q = j;
	p->q_tail = j;
}

/* A cluster's node pipe: hold its queue (no batch starts in pipe_run)
 * while the face lets another node's batch go first. */
void xrl_redis_pipe_hold(struct xrl_redis_pipe *p, bool hold)
{
	p->hold = hold;
}

/* When the batch in flight went out (lim_now), or 0: none is. */
__u64 xrl_redis_pipe_out(const struct xrl_redis_pipe *p)
{
	return p->b ? p->t0 : 0;
}

bool xrl_redis_pipe_waiting(const struct xrl_redis_pipe *p)
{
	return !p->b && p->q;
}

#define FRONT(p) ((p)->cp && !(p)->node) /* a cluster's pipe: cluster.c */

void xrl_redis_pipe_abort(struct xrl_redis_pipe *p)
{
	struct xrl_redis_job **tail = &p->b;

	/* the batch in flight and the queue, as one failed batch; not a
	 * failure of Redis: the breaker is left as it is */
	while (*tail)
		tail = &(*tail)->next;
	*tail = p->q;
	p->q = p->q_tail = NULL;
	pipe_drop(p);
	if (!p->b)
		return;
	for (struct xrl_redis_job *j = p->b; j; j = j->next)
		if (j->st != J_OK)
			j->st = J_FAIL;
	p->aborting = true;
	pipe_end(p);
	p->aborting = false;
}

void xrl_redis_pipe_free(struct xrl_redis_pipe *p)
{
	if (!p)
		return;
	xrl_redis_pipe_abort(p);
	xrl_fl_drain(&p->spare);
	free(p->wb);
	free(p);
}

int xrl_redis_pipe_poll(struct xrl_redis_pipe *p, short *events, __u64 *timeout_ns, __u32 *gen)
{
	*events = 0;
	*timeout_ns = UINT64_MAX;
	*gen = p->gen;
	if (!p->c)
		return -1;
	/* idle: POLLIN sees Redis close the connection (a restart) */
	*events = POLLIN;
	if (p->b) {
		__u64 now = rd_now(p->rd);

		if (p->woff < p->wlen)
			*events |= POLLOUT;
		*timeout_ns = p->deadline > now ? p->deadline - now : 0;
	}
	return p->c->fd;
}

int xrl_redis_pipe_run(struct xrl_redis_pipe *p, short revents)
{
	p->handed = 0;
	if (p->b) {
		if (p->woff < p->wlen && (revents & (POLLOUT | POLLERR | POLLHUP)) && pipe_write(p))
			pipe_fail(p, true, "write");
		if (p->b && (revents & (POLLIN | POLLERR | POLLHUP)))
			pipe_read(p);
		if (p->b && rd_now(p->rd) >= p->deadline) {
			/* the replies may be in, unread: this thread was busy */
			if (!(revents & POLLIN) && p->woff == p->wlen)
				pipe_read(p);
			if (p->b && rd_now(p->rd) >= p->deadline)
				pipe_fail(p, false, "timeout"); /* not once more */
		}
	} else if (p->c && (revents & (POLLIN | POLLERR | POLLHUP))) {
		char buf[64];
		ssize_t n = recv(p->c->fd, buf, sizeof(buf), MSG_DONTWAIT);

		/* idle: closed by Redis (or anything unasked for): let it go */
		if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			pipe_drop(p);
	}
	if (!p->b && p->q && !p->hold)
		pipe_start(p);
	return (int)p->handed;
}

bool xrl_redis_pipe_busy(const struct xrl_redis_pipe *p)
{
	return p->b || p->q;
}

void *xrl_fl_get(struct xrl_freelist *fl, size_t size)
{
	void *b = fl->head;

	if (!b)
		return malloc(size);
	memcpy(&fl->head, b, sizeof(void *)); /* its next: the first member */
	fl->n--;
	return b;
}

void xrl_fl_put(struct xrl_freelist *fl, void *b, __u32 max)
{
	if (fl->n >= max) {
		free(b);
		return;
	}
	memcpy(b, &fl->head, sizeof(void *));
	fl->head = b;
	fl->n++;
}

void xrl_fl_drain(struct xrl_freelist *fl)
{
	while (fl->head)
		free(xrl_fl_get(fl, 0));
}

static struct xrl_redis_job *job_get(struct xrl_redis_pipe *p)
{
	return xrl_fl_get(&p->spare, sizeof(struct xrl_redis_job));
}

/* j, formatted, at the end of p's queue. */
static void job_put(struct xrl_redis_pipe *p, struct xrl_redis_job *j,
		    const struct xrl_limiter_wait *w)
{
	j->w = *w;
	j->st = J_PENDING;
	j->next = NULL;
	if (w->queued)
		w->queued(w->arg);
	if (p->q_tail)
		p->q_tail->next = j;
	else
		p->q = j;
	p->q_tail = j;
}

/*
 * A job of one standalone server's call: its buckets (m, copied by the
 * caller), slot sets ci[0..nc), and a decision d or a release's res. Every
 * field a recycled job may still hold is set: a release that kept a slot of
 * 0, batched with a decision (slot -1), read as a cluster node's call with
 * no node (SIGSEGV).
 */
static void job_plain(struct xrl_redis_job *j, int m, const struct xrl_conc_item *ci, int nc,
		      struct xrl_decision *d, struct xrl_release *res)
{
	j->m = m;
	if (nc) /* a charge has no slots, and no array of them (ci NULL) */
		memcpy(j->ci, ci, sizeof(ci[0]) * (size_t)nc);
	j->nc = nc;
	j->d = d;
	j->res = res;
	j->slot = -1;
	j->kind = JK_DECIDE;
	j->asking = j->ask_sent = j->one_slot = false;
}

/* Queue a prepared decision (the limiter's decide_async) on p: 1, or 0 when
 * there was no memory to queue it and d is a fallback's already (done).
 * Cost: a spare job (or a malloc), its keys and arguments formatted in
 * RESP; no syscall: the loop's next run writes it. */
int xrl_redis_pipe_queue(struct xrl_redis_pipe *p, struct xrl_lim_item *it, int m,
			 struct xrl_conc_item *ci, int nc, struct xrl_decision *d,
			 const struct xrl_limiter_wait *w, const struct xrl_backend_done *done)
{
	struct xrl_redis *rd = p->rd;
	const char *ik[XRL_HTTP_MAX_MATCH];
	struct xrl_redis_job *j = job_get(p);

	if (!j) {
		/* no memory to queue it: as if Redis had failed (no breaker) */
		pthread_rwlock_rdlock(rd->env.cfg_mu);
		done->fn(done->ctx, it, m, ci, nc, J_FAIL, rd_now(rd), d);
		pthread_rwlock_unlock(rd->env.cfg_mu);
		return 0;
	}
	for (int i = 0; i < m; i++) {
		ik[i] = it[i].key;
		it[i].key = NULL; /* the caller's: gone once we return */
	}
	memcpy(j->it, it, sizeof(it[0]) * (size_t)m);
	job_plain(j, m, ci, nc, d, NULL);
	j->done = *done;
	xrl_redis_job_format(j, ik);
	job_put(p, j, w);
	return 1;
}

/* Queue a release of ci[0..nc) (the limiter's release_async), their rules
 * named by rules[]: 1, or 0 when there was no memory (res says not held:
 * the slots wait out their lease_ttl). */
int xrl_redis_pipe_queue_release(struct xrl_redis_pipe *p, struct xrl_conc_item *ci, int nc,
				 const char *const *rules, struct xrl_release *res,
				 const struct xrl_limiter_wait *w)
{
	struct xrl_redis_job *j = job_get(p);

	if (!j)
		return 0;
	job_plain(j, 0, ci, nc, NULL, res);
	xrl_redis_release_format(j, rules);
	job_put(p, j, w);
	return 1;
}


/* A cluster's pipe: the face of one per node (cluster.c), or NULL. */
struct xrl_cpipe *xrl_redis_pipe_face(const struct xrl_redis_pipe *p)
{
	return FRONT(p) ? p->cp : NULL;
}
