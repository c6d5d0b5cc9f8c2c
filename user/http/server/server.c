// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * server.c - the identity tier's HTTP server (libmicrohttpd).
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
#include "http/http.h"
#include "log.h"
#include "report.h"
#include "server_int.h"

/* The header rule r keys on came more than once: a proxy that appends its
 * own value to the client's would let the client choose the key. */
static bool dup_identity(struct MHD_Connection *conn, const struct xrl_http_rule *r)
{
	if (r->key_kind == XRL_KEY_HEADER)
		return xrl_srv_header_count(conn, r->header, NULL) > 1;
	if (r->key_kind == XRL_KEY_BEARER)
		return xrl_srv_header_count(conn, "Authorization", NULL) > 1;
	return false;
}

/* The answer to /v1/auth and /v1/auth/nginx once decided. */
static enum MHD_Result do_auth(struct xrl_http_server *s, struct xrl_srv_cfg *sc,
			       struct MHD_Connection *conn, struct xrl_srv_req *rq,
			       const char *method, const char *url, bool nginx)
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

	if (xrl_srv_original_of(s, c, conn, method, url, &om, path, sizeof(path), &ret))
		return ret;
	if (xrl_srv_exempt(c, om, path))
		return xrl_srv_exempt_answer(conn);
	if (xrl_srv_shed_route(s, c, om, path, &wait)) {
		struct xrl_decision d = { .allowed = false, .shed = true };

		d.retry_after_s = (wait + XRL_NSEC_PER_SEC - 1) / XRL_NSEC_PER_SEC;
		if (!d.retry_after_s)
			d.retry_after_s = 1;
		rq->timed = true;
		return xrl_srv_auth_answer(s, sc, conn, nginx, NULL, 0, &d);
	}

	for (__u32 i = 0; i < c->n_rules && n < XRL_HTTP_MAX_MATCH; i++) {
		const struct xrl_http_rule *r = &c->rules[i];
		const char *v;

		if (!xrl_http_rule_match(c, r, om, path))
			continue;
		if (dup_identity(conn, r)) {
			char msg[160];

			snprintf(msg, sizeof(msg),
				 "%s came more than once: rule %s keys on it, and which one "
				 "counts would be the client's choice",
				 r->key_kind == XRL_KEY_BEARER ? "Authorization" : r->header, r->name);
			atomic_fetch_add(&s->status[ST_400], 1);
			return xrl_srv_problem(conn, 400, "Bad Request", msg);
		}
		v = xrl_srv_rule_key(c, conn, r, keybuf[n], sizeof(keybuf[n]), ip, sizeof(ip));
		if (!v) {
			if (r->on_missing_key == XRL_MISSING_SKIP)
				continue;
			if (r->on_missing_key == XRL_MISSING_CLIENT_IP) {
				if (!ip[0])
					xrl_srv_client_ip(c, conn, ip, sizeof(ip));
				xrl_srv_client_key(ip, keybuf[n], sizeof(keybuf[n]));
				v = keybuf[n];
			}
		}
		rules[n] = r;
		keys[n] = v;
		n++;
	}
	rq->kind = nginx ? K_NGINX : K_AUTH;
	if (xrl_srv_decide(s, sc, rq, rules, keys, NULL, n) == 1)
		return MHD_YES; /* answered once Redis has decided */
	if (rq->d.allowed)
		xrl_srv_vouch_admitted(s, &sc->c, conn, rules, n, &rq->d);
	return xrl_srv_auth_answer(s, sc, conn, nginx, rules, n, &rq->d);
}

/* The answer to /v1/check once decided. */
static enum MHD_Result do_check(struct xrl_http_server *s, struct xrl_srv_cfg *sc,
				struct MHD_Connection *conn, struct xrl_srv_req *rq)
{
	const struct xrl_http_cfg *c = &sc->c;
	const struct xrl_http_rule *r = NULL;
	const char *rule, *key;
	json_error_t je;
	json_t *j, *jc;
	__u32 cost;
	int rc;

