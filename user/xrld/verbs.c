// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * verbs.c - xrld's handlers of the control verbs. lib/verbs.c parses and
 * validates a request against the verb table; a handler here gets the
 * checked values and writes its answer, a table or one JSON document
 * (jansson), into the reply. Under --json an error is {"error":"..."}
 * with the same exit code (0 ok, 1 error, 2 usage).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/http.h"
#include "http/server/admin.h"
#include "log.h"
#include "xrld.h"

/* What a handler answers with: text into b, or JSON (a document or an error). */
struct reply {
	struct xrl_buf *b;
	bool json;
	char msg[XRL_ERRLEN + 128]; /* the last message, for the log of changes */
};

typedef int (*verb_fn)(struct xrld *d, const struct xrl_verb_call *c, struct reply *r);

/* A message to the client: text, or {"error":msg} / {"ok":true,"message":msg}. */
static int say(struct reply *r, int code, const char *fmt, va_list ap)
{
	char *msg = r->msg;

	vsnprintf(msg, sizeof(r->msg), fmt, ap);
	if (!r->json)
		xrl_buf_printf(r->b, "%s\n", msg);
	else if (code)
		xrl_buf_json_error(r->b, msg);
	else
		xrl_buf_json(r->b, json_pack("{s:b,s:s}", "ok", 1, "message", msg));
	return code;
}

/* An error with its exit code. */
static int fail(struct reply *r, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct reply *r, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = say(r, code, fmt, ap);
	va_end(ap);
	return code;
}

/* "no rule named 'X' (packet rules: syn; HTTP rules: holds, api)": the
 * names an operator may have meant, from the policy in force. */
static int no_rule(struct xrld *d, struct reply *r, const char *rule)
{
	const struct xrl_policy *p = &d->cfg->policy;
	const struct xrl_http_cfg *h = &d->cfg->http;
	struct xrl_buf b = {};
	int rc;

	for (__u32 i = 0; i < p->n_rules; i++)
		xrl_buf_printf(&b, "%s%s", i ? ", " : "packet rules: ", p->rules[i].name);
	for (__u32 i = 0; d->cfg->has_http && i < h->n_rules; i++)
		xrl_buf_printf(&b, "%s%s",
			       i     ? ", "
			       : b.p ? "; HTTP rules: "
				     : "HTTP rules: ",
			       h->rules[i].name);
	rc = fail(r, 1, "no rule named '%s' (%s)", rule, b.p ? b.p : "the policy has none");
	xrl_buf_free(&b);
	return rc;
}

