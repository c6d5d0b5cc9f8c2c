// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_limiter_lease.c - concurrency rules in process memory (user/http/
 * lease.c and its part of limiter.c): the bound, lease ids and their
 * release, leases that run out, 503 for the global key and 429 for a
 * caller's own, the refund when another rule refuses, post-paid cost,
 * cost 0, and threads that never see more than the bound admitted.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "limiter_test.h"

/* A rule with only a concurrency limit (no rate), keyed as key_kind. */
static __u32 conc_add(struct xrl_http_cfg *c, const char *name, __u32 n, __u64 ttl,
		      enum xrl_key_kind kind)
{
	struct xrl_http_rule *r = &c->rules[c->n_rules];

	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->key_kind = kind;
	snprintf(r->header, sizeof(r->header), "X-Api-Key");
	r->concurrency = n;
	r->lease_ttl_ns = ttl;
	r->cost = 1;
	r->on_missing_key = XRL_MISSING_REFUSE;
	return c->n_rules++;
}

/* A limiter and the one rule a test asks it about. */
struct lim_rule {
	struct xrl_limiter *l;
	const struct xrl_http_rule *r;
};

/* A limiter on one concurrency rule (conc_add's). */
static struct lim_rule conc_limiter(const char *name, __u32 n, __u64 ttl, enum xrl_key_kind kind)
{
	struct xrl_http_cfg *c = cfg_new();
	const struct xrl_http_rule *r = &c->rules[conc_add(c, name, n, ttl, kind)];

	return (struct lim_rule){ lim_done(c), r };
}

static int release1(struct xrl_limiter *l, const char *id, __u32 cost, bool *released)
{
	struct xrl_release res;
	int rc = xrl_limiter_release(l, &id, 1, cost, &res);

	*released = res.released[0];
	return rc;
}

static void test_lease_bound_and_release(void **state)
{
	struct lim_rule t = conc_limiter("checkout", 3, 60 * SEC, XRL_KEY_GLOBAL);
	struct xrl_decision d[4];
	bool rel;

	(void)state;
	for (int i = 0; i < 3; i++) {
		CTX("slot %d of 3", i + 1);
		d[i] = dec1(t.l, t.r, "*");
		EQ(d[i].allowed, true);
		EQ(d[i].n_leases, 1);
		for (int j = 0; j < i; j++)
			CHECK_(strcmp(d[i].lease[0], d[j].lease[0]), "two leases share id %s\n",
			       d[i].lease[0]);
	}
	CTX("the fourth, all three held");
	d[3] = dec1(t.l, t.r, "*");
	EQ(d[3].allowed, false);
	EQ(d[3].conc, true);
	EQ(d[3].shed, true); /* the global key: the service's capacity, 503 */
	EQ(d[3].n_leases, 0);
	RULE_IS(d[3].rule, t.r);
	EQ(d[3].limit, 3);
	/* the earliest lease runs out in 60 s: Retry-After is bounded to 30 */
	EQ(d[3].retry_after_s, 30);
	CTX("release the second");
	assert_int_equal(release1(t.l, d[1].lease[0], 0, &rel), 0);
	EQ(rel, true);
	CTX("released twice: not held any more");
	assert_int_equal(release1(t.l, d[1].lease[0], 0, &rel), 0);
	EQ(rel, false);
	CTX("a slot again after the release");
	EQ(dec1(t.l, t.r, "*").allowed, true);
	EQ(dec1(t.l, t.r, "*").allowed, false);
}

static void test_lease_runs_out(void **state)
{
	struct lim_rule t = conc_limiter("slow", 1, 300 * MS, XRL_KEY_HEADER);
	struct xrl_decision d;

	(void)state;
	CTX("a holder that never gives its slot back");
	EQ(dec1(t.l, t.r, "alice").allowed, true);
	d = dec1(t.l, t.r, "alice");
	EQ(d.allowed, false);
	EQ(d.shed, false); /* a caller's own key: 429 */
	EQ(d.retry_after_s, 1);
	CTX("another key has slots of its own");
	EQ(dec1(t.l, t.r, "bob").allowed, true);
	sleep_ns(350 * MS);
	CTX("after lease_ttl the slot is free");
	EQ(dec1(t.l, t.r, "alice").allowed, true);
}

