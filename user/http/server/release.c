// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * release.c - giving concurrency slots back, and post-paid cost:
 *
 *   POST /v1/release      the lease ids in the body or in X-XRL-Lease, and
 *                         an optional measured cost charged to each lease's
 *                         rule (its rate); or {"rule","key","cost"}: a
 *                         charge with no lease.
 *   DELETE /v1/lease/ID   one lease.
 *
 * Body forms: JSON {"lease": "ID" | ["ID", ...], "cost": N}, a form
 * "lease=ID,ID&cost=N", or none (X-XRL-Lease: ID, ID and X-XRL-Cost: N,
 * which is what a proxy's completion hook can send). A lease that is not
 * held (given back already, run out) is reported, not an error: a release
 * is idempotent.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <microhttpd.h>

#include "http/http.h"
#include "report.h"
#include "server_int.h"

#define COST_MAX 100000000 /* as /v1/check's */

/* A list "ID, ID" (commas and blanks between) into ids[]; ids point into buf. */
static int split_ids(char *buf, const char **ids, int max)
{
	int n = 0;

	for (char *p = strtok(buf, ", \t"); p; p = strtok(NULL, ", \t")) {
		if (n == max)
			return -E2BIG;
		ids[n++] = p;
	}
	return n;
}

/* A whole number 0..COST_MAX, or -1. */
static long cost_of(const char *s, size_t n)
{
	long v = 0;

	if (!n || n > 9)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v <= COST_MAX ? v : -1;
}

/* The form "lease=ID,ID&cost=N" into buf/ids/cost: 0 or -EINVAL. */
static int parse_form(char *body, char *buf, size_t buflen, long *cost)
{
	for (char *f = strtok(body, "&"); f; f = strtok(NULL, "&")) {
		if (!strncmp(f, "lease=", 6))
			snprintf(buf, buflen, "%s", f + 6);
		else if (!strncmp(f, "cost=", 5) && (*cost = cost_of(f + 5, strlen(f + 5))) >= 0)
			continue;
		else
			return -EINVAL;
	}
	return 0;
}

/* The JSON body: lease ids into buf (comma-joined), cost, or a charge's rule and key. */
static int parse_json(json_t *j, char *buf, size_t buflen, long *cost)
{
	json_t *jl = json_object_get(j, "lease"), *jc = json_object_get(j, "cost");
	size_t o = 0, i;
	json_t *v;

	if (jc) {
		if (!json_is_integer(jc) || json_integer_value(jc) < 0 ||
		    json_integer_value(jc) > COST_MAX)
			return -EINVAL;
		*cost = (long)json_integer_value(jc);
	}
	if (json_is_string(jl)) {
		snprintf(buf, buflen, "%s", json_string_value(jl));
		return 0;
	}
	if (jl && !json_is_array(jl))
		return -EINVAL;
	json_array_foreach(jl, i, v) {
		if (!json_is_string(v))
			return -EINVAL;
		o += (size_t)snprintf(buf + o, o < buflen ? buflen - o : 0, "%s%s", i ? "," : "",
				      json_string_value(v));
		if (o >= buflen)
			return -E2BIG;
	}
	return 0;
}

/* A charge's answer once made (rq->d.allowed: charged): 200 with what was
 * charged, and where when not where decisions are made; 503 when nothing
 * took it. */
enum MHD_Result xrl_srv_charge_answer(struct xrl_http_server *s, struct MHD_Connection *conn,
				      struct xrl_srv_req *rq)
{
	struct xrl_buf b = {};
	enum MHD_Result ret;

	if (!rq->d.allowed) {
		atomic_fetch_add(&s->status[ST_503], 1);
		return xrl_srv_problem(conn, 503, "Service Unavailable",
				       "the rate-limit store did not take the charge: nothing charged");
	}
	atomic_fetch_add(&s->status[ST_200], 1);
	xrl_buf_printf(&b, "{\"released\":0,\"unknown\":0,\"charged\":%ld%s}\n",
		       rq->rel_cost > 0 ? rq->rel_cost : 0,
		       rq->d.backend_error ? ",\"store\":\"local\"" : "");
	ret = xrl_srv_send_buf(conn, 200, "application/json", &b, NULL, NULL);
	xrl_buf_free(&b);
	return ret;
}

/* {"rule","key","cost"} without a lease: cost charged to that rule's bucket,
 * where its decisions are made (memory, Redis): answered now, or once Redis has. */
static enum MHD_Result charge_answer(struct xrl_http_server *s, const struct xrl_http_cfg *c,
				     struct MHD_Connection *conn, struct xrl_srv_req *rq,
				     const char *rule, const char *key, long cost)
{
	const struct xrl_http_rule *r = NULL;

	for (__u32 i = 0; i < c->n_rules; i++)
		if (!strcmp(c->rules[i].name, rule))
			r = &c->rules[i];
	if (!r || !r->has_rate || !*key || cost < 0) {
		atomic_fetch_add(&s->status[r ? ST_400 : ST_404], 1);
		return xrl_srv_problem(conn, r ? 400 : 404, r ? "Bad Request" : "Not Found",
				       r ? "a charge needs a rule with a rate, a non-empty key and a cost"
					 : "no http rule of that name");
	}
	rq->kind = K_CHARGE;
	rq->rel_cost = cost;
	if (xrl_srv_charge_start(s, rq, r, key, (__u32)cost) == 1)
		return MHD_YES; /* answered once Redis has charged it */
	return xrl_srv_charge_answer(s, conn, rq);
}

/* The answer to a release, once given back: 200 with what was held (DELETE:
 * 204, or 404 when it was not held). */
enum MHD_Result xrl_srv_release_answer(struct xrl_http_server *s, struct MHD_Connection *conn,
				       struct xrl_srv_req *rq)
{
	const struct xrl_release *res = &rq->rel;
	long cost = rq->rel_cost > 0 ? rq->rel_cost : 0;
	struct xrl_buf b = {};
	enum MHD_Result ret;
	__u32 held = 0, charged = 0;

	for (__u32 i = 0; i < res->n; i++) {
		held += res->released[i];
		charged += res->charged[i];
	}
	if (rq->kind == K_LEASE_DEL) { /* DELETE /v1/lease/ID: 204, or 404 when it was not held */
		atomic_fetch_add(&s->status[held ? ST_200 : ST_404], 1);
		if (!held)
			return xrl_srv_problem(conn, 404, "Not Found",
					       "no such lease: given back already, run out, or not an id");
		return xrl_srv_send_buf(conn, 204, NULL, &b, NULL, NULL);
	}
	atomic_fetch_add(&s->status[ST_200], 1);
	xrl_buf_printf(&b, "{\"released\":%u,\"unknown\":%u,\"charged\":%llu}\n", held,
		       res->n - held, (unsigned long long)charged * (__u64)cost);
	ret = xrl_srv_send_buf(conn, 200, "application/json", &b, NULL, NULL);
	xrl_buf_free(&b);
	return ret;
}

/* Release ids (a list in buf): answered now, or once Redis has, or 400. */
static enum MHD_Result release_answer(struct xrl_http_server *s, struct MHD_Connection *conn,
				      struct xrl_srv_req *rq, char *buf, long cost, bool one)
{
	const char *ids[XRL_HTTP_MAX_MATCH];
	int n = split_ids(buf, ids, XRL_HTTP_MAX_MATCH);

	if (n <= 0) {
		atomic_fetch_add(&s->status[ST_400], 1);
		return xrl_srv_problem(conn, 400, "Bad Request",
				       n ? "at most 8 lease ids in one release"
					 : "no lease id (body {\"lease\":...}, lease=..., or X-XRL-Lease)");
	}
	rq->kind = one ? K_LEASE_DEL : K_RELEASE;
	rq->rel_cost = cost;
	if (xrl_srv_release_start(s, rq, ids, n, (__u32)(cost > 0 ? cost : 0)) == 1)
		return MHD_YES; /* answered once Redis has given them back */
	return xrl_srv_release_answer(s, conn, rq);
}

enum MHD_Result xrl_srv_release(struct xrl_http_server *s, const struct xrl_http_cfg *c,
				struct MHD_Connection *conn, struct xrl_srv_req *rq)
{
	const char *hl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-XRL-Lease");
	const char *hc = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-XRL-Cost");
	char buf[XRL_HTTP_MAX_MATCH * (XRL_LEASE_ID_MAX + 2)] = "";
	long cost = hc ? cost_of(hc, strlen(hc)) : 0;
	enum MHD_Result ret;
	int rc = 0;

	if (rq->too_big)
		return xrl_srv_problem(conn, 413, "Payload Too Large",
				       "the body of /v1/release is at most 16 KiB");
	if (rq->len && rq->body[0] == '{') {
		json_t *j = json_loadb(rq->body, rq->len, 0, NULL);
		const char *rule = json_string_value(json_object_get(j, "rule"));
		const char *key = json_string_value(json_object_get(j, "key"));

		rc = j ? parse_json(j, buf, sizeof(buf), &cost) : -EINVAL;
		if (!rc && !buf[0] && rule && key) {
			ret = charge_answer(s, c, conn, rq, rule, key, cost);
			json_decref(j);
			return ret;
		}
		json_decref(j);
	} else if (rq->len) {
		rq->body[rq->len] = '\0';
		rc = parse_form(rq->body, buf, sizeof(buf), &cost);
	}
	if (!rc && !buf[0] && hl)
		snprintf(buf, sizeof(buf), "%s", hl);
	if (rc || cost < 0 || strlen(buf) >= sizeof(buf) - 1) {
		atomic_fetch_add(&s->status[ST_400], 1);
		return xrl_srv_problem(
			conn, 400, "Bad Request",
			"expected {\"lease\":ID or [IDs],\"cost\":N}, lease=ID,ID&cost=N, "
			"X-XRL-Lease: ID, ID (and X-XRL-Cost: N), or {\"rule\",\"key\",\"cost\"}");
	}
	return release_answer(s, conn, rq, buf, cost, false);
}

enum MHD_Result xrl_srv_lease_delete(struct xrl_http_server *s, struct MHD_Connection *conn,
				     struct xrl_srv_req *rq, const char *id)
{
	char buf[XRL_LEASE_ID_MAX + 1];

	if (strlen(id) >= sizeof(buf) || strchr(id, ',')) {
		atomic_fetch_add(&s->status[ST_404], 1);
		return xrl_srv_problem(conn, 404, "Not Found", "not a lease id");
	}
	snprintf(buf, sizeof(buf), "%s", id);
	return release_answer(s, conn, rq, buf, 0, true);
}
