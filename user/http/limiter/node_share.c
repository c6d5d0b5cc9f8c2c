// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * node_share.c - NODE_SHARE: while Redis is away, a rule with
 * on_backend_error: local decides in this process; in a fleet of N live
 * instances each takes rate/N and burst/N (at least 1 token), so the fleet
 * together stays near the rule's limit instead of N times it. N is the
 * fleet's last known live count (fleet/fleet.c): the outage that stops the shared
 * buckets stops the heartbeats too, so N is frozen at its value from just
 * before. Outside a fleet N is 1 and nothing changes.
 */
#include <stdint.h>
#include <string.h>

#include "http/fleet/fleet.h"
#include "limiter_int.h"

/*
 * The share at live of a bucket g of rate rt: rate/live, burst/live (at
 * least 1). A share slower than the arithmetic's slowest (one token per
 * 2^52 ns: 1/d over 53 instances) is one token per emit_ns * live, at most
 * 2^62 ns: never the whole rule's again, which let each instance take the
 * fleet's whole rate.
 */
static struct xrl_gcra_params share_of(const struct xrl_gcra_params *g0, const struct xrl_rate *rt,
				       __u32 live)
{
	__u32 burst = g0->burst / live ? g0->burst / live : 1;
	unsigned __int128 slow = (unsigned __int128)g0->emit_ns * live;
	struct xrl_gcra_params g;

	if (rt->period_ns <= UINT64_MAX / live &&
	    !xrl_gcra_init(rt->tokens, rt->period_ns * live, burst, &g))
		return g;
	if (slow > XRL_GCRA_TAU_MAX)
		slow = XRL_GCRA_TAU_MAX;
	return (struct xrl_gcra_params){ .emit_ns = (__u64)slow,
					 .tau_ns = (__u64)slow,
					 .burst = 1 };
}

__u32 xrl_lim_share_at(struct xrl_lim_item *loc, int k, struct xrl_http_rule *tmp,
		       const struct xrl_http_rule **orig, __u32 live)
{
	if (live <= 1)
		return 1;
	for (int i = 0; i < k; i++) {
		const struct xrl_http_rule *r = loc[i].r;
		/* the item's own bucket: the rule's, or the key's override */
		__u64 cost = loc[i].g.emit_ns ? loc[i].inc / loc[i].g.emit_ns : 1;

		orig[i] = r;
		tmp[i] = *r;
		/* rate/live: each token takes live times as long */
		tmp[i].g = share_of(&loc[i].g, &loc[i].rate, live);
		tmp[i].burst = tmp[i].g.burst;
		if (cost > tmp[i].burst)
			cost = tmp[i].burst; /* a cost above the share could never pass */
		loc[i].inc = cost * tmp[i].g.emit_ns;
		/* the store decides on the item's tau: the share's, or a burst
		 * below live (inc > the whole tau) was never admitted */
		loc[i].g = tmp[i].g;
		loc[i].r = &tmp[i];
	}
	return live;
}

__u32 xrl_lim_share(struct xrl_limiter *l, struct xrl_lim_item *loc, int k,
		    struct xrl_http_rule *tmp, const struct xrl_http_rule **orig)
{
	return xrl_lim_share_at(loc, k, tmp, orig, l->fleet ? xrl_fleet_live(l->fleet) : 1);
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
