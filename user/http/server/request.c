// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * request.c - what the identity tier believes about a request, from plain
 * strings: the original method and path (which forwarded headers count, and
 * the path normalised as the backend would route it), the client address
 * (the X-Forwarded-For walk), and whether a rule matches. No libmicrohttpd
 * types, so that the unit tests and the fuzzer call exactly what xrld runs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http/http.h"

/* A port after an address: 1 to 5 digits, at most 65535. */
static bool port_ok(const char *s, const char *end)
{
	unsigned v = 0;

	if (s == end || end - s > 5)
		return false;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (unsigned)(*s - '0');
	}
	return v <= 65535;
}

static void trim(const char **s, const char **end)
{
	while (*s < *end && (**s == ' ' || **s == '\t'))
		(*s)++;
	while (*end > *s && ((*end)[-1] == ' ' || (*end)[-1] == '\t'))
		(*end)--;
}

int xrl_http_addr_parse(const char *s, size_t n, struct xrl_prefix *p)
{
	const char *end = s + n, *hs, *he;
	char host[INET6_ADDRSTRLEN];
	bool v6;

	trim(&s, &end);
	if (end - s >= 2 && *s == '"' && end[-1] == '"') {
		s++;
		end--;
	}
	if (s < end && *s == '[') {
		hs = s + 1;
		he = memchr(hs, ']', (size_t)(end - hs));
		if (!he || (he + 1 < end && (he[1] != ':' || !port_ok(he + 2, end))))
			return -EINVAL;
		v6 = true;
	} else {
		const char *colon = memchr(s, ':', (size_t)(end - s));

		hs = s;
		he = end;
		v6 = colon && memchr(colon + 1, ':', (size_t)(end - colon - 1));
		if (colon && !v6) { /* IPv4:port */
			if (!port_ok(colon + 1, end))
				return -EINVAL;
			he = colon;
		}
	}
	if (he <= hs || (size_t)(he - hs) >= sizeof(host))
		return -EINVAL;
	memcpy(host, hs, (size_t)(he - hs));
	host[he - hs] = '\0';
	memset(p, 0, sizeof(*p));
	if (!v6 && inet_pton(AF_INET, host, &p->addr[0]) == 1) {
		p->family = XRL_AF_INET;
		p->plen = 32;
		return 0;
	}
	if (!v6 || inet_pton(AF_INET6, host, p->addr) != 1)
		return -EINVAL;
	p->family = XRL_AF_INET6;
	p->plen = 128;
	/* ::ffff:a.b.c.d is the IPv4 client of a dual-stack socket */
	if (!p->addr[0] && !p->addr[1] && p->addr[2] == htonl(0xffff)) {
		p->addr[0] = p->addr[3];
		p->addr[2] = p->addr[3] = 0;
		p->family = XRL_AF_INET;
		p->plen = 32;
	}
	return 0;
}

bool xrl_http_trusted(const struct xrl_http_cfg *c, const struct xrl_prefix *a)
{
	for (__u32 i = 0; i < c->n_trusted; i++) {
		const struct xrl_prefix *t = &c->trusted[i];
		__u32 m[4];
		bool ok = t->family == a->family;

		xrl_prefix_mask(t->family, t->plen, m);
		for (int w = 0; ok && w < 4; w++)
			ok = (a->addr[w] & m[w]) == t->addr[w];
		if (ok)
			return true;
	}
	return false;
}

static void addr_text(const struct xrl_prefix *p, char *out, size_t outlen)
{
	char t[INET6_ADDRSTRLEN] = "unknown";

	inet_ntop(p->family == XRL_AF_INET ? AF_INET : AF_INET6, p->addr, t, sizeof(t));
	snprintf(out, outlen, "%s", t);
}

