// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * answers.c - what the identity tier answers: 200 with quota headers, 429
 * with Retry-After and problem+json naming the limit, 503 when shedding,
 * and /v1/check's decision as JSON.
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

static void rate_words(const struct xrl_rate *rt, char *buf, size_t len)
{
	static const struct {
		__u64 ns;
		const char *one, *many;
	} u[] = {
		{ 86400 * XRL_NSEC_PER_SEC, "day", "days" },
		{ 3600 * XRL_NSEC_PER_SEC, "hour", "hours" },
		{ 60 * XRL_NSEC_PER_SEC, "minute", "minutes" },
		{ XRL_NSEC_PER_SEC, "second", "seconds" },
		{ 1000000, "millisecond", "milliseconds" },
	};
	__u64 per = rt->period_ns, tok = rt->tokens;

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

	if (d->n_leases) { /* "ID, ID": an HTTP list, one per concurrency rule */
		char lv[XRL_HTTP_MAX_MATCH * (XRL_LEASE_ID_MAX + 2)];
		size_t o = 0;

		for (__u32 i = 0; i < d->n_leases; i++)
			o += (size_t)snprintf(lv + o, sizeof(lv) - o, "%s%s", i ? ", " : "",
					      d->lease[i]);
		MHD_add_response_header(resp, "X-XRL-Lease", lv);
	}
	if (!d->rule || !d->rule->has_rate)
		return; /* a concurrency rule's refusal: no bucket to describe */
	nl = strnlen(d->rule->name, sizeof(d->rule->name));
	if (c->ietf_headers) {
		/* draft-ietf-httpapi-ratelimit-headers: quota q over window w
		 * (the time an empty bucket takes to fill); r left, t to reset */
		p = put_str(v, "\"", 1);
		p = put_str(p, d->rule->name, nl);
		p = put_str(p, "\";q=", 4);
		p = xrl_put_u64(p, d->limit);
		p = put_str(p, ";w=", 3);
		/* a key's override has a window of its own */
		p = xrl_put_u64(p, ((d->tau_ns ? d->tau_ns : d->rule->g.tau_ns) + XRL_NSEC_PER_SEC -
				    1) / XRL_NSEC_PER_SEC);
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
					  const struct xrl_http_cfg *c,
					  const struct xrl_decision *d)
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
	if (c && d && d->missing_key) {
		/* no bucket was asked and waiting brings no identity: no quota
		 * headers, no Retry-After; the challenge RFC 9110 11.6.1 wants */
		if (d->rule)
			MHD_add_response_header(resp, "X-XRL-Rule", d->rule->name);
		MHD_add_response_header(resp, "WWW-Authenticate",
					d->rule && d->rule->key_kind == XRL_KEY_BEARER
						? "Bearer realm=\"xrl\""
						: "XRL-Identity realm=\"xrl\"");
	} else if (c && d) {
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

enum MHD_Result xrl_srv_send_buf(struct MHD_Connection *conn, unsigned status, const char *ctype,
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

/* A problem+json answer; allow: the Allow header's methods (a 405 must
 * carry it, RFC 9110 15.5.6), NULL for none. */
static enum MHD_Result problem_allow(struct MHD_Connection *conn, unsigned status,
				     const char *title, const char *detail, const char *allow)
{
	struct xrl_buf b = {};
	struct MHD_Response *resp;
	enum MHD_Result r;

	xrl_buf_printf(&b, "{\"type\":\"about:blank\",\"title\":");
	buf_json_str(&b, title);
	xrl_buf_printf(&b, ",\"status\":%u,\"detail\":", status);
	buf_json_str(&b, detail);
	xrl_buf_printf(&b, "}\n");
	resp = make_response("application/problem+json", &b, NULL, NULL);
	xrl_buf_free(&b);
	if (!resp)
		return MHD_NO;
	if (allow)
		MHD_add_response_header(resp, "Allow", allow);
	r = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return r;
}

enum MHD_Result xrl_srv_problem(struct MHD_Connection *conn, unsigned status, const char *title,
				const char *detail)
{
	return problem_allow(conn, status, title, detail, NULL);
}

enum MHD_Result xrl_srv_not_allowed(struct MHD_Connection *conn, const char *allow,
				    const char *detail)
{
	return problem_allow(conn, 405, "Method Not Allowed", detail, allow);
}

/* The header whose absence made a refusal (on_missing_key: refuse). */
static const char *missing_header(const struct xrl_http_rule *r)
{
	if (!r)
		return "";
	return r->key_kind == XRL_KEY_BEARER ? "Authorization" : r->header;
}

static const char *status_title(unsigned status)
{
	return status == 503   ? "Service Unavailable"
	       : status == 401 ? "Unauthorized"
	       : status == 403 ? "Forbidden"
			       : "Too Many Requests";
}

/* 429/503 body: which limit, in a sentence a person understands. */
static void refusal_body(struct xrl_buf *b, const struct xrl_decision *d, unsigned status)
{
	char rate[96], detail[512];
	const char *rn = d->rule ? d->rule->name : "capacity";

	if (d->rule && d->rule->has_rate)
		rate_words(d->rate.period_ns ? &d->rate : &d->rule->rate, rate, sizeof(rate));
	else
		rate[0] = '\0';
	if (d->conc)
		snprintf(detail, sizeof(detail),
			 "%s \"%s\" are all in use (%llu at once); try again in %llu second%s.",
			 d->shed ? "The service's slots of" : "Your slots of", rn,
			 (unsigned long long)d->limit, (unsigned long long)d->retry_after_s,
			 d->retry_after_s == 1 ? "" : "s");
	else if (d->shed && d->backend_error)
		snprintf(detail, sizeof(detail),
			 "The rate-limit store for \"%s\" is unavailable and this limit fails closed; "
			 "try again in %llu second%s.",
			 rn, (unsigned long long)d->retry_after_s,
			 d->retry_after_s == 1 ? "" : "s");
	else if (d->shed)
		snprintf(detail, sizeof(detail),
			 "The service is shedding load; try again in %llu second%s.",
			 (unsigned long long)d->retry_after_s, d->retry_after_s == 1 ? "" : "s");
	else if (d->missing_key)
		snprintf(detail, sizeof(detail),
			 "Requests to this route are limited per caller (rule \"%s\") and this request "
			 "did not say who the caller is: it has no %s header.",
			 rn, missing_header(d->rule));
	else if (d->penalized)
		snprintf(detail, sizeof(detail),
			 "You went over the limit \"%s\" (%s, bursts of %llu) repeatedly and are blocked "
			 "for %llu more second%s.",
			 rn, rate, (unsigned long long)d->limit,
			 (unsigned long long)d->retry_after_s, d->retry_after_s == 1 ? "" : "s");
	else
		snprintf(detail, sizeof(detail),
			 "You have used up the limit \"%s\": %s, in bursts of up to %llu. "
			 "Try again in %llu second%s.",
			 rn, rate, (unsigned long long)d->limit,
			 (unsigned long long)d->retry_after_s, d->retry_after_s == 1 ? "" : "s");
	xrl_buf_printf(b, "{\"type\":\"about:blank\",\"title\":\"%s\",\"status\":%u,\"detail\":",
		       status_title(status), status);
	buf_json_str(b, detail);
	xrl_buf_printf(b, ",\"rule\":");
	buf_json_str(b, rn);
	if (d->missing_key) {
		xrl_buf_printf(b, ",\"missing_header\":");
		buf_json_str(b, missing_header(d->rule));
		xrl_buf_printf(b, "}\n");
		return;
	}
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
	__u64 tau_ns, per_ns, tokens; /* an override's, in the headers and body */
	time_t now_s;
	unsigned status;
	bool missing, penalized, conc;
	struct MHD_Response *resp;
};
static __thread struct refusal_cache tl_refusal;

/* The thread's cached refusal goes, as its loop ends. */
void xrl_srv_refusal_drop(void)
{
	if (tl_refusal.resp) /* a response, once queued, is libmicrohttpd's too */
		MHD_destroy_response(tl_refusal.resp);
	tl_refusal.resp = NULL;
}

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
	    rc->now_s != now_s || rc->missing != d->missing_key || rc->penalized != d->penalized ||
	    rc->conc != d->conc || rc->tau_ns != d->tau_ns || rc->per_ns != d->rate.period_ns ||
	    rc->tokens != d->rate.tokens) {
		struct xrl_buf b = {};
		struct MHD_Response *resp;

		refusal_body(&b, d, status == MHD_HTTP_FORBIDDEN ? 429 : status);
		resp = make_response("application/problem+json", &b, c, d);
		xrl_buf_free(&b);
		if (!resp)
			return MHD_NO;
		if (rc->resp)
			MHD_destroy_response(rc->resp);
		*rc = (struct refusal_cache){ .srv = s,
					      .gen = gen,
					      .rule = d->rule,
					      .limit = d->limit,
					      .remaining = d->remaining,
					      .reset_s = d->reset_s,
					      .retry_after_s = d->retry_after_s,
					      .tau_ns = d->tau_ns,
					      .per_ns = d->rate.period_ns,
					      .tokens = d->rate.tokens,
					      .now_s = now_s,
					      .status = status,
					      .missing = d->missing_key,
					      .penalized = d->penalized,
					      .conc = d->conc,
					      .resp = resp };
	}
	return MHD_queue_response(conn, status, rc->resp);
}

/* The global capacity bucket: one CAS on a shared TAT. */
bool xrl_srv_shed_check(struct xrl_http_server *s, const struct xrl_http_cfg *c, __u64 *wait)
{
	__u64 now = xrl_now_ns(), old, nt;

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

/* Each rule's verdict into its counters (sc's: the configuration the
 * request was decided under, whose rules those are). */
static void count_decision(const struct xrl_srv_cfg *sc, const struct xrl_http_rule *const *rules,
			   int n, const struct xrl_decision *d)
{
	const struct xrl_http_cfg *c = &sc->c;
	int ri = rule_index(c, d->rule);

	/* Redis did not decide: every rule of the request fell back to its
	 * on_backend_error (a closed one stops at the first) */
	for (int i = 0; d->backend_error && i < n; i++)
		atomic_fetch_add(&sc->ctr[rule_index(c, rules[i])]->fallback, 1);
	/* a shadow rule that would have refused is counted as such, not as
	 * allowed: each rule's request is in one verdict, as in the packet tier */
	for (__u32 i = 0; i < d->n_shadow; i++) {
		int si = rule_index(c, d->shadow[i]);

		if (si >= 0 && si < XRL_HTTP_MAX_RULES)
			atomic_fetch_add(&sc->ctr[si]->shadow, 1);
	}
	if (d->allowed) {
		for (int i = 0; i < n; i++) {
			bool shadowed = false;

			for (__u32 k = 0; k < d->n_shadow; k++)
				shadowed |= d->shadow[k] == rules[i];
			if (!shadowed)
				atomic_fetch_add(&sc->ctr[rule_index(c, rules[i])]->allowed, 1);
		}
	} else if (ri >= 0 && ri < XRL_HTTP_MAX_RULES) {
		atomic_fetch_add(&sc->ctr[ri]->refused, 1);
	}
}

enum MHD_Result xrl_srv_auth_answer(struct xrl_http_server *s, const struct xrl_srv_cfg *sc,
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
		count_decision(sc, rules, n, d);
	if (d->allowed) {
		status = MHD_HTTP_OK;
		atomic_fetch_add(&s->status[ST_200], 1);
	} else if (d->shed) {
		status = nginx ? MHD_HTTP_UNAUTHORIZED : MHD_HTTP_SERVICE_UNAVAILABLE;
		atomic_fetch_add(&s->status[nginx ? ST_401 : ST_503], 1);
		refusal_body(&b, d, 503);
	} else if (d->missing_key && !nginx) {
		/* 401, not 429: the request lacks the identity the rule counts,
		 * and no wait helps (nginx's auth_request keeps 401 for shedding:
		 * there it is 403, a refusal, without Retry-After) */
		atomic_fetch_add(&s->status[ST_401], 1);
		return send_refusal(s, c, conn, MHD_HTTP_UNAUTHORIZED, d);
	} else {
		status = nginx ? MHD_HTTP_FORBIDDEN : MHD_HTTP_TOO_MANY_REQUESTS;
		atomic_fetch_add(&s->status[nginx ? ST_403 : ST_429], 1);
		return send_refusal(s, c, conn, status, d);
	}
	ret = xrl_srv_send_buf(conn, status, d->allowed ? "text/plain" : "application/problem+json",
			       &b, c, d);
	xrl_buf_free(&b);
	return ret;
}

/* The forwarded headers of the configured kind: their values, and whether
 * one came twice (a client's copy beside the proxy's). */
enum MHD_Result xrl_srv_check_answer(struct xrl_http_server *s, const struct xrl_srv_cfg *sc,
				     struct MHD_Connection *conn, const struct xrl_http_rule *r,
				     struct xrl_decision *d)
{
	const struct xrl_http_cfg *c = &sc->c;
	struct xrl_buf b = {};
	enum MHD_Result ret;
	unsigned status;

	if (sc == s->cfg)
		count_decision(sc, &r, 1, d);
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
		       (unsigned long long)(d->allowed ? 0 : d->retry_after_s),
		       (unsigned long long)d->reset_s);
	if (d->n_leases) {
		xrl_buf_printf(&b, ",\"leases\":[");
		for (__u32 i = 0; i < d->n_leases; i++) {
			xrl_buf_printf(&b, i ? "," : "");
			buf_json_str(&b, d->lease[i]);
		}
		xrl_buf_printf(&b, "]");
	}
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
	ret = xrl_srv_send_buf(conn, status, "application/json", &b, c, d);
	xrl_buf_free(&b);
	return ret;
}
