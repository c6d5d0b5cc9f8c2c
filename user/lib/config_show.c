// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * config_show.c - a parsed policy shown: the summary `xrld --check` prints
 * and the JSON of `policy show --json`.
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
#include "util.h"

static const struct {
	const char *name;
	__u64 ns;
} units[] = {
	{ "d", 86400ULL * XRL_NSEC_PER_SEC },
	{ "h", 3600ULL * XRL_NSEC_PER_SEC },
	{ "min", 60ULL * XRL_NSEC_PER_SEC },
	{ "s", XRL_NSEC_PER_SEC },
	{ "ms", 1000000ULL },
	{ "us", 1000ULL },
	{ "ns", 1ULL },
};

/* ns as the largest unit that divides it: 60e9 -> "1min", 90e9 -> "90s". */
static const char *dur_str(__u64 ns, char *buf, size_t len)
{
	size_t i;

	if (!ns) {
		snprintf(buf, len, "0s");
		return buf;
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]) - 1; i++)
		if (ns % units[i].ns == 0)
			break;
	snprintf(buf, len, "%" PRIu64 "%s", (uint64_t)(ns / units[i].ns), units[i].name);
	return buf;
}

static __u64 gcd(__u64 a, __u64 b)
{
	while (b) {
		__u64 t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* {100, 1e9} -> "100/s", {10, 60e9} -> "10/min", {1, 6e9} -> "1/6s",
 * {25, 10e9} -> "2.5/s". */
static const char *rate_str(const struct xrl_rate *r, char *buf, size_t len)
{
	__u64 tokens = r->tokens, k, g;
	size_t i;

	for (i = 0; i < sizeof(units) / sizeof(units[0]) - 1; i++)
		if (r->period_ns && r->period_ns % units[i].ns == 0)
			break;
	k = r->period_ns / units[i].ns;
	g = gcd(tokens, k);
	if (g > 1) {
		tokens /= g;
		k /= g;
	}
	if (k != 1 && r->period_ns) {
		/* a decimal count as written: 2.5/s is {25, 10 s} */
		unsigned __int128 milli = (unsigned __int128)r->tokens * units[i].ns * 1000;

		if (milli % r->period_ns == 0 && milli / r->period_ns >= 1000 &&
		    milli / r->period_ns <= UINT64_MAX) {
			__u64 m = (__u64)(milli / r->period_ns);
			char frac[8];
			int n;

			n = snprintf(frac, sizeof(frac), "%03u", (unsigned)(m % 1000));
			while (n > 0 && frac[n - 1] == '0')
				frac[--n] = '\0';
			snprintf(buf, len, "%" PRIu64 ".%s/%s", (uint64_t)(m / 1000), frac,
				 units[i].name);
			return buf;
		}
	}
	if (k == 1)
		snprintf(buf, len, "%" PRIu64 "/%s", (uint64_t)tokens, units[i].name);
	else
		snprintf(buf, len, "%" PRIu64 "/%" PRIu64 "%s", (uint64_t)tokens, (uint64_t)k,
			 units[i].name);
	return buf;
}

static const char *mode_str(enum xrl_attach_mode m)
{
	return m == XRL_MODE_SKB ? "skb" : m == XRL_MODE_AUTO ? "auto" : "native";
}

/* What a rule's refusals may earn, for the summary ("" without penalties). */
static bool never_proven(const struct xrl_rule_spec *s);

static const char *penalty_str(const struct xrld_config *c, const struct xrl_rule_spec *s)
{
	if (!c->penalty.enabled || s->action == XRL_ACT_SHADOW)
		return "";
	if (s->penalty == XRL_PEN_OFF)
		return ", penalty off";
	if (s->key_plen4 < c->penalty.floor4 || s->key_plen6 < c->penalty.floor6)
		return s->key_plen4 < c->penalty.floor4 && s->key_plen6 < c->penalty.floor6
			       ? ", no penalty (keyed shorter than the floor)"
			       : ", penalty for one family only (the other is keyed shorter than the floor)";
	if (s->penalty != XRL_PEN_UNVERIFIED && never_proven(s))
		return ", penalty never earned (see the warning)";
	return s->penalty == XRL_PEN_UNVERIFIED ? ", penalty on any refusal (sources trusted)"
						: ", penalty on verified sources";
}

/*
 * Can no refusal of rule s ever prove its source (penalty: verified)? A
 * source proves itself by a live TCP connection (verify.c: sock_diag of the
 * refused packet's 4-tuple) or by a valid cookie ACK: a UDP rule has
 * neither, and a rule of SYNs alone has neither without SYN cookies (a new
 * connection has no socket yet).
 */
static bool never_proven(const struct xrl_rule_spec *s)
{
	return s->proto == XRL_PROTO_UDP ||
	       (s->tcp_class == XRL_TCP_SYN && s->syn_cookies == XRL_COOKIES_OFF);
}

/* A penalty a rule can never earn: named, not found on the day. */
static void penalty_warnings(struct xrl_buf *b, const struct xrld_config *c)
{
	for (__u32 i = 0; c->penalty.enabled && i < c->policy.n_rules; i++) {
		const struct xrl_rule_spec *s = &c->policy.rules[i];

		if (s->action == XRL_ACT_SHADOW || s->penalty != XRL_PEN_VERIFIED ||
		    !never_proven(s))
			continue;
		xrl_buf_printf(b,
			       "warning: xdp.rules[%u] (%s) never earns its penalty: under penalty: "
			       "verified (the default) %s; write %s\n",
			       i, s->name,
			       s->proto == XRL_PROTO_UDP
				       ? "a UDP refusal proves no source"
				       : "a refused SYN proves nothing without SYN cookies",
			       /* UDP is spoofed at no cost: unverified would let a forged
				* flood deny a victim's network */
			       s->proto == XRL_PROTO_UDP
				       ? "penalty: off"
				       : "syn_cookies: on, penalty: unverified (trusted sources) or "
					 "penalty: off");
	}
}

/* The listening address of h as a prefix; false when it is not one
 * (a host name) or is the unspecified address (every local address). */
static bool http_listen_addr(const struct xrl_http_cfg *h, struct xrl_prefix *a, bool *any)
{
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)&h->listen_addr;
	const struct sockaddr_in *a4 = (const struct sockaddr_in *)&h->listen_addr;

	*any = false;
	memset(a, 0, sizeof(*a));
	if (h->listen_addr.ss_family == AF_INET)
		memcpy(&a->addr[0], &a4->sin_addr, 4), a->family = XRL_AF_INET, a->plen = 32;
	else if (h->listen_addr.ss_family == AF_INET6)
		memcpy(a->addr, &a6->sin6_addr, 16), a->family = XRL_AF_INET6, a->plen = 128;
	else
		return false;
	*any = !a->addr[0] && !a->addr[1] && !a->addr[2] && !a->addr[3];
	return true;
}

/*
 * --check's word on an identity tier whose callers make a setting do
 * nothing, or let anyone in: a tier reachable from elsewhere that only
 * loopback may ask; callers listed that cannot reach a loopback listener;
 * a caller prefix of everyone without a secret.
 */
static void http_warnings(struct xrl_buf *b, const struct xrl_http_cfg *h)
{
	struct xrl_prefix a;
	char t[64];
	bool any, lo;

	/* behind nginx, Traefik or Caddy the request's method and path come in
	 * headers believed only from a trusted proxy: with none, a rule that
	 * matches on them never sees them */
	for (__u32 i = 0; !h->n_trusted && h->forwarded_from <= XRL_FWD_CADDY && i < h->n_rules;
	     i++) {
		const struct xrl_http_rule *r = &h->rules[i];

		if (!r->method[0] && !r->path_prefix[0])
			continue;
		xrl_buf_printf(
			b,
			"warning: http.rules[%u] (%s) matches %s %s, but with no "
			"http.trusted_proxies the %s headers that carry them are never believed: "
			"behind the proxy it matches nothing (list the proxy's address there)\n",
			i, r->name, r->method[0] ? r->method : "*",
			r->path_prefix[0] ? r->path_prefix : "/",
			h->forwarded_from == XRL_FWD_NGINX ? "X-Original-Method/-URI"
							   : "X-Forwarded-Method/-Uri");
		break;
	}
	/* a rule in shadow refuses nobody: its disarm has nothing to judge */
	for (__u32 i = 0; i < h->n_rules; i++)
		if (h->rules[i].disarm_pct && h->rules[i].shadow)
			xrl_buf_printf(b,
				       "warning: http.rules[%u] (%s) has disarm: but shadow: true: a "
				       "rule in shadow refuses nobody, so it never disarms (it judges "
				       "once shadow is off)\n",
				       i, h->rules[i].name);
	if (!http_listen_addr(h, &a, &any))
		return;
	lo = !any && xrl_http_loopback(&a);
	if (!lo && !h->n_callers && !h->n_trusted)
		xrl_buf_printf(b,
			       "warning: http listens on %s but only loopback may ask (no http.callers, no "
			       "trusted_proxies): every other peer gets 403\n",
			       h->listen);
	for (__u32 i = 0; lo && i < h->n_callers; i++)
		if (!xrl_http_loopback(&h->callers[i])) {
			xrl_buf_printf(b,
				       "warning: http.callers lists %s, but http listens on %s: no such peer "
				       "can connect\n",
				       xrl_prefix_str(&h->callers[i], t, sizeof(t)), h->listen);
			break;
		}
	for (__u32 i = 0; i < h->n_callers + h->n_trusted; i++) {
		const struct xrl_prefix *p = i < h->n_callers ? &h->callers[i]
							      : &h->trusted[i - h->n_callers];

		if (p->plen || h->caller_secret_len)
			continue;
		xrl_buf_printf(b,
			       "warning: http.%s %s lets every peer ask, without caller_secret_file: "
			       "whoever reaches %s can spend any key's tokens\n",
			       i < h->n_callers ? "callers" : "trusted_proxies",
			       xrl_prefix_str(p, t, sizeof(t)), h->listen);
	}
}

/* The fleet's line of the summary, and a protect entry that disarms it. */
static void fleet_summary(struct xrl_buf *b, const struct xrld_config *c)
{
	const struct xrl_fleet_cfg *f = &c->fleet;
	char a[64], d[32];

	if (!f->enabled)
		return;
	xrl_buf_printf(b, "fleet: %s, %s, NODE_SHARE counts at most %u members", f->name,
		       f->packet ? "packet-tier denials shared" : "identity tier only",
		       f->max_members);
	if (f->packet)
		xrl_buf_printf(b,
			       "; a fleet denial lasts at most %s (%s), never covers the allowlist, "
			       "the fleet's Redis, this host's addresses or %u protected prefix%s",
			       dur_str(c->penalty.enabled ? c->penalty.max_ns
							  : XRL_FLEET_DENY_MAX_NS,
				       d, sizeof(d)),
			       c->penalty.enabled ? "penalty.max" : "penalties off: the default",
			       f->n_protect, f->n_protect == 1 ? "" : "es");
	xrl_buf_printf(b, "\n");
	for (__u32 i = 0; i < f->n_protect; i++)
		if (!f->protect[i].plen)
			xrl_buf_printf(b,
				       "warning: fleet.protect[%u] %s covers every %s address: no fleet "
				       "denial of that family is ever applied here\n",
				       i, xrl_prefix_str(&f->protect[i], a, sizeof(a)),
				       f->protect[i].family == XRL_AF_INET ? "IPv4" : "IPv6");
}

/* b's text into buf, cut at len - 1 bytes if longer (-ENOSPC); b freed. */
static int summary_out(struct xrl_buf *b, char *buf, size_t len)
{
	size_t n = b->len < len ? b->len : len - 1;
	int rc = b->oom ? -ENOMEM : b->len >= len ? -ENOSPC : 0;

	if (b->oom)
		n = 0;
	if (n)
		memcpy(buf, b->p, n);
	buf[n] = '\0';
	xrl_buf_free(b);
	return rc;
}

static const char *const missing_names[] = { "skip", "refuse", "client_ip" };
static const char *const backend_err_names[] = { "open", "closed", "local" };
static const char *const fwd_names[] = { "nginx", "traefik", "caddy", "envoy", "none" };

/* "GET /healthz" of a route; "*" and "/" for any. */
static const char *route_str(const struct xrl_http_route *m, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s", m->method[0] ? m->method : "*",
		 m->path_prefix[0] ? m->path_prefix : "/");
	return buf;
}

