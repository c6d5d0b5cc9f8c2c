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
 *
 * Here: the entry points, the bounds, the top level and penalty:. The YAML
 * helpers and each section have a file of their own (config_int.h).
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

#define CFG_FILE_MAX (1 << 20) /* a policy larger than 1 MiB is a mistake */

/*
 * penalty: { strikes, window, base, max [, floor_v4, floor_v6] }. The floors
 * (packet tier only) are the shortest prefixes a penalty may deny: a rule
 * keyed on a shorter prefix (an aggregate cap such as /0) never feeds one.
 */
int cfg_parse_penalty(struct cfg_parse *x, yaml_node_t *n, bool packet)
{
#define KEYS(X) \
	X(F_STRIKES, "strikes") \
	X(F_WINDOW, "window") X(F_BASE, "base") X(F_MAX, "max") X(F_FLOOR_V4, "floor_v4") \
		X(F_FLOOR_V6, "floor_v6")
	CFG_KEYS(KEYS, F_COUNT, f);
#undef KEYS
	static const char *const why[] = {
		"refusal windows before a source is denied, e.g. 3",
		"the length of a strike window, e.g. 60s",
		"the first denial's length, e.g. 60s",
		"the longest denial, e.g. 1h",
	};
	struct xrl_penalty_cfg *p = &x->c->penalty;
	__u64 v;
	int rc;

	rc = cfg_mapping(x, n, "penalty", "penalty", f, packet ? 6 : 4);
	if (rc)
		return rc;
	for (size_t i = 0; i < 4; i++)
		if (!f[i].v)
			return cfg_error_at(
				x, n,
				"penalty: missing '%s' (%s); a penalty section needs strikes, window, base and max",
				f[i].key, why[i]);
	rc = cfg_uint_val(x, f[F_STRIKES].v, "penalty.strikes",
			  "a whole number of strikes, 1 or more", 1, UINT32_MAX, &v);
	if (rc)
		return rc;
	p->strikes = (__u32)v;
	if ((rc = cfg_dur_val(x, f[F_WINDOW].v, "penalty.window", &p->window_ns)) ||
	    (rc = cfg_dur_val(x, f[F_BASE].v, "penalty.base", &p->base_ns)) ||
	    (rc = cfg_dur_val(x, f[F_MAX].v, "penalty.max", &p->max_ns)))
		return rc;
	if (p->base_ns > p->max_ns)
		return cfg_error_at(x, f[F_BASE].v,
				    "penalty.base: expected base <= max, got base %s and max %s",
				    cfg_sval(f[F_BASE].v), cfg_sval(f[F_MAX].v));
	p->floor4 = 24;
	p->floor6 = 48;
	if (f[F_FLOOR_V4].v) {
		if ((rc = cfg_uint_val(x, f[F_FLOOR_V4].v, "penalty.floor_v4",
				       "a prefix length from 8 to 32", 8, 32, &v)))
			return rc;
		p->floor4 = (__u8)v;
	}
	if (f[F_FLOOR_V6].v) {
		if ((rc = cfg_uint_val(x, f[F_FLOOR_V6].v, "penalty.floor_v6",
				       "a prefix length from 16 to 128", 16, 128, &v)))
			return rc;
		p->floor6 = (__u8)v;
	}
	p->enabled = true;
	return 0;
}

static int parse_top(struct cfg_parse *x, yaml_node_t *root)
{
	static const char *const exits[] = { "detach", "keep" };
	static const int evals[] = { 1, 0 };
	static const char *const levels[] = { "error", "warning", "info", "debug" };
	static const int lvals[] = { XRL_LOG_ERR, XRL_LOG_WARN, XRL_LOG_INFO, XRL_LOG_DEBUG };
	static const char metrics_what[] =
		"HOST:PORT such as 127.0.0.1:8434 or [::1]:8434, port 1-65535";
#define KEYS(X) \
	X(F_INTERFACES, "interfaces") \
	X(F_XDP, "xdp") X(F_PENALTY, "penalty") X(F_METRICS, "metrics") X(F_ON_EXIT, "on_exit") \
		X(F_LOG_LEVEL, "log_level") X(F_HTTP, "http") X(F_FLEET, "fleet")
	CFG_KEYS(KEYS, F_COUNT, f);
#undef KEYS
	const char *s;
	char d[64];
	int rc, v;

	if (!root || cfg_is_null(root))
		return 0;
	rc = cfg_mapping(x, root, NULL, "the top level", f, F_COUNT);
	if (rc)
		return rc;
	if (f[F_INTERFACES].v && (rc = cfg_parse_ifaces(x, f[F_INTERFACES].v)))
		return rc;
	if (f[F_XDP].v && (rc = cfg_parse_xdp(x, f[F_XDP].v)))
		return rc;
	if (f[F_PENALTY].v && (rc = cfg_parse_penalty(x, f[F_PENALTY].v, true)))
		return rc;
	if (f[F_METRICS].v) {
		rc = cfg_scalar(x, f[F_METRICS].v, "metrics", metrics_what, &s);
		if (rc)
			return rc;
		if (strlen(s) >= sizeof(x->c->metrics) ||
		    xrl_hostport_parse(s, strlen(s), x->c->metrics_host, sizeof(x->c->metrics_host),
				       &x->c->metrics_port))
			return cfg_error_at(x, f[F_METRICS].v, "metrics: expected %s, got %s",
					    metrics_what, cfg_desc(f[F_METRICS].v, d, sizeof(d)));
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
		rc = cfg_parse_http(x, f[F_HTTP].v);
		if (rc)
			return rc;
	}
	if (f[F_FLEET].v && (rc = cfg_parse_fleet(x, f[F_FLEET].v)))
		return rc;
	return cfg_fleet_resolve(x, root);
}

/* ---- entry points ------------------------------------------------------ */

/* libyaml's own error, with its position. */
static int yaml_fail(struct cfg_parse *x, const yaml_parser_t *ps, const char *buf, size_t len)
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

static int bound(struct cfg_parse *x, const yaml_event_t *ev, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* "FILE:LINE:COL: too much YAML for a policy: <what>" at an event; -E2BIG. */
static int bound(struct cfg_parse *x, const yaml_event_t *ev, const char *fmt, ...)
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
static int yaml_bounds(struct cfg_parse *x, const char *buf, size_t len)
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
	struct cfg_parse x = { .name = name ? name : "<config>" };
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
		rc = cfg_error_at(&x, root2,
				  "expected one YAML document, but a second one starts here");
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
