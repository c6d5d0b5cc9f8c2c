// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * config_http.c - the identity tier's section of the policy file: http
 * (listen, backend, rules, trust, callers, bounds, shed, exempt, headers).
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

/*
 * A path_prefix must be written as requests are matched, normalised
 * (xrl_http_path_norm): "/api//holds" or "/api/%68olds" would never match
 * anything, so they are errors that show the form to write.
 */
static int path_prefix_val(struct cfg_parse *x, const yaml_node_t *n, const char *path,
			   const char *s, char *out, size_t outlen)
{
	char norm[sizeof(((struct xrl_http_rule *)0)->path_prefix)];
	int rc = xrl_http_path_norm(s, strlen(s), norm, sizeof(norm));

	if (rc < 0)
		return cfg_error_at(
			x, n,
			"%s: expected a path (no query, no bad %%XX escape, no %%00), got '%s'",
			path, s);
	if (strcmp(norm, s))
		return cfg_error_at(x, n,
				    "%s: '%s' is not how requests are matched (dot segments removed, '//' "
				    "merged, %%XX decoded, ;params cut): write '%s'",
				    path, s, norm);
	snprintf(out, outlen, "%s", norm);
	return 0;
}

/* http.rules[i].match: method and path_prefix. */
static int parse_http_match(struct cfg_parse *x, yaml_node_t *n, const char *path,
			    struct xrl_http_rule *r)
{
#define KEYS(X) X(M_METHOD, "method") X(M_PATH_PREFIX, "path_prefix")
	CFG_KEYS(KEYS, M_COUNT, m);
#undef KEYS
	char p2[PATHLEN], d[64];
	const char *s;
	int rc;

	if ((rc = cfg_submapping(x, n, p2, path, "match", m, M_COUNT)))
		return rc;
	if (m[M_METHOD].v) {
		cfg_subpath(p2, path, ".match.method");
		if ((rc = cfg_scalar(x, m[M_METHOD].v, p2, "an HTTP method such as POST", &s)))
			return rc;
		if (!*s || strlen(s) >= sizeof(r->method) ||
		    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(s))
			return cfg_error_at(
				x, m[M_METHOD].v,
				"%s: expected an HTTP method in capitals such as POST, got %s", p2,
				cfg_desc(m[M_METHOD].v, d, sizeof(d)));
		snprintf(r->method, sizeof(r->method), "%s", s);
	}
	if (m[M_PATH_PREFIX].v) {
		cfg_subpath(p2, path, ".match.path_prefix");
		if ((rc = cfg_scalar(x, m[M_PATH_PREFIX].v, p2, "a path starting with /", &s)))
			return rc;
		if (s[0] != '/' || strlen(s) >= sizeof(r->path_prefix))
			return cfg_error_at(x, m[M_PATH_PREFIX].v,
					    "%s: expected a path starting with /, got %s", p2,
					    cfg_desc(m[M_PATH_PREFIX].v, d, sizeof(d)));
		if ((rc = path_prefix_val(x, m[M_PATH_PREFIX].v, p2, s, r->path_prefix,
					  sizeof(r->path_prefix))))
			return rc;
	}
	return 0;
}

/* http.rules[i].key: header:NAME, bearer or client_ip. */
static int parse_http_key(struct cfg_parse *x, yaml_node_t *n, const char *path,
			  struct xrl_http_rule *r)
{
	static const char key_what[] = "header:NAME, bearer, client_ip or global";
	char p2[PATHLEN], d[64];
	const char *s;
	int rc;

	cfg_subpath(p2, path, ".key");
	if ((rc = cfg_scalar(x, n, p2, key_what, &s)))
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
		return cfg_error_at(x, n, "%s: expected %s, got %s", p2, key_what,
				    cfg_desc(n, d, sizeof(d)));
	}
	return 0;
}

/*
 * A rule's numbers: rate and burst (a token bucket), cost (0: counted,
 * never refused), concurrency (requests held at once) and lease_ttl (when a
 * slot not given back is free again). A NULL node: not given.
 */