/* A success message. */
static int done(struct reply *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int done(struct reply *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(r, 0, fmt, ap);
	va_end(ap);
	return 0;
}

static const char *mode_name(enum xrl_attach_mode m)
{
	return m == XRL_MODE_SKB ? "skb" : "native";
}

/* What is attached now: xrl_info() is what attach saw, and the program may
 * have been removed since (ip link set dev X xdp off, another loader). */
static struct xrl_attach_info attach_now(struct xrld *d, struct xrld_iface *f)
{
	struct xrl_attach_info now = *xrl_info(f->h);
	struct xrl_handle *ph;

	if (!xrl_open_pinned(d->pin_root, f->name, &ph)) {
		now.attached = xrl_info(ph)->attached;
		now.prog_id = xrl_info(ph)->prog_id;
		xrl_close(ph);
	}
	return now;
}

static json_t *status_json(struct xrld *d)
{
	json_t *skipped = json_object(), *ifs = json_array();

	for (int i = 0; i < PEN_SKIP_MAX; i++)
		json_object_set_new(skipped, pen_skip_name[i],
				    json_integer((json_int_t)READ(d->pen_skipped[i])));
	for (int i = 0; i < d->n_ifs; i++) {
		struct xrl_attach_info in = attach_now(d, &d->ifs[i]);
		json_t *ck = json_object();

		xrld_cookies_status(d, i, NULL, ck);
		json_array_append_new(ifs,
				      json_pack("{s:s,s:I,s:s,s:b,s:b,s:I,s:o,s:o}", "name",
						d->ifs[i].name, "prog_id", (json_int_t)in.prog_id,
						"mode", mode_name(in.mode), "attached", in.attached,
						"multiprog", in.multiprog, "rules",
						(json_int_t)d->cfg->policy.n_rules, "syn_cookies",
						ck, "syn_cookie_path",
						xrld_cookie_path_json(d, i)));
	}
	return json_pack("{s:{s:i,s:s,s:s,s:I,s:I,s:I,s:o},s:o,s:o}", "daemon", "pid",
			 (int)getpid(), "config", d->config_path ? d->config_path : "", "pin_dir",
			 d->pin_root, "reloads", (json_int_t)READ(d->reloads), "reload_failures",
			 (json_int_t)READ(d->reload_failures), "penalties",
			 (json_int_t)READ(d->penalties), "penalties_skipped", skipped, "interfaces",
			 ifs, "http", xrld_http_status_json(d));
}

static int cmd_status(struct xrld *d, const struct xrl_verb_call *c, struct reply *r)
{
	struct xrl_buf *b = r->b;

	if (r->json) {
		json_t *o = status_json(d);

		xrld_fleet_status(d, NULL, json_object_get(o, "daemon"));
		for (int i = 0; i < d->n_ifs; i++)
			xrld_vouch_status(d, i, NULL,
					  json_array_get(json_object_get(o, "interfaces"), i));
		xrl_buf_json(b, o);
		return 0;
	}
	xrl_buf_printf(b, "xrld pid %d, config %s, pins %s\n", (int)getpid(),
		       d->config_path ? d->config_path : "-", d->pin_root);
	xrld_fleet_status(d, b, NULL);
	xrl_buf_printf(b, "%-16s %-8s %-8s %-10s %-18s %s\n", "INTERFACE", "PROG", "MODE",
		       "ATTACHED", "HOW", "RULES");
	for (int i = 0; i < d->n_ifs; i++) {
		struct xrl_attach_info in = attach_now(d, &d->ifs[i]);

		xrl_buf_printf(b, "%-16s %-8u %-8s %-10s %-18s %u\n", d->ifs[i].name, in.prog_id,
			       mode_name(in.mode), in.attached ? "yes" : "NO",
			       in.multiprog ? "libxdp dispatcher" : "single program",
			       d->cfg->policy.n_rules);
	}
	for (int i = 0; i < d->n_ifs; i++) {
		xrld_cookies_status(d, i, b, NULL);
		xrld_vouch_status(d, i, b, NULL);
	}
	if (!d->n_ifs)
		xrl_buf_printf(b, "(no interface: the packet tier is not loaded)\n");
	xrld_http_status_text(d, b);
	return 0;
}

static int cmd_stats(struct xrld *d, const struct xrl_verb_call *c, struct reply *r)
{
	static struct xrl_stats st;
	struct xrl_ruleset_meta meta;
	json_t *ifs = json_array();

	if (c->a.stats.watch.text)
		return json_decref(ifs),
		       fail(r, 2, "--watch is xrlctl's: it polls the pinned maps");
	for (int i = 0; i < d->n_ifs; i++) {
		struct xrld_iface *f = &d->ifs[i];

		if (c->a.stats.iface.text && strcmp(c->a.stats.iface.text, f->name))
			continue;
		if (xrl_read_stats(f->h, &st) || xrl_read_rule_names(f->h, &meta))
			return json_decref(ifs),
			       fail(r, 1, "couldn't read the counters of %s", f->name);
		if (r->json)
			json_array_append_new(ifs, xrl_report_stats_json(f->name, &st, &meta,
									 xrl_bucket_count(f->h),
									 NULL, 0));
		else
			xrl_report_stats(r->b, f->name, &st, &meta, xrl_bucket_count(f->h), NULL, 0,
					 0);
	}
	if (r->json)
		xrl_buf_json(r->b, json_pack("{s:o,s:o}", "interfaces", ifs, "http",
					     xrld_http_stats_json(d)));
	else
		json_decref(ifs);
	return 0;
}

static int top_cmp(const void *a, const void *b)
{
	const struct xrld_top_ent *x = *(const struct xrld_top_ent *const *)a,
				  *y = *(const struct xrld_top_ent *const *)b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

/* The id of the rule named name; false: no such rule. */
static bool rule_id(struct xrld *d, const char *name, __u32 *id)
{
	for (__u32 i = 0; i < d->cfg->policy.n_compiled; i++)
		if (!strcmp(d->cfg->policy.rules[i].name, name)) {
			*id = d->cfg->policy.compiled[i].id;
			return true;
		}
	return false;
}

static void top_row(struct xrld *d, struct reply *r, json_t *a, const struct xrld_top_ent *t)
{
	struct xrl_prefix p = { .family = t->family, .plen = t->plen };
	const char *iname = t->iface < d->n_ifs ? d->ifs[t->iface].name : "?";
	char nb[32], buf[64];
	const char *rn = xrld_rule_name(d, t->rule_id, nb, sizeof(nb));
	double ago = (double)(xrl_now_ns() - t->last_ns) / 1e9;

	memcpy(p.addr, t->addr, 16);
	xrl_prefix_str(&p, buf, sizeof(buf));
	if (a)
		json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:I,s:f}", "source", buf,
						   "interface", iname, "rule", rn, "refused",
						   (json_int_t)t->count, "last_seen_s_ago", ago));
	else
		xrl_buf_printf(r->b, "%-44s %-12s %-10s %12llu %10.1f\n", buf, iname, rn,
			       (unsigned long long)t->count, ago);
}

