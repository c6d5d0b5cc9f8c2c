// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fuzz_http.c - libFuzzer harness for the identity tier's request-to-decision
 * pieces that take plain strings (user/http/server/request.c): which forwarded headers
 * count, path normalisation, rule matching against a small fixed policy,
 * and the X-Forwarded-For walk.
 *
 * Input: byte 0 picks http.forwarded_from (low 3 bits, mod 5), whether the
 * peer is trusted (bit 3) and ignore_path_case (bit 4); the rest is a
 * request head: "METHOD URL" on the first line, then "Name: value" lines
 * (CR optional), as a proxy would send it.
 *
 * Invariants checked (abort on violation):
 *  - normalising never grows the input, ends in a NUL at the returned
 *    length, starts with '/', has no "//", "." or ".." segment, no raw ';',
 *    '?', '#' or control byte, only upper-case %XX; and normalising the
 *    result gives it back;
 *  - variants a backend routes alike ("/." prefixed, a '/' doubled, the
 *    first letter %-encoded) normalise to the same path and match the same
 *    rules;
 *  - xrl_http_original succeeds only with a normalised path, and with the
 *    request's own method unless a trusted proxy of a header kind sent
 *    the forwarded headers;
 *  - the XFF walk gives the untrusted peer itself, or an address that
 *    parses and prints back to itself.
 *
 * Build by hand (the Makefile rule is the fuzz helper's):
 *   clang -fsanitize=fuzzer,address,undefined -g -O1 -Iinclude -Ibuild -Iuser/lib -Iuser \
 *     tests/fuzz/fuzz_http.c user/http/server/request.c user/lib/http_cfg.c user/lib/http_path.c user/lib/policy.c \
 *     -o build/fuzz_http
 *   build/fuzz_http -max_total_time=60 tests/fuzz/corpus/http
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/http.h"

#define FUZZ_NAME "fuzz_http"
#include "fuzz_check.h"

#define HDR_MAX 32

static struct xrl_http_cfg cfg;
static const char *const prefixes[] = { "/api/holds", "/login", "/api/", "/A%3Bb", "/" };
static const char *const methods[] = { "POST", "POST", "", "GET", "" };
#define N_RULES (sizeof(prefixes) / sizeof(prefixes[0]))

static void setup_once(void)
{
	static int done;

	if (done)
		return;
	done = 1;
	xrl_http_cfg_init(&cfg);
	for (size_t i = 0; i < N_RULES; i++) {
		snprintf(cfg.rules[i].name, sizeof(cfg.rules[i].name), "r%zu", i);
		snprintf(cfg.rules[i].method, sizeof(cfg.rules[i].method), "%s", methods[i]);
		snprintf(cfg.rules[i].path_prefix, sizeof(cfg.rules[i].path_prefix), "%s", prefixes[i]);
	}
	cfg.n_rules = N_RULES;
	xrl_prefix_parse("127.0.0.0/8", &cfg.trusted[0], NULL, 0);
	xrl_prefix_parse("10.0.0.0/8", &cfg.trusted[1], NULL, 0);
	xrl_prefix_parse("2001:db8:f::/48", &cfg.trusted[2], NULL, 0);
	cfg.n_trusted = 3;
}

/* The shape every normalised path has. */
static void check_normal(const char *p, int len, const char *in, size_t n)
{
	CHECK(len >= 1 && (size_t)len <= n, "length %d of input %zu", len, n);
	CHECK(p[len] == '\0' && strlen(p) == (size_t)len, "not terminated at %d", len);
	CHECK(p[0] == '/', "'%s' does not start with /", p);
	CHECK(!strstr(p, "//"), "'%s' has //", p);
	CHECK(!strstr(p, "/./") && !strstr(p, "/../"), "'%s' has a dot segment", p);
	CHECK(!(len >= 2 && !strcmp(p + len - 2, "/.")) && !(len >= 3 && !strcmp(p + len - 3, "/..")),
	      "'%s' ends in a dot segment", p);
	for (int i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];

		CHECK(c >= 0x20 && c != 0x7f && c != ';' && c != '?' && c != '#', "'%s' has byte %#x", p, c);
		if (c == '%')
			CHECK(i + 2 < len && strchr("0123456789ABCDEF", p[i + 1]) && p[i + 1] &&
			      strchr("0123456789ABCDEF", p[i + 2]) && p[i + 2], "'%s': bad escape at %d", p, i);
	}
	(void)in;
}

static unsigned match_set(const char *method, const char *path)
{
	unsigned m = 0;

	for (size_t i = 0; i < N_RULES; i++)
		if (xrl_http_rule_match(&cfg, &cfg.rules[i], method, path))
			m |= 1u << i;
	return m;
}

/* Normalise s (n bytes), check the invariants, and return the length (or
 * -errno); out holds the path. */
static int norm_checked(const char *s, size_t n, char *out, size_t outlen)
{
	char *again = malloc(outlen);
	int len = xrl_http_path_norm(s, n, out, outlen), l2;

	if (len < 0 || !again) {
		free(again);
		return len;
	}
	check_normal(out, len, s, n);
	l2 = xrl_http_path_norm(out, (size_t)len, again, outlen);
	CHECK(l2 == len && !strcmp(again, out), "not idempotent: '%s' -> '%s'", out, again);
	free(again);
	return len;
}

