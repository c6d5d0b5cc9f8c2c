// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * policy.c - prefixes, rates, durations and rules: from the words an
 * operator writes to the ABI form the program reads. Pure functions, no
 * root, unit-tested in tests/unit/test_policy.c.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xrl.h"

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

void xrl_prefix_mask(__u8 family, __u8 plen, __u32 mask[4])
{
	int words = family == XRL_AF_INET ? 1 : 4;

	for (int i = 0; i < 4; i++) {
		int bits = (int)plen - 32 * i;

		if (i >= words || bits <= 0)
			mask[i] = 0;
		else if (bits >= 32)
			mask[i] = 0xffffffffu;
		else
			mask[i] = htonl(0xffffffffu << (32 - bits));
	}
}

int xrl_prefix_parse(const char *s, struct xrl_prefix *out, char *err, size_t errlen)
{
	char buf[INET6_ADDRSTRLEN + 8], *slash, *end;
	struct xrl_prefix p = {};
	__u32 mask[4];
	long plen;
	int maxlen;

	if (!s || !*s)
		return fail(err, errlen, -EINVAL, "empty address prefix");
	if (strlen(s) >= sizeof(buf))
		return fail(err, errlen, -EINVAL, "'%s' is too long for an address prefix", s);
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';

	if (inet_pton(AF_INET, buf, &p.addr[0]) == 1) {
		p.family = XRL_AF_INET;
		maxlen = 32;
	} else if (inet_pton(AF_INET6, buf, p.addr) == 1) {
		p.family = XRL_AF_INET6;
		maxlen = 128;
	} else {
		return fail(err, errlen, -EINVAL,
			    "'%s' is not an IPv4 or IPv6 address prefix (want e.g. 10.0.0.0/8 or 2001:db8::/48)",
			    s);
	}

	plen = maxlen;
	if (slash) {
		errno = 0;
		plen = strtol(slash + 1, &end, 10);
		if (!isdigit((unsigned char)slash[1]) || *end || errno || plen < 0 || plen > maxlen)
			return fail(err, errlen, -EINVAL, "'%s': prefix length must be 0..%d", s,
				    maxlen);
	}
	p.plen = (__u8)plen;
	xrl_prefix_mask(p.family, p.plen, mask);
	for (int i = 0; i < 4; i++) {
		if (p.addr[i] & ~mask[i])
			return fail(err, errlen, -EINVAL,
				    "'%s' has host bits set beyond /%ld; did you mean the network address?",
				    s, plen);
	}
	*out = p;
	return 0;
}

