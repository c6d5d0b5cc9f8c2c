// SPDX-License-Identifier: GPL-2.0-only
/*
 * xrl.bpf.c - the packet tier: per-source token buckets at the NIC.
 *
 * parse -> allowlist -> denylist -> classify (every matching rule, in order)
 * -> key -> bucket -> verdict, with one exit that records the counters.
 *
 * Never refuse by accident: anything the parser does not understand, a
 * missing policy, a bucket that cannot be created, a lost CAS race all pass
 * and are counted. The only drops are a denylist hit, a bucket refusal, a
 * first fragment too short to show its L4 header (see xrl_parse_l4),
 * framing deeper than the parser walks when a drop rule could cover it
 * (see xrl_unclassified), and, on a SYN-cookie rule's port, an ACK of no
 * connection whose cookie is invalid. A SYN a cookie rule matches is
 * answered in place (XDP_TX, see xrl_cookie.h). Unparsed or not, a packet whose source is known
 * meets the allowlist and the denylist.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xrl_abi.h"
#include "xrl_gcra.h"
#include "xrl_maps.h"
#include "xrl_parse.h"
#include "xrl_limit.h"
#include "xrl_cookie.h"
#include "xrl_vouch.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * Clock. A rule's buckets run on jiffies x xrl_tick_ns: bpf_jiffies64 is
 * inlined by the verifier (no helper call) and has the resolution of
 * CLOCK_MONOTONIC_COARSE (one tick; the loader sets xrl_tick_ns from
 * clock_getres). GCRA only needs the long-run sum of time to be right, and a
 * tick-granular clock shifts admissions to tick boundaries, provided the
 * bucket can hold a tick's worth of tokens. A rule whose burst is shorter
 * than two ticks of tokens (xrl_rule.clock_fine, set by the loader) runs on
 * bpf_ktime_get_ns instead, read once per packet, only when such a rule's
 * bucket is asked. The refusal path reads no clock but jiffies.
 */
const volatile __u64 xrl_tick_ns = 4000000;
/* 0 at load time turns admission leases off (every admit asks the bucket) */
const volatile __u8 xrl_lease_on = 1;
/* xrl_refused's size - 1 (a power of 2), set with the map's size at load */
const volatile __u32 xrl_refused_mask = XRL_REFUSED_DEFAULT - 1;
/* 64 - log2 of that size: a slot is the top bits of the signature's hash */
const volatile __u32 xrl_refused_shift = 64 - __builtin_ctz(XRL_REFUSED_DEFAULT);

/* Rules a packet is checked against at most; later matches are ignored. */
#define XRL_MAX_MATCH 4

/* The time rule r's buckets run on; *fine caches the one ktime read. */
static __always_inline __u64 xrl_now(const struct xrl_rule *r, __u64 jiffies, __u64 *fine)
{
	if (!r->clock_fine)
		return jiffies * xrl_tick_ns;
	if (!*fine)
		*fine = bpf_ktime_get_ns();
	return *fine;
}

/* Is IPv4 source saddr (network order) allowlisted? */
static __always_inline int xrl_allowlisted4(const struct xrl_config *cfg, __u32 saddr)
{
	struct xrl_lpm_v4 k = { .prefixlen = 32, .addr = saddr };
	struct xrl_allow_small *sm;
	__u32 zero = 0;

	if (!cfg->allow_v4_n)
		return 0;
	if (cfg->allow_v4_n <= XRL_ALLOW_SMALL &&
	    (sm = bpf_map_lookup_elem(&xrl_allow_small, &zero))) {
#pragma unroll
		for (int i = 0; i < XRL_ALLOW_SMALL; i++) {
			if (i >= sm->n4)
				break;
			if ((saddr & sm->v4[i].mask) == sm->v4[i].addr)
				return 1;
		}
		return 0;
	}
	return bpf_map_lookup_elem(&xrl_allow_v4, &k) != NULL;
}

/* Is IPv6 source src (four words, network order) allowlisted? */
static __always_inline int xrl_allowlisted6(const struct xrl_config *cfg, const __u32 *src)
{
	struct xrl_lpm_v6 k = { .prefixlen = 128 };
	struct xrl_allow_small *sm;
	__u32 zero = 0;

	if (!cfg->allow_v6_n)
		return 0;
	if (cfg->allow_v6_n <= XRL_ALLOW_SMALL &&
	    (sm = bpf_map_lookup_elem(&xrl_allow_small, &zero))) {
#pragma unroll
		for (int i = 0; i < XRL_ALLOW_SMALL; i++) {
			if (i >= sm->n6)
				break;
			if ((src[0] & sm->v6[i].mask[0]) == sm->v6[i].addr[0] &&
			    (src[1] & sm->v6[i].mask[1]) == sm->v6[i].addr[1] &&
			    (src[2] & sm->v6[i].mask[2]) == sm->v6[i].addr[2] &&
			    (src[3] & sm->v6[i].mask[3]) == sm->v6[i].addr[3])
				return 1;
		}
		return 0;
	}
	__builtin_memcpy(k.addr, src, 16);
	return bpf_map_lookup_elem(&xrl_allow_v6, &k) != NULL;
}

static __always_inline int xrl_allowlisted(const struct xrl_config *cfg,
					   const struct xrl_pkt *p)
{
	return p->family == XRL_AF_INET ? xrl_allowlisted4(cfg, p->src[0])
					: xrl_allowlisted6(cfg, p->src);
}

/*
 * Is the source denied? Deny expiries are written by userspace on
 * CLOCK_MONOTONIC, so an entry with an expiry costs the one clock read of
 * this packet (the bucket path uses jiffies). The trie answers the longest
 * match only: when that entry has expired (the daemon sweeps it later), a
 * shorter one may still cover the source (an operator's /24 over a /32
 * penalty that ran out), so the lookup goes on below the expired entry's
 * length, a few levels at most.
 */
