// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * conn.c - the identity tier's door: who may ask (http.callers, the caller
 * secret), what a request head may be (its size, one identity header, no
 * Content-Length with Transfer-Encoding), and how long a connection may
 * take to send one (http.head_timeout; a full server closes the oldest
 * connection still waiting for its head).
 *
 * Each loop tracks its daemon's connections (MHD_OPTION_NOTIFY_CONNECTION,
 * on the loop's own thread): when the wait for the current head began (the
 * accept, or the end of the request before), whether its request line came
 * (MHD_OPTION_URI_LOG_CALLBACK) and whether the head is whole (the handler's
 * first call). The loop's timer (xrl_srv_conn_tick) shuts down a connection
 * past its deadline; libmicrohttpd then reads the end and closes it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <microhttpd.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "http/http.h"
#include "log.h"
#include "server_int.h"

/* One connection of a loop's daemon (its socket context). */
struct xrl_srv_conn {
	struct xrl_srv_conn *prev, *next;
	struct MHD_Connection *conn;
	int fd;
	__u64 since_ns;	 /* the wait for the current head began (monotonic) */
	bool line;	 /* its request line came */
	bool head;	 /* the head is whole: the handler was called */
	bool shut;	 /* shut down by us: closing */
	__u32 served;	 /* requests completed on it */
	size_t uri_len;	 /* the current request target's bytes, as sent */
};

/* A head's wait began at t: the walk is due by its deadline. */
static void due(struct xrl_srv_loop *lp, __u64 t)
{
	if (lp->head_to && t + lp->head_to < lp->tick_next)
		lp->tick_next = t + lp->head_to;
}

/* libmicrohttpd's NOTIFY_CONNECTION, on the loop's thread (or the stopping
 * thread once the loops are gone: then only frees). */
void xrl_srv_conn_notify(void *cls, struct MHD_Connection *conn, void **ctx,
			 enum MHD_ConnectionNotificationCode code)
{
	struct xrl_srv_loop *lp = cls;
	struct xrl_srv_conn *c = *ctx;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

		c = calloc(1, sizeof(*c));
		if (!c)
			return; /* untracked: only idle_timeout bounds it */
		c->conn = conn;
		c->fd = ci ? ci->connect_fd : -1;
		c->since_ns = xrl_now_ns();
		due(lp, c->since_ns);
		c->next = lp->conns;
		if (lp->conns)
			lp->conns->prev = c;
		lp->conns = c;
		lp->n_conns++;
		*ctx = c;
		return;
	}
	if (!c)
		return;
	if (c->prev)
		c->prev->next = c->next;
	else
		lp->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	/* a daemon at its limit has left the listening socket out of its epoll
	 * set; it takes it back on its next run, which must come now, not at
	 * the next timeout */
	if (lp->n_conns-- >= lp->conn_max)
		lp->run_soon = true;
	*ctx = NULL;
	free(c);
}

static struct xrl_srv_conn *conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* The request line came: the target's length as sent (for the head's size).
 * Returns no request context: the handler's first call makes it. */
void *xrl_srv_conn_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct xrl_srv_conn *c = conn_of(conn);

	if (c) {
		c->uri_len = strlen(uri);
		if (c->served && !c->line) {
			/* keep-alive: idle_timeout bounded the wait until now */
			c->since_ns = xrl_now_ns();
			due(cls, c->since_ns);
		}
		c->line = true;
	}
	return NULL;
}

/* A request is done: the connection waits for its next head. */
void xrl_srv_conn_done(struct MHD_Connection *conn)
{
	struct xrl_srv_conn *c = conn_of(conn);

	if (!c)
		return;
	c->since_ns = xrl_now_ns();
	c->line = c->head = false;
	c->uri_len = 0;
	c->served++;
}

/* The connections in the listening socket's accept queue (TCP_INFO of a
 * listener: tcpi_unacked is its backlog). */
static unsigned backlog_of(int lfd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (lfd < 0 || getsockopt(lfd, IPPROTO_TCP, TCP_INFO, &ti, &len))
		return 0;
	return ti.tcpi_unacked;
}

#define EVICT_MAX 64 /* connections one walk shuts down to make room */

