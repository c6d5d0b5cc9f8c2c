/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * admin.h - what xrlctl asks of the identity tier (admin.c), through
 * xrld's control verbs: its state, its counters, its most refused keys,
 * shadow mode and per-key overrides. Answers are JSON documents (jansson);
 * xrld turns them into tables. Errors are -errno with err saying why.
 */
#ifndef XRL_HTTP_CTL_H
#define XRL_HTTP_CTL_H

#include <jansson.h>
#include <stdbool.h>

#include "http/http.h"

/* How often an instance reads the overrides Redis holds, ms. */
#define XRL_OVR_REFRESH_MS 500

struct xrl_http_server;

/* {"listen","backend","breaker","threads","shed","penalty","overrides","rules":[...]} */
json_t *xrl_http_status_json(struct xrl_http_server *s);
/* {"rules":[{"name","allowed","refused","shadow_refused","fallbacks"}],"responses":{..}} */
json_t *xrl_http_stats_json(struct xrl_http_server *s);
/* Is there an HTTP rule named rule? */
bool xrl_http_has_rule(struct xrl_http_server *s, const char *rule);
/* Rule's most refused keys, n at most: [{"key","refused","error","last_seen_s_ago"}]. */
int xrl_http_top_json(struct xrl_http_server *s, const char *rule, int n, json_t **out, char *err,
		      size_t errlen);
/* The callers' peaks since the last call, per rule (xrl_limiter_peaks_take). */
json_t *xrl_http_peaks_json(struct xrl_http_server *s);
/* Shadow mode of an HTTP rule on or off, until xrld restarts (reloads keep it). */
int xrl_http_shadow(struct xrl_http_server *s, const char *rule, bool on, char *err, size_t errlen);
/* Override rule's limit for key (rate as a policy writes it); in Redis too
 * when the backend is Redis. */
int xrl_http_override_set(struct xrl_http_server *s, const char *rule, const char *key,
			  const char *rate, unsigned burst, __u64 ttl_ns, char *err, size_t errlen);
int xrl_http_override_del(struct xrl_http_server *s, const char *rule, const char *key, char *err,
			  size_t errlen);
/* [{"rule","key","rate","burst","expires_in_s"}], by rule and key. */
json_t *xrl_http_override_list_json(struct xrl_http_server *s);

#endif /* XRL_HTTP_CTL_H */