	if (rq->too_big)
		return xrl_srv_problem(conn, 413, "Payload Too Large",
				       "the body of /v1/check is at most 16 KiB");
	j = json_loadb(rq->body ? rq->body : "", rq->len, 0, &je);
	if (!j || !json_is_object(j)) {
		char msg[300];

		snprintf(msg, sizeof(msg),
			 "expected a JSON object {\"rule\":...,\"key\":...,\"cost\":...}: %s",
			 j ? "not an object" : je.text);
		json_decref(j);
		atomic_fetch_add(&s->status[ST_400], 1);
		return xrl_srv_problem(conn, 400, "Bad Request", msg);
	}
	rule = json_string_value(json_object_get(j, "rule"));
	key = json_string_value(json_object_get(j, "key"));
	jc = json_object_get(j, "cost");
	if (!rule || !key || !*key ||
	    (jc && (!json_is_integer(jc) || json_integer_value(jc) < 0 ||
		    json_integer_value(jc) > 100000000))) {
		json_decref(j);
		atomic_fetch_add(&s->status[ST_400], 1);
		return xrl_srv_problem(
			conn, 400, "Bad Request",
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
		return xrl_srv_problem(conn, 404, "Not Found", msg);
	}
	cost = jc ? (__u32)json_integer_value(jc) : r->cost;
	{
		const char *keys[1] = { key }; /* whole: the limiter copies what it keeps */

		rq->kind = K_CHECK;
		rq->cost = cost;
		rc = xrl_srv_decide(s, sc, rq, &r, keys, &cost, 1);
	}
	json_decref(j);
	if (rc == 1)
		return MHD_YES; /* answered once Redis has decided */
	if (rc == -E2BIG) {
		char msg[160];

		snprintf(msg, sizeof(msg),
			 "cost %u is above the burst %u of rule \"%s\" and could never be allowed",
			 cost, r->burst, r->name);
		atomic_fetch_add(&s->status[ST_400], 1);
		return xrl_srv_problem(conn, 400, "Bad Request", msg);
	}
	return xrl_srv_check_answer(s, sc, conn, r, &rq->d);
}

/* Envoy's ext_authz (and none) ask with the original method and path, after
 * the path_prefix /v1/auth: every path under it is the auth endpoint. */
static bool own_line(const struct xrl_http_cfg *c)
{
	return c->forwarded_from == XRL_FWD_ENVOY || c->forwarded_from == XRL_FWD_NONE;
}

/* A request that waited for the backend, answered: the rules are of
 * rq->cfg, held until now. */
static enum MHD_Result answer_decided(struct xrl_http_server *s, struct MHD_Connection *conn,
				      struct xrl_srv_req *rq)
{
	enum MHD_Result ret;

	xrl_srv_tl_loop->waiting--;
	pthread_rwlock_rdlock(&s->mu);
	xrl_srv_note_refused(s, rq->cfg, &rq->d, rq->rules, rq->tk, rq->n);
	if (rq->kind == K_CHECK)
		ret = xrl_srv_check_answer(s, rq->cfg, conn, rq->rules[0], &rq->d);
	else if (rq->kind == K_CHARGE)
		ret = xrl_srv_charge_answer(s, conn, rq);
	else if (rq->kind == K_RELEASE || rq->kind == K_LEASE_DEL)
		ret = xrl_srv_release_answer(s, conn, rq);
	else {
		if (rq->d.allowed)
			xrl_srv_vouch_admitted(s, &rq->cfg->c, conn, rq->rules, rq->n, &rq->d);
		ret = xrl_srv_auth_answer(s, rq->cfg, conn, rq->kind == K_NGINX, rq->rules, rq->n,
					  &rq->d);
	}
	xrl_srv_rq_release(rq);
	pthread_rwlock_unlock(&s->mu);
	if (rq->timed)
		xrl_srv_lat_observe(s, xrl_now_ns() - rq->t0_ns);
	return ret;
}

/* A whole request, to the handler of its path (s->mu held). */
static enum MHD_Result route(struct xrl_http_server *s, struct MHD_Connection *conn,
			     struct xrl_srv_req *rq, const char *method, const char *url)
{
	enum MHD_Result ret;
	bool post = !strcmp(method, MHD_HTTP_METHOD_POST);

