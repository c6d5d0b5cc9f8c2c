// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * idchild.c - the identity process: xrld's child that runs the identity
 * tier, the overrides sync and the fleet (idproc.h has the wall and the
 * protocol). It starts as exec left it (another uid, no capability, no
 * BPF descriptor), confines itself before any thread, and then does what
 * xrld's calls ask. Whatever takes it over holds a listening socket, its
 * Redis connections and two sockets to xrld that carry checked structs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "http/fleet/fleet.h"
#include "http/http.h"
#include "http/server/admin.h"
#include "idproc.h"
#include "log.h"
#include "privs.h"

struct child {
	struct xrld_config *cfg; /* the one started with (the fleet keeps it) */
	struct xrl_http_server *srv;
	struct xrl_fleet *fleet;
};

/* A server thread's vouch: never waits (a full socket drops it, and xrld
 * counts what arrives against what the tier admitted). */
static void on_vouch(void *arg, const struct xrl_prefix *client, __u64 ttl_ns)
{
	struct xrl_idev ev = { .type = XRL_IDEV_VOUCH };

	(void)arg;
	ev.vouch.p = *client;
	ev.vouch.ttl_ns = ttl_ns;
	if (send(XRL_IDP_FD_EVENT, &ev, sizeof(ev), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		log_debug("identity process: a vouch was not sent: %s", strerror(errno));
}

/* The fleet's thread: an entry for xrld's denylists. A host that comes
 * back reads the whole hash at once, so a full socket is waited on (the
 * socket's send timeout, a second), not dropped. A read of the hash with
 * an entry not handed over ends without its SYNC_END: xrld would lift
 * the denial it did not hear of. */
static void on_fleet_deny(void *arg, const struct xrl_fleet_entry *e)
{
	static __u64 lost; /* since the last SYNC_BEGIN; the fleet's thread only */
	struct xrl_idev ev = { .type = XRL_IDEV_FLEET };

	(void)arg;
	if (e->op == XRL_FLEET_SYNC_BEGIN)
		lost = 0;
	if (e->op == XRL_FLEET_SYNC_END && lost) {
		log_warnx("identity process: %llu entries of the fleet's deny hash were not handed "
			  "to xrld: the ones deleted while it was cut off are not looked for",
			  (unsigned long long)lost);
		return;
	}
	ev.fleet = *e;
	if (send(XRL_IDP_FD_EVENT, &ev, sizeof(ev), MSG_NOSIGNAL) < 0) {
		lost++;
		log_agg(XRL_LOG_WARN, "idp: fleet", "fleet entries not handed to xrld",
			"identity process: a fleet entry for %s was not handed to xrld: %s",
			e->field, strerror(errno));
	}
}

static json_t *fail(int rc, const char *why)
{
	return json_pack("{s:i,s:s}", "errno", -rc, "err", why && why[0] ? why : strerror(-rc));
}

static json_t *ok(json_t *r)
{
	return json_pack("{s:o}", "r", r ? r : json_null());
}

static json_t *fleet_stats(struct child *c)
{
	struct xrl_fleet_stats st;

	if (!c->fleet)
		return json_null();
	xrl_fleet_get_stats(c->fleet, &st);
	return json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "id",
			 xrl_fleet_id(c->fleet), "live", (json_int_t)st.live, "connected",
			 (json_int_t)st.connected, "published", (json_int_t)st.published, "applied",
			 (json_int_t)st.applied, "errors", (json_int_t)st.errors, "dropped",
			 (json_int_t)st.dropped, "heartbeats", (json_int_t)st.heartbeats,
			 "redirects", (json_int_t)st.redirects, "pruned", (json_int_t)st.pruned,
			 "refused", (json_int_t)st.refused, "live_read", (json_int_t)st.live_read,
			 "live_over", (json_int_t)st.live_over, "log_reset",
			 (json_int_t)st.log_reset);
}

/*
 * The caller secret xrld read for this policy's http.caller_secret_file,
 * from the call q (this process's user may not read the file; its parse
 * only noted the path). Checked as the file was.
 */
static int take_secret(struct xrld_config *cfg, json_t *q, char *err, size_t errlen)
{
	struct xrl_http_cfg *h = &cfg->http;
	const char *v = json_string_value(json_object_get(q, "caller_secret"));
	size_t n = v ? strlen(v) : 0;

	h->caller_secret_len = 0;
	if (!cfg->has_http || !h->caller_secret_file[0])
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] <= ' ' || (unsigned char)v[i] >= 0x7f)
			n = 0;
	if (n < XRL_HTTP_SECRET_MIN || n > XRL_HTTP_SECRET_MAX) {
		snprintf(err, errlen,
			 "xrld sent no usable secret of http.caller_secret_file %.160s",
			 h->caller_secret_file);
		return -EINVAL;
	}
	memcpy(h->caller_secret, v, n);
	h->caller_secret_len = (__u32)n;
	return 0;
}