static int cmd_top(struct xrld *d, const struct xrl_verb_call *c, struct reply *r)
{
	const struct xrl_args_top *o = &c->a.top;
	const char *rule = o->rule.text;
	long n = o->n.text ? o->n.n : 20;
	struct xrld_top_ent **v;
	__u32 want_id = 0;
	json_t *a = NULL;
	size_t m = 0;

	if (o->http.text) {
		char err[XRL_ERRLEN + 64];
		int rc;

		if (rule)
			return fail(r, 2,
				    "--rule names a packet rule; --http RULE names an HTTP one");
		rc = xrld_http_top(d, o->http.text, n, r->json, r->b, err, sizeof(err));
		return rc ? fail(r, 1, "%s", err) : 0;
	}
	if (rule && !rule_id(d, rule, &want_id))
		return no_rule(d, r, rule);
	v = malloc(sizeof(*v) * TOP_SLOTS);
	if (!v)
		return fail(r, 1, "couldn't list the sources: %s", strerror(ENOMEM));
	for (__u32 i = 0; i < TOP_SLOTS; i++)
		if (d->top[i].used && (!rule || d->top[i].rule_id == want_id))
			v[m++] = &d->top[i];
	qsort(v, m, sizeof(*v), top_cmp);
	if (r->json)
		a = json_array();
	else
		xrl_buf_printf(r->b, "%-44s %-12s %-10s %12s %10s\n", "SOURCE", "INTERFACE", "RULE",
			       "REFUSED", "LAST (s)");
	for (size_t i = 0; i < m && (long)i < n; i++)
		top_row(d, r, a, v[i]);
	if (a)
		xrl_buf_json(r->b, a);
	free(v);
	return 0;
}

static int cmd_list_show(struct xrld *d, const struct xrl_verb_call *c, struct reply *r)
{
	bool deny = c->v->id == XRL_VERB_DENY_LIST;

	if (r->json) {
		/* the lists are the same on every interface */
		xrl_buf_json(r->b,
			     d->n_ifs ? xrl_report_list_json(d->ifs[0].h, deny) : json_array());
		return 0;
	}
	for (int i = 0; i < d->n_ifs; i++) {
		xrl_buf_printf(r->b, "%s%s:\n", i ? "\n" : "", d->ifs[i].name);
		xrl_report_list(r->b, d->ifs[i].h, deny);
	}
	return 0;
}

