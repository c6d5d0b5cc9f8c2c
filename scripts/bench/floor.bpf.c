// SPDX-License-Identifier: GPL-2.0-only
/*
 * floor.bpf.c - the floor of scripts/bench/xdp-cost.sh: an XDP program that
 * does nothing but drop. Its BPF_PROG_TEST_RUN cost per repeat is the fixed
 * price of running any XDP program on this machine (the test-run loop, the
 * dispatcher call, the return), against which xrl's paths are given as
 * ratios.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("xdp")
int xrl_floor(struct xdp_md *ctx)
{
	return XDP_DROP;
}
