/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * xrl_cookie.h - SYN cookies at the NIC (docs/design.md, "SYN cookies").
 *
 * A SYN that a cookie rule matches is answered in place: the frame is
 * turned into the SYN-ACK the kernel would send with a cookie
 * (bpf_tcp_raw_gen_syncookie_*: the kernel's own format and secret, so the
 * MSS is in the sequence number) and sent back out of the interface
 * (XDP_TX). Window scale and SACK travel in the low 6 bits of our
 * timestamp, as cookie_init_timestamp puts them, when the client sent a
 * timestamp; without one they are lost, as with the kernel's cookies.
 * Nothing is stored.
 *
 * The client's ACK is checked with bpf_tcp_raw_check_syncookie_* and passed
 * on; the kernel checks the same cookie again (cookie_v4_check) and creates
 * the connection. That needs, in the protected namespace:
 *  - net.ipv4.tcp_syncookies = 2, so that the kernel answers the primer
 *    SYNs (see XRL_COOKIE_PRIME_S) with cookies and keeps accepting cookie
 *    ACKs on that listener;
 *  - net.ipv4.tcp_timestamps = 2 (timestamps without per-connection random
 *    offsets): the kernel subtracts secure_tcp_ts_off() from the echoed
 *    timestamp before it decodes the options, and only with 2 is it zero.
 *
 * Costs, measured in docs/design.md: a SYN costs one bpf_xdp_load_bytes,
 * the cookie helper, one bpf_xdp_adjust_tail and, with timestamps, one
 * clock read. An ACK that is not part of a connection costs a socket
 * lookup and the cookie check; an ACK of an established connection only
 * the socket lookup.
 */
#ifndef XRL_COOKIE_H
#define XRL_COOKIE_H

#define XRL_TCPOPT_EOL       0
#define XRL_TCPOPT_NOP       1
#define XRL_TCPOPT_MSS       2
#define XRL_TCPOPT_WINDOW    3
#define XRL_TCPOPT_SACK_PERM 4
#define XRL_TCPOPT_TIMESTAMP 8

/* The options' encoding in the timestamp's low bits (include/net/tcp.h) */
#define XRL_TS_WSCALE_MASK 0xf   /* 0xf: no window scaling */
#define XRL_TS_SACK        0x10
#define XRL_TSBITS         6
#define XRL_MAX_WSCALE     14

/*
 * What the SYN-ACK offers. The window scale must be the one the kernel
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

/* Scratch for one SYN, in the per-CPU scratch map. */
struct xrl_cookie_buf {
	/* the SYN's TCP header, copied: the cookie helper needs its length
	 * as a size the verifier can bound; the option walk reads at most
	 * 10 bytes past offset 59 */
	__u8  tcp[80];
	__u32 out[10];               /* the SYN-ACK's TCP header, network order */
	__u32 tsval;                 /* the client's timestamp, network order */
	__u32 next;                  /* the option walk's next option */
	__u8  wscale;                /* the client's, XRL_TS_WSCALE_MASK: none */
	__u8  sack;
	__u8  ts;
	__u8  pad;
};

enum xrl_cookie_res {
	XRL_CK_FALLBACK = -1,   /* not answerable here: ask the buckets */
	XRL_CK_ESTABLISHED = 0, /* an ACK of a connection the host has */
	XRL_CK_VALID,           /* an ACK with a valid cookie */
	XRL_CK_BAD,             /* an ACK of no connection, cookie invalid */
};

/*
 * The SYN's options, as tcp_parse_options reads them: into b. The walk
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
		else if (kind == XRL_TCPOPT_TIMESTAMP && len == 10) {
			b->ts = 1;
			__builtin_memcpy(&b->tsval, &b->tcp[i + 2], 4);
		}
		*next = i + len;
	}
}

/*
 * The SYN-ACK's TCP header into b->out; returns its length in bytes.
 * Options as the kernel orders them: MSS, then with a timestamp
 * SACK-permitted (or two NOPs) and the timestamp, then NOP + window scale
 * if the client offered scaling.
 */