const char *xrl_prefix_str(const struct xrl_prefix *p, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (!inet_ntop(p->family == XRL_AF_INET ? AF_INET : AF_INET6, p->addr, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	snprintf(buf, len, "%s/%u", a, p->plen);
	return buf;
}

/* A unit word to ns; 0 if unknown. */
static __u64 unit_ns(const char *u)
{
	static const struct {
		const char *name;
		__u64 ns;
	} units[] = {
		{ "ns", 1ULL },
		{ "us", 1000ULL },
		{ "ms", 1000000ULL },
		{ "s", XRL_NSEC_PER_SEC },
		{ "sec", XRL_NSEC_PER_SEC },
		{ "second", XRL_NSEC_PER_SEC },
		{ "m", 60 * XRL_NSEC_PER_SEC },
		{ "min", 60 * XRL_NSEC_PER_SEC },
		{ "minute", 60 * XRL_NSEC_PER_SEC },
		{ "h", 3600 * XRL_NSEC_PER_SEC },
		{ "hour", 3600 * XRL_NSEC_PER_SEC },
		{ "d", 86400 * XRL_NSEC_PER_SEC },
		{ "day", 86400 * XRL_NSEC_PER_SEC },
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(u, units[i].name))
			return units[i].ns;
	return 0;
}

/*
 * A decimal number "12", "2.5", "0.125" as mantissa / 10^scale, at most
 * six decimals. Returns the number of characters read, 0 on error.
 */
static size_t parse_decimal(const char *s, __u64 *mant, __u64 *scale)
{
	const char *p = s;
	__u64 m = 0, sc = 1;
	int digits = 0, frac = -1;

	for (; *p; p++) {
		if (*p == '.' && frac < 0) {
			frac = 0;
			continue;
		}
		if (!isdigit((unsigned char)*p))
			break;
		if (m > (UINT64_MAX - 9) / 10)
			return 0;
		m = m * 10 + (__u64)(*p - '0');
		digits++;
		if (frac >= 0) {
			if (++frac > 6)
				return 0;
			sc *= 10;
		}
	}
	if (!digits)
		return 0;
	*mant = m;
	*scale = sc;
	return (size_t)(p - s);
}

int xrl_duration_parse(const char *s, __u64 *ns, char *err, size_t errlen)
{
	__u64 m, sc, u;
	size_t n;

	if (!s || !*s)
		return fail(err, errlen, -EINVAL, "empty duration");
	n = parse_decimal(s, &m, &sc);
	if (!n)
		return fail(err, errlen, -EINVAL,
			    "'%s' is not a duration (want e.g. 2s, 500ms, 10m, 1h, 1d)", s);
	u = unit_ns(s + n);
	if (!u)
		return fail(err, errlen, -EINVAL, "'%s': unknown or missing unit (ms, s, m, h, d)",
			    s);
	if (m && u > UINT64_MAX / m)
		return fail(err, errlen, -ERANGE, "'%s' is too long", s);
	*ns = m * u / sc;
	return 0;
}

int xrl_rate_parse(const char *s, struct xrl_rate *out, char *err, size_t errlen)
{
	__u64 m, sc, pm = 1, psc = 1, u;
	const char *slash, *unit;
	size_t n;

	if (!s || !*s)
		return fail(err, errlen, -EINVAL, "empty rate");
	slash = strchr(s, '/');
	if (!slash)
		return fail(err, errlen, -EINVAL,
			    "'%s' is not a rate (want COUNT/PERIOD: 100/s, 10/min, 1/6s, 20/h)", s);
	n = parse_decimal(s, &m, &sc);
	if (!n || s + n != slash)
		return fail(err, errlen, -EINVAL, "'%s': the count before '/' must be a number", s);
	if (!m)
		return fail(err, errlen, -EINVAL,
			    "'%s': a rate of zero refuses everything; use a deny entry instead", s);
	unit = slash + 1;
	if (isdigit((unsigned char)*unit) || *unit == '.') {
		n = parse_decimal(unit, &pm, &psc);
		if (!n)
			return fail(err, errlen, -EINVAL, "'%s': bad period", s);
		unit += n;
		if (!pm)
			return fail(err, errlen, -EINVAL, "'%s': the period must not be zero", s);
	}
	u = unit_ns(unit);
	if (!u)
		return fail(err, errlen, -EINVAL,
			    "'%s': unknown period unit '%s' (ms, s, min, h, d)", s, unit);
	/* m/sc tokens per pm/psc units: tokens = m*psc, period = pm*u*sc */
	if (pm > UINT64_MAX / u || pm * u > UINT64_MAX / sc || m > UINT64_MAX / psc)
		return fail(err, errlen, -ERANGE, "'%s' is out of range", s);
	out->tokens = m * psc;
	out->period_ns = pm * u * sc;
	return 0;
}

void xrl_rule_spec_init(struct xrl_rule_spec *r, const char *name)
{
	memset(r, 0, sizeof(*r));
	if (name)
		snprintf(r->name, sizeof(r->name), "%s", name);
	r->proto = XRL_PROTO_ANY;
	r->tcp_class = XRL_TCP_ANY;
	r->action = XRL_ACT_DROP;
	r->key_plen4 = 32;
	r->key_plen6 = 64;
	r->auto_on_rate = XRL_AUTO_ON_RATE;
	r->auto_off_rate = XRL_AUTO_OFF_RATE;
	r->auto_hold_ns = XRL_AUTO_HOLD_NS;
	r->auto_min_on_ns = XRL_AUTO_MIN_ON_NS;
	r->auto_queue_pct = XRL_AUTO_QUEUE_PCT;
}

__u32 xrl_rule_id(const char *name)
{
	__u32 h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		h ^= *p;
		h *= 16777619u;
	}
	return h ? h : 1;
}

/*
 * The aggregate cap's two shares (bpf/xrl_vouch.h): of rate R and burst B
 * with a share s reserved for vouched sources, the reserved bucket gets
 * R x s and max(1, B x s) tokens, the open one the rest of both; together
 * never more than R and B.
 */
static int agg_compile(const struct xrl_rule_spec *in, struct xrl_rule *out, const char *nm,
		       char *err, size_t errlen)
{
	__u64 pm = in->agg_vouched_pm, tokens = in->agg_rate.tokens;
	__u64 period = in->agg_rate.period_ns;
	struct xrl_gcra_params g;
	__u32 vb, ob;

	if (!tokens)
		return 0;
	if (pm > XRL_AGG_VOUCHED_MAX_PM)
		return fail(err, errlen, -EINVAL,
			    "rule %s: aggregate vouched_share must be 0 to 0.9 (the rest is how "
			    "new sources get in)",
			    nm);
	vb = pm ? (__u32)(in->agg_burst * pm / 1000) : 0;
	vb = pm && !vb ? 1 : vb;
	ob = in->agg_burst > vb ? in->agg_burst - vb : 0;
	if (!ob)
		return fail(err, errlen, -EINVAL,
			    "rule %s: aggregate burst must be at least 2 with a vouched share", nm);
	/* per mille: the rates are tokens x (1000 - pm) per 1000 periods */
	if (xrl_gcra_init(tokens * (1000 - pm), period * 1000, ob, &g))
		return fail(err, errlen, -ERANGE,
			    "rule %s: aggregate rate and burst out of range (as for rate)", nm);
	out->agg_emit_ns = g.emit_ns;
	out->agg_tau_ns = g.tau_ns;
	if (!pm)
		return 0;
	if (xrl_gcra_init(tokens * pm, period * 1000, vb, &g))
		return fail(err, errlen, -ERANGE,
			    "rule %s: aggregate rate x vouched_share out of range", nm);
	out->agg_vemit_ns = g.emit_ns;
	out->agg_vtau_ns = g.tau_ns;
	return 0;
}

int xrl_rule_auto_check(const struct xrl_rule_spec *r, char *text, size_t len)
{
	if (r->auto_off_rate >= r->auto_on_rate) {
		snprintf(text, len, "off_rate (%llu/s) must be below on_rate (%llu/s)",
			 (unsigned long long)r->auto_off_rate, (unsigned long long)r->auto_on_rate);
		return XRL_CK_RATES;
	}
	if (!r->auto_hold_ns || r->auto_queue_pct > 100) {
		snprintf(text, len, "syn_cookies_auto needs a hold above zero and queue_pct 0 to 100");
		return XRL_CK_AUTO;
	}
	return 0;
}

int xrl_rule_cookies_check(const struct xrl_rule_spec *r, char *text, size_t len)
{
	if (r->syn_cookies && r->proto != XRL_PROTO_TCP) {
		snprintf(text, len, "SYN cookies need match.proto: tcp");
		return XRL_CK_PROTO;
	}
	return 0;
}

static unsigned long rule_compiles;

unsigned long xrl_rule_compile_count(void)
{
	return __atomic_load_n(&rule_compiles, __ATOMIC_RELAXED);
}

int xrl_rule_compile(const struct xrl_rule_spec *in, struct xrl_rule *out, char *err, size_t errlen)
{
	struct xrl_gcra_params g;
	const char *nm = in->name[0] ? in->name : "(unnamed)";
	char text[96];
	int rc;

	__atomic_fetch_add(&rule_compiles, 1, __ATOMIC_RELAXED);
	memset(out, 0, sizeof(*out));
	if (!in->name[0])
		return fail(err, errlen, -EINVAL, "a rule needs a name");
	if (strnlen(in->name, XRL_RULE_NAME_LEN) == XRL_RULE_NAME_LEN)
		return fail(err, errlen, -EINVAL, "rule names are at most %d characters",
			    XRL_RULE_NAME_LEN - 1);
	if (in->proto != XRL_PROTO_ANY && in->proto != XRL_PROTO_TCP && in->proto != XRL_PROTO_UDP)
		return fail(err, errlen, -EINVAL, "rule %s: proto must be tcp, udp or any", nm);
	if (in->tcp_class > XRL_TCP_SYN)
		return fail(err, errlen, -EINVAL, "rule %s: tcp_flags must be syn or any", nm);
	if (in->tcp_class == XRL_TCP_SYN && in->proto == XRL_PROTO_UDP)
		return fail(err, errlen, -EINVAL, "rule %s: tcp_flags syn cannot match proto udp",
			    nm);
	if (in->action > XRL_ACT_SHADOW)
		return fail(err, errlen, -EINVAL, "rule %s: action must be drop or shadow", nm);
	if (in->syn_cookies > XRL_COOKIES_AUTO_ON)
		return fail(err, errlen, -EINVAL, "rule %s: syn_cookies must be on, auto or off",
			    nm);
	/* The checks are the parser's; the words are this API's (no YAML path). */
	if (in->syn_cookies >= XRL_COOKIES_AUTO && xrl_rule_auto_check(in, text, sizeof(text)))
		return fail(err, errlen, -EINVAL,
			    "rule %s: syn_cookies_auto needs off_rate below on_rate, a hold above "
			    "zero and queue_pct 0 to 100",
			    nm);
	if (xrl_rule_cookies_check(in, text, sizeof(text)))
		return fail(err, errlen, -EINVAL, "rule %s: SYN cookies need proto tcp", nm);
	if (in->n_ports > XRL_MAX_PORT_RANGES)
		return fail(err, errlen, -EINVAL, "rule %s: at most %d port ranges", nm,
			    XRL_MAX_PORT_RANGES);
	for (int i = 0; i < in->n_ports; i++)
		if (in->ports[i].lo > in->ports[i].hi)
			return fail(err, errlen, -EINVAL, "rule %s: port range %u-%u is backwards",
				    nm, in->ports[i].lo, in->ports[i].hi);
	if (in->key_plen4 > 32 || in->key_plen6 > 128)
		return fail(err, errlen, -EINVAL,
			    "rule %s: key prefix must be 0..32 (IPv4) and 0..128 (IPv6)", nm);
	if (in->has_dst && in->dst.family != XRL_AF_INET && in->dst.family != XRL_AF_INET6)
		return fail(err, errlen, -EINVAL, "rule %s: bad destination family", nm);
	if (in->has_dst && in->dst.plen > (in->dst.family == XRL_AF_INET ? 32 : 128))
		return fail(err, errlen, -EINVAL,
			    "rule %s: destination prefix /%u is longer than the address", nm,
			    in->dst.plen);

	rc = xrl_gcra_init(in->rate.tokens, in->rate.period_ns, in->burst, &g);
	if (rc == -EINVAL)
		return fail(err, errlen, rc, "rule %s: rate and burst must both be above zero", nm);
	if (rc)
		return fail(err, errlen, rc,
			    "rule %s: rate must be between 1 per 52 days and 1e9/s, and burst x (1/rate) at most 146 years",
			    nm);

	out->emit_ns = g.emit_ns;
	out->tau_ns = g.tau_ns;
	out->id = in->id ? in->id : xrl_rule_id(in->name);
	out->proto = in->proto;
	out->tcp_class = in->tcp_class;
	out->action = in->action;
	out->syn_cookies = in->syn_cookies;
	out->n_ports = in->n_ports;
	memcpy(out->ports, in->ports, sizeof(out->ports));
	out->key_plen4 = in->key_plen4;
	out->key_plen6 = in->key_plen6;
	xrl_prefix_mask(XRL_AF_INET, in->key_plen4, out->key_mask6);
	out->key_mask4 = out->key_mask6[0];
	xrl_prefix_mask(XRL_AF_INET6, in->key_plen6, out->key_mask6);
	if (in->has_dst) {
		out->dst_family = in->dst.family;
		out->dst_plen = in->dst.plen;
		xrl_prefix_mask(in->dst.family, in->dst.plen, out->dst_mask);
		for (int i = 0; i < 4; i++)
			out->dst[i] = in->dst.addr[i] & out->dst_mask[i];
	}
	return agg_compile(in, out, nm, err, errlen);
}

/*
 * First index of a rule by id and by name among the rules entered so far:
 * open addressing over twice XRL_MAX_RULES slots, each slot a rule index + 1
 * (0: empty). A policy's checks are O(n), not a compare of every pair.
 */
#define IDX_SLOTS (2 * XRL_MAX_RULES)
struct rule_index {
	__u8 by_id[IDX_SLOTS];
	__u8 by_name[IDX_SLOTS];
};

/* Where key k is, or the empty slot it would take; same(j) tells a match. */
static unsigned idx_find(const __u8 *slots, __u32 k, const struct xrl_policy *p, const void *want,
			 bool (*same)(const struct xrl_policy *, __u32, const void *))
{
	unsigned s = (k * 2654435761u) % IDX_SLOTS;

	while (slots[s] && !same(p, slots[s] - 1u, want))
		s = (s + 1) % IDX_SLOTS;
	return s;
}

static bool same_id(const struct xrl_policy *p, __u32 j, const void *want)
{
	return p->compiled[j].id == *(const __u32 *)want;
}

static bool same_name(const struct xrl_policy *p, __u32 j, const void *want)
{
	return !strcmp(p->rules[j].name, want);
}

/*
 * Rule i against the rules before it. Of the earlier rules, the first with
 * i's name or i's id is named, as a walk over each pair in order would.
 */
static int check_unique(struct xrl_policy *p, struct rule_index *ix, __u32 i, char *err,
			size_t errlen)
{
	const char *nm = p->rules[i].name;
	__u32 id = p->compiled[i].id;
	unsigned sn = idx_find(ix->by_name, xrl_rule_id(nm), p, nm, same_name);
	unsigned si = idx_find(ix->by_id, id, p, &id, same_id);

	if (ix->by_name[sn] && (!ix->by_id[si] || ix->by_name[sn] <= ix->by_id[si]))
		return fail(err, errlen, -EINVAL, "rule name '%s' is used twice", nm);
	if (ix->by_id[si])
		return fail(err, errlen, -EINVAL, "rules '%s' and '%s' have the same id %u",
			    p->rules[ix->by_id[si] - 1].name, nm, id);
	ix->by_name[sn] = (__u8)(i + 1);
	ix->by_id[si] = (__u8)(i + 1);
	return 0;
}

int xrl_policy_compile(struct xrl_policy *p, char *err, size_t errlen)
{
	struct rule_index ix = { 0 };
	int rc;

	if (p->n_rules > XRL_MAX_RULES)
		return fail(err, errlen, -E2BIG, "%u rules; at most %d", p->n_rules, XRL_MAX_RULES);
	if (p->n_allow > XRL_POLICY_MAX_ALLOW)
		return fail(err, errlen, -E2BIG, "%u allowlist entries; at most %d", p->n_allow,
			    XRL_POLICY_MAX_ALLOW);
	if (p->n_compiled > p->n_rules)
		p->n_compiled = p->n_rules;
	for (__u32 i = 0; i < p->n_rules; i++) {
		if (i >= p->n_compiled) {
			rc = xrl_rule_compile(&p->rules[i], &p->compiled[i], err, errlen);
			if (rc)
				return rc;
			p->n_compiled = i + 1;
		}
		rc = check_unique(p, &ix, i, err, errlen);
		if (rc)
			return rc;
	}
	for (__u32 i = 0; i < p->n_allow; i++) {
		if (p->allow[i].family != XRL_AF_INET && p->allow[i].family != XRL_AF_INET6)
			return fail(err, errlen, -EINVAL,
				    "allowlist entry %u has no address family", i);
	}
	return 0;
}

void xrl_policy_set_action(struct xrl_policy *p, __u32 i, __u8 action)
{
	p->rules[i].action = action;
	if (i < p->n_compiled)
		p->compiled[i].action = action;
}

const char *xrl_global_name(int idx)
{
	static const char *names[XRL_G_MAX] = {
		[XRL_G_SEEN] = "seen",
		[XRL_G_NON_IP] = "non_ip",
		[XRL_G_MALFORMED] = "malformed",
		[XRL_G_FRAGMENTS] = "fragments",
		[XRL_G_ALLOWLISTED] = "allowlisted",
		[XRL_G_DENYLISTED] = "denylisted",
		[XRL_G_DENY_EXPIRED] = "deny_expired",
		[XRL_G_NO_RULE] = "no_rule",
		[XRL_G_BUCKET_NEW] = "bucket_new",
		[XRL_G_BUCKET_INSERT_FAIL] = "bucket_insert_fail",
		[XRL_G_CAS_RETRY] = "cas_retry",
		[XRL_G_CAS_GIVEUP] = "cas_giveup",
		[XRL_G_REFUSED_CACHED] = "refused_cached",
		[XRL_G_EVENTS_SENT] = "events_sent",
		[XRL_G_EVENTS_LOST] = "events_lost",
		[XRL_G_NO_POLICY] = "no_policy",
		[XRL_G_TINY_FRAGMENT] = "tiny_fragment",
		[XRL_G_LEASED] = "leased",
		[XRL_G_UNWALKABLE_DROPPED] = "unwalkable_dropped",
		[XRL_G_UNWALKABLE_PASSED] = "unwalkable_passed",
		[XRL_G_COOKIES_SENT] = "cookies_sent",
		[XRL_G_COOKIES_VALID] = "cookies_valid",
		[XRL_G_COOKIES_BAD] = "cookies_bad",
		[XRL_G_COOKIE_PRIMERS] = "cookie_primers",
		[XRL_G_COOKIE_FALLBACK] = "cookie_fallback",
		[XRL_G_AGG_REFUSED] = "aggregate_refused",
		[XRL_G_VOUCHED_ADMITS] = "vouched_admits",
		[XRL_G_COOKIE_REQSK] = "cookie_reqsk",
		[XRL_G_COOKIE_REQSK_FAIL] = "cookie_reqsk_fail",
		[XRL_G_COOKIE_NO_META] = "cookie_no_meta",
	};

	if (idx < 0 || idx >= XRL_G_MAX || !names[idx])
		return "unknown";
	return names[idx];
}

/* The one table of verdict names (counters, metrics, JSON keys). */
const char *xrl_cookies_name(int mode)
{
	static const char *const names[] = {
		[XRL_COOKIES_OFF] = "off",
		[XRL_COOKIES_ON] = "on",
		[XRL_COOKIES_AUTO] = "auto",
		[XRL_COOKIES_AUTO_ON] = "auto",
	};

	return mode >= 0 && mode <= XRL_COOKIES_AUTO_ON ? names[mode] : "unknown";
}

const char *xrl_verdict_name(int v)
{
	static const char *const names[XRL_V_MAX] = {
		[XRL_V_PASSED] = "passed",
		[XRL_V_DROPPED] = "dropped",
		[XRL_V_SHADOW_DROPPED] = "shadow_dropped",
	};

	return v >= 0 && v < XRL_V_MAX ? names[v] : "unknown";
}
