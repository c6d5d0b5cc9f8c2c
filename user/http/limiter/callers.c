// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * callers.c - what each caller of a rule really used (issue 25): per
 * bucket (rule and key), over one epoch, its peak rate, the most requests
 * it sent in one second, and its peak burst. At the end of an epoch
 * (xrl_limiter_peaks_take) every caller becomes one count in its rule's
 * histogram (user/lib/peaks.h) and the table starts empty.
 *
 * The burst is the requests the caller sent within two consecutive tenths
 * of a second (a burst that arrives within 100 ms is seen whole, whatever
 * the limit; it over-counts what a limit at the caller's own rate needs by
 * at most 0.2 s of that rate), or, for a caller within the rule's rate,
 * the deepest it went into its bucket at an admit if that is more (TAT -
 * now in tokens: the GCRA state tells it, in memory and from Redis alike;
 * exact, but never deeper than the rule's burst, and for a caller above
 * the rule's rate it measures the rate's shortfall, not a burst).
 *
 * The table is sharded as the memory store is (a mutex a shard, PROBE slots
 * of open addressing) and of a fixed size allocated once: a flood of unique
 * keys fills it and is then counted as untracked, never grows it. A caller
 * is seen where the decision concludes, so in Redis mode each instance
 * counts the requests it decided (the depth is the shared bucket's).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "limiter_int.h"
#include "peaks.h"

/* One caller's epoch so far. */
struct xrl_caller {
	__u64 a, b;	/* the bucket's identity; a == 0 && b == 0: empty */
	__u32 rule_id;	/* xrl_http_rule.id */
	__u32 win_s;	/* the second win_n counts (CLOCK_MONOTONIC s) */
	__u32 win_n;	/* requests in that second */
	__u32 peak_n;	/* the most in one second before it */
	__u32 depth;	/* deepest into its bucket at an admit, tokens */
	__u32 w200;	/* the most requests in two consecutive tenths of a second */
	__u32 refused;	/* requests the rule refused (or would have, in shadow) */
	__u32 tick;	/* the tenth of a second tick_n counts (CLOCK_MONOTONIC) */
	__u16 tick_n;	/* requests in it (saturating) */
	__u16 prev_n;	/* in the tenth before it, if it was the one before */
	__u32 requests; /* requests decided (saturating) */
};
_Static_assert(sizeof(struct xrl_caller) == 56, "xrl_caller layout");

struct xrl_callers_shard {
	pthread_mutex_t mu;
	struct xrl_caller *c;
	__u32 mask;
} __attribute__((aligned(64)));

struct xrl_callers {
	struct xrl_callers_shard sh[SHARDS];
	_Atomic __u64 untracked; /* requests of callers the table had no room for */
};

struct xrl_callers *xrl_callers_new(__u32 max_callers)
{
	__u32 per;
	struct xrl_callers *t = xrl_shards_alloc(sizeof(*t), max_callers, 1u << 16, &per);

	if (!t)
		return NULL;
	for (int i = 0; i < SHARDS; i++) {
		pthread_mutex_init(&t->sh[i].mu, NULL);
		t->sh[i].mask = per - 1;
		t->sh[i].c = calloc(per, sizeof(struct xrl_caller));
		if (!t->sh[i].c) {
			xrl_callers_free(t);
			return NULL;
		}
	}
	return t;
}

void xrl_callers_free(struct xrl_callers *t)
{
	if (!t)
		return;
	for (int i = 0; i < SHARDS; i++)
		free(t->sh[i].c);
	free(t);
}

/* k's entry in its locked shard, taken when absent; NULL when full. */
static struct xrl_caller *caller_slot(struct xrl_callers_shard *sh, struct xrl_kd k)
{
	__u64 a = k.a, b = k.b;

	if (!a && !b)
		b = 1; /* the empty mark is never a key */
	for (__u32 p = 0; p < PROBE; p++) {
		struct xrl_caller *c = &sh->c[((a >> 6) + p) & sh->mask];

		if (c->a == a && c->b == b)
			return c;
		if (!c->a && !c->b) {
			*c = (struct xrl_caller){ .a = a, .b = b };
			return c;
		}
	}
	return NULL;
}

/*
 * One decision's items, as concluded at now: each rule with a rate counts
 * the request against its caller (its second and its tenth of a second),
 * an admit its depth into the bucket.
 * Cost: one shard's mutex and at most PROBE entries an item.
 */
void xrl_callers_note(struct xrl_callers *t, const struct xrl_lim_item *it, int m, __u64 now)
{
	__u32 sec = (__u32)(now / XRL_NSEC_PER_SEC), tick = (__u32)(now / (XRL_NSEC_PER_SEC / 10));

	if (!t)
		return;
	for (int i = 0; i < m; i++) {
		struct xrl_callers_shard *sh = &t->sh[it[i].k.a & (SHARDS - 1)];
		struct xrl_caller *c;
		__u64 depth = 0;

		if (it[i].post || !it[i].r->has_rate)
			continue;
		if (it[i].ok && it[i].new_tat > now && it[i].g.emit_ns)
			depth = (it[i].new_tat - now + it[i].g.emit_ns - 1) / it[i].g.emit_ns;
		pthread_mutex_lock(&sh->mu);
		c = caller_slot(sh, it[i].k);
		if (!c) {
			pthread_mutex_unlock(&sh->mu);
			atomic_fetch_add_explicit(&t->untracked, 1, memory_order_relaxed);
			continue;
		}
		c->rule_id = it[i].r->id;
		if (c->win_s != sec) {
			if (c->win_n > c->peak_n)
				c->peak_n = c->win_n;
			c->win_s = sec;
			c->win_n = 0;
		}
		if (c->tick != tick) {
			c->prev_n = c->tick + 1 == tick ? c->tick_n : 0;
			c->tick = tick;
			c->tick_n = 0;
		}
		if (c->tick_n < UINT16_MAX)
			c->tick_n++;
		if ((__u32)c->tick_n + c->prev_n > c->w200)
			c->w200 = (__u32)c->tick_n + c->prev_n;
		c->win_n++;
		if (c->requests < UINT32_MAX)
			c->requests++;
		if (!it[i].ok)
			c->refused++;
		if (depth > c->depth)
			c->depth = depth > UINT32_MAX ? UINT32_MAX : (__u32)depth;
		pthread_mutex_unlock(&sh->mu);
	}
}

/* The index of the rule of id in ids[0..n), or -1. */
static int rule_at(const __u32 *ids, int n, __u32 id)
{
	for (int i = 0; i < n; i++)
		if (ids[i] == id)
			return i;
	return -1;
}

/*
 * The epoch's callers, folded into one histogram per rule of c (those with
 * a rate), and the table emptied: {"rules": {"RULE": histogram, ...},
 * "judge": {"RULE": [callers, refused_near], ...}, "untracked": N}
 * (histograms in peaks.h's form; refused_near the callers refused and not
 * far over the rule's rate, XRL_DISARM_FAR; N the requests not counted
 * since the last take).
 * A caller of a rule that is gone (a reload) is dropped. NULL when out of
 * memory (the epoch is lost, the table emptied all the same).
 * Cost: a walk of the whole table, one shard locked at a time.
 */
json_t *xrl_callers_take(struct xrl_callers *t, const struct xrl_http_cfg *cfg)
{
	struct xrl_peaks h[XRL_HTTP_MAX_RULES] = {};
	__u32 ids[XRL_HTTP_MAX_RULES];
	__u64 emit[XRL_HTTP_MAX_RULES];
	__u64 seen[XRL_HTTP_MAX_RULES] = { 0 }, near[XRL_HTTP_MAX_RULES] = { 0 };
	const char *names[XRL_HTTP_MAX_RULES];
	json_t *rules = json_object(), *judge = json_object(), *out;
	int n = 0, err = !rules || !judge;

	for (__u32 i = 0; i < cfg->n_rules && i < XRL_HTTP_MAX_RULES; i++)
		if (cfg->rules[i].has_rate) {
			ids[n] = cfg->rules[i].id;
			emit[n] = cfg->rules[i].g.emit_ns;
			names[n++] = cfg->rules[i].name;
		}
	for (int s = 0; s < SHARDS; s++) {
		struct xrl_callers_shard *sh = &t->sh[s];

		pthread_mutex_lock(&sh->mu);
		for (__u32 j = 0; j <= sh->mask; j++) {
			struct xrl_caller *c = &sh->c[j];
			int r;

			if (!c->a && !c->b)
				continue;
			r = rule_at(ids, n, c->rule_id);
			if (r >= 0 && !err) {
				__u32 rate = c->win_n > c->peak_n ? c->win_n : c->peak_n;
				__u32 burst = c->w200;

				/* within the rule's rate: its bucket's depth counts */
				if ((__u64)rate * emit[r] <= XRL_NSEC_PER_SEC && c->depth > burst)
					burst = c->depth;
				if (xrl_peaks_add(&h[r], rate, burst, 1, c->requests) == -ENOMEM)
					err = 1;
				if (c->refused)
					xrl_peaks_add_refused(&h[r], 1, c->refused);
				/* for disarm: refused, and not far over the rate */
				seen[r]++;
				if (c->refused &&
				    (__u64)rate * emit[r] <= XRL_DISARM_FAR * XRL_NSEC_PER_SEC)
					near[r]++;
			}
			memset(c, 0, sizeof(*c));
		}
		pthread_mutex_unlock(&sh->mu);
	}
	for (int i = 0; i < n && !err; i++)
		if (h[i].callers &&
		    (json_object_set_new(rules, names[i], xrl_peaks_to_json(&h[i])) ||
		     json_object_set_new(judge, names[i],
					 json_pack("[I,I]", (json_int_t)seen[i],
						   (json_int_t)near[i]))))
			err = 1;
	for (int i = 0; i < n; i++)
		xrl_peaks_free(&h[i]);
	out = err ? NULL
		  : json_pack("{s:o,s:o,s:I}", "rules", rules, "judge", judge, "untracked",
			      (json_int_t)atomic_exchange(&t->untracked, 0));
	if (!out && !err)
		rules = judge = NULL; /* json_pack's "o" took them, even on failure */
	if (err) {
		json_decref(rules);
		json_decref(judge);
	}
	return out;
}