static int parse_http_rule_limits(struct cfg_parse *x, yaml_node_t *rate, yaml_node_t *burst,
				  yaml_node_t *cost, yaml_node_t *conc, yaml_node_t *ttl,
				  const char *path, struct xrl_http_rule *r)
{
	const struct cfg_num nums[] = {
		{ "burst", CFG_UINT, CFG_AT(struct xrl_http_rule, burst),
		  "a whole number from 1 to 100000000", 1, XRL_GCRA_BURST_MAX },
		{ "cost", CFG_UINT, CFG_AT(struct xrl_http_rule, cost),
		  "a whole number of tokens, 0 or more, at most the burst", 0, 1 },
		{ "concurrency", CFG_UINT, CFG_AT(struct xrl_http_rule, concurrency),
		  "a whole number of requests from 1 to 65536", 1, XRL_HTTP_CONC_MAX },
	};
	yaml_node_t *const given[] = { rate ? burst : NULL, cost, conc };
	char p2[PATHLEN], d[64];
	int rc;

	if (rate) {
		cfg_subpath(p2, path, ".rate");
		if ((rc = cfg_rate_val(x, rate, p2, &r->rate)))
			return rc;
	}
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		struct cfg_num t = nums[i];

		if (i == 1 && rate)
			t.max = r->burst; /* cost: at most the burst, when there is one */
		if (given[i] && (rc = cfg_number(x, given[i], path, &t, r)))
			return rc;
	}
	r->cost_zero = cost && !r->cost;
	if (ttl) {
		cfg_subpath(p2, path, ".lease_ttl");
		if (!conc)
			return cfg_error_at(x, ttl, "%s: only a rule with concurrency has leases",
					    p2);
		if ((rc = cfg_dur_val(x, ttl, p2, &r->lease_ttl_ns)))
			return rc;
		if (r->lease_ttl_ns < XRL_NSEC_PER_SEC ||
		    r->lease_ttl_ns > 86400 * XRL_NSEC_PER_SEC)
			return cfg_error_at(x, ttl, "%s: expected 1s to 1d, got %s", p2,
					    cfg_desc(ttl, d, sizeof(d)));
	}
	return 0; /* the defaults: xrl_http_cfg_finish, for every caller */
}

/*
 * An http rule's vouch and vouch_ttl. The vouch map is the packet tier's:
 * an xrld without interfaces (an identity tier alone) has none to write,
 * so vouch: true is refused there rather than silently doing nothing.
 */
static int parse_http_vouch(struct cfg_parse *x, yaml_node_t *vn, yaml_node_t *tn, const char *path,
			    struct xrl_http_rule *r)
{
	char p2[PATHLEN];
	int rc;

	r->vouch_ttl_ns = (__u64)XRL_VOUCH_TTL_S * XRL_NSEC_PER_SEC;
	if (vn) {
		cfg_subpath(p2, path, ".vouch");
		if ((rc = cfg_bool_val(x, vn, p2, &r->vouch)))
			return rc;
		if (r->vouch && !x->c->n_ifaces)
			return cfg_error_at(
				x, vn,
				"%s: vouch: true needs the packet tier in this xrld (an "
				"interfaces: entry): the vouched sources live in its XDP maps",
				p2);
	}
	if (tn) {
		cfg_subpath(p2, path, ".vouch_ttl");
		if ((rc = cfg_dur_val(x, tn, p2, &r->vouch_ttl_ns)))
			return rc;
	}
	return 0;
}

/*
 * An http rule's disarm: { refused_sources: 20%, window: 60s }. The share
 * is a whole percentage from 1 to 100 ("20%" or 20); the window from 20 s
 * (two of xrld's 10 s epochs: the test needs more than one) to 1 h.
 */
static int parse_http_disarm(struct cfg_parse *x, yaml_node_t *n, const char *rpath,
			     struct xrl_http_rule *r)
{
#define KEYS(X) X(F_SHARE, "refused_sources") X(F_WINDOW, "window")
	CFG_KEYS(KEYS, F_COUNT, f);
#undef KEYS
	char path[PATHLEN], p2[PATHLEN], d[64];
	const char *s;
	char *end;
	unsigned long v;
	int rc;

