/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * xrl_limit.h - classify a parsed packet against the rules, key it, and ask
 * its bucket.
 *
 * The bucket is split in two so that the refusal path stays on this CPU:
 *
 *  - xrl_buckets (shared LRU hash): the exact GCRA state, one __u64 TAT per
 *    (rule, source prefix), advanced only by compare-and-swap. Any number of
 *    CPUs admitting for one source therefore admit exactly what one bucket
 *    would: burst + rate * t, whatever RSS does with the flows.
 *  - xrl_refused (per-CPU array, direct-mapped, sized at load time):
 *    "refused until t". When the shared state refuses, this CPU remembers
 *    the moment the next token exists and refuses every packet before it
 *    from per-CPU memory alone. The TAT only ever moves forward, so the
 *    cached moment can be early but never late:
 *    the cache can send a packet to the shared map needlessly, it can never
 *    refuse one the shared map would admit.
 */
#ifndef XRL_LIMIT_H
#define XRL_LIMIT_H

#define XRL_CAS_TRIES 4

enum xrl_take_res {
	XRL_TAKE_ADMIT = 0,
	XRL_TAKE_REFUSE,
};

/* Does rule r match packet p? Cost: a few compares; the ports loop is capped. */
static __always_inline int xrl_rule_match(const struct xrl_rule *r, const struct xrl_pkt *p)
{
	if (r->proto != XRL_PROTO_ANY && r->proto != p->proto)
		return 0;
	/* A cookie rule matches TCP SYNs and the ACKs that may carry its
	 * cookies (no SYN, no RST); its tcp_class is not asked. An auto rule
	 * xrld has not engaged is matched as a rule without cookies. */
	if (r->syn_cookies & XRL_COOKIES_LIVE) {
		__u8 f = p->tcp_flags & (XRL_TCP_FLAG_SYN | XRL_TCP_FLAG_ACK | XRL_TCP_FLAG_RST);

		if (p->proto != XRL_IPPROTO_TCP ||
		    (f != XRL_TCP_FLAG_SYN && f != XRL_TCP_FLAG_ACK))
			return 0;
	} else if (r->tcp_class == XRL_TCP_SYN &&
	    (p->proto != XRL_IPPROTO_TCP ||
	     (p->tcp_flags & (XRL_TCP_FLAG_SYN | XRL_TCP_FLAG_ACK)) != XRL_TCP_FLAG_SYN))
		return 0;
	if (r->dst_family) {
		if (r->dst_family != p->family)
			return 0;
		if ((p->dst[0] & r->dst_mask[0]) != r->dst[0])
			return 0;
		if (p->family == XRL_AF_INET6 &&
		    ((p->dst[1] & r->dst_mask[1]) != r->dst[1] ||
		     (p->dst[2] & r->dst_mask[2]) != r->dst[2] ||
		     (p->dst[3] & r->dst_mask[3]) != r->dst[3]))
			return 0;
	}
	if (r->n_ports) {
		int hit = 0;

		if (!p->has_ports)
			return 0;
#pragma unroll
		for (int i = 0; i < XRL_MAX_PORT_RANGES; i++) {
			if (i >= r->n_ports)
				break;
			if (p->dport >= r->ports[i].lo && p->dport <= r->ports[i].hi) {
				hit = 1;
				break;
			}
		}
		if (!hit)
			return 0;
	}
	return 1;
}

/*
 * The bucket key: rule id and the source masked to the rule's key prefix.
 * Written as three 64-bit words: the hash function and the compare read it
 * back that way, and narrower stores would stall store forwarding.
 */
static __always_inline void xrl_make_key(struct xrl_bucket_key *k,
					 const struct xrl_rule *r,
					 const struct xrl_pkt *p)
{
	__u64 *w = (__u64 *)k;
	__u64 plen;

	if (p->family == XRL_AF_INET) {
		plen = r->key_plen4;
		w[1] = (__u64)(p->src[0] & r->key_mask4);
		w[2] = 0;
	} else {
		plen = r->key_plen6;
		w[1] = (__u64)(p->src[0] & r->key_mask6[0]) |
		       (__u64)(p->src[1] & r->key_mask6[1]) << 32;
		w[2] = (__u64)(p->src[2] & r->key_mask6[2]) |
		       (__u64)(p->src[3] & r->key_mask6[3]) << 32;
	}
	/* little-endian layout of rule_id, family, plen, pad */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "xrl_make_key assumes a little-endian target"
#endif
	w[0] = (__u64)r->id | (__u64)p->family << 32 | plen << 40 | (__u64)r->clock_fine << 48;
}

/*
 * Take one token from the shared bucket of key k. On refusal *conform_at is
 * the first moment a packet would be admitted; on an admit of an existing
 * bucket *tat_out points at its state (for a lease).
 * Cost: one hash lookup and one CAS; a new source adds one insert.
 * Never refuses by accident: a failed insert or a lost CAS race passes.
 */
static __always_inline int xrl_take(const struct xrl_bucket_key *k,
				    const struct xrl_rule *r, __u64 now,
				    struct xrl_global_ctr *gc,
				    __u64 *conform_at, __u64 **tat_out)
{
	__u64 inc = r->emit_ns, tau = r->tau_ns;
	__u64 *tat, old, nt;
	long err;

	*tat_out = NULL;
	tat = bpf_map_lookup_elem(&xrl_buckets, k);
	if (!tat) {
		/* a new source: its bucket is full, take one token from it */
		nt = now + inc;
		err = bpf_map_update_elem(&xrl_buckets, k, &nt, BPF_NOEXIST);
		if (!err) {
			gc->c[XRL_G_BUCKET_NEW]++;
			return XRL_TAKE_ADMIT;
		}
		if (err != -17 /* EEXIST: another CPU created it */) {
			gc->c[XRL_G_BUCKET_INSERT_FAIL]++;
			return XRL_TAKE_ADMIT;
		}
		tat = bpf_map_lookup_elem(&xrl_buckets, k);
		if (!tat) {
			gc->c[XRL_G_BUCKET_INSERT_FAIL]++;
			return XRL_TAKE_ADMIT;
		}
	}

	for (int i = 0; i < XRL_CAS_TRIES; i++) {
		old = *(volatile __u64 *)tat;
		if (!xrl_gcra_decide(old, now, inc, tau, &nt)) {
			*conform_at = xrl_gcra_conform_at(old, inc, tau);
			return XRL_TAKE_REFUSE;
		}
		if (__sync_val_compare_and_swap(tat, old, nt) == old) {
			*tat_out = tat;
			return XRL_TAKE_ADMIT;
		}
		gc->c[XRL_G_CAS_RETRY]++;
	}
	gc->c[XRL_G_CAS_GIVEUP]++;
	return XRL_TAKE_ADMIT;
}

#endif /* XRL_LIMIT_H */
