// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * http_cfg.c - defaults and checks of the identity tier's configuration;
 * in libxrl (no server dependencies) because the policy parser uses them.
 */
#define _GNU_SOURCE /* memrchr */
#include <ctype.h>
#include <errno.h>
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_cfg.h"

void xrl_http_cfg_init(struct xrl_http_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->enabled = true;
	xrl_http_cfg_listen(c, "127.0.0.1:8433");
	c->redis_port = 6379;
	c->redis_timeout_ns = 50 * 1000000ULL;
	c->breaker_cooldown_ns = XRL_NSEC_PER_SEC;
	c->x_ratelimit_headers = true;
	c->ietf_headers = true;
	c->max_connections = 1024;
	c->idle_timeout_ns = 30 * XRL_NSEC_PER_SEC;
	c->max_header_bytes = 8192;
	c->head_timeout_ns = 10 * XRL_NSEC_PER_SEC;
	c->memory_max_keys = 1000000;
	c->threads = 2;
}

static bool in_prefix(const struct xrl_prefix *t, const struct xrl_prefix *a)
{
	__u32 m[4];
	bool ok = t->family == a->family;

	xrl_prefix_mask(t->family, t->plen, m);
	for (int w = 0; ok && w < 4; w++)
		ok = (a->addr[w] & m[w]) == t->addr[w];
	return ok;
}

bool xrl_http_loopback(const struct xrl_prefix *a)
{
	if (a->family == XRL_AF_INET)
		return (ntohl(a->addr[0]) >> 24) == 127;
	if (a->family != XRL_AF_INET6 || a->addr[0] || a->addr[1])
		return false;
	if (!a->addr[2] && a->addr[3] == htonl(1))
		return true; /* ::1 */
	return a->addr[2] == htonl(0xffff) && (ntohl(a->addr[3]) >> 24) == 127;
}

bool xrl_http_caller_ok(const struct xrl_http_cfg *c, const struct xrl_prefix *a)
{
	if (xrl_http_loopback(a))
		return true;
	for (__u32 i = 0; i < c->n_trusted; i++)
		if (in_prefix(&c->trusted[i], a))
			return true;
	for (__u32 i = 0; i < c->n_callers; i++)
		if (in_prefix(&c->callers[i], a))
			return true;
	return false;
}

int xrl_http_secret_load(struct xrl_http_cfg *c, const char *path, char *err, size_t errlen)
{
	char buf[XRL_HTTP_SECRET_MAX + 3];
	FILE *f = fopen(path, "re");
	size_t n;
	int rc = 0;

	c->caller_secret_len = 0;
	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "couldn't read http.caller_secret_file %s: %s", path,
			 strerror(-rc));
		return rc;
	}
	n = fread(buf, 1, sizeof(buf), f);
	if (ferror(f)) {
		rc = -EIO;
		snprintf(err, errlen, "couldn't read http.caller_secret_file %s: %s", path,
			 strerror(EIO));
	}
	fclose(f);
	if (rc)
		return rc;
	if (n && buf[n - 1] == '\n')
		n--;
	if (n && buf[n - 1] == '\r')
		n--;
	if (n < XRL_HTTP_SECRET_MIN || n > XRL_HTTP_SECRET_MAX) {
		snprintf(err, errlen,
			 "http.caller_secret_file %s: expected one line of %d to %d bytes, got %s",
			 path, XRL_HTTP_SECRET_MIN, XRL_HTTP_SECRET_MAX,
			 !n ? "an empty file" : n < XRL_HTTP_SECRET_MIN ? "fewer" : "more");
		rc = -EINVAL;
	}
	for (size_t i = 0; !rc && i < n; i++)
		if ((unsigned char)buf[i] <= ' ' || (unsigned char)buf[i] >= 0x7f) {
			snprintf(err, errlen,
				 "http.caller_secret_file %s: a byte other than visible ASCII at "
				 "offset %zu (a header value carries it as it is)",
				 path, i);
			rc = -EINVAL;
		}
	if (!rc) {
		memcpy(c->caller_secret, buf, n);
		c->caller_secret_len = (__u32)n;
	}
	explicit_bzero(buf, sizeof(buf));
	return rc;
}

