/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * xrl_cookie.h - SYN cookies at the NIC (docs/design.md, "SYN cookies").
 *
 * A SYN that a cookie rule matches is answered in place: the frame becomes
 * a SYN-ACK whose ISN is a cookie, sent back out of the interface
 * (XDP_TX). Nothing is stored. Two cookies, chosen by xrl_cookie.own:
 *
 *  - xrl's own (include/xrl_syncookie.h), where the kernel has
 *    bpf_sk_assign_tcp_reqsk (6.9+). The ACK's cookie is checked here; the
 *    options it agreed travel to the TC program (bpf/xrl_tc.h) as XDP
 *    metadata, and the TC program hands the kernel a request socket built
 *    from them. No sysctl, no primer, no dependence on the listener's past.
 *    Window scale and SACK are offered with or without timestamps (the
 *    cookie carries them), and the TSval is a hash, not a clock.
 *  - the kernel's (bpf_tcp_raw_gen_syncookie_*: its format and secret), for
 *    older kernels. The kernel checks the ACK again (cookie_v4_check), which
 *    needs tcp_syncookies = 2, tcp_timestamps = 2 and a listener that sent a
 *    cookie itself in the last two minutes (user/lib/syncookie.c primes it).
 *
 * Either way the SYN-ACK is written afresh: an IP header without options,
 * extension headers or fragment fields, and the TCP header. So a SYN with
 * IPv4 options, IPv6 extension headers or a first fragment is answered like
 * any other (a SYN-ACK need not echo them), and no SYN a cookie rule sees
 * reaches a bucket before its source proved itself.
 *
 * Costs, measured in docs/design.md: a SYN costs one bpf_xdp_load_bytes, the
 * socket lookup of xrl_cookie_known, the cookie (a SipHash of six words, or
 * the kernel's helper) and one bpf_xdp_adjust_tail. An ACK that is not part
 * of a connection costs the socket lookup and the cookie check; an ACK of
 * an established connection only the socket lookup.
 */
#ifndef XRL_COOKIE_H
#define XRL_COOKIE_H

#include "xrl_syncookie.h"

#define XRL_TCPOPT_EOL       0
#define XRL_TCPOPT_NOP       1
#define XRL_TCPOPT_MSS       2
#define XRL_TCPOPT_WINDOW    3
#define XRL_TCPOPT_SACK_PERM 4
#define XRL_TCPOPT_TIMESTAMP 8

#define XRL_TCP_FLAG_ECE 0x40
#define XRL_TCP_FLAG_CWR 0x80

/* The options' encoding in the kernel cookie's timestamp (include/net/tcp.h) */
#define XRL_TS_WSCALE_MASK 0xf   /* 0xf: no window scaling */
#define XRL_TS_SACK        0x10
#define XRL_TSBITS         6
#define XRL_MAX_WSCALE     14

/*
 * What the SYN-ACK offers when xrl_cookie has no entry yet (a program
 * loaded alone, by a test). The window scale must be the one the kernel
 * will use for the connection (tcp_select_initial_window: ilog2 of the
 * largest of tcp_rmem[2] and rmem_max, minus 15): the loader sets it from
 * the namespace's sysctls; 7 is what 6 MiB tcp_rmem[2] gives. The window
 * is unscaled in a SYN-ACK and below the kernel's initial receive window
 * for any MSS (about 64 KiB), so a client never sends beyond it.
 */
const volatile __u16 xrl_syn_mss4 = 1460;   /* MTU 1500 - 40 */
const volatile __u16 xrl_syn_mss6 = 1440;   /* MTU 1500 - 60 */
const volatile __u8  xrl_syn_wscale = 7;
const volatile __u8  xrl_syn_ttl = 64;
#define XRL_SYN_WINDOW 64240

/* Scratch for one SYN or ACK, in the per-CPU scratch map. */
struct xrl_cookie_buf {
	/* the segment's TCP header, copied: the cookie helper needs its
	 * length as a size the verifier can bound; the option walk reads at
	 * most 10 bytes past offset 59 */
	__u8  tcp[80];
	__u32 out[10];               /* the SYN-ACK's TCP header, network order */
	__u32 tsval;                 /* the segment's timestamp, network order */
	__u32 tsecr;                 /* its echo, network order */
	__u32 next;                  /* the option walk's next option */
	__u16 mss;                   /* the client's MSS option, 0: none */
	__u8  wscale;                /* the client's, XRL_TS_WSCALE_MASK: none */
	__u8  sack;
	__u8  ts;
	__u8  no_meta;               /* a valid ACK without metadata room */
	__u8  proof;                 /* a valid ACK checked on 54 bits (xrl's
				      * cookie and its timestamp echo) */
	__u8  pad;
};

enum xrl_cookie_res {
	XRL_CK_FALLBACK = -1,   /* not answerable here: to the kernel */
	XRL_CK_ESTABLISHED = 0, /* an ACK of a connection the host has */
	XRL_CK_VALID,           /* an ACK with a valid cookie */
	XRL_CK_BAD,             /* an ACK of no connection, cookie invalid */
};

/*
 * The segment's options, as tcp_parse_options reads them: into b. The walk
 * steps byte by byte and acts only where an option starts (b->next, read
 * through volatile): the verifier then sees one state per byte offset
 * instead of one per sequence of option lengths, which it cannot prune.
 */
static __always_inline void xrl_syn_options(struct xrl_cookie_buf *b, __u32 tlen)
{
	volatile __u32 *next = &b->next;

	b->wscale = XRL_TS_WSCALE_MASK;
	b->sack = 0;
	b->ts = 0;
	b->mss = 0;
	b->tsval = 0;
	b->tsecr = 0;
	*next = 20;
	for (__u32 i = 20; i < 60; i++) {
		__u8 kind, len;

		if (i >= tlen)
			break;
		if (*next != i)
			continue;
		kind = b->tcp[i];
		if (kind == XRL_TCPOPT_EOL)
			break;
		if (kind == XRL_TCPOPT_NOP) {
			*next = i + 1;
			continue;
		}
		len = b->tcp[i + 1];
		if (len < 2 || i + len > tlen)
			break;
		if (kind == XRL_TCPOPT_WINDOW && len == 3)
			b->wscale = b->tcp[i + 2] < XRL_MAX_WSCALE ? b->tcp[i + 2] : XRL_MAX_WSCALE;
		else if (kind == XRL_TCPOPT_SACK_PERM && len == 2)
			b->sack = 1;
		else if (kind == XRL_TCPOPT_MSS && len == 4)
			b->mss = (__u16)b->tcp[i + 2] << 8 | b->tcp[i + 3];
		else if (kind == XRL_TCPOPT_TIMESTAMP && len == 10) {
			b->ts = 1;
			__builtin_memcpy(&b->tsval, &b->tcp[i + 2], 4);
			__builtin_memcpy(&b->tsecr, &b->tcp[i + 6], 4);
		}
		*next = i + len;
	}
}

/*
 * The SYN-ACK's TCP header into b->out; returns its length in bytes. b's
 * wscale, sack and ts are what the SYN-ACK agrees to; tsval is its TSval
 * (host order). Options as the kernel orders them: MSS, then with a
 * timestamp SACK-permitted (or two NOPs) and the timestamp, else with SACK
 * two NOPs and SACK-permitted, then NOP + window scale if the client
 * offered scaling. The kernel's cookie path sets sack and wscale only with
 * a timestamp (its cookie keeps them there).
 */
static __always_inline __u32 xrl_synack_tcp(struct xrl_cookie_buf *b, __u32 cookie, __u16 mss,
					    __u32 tsval, __u8 wscale, __u8 ecn)
{
	const struct tcphdr *in = (const void *)b->tcp;
	struct tcphdr *o = (void *)b->out;
	__u32 w = 6;

	o->source = in->dest;
	o->dest = in->source;
	o->seq = bpf_htonl(cookie);
	o->ack_seq = bpf_htonl(bpf_ntohl(in->seq) + 1);
	o->window = bpf_htons(XRL_SYN_WINDOW);
	o->check = 0;
	o->urg_ptr = 0;
	b->out[6] = b->out[7] = b->out[8] = b->out[9] = 0;
	b->out[5] = bpf_htonl(XRL_TCPOPT_MSS << 24 | 4 << 16 | mss);
	if (b->ts) {
		b->out[6] = bpf_htonl(b->sack ? XRL_TCPOPT_SACK_PERM << 24 | 2 << 16 |
						XRL_TCPOPT_TIMESTAMP << 8 | 10
					      : XRL_TCPOPT_NOP << 24 | XRL_TCPOPT_NOP << 16 |
						XRL_TCPOPT_TIMESTAMP << 8 | 10);
		b->out[7] = bpf_htonl(tsval);
		b->out[8] = b->tsval;
		w = 9;
	} else if (b->sack) {
		b->out[6] = bpf_htonl(XRL_TCPOPT_NOP << 24 | XRL_TCPOPT_NOP << 16 |
				      XRL_TCPOPT_SACK_PERM << 8 | 2);
		w = 7;
	}
	if (b->wscale != XRL_TS_WSCALE_MASK) {
		/* w is 6, 7 or 9: out[w] is in bounds */
		if (w == 6)
			b->out[6] = bpf_htonl(XRL_TCPOPT_NOP << 24 | XRL_TCPOPT_WINDOW << 16 | 3 << 8 |
					      wscale);
		else if (w == 7)
			b->out[7] = bpf_htonl(XRL_TCPOPT_NOP << 24 | XRL_TCPOPT_WINDOW << 16 | 3 << 8 |
					      wscale);
		else
			b->out[9] = bpf_htonl(XRL_TCPOPT_NOP << 24 | XRL_TCPOPT_WINDOW << 16 | 3 << 8 |
					      wscale);
		w++;
	}
	((__u8 *)o)[12] = (__u8)(w << 4);
	((__u8 *)o)[13] = XRL_TCP_FLAG_SYN | XRL_TCP_FLAG_ACK | (ecn ? XRL_TCP_FLAG_ECE : 0);
	return w * 4;
}

/* The kernel cookie's TSval (cookie_init_timestamp): the clock in ms with
 * the options in the low bits, never ahead of the clock. */
static __always_inline __u32 xrl_kernel_tsval(const struct xrl_cookie_buf *b)
{
	/* tcp_clock_ns is CLOCK_MONOTONIC: so is bpf_ktime_get_ns */
	__u32 now = (__u32)(bpf_ktime_get_ns() / 1000000);
	__u32 opts = b->wscale | (b->sack ? XRL_TS_SACK : 0);
	__u32 ts = (now >> XRL_TSBITS << XRL_TSBITS) | opts;

	if (ts > now)
		ts -= 1 << XRL_TSBITS;
	return ts;
}

static __always_inline __u16 xrl_csum_fold(__u64 sum)
{
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/* One's complement sum of b->out, in memory order like the pseudo
 * header's words (the words past the header are zero). */
static __always_inline __u64 xrl_sum_out(const struct xrl_cookie_buf *b)
{
	__u64 sum = 0;

#pragma unroll
	for (int i = 0; i < 10; i++)
		sum += b->out[i];
	return sum;
}

/* The SYN-ACK's IP header, written afresh at l3 of the frame from p's
 * addresses (swapped); the TCP checksum's pseudo-header sum into *sum.
 * Returns the IP header's length, or 0. */
static __always_inline __u32 xrl_synack_ip(void *data, void *end, const struct xrl_pkt *p,
					   __u32 hlen, __u64 *sum)
{
	__u32 l3 = p->l3_off;

	if (l3 > 64)
		return 0;
	if (p->family == XRL_AF_INET) {
		struct iphdr *iph = data + l3;
		__u64 s = 0;

		if ((void *)(iph + 1) > end)
			return 0;
		*(__u8 *)iph = 0x45;
		iph->tos = 0;
		iph->tot_len = bpf_htons(20 + hlen);
		iph->id = 0;
		iph->frag_off = bpf_htons(0x4000);    /* DF, as the kernel sends */
		iph->ttl = xrl_syn_ttl;
		iph->protocol = XRL_IPPROTO_TCP;
		iph->check = 0;
		iph->saddr = p->dst[0];
		iph->daddr = p->src[0];
#pragma unroll
		for (int i = 0; i < 5; i++)
			s += ((__u32 *)iph)[i];
		iph->check = xrl_csum_fold(s);
		*sum = (__u64)iph->saddr + iph->daddr + bpf_htons(XRL_IPPROTO_TCP) +
		       bpf_htons(hlen);
		return 20;
	} else {
		struct ipv6hdr *ip6 = data + l3;
		__u64 s = 0;

		if ((void *)(ip6 + 1) > end)
			return 0;
		*(__u32 *)ip6 = bpf_htonl(0x60000000);
		ip6->payload_len = bpf_htons(hlen);
		ip6->nexthdr = XRL_IPPROTO_TCP;
		ip6->hop_limit = xrl_syn_ttl;
		__builtin_memcpy(&ip6->saddr, p->dst, 16);
		__builtin_memcpy(&ip6->daddr, p->src, 16);
#pragma unroll
		for (int i = 0; i < 4; i++)
			s += (__u64)p->src[i] + p->dst[i];
		*sum = s + bpf_htonl(XRL_IPPROTO_TCP) + bpf_htonl(hlen);
		return 40;
	}
}

/*
 * Does the host have a socket for p's 4-tuple other than a listener:
 * established, time-wait, a request of its own? One socket-table lookup
 * (the established hash, then the listeners: a miss costs both).
 */
static __always_inline int xrl_cookie_known(struct xdp_md *ctx, const struct xrl_pkt *p)
{
	struct bpf_sock_tuple t = {};
	struct bpf_sock *sk;
	__u32 state;

	if (p->family == XRL_AF_INET) {
		t.ipv4.saddr = p->src[0];
		t.ipv4.daddr = p->dst[0];
		t.ipv4.sport = p->sport;
		t.ipv4.dport = bpf_htons(p->dport);
		sk = bpf_skc_lookup_tcp(ctx, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS, 0);
	} else {
		__builtin_memcpy(t.ipv6.saddr, p->src, 16);
		__builtin_memcpy(t.ipv6.daddr, p->dst, 16);
		t.ipv6.sport = p->sport;
		t.ipv6.dport = bpf_htons(p->dport);
		sk = bpf_skc_lookup_tcp(ctx, &t, sizeof(t.ipv6), BPF_F_CURRENT_NETNS, 0);
	}
	if (!sk)
		return 0;
	state = sk->state;
	bpf_sk_release(sk);
	return state != BPF_TCP_LISTEN;
}

/*
 * Is the SYN's TCP checksum right? Only for the kernel path's primer: the
 * kernel drops a SYN whose checksum is wrong before it answers, so such a
 * primer primes nothing, and 20 of them a second from forged sources kept
 * every listener from taking cookies. A segment longer than b->tcp, or not
 * a whole number of words (a SYN with data), is not taken as a primer.
 * A SYN from a local container on a veth carries only the pseudo-header's
 * sum (CHECKSUM_PARTIAL: the kernel takes it, nothing on the way fills it
 * in), so that is taken too: a forger who sends it from the wire wins the
 * slot again, which random corruption does not.
 */
static __always_inline int xrl_syn_csum_ok(struct xdp_md *ctx, const struct xrl_pkt *p,
					   struct xrl_cookie_buf *b)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 l3 = p->l3_off, l4 = p->l4_off, len;
	__u64 sum = 0;
	__s64 c;

	if (l3 > 64 || l4 > 0x7fff || l4 < l3)
		return 0;
	if (p->family == XRL_AF_INET) {
		struct iphdr *iph = data + l3;

		if ((void *)(iph + 1) > end)
			return 0;
		len = bpf_ntohs(iph->tot_len);
		if (len < l4 - l3)
			return 0;
		len -= l4 - l3;
		sum = (__u64)iph->saddr + iph->daddr;
	} else {
		struct ipv6hdr *ip6 = data + l3;

		if ((void *)(ip6 + 1) > end)
			return 0;
		len = bpf_ntohs(ip6->payload_len) + 40;
		if (len < l4 - l3)
			return 0;
		len -= l4 - l3;
#pragma unroll
		for (int i = 0; i < 4; i++)
			sum += (__u64)p->src[i] + p->dst[i];
	}
	if (len < 20 || len > sizeof(b->tcp) || (len & 3))
		return 0;
	if (bpf_xdp_load_bytes(ctx, l4, b->tcp, len))
		return 0;
	c = bpf_csum_diff(0, 0, (__be32 *)b->tcp, len, 0);
	if (c < 0)
		return 0;
	sum += bpf_htons(XRL_IPPROTO_TCP) + bpf_htons(len);
	if (*(__u16 *)&b->tcp[16] == (__u16)~xrl_csum_fold(sum))
		return 1; /* partial: the pseudo-header's sum alone */
	sum += (__u64)(__u32)c;
	return xrl_csum_fold(sum) == 0;
}

/* xrl's cookie hash for the handshake p is part of; isn is the client's. */
static __always_inline __u64 xrl_ck_hash_pkt(const struct xrl_cookie_key *k,
					     const struct xrl_pkt *p, __u32 isn, __u64 slot)
{
	return xrl_ck_hash(k->k[0], k->k[1], p->src, p->dst, p->sport, bpf_htons(p->dport), isn,
			   slot);
}

/*
 * xrl's own cookie for the SYN whose TCP header and options b holds: the
 * ISN, with the timestamp to send in *tsval and in *ecn whether the client
 * set up ECN. The options the kernel would not let the connection have are
 * dropped from b first, so that the cookie encodes what the SYN-ACK offers.
 */
static __always_inline __u32 xrl_cookie_own_isn(const struct xrl_pkt *p, struct xrl_cookie_buf *b,
						const struct xrl_cookie_cfg *cc, __u64 now_slot,
						__u32 *tsval, __u8 *ecn)
{
	const struct xrl_cookie_key *k = &cc->key[cc->key_id & 1];
	__u32 isn = bpf_ntohl(((struct tcphdr *)b->tcp)->seq);
	__u8 f = b->tcp[13];
	int v6 = p->family == XRL_AF_INET6;
	__u64 h;

	/* offer only what the kernel lets the connection have */
	if (!(cc->opts & XRL_CKO_SACK))
		b->sack = 0;
	if (!(cc->opts & XRL_CKO_WSCALE))
		b->wscale = XRL_TS_WSCALE_MASK;
	if (!(cc->opts & XRL_CKO_TS))
		b->ts = 0;
	/* ECN setup: ECE and CWR both, RFC 3168 6.1.1 */
	*ecn = (cc->opts & XRL_CKO_ECN) &&
	       (f & (XRL_TCP_FLAG_ECE | XRL_TCP_FLAG_CWR)) == (XRL_TCP_FLAG_ECE | XRL_TCP_FLAG_CWR);
	h = xrl_ck_hash_pkt(k, p, isn, now_slot);
	*tsval = xrl_ck_tsval(h);
	return xrl_ck_isn(h, cc->key_id & 1, now_slot,
			  xrl_ck_mss_index(b->mss ? b->mss : (v6 ? 1220 : 536), v6), *ecn, b->sack,
			  b->wscale);
}

/*
 * The kernel's cookie for the SYN whose IP header is at l3 and whose TCP
 * header (tlen bytes) b holds: 0 with *cookie and *tsval set, or -1 when
 * the helper cannot. The kernel's cookie keeps scaling and SACK in the
 * timestamp, so a SYN without one is offered neither.
 */
static __always_inline int xrl_cookie_kernel_isn(void *data, void *end, __u32 l3, int v6,
						 struct xrl_cookie_buf *b, __u32 tlen,
						 __u32 *cookie, __u32 *tsval)
{
	__s64 v;

	/* the helpers read the addresses and the TCP header only */
	if (!v6) {
		struct iphdr *iph = data + l3;

		if ((void *)(iph + 1) > end)
			return -1;
		v = bpf_tcp_raw_gen_syncookie_ipv4(iph, (struct tcphdr *)b->tcp, tlen);
	} else {
		struct ipv6hdr *ip6 = data + l3;

		if ((void *)(ip6 + 1) > end)
			return -1;
		v = bpf_tcp_raw_gen_syncookie_ipv6(ip6, (struct tcphdr *)b->tcp, tlen);
	}
	if (v < 0)
		return -1;
	*cookie = (__u32)v;
	if (!b->ts) {
		b->sack = 0;
		b->wscale = XRL_TS_WSCALE_MASK;
	}
	*tsval = b->ts ? xrl_kernel_tsval(b) : 0;
	return 0;
}

/*
 * The frame made into the SYN-ACK, in place: exactly Ethernet + tags + IP
 * (iplen bytes at l3) + the new TCP header (b->out, hlen bytes), the MACs
 * swapped. 0, or -1 when the driver cannot resize it.
 */
static __always_inline int xrl_synack_frame(struct xdp_md *ctx, const struct xrl_pkt *p,
					    struct xrl_cookie_buf *b, __u32 l3, __u32 iplen,
					    __u32 hlen)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct tcphdr *th;
	/* volatile: else clang narrows the pointer difference to 32 bits,
	 * which the verifier rejects */
	volatile __u64 flen;
	__u64 sum;
	__u8 mac[6];

	flen = end - data;
	if (bpf_xdp_adjust_tail(ctx, (int)(l3 + iplen + hlen) - (int)flen))
		return -1;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (data + 12 > end)
		return -1;
	__builtin_memcpy(mac, data, 6);
	__builtin_memcpy(data, data + 6, 6);
	__builtin_memcpy(data + 6, mac, 6);
	if (!xrl_synack_ip(data, end, p, hlen, &sum))
		return -1;
	((struct tcphdr *)b->out)->check = xrl_csum_fold(sum + xrl_sum_out(b));
	th = data + l3 + iplen;
#pragma unroll
	for (int i = 0; i < 10; i++) {
		if (i * 4 >= hlen)
			break;
		if ((void *)th + i * 4 + 4 > end)
			return -1;
		*(__u32 *)((void *)th + i * 4) = b->out[i];
	}
	return 0;
}