#define XRL_DENY_DEPTH 4

static __always_inline int xrl_denied(struct xrl_global_ctr *gc, const struct xrl_config *cfg,
				      const struct xrl_pkt *p)
{
	struct xrl_lpm_v6 k6 = { .prefixlen = 128 };
	struct xrl_lpm_v4 k4 = { .prefixlen = 32, .addr = p->src[0] };
	struct xrl_deny_val *v;
	__u64 now = 0;

	if (p->family == XRL_AF_INET ? !cfg->deny_v4_n : !cfg->deny_v6_n)
		return 0;
	__builtin_memcpy(k6.addr, p->src, 16);
#pragma unroll
	for (int i = 0; i < XRL_DENY_DEPTH; i++) {
		v = p->family == XRL_AF_INET ? bpf_map_lookup_elem(&xrl_deny_v4, &k4)
					     : bpf_map_lookup_elem(&xrl_deny_v6, &k6);
		if (!v)
			return 0;
		if (!v->expires_ns)
			return 1;
		if (!now)
			now = bpf_ktime_get_coarse_ns();
		if (now < v->expires_ns)
			return 1;
		gc->c[XRL_G_DENY_EXPIRED]++;
		if (!v->plen || v->plen > 128)
			return 0;
		k4.prefixlen = v->plen - 1;
		k6.prefixlen = v->plen - 1;
	}
	return 0;
}

/* A TCP SYN without ACK: what `syn_cookies: auto` counts per rule. */
static __always_inline __u32 xrl_is_syn(const struct xrl_pkt *p)
{
	return p->proto == XRL_IPPROTO_TCP &&
	       (p->tcp_flags & (XRL_TCP_FLAG_SYN | XRL_TCP_FLAG_ACK)) == XRL_TCP_FLAG_SYN;
}

/* A rule slot's index in xrl_rule_stats (two rulesets, one after the other). */
static __always_inline __u32 xrl_ctr_idx(__u32 ruleset, __u32 slot)
{
	return (ruleset & 1) * XRL_MAX_RULES + (slot & (XRL_MAX_RULES - 1));
}

/*
 * A rule's counters, by xrl_rule_stats index: a packet of verdict
 * (XRL_V_MAX: none) and syns SYNs, in one lookup of the per-CPU entry (the
 * cached refusal counts both at once; classify counts the SYN of each rule
 * it matched). The refusal cache keeps the index in its slot, so a cached
 * answer need not read the ruleset.
 */
static __always_inline void xrl_count_ctr(__u32 idx, int verdict, __u64 bytes, __u32 syns)
{
	struct xrl_rule_ctr *rc = bpf_map_lookup_elem(&xrl_rule_stats, &idx);

	if (!rc)
		return;
	rc->syns += syns;
	if (verdict < 0 || verdict >= XRL_V_MAX)
		return;
	rc->pkts[verdict]++;
	rc->bytes[verdict] += bytes;
}

static __always_inline void xrl_count_rule_syn(__u32 ruleset, __u32 slot, int verdict,
					       __u64 bytes, __u32 syns)
{
	xrl_count_ctr(xrl_ctr_idx(ruleset, slot), verdict, bytes, syns);
}

static __always_inline void xrl_count_rule(__u32 ruleset, __u32 slot, int verdict,
					   __u64 bytes)
{
	xrl_count_rule_syn(ruleset, slot, verdict, bytes, 0);
}

/*
 * A refusal answered from slot rv: at most once per interval per slot per
 * CPU, sample it into the ring buffer with the number of refusals it stands
 * for and this packet's addresses and ports (xrld asks the kernel whether
 * they belong to an established connection: whether the source proved
 * itself). Cost on the hot path: one compare.
 */
static __always_inline void xrl_sample(struct xrl_global_ctr *gc, const struct xrl_config *cfg,
				       struct xrl_refused *rv, __u64 j, __u8 action,
				       struct xdp_md *ctx, const struct xrl_pkt *p, __u8 proof)
{
	struct xrl_event *e;

	rv->suppressed++;
	if (rv->last_event_j && j - rv->last_event_j < cfg->event_interval_j)
		return;
	e = bpf_ringbuf_reserve(&xrl_events, sizeof(*e), 0);
	if (!e) {
		gc->c[XRL_G_EVENTS_LOST]++;
		return;
	}
	e->ts_ns = j * xrl_tick_ns;
	e->rule_id = rv->key.rule_id;
	e->count = rv->suppressed;
	e->family = rv->key.family;
	e->plen = rv->key.plen;
	e->action = action;
	e->tcp_flags = p->tcp_flags;
	e->proto = p->proto;
	e->has_ports = p->has_ports;
	e->proof = proof;
	e->pad2 = 0;
	e->sport = p->sport;
	e->dport = bpf_htons(p->dport);
	__builtin_memcpy(e->src, p->src, 16);
	__builtin_memcpy(e->dst, p->dst, 16);
	e->rule_slot = rv->rule_slot;
	__builtin_memcpy(e->addr, rv->key.addr, 16);
	bpf_ringbuf_submit(e, 0);
	gc->c[XRL_G_EVENTS_SENT]++;
	rv->last_event_j = j ? j : 1;
	rv->suppressed = 0;
}

/*
 * Per-packet scratch. In a per-CPU map rather than on the stack: the
 * verifier allows 512 bytes of stack for a program and all the functions
 * it calls, and this is most of it. XDP runs to completion on its CPU, so
 * one entry per CPU is never shared.
 */
