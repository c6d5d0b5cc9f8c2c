// SPDX-License-Identifier: GPL-2.0-only
/*
 * pass.bpf.c - the XDP program of the flood lab's comparison cases (none,
 * nftables, iptables): it passes every frame. It is there so that every
 * defence sees frames on the same path: a veth only runs its NAPI poll (and
 * so its threaded-NAPI kthread, whose CPU time scripts/bench/flood.sh
 * measures) while an XDP program is attached, and frames sent by an XDP
 * generator arrive as XDP frames only then.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("xdp")
int xrl_flood_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}