static void prefix_list(struct xrl_buf *b, const struct xrl_prefix *p, __u32 n)
{
	char s[64];

	for (__u32 i = 0; i < n; i++)
		xrl_buf_printf(b, "%s%s", i ? ", " : "", xrl_prefix_str(&p[i], s, sizeof(s)));
}

void xrl_http_summary(struct xrl_buf *b, const struct xrl_http_cfg *h)
{
	char be[700], r[48], d[32], rt[300];

	xrl_buf_printf(b, "http: listening on %s, backend %s, %u thread%s\n", h->listen,
		       xrl_http_backend_str(h, be, sizeof(be)), h->threads,
		       h->threads == 1 ? "" : "s");
	xrl_buf_printf(b, "  trusted proxies: ");
	if (h->n_trusted) {
		prefix_list(b, h->trusted, h->n_trusted);
		xrl_buf_printf(b, " (forwarded_from %s)\n", fwd_names[h->forwarded_from % 5]);
	} else
		xrl_buf_printf(b, "none (forwarded headers are not believed)\n");
	xrl_buf_printf(b, "  callers: loopback%s", h->n_trusted ? ", the trusted proxies" : "");
	if (h->n_callers) {
		xrl_buf_printf(b, ", ");
		prefix_list(b, h->callers, h->n_callers);
	}
	xrl_buf_printf(b, "%s\n", h->caller_secret_len ? "; with the caller secret" : "");
	if (h->n_exempt) {
		xrl_buf_printf(b, "  exempt:");
		for (__u32 i = 0; i < h->n_exempt; i++)
			xrl_buf_printf(b, "%s %s", i ? "," : "",
				       route_str(&h->exempt[i], rt, sizeof(rt)));
		xrl_buf_printf(b, "\n");
	}
	if (h->shed_enabled)
		xrl_buf_printf(b, "  shed: every request, %s burst %u (503 beyond)\n",
			       rate_str(&h->shed_rate, r, sizeof(r)), h->shed_burst);
	for (__u32 i = 0; i < h->n_shed; i++)
		xrl_buf_printf(b, "  shed: %s, %s burst %u (503 beyond)\n",
			       route_str(&h->shed[i].match, rt, sizeof(rt)),
			       rate_str(&h->shed[i].rate, r, sizeof(r)), h->shed[i].burst);
	xrl_buf_printf(b, "  %-16s %-7s %-20s %-20s %-9s %6s %4s %5s %-6s %-6s %-9s %s\n", "RULE",
		       "METHOD", "PATH", "KEY", "RATE", "BURST", "COST", "CONC", "LEASE", "SHADOW",
		       "MISSING", "REDIS DOWN");
	for (__u32 i = 0; i < h->n_rules; i++) {
		const struct xrl_http_rule *x = &h->rules[i];
		char k[80], bu[16] = "-", co[16] = "-";

		if (x->has_rate)
			snprintf(bu, sizeof(bu), "%u", x->burst);
		if (x->concurrency)
			snprintf(co, sizeof(co), "%u", x->concurrency);
		xrl_buf_printf(b, "  %-16s %-7s %-20s %-20s %-9s %6s %4u %5s %-6s %-6s %-9s %s%s\n",
			       x->name, x->method[0] ? x->method : "*",
			       x->path_prefix[0] ? x->path_prefix : "/",
			       xrl_http_key_str(x, k, sizeof(k)),
			       x->has_rate ? rate_str(&x->rate, r, sizeof(r)) : "-", bu, x->cost,
			       co, x->concurrency ? dur_str(x->lease_ttl_ns, d, sizeof(d)) : "-",
			       x->shadow ? "yes" : "no", missing_names[x->on_missing_key % 3],
			       backend_err_names[x->on_backend_error % 3],
			       x->vouch ? ", vouch" : "");
	}
}

