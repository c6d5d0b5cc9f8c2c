// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * node_share.c - NODE_SHARE: while Redis is away, a rule with
 * on_backend_error: local decides in this process; in a fleet of N live
 * instances each takes rate/N and burst/N (at least 1 token), so the fleet
 * together stays near the rule's limit instead of N times it. N is the
 * fleet's last known live count (fleet.c): the outage that stops the shared
 * buckets stops the heartbeats too, so N is frozen at its value from just
 * before. Outside a fleet N is 1 and nothing changes.
 */
#include <string.h>

#include "fleet.h"
#include "limiter_int.h"

__u32 xrl_lim_share(struct xrl_limiter *l, struct xrl_lim_item *loc, int k,
		    struct xrl_http_rule *tmp, const struct xrl_http_rule **orig)
{
	__u32 live = l->fleet ? xrl_fleet_live(l->fleet) : 1;

	if (live <= 1)
		return 1;
	for (int i = 0; i < k; i++) {
		const struct xrl_http_rule *r = loc[i].r;
		__u32 burst = r->burst / live ? r->burst / live : 1;
		__u64 cost = r->g.emit_ns ? loc[i].inc / r->g.emit_ns : 1;

		orig[i] = r;
		tmp[i] = *r;
		/* rate/live: each token takes live times as long */
		if (xrl_gcra_init(r->rate.tokens, r->rate.period_ns * live, burst, &tmp[i].g))
			tmp[i].g = r->g; /* out of range: the whole rule's, as before */
		tmp[i].burst = tmp[i].g.burst;
		if (cost > tmp[i].burst)
			cost = tmp[i].burst; /* a cost above the share could never pass */
		loc[i].inc = cost * tmp[i].g.emit_ns;
		loc[i].r = &tmp[i];
	}
	return live;
}

void xrl_lim_unshare(int k, const struct xrl_http_rule *tmp, const struct xrl_http_rule **orig,
		     struct xrl_decision *d)
{
	for (int i = 0; i < k; i++) {
		if (d->rule == &tmp[i])
			d->rule = orig[i];
		for (__u32 j = 0; j < d->n_shadow; j++)
			if (d->shadow[j] == &tmp[i])
				d->shadow[j] = orig[i];
	}
}
