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
 * host's uptime. Every other packet costs a bounds check of the metadata.
 *
 * The loader loads and attaches this program only where the kfunc exists
 * (weak here: an older kernel loads the XDP program alone and uses the
 * kernel's cookies).
 */
#ifndef XRL_TC_H
#define XRL_TC_H

#define XRL_TC_ACT_OK 0

extern int bpf_sk_assign_tcp_reqsk(struct __sk_buff *skb, struct sock *sk,
				   struct bpf_tcp_req_attrs *attrs, int attrs__sz) __ksym __weak;

/* The ACK's 4-tuple, as the socket table keys it, into t; its size or 0. */
static __always_inline __u32 xrl_tc_tuple(struct __sk_buff *skb, const struct xrl_ck_meta *m,
					  struct bpf_sock_tuple *t)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	__u32 l3 = m->l3_off, l4 = m->l4_off;
	struct tcphdr *th;

	if (l3 > 64 || l4 > 0x7fff)
		return 0;
	th = data + l4;
	if ((void *)(th + 1) > end)
		return 0;
	if (m->family == XRL_AF_INET) {
		struct iphdr *iph = data + l3;

		if ((void *)(iph + 1) > end)
			return 0;
		t->ipv4.saddr = iph->saddr;
		t->ipv4.daddr = iph->daddr;
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
		t->ipv6.sport = th->source;
		t->ipv6.dport = th->dest;
		return sizeof(t->ipv6);
	}
	return 0;
}

SEC("tc")
int xrl_tc(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	struct xrl_ck_meta *m = (void *)(long)skb->data_meta;
	struct bpf_tcp_req_attrs attrs = {};
	struct bpf_sock_tuple t = {};
	struct xrl_global_ctr *gc;
	struct bpf_sock *skc;
	struct tcp_sock *tp;
	__u32 zero = 0, tlen;
	int err = -1;

	if ((void *)(m + 1) > data || m->magic != XRL_CK_META_MAGIC)
		return XRL_TC_ACT_OK;
	gc = bpf_map_lookup_elem(&xrl_global_stats, &zero);
	tlen = xrl_tc_tuple(skb, m, &t);
	if (!tlen || !gc)
		return XRL_TC_ACT_OK;
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
			return XRL_TC_ACT_OK;
		}
		tp = bpf_skc_to_tcp_sock(skc);
		if (tp && bpf_sk_assign_tcp_reqsk)
			err = bpf_sk_assign_tcp_reqsk(skb, (struct sock *)tp, &attrs,
						      sizeof(attrs));
		bpf_sk_release(skc);
	}
	gc->c[err ? XRL_G_COOKIE_REQSK_FAIL : XRL_G_COOKIE_REQSK]++;
	return XRL_TC_ACT_OK;
}

#endif /* XRL_TC_H */
