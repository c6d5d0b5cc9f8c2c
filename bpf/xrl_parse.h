/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * xrl_parse.h - packet parsing for the XDP program.
 *
 * One cursor, one bounds-check idiom (`if ((void *)(h + 1) > end)`), every
 * variable length validated before the cursor moves, every loop capped by a
 * constant from xrl_abi.h. The parser never decides a verdict: it reports
 * what it found, and anything it cannot make sense of is passed and counted
 * by the caller.
 */
#ifndef XRL_PARSE_H
#define XRL_PARSE_H

#define XRL_ETH_P_IP     0x0800
#define XRL_ETH_P_IPV6   0x86DD
#define XRL_ETH_P_8021Q  0x8100
#define XRL_ETH_P_8021AD 0x88A8

#define XRL_IPPROTO_HOPOPTS  0
#define XRL_IPPROTO_TCP      6
#define XRL_IPPROTO_UDP      17
#define XRL_IPPROTO_ROUTING  43
#define XRL_IPPROTO_FRAGMENT 44
#define XRL_IPPROTO_ESP      50
#define XRL_IPPROTO_AH       51
#define XRL_IPPROTO_NONE     59
#define XRL_IPPROTO_DSTOPTS  60

#define XRL_TCP_FLAG_SYN 0x02
#define XRL_TCP_FLAG_ACK 0x10

enum xrl_parse_res {
	XRL_P_OK = 0,     /* addresses known; ports known if has_ports */
	XRL_P_NON_IP,     /* neither IPv4 nor IPv6 */
	XRL_P_MALFORMED,  /* truncated or invalid at some layer */
	XRL_P_FRAGMENT,   /* a non-first fragment: addresses known, no L4 */
	XRL_P_TINY_FRAG,  /* a first fragment cut inside its L4 header */
};

/* What the parser found, on the stack of the program. */
struct xrl_pkt {
	__u32 src[4];     /* network byte order, v4 in [0], rest zero */
	__u32 dst[4];
	__u16 dport;      /* host byte order, valid if has_ports */
	__u16 sport;      /* network byte order, valid if has_ports */
	__u8  family;     /* enum xrl_family */
	__u8  proto;      /* IANA L4 protocol after extension headers */
	__u8  tcp_flags;  /* byte 13 of the TCP header */
	__u8  has_ports;
	__u8  first_frag; /* offset 0 and more fragments follow */
	__u8  pad;
};

struct xrl_cursor {
	void *pos;
	void *end;
};

/* Ethernet plus at most XRL_MAX_VLAN_DEPTH 802.1Q/802.1ad tags. */
static __always_inline int xrl_parse_eth(struct xrl_cursor *c, __u16 *proto_be)
{
	struct ethhdr *eth = c->pos;
	__u16 proto;

	if ((void *)(eth + 1) > c->end)
		return -1;
	proto = eth->h_proto;
	c->pos = eth + 1;

#pragma unroll
	for (int i = 0; i < XRL_MAX_VLAN_DEPTH; i++) {
		struct vlan_hdr *vh = c->pos;

		if (proto != bpf_htons(XRL_ETH_P_8021Q) &&
		    proto != bpf_htons(XRL_ETH_P_8021AD))
			break;
		if ((void *)(vh + 1) > c->end)
			return -1;
		proto = vh->h_vlan_encapsulated_proto;
		c->pos = vh + 1;
	}
	*proto_be = proto;
	return 0;
}

/*
 * IPv4: version 4, IHL >= 5 and within the packet and within tot_len.
 * Returns an xrl_parse_res; on XRL_P_OK, p->proto is the L4 protocol and
 * the cursor is at the L4 header.
 */
static __always_inline int xrl_parse_ipv4(struct xrl_cursor *c, struct xrl_pkt *p)
{
	struct iphdr *iph = c->pos;
	__u32 hlen;

	if ((void *)(iph + 1) > c->end)
		return XRL_P_MALFORMED;
	if (iph->version != 4 || iph->ihl < 5)
		return XRL_P_MALFORMED;
	hlen = iph->ihl * 4;
	if (bpf_ntohs(iph->tot_len) < hlen)
		return XRL_P_MALFORMED;
	if (c->pos + hlen > c->end)
		return XRL_P_MALFORMED;

	p->family = XRL_AF_INET;
	p->src[0] = iph->saddr;
	p->dst[0] = iph->daddr;
	p->proto = iph->protocol;
	c->pos += hlen;

	/* offset != 0: a later fragment, which carries no L4 header */
	if (iph->frag_off & bpf_htons(0x1fff))
		return XRL_P_FRAGMENT;
	p->first_frag = !!(iph->frag_off & bpf_htons(0x2000));
	return XRL_P_OK;
}

