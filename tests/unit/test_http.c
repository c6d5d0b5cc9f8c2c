// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_http.c - unit tests of what the identity tier believes about a
 * request (user/http/server/request.c), as tables: path normalisation (every variant
 * of /api/holds that a backend routes to the same handler, and what is
 * refused), rule matching (methods case-sensitive), which forwarded headers
 * count for each http.forwarded_from and peer, the X-Forwarded-For walk
 * with ports, brackets and quotes, the http: keys that go with them in the
 * policy parser, the reload check of start-time fields, and the per-rule
 * counters a reload carries by rule name (user/http/server/reload.c). No
 * root.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

#include "config.h"
#include "http/http.h"
#include "http/server/server_int.h"
#include "http/server/topk.h"
#include "xrl.h"

/* ---- path normalisation ---------------------------------------------------------- */

struct norm_case {
	const char *in;
	size_t n; /* 0: strlen(in) (for inputs with a NUL byte) */
	int rc;	  /* >= 0: the result is want */
	const char *want;
};

static const struct norm_case norm_cases[] = {
	/* what the backend routes to /api/holds */
	{ "/api/holds", 0, 0, "/api/holds" },
	{ "//api/holds", 0, 0, "/api/holds" },
	{ "/api//holds", 0, 0, "/api/holds" },
	{ "///api///holds//", 0, 0, "/api/holds/" },
	{ "/api/./holds", 0, 0, "/api/holds" },
	{ "/./api/holds", 0, 0, "/api/holds" },
	{ "/api/x/../holds", 0, 0, "/api/holds" },
	{ "/api/x/y/../../holds", 0, 0, "/api/holds" },
	{ "/api/%68olds", 0, 0, "/api/holds" },
	{ "/%61%70%69/%68%6F%6C%64%73", 0, 0, "/api/holds" },
	{ "/api/holds?x", 0, 0, "/api/holds" },
	{ "/api/holds?x=/../../y#z", 0, 0, "/api/holds" },
	{ "/api/holds#f", 0, 0, "/api/holds" },
	{ "/%2e%2e/api/holds", 0, 0, "/api/holds" },
	{ "/%2E%2E/api/holds", 0, 0, "/api/holds" },
	{ "/../../api/holds", 0, 0, "/api/holds" },
	{ "/api/%2e/holds", 0, 0, "/api/holds" },
	{ "/api%2Fholds", 0, 0, "/api/holds" },
	{ "/api%2fholds", 0, 0, "/api/holds" },
	{ "/api/x%2F..%2Fholds", 0, 0, "/api/holds" },
	{ "/api;x/holds", 0, 0, "/api/holds" },
	{ "/api/..;/api/holds", 0, 0, "/api/holds" },
	{ "/api/holds;jsessionid=1", 0, 0, "/api/holds" },
	{ "http://example.com/api/holds?x", 0, 0, "/api/holds" },
	{ "HTTPS://example.com:8443//api/./holds", 0, 0, "/api/holds" },
	{ "http://example.com", 0, 0, "/" },
	/* kept apart from /api/holds */
	{ "/API/holds", 0, 0, "/API/holds" },
	{ "/api/holds/..", 0, 0, "/api/" },
	{ "/api/holds/.", 0, 0, "/api/holds/" },
	{ "/api/holds%3Bx", 0, 0, "/api/holds%3Bx" },
	{ "/api/holds%3bx", 0, 0, "/api/holds%3Bx" },
	{ "/a%3fb", 0, 0, "/a%3Fb" },
	{ "/a%23b", 0, 0, "/a%23b" },
	{ "/a%25b", 0, 0, "/a%25b" },
	{ "/a%2541", 0, 0, "/a%2541" },
	{ "/a%01b", 0, 0, "/a%01b" },
	{ "/a%20b", 0, 0, "/a b" },
	{ "/a%C3%A9", 0, 0, "/a\xc3\xa9" },
	{ "/...", 0, 0, "/..." },
	{ "/..a/.b", 0, 0, "/..a/.b" },
	{ "/", 0, 0, "/" },
	{ "/?", 0, 0, "/" },
	/* refused: 400 */
	{ "", 0, -EINVAL, NULL },
	{ "?x", 0, -EINVAL, NULL },
	{ "api/holds", 0, -EINVAL, NULL },
	{ "*", 0, -EINVAL, NULL },
	{ "/api/%00holds", 0, -EINVAL, NULL },
	{ "/api/%zzholds", 0, -EINVAL, NULL },
	{ "/api/%6", 0, -EINVAL, NULL },
	{ "/api/%", 0, -EINVAL, NULL },
	{ "/api/\x01holds", 0, -EINVAL, NULL },
	{ "/api/\x7fholds", 0, -EINVAL, NULL },
	{ "/api/\0holds", 11, -EINVAL, NULL },
};

