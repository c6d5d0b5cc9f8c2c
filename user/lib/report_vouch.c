// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * report_vouch.c - `xrlctl vouch list`: the vouched sources as a table or
 * a JSON array, with origin and time left. The operators' vouches (origin
 * runtime, their own map) come first, then the automatic ones (cookie,
 * identity); JSON names the space too.
 */
#include <errno.h>
#include <stdlib.h>

#include "report.h"

#define VOUCH_LIST_MAX (XRL_VOUCH_DEFAULT + XRL_VOUCH_OP_MAX)

const char *xrl_origin_name(__u32 origin)
{
	static const char *const names[] = { "policy", "runtime", "penalty", "cookie",
					     "fleet",  "identity" };

	return origin < sizeof(names) / sizeof(names[0]) ? names[origin] : "?";
}

/* Every entry of the map, fn called for each. */
static int vouch_walk(struct xrl_handle *h, void (*fn)(void *, const struct xrl_vouch *, __u64),
		      void *arg)
{
	struct xrl_vouch *v = malloc(VOUCH_LIST_MAX * sizeof(*v));
	__u64 now = xrl_now_ns();
	size_t n = 0;
	int err;

	if (!v)
		return -ENOMEM;
	err = xrl_vouch_list(h, v, VOUCH_LIST_MAX, &n);
	for (size_t i = 0; !err && i < n; i++)
		fn(arg, &v[i], now);
	free(v);
	return err;
}

static void vouch_text_one(void *arg, const struct xrl_vouch *v, __u64 now)
{
	struct xrl_buf *b = arg;
	char buf[64];

	xrl_prefix_str(&v->prefix, buf, sizeof(buf));
	xrl_buf_printf(b, "%-44s %-9s ", buf, xrl_origin_name(v->origin));
	if (!v->expires_ns)
		xrl_buf_printf(b, "never\n");
	else
		xrl_buf_printf(b, "%.1fs%s\n",
			       v->expires_ns > now ? (double)(v->expires_ns - now) / 1e9 : 0.0,
			       v->expires_ns > now ? "" : " (expired)");
}

static void vouch_json_one(void *arg, const struct xrl_vouch *v, __u64 now)
{
	double left = v->expires_ns > now ? (double)(v->expires_ns - now) / 1e9 : 0.0;
	const char *space = v->origin == XRL_ORIGIN_RUNTIME ? "operator" : "automatic";
	char buf[64];

	xrl_prefix_str(&v->prefix, buf, sizeof(buf));
	json_array_append_new(arg,
			      json_pack("{s:s,s:s,s:s,s:o}", "prefix", buf, "origin",
					xrl_origin_name(v->origin), "space", space, "expires_in_s",
					v->expires_ns ? json_real(left) : json_null()));
}

int xrl_report_vouch(struct xrl_buf *b, struct xrl_handle *h)
{
	xrl_buf_printf(b, "%-44s %-9s %s\n", "PREFIX", "ORIGIN", "EXPIRES IN");
	return vouch_walk(h, vouch_text_one, b);
}

json_t *xrl_report_vouch_json(struct xrl_handle *h)
{
	json_t *a = json_array();

	if (a && vouch_walk(h, vouch_json_one, a)) {
		json_decref(a);
		return NULL;
	}
	return a;
}