struct xrl_scratch {
	struct xrl_pkt pkt;
	__u64 sig[5];                /* the refusal cache's key */
	struct xrl_bucket_key key;   /* of the rule being asked */
	struct xrl_bucket_key admitted[XRL_MAX_MATCH];
	__u64 admitted_inc[XRL_MAX_MATCH];
	__u32 matched[XRL_MAX_MATCH];
	__u32 n_match;
	__u32 ruleset;
	__u32 n_admitted;
	__u32 refuse_slot;           /* the refusing drop rule, if refused */
	__u32 shadow_slot;           /* the first refusing shadow rule */
	__u8  refused;
	__u8  shadowed;
	__u8  cookie;                /* a matching rule has SYN cookies on */
	__u8  cookie_ack;            /* an ACK whose cookie checked out */
	__u8  agg;                   /* a matching rule has an aggregate cap */
	__u64 now;                   /* the clock of the last rule asked */
	__u64 fine;                  /* the one ktime read, 0 until made */
	__u64 conform;               /* when the refusing bucket admits again */
	struct xrl_cookie_buf cb;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xrl_scratch);
} xrl_scratch SEC(".maps");

/*
 * The refusal cache's signature (struct xrl_refused, include/xrl_abi.h):
 * everything the verdict depends on (source, destination, port, protocol
 * and SYN class) and the policy epoch, in as few words as the family
 * needs. sig[1] from its parts:
 */
static __always_inline __u64 xrl_sig_meta(__u16 dport, __u8 proto, __u8 tcp_flags, int v6,
					  __u8 has_ports, __u32 epoch)
{
	return (__u64)dport | (__u64)proto << 16 |
	       (__u64)((tcp_flags & (XRL_TCP_FLAG_SYN | XRL_TCP_FLAG_ACK)) == XRL_TCP_FLAG_SYN) *
		       XRL_SIG_SYN |
	       (v6 ? XRL_SIG_V6 : 0) | (has_ports ? XRL_SIG_PORTS : 0) | XRL_SIG_LAYOUT |
	       (__u64)epoch << 32;
}

/*
 * The slot of a signature: a multilinear hash (one multiply per word, all
 * independent, so their latencies overlap instead of adding up as a chain
 * of multiply-xor does), of which the top bits are taken: they depend on
 * every bit of every word. For IPv4 the last three words are zero and the
 * compiler drops them.
 */
static __always_inline __u32 xrl_sig_slot(__u64 w0, __u64 w1, __u64 w2, __u64 w3, __u64 w4)
{
	__u64 h = w0 * 0x9E3779B97F4A7C15ULL + w1 * 0xC2B2AE3D27D4EB4FULL +
		  w2 * 0x165667B19E3779F9ULL + w3 * 0xD6E8FEB86659FD93ULL +
		  w4 * 0xFF51AFD7ED558CCDULL;

	return (__u32)(h >> xrl_refused_shift) & xrl_refused_mask;
}

/* The signature of the parsed packet, into s->sig; returns its slot. */
static __always_inline __u32 xrl_signature(struct xrl_scratch *s, __u32 epoch)
{
	const struct xrl_pkt *p = &s->pkt;

	if (p->family == XRL_AF_INET) {
		s->sig[0] = (__u64)p->src[0] | (__u64)p->dst[0] << 32;
		s->sig[2] = s->sig[3] = s->sig[4] = 0;
	} else {
		s->sig[0] = (__u64)p->src[0] | (__u64)p->src[1] << 32;
		s->sig[2] = (__u64)p->src[2] | (__u64)p->src[3] << 32;
		s->sig[3] = (__u64)p->dst[0] | (__u64)p->dst[1] << 32;
		s->sig[4] = (__u64)p->dst[2] | (__u64)p->dst[3] << 32;
	}
	s->sig[1] = xrl_sig_meta(p->dport, p->proto, p->tcp_flags, p->family == XRL_AF_INET6,
				 p->has_ports, epoch);
	return xrl_sig_slot(s->sig[0], s->sig[1], s->sig[2], s->sig[3], s->sig[4]);
}

/* Does refusal-cache slot rv hold the signature of words w0..w4? */
static __always_inline int xrl_sig_eq_w(const struct xrl_refused *rv, __u64 w0, __u64 w1,
					__u64 w2, __u64 w3, __u64 w4)
{
	return rv->sig[0] == w0 && rv->sig[1] == w1 &&
	       ((w1 & XRL_SIG_V6) == 0 ||
		(rv->sig[2] == w2 && rv->sig[3] == w3 && rv->sig[4] == w4));
}

static __always_inline int xrl_sig_eq(const struct xrl_refused *rv, const __u64 *sig)
{
	return xrl_sig_eq_w(rv, sig[0], sig[1], sig[2], sig[3], sig[4]);
}

/* Make slot rv hold signature sig, with no refusal, sample or lease. */
static __always_inline void xrl_sig_take(struct xrl_refused *rv, const __u64 *sig, __u64 j)
{
	__builtin_memcpy(rv->sig, sig, sizeof(rv->sig));
	rv->until_j = 0;
	rv->last_event_j = 0;
	rv->suppressed = 0;
	rv->seen_j = j;
	rv->seen_n = 0;
	rv->prev_n = 0;
	rv->lease = 0;
}

/*
 * Write this packet's refusal into its refusal-cache slot rv: refuse from
 * the cache until jiffy until_j (0: never; the slot only keeps sampling
 * state), and sample it. A slot that already holds this signature keeps its
 * sampling state, so a source refused again and again is still sampled at
 * most once per interval.
 */
