// SPDX-License-Identifier: GPL-2.0-only
/*
 * xrl.bpf.c - the packet tier: per-source token buckets at the NIC.
 *
 * parse -> allowlist -> denylist -> classify (every matching rule, in order)
 * -> key -> bucket -> verdict, with one exit that records the counters.
 *
 * Never refuse by accident: anything the parser does not understand, a
 * missing policy, a bucket that cannot be created, a lost CAS race all pass
 * and are counted. The only drops are a denylist hit, a bucket refusal and
 * a first fragment too short to show its L4 header (see xrl_parse_l4).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xrl_abi.h"
#include "xrl_gcra.h"
#include "xrl_maps.h"
#include "xrl_parse.h"
#include "xrl_limit.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * Clock. bpf_ktime_get_coarse_ns is CLOCK_MONOTONIC_COARSE: one tick of
 * resolution (docs/design.md measures it) for a fraction of the cost of
 * bpf_ktime_get_ns. GCRA only needs the long-run sum to be right, and a
 * coarse clock shifts admissions within a tick, never adds any. Set to 0 at
 * load time for the fine clock.
 */
const volatile __u8 xrl_coarse_clock = 1;

/* Rules a packet is checked against at most; later matches are ignored. */
#define XRL_MAX_MATCH 4

struct xrl_ctx {
	struct xrl_global_ctr *gc;
	__u64 now;             /* 0 until read: at most one read per packet */
};

static __always_inline __u64 xrl_now(struct xrl_ctx *x)
{
	if (!x->now)
		x->now = xrl_coarse_clock ? bpf_ktime_get_coarse_ns()
					  : bpf_ktime_get_ns();
	return x->now;
}

static __always_inline int xrl_allowlisted(const struct xrl_config *cfg,
					   const struct xrl_pkt *p)
{
	if (p->family == XRL_AF_INET) {
		struct xrl_lpm_v4 k = { .prefixlen = 32, .addr = p->src[0] };

		return cfg->allow_v4_n && bpf_map_lookup_elem(&xrl_allow_v4, &k);
	} else {
		struct xrl_lpm_v6 k = { .prefixlen = 128 };

		if (!cfg->allow_v6_n)
			return 0;
		__builtin_memcpy(k.addr, p->src, 16);
		return bpf_map_lookup_elem(&xrl_allow_v6, &k) != NULL;
	}
}

/* Returns 1 if the source is denied now; counts expired hits. */
static __always_inline int xrl_denied(struct xrl_ctx *x,
				      const struct xrl_config *cfg,
				      const struct xrl_pkt *p)
{
	struct xrl_deny_val *v;

	if (p->family == XRL_AF_INET) {
		struct xrl_lpm_v4 k = { .prefixlen = 32, .addr = p->src[0] };

		if (!cfg->deny_v4_n)
			return 0;
		v = bpf_map_lookup_elem(&xrl_deny_v4, &k);
	} else {
		struct xrl_lpm_v6 k = { .prefixlen = 128 };

		if (!cfg->deny_v6_n)
			return 0;
		__builtin_memcpy(k.addr, p->src, 16);
		v = bpf_map_lookup_elem(&xrl_deny_v6, &k);
	}
	if (!v)
		return 0;
	if (v->expires_ns && xrl_now(x) >= v->expires_ns) {
		/* the daemon removes it later; until then it is inert */
		x->gc->c[XRL_G_DENY_EXPIRED]++;
		return 0;
	}
	return 1;
}

/*
 * A refusal: remember it on this CPU and, at most once per interval per
 * source per CPU, sample it into the ring buffer with the number of
 * refusals it stands for. Cost on the hot path: the compare below.
 */
static __always_inline void xrl_note_refusal(struct xrl_ctx *x,
					     const struct xrl_config *cfg,
					     struct xrl_refused *rv,
					     const struct xrl_bucket_key *k,
					     const struct xrl_rule *r, __u32 slot)
{
	struct xrl_event *e;

	rv->suppressed++;
	if (x->now - rv->last_event_ns < cfg->event_interval_ns)
		return;
	e = bpf_ringbuf_reserve(&xrl_events, sizeof(*e), 0);
	if (!e) {
		x->gc->c[XRL_G_EVENTS_LOST]++;
		return;
	}
	e->ts_ns = x->now;
	e->rule_id = r->id;
	e->count = rv->suppressed;
	e->family = k->family;
	e->plen = k->plen;
	e->action = r->action;
	e->pad = 0;
	e->rule_slot = slot;
	__builtin_memcpy(e->addr, k->addr, 16);
	bpf_ringbuf_submit(e, 0);
	x->gc->c[XRL_G_EVENTS_SENT]++;
	rv->last_event_ns = x->now;
	rv->suppressed = 0;
}

