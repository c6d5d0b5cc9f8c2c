// SPDX-License-Identifier: GPL-2.0-only
/*
 * sink.bpf.c - the XDP program on the router's end of the protected veth
 * (fla0) in the spoofed-source scenario of scripts/bench/flood.sh.
 *
 * Two reasons it is there. A veth drops the frames its peer sends with
 * XDP_TX (xrl's cookie SYN-ACKs) unless it runs an XDP program itself; a
 * real NIC has no such need. And every defence answers each spoofed SYN
 * with a SYN-ACK to an address that does not exist: the router would route
 * it into its blackhole at ~1 us a frame on the generator's CPU. Dropping it
 * here (the lab's "wire" losing it) keeps the generator's CPU for the
 * generator, the same for every defence. Everything for the lab's own
 * networks (10.0.0.0/8: the clients' answers) passes on to the router.
 */
#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define ETH_P_IP 0x0800

char LICENSE[] SEC("license") = "GPL";

SEC("xdp")
int xrl_flood_sink(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	/* daddr is in network order: its first byte is the /8 */
	if ((bpf_ntohl(ip->daddr) >> 24) != 10)
		return XDP_DROP;
	return XDP_PASS;
}