/* Variants a backend routes alike: the same path and the same rules. */
static void check_variants(const char *path, int len, const char *method)
{
	size_t vl = (size_t)len + 8;
	char *v = malloc(vl), *o = malloc(vl);
	unsigned want = match_set(method, path);
	int i, r;

	if (!v || !o)
		goto out;
	/* "/." in front */
	snprintf(v, vl, "/.%s", path);
	r = xrl_http_path_norm(v, strlen(v), o, vl);
	CHECK(r == len && !strcmp(o, path), "'/.' + '%s' -> '%s'", path, o);
	/* the first '/' doubled */
	snprintf(v, vl, "/%s", path);
	r = xrl_http_path_norm(v, strlen(v), o, vl);
	CHECK(r == len && !strcmp(o, path), "'/' + '%s' -> '%s'", path, o);
	CHECK(match_set(method, o) == want, "rules differ for '%s'", v);
	/* the first letter %-encoded */
	for (i = 0; i < len && !((path[i] | 0x20) >= 'a' && (path[i] | 0x20) <= 'z'); i++)
		if (path[i] == '%')
			i += 2; /* not a letter of a kept escape */
	if (i < len) {
		snprintf(v, vl, "%.*s%%%02x%s", i, path, (unsigned char)path[i], path + i + 1);
		r = xrl_http_path_norm(v, strlen(v), o, vl);
		CHECK(r == len && !strcmp(o, path), "'%s' -> '%s', want '%s'", v, o, path);
		CHECK(match_set(method, o) == want, "rules differ for '%s'", v);
	}
out:
	free(v);
	free(o);
}

struct head {
	char *method, *url;
	char *name[HDR_MAX], *value[HDR_MAX];
	int n;
};

/* Split buf (NUL-terminated, modified) into a request line and headers. */
static void split(char *buf, struct head *h)
{
	char *line = buf, *next, *sp;

	memset(h, 0, sizeof(*h));
	for (int first = 1; line; line = next, first = 0) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line[strcspn(line, "\r")] = '\0';
		if (first) {
			sp = strchr(line, ' ');
			h->method = line;
			h->url = sp ? (*sp = '\0', sp + 1) : (char *)"/";
			continue;
		}
		sp = strchr(line, ':');
		if (!sp || h->n == HDR_MAX)
			continue;
		*sp++ = '\0';
		while (*sp == ' ' || *sp == '\t')
			sp++;
		h->name[h->n] = line;
		h->value[h->n++] = sp;
	}
}

static const char *lookup(const struct head *h, const char *name, int *count)
{
	const char *v = NULL;

	*count = 0;
	for (int i = 0; i < h->n; i++)
		if (!strcasecmp(h->name[i], name)) {
			if (!v)
				v = h->value[i];
			(*count)++;
		}
	return v;
}

static void check_xff(const struct head *h, bool trusted_peer)
{
	const char *peer = trusted_peer ? "127.0.0.1" : "192.0.2.1";
	char xff[4096] = "", out[64], back[64];
	size_t o = 0;
	struct xrl_prefix p;

	for (int i = 0; i < h->n; i++) {
		if (strcasecmp(h->name[i], "X-Forwarded-For"))
			continue;
		/* each entry alone must not crash the entry parser either */
		xrl_http_addr_parse(h->value[i], strlen(h->value[i]), &p);
		o += (size_t)snprintf(xff + o, sizeof(xff) - o, "%s%s", o ? "," : "", h->value[i]);
		if (o >= sizeof(xff))
			o = sizeof(xff) - 1;
	}
	xrl_http_client_addr(&cfg, peer, o ? xff : NULL, o, out, sizeof(out));
	if (!trusted_peer) {
		CHECK(!strcmp(out, peer), "untrusted peer became '%s'", out);
		return;
	}
	CHECK(!xrl_http_addr_parse(out, strlen(out), &p), "client '%s' does not parse", out);
	xrl_http_client_addr(&cfg, out, NULL, 0, back, sizeof(back));
	CHECK(!strcmp(out, back), "client '%s' prints as '%s'", out, back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *path, *tmp;
	struct head h;
	const char *mh, *uh, *fm = NULL, *fu = NULL, *om = NULL, *why = NULL;
	bool trusted;
	int nm = 0, nu = 0, rc, len;

	setup_once();
	if (size < 1)
		return 0;
	cfg.forwarded_from = (enum xrl_fwd_from)((data[0] & 7) % 5);
	trusted = data[0] & 8;
	cfg.ignore_path_case = data[0] & 16;
	/* the raw bytes (NULs and all) through the normaliser */
	path = malloc(size + 1);
	tmp = malloc(size + 1);
	buf = malloc(size);
	if (!path || !tmp || !buf)
		goto out;
	len = norm_checked((const char *)data + 1, size - 1, path, size);
	if (len >= 0)
		check_variants(path, len, "POST");

	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = '\0';
	split(buf, &h);
	xrl_http_fwd_headers(cfg.forwarded_from, &mh, &uh);
	if (mh && trusted) {
		fm = lookup(&h, mh, &nm);
		fu = lookup(&h, uh, &nu);
	}
	rc = xrl_http_original(&cfg, trusted, h.method, h.url, fm, fu, nm > 1 || nu > 1, &om, path,
			       size + 1, &why);
	if (rc == 0) {
		len = (int)strlen(path);
		check_normal(path, len, h.url, size);
		/* Envoy's /v1/auth/PATH form from a trusted proxy that sent no
		 * forwarded header is the request's own (request.c) */
		CHECK(om == (mh && trusted && (fm || fu) ? fm : h.method),
		      "method from the wrong place");
		CHECK(xrl_http_path_norm(path, (size_t)len, tmp, size + 1) == len && !strcmp(tmp, path),
		      "original path '%s' not normal", path);
		check_variants(path, len, om);
	} else {
		CHECK(why && *why, "rc %d without a reason", rc);
	}
	check_xff(&h, trusted);
out:
	free(buf);
	free(tmp);
	free(path);
	return 0;
}