int xrl_config_summary(const struct xrld_config *c, char *buf, size_t len)
{
	static const char *const levels[] = { "error", "warning", "info", "debug" };
	struct xrl_buf b = { 0 };
	const struct xrl_policy *p = &c->policy;
	char a[64], r[48], d1[32], d2[32], d3[32];
	__u32 v4 = 0;

	if (!buf || !len)
		return -ENOSPC;

	xrl_buf_printf(&b, "interfaces:");
	if (!c->n_ifaces)
		xrl_buf_printf(&b, " none");
	for (__u32 i = 0; i < c->n_ifaces; i++)
		xrl_buf_printf(&b, "%s %s (%s)", i ? "," : "", c->ifaces[i].name,
			       mode_str(c->ifaces[i].mode));
	xrl_buf_printf(&b, "\n");

	if (!c->has_xdp) {
		xrl_buf_printf(&b, "xdp: no section\n");
	} else {
		for (__u32 i = 0; i < p->n_allow; i++)
			v4 += p->allow[i].family == XRL_AF_INET;
		xrl_buf_printf(&b, "allow: %u prefix%s (%u IPv4, %u IPv6)\n", p->n_allow,
			       p->n_allow == 1 ? "" : "es", v4, p->n_allow - v4);
		xrl_buf_printf(&b, "rules: %u\n", p->n_rules);
		for (__u32 i = 0; i < p->n_rules; i++) {
			const struct xrl_rule_spec *s = &p->rules[i];

			xrl_buf_printf(&b, "  %s: %s%s", s->name,
				       s->proto == XRL_PROTO_TCP   ? "tcp"
				       : s->proto == XRL_PROTO_UDP ? "udp"
								   : "any proto",
				       s->tcp_class == XRL_TCP_SYN ? " syn" : "");
			if (s->has_dst)
				xrl_buf_printf(&b, " to %s", xrl_prefix_str(&s->dst, a, sizeof(a)));
			for (__u32 j = 0; j < s->n_ports; j++) {
				xrl_buf_printf(&b, "%s%u",
					       j ? ","
					       : s->n_ports > 1 || s->ports[0].lo != s->ports[0].hi
						       ? " ports "
						       : " port ",
					       s->ports[j].lo);
				if (s->ports[j].hi != s->ports[j].lo)
					xrl_buf_printf(&b, "-%u", s->ports[j].hi);
			}
			xrl_buf_printf(&b, ", key /%u /%u, %s burst %u, %s", s->key_plen4,
				       s->key_plen6, rate_str(&s->rate, r, sizeof(r)), s->burst,
				       s->action == XRL_ACT_SHADOW ? "shadow" : "drop");
			xrl_buf_printf(&b, "%s%s\n",
				       s->syn_cookies == XRL_COOKIES_ON	    ? ", SYN cookies"
				       : s->syn_cookies == XRL_COOKIES_AUTO ? ", SYN cookies auto"
									    : "",
				       penalty_str(c, s));
		}
		xrl_buf_printf(&b, "buckets: %u%s, event interval %s%s\n",
			       c->buckets_max ? c->buckets_max : XRL_BUCKETS_DEFAULT,
			       c->buckets_max ? "" : " (default)",
			       dur_str(c->event_interval_ns ? c->event_interval_ns
							    : XRL_NSEC_PER_SEC,
				       d1, sizeof(d1)),
			       c->event_interval_ns ? "" : " (default)");
	}

	penalty_warnings(&b, c);
	if (c->penalty.enabled)
		xrl_buf_printf(&b,
			       "penalty: %u strike%s within %s -> deny %s, doubling up to %s; "
			       "never shorter than /%u (IPv4) /%u (IPv6)\n",
			       c->penalty.strikes, c->penalty.strikes == 1 ? "" : "s",
			       dur_str(c->penalty.window_ns, d1, sizeof(d1)),
			       dur_str(c->penalty.base_ns, d2, sizeof(d2)),
			       dur_str(c->penalty.max_ns, d3, sizeof(d3)), c->penalty.floor4,
			       c->penalty.floor6);
	else
		xrl_buf_printf(&b, "penalty: off\n");
	xrl_buf_printf(&b, "metrics: %s\n", c->metrics[0] ? c->metrics : "off");
	xrl_buf_printf(&b, "on exit: %s\n", c->on_exit_detach ? "detach" : "keep attached");
	if (c->log_level >= 0 && c->log_level <= XRL_LOG_DEBUG)
		xrl_buf_printf(&b, "log level: %s\n", levels[c->log_level]);
	if (c->has_http) {
		xrl_http_summary(&b, &c->http);
		http_warnings(&b, &c->http);
	}
	fleet_summary(&b, c);
	return summary_out(&b, buf, len);
}