static int cmd_list_change(struct xrld *d, const struct xrl_verb_call *c, struct reply *r)
{
	enum xrl_verb_id id = c->v->id;
	bool deny = id == XRL_VERB_DENY_ADD || id == XRL_VERB_DENY_DEL;
	bool add = id == XRL_VERB_ALLOW_ADD || id == XRL_VERB_DENY_ADD;
	const struct xrl_args_prefix *o = deny ? &c->a.deny : &c->a.allow;
	const struct xrl_prefix p = o->prefix.p;
	__u64 ttl = o->ttl.text ? o->ttl.ns : 0;
	char why[XRL_ERRLEN];
	int rc = 0;

	if (!d->n_ifs)
		return fail(r, 1, "no interface is attached");
	if (deny && add && !o->force.text && xrld_deny_guard(d, &p, why, sizeof(why)))
		return fail(r, 1, "not denying %s: %s; deny add --force if that is meant",
			    o->prefix.text, why);
	for (int i = 0; i < d->n_ifs; i++) {
		struct xrl_handle *h = d->ifs[i].h;

		if (add)
			rc = deny ? xrl_deny_add(h, &p, ttl, XRL_ORIGIN_RUNTIME)
				  : xrl_allow_add(h, &p);
		else
			rc = deny ? xrl_deny_del(h, &p) : xrl_allow_del(h, &p);
		if (rc == -ENOENT)
			return fail(r, 1, "%s is not on the %s list", o->prefix.text,
				    deny ? "deny" : "allow");
		if (rc)
			return fail(r, 1, "couldn't update %s: %s", d->ifs[i].name, strerror(-rc));
	}
	if (deny && xrld_fleet_deny_out(d, &p, ttl, add) == -ERANGE)
		return done(r,
			    "deny added %s on this host only: the fleet takes no prefix wider "
			    "than the penalty floor",
			    o->prefix.text);
	return done(r, "%s %s %s", deny ? "deny" : "allow", add ? "added" : "removed",
		    o->prefix.text);
}

static int cmd_attach(struct xrld *d, const struct xrl_verb_call *c, struct reply *r)
{
	const struct xrl_args_attach *o = &c->a.attach;
	enum xrl_attach_mode mode = o->mode.text ? o->mode.mode : XRL_MODE_NATIVE;
	char err[XRL_ERRLEN] = "";

	if (xrld_iface_attach(d, o->iface.text, mode, false, err, sizeof(err)))
		return fail(r, 1, "%s", err);
	return done(r, "%s attached", o->iface.text);
}

static int cmd_detach(struct xrld *d, const struct xrl_verb_call *c, struct reply *r)
{
	const char *iface = c->a.detach.iface.text;

	for (int i = 0; i < d->n_ifs; i++) {
		if (!strcmp(d->ifs[i].name, iface)) {
			xrld_iface_remove(d, i, true);
			return done(r, "%s detached, pinned state removed", iface);
		}
	}
	return fail(r, 1, "%s is not attached by this xrld", iface);
}

static int cmd_policy_show(struct xrld *d, const struct xrl_verb_call *c, struct reply *r)
{
	char *buf;

	if (r->json) {
		json_t *ov = json_object();

		for (int i = 0; i < d->n_override; i++)
			json_object_set_new(ov, d->shadow_override[i],
					    json_boolean(d->shadow_val[i]));
		xrl_buf_json(r->b, json_pack("{s:s,s:o,s:o}", "config",
					     d->config_path ? d->config_path : "", "policy",
					     xrl_config_json(d->cfg), "shadow_overrides", ov));
		return 0;
	}
	buf = malloc(XRL_SUMMARY_MAX);
	if (!buf)
		return fail(r, 1, "couldn't show the policy: %s", strerror(ENOMEM));
	xrl_config_summary(d->cfg, buf, XRL_SUMMARY_MAX);
	xrl_buf_printf(r->b, "%s", buf);
	for (int i = 0; i < d->n_override; i++)
		xrl_buf_printf(r->b, "override: rule %s shadow %s (xrlctl shadow)\n",
			       d->shadow_override[i], d->shadow_val[i] ? "on" : "off");
	free(buf);
	return 0;
}

static int cmd_policy_apply(struct xrld *d, const struct xrl_verb_call *c, struct reply *r)
{
	const char *file = c->a.policy.file.text;
	char err[XRL_ERRLEN] = "";

	/* file: the file's name; text: its contents */
	if (xrld_reload_notified(d, c->text, strlen(c->text), file, err, sizeof(err)))
		return fail(r, 1, "policy refused, the running policy stays in force: %s", err);
	if (d->reload_note[0])
		return done(r,
			    "policy from %s applied to %d interface(s), but for %s: that takes "
			    "effect at the next restart (what runs stays until then)",
			    file, d->n_ifs, d->reload_note);
	return done(r, "policy from %s applied to %d interface(s)", file, d->n_ifs);
}