static int start(struct child *c, json_t *q, const char *text, size_t len, char *err, size_t errlen)
{
	int rc;

	c->cfg = calloc(1, sizeof(*c->cfg));
	if (!c->cfg)
		return -ENOMEM;
	if ((rc = xrl_config_parse(text, len, "policy", c->cfg, err, errlen)) ||
	    (rc = take_secret(c->cfg, q, err, errlen)))
		return rc;
	if (c->cfg->log_level >= 0)
		log_set_level(c->cfg->log_level);
	if (c->cfg->has_http &&
	    (rc = xrl_http_start_fd(&c->cfg->http, XRL_IDP_FD_LISTEN, &c->srv, err, errlen)))
		return rc;
	if (c->srv)
		xrl_http_set_vouch(c->srv, on_vouch, c);
	if (c->cfg->fleet.enabled) {
		if ((rc = xrl_fleet_new(&c->cfg->fleet, &c->fleet)))
			return snprintf(err, errlen, "couldn't join the fleet %s: %s",
					c->cfg->fleet.name, strerror(-rc)),
			       rc;
		if (c->srv && c->cfg->http.fleet[0])
			xrl_http_set_fleet(c->srv, c->fleet);
		if (c->cfg->fleet.packet)
			xrl_fleet_on(c->fleet, XRL_FLEET_DENY, on_fleet_deny, c);
		if ((rc = xrl_fleet_run(c->fleet)))
			return snprintf(err, errlen, "couldn't join the fleet %s: %s",
					c->cfg->fleet.name, strerror(-rc)),
			       rc;
	}
	return 0;
}

static const char *sget(json_t *q, const char *k)
{
	const char *s = json_string_value(json_object_get(q, k));

	return s ? s : "";
}

static json_t *reload(struct child *c, json_t *q, const char *op, const char *payload, size_t plen)
{
	struct xrld_config *n = calloc(1, sizeof(*n));
	char err[XRL_ERRLEN] = "";
	int rc;

	if (!n)
		return fail(-ENOMEM, NULL);
	rc = xrl_config_parse(payload, plen, "policy", n, err, sizeof(err));
	if (!rc)
		rc = take_secret(n, q, err, sizeof(err));
	if (!rc && !n->has_http)
		rc = -EINVAL, snprintf(err, sizeof(err), "no http: section");
	if (!rc && !strcmp(op, "reload_check"))
		rc = xrl_http_reload_check(c->srv, &n->http, err, sizeof(err));
	else if (!rc) {
		rc = xrl_http_reload(c->srv, &n->http);
		if (n->log_level >= 0)
			log_set_level(n->log_level);
	}
	explicit_bzero(n->http.caller_secret, sizeof(n->http.caller_secret));
	free(n);
	return rc ? fail(rc, err) : ok(NULL);
}

static json_t *metrics(struct child *c)
{
	struct xrl_buf b = { 0 };
	json_t *r;

	xrl_http_metrics(c->srv, &b);
	if (b.oom) {
		xrl_buf_free(&b);
		return fail(-ENOMEM, NULL);
	}
	r = ok(json_stringn(b.p ? b.p : "", b.len));
	xrl_buf_free(&b);
	return r;
}