/* ---- the policy as JSON (`policy show --json`) -------------------------------- */

static json_t *rule_spec_json(const struct xrld_config *c, const struct xrl_rule_spec *s)
{
	static const char *const pen[] = { "verified", "unverified", "off" };
	json_t *ports = json_array();
	char a[64], r[48];

	for (__u32 j = 0; j < s->n_ports; j++)
		json_array_append_new(ports, json_pack("{s:i,s:i}", "lo", s->ports[j].lo, "hi",
						       s->ports[j].hi));
	return json_pack("{s:s,s:s,s:b,s:o,s:o,s:{s:i,s:i},s:s,s:I,s:s,s:s}", "name", s->name,
			 "proto",
			 s->proto == XRL_PROTO_TCP   ? "tcp"
			 : s->proto == XRL_PROTO_UDP ? "udp"
						     : "any",
			 "syn", s->tcp_class == XRL_TCP_SYN, "dst",
			 s->has_dst ? json_string(xrl_prefix_str(&s->dst, a, sizeof(a)))
				    : json_null(),
			 "ports", ports, "key", "ipv4", s->key_plen4, "ipv6", s->key_plen6, "rate",
			 rate_str(&s->rate, r, sizeof(r)), "burst", (json_int_t)s->burst, "action",
			 s->action == XRL_ACT_SHADOW ? "shadow" : "drop", "penalty",
			 c->penalty.enabled && s->penalty <= XRL_PEN_OFF ? pen[s->penalty] : "off");
}