static int cmd_shadow(struct xrld *d, const struct xrl_verb_call *c, struct reply *r)
{
	const char *rule = c->a.shadow.rule.text;
	bool on = c->a.shadow.on.on;
	char err[XRL_ERRLEN] = "";
	bool xdp, http;
	__u32 id;
	int k;

	xdp = rule_id(d, rule, &id);
	{
		json_t *h = d->http ? xrld_idp_call(d,
						    json_pack("{s:s,s:s}", "op", "has_rule", "rule",
							      rule),
						    NULL, 0, NULL, err, sizeof(err))
				    : NULL;

		http = json_is_true(h);
		json_decref(h);
	}
	if (!xdp && !http)
		return no_rule(d, r, rule);
	if (http) {
		int rc;
		json_t *h = xrld_idp_call(d,
					  json_pack("{s:s,s:s,s:b}", "op", "shadow", "rule", rule,
						    "on", on),
					  NULL, 0, &rc, err, sizeof(err));

		json_decref(h);
		if (rc)
			return fail(r, 1, "%s", err);
		if (!on)
			xrld_evidence_rearm(d, rule);
	}
	for (k = 0; k < d->n_override; k++)
		if (!strcmp(d->shadow_override[k], rule))
			break;
	if (k == d->n_override) {
		if (d->n_override >= XRL_MAX_RULES)
			return fail(r, 1, "too many overrides");
		snprintf(d->shadow_override[k], XRL_RULE_NAME_LEN, "%s", rule);
		d->n_override++;
	}
	d->shadow_val[k] = on;
	if (xdp && xrld_push_policy(d, err, sizeof(err)))
		return fail(r, 1, "%s", err);
	return done(r,
		    "%s rule %s: shadow %s (until xrld restarts; set %s in the policy file "
		    "to make it permanent)",
		    xdp && http ? "packet and HTTP"
		    : xdp	? "packet"
				: "HTTP",
		    rule, on ? "on" : "off", http ? "`shadow:`" : "`action:`");
}

static int cmd_override_list(struct xrld *d, const struct xrl_verb_call *c, struct reply *r)
{
	char err[XRL_ERRLEN + 64];

	if (xrld_http_override_list(d, r->json, r->b, err, sizeof(err)))
		return fail(r, 1, "%s", err);
	return 0;
}

static int cmd_recommend(struct xrld *d, const struct xrl_verb_call *c, struct reply *r)
{
	const struct xrl_args_recommend *o = &c->a.recommend;
	char err[XRL_ERRLEN + 64];

	if (!d->http)
		return fail(r, 1, "the identity tier is not configured (no http: section)");
	if (xrld_http_recommend(d, o->rule.text, o->refuse.text ? o->refuse.x : 0.001,
				o->headroom.text ? o->headroom.x : 2, r->json, r->b, err,
				sizeof(err)))
		return fail(r, 1, "%s", err);
	return 0;
}

static int cmd_override(struct xrld *d, const struct xrl_verb_call *c, struct reply *r)
{
	const struct xrl_args_override *o = &c->a.override;
	char err[XRL_ERRLEN + 128] = "";

	if (c->v->id == XRL_VERB_OVERRIDE && (!o->rate.text || !o->burst.text || !o->ttl.text))
		return fail(r, 2, "override RULE KEY needs --rate, --burst and --ttl");
	if (xrld_http_override(d, c, err, sizeof(err)))
		return fail(r, 1, "%s", err);
	if (c->v->id == XRL_VERB_OVERRIDE_DEL)
		return done(r, "override of rule %s for %s removed", o->rule.text, o->key.text);
	return done(r, "rule %s: %s gets %s, burst %s, for %s", o->rule.text, o->key.text,
		    o->rate.text, o->burst.text, o->ttl.text);
}