/* This loop's share of http.max_connections, as start_daemon gives it. */
static unsigned loop_limit(const struct xrl_srv_loop *lp, const struct xrl_http_cfg *c)
{
	unsigned n = lp->s->n_loops, maxc = c->max_connections ? c->max_connections : 1024;
	unsigned i = (unsigned)(lp - lp->s->loops), limit = maxc / n + (i < maxc % n);

	return limit ? limit : 1;
}

static void conn_shut(struct xrl_http_server *s, struct xrl_srv_conn *c, int why)
{
	c->shut = true;
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
	atomic_fetch_add(&s->conn_closed[why], 1);
}

/*
 * The loop's timer (on its thread): connections past their head's
 * deadline shut down; when every slot of this loop is taken and the
 * listening socket has a connection waiting, the oldest connection still
 * waiting for its head (idle keep-alive ones included) is shut down to
 * make room, so that a slow sender from the proxy's own address cannot
 * hold every slot. A deadline counts for a connection's first head from
 * its accept, and for a later one from its request line (before that, an
 * idle keep-alive connection is idle_timeout's). Returns the ms until the
 * next deadline (-1: none); cost: one walk of the loop's connections.
 */
int xrl_srv_conn_tick(struct xrl_srv_loop *lp)
{
	struct xrl_http_server *s = lp->s;
	__u64 now = xrl_now_ns(), next = UINT64_MAX, to;
	struct xrl_srv_conn *old = NULL;
	unsigned limit;
	int ms = -1;

	/* a walk is O(connections): only when one is due, or the loop is full */
	if (now < lp->tick_next && lp->n_conns < lp->conn_max)
		return lp->tick_next == UINT64_MAX
			       ? -1
			       : (int)((lp->tick_next - now + 999999) / 1000000);
	pthread_rwlock_rdlock(&s->mu);
	to = lp->head_to = s->cfg->c.head_timeout_ns;
	limit = lp->conn_max = loop_limit(lp, &s->cfg->c);
	pthread_rwlock_unlock(&s->mu);
	for (struct xrl_srv_conn *c = lp->conns; c; c = c->next) {
		if (c->head || c->shut)
			continue;
		if (to && (c->line || !c->served)) {
			if (now - c->since_ns >= to) {
				conn_shut(s, c, XRL_CONN_HEAD_TIMEOUT);
				continue;
			}
			if (c->since_ns + to < next)
				next = c->since_ns + to;
		}
		if (!old || c->since_ns < old->since_ns)
			old = c;
	}
	if (lp->n_conns >= limit && old) {
		/* room for what waits to be accepted: this loop's share of the
		 * queue (the loops share the listening socket), oldest first */
		unsigned want = (backlog_of(lp->lfd) + s->n_loops - 1) / s->n_loops;

		if (want > EVICT_MAX)
			want = EVICT_MAX;
		for (; want && old; want--) {
			conn_shut(s, old, XRL_CONN_EVICTED);
			old = NULL;
			for (struct xrl_srv_conn *c = lp->conns; c; c = c->next)
				if (!c->head && !c->shut && (!old || c->since_ns < old->since_ns))
					old = c;
		}
		ms = 50; /* full: look at the queue again soon */
	}
	lp->tick_next = next;
	if (next != UINT64_MAX) {
		__u64 w = (next - now + 999999) / 1000000;

		if (ms < 0 || w < (__u64)ms)
			ms = (int)(w ? w : 1);
	}
	return ms;
}

/* The peer's address as a prefix; false when it has none (AF_UNIX). */
static bool peer_prefix(struct MHD_Connection *conn, struct xrl_prefix *p, char *txt, size_t len)
{
	return xrl_srv_peer_text(conn, txt, len) && !xrl_http_addr_parse(txt, strlen(txt), p);
}

struct hdr_count {
	const char *name;
	const char *v;
	int n;
	size_t bytes; /* every field as NAME ": " VALUE CRLF */
};

static enum MHD_Result count_one(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	struct hdr_count *h = cls;

	(void)kind;
	if (!key)
		return MHD_YES;
	h->bytes += strlen(key) + 2 + (value ? strlen(value) : 0) + 2;
	if (h->name && !strcasecmp(key, h->name)) {
		h->n++;
		h->v = value ? value : "";
	}
	return MHD_YES;
}

int xrl_srv_header_count(struct MHD_Connection *conn, const char *name, const char **v)
{
	struct hdr_count h = { .name = name };

	MHD_get_connection_values(conn, MHD_HEADER_KIND, count_one, &h);
	if (v)
		*v = h.v;
	return h.n;
}