	if (!strcmp(url, "/v1/auth") || (own_line(&s->cfg->c) && !strncmp(url, "/v1/auth/", 9)))
		ret = do_auth(s, s->cfg, conn, rq, method, url, false);
	else if (!strcmp(url, "/v1/auth/nginx"))
		ret = do_auth(s, s->cfg, conn, rq, method, url, true);
	else if (!strncmp(url, "/v1/auth/", 9)) /* Envoy's path_prefix form */
		ret = do_auth(s, s->cfg, conn, rq, method, url, false);
	else if (!strcmp(url, "/v1/check")) {
		if (!post) {
			atomic_fetch_add(&s->status[ST_405], 1);
			ret = xrl_srv_not_allowed(conn, "POST", "/v1/check takes POST");
		} else {
			ret = do_check(s, s->cfg, conn, rq);
		}
	} else if (!strcmp(url, "/v1/release")) {
		if (!post) {
			atomic_fetch_add(&s->status[ST_405], 1);
			ret = xrl_srv_not_allowed(conn, "POST", "/v1/release takes POST");
		} else {
			ret = xrl_srv_release(s, &s->cfg->c, conn, rq);
		}
	} else if (!strncmp(url, "/v1/lease/", 10)) {
		if (strcmp(method, MHD_HTTP_METHOD_DELETE)) {
			atomic_fetch_add(&s->status[ST_405], 1);
			ret = xrl_srv_not_allowed(conn, "DELETE", "/v1/lease/ID takes DELETE");
		} else {
			ret = xrl_srv_lease_delete(s, conn, rq, url + 10);
		}
	} else if (!strcmp(url, "/healthz")) {
		struct xrl_buf b = {};
		int bs = xrl_limiter_breaker_state(s->lim);

		xrl_buf_printf(&b, "ok%s\n",
			       !s->cfg->c.redis ? ""
			       : bs == 0	? " (redis: up)"
						: " (redis: down, rules on their fallback)");
		ret = xrl_srv_send_buf(conn, 200, "text/plain", &b, NULL, NULL);
		xrl_buf_free(&b);
	} else {
		atomic_fetch_add(&s->status[ST_404], 1);
		ret = xrl_srv_problem(conn, 404, "Not Found",
				      "try /v1/auth, /v1/auth/nginx, /v1/check or /healthz");
	}
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct xrl_http_server *s = cls;
	struct xrl_srv_req *rq = *con_cls;
	enum MHD_Result ret;

	if (!rq) {
		/* the head is whole: who asks, and whether its framing is one
		 * xrld and the proxy agree on (conn.c) */
		pthread_rwlock_rdlock(&s->mu);
		if (xrl_srv_door(s, &s->cfg->c, conn, method, url, version, &ret)) {
			pthread_rwlock_unlock(&s->mu);
			return ret;
		}
		pthread_rwlock_unlock(&s->mu);
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
	if (rq->phase == RQ_DECIDED)
		return answer_decided(s, conn, rq);
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

	rq->t0_ns = xrl_now_ns();
	pthread_rwlock_rdlock(&s->mu);
	ret = route(s, conn, rq, method, url);
	pthread_rwlock_unlock(&s->mu);
	/* answered now, not waiting for Redis */
	if (rq->timed && rq->phase == RQ_NEW)
		xrl_srv_lat_observe(s, xrl_now_ns() - rq->t0_ns);
	return ret;
}

static void on_done(void *cls, struct MHD_Connection *conn, void **con_cls,
		    enum MHD_RequestTerminationCode toe)
{
	struct xrl_srv_req *rq = *con_cls;