static void test_path_norm_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(norm_cases) / sizeof(norm_cases[0]); i++) {
		const struct norm_case *t = &norm_cases[i];
		size_t n = t->n ? t->n : strlen(t->in);
		char out[256], again[256];
		int rc;

		CTX("norm case %zu: \"%s\"", i, t->in);
		rc = xrl_http_path_norm(t->in, n, out, sizeof(out));
		if (t->rc < 0) {
			EQ(rc, t->rc);
			continue;
		}
		GE(rc, 0);
		STR_EQ(out, t->want);
		EQ(rc, strlen(t->want));
		LE(rc, n);
		/* idempotent */
		EQ(xrl_http_path_norm(out, (size_t)rc, again, sizeof(again)), rc);
		STR_EQ(again, out);
	}
}

static void test_path_norm_bounds(void **state)
{
	static char big[XRL_HTTP_PATH_MAX + 64], out[XRL_HTTP_PATH_MAX + 1];
	char small[8];

	(void)state;
	CTX("overlong input");
	memset(big, 'a', sizeof(big));
	big[0] = '/';
	EQ(xrl_http_path_norm(big, sizeof(big), out, sizeof(out)), -ENAMETOOLONG);
	CTX("exactly the buffer less one");
	EQ(xrl_http_path_norm(big, XRL_HTTP_PATH_MAX, out, sizeof(out)), XRL_HTTP_PATH_MAX);
	CTX("a long query does not count");
	memcpy(big, "/api/holds?", 11);
	EQ(xrl_http_path_norm(big, sizeof(big), out, sizeof(out)), 10);
	CTX("a small buffer");
	EQ(xrl_http_path_norm("/api/holds", 10, small, sizeof(small)), -ENAMETOOLONG);
	EQ(xrl_http_path_norm("/api", 4, small, sizeof(small)), 4);
	CTX("dot-dot runs stay at the root");
	for (size_t i = 0; i + 3 < sizeof(big); i += 3)
		memcpy(big + i, "/..", 3);
	EQ(xrl_http_path_norm(big, XRL_HTTP_PATH_MAX - 10, out, sizeof(out)), 1);
	STR_EQ(out, "/");
}

/* ---- matching ------------------------------------------------------------------------ */

struct match_case {
	const char *method, *target;
	bool ignore_case;
	bool want;
};

static const struct match_case match_cases[] = {
	{ "POST", "/api/holds", false, true },
	{ "POST", "/api/holds/7?q=1", false, true },
	{ "POST", "//api/holds", false, true },
	{ "POST", "/api/./holds", false, true },
	{ "POST", "/api/x/../holds", false, true },
	{ "POST", "/api/%68olds", false, true },
	{ "POST", "/%2e%2e/api/holds", false, true },
	{ "POST", "/api;a=b/holds", false, true },
	{ "POST", "/API/holds", false, false },
	{ "POST", "/API/holds", true, true },
	{ "POST", "/Api/Holds/1", true, true },
	{ "post", "/api/holds", false, false }, /* RFC 9110 9.1: case-sensitive */
	{ "Post", "/api/holds", true, false },
	{ "GET", "/api/holds", false, false },
	{ "POST", "/api/hold", false, false },
	{ "POST", "/api/holds/..", false, false },
};

static void test_rule_match_table(void **state)
{
	struct xrl_http_cfg c;
	struct xrl_http_rule r = { .method = "POST", .path_prefix = "/api/holds" };

	(void)state;
	xrl_http_cfg_init(&c);
	for (size_t i = 0; i < sizeof(match_cases) / sizeof(match_cases[0]); i++) {
		const struct match_case *t = &match_cases[i];
		char path[256];

		CTX("match case %zu: %s %s%s", i, t->method, t->target,
		    t->ignore_case ? " (ignore case)" : "");
		c.ignore_path_case = t->ignore_case;
		GE(xrl_http_path_norm(t->target, strlen(t->target), path, sizeof(path)), 0);
		EQ(xrl_http_rule_match(&c, &r, t->method, path), t->want);
	}
}

/* ---- which headers count ------------------------------------------------------------ */