static __always_inline void xrl_remember(struct xrl_global_ctr *gc, const struct xrl_config *cfg,
					 struct xrl_refused *rv, const struct xrl_scratch *s,
					 __u32 slot, __u8 action, __u64 until_j, __u64 j,
					 struct xdp_md *ctx)
{
	if (!rv)
		return;
	if (!xrl_sig_eq(rv, s->sig))
		xrl_sig_take(rv, s->sig, j);
	rv->key = s->key;
	rv->rule_slot = slot;
	rv->ctr_idx = xrl_ctr_idx(s->ruleset, slot);
	rv->until_j = until_j;
	xrl_sample(gc, cfg, rv, j, action, ctx, &s->pkt,
		   s->cookie_ack && s->cb.proof ? XRL_EV_PROOF_COOKIE : 0);
}

/*
 * The admission lease. A source that kept this CPU busy with admits in the
 * previous jiffy (prev_n of them) is likely to do so in this one: take up
 * to prev_n - 1 tokens (at most the rule's lease_max) from the shared
 * bucket at once, with one CAS, and spend them from this CPU's slot without
 * touching the bucket again. Leased tokens left at the end of the jiffy are
 * lost, which can only admit less, never more, and by at most the change
 * in demand from one jiffy to the next. Sources that send a few packets a
 * jiffy never lease: their every admit asks the shared bucket.
 */
static __always_inline void xrl_lease(struct xrl_global_ctr *gc, struct xrl_refused *rv,
				      const struct xrl_scratch *s, const struct xrl_rule *r,
				      __u32 slot, __u64 *tat, __u64 now, __u64 j)
{
	__u64 old, nt, want;

	if (!rv)
		return;
	if (!xrl_sig_eq(rv, s->sig))
		xrl_sig_take(rv, s->sig, j);
	if (rv->seen_j != j) {
		rv->prev_n = rv->seen_j + 1 == j ? rv->seen_n : 0;
		rv->seen_j = j;
		rv->seen_n = 0;
		rv->lease = 0;
	}
	rv->seen_n++;
	rv->key = s->key;
	rv->rule_slot = slot;
	rv->ctr_idx = xrl_ctr_idx(s->ruleset, slot);
	if (!xrl_lease_on || !tat || rv->lease || rv->prev_n < 2 || !r->lease_max)
		return;
	want = rv->prev_n - 1;
	if (want > r->lease_max)
		want = r->lease_max;
	old = *(volatile __u64 *)tat;
	if (xrl_gcra_decide(old, now, want * r->emit_ns, r->tau_ns, &nt) &&
	    __sync_val_compare_and_swap(tat, old, nt) == old)
		rv->lease = (__u32)want;
}

/* Fill s->matched with the slots of the rules that match, in order, and
 * s->cookie if one of them has SYN cookies on. A subprogram: the verifier
 * walks the 64-rule loop once. */
__noinline int xrl_classify(struct xrl_scratch *s)
{
	struct xrl_ruleset *rs;
	__u32 n = 0;

	if (!s)
		return 0;
	rs = bpf_map_lookup_elem(&xrl_rulesets, &s->ruleset);
	if (!rs)
		return 0;
	for (__u32 i = 0; i < XRL_MAX_RULES; i++) {
		if (i >= rs->n_rules || n >= XRL_MAX_MATCH)
			break;
		if (xrl_rule_match(&rs->rules[i], &s->pkt)) {
			s->matched[n++] = i;
			s->cookie |= rs->rules[i].syn_cookies & XRL_COOKIES_LIVE;
			if (xrl_is_syn(&s->pkt))
				xrl_count_rule_syn(s->ruleset, i, XRL_V_MAX, 0, 1);
			s->agg |= rs->rules[i].agg_emit_ns != 0;
		}
	}
	s->n_match = n;
	return n;
}

/* Give back one token taken for key k (a later rule refused the packet). */
static __always_inline void xrl_refund(const struct xrl_bucket_key *k, __u64 inc)
{
	__u64 *tat = bpf_map_lookup_elem(&xrl_buckets, k);

	if (tat)
		__sync_fetch_and_add(tat, -inc);
}

/*
 * Could an enforcing rule of the active ruleset cover this packet, whose
 * protocol and port the parser never reached? With addresses (an IPv6
 * chain too long), a drop rule whose destination matches; without (VLAN
 * tags too deep), any drop rule. A subprogram, like xrl_classify; only the
 * unwalkable path calls it.
 */
__noinline int xrl_covered(struct xrl_scratch *s)
{
	struct xrl_ruleset *rs;

	if (!s)
		return 0;
	rs = bpf_map_lookup_elem(&xrl_rulesets, &s->ruleset);
	if (!rs)
		return 0;
	for (__u32 i = 0; i < XRL_MAX_RULES; i++) {
		struct xrl_rule *r = &rs->rules[i];

		if (i >= rs->n_rules)
			break;
		if (r->action != XRL_ACT_DROP)
			continue;
		if (!s->pkt.family || !r->dst_family)
			return 1;
		if (r->dst_family != s->pkt.family ||
		    (s->pkt.dst[0] & r->dst_mask[0]) != r->dst[0])
			continue;
		if (s->pkt.family == XRL_AF_INET ||
		    ((s->pkt.dst[1] & r->dst_mask[1]) == r->dst[1] &&
		     (s->pkt.dst[2] & r->dst_mask[2]) == r->dst[2] &&
		     (s->pkt.dst[3] & r->dst_mask[3]) == r->dst[3]))
			return 1;
	}
	return 0;
}

/* The allowlist, then the denylist: XDP_PASS, XDP_DROP, or -1 (neither). */
static __always_inline int xrl_listed(struct xrl_global_ctr *gc, const struct xrl_config *cfg,
				      const struct xrl_pkt *p)
{
	if (xrl_allowlisted(cfg, p)) {
		gc->c[XRL_G_ALLOWLISTED]++;
		return XDP_PASS;
	}
	if (xrl_denied(gc, cfg, p)) {
		gc->c[XRL_G_DENYLISTED]++;
		return XDP_DROP;
	}
	return -1;
}