/* The caller secret sent matches (digests compared in constant time). */
static bool secret_ok(const struct xrl_http_cfg *c, const char *v)
{
	unsigned char a[EVP_MAX_MD_SIZE], b[EVP_MAX_MD_SIZE];
	unsigned int al = 0, bl = 0;
	bool ok;

	if (!v)
		return false;
	if (!EVP_Digest(v, strlen(v), a, &al, EVP_sha256(), NULL) ||
	    !EVP_Digest(c->caller_secret, c->caller_secret_len, b, &bl, EVP_sha256(), NULL) ||
	    al != bl)
		return false;
	ok = !CRYPTO_memcmp(a, b, al);
	OPENSSL_cleanse(b, sizeof(b));
	return ok;
}

/*
 * The door, at the handler's first call (the head is whole, no body read):
 * 0 when the request may go on; else 1 with the answer queued in *ret
 * (libmicrohttpd closes the connection after it: no body is read, nothing
 * is decided or charged). In turn: the head's size (431), a Content-Length
 * with a Transfer-Encoding (400: a proxy and xrld could frame it apart),
 * the caller's address (403), the caller secret (403). /healthz is answered
 * to anyone (a load balancer's probe; it decides and tells nothing of keys).
 */
int xrl_srv_door(struct xrl_http_server *s, const struct xrl_http_cfg *c,
		 struct MHD_Connection *conn, const char *method, const char *url,
		 const char *version, enum MHD_Result *ret)
{
	struct xrl_srv_conn *sc = conn_of(conn);
	struct hdr_count h = { .name = NULL };
	char peer[INET6_ADDRSTRLEN + 8];
	struct xrl_prefix p;
	size_t head;

	if (sc)
		sc->head = true;
	/* the head as counted (docs/policy.md, max_header_bytes): the request
	 * line METHOD SP TARGET SP VERSION CRLF, each field NAME ": " VALUE
	 * CRLF, the empty line CRLF; libmicrohttpd's pool is the backstop */
	MHD_get_connection_values(conn, MHD_HEADER_KIND, count_one, &h);
	head = strlen(method) + 1 + (sc ? sc->uri_len : 0) + 1 + strlen(version) + 2 + h.bytes + 2;
	if (head > c->max_header_bytes) {
		char msg[160];

		snprintf(msg, sizeof(msg), "the request head is %zu bytes, above %u", head,
			 c->max_header_bytes);
		atomic_fetch_add(&s->status[ST_431], 1);
		*ret = xrl_srv_problem(conn, 431, "Request Header Fields Too Large", msg);
		return 1;
	}
	if (MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH) &&
	    MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
		atomic_fetch_add(&s->status[ST_400], 1);
		*ret = xrl_srv_problem(conn, 400, "Bad Request",
				       "Content-Length with Transfer-Encoding (RFC 9112 6.1)");
		return 1;
	}
	if (!strcmp(url, "/healthz"))
		return 0;
	if (!peer_prefix(conn, &p, peer, sizeof(peer)) || !xrl_http_caller_ok(c, &p)) {
		atomic_fetch_add(&s->callers_refused[XRL_CALLER_ADDRESS], 1);
		atomic_fetch_add(&s->status[ST_403], 1);
		if (!atomic_exchange(&s->warned_caller, true))
			log_warnx("http: refused a request from %s: not loopback, a trusted proxy "
				  "or in http.callers (said once; counted in "
				  "xrl_http_callers_refused_total)",
				  peer);
		*ret = xrl_srv_problem(conn, 403, "Forbidden",
				       "this peer may not ask the identity tier (http.callers)");
		return 1;
	}
	if (c->caller_secret_len) {
		const char *v = NULL;

		if (xrl_srv_header_count(conn, XRL_HTTP_SECRET_HDR, &v) != 1 ||
		    !secret_ok(c, v)) {
			atomic_fetch_add(&s->callers_refused[XRL_CALLER_SECRET], 1);
			atomic_fetch_add(&s->status[ST_403], 1);
			*ret = xrl_srv_problem(conn, 403, "Forbidden",
					       "missing or wrong " XRL_HTTP_SECRET_HDR
					       " (http.caller_secret_file)");
			return 1;
		}
	}
	return 0;
}