struct orig_case {
	enum xrl_fwd_from from;
	bool trusted;
	const char *method, *url, *fm, *fu;
	bool dup;
	int rc;
	const char *want_method, *want_path;
};

static const struct orig_case orig_cases[] = {
	/* nginx: X-Original-* (the caller looks them up: the tier passes only
	 * the configured kind, so X-Forwarded-* never get here) */
	{ XRL_FWD_NGINX, true, "GET", "/v1/auth/nginx", "POST", "/api/holds/1?x", false, 0, "POST",
	  "/api/holds/1" },
	{ XRL_FWD_NGINX, true, "GET", "/v1/auth/nginx", "POST", "//api/./holds", false, 0, "POST",
	  "/api/holds" },
	/* a trusted proxy that sent none, or two: refuse, never the own line */
	{ XRL_FWD_NGINX, true, "GET", "/v1/auth/nginx", NULL, NULL, false, -EINVAL, NULL, NULL },
	{ XRL_FWD_NGINX, true, "GET", "/v1/auth/nginx", "POST", NULL, false, -EINVAL, NULL, NULL },
	{ XRL_FWD_NGINX, true, "GET", "/v1/auth/nginx", "", "/x", false, -EINVAL, NULL, NULL },
	{ XRL_FWD_NGINX, true, "GET", "/v1/auth/nginx", "POST", "/api/holds", true, -EINVAL, NULL,
	  NULL },
	{ XRL_FWD_TRAEFIK, true, "GET", "/v1/auth", "POST", "/api/%zz", false, -EINVAL, NULL,
	  NULL },
	/* an untrusted peer: the request's own line, whatever it sent */
	{ XRL_FWD_NGINX, false, "GET", "/v1/auth/nginx", NULL, NULL, false, 0, "GET",
	  "/v1/auth/nginx" },
	{ XRL_FWD_TRAEFIK, false, "GET", "/v1/auth", NULL, NULL, false, 0, "GET", "/v1/auth" },
	{ XRL_FWD_CADDY, true, "GET", "/v1/auth", "DELETE", "/a/b", false, 0, "DELETE", "/a/b" },
	/* envoy and none: the own method, the path after /v1/auth */
	{ XRL_FWD_ENVOY, true, "POST", "/v1/auth/api/holds", "GET", "/x", false, 0, "POST",
	  "/api/holds" },
	{ XRL_FWD_ENVOY, false, "POST", "/v1/auth//api/%68olds", NULL, NULL, false, 0, "POST",
	  "/api/holds" },
	{ XRL_FWD_ENVOY, false, "GET", "/v1/auth", NULL, NULL, false, 0, "GET", "/" },
	{ XRL_FWD_NONE, true, "PUT", "/v1/auth/api/x", NULL, NULL, false, 0, "PUT", "/api/x" },
	/* Envoy's path_prefix form under nginx/traefik: the path after
	 * /v1/auth, normalised as a forwarded URI; a trusted proxy's headers win */
	{ XRL_FWD_TRAEFIK, true, "POST", "/v1/auth/api/holds", NULL, NULL, false, 0, "POST",
	  "/api/holds" },
	{ XRL_FWD_NGINX, true, "POST", "/v1/auth/api/./x/../holds;a=b/1", NULL, NULL, false, 0,
	  "POST", "/api/holds/1" },
	{ XRL_FWD_TRAEFIK, true, "POST", "/v1/auth/api/%2e%2e/admin", NULL, NULL, false, 0, "POST",
	  "/admin" },
	{ XRL_FWD_TRAEFIK, true, "POST", "/v1/auth/api/%00", NULL, NULL, false, -EINVAL, NULL,
	  NULL },
	{ XRL_FWD_TRAEFIK, true, "GET", "/v1/auth/elsewhere", "POST", "/api/holds", false, 0,
	  "POST", "/api/holds" },
	{ XRL_FWD_TRAEFIK, true, "GET", "/v1/auth/elsewhere", "POST", NULL, false, -EINVAL, NULL,
	  NULL },
	{ XRL_FWD_TRAEFIK, true, "GET", "/v1/auth/elsewhere", NULL, NULL, true, -EINVAL, NULL,
	  NULL },
	{ XRL_FWD_TRAEFIK, false, "PUT", "/v1/auth/api/x", "POST", "/y", false, 0, "PUT",
	  "/api/x" },
};