/*
 * A packet the parser could not classify. It still meets the allowlist and
 * the denylist whenever its source is known, so that no framing is a way
 * around them (an allowlisted source's tiny fragment passes). Then: a tiny
 * first fragment (its L4 header or its IPv6 header chain cut) is dropped; framing deeper than
 * the parser walks is dropped when an enforcing rule could cover it (the
 * kernel would deliver it, and no rule could be asked); anything else
 * passes, counted, because the kernel drops it or no rule could match it
 * (docs/design.md, "What the parser walks").
 */
static __always_inline int xrl_unclassified(struct xrl_global_ctr *gc, struct xrl_scratch *s,
					    int res)
{
	struct xrl_config *cfg;
	__u32 zero = 0;
	int v;

	cfg = bpf_map_lookup_elem(&xrl_config, &zero);
	if (cfg && s->pkt.family && (v = xrl_listed(gc, cfg, &s->pkt)) >= 0)
		return v;
	if (res == XRL_P_TINY_FRAG) {
		gc->c[XRL_G_TINY_FRAGMENT]++;
		return XDP_DROP;
	}
	if (res == XRL_P_UNWALKABLE) {
		if (cfg) {
			s->ruleset = cfg->active_ruleset;
			if (xrl_covered(s)) {
				gc->c[XRL_G_UNWALKABLE_DROPPED]++;
				return XDP_DROP;
			}
		}
		gc->c[XRL_G_UNWALKABLE_PASSED]++;
		return XDP_PASS;
	}
	gc->c[res == XRL_P_NON_IP ? XRL_G_NON_IP : XRL_G_MALFORMED]++;
	return XDP_PASS;
}


/*
 * Should this SYN for a cookie rule go to the kernel instead, as the
 * primer that keeps the listener accepting cookies (xrl_abi.h,
 * XRL_COOKIE_PRIME_S)? One per port and family per interval, whichever CPU
 * sees it first; a race between CPUs sends two.
 */
static __always_inline int xrl_cookie_primer(struct xdp_md *ctx, const struct xrl_pkt *p,
					     struct xrl_cookie_buf *b, const struct xrl_cookie_cfg *cc,
					     __u64 j)
{
	__u32 k = p->dport | (p->family == XRL_AF_INET6 ? 0x10000 : 0);
	__u64 *slot = bpf_map_lookup_elem(&xrl_cookie_prime, &k);
	__u32 now = (__u32)j ? (__u32)j : 1;   /* 0 is "never" */
	__u32 last;

	if (!slot)
		return 0;
	last = (__u32)*slot;
	if (last && (__u32)(*slot >> 32) == cc->prime_gen &&
	    now - last < XRL_COOKIE_PRIME_S * XRL_NSEC_PER_SEC / xrl_tick_ns)
		return 0;
	if (!xrl_syn_csum_ok(ctx, p, b))
		return 0; /* answered with a cookie; the slot waits for a good one */
	*slot = (__u64)cc->prime_gen << 32 | now;
	return 1;
}

/*
 * The SYN-cookie step, for a packet a cookie rule matched. Returns an XDP
 * verdict, or -1 to go on to the buckets: an ACK whose cookie checked out
 * (s->cookie_ack: the source exists, so now it is limited). A SYN never
 * meets a bucket here: one the program cannot answer (a 4-tuple with a
 * time-wait socket, a helper failure) goes to the kernel, which answers it
 * with the listener's own defences; nothing of it is stored.
 */
static __always_inline int xrl_cookie_step(struct xdp_md *ctx, struct xrl_global_ctr *gc,
					   struct xrl_scratch *s, __u64 j)
{
	__u8 f = s->pkt.tcp_flags & (XRL_TCP_FLAG_SYN | XRL_TCP_FLAG_ACK | XRL_TCP_FLAG_RST);
	struct xrl_cookie_cfg *cc;
	__u32 zero = 0;
	__u64 slot = (j * xrl_tick_ns) >> XRL_CK_SLOT_SHIFT;
	int r;

	cc = bpf_map_lookup_elem(&xrl_cookie, &zero);
	if (!cc)
		return XDP_PASS;
	if (f == XRL_TCP_FLAG_SYN) {
		if (!cc->own && xrl_cookie_primer(ctx, &s->pkt, &s->cb, cc, j)) {
			gc->c[XRL_G_COOKIE_PRIMERS]++;
			return XDP_PASS;
		}
		r = xrl_cookie_syn(ctx, &s->pkt, &s->cb, cc, slot);
		if (r == XDP_TX) {
			gc->c[XRL_G_COOKIES_SENT]++;
			return XDP_TX;
		}
		gc->c[XRL_G_COOKIE_FALLBACK]++;
		return XDP_PASS;
	}
	r = xrl_cookie_ack(ctx, &s->pkt, &s->cb, cc, slot);
	if (r == XRL_CK_ESTABLISHED)
		return XDP_PASS;
	if (r == XRL_CK_BAD) {
		gc->c[XRL_G_COOKIES_BAD]++;
		return XDP_DROP;
	}
	gc->c[XRL_G_COOKIES_VALID]++;
	if (s->cb.no_meta)
		gc->c[XRL_G_COOKIE_NO_META]++;
	s->cookie_ack = 1;
	return -1;
}

/*
 * Every matching rule must admit. The first refusing rule with action
 * drop decides (s->refused, s->refuse_slot); tokens already taken from
 * earlier rules are noted in s->admitted, to be given back. A shadow
 * rule's refusal is counted and the packet goes on (s->shadowed).
 */
