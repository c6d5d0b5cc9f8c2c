// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * verbs_http.c - the control verbs' identity-tier parts (verbs.c calls
 * them): status and stats sections, `top --http`, `override`. Each reads
 * the tier through http/server/admin.h, a JSON document, and writes it as
 * a table or as it is. Their errors are -errno with err set; verbs.c answers them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "peaks.h"
#include "xrld.h"

static const char *str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "-";
}

static long long num(json_t *o, const char *k)
{
	return (long long)json_integer_value(json_object_get(o, k));
}

/* A call of the identity tier that answers a document: null when there
 * is none, or it does not answer (restarting). */
static json_t *doc(struct xrld *d, const char *op)
{
	char err[XRL_ERRLEN];
	json_t *r;

	if (!d->http)
		return json_null();
	r = xrld_idp_call(d, json_pack("{s:s}", "op", op), NULL, 0, NULL, err, sizeof(err));
	return r ? r : json_null();
}

json_t *xrld_http_status_json(struct xrld *d)
{
	json_t *j = doc(d, "status");

	if (!d->http)
		return j;
	if (!json_is_object(j)) {
		/* restarting: what xrld knows of it, pid and restarts */
		json_decref(j);
		j = json_pack("{s:b}", "restarting", 1);
	}
	json_object_set_new(j, "process", xrld_idp_status_json(d));
	json_object_set_new(j, "disarmed", xrld_evidence_disarmed_json(d));
	return j;
}

/* "GET /healthz" of a route's JSON; "*" and "/" for any. */
static void route_text(struct xrl_buf *b, json_t *m)
{
	const char *meth = json_string_value(json_object_get(m, "method"));
	const char *path = json_string_value(json_object_get(m, "path_prefix"));

	xrl_buf_printf(b, "%s %s", meth ? meth : "*", path ? path : "/");
}

/* Who is believed, what is exempt, what sheds: the policy in force. */
static void policy_lines(struct xrl_buf *b, json_t *j)
{
	json_t *tp = json_object_get(j, "trusted_proxies"), *ex = json_object_get(j, "exempt");
	json_t *shed = json_object_get(j, "shed"), *x;
	size_t i;

	xrl_buf_printf(b, "  trusted proxies: ");
	json_array_foreach (tp, i, x)
		xrl_buf_printf(b, "%s%s", i ? ", " : "", json_string_value(x));
	if (json_array_size(tp))
		xrl_buf_printf(b, " (forwarded_from %s)\n", str(j, "forwarded_from"));
	else
		xrl_buf_printf(b, "none (forwarded headers are not believed)\n");
	if (json_array_size(ex)) {
		xrl_buf_printf(b, "  exempt:");
		json_array_foreach (ex, i, x) {
			xrl_buf_printf(b, "%s ", i ? "," : "");
			route_text(b, x);
		}
		xrl_buf_printf(b, "\n");
	}
	if (json_is_object(shed))
		xrl_buf_printf(b, "  shed: every request, %s burst %lld (503 beyond)\n",
			       str(shed, "rate"), num(shed, "burst"));
	json_array_foreach (shed, i, x) {
		xrl_buf_printf(b, "  shed: ");
		route_text(b, json_object_get(x, "match"));
		xrl_buf_printf(b, ", %s burst %lld (503 beyond)\n", str(x, "rate"),
			       num(x, "burst"));
	}
}