/* One call: the answer to send. */
static json_t *dispatch(struct child *c, json_t *q, const char *payload, size_t plen)
{
	const char *op = sget(q, "op");
	char err[XRL_ERRLEN] = "";
	int rc;

	if (!strcmp(op, "fleet_stats"))
		return ok(fleet_stats(c));
	if (!strcmp(op, "fleet_publish")) {
		struct xrl_fleet_entry e = {
			.op = (__u8)json_integer_value(json_object_get(q, "fop")),
			.kind = (__u8)json_integer_value(json_object_get(q, "kind")),
			.until_ms = (__u64)json_integer_value(json_object_get(q, "until_ms")),
			.level = (__u32)json_integer_value(json_object_get(q, "level")),
		};

		if (!c->fleet)
			return fail(-ENOENT, "no fleet");
		snprintf(e.field, sizeof(e.field), "%s", sget(q, "field"));
		return (rc = xrl_fleet_publish(c->fleet, &e))
			       ? fail(rc, "the fleet's queue is full")
			       : ok(NULL);
	}
	if (!c->srv)
		return fail(-ENOENT, "the identity tier is not configured (no http: section)");
	if (!strcmp(op, "status"))
		return ok(xrl_http_status_json(c->srv));
	if (!strcmp(op, "stats"))
		return ok(xrl_http_stats_json(c->srv));
	if (!strcmp(op, "metrics"))
		return metrics(c);
	if (!strcmp(op, "has_rule"))
		return ok(json_boolean(xrl_http_has_rule(c->srv, sget(q, "rule"))));
	if (!strcmp(op, "shadow"))
		return (rc = xrl_http_shadow(c->srv, sget(q, "rule"),
					     json_is_true(json_object_get(q, "on")), err,
					     sizeof(err)))
			       ? fail(rc, err)
			       : ok(NULL);
	if (!strcmp(op, "top")) {
		json_t *a = NULL;

		rc = xrl_http_top_json(c->srv, sget(q, "rule"),
				       (int)json_integer_value(json_object_get(q, "n")), &a, err,
				       sizeof(err));
		return rc ? fail(rc, err) : ok(a);
	}
	if (!strcmp(op, "peaks")) {
		json_t *a = xrl_http_peaks_json(c->srv);

		return a ? ok(a) : fail(-ENOMEM, NULL);
	}
	if (!strcmp(op, "override_list"))
		return ok(xrl_http_override_list_json(c->srv));
	if (!strcmp(op, "override_set"))
		return (rc = xrl_http_override_set(c->srv, sget(q, "rule"), sget(q, "key"),
						   sget(q, "rate"),
						   (unsigned)json_integer_value(
							   json_object_get(q, "burst")),
						   (__u64)json_integer_value(
							   json_object_get(q, "ttl_ns")),
						   err, sizeof(err)))
			       ? fail(rc, err)
			       : ok(NULL);
	if (!strcmp(op, "override_del"))
		return (rc = xrl_http_override_del(c->srv, sget(q, "rule"), sget(q, "key"), err,
						   sizeof(err)))
			       ? fail(rc, err)
			       : ok(NULL);
	if (!strcmp(op, "penalties"))
		return ok(xrl_http_penalties(c->srv));
	if (!strcmp(op, "penalty_del")) {
		int lifted = 0;

		rc = xrl_http_penalty_del(c->srv, sget(q, "hex"), &lifted);
		return rc ? fail(rc, NULL) : ok(json_integer(lifted));
	}
	if (!strcmp(op, "reload_check") || !strcmp(op, "reload"))
		return reload(c, q, op, payload, plen);
	return fail(-EOPNOTSUPP, "no such call");
}

/* What xrld sent for the fleet (an operator's deny, a verified penalty):
 * queued for Redis; xrld never waits for it. */
static void take_publishes(struct child *c)
{
	for (int i = 0; i < 256; i++) {
		struct xrl_idev ev;
		ssize_t n = recv(XRL_IDP_FD_EVENT, &ev, sizeof(ev), MSG_DONTWAIT);

		if (n != sizeof(ev))
			return;
		if (ev.type != XRL_IDEV_PUBLISH || !c->fleet)
			continue;
		ev.fleet.field[sizeof(ev.fleet.field) - 1] = 0;
		if (xrl_fleet_publish(c->fleet, &ev.fleet))
			log_agg(XRL_LOG_WARN, "fleet: queue", "fleet entries dropped",
				"fleet %s: the queue to Redis is full: %s stays local",
				c->cfg->fleet.name, ev.fleet.field);
	}
}

