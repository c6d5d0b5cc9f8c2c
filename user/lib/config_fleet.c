// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * config_fleet.c - the fleet section of the policy file: the fleet's name,
 * its Redis, the prefixes it never denies.
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

/* A fleet's name: what its Redis keys are named after (xrl:{fleet:NAME}:...). */
int cfg_fleet_name(struct cfg_parse *x, yaml_node_t *n, const char *path, char out[64])
{
	char d[64];
	const char *s;
	int rc;

	if ((rc = cfg_scalar(x, n, path, "a fleet name ([A-Za-z0-9_.-], 1 to 63 bytes)", &s)))
		return rc;
	if (!cfg_rule_name_ok(s) || strlen(s) >= 64)
		return cfg_error_at(x, n,
				    "%s: expected a fleet name ([A-Za-z0-9_.-], 1 to 63 bytes), got %s",
				    path, cfg_desc(n, d, sizeof(d)));
	snprintf(out, 64, "%s", s);
	return 0;
}

/* The fleet's Redis is the one h's backend names (fleet.redis read as an
 * http.backend, or the identity tier's own). */
static void redis_from(struct xrl_fleet_cfg *fc, const struct xrl_http_cfg *h)
{
	memcpy(fc->redis_host, h->redis_host, sizeof(fc->redis_host));
	fc->redis_port = h->redis_port;
	fc->redis_db = h->redis_db;
	memcpy(fc->redis_user, h->redis_user, sizeof(fc->redis_user));
	memcpy(fc->redis_pass, h->redis_pass, sizeof(fc->redis_pass));
	fc->redis_cluster = h->redis_cluster;
	memcpy(fc->redis_seeds, h->redis_seeds, sizeof(fc->redis_seeds));
}

/* fleet.protect: [PREFIX, ...], none listed twice. */
static int parse_fleet_protect(struct cfg_parse *x, yaml_node_t *n, struct xrl_fleet_cfg *fc)
{
	return cfg_prefix_list(x, n, "fleet.protect", "protected prefixes", XRL_FLEET_MAX_PROTECT,
			       fc->protect, &fc->n_protect);
}

/* fleet: { name: NAME, redis: redis://... } (redis: optional when the
 * identity tier's backend is a redis:// URL; fleet_resolve checks). */
int cfg_parse_fleet(struct cfg_parse *x, yaml_node_t *n)
{
#define KEYS(X) \
	X(F_NAME, "name") X(F_REDIS, "redis") X(F_PROTECT, "protect") X(F_MEMBERS, "max_members")
	CFG_KEYS(KEYS, F_COUNT, f);
#undef KEYS
	struct xrl_fleet_cfg *fc = &x->c->fleet;
	struct xrl_http_cfg *tmp;
	char msg[XRL_ERRLEN];
	const char *s;
	__u64 v;
	int rc;

	if ((rc = cfg_mapping(x, n, "fleet", "fleet", f, F_COUNT)))
		return rc;
	if (!f[F_NAME].v)
		return cfg_error_at(
			x, n, "fleet: missing 'name' (the fleet's name, shared by its instances)");
	if ((rc = cfg_fleet_name(x, f[F_NAME].v, "fleet.name", fc->name)))
		return rc;
	fc->enabled = fc->packet = true;
	if (f[F_PROTECT].v && (rc = parse_fleet_protect(x, f[F_PROTECT].v, fc)))
		return rc;
	if (f[F_MEMBERS].v) {
		rc = cfg_uint_val(x, f[F_MEMBERS].v, "fleet.max_members",
				  "a member count from 1 to 65536", 1, XRL_FLEET_MEMBERS_MAX, &v);
		if (rc)
			return rc;
		fc->max_members = (__u32)v;
	}
	if (!f[F_REDIS].v)
		return 0;
	if ((rc = cfg_scalar(x, f[F_REDIS].v, "fleet.redis",
			     "redis://[[USER]:PASSWORD@]HOST:PORT[/DB]", &s)))
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
		redis_from(fc, tmp);
	}
	explicit_bzero(tmp, sizeof(*tmp));
	free(tmp);
	/* msg reads "backend: ...": say which key it was */
	if (rc)
		return cfg_error_at(x, f[F_REDIS].v, "fleet.redis%s",
				    strchr(msg, ':') ? strchr(msg, ':') : msg);
	return 0;
}

/* After fleet: and http: are read: one fleet, one Redis. */
int cfg_fleet_resolve(struct cfg_parse *x, yaml_node_t *root)
{
	struct xrl_fleet_cfg *fc = &x->c->fleet;
	struct xrl_http_cfg *h = &x->c->http;

	if (x->c->has_http && h->fleet[0] && fc->enabled && strcmp(h->fleet, fc->name))
		return cfg_error_at(x, root,
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
		return cfg_error_at(x, root,
				    "fleet '%s': no Redis to meet in: give fleet.redis: redis://..., "
				    "or an http.backend: redis://...",
				    fc->name);
	redis_from(fc, h);
	return 0;
}