static __always_inline __u32 xrl_synack_tcp(struct xrl_cookie_buf *b, __u32 cookie, __u16 mss)
{
	const struct tcphdr *in = (const void *)b->tcp;
	struct tcphdr *o = (void *)b->out;
	__u32 words = 1;

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
		/* tcp_clock_ns is CLOCK_MONOTONIC: so is bpf_ktime_get_ns */
		__u32 now = (__u32)(bpf_ktime_get_ns() / 1000000);
		__u32 opts = b->wscale | (b->sack ? XRL_TS_SACK : 0);
		__u32 ts = (now >> XRL_TSBITS << XRL_TSBITS) | opts;

		if (ts > now)   /* never ahead of the clock, as the kernel */
			ts -= 1 << XRL_TSBITS;
		b->out[6] = bpf_htonl(b->sack ? XRL_TCPOPT_SACK_PERM << 24 | 2 << 16 |
						XRL_TCPOPT_TIMESTAMP << 8 | 10
					      : XRL_TCPOPT_NOP << 24 | XRL_TCPOPT_NOP << 16 |
						XRL_TCPOPT_TIMESTAMP << 8 | 10);
		b->out[7] = bpf_htonl(ts);
		b->out[8] = b->tsval;
		words = 4;
		if (b->wscale != XRL_TS_WSCALE_MASK) {
			b->out[9] = bpf_htonl(XRL_TCPOPT_NOP << 24 | XRL_TCPOPT_WINDOW << 16 |
					      3 << 8 | xrl_syn_wscale);
			words = 5;
		}
	}
	((__u8 *)o)[12] = (__u8)((5 + words) << 4);
	((__u8 *)o)[13] = XRL_TCP_FLAG_SYN | XRL_TCP_FLAG_ACK;
	return 20 + words * 4;
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

/* Rewrite the IP header at l3 of the frame into the SYN-ACK's; the TCP
 * checksum's pseudo-header sum into *sum. Returns 0 or -1. */