static void test_original_table(void **state)
{
	struct xrl_http_cfg c;

	(void)state;
	xrl_http_cfg_init(&c);
	for (size_t i = 0; i < sizeof(orig_cases) / sizeof(orig_cases[0]); i++) {
		const struct orig_case *t = &orig_cases[i];
		const char *om = NULL, *why = NULL;
		char path[256];
		int rc;

		CTX("original case %zu: from %d, trusted %d, %s %s, fm %s, fu %s", i, t->from,
		    t->trusted, t->method, t->url, t->fm ? t->fm : "-", t->fu ? t->fu : "-");
		c.forwarded_from = t->from;
		rc = xrl_http_original(&c, t->trusted, t->method, t->url, t->fm, t->fu, t->dup, &om,
				       path, sizeof(path), &why);
		EQ(rc, t->rc);
		if (rc) {
			assert_non_null(why);
			continue;
		}
		STR_EQ(om, t->want_method);
		STR_EQ(path, t->want_path);
	}
}

/* The 400 for a trusted proxy that left the original method or URI out
 * names the header(s) it did not send. */
static void test_original_names_missing(void **state)
{
	struct xrl_http_cfg c;
	const char *om = NULL, *why = NULL;
	char path[256];

	(void)state;
	xrl_http_cfg_init(&c);
	c.forwarded_from = XRL_FWD_NGINX;
	EQ(xrl_http_original(&c, true, "GET", "/v1/auth/nginx", "POST", NULL, false, &om, path,
			     sizeof(path), &why),
	   -EINVAL);
	HAS(why, "the trusted proxy did not send X-Original-URI (");
	EQ(strstr(why, "X-Original-Method") == NULL, 1);
	EQ(xrl_http_original(&c, true, "GET", "/v1/auth/nginx", NULL, NULL, false, &om, path,
			     sizeof(path), &why),
	   -EINVAL);
	HAS(why, "did not send X-Original-Method and X-Original-URI");
	c.forwarded_from = XRL_FWD_TRAEFIK;
	EQ(xrl_http_original(&c, true, "GET", "/v1/auth", "", "/x", false, &om, path, sizeof(path),
			     &why),
	   -EINVAL);
	HAS(why, "did not send X-Forwarded-Method (");
}

static void test_fwd_headers(void **state)
{
	const char *m, *u;

	(void)state;
	CTX("nginx");
	xrl_http_fwd_headers(XRL_FWD_NGINX, &m, &u);
	STR_EQ(m, "X-Original-Method");
	STR_EQ(u, "X-Original-URI");
	CTX("traefik, caddy");
	xrl_http_fwd_headers(XRL_FWD_TRAEFIK, &m, &u);
	STR_EQ(u, "X-Forwarded-Uri");
	xrl_http_fwd_headers(XRL_FWD_CADDY, &m, &u);
	STR_EQ(m, "X-Forwarded-Method");
	CTX("envoy, none");
	xrl_http_fwd_headers(XRL_FWD_ENVOY, &m, &u);
	assert_null(m);
	assert_null(u);
	xrl_http_fwd_headers(XRL_FWD_NONE, &m, &u);
	assert_null(u);
}

/* ---- X-Forwarded-For ---------------------------------------------------------------- */

struct xff_case {
	const char *peer, *xff, *want;
};