/*
 * Answer the SYN that p describes with a cookie SYN-ACK, in place. Returns
 * XDP_TX, or XRL_CK_FALLBACK when it cannot. now_slot is the cookie's time
 * slot now (include/xrl_syncookie.h). It cannot on a helper failure, or a 4-tuple
 * the host has a socket for. The last is a client that reuses the port of a
 * connection the server closed first, whose time-wait socket is still there
 * (60 s): answered here, its ACK would meet that socket, which takes it for a
 * stray and drops it, and the client would hang; the kernel instead lets a
 * new SYN replace the time-wait socket. The lookup costs every SYN, spoofed
 * ones included (docs/design.md has the figures). A global function: the
 * verifier checks it once.
 */
__noinline int xrl_cookie_syn(struct xdp_md *ctx, struct xrl_pkt *p, struct xrl_cookie_buf *b,
			      struct xrl_cookie_cfg *cc, __u64 now_slot)
{
	void *data, *end;
	struct tcphdr *th;
	__u32 l3, l4, tlen, hlen, cookie, tsval;
	__u16 mss;
	__u8 wscale, ecn = 0;
	int v6;

	if (!p || !b || !cc)
		return XRL_CK_FALLBACK;
	l3 = p->l3_off;
	l4 = p->l4_off;
	v6 = p->family == XRL_AF_INET6;
	if (l3 > 64 || l4 > 0x7fff)
		return XRL_CK_FALLBACK;
	if (xrl_cookie_known(ctx, p))
		return XRL_CK_FALLBACK;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	th = data + l4;
	if ((void *)(th + 1) > end)
		return XRL_CK_FALLBACK;
	tlen = th->doff * 4;
	if (tlen < sizeof(*th) || bpf_xdp_load_bytes(ctx, l4, b->tcp, tlen))
		return XRL_CK_FALLBACK;
	xrl_syn_options(b, tlen);
	mss = v6 ? (cc->mss6 ? cc->mss6 : xrl_syn_mss6) : (cc->mss4 ? cc->mss4 : xrl_syn_mss4);
	wscale = cc->wscale ? cc->wscale : xrl_syn_wscale;
	if (cc->own)
		cookie = xrl_cookie_own_isn(p, b, cc, now_slot, &tsval, &ecn);
	else if ((void *)(th + 1) > end ||
		 xrl_cookie_kernel_isn(data, end, l3, v6, b, tlen, &cookie, &tsval))
		return XRL_CK_FALLBACK;
	hlen = xrl_synack_tcp(b, cookie, mss, tsval, wscale, ecn);
	if (xrl_synack_frame(ctx, p, b, l3, v6 ? 40 : 20, hlen))
		return XRL_CK_FALLBACK;
	return XDP_TX;
}

