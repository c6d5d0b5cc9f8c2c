/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * xrl_parse.h - packet parsing for the XDP program.
 *
 * One cursor, one bounds-check idiom, every variable length validated
 * before the cursor moves, every loop capped by a constant from xrl_abi.h.
 * The parser never decides a verdict: it reports what it found, and the
 * caller applies the lists and rules to it.
 *
 * It walks what Linux walks (docs/design.md, "What the parser walks"): any
 * stack of 802.1Q/802.1ad tags up to XRL_MAX_VLAN_DEPTH, IPv4 with options,
 * IPv6 with up to XRL_MAX_V6_EXT_HDRS extension headers (hop-by-hop only
 * first, as ip6_rcv_core takes it), and it reads only the bytes the kernel
 * keeps: the frame is cut to the IPv4 total length or the IPv6 payload
 * length, as ip_rcv_core and ip6_rcv_core trim it. Framing deeper than the
 * bounds is reported XRL_P_UNWALKABLE, for the caller to drop when a rule
 * could cover it.
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

/* The IPv6 extension headers the walk steps over, as a bit set of next
 * header values (all below 64). ESP and "no next header" end the walk. */
#define XRL_V6_EXT_MASK ((1ULL << XRL_IPPROTO_HOPOPTS) | (1ULL << XRL_IPPROTO_ROUTING) | \
			 (1ULL << XRL_IPPROTO_FRAGMENT) | (1ULL << XRL_IPPROTO_AH) | \
			 (1ULL << XRL_IPPROTO_DSTOPTS))

/* Offsets the IPv6 walk reaches at most: it keeps packet pointers within
 * the verifier's MAX_PACKET_OFF (64 KiB) with room for a TCP header. A
 * header chain longer than this is unwalkable, like one of too many
 * headers (a single-buffer XDP frame is at most a page anyway). */
#define XRL_MAX_PARSE_OFF 0x7fff

#define XRL_TCP_FLAG_SYN 0x02
#define XRL_TCP_FLAG_RST 0x04
#define XRL_TCP_FLAG_ACK 0x10

enum xrl_parse_res {
	XRL_P_OK = 0,     /* addresses known; ports known if has_ports */
	XRL_P_NON_IP,     /* neither IPv4 nor IPv6: no addresses */
	XRL_P_MALFORMED,  /* truncated or invalid at some layer; the
			   * addresses are known if p->family is set */
	XRL_P_FRAGMENT,   /* a non-first fragment: addresses known, no L4 */
	XRL_P_TINY_FRAG,  /* a first fragment cut inside its L4 header */
	XRL_P_UNWALKABLE, /* more tags or extension headers than the bounds;
			   * the addresses are known if p->family is set */
};

/* What the parser found, on the stack of the program. */
struct xrl_pkt {
	__u32 src[4];     /* network byte order, v4 in [0], rest zero */
	__u32 dst[4];
	__u16 dport;      /* host byte order, valid if has_ports */
	__u16 sport;      /* network byte order, valid if has_ports */
	__u8  family;     /* enum xrl_family; 0 until the addresses are read */
	__u8  proto;      /* IANA L4 protocol after extension headers */
	__u8  tcp_flags;  /* byte 13 of the TCP header */
	__u8  has_ports;
	__u8  first_frag; /* offset 0 and more fragments follow */
	__u8  pad;
	__u16 l3_off;     /* bytes from the frame start to the IP header */
	__u16 l4_off;     /* to the L4 header, valid if has_ports */
};

/*
 * Offsets, not pointers, so that a length read from the packet can bound
 * the walk (lim) as well as the frame does (end, the bound the verifier
 * knows): every header is checked against both.
 */
struct xrl_cursor {
	void *data;
	void *end;        /* ctx->data_end */
	__u32 off;        /* of the next header, bytes from data */
	__u32 lim;        /* end of the IP packet, bytes from data: the frame
			   * length until the IP header says less */
};

/*
 * Ethernet plus at most XRL_MAX_VLAN_DEPTH 802.1Q/802.1ad tags, whatever
 * their VLAN ids: __netif_receive_skb_core unwraps any number of priority
 * (VID 0) tags, and a tag with a VLAN device above it goes another round.
 * Returns XRL_P_OK with *proto_be the EtherType behind the tags,
 * XRL_P_MALFORMED or XRL_P_UNWALKABLE (still a tag after the last one).
 */
static __always_inline int xrl_parse_eth(struct xrl_cursor *c, __u16 *proto_be)
{
	struct ethhdr *eth = c->data;
	__u32 off = sizeof(*eth);
	__u16 proto;

	if ((void *)(eth + 1) > c->end)
		return XRL_P_MALFORMED;
	proto = eth->h_proto;

#pragma unroll
	for (int i = 0; i < XRL_MAX_VLAN_DEPTH; i++) {
		struct vlan_hdr *vh = c->data + off;

		if (proto != bpf_htons(XRL_ETH_P_8021Q) &&
		    proto != bpf_htons(XRL_ETH_P_8021AD))
			break;
		if ((void *)(vh + 1) > c->end)
			return XRL_P_MALFORMED;
		proto = vh->h_vlan_encapsulated_proto;
		off += sizeof(*vh);
	}
	if (proto == bpf_htons(XRL_ETH_P_8021Q) || proto == bpf_htons(XRL_ETH_P_8021AD))
		return XRL_P_UNWALKABLE;
	c->off = off;
	*proto_be = proto;
	return XRL_P_OK;
}