static const struct xff_case xff_cases[] = {
	/* trusted: 127.0.0.0/8, 10.0.0.0/8, 2001:db8:f::/48 */
	{ "127.0.0.1", "203.0.113.1", "203.0.113.1" },
	{ "127.0.0.1", "203.0.113.1:1111", "203.0.113.1" },
	{ "127.0.0.1", " 203.0.113.1:1111 , 10.0.0.2:80", "203.0.113.1" },
	{ "127.0.0.1", "[2001:db8::1]:3333", "2001:db8::1" },
	{ "127.0.0.1", "[2001:db8::1]", "2001:db8::1" },
	{ "127.0.0.1", "\"[2001:db8::1]\"", "2001:db8::1" },
	{ "127.0.0.1", "\"[2001:db8::1]:3333\"", "2001:db8::1" },
	{ "127.0.0.1", "\"203.0.113.9\"", "203.0.113.9" },
	{ "127.0.0.1", "2001:db8::1", "2001:db8::1" },
	{ "127.0.0.1", "2001:DB8:0::1", "2001:db8::1" },
	{ "127.0.0.1", "::ffff:203.0.113.7", "203.0.113.7" },
	{ "127.0.0.1", "198.51.100.1, 203.0.113.1, [2001:db8:f::9]:1", "203.0.113.1" },
	{ "127.0.0.1", "1.1.1.1,10.1.1.1,10.2.2.2", "1.1.1.1" },
	/* spoofed left part: the first untrusted from the right is the client */
	{ "127.0.0.1", "6.6.6.6, 203.0.113.1", "203.0.113.1" },
	/* a malformed entry stops the walk at the last vouched address */
	{ "127.0.0.1", "203.0.113.1:99999", "127.0.0.1" },
	{ "127.0.0.1", "203.0.113.1:", "127.0.0.1" },
	{ "127.0.0.1", "[2001:db8::1]x", "127.0.0.1" },
	{ "127.0.0.1", "unknown", "127.0.0.1" },
	{ "127.0.0.1", "", "127.0.0.1" },
	{ "127.0.0.1", "203.0.113.1, 10.0.0.1, junk, 10.0.0.2", "10.0.0.2" },
	{ "127.0.0.1", "\"203.0.113.1", "127.0.0.1" },
	{ "127.0.0.1", "1.2.3.4.5", "127.0.0.1" },
	{ "127.0.0.1", NULL, "127.0.0.1" },
	/* untrusted peer: never read */
	{ "192.0.2.5", "203.0.113.1", "192.0.2.5" },
	{ "::ffff:192.0.2.5", "203.0.113.1", "192.0.2.5" },
	/* a mapped peer in the trusted IPv4 range is trusted */
	{ "::ffff:127.0.0.1", "203.0.113.1:5", "203.0.113.1" },
	{ "unknown", "203.0.113.1", "unknown" },
};

static void test_xff_table(void **state)
{
	struct xrl_http_cfg c;

	(void)state;
	xrl_http_cfg_init(&c);
	assert_int_equal(xrl_prefix_parse("127.0.0.0/8", &c.trusted[0], NULL, 0), 0);
	assert_int_equal(xrl_prefix_parse("10.0.0.0/8", &c.trusted[1], NULL, 0), 0);
	assert_int_equal(xrl_prefix_parse("2001:db8:f::/48", &c.trusted[2], NULL, 0), 0);
	c.n_trusted = 3;
	for (size_t i = 0; i < sizeof(xff_cases) / sizeof(xff_cases[0]); i++) {
		const struct xff_case *t = &xff_cases[i];
		char out[64];

		CTX("xff case %zu: peer %s, X-Forwarded-For \"%s\"", i, t->peer,
		    t->xff ? t->xff : "(none)");
		xrl_http_client_addr(&c, t->peer, t->xff, t->xff ? strlen(t->xff) : 0, out,
				     sizeof(out));
		STR_EQ(out, t->want);
	}
}

/* ---- the policy parser's http keys ------------------------------------------------- */

static int parse(struct xrld_config *cfg, const char *yaml, char *err, size_t errlen)
{
	memset(err, 0, errlen);
	return xrl_config_parse(yaml, strlen(yaml), "t.yaml", cfg, err, errlen);
}

struct cfg_case {
	const char *yaml;
	int rc;
	const char *err; /* rc != 0: a part of the message */
};

#define RULE(prefix) \
	"  rules:\n    - name: r\n      match: { path_prefix: " prefix " }\n" \
	"      rate: 1/s\n      burst: 1\n"

