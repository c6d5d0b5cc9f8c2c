// SPDX-License-Identifier: GPL-2.0-only
/*
 * ref.bpf.c - the references of scripts/bench/xdp-cost.sh: the least XDP
 * programs that do each of xrl's paths' necessary work, so that xrl's cost
 * is given against what the work itself costs on this machine, in the same
 * run, and not only against a bare XDP_DROP (whose cost varies from one
 * machine to the next by more than the work does).
 *
 *   ref_refuse  parse Ethernet, IPv4 (no options) or IPv6 (TCP next), TCP;
 *               check SYN; hash the source into a per-CPU array slot;
 *               compare the slot's 64-bit deadline with bpf_jiffies64();
 *               bump one per-CPU counter; drop
 *   ref_allow   the same parse, one LPM lookup of the source; pass
 *   ref_lease   the same parse and slot; one decrement of its lease; pass
 *
 * They refuse nothing by accident and count nothing else: they are a
 * yardstick, not a limiter (no epoch, no rules, no sampling, no framing
 * cases). A packet they do not expect passes.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "GPL";

#define REF_SLOTS 4096 /* a power of 2, as xrl's refusal cache */

struct ref_slot {
	__u64 deadline; /* refused until this jiffy */
	__u64 lease;    /* tokens left to admit */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, REF_SLOTS);
	__type(key, __u32);
	__type(value, struct ref_slot);
} ref_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} ref_count SEC(".maps");

struct ref_lpm4 {
	__u32 prefixlen;
	__u32 addr;
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 1024);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ref_lpm4);
	__type(value, __u8);
} ref_allow4 SEC(".maps");

/* The source of a TCP SYN (v4: *a, v6: its 16 bytes at a), or 0: not one. */
static __always_inline int ref_parse(void *data, void *end, __u32 *v4, __u64 *h)
{
	const __u64 m = 0x9E3779B97F4A7C15ULL;
	struct ethhdr *eth = data;
	struct tcphdr *th;

	if ((void *)(eth + 1) > end)
		return 0;
	if (eth->h_proto == bpf_htons(0x0800)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > end || ip->ihl != 5 || ip->protocol != 6)
			return 0;
		th = (void *)(ip + 1);
		*v4 = ip->saddr;
		*h = (__u64)ip->saddr * m;
	} else if (eth->h_proto == bpf_htons(0x86DD)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		__u64 w0, w1;

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != 6)
			return 0;
		th = (void *)(ip6 + 1);
		__builtin_memcpy(&w0, &ip6->saddr, 8);
		__builtin_memcpy(&w1, (void *)&ip6->saddr + 8, 8);
		*v4 = 0;
		*h = ((w0 * m) ^ w1) * m;
	} else {
		return 0;
	}
	if ((void *)(th + 1) > end)
		return 0;
	return (((__u8 *)th)[13] & 0x12) == 0x02;
}

SEC("xdp")
int ref_refuse(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ref_slot *sl;
	__u32 v4, idx, zero = 0;
	__u64 h, *n;

	if (!ref_parse(data, end, &v4, &h))
		return XDP_PASS;
	idx = (__u32)(h >> 32) & (REF_SLOTS - 1);
	sl = bpf_map_lookup_elem(&ref_slots, &idx);
	if (!sl || bpf_jiffies64() >= sl->deadline)
		return XDP_PASS;
	n = bpf_map_lookup_elem(&ref_count, &zero);
	if (n)
		(*n)++;
	return XDP_DROP;
}

SEC("xdp")
int ref_allow(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ref_lpm4 k = { .prefixlen = 32 };
	__u32 v4;
	__u64 h;

	if (!ref_parse(data, end, &v4, &h))
		return XDP_DROP;
	k.addr = v4;
	return bpf_map_lookup_elem(&ref_allow4, &k) ? XDP_PASS : XDP_DROP;
}

SEC("xdp")
int ref_lease(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ref_slot *sl;
	__u32 v4, idx;
	__u64 h;

	if (!ref_parse(data, end, &v4, &h))
		return XDP_DROP;
	idx = (__u32)(h >> 32) & (REF_SLOTS - 1);
	sl = bpf_map_lookup_elem(&ref_slots, &idx);
	if (!sl || !sl->lease)
		return XDP_DROP;
	sl->lease--;
	return XDP_PASS;
}
