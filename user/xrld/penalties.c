// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * penalties.c - penalty escalation: strikes counted from the XDP program's
 * refusal samples, and a source that earns enough of them put on the denylist.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "log.h"
#include "verify.h"
#include "xrld.h"

/* Why a refusal sample earned no strike, or a due penalty was not made. */
const char *const pen_skip_name[PEN_SKIP_MAX] = {
	[PEN_SKIP_RULE_OFF] = "rule_off",     /* the rule says penalty: off */
	[PEN_SKIP_UNVERIFIED] = "unverified", /* source not proven (e.g. a SYN) */
	[PEN_SKIP_FLOOR] = "below_floor",     /* rule keyed shorter than the floor */
	[PEN_SKIP_ALLOWLIST] = "allowlisted", /* prefix overlaps the allowlist */
	[PEN_SKIP_VOUCHED] = "vouched",	      /* prefix holds a vouched source */
	[PEN_SKIP_FULL] = "denylist_full",    /* penalties' share of the list used */
	[PEN_SKIP_FAILED] = "deny_failed",    /* the deny write itself failed */
};

/* The policy rule a sample came from, or NULL (removed since). */
static const struct xrl_rule_spec *event_rule(struct xrld *d, const struct xrl_event *e)
{
	for (__u32 i = 0; d->cfg && i < d->cfg->policy.n_rules; i++) {
		const struct xrl_rule_spec *r = &d->cfg->policy.rules[i];

		if ((r->id ? r->id : xrl_rule_id(r->name)) == e->rule_id)
			return r;
	}
	return NULL;
}

/*
 * May this refusal sample count as a strike? Only a refusal by a rule that
 * feeds penalties, of a prefix at least as long as the floor (an aggregate
 * bucket's refusal, a rule keyed on /0 or /8, says nothing about any one
 * source, and denying its key would deny everyone). Returns 0 (no), 1
 * (yes) or 2 (yes if the packet proves its source: penalty: verified; the
 * proof costs a netlink round trip, asked only once the window test passed).
 */
static int strike_ok(struct xrld *d, const struct xrl_event *e)
{
	const struct xrl_penalty_cfg *pc = &d->cfg->penalty;
	const struct xrl_rule_spec *r;

	if (!pc->enabled || e->action != XRL_ACT_DROP)
		return 0;
	r = event_rule(d, e);
	if (!r || r->penalty == XRL_PEN_OFF) {
		COUNT(d->pen_skipped[PEN_SKIP_RULE_OFF]);
		return 0;
	}
	if (e->plen < (e->family == XRL_AF_INET ? pc->floor4 : pc->floor6)) {
		COUNT(d->pen_skipped[PEN_SKIP_FLOOR]);
		return 0;
	}
	return r->penalty == XRL_PEN_VERIFIED ? 2 : 1;
}

/*
 * Put a due penalty on the denylist, unless that would deny an allowlisted
 * address or fill the list: penalties may use three quarters of it, so an
 * operator's `deny add` always finds room. A vouched prefix is spared an
 * unverified penalty (its strikes may be forged "from" it), not a
 * verified one: every sample of those windows came from the source itself
 * (a cookie-proven client vouches its /24 with its first connection, and
 * would otherwise never earn one). Returns 0 when denied.
 */
static int penalty_deny(struct xrld *d, struct xrld_iface *f, const char *key,
			const struct xrl_prefix *p, __u64 ttl, bool verified)
{
	__u32 used, cap;
	char buf[64];
	int err;

	if (xrld_allow_overlaps(f, p)) {
		COUNT(d->pen_skipped[PEN_SKIP_ALLOWLIST]);
		return -EPERM;
	}
	if (!verified && xrl_vouched(f->h, p)) {
		COUNT(d->pen_skipped[PEN_SKIP_VOUCHED]);
		return -EPERM;
	}
	if (!xrl_deny_room(f->h, p->family, &used, &cap) && used >= cap / 4 * 3) {
		if (!COUNT(d->pen_skipped[PEN_SKIP_FULL]))
			log_warnx("%s: penalties fill 3/4 of the denylist (%u of %u): no new penalty "
				  "until entries expire (counted in xrl_penalties_skipped_total)",
				  f->name, used, cap);
		return -ENOSPC;
	}
	err = xrl_deny_add(f->h, p, ttl, XRL_ORIGIN_PENALTY);
	if (err) {
		COUNT(d->pen_skipped[PEN_SKIP_FAILED]);
		log_agg(XRL_LOG_WARN, key, "deny writes failed", "couldn't deny %s: %s",
			xrl_prefix_str(p, buf, sizeof(buf)), strerror(-err));
	}
	return err;
}

/* The strike slot of a sample's prefix (one per interface and prefix), or
 * NULL when its neighbourhood is full of live ones. */
static struct xrld_pen_ent *pen_find(struct xrld *d, int ifidx, const struct xrl_event *e, __u64 ts,
				     __u64 now)
{
	const struct xrl_penalty_cfg *pc = &d->cfg->penalty;
	struct {
		__u8 i, f, p, pad;
		__u32 a[4];
	} k = { .i = (__u8)ifidx, .f = e->family, .p = e->plen };
	__u32 slot;

	memcpy(k.a, e->addr, 16);
	slot = (__u32)xrl_fnv1a64(&k, sizeof(k)) & (PEN_SLOTS - 1);
	for (int i = 0; i < 16; i++, slot = (slot + 1) & (PEN_SLOTS - 1)) {
		struct xrld_pen_ent *t = &d->pen[slot];

		if (t->used && t->iface == k.i && t->family == k.f && t->plen == k.p &&
		    !memcmp(t->addr, k.a, 16))
			return t;
		if (!t->used || (t->last_strike_ns + (pc->strikes + 1) * pc->window_ns < ts &&
				 t->win_start_ns + 2 * pc->window_ns < ts &&
				 now - t->last_offense_ns > 2 * pc->max_ns)) {
			memset(t, 0, sizeof(*t));
			t->used = true;
			t->iface = k.i;
			t->family = k.f;
			t->plen = k.p;
			memcpy(t->addr, k.a, 16);
			return t;
		}
	}
	return NULL;
}