	(void)cls;
	(void)toe;
	xrl_srv_conn_done(conn);
	if (!rq)
		return;
	*con_cls = NULL;
	/* closed before it was answered (the client went away, or stop) */
	if (rq->phase != RQ_NEW && xrl_srv_tl_loop)
		xrl_srv_tl_loop->waiting--;
	if (rq->phase == RQ_WAITING) {
		rq->orphan = true; /* the pipe still writes its decision */
		return;
	}
	xrl_srv_rq_release(rq);
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

int xrl_http_listen_socket(const struct xrl_http_cfg *c, char *err, size_t errlen)
{
	const char *listen_at = c->listen;
	struct sockaddr_storage ss = c->listen_addr;
	socklen_t sl = c->listen_addrlen;
	int fd, one = 1, e;

	if (!sl) {
		snprintf(err, errlen, "http listen: expected HOST:PORT or [V6]:PORT, got '%s'",
			 listen_at);
		return -EINVAL;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "couldn't listen on %s: %s", listen_at, strerror(e));
		return -e;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) || listen(fd, 1024)) {
		e = errno;
		close(fd);
		snprintf(err, errlen, "couldn't listen on %s (%s)", listen_at,
			 e == EADDRINUSE      ? "in use"
			 : e == EADDRNOTAVAIL ? "not an address of this host"
					      : strerror(e));
		return -e;
	}
	return fd;
}

/*
 * Loop i's libmicrohttpd daemon: the first binds the listening socket, the
 * others share it (lfd); each takes its share of the connection limit, as
 * libmicrohttpd's thread pool would.
 */
static struct MHD_Daemon *start_daemon(struct xrl_http_server *s, const struct xrl_http_cfg *c,
				       unsigned i, unsigned flags, struct sockaddr_storage *ss,
				       MHD_socket lfd)
{
	unsigned n = s->n_loops, maxc = c->max_connections ? c->max_connections : 1024;
	unsigned limit = maxc / n + (i < maxc % n);

	return MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
				i || lfd != MHD_INVALID_SOCKET ? MHD_OPTION_LISTEN_SOCKET
							       : MHD_OPTION_SOCK_ADDR,
				i || lfd != MHD_INVALID_SOCKET ? (void *)(intptr_t)lfd : (void *)ss,
				MHD_OPTION_CONNECTION_LIMIT, limit ? limit : 1,
				/* whole seconds, rounded up: 0 would mean none
				 * (the parser takes 1 s to 1 day) */
				MHD_OPTION_CONNECTION_TIMEOUT,
				(unsigned)((c->idle_timeout_ns + XRL_NSEC_PER_SEC - 1) /
					   XRL_NSEC_PER_SEC),
				MHD_OPTION_UNESCAPE_CALLBACK, url_as_is, NULL,
				/* request line + headers live in this pool: its size is the
				 * header bound, beyond which libmicrohttpd answers 431 */
				MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				(size_t)c->max_header_bytes + 4096, MHD_OPTION_NOTIFY_COMPLETED,
				on_done, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
				MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024U,
				/* conn.c: the head's deadline, the door, room when full */
				MHD_OPTION_NOTIFY_CONNECTION, xrl_srv_conn_notify, &s->loops[i],
				MHD_OPTION_URI_LOG_CALLBACK, xrl_srv_conn_uri, &s->loops[i],
				/* each loop takes its share of the per-peer bound, rounded up */
				MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				c->max_conn_per_peer ? (c->max_conn_per_peer + n - 1) / n : 0U,
				MHD_OPTION_END);
}

int xrl_http_start(const struct xrl_http_cfg *c, struct xrl_http_server **out, char *err,
		   size_t errlen)
{
	return xrl_http_start_fd(c, -1, out, err, errlen);
}

/* A server of n loops but for its limiter and daemons: its configuration,
 * the loops, their latency slots and top-k shards (one more of each, for
 * off the loops). NULL when out of memory. */
static struct xrl_http_server *server_new(const struct xrl_http_cfg *c, unsigned n)
{
	struct xrl_http_server *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->cfg = calloc(1, sizeof(*s->cfg));
	s->loops = calloc(n, sizeof(*s->loops));
	s->lat = aligned_alloc(_Alignof(struct xrl_srv_lat), (n + 1) * sizeof(*s->lat));
	if (s->cfg && s->loops && s->lat)
		s->topk = xrl_topk_new(n + 1);
	if (!s->topk) {
		free(s->cfg);
		free(s->loops);
		free(s->lat);
		free(s);
		return NULL;
	}
	memset(s->lat, 0, (n + 1) * sizeof(*s->lat));
	s->n_loops = n;
	s->cfg->c = *c;
	if (xrl_srv_cfg_counters(s->cfg, NULL))
		log_warnx("http: out of memory: some rules' decisions go uncounted");
	pthread_rwlock_init(&s->mu, NULL);
	return s;
}