static json_t *xdp_json(const struct xrld_config *c)
{
	const struct xrl_policy *p = &c->policy;
	json_t *rules = json_array(), *allow = json_array();
	char a[64], d1[32];

	for (__u32 i = 0; i < p->n_rules; i++)
		json_array_append_new(rules, rule_spec_json(c, &p->rules[i]));
	for (__u32 i = 0; i < p->n_allow; i++)
		json_array_append_new(allow,
				      json_string(xrl_prefix_str(&p->allow[i], a, sizeof(a))));
	return json_pack("{s:o,s:o,s:I,s:s}", "rules", rules, "allow", allow, "buckets",
			 (json_int_t)(c->buckets_max ? c->buckets_max : XRL_BUCKETS_DEFAULT),
			 "event_interval",
			 dur_str(c->event_interval_ns ? c->event_interval_ns : XRL_NSEC_PER_SEC, d1,
				 sizeof(d1)));
}

static json_t *route_json(const struct xrl_http_route *m)
{
	return json_pack("{s:s?,s:s?}", "method", m->method[0] ? m->method : NULL, "path_prefix",
			 m->path_prefix[0] ? m->path_prefix : NULL);
}

/* http.exempt and http.shed (the mapping form: one bucket; the list: per route) */
static void http_json_shed(const struct xrl_http_cfg *h, json_t *o)
{
	json_t *ex = json_array(), *shed = json_null();
	char r[48];

	for (__u32 i = 0; i < h->n_exempt; i++)
		json_array_append_new(ex, route_json(&h->exempt[i]));
	if (h->shed_enabled) {
		shed = json_pack("{s:s,s:I}", "rate", rate_str(&h->shed_rate, r, sizeof(r)),
				 "burst", (json_int_t)h->shed_burst);
	} else if (h->n_shed) {
		shed = json_array();
		for (__u32 i = 0; i < h->n_shed; i++)
			json_array_append_new(shed,
					      json_pack("{s:o,s:s,s:I}", "match",
							route_json(&h->shed[i].match), "rate",
							rate_str(&h->shed[i].rate, r, sizeof(r)),
							"burst", (json_int_t)h->shed[i].burst));
	}
	json_object_set_new(o, "exempt", ex);
	json_object_set_new(o, "shed", shed);
}