static const struct cfg_case cfg_cases[] = {
	{ "http:\n  forwarded_from: traefik\n", 0, NULL },
	{ "http:\n  forwarded_from: Nginx\n", -EINVAL, "http.forwarded_from" },
	{ "http:\n  forwarded_from: haproxy\n", -EINVAL, "nginx" },
	{ "http:\n  idle_timeout: 500ms\n", -EINVAL, "http.idle_timeout: expected 1s to 1d" },
	{ "http:\n  idle_timeout: 999ms\n", -EINVAL, "got '999ms'" },
	{ "http:\n  idle_timeout: 2d\n", -EINVAL, "http.idle_timeout" },
	{ "http:\n  idle_timeout: 1s\n", 0, NULL },
	{ "http:\n  ignore_path_case: maybe\n", -EINVAL, "http.ignore_path_case" },
	{ "http:\n" RULE("/api/holds"), 0, NULL },
	{ "http:\n" RULE("/api//holds"), -EINVAL, "write '/api/holds'" },
	{ "http:\n" RULE("/api/./holds"), -EINVAL, "write '/api/holds'" },
	{ "http:\n" RULE("/api/%68olds"), -EINVAL, "write '/api/holds'" },
	{ "http:\n" RULE("/api/holds;x"), -EINVAL, "write '/api/holds'" },
	{ "http:\n" RULE("\"/api/holds?x\""), -EINVAL, "write '/api/holds'" },
	{ "http:\n" RULE("/api/%zz"), -EINVAL, "no bad %XX escape" },
	{ "http:\n  callers: [10.0.0.0/8, \"2001:db8::/32\"]\n", 0, NULL },
	{ "http:\n  callers: [10.0.0.300/8]\n", -EINVAL, "http.callers[0]" },
	{ "http:\n  callers: 10.0.0.0/8\n", -EINVAL, "http.callers" },
	{ "http:\n  head_timeout: 50ms\n", -EINVAL, "http.head_timeout: expected 100ms to 1h" },
	{ "http:\n  head_timeout: 2s\n", 0, NULL },
	{ "http:\n  max_connections_per_peer: 0\n", 0, NULL },
	{ "http:\n  max_connections_per_peer: 70000\n", -EINVAL, "max_connections_per_peer" },
	{ "http:\n  caller_secret_file: /nonexistent/xrl-secret\n", -EINVAL,
	  "couldn't read http.caller_secret_file /nonexistent/xrl-secret" },
};

static void test_config_table(void **state)
{
	struct xrld_config *cfg = calloc(1, sizeof(*cfg));
	char err[XRL_ERRLEN];

	(void)state;
	assert_non_null(cfg);
	for (size_t i = 0; i < sizeof(cfg_cases) / sizeof(cfg_cases[0]); i++) {
		const struct cfg_case *t = &cfg_cases[i];
		int rc = parse(cfg, t->yaml, err, sizeof(err));

		CTX("config case %zu: %.120s -> %.100s", i, t->yaml, err);
		EQ(rc, t->rc);
		if (t->err)
			HAS(err, t->err);
	}
	CTX("defaults and values");
	assert_int_equal(parse(cfg, "http:\n  listen: 127.0.0.1:1\n", err, sizeof(err)), 0);
	EQ(cfg->http.forwarded_from, XRL_FWD_NGINX);
	EQ(cfg->http.ignore_path_case, false);
	EQ(cfg->http.idle_timeout_ns, 30 * SEC);
	assert_int_equal(parse(cfg,
			       "http:\n  forwarded_from: envoy\n  ignore_path_case: true\n"
			       "  idle_timeout: 1500ms\n",
			       err, sizeof(err)),
			 0);
	EQ(cfg->http.forwarded_from, XRL_FWD_ENVOY);
	EQ(cfg->http.ignore_path_case, true);
	CTX("1500ms rounds up to whole seconds (libmicrohttpd's unit)");
	EQ(cfg->http.idle_timeout_ns, 2 * SEC);
	free(cfg);
}

/* ---- reload ----------------------------------------------------------------------------- */

static void test_restart_diff(void **state)
{
	struct xrl_http_cfg a, b;
	char out[160];

	(void)state;
	xrl_http_cfg_init(&a);
	b = a;
	CTX("the same");
	EQ(xrl_http_cfg_restart_diff(&a, &b, out, sizeof(out)), 0);
	STR_EQ(out, "");
	CTX("listen and idle_timeout");
	snprintf(b.listen, sizeof(b.listen), "127.0.0.1:9999");
	b.idle_timeout_ns = 5 * SEC;
	EQ(xrl_http_cfg_restart_diff(&a, &b, out, sizeof(out)), 2);
	STR_EQ(out, "listen, idle_timeout");
	CTX("all six");
	b.max_connections++;
	b.max_header_bytes++;
	b.memory_max_keys++;
	b.threads++;
	EQ(xrl_http_cfg_restart_diff(&a, &b, out, sizeof(out)), 6);
	STR_EQ(out, "listen, idle_timeout, max_connections, max_header_bytes, max_keys, threads");
	CTX("rules are not among them");
	b = a;
	b.n_rules = 3;
	EQ(xrl_http_cfg_restart_diff(&a, &b, out, sizeof(out)), 0);
}

/* ---- top --http: bounded, the heavy key found, keys shown safely ---------------------- */