/* A URL's user or password, %XX decoded, into out (NUL-terminated). */
static int url_decode(const char *s, size_t n, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (ch == '%') {
			char hex[3];

			if (i + 2 >= n)
				return -EINVAL;
			hex[0] = s[i + 1];
			hex[1] = s[i + 2];
			hex[2] = '\0';
			if (!isxdigit((unsigned char)hex[0]) || !isxdigit((unsigned char)hex[1]))
				return -EINVAL;
			ch = (char)strtol(hex, NULL, 16);
			if (!ch)
				return -EINVAL;
			i += 2;
		}
		if (o + 1 >= outlen)
			return -ENAMETOOLONG;
		out[o++] = ch;
	}
	out[o] = '\0';
	return 0;
}

/* A whole decimal number from s to end, within [lo, hi]. */
static bool whole(const char *s, const char *end, long lo, long hi, int *out)
{
	long v = 0;

	if (s == end || end - s > 9)
		return false;
	for (const char *q = s; q < end; q++) {
		if (*q < '0' || *q > '9')
			return false;
		v = v * 10 + (*q - '0');
	}
	if (v < lo || v > hi)
		return false;
	*out = (int)v;
	return true;
}

int xrl_hostport_parse(const char *s, size_t n, char *host, size_t hostlen, int *port)
{
	const char *end = s + n, *hs = s, *he, *colon;
	unsigned char a[16];
	size_t hl;

	if (n && *s == '[') {
		hs = s + 1;
		he = memchr(hs, ']', (size_t)(end - hs));
		colon = he && he + 1 < end && he[1] == ':' ? he + 1 : NULL;
	} else {
		colon = memrchr(s, ':', n);
		he = colon;
		if (colon && memchr(s, ':', (size_t)(colon - s)))
			colon = NULL; /* an IPv6 address wants brackets */
	}
	if (!colon || he <= hs || (size_t)(he - hs) >= hostlen)
		return -EINVAL;
	hl = (size_t)(he - hs);
	memcpy(host, hs, hl);
	host[hl] = '\0';
	if (hs != s) {
		if (inet_pton(AF_INET6, host, a) != 1)
			return -EINVAL;
	} else if (inet_pton(AF_INET, host, a) != 1) {
		/* a host name: letters, digits, '-' and '.', no empty label */
		if (host[0] == '.' || host[0] == '-' || host[hl - 1] == '.' || strstr(host, ".."))
			return -EINVAL;
		for (const char *q = host; *q; q++)
			if (!isalnum((unsigned char)*q) && *q != '-' && *q != '.')
				return -EINVAL;
	}
	return whole(colon + 1, end, 1, 65535, port) ? 0 : -ERANGE;
}

int xrl_http_cfg_listen(struct xrl_http_cfg *c, const char *s)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	socklen_t sl = 0;
	char host[sizeof(c->listen)];
	int port;

	if (strlen(s) >= sizeof(c->listen) ||
	    xrl_hostport_parse(s, strlen(s), host, sizeof(host), &port))
		return -EINVAL;
	if (strchr(host, ':') && inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		sl = sizeof(*a6);
	} else if (!strchr(host, ':') && inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		sl = sizeof(*a4);
	}
	snprintf(c->listen, sizeof(c->listen), "%s", s);
	c->listen_port = port;
	c->listen_addr = ss;
	c->listen_addrlen = sl;
	return 0;
}

/*
 * redis-cluster://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...]: the seeds,
 * each checked as a redis:// URL's HOST:PORT would be; the first (with
 * the user and password) parsed as redis://, so the AUTH syntax is one.
 * A cluster has no database but 0.
 */