void xrld_http_status_text(struct xrld *d, struct xrl_buf *b)
{
	json_t *j, *r;
	size_t i;

	if (!d->http) {
		xrl_buf_printf(b, "identity tier: not configured (no http: section)\n");
		return;
	}
	j = xrld_http_status_json(d);
	{
		json_t *p = json_object_get(j, "process");

		xrl_buf_printf(b, "identity process: pid %lld, user %s, %lld restart(s)\n",
			       num(p, "pid"), str(p, "user"), num(p, "restarts"));
	}
	if (json_is_true(json_object_get(j, "restarting"))) {
		json_decref(j);
		xrl_buf_printf(b, "identity tier: the identity process is restarting\n");
		return;
	}
	xrl_buf_printf(b, "identity tier: listening on %s, backend %s", str(j, "listen"),
		       str(j, "backend"));
	if (json_is_string(json_object_get(j, "breaker")))
		xrl_buf_printf(b, " (breaker %s)", str(j, "breaker"));
	xrl_buf_printf(b, ", %lld threads, %lld override(s)%s%s\n", num(j, "threads"),
		       num(j, "overrides"),
		       json_is_true(json_object_get(j, "penalty")) ? ", penalty" : "",
		       !json_is_null(json_object_get(j, "shed")) ? ", shedding" : "");
	policy_lines(b, j);
	xrl_buf_printf(b, "%-16s %-7s %-20s %-20s %-9s %6s %4s %5s %-6s %-6s %-9s %s\n", "RULE",
		       "METHOD", "PATH", "KEY", "RATE", "BURST", "COST", "CONC", "LEASE", "SHADOW",
		       "MISSING", "REDIS DOWN");
	json_array_foreach (json_object_get(j, "rules"), i, r) {
		char bu[24] = "-", co[24] = "-";

		/* a rule of concurrency alone has no rate and burst; one of rate
		 * alone no concurrency (null: "-") */
		if (json_is_integer(json_object_get(r, "burst")))
			snprintf(bu, sizeof(bu), "%lld", num(r, "burst"));
		if (json_is_integer(json_object_get(r, "concurrency")))
			snprintf(co, sizeof(co), "%lld", num(r, "concurrency"));
		xrl_buf_printf(b, "%-16s %-7s %-20s %-20s %-9s %6s %4lld %5s %-6s %-6s %-9s %s%s\n",
			       str(r, "name"), str(r, "method"), str(r, "path_prefix"),
			       str(r, "key"), str(r, "rate"), bu, num(r, "cost"), co,
			       str(r, "lease_ttl"),
			       json_is_true(json_object_get(r, "shadow")) ? "yes" : "no",
			       str(r, "on_missing_key"), str(r, "on_backend_error"),
			       json_is_true(json_object_get(r, "vouch")) ? ", vouch" : "");
	}
	json_array_foreach (json_object_get(j, "disarmed"), i, r)
		xrl_buf_printf(b, "  disarmed: %s (shadow now): %s; `xrlctl shadow %s off` re-arms\n",
			       str(r, "rule"), str(r, "reason"), str(r, "rule"));
	json_decref(j);
}

json_t *xrld_http_stats_json(struct xrld *d)
{
	return doc(d, "stats");
}

static void top_text(struct xrl_buf *b, json_t *a)
{
	json_t *r;
	size_t i;

	xrl_buf_printf(b, "%-68s %10s %8s %9s\n", "KEY", "REFUSED", "ERROR", "LAST (s)");
	json_array_foreach (a, i, r)
		xrl_buf_printf(b, "%-68s %10lld %8lld %9lld\n", str(r, "key"), num(r, "refused"),
			       num(r, "error"), num(r, "last_seen_s_ago"));
}

int xrld_http_top(struct xrld *d, const char *rule, long n, bool json, struct xrl_buf *b, char *err,
		  size_t errlen)
{
	json_t *a;
	int rc;

	if (!d->http)
		return snprintf(err, errlen,
				"the identity tier is not configured (no http: section)"),
		       -ENOENT;
	a = xrld_idp_call(d,
			  json_pack("{s:s,s:s,s:i}", "op", "top", "rule", rule ? rule : "", "n",
				    (int)n),
			  NULL, 0, &rc, err, errlen);
	if (rc)
		return rc;
	if (json)
		xrl_buf_json(b, a);
	else {
		top_text(b, a);
		json_decref(a);
	}
	return 0;
}

int xrld_http_override_list(struct xrld *d, bool json, struct xrl_buf *b, char *err, size_t errlen)
{
	json_t *a, *r;
	size_t i;

	if (!d->http)
		return snprintf(err, errlen,
				"the identity tier is not configured (no http: section)"),
		       -ENOENT;
	{
		int rc;

		a = xrld_idp_call(d, json_pack("{s:s}", "op", "override_list"), NULL, 0, &rc, err,
				  errlen);
		if (rc)
			return rc;
	}
	if (json) {
		xrl_buf_json(b, a);
		return 0;
	}
	xrl_buf_printf(b, "%-16s %-40s %-10s %6s %12s\n", "RULE", "KEY", "RATE", "BURST",
		       "EXPIRES (s)");
	json_array_foreach (a, i, r)
		xrl_buf_printf(b, "%-16s %-40s %-10s %6lld %12lld\n", str(r, "rule"), str(r, "key"),
			       str(r, "rate"), num(r, "burst"), num(r, "expires_in_s"));
	json_decref(a);
	return 0;
}