static int cmd_penalty_list(struct xrld *d, const struct xrl_verb_call *c, struct reply *r)
{
	json_t *a;
	size_t i;
	json_t *e;

	if (!d->http)
		return fail(r, 1, "no identity tier runs here (no http: section)");
	{
		char err[XRL_ERRLEN];

		a = xrld_idp_call(d, json_pack("{s:s}", "op", "penalties"), NULL, 0, NULL, err,
				  sizeof(err));
		if (!json_is_array(a)) {
			json_decref(a);
			return fail(r, 1, "couldn't list the penalties: %s", err);
		}
	}
	if (r->json) {
		xrl_buf_json(r->b, a);
		return 0;
	}
	xrl_buf_printf(r->b, "%-24s %-14s %6s %10s\n", "RULE", "KEY HASH", "LEVEL", "LEFT (s)");
	json_array_foreach (a, i, e)
		xrl_buf_printf(r->b, "%-24s %-14.12s %6lld %10lld\n",
			       json_string_value(json_object_get(e, "rule")),
			       json_string_value(json_object_get(e, "key_hash")),
			       (long long)json_integer_value(json_object_get(e, "level")),
			       (long long)json_integer_value(json_object_get(e, "remaining_s")));
	json_decref(a);
	return 0;
}

/* The key: a key hash's first 8 to 32 hex digits (xrlctl hashes a key). */
static int cmd_penalty_del(struct xrld *d, const struct xrl_verb_call *c, struct reply *r)
{
	const char *hex = c->a.penalty.key.text;
	size_t n = strlen(hex);
	int lifted = 0;

	if (!d->http)
		return fail(r, 1, "no identity tier runs here (no http: section)");
	if (n < 8 || n > 32 || strspn(hex, "0123456789abcdef") != n)
		return fail(r, 2, "penalty del: want 8 to 32 hex digits of a key hash");
	{
		char err[XRL_ERRLEN];
		json_t *h = xrld_idp_call(d,
					  json_pack("{s:s,s:s}", "op", "penalty_del", "hex", hex),
					  NULL, 0, NULL, err, sizeof(err));

		if (!h)
			return fail(r, 1, "%s", err);
		lifted = (int)json_integer_value(h);
		json_decref(h);
	}
	if (!lifted)
		return fail(r, 1, "no penalty with key hash %s", hex);
	return done(r, "%d penalt%s lifted (key hash %s)%s", lifted, lifted == 1 ? "y" : "ies", hex,
		    d->fleet && d->cfg->http.fleet[0] ? ", on every instance" : "");
}

/* cookies RULE on|auto|off: the rule's mode in force on every interface. */
static int cmd_cookies(struct xrld *d, const struct xrl_verb_call *c, struct reply *r)
{
	const struct xrl_args_cookies *o = &c->a.cookies;
	const char *rule = o->rule.text;
	__u8 was = 0;
	int rc;

	if (!d->n_ifs)
		return fail(r, 1, "no interface is attached");
	for (int i = 0; i < d->n_ifs; i++) {
		rc = xrl_rule_cookies_set(d->ifs[i].h, rule, o->mode.mode, &was);
		if (rc == -ENOENT)
			return no_rule(d, r, rule);
		if (rc == -EPROTONOSUPPORT)
			return fail(r, 1, "rule %s does not match tcp: SYN cookies need proto tcp",
				    rule);
		if (rc)
			return fail(r, 1, "couldn't set the SYN cookies of rule %s on %s: %s", rule,
				    d->ifs[i].name, strerror(-rc));
	}
	return done(r, "rule %s: SYN cookies %s (were %s; until the next policy apply or reload)",
		    rule, o->mode.text, xrld_cookies_word(was));
}

/* vouch list: the map of the first interface (one map a pin directory;
 * the identity tier and operators write every interface's). */
static int cmd_vouch_list(struct xrld *d, const struct xrl_verb_call *c, struct reply *r)
{
	json_t *a;

	if (!d->n_ifs)
		return r->json ? (xrl_buf_json(r->b, json_array()), 0)
			       : fail(r, 1, "no interface is attached");
	if (!r->json)
		return xrl_report_vouch(r->b, d->ifs[0].h)
			       ? fail(r, 1, "couldn't read the vouched sources")
			       : 0;
	a = xrl_report_vouch_json(d->ifs[0].h);
	if (!a)
		return fail(r, 1, "couldn't read the vouched sources");
	xrl_buf_json(r->b, a);
	return 0;
}