/* s's loops, each with its daemon on the one listening socket (lfd, or the
 * first daemon's), then their threads: 0, or -errno with err set. */
static int loops_start(struct xrl_http_server *s, const struct xrl_http_cfg *c, unsigned flags,
		       struct sockaddr_storage *ss, MHD_socket lfd, char *err, size_t errlen)
{
	unsigned n = s->n_loops;
	int rc;

	for (unsigned i = 0; i < n; i++) {
		struct xrl_srv_loop *lp = &s->loops[i];

		lp->s = s;
		lp->ep = lp->stop_fd = lp->pipe_io.fd = -1;
		lp->d = start_daemon(s, c, i, flags, ss, lfd);
		if (!lp->d) {
			if (!i)
				snprintf(err, errlen,
					 "couldn't listen on %s (in use, or not an address of this host?)",
					 c->listen);
			else
				snprintf(err, errlen, "couldn't start http server thread %u", i);
			return i ? -ENOMEM : -EADDRINUSE;
		}
		if (!i) {
			const union MHD_DaemonInfo *di =
				MHD_get_daemon_info(lp->d, MHD_DAEMON_INFO_LISTEN_FD);

			lfd = di ? di->listen_fd : MHD_INVALID_SOCKET;
		}
		rc = lfd == MHD_INVALID_SOCKET ? -ENOMEM : xrl_srv_loop_init(lp);
		if (rc) {
			snprintf(err, errlen, "couldn't set up http server thread %u", i);
			return rc;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		if (pthread_create(&s->loops[i].thr, NULL, xrl_srv_loop_main, &s->loops[i])) {
			snprintf(err, errlen, "couldn't start http server thread %u", i);
			return -EAGAIN;
		}
		s->loops[i].started = true;
	}
	return 0;
}

int xrl_http_start_fd(const struct xrl_http_cfg *c, int listen_fd, struct xrl_http_server **out,
		      char *err, size_t errlen)
{
	struct xrl_http_server *s;
	struct sockaddr_storage ss = c->listen_addr;
	/* no internal thread: each server thread runs a daemon in its own loop */
	unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	unsigned n = c->threads ? c->threads : 2;
	MHD_socket lfd = listen_fd >= 0 ? listen_fd : MHD_INVALID_SOCKET;
	int rc;

	if (!c->listen_addrlen) {
		snprintf(err, errlen, "http listen: expected HOST:PORT or [V6]:PORT, got '%s'",
			 c->listen);
		return -EINVAL;
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s = server_new(c, n);
	if (!s)
		return -ENOMEM;
	rc = xrl_limiter_new(c, &s->lim);
	if (rc) {
		snprintf(err, errlen, "couldn't set up the buckets: %s", strerror(-rc));
		free(s->loops);
		goto fail;
	}
	rc = loops_start(s, c, flags, &ss, lfd, err, errlen);
	if (rc) {
		xrl_srv_loops_stop(s);
		xrl_limiter_free(s->lim);
		goto fail;
	}
	if (xrl_srv_ovr_sync_start(s))
		log_warnx("http: couldn't start sharing overrides through Redis: overrides stay "
			  "on this instance");
	log_info("identity tier listening on %s, %u rules, backend %s, %u threads", c->listen,
		 c->n_rules, c->redis ? "redis" : "memory", n);
	*out = s;
	return 0;
fail:
	xrl_topk_free(s->topk);
	xrl_srv_cfg_free(s->cfg);
	free(s->lat);
	free(s);
	return rc;
}

void xrl_http_stop(struct xrl_http_server *s)
{
	struct xrl_srv_cfg *x;

	if (!s)
		return;
	xrl_srv_ovr_sync_stop(s);
	xrl_srv_loops_stop(s);
	xrl_limiter_free(s->lim);
	xrl_topk_free(s->topk);
	while ((x = s->retired)) {
		s->retired = x->next;
		xrl_srv_cfg_free(x);
	}
	xrl_srv_cfg_free(s->cfg);
	free(s->lat);
	free(s);
}