/*
 * IPv4 as ip_rcv_core takes it: version 4, IHL >= 5, the header within the
 * total length and the total length within the frame (a longer one is
 * dropped there; a shorter one trims the frame, so nothing behind it is
 * read). Options are not interpreted: the kernel drops invalid ones, and
 * valid ones change nothing the rules look at. The addresses are known as
 * soon as a version-4 header is there, so the lists apply to the rest.
 */
static __always_inline int xrl_parse_ipv4(struct xrl_cursor *c, struct xrl_pkt *p)
{
	struct iphdr *iph = c->data + c->off;
	__u32 hlen, tot;

	if ((void *)(iph + 1) > c->end)
		return XRL_P_MALFORMED;
	if (iph->version != 4)
		return XRL_P_MALFORMED;
	p->family = XRL_AF_INET;
	p->l3_off = c->off;
	p->src[0] = iph->saddr;
	p->dst[0] = iph->daddr;
	if (iph->ihl < 5)
		return XRL_P_MALFORMED;
	hlen = iph->ihl * 4;
	tot = bpf_ntohs(iph->tot_len);
	if (tot < hlen || c->off + tot > c->lim)
		return XRL_P_MALFORMED;
	if ((void *)iph + hlen > c->end)
		return XRL_P_MALFORMED;
	c->lim = c->off + tot;
	c->off += hlen;
	p->proto = iph->protocol;

	/* offset != 0: a later fragment, which carries no L4 header */
	if (iph->frag_off & bpf_htons(0x1fff))
		return XRL_P_FRAGMENT;
	p->first_frag = !!(iph->frag_off & bpf_htons(0x2000));
	return XRL_P_OK;
}

/* xrl_v6_ext_step's answer: the next offset in bits 0-15, the next header
 * in bits 16-23, and these flags; or -1: malformed. */
#define XRL_STEP_LATER_FRAG (1 << 24)  /* a fragment header, offset != 0 */
#define XRL_STEP_FIRST_FRAG (1 << 25)  /* a fragment header, offset 0 + M */
#define XRL_STEP_FAR        (1 << 26)  /* beyond XRL_MAX_PARSE_OFF */
#define XRL_STEP_FIRST      (1 << 8)   /* in nh: the header right after the
					* fixed header (hop-by-hop may be
					* only there, RFC 8200 4.1) */

/*
 * One IPv6 extension header of type nh at offset off of the packet that
 * ends at lim. A global function: the verifier checks it once, on its own,
 * so the walk's bounded loop costs it one pass per header instead of one
 * per combination of header types. Cost: a call, a few compares.
 */
__noinline int xrl_v6_ext_step(struct xdp_md *ctx, __u32 off, __u32 lim, __u32 nh)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ipv6_opt_hdr *oh;
	struct frag_hdr *fh;
	__u32 len, flags = 0;

	if (off > XRL_MAX_PARSE_OFF)
		return XRL_STEP_FAR;
	oh = data + off;
	fh = data + off;
	/* every extension header is at least 8 bytes */
	if ((void *)oh + 8 > end || off + 8 > lim)
		return -1;
	switch (nh & 0xff) {
	case XRL_IPPROTO_HOPOPTS:
		/* anywhere else Linux finds no handler for it: dropped */
		if (!(nh & XRL_STEP_FIRST))
			return -1;
		len = ((__u32)oh->hdrlen + 1) * 8;
		break;
	case XRL_IPPROTO_ROUTING:
	case XRL_IPPROTO_DSTOPTS:
		len = ((__u32)oh->hdrlen + 1) * 8;
		break;
	case XRL_IPPROTO_AH:
		len = ((__u32)oh->hdrlen + 2) * 4;
		break;
	case XRL_IPPROTO_FRAGMENT:
		len = sizeof(*fh);
		if (fh->frag_off & bpf_htons(0xfff8))
			flags = XRL_STEP_LATER_FRAG;
		else if (fh->frag_off & bpf_htons(1))
			flags = XRL_STEP_FIRST_FRAG;
		break;
	default:
		return -1;
	}
	if (off + len > lim)
		return -1;
	if (off + len > XRL_MAX_PARSE_OFF)
		return XRL_STEP_FAR;
	return (int)((off + len) | (__u32)oh->nexthdr << 16 | flags);
}

static __always_inline int xrl_v6_is_ext(__u32 nh)
{
	return nh < 64 && ((XRL_V6_EXT_MASK >> nh) & 1);
}

/*
 * IPv6 as ip6_rcv_core takes it: version 6, and the payload length within
 * the frame (the frame is trimmed to it); a zero payload length with a
 * hop-by-hop header first (a jumbogram) leaves the frame as it is. Then up
 * to XRL_MAX_V6_EXT_HDRS extension headers, as ip6_input_finish walks
 * them (it has no bound of its own).
 */