static __always_inline int xrl_synack_ip(void *data, void *end, const struct xrl_pkt *p,
					 __u32 hlen, __u64 *sum)
{
	__u32 l3 = p->l3_off;

	if (l3 > 64)
		return -1;
	if (p->family == XRL_AF_INET) {
		struct iphdr *iph = data + l3;
		__u32 a;
		__u64 s = 0;

		if ((void *)(iph + 1) > end)
			return -1;
		a = iph->saddr;
		iph->saddr = iph->daddr;
		iph->daddr = a;
		iph->tos = 0;
		iph->tot_len = bpf_htons(20 + hlen);
		iph->id = 0;
		iph->frag_off = bpf_htons(0x4000);    /* DF, as the kernel sends */
		iph->ttl = xrl_syn_ttl;
		iph->check = 0;
#pragma unroll
		for (int i = 0; i < 5; i++)
			s += ((__u32 *)iph)[i];
		iph->check = xrl_csum_fold(s);
		*sum = (__u64)iph->saddr + iph->daddr + bpf_htons(XRL_IPPROTO_TCP) +
		       bpf_htons(hlen);
	} else {
		struct ipv6hdr *ip6 = data + l3;
		__u32 t[4];
		__u64 s = 0;

		if ((void *)(ip6 + 1) > end)
			return -1;
		__builtin_memcpy(t, &ip6->saddr, 16);
		__builtin_memcpy(&ip6->saddr, &ip6->daddr, 16);
		__builtin_memcpy(&ip6->daddr, t, 16);
		*(__u32 *)ip6 = bpf_htonl(0x60000000);
		ip6->payload_len = bpf_htons(hlen);
		ip6->hop_limit = xrl_syn_ttl;
#pragma unroll
		for (int i = 0; i < 4; i++)
			s += (__u64)ip6->saddr.in6_u.u6_addr32[i] + ip6->daddr.in6_u.u6_addr32[i];
		*sum = s + bpf_htonl(XRL_IPPROTO_TCP) + bpf_htonl(hlen);
	}
	return 0;
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
 * Answer the SYN that p describes with a cookie SYN-ACK, in place. Returns
 * XDP_TX, or XRL_CK_FALLBACK when it cannot: IPv4 options or IPv6
 * extension headers (the kernel would answer without them: the frame
 * would have to shrink in the middle), a first fragment, a helper
 * failure, or a 4-tuple the host has a socket for. The last is a client
 * that reuses the port of a connection the server closed first, whose
 * time-wait socket is still there (60 s): answered here, its ACK would meet
 * that socket, which takes it for a stray and drops it, and the client
 * would hang; the kernel instead lets a new SYN replace the time-wait
 * socket. The lookup costs every SYN, spoofed ones included (docs/design.md
 * has the figures). A global function: the verifier checks it once.
 */
__noinline int xrl_cookie_syn(struct xdp_md *ctx, struct xrl_pkt *p, struct xrl_cookie_buf *b)
{
	void *data, *end;
	struct tcphdr *th;
	__u32 l3, l4, tlen, hlen, cookie;
	volatile __u64 flen;
	__u64 sum;
	__s64 v;
	__u8 mac[6];

	if (!p || !b)
		return XRL_CK_FALLBACK;
	l3 = p->l3_off;
	l4 = p->l4_off;
	if (p->first_frag || l3 > 64 ||
	    l4 != l3 + (p->family == XRL_AF_INET ? sizeof(struct iphdr) : sizeof(struct ipv6hdr)))
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
	if (p->family == XRL_AF_INET) {
		struct iphdr *iph = data + l3;

		if ((void *)(iph + 1) > end)
			return XRL_CK_FALLBACK;
		v = bpf_tcp_raw_gen_syncookie_ipv4(iph, (struct tcphdr *)b->tcp, tlen);
	} else {
		struct ipv6hdr *ip6 = data + l3;

		if ((void *)(ip6 + 1) > end)
			return XRL_CK_FALLBACK;
		v = bpf_tcp_raw_gen_syncookie_ipv6(ip6, (struct tcphdr *)b->tcp, tlen);
	}
	if (v < 0)
		return XRL_CK_FALLBACK;
	cookie = (__u32)v;
	xrl_syn_options(b, tlen);
	hlen = xrl_synack_tcp(b, cookie, p->family == XRL_AF_INET ? xrl_syn_mss4 : xrl_syn_mss6);

	/* the frame becomes exactly Ethernet + tags + IP + the new TCP header;
	 * volatile: else clang narrows the pointer difference to 32 bits,
	 * which the verifier rejects */
	flen = end - data;
	if (bpf_xdp_adjust_tail(ctx, (int)(l4 + hlen) - (int)flen))
		return XRL_CK_FALLBACK;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (data + 12 > end)
		return XRL_CK_FALLBACK;
	__builtin_memcpy(mac, data, 6);
	__builtin_memcpy(data, data + 6, 6);
	__builtin_memcpy(data + 6, mac, 6);
	if (xrl_synack_ip(data, end, p, hlen, &sum))
		return XRL_CK_FALLBACK;
	((struct tcphdr *)b->out)->check = xrl_csum_fold(sum + xrl_sum_out(b));
	if (l4 > 128)
		return XRL_CK_FALLBACK;
	th = data + l4;
#pragma unroll
	for (int i = 0; i < 10; i++) {
		if (i * 4 >= hlen)
			break;
		if ((void *)th + i * 4 + 4 > end)
			return XRL_CK_FALLBACK;
		*(__u32 *)((void *)th + i * 4) = b->out[i];
	}
	return XDP_TX;
}

/*
 * An ACK (no SYN, no RST) that a cookie rule matched. The kernel's socket
 * table decides first: a connection it has (established, time-wait, a
 * request of its own) is none of ours. Else the ACK must carry one of our
 * cookies. A global function: the verifier checks it once.
 */
__noinline int xrl_cookie_ack(struct xdp_md *ctx, struct xrl_pkt *p)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct tcphdr *th;
	__u32 l3, l4;
	long err;

	if (!p)
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
