// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * config_yaml.c - the policy file parser's YAML helpers: errors placed at a
 * node, typed scalars, mappings checked against their keys, sequences.
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

/* "FILE:LINE:COL: <message>" at node n; returns -EINVAL. */
int cfg_error_at(struct cfg_parse *x, const yaml_node_t *n, const char *fmt, ...)
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

const char *cfg_sval(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/* A plain scalar that YAML reads as null: `key:`, `key: ~`, `key: null`. */
bool cfg_is_null(const yaml_node_t *n)
{
	const char *v;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	v = cfg_sval(n);
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	       !strcmp(v, "NULL");
}

/* How a node looks, for "got ...": 'text', nothing, a mapping, a list. */
const char *cfg_desc(const yaml_node_t *n, char *buf, size_t len)
{
	const char *v;
	size_t l;

	switch (n->type) {
	case YAML_MAPPING_NODE:
		return "a mapping";
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_SCALAR_NODE:
		if (cfg_is_null(n))
			return "nothing";
		v = cfg_sval(n);
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
const char *cfg_detail(const char *msg, const char *v, char *buf, size_t len)
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
void cfg_subpath(char *out, const char *base, const char *fmt, ...)
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
int cfg_scalar(struct cfg_parse *x, const yaml_node_t *n, const char *path, const char *what,
	       const char **out)
{
	char d[64];

	if (n->type != YAML_SCALAR_NODE || cfg_is_null(n))
		return cfg_error_at(x, n, "%s: expected %s, got %s", path, what,
				    cfg_desc(n, d, sizeof(d)));
	if (strlen(cfg_sval(n)) != n->data.scalar.length)
		return cfg_error_at(x, n, "%s: expected %s, got a value with a NUL character in it",
				    path, what);
	*out = cfg_sval(n);
	return 0;
}

/* A decimal whole number in [min, max]; digits only. */
int cfg_uint_val(struct cfg_parse *x, const yaml_node_t *n, const char *path, const char *what,
		 __u64 min, __u64 max, __u64 *out)
{
	const char *s;
	__u64 v = 0;
	char d[64];
	int rc;

	rc = cfg_scalar(x, n, path, what, &s);
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
	return cfg_error_at(x, n, "%s: expected %s, got %s", path, what, cfg_desc(n, d, sizeof(d)));
}

/* One of a few words. */
int cfg_enum_val(struct cfg_parse *x, const yaml_node_t *n, const char *path,
		 const char *const *words, const int *vals, size_t nw, int *out)
{
	char what[128] = "one of ", d[64];
	const char *s = NULL;
	size_t off = strlen(what);
	int rc;

	for (size_t i = 0; i < nw; i++)
		off += (size_t)snprintf(what + off, sizeof(what) - off, "%s%s",
					i ? (i + 1 == nw ? " or " : ", ") : "", words[i]);
	rc = cfg_scalar(x, n, path, what, &s);
	if (rc)
		return rc;
	for (size_t i = 0; i < nw; i++) {
		if (!strcmp(s, words[i])) {
			*out = vals[i];
			return 0;
		}
	}
	return cfg_error_at(x, n, "%s: expected %s, got %s", path, what, cfg_desc(n, d, sizeof(d)));
}

/* An optional field of a mapping: path + sub names it; *out stays when n is NULL. */
int cfg_opt_enum_val(struct cfg_parse *x, yaml_node_t *n, const char *path, const char *sub,
		     const char *const *words, const int *vals, size_t nw, int *out)
{
	char p2[PATHLEN];

	if (!n)
		return 0;
	cfg_subpath(p2, path, "%s", sub);
	return cfg_enum_val(x, n, p2, words, vals, nw, out);
}

int cfg_parsed_val(struct cfg_parse *x, const yaml_node_t *n, const char *path, const char *what,
		   cfg_parse_fn parse, void *out)
{
	char msg[XRL_ERRLEN], dt[DETAIL], d[64];
	const char *s;
	int rc;

	rc = cfg_scalar(x, n, path, what, &s);
	if (rc)
		return rc;
	if (parse(s, out, msg, sizeof(msg)))
		return cfg_error_at(x, n, "%s: expected %s, got %s%s", path, what,
				    cfg_desc(n, d, sizeof(d)), cfg_detail(msg, s, dt, sizeof(dt)));
	return 0;
}

static int parse_prefix(const char *s, void *out, char *err, size_t errlen)
{
	return xrl_prefix_parse(s, out, err, errlen);
}

int cfg_rate_parse(const char *s, void *out, char *err, size_t errlen)
{
	return xrl_rate_parse(s, out, err, errlen);
}

static int parse_duration(const char *s, void *out, char *err, size_t errlen)
{
	return xrl_duration_parse(s, out, err, errlen);
}

/* A duration above zero: "60s", "500ms", "1h". */
int cfg_dur_val(struct cfg_parse *x, const yaml_node_t *n, const char *path, __u64 *out)
{
	static const char what[] = "a duration such as 500ms, 60s, 10m or 1h";
	char d[64];
	__u64 ns;
	int rc;

	rc = cfg_parsed_val(x, n, path, what, parse_duration, &ns);
	if (rc)
		return rc;
	if (!ns)
		return cfg_error_at(x, n, "%s: expected %s, got %s: it must be above zero", path,
				    what, cfg_desc(n, d, sizeof(d)));
	*out = ns;
	return 0;
}

/* An address prefix: "10.0.0.0/8", "2001:db8::/48", "192.0.2.1". */
int cfg_prefix_val(struct cfg_parse *x, const yaml_node_t *n, const char *path,
		   struct xrl_prefix *out)
{
	return cfg_parsed_val(x, n, path, "an address prefix such as 10.0.0.0/8 or 2001:db8::/48",
			      parse_prefix, out);
}

/* A rate: "100/s", "10/min", "1/6s". */
int cfg_rate_val(struct cfg_parse *x, const yaml_node_t *n, const char *path, struct xrl_rate *r)
{
	return cfg_parsed_val(x, n, path, "COUNT/PERIOD such as 100/s, 10/min or 1/6s",
			      cfg_rate_parse, r);
}

/*
 * A sequence of address prefixes at path into out[0 .. max), none listed
 * twice; *n_out counts those read so far. many: what the "at most" counts.
 */
int cfg_prefix_list(struct cfg_parse *x, yaml_node_t *n, const char *path, const char *many,
		    size_t max, struct xrl_prefix *out, __u32 *n_out)
{
	yaml_node_item_t *items;
	size_t count;
	int rc;

	rc = cfg_sequence(x, n, path, "address prefixes", &items, &count);
	if (rc)
		return rc;
	for (size_t i = 0; i < count; i++) {
		yaml_node_t *it = cfg_item(x, items, i);
		char p2[PATHLEN], a[64];

		snprintf(p2, sizeof(p2), "%s[%zu]", path, i);
		if (i >= max)
			return cfg_error_at(x, it, "%s: at most %zu %s", p2, max, many);
		rc = cfg_prefix_val(x, it, p2, &out[i]);
		if (rc)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (!memcmp(&out[j], &out[i], sizeof(out[i])))
				return cfg_error_at(x, it,
						    "%s: %s is listed twice (first as %s[%zu])", p2,
						    xrl_prefix_str(&out[i], a, sizeof(a)), path, j);
		*n_out = (__u32)i + 1;
	}
	return 0;
}

/* ---- mappings ---------------------------------------------------------- */

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
int cfg_mapping(struct cfg_parse *x, yaml_node_t *n, const char *path, const char *what,
		struct field *f, size_t nf)
{
	const char *sep = path ? ": " : "";
	char d[64], list[512];
	size_t off = 0;

	if (!path)
		path = "";

	for (size_t i = 0; i < nf; i++)
		f[i].k = f[i].v = NULL;
	if (cfg_is_null(n))
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
		return cfg_error_at(x, n, "%s%sexpected a mapping (%s), got %s", path, sep, list,
				    cfg_desc(n, d, sizeof(d)));
	}

	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(x->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(x->doc, p->value);
		const char *best = NULL;
		size_t i, bestd = 3;

		if (k->type != YAML_SCALAR_NODE)
			return cfg_error_at(x, k, "%s%sexpected a key (%s), got %s", path, sep,
					    list, cfg_desc(k, d, sizeof(d)));
		for (i = 0; i < nf; i++)
			if (!strcmp(cfg_sval(k), f[i].key))
				break;
		if (i < nf) {
			if (f[i].k)
				return cfg_error_at(x, k,
						    "%s%skey '%s' is given twice (first at line %zu)",
						    path, sep, f[i].key,
						    f[i].k->start_mark.line + 1);
			f[i].k = k;
			f[i].v = v;
			continue;
		}
		for (size_t j = 0; j < nf; j++) {
			size_t e = edits(cfg_sval(k), f[j].key);

			if (e < bestd) {
				bestd = e;
				best = f[j].key;
			}
		}
		if (best && strlen(cfg_sval(k)) > 2)
			return cfg_error_at(
				x, k,
				"%s%sunknown key %s in %s; expected one of %s (did you mean '%s'?)",
				path, sep, cfg_desc(k, d, sizeof(d)), what, list, best);
		return cfg_error_at(x, k, "%s%sunknown key %s in %s; expected one of %s", path, sep,
				    cfg_desc(k, d, sizeof(d)), what, list);
	}
	return 0;
}

/* A list (or null, read as empty); items through *items, count through *n. */
int cfg_sequence(struct cfg_parse *x, yaml_node_t *n, const char *path, const char *what,
		 yaml_node_item_t **items, size_t *count)
{
	char d[64];

	*items = NULL;
	*count = 0;
	if (cfg_is_null(n))
		return 0;
	if (n->type != YAML_SEQUENCE_NODE)
		return cfg_error_at(x, n, "%s: expected a list of %s, got %s", path, what,
				    cfg_desc(n, d, sizeof(d)));
	*items = n->data.sequence.items.start;
	*count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	return 0;
}

int cfg_submapping(struct cfg_parse *x, yaml_node_t *n, char *path, const char *parent,
		   const char *key, struct field *f, size_t nf)
{
	cfg_subpath(path, parent, ".%s", key);
	return cfg_mapping(x, n, path, key, f, nf);
}

int cfg_per_sec_val(struct cfg_parse *x, const yaml_node_t *n, const char *path, __u64 *out)
{
	static const char what[] = "COUNT/PERIOD such as 5000/s";
	struct xrl_rate r;
	char d[64];
	int rc;

	rc = cfg_parsed_val(x, n, path, what, cfg_rate_parse, &r);
	if (rc)
		return rc;
	*out = r.tokens * XRL_NSEC_PER_SEC / r.period_ns;
	if (!*out)
		return cfg_error_at(x, n, "%s: expected %s, got %s: at least 1/s", path, what,
				    cfg_desc(n, d, sizeof(d)));
	return 0;
}

/* v into a member of 1, 2, 4 or 8 bytes (a CFG_UINT's max fits it). */
static void put_number(void *at, size_t size, __u64 v)
{
	switch (size) {
	case 1:
		*(__u8 *)at = (__u8)v;
		break;
	case 2:
		*(__u16 *)at = (__u16)v;
		break;
	case 4:
		*(__u32 *)at = (__u32)v;
		break;
	default:
		*(__u64 *)at = v;
	}
}

int cfg_number(struct cfg_parse *x, const yaml_node_t *n, const char *parent,
	       const struct cfg_num *t, void *dst)
{
	char path[PATHLEN];
	__u64 v;
	int rc;

	cfg_subpath(path, parent, ".%s", t->key);
	if (t->kind == CFG_BOOL) {
		bool b = false;

		rc = cfg_bool_val(x, n, path, &b);
		v = b;
	} else if (t->kind == CFG_DUR)
		rc = cfg_dur_val(x, n, path, &v);
	else if (t->kind == CFG_PER_SEC)
		rc = cfg_per_sec_val(x, n, path, &v);
	else
		rc = cfg_uint_val(x, n, path, t->what, t->min, t->max, &v);
	if (!rc && t->kind == CFG_BOOL)
		*(bool *)((char *)dst + t->off) = v;
	else if (!rc)
		put_number((char *)dst + t->off, t->size, v);
	return rc;
}

/* nt <= CFG_NUMS_MAX: NUMBERS checks it at build time. */
int cfg_numbers(struct cfg_parse *x, yaml_node_t *n, char *path, const char *parent,
		const char *key, const struct cfg_num *t, size_t nt, void *dst)
{
	struct field f[CFG_NUMS_MAX];
	int rc;

	for (size_t i = 0; i < nt; i++)
		f[i].key = t[i].key;
	rc = cfg_submapping(x, n, path, parent, key, f, nt);
	for (size_t i = 0; !rc && i < nt; i++)
		if (f[i].v)
			rc = cfg_number(x, f[i].v, path, &t[i], dst);
	return rc;
}

yaml_node_t *cfg_item(struct cfg_parse *x, yaml_node_item_t *items, size_t i)
{
	return yaml_document_get_node(x->doc, items[i]);
}

int cfg_each(struct cfg_parse *x, yaml_node_t *n, const struct cfg_list *l)
{
	yaml_node_item_t *items;
	size_t count;
	int rc = cfg_sequence(x, n, l->path, l->what, &items, &count);

	for (size_t i = 0; !rc && i < count; i++) {
		yaml_node_t *it = cfg_item(x, items, i);
		char ip[PATHLEN];

		if (i >= l->max && l->bare_limit)
			return cfg_error_at(x, it, "%s: at most %zu %s", l->path, l->max, l->noun);
		if (i >= l->max)
			return cfg_error_at(x, it, "%s[%zu]: at most %zu %s", l->path, i, l->max,
					    l->noun);
		cfg_subpath(ip, l->path, "[%zu]", i);
		rc = l->one(x, it, ip, i, l->ctx);
	}
	return rc;
}

int cfg_bool_val(struct cfg_parse *x, const yaml_node_t *n, const char *path, bool *out)
{
	static const char *const words[] = { "true", "false", "yes", "no", "on", "off" };
	static const int vals[] = { 1, 0, 1, 0, 1, 0 };
	int v, rc;

	rc = ENUM(x, n, path, words, vals, &v);
	if (!rc)
		*out = v;
	return rc;
}
