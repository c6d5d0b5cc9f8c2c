// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * report.c - what xrld and xrlctl print (report.h): the counters, the
 * allow and deny lists as tables or JSON, Prometheus lines, and the reply
 * buffer's JSON writer.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "report.h"

int xrl_read_rule_names(struct xrl_handle *h, struct xrl_ruleset_meta *meta)
{
	struct xrl_config cfg;
	__u32 zero = 0;

	memset(meta, 0, sizeof(*meta));
	if (bpf_map_lookup_elem(xrl_map_fd(h, XRL_MAP_CONFIG), &zero, &cfg) ||
	    bpf_map_lookup_elem(xrl_map_fd(h, XRL_MAP_META), &cfg.active_ruleset, meta))
		return -errno;
	return 0;
}

void xrl_prom_family(struct xrl_buf *b, const char *name, const char *type, const char *help)
{
	xrl_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void xrl_prom_u64(struct xrl_buf *b, const char *name, const char *label, const char *value,
		  __u64 v)
{
	xrl_buf_printf(b, "%s{%s=\"%s\"} %llu\n", name, label, value, (unsigned long long)v);
}

void xrl_human(double v, char *out, size_t len)
{
	static const char unit[] = " kMGTPE";
	int u = 0;

	while ((v >= 999.95 || v <= -999.95) && u < 6) {
		v /= 1000;
		u++;
	}
	if (!u)
		snprintf(out, len, v == (double)(long long)v ? "%.0f" : "%.1f", v);
	else
		snprintf(out, len, "%.*f%c", v >= 99.95 || v <= -99.95 ? 0 : 1, v, unit[u]);
}

/* A count in a column: exact, or human-readable (1.2M). */
static const char *num(char *buf, size_t len, double v, bool human)
{
	if (human)
		xrl_human(v, buf, len);
	else if (v == (double)(unsigned long long)v)
		snprintf(buf, len, "%llu", (unsigned long long)v);
	else
		snprintf(buf, len, "%.1f", v);
	return buf;
}

static double rate(__u64 now, __u64 then, double dt_s)
{
	return now >= then ? (double)(now - then) / dt_s : 0;
}

/* One rule's counters: {"name":..,"passed":N,"passed_bytes":N,..[,"passed_per_s":R,..]}. */
static json_t *rule_json(const char *name, const struct xrl_rule_ctr *c,
			 const struct xrl_rule_ctr *prev, double dt_s, __u8 cookies)
{
	json_t *o = json_pack("{s:s,s:I,s:s,s:b}", "name", name, "syns", (json_int_t)c->syns,
			      "syn_cookies", xrl_cookies_name(cookies), "syn_cookies_live",
			      cookies & XRL_COOKIES_LIVE);
	char k[40];

	for (int v = 0; v < XRL_V_MAX; v++) {
		snprintf(k, sizeof(k), "%s_bytes", xrl_verdict_name(v));
		json_object_set_new(o, xrl_verdict_name(v), json_integer((json_int_t)c->pkts[v]));
		json_object_set_new(o, k, json_integer((json_int_t)c->bytes[v]));
	}
	for (int v = 0; prev && dt_s > 0 && v < XRL_V_MAX; v++) {
		snprintf(k, sizeof(k), "%s_per_s", xrl_verdict_name(v));
		json_object_set_new(o, k, json_real(rate(c->pkts[v], prev->pkts[v], dt_s)));
	}
	return o;
}

json_t *xrl_global_json(const struct xrl_global_ctr *g)
{
	json_t *o = json_object();

	for (int i = 0; i < XRL_G_MAX; i++)
		json_object_set_new(o, xrl_global_name(i), json_integer((json_int_t)g->c[i]));
	return o;
}

json_t *xrl_report_stats_json(const char *ifname, const struct xrl_stats *st,
			      const struct xrl_ruleset_meta *meta, long buckets,
			      const struct xrl_stats *prev, double dt_s)
{
	json_t *rules = json_array(), *o;

	for (__u32 r = 0; r < st->n_rules; r++)
		json_array_append_new(rules, rule_json(meta->names[r], &st->rules[r],
						       prev ? &prev->rules[r] : NULL, dt_s,
						       st->cookies[r]));
	o = json_pack("{s:s,s:o,s:o,s:I}", "interface", ifname, "rules", rules, "global",
		      xrl_global_json(&st->global), "buckets", (json_int_t)buckets);
	if (o && prev && dt_s > 0) {
		json_t *g = json_object();

		for (int i = 0; i < XRL_G_MAX; i++)
			json_object_set_new(g, xrl_global_name(i),
					    json_real(rate(st->global.c[i], prev->global.c[i],
							   dt_s)));
		json_object_set_new(o, "global_per_s", g);
	}
	return o;
}

static bool is_cookie_ctr(int i)
{
	return (i >= XRL_G_COOKIES_SENT && i <= XRL_G_COOKIE_FALLBACK) ||
	       (i >= XRL_G_COOKIE_REQSK && i <= XRL_G_COOKIE_NO_META);
}

/* What one table is drawn from, and how. */
struct stats_tab {
	const struct xrl_stats *st, *prev; /* prev: NULL for no rates (yet) */
	double dt_s;
	bool human; /* 1.2M */
	bool rates; /* rate columns ("-" until there is a prev) */
};

/* The rate of now - then in a column, or "-" without a previous snapshot. */
static const char *rate_str(char *buf, size_t len, const struct stats_tab *t, __u64 now, __u64 then)
{
	if (!t->prev)
		return "-";
	return num(buf, len, rate(now, then, t->dt_s), t->human);
}

/* The rules whose SYN cookies are not off, on one line: "SYN cookies:
 * login auto (on, 81.2k SYN/s)". Nothing when every rule's are off. */
static void stats_cookie_modes(struct xrl_buf *b, const struct stats_tab *t,
			       const struct xrl_ruleset_meta *meta)
{
	const char *sep = "  SYN cookies:";
	char x[32];

	for (__u32 r = 0; r < t->st->n_rules; r++) {
		__u8 m = t->st->cookies[r];

		if (m == XRL_COOKIES_OFF)
			continue;
		xrl_buf_printf(b, "%s %s %s", sep, meta->names[r], xrl_cookies_name(m));
		if (m >= XRL_COOKIES_AUTO)
			xrl_buf_printf(b, " (%s", m & XRL_COOKIES_LIVE ? "on" : "off");
		if (m >= XRL_COOKIES_AUTO && t->prev)
			xrl_buf_printf(b, ", %s SYN/s",
				       rate_str(x, sizeof(x), t, t->st->rules[r].syns,
						t->prev->rules[r].syns));
		xrl_buf_printf(b, "%s", m >= XRL_COOKIES_AUTO ? ")" : "");
		sep = ",";
	}
	if (sep[0] == ',')
		xrl_buf_printf(b, "\n");
}

/* The rules: totals, and the rate columns. */
static void stats_rules(struct xrl_buf *b, const struct stats_tab *t,
			const struct xrl_ruleset_meta *meta)
{
	static const int col[] = { XRL_V_PASSED, XRL_V_DROPPED, XRL_V_SHADOW_DROPPED };
	/* human numbers are at most 6 wide: the live view fits 80 columns */
	int nw = t->human ? 17 : 20, w = t->human ? 9 : 14, wr = t->human ? 9 : 11;
	char x[32];

	xrl_buf_printf(b, "  %-*s %*s %*s %*s", nw, "RULE", w, "PASSED", w, "DROPPED", w, "SHADOW");
	if (t->rates)
		xrl_buf_printf(b, " %*s %*s %*s", wr, "PASSED/s", wr, "DROPPED/s", wr, "SHADOW/s");
	xrl_buf_printf(b, "\n");
	for (__u32 r = 0; r < t->st->n_rules; r++) {
		const struct xrl_rule_ctr *c = &t->st->rules[r];

		xrl_buf_printf(b, "  %-*s", nw, meta->names[r]);
		for (int i = 0; i < 3; i++)
			xrl_buf_printf(b, " %*s", w,
				       num(x, sizeof(x), (double)c->pkts[col[i]], t->human));
		for (int i = 0; t->rates && i < 3; i++)
			xrl_buf_printf(b, " %*s", wr,
				       rate_str(x, sizeof(x), t, c->pkts[col[i]],
						t->prev ? t->prev->rules[r].pkts[col[i]] : 0));
		xrl_buf_printf(b, "\n");
	}
	stats_cookie_modes(b, t, meta);
}

/* One global counter: "name total" and, with rates, "rate/s". */
static void stats_cell(struct xrl_buf *b, const struct stats_tab *t, int i)
{
	__u64 v = t->st->global.c[i];
	char x[32];

	if (!t->rates) {
		xrl_buf_printf(b, " %-18s %-12s", xrl_global_name(i),
			       num(x, sizeof(x), (double)v, t->human));
		return;
	}
	xrl_buf_printf(b, " %-18s %7s", xrl_global_name(i), num(x, sizeof(x), (double)v, t->human));
	xrl_buf_printf(b, " %7s/s",
		       rate_str(x, sizeof(x), t, v, t->prev ? t->prev->global.c[i] : 0));
}

/* Global counters first..last, cookie ones or the others, per_line a line. */
static void stats_cells(struct xrl_buf *b, const struct stats_tab *t, bool cookies)
{
	int n = 0, per_line = t->rates ? 2 : 4; /* with rates: 77 columns */

	for (int i = 0; i < XRL_G_MAX; i++) {
		if (is_cookie_ctr(i) != cookies)
			continue;
		if (n++ % per_line == 0)
			xrl_buf_printf(b, "\n   ");
		stats_cell(b, t, i);
	}
}

void xrl_report_stats(struct xrl_buf *b, const char *ifname, const struct xrl_stats *st,
		      const struct xrl_ruleset_meta *meta, long buckets,
		      const struct xrl_stats *prev, double dt_s, unsigned flags)
{
	struct stats_tab t = { .st = st,
			       .prev = dt_s > 0 ? prev : NULL,
			       .dt_s = dt_s,
			       .human = flags & XRL_REPORT_HUMAN };

	t.rates = t.prev || (flags & XRL_REPORT_RATES);
	xrl_buf_printf(b, "%s\n", ifname);
	stats_rules(b, &t, meta);
	/* the SYN-cookie counters (docs/operations.md, "SYN cookies"): SYN-ACKs
	 * sent, ACKs whose cookie checked out or did not, primer SYNs passed to
	 * the kernel, SYNs a cookie rule could not answer */
	xrl_buf_printf(b, "  syn cookies:");
	stats_cells(b, &t, true);
	xrl_buf_printf(b, "\n  global:");
	stats_cells(b, &t, false);
	xrl_buf_printf(b, "\n  buckets in use: %ld\n", buckets);
}

/* Walk one allow or deny map; fn sees each entry's prefix, origin and expiry (ns, 0: none). */
static void list_walk(struct xrl_handle *h, int deny,
		      void (*fn)(void *arg, const char *prefix, const char *origin, __u64 exp),
		      void *arg)
{

	for (int fam = 0; fam < 2; fam++) {
		const char *name = deny ? (fam ? XRL_MAP_DENY_V6 : XRL_MAP_DENY_V4)
					: (fam ? XRL_MAP_ALLOW_V6 : XRL_MAP_ALLOW_V4);
		int fd = xrl_map_fd(h, name);
		struct xrl_lpm_v6 k6, n6;
		struct xrl_lpm_v4 k4, n4;
		void *prev = NULL, *next = fam ? (void *)&n6 : (void *)&n4;

		while (!bpf_map_get_next_key(fd, prev, next)) {
			struct xrl_prefix p = { .family = fam ? XRL_AF_INET6 : XRL_AF_INET };
			union {
				struct xrl_deny_val d;
				struct xrl_allow_val a;
			} v;
			char buf[64];
			__u32 org;

			if (fam) {
				k6 = n6;
				prev = &k6;
				p.plen = (__u8)k6.prefixlen;
				memcpy(p.addr, k6.addr, 16);
			} else {
				k4 = n4;
				prev = &k4;
				p.plen = (__u8)k4.prefixlen;
				p.addr[0] = k4.addr;
			}
			if (bpf_map_lookup_elem(fd, prev, &v))
				continue;
			org = deny ? v.d.origin : v.a.origin;
			xrl_prefix_str(&p, buf, sizeof(buf));
			fn(arg, buf, xrl_origin_name(org), deny ? v.d.expires_ns : 0);
		}
	}
}

struct list_arg {
	struct xrl_buf *b;
	json_t *a;
	int deny;
	__u64 now;
};

static void list_text_one(void *arg, const char *prefix, const char *origin, __u64 exp)
{
	struct list_arg *x = arg;

	xrl_buf_printf(x->b, "%-44s %-8s ", prefix, origin);
	if (x->deny && exp)
		xrl_buf_printf(x->b, "%.1fs%s", exp > x->now ? (double)(exp - x->now) / 1e9 : 0.0,
			       exp > x->now ? "" : " (expired)");
	else if (x->deny)
		xrl_buf_printf(x->b, "never");
	xrl_buf_printf(x->b, "\n");
}

static void list_json_one(void *arg, const char *prefix, const char *origin, __u64 exp)
{
	struct list_arg *x = arg;
	json_t *o = json_pack("{s:s,s:s}", "prefix", prefix, "origin", origin);

	if (x->deny)
		json_object_set_new(o, "expires_in_s",
				    exp ? json_real(exp > x->now ? (double)(exp - x->now) / 1e9
								 : 0.0)
					: json_null());
	json_array_append_new(x->a, o);
}

void xrl_report_list(struct xrl_buf *b, struct xrl_handle *h, int deny)
{
	struct list_arg x = { .b = b, .deny = deny, .now = xrl_now_ns() };

	xrl_buf_printf(b, "%-44s %-8s %s\n", "PREFIX", "ORIGIN", deny ? "EXPIRES IN" : "");
	list_walk(h, deny, list_text_one, &x);
}

json_t *xrl_report_list_json(struct xrl_handle *h, int deny)
{
	struct list_arg x = { .a = json_array(), .deny = deny, .now = xrl_now_ns() };

	list_walk(h, deny, list_json_one, &x);
	return x.a;
}

void xrl_buf_json(struct xrl_buf *b, json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

	if (!s)
		b->oom = 1;
	else
		xrl_buf_printf(b, "%s\n", s);
	free(s);
	json_decref(j);
}

void xrl_buf_json_error(struct xrl_buf *b, const char *msg)
{
	xrl_buf_json(b, json_pack("{s:s}", "error", msg));
}