	cfg_subpath(path, rpath, ".disarm");
	if ((rc = cfg_mapping(x, n, path, "disarm", f, F_COUNT)))
		return rc;
	if (!f[F_SHARE].v || !f[F_WINDOW].v)
		return cfg_error_at(x, n,
				    "%s: needs refused_sources and window (e.g. { refused_sources: "
				    "20%%, window: 60s })",
				    path);
	cfg_subpath(p2, path, ".refused_sources");
	if ((rc = cfg_scalar(x, f[F_SHARE].v, p2, "a percentage such as 20%", &s)))
		return rc;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end == '%')
		end++;
	if (errno || end == s || *end || *s < '0' || *s > '9' || v < 1 || v > 100)
		return cfg_error_at(x, f[F_SHARE].v,
				    "%s: expected a percentage from 1%% to 100%%, got %s", p2,
				    cfg_desc(f[F_SHARE].v, d, sizeof(d)));
	r->disarm_pct = (__u32)v;
	cfg_subpath(p2, path, ".window");
	if ((rc = cfg_dur_val(x, f[F_WINDOW].v, p2, &r->disarm_window_ns)))
		return rc;
	if (r->disarm_window_ns < 20 * XRL_NSEC_PER_SEC ||
	    r->disarm_window_ns > 3600 * XRL_NSEC_PER_SEC)
		return cfg_error_at(x, f[F_WINDOW].v,
				    "%s: expected 20s to 1h (xrld judges every 10 s), got %s", p2,
				    cfg_desc(f[F_WINDOW].v, d, sizeof(d)));
	return 0;
}

static int parse_http_rule(struct cfg_parse *x, yaml_node_t *n, const char *path, size_t idx,
			   void *ctx)
{
	static const char *const be[] = { "open", "closed", "local" };
	static const int bev[] = { XRL_BE_OPEN, XRL_BE_CLOSED, XRL_BE_LOCAL };
	static const char *const mk[] = { "skip", "refuse", "client_ip" };
	static const int mkv[] = { XRL_MISSING_SKIP, XRL_MISSING_REFUSE, XRL_MISSING_CLIENT_IP };
#define KEYS(X) \
	X(F_NAME, "name") \
	X(F_MATCH, "match") \
	X(F_KEY, "key") \
	X(F_RATE, "rate") \
	X(F_BURST, "burst") X(F_COST, "cost") X(F_ON_BACKEND_ERROR, "on_backend_error") \
		X(F_ON_MISSING_KEY, "on_missing_key") X(F_SHADOW, "shadow") \
			X(F_CONCURRENCY, "concurrency") X(F_LEASE_TTL, "lease_ttl") \
				X(F_VOUCH, "vouch") X(F_VOUCH_TTL, "vouch_ttl") \
					X(F_DISARM, "disarm")
	CFG_KEYS(KEYS, F_COUNT, f);
#undef KEYS
	struct xrl_http_rule *r = &x->c->http.rules[idx];
	char p2[PATHLEN];
	const char *s;
	int rc, e;

	if ((rc = cfg_mapping(x, n, path, "http rule", f, F_COUNT)))
		return rc;
	if (cfg_is_null(n) || !f[F_NAME].v ||
	    (!f[F_CONCURRENCY].v && (!f[F_RATE].v || !f[F_BURST].v)))
		return cfg_error_at(x, n,
				    "%s: a rule needs name, and rate and burst or concurrency (or both)",
				    path);
	if (!f[F_RATE].v != !f[F_BURST].v)
		return cfg_error_at(x, n, "%s: rate and burst go together", path);
	memset(r, 0, sizeof(*r));
	if ((rc = cfg_rule_name(x, f[F_NAME].v, path, p2, &s)))
		return rc;
	for (size_t j = 0; j < idx; j++)
		if (!strcmp(x->c->http.rules[j].name, s))
			return cfg_error_at(x, f[F_NAME].v, "%s: rule name '%s' is used twice", p2,
					    s);
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
		cfg_subpath(p2, path, ".shadow");
		if ((rc = cfg_bool_val(x, f[F_SHADOW].v, p2, &r->shadow)))
			return rc;
	}
	if ((rc = parse_http_vouch(x, f[F_VOUCH].v, f[F_VOUCH_TTL].v, path, r)))
		return rc;
	if (f[F_DISARM].v && !f[F_RATE].v)
		return cfg_error_at(x, f[F_DISARM].v,
				    "%s.disarm: only a rule with a rate refuses callers to count", path);
	if (f[F_DISARM].v && (rc = parse_http_disarm(x, f[F_DISARM].v, path, r)))
		return rc;
	if (f[F_RATE].v && xrl_gcra_init(r->rate.tokens, r->rate.period_ns, r->burst, &r->g))
		return cfg_error_at(x, f[F_RATE].v,
				    "%s: rate and burst out of range (1 per 52 days to 1e9/s)",
				    path);
	x->c->http.n_rules = (__u32)idx + 1;
	return 0;
}