/*
 * Proofs (a sock_diag round trip each) xrld asks for at most: 200 a
 * second, in bursts of 200. A flood of forged sources cannot make the main
 * loop do more; a sample over the budget counts as unproven, which voids
 * its window: a flood can keep penalties from being made, never make one.
 */
static bool proof_budget(__u64 now)
{
	static __u64 tat;
	const __u64 emit = XRL_NSEC_PER_SEC / 200, tau = 200 * emit;

	if (tat < now)
		tat = now;
	if (tat - now + emit > tau)
		return false;
	tat += emit;
	return true;
}

/*
 * penalty: verified. A window counts as a strike only if a sample in it
 * proved its source and none failed to: a forged packet "from" someone's
 * address shares that address's bucket, so it can get the real owner's
 * packets refused and sampled, proven; its own samples, unproven, void
 * the window. Decided when the window has ended, at the prefix's next
 * sample (a penalty comes one window later than under unverified). Returns
 * true, with the window's start in *at, when the ended window is a strike.
 */
static bool verified_window(struct xrld *d, struct xrld_pen_ent *pe, const struct xrl_event *e,
			    __u64 ts, __u64 now, __u64 *at)
{
	__u64 win = d->cfg->penalty.window_ns;
	bool strike = false;

	if (pe->win_start_ns && ts >= pe->win_start_ns + win) {
		strike = pe->win_proven && !pe->win_unproven;
		*at = pe->win_start_ns;
		pe->win_start_ns = 0;
	}
	if (!pe->win_start_ns) {
		pe->win_start_ns = ts ? ts : 1;
		pe->win_proven = pe->win_unproven = false;
	}
	if (!pe->win_unproven) {
		if (proof_budget(now) && xrl_event_proven(e) > 0) {
			pe->win_proven = true;
		} else {
			pe->win_unproven = true;
			COUNT(d->pen_skipped[PEN_SKIP_UNVERIFIED]);
		}
	}
	return strike;
}

/* Count a strike at time at; on the strikes-th, deny the prefix. */
static void strike(struct xrld *d, struct xrld_iface *f, struct xrld_pen_ent *pe,
		   const struct xrl_event *e, __u64 at, __u64 now)
{
	const struct xrl_penalty_cfg *pc = &d->cfg->penalty;
	struct xrl_prefix p = { .family = e->family, .plen = e->plen };
	__u64 ttl = pc->base_ns;
	char buf[64], nb[32], key[XRL_RULE_NAME_LEN + IF_NAMESIZE + 16];
	bool verified;

	/* strikes must be recent; a long quiet spell forgives */
	if (pe->last_strike_ns && at - pe->last_strike_ns > pc->strikes * pc->window_ns)
		pe->strikes = 0;
	if (pe->offenses && now - pe->last_offense_ns > 2 * pc->max_ns)
		pe->offenses = 0;
	pe->last_strike_ns = at;
	pe->strikes++;
	if (pe->strikes < pc->strikes)
		return;
	for (__u32 i = 0; i < pe->offenses && ttl < pc->max_ns; i++)
		ttl *= 2;
	if (ttl > pc->max_ns)
		ttl = pc->max_ns;
	memcpy(p.addr, e->addr, 16);
	pe->strikes = 0;
	/* one line per rule per interval, however many sources a flood forges */
	snprintf(key, sizeof(key), "%s: rule %s", f->name,
		 xrld_rule_name(d, e->rule_id, nb, sizeof(nb)));
	verified = event_rule(d, e) && event_rule(d, e)->penalty == XRL_PEN_VERIFIED;
	if (penalty_deny(d, f, key, &p, ttl, verified))
		return;
	/* only a verified strike goes to the fleet: a spoofed source never
	 * earns a denial on other hosts (docs/security.md) */
	if (verified)
		xrld_fleet_deny_out(d, &p, ttl, true);
	pe->offenses++;
	pe->last_offense_ns = now;
	COUNT(d->penalties);
	log_agg(XRL_LOG_INFO, key, "prefixes denied",
		"%s refused in %u windows: denied for %llus (offense %u)",
		xrl_prefix_str(&p, buf, sizeof(buf)), pc->strikes,
		(unsigned long long)(ttl / XRL_NSEC_PER_SEC), pe->offenses);
}

void xrld_penalty_note(struct xrld *d, int ifidx, struct xrld_iface *f, const struct xrl_event *e)
{
	const struct xrl_penalty_cfg *pc = &d->cfg->penalty;
	__u64 now = xrl_now_ns(), ts, at = 0;
	struct xrld_pen_ent *pe;
	int ok = strike_ok(d, e);

	if (!ok)
		return;
	/* the program's timestamp: one CPU's samples are >= event_interval apart in it */
	ts = e->ts_ns ? e->ts_ns : now;
	pe = pen_find(d, ifidx, e, ts, now);
	if (!pe)
		return;
	if (ok == 2) {
		if (verified_window(d, pe, e, ts, now, &at))
			strike(d, f, pe, e, at, now);
		return;
	}
	/*
	 * One strike per window of time: samples from several CPUs (one
	 * source's packets spread over receive queues) a few ms apart, on
	 * either side of a window boundary, are one strike, not two.
	 */
	if (pe->last_strike_ns && ts < pe->last_strike_ns + pc->window_ns)
		return;
	strike(d, f, pe, e, ts, now);
}