/*
 * xrl's cookie in an ACK: checked, and the options it agreed put in front
 * of the frame for the TC program (struct xrl_ck_meta). Returns
 * XRL_CK_VALID or XRL_CK_BAD; b->no_meta is set when the driver has no room
 * for metadata (the ACK is still valid: the kernel will refuse it).
 */
static __always_inline int xrl_cookie_ack_own(struct xdp_md *ctx, struct xrl_pkt *p,
					      struct xrl_cookie_buf *b,
					      const struct xrl_cookie_cfg *cc, __u64 now_slot,
					      struct tcphdr *th)
{
	__u32 cookie = bpf_ntohl(th->ack_seq) - 1, isn = bpf_ntohl(th->seq) - 1, tlen;
	const struct xrl_cookie_key *k = &cc->key[cookie & XRL_CK_KEYID_BIT ? 1 : 0];
	__u64 h = xrl_ck_hash_pkt(k, p, isn, xrl_ck_slot_of(cookie, now_slot));
	struct xrl_ck_meta *m;
	void *data, *meta;
	int v6 = p->family == XRL_AF_INET6;

	if (!xrl_ck_hash_ok(cookie, h))
		return XRL_CK_BAD;
	tlen = th->doff * 4;
	if (tlen < sizeof(*th) || bpf_xdp_load_bytes(ctx, p->l4_off, b->tcp, tlen))
		return XRL_CK_BAD;
	xrl_syn_options(b, tlen);
	/* with timestamps, 32 more bits of proof: the echo of our TSval */
	if (b->ts && bpf_ntohl(b->tsecr) != xrl_ck_tsval(h))
		return XRL_CK_BAD;
	/* 22 bits are a guess a million forged ACKs a second lands every few
	 * seconds; 54 are not: only these prove a source to a penalty */
	b->proof = b->ts;
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*m))) {
		b->no_meta = 1;
		return XRL_CK_VALID;
	}
	data = (void *)(long)ctx->data;
	meta = (void *)(long)ctx->data_meta;
	m = meta;
	if ((void *)(m + 1) > data) {
		b->no_meta = 1;
		return XRL_CK_VALID;
	}
	m->tsval = bpf_ntohl(b->tsval);
	m->tsecr = bpf_ntohl(b->tsecr);
	m->mss = xrl_ck_mss_of(cookie >> XRL_CK_MSS_SHIFT, v6);
	m->l4_off = p->l4_off;
	m->l3_off = p->l3_off;
	m->family = p->family;
	m->snd_wscale = cookie & XRL_CK_WSCALE_MASK;
	m->rcv_wscale = cc->wscale ? cc->wscale : xrl_syn_wscale;
	m->flags = (cookie & XRL_CK_SACK ? XRL_CKO_SACK : 0) | (b->ts ? XRL_CKO_TS : 0) |
		   (cookie & XRL_CK_ECN ? XRL_CKO_ECN : 0);
	m->magic = XRL_CK_META_MAGIC;
	return XRL_CK_VALID;
}

