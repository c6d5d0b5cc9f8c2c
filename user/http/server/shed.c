// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * shed.c - what shedding knows of routes: http.exempt (health checks and
 * load-balancer probes, which no rule and no shedding refuses, nor counts)
 * and http.shed's list form (a capacity bucket per route, so one route can
 * shed while another keeps flowing).
 */
#include <stdatomic.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>

#include "http/http.h"
#include "report.h"
#include "server_int.h"

/* m matches the normalised method and path, as a rule's match does. */
static bool route_match(const struct xrl_http_cfg *c, const struct xrl_http_route *m,
			const char *method, const char *path)
{
	return xrl_http_match(c, m->method, m->path_prefix, sizeof(m->path_prefix), method, path);
}

/*
 * An exemption skips every rule, so it is read narrowly: its path_prefix
 * covers whole path segments. "/healthz" exempts /healthz and /healthz/live,
 * never /healthzfoo or /healthz.php (a rule's prefix may be as broad as it
 * likes: a broad rule limits more, a broad exemption limits less). A prefix
 * ending in "/" covers what is below it.
 */
static bool segment_end(const struct xrl_http_route *m, const char *path)
{
	size_t pl = strnlen(m->path_prefix, sizeof(m->path_prefix));

	if (!pl || m->path_prefix[pl - 1] == '/')
		return true;
	return path[pl] == '\0' || path[pl] == '/' || path[pl] == '?';
}

bool xrl_srv_exempt(const struct xrl_http_cfg *c, const char *method, const char *path)
{
	for (__u32 i = 0; i < c->n_exempt; i++)
		if (route_match(c, &c->exempt[i], method, path) && segment_end(&c->exempt[i], path))
			return true;
	return false;
}

/* 200, no quota headers: an exempt request was never counted. */
enum MHD_Result xrl_srv_exempt_answer(struct MHD_Connection *conn)
{
	struct xrl_buf b = {};

	return xrl_srv_send_buf(conn, 200, "text/plain", &b, NULL, NULL);
}

/* One request from a capacity bucket (one CAS on its TAT): true when it is
 * empty, with *wait until it admits one again. */
static bool bucket_empty(_Atomic __u64 *tat, const struct xrl_gcra_params *g, __u64 *wait)
{
	__u64 now = xrl_now_ns(), old = atomic_load(tat), nt;

	for (int i = 0; i < 8; i++) {
		if (!xrl_gcra_decide(old, now, g->emit_ns, g->tau_ns, &nt)) {
			*wait = xrl_gcra_wait(old, now, g->emit_ns, g->tau_ns);
			return true;
		}
		if (atomic_compare_exchange_weak(tat, &old, nt))
			return false;
	}
	return false; /* contended: let it through rather than spin */
}

/* The first shed route that matches decides; none: the mapping form's
 * bucket, if there is one. */
bool xrl_srv_shed_route(struct xrl_http_server *s, const struct xrl_http_cfg *c,
			const char *method, const char *path, __u64 *wait)
{
	for (__u32 i = 0; i < c->n_shed; i++)
		if (route_match(c, &c->shed[i].match, method, path))
			return bucket_empty(&s->shed_route_tat[i], &c->shed[i].g, wait);
	return xrl_srv_shed_check(s, c, wait);
}
