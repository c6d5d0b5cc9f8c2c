// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * config_xdp.c - the packet tier's sections of the policy file: interfaces
 * and xdp (allowlist, rules, buckets, events, cookies).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>
#include "config.h"
#include "log.h"

#include "config_int.h"

static bool ifname_ok(const char *s)
{
	size_t l = strlen(s);

	if (!l || l >= IF_NAMESIZE || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (; *s; s++)
		if (*s == '/' || *s == ':' || isspace((unsigned char)*s) ||
		    !isprint((unsigned char)*s))
			return false;
	return true;
}

/* interfaces[i]: { name, mode } */
static int parse_iface(struct cfg_parse *x, yaml_node_t *it, const char *path, size_t i, void *ctx)
{
	static const char *const modes[] = { "native", "skb", "auto" };
	static const int mvals[] = { XRL_MODE_NATIVE, XRL_MODE_SKB, XRL_MODE_AUTO };
#define KEYS(X) X(F_NAME, "name") X(F_MODE, "mode")
	CFG_KEYS(KEYS, F_COUNT, f);
#undef KEYS
	struct xrl_iface_cfg *ic = &x->c->ifaces[i];
	char p2[PATHLEN];
	const char *s;
	int mode, rc;

	rc = cfg_mapping(x, it, path, "interface", f, F_COUNT);
	if (rc)
		return rc;
	if (!f[F_NAME].v)
		return cfg_error_at(x, it,
				    "%s: missing 'name' (the interface to attach to, e.g. eth0)",
				    path);
	cfg_subpath(p2, path, ".name");
	rc = cfg_scalar(x, f[F_NAME].v, p2, "an interface name such as eth0", &s);
	if (rc)
		return rc;
	if (!ifname_ok(s)) {
		char d[64];

		return cfg_error_at(
			x, f[F_NAME].v,
			"%s: expected an interface name of 1-%d characters without '/', ':' or spaces, got %s",
			p2, IF_NAMESIZE - 1, cfg_desc(f[F_NAME].v, d, sizeof(d)));
	}
	for (size_t j = 0; j < i; j++)
		if (!strcmp(x->c->ifaces[j].name, s))
			return cfg_error_at(
				x, f[F_NAME].v,
				"%s: interface '%s' is listed twice (first at line %d)", p2,
				s, x->iface_line[j]);
	snprintf(ic->name, sizeof(ic->name), "%s", s);
	x->iface_line[i] = (int)f[F_NAME].v->start_mark.line + 1;
	ic->mode = XRL_MODE_NATIVE;
	if (f[F_MODE].v) {
		cfg_subpath(p2, path, ".mode");
		rc = ENUM(x, f[F_MODE].v, p2, modes, mvals, &mode);
		if (rc)
			return rc;
		ic->mode = (enum xrl_attach_mode)mode;
	}
	x->c->n_ifaces = (__u32)i + 1;
	return 0;
}

int cfg_parse_ifaces(struct cfg_parse *x, yaml_node_t *n)
{
	const struct cfg_list l = { "interfaces", "interfaces (- name: eth0)", "interfaces",
				    XRL_CFG_MAX_IFACES, false, parse_iface, NULL };

	return cfg_each(x, n, &l);
}

static int parse_allow(struct cfg_parse *x, yaml_node_t *n)
{
	struct xrl_policy *pol = &x->c->policy;

	return cfg_prefix_list(x, n, "xdp.allow", "allowlist entries", XRL_POLICY_MAX_ALLOW,
			       pol->allow, &pol->n_allow);
}

/* "443" or "8000-8080". */
static int port_val(struct cfg_parse *x, const yaml_node_t *n, const char *path,
		    struct xrl_port_range *out)
{
	static const char what[] = "a port 1-65535 or a range such as 8000-8080";
	unsigned long v[2];
	const char *s, *p;
	char d[64], *end;
	int rc, k = 0;

	rc = cfg_scalar(x, n, path, what, &s);
	if (rc)
		return rc;
	for (p = s; k < 2; k++) {
		if (!isdigit((unsigned char)*p))
			goto bad;
		errno = 0;
		v[k] = strtoul(p, &end, 10);
		if (errno || !v[k] || v[k] > 65535)
			goto bad;
		p = end;
		if (k == 0 && *p == '-')
			p++;
		else
			break;
	}
	if (*p)
		goto bad;
	if (k == 0)
		v[1] = v[0];
	if (v[0] > v[1])
		return cfg_error_at(x, n, "%s: expected %s, got %s: the range is backwards", path,
				    what, cfg_desc(n, d, sizeof(d)));
	out->lo = (__u16)v[0];
	out->hi = (__u16)v[1];
	return 0;
bad:
	return cfg_error_at(x, n, "%s: expected %s, got %s", path, what, cfg_desc(n, d, sizeof(d)));
}

static int parse_match(struct cfg_parse *x, yaml_node_t *n, const char *rpath,
		       struct xrl_rule_spec *r)
{
	static const char *const protos[] = { "tcp", "udp", "any" };
	static const int pvals[] = { XRL_PROTO_TCP, XRL_PROTO_UDP, XRL_PROTO_ANY };
	static const char *const flags[] = { "syn", "any" };
	static const int fvals[] = { XRL_TCP_SYN, XRL_TCP_ANY };
#define KEYS(X) \
	X(F_PROTO, "proto") X(F_TCP_FLAGS, "tcp_flags") X(F_DST_PORTS, "dst_ports") X(F_DST, "dst")
	CFG_KEYS(KEYS, F_COUNT, f);
#undef KEYS
	char path[PATHLEN], p2[PATHLEN];
	int rc, v;

	rc = cfg_submapping(x, n, path, rpath, "match", f, F_COUNT);
	if (rc)
		return rc;
	v = (int)r->proto;
	if ((rc = OPT_ENUM(x, f[F_PROTO].v, path, ".proto", protos, pvals, &v)))
		return rc;
	r->proto = (__u8)v;
	if (f[F_TCP_FLAGS].v) {
		cfg_subpath(p2, path, ".tcp_flags");
		rc = ENUM(x, f[F_TCP_FLAGS].v, p2, flags, fvals, &v);
		if (rc)
			return rc;
		r->tcp_class = (__u8)v;
		if (v == XRL_TCP_SYN && r->proto == XRL_PROTO_UDP)
			return cfg_error_at(x, f[F_TCP_FLAGS].v,
					    "%s: tcp_flags syn matches TCP only, but proto is udp",
					    p2);
	}
	if (f[F_DST_PORTS].v) {
		yaml_node_item_t *items;
		size_t count;

		cfg_subpath(p2, path, ".dst_ports");
		rc = cfg_sequence(x, f[F_DST_PORTS].v, p2, "ports (443) or ranges (\"8000-8080\")",
				  &items, &count);
		if (rc)
			return rc;
		if (!count)
			return cfg_error_at(
				x, f[F_DST_PORTS].v,
				"%s: expected at least one port; leave dst_ports out to match any port",
				p2);
		for (size_t i = 0; i < count; i++) {
			yaml_node_t *it = cfg_item(x, items, i);
			char p3[PATHLEN];

			cfg_subpath(p3, p2, "[%zu]", i);
			if (i >= XRL_MAX_PORT_RANGES)
				return cfg_error_at(x, it,
						    "%s: at most %d ports or port ranges per rule",
						    p3, XRL_MAX_PORT_RANGES);
			rc = port_val(x, it, p3, &r->ports[i]);
			if (rc)
				return rc;
			r->n_ports = (__u8)(i + 1);
		}
	}
	if (f[F_DST].v) {
		cfg_subpath(p2, path, ".dst");
		rc = cfg_prefix_val(x, f[F_DST].v, p2, &r->dst);
		if (rc)
			return rc;
		r->has_dst = true;
	}
	return 0;
}

/* key: { ipv4_prefix: 24, ipv6_prefix: 64 }, how much of a source is one bucket. */
static const struct cfg_num key_nums[] = {
	{ "ipv4_prefix", CFG_UINT, CFG_AT(struct xrl_rule_spec, key_plen4),
	  "a prefix length 0-32 (32: each address its own bucket)", 0, 32 },
	{ "ipv6_prefix", CFG_UINT, CFG_AT(struct xrl_rule_spec, key_plen6),
	  "a prefix length 0-128 (64: one bucket per /64)", 0, 128 },
};

/* A share written 0 to 0.9 with at most three decimals, in per mille. */
static int share_val(struct cfg_parse *x, const yaml_node_t *n, const char *path, __u16 *out)
{
	static const char what[] = "a share from 0 to 0.9, such as 0.2";
	const char *s, *p;
	__u32 pm = 0, scale = 1000;
	char d[64];
	int rc;

	rc = cfg_scalar(x, n, path, what, &s);
	if (rc)
		return rc;
	p = s;
	if (*p != '0' && *p != '.')
		goto bad;
	if (*p == '0')
		p++;
	if (*p == '.') {
		for (p++; isdigit((unsigned char)*p) && scale > 1; p++) {
			scale /= 10;
			pm += (__u32)(*p - '0') * scale;
		}
	}
	if (*p || pm > XRL_AGG_VOUCHED_MAX_PM)
		goto bad;
	*out = (__u16)pm;
	return 0;
bad:
	return cfg_error_at(x, n, "%s: expected %s (the rest is how new sources get in), got %s",
			    path, what, cfg_desc(n, d, sizeof(d)));
}

/* PATH.rate (a rate) and PATH.burst (1 to XRL_GCRA_BURST_MAX), both given. */
static int rate_burst(struct cfg_parse *x, yaml_node_t *rn, yaml_node_t *bn, const char *path,
		      const char *rate_what, const char *burst_what, struct xrl_rate *rate,
		      __u32 *burst)
{
	char p2[PATHLEN];
	__u64 v;
	int rc;

	cfg_subpath(p2, path, ".rate");
	rc = cfg_parsed_val(x, rn, p2, rate_what, cfg_rate_parse, rate);
	if (rc)
		return rc;
	cfg_subpath(p2, path, ".burst");
	rc = cfg_uint_val(x, bn, p2, burst_what, 1, XRL_GCRA_BURST_MAX, &v);
	if (rc)
		return rc;
	*burst = (__u32)v;
	return 0;
}

/* aggregate: { rate: N/s, burst: B, vouched_share: 0.2 } */
static int parse_aggregate(struct cfg_parse *x, yaml_node_t *n, const char *rpath,
			   struct xrl_rule_spec *r)
{
	static const char rate_what[] = "COUNT/PERIOD such as 1000/s";
#define KEYS(X) X(F_RATE, "rate") X(F_BURST, "burst") X(F_SHARE, "vouched_share")
	CFG_KEYS(KEYS, F_COUNT, f);
#undef KEYS
	char path[PATHLEN], p2[PATHLEN];
	int rc;

	rc = cfg_submapping(x, n, path, rpath, "aggregate", f, F_COUNT);
	if (rc)
		return rc;
	if (!f[F_RATE].v || !f[F_BURST].v)
		return cfg_error_at(x, n,
				    "%s: needs rate and burst (e.g. { rate: 1000/s, burst: 200 })",
				    path);
	rc = rate_burst(x, f[F_RATE].v, f[F_BURST].v, path, rate_what,
			"a whole number of connections from 1 to 100000000", &r->agg_rate,
			&r->agg_burst);
	if (rc)
		return rc;
	if (f[F_SHARE].v) {
		cfg_subpath(p2, path, ".vouched_share");
		rc = share_val(x, f[F_SHARE].v, p2, &r->agg_vouched_pm);
	}
	return rc;
}

/* syn_cookies_auto: { on_rate: 5000/s, off_rate: 1000/s, hold: 10s, min_on: 5m,
 * queue_pct: 50 } */
static const struct cfg_num cookies_auto_nums[] = {
	{ .key = "on_rate", .kind = CFG_PER_SEC, CFG_AT(struct xrl_rule_spec, auto_on_rate) },
	{ .key = "off_rate", .kind = CFG_PER_SEC, CFG_AT(struct xrl_rule_spec, auto_off_rate) },
	{ .key = "hold", .kind = CFG_DUR, CFG_AT(struct xrl_rule_spec, auto_hold_ns) },
	{ "queue_pct", CFG_UINT, CFG_AT(struct xrl_rule_spec, auto_queue_pct),
	  "a percentage from 0 (not watched) to 100", 0, 100 },
	{ .key = "min_on", .kind = CFG_DUR, CFG_AT(struct xrl_rule_spec, auto_min_on_ns) },
};

static int parse_cookies_auto(struct cfg_parse *x, yaml_node_t *n, const char *rpath,
			      struct xrl_rule_spec *r)
{
	char path[PATHLEN], err[PATHLEN];
	int rc;

	rc = NUMBERS(x, n, path, rpath, "syn_cookies_auto", cookies_auto_nums, r);
	if (!rc && xrl_rule_auto_check(r, err, sizeof(err)) == XRL_CK_RATES)
		return cfg_error_at(x, n, "%s: %s", path, err);
	return rc;
}

/* A rule's action, penalty and syn_cookies words. */
static int parse_rule_modes(struct cfg_parse *x, struct field *fa, struct field *fp,
			    struct field *fc, const char *path, struct xrl_rule_spec *r)
{
	static const char *const acts[] = { "drop", "shadow" };
	static const int avals[] = { XRL_ACT_DROP, XRL_ACT_SHADOW };
	static const char *const pens[] = { "verified", "unverified", "off" };
	static const int pvals[] = { XRL_PEN_VERIFIED, XRL_PEN_UNVERIFIED, XRL_PEN_OFF };
	static const char *const cks[] = { "off", "on", "auto" };
	static const int ckvals[] = { XRL_COOKIES_OFF, XRL_COOKIES_ON, XRL_COOKIES_AUTO };
	char msg[96];
	int rc, a;

	a = (int)r->action;
	if ((rc = OPT_ENUM(x, fa->v, path, ".action", acts, avals, &a)))
		return rc;
	r->action = (__u8)a;
	a = (int)r->penalty;
	if ((rc = OPT_ENUM(x, fp->v, path, ".penalty", pens, pvals, &a)))
		return rc;
	r->penalty = (__u8)a;
	a = (int)r->syn_cookies;
	if ((rc = OPT_ENUM(x, fc->v, path, ".syn_cookies", cks, ckvals, &a)))
		return rc;
	r->syn_cookies = (__u8)a;
	if (xrl_rule_cookies_check(r, msg, sizeof(msg)) == XRL_CK_PROTO)
		return cfg_error_at(x, fc->v, "%s.syn_cookies: %s", path, msg);
	return 0;
}

bool cfg_rule_name_ok(const char *s)
{
	size_t l = strlen(s);

	if (!l || l >= XRL_RULE_NAME_LEN)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
			return false;
	return true;
}

int cfg_rule_name(struct cfg_parse *x, const yaml_node_t *n, const char *path, char *p2,
		  const char **s)
{
	char d[64];
	int rc;

	cfg_subpath(p2, path, ".name");
	if ((rc = cfg_scalar(x, n, p2, "a rule name", s)))
		return rc;
	if (!cfg_rule_name_ok(*s))
		return cfg_error_at(
			x, n,
			"%s: expected a rule name of 1-%d letters, digits, '-', '_' or '.', got %s",
			p2, XRL_RULE_NAME_LEN - 1, cfg_desc(n, d, sizeof(d)));
	return 0;
}

static int parse_rule(struct cfg_parse *x, yaml_node_t *n, const char *path, size_t idx, void *ctx)
{
	static const char rate_what[] = "COUNT/PERIOD such as 100/s or 10/min";
#define KEYS(X) \
	X(F_NAME, "name") \
	X(F_MATCH, "match") \
	X(F_KEY, "key") \
	X(F_RATE, "rate") X(F_BURST, "burst") X(F_ACTION, "action") X(F_PENALTY, "penalty") \
		X(F_COOKIES, "syn_cookies") X(F_AGG, "aggregate") \
			X(F_COOKIES_AUTO, "syn_cookies_auto")
	CFG_KEYS(KEYS, F_COUNT, f);
#undef KEYS
	struct xrl_policy *pol = &x->c->policy;
	struct xrl_rule_spec *r = &pol->rules[idx];
	char p2[PATHLEN], msg[XRL_ERRLEN];
	const char *s;
	int rc;

	rc = cfg_mapping(x, n, path, "rule", f, F_COUNT);
	if (rc)
		return rc;
	if (cfg_is_null(n))
		return cfg_error_at(
			x, n,
			"%s: expected a rule (a mapping with name, rate and burst), got nothing",
			path);
	if (!f[F_NAME].v)
		return cfg_error_at(x, n,
				    "%s: missing 'name' (a rule needs a name, e.g. name: syn)",
				    path);
	if (!f[F_RATE].v)
		return cfg_error_at(x, n, "%s: missing 'rate' (%s)", path, rate_what);
	if (!f[F_BURST].v)
		return cfg_error_at(
			x, n,
			"%s: missing 'burst' (how many packets may come at once, e.g. burst: 50)",
			path);

	if ((rc = cfg_rule_name(x, f[F_NAME].v, path, p2, &s)))
		return rc;
	for (size_t j = 0; j < idx; j++)
		if (!strcmp(pol->rules[j].name, s))
			return cfg_error_at(x, f[F_NAME].v,
					    "%s: rule name '%s' is used twice (first at line %d)",
					    p2, s, x->rule_line[j]);
	xrl_rule_spec_init(r, s);
	x->rule_line[idx] = (int)f[F_NAME].v->start_mark.line + 1;

	if (f[F_MATCH].v) {
		rc = parse_match(x, f[F_MATCH].v, path, r);
		if (rc)
			return rc;
	}
	if (f[F_KEY].v) {
		rc = NUMBERS(x, f[F_KEY].v, p2, path, "key", key_nums, r);
		if (rc)
			return rc;
	}

	rc = rate_burst(x, f[F_RATE].v, f[F_BURST].v, path, rate_what,
			"a whole number of packets from 1 to 100000000", &r->rate, &r->burst);
	if (rc)
		return rc;

	rc = parse_rule_modes(x, &f[F_ACTION], &f[F_PENALTY], &f[F_COOKIES], path, r);
	if (!rc && f[F_AGG].v)
		rc = parse_aggregate(x, f[F_AGG].v, path, r);
	if (!rc && f[F_COOKIES_AUTO].v)
		rc = parse_cookies_auto(x, f[F_COOKIES_AUTO].v, path, r);
	if (rc)
		return rc;

	/* rate and burst within what the arithmetic can hold, here with a line;
	 * the one compile of this rule for the reload */
	if (xrl_rule_compile(r, &pol->compiled[idx], msg, sizeof(msg)))
		return cfg_error_at(x, f[F_RATE].v, "%s: %s", path, msg);
	pol->n_rules = (__u32)idx + 1;
	pol->n_compiled = pol->n_rules;
	return 0;
}

static int parse_rules(struct cfg_parse *x, yaml_node_t *n)
{
	const struct cfg_list l = { "xdp.rules", "rules (- name: ...)", "rules", XRL_MAX_RULES,
				    false, parse_rule, NULL };

	return cfg_each(x, n, &l);
}

int cfg_parse_xdp(struct cfg_parse *x, yaml_node_t *n)
{
#define KEYS(X) \
	X(F_ALLOW, "allow") \
	X(F_RULES, "rules") \
	X(F_BUCKETS, "buckets") \
	X(F_EVENT_INTERVAL, "event_interval") X(F_COOKIE_PATH, "cookie_path")
	CFG_KEYS(KEYS, F_COUNT, f);
#undef KEYS
	static const char *const paths[] = { "auto", "kernel" };
	static const int pvals[] = { 0, 1 };
	__u64 v;
	int rc, pv;

	rc = cfg_mapping(x, n, "xdp", "xdp", f, F_COUNT);
	if (rc)
		return rc;
	x->c->has_xdp = true;
	if (f[F_ALLOW].v && (rc = parse_allow(x, f[F_ALLOW].v)))
		return rc;
	if (f[F_RULES].v && (rc = parse_rules(x, f[F_RULES].v)))
		return rc;
	if (f[F_BUCKETS].v) {
		rc = cfg_uint_val(x, f[F_BUCKETS].v, "xdp.buckets",
				  "a bucket table size from 1024 to 268435456 entries", 1024,
				  1u << 28, &v);
		if (rc)
			return rc;
		x->c->buckets_max = (__u32)v;
	}
	if (f[F_EVENT_INTERVAL].v &&
	    (rc = cfg_dur_val(x, f[F_EVENT_INTERVAL].v, "xdp.event_interval",
			      &x->c->event_interval_ns)))
		return rc;
	if (f[F_COOKIE_PATH].v) {
		rc = ENUM(x, f[F_COOKIE_PATH].v, "xdp.cookie_path", paths, pvals, &pv);
		if (rc)
			return rc;
		x->c->kernel_cookies = pv;
	}
	return 0;
}
