/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * xrl_vouch.h - vouched sources and aggregate caps (docs/design.md,
 * "Aggregate caps and vouched sources").
 *
 * A rule's aggregate cap charges every admit of the rule, whatever its
 * source, to two rule-wide GCRA buckets: an open one that anyone draws
 * on, and a reserved one that only vouched sources draw on first. So a
 * flood of new sources (spoofed SYNs without cookies, or a botnet's real
 * addresses with them) can take at most the open share, and the clients
 * that proved themselves earlier keep the reserved one.
 *
 * Only admits reach here: the refusal path never does. A policy without
 * aggregates costs one flag test; an admit under a cap costs the vouch
 * lookup, one clock read and a CAS per cap.
 */
#ifndef XRL_VOUCH_H
#define XRL_VOUCH_H

/* The vouch key of p's source: /24 or /48. */
static __always_inline void xrl_vouch_key_of(struct xrl_vouch_key *k, const struct xrl_pkt *p)
{
	k->family = p->family;
	k->addr[2] = 0;
	k->addr[3] = 0;
	if (p->family == XRL_AF_INET) {
		k->addr[0] = p->src[0] & bpf_htonl(0xffffff00);
		k->addr[1] = 0;
	} else {
		k->addr[0] = p->src[0];
		k->addr[1] = p->src[1] & bpf_htonl(0xffff0000);
	}
}

/* v present and unexpired? expires_ns 0: never expires. */
static __always_inline int xrl_vouch_live(const struct xrl_vouch_val *v)
{
	return v && (!v->expires_ns || bpf_ktime_get_coarse_ns() < v->expires_ns);
}

/*
 * Is p's source prefix vouched for, and not expired, in either space
 * (xrl_abi.h)? The automatic space first: it holds nearly every vouched
 * source, which then costs one lookup; the operators' second, so one more
 * lookup falls only on sources that the first does not vouch for. A global
 * function: verified once.
 */
__noinline int xrl_vouched(struct xrl_pkt *p)
{
	struct xrl_vouch_key k;

	if (!p)
		return 0;
	xrl_vouch_key_of(&k, p);
	if (xrl_vouch_live(bpf_map_lookup_elem(&xrl_vouch, &k)))
		return 1;
	return xrl_vouch_live(bpf_map_lookup_elem(&xrl_vouch_op, &k));
}

/*
 * A connection admitted on a valid cookie vouches its source prefix for
 * XRL_VOUCH_TTL_S. Written only when the entry is missing or has less than
 * half its time left, so a busy prefix costs a lookup, not a write per
 * connection. Only the automatic space (xrl_vouch): an operator's vouch
 * lives in xrl_vouch_op, which this never touches. An entry of xrl_vouch
 * that never expires is left alone: an operator's, mirrored there for a
 * program from before xrl_vouch_op (xrl_abi.h).
 */
__noinline int xrl_vouch_admit(struct xrl_pkt *p)
{
	const __u64 ttl = (__u64)XRL_VOUCH_TTL_S * XRL_NSEC_PER_SEC;
	struct xrl_vouch_val nv = { .origin = XRL_ORIGIN_COOKIE };
	struct xrl_vouch_key k;
	struct xrl_vouch_val *v;
	__u64 now;

	if (!p)
		return 0;
	xrl_vouch_key_of(&k, p);
	now = bpf_ktime_get_coarse_ns();
	v = bpf_map_lookup_elem(&xrl_vouch, &k);
	if (v && (!v->expires_ns || v->expires_ns > now + ttl / 2))
		return 0;
	nv.expires_ns = now + ttl;
	bpf_map_update_elem(&xrl_vouch, &k, &nv, BPF_ANY);
	return 1;
}

/* Take one token of cap bucket idx of xrl_agg. 1: admitted (a lost CAS
 * race admits too: never refuse by accident), 0: refused. */
static __always_inline int xrl_agg_take(__u32 idx, __u64 now, __u64 inc, __u64 tau,
					struct xrl_global_ctr *gc)
{
	__u64 *tat = bpf_map_lookup_elem(&xrl_agg, &idx);
	__u64 old, nt;

	if (!tat)
		return 1;
	for (int i = 0; i < XRL_CAS_TRIES; i++) {
		old = *(volatile __u64 *)tat;
		if (!xrl_gcra_decide(old, now, inc, tau, &nt))
			return 0;
		if (__sync_val_compare_and_swap(tat, old, nt) == old)
			return 1;
		gc->c[XRL_G_CAS_RETRY]++;
	}
	gc->c[XRL_G_CAS_GIVEUP]++;
	return 1;
}

static __always_inline void xrl_agg_refund(__u32 idx, __u64 inc)
{
	__u64 *tat = bpf_map_lookup_elem(&xrl_agg, &idx);

	if (tat)
		__sync_fetch_and_add(tat, -inc);
}

#endif /* XRL_VOUCH_H */