/* A refusal by one rule leaves nothing taken by the others of the request. */
static void test_lease_refund(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	const struct xrl_http_rule *conc, *rate;
	struct xrl_limiter *l;
	struct xrl_decision d;
	bool rel;

	(void)state;
	conc = &c->rules[conc_add(c, "pool", 1, 60 * SEC, XRL_KEY_HEADER)];
	rate = &c->rules[rule_add(c, "api", "1/h", 2)];
	cfg_done(c);
	l = lim_new(c);
	CTX("both admit");
	d = dec2(l, conc, rate, "alice");
	EQ(d.allowed, true);
	EQ(d.n_leases, 1);
	EQ(d.remaining, 1);
	CTX("the slot is held: refused by the pool, the bucket untouched");
	d = dec2(l, conc, rate, "alice");
	EQ(d.allowed, false);
	EQ(d.conc, true);
	EQ(dec1(l, rate, "alice").remaining, 0); /* 2 - 1 - 1: the refusal took none */
	CTX("the bucket is empty: refused by it, the slot given back");
	{
		struct xrl_decision first = dec1(l, conc, "bob");

		EQ(first.allowed, true);
		assert_int_equal(release1(l, first.lease[0], 0, &rel), 0);
	}
	d = dec1(l, conc, "alice");
	EQ(d.allowed, false); /* alice's first lease is still held */
	CTX("alice gives it back; a request that the bucket refuses takes no slot");
	{
		struct xrl_decision a = dec2(l, conc, rate, "carol");

		EQ(a.allowed, true);
		a = dec2(l, conc, rate, "carol");
		EQ(a.allowed, false);
		EQ(a.conc, true);
	}
	{
		const struct xrl_http_rule *rs[2] = { conc, rate };
		const char *ks[2] = { "dave", "alice" }; /* alice's bucket is empty */

		assert_int_equal(xrl_limiter_decide(l, rs, ks, NULL, 2, &d), 0);
		EQ(d.allowed, false);
		EQ(d.conc, false);
		RULE_IS(d.rule, rate);
		EQ(d.n_leases, 0);
		CTX("dave's slot was given back at the refusal");
		EQ(dec1(l, conc, "dave").allowed, true);
	}
}

/* Rule report (1/h, burst 10) with concurrency 4 and leases of 60 s: a
 * post-paid cost is released against its lease. */
static struct lim_rule report_limiter(void)
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_http_rule *r = &c->rules[rule_add(c, "report", "1/h", 10)];

	r->concurrency = 4;
	r->lease_ttl_ns = 60 * SEC;
	cfg_done(c);
	return (struct lim_rule){ lim_new(c), r };
}

static void test_lease_post_paid_cost(void **state)
{
	struct lim_rule t = report_limiter();
	struct xrl_decision d;
	bool rel;

	(void)state;
	CTX("admitted: one token and a slot");
	d = dec1(t.l, t.r, "alice");
	EQ(d.allowed, true);
	EQ(d.remaining, 9);
	EQ(d.n_leases, 1);
	CTX("released with a measured cost of 5");
	assert_int_equal(release1(t.l, d.lease[0], 5, &rel), 0);
	EQ(rel, true);
	CTX("the next decision shows the 5 taken");
	EQ(dec1(t.l, t.r, "alice").remaining, 3); /* 10 - 1 - 5 - 1 */
	CTX("a charge without a lease, by rule and key");
	assert_int_equal(xrl_limiter_charge(t.l, t.r, "alice", 2), 0);
	EQ(dec1(t.l, t.r, "alice").remaining, 0); /* 3 - 2 - 1 */
	CTX("a post-paid cost never makes more than a burst of debt");
	assert_int_equal(xrl_limiter_charge(t.l, t.r, "bob", 10), 0);
	assert_int_equal(xrl_limiter_charge(t.l, t.r, "bob", 10), 0);
	d = dec1(t.l, t.r, "bob");
	EQ(d.allowed, false);
	LE(d.retry_after_s, 3600); /* one token's wait, not eleven */
}

