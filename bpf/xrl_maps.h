/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * xrl_maps.h - the program's maps. Names, keys and values come from
 * include/xrl_abi.h; the variable names here are the pinned names.
 */
#ifndef XRL_MAPS_H
#define XRL_MAPS_H

/* Runtime knobs: active ruleset slot, list sizes, sampling interval. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xrl_config);
} xrl_config SEC(".maps");

/* Two rulesets: one in force, one being written (double buffer). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct xrl_ruleset);
} xrl_rulesets SEC(".maps");

/* Rule names per ruleset slot, for readers of the pins; unused here. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct xrl_ruleset_meta);
} xrl_meta SEC(".maps");

/* Shared GCRA state per (rule, source prefix): __u64 TAT, updated by CAS.
 * Touched only on the admit path and on the first refusal of a run. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, XRL_BUCKETS_DEFAULT);
	__type(key, struct xrl_bucket_key);
	__type(value, __u64);
} xrl_buckets SEC(".maps");

/* Per-CPU "refused until" state, direct-mapped: the refusal path's only
 * bucket memory. Sized at load time (power of 2). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XRL_REFUSED_DEFAULT);
	__type(key, __u32);
	__type(value, struct xrl_refused);
} xrl_refused SEC(".maps");

/* Short allowlists, inline. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xrl_allow_small);
} xrl_allow_small SEC(".maps");

/* Allowlist: sources never limited. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, XRL_LIST_DEFAULT);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xrl_lpm_v4);
	__type(value, struct xrl_allow_val);
} xrl_allow_v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, XRL_LIST_DEFAULT);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xrl_lpm_v6);
	__type(value, struct xrl_allow_val);
} xrl_allow_v6 SEC(".maps");

/* Denylist: sources dropped until their entry expires. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, XRL_LIST_DEFAULT);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xrl_lpm_v4);
	__type(value, struct xrl_deny_val);
} xrl_deny_v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, XRL_LIST_DEFAULT);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xrl_lpm_v6);
	__type(value, struct xrl_deny_val);
} xrl_deny_v6 SEC(".maps");

/* Per-rule x verdict packets and bytes, per CPU, indexed by
 * ruleset slot * XRL_MAX_RULES + rule slot (userspace carries totals over
 * by rule name when it installs a new ruleset). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2 * XRL_MAX_RULES);
	__type(key, __u32);
	__type(value, struct xrl_rule_ctr);
} xrl_rule_stats SEC(".maps");

/* Global counters, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xrl_global_ctr);
} xrl_global_stats SEC(".maps");

/* The jiffy (low 32 bits, 0 = never) of the last SYN passed to the kernel
 * as a cookie primer, per destination port (host order) + 0x10000 for IPv6:
 * see XRL_COOKIE_PRIME_S. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 0x20000);
	__type(key, __u32);
	__type(value, __u64);
} xrl_cookie_prime SEC(".maps");

/* xrl's own SYN cookie: its keys and what the SYN-ACK offers (xrl_abi.h,
 * struct xrl_cookie_cfg), written by userspace; shared with the TC program. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xrl_cookie_cfg);
} xrl_cookie SEC(".maps");

/* Automatic vouches (cookie-verified admits, the identity tier): source
 * prefixes (/24, /48) with an expiry; the reserved share of an aggregate
 * cap is theirs. LRU: verified sources cannot fill it, only push out the
 * least recently vouched. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, XRL_VOUCH_DEFAULT);
	__type(key, struct xrl_vouch_key);
	__type(value, struct xrl_vouch_val);
} xrl_vouch SEC(".maps");

/* Operators' vouches: a plain HASH, so nothing the automatic vouches do
 * can evict one; only userspace's operator verbs write it (xrl_abi.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XRL_VOUCH_OP_MAX + 1);
	__type(key, struct xrl_vouch_key);
	__type(value, struct xrl_vouch_val);
} xrl_vouch_op SEC(".maps");

/* Aggregate caps' GCRA TATs (bpf_ktime_get_ns), per [ruleset slot][rule
 * slot][0 open share, 1 reserved share]; updated by CAS. Not pinned: a
 * newly loaded program starts them full, and a slot written by a reload
 * holds at most one burst owed from the rule it held before. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * XRL_MAX_RULES * 2);
	__type(key, __u32);
	__type(value, __u64);
} xrl_agg SEC(".maps");

/* The namespace's sysctls as they were before cookies needed them:
 * userspace's memory, pinned with the rest; never read here. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xrl_sysctl_saved);
} xrl_sysctl SEC(".maps");

/* Refusal samples for the daemon (top, penalty escalation). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, XRL_EVENTS_BYTES);
} xrl_events SEC(".maps");

#endif /* XRL_MAPS_H */
