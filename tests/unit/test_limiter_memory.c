// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_limiter_memory.c - the identity tier's buckets in process memory
 * (user/http/limiter/store.c, limiter.c, penalty.c): exact bursts, Retry-After,
 * keys and rules apart, check-all-then-take, shadow rules, costs, missing
 * keys, hostile key cardinality, penalties, threads, the SipHash vectors,
 * the reply guard, and the model against a plain GCRA.
 *
 * The limiter reads CLOCK_MONOTONIC itself, so these tests run on the real
 * clock: exact counts use slow rates (1/6s, 10/min, 1/h) under which no
 * token comes back while a test runs, and the few tests about time (Retry-
 * After, penalties, the breaker) sleep, with margins on the side a slow
 * machine errs on (a sleep overshoots, it never undershoots).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <hiredis/hiredis.h>

#include "http/limiter/limiter_int.h" /* xrl_lim_share_at */
#include "limiter_test.h"
#include "log.h"
#include "peaks.h"
#include "xrl.h"

/* Sleep to the start of a penalty window if less than 30 % of it is left. */
static void align_window(__u64 w)
{
	__u64 off = mono() % w;

	if (off > w / 10 * 7)
		sleep_ns(w - off + w / 100);
}

/* Resident set size in bytes (/proc/self/statm). */
static __u64 rss_bytes(void)
{
	unsigned long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &res) != 2)
		res = 0;
	fclose(f);
	return (__u64)res * (__u64)sysconf(_SC_PAGESIZE);
}

/* ---- hostile key cardinality ------------------------------------------------- */

#define FLOOD 1000000U

#define TABLE 65536U /* memory_max_keys 65536: 64 shards x 1024 slots */

/* Every insert into the table is a new key, an idle eviction or an active one. */
static __u64 inserts(struct xrl_limiter *l)
{
	struct xrl_limiter_stats s = stats(l);

	return s.keys + s.evictions_idle + s.evictions_active;
}

/* ---- penalties ------------------------------------------------------------- */

static void penalty_cfg(struct xrl_http_cfg *c, __u32 strikes, __u64 window, __u64 base, __u64 max)
{
	c->penalty.enabled = true;
	c->penalty.strikes = strikes;
	c->penalty.window_ns = window;
	c->penalty.base_ns = base;
	c->penalty.max_ns = max;
}

/* ---- concurrency --------------------------------------------------------------- */

struct worker {
	struct xrl_limiter *l;
	const struct xrl_http_rule *rules[3];
	int n_rules;
	int n; /* decisions */
	int id;
	pthread_barrier_t *go;
	__u64 allowed;
	__u64 allowed_key[8];
	int errors;
};

static void *worker_same_key(void *arg)
{
	struct worker *w = arg;

	pthread_barrier_wait(w->go);
	for (int i = 0; i < w->n; i++) {
		const char *k = "shared";
		struct xrl_decision d;

		if (xrl_limiter_decide(w->l, w->rules, &k, NULL, 1, &d))
			w->errors++;
		else
			w->allowed += d.allowed;
	}
	return NULL;
}

/*
 * Four threads of fn, each with a copy of *tmpl (its id 0..3, the barrier
 * they start at), into w[4]; joined: no decision failed in any. The number
 * they admitted in all.
 */