static __always_inline void xrl_ask(struct xrl_global_ctr *gc, struct xrl_scratch *s,
				    struct xrl_ruleset *rs, __u64 j, __u64 bytes, __u64 **tat)
{
	for (__u32 m = 0; m < XRL_MAX_MATCH; m++) {
		struct xrl_rule *r;
		__u32 slot;

		if (m >= s->n_match)
			break;
		slot = s->matched[m];
		if (slot >= XRL_MAX_RULES)
			break;
		r = &rs->rules[slot];
		xrl_make_key(&s->key, r, &s->pkt);
		s->now = xrl_now(r, j, &s->fine);
		if (xrl_take(&s->key, r, s->now, gc, &s->conform, tat) == XRL_TAKE_ADMIT) {
			__u32 n = s->n_admitted;

			if (n < XRL_MAX_MATCH) {
				s->admitted[n] = s->key;
				s->admitted_inc[n] = r->emit_ns;
				s->n_admitted = n + 1;
			}
			continue;
		}
		if (r->action == XRL_ACT_SHADOW) {
			xrl_count_rule(s->ruleset, slot, XRL_V_SHADOW_DROPPED, bytes);
			s->matched[m] = XRL_MAX_RULES; /* not counted as passed */
			if (!s->shadowed) {
				s->shadowed = 1;
				s->shadow_slot = slot;
			}
			continue;
		}
		s->refused = 1;
		s->refuse_slot = slot;
		break;
	}
}

/*
 * The aggregate caps of the rules whose buckets admitted the packet (see
 * xrl_vouch.h): a vouched source draws on a cap's reserved share first,
 * then on its open share. Returns 1 when a drop rule's cap refuses
 * (s->refuse_slot; the caps already charged are given back), else 0. A
 * shadow rule's cap only counts its refusals. A global function.
 */
__noinline int xrl_aggregate(struct xrl_scratch *s, struct xrl_global_ctr *gc, __u64 bytes)
{
	__u32 t_idx[XRL_MAX_MATCH];
	__u64 t_inc[XRL_MAX_MATCH];
	struct xrl_ruleset *rs;
	__u32 n = 0;
	int vouched = -1;

	if (!s || !gc)
		return 0;
	rs = bpf_map_lookup_elem(&xrl_rulesets, &s->ruleset);
	if (!rs)
		return 0;
	for (__u32 m = 0; m < XRL_MAX_MATCH; m++) {
		struct xrl_rule *r;
		__u32 slot, idx;

		if (m >= s->n_match)
			break;
		slot = s->matched[m];
		if (slot >= XRL_MAX_RULES)
			continue;
		r = &rs->rules[slot];
		if (!r->agg_emit_ns)
			continue;
		if (vouched < 0)
			vouched = xrl_vouched(&s->pkt);
		if (!s->fine)
			s->fine = bpf_ktime_get_ns();
		idx = ((s->ruleset & 1) * XRL_MAX_RULES + slot) * 2;
		if (vouched && r->agg_vemit_ns &&
		    xrl_agg_take(idx + 1, s->fine, r->agg_vemit_ns, r->agg_vtau_ns, gc)) {
			t_idx[n] = idx + 1;
			t_inc[n++] = r->agg_vemit_ns;
			continue;
		}
		if (xrl_agg_take(idx, s->fine, r->agg_emit_ns, r->agg_tau_ns, gc)) {
			t_idx[n] = idx;
			t_inc[n++] = r->agg_emit_ns;
			continue;
		}
		if (r->action == XRL_ACT_SHADOW) {
			xrl_count_rule(s->ruleset, slot, XRL_V_SHADOW_DROPPED, bytes);
			s->matched[m] = XRL_MAX_RULES; /* not counted as passed */
			continue;
		}
		for (__u32 k = 0; k < XRL_MAX_MATCH; k++) {
			if (k >= n)
				break;
			xrl_agg_refund(t_idx[k], t_inc[k]);
		}
		gc->c[XRL_G_AGG_REFUSED]++;
		s->refuse_slot = slot;
		return 1;
	}
	if (n && vouched > 0)
		gc->c[XRL_G_VOUCHED_ADMITS]++;
	return 0;
}

/* A drop rule refused: give back the tokens taken, count, remember. */
static __always_inline int xrl_refuse(struct xrl_global_ctr *gc, const struct xrl_config *cfg,
				      struct xrl_scratch *s, struct xrl_refused *rv,
				      struct xdp_md *ctx, __u64 j, __u64 bytes)
{
	__u64 until = 0;

	for (__u32 k = 0; k < XRL_MAX_MATCH; k++) {
		if (k >= s->n_admitted)
			break;
		xrl_refund(&s->admitted[k], s->admitted_inc[k]);
	}
	xrl_count_rule(s->ruleset, s->refuse_slot, XRL_V_DROPPED, bytes);
	/*
	 * Remember it on this CPU until the bucket has a token again
	 * (rounded down to a jiffy: early, never late). Not when a shadow
	 * rule matched too: its would-be refusals must stay counted, so
	 * those packets keep taking the slow path. Not for a cookie ACK
	 * either: the cache is asked before the socket table, and the
	 * source's established connections share its signature.
	 */
	if (!s->shadowed && !s->cookie_ack)
		until = j + (s->conform > s->now ? (s->conform - s->now) / xrl_tick_ns : 0);
	xrl_remember(gc, cfg, rv, s, s->refuse_slot, XRL_ACT_DROP, until, j, ctx);
	return XDP_DROP;
}

/* Classify, the cookie step, the buckets, and the verdict's counters. */
static __always_inline int xrl_decide(struct xdp_md *ctx, struct xrl_global_ctr *gc,
				      const struct xrl_config *cfg, struct xrl_scratch *s,
				      struct xrl_refused *rv, __u64 j, __u64 bytes)
{
	struct xrl_ruleset *rs;
	__u64 *tat = NULL;
	int v;