/*
 * IPv6 with a bounded walk over extension headers (hop-by-hop, routing,
 * destination options, fragment, AH). ESP and "no next header" end the walk
 * with no ports; more than XRL_MAX_V6_EXT_HDRS headers is malformed.
 */
static __always_inline int xrl_parse_ipv6(struct xrl_cursor *c, struct xrl_pkt *p)
{
	struct ipv6hdr *ip6 = c->pos;
	__u8 nh;

	if ((void *)(ip6 + 1) > c->end)
		return XRL_P_MALFORMED;
	if (ip6->version != 6)
		return XRL_P_MALFORMED;

	p->family = XRL_AF_INET6;
	__builtin_memcpy(p->src, &ip6->saddr, 16);
	__builtin_memcpy(p->dst, &ip6->daddr, 16);
	nh = ip6->nexthdr;
	c->pos = ip6 + 1;

#pragma unroll
	for (int i = 0; i < XRL_MAX_V6_EXT_HDRS; i++) {
		struct ipv6_opt_hdr *oh = c->pos;
		struct frag_hdr *fh = c->pos;
		__u32 len;

		switch (nh) {
		case XRL_IPPROTO_HOPOPTS:
		case XRL_IPPROTO_ROUTING:
		case XRL_IPPROTO_DSTOPTS:
			if ((void *)(oh + 1) > c->end)
				return XRL_P_MALFORMED;
			len = ((__u32)oh->hdrlen + 1) * 8;
			break;
		case XRL_IPPROTO_AH:
			if ((void *)(oh + 1) > c->end)
				return XRL_P_MALFORMED;
			len = ((__u32)oh->hdrlen + 2) * 4;
			break;
		case XRL_IPPROTO_FRAGMENT:
			if ((void *)(fh + 1) > c->end)
				return XRL_P_MALFORMED;
			if (fh->frag_off & bpf_htons(0xfff8)) {
				p->proto = fh->nexthdr;
				return XRL_P_FRAGMENT;
			}
			p->first_frag = !!(fh->frag_off & bpf_htons(1));
			len = sizeof(*fh);
			break;
		default:
			p->proto = nh;
			return XRL_P_OK;
		}
		if (c->pos + len > c->end)
			return XRL_P_MALFORMED;
		nh = oh->nexthdr;
		c->pos += len;
	}
	/* the last header may still be an L4 one */
	switch (nh) {
	case XRL_IPPROTO_HOPOPTS:
	case XRL_IPPROTO_ROUTING:
	case XRL_IPPROTO_DSTOPTS:
	case XRL_IPPROTO_FRAGMENT:
	case XRL_IPPROTO_AH:
		return XRL_P_MALFORMED;
	}
	p->proto = nh;
	return XRL_P_OK;
}

/*
 * TCP (data offset >= 5, whole header present) and UDP ports and flags.
 * A first fragment too short to hold its L4 header is not merely malformed:
 * passed, the stack would reassemble a SYN no rule saw (the "tiny fragment"
 * attack of RFC 1858; RFC 7112 requires the whole header chain in the first
 * fragment, so real stacks never send one). It is reported for a drop.
 */
static __always_inline int xrl_parse_l4(struct xrl_cursor *c, struct xrl_pkt *p)
{
	int cut = p->first_frag ? XRL_P_TINY_FRAG : XRL_P_MALFORMED;

	if (p->proto == XRL_IPPROTO_TCP) {
		struct tcphdr *th = c->pos;
		__u32 doff;

		if ((void *)(th + 1) > c->end)
			return cut;
		doff = th->doff * 4;
		if (doff < sizeof(*th))
			return XRL_P_MALFORMED;
		if (c->pos + doff > c->end)
			return cut;
		p->dport = bpf_ntohs(th->dest);
		p->sport = th->source;
		p->tcp_flags = ((__u8 *)th)[13];
		p->has_ports = 1;
	} else if (p->proto == XRL_IPPROTO_UDP) {
		struct udphdr *uh = c->pos;

		if ((void *)(uh + 1) > c->end)
			return cut;
		p->dport = bpf_ntohs(uh->dest);
		p->sport = uh->source;
		p->has_ports = 1;
	}
	return XRL_P_OK;
}

static __always_inline int xrl_parse(void *data, void *data_end, struct xrl_pkt *p)
{
	struct xrl_cursor c = { .pos = data, .end = data_end };
	__u16 proto;
	int res;

	if (xrl_parse_eth(&c, &proto) < 0)
		return XRL_P_MALFORMED;
	if (proto == bpf_htons(XRL_ETH_P_IP))
		res = xrl_parse_ipv4(&c, p);
	else if (proto == bpf_htons(XRL_ETH_P_IPV6))
		res = xrl_parse_ipv6(&c, p);
	else
		return XRL_P_NON_IP;
	if (res != XRL_P_OK)
		return res;
	return xrl_parse_l4(&c, p);
}

#endif /* XRL_PARSE_H */