static void stop(struct child *c)
{
	if (c->fleet)
		xrl_fleet_free(c->fleet); /* first: its thread calls into the tier */
	if (c->srv)
		xrl_http_stop(c->srv);
	free(c->cfg);
}

int xrld_identity_main(int verbose, int use_syslog)
{
	struct child c = { 0 };
	char err[XRL_ERRLEN] = "";
	char *json, *payload;
	size_t jlen, plen;
	json_t *q, *a;
	char *out;
	int rc;

	/* first: no other process of this uid (nobody may be shared) reads
	 * or writes this one's memory through /proc or ptrace */
	prctl(PR_SET_DUMPABLE, 0);
	log_init("xrld", verbose > 1 ? XRL_LOG_DEBUG : XRL_LOG_INFO, use_syslog);
	log_hook_libs();
	signal(SIGPIPE, SIG_IGN);
	/* xrld gone: so is this process (its calls' socket ends too) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		return 1;
	/* before any thread: every thread inherits it */
	if ((rc = xrl_process_confine())) {
		log_err("identity process: couldn't confine itself: %s", strerror(-rc));
		return 1;
	}
	/* xrld reads http.caller_secret_file and sends the secret with the
	 * policy: this process's user may not read it */
	xrl_config_secret_files(false);
	/* the first call is start, with the policy */
	rc = xrl_idp_recv(XRL_IDP_FD_CALL, &json, &jlen, &payload, &plen, XRL_IDP_FRAME_MAX, 0);
	if (rc)
		return 1;
	{
		json_t *q0 = json_loadb(json, jlen, 0, NULL);

		rc = start(&c, q0, payload, plen, err, sizeof(err));
		json_decref(q0);
		explicit_bzero(json, jlen);
	}
	a = rc ? fail(rc, err) : ok(NULL);
	free(json);
	free(payload);
	out = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	if (!out || xrl_idp_send(XRL_IDP_FD_CALL, out, strlen(out), NULL, 0, 0) || rc) {
		free(out);
		stop(&c);
		return 1;
	}
	free(out);
	for (__u64 alive_at = 0;;) {
		struct pollfd pfd[2] = { { .fd = XRL_IDP_FD_CALL, .events = POLLIN },
					 { .fd = XRL_IDP_FD_EVENT, .events = POLLIN } };
		json_error_t je;

		__u64 now = xrl_now_ns();
		int r;

		if (now >= alive_at) {
			struct xrl_idev ev = { .type = XRL_IDEV_ALIVE };

			send(XRL_IDP_FD_EVENT, &ev, sizeof(ev), MSG_DONTWAIT | MSG_NOSIGNAL);
			alive_at = now + XRL_IDP_ALIVE_MS * 1000000ULL;
		}
		r = poll(pfd, 2, (int)((alive_at - now) / 1000000) + 1);
		if (r < 0 && errno != EINTR)
			break;
		if (r <= 0)
			continue;
		if (pfd[1].revents & POLLIN)
			take_publishes(&c);
		if (!(pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		rc = xrl_idp_recv(XRL_IDP_FD_CALL, &json, &jlen, &payload, &plen, XRL_IDP_FRAME_MAX,
				  0);
		if (rc)
			break; /* xrld closed its end: stop */
		q = json_loadb(json, jlen, 0, &je);
		if (q && !strcmp(sget(q, "op"), "stop")) {
			json_decref(q);
			free(json);
			free(payload);
			break;
		}
		a = q ? dispatch(&c, q, payload, plen) : fail(-EBADMSG, "not JSON");
		json_decref(q);
		free(json);
		free(payload);
		out = a ? json_dumps(a, JSON_COMPACT) : NULL;
		json_decref(a);
		if (!out)
			out = strdup("{\"errno\":12,\"err\":\"out of memory\"}");
		rc = out ? xrl_idp_send(XRL_IDP_FD_CALL, out, strlen(out), NULL, 0, 0) : -ENOMEM;
		free(out);
		if (rc)
			break;
	}
	stop(&c);
	return 0;
}