static int cmd_vouch_change(struct xrld *d, const struct xrl_verb_call *c, struct reply *r)
{
	bool add = c->v->id == XRL_VERB_VOUCH_ADD;
	const struct xrl_args_prefix *o = &c->a.vouch;
	const struct xrl_prefix p = o->prefix.p;
	__u64 ttl = add && o->ttl.text ? o->ttl.ns : 0;
	struct xrl_prefix k;
	char buf[64], why[160] = "";
	int rc;

	if (!d->n_ifs)
		return fail(r, 1, "no interface is attached");
	k = p; /* the key's prefix, for the answer */
	k.plen = p.family == XRL_AF_INET ? XRL_VOUCH_PLEN4 : XRL_VOUCH_PLEN6;
	{
		__u32 m[4];

		xrl_prefix_mask(k.family, k.plen, m);
		for (int i = 0; i < 4; i++)
			k.addr[i] &= m[i];
	}
	xrl_prefix_str(&k, buf, sizeof(buf));
	for (int i = 0; i < d->n_ifs; i++) {
		rc = add ? xrl_vouch_add(d->ifs[i].h, &p, ttl) : xrl_vouch_del(d->ifs[i].h, &p);
		if (rc == -ENOENT)
			return fail(r, 1, "%s is not vouched for", buf);
		if (rc == -ENOSPC)
			return fail(r, 1,
				    "couldn't vouch for %s on %s: the operator vouches are full "
				    "(%u); remove one with `xrlctl vouch del` first",
				    buf, d->ifs[i].name, XRL_VOUCH_OP_MAX);
		if (rc)
			return fail(r, 1, "couldn't update the vouched sources of %s: %s",
				    d->ifs[i].name, strerror(-rc));
	}
	/* a vouch is one /24 or /48: one given narrower is widened, said */
	if (p.plen > k.plen)
		snprintf(why, sizeof(why),
			 " (%s widened to its /%u: a vouch covers one /%u of "
			 "IPv4 or /%u of IPv6)",
			 o->prefix.text, k.plen, XRL_VOUCH_PLEN4, XRL_VOUCH_PLEN6);
	if (!add)
		return done(r, "vouch for %s removed%s", buf, why);
	return done(r, "vouched for %s%s%s%s", buf, o->ttl.text ? " for " : " until removed",
		    o->ttl.text ? o->ttl.text : "", why);
}

/* The handler of each verb of lib/verbs.c's table; NULL: xrlctl's alone. */
static const verb_fn handlers[XRL_VERB_MAX] = {
	[XRL_VERB_STATUS] = cmd_status,
	[XRL_VERB_ATTACH] = cmd_attach,
	[XRL_VERB_DETACH] = cmd_detach,
	[XRL_VERB_POLICY_APPLY] = cmd_policy_apply,
	[XRL_VERB_POLICY_SHOW] = cmd_policy_show,
	[XRL_VERB_STATS] = cmd_stats,
	[XRL_VERB_TOP] = cmd_top,
	[XRL_VERB_ALLOW_ADD] = cmd_list_change,
	[XRL_VERB_ALLOW_DEL] = cmd_list_change,
	[XRL_VERB_ALLOW_LIST] = cmd_list_show,
	[XRL_VERB_DENY_ADD] = cmd_list_change,
	[XRL_VERB_DENY_DEL] = cmd_list_change,
	[XRL_VERB_DENY_LIST] = cmd_list_show,
	[XRL_VERB_SHADOW] = cmd_shadow,
	[XRL_VERB_PENALTY_LIST] = cmd_penalty_list,
	[XRL_VERB_PENALTY_DEL] = cmd_penalty_del,
	[XRL_VERB_COOKIES] = cmd_cookies,
	[XRL_VERB_VOUCH_ADD] = cmd_vouch_change,
	[XRL_VERB_VOUCH_DEL] = cmd_vouch_change,
	[XRL_VERB_VOUCH_LIST] = cmd_vouch_list,
	[XRL_VERB_OVERRIDE_LIST] = cmd_override_list,
	[XRL_VERB_OVERRIDE_DEL] = cmd_override,
	[XRL_VERB_OVERRIDE] = cmd_override,
	[XRL_VERB_RECOMMEND] = cmd_recommend,
};