const char *xrl_http_key_str(const struct xrl_http_rule *r, char *buf, size_t len)
{
	static const char *const kinds[] = { "header", "bearer", "client_ip", "global" };

	if (r->key_kind == XRL_KEY_HEADER)
		snprintf(buf, len, "header:%s", r->header);
	else
		snprintf(buf, len, "%s", kinds[r->key_kind % 4]);
	return buf;
}

const char *xrl_http_backend_str(const struct xrl_http_cfg *h, char *buf, size_t len)
{
	/* the Redis user and password are never shown */
	if (h->redis_cluster)
		snprintf(buf, len, "redis-cluster://%s", h->redis_seeds);
	else if (h->redis && strchr(h->redis_host, ':'))
		snprintf(buf, len, "redis://[%s]:%d/%d", h->redis_host, h->redis_port, h->redis_db);
	else if (h->redis)
		snprintf(buf, len, "redis://%s:%d/%d", h->redis_host, h->redis_port, h->redis_db);
	else
		snprintf(buf, len, "memory");
	return buf;
}

json_t *xrl_http_rule_json(const struct xrl_http_rule *x)
{
	char r[48], d[32], v[32], k[80], w[32];

	/* a rule of concurrency only has no rate and burst: null */
	return json_pack("{s:s,s:s,s:s,s:s,s:s?,s:o,s:I,s:o,s:s?,s:b,s:s,s:s,s:b,s:s?,s:o}", "name",
			 x->name, "method", x->method[0] ? x->method : "*", "path_prefix",
			 x->path_prefix[0] ? x->path_prefix : "/", "key",
			 xrl_http_key_str(x, k, sizeof(k)), "rate",
			 x->has_rate ? rate_str(&x->rate, r, sizeof(r)) : NULL, "burst",
			 x->has_rate ? json_integer(x->burst) : json_null(), "cost",
			 (json_int_t)x->cost, "concurrency",
			 x->concurrency ? json_integer(x->concurrency) : json_null(), "lease_ttl",
			 x->concurrency ? dur_str(x->lease_ttl_ns, d, sizeof(d)) : NULL, "shadow",
			 x->shadow, "on_missing_key", missing_names[x->on_missing_key % 3],
			 "on_backend_error", backend_err_names[x->on_backend_error % 3], "vouch",
			 x->vouch, "vouch_ttl",
			 x->vouch ? dur_str(x->vouch_ttl_ns, v, sizeof(v)) : NULL, "disarm",
			 x->disarm_pct ? json_pack("{s:I,s:s}", "refused_sources_pct",
						   (json_int_t)x->disarm_pct, "window",
						   dur_str(x->disarm_window_ns, w, sizeof(w)))
				       : json_null());
}