/* PATH: [PREFIX, ...] into out[0 .. max), a prefix may repeat; *n_out: how
 * many were read. */
static int prefix_seq(struct cfg_parse *x, yaml_node_t *n, const char *path, size_t max,
		      struct xrl_prefix *out, __u32 *n_out)
{
	yaml_node_item_t *items;
	size_t count;
	int rc;

	if ((rc = cfg_sequence(x, n, path, "address prefixes", &items, &count)))
		return rc;
	for (size_t i = 0; i < count; i++) {
		char p2[PATHLEN];

		if (i >= max)
			return cfg_error_at(x, cfg_item(x, items, i), "%s: at most %zu entries",
					    path, max);
		snprintf(p2, sizeof(p2), "%s[%zu]", path, i);
		if ((rc = cfg_prefix_val(x, cfg_item(x, items, i), p2, &out[i])))
			return rc;
		*n_out = (__u32)i + 1;
	}
	return 0;
}

/* http.trusted_proxies and http.forwarded_from: whom the tier believes. */
static int parse_http_trust(struct cfg_parse *x, yaml_node_t *tp, yaml_node_t *ff)
{
	static const char *const fw[] = { "nginx", "traefik", "caddy", "envoy", "none" };
	static const int fwv[] = { XRL_FWD_NGINX, XRL_FWD_TRAEFIK, XRL_FWD_CADDY, XRL_FWD_ENVOY,
				   XRL_FWD_NONE };
	struct xrl_http_cfg *h = &x->c->http;
	int rc, e;

	if (tp) {
		if ((rc = prefix_seq(x, tp, "http.trusted_proxies", XRL_HTTP_MAX_TRUSTED,
				     h->trusted, &h->n_trusted)))
			return rc;
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
static int parse_http_callers(struct cfg_parse *x, yaml_node_t *cl, yaml_node_t *sf)
{
	struct xrl_http_cfg *h = &x->c->http;
	char msg[XRL_ERRLEN];
	const char *s;
	int rc;

	if (cl) {
		if ((rc = prefix_seq(x, cl, "http.callers", XRL_HTTP_MAX_CALLERS, h->callers,
				     &h->n_callers)))
			return rc;
	}
	if (sf) {
		if ((rc = cfg_scalar(x, sf, "http.caller_secret_file", "a file's path", &s)))
			return rc;
		if (!*s || strlen(s) >= sizeof(h->caller_secret_file))
			return cfg_error_at(x, sf,
					    "http.caller_secret_file: expected a path of 1 to %zu bytes",
					    sizeof(h->caller_secret_file) - 1);
		snprintf(h->caller_secret_file, sizeof(h->caller_secret_file), "%s", s);
		if (read_secret_files && xrl_http_secret_load(h, s, msg, sizeof(msg)))
			return cfg_error_at(x, sf, "%s", msg);
	}
	return 0;
}

/*
 * http.idle_timeout: libmicrohttpd counts whole seconds and takes 0 as "no
 * timeout", so under 1 s is an error (it would have truncated to 0) and a
 * fraction is rounded up; a day at most (an unsigned count of seconds).
 */
static int parse_http_idle(struct cfg_parse *x, yaml_node_t *n)
{
	struct xrl_http_cfg *h = &x->c->http;
	char d[64];
	__u64 v;
	int rc;

	if ((rc = cfg_dur_val(x, n, "http.idle_timeout", &v)))
		return rc;
	if (v < XRL_NSEC_PER_SEC || v > 86400 * XRL_NSEC_PER_SEC)
		return cfg_error_at(x, n,
				    "http.idle_timeout: expected 1s to 1d (whole seconds; a fraction is "
				    "rounded up), got %s",
				    cfg_desc(n, d, sizeof(d)));
	h->idle_timeout_ns = (v + XRL_NSEC_PER_SEC - 1) / XRL_NSEC_PER_SEC * XRL_NSEC_PER_SEC;
	return 0;
}

/* The server's bounds (a NULL node: not given). */
static int parse_http_bounds(struct cfg_parse *x, yaml_node_t *max_conn, yaml_node_t *idle,
			     yaml_node_t *max_hdr, yaml_node_t *max_keys, yaml_node_t *threads,
			     yaml_node_t *head_to, yaml_node_t *per_peer)
{
	struct xrl_http_cfg *h = &x->c->http;
	__u64 v;
	int rc;

	if (max_conn) {
		if ((rc = cfg_uint_val(x, max_conn, "http.max_connections",
				       "a number from 1 to 65536", 1, 65536, &v)))
			return rc;
		h->max_connections = (__u32)v;
	}
	if (idle && (rc = parse_http_idle(x, idle)))
		return rc;
	if (max_hdr) {
		if ((rc = cfg_uint_val(x, max_hdr, "http.max_header_bytes",
				       "a number from 1024 to 1048576", 1024, 1 << 20, &v)))
			return rc;
		h->max_header_bytes = (__u32)v;
	}
	if (head_to) {
		char d[64];

		if ((rc = cfg_dur_val(x, head_to, "http.head_timeout", &v)))
			return rc;
		if (v < XRL_NSEC_PER_SEC / 10 || v > 3600 * XRL_NSEC_PER_SEC)
			return cfg_error_at(x, head_to,
					    "http.head_timeout: expected 100ms to 1h, got %s",
					    cfg_desc(head_to, d, sizeof(d)));
		h->head_timeout_ns = v;
	}
	if (per_peer) {
		if ((rc = cfg_uint_val(x, per_peer, "http.max_connections_per_peer",
				       "a number from 0 (no bound) to 65536", 0, 65536, &v)))
			return rc;
		h->max_conn_per_peer = (__u32)v;
	}
	if (max_keys) {
		if ((rc = cfg_uint_val(x, max_keys, "http.max_keys",
				       "a number from 1024 to 268435456", 1024, 1u << 28, &v)))
			return rc;
		h->memory_max_keys = (__u32)v;
	}
	if (threads) {
		if ((rc = cfg_uint_val(x, threads, "http.threads", "a number from 1 to 64", 1, 64,
				       &v)))
			return rc;
		h->threads = (__u32)v;
	}
	return 0;
}

/* A match of http.exempt or http.shed: the shape of a rule's (method and
 * path_prefix, each optional). */
static int parse_http_route(struct cfg_parse *x, yaml_node_t *n, const char *path,
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
static int parse_exempt_item(struct cfg_parse *x, yaml_node_t *it, const char *path, size_t i,
			     void *ctx)
{
	struct xrl_http_cfg *h = &x->c->http;
	int rc;

	if ((rc = parse_http_route(x, it, path, &h->exempt[i])))
		return rc;
	h->n_exempt = (__u32)i + 1;
	return 0;
}

static int parse_http_exempt(struct cfg_parse *x, yaml_node_t *n)
{
	const struct cfg_list l = { "http.exempt",
				    "matches (- { method: GET, path_prefix: /healthz })",
				    "entries", XRL_HTTP_MAX_EXEMPT, true, parse_exempt_item, NULL };

	return cfg_each(x, n, &l);
}

/* http.shed as a list: a capacity bucket per route, each { match, rate, burst }. */
static int parse_http_shed_list(struct cfg_parse *x, yaml_node_t *n)
{
#define KEYS(X) X(SF_MATCH, "match") X(SF_RATE, "rate") X(SF_BURST, "burst")
	enum { KEYS(CFG_KEY_ENUM) SF_COUNT };
	struct xrl_http_cfg *h = &x->c->http;
	yaml_node_item_t *items;
	size_t count;
	__u64 v;
	int rc;

	if ((rc = cfg_sequence(x, n, "http.shed",
			       "routes (- { match: ..., rate: ..., burst: ... })", &items, &count)))
		return rc;
	for (size_t i = 0; i < count; i++) {
		struct field sf[SF_COUNT] = { KEYS(CFG_KEY_FIELD) };
		yaml_node_t *e = cfg_item(x, items, i);
		struct xrl_http_shed *sh = &h->shed[i];
		char p[PATHLEN], p2[PATHLEN];

		if (i >= XRL_HTTP_MAX_SHED)
			return cfg_error_at(x, e, "http.shed: at most %d routes",
					    XRL_HTTP_MAX_SHED);
		snprintf(p, sizeof(p), "http.shed[%zu]", i);
		if ((rc = cfg_mapping(x, e, p, "shed route", sf, SF_COUNT)))
			return rc;
		if (!sf[SF_RATE].v || !sf[SF_BURST].v)
			return cfg_error_at(x, e,
					    "%s: needs rate and burst (the capacity of the route)",
					    p);
		memset(sh, 0, sizeof(*sh));
		if (sf[SF_MATCH].v && (rc = parse_http_route(x, sf[SF_MATCH].v, p, &sh->match)))
			return rc;
		cfg_subpath(p2, p, ".rate");
		if ((rc = cfg_rate_val(x, sf[SF_RATE].v, p2, &sh->rate)))
			return rc;
		cfg_subpath(p2, p, ".burst");
		if ((rc = cfg_uint_val(x, sf[SF_BURST].v, p2, "a whole number from 1 to 100000000",
				       1, XRL_GCRA_BURST_MAX, &v)))
			return rc;
		sh->burst = (__u32)v;
		h->n_shed = (__u32)i + 1;
	}
	return 0;
}
#undef KEYS

/* http.shed and http.penalty. */
static int parse_http_shed_penalty(struct cfg_parse *x, yaml_node_t *shed, yaml_node_t *pen)
{
#define KEYS(X) X(SF_RATE, "rate") X(SF_BURST, "burst")
	CFG_KEYS(KEYS, SF_COUNT, sf);
#undef KEYS
	struct xrl_http_cfg *h = &x->c->http;
	__u64 v;
	int rc;

	if (shed && shed->type == YAML_SEQUENCE_NODE) {
		if ((rc = parse_http_shed_list(x, shed)))
			return rc;
	} else if (shed) {
		if ((rc = cfg_mapping(x, shed, "http.shed", "shed", sf, SF_COUNT)))
			return rc;
		if (!sf[SF_RATE].v || !sf[SF_BURST].v)
			return cfg_error_at(
				x, shed,
				"http.shed: needs rate and burst (the capacity of the whole service)");
		if ((rc = cfg_rate_val(x, sf[SF_RATE].v, "http.shed.rate", &h->shed_rate)))
			return rc;
		if ((rc = cfg_uint_val(x, sf[SF_BURST].v, "http.shed.burst",
				       "a whole number from 1 to 100000000", 1, XRL_GCRA_BURST_MAX,
				       &v)))
			return rc;
		h->shed_burst = (__u32)v;
		h->shed_enabled = true;
	}
	if (pen) {
		/* same shape as the top-level penalty section */
		struct xrl_penalty_cfg saved = x->c->penalty;

		if ((rc = cfg_parse_penalty(x, pen, false)))
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
static const struct cfg_num header_nums[] = {
	{ .key = "ietf", .kind = CFG_BOOL, CFG_AT(struct xrl_http_cfg, ietf_headers) },
	{ .key = "x_ratelimit", .kind = CFG_BOOL, CFG_AT(struct xrl_http_cfg, x_ratelimit_headers) },
};

/* http.rules: the list, each through parse_http_rule. */
static int parse_http_rules(struct cfg_parse *x, yaml_node_t *n)
{
	const struct cfg_list l = { "http.rules", "rules (- name: ...)", "rules",
				    XRL_HTTP_MAX_RULES, false, parse_http_rule, NULL };

	return cfg_each(x, n, &l);
}

/* http.listen and http.backend: where the identity tier answers and where
 * its buckets live */
static int parse_http_endpoints(struct cfg_parse *x, yaml_node_t *ln, yaml_node_t *bn)
{
	struct xrl_http_cfg *h = &x->c->http;
	char msg[XRL_ERRLEN], d[64];
	const char *s;
	int rc;

	if (ln) {
		if ((rc = cfg_scalar(x, ln, "http.listen", "HOST:PORT such as 127.0.0.1:8433", &s)))
			return rc;
		if (xrl_http_cfg_listen(h, s))
			return cfg_error_at(
				x, ln,
				"http.listen: expected HOST:PORT such as 127.0.0.1:8433 or [::1]:8433, got %s",
				cfg_desc(ln, d, sizeof(d)));
	}
	if (bn) {
		if ((rc = cfg_scalar(x, bn, "http.backend",
				     "memory or redis://[[USER]:PASSWORD@]HOST:PORT[/DB]", &s)))
			return rc;
		if (xrl_http_backend_parse(s, h, msg, sizeof(msg)))
			return cfg_error_at(x, bn, "http.%s", msg);
	}
	return 0;
}

int cfg_parse_http(struct cfg_parse *x, yaml_node_t *n)
{
#define KEYS(X) \
	X(F_LISTEN, "listen") \
	X(F_BACKEND, "backend") \
	X(F_REDIS_TIMEOUT, "redis_timeout") \
	X(F_BREAKER_COOLDOWN, "breaker_cooldown") X(F_TRUSTED_PROXIES, "trusted_proxies") \
		X(F_HEADERS, "headers") X(F_MAX_CONNECTIONS, "max_connections") X(F_IDLE_TIMEOUT, \
										  "idle_timeout") \
			X(F_MAX_HEADER_BYTES, \
			  "max_header_bytes") X(F_MAX_KEYS, "max_keys") X(F_THREADS, "threads") \
				X(F_SHED, "shed") X(F_PENALTY, "penalty") X(F_RULES, "rules") \
					X(F_FORWARDED_FROM, \
					  "forwarded_from") X(F_IGNORE_PATH_CASE, \
							      "ignore_path_case") X(F_EXEMPT, \
										    "exempt") \
						X(F_FLEET, "fleet") X(F_CALLERS, "callers") \
							X(F_CALLER_SECRET_FILE, \
							  "caller_secret_file") X(F_HEAD_TIMEOUT, \
										  "head_timeout") \
								X(F_MAX_CONN_PER_PEER, \
								  "max_connections_per_peer")
	CFG_KEYS(KEYS, F_COUNT, f);
#undef KEYS
	struct xrl_http_cfg *h = &x->c->http;
	char msg[XRL_ERRLEN], path[PATHLEN];
	int rc;

	xrl_http_cfg_init(h);
	x->c->has_http = true;
	if ((rc = cfg_mapping(x, n, "http", "http", f, F_COUNT)))
		return rc;
	if ((rc = parse_http_endpoints(x, f[F_LISTEN].v, f[F_BACKEND].v)))
		return rc;
	if (f[F_REDIS_TIMEOUT].v &&
	    (rc = cfg_dur_val(x, f[F_REDIS_TIMEOUT].v, "http.redis_timeout", &h->redis_timeout_ns)))
		return rc;
	if (f[F_BREAKER_COOLDOWN].v &&
	    (rc = cfg_dur_val(x, f[F_BREAKER_COOLDOWN].v, "http.breaker_cooldown",
			      &h->breaker_cooldown_ns)))
		return rc;
	if ((rc = parse_http_trust(x, f[F_TRUSTED_PROXIES].v, f[F_FORWARDED_FROM].v)))
		return rc;
	if (f[F_IGNORE_PATH_CASE].v &&
	    (rc = cfg_bool_val(x, f[F_IGNORE_PATH_CASE].v, "http.ignore_path_case",
			       &h->ignore_path_case)))
		return rc;
	if (f[F_HEADERS].v &&
	    (rc = NUMBERS(x, f[F_HEADERS].v, path, "http", "headers", header_nums, h)))
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
	if (f[F_FLEET].v && (rc = cfg_fleet_name(x, f[F_FLEET].v, "http.fleet", h->fleet)))
		return rc;
	if ((rc = xrl_http_cfg_finish(h, msg, sizeof(msg))))
		return cfg_error_at(x, n, "http: %s", msg);
	return 0;
}