static void test_topk(void **state)
{
	struct xrl_topk *t = xrl_topk_new(3);
	struct xrl_topk_ent e[64];
	struct xrl_topk_key k;
	char key[300];
	int n;

	(void)state;
	assert_non_null(t);
	CTX("2000 unique keys refused once each in shard 0, heavy 90 times over 3 shards");
	for (int i = 0; i < 2000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		xrl_topk_key(t, key, &k);
		xrl_topk_note(t, 0, 5, &k, 1);
		if (i % 22 == 0) {
			xrl_topk_key(t, "heavy", &k);
			xrl_topk_note(t, (unsigned)i % 3, 5, &k, 2);
		}
	}
	n = xrl_topk_read(t, 5, e, 64);
	EQ(n, XRL_TOPK_K);
	STR_EQ(e[0].show, "heavy");
	EQ(e[0].count >= 91, true);
	EQ(e[0].last_s, 2);
	CTX("another rule has nothing; a shard beyond the last is the last");
	EQ(xrl_topk_read(t, 6, e, 64), 0);
	xrl_topk_note(t, 99, 6, &k, 3);
	EQ(xrl_topk_read(t, 6, e, 64), 1);
	CTX("a reset forgets");
	xrl_topk_reset(t);
	EQ(xrl_topk_read(t, 5, e, 64), 0);
	CTX("shown: control bytes as '?', cut at 64 bytes with ...");
	xrl_topk_key(t,
		     "a\x01"
		     "b\x7f c",
		     &k);
	STR_EQ(k.show, "a?b??c");
	memset(key, 'x', 200);
	key[200] = '\0';
	xrl_topk_key(t, key, &k);
	EQ(strlen(k.show), XRL_TOPK_SHOW + 3);
	STR_EQ(k.show + XRL_TOPK_SHOW, "...");
	xrl_topk_free(t);
}

/* ---- who may ask ---------------------------------------------------------------- */

struct caller_case {
	const char *addr;
	bool ok;
};

/* callers 10.1.0.0/16 and 2001:db8::/32, trusted proxy 192.0.2.7 */
static const struct caller_case caller_cases[] = {
	{ "127.0.0.1", true },	 { "127.0.0.2", true },	   { "127.255.255.254", true },
	{ "::1", true },	 { "::ffff:127.0.0.9", true }, { "192.0.2.7", true },
	{ "192.0.2.8", false },	 { "10.1.2.3", true },	   { "10.2.0.1", false },
	{ "2001:db8::5", true }, { "2001:db9::5", false }, { "::2", false },
	{ "128.0.0.1", false },	 { "0.0.0.0", false },
};

static void test_callers_table(void **state)
{
	struct xrl_http_cfg c;

	(void)state;
	xrl_http_cfg_init(&c);
	assert_int_equal(xrl_http_addr_parse("10.1.0.0", 8, &c.callers[0]), 0);
	c.callers[0].plen = 16;
	assert_int_equal(xrl_http_addr_parse("2001:db8::", 10, &c.callers[1]), 0);
	c.callers[1].plen = 32;
	c.n_callers = 2;
	assert_int_equal(xrl_http_addr_parse("192.0.2.7", 9, &c.trusted[0]), 0);
	c.n_trusted = 1;
	for (size_t i = 0; i < sizeof(caller_cases) / sizeof(caller_cases[0]); i++) {
		const struct caller_case *t = &caller_cases[i];
		struct xrl_prefix a;

		CTX("caller %s", t->addr);
		EQ(xrl_http_addr_parse(t->addr, strlen(t->addr), &a), 0);
		EQ(xrl_http_caller_ok(&c, &a), t->ok);
	}
}

/* http.caller_secret_file: what a file may hold, and errors that never
 * show it */