static json_t *prefixes_json(const struct xrl_prefix *p, __u32 n)
{
	json_t *a = json_array();
	char s[64];

	for (__u32 i = 0; i < n; i++)
		json_array_append_new(a, json_string(xrl_prefix_str(&p[i], s, sizeof(s))));
	return a;
}

json_t *xrl_http_cfg_json(const struct xrl_http_cfg *h)
{
	json_t *rules = json_array(), *o;
	char be[700], d1[32], d2[32];

	for (__u32 i = 0; i < h->n_rules; i++)
		json_array_append_new(rules, xrl_http_rule_json(&h->rules[i]));
	o = json_pack("{s:s,s:s,s:o,s:o,s:s,s:o,s:b,s:b,s:I,s:s,s:s,s:I,s:I,s:{s:b,s:b},s:s?}",
		      "listen", h->listen, "backend", xrl_http_backend_str(h, be, sizeof(be)),
		      "rules", rules, "trusted_proxies", prefixes_json(h->trusted, h->n_trusted),
		      "forwarded_from", fwd_names[h->forwarded_from % 5], "callers",
		      prefixes_json(h->callers, h->n_callers), "caller_secret",
		      h->caller_secret_len > 0, "ignore_path_case", h->ignore_path_case,
		      "max_connections", (json_int_t)h->max_connections, "idle_timeout",
		      dur_str(h->idle_timeout_ns, d1, sizeof(d1)), "head_timeout",
		      dur_str(h->head_timeout_ns, d2, sizeof(d2)), "max_header_bytes",
		      (json_int_t)h->max_header_bytes, "threads", (json_int_t)h->threads, "headers",
		      "ietf", h->ietf_headers, "x_ratelimit", h->x_ratelimit_headers, "fleet",
		      h->fleet[0] ? h->fleet : NULL);
	if (o)
		http_json_shed(h, o);
	return o;
}