static __u64 run_workers(struct worker *w, const struct worker *tmpl, void *(*fn)(void *))
{
	pthread_barrier_t go;
	pthread_t th[4];
	__u64 allowed = 0;

	pthread_barrier_init(&go, NULL, 4);
	for (int i = 0; i < 4; i++) {
		w[i] = *tmpl;
		w[i].id = i;
		w[i].go = &go;
		assert_int_equal(pthread_create(&th[i], NULL, fn, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CTX("worker %d", i);
		EQ(w[i].errors, 0);
		allowed += w[i].allowed;
	}
	pthread_barrier_destroy(&go);
	return allowed;
}

static void *worker_multi(void *arg)
{
	struct worker *w = arg;
	__u64 x = 0x9e3779b97f4a7c15ULL * (__u64)(w->id + 1);

	pthread_barrier_wait(w->go);
	for (int i = 0; i < w->n; i++) {
		const struct xrl_http_rule *rs[3];
		char key[16];
		const char *ks[3] = { key, key, key };
		struct xrl_decision d;
		int k;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		k = (int)(x % 8);
		snprintf(key, sizeof(key), "k%d", k);
		/* each thread its own rule order: lock order must not depend on it */
		for (int j = 0; j < 3; j++)
			rs[j] = w->rules[(j + w->id) % 3];
		if (xrl_limiter_decide(w->l, rs, ks, NULL, 3, &d)) {
			w->errors++;
		} else if (d.allowed) {
			w->allowed++;
			w->allowed_key[k]++;
		}
	}
	return NULL;
}

/* Finding 12b: decisions that strike penalties while reloads swap the
 * configuration (its penalty settings); run under TSan by make test-tsan. */
struct reload_arg {
	struct xrl_limiter *l;
	const struct xrl_http_rule *r;
	_Atomic int stop;
	int errors;
};

static void *reload_decider(void *arg)
{
	struct reload_arg *a = arg;
	char key[16];

	for (int i = 0; !atomic_load(&a->stop) && i < 200000; i++) {
		struct xrl_decision d;
		const char *k = key;

		snprintf(key, sizeof(key), "k%d", i % 64);
		if (xrl_limiter_decide(a->l, &a->r, &k, NULL, 1, &d))
			a->errors++;
	}
	return NULL;
}

/*
 * A reply's arrays are bounded before hiredis allocates them: "*400000000"
 * asked the old pipe's reader for 3.2 GB (fuzz_resp found it). Guarded: a
 * reply of a full call (128 decisions of 8 keys: 2,177 elements) reads; one
 * element more in the same reply, or the huge header, is a reader error.
 */
static int guarded_read(const char *resp, size_t len)
{
	redisReader *rd = redisReaderCreate();
	struct xrl_reader_guard *g = xrl_reader_guard_new(rd);
	void *reply = NULL;
	int rc, n = 0;

	assert_non_null(g);
	assert_int_equal(redisReaderFeed(rd, resp, len), REDIS_OK);
	while ((rc = redisReaderGetReply(rd, &reply)) == REDIS_OK && reply) {
		xrl_reader_guard_reset(g);
		freeReplyObject(reply);
		n++;
	}
	redisReaderFree(rd);
	free(g);
	return rc == REDIS_OK ? n : -1;
}

/* ---- exact burst, then refusals, with every decision field --------------- */

static void test_exact_burst_then_refused(void **state)
{
	static const struct {
		const char *rate;
		__u32 burst;
		__u64 emit_s;
	} t[] = {
		{ "1/6s", 5, 6 },   { "10/min", 10, 6 }, { "1/h", 3, 3600 },
		{ "1/h", 1, 3600 }, { "20/h", 40, 180 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct xrl_http_cfg *c = cfg_new();
		struct xrl_limiter *l;
		const struct xrl_http_rule *r;
		struct xrl_limiter_stats s;

		CTX("rate %s burst %u: setup", t[i].rate, t[i].burst);
		r = &c->rules[rule_add(c, "api", t[i].rate, t[i].burst)];
		cfg_done(c);
		EQ(r->g.emit_ns, t[i].emit_s * SEC);
		l = lim_new(c);
		for (__u32 k = 1; k <= t[i].burst; k++) {
			struct xrl_decision d = dec1(l, r, "alice");

			CTX("rate %s burst %u: request %u of the burst", t[i].rate, t[i].burst, k);
			EQ(d.allowed, true);
			RULE_IS(d.rule, r);
			EQ(d.limit, t[i].burst);
			EQ(d.remaining, t[i].burst - k);
			/* full again k emission intervals after the first request
			 * (less the µs elapsed, rounded up) */
			EQ(d.reset_s, k * t[i].emit_s);
			EQ(d.retry_after_s, 0);
			EQ(d.n_rules, 1);
			EQ(d.shed, false);
			EQ(d.backend_error, false);
			EQ(d.missing_key, false);
			EQ(d.penalized, false);
		}
		for (int k = 1; k <= 3; k++) {
			struct xrl_decision d = dec1(l, r, "alice");

			CTX("rate %s burst %u: refusal %d after the burst", t[i].rate, t[i].burst,
			    k);
			EQ(d.allowed, false);
			RULE_IS(d.rule, r);
			EQ(d.limit, t[i].burst);
			EQ(d.remaining, 0);
			/* cost 1: the next token is one emission interval after
			 * the first request, i.e. ceil(emit - µs) = emit */
			EQ(d.retry_after_s, t[i].emit_s);
			EQ(d.reset_s, t[i].burst * t[i].emit_s);
			EQ(d.n_rules, 1);
			EQ(d.shed, false);
			EQ(d.backend_error, false);
			EQ(d.missing_key, false);
			EQ(d.penalized, false);
		}
		CTX("rate %s burst %u: stats", t[i].rate, t[i].burst);
		s = stats(l);
		EQ(s.decisions, t[i].burst + 3);
		EQ(s.allowed, t[i].burst);
		EQ(s.refused, 3);
		EQ(s.shadow_refused, 0);
		EQ(s.keys, 1);
		EQ(s.evictions_idle + s.evictions_active, 0);
		lim_free(l);
		cfg_free(c);
	}
}

/* ---- callers' peaks (callers.c) ---------------------------------------------- */

/* The one cell of rule's histogram in a take: rate and burst bin values. */
static void one_cell(json_t *take, const char *rule, __u64 want_callers, __u64 *rate, __u64 *burst,
		     __u64 *requests)
{
	struct xrl_peaks h = { 0 };
	json_t *j = json_object_get(json_object_get(take, "rules"), rule);

	EQ(j != NULL, true);
	EQ(xrl_peaks_from_json(j, &h), 0);
	EQ(h.callers, want_callers);
	*rate = h.max_rate;
	*burst = h.max_burst;
	*requests = h.requests;
	xrl_peaks_free(&h);
}

/*
 * What a caller used, as the limiter counts it at a decision: its most
 * requests in one second (refused ones too), its burst as its requests
 * within two tenths of a second (beyond the rule's burst, in shadow) or,
 * within the rule's rate, its bucket's depth; each caller once; the table
 * empty after a take; a rule without a rate not counted.
 */
static void test_callers_peaks(void **state)
{
	static _Atomic __u64 clk = 400 * DAY;
	struct xrl_http_cfg *c = cfg_rules("api 10/s 5, wide 100/s 50 shadow, even 10/s 10");
	struct xrl_limiter *l;
	const struct xrl_http_rule *api = &c->rules[0], *wide = &c->rules[1], *even = &c->rules[2];
	__u64 rate, burst, req;
	json_t *t;

	(void)state;
	l = lim_done(c);
	xrl_limiter_set_clock(l, &clk);
	CTX("a burst of 30 at once on a 10/s burst 5 rule: 5 admitted, 25 refused");
	for (int i = 0; i < 30; i++)
		dec1(l, api, "nat");
	CTX("then 3 a second for 4 s on another key, spread over each second");
	for (int s = 0; s < 4; s++)
		for (int i = 0; i < 3; i++) {
			atomic_store(&clk, 400 * DAY + (__u64)(s + 1) * SEC + (__u64)i * 300 * MS);
			dec1(l, api, "slow");
		}
	CTX("a shadow rule: 60 in 150 ms on one key (over its burst of 50)");
	for (int i = 0; i < 60; i++) {
		atomic_store(&clk, 400 * DAY + 10 * SEC + (__u64)i * 2500 * 1000);
		dec1(l, wide, "burst");
	}
	t = xrl_limiter_peaks_take(l);
	EQ(t != NULL, true);
	CTX("the burst of 30: rate 30, burst 30 (over the rule's rate: its requests in 200 ms)");
	{
		struct xrl_peaks h = { 0 };

		EQ(xrl_peaks_from_json(json_object_get(json_object_get(t, "rules"), "api"), &h), 0);
		EQ(h.callers, 2);
		EQ(h.max_rate, 30);
		EQ(h.max_burst, 30);
		EQ(h.requests, 42);
		EQ(h.refused_callers, 1);
		EQ(h.refused_requests, 25);
		xrl_peaks_free(&h);
	}
	CTX("the shadow rule's key: 60 a second, 60 in 200 ms (its bucket stops at 50)");
	one_cell(t, "wide", 1, &rate, &burst, &req);
	EQ(rate, 60);
	EQ(burst, 60);
	EQ(req, 60);
	EQ(json_integer_value(json_object_get(t, "untracked")), 0);
	json_decref(t);
	CTX("a take empties the table");
	t = xrl_limiter_peaks_take(l);
	EQ(json_object_size(json_object_get(t, "rules")), 0);
	json_decref(t);
	CTX("within the rule's rate, the bucket's depth counts: 10 at 50 ms apart at 10/s");
	for (int i = 0; i < 10; i++) {
		atomic_store(&clk, 400 * DAY + 20 * SEC + (__u64)i * 50 * MS);
		dec1(l, even, "even");
	}
	t = xrl_limiter_peaks_take(l);
	one_cell(t, "even", 1, &rate, &burst, &req);
	EQ(rate, 10);
	/* the last admit's TAT is 100 + 9 * 50 ms ahead: 6 tokens deep, where
	 * two tenths hold 4 or 5 of them */
	EQ(burst, 6);
	json_decref(t);
}

/* ---- Retry-After tells the truth --------------------------------------------- */

static void test_retry_after_truth(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;
	const struct xrl_http_rule *r;
	struct xrl_decision d;

	CTX("2/s burst 1");
	r = &c->rules[rule_add(c, "api", "2/s", 1)];
	cfg_done(c);
	l = lim_new(c);

	d = dec1(l, r, "k");
	EQ(d.allowed, true);
	d = dec1(l, r, "k");
	CTX("2/s burst 1: refused right after the one token");
	EQ(d.allowed, false);
	/* the next token comes 500 ms after the first request: rounded up, 1 s */
	EQ(d.retry_after_s, 1);
	/* well before the 500 ms it is still refused ... */
	sleep_ns(300 * MS);
	CTX("2/s burst 1: 300 ms after the refusal (token at 500 ms)");
	d = dec1(l, r, "k");
	EQ(d.allowed, false);
	EQ(d.retry_after_s, 1);
	/* ... and a client that waits Retry-After from its refusal is admitted */
	sleep_ns(1 * SEC - 300 * MS);
	CTX("2/s burst 1: Retry-After (1 s) after the refusal");
	d = dec1(l, r, "k");
	EQ(d.allowed, true);
}

/* ---- independent keys and rules ---------------------------------------------- */

static void test_independent_keys(void **state)
{
	static const char *keys[] = { "a", "b", "c", "alice", "alice ", "ALICE", "" };
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;
	const struct xrl_http_rule *r1, *r2;
	char long_a[1000], long_b[1000];

	CTX("1/h burst 2, two rules");
	r1 = &c->rules[rule_add(c, "api", "1/h", 2)];
	r2 = &c->rules[rule_add(c, "login", "1/h", 2)];
	cfg_done(c);
	l = lim_new(c);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		CTX("key \"%s\" on rule api: its own full burst", keys[i]);
		EQ(drain(l, r1, keys[i], 10), 2);
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		CTX("key \"%s\" on rule login: a bucket apart from rule api's", keys[i]);
		EQ(drain(l, r2, keys[i], 10), 2);
	}
	/* long keys that differ only at the end */
	memset(long_a, 'x', sizeof(long_a) - 1);
	long_a[sizeof(long_a) - 1] = '\0';
	memcpy(long_b, long_a, sizeof(long_b));
	long_b[sizeof(long_b) - 2] = 'y';
	CTX("a 999-byte key");
	EQ(drain(l, r1, long_a, 10), 2);
	CTX("a 999-byte key differing in its last byte");
	EQ(drain(l, r1, long_b, 10), 2);
	CTX("stats");
	EQ(stats(l).keys, 2 * 7 + 2);
}

/* ---- check all, then take from all ----------------------------------------- */

static void test_two_rules_refusal_spends_nothing(void **state)
{
	struct xrl_http_cfg *c = cfg_rules("site 1/h 5, login 1/h 1");
	struct xrl_limiter *l = lim_done(c);
	const struct xrl_http_rule *site = &c->rules[0], *login = &c->rules[1];
	struct xrl_decision d;

	/* both admit: the answer names the rule with the fewest tokens left */
	CTX("k1: site+login, both admit");
	WANT_RULE(dec2(l, site, login, "k1"), login, "allowed rules=2 limit=1 remaining=0");
	CTX("k1: site was charged once by the admitted request");
	EQ(drain(l, site, "k1", 10), 4);

	/* k2: login's bucket empty, then 10 requests matched by both */
	CTX("k2: login alone");
	EQ(dec1(l, login, "k2").allowed, true);
	for (int i = 0; i < 10; i++) {
		CTX("k2: request %d matched by site and login, login empty", i);
		d = i & 1 ? dec2(l, login, site, "k2") : dec2(l, site, login, "k2");
		WANT_RULE(d, login, "!allowed limit=1 remaining=0 retry=3600");
	}
	CTX("k2: site still has its full burst after 10 refusals by login");
	EQ(drain(l, site, "k2", 10), 5);

	/* and the other way round: site empty, login untouched */
	CTX("k3: site drained alone");
	EQ(drain(l, site, "k3", 10), 5);
	for (int i = 0; i < 5; i++) {
		CTX("k3: request %d matched by both, site empty", i);
		WANT_RULE(dec2(l, login, site, "k3"), site, "!allowed limit=5");
	}
	CTX("k3: login still has its token");
	EQ(drain(l, login, "k3", 10), 1);

	CTX("stats");
	EQ(stats(l).decisions, 1 + 5 + 1 + 10 + 6 + 6 + 5 + 2);
}

/*
 * Two rules, one request matched by both admitted, then a second: which
 * rule the answer names. A refusal by the rule with the longer wait is the
 * one reported. A shadow rule is invisible to clients: when the request
 * is admitted the headers (rule, limit, remaining, reset) come from an
 * enforcing rule, not from a shadow rule that would have refused
 * (RateLimit: r=0 would make well-behaved clients back off from a rule
 * that is only being watched).
 */
static void test_second_request_reported_rule(void **state)
{
	static const struct {
		const char *rules, *what;
		int rule; /* the one the second answer names */
		const char *want;
	} cases[] = {
		{ "fast 1/6s 1, slow 1/h 1",
		  "both empty: the answer is the one to wait longest for", 1,
		  "!allowed retry=3600" },
		{ "enforcing 1/h 100, shadowed 1/h 1 shadow",
		  "admitted while the shadow rule would refuse: reported rule", 0,
		  "allowed limit=100 remaining=98" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct xrl_http_cfg *c = cfg_rules(cases[i].rules);
		struct xrl_limiter *l = lim_done(c);

		WANT(dec2(l, &c->rules[0], &c->rules[1], "k"), "allowed");
		CTX("%s", cases[i].what);
		WANT_RULE(dec2(l, &c->rules[0], &c->rules[1], "k"), &c->rules[cases[i].rule], "%s",
			  cases[i].want);
	}
}

/* ---- shadow rules ------------------------------------------------------------ */

static void test_shadow_refusals_allow_and_count(void **state)
{
	struct xrl_http_cfg *c = cfg_rules("enforcing 1/h 100, shadowed 1/h 2 shadow");
	struct xrl_limiter *l = lim_done(c);
	const struct xrl_http_rule *enf = &c->rules[0], *sh = &c->rules[1];
	struct xrl_limiter_stats s;

	for (int i = 1; i <= 5; i++) {
		CTX("request %d matched by enforcing and shadow (shadow burst 2)", i);
		WANT(dec2(l, enf, sh, "k"), "allowed");
		EQ(stats(l).shadow_refused, i > 2 ? i - 2 : 0);
	}
	/* the shadow rule's refusals did not stop the enforcing rule's charges */
	CTX("enforcing after 5 admitted requests");
	WANT(dec1(l, enf, "k"), "allowed remaining=%d", 100 - 6);
	/* a shadow rule alone never refuses */
	for (int i = 0; i < 3; i++) {
		CTX("shadow rule alone, request %d (empty)", i);
		WANT(dec1(l, sh, "k"), "allowed !penalized");
	}
	CTX("stats");
	s = stats(l);
	EQ(s.decisions, 9);
	EQ(s.allowed, 9);
	EQ(s.refused, 0);
	EQ(s.shadow_refused, 3 + 3);
}

/* ---- costs ------------------------------------------------------------------- */

static void test_cost_above_burst(void **state)
{
	struct xrl_http_cfg *c = cfg_rules("a 1/h 5, b 1/h 3");
	struct xrl_limiter *l = lim_done(c);
	const struct xrl_http_rule *a = &c->rules[0], *b = &c->rules[1], *rs[2] = { a, b };
	const char *ks[2] = { "k", "k" };
	__u32 costs[2];
	struct xrl_decision d;
	int rc;

	CTX("cost 6 on a rule of burst 5");
	costs[0] = 6;
	rc = xrl_limiter_decide(l, rs, ks, costs, 1, &d);
	EQ(rc, -E2BIG);
	CTX("cost 1 on a, cost 4 on b (burst 3)");
	costs[0] = 1;
	costs[1] = 4;
	rc = xrl_limiter_decide(l, rs, ks, costs, 2, &d);
	EQ(rc, -E2BIG);
	CTX("a after two -E2BIG requests: nothing charged");
	EQ(drain(l, a, "k", 10), 5);
	CTX("b after two -E2BIG requests: nothing charged");
	EQ(drain(l, b, "k", 10), 3);

	/* cost == burst: exactly once */
	CTX("cost 5 == burst 5 on a fresh key");
	ks[0] = "k2";
	costs[0] = 5;
	EQ(xrl_limiter_decide(l, rs, ks, costs, 1, &d), 0);
	WANT(d, "allowed remaining=0 reset=%d", 5 * 3600);
	CTX("cost 5 again");
	EQ(xrl_limiter_decide(l, rs, ks, costs, 1, &d), 0);
	/* all 5 tokens must come back: 5 emission intervals after the first */
	WANT(d, "!allowed retry=%d", 5 * 3600);
}

static void test_cost_zero_and_rule_cost(void **state)
{
	struct xrl_http_cfg *c = cfg_rules("a 1/h 2, heavy 1/h 5");
	const struct xrl_http_rule *a = &c->rules[0], *heavy = &c->rules[1];
	struct xrl_limiter *l;
	const char *key = "k";
	__u32 zero = 0;
	struct xrl_decision d;
	__u64 keys0;

	c->rules[1].cost = 2;
	l = lim_done(c);

	CTX("a drained");
	EQ(drain(l, a, "k", 10), 2);
	keys0 = stats(l).keys;
	for (int i = 0; i < 100; i++) {
		CTX("cost 0 on an empty bucket, request %d", i);
		EQ(xrl_limiter_decide(l, &a, &key, &zero, 1, &d), 0);
		EQ(d.allowed, true);
	}
	CTX("cost 0 on a key never seen");
	key = "never-seen";
	EQ(xrl_limiter_decide(l, &a, &key, &zero, 1, &d), 0);
	EQ(d.allowed, true);
	CTX("cost 0 creates no bucket");
	EQ(stats(l).keys, keys0);
	CTX("the never-seen key still has its full burst");
	EQ(drain(l, a, "never-seen", 10), 2);

	/* costs == NULL: the rule's own cost (2 of 5 tokens) */
	CTX("rule cost 2, burst 5: two admitted, one token left over");
	EQ(drain(l, heavy, "k", 10), 2);
	d = dec1(l, heavy, "k");
	EQ(d.allowed, false);
	EQ(d.remaining, 1);
}

/* ---- missing keys -------------------------------------------------------------- */

static void test_missing_key_refused(void **state)
{
	struct xrl_http_cfg *c = cfg_rules("a 1/h 3, b 1/h 3");
	struct xrl_limiter *l = lim_done(c);
	const struct xrl_http_rule *a = &c->rules[0], *b = &c->rules[1], *rs[2] = { a, b };
	const char *ks[2] = { "k", NULL };
	struct xrl_decision d;
	struct xrl_limiter_stats s;

	CTX("b's key missing (NULL)");
	/* retry=0: 401 without Retry-After, waiting never helps */
	WANT_RULE(dec1(l, b, NULL), b,
		  "!allowed missing limit=3 remaining=0 retry=0 !penalized !shed");
	for (int i = 0; i < 5; i++) {
		CTX("a with key k, b missing: request %d", i);
		EQ(xrl_limiter_decide(l, rs, ks, NULL, 2, &d), 0);
		WANT_RULE(d, b, "!allowed missing");
	}
	CTX("a's bucket after 5 refusals for b's missing key");
	EQ(drain(l, a, "k", 10), 3);
	CTX("stats");
	s = stats(l);
	EQ(s.decisions, 6 + 4);
	EQ(s.refused, 6 + 1);
	EQ(s.allowed, 3);
}

/* A shadow rule's missing-key refusal is a shadow refusal: counted, not enforced. */
static void test_missing_key_shadow_rule(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;
	const struct xrl_http_rule *sh;
	struct xrl_decision d;
	struct xrl_limiter_stats s;

	CTX("shadow rule 1/h burst 3, key missing");
	sh = &c->rules[rule_add(c, "shadowed", "1/h", 3)];
	c->rules[0].shadow = true;
	cfg_done(c);
	l = lim_new(c);
	d = dec1(l, sh, NULL);
	EQ(d.allowed, true);
	s = stats(l);
	EQ(s.refused, 0);
	EQ(s.shadow_refused, 1);
}

/*
 * One million unique keys, each one request on a slow rule (no bucket is
 * ever idle): the table never grows past its capacity, every insert is a
 * new key, an idle eviction or an active one, and memory stays put.
 *
 * Eviction, as documented at the top of limiter.c: idle buckets first, then
 * among 8 busy slots the least recently used (to the second), then the one
 * closest to full (smallest TAT). This flood runs within about one second,
 * so recency ties and the TAT decides:
 *  - a hot key that has been drained on a rule as slow as the flood's (TAT =
 *    first use + 3 h) is never the victim of one-request keys (TAT = their
 *    time + 1 h) and stays refused throughout;
 *  - a key that took a single token before the flood (the oldest TAT of
 *    all) loses its state: it is full again, the one token it had spent;
 *  - a drained hot key of a faster rule (1/6s burst 3: TAT = now + 18 s) is
 *    the smallest TAT in its window whenever a 1/h flood key lands there, so
 *    it is evicted again and again and each time gets its burst back.
 */
static void test_flood_bounded_slow_rate(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;
	const struct xrl_http_rule *flood, *hot, *quick;
	struct xrl_limiter_stats s;
	__u64 hot_allowed = 0, quick_allowed = 0, hot_ins = 0, quick_ins = 0, checks = 0;
	__u64 rss0, rss1, t0, n0;
	char key[32];

	CTX("flood 1/h burst 1, hot 1/h burst 3, quick 1/6s burst 3, memory_max_keys %u", TABLE);
	flood = &c->rules[rule_add(c, "flood", "1/h", 1)];
	hot = &c->rules[rule_add(c, "hot", "1/h", 3)];
	quick = &c->rules[rule_add(c, "quick", "1/6s", 3)];
	c->memory_max_keys = TABLE;
	cfg_done(c);
	l = lim_new(c);

	CTX("warm key: one token before the flood");
	EQ(dec1(l, flood, "warm").allowed, true);
	EQ(dec1(l, flood, "warm").allowed, false);

	rss0 = rss_bytes();
	t0 = mono();
	for (__u32 i = 0; i < FLOOD; i++) {
		snprintf(key, sizeof(key), "flood-%u", i);
		if (!dec1(l, flood, key).allowed) {
			CTX("flood key %u (never seen before)", i);
			fail_msg("[%s] refused: a new key must be admitted", ctx);
		}
		if (i % 1000 == 0) {
			checks++;
			n0 = inserts(l);
			hot_allowed += dec1(l, hot, "hot").allowed;
			hot_ins += inserts(l) - n0;
			n0 = inserts(l);
			quick_allowed += dec1(l, quick, "hot").allowed;
			quick_ins += inserts(l) - n0;
		}
	}
	rss1 = rss_bytes();
	s = stats(l);
	print_message("  flood: %u keys in %.2f s, RSS %+lld KiB; keys %llu, evictions "
		      "idle %llu active %llu; quick key re-inserted %llu times, %llu of %llu "
		      "checks admitted\n",
		      FLOOD, (double)(mono() - t0) / SEC,
		      ((long long)rss1 - (long long)rss0) / 1024, (ull)s.keys,
		      (ull)s.evictions_idle, (ull)s.evictions_active, (ull)quick_ins - 1,
		      (ull)quick_allowed, (ull)checks);

	CTX("hot key (1/h burst 3) checked %llu times between the flood's keys", (ull)checks);
	EQ(hot_ins, 1);
	EQ(hot_allowed, 3);
	EQ(dec1(l, hot, "hot").allowed, false);
	CTX("quick key (1/6s burst 3, drained: TAT now + 18 s) during a 1/h flood");
	GE(quick_ins, 2);
	GE(quick_allowed, 3 + quick_ins - 1);

	CTX("table after the flood");
	LE(s.keys, TABLE);
	GE(s.keys, TABLE * 99 / 100);
	/* no bucket of a 1/h rule is idle within the test: every eviction
	 * evicted state, and is counted as such */
	EQ(s.evictions_idle, 0);
	/* every insert: flood keys, warm, hot (once), quick (quick_ins) */
	EQ(s.keys + s.evictions_idle + s.evictions_active, FLOOD + 2 + quick_ins);
	/* bounded memory: no allocation per key (the table is 1 MiB) */
	LE(rss1 > rss0 ? rss1 - rss0 : 0, 8ULL << 20);

	CTX("warm key after the flood (oldest TAT: evicted, full again)");
	EQ(dec1(l, flood, "warm").allowed, true);
	s = stats(l);
	EQ(s.keys + s.evictions_idle + s.evictions_active, FLOOD + 3 + quick_ins);
	LE(s.keys, TABLE);
	EQ(s.decisions, 2 + FLOOD + 2 * checks + 1 + 1);
}

/*
 * The same flood on a fast rule (1,000,000/s, burst 1: a bucket is full
 * again 1 µs after its request): buckets are idle by the time they are
 * evicted, so evictions are of idle buckets and none of state.
 */
static void test_flood_evicts_idle_first(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;
	const struct xrl_http_rule *r;
	struct xrl_limiter_stats s;
	char key[32];

	CTX("1000000/s burst 1, memory_max_keys %u", TABLE);
	r = &c->rules[rule_add(c, "fast", "1000000/s", 1)];
	c->memory_max_keys = TABLE;
	cfg_done(c);
	l = lim_new(c);
	for (__u32 i = 0; i < FLOOD; i++) {
		snprintf(key, sizeof(key), "idle-%u", i);
		(void)dec1(l, r, key);
	}
	s = stats(l);
	CTX("table after a flood of buckets that empty within 1 µs");
	LE(s.keys, TABLE);
	EQ(s.keys + s.evictions_idle + s.evictions_active, FLOOD);
	EQ(s.evictions_active, 0);
	GE(s.evictions_idle, FLOOD - TABLE);
}

static void test_penalty_two_windows(void **state)
{
	/* penalty { strikes 2, window 1s, base 2s, max 8s } */
	struct xrl_http_cfg *c = cfg_rules("login 1/h 1, watch 1/h 1 shadow");
	const struct xrl_http_rule *r = &c->rules[0], *sh = &c->rules[1];
	struct xrl_limiter *l;
	struct xrl_decision d;

	penalty_cfg(c, 2, 1 * SEC, 2 * SEC, 8 * SEC);
	l = lim_done(c);
	align_window(1 * SEC);
	EQ(dec1(l, r, "mallory").allowed, true);
	/* many refusals in one window are one strike */
	for (int i = 0; i < 5; i++) {
		CTX("mallory: refusal %d in the first window", i);
		WANT(dec1(l, r, "mallory"), "!allowed !penalized");
	}
	EQ(stats(l).penalties, 0);
	/* a shadow rule's refusals never strike */
	EQ(dec1(l, sh, "eve").allowed, true);
	sleep_ns(1100 * MS);
	CTX("mallory: refused in a second window (the second strike)");
	d = WANT(dec1(l, r, "mallory"), "!allowed !penalized");
	LE(d.retry_after_s, 3600 - 1);
	GE(d.retry_after_s, 3600 - 2);
	EQ(stats(l).penalties, 1);
	CTX("mallory: the next request, under penalty (RateLimit's r= and t= agree with Retry-After)");
	d = WANT_RULE(dec1(l, r, "mallory"), r, "!allowed penalized limit=1 retry=2 remaining=0");
	EQ(d.reset_s, d.retry_after_s);

	CTX("bob: another key of the same rule");
	WANT(dec1(l, r, "bob"), "allowed !penalized");
	WANT(dec1(l, r, "bob"), "!allowed !penalized");
	CTX("mallory on another rule (a bucket of its own)");
	WANT(dec1(l, sh, "mallory"), "allowed !penalized");
	CTX("eve: shadow refusals in two windows");
	for (int i = 0; i < 3; i++)
		EQ(dec1(l, sh, "eve").allowed, true);
	EQ(stats(l).penalties, 1);
}

/*
 * One run of test_penalty_escalates on a fresh limiter. The steps lean on
 * the scheduler: two strikes count together only within 2 windows (under
 * 200 ms), a 250 ms penalty is seen only if the next request comes within
 * 250 ms, offences are forgiven after 1 s of quiet, and the last check is
 * 300 ms into a 500 ms penalty. Each budget is measured; a run held past
 * one returns false (a precondition not met, not a finding) and is run
 * again. Within the budgets every check is exact.
 */
static bool penalty_escalates_once(const struct xrl_http_cfg *c, const struct xrl_http_rule *r)
{
	struct xrl_limiter *l = lim_new(c);
	struct xrl_decision d, d2;
	__u64 t0 = mono(), t1, t2, t3;

	EQ(dec1(l, r, "k").allowed, true);
	EQ(dec1(l, r, "k").allowed, false);
	sleep_ns(110 * MS);
	CTX("second window: the first offence");
	t1 = mono();
	d = dec1(l, r, "k");
	d2 = dec1(l, r, "k");
	if (mono() - t0 >= 200 * MS || mono() - t1 >= 250 * MS)
		return false;
	EQ(d.penalized, false);
	EQ(d2.penalized, true);
	EQ(stats(l).penalties, 1);
	sleep_ns(300 * MS);
	CTX("300 ms after a 250 ms penalty: refused by the bucket again (a strike)");
	t2 = mono();
	d = dec1(l, r, "k");
	EQ(d.allowed, false);
	EQ(d.penalized, false);
	sleep_ns(110 * MS);
	CTX("the next window: the second offence");
	t3 = mono();
	d = dec1(l, r, "k");
	if (mono() - t2 >= 200 * MS || mono() - t1 >= 1 * SEC)
		return false;
	EQ(d.penalized, false);
	EQ(stats(l).penalties, 2);
	sleep_ns(300 * MS);
	CTX("300 ms into the second penalty (2 x 250 ms)");
	d = dec1(l, r, "k");
	if (mono() - t3 >= 500 * MS)
		return false;
	EQ(d.penalized, true);
	EQ(d.retry_after_s, 1);
	return true;
}

/* Refused in `strikes` windows: a penalty of base, then 2 x base (at most max). */
static void test_penalty_escalates(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	const struct xrl_http_rule *r;
	int run = 0;

	CTX("1/h burst 1, penalty { strikes 2, window 100ms, base 250ms, max 500ms }");
	r = &c->rules[rule_add(c, "login", "1/h", 1)];
	penalty_cfg(c, 2, 100 * MS, 250 * MS, 500 * MS);
	cfg_done(c);
	while (!penalty_escalates_once(c, r) && ++run < 5)
		print_message("[%s] held past a timing budget, run %d again\n", ctx, run + 1);
	CTX("5 runs: each was held past a timing budget by the scheduler");
	LE(run, 4);
}

/* As in the packet tier: more than 2 x max without an offence forgives. */
static void test_penalty_forgiven_after_quiet(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;
	const struct xrl_http_rule *r;

	CTX("1/h burst 1, penalty { strikes 2, window 100ms, base 250ms, max 500ms }");
	r = &c->rules[rule_add(c, "login", "1/h", 1)];
	penalty_cfg(c, 2, 100 * MS, 250 * MS, 500 * MS);
	cfg_done(c);
	l = lim_new(c);

	EQ(dec1(l, r, "k").allowed, true);
	EQ(dec1(l, r, "k").allowed, false);
	sleep_ns(110 * MS);
	CTX("the first offence");
	EQ(dec1(l, r, "k").penalized, false);
	EQ(stats(l).penalties, 1);
	sleep_ns(1100 * MS); /* quiet for more than 2 x max */
	EQ(dec1(l, r, "k").penalized, false);
	sleep_ns(110 * MS);
	CTX("an offence after 1.1 s of quiet (> 2 x max)");
	EQ(dec1(l, r, "k").penalized, false);
	EQ(stats(l).penalties, 2);
	sleep_ns(300 * MS);
	CTX("300 ms into a penalty that should be base (250 ms) again");
	EQ(dec1(l, r, "k").penalized, false);
}

static void test_concurrent_same_key(void **state)
{
	/* 4 threads x 2500 decisions, one key */
	struct xrl_http_cfg *c = cfg_rules("api 1/h 1000");
	struct xrl_limiter *l = lim_done(c);
	struct worker w[4];
	struct xrl_limiter_stats s;
	__u64 allowed;

	allowed = run_workers(w,
			      &(struct worker){
				      .l = l, .rules = { &c->rules[0] }, .n_rules = 1, .n = 2500 },
			      worker_same_key);
	CTX("4 threads x 2500 decisions, one key, 1/h burst 1000");
	EQ(allowed, 1000);
	s = stats(l);
	EQ(s.decisions, 10000);
	EQ(s.allowed, 1000);
	EQ(s.refused, 9000);
}

/*
 * Requests matched by three rules (bursts 50, 30, 1000) from 4 threads in
 * different rule orders: no deadlock, and "all admit or none is charged"
 * holds between threads, so the tightest rule admits exactly its burst per
 * key.
 */
static void test_concurrent_multi_rule(void **state)
{
	/* 4 threads x 20000 decisions, 8 keys */
	struct xrl_http_cfg *c = cfg_rules("a 1/h 50, b 1/h 30, c 1/h 1000");
	struct xrl_limiter *l;
	struct worker w[4];
	__u64 allowed, per_key[8] = { 0 };

	c->memory_max_keys = 1024;
	l = lim_done(c);
	allowed =
		run_workers(w,
			    &(struct worker){ .l = l,
					      .rules = { &c->rules[0], &c->rules[1], &c->rules[2] },
					      .n_rules = 3,
					      .n = 20000 },
			    worker_multi);
	for (int i = 0; i < 4; i++)
		for (int k = 0; k < 8; k++)
			per_key[k] += w[i].allowed_key[k];
	for (int k = 0; k < 8; k++) {
		CTX("key k%d: admitted by all three rules", k);
		EQ(per_key[k], 30);
	}
	CTX("totals");
	EQ(allowed, 8 * 30);
	EQ(stats(l).decisions, 80000);
	for (int k = 0; k < 8; k++) {
		char key[16];

		snprintf(key, sizeof(key), "k%d", k);
		CTX("key k%d afterwards: rule a (burst 50) was charged 30", k);
		EQ(drain(l, &c->rules[0], key, 100), 20);
		CTX("key k%d afterwards: rule c (burst 1000) was charged 30", k);
		EQ(drain(l, &c->rules[2], key, 2000), 970);
	}
}

/* The bucket identities' digest: SipHash-2-4-128's published vector for the
 * key 00..0f and the messages "", 00 and 00 01 (vectors.h). */
static void test_siphash128_vectors(void **state)
{
	const __u64 k[2] = { 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL };
	unsigned char in[15];
	__u64 o[2];

	for (int i = 0; i < 15; i++)
		in[i] = (unsigned char)i;
	CTX("siphash128(00..0f, \"\")");
	xrl_siphash128(k, in, 0, o);
	EQ(o[0], 0xe6a825ba047f81a3ULL);
	EQ(o[1], 0x930255c71472f66dULL);
	CTX("siphash128(00..0f, 00)");
	xrl_siphash128(k, in, 1, o);
	EQ(o[0], 0x44af996bd8c187daULL);
	EQ(o[1], 0x45fc229b11597634ULL);
	CTX("siphash128(00..0f, 00 01)");
	xrl_siphash128(k, in, 2, o);
	EQ(o[0], 0xc75da4a48d227781ULL);
	EQ(o[1], 0xe4ff0af6de8ba3fcULL);
}

static void test_reader_guard(void **state)
{
	/* a decision's 8 buckets and 8 slot sets, two elements each */
	enum { FULL = XRL_REDIS_CALL_MAX * (1 + 4 * XRL_HTTP_MAX_MATCH) };
	static char buf[2 * (16 + FULL * 4)];
	size_t len = 0;

	CTX("\"*400000000\\r\\n\"");
	EQ(guarded_read("*400000000\r\n", 12), -1);
	CTX("two replies of %d elements", FULL);
	for (int r = 0; r < 2; r++) {
		len += (size_t)sprintf(buf + len, "*%d\r\n", FULL);
		for (int i = 0; i < FULL; i++)
			len += (size_t)sprintf(buf + len, ":1\r\n");
	}
	EQ(guarded_read(buf, len), 2);
	CTX("a reply of %d + 1 elements in two arrays", FULL);
	len = (size_t)sprintf(buf, "*2\r\n*%d\r\n", FULL - 2);
	for (int i = 0; i < FULL - 2; i++)
		len += (size_t)sprintf(buf + len, ":1\r\n");
	len += (size_t)sprintf(buf + len, "*2\r\n:1\r\n:1\r\n");
	EQ(guarded_read(buf, len), -1);
}

static void test_concurrent_reload_penalty(void **state)
{
	struct xrl_http_cfg *c = cfg_new(), *c2 = cfg_new();
	struct reload_arg a = {};
	pthread_t t[2];

	CTX("2 threads deciding, penalties on, 300 reloads");
	rule_add(c, "api", "1/h", 1);
	penalty_cfg(c, 1, 10 * MS, 1 * MS, 4 * MS);
	cfg_done(c);
	*c2 = *c;
	penalty_cfg(c2, 2, 20 * MS, 2 * MS, 8 * MS);
	a.l = lim_new(c);
	a.r = &c->rules[0];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reload_decider, &a), 0);
	for (int i = 0; i < 300; i++) {
		xrl_limiter_set_cfg(a.l, i % 2 ? c : c2);
		sleep_ns(100 * US);
	}
	atomic_store(&a.stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	EQ(a.errors, 0);
	GE(stats(a.l).penalties, 1);
}

static void test_model_memory(void **state)
{
	static _Atomic __u64 clk = 400 * DAY;
	struct xrl_http_cfg *c = model_cfg(NULL, XRL_BE_OPEN);
	struct model m = { .what = "memory", .clk = &clk, .back = true };

	m.l = lim_new(c);
	m.r = &c->rules[0];
	model_run(&m, 4000);
}

/* Redis down (port 1 refuses): every decision by the local fallback. */
static void test_model_local(void **state)
{
	static _Atomic __u64 clk = 400 * DAY;
	struct xrl_http_cfg *c = model_cfg("redis://127.0.0.1:1", XRL_BE_LOCAL);
	struct model m = { .what = "local fallback", .clk = &clk, .back = true };

	m.l = lim_new(c);
	m.r = &c->rules[0];
	model_run(&m, 4000);
}

/* ---- per-key overrides (xrlctl override) ------------------------------------- */

static struct xrl_ovr ovr(const char *rule, const char *key, __u64 tokens, __u64 per_ns,
			  __u32 burst, __s64 ttl_ms)
{
	struct xrl_ovr e = { .rate = { tokens, per_ns }, .burst = burst };

	snprintf(e.rule, sizeof(e.rule), "%s", rule);
	snprintf(e.key, sizeof(e.key), "%s", key);
	e.until_ms = (__u64)((__s64)xrl_ovr_now_ms() + ttl_ms);
	return e;
}

/* One key's rate and burst raised, another's lowered; the rest keep the rule's. */
static void test_override_per_key(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;
	const struct xrl_http_rule *r;
	struct xrl_ovr e, got[4];
	struct xrl_decision d;

	CTX("rule holds 1/h burst 2; vip: 1/h burst 5; slow: 1/h burst 1");
	r = &c->rules[rule_add(c, "holds", "1/h", 2)];
	cfg_done(c);
	l = lim_new(c);
	e = ovr("holds", "vip", 1, 3600 * XRL_NSEC_PER_SEC, 5, 60000);
	EQ(xrl_limiter_override_set(l, &e), 0);
	e = ovr("holds", "slow", 1, 3600 * XRL_NSEC_PER_SEC, 1, 60000);
	EQ(xrl_limiter_override_set(l, &e), 0);
	EQ(drain(l, r, "vip", 10), 5);
	EQ(drain(l, r, "slow", 10), 1);
	EQ(drain(l, r, "other", 10), 2);
	d = dec1(l, r, "vip");
	EQ(d.allowed, false);
	EQ(d.limit, 5);
	EQ(d.tau_ns, 5 * 3600 * XRL_NSEC_PER_SEC);
	CTX("list: two entries");
	EQ(xrl_limiter_override_list(l, got, 4), 2);
	CTX("set again replaces (burst 7: two more for vip)");
	e = ovr("holds", "vip", 1, 3600 * XRL_NSEC_PER_SEC, 7, 60000);
	EQ(xrl_limiter_override_set(l, &e), 0);
	EQ(xrl_limiter_override_list(l, got, 4), 2);
	EQ(drain(l, r, "vip", 10), 2);
	CTX("del: vip is back on the rule's burst (its bucket is spent)");
	EQ(xrl_limiter_override_del(l, "holds", "vip"), 0);
	EQ(xrl_limiter_override_del(l, "holds", "vip"), -ENOENT);
	EQ(drain(l, r, "vip", 10), 0);
	CTX("an expired override is no override");
	e = ovr("holds", "gone", 1, 3600 * XRL_NSEC_PER_SEC, 9, -1);
	EQ(xrl_limiter_override_set(l, &e), 0);
	EQ(drain(l, r, "gone", 10), 2);
	EQ(xrl_limiter_override_list(l, got, 4), 1);
	CTX("no bucket has rate 0 or burst 0");
	e = ovr("holds", "bad", 0, 3600 * XRL_NSEC_PER_SEC, 3, 60000);
	EQ(xrl_limiter_override_set(l, &e), -EINVAL);
	e = ovr("holds", "bad", 1, 3600 * XRL_NSEC_PER_SEC, 0, 60000);
	EQ(xrl_limiter_override_set(l, &e), -EINVAL);
	CTX("a cost above the override's burst");
	e = ovr("holds", "tiny", 1, XRL_NSEC_PER_SEC, 1, 60000);
	EQ(xrl_limiter_override_set(l, &e), 0);
	EQ(decc(l, r, "tiny", 2, &d), -E2BIG);
}

/* The table is bounded: XRL_OVR_MAX entries, then -ENOSPC; a full table
 * still replaces and deletes. */
/* A fresh bucket of item it, shared at live: does it admit, and at what
 * debt a token (NODE_SHARE, node_share.c)? */
static bool share_admits(const struct xrl_http_rule *r, __u32 live, __u64 *inc)
{
	struct xrl_lim_item it = { .r = r, .g = r->g, .rate = r->rate, .inc = r->g.emit_ns };
	struct xrl_http_rule tmp;
	const struct xrl_http_rule *orig;
	__u64 now = 1000 * SEC, tat;

	EQ(xrl_lim_share_at(&it, 1, &tmp, &orig, live), live);
	*inc = it.inc;
	return xrl_gcra_decide(0, now, it.inc, it.g.tau_ns, &tat);
}

/*
 * NODE_SHARE while Redis is away: a burst below the live count was never
 * admitted (the share's debt a token, emit * live, above the whole rule's
 * tau), and a share slower than 1 token per 2^52 ns fell back to the whole
 * rule's rate on every instance.
 */
static void test_node_share_small_and_slow(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	const struct xrl_http_rule *small, *slow, *big;
	__u64 inc;

	(void)state;
	small = &c->rules[rule_add(c, "small", "10/min", 5)];
	slow = &c->rules[rule_add(c, "slow", "1/d", 100)];
	big = &c->rules[rule_add(c, "big", "10/min", 30)];
	cfg_done(c);
	CTX("burst 30 over 3 live: 10 each, a token at 3 x 6 s");
	EQ(share_admits(big, 3, &inc), true);
	EQ(inc, 18 * SEC);
	CTX("burst 5 over 10 live: one token each, a token at 10 x 6 s");
	EQ(share_admits(small, 10, &inc), true);
	EQ(inc, 60 * SEC);
	CTX("1/d over 100 live: one token each per 100 days at least");
	EQ(share_admits(slow, 100, &inc), true);
	CHECK_(inc >= 100 * 86400 * SEC, "a token's debt %llu ns, want 100 days or more\n",
	       (unsigned long long)inc);
}

static void test_override_bounded(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;
	struct xrl_ovr e;
	char k[32];

	rule_add(c, "holds", "1/h", 2);
	cfg_done(c);
	l = lim_new(c);
	for (int i = 0; i < XRL_OVR_MAX; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		e = ovr("holds", k, 1, XRL_NSEC_PER_SEC, 3, 60000);
		CTX("override %d", i);
		EQ(xrl_limiter_override_set(l, &e), 0);
	}
	CTX("one more");
	e = ovr("holds", "more", 1, XRL_NSEC_PER_SEC, 3, 60000);
	EQ(xrl_limiter_override_set(l, &e), -ENOSPC);
	e = ovr("holds", "k7", 1, XRL_NSEC_PER_SEC, 4, 60000);
	EQ(xrl_limiter_override_set(l, &e), 0);
	EQ(xrl_limiter_override_del(l, "holds", "k8"), 0);
	e = ovr("holds", "more", 1, XRL_NSEC_PER_SEC, 3, 60000);
	EQ(xrl_limiter_override_set(l, &e), 0);
}

const struct CMUnitTest xrl_lim_memory_tests[] = {
	cmocka_unit_test_teardown(test_exact_burst_then_refused, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_retry_after_truth, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_independent_keys, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_two_rules_refusal_spends_nothing, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_second_request_reported_rule, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_shadow_refusals_allow_and_count, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_cost_above_burst, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_cost_zero_and_rule_cost, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_missing_key_refused, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_missing_key_shadow_rule, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_flood_bounded_slow_rate, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_flood_evicts_idle_first, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_penalty_two_windows, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_penalty_escalates, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_penalty_forgiven_after_quiet, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_concurrent_same_key, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_concurrent_multi_rule, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_siphash128_vectors, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_reader_guard, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_concurrent_reload_penalty, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_model_memory, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_model_local, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_override_per_key, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_override_bounded, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_node_share_small_and_slow, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_callers_peaks, xrl_lim_fx_teardown),
};
const size_t xrl_lim_memory_n = sizeof(xrl_lim_memory_tests) / sizeof(xrl_lim_memory_tests[0]);