int xrld_http_override(struct xrld *d, const struct xrl_verb_call *c, char *err, size_t errlen)
{
	const struct xrl_args_override *o = &c->a.override;

	if (!d->http)
		return snprintf(err, errlen,
				"the identity tier is not configured (no http: section)"),
		       -ENOENT;
	json_t *q, *a;
	int rc;

	if (c->v->id == XRL_VERB_OVERRIDE_DEL) {
		q = json_pack("{s:s,s:s,s:s}", "op", "override_del", "rule", o->rule.text, "key",
			      o->key.text);
	} else {
		q = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I}", "op", "override_set", "rule",
			      o->rule.text, "key", o->key.text, "rate", o->rate.text, "burst",
			      (json_int_t)o->burst.n, "ttl_ns", (json_int_t)o->ttl.ns);
	}
	a = xrld_idp_call(d, q, NULL, 0, &rc, err, errlen);
	json_decref(a);
	return rc;
}

/* ---- recommend ------------------------------------------------------------ */

static const double rec_q[] = { 0.5, 0.9, 0.99, 0.999, 1 };
static const char *const rec_qname[] = { "p50", "p90", "p99", "p99.9", "max" };
#define REC_Q (sizeof(rec_q) / sizeof(rec_q[0]))

static json_t *rec_dist(const struct xrl_peaks *h, enum xrl_peaks_axis axis)
{
	json_t *o = json_object();

	for (size_t i = 0; i < REC_Q; i++)
		json_object_set_new(o, rec_qname[i],
				    json_integer(
					    (json_int_t)xrl_peaks_quantile(h, axis, rec_q[i])));
	return o;
}

static json_t *rec_limit(const struct xrl_peaks_limit *l)
{
	return json_pack("{s:f,s:I,s:I,s:I,s:I}", "refuse_at_most", l->share, "rate_per_s",
			 (json_int_t)l->rate, "burst", (json_int_t)l->burst, "refused_callers",
			 (json_int_t)l->refused.callers, "refused_requests",
			 (json_int_t)l->refused.requests);
}

/* The rule's limit in force as requests a second (rounded up) and burst. */
static const struct xrl_http_rule *rec_rule(struct xrld *d, const char *rule)
{
	const struct xrl_http_cfg *c = &d->cfg->http;

	for (__u32 i = 0; d->cfg->has_http && i < c->n_rules; i++)
		if (!strcmp(c->rules[i].name, rule))
			return &c->rules[i];
	return NULL;
}

static json_t *rec_json(const char *rule, const struct xrl_http_rule *r, const struct xrl_peaks *h,
			const struct xrl_peaks_advice *adv, __u64 window_s, __u64 untracked)
{
	struct xrl_peaks_refusal now = { 0 };
	json_t *cand = json_array(), *cur;
	char rs[64];
	__u64 per_s = 0;

	if (r->has_rate && r->rate.period_ns) {
		per_s = (r->rate.tokens * XRL_NSEC_PER_SEC + r->rate.period_ns - 1) /
			r->rate.period_ns;
		xrl_peaks_refused(h, per_s, r->burst, &now);
	}
	for (size_t i = 0; i < adv->ncand; i++)
		json_array_append_new(cand, rec_limit(&adv->cand[i]));
	cur = json_pack("{s:s,s:I,s:I,s:b,s:I,s:I,s:I,s:I}", "rate",
			r->has_rate ? xrl_rate_str(&r->rate, rs, sizeof(rs)) : "-", "rate_per_s",
			(json_int_t)per_s, "burst", (json_int_t)r->burst, "shadow", r->shadow,
			"refused_callers", (json_int_t)h->refused_callers, "refused_requests",
			(json_int_t)h->refused_requests, "would_refuse_callers",
			(json_int_t)now.callers, "would_refuse_requests", (json_int_t)now.requests);
	return json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:o,s:o,s:o,s:o,s:o}", "rule", rule, "tier",
			 "http", "window_s", (json_int_t)window_s, "callers",
			 (json_int_t)h->callers, "requests", (json_int_t)h->requests, "untracked",
			 (json_int_t)untracked, "rate_per_s", rec_dist(h, XRL_PEAKS_RATE), "burst",
			 rec_dist(h, XRL_PEAKS_BURST), "current", cur, "proposal",
			 rec_limit(&adv->proposal), "candidates", cand);
}

