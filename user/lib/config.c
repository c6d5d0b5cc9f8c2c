// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * config.c - xrld's policy file: YAML (libyaml's document API) into
 * struct xrld_config.
 *
 * Bounds (size, depth, nodes, anchors, aliases) are checked on the events
 * first, because libyaml is not linear in them. The file is then loaded into
 * a node tree, so a syntax error anywhere is reported before any meaning is
 * looked at, and every node keeps its position: each error names FILE:LINE:COL (1-based), the path of the value
 * (xdp.rules[1].rate, 0-based indices) and what was expected. The result is
 * built in a heap copy and copied to the caller's struct only when the whole
 * file is good, so a bad reload never leaves a half-written config behind.
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

#define CFG_FILE_MAX (1 << 20) /* a policy larger than 1 MiB is a mistake */
#define PATHLEN	     96
#define DETAIL	     160

/* Parse state: the file name for messages, the tree, the result. */
struct cx {
	const char *name;
	yaml_document_t *doc;
	char *err;
	size_t errlen;
	struct xrld_config *c;
	int rule_line[XRL_MAX_RULES]; /* where each rule's name was given */
	int iface_line[XRL_CFG_MAX_IFACES];
};

static int at(struct cx *x, const yaml_node_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* "FILE:LINE:COL: <message>" at node n; returns -EINVAL. */
static int at(struct cx *x, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;
	int off;

	if (!x->err || !x->errlen)
		return -EINVAL;
	off = snprintf(x->err, x->errlen, "%s:%zu:%zu: ", x->name, n->start_mark.line + 1,
		       n->start_mark.column + 1);
	if (off < 0 || (size_t)off >= x->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(x->err + off, x->errlen - (size_t)off, fmt, ap);
	va_end(ap);
	/* one line, whatever the values quoted in it held */
	for (char *p = x->err; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return -EINVAL;
}

static const char *sval(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/* A plain scalar that YAML reads as null: `key:`, `key: ~`, `key: null`. */
static bool is_null(const yaml_node_t *n)
{
	const char *v;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	v = sval(n);
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	       !strcmp(v, "NULL");
}

/* How a node looks, for "got ...": 'text', nothing, a mapping, a list. */
static const char *desc(const yaml_node_t *n, char *buf, size_t len)
{
	const char *v;
	size_t l;

	switch (n->type) {
	case YAML_MAPPING_NODE:
		return "a mapping";
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_SCALAR_NODE:
		if (is_null(n))
			return "nothing";
		v = sval(n);
		l = strlen(v);
		if (l > 40) {
			/* cut at a character boundary, not inside a UTF-8 sequence */
			l = 37;
			while (l && ((unsigned char)v[l] & 0xc0) == 0x80)
				l--;
			snprintf(buf, len, "'%.*s...'", (int)l, v);
		} else {
			snprintf(buf, len, "'%s'", v);
		}
		return buf;
	default:
		return "an empty node";
	}
}

/*
 * The part of a policy.c message worth appending after "got 'V'": those
 * messages start by quoting the value, which the caller has already shown.
 * Returns "" when the message only repeats "'V' is not a ...".
 */
static const char *detail(const char *msg, const char *v, char *buf, size_t len)
{
	size_t vl = strlen(v);

	if (msg[0] == '\'' && !strncmp(msg + 1, v, vl) && msg[vl + 1] == '\'') {
		const char *rest = msg + vl + 2;

		if (!strncmp(rest, " is not a", 9))
			return "";
		if (*rest == ':')
			rest++;
		while (*rest == ' ')
			rest++;
		snprintf(buf, len, ": %s", rest);
		return buf;
	}
	snprintf(buf, len, ": %s", msg);
	return buf;
}

/* out = base + printf(fmt, ...): "xdp.rules[0]" + ".rate" (PATHLEN bytes). */
static void subpath(char *out, const char *base, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void subpath(char *out, const char *base, const char *fmt, ...)
{
	size_t l = strnlen(base, PATHLEN - 1);
	va_list ap;

	memmove(out, base, l);
	va_start(ap, fmt);
	vsnprintf(out + l, PATHLEN - l, fmt, ap);
	va_end(ap);
}

/* ---- typed values ------------------------------------------------------ */

/* A scalar that is not null and has no NUL inside; else an error. */
static int scalar(struct cx *x, const yaml_node_t *n, const char *path, const char *what,
		  const char **out)
{
	char d[64];

	if (n->type != YAML_SCALAR_NODE || is_null(n))
		return at(x, n, "%s: expected %s, got %s", path, what, desc(n, d, sizeof(d)));
	if (strlen(sval(n)) != n->data.scalar.length)
		return at(x, n, "%s: expected %s, got a value with a NUL character in it", path,
			  what);
	*out = sval(n);
	return 0;
}

/* A decimal whole number in [min, max]; digits only. */
static int uint_val(struct cx *x, const yaml_node_t *n, const char *path, const char *what,
		    __u64 min, __u64 max, __u64 *out)
{
	const char *s;
	__u64 v = 0;
	char d[64];
	int rc;

	rc = scalar(x, n, path, what, &s);
	if (rc)
		return rc;
	if (!*s)
		goto bad;
	for (const char *p = s; *p; p++) {
		if (!isdigit((unsigned char)*p) || v > (UINT64_MAX - 9) / 10)
			goto bad;
		v = v * 10 + (__u64)(*p - '0');
	}
	if (v < min || v > max)
		goto bad;
	*out = v;
	return 0;
bad:
	return at(x, n, "%s: expected %s, got %s", path, what, desc(n, d, sizeof(d)));
}

/* One of a few words. */
static int enum_val(struct cx *x, const yaml_node_t *n, const char *path, const char *const *words,
		    const int *vals, size_t nw, int *out)
{
	char what[128] = "one of ", d[64];
	const char *s = NULL;
	size_t off = strlen(what);
	int rc;

	for (size_t i = 0; i < nw; i++)
		off += (size_t)snprintf(what + off, sizeof(what) - off, "%s%s",
					i ? (i + 1 == nw ? " or " : ", ") : "", words[i]);
	rc = scalar(x, n, path, what, &s);
	if (rc)
		return rc;
	for (size_t i = 0; i < nw; i++) {
		if (!strcmp(s, words[i])) {
			*out = vals[i];
			return 0;
		}
	}
	return at(x, n, "%s: expected %s, got %s", path, what, desc(n, d, sizeof(d)));
}

#define ENUM(x, n, path, words, vals, out) \
	enum_val(x, n, path, words, vals, sizeof(words) / sizeof(words[0]), out)

/* An optional field of a mapping: path + sub names it; *out stays when n is NULL. */
static int opt_enum_val(struct cx *x, yaml_node_t *n, const char *path, const char *sub,
			const char *const *words, const int *vals, size_t nw, int *out)
{
	char p2[PATHLEN];

	if (!n)
		return 0;
	subpath(p2, path, "%s", sub);
	return enum_val(x, n, p2, words, vals, nw, out);
}

#define OPT_ENUM(x, n, path, sub, words, vals, out) \
	opt_enum_val(x, n, path, sub, words, vals, sizeof(words) / sizeof(words[0]), out)

/* A duration above zero: "60s", "500ms", "1h". */
static int dur_val(struct cx *x, const yaml_node_t *n, const char *path, __u64 *out)
{
	static const char what[] = "a duration such as 500ms, 60s, 10m or 1h";
	char msg[XRL_ERRLEN], dt[DETAIL], d[64];
	const char *s;
	__u64 ns;
	int rc;

	rc = scalar(x, n, path, what, &s);
	if (rc)
		return rc;
	if (xrl_duration_parse(s, &ns, msg, sizeof(msg)))
		return at(x, n, "%s: expected %s, got %s%s", path, what, desc(n, d, sizeof(d)),
			  detail(msg, s, dt, sizeof(dt)));
	if (!ns)
		return at(x, n, "%s: expected %s, got %s: it must be above zero", path, what,
			  desc(n, d, sizeof(d)));
	*out = ns;
	return 0;
}

/*
 * A scalar turned into a value by one of the library's parsers, whose own
 * message is appended as detail: prefixes, rates.
 */
typedef int (*parse_fn)(const char *s, void *out, char *err, size_t errlen);

static int parsed_val(struct cx *x, const yaml_node_t *n, const char *path, const char *what,
		      parse_fn parse, void *out)
{
	char msg[XRL_ERRLEN], dt[DETAIL], d[64];
	const char *s;
	int rc;

	rc = scalar(x, n, path, what, &s);
	if (rc)
		return rc;
	if (parse(s, out, msg, sizeof(msg)))
		return at(x, n, "%s: expected %s, got %s%s", path, what, desc(n, d, sizeof(d)),
			  detail(msg, s, dt, sizeof(dt)));
	return 0;
}

static int parse_prefix(const char *s, void *out, char *err, size_t errlen)
{
	return xrl_prefix_parse(s, out, err, errlen);
}

static int parse_rate(const char *s, void *out, char *err, size_t errlen)
{
	return xrl_rate_parse(s, out, err, errlen);
}

/* An address prefix: "10.0.0.0/8", "2001:db8::/48", "192.0.2.1". */
static int prefix_val(struct cx *x, const yaml_node_t *n, const char *path, struct xrl_prefix *out)
{
	return parsed_val(x, n, path, "an address prefix such as 10.0.0.0/8 or 2001:db8::/48",
			  parse_prefix, out);
}

/* A rate: "100/s", "10/min", "1/6s". */
static int rate_val(struct cx *x, const yaml_node_t *n, const char *path, struct xrl_rate *r)
{
	return parsed_val(x, n, path, "COUNT/PERIOD such as 100/s, 10/min or 1/6s", parse_rate, r);
}

/* ---- mappings ---------------------------------------------------------- */

/* A key a mapping may have; filled with the key and value nodes if present. */
struct field {
	const char *key;
	yaml_node_t *k, *v;
};

/* Edit distance, for "did you mean" (short words only). */
static size_t edits(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[32], cur[32];

	if (la >= 31 || lb >= 31)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;

			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, sizeof(prev));
	}
	return prev[lb];
}

/*
 * Check that n is a mapping (or null, read as an empty one) whose keys are
 * scalars among f[], each given once, and fill f[].
 * `what` names the mapping in messages: "rule", "match", "penalty";
 * path is NULL for the top level.
 */
static int mapping(struct cx *x, yaml_node_t *n, const char *path, const char *what,
		   struct field *f, size_t nf)
{
	const char *sep = path ? ": " : "";
	char d[64], list[512];
	size_t off = 0;

	if (!path)
		path = "";

	for (size_t i = 0; i < nf; i++)
		f[i].k = f[i].v = NULL;
	if (is_null(n))
		return 0;
	list[0] = '\0';
	for (size_t i = 0; i < nf; i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", i ? ", " : "",
					f[i].key);
	if (n->type != YAML_MAPPING_NODE) {
		/* a long list is cut: the message must fit XRL_ERRLEN with its position */
		if (off > 120) {
			char *cut = list + 112;

			while (cut > list && strncmp(cut, ", ", 2))
				cut--;
			snprintf(cut, sizeof(list) - (size_t)(cut - list), ", ...");
		}
		return at(x, n, "%s%sexpected a mapping (%s), got %s", path, sep, list,
			  desc(n, d, sizeof(d)));
	}

	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(x->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(x->doc, p->value);
		const char *best = NULL;
		size_t i, bestd = 3;

		if (k->type != YAML_SCALAR_NODE)
			return at(x, k, "%s%sexpected a key (%s), got %s", path, sep, list,
				  desc(k, d, sizeof(d)));
		for (i = 0; i < nf; i++)
			if (!strcmp(sval(k), f[i].key))
				break;
		if (i < nf) {
			if (f[i].k)
				return at(x, k, "%s%skey '%s' is given twice (first at line %zu)",
					  path, sep, f[i].key, f[i].k->start_mark.line + 1);
			f[i].k = k;
			f[i].v = v;
			continue;
		}
		for (size_t j = 0; j < nf; j++) {
			size_t e = edits(sval(k), f[j].key);

			if (e < bestd) {
				bestd = e;
				best = f[j].key;
			}
		}
		if (best && strlen(sval(k)) > 2)
			return at(x, k,
				  "%s%sunknown key %s in %s; expected one of %s (did you mean '%s'?)",
				  path, sep, desc(k, d, sizeof(d)), what, list, best);
		return at(x, k, "%s%sunknown key %s in %s; expected one of %s", path, sep,
			  desc(k, d, sizeof(d)), what, list);
	}
	return 0;
}

/* A list (or null, read as empty); items through *items, count through *n. */
static int sequence(struct cx *x, yaml_node_t *n, const char *path, const char *what,
		    yaml_node_item_t **items, size_t *count)
{
	char d[64];

	*items = NULL;
	*count = 0;
	if (is_null(n))
		return 0;
	if (n->type != YAML_SEQUENCE_NODE)
		return at(x, n, "%s: expected a list of %s, got %s", path, what,
			  desc(n, d, sizeof(d)));
	*items = n->data.sequence.items.start;
	*count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	return 0;
}

static yaml_node_t *item(struct cx *x, yaml_node_item_t *items, size_t i)
{
	return yaml_document_get_node(x->doc, items[i]);
}

/* ---- sections ---------------------------------------------------------- */

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

static int parse_ifaces(struct cx *x, yaml_node_t *n)
{
	static const char *const modes[] = { "native", "skb", "auto" };
	static const int mvals[] = { XRL_MODE_NATIVE, XRL_MODE_SKB, XRL_MODE_AUTO };
	yaml_node_item_t *items;
	size_t count;
	int rc;

	rc = sequence(x, n, "interfaces", "interfaces (- name: eth0)", &items, &count);
	if (rc)
		return rc;
	for (size_t i = 0; i < count; i++) {
		enum { F_NAME, F_MODE, F_COUNT };
		struct field f[F_COUNT] = {
			[F_NAME] = { .key = "name" },
			[F_MODE] = { .key = "mode" },
		};
		yaml_node_t *it = item(x, items, i);
		struct xrl_iface_cfg *ic;
		char path[PATHLEN], p2[PATHLEN];
		const char *s;
		int mode;

		snprintf(path, sizeof(path), "interfaces[%zu]", i);
		if (i >= XRL_CFG_MAX_IFACES)
			return at(x, it, "%s: at most %d interfaces", path, XRL_CFG_MAX_IFACES);
		rc = mapping(x, it, path, "interface", f, F_COUNT);
		if (rc)
			return rc;
		if (!f[F_NAME].v)
			return at(x, it,
				  "%s: missing 'name' (the interface to attach to, e.g. eth0)",
				  path);
		subpath(p2, path, ".name");
		rc = scalar(x, f[F_NAME].v, p2, "an interface name such as eth0", &s);
		if (rc)
			return rc;
		if (!ifname_ok(s)) {
			char d[64];

			return at(x, f[F_NAME].v,
				  "%s: expected an interface name of 1-%d characters without '/', ':' or spaces, got %s",
				  p2, IF_NAMESIZE - 1, desc(f[F_NAME].v, d, sizeof(d)));
		}
		for (size_t j = 0; j < i; j++)
			if (!strcmp(x->c->ifaces[j].name, s))
				return at(x, f[F_NAME].v,
					  "%s: interface '%s' is listed twice (first at line %d)",
					  p2, s, x->iface_line[j]);
		ic = &x->c->ifaces[i];
		snprintf(ic->name, sizeof(ic->name), "%s", s);
		x->iface_line[i] = (int)f[F_NAME].v->start_mark.line + 1;
		ic->mode = XRL_MODE_NATIVE;
		if (f[F_MODE].v) {
			subpath(p2, path, ".mode");
			rc = ENUM(x, f[F_MODE].v, p2, modes, mvals, &mode);
			if (rc)
				return rc;
			ic->mode = (enum xrl_attach_mode)mode;
		}
		x->c->n_ifaces = (__u32)i + 1;
	}
	return 0;
}

static int parse_allow(struct cx *x, yaml_node_t *n)
{
	struct xrl_policy *pol = &x->c->policy;
	yaml_node_item_t *items;
	size_t count;
	int rc;

	rc = sequence(x, n, "xdp.allow", "address prefixes", &items, &count);
	if (rc)
		return rc;
	for (size_t i = 0; i < count; i++) {
		yaml_node_t *it = item(x, items, i);
		struct xrl_prefix *p = &pol->allow[i];
		char path[PATHLEN], a[64];

		snprintf(path, sizeof(path), "xdp.allow[%zu]", i);
		if (i >= XRL_POLICY_MAX_ALLOW)
			return at(x, it, "%s: at most %d allowlist entries", path,
				  XRL_POLICY_MAX_ALLOW);
		rc = prefix_val(x, it, path, p);
		if (rc)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (!memcmp(&pol->allow[j], p, sizeof(*p)))
				return at(x, it, "%s: %s is listed twice (first as xdp.allow[%zu])",
					  path, xrl_prefix_str(p, a, sizeof(a)), j);
		pol->n_allow = (__u32)i + 1;
	}
	return 0;
}

/* "443" or "8000-8080". */
static int port_val(struct cx *x, const yaml_node_t *n, const char *path,
		    struct xrl_port_range *out)
{
	static const char what[] = "a port 1-65535 or a range such as 8000-8080";
	unsigned long v[2];
	const char *s, *p;
	char d[64], *end;
	int rc, k = 0;

	rc = scalar(x, n, path, what, &s);
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
		return at(x, n, "%s: expected %s, got %s: the range is backwards", path, what,
			  desc(n, d, sizeof(d)));
	out->lo = (__u16)v[0];
	out->hi = (__u16)v[1];
	return 0;
bad:
	return at(x, n, "%s: expected %s, got %s", path, what, desc(n, d, sizeof(d)));
}

static int parse_match(struct cx *x, yaml_node_t *n, const char *rpath, struct xrl_rule_spec *r)
{
	static const char *const protos[] = { "tcp", "udp", "any" };
	static const int pvals[] = { XRL_PROTO_TCP, XRL_PROTO_UDP, XRL_PROTO_ANY };
	static const char *const flags[] = { "syn", "any" };
	static const int fvals[] = { XRL_TCP_SYN, XRL_TCP_ANY };
	enum { F_PROTO, F_TCP_FLAGS, F_DST_PORTS, F_DST, F_COUNT };
	struct field f[F_COUNT] = {
		[F_PROTO] = { .key = "proto" },
		[F_TCP_FLAGS] = { .key = "tcp_flags" },
		[F_DST_PORTS] = { .key = "dst_ports" },
		[F_DST] = { .key = "dst" },
	};
	char path[PATHLEN], p2[PATHLEN];
	int rc, v;

	subpath(path, rpath, ".match");
	rc = mapping(x, n, path, "match", f, F_COUNT);
	if (rc)
		return rc;
	v = (int)r->proto;
	if ((rc = OPT_ENUM(x, f[F_PROTO].v, path, ".proto", protos, pvals, &v)))
		return rc;
	r->proto = (__u8)v;
	if (f[F_TCP_FLAGS].v) {
		subpath(p2, path, ".tcp_flags");
		rc = ENUM(x, f[F_TCP_FLAGS].v, p2, flags, fvals, &v);
		if (rc)
			return rc;
		r->tcp_class = (__u8)v;
		if (v == XRL_TCP_SYN && r->proto == XRL_PROTO_UDP)
			return at(x, f[F_TCP_FLAGS].v,
				  "%s: tcp_flags syn matches TCP only, but proto is udp", p2);
	}
	if (f[F_DST_PORTS].v) {
		yaml_node_item_t *items;
		size_t count;

		subpath(p2, path, ".dst_ports");
		rc = sequence(x, f[F_DST_PORTS].v, p2, "ports (443) or ranges (\"8000-8080\")",
			      &items, &count);
		if (rc)
			return rc;
		if (!count)
			return at(x, f[F_DST_PORTS].v,
				  "%s: expected at least one port; leave dst_ports out to match any port",
				  p2);
		for (size_t i = 0; i < count; i++) {
			yaml_node_t *it = item(x, items, i);
			char p3[PATHLEN];

			subpath(p3, p2, "[%zu]", i);
			if (i >= XRL_MAX_PORT_RANGES)
				return at(x, it, "%s: at most %d ports or port ranges per rule", p3,
					  XRL_MAX_PORT_RANGES);
			rc = port_val(x, it, p3, &r->ports[i]);
			if (rc)
				return rc;
			r->n_ports = (__u8)(i + 1);
		}
	}
	if (f[F_DST].v) {
		subpath(p2, path, ".dst");
		rc = prefix_val(x, f[F_DST].v, p2, &r->dst);
		if (rc)
			return rc;
		r->has_dst = true;
	}
	return 0;
}

static int parse_key(struct cx *x, yaml_node_t *n, const char *rpath, struct xrl_rule_spec *r)
{
	enum { F_IPV4_PREFIX, F_IPV6_PREFIX, F_COUNT };
	struct field f[F_COUNT] = {
		[F_IPV4_PREFIX] = { .key = "ipv4_prefix" },
		[F_IPV6_PREFIX] = { .key = "ipv6_prefix" },
	};
	char path[PATHLEN], p2[PATHLEN];
	__u64 v;
	int rc;

	subpath(path, rpath, ".key");
	rc = mapping(x, n, path, "key", f, F_COUNT);
	if (rc)
		return rc;
	if (f[F_IPV4_PREFIX].v) {
		subpath(p2, path, ".ipv4_prefix");
		rc = uint_val(x, f[F_IPV4_PREFIX].v, p2,
			      "a prefix length 0-32 (32: each address its own bucket)", 0, 32, &v);
		if (rc)
			return rc;
		r->key_plen4 = (__u8)v;
	}
	if (f[F_IPV6_PREFIX].v) {
		subpath(p2, path, ".ipv6_prefix");
		rc = uint_val(x, f[F_IPV6_PREFIX].v, p2,
			      "a prefix length 0-128 (64: one bucket per /64)", 0, 128, &v);
		if (rc)
			return rc;
		r->key_plen6 = (__u8)v;
	}
	return 0;
}

/* A share written 0 to 0.9 with at most three decimals, in per mille. */
static int share_val(struct cx *x, const yaml_node_t *n, const char *path, __u16 *out)
{
	static const char what[] = "a share from 0 to 0.9, such as 0.2";
	const char *s, *p;
	__u32 pm = 0, scale = 1000;
	char d[64];
	int rc;

	rc = scalar(x, n, path, what, &s);
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
	return at(x, n, "%s: expected %s (the rest is how new sources get in), got %s", path, what,
		  desc(n, d, sizeof(d)));
}

/* PATH.rate (a rate) and PATH.burst (1 to XRL_GCRA_BURST_MAX), both given. */
static int rate_burst(struct cx *x, yaml_node_t *rn, yaml_node_t *bn, const char *path,
		      const char *rate_what, const char *burst_what, struct xrl_rate *rate,
		      __u32 *burst)
{
	char p2[PATHLEN], msg[XRL_ERRLEN], dt[DETAIL], d[64];
	const char *s;
	__u64 v;
	int rc;

	subpath(p2, path, ".rate");
	rc = scalar(x, rn, p2, rate_what, &s);
	if (rc)
		return rc;
	if (xrl_rate_parse(s, rate, msg, sizeof(msg)))
		return at(x, rn, "%s: expected %s, got %s%s", p2, rate_what, desc(rn, d, sizeof(d)),
			  detail(msg, s, dt, sizeof(dt)));
	subpath(p2, path, ".burst");
	rc = uint_val(x, bn, p2, burst_what, 1, XRL_GCRA_BURST_MAX, &v);
	if (rc)
		return rc;
	*burst = (__u32)v;
	return 0;
}

/* aggregate: { rate: N/s, burst: B, vouched_share: 0.2 } */
static int parse_aggregate(struct cx *x, yaml_node_t *n, const char *rpath, struct xrl_rule_spec *r)
{
	static const char rate_what[] = "COUNT/PERIOD such as 1000/s";
	enum { F_RATE, F_BURST, F_SHARE, F_COUNT };
	struct field f[F_COUNT] = {
		[F_RATE] = { .key = "rate" },
		[F_BURST] = { .key = "burst" },
		[F_SHARE] = { .key = "vouched_share" },
	};
	char path[PATHLEN], p2[PATHLEN];
	int rc;

	subpath(path, rpath, ".aggregate");
	rc = mapping(x, n, path, "aggregate", f, F_COUNT);
	if (rc)
		return rc;
	if (!f[F_RATE].v || !f[F_BURST].v)
		return at(x, n, "%s: needs rate and burst (e.g. { rate: 1000/s, burst: 200 })",
			  path);
	rc = rate_burst(x, f[F_RATE].v, f[F_BURST].v, path, rate_what,
			"a whole number of connections from 1 to 100000000", &r->agg_rate,
			&r->agg_burst);
	if (rc)
		return rc;
	if (f[F_SHARE].v) {
		subpath(p2, path, ".vouched_share");
		rc = share_val(x, f[F_SHARE].v, p2, &r->agg_vouched_pm);
	}
	return rc;
}

/* A rate as SYNs per second (>= 1): "5000/s", "300000/min". */
static int per_sec_val(struct cx *x, yaml_node_t *n, const char *path, __u64 *out)
{
	static const char what[] = "COUNT/PERIOD such as 5000/s";
	char msg[XRL_ERRLEN], dt[DETAIL], d[64];
	struct xrl_rate r;
	const char *s;
	int rc;

	rc = scalar(x, n, path, what, &s);
	if (rc)
		return rc;
	if (xrl_rate_parse(s, &r, msg, sizeof(msg)))
		return at(x, n, "%s: expected %s, got %s%s", path, what, desc(n, d, sizeof(d)),
			  detail(msg, s, dt, sizeof(dt)));
	*out = r.tokens * XRL_NSEC_PER_SEC / r.period_ns;
	if (!*out)
		return at(x, n, "%s: expected %s, got %s: at least 1/s", path, what,
			  desc(n, d, sizeof(d)));
	return 0;
}

/* syn_cookies_auto: { on_rate: 5000/s, off_rate: 1000/s, hold: 10s, min_on: 5m,
 * queue_pct: 50 } */
static int parse_cookies_auto(struct cx *x, yaml_node_t *n, const char *rpath,
			      struct xrl_rule_spec *r)
{
	enum { F_ON, F_OFF, F_HOLD, F_QUEUE, F_MIN_ON, F_COUNT };
	struct field f[F_COUNT] = {
		[F_ON] = { .key = "on_rate" },	  [F_OFF] = { .key = "off_rate" },
		[F_HOLD] = { .key = "hold" },	  [F_QUEUE] = { .key = "queue_pct" },
		[F_MIN_ON] = { .key = "min_on" },
	};
	char path[PATHLEN], p2[PATHLEN];
	__u64 v;
	int rc;

	subpath(path, rpath, ".syn_cookies_auto");
	rc = mapping(x, n, path, "syn_cookies_auto", f, F_COUNT);
	if (!rc && f[F_ON].v)
		rc = per_sec_val(x, f[F_ON].v, (subpath(p2, path, ".on_rate"), p2),
				 &r->auto_on_rate);
	if (!rc && f[F_OFF].v)
		rc = per_sec_val(x, f[F_OFF].v, (subpath(p2, path, ".off_rate"), p2),
				 &r->auto_off_rate);
	if (!rc && f[F_HOLD].v)
		rc = dur_val(x, f[F_HOLD].v, (subpath(p2, path, ".hold"), p2), &r->auto_hold_ns);
	if (!rc && f[F_MIN_ON].v)
		rc = dur_val(x, f[F_MIN_ON].v, (subpath(p2, path, ".min_on"), p2),
			     &r->auto_min_on_ns);
	if (!rc && f[F_QUEUE].v) {
		subpath(p2, path, ".queue_pct");
		rc = uint_val(x, f[F_QUEUE].v, p2, "a percentage from 0 (not watched) to 100", 0,
			      100, &v);
		r->auto_queue_pct = (__u8)v;
	}
	if (!rc && xrl_rule_auto_check(r, p2, sizeof(p2)) == XRL_CK_RATES)
		return at(x, n, "%s: %s", path, p2);
	return rc;
}

/* A rule's action, penalty and syn_cookies words. */
static int parse_rule_modes(struct cx *x, struct field *fa, struct field *fp, struct field *fc,
			    const char *path, struct xrl_rule_spec *r)
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
		return at(x, fc->v, "%s.syn_cookies: %s", path, msg);
	return 0;
}

static bool rule_name_ok(const char *s)
{
	size_t l = strlen(s);

	if (!l || l >= XRL_RULE_NAME_LEN)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
			return false;
	return true;
}

static int parse_rule(struct cx *x, yaml_node_t *n, size_t idx)
{
	static const char rate_what[] = "COUNT/PERIOD such as 100/s or 10/min";
	enum {
		F_NAME,
		F_MATCH,
		F_KEY,
		F_RATE,
		F_BURST,
		F_ACTION,
		F_PENALTY,
		F_COOKIES,
		F_AGG,
		F_COOKIES_AUTO,
		F_COUNT
	};
	struct field f[F_COUNT] = {
		[F_NAME] = { .key = "name" },
		[F_MATCH] = { .key = "match" },
		[F_KEY] = { .key = "key" },
		[F_RATE] = { .key = "rate" },
		[F_BURST] = { .key = "burst" },
		[F_ACTION] = { .key = "action" },
		[F_PENALTY] = { .key = "penalty" },
		[F_COOKIES] = { .key = "syn_cookies" },
		[F_AGG] = { .key = "aggregate" },
		[F_COOKIES_AUTO] = { .key = "syn_cookies_auto" },
	};
	struct xrl_policy *pol = &x->c->policy;
	struct xrl_rule_spec *r = &pol->rules[idx];
	char path[PATHLEN], p2[PATHLEN], msg[XRL_ERRLEN], d[64];
	const char *s;
	int rc;

	snprintf(path, sizeof(path), "xdp.rules[%zu]", idx);
	rc = mapping(x, n, path, "rule", f, F_COUNT);
	if (rc)
		return rc;
	if (is_null(n))
		return at(x, n,
			  "%s: expected a rule (a mapping with name, rate and burst), got nothing",
			  path);
	if (!f[F_NAME].v)
		return at(x, n, "%s: missing 'name' (a rule needs a name, e.g. name: syn)", path);
	if (!f[F_RATE].v)
		return at(x, n, "%s: missing 'rate' (%s)", path, rate_what);
	if (!f[F_BURST].v)
		return at(x, n,
			  "%s: missing 'burst' (how many packets may come at once, e.g. burst: 50)",
			  path);

	subpath(p2, path, ".name");
	rc = scalar(x, f[F_NAME].v, p2, "a rule name", &s);
	if (rc)
		return rc;
	if (!rule_name_ok(s))
		return at(x, f[F_NAME].v,
			  "%s: expected a rule name of 1-%d letters, digits, '-', '_' or '.', got %s",
			  p2, XRL_RULE_NAME_LEN - 1, desc(f[F_NAME].v, d, sizeof(d)));
	for (size_t j = 0; j < idx; j++)
		if (!strcmp(pol->rules[j].name, s))
			return at(x, f[F_NAME].v,
				  "%s: rule name '%s' is used twice (first at line %d)", p2, s,
				  x->rule_line[j]);
	xrl_rule_spec_init(r, s);
	x->rule_line[idx] = (int)f[F_NAME].v->start_mark.line + 1;

	if (f[F_MATCH].v) {
		rc = parse_match(x, f[F_MATCH].v, path, r);
		if (rc)
			return rc;
	}
	if (f[F_KEY].v) {
		rc = parse_key(x, f[F_KEY].v, path, r);
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
		return at(x, f[F_RATE].v, "%s: %s", path, msg);
	pol->n_rules = (__u32)idx + 1;
	pol->n_compiled = pol->n_rules;
	return 0;
}

static int parse_rules(struct cx *x, yaml_node_t *n)
{
	yaml_node_item_t *items;
	size_t count;
	int rc;

	rc = sequence(x, n, "xdp.rules", "rules (- name: ...)", &items, &count);
	if (rc)
		return rc;
	for (size_t i = 0; i < count; i++) {
		yaml_node_t *it = item(x, items, i);

		if (i >= XRL_MAX_RULES)
			return at(x, it, "xdp.rules[%zu]: at most %d rules", i, XRL_MAX_RULES);
		rc = parse_rule(x, it, i);
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_xdp(struct cx *x, yaml_node_t *n)
{
	enum { F_ALLOW, F_RULES, F_BUCKETS, F_EVENT_INTERVAL, F_COOKIE_PATH, F_COUNT };
	struct field f[F_COUNT] = {
		[F_ALLOW] = { .key = "allow" },
		[F_RULES] = { .key = "rules" },
		[F_BUCKETS] = { .key = "buckets" },
		[F_EVENT_INTERVAL] = { .key = "event_interval" },
		[F_COOKIE_PATH] = { .key = "cookie_path" },
	};
	static const char *const paths[] = { "auto", "kernel" };
	static const int pvals[] = { 0, 1 };
	__u64 v;
	int rc, pv;

	rc = mapping(x, n, "xdp", "xdp", f, F_COUNT);
	if (rc)
		return rc;
	x->c->has_xdp = true;
	if (f[F_ALLOW].v && (rc = parse_allow(x, f[F_ALLOW].v)))
		return rc;
	if (f[F_RULES].v && (rc = parse_rules(x, f[F_RULES].v)))
		return rc;
	if (f[F_BUCKETS].v) {
		rc = uint_val(x, f[F_BUCKETS].v, "xdp.buckets",
			      "a bucket table size from 1024 to 268435456 entries", 1024, 1u << 28,
			      &v);
		if (rc)
			return rc;
		x->c->buckets_max = (__u32)v;
	}
	if (f[F_EVENT_INTERVAL].v && (rc = dur_val(x, f[F_EVENT_INTERVAL].v, "xdp.event_interval",
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

/*
 * penalty: { strikes, window, base, max [, floor_v4, floor_v6] }. The floors
 * (packet tier only) are the shortest prefixes a penalty may deny: a rule
 * keyed on a shorter prefix (an aggregate cap such as /0) never feeds one.
 */
static int parse_penalty(struct cx *x, yaml_node_t *n, bool packet)
{
	enum { F_STRIKES, F_WINDOW, F_BASE, F_MAX, F_FLOOR_V4, F_FLOOR_V6, F_COUNT };
	struct field f[F_COUNT] = {
		[F_STRIKES] = { .key = "strikes" },   [F_WINDOW] = { .key = "window" },
		[F_BASE] = { .key = "base" },	      [F_MAX] = { .key = "max" },
		[F_FLOOR_V4] = { .key = "floor_v4" }, [F_FLOOR_V6] = { .key = "floor_v6" },
	};
	static const char *const why[] = {
		"refusal windows before a source is denied, e.g. 3",
		"the length of a strike window, e.g. 60s",
		"the first denial's length, e.g. 60s",
		"the longest denial, e.g. 1h",
	};
	struct xrl_penalty_cfg *p = &x->c->penalty;
	__u64 v;
	int rc;

	rc = mapping(x, n, "penalty", "penalty", f, packet ? 6 : 4);
	if (rc)
		return rc;
	for (size_t i = 0; i < 4; i++)
		if (!f[i].v)
			return at(x, n,
				  "penalty: missing '%s' (%s); a penalty section needs strikes, window, base and max",
				  f[i].key, why[i]);
	rc = uint_val(x, f[F_STRIKES].v, "penalty.strikes", "a whole number of strikes, 1 or more",
		      1, UINT32_MAX, &v);
	if (rc)
		return rc;
	p->strikes = (__u32)v;
	if ((rc = dur_val(x, f[F_WINDOW].v, "penalty.window", &p->window_ns)) ||
	    (rc = dur_val(x, f[F_BASE].v, "penalty.base", &p->base_ns)) ||
	    (rc = dur_val(x, f[F_MAX].v, "penalty.max", &p->max_ns)))
		return rc;
	if (p->base_ns > p->max_ns)
		return at(x, f[F_BASE].v,
			  "penalty.base: expected base <= max, got base %s and max %s",
			  sval(f[F_BASE].v), sval(f[F_MAX].v));
	p->floor4 = 24;
	p->floor6 = 48;
	if (f[F_FLOOR_V4].v) {
		if ((rc = uint_val(x, f[F_FLOOR_V4].v, "penalty.floor_v4",
				   "a prefix length from 8 to 32", 8, 32, &v)))
			return rc;
		p->floor4 = (__u8)v;
	}
	if (f[F_FLOOR_V6].v) {
		if ((rc = uint_val(x, f[F_FLOOR_V6].v, "penalty.floor_v6",
				   "a prefix length from 16 to 128", 16, 128, &v)))
			return rc;
		p->floor6 = (__u8)v;
	}
	p->enabled = true;
	return 0;
}

/* "127.0.0.1:8434", "[::1]:8434", "localhost:8434". */
static bool hostport_ok(const char *s)
{
	char host[64];
	int port;

	return !xrl_hostport_parse(s, strlen(s), host, sizeof(host), &port);
}

/* ---- http: the identity tier ------------------------------------------ */

static int bool_val(struct cx *x, const yaml_node_t *n, const char *path, bool *out)
{
	static const char *const words[] = { "true", "false", "yes", "no", "on", "off" };
	static const int vals[] = { 1, 0, 1, 0, 1, 0 };
	int v, rc;

	rc = ENUM(x, n, path, words, vals, &v);
	if (!rc)
		*out = v;
	return rc;
}

/*
 * A path_prefix must be written as requests are matched, normalised
 * (xrl_http_path_norm): "/api//holds" or "/api/%68olds" would never match
 * anything, so they are errors that show the form to write.
 */
static int path_prefix_val(struct cx *x, const yaml_node_t *n, const char *path, const char *s,
			   char *out, size_t outlen)
{
	char norm[sizeof(((struct xrl_http_rule *)0)->path_prefix)];
	int rc = xrl_http_path_norm(s, strlen(s), norm, sizeof(norm));

	if (rc < 0)
		return at(x, n,
			  "%s: expected a path (no query, no bad %%XX escape, no %%00), got '%s'",
			  path, s);
	if (strcmp(norm, s))
		return at(x, n,
			  "%s: '%s' is not how requests are matched (dot segments removed, '//' "
			  "merged, %%XX decoded, ;params cut): write '%s'",
			  path, s, norm);
	snprintf(out, outlen, "%s", norm);
	return 0;
}

/* http.rules[i].match: method and path_prefix. */
static int parse_http_match(struct cx *x, yaml_node_t *n, const char *path, struct xrl_http_rule *r)
{
	enum { M_METHOD, M_PATH_PREFIX, M_COUNT };
	struct field m[M_COUNT] = {
		[M_METHOD] = { .key = "method" },
		[M_PATH_PREFIX] = { .key = "path_prefix" },
	};
	char p2[PATHLEN], d[64];
	const char *s;
	int rc;

	subpath(p2, path, ".match");
	if ((rc = mapping(x, n, p2, "match", m, M_COUNT)))
		return rc;
	if (m[M_METHOD].v) {
		subpath(p2, path, ".match.method");
		if ((rc = scalar(x, m[M_METHOD].v, p2, "an HTTP method such as POST", &s)))
			return rc;
		if (!*s || strlen(s) >= sizeof(r->method) ||
		    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(s))
			return at(x, m[M_METHOD].v,
				  "%s: expected an HTTP method in capitals such as POST, got %s",
				  p2, desc(m[M_METHOD].v, d, sizeof(d)));
		snprintf(r->method, sizeof(r->method), "%s", s);
	}
	if (m[M_PATH_PREFIX].v) {
		subpath(p2, path, ".match.path_prefix");
		if ((rc = scalar(x, m[M_PATH_PREFIX].v, p2, "a path starting with /", &s)))
			return rc;
		if (s[0] != '/' || strlen(s) >= sizeof(r->path_prefix))
			return at(x, m[M_PATH_PREFIX].v,
				  "%s: expected a path starting with /, got %s", p2,
				  desc(m[M_PATH_PREFIX].v, d, sizeof(d)));
		if ((rc = path_prefix_val(x, m[M_PATH_PREFIX].v, p2, s, r->path_prefix,
					  sizeof(r->path_prefix))))
			return rc;
	}
	return 0;
}

/* http.rules[i].key: header:NAME, bearer or client_ip. */
static int parse_http_key(struct cx *x, yaml_node_t *n, const char *path, struct xrl_http_rule *r)
{
	static const char key_what[] = "header:NAME, bearer, client_ip or global";
	char p2[PATHLEN], d[64];
	const char *s;
	int rc;

	subpath(p2, path, ".key");
	if ((rc = scalar(x, n, p2, key_what, &s)))
		return rc;
	if (!strcmp(s, "bearer")) {
		r->key_kind = XRL_KEY_BEARER;
	} else if (!strcmp(s, "client_ip")) {
		r->key_kind = XRL_KEY_CLIENT_IP;
	} else if (!strcmp(s, "global")) {
		r->key_kind = XRL_KEY_GLOBAL;
	} else if (!strncmp(s, "header:", 7) && s[7] && strlen(s + 7) < sizeof(r->header) &&
		   strspn(s + 7,
			  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") ==
			   strlen(s + 7)) {
		r->key_kind = XRL_KEY_HEADER;
		snprintf(r->header, sizeof(r->header), "%s", s + 7);
	} else {
		return at(x, n, "%s: expected %s, got %s", p2, key_what, desc(n, d, sizeof(d)));
	}
	return 0;
}

/*
 * A rule's numbers: rate and burst (a token bucket), cost (0: counted,
 * never refused), concurrency (requests held at once) and lease_ttl (when a
 * slot not given back is free again). A NULL node: not given.
 */
static int parse_http_rule_limits(struct cx *x, yaml_node_t *rate, yaml_node_t *burst,
				  yaml_node_t *cost, yaml_node_t *conc, yaml_node_t *ttl,
				  const char *path, struct xrl_http_rule *r)
{
	char p2[PATHLEN], d[64];
	__u64 v;
	int rc;

	if (rate) {
		subpath(p2, path, ".rate");
		if ((rc = rate_val(x, rate, p2, &r->rate)))
			return rc;
		subpath(p2, path, ".burst");
		if ((rc = uint_val(x, burst, p2, "a whole number from 1 to 100000000", 1,
				   XRL_GCRA_BURST_MAX, &v)))
			return rc;
		r->burst = (__u32)v;
	}
	if (cost) {
		subpath(p2, path, ".cost");
		if ((rc = uint_val(x, cost, p2,
				   "a whole number of tokens, 0 or more, at most the burst", 0,
				   rate ? r->burst : 1, &v)))
			return rc;
		r->cost = (__u32)v;
		r->cost_zero = !v;
	}
	if (conc) {
		subpath(p2, path, ".concurrency");
		if ((rc = uint_val(x, conc, p2, "a whole number of requests from 1 to 65536", 1,
				   XRL_HTTP_CONC_MAX, &v)))
			return rc;
		r->concurrency = (__u32)v;
	}
	if (ttl) {
		subpath(p2, path, ".lease_ttl");
		if (!conc)
			return at(x, ttl, "%s: only a rule with concurrency has leases", p2);
		if ((rc = dur_val(x, ttl, p2, &v)))
			return rc;
		if (v < XRL_NSEC_PER_SEC || v > 86400 * XRL_NSEC_PER_SEC)
			return at(x, ttl, "%s: expected 1s to 1d, got %s", p2,
				  desc(ttl, d, sizeof(d)));
		r->lease_ttl_ns = v;
	}
	return 0; /* the defaults: xrl_http_cfg_finish, for every caller */
}

/*
 * An http rule's vouch and vouch_ttl. The vouch map is the packet tier's:
 * an xrld without interfaces (an identity tier alone) has none to write,
 * so vouch: true is refused there rather than silently doing nothing.
 */
static int parse_http_vouch(struct cx *x, yaml_node_t *vn, yaml_node_t *tn, const char *path,
			    struct xrl_http_rule *r)
{
	char p2[PATHLEN];
	int rc;

	r->vouch_ttl_ns = (__u64)XRL_VOUCH_TTL_S * XRL_NSEC_PER_SEC;
	if (vn) {
		subpath(p2, path, ".vouch");
		if ((rc = bool_val(x, vn, p2, &r->vouch)))
			return rc;
		if (r->vouch && !x->c->n_ifaces)
			return at(x, vn,
				  "%s: vouch: true needs the packet tier in this xrld (an "
				  "interfaces: entry): the vouched sources live in its XDP maps",
				  p2);
	}
	if (tn) {
		subpath(p2, path, ".vouch_ttl");
		if ((rc = dur_val(x, tn, p2, &r->vouch_ttl_ns)))
			return rc;
	}
	return 0;
}

static int parse_http_rule(struct cx *x, yaml_node_t *n, size_t idx)
{
	static const char *const be[] = { "open", "closed", "local" };
	static const int bev[] = { XRL_BE_OPEN, XRL_BE_CLOSED, XRL_BE_LOCAL };
	static const char *const mk[] = { "skip", "refuse", "client_ip" };
	static const int mkv[] = { XRL_MISSING_SKIP, XRL_MISSING_REFUSE, XRL_MISSING_CLIENT_IP };
	enum {
		F_NAME,
		F_MATCH,
		F_KEY,
		F_RATE,
		F_BURST,
		F_COST,
		F_ON_BACKEND_ERROR,
		F_ON_MISSING_KEY,
		F_SHADOW,
		F_CONCURRENCY,
		F_LEASE_TTL,
		F_VOUCH,
		F_VOUCH_TTL,
		F_COUNT
	};
	struct field f[F_COUNT] = {
		[F_CONCURRENCY] = { .key = "concurrency" },
		[F_LEASE_TTL] = { .key = "lease_ttl" },
		[F_VOUCH] = { .key = "vouch" },
		[F_VOUCH_TTL] = { .key = "vouch_ttl" },
		[F_NAME] = { .key = "name" },
		[F_MATCH] = { .key = "match" },
		[F_KEY] = { .key = "key" },
		[F_RATE] = { .key = "rate" },
		[F_BURST] = { .key = "burst" },
		[F_COST] = { .key = "cost" },
		[F_ON_BACKEND_ERROR] = { .key = "on_backend_error" },
		[F_ON_MISSING_KEY] = { .key = "on_missing_key" },
		[F_SHADOW] = { .key = "shadow" },
	};
	struct xrl_http_rule *r = &x->c->http.rules[idx];
	char path[PATHLEN], p2[PATHLEN], d[64];
	const char *s;
	int rc, e;

	snprintf(path, sizeof(path), "http.rules[%zu]", idx);
	rc = mapping(x, n, path, "http rule", f, F_COUNT);
	if (rc)
		return rc;
	if (is_null(n) || !f[F_NAME].v || (!f[F_CONCURRENCY].v && (!f[F_RATE].v || !f[F_BURST].v)))
		return at(x, n,
			  "%s: a rule needs name, and rate and burst or concurrency (or both)",
			  path);
	if (!f[F_RATE].v != !f[F_BURST].v)
		return at(x, n, "%s: rate and burst go together", path);
	memset(r, 0, sizeof(*r));
	subpath(p2, path, ".name");
	if ((rc = scalar(x, f[F_NAME].v, p2, "a rule name", &s)))
		return rc;
	if (!rule_name_ok(s))
		return at(x, f[F_NAME].v,
			  "%s: expected a rule name of 1-%d letters, digits, '-', '_' or '.', got %s",
			  p2, XRL_RULE_NAME_LEN - 1, desc(f[F_NAME].v, d, sizeof(d)));
	for (size_t j = 0; j < idx; j++)
		if (!strcmp(x->c->http.rules[j].name, s))
			return at(x, f[F_NAME].v, "%s: rule name '%s' is used twice", p2, s);
	snprintf(r->name, sizeof(r->name), "%s", s);
	r->key_kind = XRL_KEY_CLIENT_IP;

	if (f[F_MATCH].v && (rc = parse_http_match(x, f[F_MATCH].v, path, r)))
		return rc;
	if (f[F_KEY].v && (rc = parse_http_key(x, f[F_KEY].v, path, r)))
		return rc;
	if ((rc = parse_http_rule_limits(x, f[F_RATE].v, f[F_BURST].v, f[F_COST].v,
					 f[F_CONCURRENCY].v, f[F_LEASE_TTL].v, path, r)))
		return rc;
	e = (int)r->on_backend_error;
	if ((rc = OPT_ENUM(x, f[F_ON_BACKEND_ERROR].v, path, ".on_backend_error", be, bev, &e)))
		return rc;
	r->on_backend_error = (enum xrl_backend_err)e;
	e = (int)r->on_missing_key;
	if ((rc = OPT_ENUM(x, f[F_ON_MISSING_KEY].v, path, ".on_missing_key", mk, mkv, &e)))
		return rc;
	r->on_missing_key = (enum xrl_missing_key)e;
	if (f[F_SHADOW].v) {
		subpath(p2, path, ".shadow");
		if ((rc = bool_val(x, f[F_SHADOW].v, p2, &r->shadow)))
			return rc;
	}
	if ((rc = parse_http_vouch(x, f[F_VOUCH].v, f[F_VOUCH_TTL].v, path, r)))
		return rc;
	if (f[F_RATE].v && xrl_gcra_init(r->rate.tokens, r->rate.period_ns, r->burst, &r->g))
		return at(x, f[F_RATE].v,
			  "%s: rate and burst out of range (1 per 52 days to 1e9/s)", path);
	x->c->http.n_rules = (__u32)idx + 1;
	return 0;
}

/* http.trusted_proxies and http.forwarded_from: whom the tier believes. */
static int parse_http_trust(struct cx *x, yaml_node_t *tp, yaml_node_t *ff)
{
	static const char *const fw[] = { "nginx", "traefik", "caddy", "envoy", "none" };
	static const int fwv[] = { XRL_FWD_NGINX, XRL_FWD_TRAEFIK, XRL_FWD_CADDY, XRL_FWD_ENVOY,
				   XRL_FWD_NONE };
	struct xrl_http_cfg *h = &x->c->http;
	yaml_node_item_t *items;
	size_t count;
	int rc, e;

	if (tp) {
		if ((rc = sequence(x, tp, "http.trusted_proxies", "address prefixes", &items,
				   &count)))
			return rc;
		for (size_t i = 0; i < count; i++) {
			char p2[PATHLEN];

			if (i >= XRL_HTTP_MAX_TRUSTED)
				return at(x, item(x, items, i),
					  "http.trusted_proxies: at most %d entries",
					  XRL_HTTP_MAX_TRUSTED);
			snprintf(p2, sizeof(p2), "http.trusted_proxies[%zu]", i);
			if ((rc = prefix_val(x, item(x, items, i), p2, &h->trusted[i])))
				return rc;
			h->n_trusted = (__u32)i + 1;
		}
	}
	if (ff) {
		if ((rc = ENUM(x, ff, "http.forwarded_from", fw, fwv, &e)))
			return rc;
		h->forwarded_from = (enum xrl_fwd_from)e;
	}
	return 0;
}

/* false in the identity process: xrld reads the secret file and hands the
 * secret over with the policy (xrl_config_secret_files) */
static bool read_secret_files = true;

void xrl_config_secret_files(bool read)
{
	read_secret_files = read;
}

/*
 * http.callers and http.caller_secret_file: who may ask the identity tier
 * besides loopback and the trusted proxies, and the secret they all send.
 * The secret is read here, so a reload reads it again; an error names the
 * file, never what it holds.
 */
static int parse_http_callers(struct cx *x, yaml_node_t *cl, yaml_node_t *sf)
{
	struct xrl_http_cfg *h = &x->c->http;
	yaml_node_item_t *items;
	char msg[XRL_ERRLEN];
	const char *s;
	size_t count;
	int rc;

	if (cl) {
		if ((rc = sequence(x, cl, "http.callers", "address prefixes", &items, &count)))
			return rc;
		for (size_t i = 0; i < count; i++) {
			char p2[PATHLEN];

			if (i >= XRL_HTTP_MAX_CALLERS)
				return at(x, item(x, items, i), "http.callers: at most %d entries",
					  XRL_HTTP_MAX_CALLERS);
			snprintf(p2, sizeof(p2), "http.callers[%zu]", i);
			if ((rc = prefix_val(x, item(x, items, i), p2, &h->callers[i])))
				return rc;
			h->n_callers = (__u32)i + 1;
		}
	}
	if (sf) {
		if ((rc = scalar(x, sf, "http.caller_secret_file", "a file's path", &s)))
			return rc;
		if (!*s || strlen(s) >= sizeof(h->caller_secret_file))
			return at(x, sf, "http.caller_secret_file: expected a path of 1 to %zu bytes",
				  sizeof(h->caller_secret_file) - 1);
		snprintf(h->caller_secret_file, sizeof(h->caller_secret_file), "%s", s);
		if (read_secret_files && xrl_http_secret_load(h, s, msg, sizeof(msg)))
			return at(x, sf, "%s", msg);
	}
	return 0;
}

/*
 * http.idle_timeout: libmicrohttpd counts whole seconds and takes 0 as "no
 * timeout", so under 1 s is an error (it would have truncated to 0) and a
 * fraction is rounded up; a day at most (an unsigned count of seconds).
 */
static int parse_http_idle(struct cx *x, yaml_node_t *n)
{
	struct xrl_http_cfg *h = &x->c->http;
	char d[64];
	__u64 v;
	int rc;

	if ((rc = dur_val(x, n, "http.idle_timeout", &v)))
		return rc;
	if (v < XRL_NSEC_PER_SEC || v > 86400 * XRL_NSEC_PER_SEC)
		return at(x, n,
			  "http.idle_timeout: expected 1s to 1d (whole seconds; a fraction is "
			  "rounded up), got %s",
			  desc(n, d, sizeof(d)));
	h->idle_timeout_ns = (v + XRL_NSEC_PER_SEC - 1) / XRL_NSEC_PER_SEC * XRL_NSEC_PER_SEC;
	return 0;
}

/* The server's bounds (a NULL node: not given). */
static int parse_http_bounds(struct cx *x, yaml_node_t *max_conn, yaml_node_t *idle,
			     yaml_node_t *max_hdr, yaml_node_t *max_keys, yaml_node_t *threads,
			     yaml_node_t *head_to, yaml_node_t *per_peer)
{
	struct xrl_http_cfg *h = &x->c->http;
	__u64 v;
	int rc;

	if (max_conn) {
		if ((rc = uint_val(x, max_conn, "http.max_connections", "a number from 1 to 65536",
				   1, 65536, &v)))
			return rc;
		h->max_connections = (__u32)v;
	}
	if (idle && (rc = parse_http_idle(x, idle)))
		return rc;
	if (max_hdr) {
		if ((rc = uint_val(x, max_hdr, "http.max_header_bytes",
				   "a number from 1024 to 1048576", 1024, 1 << 20, &v)))
			return rc;
		h->max_header_bytes = (__u32)v;
	}
	if (head_to) {
		char d[64];

		if ((rc = dur_val(x, head_to, "http.head_timeout", &v)))
			return rc;
		if (v < XRL_NSEC_PER_SEC / 10 || v > 3600 * XRL_NSEC_PER_SEC)
			return at(x, head_to, "http.head_timeout: expected 100ms to 1h, got %s",
				  desc(head_to, d, sizeof(d)));
		h->head_timeout_ns = v;
	}
	if (per_peer) {
		if ((rc = uint_val(x, per_peer, "http.max_connections_per_peer",
				   "a number from 0 (no bound) to 65536", 0, 65536, &v)))
			return rc;
		h->max_conn_per_peer = (__u32)v;
	}
	if (max_keys) {
		if ((rc = uint_val(x, max_keys, "http.max_keys", "a number from 1024 to 268435456",
				   1024, 1u << 28, &v)))
			return rc;
		h->memory_max_keys = (__u32)v;
	}
	if (threads) {
		if ((rc = uint_val(x, threads, "http.threads", "a number from 1 to 64", 1, 64, &v)))
			return rc;
		h->threads = (__u32)v;
	}
	return 0;
}

/* A match of http.exempt or http.shed: the shape of a rule's (method and
 * path_prefix, each optional). */
static int parse_http_route(struct cx *x, yaml_node_t *n, const char *path,
			    struct xrl_http_route *out)
{
	struct xrl_http_rule *t = calloc(1, sizeof(*t));
	int rc;

	if (!t)
		return -ENOMEM;
	/* its messages name the fields path.match.method and path.match.path_prefix */
	rc = parse_http_match(x, n, path, t);
	if (!rc) {
		memcpy(out->method, t->method, sizeof(out->method));
		memcpy(out->path_prefix, t->path_prefix, sizeof(out->path_prefix));
	}
	free(t);
	return rc;
}

/* http.exempt: routes that no rule and no shedding refuses, nor counts. */
static int parse_http_exempt(struct cx *x, yaml_node_t *n)
{
	struct xrl_http_cfg *h = &x->c->http;
	yaml_node_item_t *items;
	size_t count;
	int rc;

	if ((rc = sequence(x, n, "http.exempt",
			   "matches (- { method: GET, path_prefix: /healthz })", &items, &count)))
		return rc;
	for (size_t i = 0; i < count; i++) {
		char p2[PATHLEN];

		if (i >= XRL_HTTP_MAX_EXEMPT)
			return at(x, item(x, items, i), "http.exempt: at most %d entries",
				  XRL_HTTP_MAX_EXEMPT);
		snprintf(p2, sizeof(p2), "http.exempt[%zu]", i);
		if ((rc = parse_http_route(x, item(x, items, i), p2, &h->exempt[i])))
			return rc;
		h->n_exempt = (__u32)i + 1;
	}
	return 0;
}

/* http.shed as a list: a capacity bucket per route, each { match, rate, burst }. */
static int parse_http_shed_list(struct cx *x, yaml_node_t *n)
{
	enum { SF_MATCH, SF_RATE, SF_BURST, SF_COUNT };
	struct xrl_http_cfg *h = &x->c->http;
	yaml_node_item_t *items;
	size_t count;
	__u64 v;
	int rc;

	if ((rc = sequence(x, n, "http.shed", "routes (- { match: ..., rate: ..., burst: ... })",
			   &items, &count)))
		return rc;
	for (size_t i = 0; i < count; i++) {
		struct field sf[SF_COUNT] = {
			[SF_MATCH] = { .key = "match" },
			[SF_RATE] = { .key = "rate" },
			[SF_BURST] = { .key = "burst" },
		};
		yaml_node_t *e = item(x, items, i);
		struct xrl_http_shed *sh = &h->shed[i];
		char p[PATHLEN], p2[PATHLEN];

		if (i >= XRL_HTTP_MAX_SHED)
			return at(x, e, "http.shed: at most %d routes", XRL_HTTP_MAX_SHED);
		snprintf(p, sizeof(p), "http.shed[%zu]", i);
		if ((rc = mapping(x, e, p, "shed route", sf, SF_COUNT)))
			return rc;
		if (!sf[SF_RATE].v || !sf[SF_BURST].v)
			return at(x, e, "%s: needs rate and burst (the capacity of the route)", p);
		memset(sh, 0, sizeof(*sh));
		if (sf[SF_MATCH].v && (rc = parse_http_route(x, sf[SF_MATCH].v, p, &sh->match)))
			return rc;
		subpath(p2, p, ".rate");
		if ((rc = rate_val(x, sf[SF_RATE].v, p2, &sh->rate)))
			return rc;
		subpath(p2, p, ".burst");
		if ((rc = uint_val(x, sf[SF_BURST].v, p2, "a whole number from 1 to 100000000", 1,
				   XRL_GCRA_BURST_MAX, &v)))
			return rc;
		sh->burst = (__u32)v;
		h->n_shed = (__u32)i + 1;
	}
	return 0;
}

/* http.shed and http.penalty. */
static int parse_http_shed_penalty(struct cx *x, yaml_node_t *shed, yaml_node_t *pen)
{
	enum { SF_RATE, SF_BURST, SF_COUNT };
	struct field sf[SF_COUNT] = {
		[SF_RATE] = { .key = "rate" },
		[SF_BURST] = { .key = "burst" },
	};
	struct xrl_http_cfg *h = &x->c->http;
	__u64 v;
	int rc;

	if (shed && shed->type == YAML_SEQUENCE_NODE) {
		if ((rc = parse_http_shed_list(x, shed)))
			return rc;
	} else if (shed) {
		if ((rc = mapping(x, shed, "http.shed", "shed", sf, SF_COUNT)))
			return rc;
		if (!sf[SF_RATE].v || !sf[SF_BURST].v)
			return at(x, shed,
				  "http.shed: needs rate and burst (the capacity of the whole service)");
		if ((rc = rate_val(x, sf[SF_RATE].v, "http.shed.rate", &h->shed_rate)))
			return rc;
		if ((rc = uint_val(x, sf[SF_BURST].v, "http.shed.burst",
				   "a whole number from 1 to 100000000", 1, XRL_GCRA_BURST_MAX,
				   &v)))
			return rc;
		h->shed_burst = (__u32)v;
		h->shed_enabled = true;
	}
	if (pen) {
		/* same shape as the top-level penalty section */
		struct xrl_penalty_cfg saved = x->c->penalty;

		if ((rc = parse_penalty(x, pen, false)))
			return rc;
		h->penalty.enabled = true;
		h->penalty.strikes = x->c->penalty.strikes;
		h->penalty.window_ns = x->c->penalty.window_ns;
		h->penalty.base_ns = x->c->penalty.base_ns;
		h->penalty.max_ns = x->c->penalty.max_ns;
		x->c->penalty = saved;
	}
	return 0;
}

/* http.headers: which quota headers the answers carry. */
static int parse_http_headers(struct cx *x, yaml_node_t *n)
{
	enum { HF_IETF, HF_X_RATELIMIT, HF_COUNT };
	struct field hf[HF_COUNT] = {
		[HF_IETF] = { .key = "ietf" },
		[HF_X_RATELIMIT] = { .key = "x_ratelimit" },
	};
	struct xrl_http_cfg *h = &x->c->http;
	int rc;

	if ((rc = mapping(x, n, "http.headers", "headers", hf, HF_COUNT)))
		return rc;
	if (hf[HF_IETF].v &&
	    (rc = bool_val(x, hf[HF_IETF].v, "http.headers.ietf", &h->ietf_headers)))
		return rc;
	if (hf[HF_X_RATELIMIT].v &&
	    (rc = bool_val(x, hf[HF_X_RATELIMIT].v, "http.headers.x_ratelimit",
			   &h->x_ratelimit_headers)))
		return rc;
	return 0;
}

/* http.rules: the list, each through parse_http_rule. */
static int parse_http_rules(struct cx *x, yaml_node_t *n)
{
	yaml_node_item_t *items;
	size_t count;
	int rc;

	if ((rc = sequence(x, n, "http.rules", "rules (- name: ...)", &items, &count)))
		return rc;
	for (size_t i = 0; i < count; i++) {
		if (i >= XRL_HTTP_MAX_RULES)
			return at(x, item(x, items, i), "http.rules[%zu]: at most %d rules", i,
				  XRL_HTTP_MAX_RULES);
		if ((rc = parse_http_rule(x, item(x, items, i), i)))
			return rc;
	}
	return 0;
}

/* A fleet's name: what its Redis keys are named after (xrl:{fleet:NAME}:...). */
static int fleet_name(struct cx *x, yaml_node_t *n, const char *path, char out[64])
{
	char d[64];
	const char *s;
	int rc;

	if ((rc = scalar(x, n, path, "a fleet name ([A-Za-z0-9_.-], 1 to 63 bytes)", &s)))
		return rc;
	if (!rule_name_ok(s) || strlen(s) >= 64)
		return at(x, n, "%s: expected a fleet name ([A-Za-z0-9_.-], 1 to 63 bytes), got %s",
			  path, desc(n, d, sizeof(d)));
	snprintf(out, 64, "%s", s);
	return 0;
}

/* fleet: { name: NAME, redis: redis://... } (redis: optional when the
 * identity tier's backend is a redis:// URL; fleet_resolve checks). */
/* fleet.protect: [PREFIX, ...], none listed twice. */
static int parse_fleet_protect(struct cx *x, yaml_node_t *n, struct xrl_fleet_cfg *fc)
{
	yaml_node_item_t *items;
	size_t count;
	int rc;

	rc = sequence(x, n, "fleet.protect", "address prefixes", &items, &count);
	if (rc)
		return rc;
	for (size_t i = 0; i < count; i++) {
		yaml_node_t *it = item(x, items, i);
		struct xrl_prefix *p = &fc->protect[i];
		char path[PATHLEN], a[64];

		snprintf(path, sizeof(path), "fleet.protect[%zu]", i);
		if (i >= XRL_FLEET_MAX_PROTECT)
			return at(x, it, "%s: at most %d protected prefixes", path,
				  XRL_FLEET_MAX_PROTECT);
		rc = prefix_val(x, it, path, p);
		if (rc)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (!memcmp(&fc->protect[j], p, sizeof(*p)))
				return at(x, it,
					  "%s: %s is listed twice (first as fleet.protect[%zu])",
					  path, xrl_prefix_str(p, a, sizeof(a)), j);
		fc->n_protect = (__u32)i + 1;
	}
	return 0;
}

static int parse_fleet(struct cx *x, yaml_node_t *n)
{
	enum { F_NAME, F_REDIS, F_PROTECT, F_MEMBERS, F_COUNT };
	struct field f[F_COUNT] = { [F_NAME] = { .key = "name" },
				    [F_REDIS] = { .key = "redis" },
				    [F_PROTECT] = { .key = "protect" },
				    [F_MEMBERS] = { .key = "max_members" } };
	struct xrl_fleet_cfg *fc = &x->c->fleet;
	struct xrl_http_cfg *tmp;
	char msg[XRL_ERRLEN];
	const char *s;
	__u64 v;
	int rc;

	if ((rc = mapping(x, n, "fleet", "fleet", f, F_COUNT)))
		return rc;
	if (!f[F_NAME].v)
		return at(x, n,
			  "fleet: missing 'name' (the fleet's name, shared by its instances)");
	if ((rc = fleet_name(x, f[F_NAME].v, "fleet.name", fc->name)))
		return rc;
	fc->enabled = fc->packet = true;
	if (f[F_PROTECT].v && (rc = parse_fleet_protect(x, f[F_PROTECT].v, fc)))
		return rc;
	if (f[F_MEMBERS].v) {
		rc = uint_val(x, f[F_MEMBERS].v, "fleet.max_members",
			      "a member count from 1 to 65536", 1, XRL_FLEET_MEMBERS_MAX, &v);
		if (rc)
			return rc;
		fc->max_members = (__u32)v;
	}
	if (!f[F_REDIS].v)
		return 0;
	if ((rc = scalar(x, f[F_REDIS].v, "fleet.redis", "redis://[[USER]:PASSWORD@]HOST:PORT[/DB]",
			 &s)))
		return rc;
	tmp = calloc(1, sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	xrl_http_cfg_init(tmp);
	rc = xrl_http_backend_parse(s, tmp, msg, sizeof(msg));
	if (!rc && !tmp->redis)
		snprintf(msg, sizeof(msg), "backend: expected a redis:// URL, got memory"),
			rc = -EINVAL;
	if (!rc) {
		fc->own_redis = true;
		memcpy(fc->redis_host, tmp->redis_host, sizeof(fc->redis_host));
		fc->redis_port = tmp->redis_port;
		fc->redis_db = tmp->redis_db;
		memcpy(fc->redis_user, tmp->redis_user, sizeof(fc->redis_user));
		memcpy(fc->redis_pass, tmp->redis_pass, sizeof(fc->redis_pass));
		fc->redis_cluster = tmp->redis_cluster;
		memcpy(fc->redis_seeds, tmp->redis_seeds, sizeof(fc->redis_seeds));
	}
	explicit_bzero(tmp, sizeof(*tmp));
	free(tmp);
	/* msg reads "backend: ...": say which key it was */
	if (rc)
		return at(x, f[F_REDIS].v, "fleet.redis%s",
			  strchr(msg, ':') ? strchr(msg, ':') : msg);
	return 0;
}

/* After fleet: and http: are read: one fleet, one Redis. */
static int fleet_resolve(struct cx *x, yaml_node_t *root)
{
	struct xrl_fleet_cfg *fc = &x->c->fleet;
	struct xrl_http_cfg *h = &x->c->http;

	if (x->c->has_http && h->fleet[0] && fc->enabled && strcmp(h->fleet, fc->name))
		return at(x, root,
			  "http.fleet: '%s' is not the fleet '%s' of fleet.name: an instance "
			  "is in one fleet",
			  h->fleet, fc->name);
	if (x->c->has_http && fc->enabled && !h->fleet[0])
		snprintf(h->fleet, sizeof(h->fleet), "%s", fc->name); /* the tier joins too */
	if (x->c->has_http && h->fleet[0] && !fc->enabled) {
		fc->enabled = true;
		snprintf(fc->name, sizeof(fc->name), "%s", h->fleet);
	}
	if (fc->enabled && !fc->max_members)
		fc->max_members = XRL_FLEET_MEMBERS_DEFAULT;
	if (!fc->enabled || fc->own_redis)
		return 0;
	if (!x->c->has_http || !h->redis)
		return at(x, root,
			  "fleet '%s': no Redis to meet in: give fleet.redis: redis://..., "
			  "or an http.backend: redis://...",
			  fc->name);
	memcpy(fc->redis_host, h->redis_host, sizeof(fc->redis_host));
	fc->redis_port = h->redis_port;
	fc->redis_db = h->redis_db;
	memcpy(fc->redis_user, h->redis_user, sizeof(fc->redis_user));
	memcpy(fc->redis_pass, h->redis_pass, sizeof(fc->redis_pass));
	fc->redis_cluster = h->redis_cluster;
	memcpy(fc->redis_seeds, h->redis_seeds, sizeof(fc->redis_seeds));
	return 0;
}

/* http.listen and http.backend: where the identity tier answers and where
 * its buckets live */
static int parse_http_endpoints(struct cx *x, yaml_node_t *ln, yaml_node_t *bn)
{
	struct xrl_http_cfg *h = &x->c->http;
	char msg[XRL_ERRLEN], d[64];
	const char *s;
	int rc;

	if (ln) {
		if ((rc = scalar(x, ln, "http.listen", "HOST:PORT such as 127.0.0.1:8433", &s)))
			return rc;
		if (strlen(s) >= sizeof(h->listen) || !hostport_ok(s))
			return at(x, ln,
				  "http.listen: expected HOST:PORT such as 127.0.0.1:8433 or [::1]:8433, got %s",
				  desc(ln, d, sizeof(d)));
		snprintf(h->listen, sizeof(h->listen), "%s", s);
	}
	if (bn) {
		if ((rc = scalar(x, bn, "http.backend",
				 "memory or redis://[[USER]:PASSWORD@]HOST:PORT[/DB]", &s)))
			return rc;
		if (xrl_http_backend_parse(s, h, msg, sizeof(msg)))
			return at(x, bn, "http.%s", msg);
	}
	return 0;
}

static int parse_http(struct cx *x, yaml_node_t *n)
{
	enum {
		F_LISTEN,
		F_BACKEND,
		F_REDIS_TIMEOUT,
		F_BREAKER_COOLDOWN,
		F_TRUSTED_PROXIES,
		F_HEADERS,
		F_MAX_CONNECTIONS,
		F_IDLE_TIMEOUT,
		F_MAX_HEADER_BYTES,
		F_MAX_KEYS,
		F_THREADS,
		F_SHED,
		F_PENALTY,
		F_RULES,
		F_FORWARDED_FROM,
		F_IGNORE_PATH_CASE,
		F_EXEMPT,
		F_FLEET,
		F_CALLERS,
		F_CALLER_SECRET_FILE,
		F_HEAD_TIMEOUT,
		F_MAX_CONN_PER_PEER,
		F_COUNT
	};
	struct field f[F_COUNT] = {
		[F_CALLERS] = { .key = "callers" },
		[F_CALLER_SECRET_FILE] = { .key = "caller_secret_file" },
		[F_HEAD_TIMEOUT] = { .key = "head_timeout" },
		[F_MAX_CONN_PER_PEER] = { .key = "max_connections_per_peer" },
		[F_LISTEN] = { .key = "listen" },
		[F_BACKEND] = { .key = "backend" },
		[F_REDIS_TIMEOUT] = { .key = "redis_timeout" },
		[F_BREAKER_COOLDOWN] = { .key = "breaker_cooldown" },
		[F_TRUSTED_PROXIES] = { .key = "trusted_proxies" },
		[F_HEADERS] = { .key = "headers" },
		[F_MAX_CONNECTIONS] = { .key = "max_connections" },
		[F_IDLE_TIMEOUT] = { .key = "idle_timeout" },
		[F_MAX_HEADER_BYTES] = { .key = "max_header_bytes" },
		[F_MAX_KEYS] = { .key = "max_keys" },
		[F_THREADS] = { .key = "threads" },
		[F_SHED] = { .key = "shed" },
		[F_PENALTY] = { .key = "penalty" },
		[F_RULES] = { .key = "rules" },
		[F_FORWARDED_FROM] = { .key = "forwarded_from" },
		[F_IGNORE_PATH_CASE] = { .key = "ignore_path_case" },
		[F_EXEMPT] = { .key = "exempt" },
		[F_FLEET] = { .key = "fleet" },
	};
	struct xrl_http_cfg *h = &x->c->http;
	char msg[XRL_ERRLEN];
	int rc;

	xrl_http_cfg_init(h);
	x->c->has_http = true;
	if ((rc = mapping(x, n, "http", "http", f, F_COUNT)))
		return rc;
	if ((rc = parse_http_endpoints(x, f[F_LISTEN].v, f[F_BACKEND].v)))
		return rc;
	if (f[F_REDIS_TIMEOUT].v &&
	    (rc = dur_val(x, f[F_REDIS_TIMEOUT].v, "http.redis_timeout", &h->redis_timeout_ns)))
		return rc;
	if (f[F_BREAKER_COOLDOWN].v &&
	    (rc = dur_val(x, f[F_BREAKER_COOLDOWN].v, "http.breaker_cooldown",
			  &h->breaker_cooldown_ns)))
		return rc;
	if ((rc = parse_http_trust(x, f[F_TRUSTED_PROXIES].v, f[F_FORWARDED_FROM].v)))
		return rc;
	if (f[F_IGNORE_PATH_CASE].v &&
	    (rc = bool_val(x, f[F_IGNORE_PATH_CASE].v, "http.ignore_path_case",
			   &h->ignore_path_case)))
		return rc;
	if (f[F_HEADERS].v && (rc = parse_http_headers(x, f[F_HEADERS].v)))
		return rc;
	if ((rc = parse_http_bounds(x, f[F_MAX_CONNECTIONS].v, f[F_IDLE_TIMEOUT].v,
				    f[F_MAX_HEADER_BYTES].v, f[F_MAX_KEYS].v, f[F_THREADS].v,
				    f[F_HEAD_TIMEOUT].v, f[F_MAX_CONN_PER_PEER].v)))
		return rc;
	if ((rc = parse_http_callers(x, f[F_CALLERS].v, f[F_CALLER_SECRET_FILE].v)))
		return rc;
	if ((rc = parse_http_shed_penalty(x, f[F_SHED].v, f[F_PENALTY].v)))
		return rc;
	if (f[F_EXEMPT].v && (rc = parse_http_exempt(x, f[F_EXEMPT].v)))
		return rc;
	if (f[F_RULES].v && (rc = parse_http_rules(x, f[F_RULES].v)))
		return rc;
	if (f[F_FLEET].v && (rc = fleet_name(x, f[F_FLEET].v, "http.fleet", h->fleet)))
		return rc;
	if ((rc = xrl_http_cfg_finish(h, msg, sizeof(msg))))
		return at(x, n, "http: %s", msg);
	return 0;
}

static int parse_top(struct cx *x, yaml_node_t *root)
{
	static const char *const exits[] = { "detach", "keep" };
	static const int evals[] = { 1, 0 };
	static const char *const levels[] = { "error", "warning", "info", "debug" };
	static const int lvals[] = { XRL_LOG_ERR, XRL_LOG_WARN, XRL_LOG_INFO, XRL_LOG_DEBUG };
	static const char metrics_what[] =
		"HOST:PORT such as 127.0.0.1:8434 or [::1]:8434, port 1-65535";
	enum {
		F_INTERFACES,
		F_XDP,
		F_PENALTY,
		F_METRICS,
		F_ON_EXIT,
		F_LOG_LEVEL,
		F_HTTP,
		F_FLEET,
		F_COUNT
	};
	struct field f[F_COUNT] = {
		[F_INTERFACES] = { .key = "interfaces" },
		[F_XDP] = { .key = "xdp" },
		[F_PENALTY] = { .key = "penalty" },
		[F_METRICS] = { .key = "metrics" },
		[F_ON_EXIT] = { .key = "on_exit" },
		[F_LOG_LEVEL] = { .key = "log_level" },
		[F_HTTP] = { .key = "http" },
		[F_FLEET] = { .key = "fleet" },
	};
	const char *s;
	char d[64];
	int rc, v;

	if (!root || is_null(root))
		return 0;
	rc = mapping(x, root, NULL, "the top level", f, F_COUNT);
	if (rc)
		return rc;
	if (f[F_INTERFACES].v && (rc = parse_ifaces(x, f[F_INTERFACES].v)))
		return rc;
	if (f[F_XDP].v && (rc = parse_xdp(x, f[F_XDP].v)))
		return rc;
	if (f[F_PENALTY].v && (rc = parse_penalty(x, f[F_PENALTY].v, true)))
		return rc;
	if (f[F_METRICS].v) {
		rc = scalar(x, f[F_METRICS].v, "metrics", metrics_what, &s);
		if (rc)
			return rc;
		if (strlen(s) >= sizeof(x->c->metrics) || !hostport_ok(s))
			return at(x, f[F_METRICS].v, "metrics: expected %s, got %s", metrics_what,
				  desc(f[F_METRICS].v, d, sizeof(d)));
		snprintf(x->c->metrics, sizeof(x->c->metrics), "%s", s);
	}
	if (f[F_ON_EXIT].v) {
		rc = ENUM(x, f[F_ON_EXIT].v, "on_exit", exits, evals, &v);
		if (rc)
			return rc;
		x->c->on_exit_detach = v;
	}
	if (f[F_LOG_LEVEL].v) {
		rc = ENUM(x, f[F_LOG_LEVEL].v, "log_level", levels, lvals, &v);
		if (rc)
			return rc;
		x->c->log_level = v;
	}
	if (f[F_HTTP].v) {
		rc = parse_http(x, f[F_HTTP].v);
		if (rc)
			return rc;
	}
	if (f[F_FLEET].v && (rc = parse_fleet(x, f[F_FLEET].v)))
		return rc;
	return fleet_resolve(x, root);
}

/* ---- entry points ------------------------------------------------------ */

/* libyaml's own error, with its position. */
static int yaml_fail(struct cx *x, const yaml_parser_t *ps, const char *buf, size_t len)
{
	size_t line = ps->problem_mark.line + 1, col = ps->problem_mark.column + 1;
	const char *problem = ps->problem ? ps->problem : "unknown error";

	switch (ps->error) {
	case YAML_MEMORY_ERROR:
		snprintf(x->err, x->errlen, "%s: out of memory reading YAML", x->name);
		return -ENOMEM;
	case YAML_READER_ERROR:
		/* a byte offset only (bad encoding): count the lines */
		line = 1;
		col = 1;
		for (size_t i = 0; i < ps->problem_offset && i < len; i++) {
			if (buf[i] == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
		}
		if (ps->problem_value != -1)
			snprintf(x->err, x->errlen, "%s:%zu:%zu: YAML error: %s (byte 0x%02x)",
				 x->name, line, col, problem, (unsigned)ps->problem_value & 0xff);
		else
			snprintf(x->err, x->errlen, "%s:%zu:%zu: YAML error: %s", x->name, line,
				 col, problem);
		return -EINVAL;
	default:
		if (ps->context)
			snprintf(x->err, x->errlen,
				 "%s:%zu:%zu: YAML syntax error: %s (%s at line %zu column %zu)",
				 x->name, line, col, problem, ps->context,
				 ps->context_mark.line + 1, ps->context_mark.column + 1);
		else
			snprintf(x->err, x->errlen, "%s:%zu:%zu: YAML syntax error: %s", x->name,
				 line, col, problem);
		return -EINVAL;
	}
}

/*
 * Bounds checked on libyaml's events before it builds a tree: the loader
 * and its scanner are not linear in what a hostile file can hold. The
 * scanner does work proportional to the flow depth for each token (40,000
 * '[' took 6.4 s; 1 MiB of them, minutes), and the loader compares each
 * anchor with every earlier one. A policy nests 6 deep and uses a handful
 * of anchors; 1,024 allow entries and 128 rules come to about 10,000 nodes.
 */
#define CFG_MAX_DEPTH	32
#define CFG_MAX_NODES	(1 << 16)
#define CFG_MAX_ANCHORS 256
#define CFG_MAX_ALIASES 1024

static int bound(struct cx *x, const yaml_event_t *ev, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* "FILE:LINE:COL: too much YAML for a policy: <what>" at an event; -E2BIG. */
static int bound(struct cx *x, const yaml_event_t *ev, const char *fmt, ...)
{
	va_list ap;
	int off;

	off = snprintf(x->err, x->errlen, "%s:%zu:%zu: too much YAML for a policy: ", x->name,
		       ev->start_mark.line + 1, ev->start_mark.column + 1);
	if (off >= 0 && (size_t)off < x->errlen) {
		va_start(ap, fmt);
		vsnprintf(x->err + off, x->errlen - (size_t)off, fmt, ap);
		va_end(ap);
	}
	return -E2BIG;
}

/* The anchor an event defines, or NULL. */
static const yaml_char_t *anchor_of(const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		return ev->data.scalar.anchor;
	case YAML_SEQUENCE_START_EVENT:
		return ev->data.sequence_start.anchor;
	case YAML_MAPPING_START_EVENT:
		return ev->data.mapping_start.anchor;
	default:
		return NULL;
	}
}

/*
 * One pass over the events, stopping at the first bound crossed, so the
 * worst file costs what its first CFG_MAX_DEPTH levels (and the scanner's
 * 1,024-byte look-ahead) cost: milliseconds. Syntax errors are reported here
 * exactly as the loader would report them. Cost: a second parse of a good
 * file (about a millisecond for the examples).
 */
static int yaml_bounds(struct cx *x, const char *buf, size_t len)
{
	size_t depth = 0, nodes = 0, anchors = 0, aliases = 0;
	yaml_parser_t ps;
	yaml_event_t ev;
	int rc = 0;

	if (!yaml_parser_initialize(&ps)) {
		snprintf(x->err, x->errlen, "%s: out of memory", x->name);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&ps, (const unsigned char *)buf, len);
	for (bool end = false; !end && !rc;) {
		if (!yaml_parser_parse(&ps, &ev)) {
			rc = yaml_fail(x, &ps, buf, len);
			break;
		}
		end = ev.type == YAML_STREAM_END_EVENT;
		if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT)
			depth--;
		if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
			if (++depth > CFG_MAX_DEPTH)
				rc = bound(x, &ev, "nested deeper than %d levels", CFG_MAX_DEPTH);
		}
		if (!rc &&
		    (ev.type == YAML_SCALAR_EVENT || ev.type == YAML_ALIAS_EVENT ||
		     ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) &&
		    ++nodes > CFG_MAX_NODES)
			rc = bound(x, &ev, "more than %d nodes", CFG_MAX_NODES);
		if (!rc && anchor_of(&ev) && ++anchors > CFG_MAX_ANCHORS)
			rc = bound(x, &ev, "more than %d anchors (&name)", CFG_MAX_ANCHORS);
		if (!rc && ev.type == YAML_ALIAS_EVENT && ++aliases > CFG_MAX_ALIASES)
			rc = bound(x, &ev, "more than %d aliases (*name)", CFG_MAX_ALIASES);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&ps);
	return rc;
}

int xrl_config_parse(const char *buf, size_t len, const char *name, struct xrld_config *out,
		     char *err, size_t errlen)
{
	char scratch[XRL_ERRLEN], msg[XRL_ERRLEN];
	struct cx x = { .name = name ? name : "<config>" };
	yaml_document_t doc, doc2;
	yaml_parser_t ps;
	yaml_node_t *root2;
	int rc;

	/* messages always go somewhere, so checks need not test err */
	x.err = err && errlen ? err : scratch;
	x.errlen = err && errlen ? errlen : sizeof(scratch);
	x.err[0] = '\0';
	if (!buf)
		buf = "";

	x.c = calloc(1, sizeof(*x.c));
	if (!x.c) {
		snprintf(x.err, x.errlen, "%s: out of memory", x.name);
		return -ENOMEM;
	}
	x.c->log_level = -1;

	if (len > CFG_FILE_MAX) {
		snprintf(x.err, x.errlen, "%s: larger than %d KiB, too large for a policy file",
			 x.name, CFG_FILE_MAX / 1024);
		free(x.c);
		return -EFBIG;
	}
	rc = yaml_bounds(&x, buf, len);
	if (rc) {
		free(x.c);
		return rc;
	}
	if (!yaml_parser_initialize(&ps)) {
		free(x.c);
		snprintf(x.err, x.errlen, "%s: out of memory", x.name);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&ps, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&ps, &doc)) {
		rc = yaml_fail(&x, &ps, buf, len);
		goto out_parser;
	}
	x.doc = &doc;

	/* one document: a second would be silently ignored otherwise */
	if (!yaml_parser_load(&ps, &doc2)) {
		rc = yaml_fail(&x, &ps, buf, len);
		goto out_doc;
	}
	root2 = yaml_document_get_root_node(&doc2);
	if (root2) {
		x.doc = &doc2;
		rc = at(&x, root2, "expected one YAML document, but a second one starts here");
		yaml_document_delete(&doc2);
		goto out_doc;
	}
	yaml_document_delete(&doc2);

	rc = parse_top(&x, yaml_document_get_root_node(&doc));
	if (rc)
		goto out_doc;

	rc = xrl_policy_compile(&x.c->policy, msg, sizeof(msg));
	if (rc) {
		snprintf(x.err, x.errlen, "%s: %s", x.name, msg);
		goto out_doc;
	}
	memcpy(out, x.c, sizeof(*out));

out_doc:
	yaml_document_delete(&doc);
out_parser:
	yaml_parser_delete(&ps);
	free(x.c);
	return rc;
}

int xrl_config_load(const char *path, struct xrld_config *out, char *err, size_t errlen)
{
	return xrl_config_load_text(path, out, NULL, NULL, err, errlen);
}

int xrl_config_load_text(const char *path, struct xrld_config *out, char **text, size_t *textlen,
			 char *err, size_t errlen)
{
	size_t len = 0, cap = 4096;
	char *buf;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		if (err && errlen)
			snprintf(err, errlen, "couldn't read %s: %s", path, strerror(-rc));
		return rc;
	}
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		if (err && errlen)
			snprintf(err, errlen, "couldn't read %s: %s", path, strerror(ENOMEM));
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb;

			if (cap > CFG_FILE_MAX) {
				if (err && errlen)
					snprintf(err, errlen,
						 "couldn't read %s: larger than %d KiB, too large for a policy file",
						 path, CFG_FILE_MAX / 1024);
				rc = -EFBIG;
				goto out;
			}
			/* one byte past the limit tells a file at the limit from a larger one */
			nb = realloc(buf, cap * 2 > CFG_FILE_MAX ? CFG_FILE_MAX + 1 : cap * 2);
			if (!nb) {
				if (err && errlen)
					snprintf(err, errlen, "couldn't read %s: %s", path,
						 strerror(ENOMEM));
				rc = -ENOMEM;
				goto out;
			}
			buf = nb;
			cap = cap * 2 > CFG_FILE_MAX ? CFG_FILE_MAX + 1 : cap * 2;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			if (err && errlen)
				snprintf(err, errlen, "couldn't read %s: %s", path, strerror(-rc));
			goto out;
		}
		if (!n)
			break;
		len += (size_t)n;
	}
	rc = xrl_config_parse(buf, len, path, out, err, errlen);
	if (!rc && text) {
		*text = buf; /* the bytes parsed, for whoever parses them again */
		*textlen = len;
		buf = NULL;
	}
out:
	free(buf);
	close(fd);
	return rc;
}

/* ---- summary ----------------------------------------------------------- */

struct sb {
	char *buf;
	size_t len, off;
	bool full;
};

static void put(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct sb *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->full || !b->len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->buf + b->off, b->len - b->off, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= b->len - b->off) {
		b->full = true;
		b->off = b->len - 1;
		return;
	}
	b->off += (size_t)n;
}

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
	return s->penalty == XRL_PEN_UNVERIFIED ? ", penalty on any refusal (sources trusted)"
						: ", penalty on verified sources";
}

/* The listening address of h as a prefix; false when it is not one
 * (a host name) or is the unspecified address (every local address). */
static bool http_listen_addr(const struct xrl_http_cfg *h, struct xrl_prefix *a, bool *any)
{
	char host[80];
	int port;

	*any = false;
	memset(a, 0, sizeof(*a));
	if (xrl_hostport_parse(h->listen, strlen(h->listen), host, sizeof(host), &port))
		return false;
	if (inet_pton(AF_INET, host, &a->addr[0]) == 1)
		a->family = XRL_AF_INET, a->plen = 32;
	else if (inet_pton(AF_INET6, host, a->addr) == 1)
		a->family = XRL_AF_INET6, a->plen = 128;
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
static void http_warnings(struct sb *b, const struct xrl_http_cfg *h)
{
	struct xrl_prefix a;
	char t[64];
	bool any, lo;

	if (!http_listen_addr(h, &a, &any))
		return;
	lo = !any && xrl_http_loopback(&a);
	if (!lo && !h->n_callers && !h->n_trusted)
		put(b,
		    "warning: http listens on %s but only loopback may ask (no http.callers, no "
		    "trusted_proxies): every other peer gets 403\n",
		    h->listen);
	for (__u32 i = 0; lo && i < h->n_callers; i++)
		if (!xrl_http_loopback(&h->callers[i])) {
			put(b,
			    "warning: http.callers lists %s, but http listens on %s: no such peer "
			    "can connect\n",
			    xrl_prefix_str(&h->callers[i], t, sizeof(t)), h->listen);
			break;
		}
	for (__u32 i = 0; i < h->n_callers + h->n_trusted; i++) {
		const struct xrl_prefix *p =
			i < h->n_callers ? &h->callers[i] : &h->trusted[i - h->n_callers];

		if (p->plen || h->caller_secret_len)
			continue;
		put(b,
		    "warning: http.%s %s lets every peer ask, without caller_secret_file: "
		    "whoever reaches %s can spend any key's tokens\n",
		    i < h->n_callers ? "callers" : "trusted_proxies",
		    xrl_prefix_str(p, t, sizeof(t)), h->listen);
	}
}

/* The fleet's line of the summary, and a protect entry that disarms it. */
static void fleet_summary(struct sb *b, const struct xrld_config *c)
{
	const struct xrl_fleet_cfg *f = &c->fleet;
	char a[64], d[32];

	if (!f->enabled)
		return;
	put(b, "fleet: %s, %s, NODE_SHARE counts at most %u members", f->name,
	    f->packet ? "packet-tier denials shared" : "identity tier only", f->max_members);
	if (f->packet)
		put(b,
		    "; a fleet denial lasts at most %s (%s), never covers the allowlist, "
		    "the fleet's Redis, this host's addresses or %u protected prefix%s",
		    dur_str(c->penalty.enabled ? c->penalty.max_ns : XRL_FLEET_DENY_MAX_NS, d,
			    sizeof(d)),
		    c->penalty.enabled ? "penalty.max" : "penalties off: the default",
		    f->n_protect, f->n_protect == 1 ? "" : "es");
	put(b, "\n");
	for (__u32 i = 0; i < f->n_protect; i++)
		if (!f->protect[i].plen)
			put(b,
			    "warning: fleet.protect[%u] %s covers every %s address: no fleet "
			    "denial of that family is ever applied here\n",
			    i, xrl_prefix_str(&f->protect[i], a, sizeof(a)),
			    f->protect[i].family == XRL_AF_INET ? "IPv4" : "IPv6");
}

int xrl_config_summary(const struct xrld_config *c, char *buf, size_t len)
{
	static const char *const levels[] = { "error", "warning", "info", "debug" };
	struct sb b = { .buf = buf, .len = len };
	const struct xrl_policy *p = &c->policy;
	char a[64], r[48], d1[32], d2[32], d3[32];
	__u32 v4 = 0;

	if (!buf || !len)
		return -ENOSPC;
	buf[0] = '\0';

	put(&b, "interfaces:");
	if (!c->n_ifaces)
		put(&b, " none");
	for (__u32 i = 0; i < c->n_ifaces; i++)
		put(&b, "%s %s (%s)", i ? "," : "", c->ifaces[i].name, mode_str(c->ifaces[i].mode));
	put(&b, "\n");

	if (!c->has_xdp) {
		put(&b, "xdp: no section\n");
	} else {
		for (__u32 i = 0; i < p->n_allow; i++)
			v4 += p->allow[i].family == XRL_AF_INET;
		put(&b, "allow: %u prefix%s (%u IPv4, %u IPv6)\n", p->n_allow,
		    p->n_allow == 1 ? "" : "es", v4, p->n_allow - v4);
		put(&b, "rules: %u\n", p->n_rules);
		for (__u32 i = 0; i < p->n_rules; i++) {
			const struct xrl_rule_spec *s = &p->rules[i];

			put(&b, "  %s: %s%s", s->name,
			    s->proto == XRL_PROTO_TCP	? "tcp"
			    : s->proto == XRL_PROTO_UDP ? "udp"
							: "any proto",
			    s->tcp_class == XRL_TCP_SYN ? " syn" : "");
			if (s->has_dst)
				put(&b, " to %s", xrl_prefix_str(&s->dst, a, sizeof(a)));
			for (__u32 j = 0; j < s->n_ports; j++) {
				put(&b, "%s%u",
				    j							 ? ","
				    : s->n_ports > 1 || s->ports[0].lo != s->ports[0].hi ? " ports "
											 : " port ",
				    s->ports[j].lo);
				if (s->ports[j].hi != s->ports[j].lo)
					put(&b, "-%u", s->ports[j].hi);
			}
			put(&b, ", key /%u /%u, %s burst %u, %s", s->key_plen4, s->key_plen6,
			    rate_str(&s->rate, r, sizeof(r)), s->burst,
			    s->action == XRL_ACT_SHADOW ? "shadow" : "drop");
			put(&b, "%s%s\n",
			    s->syn_cookies == XRL_COOKIES_ON	 ? ", SYN cookies"
			    : s->syn_cookies == XRL_COOKIES_AUTO ? ", SYN cookies auto"
								 : "",
			    penalty_str(c, s));
		}
		put(&b, "buckets: %u%s, event interval %s%s\n",
		    c->buckets_max ? c->buckets_max : XRL_BUCKETS_DEFAULT,
		    c->buckets_max ? "" : " (default)",
		    dur_str(c->event_interval_ns ? c->event_interval_ns : XRL_NSEC_PER_SEC, d1,
			    sizeof(d1)),
		    c->event_interval_ns ? "" : " (default)");
	}

	if (c->penalty.enabled)
		put(&b,
		    "penalty: %u strike%s within %s -> deny %s, doubling up to %s; "
		    "never shorter than /%u (IPv4) /%u (IPv6)\n",
		    c->penalty.strikes, c->penalty.strikes == 1 ? "" : "s",
		    dur_str(c->penalty.window_ns, d1, sizeof(d1)),
		    dur_str(c->penalty.base_ns, d2, sizeof(d2)),
		    dur_str(c->penalty.max_ns, d3, sizeof(d3)), c->penalty.floor4,
		    c->penalty.floor6);
	else
		put(&b, "penalty: off\n");
	put(&b, "metrics: %s\n", c->metrics[0] ? c->metrics : "off");
	put(&b, "on exit: %s\n", c->on_exit_detach ? "detach" : "keep attached");
	if (c->log_level >= 0 && c->log_level <= XRL_LOG_DEBUG)
		put(&b, "log level: %s\n", levels[c->log_level]);
	if (c->has_http)
{
		put(&b, "http: present (read by the identity tier)\n");
		http_warnings(&b, &c->http);
	}
	fleet_summary(&b, c);
	return b.full ? -ENOSPC : 0;
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

static json_t *http_json(const struct xrl_http_cfg *h)
{
	json_t *rules = json_array(), *o;
	char r[48], d[32];

	for (__u32 i = 0; i < h->n_rules; i++) {
		const struct xrl_http_rule *x = &h->rules[i];

		/* a rule of concurrency only has no rate and burst: null */
		json_array_append_new(rules,
				      json_pack("{s:s,s:s,s:s,s:s?,s:o,s:I,s:b,s:o,s:s?}", "name",
						x->name, "method", x->method, "path_prefix",
						x->path_prefix, "rate",
						x->has_rate ? rate_str(&x->rate, r, sizeof(r))
							    : NULL,
						"burst",
						x->has_rate ? json_integer(x->burst) : json_null(),
						"cost", (json_int_t)x->cost, "shadow", x->shadow,
						"concurrency",
						x->concurrency ? json_integer(x->concurrency)
							       : json_null(),
						"lease_ttl",
						x->concurrency
							? dur_str(x->lease_ttl_ns, d, sizeof(d))
							: NULL));
	}
	/* the Redis password is never shown */
	o = json_pack("{s:s,s:s,s:o}", "listen", h->listen, "backend",
		      h->redis ? "redis" : "memory", "rules", rules);
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
			 c->has_http ? http_json(&c->http) : json_null());
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