json_t *xrl_config_json(const struct xrld_config *c)
{
	json_t *ifs = json_array(), *pen = json_null();
	char d1[32], d2[32], d3[32];

	for (__u32 i = 0; i < c->n_ifaces; i++)
		json_array_append_new(ifs, json_pack("{s:s,s:s}", "name", c->ifaces[i].name, "mode",
						     mode_str(c->ifaces[i].mode)));
	if (c->penalty.enabled)
		pen = json_pack("{s:I,s:s,s:s,s:s,s:i,s:i}", "strikes",
				(json_int_t)c->penalty.strikes, "window",
				dur_str(c->penalty.window_ns, d1, sizeof(d1)), "base",
				dur_str(c->penalty.base_ns, d2, sizeof(d2)), "max",
				dur_str(c->penalty.max_ns, d3, sizeof(d3)), "floor4",
				c->penalty.floor4, "floor6", c->penalty.floor6);
	return json_pack("{s:o,s:o,s:o,s:s?,s:s,s:o}", "interfaces", ifs, "xdp",
			 c->has_xdp ? xdp_json(c) : json_null(), "penalty", pen, "metrics",
			 c->metrics[0] ? c->metrics : NULL, "on_exit",
			 c->on_exit_detach ? "detach" : "keep", "http",
			 c->has_http ? xrl_http_cfg_json(&c->http) : json_null());
}

int xrl_config_check(const char *path, struct xrld_config **cfg, char **summary, char *err,
		     size_t errlen)
{
	struct xrld_config *c = calloc(1, sizeof(*c));
	char *sum = malloc(XRL_SUMMARY_MAX);
	int rc = -ENOMEM;

	if (!c || !sum)
		snprintf(err, errlen, "couldn't check %s: %s", path, strerror(ENOMEM));
	else if (!(rc = xrl_config_load(path, c, err, errlen)))
		xrl_config_summary(c, sum, XRL_SUMMARY_MAX);
	if (rc) {
		free(c);
		free(sum);
		return rc;
	}
	*cfg = c;
	*summary = sum;
	return 0;
}

const char *xrl_rate_str(const struct xrl_rate *r, char *buf, size_t len)
{
	return rate_str(r, buf, len);
}