/*
 * A post-paid cost times a slow rule's emission passes 2^64: at 1/h
 * (3.6e12 ns a token) a cost of 5124096 wrapped to 1.5e12 ns, less than
 * one token, so a client that declared millions kept its whole burst.
 */
static void test_lease_post_paid_cost_wraps(void **state)
{
	struct lim_rule t = report_limiter();
	const __u32 wrap = 5124096; /* 5124096 * 3.6e12 - 2^64 = 1.53e12 */
	struct xrl_decision d;
	bool rel;

	(void)state;
	d = dec1(t.l, t.r, "alice");
	EQ(d.allowed, true);
	CTX("released with a cost whose debt in ns wraps");
	assert_int_equal(release1(t.l, d.lease[0], wrap, &rel), 0);
	EQ(rel, true);
	d = dec1(t.l, t.r, "alice");
	EQ(d.allowed, false);
	LE(d.retry_after_s, 3600);
	CTX("charged the same without a lease");
	assert_int_equal(xrl_limiter_charge(t.l, t.r, "bob", wrap), 0);
	EQ(dec1(t.l, t.r, "bob").allowed, false);
	CTX("the most a request may declare (10^8)");
	assert_int_equal(xrl_limiter_charge(t.l, t.r, "carol", 100000000), 0);
	EQ(dec1(t.l, t.r, "carol").allowed, false);
}

/*
 * The lease table is bounded (max_keys / 16 sets, at least 1024): a new
 * key beyond it is refused as if over its limit. That refusal was counted
 * where nothing read it; an operator saw 429s and no reason.
 */
static void test_lease_table_full_counted(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	const struct xrl_http_rule *r;
	struct xrl_limiter_stats st;
	struct xrl_limiter *l;
	struct xrl_decision d;
	char key[32];

	(void)state;
	c->memory_max_keys = 1024; /* 1024 / 16 < 1024: the floor, 1024 sets */
	r = &c->rules[conc_add(c, "per", 1, 60 * SEC, XRL_KEY_HEADER)];
	cfg_done(c);
	l = lim_new(c);
	for (int i = 0; i < 1024; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		CTX("key %d of 1024", i);
		EQ(dec1(l, r, key).allowed, true);
	}
	/* a full table fails open (DESIGN: never refuse everyone by accident),
	 * without a lease id, and is counted */
	CTX("the 1025th key");
	d = dec1(l, r, "one-more");
	EQ(d.allowed, true);
	EQ(d.n_leases, 0);
	xrl_limiter_get_stats(l, &st);
	EQ(st.leases_full, 1);
	CTX("a held key still has its bound");
	EQ(dec1(l, r, "k0").allowed, false);
}

static void test_lease_ids(void **state)
{
	static const char *const bad[] = {
		"",
		"checkout",
		"checkout.0123456789abcdef",
		"checkout.0123456789abcdef.",
		".0123456789abcdef.YWxpY2U",
		"checkout.0123456789ABCDEF.YWxpY2U",
		"checkout.0123456789abcde.YWxpY2U",
		"checkout.0123456789abcdef.YWxp*2U",
	};
	char rule[XRL_RULE_NAME_LEN], kn[128];
	__u64 nonce;
	size_t knl;

	(void)state;
	CTX("a rule name with dots, a key in base64url");
	assert_int_equal(xrl_lease_id_parse("a.b.0123456789abcdef.YWxpY2U", rule, sizeof(rule),
					    &nonce, kn, &knl),
			 0);
	assert_string_equal(rule, "a.b");
	EQ(nonce, 0x0123456789abcdefULL);
	EQ(knl, 5);
	assert_memory_equal(kn, "alice", 5);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CTX("not a lease id: '%s'", bad[i]);
		EQ(xrl_lease_id_parse(bad[i], rule, sizeof(rule), &nonce, kn, &knl), -EINVAL);
	}
}

/* cost 0: counted, never refused, no slot taken. */
static void test_lease_cost_zero(void **state)
{
	struct lim_rule t = conc_limiter("probe", 1, 60 * SEC, XRL_KEY_GLOBAL);
	struct xrl_decision d;

	(void)state;
	EQ(dec1(t.l, t.r, "*").allowed, true);
	for (int i = 0; i < 3; i++) {
		CTX("cost 0, the only slot held: %d", i);
		d = dec_cost(t.l, t.r, "*", 0);
		EQ(d.allowed, true);
		EQ(d.n_leases, 0);
	}
}