static int cluster_parse(const char *s, struct xrl_http_cfg *c, char *err, size_t errlen)
{
	const char *p = s + 16, *at = strrchr(p, '@'), *seeds = at ? at + 1 : p, *comma;
	char url[1024], host[128];
	int port, rc;

	comma = strchr(seeds, ',');
	if (strlen(seeds) >= sizeof(c->redis_seeds) || strchr(seeds, '/')) {
		snprintf(err, errlen,
			 "backend: expected redis-cluster://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...] "
			 "(no /DB, at most %zu bytes of seeds)",
			 sizeof(c->redis_seeds) - 1);
		return -EINVAL;
	}
	snprintf(url, sizeof(url), "redis://%.*s", (int)(comma ? comma - p : (long)strlen(p)), p);
	rc = xrl_http_backend_parse(url, c, err, errlen);
	explicit_bzero(url, sizeof(url));
	if (rc)
		return rc;
	for (const char *q = comma; q; q = comma) {
		q++;
		comma = strchr(q, ',');
		if (xrl_hostport_parse(q, comma ? (size_t)(comma - q) : strlen(q), host,
				       sizeof(host), &port)) {
			snprintf(err, errlen,
				 "backend: a seed of redis-cluster:// is not HOST:PORT: '%.*s'",
				 (int)(comma ? (comma - q > 100 ? 100 : comma - q) : 100), q);
			c->redis = false;
			return -EINVAL;
		}
	}
	snprintf(c->redis_seeds, sizeof(c->redis_seeds), "%s", seeds);
	c->redis_cluster = true;
	return 0;
}

/*
 * memory | redis://[[USER]:PASSWORD@]HOST:PORT[/DB], HOST a name, an IPv4
 * address or [an IPv6 one]; USER and PASSWORD %XX-encoded where they hold
 * ':', '@', '/' or '%'. What an error says never shows the password.
 */
int xrl_http_backend_parse(const char *s, struct xrl_http_cfg *c, char *err, size_t errlen)
{
	const char *p, *at, *end, *slash;
	char user[sizeof(c->redis_user)] = "", pass[sizeof(c->redis_pass)] = "";
	int port, db = 0;

	c->redis_cluster = false;
	if (!strcmp(s, "memory")) {
		c->redis = false;
		return 0;
	}
	if (!strncmp(s, "redis-cluster://", 16))
		return cluster_parse(s, c, err, errlen);
	if (strncmp(s, "redis://", 8)) {
		snprintf(err, errlen,
			 "backend: expected memory or redis://[[USER]:PASSWORD@]HOST:PORT[/DB], "
			 "got '%.40s'",
			 strchr(s, '@') ? "(a URL with a password, not shown)" : s);
		return -EINVAL;
	}
	p = s + 8;
	at = strrchr(p, '@');
	if (at) {
		const char *ui_colon = memchr(p, ':', (size_t)(at - p));

		if (!ui_colon) {
			snprintf(err, errlen,
				 "backend: redis://USER@...: a user needs a password "
				 "(redis://USER:PASSWORD@HOST:PORT, or redis://:PASSWORD@HOST:PORT)");
			return -EINVAL;
		}
		if (url_decode(p, (size_t)(ui_colon - p), user, sizeof(user))) {
			snprintf(err, errlen,
				 "backend: the user in the redis:// URL is longer than %zu bytes "
				 "or has a bad %%XX escape",
				 sizeof(user) - 1);
			return -EINVAL;
		}
		if (url_decode(ui_colon + 1, (size_t)(at - ui_colon - 1), pass, sizeof(pass)) ||
		    !pass[0]) {
			snprintf(err, errlen,
				 "backend: the password in the redis:// URL is empty, longer than "
				 "%zu bytes or has a bad %%XX escape (not shown)",
				 sizeof(pass) - 1);
			return -EINVAL;
		}
		p = at + 1;
	}
	slash = strchr(p, '/');
	end = slash ? slash : p + strlen(p);
	switch (xrl_hostport_parse(p, (size_t)(end - p), c->redis_host, sizeof(c->redis_host),
				   &port)) {
	case 0:
		break;
	case -ERANGE: {
		const char *colon = memrchr(p, ':', (size_t)(end - p));

		snprintf(err, errlen,
			 "backend: the port in the redis:// URL must be a number from 1 to "
			 "65535, got '%.*s'",
			 (int)(end - colon - 1 > 20 ? 20 : end - colon - 1), colon + 1);
		return -EINVAL;
	}
	default:
		snprintf(err, errlen,
			 "backend: expected redis://[[USER]:PASSWORD@]HOST:PORT[/DB] "
			 "(an IPv6 HOST in brackets), got '%s%.*s'",
			 at ? "redis://(not shown)@" : "redis://",
			 (int)(strlen(p) > 100 ? 100 : strlen(p)), p);
		return -EINVAL;
	}
	if (slash && !whole(slash + 1, slash + strlen(slash), 0, 1000, &db)) {
		snprintf(err, errlen,
			 "backend: the database in the redis:// URL must be a number from 0 "
			 "to 1000, got '%.20s'",
			 slash + 1);
		return -EINVAL;
	}
	c->redis_port = port;
	c->redis_db = db;
	memcpy(c->redis_user, user, sizeof(user));
	memcpy(c->redis_pass, pass, sizeof(pass));
	c->redis = true;
	return 0;
}