static void rec_text(struct xrl_buf *b, json_t *j)
{
	json_t *cur = json_object_get(j, "current"), *p = json_object_get(j, "proposal"), *c;
	size_t i;

	long long w = num(j, "window_s");

	if (w % 86400 == 0)
		xrl_buf_printf(
			b,
			"rule %s: %lld callers (caller-epochs), %lld requests in the last %lld days",
			str(j, "rule"), num(j, "callers"), num(j, "requests"), w / 86400);
	else
		xrl_buf_printf(b,
			       "rule %s: %lld callers (caller-epochs), %lld requests in the last %lld s",
			       str(j, "rule"), num(j, "callers"), num(j, "requests"), w);
	if (num(j, "untracked"))
		xrl_buf_printf(b, " (%lld requests not tracked: the table was full)",
			       num(j, "untracked"));
	xrl_buf_printf(b, "\n\n%-28s", "callers' peaks");
	for (i = 0; i < REC_Q; i++)
		xrl_buf_printf(b, " %9s", rec_qname[i]);
	xrl_buf_printf(b, "\n%-28s", "  rate (requests in 1 s)");
	for (i = 0; i < REC_Q; i++)
		xrl_buf_printf(b, " %9lld", num(json_object_get(j, "rate_per_s"), rec_qname[i]));
	xrl_buf_printf(b, "\n%-28s", "  burst (requests at once)");
	for (i = 0; i < REC_Q; i++)
		xrl_buf_printf(b, " %9lld", num(json_object_get(j, "burst"), rec_qname[i]));
	xrl_buf_printf(b,
		       "\n\ncurrent limit: %s burst %lld%s: refused %lld callers, %lld requests%s;"
		       " would refuse %lld callers, %lld requests\n",
		       str(cur, "rate"), num(cur, "burst"),
		       json_is_true(json_object_get(cur, "shadow")) ? " (shadow)" : "",
		       num(cur, "refused_callers"), num(cur, "refused_requests"),
		       json_is_true(json_object_get(cur, "shadow")) ? " (would have)" : "",
		       num(cur, "would_refuse_callers"), num(cur, "would_refuse_requests"));
	xrl_buf_printf(b,
		       "proposed: rate %lld/s burst %lld (refuses %lld callers, %lld requests)\n\n",
		       num(p, "rate_per_s"), num(p, "burst"), num(p, "refused_callers"),
		       num(p, "refused_requests"));
	xrl_buf_printf(b, "%-16s %10s %8s %16s %16s\n", "REFUSE AT MOST", "RATE", "BURST",
		       "REFUSED CALLERS", "REFUSED REQUESTS");
	json_array_foreach (json_object_get(j, "candidates"), i, c)
		xrl_buf_printf(b, "%15.2f%% %8lld/s %8lld %16lld %16lld\n",
			       json_real_value(json_object_get(c, "refuse_at_most")) * 100,
			       num(c, "rate_per_s"), num(c, "burst"), num(c, "refused_callers"),
			       num(c, "refused_requests"));
}

int xrld_http_recommend(struct xrld *d, const char *rule, double refuse, double headroom, bool json,
			struct xrl_buf *b, char *err, size_t errlen)
{
	const struct xrl_http_rule *r = rec_rule(d, rule);
	struct xrl_peaks h = { 0 };
	struct xrl_peaks_advice adv;
	__u64 window_s = 0, untracked = 0;
	json_t *j;
	int rc;

	if (!r)
		return snprintf(err, errlen, "no http rule named '%s'", rule), -ENOENT;
	if (!r->has_rate)
		return snprintf(err, errlen, "http rule '%s' has no rate to recommend", rule),
		       -EINVAL;
	xrld_evidence_fold(d); /* up to now */
	rc = xrld_evidence_rule(d, rule, &h, &window_s, &untracked);
	if (!rc)
		rc = xrl_peaks_recommend(&h, refuse, headroom, &adv);
	if (rc == -ENOENT || rc == -ENODATA) {
		xrl_peaks_free(&h);
		return snprintf(err, errlen,
				"no evidence for '%s' yet: it has decided for no caller in the window",
				rule),
		       -ENODATA;
	}
	if (rc) {
		xrl_peaks_free(&h);
		return snprintf(err, errlen, "couldn't recommend: %s", strerror(-rc)), rc;
	}
	j = rec_json(rule, r, &h, &adv, window_s, untracked);
	xrl_peaks_free(&h);
	if (!j)
		return snprintf(err, errlen, "out of memory"), -ENOMEM;
	if (json) {
		xrl_buf_json(b, j);
		return 0;
	}
	rec_text(b, j);
	json_decref(j);
	return 0;
}