static __always_inline void xrl_count_rule(__u32 ruleset, __u32 slot, int verdict,
					   __u64 bytes)
{
	__u32 idx = (ruleset & 1) * XRL_MAX_RULES + slot;
	struct xrl_rule_ctr *rc = bpf_map_lookup_elem(&xrl_rule_stats, &idx);

	if (!rc || verdict < 0 || verdict >= XRL_V_MAX)
		return;
	rc->pkts[verdict]++;
	rc->bytes[verdict] += bytes;
}

/* Per-packet scratch on the program's stack, shared with the subprograms. */
struct xrl_scratch {
	struct xrl_pkt pkt;
	struct xrl_bucket_key key;   /* of the rule being checked */
	__u64 now;
	__u64 bytes;
	__u32 ruleset;               /* slot of xrl_rulesets in force */
	__u32 slot;                  /* rule being checked */
	__u32 n_match;
	__u32 matched[XRL_MAX_MATCH];
	__u32 pad;
};

/* Fill s->matched with the slots of the rules that match, in order. */
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
		if (xrl_rule_match(&rs->rules[i], &s->pkt))
			s->matched[n++] = i;
	}
	s->n_match = n;
	return n;
}

enum xrl_step_res {
	XRL_STEP_ADMIT = 0,
	XRL_STEP_DROP,
	XRL_STEP_SHADOW,
	XRL_STEP_SKIP,
};

/*
 * Ask rule s->slot's bucket for s->pkt. The refusal path is the first branch:
 * one per-CPU hash lookup and a compare. Returns an xrl_step_res and leaves
 * the bucket key in s->key (for a refund).
 */
__noinline int xrl_rule_step(struct xrl_scratch *s)
{
	struct xrl_refused *rv, nrv = {};
	struct xrl_global_ctr *gc;
	struct xrl_config *cfg;
	struct xrl_ruleset *rs;
	struct xrl_rule *r;
	__u32 zero = 0, slot;
	__u64 conform;
	struct xrl_ctx x;

	if (!s)
		return XRL_STEP_SKIP;
	gc = bpf_map_lookup_elem(&xrl_global_stats, &zero);
	cfg = bpf_map_lookup_elem(&xrl_config, &zero);
	rs = bpf_map_lookup_elem(&xrl_rulesets, &s->ruleset);
	slot = s->slot;
	if (!gc || !cfg || !rs || slot >= XRL_MAX_RULES)
		return XRL_STEP_SKIP;
	r = &rs->rules[slot];
	x.gc = gc;
	x.now = s->now;
	xrl_make_key(&s->key, r, &s->pkt);

	rv = bpf_map_lookup_elem(&xrl_refused, &s->key);
	if (rv && x.now < rv->until_ns) {
		gc->c[XRL_G_REFUSED_CACHED]++;
	} else if (xrl_take(&s->key, r, x.now, gc, &conform) == XRL_TAKE_ADMIT) {
		return XRL_STEP_ADMIT;
	} else if (rv) {
		rv->until_ns = conform;
	} else {
		nrv.until_ns = conform;
		bpf_map_update_elem(&xrl_refused, &s->key, &nrv, BPF_ANY);
		rv = bpf_map_lookup_elem(&xrl_refused, &s->key);
	}
	if (rv)
		xrl_note_refusal(&x, cfg, rv, &s->key, r, slot);
	return r->action == XRL_ACT_SHADOW ? XRL_STEP_SHADOW : XRL_STEP_DROP;
}

/* Give back one token taken for key k (a later rule refused the packet). */
__noinline int xrl_refund(const struct xrl_bucket_key *k, __u64 inc)
{
	__u64 *tat;

	if (!k)
		return 0;
	tat = bpf_map_lookup_elem(&xrl_buckets, k);
	if (tat)
		__sync_fetch_and_add(tat, -inc);
	return 0;
}

