/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * xrl_tc.h - the TC ingress half of xrl's own SYN cookies.
 *
 * The XDP program checked the ACK's cookie and put what the handshake agreed
 * in front of the frame (struct xrl_ck_meta). Here, on the same frame as an
 * skb, the listener it is for is looked up and the kernel is handed a
 * request socket made from those options (bpf_sk_assign_tcp_reqsk, a kfunc
 * of TC programs since 6.9): the kernel completes the handshake from it as
 * from one of its own cookies, without tcp_syncookies = 2, without a
 * listener that sent cookies itself, and without timestamps that tell the
 * host's uptime. The cookie is checked again on the frame as TC sees it, so
 * only a cookie that checks out becomes a connection. Every other packet
 * costs a bounds check of the metadata.
 *
 * The loader loads and attaches this program only where the kfunc exists
 * (weak here: an older kernel loads the XDP program alone and uses the
 * kernel's cookies).
 */
#ifndef XRL_TC_H
#define XRL_TC_H

/* TC_ACT_UNSPEC: the next filter of the qdisc still runs */
#define XRL_TC_ACT_NEXT (-1)

extern int bpf_sk_assign_tcp_reqsk(struct __sk_buff *skb, struct sock *sk,
				   struct bpf_tcp_req_attrs *attrs, int attrs__sz) __ksym __weak;

/*
 * The ACK's IP header, found afresh: the kernel may have taken a VLAN tag
 * off the frame between XDP and here (skb_vlan_untag, where the NIC does
 * not), so XDP's offsets are not this frame's. What lies between the IP and
 * the TCP header is untouched: that distance comes from the metadata.
 * Returns the IP header's offset, or 0.
 */
static __always_inline __u32 xrl_tc_l3(struct __sk_buff *skb, __u8 family)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	__u32 off = 12;

	for (int i = 0; i <= XRL_MAX_VLAN_DEPTH; i++) {
		__u16 *t = data + off;

		if ((void *)(t + 1) > end)
			return 0;
		if (*t == bpf_htons(XRL_ETH_P_8021Q) || *t == bpf_htons(XRL_ETH_P_8021AD)) {
			off += 4;
			continue;
		}
		if (*t != bpf_htons(family == XRL_AF_INET ? XRL_ETH_P_IP : XRL_ETH_P_IPV6))
			return 0;
		return off + 2;
	}
	return 0;
}

/*
 * The ACK's 4-tuple, as the socket table keys it, into t and p (for the
 * cookie's hash), its TCP header into *thp; the tuple's size or 0.
 */
static __always_inline __u32 xrl_tc_tuple(struct __sk_buff *skb, const struct xrl_ck_meta *m,
					  struct bpf_sock_tuple *t, struct xrl_pkt *p,
					  struct tcphdr **thp)
{
	void *data, *end;
	__u32 l3 = xrl_tc_l3(skb, m->family), l4;
	struct tcphdr *th;

	if (!l3 || l3 > 64 || m->l4_off < m->l3_off || m->l4_off - m->l3_off > 0x7fff)
		return 0;
	l4 = l3 + (m->l4_off - m->l3_off);
	if (l4 > 0x7fff)
		return 0;
	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	th = data + l4;
	if ((void *)(th + 1) > end)
		return 0;
	*thp = th;
	p->family = m->family;
	p->sport = th->source;
	p->dport = bpf_ntohs(th->dest);
	if (m->family == XRL_AF_INET) {
		struct iphdr *iph = data + l3;

		if ((void *)(iph + 1) > end)
			return 0;
		p->src[0] = t->ipv4.saddr = iph->saddr;
		p->dst[0] = t->ipv4.daddr = iph->daddr;
		t->ipv4.sport = th->source;
		t->ipv4.dport = th->dest;
		return sizeof(t->ipv4);
	}
	if (m->family == XRL_AF_INET6) {
		struct ipv6hdr *ip6 = data + l3;

		if ((void *)(ip6 + 1) > end)
			return 0;
		__builtin_memcpy(t->ipv6.saddr, &ip6->saddr, 16);
		__builtin_memcpy(t->ipv6.daddr, &ip6->daddr, 16);
		__builtin_memcpy(p->src, &ip6->saddr, 16);
		__builtin_memcpy(p->dst, &ip6->daddr, 16);
		t->ipv6.sport = th->source;
		t->ipv6.dport = th->dest;
		return sizeof(t->ipv6);
	}
	return 0;
}