	s->ruleset = cfg->active_ruleset;
	rs = bpf_map_lookup_elem(&xrl_rulesets, &s->ruleset);
	if (!rs || !rs->n_rules) {
		gc->c[XRL_G_NO_POLICY]++;
		return XDP_PASS;
	}
	if (!xrl_classify(s)) {
		gc->c[XRL_G_NO_RULE]++;
		return XDP_PASS;
	}
	if (s->cookie) {
		v = xrl_cookie_step(ctx, gc, s, j);
		if (v >= 0)
			return v;
	}
	xrl_ask(gc, s, rs, j, bytes, &tat);
	if (s->refused)
		return xrl_refuse(gc, cfg, s, rv, ctx, j, bytes);
	if (s->agg && xrl_aggregate(s, gc, bytes)) {
		/* the rule as a whole is full, not this source: its tokens go
		 * back, and nothing is remembered or sampled (no strike) */
		for (__u32 k = 0; k < XRL_MAX_MATCH; k++) {
			if (k >= s->n_admitted)
				break;
			xrl_refund(&s->admitted[k], s->admitted_inc[k]);
		}
		xrl_count_rule(s->ruleset, s->refuse_slot, XRL_V_DROPPED, bytes);
		return XDP_DROP;
	}
	if (s->shadowed) {
		/* sampled like a refusal, never answered from the cache */
		if (s->shadow_slot < XRL_MAX_RULES)
			xrl_make_key(&s->key, &rs->rules[s->shadow_slot], &s->pkt);
		xrl_remember(gc, cfg, rv, s, s->shadow_slot, XRL_ACT_SHADOW, 0, j, ctx);
	}
	for (__u32 k = 0; k < XRL_MAX_MATCH; k++) {
		if (k >= s->n_match)
			break;
		if (s->matched[k] < XRL_MAX_RULES)
			xrl_count_rule(s->ruleset, s->matched[k], XRL_V_PASSED, bytes);
	}
	if (s->cookie_ack)
		xrl_vouch_admit(&s->pkt);
	/* no lease for cookie ACKs (a lease answers before the cookie check),
	 * nor under an aggregate cap (it answers before the cap) */
	if (s->n_match == 1 && s->n_admitted == 1 && !s->shadowed && !s->cookie_ack && !s->agg &&
	    s->matched[0] < XRL_MAX_RULES)
		xrl_lease(gc, rv, s, &rs->rules[s->matched[0]], s->matched[0], tat, s->now, j);
	return XDP_PASS;
}

/*
 * xrl_allowlisted6 for the front door, as a subprogram: the unrolled
 * compares of the small list need more registers than the front door has
 * free, and inlined they spill its own values to the stack.
 */
static __noinline int xrl_front_allowlisted6(const struct xrl_config *cfg, const __u32 *src)
{
	return xrl_allowlisted6(cfg, src);
}

/*
 * The front door: the refusal cache and the lease, asked before anything
 * else for the packets a flood is made of (untagged Ethernet, IPv4 without
 * options and not a later fragment, or IPv6 whose next header is TCP; a
 * whole TCP header), parsed in registers. Only packets that xrl_parse
 * takes whole, with the same fields, are answered here, so the signature
 * is the one the slow path computes and the verdict is the one it would
 * give: a refused signature is dropped and counted as there, and the
 * packet whose refusal is due a sample is left to the slow path, which
 * sends it. -1: not answered here (no side effect yet).
 */
static __always_inline int xrl_front_answer(struct xrl_global_ctr *gc,
					    const struct xrl_config *cfg, __u64 bytes, __u64 w0,
					    __u64 w2, __u64 w3, __u64 w4, int v6,
					    const __u32 *src6, const struct tcphdr *th)
{
	struct xrl_refused *rv;
	__u8 flags = ((__u8 *)th)[13];
	__u64 w1, j;
	__u32 idx;

	w1 = xrl_sig_meta(bpf_ntohs(th->dest), XRL_IPPROTO_TCP, flags, v6, 1, cfg->epoch);
	idx = v6 ? xrl_sig_slot(w0, w1, w2, w3, w4) : xrl_sig_slot(w0, w1, 0, 0, 0);
	rv = bpf_map_lookup_elem(&xrl_refused, &idx);
	if (!rv || !xrl_sig_eq_w(rv, w0, w1, w2, w3, w4)) /* IPv4: two words */
		goto listed;
	j = bpf_jiffies64();
	if (j < rv->until_j) {
		/* as xrl_sample: a sample is due unless one was sent within
		 * the interval */
		if (!rv->last_event_j || j - rv->last_event_j >= cfg->event_interval_j)
			return -1;
		rv->suppressed++;
		gc->c[XRL_G_REFUSED_CACHED]++;
		xrl_count_ctr(rv->ctr_idx, XRL_V_DROPPED, bytes, (w1 & XRL_SIG_SYN) != 0);
		return XDP_DROP;
	}
	/* the admit path's shortcut: a token this CPU leased in this jiffy */
	if (rv->lease && rv->seen_j == j) {
		rv->lease--;
		rv->seen_n++;
		gc->c[XRL_G_LEASED]++;
		xrl_count_ctr(rv->ctr_idx, XRL_V_PASSED, bytes, 0);
		return XDP_PASS;
	}
listed:
	/* no refusal is cached for an allowlisted source (the epoch) */
	if (v6 ? xrl_front_allowlisted6(cfg, src6) : xrl_allowlisted4(cfg, (__u32)w0)) {
		gc->c[XRL_G_ALLOWLISTED]++;
		return XDP_PASS;
	}
	return -1;
}

