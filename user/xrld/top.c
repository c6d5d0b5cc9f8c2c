// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * top.c - the `top` table: the source prefixes the XDP program refused, by
 * interface and rule, counted from its refusal samples; and the rules' names.
 */
#include <stdio.h>
#include <string.h>

#include "xrld.h"

/* The policy is the same on every interface; names come from the config. */
const char *xrld_rule_name(struct xrld *d, __u32 id, char *buf, size_t len)
{
	for (__u32 i = 0; d->cfg && i < d->cfg->policy.n_compiled; i++)
		if (d->cfg->policy.compiled[i].id == id)
			return d->cfg->policy.rules[i].name;
	snprintf(buf, len, "id:%u", id);
	return buf;
}

void xrld_top_note(struct xrld *d, int ifidx, const struct xrl_event *e)
{
	struct {
		__u8 i, f, p, pad;
		__u32 r;
		__u32 a[4];
	} k = { .i = (__u8)ifidx, .f = e->family, .p = e->plen, .r = e->rule_id };
	__u64 now = xrl_now_ns();
	__u32 slot;

	memcpy(k.a, e->addr, 16);
	slot = (__u32)xrl_fnv1a64(&k, sizeof(k)) & (TOP_SLOTS - 1);
	/* linear probing, at most 16 steps; a full neighbourhood drops the sample */
	for (int i = 0; i < 16; i++, slot = (slot + 1) & (TOP_SLOTS - 1)) {
		struct xrld_top_ent *t = &d->top[slot];

		if (t->used && (t->iface != k.i || t->family != k.f || t->plen != k.p ||
				t->rule_id != k.r || memcmp(t->addr, k.a, 16))) {
			/* reuse a slot idle for 5 minutes */
			if (now - t->last_ns < 300 * XRL_NSEC_PER_SEC)
				continue;
			t->used = false;
		}
		if (!t->used) {
			memset(t, 0, sizeof(*t));
			t->used = true;
			t->iface = k.i;
			t->family = k.f;
			t->plen = k.p;
			t->rule_id = k.r;
			memcpy(t->addr, k.a, 16);
			t->first_ns = now;
		}
		t->count += e->count;
		t->last_ns = now;
		return;
	}
	COUNT(d->top_dropped);
}