/*
 * The cookie again, on this frame's own addresses, ports and sequence
 * numbers: the metadata says only what XDP found, and nothing but a cookie
 * that checks out here may become a connection (another XDP program could
 * have left bytes that look like ours). One SipHash, valid ACKs only.
 */
static __always_inline int xrl_tc_cookie_ok(const struct xrl_pkt *p, const struct tcphdr *th,
					    const struct xrl_ck_meta *m)
{
	__u32 zero = 0, cookie = bpf_ntohl(th->ack_seq) - 1;
	struct xrl_cookie_cfg *cc = bpf_map_lookup_elem(&xrl_cookie, &zero);
	const struct xrl_cookie_key *k;
	__u64 slot, h;

	if (!cc || !cc->own)
		return 0;
	k = &cc->key[cookie & XRL_CK_KEYID_BIT ? 1 : 0];
	slot = (bpf_jiffies64() * xrl_tick_ns) >> XRL_CK_SLOT_SHIFT;
	h = xrl_ck_hash_pkt(k, p, bpf_ntohl(th->seq) - 1, xrl_ck_slot_of(cookie, slot));
	if (!xrl_ck_hash_ok(cookie, h))
		return 0;
	return !(m->flags & XRL_CKO_TS) || m->tsecr == xrl_ck_tsval(h);
}

SEC("tc")
int xrl_tc(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	struct xrl_ck_meta *m = (void *)(long)skb->data_meta;
	struct bpf_tcp_req_attrs attrs = {};
	struct bpf_sock_tuple t = {};
	struct xrl_pkt p = {};
	struct xrl_global_ctr *gc;
	struct tcphdr *th = NULL;
	struct bpf_sock *skc;
	struct tcp_sock *tp;
	__u32 zero = 0, tlen;
	int err = -1;

	if ((void *)(m + 1) > data || m->magic != XRL_CK_META_MAGIC)
		return XRL_TC_ACT_NEXT;
	gc = bpf_map_lookup_elem(&xrl_global_stats, &zero);
	tlen = xrl_tc_tuple(skb, m, &t, &p, &th);
	if (!tlen || !gc || !th)
		return XRL_TC_ACT_NEXT;
	if (!xrl_tc_cookie_ok(&p, th, m)) {
		gc->c[XRL_G_COOKIE_REQSK_FAIL]++;
		return XRL_TC_ACT_NEXT;
	}
	attrs.mss = m->mss;
	attrs.rcv_tsval = m->tsval;
	attrs.rcv_tsecr = m->tsecr;
	attrs.tstamp_ok = !!(m->flags & XRL_CKO_TS);
	attrs.sack_ok = !!(m->flags & XRL_CKO_SACK);
	attrs.ecn_ok = !!(m->flags & XRL_CKO_ECN);
	if (m->snd_wscale != XRL_CK_WSCALE_MASK) {
		attrs.wscale_ok = 1;
		attrs.snd_wscale = m->snd_wscale;
		attrs.rcv_wscale = m->rcv_wscale;
	}
	skc = bpf_skc_lookup_tcp(skb, &t, tlen, BPF_F_CURRENT_NETNS, 0);
	if (skc) {
		/* a listener still: else the kernel has the connection now (a
		 * retransmitted ACK) and it is none of ours */
		if (skc->state != BPF_TCP_LISTEN) {
			bpf_sk_release(skc);
			return XRL_TC_ACT_NEXT;
		}
		tp = bpf_skc_to_tcp_sock(skc);
		if (tp && bpf_sk_assign_tcp_reqsk)
			err = bpf_sk_assign_tcp_reqsk(skb, (struct sock *)tp, &attrs,
						      sizeof(attrs));
		bpf_sk_release(skc);
	}
	gc->c[err ? XRL_G_COOKIE_REQSK_FAIL : XRL_G_COOKIE_REQSK]++;
	return XRL_TC_ACT_NEXT;
}

#endif /* XRL_TC_H */