static __always_inline int xrl_parse_ipv6(struct xdp_md *ctx, struct xrl_cursor *c,
					  struct xrl_pkt *p)
{
	struct ipv6hdr *ip6 = c->data + c->off;
	__u32 plen, nh, off;
	int r;

	if ((void *)(ip6 + 1) > c->end)
		return XRL_P_MALFORMED;
	if (ip6->version != 6)
		return XRL_P_MALFORMED;

	p->family = XRL_AF_INET6;
	p->l3_off = c->off;
	__builtin_memcpy(p->src, &ip6->saddr, 16);
	__builtin_memcpy(p->dst, &ip6->daddr, 16);
	nh = ip6->nexthdr;
	plen = bpf_ntohs(ip6->payload_len);
	off = c->off + sizeof(*ip6);
	if (plen || nh != XRL_IPPROTO_HOPOPTS) {
		if (off + plen > c->lim)
			return XRL_P_MALFORMED;
		c->lim = off + plen;
	}
	c->off = off;
	if (nh == XRL_IPPROTO_TCP || !xrl_v6_is_ext(nh)) {
		p->proto = nh;
		return XRL_P_OK;
	}

#pragma clang loop unroll(disable)
	for (int i = 0; i < XRL_MAX_V6_EXT_HDRS; i++) {
		r = xrl_v6_ext_step(ctx, off, c->lim, nh | (i ? 0 : XRL_STEP_FIRST));
		/* A first fragment whose header chain is cut is not malformed to
		 * the kernel: ipv6frag_thdr_truncated lets it through when the
		 * chain cannot be walked, and reassembly completes it with a
		 * later fragment, which may carry the SYN. Like a first
		 * fragment cut inside its L4 header, it is dropped. */
		if (r < 0)
			return p->first_frag ? XRL_P_TINY_FRAG : XRL_P_MALFORMED;
		if (r & XRL_STEP_FAR)
			return XRL_P_UNWALKABLE;
		nh = (r >> 16) & 0xff;
		off = r & XRL_MAX_PARSE_OFF;
		if (r & XRL_STEP_LATER_FRAG) {
			p->proto = nh;
			return XRL_P_FRAGMENT;
		}
		if (r & XRL_STEP_FIRST_FRAG)
			p->first_frag = 1;
		if (!xrl_v6_is_ext(nh))
			break;
	}
	if (xrl_v6_is_ext(nh))
		return XRL_P_UNWALKABLE;
	c->off = off;
	p->proto = nh;
	return XRL_P_OK;
}

/*
 * TCP (data offset >= 5, whole header present) and UDP ports and flags,
 * within the IP packet. A first fragment too short to hold its L4 header is
 * not merely malformed: passed, the stack would reassemble a SYN no rule
 * saw (the "tiny fragment" attack of RFC 1858; RFC 7112 requires the whole
 * header chain in the first fragment, so real stacks never send one). It is
 * reported for a drop.
 */
static __always_inline int xrl_parse_l4(struct xrl_cursor *c, struct xrl_pkt *p)
{
	int cut = p->first_frag ? XRL_P_TINY_FRAG : XRL_P_MALFORMED;
	__u32 off = c->off;

	if (off > XRL_MAX_PARSE_OFF)
		return XRL_P_MALFORMED;
	if (p->proto == XRL_IPPROTO_TCP) {
		struct tcphdr *th = c->data + off;
		__u32 doff;

		if ((void *)(th + 1) > c->end || off + sizeof(*th) > c->lim)
			return cut;
		doff = th->doff * 4;
		if (doff < sizeof(*th))
			return XRL_P_MALFORMED;
		if ((void *)th + doff > c->end || off + doff > c->lim)
			return cut;
		p->dport = bpf_ntohs(th->dest);
		p->sport = th->source;
		p->tcp_flags = ((__u8 *)th)[13];
		p->has_ports = 1;
		p->l4_off = off;
	} else if (p->proto == XRL_IPPROTO_UDP) {
		struct udphdr *uh = c->data + off;

		if ((void *)(uh + 1) > c->end || off + sizeof(*uh) > c->lim)
			return cut;
		p->dport = bpf_ntohs(uh->dest);
		p->sport = uh->source;
		p->has_ports = 1;
	}
	return XRL_P_OK;
}

static __always_inline int xrl_parse(struct xdp_md *ctx, void *data, void *data_end,
				     struct xrl_pkt *p)
{
	struct xrl_cursor c = { .data = data, .end = data_end,
				.lim = (__u32)(data_end - data) };
	__u16 proto;
	int res;

	res = xrl_parse_eth(&c, &proto);
	if (res != XRL_P_OK)
		return res;
	if (proto == bpf_htons(XRL_ETH_P_IP))
		res = xrl_parse_ipv4(&c, p);
	else if (proto == bpf_htons(XRL_ETH_P_IPV6))
		res = xrl_parse_ipv6(ctx, &c, p);
	else
		return XRL_P_NON_IP;
	if (res != XRL_P_OK)
		return res;
	return xrl_parse_l4(&c, p);
}

#endif /* XRL_PARSE_H */