void xrl_http_client_addr(const struct xrl_http_cfg *c, const char *peer, const char *xff,
			  size_t xfflen, char *out, size_t outlen)
{
	struct xrl_prefix a;
	const char *end = xff ? xff + xfflen : NULL;

	if (!peer || xrl_http_addr_parse(peer, strlen(peer), &a)) {
		snprintf(out, outlen, "%s", "unknown");
		return;
	}
	addr_text(&a, out, outlen);
	if (!xff || !xrl_http_trusted(c, &a))
		return;
	/* right to left: only the right end was written by our proxies, so
	 * the whole list is walked (it is bounded by max_header_bytes) */
	while (end > xff) {
		const char *start = end;

		while (start > xff && start[-1] != ',')
			start--;
		if (xrl_http_addr_parse(start, (size_t)(end - start), &a))
			return;
		addr_text(&a, out, outlen);
		if (!xrl_http_trusted(c, &a))
			return;
		end = start > xff ? start - 1 : xff;
	}
}

/* ---- the original request --------------------------------------------------------- */

void xrl_http_fwd_headers(enum xrl_fwd_from f, const char **method_hdr, const char **uri_hdr)
{
	switch (f) {
	case XRL_FWD_NGINX:
		*method_hdr = "X-Original-Method";
		*uri_hdr = "X-Original-URI";
		return;
	case XRL_FWD_TRAEFIK:
	case XRL_FWD_CADDY:
		*method_hdr = "X-Forwarded-Method";
		*uri_hdr = "X-Forwarded-Uri";
		return;
	default:
		*method_hdr = *uri_hdr = NULL;
	}
}

int xrl_http_original(const struct xrl_http_cfg *c, bool trusted, const char *method,
		      const char *url, const char *fm, const char *fu, bool dup, const char **om,
		      char *path, size_t pathlen, const char **why)
{
	const char *mh, *uh, *target = url;
	bool prefix_form;
	int rc;

	xrl_http_fwd_headers(c->forwarded_from, &mh, &uh);
	/* Envoy's ext_authz form, path_prefix /v1/auth + the original path, is
	 * taken whatever forwarded_from says, but the forwarded headers of the
	 * configured kind from a trusted proxy win when it sent any (one alone
	 * is still a 400). /v1/auth/nginx stays nginx's endpoint unless the
	 * tier reads no header (envoy, none). */
	prefix_form = !strncmp(url, "/v1/auth/", 9) && (!mh || strcmp(url, "/v1/auth/nginx"));
	if (mh && trusted && !(prefix_form && !fm && !fu && !dup)) {
		if (dup) {
			*why = "the original method or URI header came more than once";
			return -EINVAL;
		}
		if (!fm || !*fm || !fu) {
			/* the answer names what is missing (this thread's buffer:
			 * the problem is written before the next request) */
			static __thread char miss[160];
			bool no_m = !fm || !*fm;

			snprintf(miss, sizeof(miss),
				 "the trusted proxy did not send %s%s%s (the headers of "
				 "http.forwarded_from)",
				 no_m ? mh : "", no_m && !fu ? " and " : "", !fu ? uh : "");
			*why = miss;
			return -EINVAL;
		}
		*om = fm;
		target = fu;
	} else {
		*om = method;
		/* envoy ext_authz: path_prefix /v1/auth, then the original path,
		 * normalised below as a forwarded URI is */
		if (prefix_form || (!mh && !strcmp(url, "/v1/auth")))
			target = url[8] ? url + 8 : "/";
	}
	rc = xrl_http_path_norm(target, strlen(target), path, pathlen);
	if (rc == -ENAMETOOLONG)
		*why = "the original path is too long";
	else if (rc < 0)
		*why = "the original URI is not a path, or has a bad %XX escape, %00 or a control byte";
	return rc < 0 ? rc : 0;
}

bool xrl_http_match(const struct xrl_http_cfg *c, const char *want_method,
		    const char *want_prefix, size_t prefix_cap, const char *method, const char *path)
{
	size_t pl;

	if (want_method[0] && strcmp(want_method, method))
		return false;
	if (!want_prefix[0])
		return true;
	pl = strnlen(want_prefix, prefix_cap);
	return c->ignore_path_case ? !strncasecmp(path, want_prefix, pl)
				   : !strncmp(path, want_prefix, pl);
}

bool xrl_http_rule_match(const struct xrl_http_cfg *c, const struct xrl_http_rule *r,
			 const char *method, const char *path)
{
	return xrl_http_match(c, r->method, r->path_prefix, sizeof(r->path_prefix), method, path);
}