SEC("xdp")
int xrl_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct xrl_bucket_key admitted[XRL_MAX_MATCH];
	__u64 admitted_inc[XRL_MAX_MATCH];
	struct xrl_scratch s = {};
	struct xrl_ctx x = {};
	struct xrl_config *cfg;
	struct xrl_ruleset *rs;
	__u32 zero = 0, n_admitted = 0, refuse_slot = 0;
	int refused = 0, res;

	x.gc = bpf_map_lookup_elem(&xrl_global_stats, &zero);
	if (!x.gc)
		return XDP_PASS;
	x.gc->c[XRL_G_SEEN]++;
	s.bytes = data_end - data;

	res = xrl_parse(data, data_end, &s.pkt);
	if (res == XRL_P_NON_IP) {
		x.gc->c[XRL_G_NON_IP]++;
		return XDP_PASS;
	}
	if (res == XRL_P_MALFORMED) {
		x.gc->c[XRL_G_MALFORMED]++;
		return XDP_PASS;
	}
	if (res == XRL_P_TINY_FRAG) {
		x.gc->c[XRL_G_TINY_FRAGMENT]++;
		return XDP_DROP;
	}

	/* fragments have addresses: the lists apply to them too */
	cfg = bpf_map_lookup_elem(&xrl_config, &zero);
	if (!cfg)
		return XDP_PASS;
	if (xrl_allowlisted(cfg, &s.pkt)) {
		x.gc->c[XRL_G_ALLOWLISTED]++;
		return XDP_PASS;
	}
	if (xrl_denied(&x, cfg, &s.pkt)) {
		x.gc->c[XRL_G_DENYLISTED]++;
		return XDP_DROP;
	}
	if (res == XRL_P_FRAGMENT) {
		/* No ports, no flags: no rule can classify it. Passed; the
		 * stack reassembles it only with its first fragment, which
		 * the rules did see (a first fragment too short to show its
		 * header was dropped above). */
		x.gc->c[XRL_G_FRAGMENTS]++;
		return XDP_PASS;
	}

	s.ruleset = cfg->active_ruleset;
	rs = bpf_map_lookup_elem(&xrl_rulesets, &s.ruleset);
	if (!rs || !rs->n_rules) {
		x.gc->c[XRL_G_NO_POLICY]++;
		return XDP_PASS;
	}
	if (!xrl_classify(&s)) {
		x.gc->c[XRL_G_NO_RULE]++;
		return XDP_PASS;
	}
	s.now = xrl_now(&x);

	/*
	 * Every matching rule must admit. The first refusing rule with action
	 * drop decides; tokens already taken from earlier rules are given
	 * back, so a refusal by one rule does not spend another's budget.
	 */
	for (__u32 m = 0; m < XRL_MAX_MATCH; m++) {
		__u32 slot;

		if (m >= s.n_match)
			break;
		slot = s.matched[m];
		if (slot >= XRL_MAX_RULES)
			break;
		s.slot = slot;
		res = xrl_rule_step(&s);
		if (res == XRL_STEP_ADMIT) {
			if (n_admitted < XRL_MAX_MATCH) {
				admitted[n_admitted] = s.key;
				admitted_inc[n_admitted] = rs->rules[slot].emit_ns;
				n_admitted++;
			}
		} else if (res == XRL_STEP_SHADOW) {
			xrl_count_rule(s.ruleset, slot, XRL_V_SHADOW_DROPPED, s.bytes);
			s.matched[m] = XRL_MAX_RULES; /* not counted as passed */
		} else if (res == XRL_STEP_DROP) {
			refused = 1;
			refuse_slot = slot;
			break;
		}
	}

	if (refused) {
		for (__u32 j = 0; j < XRL_MAX_MATCH; j++) {
			if (j >= n_admitted)
				break;
			xrl_refund(&admitted[j], admitted_inc[j]);
		}
		xrl_count_rule(s.ruleset, refuse_slot, XRL_V_DROPPED, s.bytes);
		return XDP_DROP;
	}
	for (__u32 j = 0; j < XRL_MAX_MATCH; j++) {
		if (j >= s.n_match)
			break;
		if (s.matched[j] < XRL_MAX_RULES)
			xrl_count_rule(s.ruleset, s.matched[j], XRL_V_PASSED, s.bytes);
	}
	return XDP_PASS;
}