int xrl_http_cfg_finish(struct xrl_http_cfg *c, char *err, size_t errlen)
{
	for (__u32 i = 0; i < c->n_rules; i++) {
		struct xrl_http_rule *r = &c->rules[i];
		int rc;

		for (__u32 j = 0; j < i; j++)
			if (!strcmp(c->rules[j].name, r->name)) {
				snprintf(err, errlen, "http rule name '%s' is used twice", r->name);
				return -EINVAL;
			}
		if (!r->cost && !r->cost_zero)
			r->cost = 1;
		if (r->rate.tokens && r->burst)
			r->has_rate = true;
		if (!r->has_rate && !r->concurrency) {
			snprintf(err, errlen, "http rule %s: needs rate and burst, or concurrency",
				 r->name);
			return -EINVAL;
		}
		if (r->concurrency && !r->lease_ttl_ns)
			r->lease_ttl_ns = XRL_HTTP_LEASE_TTL;
		rc = r->has_rate ? xrl_gcra_init(r->rate.tokens, r->rate.period_ns, r->burst, &r->g)
				 : 0;
		if (rc) {
			snprintf(err, errlen, "http rule %s: rate and burst out of range", r->name);
			return rc;
		}
		if (r->has_rate && r->cost > r->burst) {
			snprintf(err, errlen,
				 "http rule %s: cost %u above burst %u could never be allowed",
				 r->name, r->cost, r->burst);
			return -EINVAL;
		}
		if (r->key_kind == XRL_KEY_HEADER && !r->header[0]) {
			snprintf(err, errlen, "http rule %s: key header: needs a header name",
				 r->name);
			return -EINVAL;
		}
		r->id = xrl_rule_id(r->name);
	}
	if (c->shed_enabled &&
	    xrl_gcra_init(c->shed_rate.tokens, c->shed_rate.period_ns, c->shed_burst, &c->shed_g)) {
		snprintf(err, errlen, "http shed: rate and burst out of range");
		return -ERANGE;
	}
	for (__u32 i = 0; i < c->n_shed; i++)
		if (xrl_gcra_init(c->shed[i].rate.tokens, c->shed[i].rate.period_ns,
				  c->shed[i].burst, &c->shed[i].g)) {
			snprintf(err, errlen, "http shed[%u]: rate and burst out of range", i);
			return -ERANGE;
		}
	return 0;
}