/*
 * A cost 0 the caller gives (/v1/check) reads the bucket as it is: rule
 * 1/h, burst 3, two spent: remaining 1 (it showed 3, a full bucket), and
 * nothing taken; drained, a cost 0 is still admitted, remaining 0.
 */
static void test_check_cost_zero_reads(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	const struct xrl_http_rule *r;
	struct xrl_limiter *l;
	struct xrl_decision d;

	(void)state;
	r = &c->rules[rule_add(c, "api", "1/h", 3)];
	cfg_done(c);
	l = lim_new(c);
	EQ(dec1(l, r, "u").allowed, true);
	EQ(dec1(l, r, "u").allowed, true);
	for (int i = 0; i < 2; i++) {
		CTX("cost 0 after two of three, %d", i);
		d = dec_cost(l, r, "u", 0);
		EQ(d.allowed, true);
		EQ(d.remaining, 1);
	}
	EQ(dec1(l, r, "u").allowed, true);
	CTX("cost 0, drained");
	d = dec_cost(l, r, "u", 0);
	EQ(d.allowed, true);
	EQ(d.remaining, 0);
	EQ(dec1(l, r, "u").allowed, false);
}

/* ---- threads: the bound holds under contention ---------------------------- */

#define T_THREADS 8
#define T_ROUNDS  4000
#define T_BOUND	  5

struct t_arg {
	struct lim_rule t;
	_Atomic int *inside, *max_inside, *admitted;
};

static void *t_main(void *p)
{
	struct t_arg *a = p;

	for (int i = 0; i < T_ROUNDS; i++) {
		struct xrl_decision d;
		struct xrl_release res;
		const char *k = "*", *id;
		int now;

		if (xrl_limiter_decide(a->t.l, &a->t.r, &k, NULL, 1, &d) || !d.allowed)
			continue;
		now = atomic_fetch_add(a->inside, 1) + 1;
		for (int m = atomic_load(a->max_inside); now > m;)
			if (atomic_compare_exchange_weak(a->max_inside, &m, now))
				break;
		atomic_fetch_add(a->admitted, 1);
		atomic_fetch_sub(a->inside, 1); /* before the release: never counted late */
		id = d.lease[0];
		xrl_limiter_release(a->t.l, &id, 1, 0, &res);
	}
	return NULL;
}

static void test_lease_concurrent_bound(void **state)
{
	_Atomic int inside = 0, max_inside = 0, admitted = 0;
	struct t_arg a;
	pthread_t t[T_THREADS];

	(void)state;
	a.t = conc_limiter("pool", T_BOUND, 60 * SEC, XRL_KEY_GLOBAL);
	a.inside = &inside;
	a.max_inside = &max_inside;
	a.admitted = &admitted;
	for (int i = 0; i < T_THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, t_main, &a), 0);
	for (int i = 0; i < T_THREADS; i++)
		pthread_join(t[i], NULL);
	CTX("%d threads x %d rounds, bound %d", T_THREADS, T_ROUNDS, T_BOUND);
	LE(max_inside, T_BOUND);
	CHECK_(admitted > 0, "nothing admitted\n");
	/* every slot came back: the bound is whole again */
	for (int i = 0; i < T_BOUND; i++) {
		CTX("slot %d after the threads", i);
		EQ(dec1(a.t.l, a.t.r, "*").allowed, true);
	}
	EQ(dec1(a.t.l, a.t.r, "*").allowed, false);
}

const struct CMUnitTest xrl_lim_lease_tests[] = {
	cmocka_unit_test_teardown(test_lease_bound_and_release, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_lease_runs_out, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_lease_refund, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_lease_post_paid_cost, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_lease_post_paid_cost_wraps, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_lease_table_full_counted, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_lease_ids, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_lease_cost_zero, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_check_cost_zero_reads, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_lease_concurrent_bound, xrl_lim_fx_teardown),
};
const size_t xrl_lim_lease_n = sizeof(xrl_lim_lease_tests) / sizeof(xrl_lim_lease_tests[0]);