/*
 * One line per request that changes what is enforced, refused ones
 * included: who (uid and pid from SO_PEERCRED), the command as parsed (a
 * policy's file name, not its text) and how it ended.
 */
static void log_change(const struct ucred *who, const struct xrl_verb_call *c, int code,
		       const struct reply *r)
{
	char cmd[512], by[64] = "an unknown caller";
	size_t o;

	o = (size_t)snprintf(cmd, sizeof(cmd), "%s%s%s", c->v->word, c->v->sub ? " " : "",
			     c->v->sub ? c->v->sub : "");
	for (int i = 0; i < XRL_VERB_POS && c->v->pos[i].name && o < sizeof(cmd); i++)
		o += (size_t)snprintf(cmd + o, sizeof(cmd) - o, " %s",
				      xrl_verb_text(c, &c->v->pos[i]));
	for (int i = 0; i < XRL_VERB_OPTS && c->v->opt[i].name && o < sizeof(cmd); i++) {
		const char *t = xrl_verb_text(c, &c->v->opt[i]);

		if (t && c->v->opt[i].type == XRL_ARG_FLAG)
			o += (size_t)snprintf(cmd + o, sizeof(cmd) - o, " %s", t);
		else if (t)
			o += (size_t)snprintf(cmd + o, sizeof(cmd) - o, " %s %s", c->v->opt[i].name,
					      t);
	}
	if (who)
		snprintf(by, sizeof(by), "uid %u (pid %d)", (unsigned)who->uid, (int)who->pid);
	if (code)
		log_warnx("change refused: `%s` by %s: %s", cmd, by, r->msg);
	else
		log_info("change: `%s` by %s: %s", cmd, by, r->msg);
}

int xrld_handle(struct xrld *d, const struct ucred *who, int argc, char **argv, struct xrl_buf *b)
{
	struct xrl_verb_call c;
	struct reply r = { .b = b };
	char err[XRL_ERRLEN + 256];
	const char *word;
	int rc;

	rc = xrl_verb_parse(argc, argv, true, &c, &word, err, sizeof(err));
	r.json = c.json;
	if (rc)
		return fail(&r, rc, "%s", err);
	if (c.help || !c.v)
		return fail(&r, 2, "--help is answered by xrlctl");
	if (!handlers[c.v->id])
		return fail(&r, 2, "'%s %s' is xrlctl's alone", c.v->word,
			    c.v->sub ? c.v->sub : "");
	/* the socket may be open to a read-only group (control_sock.c):
	 * what changes enforcement is root's, or xrld's own user's */
	/* the identity process's user (in that group too: its own) asks for
	 * nothing: the tier facing the network never reads the control side */
	if (who && xrld_idp_user(d, who))
		rc = fail(&r, 1, "permission denied: the identity process's user may not ask xrld");
	/* the keys callers send (an API key, a login email) are root's to
	 * read: top --http and override list */
	else if (((c.v->flags & XRL_VERB_KEYS) || (c.v->id == XRL_VERB_TOP && c.a.top.http.text)) &&
		 (!who || (who->uid && who->uid != geteuid())))
		rc = fail(&r, 1,
			  "permission denied: `%s %s` shows the keys callers send (API keys, "
			  "logins), which only root may read",
			  c.v->word, c.v->sub ? c.v->sub : "--http");
	else if ((c.v->flags & XRL_VERB_CHANGES) && (!who || (who->uid && who->uid != geteuid())))
		rc = fail(&r, 1,
			  "permission denied: `%s%s%s` changes what xrld enforces, which only "
			  "root may; the xrl group may only read",
			  c.v->word, c.v->sub ? " " : "", c.v->sub ? c.v->sub : "");
	else
		rc = handlers[c.v->id](d, &c, &r);
	if (c.v->flags & XRL_VERB_CHANGES)
		log_change(who, &c, rc, &r);
	return rc;
}