static void test_secret_file(void **state)
{
	static const struct {
		const char *body;
		int rc;
		const char *want; /* the secret, or a part of the error */
	} cases[] = {
		{ "0123456789abcdef\n", 0, "0123456789abcdef" },
		{ "0123456789abcdef\r\n", 0, "0123456789abcdef" },
		{ "0123456789abcdefXY", 0, "0123456789abcdefXY" },
		{ "", -EINVAL, "an empty file" },
		{ "\n", -EINVAL, "an empty file" },
		{ "short-secret\n", -EINVAL, "got fewer" },
		{ "0123456789abc def\n", -EINVAL, "other than visible ASCII at offset 13" },
		{ "0123456789abcdef\n\n", -EINVAL, "other than visible ASCII at offset 16" },
		{ "0123456789abcdef\xc3\xa9", -EINVAL, "other than visible ASCII at offset 16" },
	};
	char path[] = "/tmp/xrl-test-secret.XXXXXX", err[256], big[400];
	struct xrl_http_cfg c;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		FILE *f = fopen(path, "w");

		CTX("secret file %zu", i);
		fputs(cases[i].body, f);
		fclose(f);
		xrl_http_cfg_init(&c);
		err[0] = '\0';
		EQ(xrl_http_secret_load(&c, path, err, sizeof(err)), cases[i].rc);
		if (!cases[i].rc) {
			EQ(c.caller_secret_len, strlen(cases[i].want));
			EQ(memcmp(c.caller_secret, cases[i].want, c.caller_secret_len), 0);
		} else {
			EQ(strstr(err, cases[i].want) != NULL, true);
			EQ(c.caller_secret_len, 0);
		}
	}
	CTX("257 bytes: too long, and the error does not hold them");
	memset(big, 'k', 257);
	big[257] = '\0';
	{
		FILE *f = fopen(path, "w");

		fputs(big, f);
		fclose(f);
	}
	EQ(xrl_http_secret_load(&c, path, err, sizeof(err)), -EINVAL);
	EQ(strstr(err, "got more") != NULL, true);
	EQ(strstr(err, "kkkk") == NULL, true);
	unlink(path);
}

/* ---- per-rule counters across reloads -------------------------------------------- */

/* A configuration of the rules named in names (space-separated), with its
 * counters found in from by name. */
static struct xrl_srv_cfg *cfg_of(const char *names, const struct xrl_srv_cfg *from)
{
	struct xrl_srv_cfg *c = calloc(1, sizeof(*c));
	char buf[128], *save = NULL;

	assert_non_null(c);
	snprintf(buf, sizeof(buf), "%s", names);
	for (char *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save))
		snprintf(c->c.rules[c->c.n_rules++].name, sizeof(c->c.rules[0].name), "%s", w);
	EQ(xrl_srv_cfg_counters(c, from), 0);
	return c;
}

static void test_rule_counters_carry(void **state)
{
	struct xrl_srv_cfg *a, *b, *c, *d;

	(void)state;
	CTX("the first configuration: each rule's counters new, at 0");
	a = cfg_of("x y", NULL);
	EQ(a->ctr[0] != a->ctr[1], true);
	EQ(atomic_load(&a->ctr[0]->allowed), 0);
	EQ(a->ctr[0]->refs, 1);
	atomic_fetch_add(&a->ctr[0]->allowed, 5);
	atomic_fetch_add(&a->ctr[1]->refused, 3);

	CTX("a reload that puts z first: x and y keep theirs at new indices, z at 0");
	b = cfg_of("z y x", a);
	EQ(b->ctr[1] == a->ctr[1], true);
	EQ(b->ctr[2] == a->ctr[0], true);
	EQ(atomic_load(&b->ctr[2]->allowed), 5);
	EQ(atomic_load(&b->ctr[1]->refused), 3);
	EQ(atomic_load(&b->ctr[0]->allowed), 0);
	EQ(b->ctr[2]->refs, 2);

	CTX("a request still under a: it counts where b is read");
	atomic_fetch_add(&a->ctr[0]->allowed, 1);
	EQ(atomic_load(&b->ctr[2]->allowed), 6);

	CTX("a retired, then a reload that drops x and z: y goes on");
	xrl_srv_cfg_free(a);
	EQ(b->ctr[2]->refs, 1);
	c = cfg_of("y", b);
	EQ(c->ctr[0] == b->ctr[1], true);
	xrl_srv_cfg_free(b); /* x's and z's counters go with it */
	EQ(c->ctr[0]->refs, 1);
	EQ(atomic_load(&c->ctr[0]->refused), 3);

	CTX("x added back: it starts again at 0");
	d = cfg_of("x y", c);
	EQ(atomic_load(&d->ctr[0]->allowed), 0);
	EQ(d->ctr[1] == c->ctr[0], true);
	xrl_srv_cfg_free(c);
	xrl_srv_cfg_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_norm_table),
		cmocka_unit_test(test_path_norm_bounds),
		cmocka_unit_test(test_rule_match_table),
		cmocka_unit_test(test_original_table),
		cmocka_unit_test(test_fwd_headers),
		cmocka_unit_test(test_original_names_missing),
		cmocka_unit_test(test_xff_table),
		cmocka_unit_test(test_config_table),
		cmocka_unit_test(test_restart_diff),
		cmocka_unit_test(test_topk),
		cmocka_unit_test(test_callers_table),
		cmocka_unit_test(test_secret_file),
		cmocka_unit_test(test_rule_counters_carry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
