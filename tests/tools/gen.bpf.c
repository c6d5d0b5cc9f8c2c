// SPDX-License-Identifier: GPL-2.0-only
/*
 * gen.bpf.c - the transmit half of xrl-gen.
 *
 * Userspace runs this program with BPF_PROG_RUN in live-frame mode
 * (BPF_F_TEST_XDP_LIVE_FRAMES) on a template frame, with the sending
 * interface as the ingress device: every XDP_TX becomes a redirect out of
 * that interface, so on a veth each frame reaches the peer as an XDP frame
 * and runs the peer's XDP program natively, as a NIC's receive would.
 *
 * Per frame the program writes the source address (one, sequential or
 * random in a prefix), the source port, the TCP sequence number and
 * optionally the destination port, and the IPv4 header and TCP/UDP
 * checksums, so every frame is valid for the receiving stack.
 *
 * Live-frame pages are recycled without being reset to the template: a
 * frame may start with the bytes of an earlier one, as this program or the
 * receiver left them (a receiver that answers with XDP_TX, as xrl's SYN
 * cookies do, turns the frame into a SYN-ACK in place, and on a veth the
 * page comes back here as it was: without a reset the next frames went out
 * as SYN-ACKs to port 80's answer). So the template's first bytes (every
 * header) are written back first, every field that varies is written in
 * full, and every checksum is computed from the constant sums userspace
 * prepared (gen.h), never from what is in the frame. Bytes past
 * XRL_GEN_TMPL are the receiver's to keep.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "gen.h"

char LICENSE[] SEC("license") = "GPL";

const volatile struct xrl_gen_cfg cfg = {};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xrl_gen_ctr);
} xrl_gen_ctr SEC(".maps");

static __always_inline __u16 fold(__u32 s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

/* raw 16-bit words of a 32-bit value, see gen.h */
static __always_inline __u32 words(__u32 v)
{
	return (v & 0xffff) + (v >> 16);
}

SEC("xdp")
int xrl_gen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct xrl_gen_ctr *c;
	__u32 key = 0, s0, s1 = 0, s2 = 0, s3 = 0, sum, r;
	__u16 sport, dport = 0;

	/* attached to another device only to stay in the XDP dispatcher
	 * (gen.c, the keeper): leave its traffic alone */
	if (ctx->ingress_ifindex != cfg.ifindex)
		return XDP_PASS;

	c = bpf_map_lookup_elem(&xrl_gen_ctr, &key);
	if (!c)
		return XDP_ABORTED;

	for (__u32 i = 0; i < XRL_GEN_TMPL / 4; i++) {
		if (i * 4 + 4 > cfg.tmpl_len)
			break;
		if (data + i * 4 + 4 > end)
			goto bad;
		((__u32 *)data)[i] = cfg.tmpl[i];
	}

	/* the source address, network order */
	s0 = cfg.src[0];
	if (cfg.family == 6) {
		s1 = cfg.src[1];
		s2 = cfg.src[2];
		s3 = cfg.src[3];
	}
	if (cfg.mode == XRL_GEN_SEQ) {
		__u32 i = c->next;

		c->next = i + 1 >= cfg.nsrc ? 0 : i + 1;
		if (cfg.family == 4) {
			s0 = bpf_htonl(cfg.base4 + i);
		} else {
			__u64 lo = cfg.base6_lo + i;
			__u64 hi = cfg.base6_hi + (lo < cfg.base6_lo);

			s0 = bpf_htonl((__u32)(hi >> 32));
			s1 = bpf_htonl((__u32)hi);
			s2 = bpf_htonl((__u32)(lo >> 32));
			s3 = bpf_htonl((__u32)lo);
		}
	} else if (cfg.mode == XRL_GEN_RANDOM) {
		if (cfg.hostmask[0])
			s0 |= bpf_get_prandom_u32() & cfg.hostmask[0];
		if (cfg.family == 6) {
			if (cfg.hostmask[1])
				s1 |= bpf_get_prandom_u32() & cfg.hostmask[1];
			if (cfg.hostmask[2])
				s2 |= bpf_get_prandom_u32() & cfg.hostmask[2];
			if (cfg.hostmask[3])
				s3 |= bpf_get_prandom_u32() & cfg.hostmask[3];
		}
	}

	/* ports: source in 1024..65535, destination (optional) in 1..65535 */
	r = bpf_get_prandom_u32();
	sport = bpf_htons((__u16)(1024 + (((r >> 16) * 64512) >> 16)));
	if (cfg.rand_dport)
		dport = bpf_htons((__u16)(1 + (((r & 0xffff) * 65535) >> 16)));

	sum = cfg.l4_sum + words(s0) + sport + dport;

	if (cfg.family == 4) {
		struct iphdr *ip = data + cfg.l3_off;

		if ((void *)(ip + 1) > end)
			goto bad;
		ip->saddr = s0;
		ip->check = fold(cfg.ip_sum + words(s0));
	} else {
		struct ipv6hdr *ip6 = data + cfg.l3_off;

		if ((void *)(ip6 + 1) > end)
			goto bad;
		ip6->saddr.in6_u.u6_addr32[0] = s0;
		ip6->saddr.in6_u.u6_addr32[1] = s1;
		ip6->saddr.in6_u.u6_addr32[2] = s2;
		ip6->saddr.in6_u.u6_addr32[3] = s3;
		sum += words(s1) + words(s2) + words(s3);
	}

	if (cfg.udp) {
		struct udphdr *uh = data + cfg.l4_off;
		__u16 cs;

		if ((void *)(uh + 1) > end)
			goto bad;
		uh->source = sport;
		if (cfg.rand_dport)
			uh->dest = dport;
		cs = fold(sum);
		uh->check = cs ? cs : 0xffff;   /* 0 would mean "no checksum" */
	} else {
		struct tcphdr *th = data + cfg.l4_off;
		__u32 seq = bpf_get_prandom_u32();

		if ((void *)(th + 1) > end)
			goto bad;
		th->source = sport;
		if (cfg.rand_dport)
			th->dest = dport;
		th->seq = seq;
		th->check = fold(sum + words(seq));
	}
	c->tx++;
	return XDP_TX;
bad:
	c->bad++;
	return XDP_ABORTED;
}