/*
 * An ACK (no SYN, no RST) that a cookie rule matched. The kernel's socket
 * table decides first: a connection it has (established, time-wait, a
 * request of its own) is none of ours. Else the ACK must carry one of our
 * cookies. A global function: the verifier checks it once.
 */
__noinline int xrl_cookie_ack(struct xdp_md *ctx, struct xrl_pkt *p, struct xrl_cookie_buf *b,
			      struct xrl_cookie_cfg *cc, __u64 now_slot)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct tcphdr *th;
	__u32 l3, l4;
	long err;

	if (!p || !b || !cc)
		return XRL_CK_BAD;
	if (xrl_cookie_known(ctx, p))
		return XRL_CK_ESTABLISHED;
	l3 = p->l3_off;
	l4 = p->l4_off;
	if (l3 > 64 || l4 > 0x7fff)
		return XRL_CK_BAD;
	th = data + l4;
	if ((void *)(th + 1) > end)
		return XRL_CK_BAD;
	b->no_meta = 0;
	b->proof = 0;
	if (cc->own)
		return xrl_cookie_ack_own(ctx, p, b, cc, now_slot, th);
	if (p->family == XRL_AF_INET) {
		struct iphdr *iph = data + l3;

		if ((void *)(iph + 1) > end)
			return XRL_CK_BAD;
		err = bpf_tcp_raw_check_syncookie_ipv4(iph, th);
	} else {
		struct ipv6hdr *ip6 = data + l3;

		if ((void *)(ip6 + 1) > end)
			return XRL_CK_BAD;
		err = bpf_tcp_raw_check_syncookie_ipv6(ip6, th);
	}
	return err ? XRL_CK_BAD : XRL_CK_VALID;
}

#endif /* XRL_COOKIE_H */