static __always_inline int xrl_front(struct xrl_global_ctr *gc, const struct xrl_config *cfg,
				     void *data, void *end, __u64 bytes)
{
	struct ethhdr *eth = data;
	struct tcphdr *th;
	__u32 lim;

	if ((void *)(eth + 1) > end)
		return -1;
	if (eth->h_proto == bpf_htons(XRL_ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		/* version 4 and IHL 5 are one byte */
		if ((void *)(ip + 1) > end || *(__u8 *)ip != 0x45 ||
		    ip->protocol != XRL_IPPROTO_TCP || (ip->frag_off & bpf_htons(0x1fff)))
			return -1;
		lim = sizeof(*eth) + bpf_ntohs(ip->tot_len);
		th = (void *)(ip + 1);
		if (lim < sizeof(*eth) + sizeof(*ip) || lim > bytes || (void *)(th + 1) > end ||
		    th->doff < 5 || sizeof(*eth) + sizeof(*ip) + th->doff * 4 > lim)
			return -1;
		/* saddr | daddr << 32 is the little-endian word at saddr (the
		 * 8-byte loads here and below need not be aligned: packet
		 * loads are not checked for alignment where unaligned access
		 * is cheap, and the JIT does them as they are) */
		return xrl_front_answer(gc, cfg, bytes, *(__u64 *)&ip->saddr, 0, 0, 0, 0, NULL,
					th);
	}
	if (eth->h_proto == bpf_htons(XRL_ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		const __u64 *sa, *da;

		if ((void *)(ip6 + 1) > end || ip6->version != 6 ||
		    ip6->nexthdr != XRL_IPPROTO_TCP)
			return -1;
		lim = sizeof(*eth) + sizeof(*ip6) + bpf_ntohs(ip6->payload_len);
		th = (void *)(ip6 + 1);
		if (lim > bytes || (void *)(th + 1) > end || th->doff < 5 ||
		    sizeof(*eth) + sizeof(*ip6) + th->doff * 4 > lim)
			return -1;
		sa = (const __u64 *)&ip6->saddr;
		da = (const __u64 *)&ip6->daddr;
		return xrl_front_answer(gc, cfg, bytes, sa[0], sa[1], da[0], da[1], 1,
					(const __u32 *)sa, th);
	}
	return -1;
}

/*
 * Everything the front door did not answer. A subprogram of its own, so
 * that its register pressure (scratch, rules, buckets) does not spill the
 * front door's few live values to the stack.
 */
static __noinline int xrl_slow(struct xdp_md *ctx, struct xrl_global_ctr *gc,
			       struct xrl_config *cfg)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 bytes = data_end - data, j;
	struct xrl_scratch *s;
	struct xrl_refused *rv;
	__u32 zero = 0, idx;
	int res, v;

	s = bpf_map_lookup_elem(&xrl_scratch, &zero);
	if (!s)
		return XDP_PASS;
	__builtin_memset(&s->pkt, 0, sizeof(s->pkt));
	s->n_admitted = 0;
	s->refused = 0;
	s->shadowed = 0;
	s->cookie = 0;
	s->cookie_ack = 0;
	s->agg = 0;
	s->fine = 0;
	s->now = 0;
	s->conform = 0;

	res = xrl_parse(ctx, data, data_end, &s->pkt);
	if (res != XRL_P_OK && res != XRL_P_FRAGMENT)
		return xrl_unclassified(gc, s, res);

	/*
	 * The refusal path, first: packets like this one (same signature, same
	 * policy epoch) were refused until jiffy until_j. Cost: a multiply-hash,
	 * an inlined per-CPU array lookup and a compare; no helper, no shared
	 * memory. The epoch changes with every rule or list change, so an
	 * allowlisted or re-policied source is never refused from here.
	 */
	j = bpf_jiffies64();
	idx = xrl_signature(s, cfg->epoch);
	rv = bpf_map_lookup_elem(&xrl_refused, &idx);
	if (rv && j < rv->until_j && xrl_sig_eq(rv, s->sig)) {
		gc->c[XRL_G_REFUSED_CACHED]++;
		xrl_count_ctr(rv->ctr_idx, XRL_V_DROPPED, bytes, xrl_is_syn(&s->pkt));
		xrl_sample(gc, cfg, rv, j, XRL_ACT_DROP, ctx, &s->pkt, 0);
		return XDP_DROP;
	}
	/* the admit path's shortcut: a token this CPU leased in this jiffy */
	if (rv && rv->lease && rv->seen_j == j && xrl_sig_eq(rv, s->sig)) {
		rv->lease--;
		rv->seen_n++;
		gc->c[XRL_G_LEASED]++;
		xrl_count_ctr(rv->ctr_idx, XRL_V_PASSED, bytes, 0);
		return XDP_PASS;
	}

	/* fragments have addresses: the lists apply to them too */
	if ((v = xrl_listed(gc, cfg, &s->pkt)) >= 0)
		return v;
	if (res == XRL_P_FRAGMENT) {
		/* No ports, no flags: no rule can classify it. Passed; the
		 * stack reassembles it only with its first fragment, which
		 * the rules did see (a first fragment too short to show its
		 * header was dropped above). */
		gc->c[XRL_G_FRAGMENTS]++;
		return XDP_PASS;
	}
	return xrl_decide(ctx, gc, cfg, s, rv, j, bytes);
}

SEC("xdp")
int xrl_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct xrl_global_ctr *gc;
	struct xrl_config *cfg;
	__u32 zero = 0;
	int v;

	gc = bpf_map_lookup_elem(&xrl_global_stats, &zero);
	cfg = bpf_map_lookup_elem(&xrl_config, &zero);
	if (!gc || !cfg)
		return XDP_PASS;
	gc->c[XRL_G_SEEN]++;
	v = xrl_front(gc, cfg, data, data_end, data_end - data);
	if (v >= 0)
		return v;
	return xrl_slow(ctx, gc, cfg);
}

/* The TC half of xrl's own SYN cookies (uses the clock knobs above). */
#include "xrl_tc.h"
