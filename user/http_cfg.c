// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * http_cfg.c - defaults and checks of the identity tier's configuration;
 * in libxrl (no server dependencies) because the policy parser uses them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

void xrl_http_cfg_init(struct xrl_http_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->enabled = true;
	snprintf(c->listen, sizeof(c->listen), "127.0.0.1:9090");
	c->redis_port = 6379;
	c->redis_timeout_ns = 50 * 1000000ULL;
	c->breaker_cooldown_ns = XRL_NSEC_PER_SEC;
	c->x_ratelimit_headers = true;
	c->ietf_headers = true;
	c->max_connections = 1024;
	c->idle_timeout_ns = 30 * XRL_NSEC_PER_SEC;
	c->max_header_bytes = 8192;
	c->memory_max_keys = 1000000;
	c->threads = 2;
}

int xrl_http_backend_parse(const char *s, struct xrl_http_cfg *c, char *err, size_t errlen)
{
	char host[128];
	const char *p, *colon, *slash;

	if (!strcmp(s, "memory")) {
		c->redis = false;
		return 0;
	}
	if (strncmp(s, "redis://", 8)) {
		snprintf(err, errlen, "backend: expected memory or redis://HOST:PORT[/DB], got '%s'", s);
		return -EINVAL;
	}
	p = s + 8;
	colon = strrchr(p, ':');
	slash = strchr(p, '/');
	if (!colon || (slash && slash < colon) || colon == p || (size_t)(colon - p) >= sizeof(host)) {
		snprintf(err, errlen, "backend: expected redis://HOST:PORT[/DB], got '%s'", s);
		return -EINVAL;
	}
	memcpy(host, p, (size_t)(colon - p));
	host[colon - p] = '\0';
	c->redis_port = atoi(colon + 1);
	c->redis_db = slash ? atoi(slash + 1) : 0;
	if (c->redis_port < 1 || c->redis_port > 65535 || c->redis_db < 0 || c->redis_db > 1000) {
		snprintf(err, errlen, "backend: bad port or database in '%s'", s);
		return -EINVAL;
	}
	snprintf(c->redis_host, sizeof(c->redis_host), "%s", host);
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
		if (!r->cost)
			r->cost = 1;
		rc = xrl_gcra_init(r->rate.tokens, r->rate.period_ns, r->burst, &r->g);
		if (rc) {
			snprintf(err, errlen, "http rule %s: rate and burst out of range", r->name);
			return rc;
		}
		if (r->cost > r->burst) {
			snprintf(err, errlen, "http rule %s: cost %u above burst %u could never be allowed",
				 r->name, r->cost, r->burst);
			return -EINVAL;
		}
		if (r->key_kind == XRL_KEY_HEADER && !r->header[0]) {
			snprintf(err, errlen, "http rule %s: key header: needs a header name", r->name);
			return -EINVAL;
		}
		r->id = xrl_rule_id(r->name);
	}
	if (c->shed_enabled && xrl_gcra_init(c->shed_rate.tokens, c->shed_rate.period_ns,
					     c->shed_burst, &c->shed_g)) {
		snprintf(err, errlen, "http shed: rate and burst out of range");
		return -ERANGE;
	}
	return 0;
}

