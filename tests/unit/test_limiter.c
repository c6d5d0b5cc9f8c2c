// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_limiter.c - unit tests of the identity tier's bucket store
 * (user/http/limiter.c): xrl_limiter_new / decide / free with the memory backend,
 * and the Redis backend against a Redis that is not there (127.0.0.1 port 1,
 * and a local socket that accepts and never answers) for the breaker and the
 * on_backend_error fallbacks. No root, no network. The tests of batches,
 * precision, NOSCRIPT, outages and shared counts start a redis-server of
 * their own on a loopback port, and are skipped when there is none.
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
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "check.h"

#include "http/http.h"
#include "log.h"
#include "xrl.h"

/* Which rule a decision names: compared by pointer, printed by name. */
#define RULE_IS(got, want) do {						\
	const struct xrl_http_rule *g_ = (got), *w_ = (want);		\
	if (g_ != w_)							\
		print_error("[%s] %s = %s, want %s = %s\n", ctx, #got,	\
			    g_ ? g_->name : "(none)", #want,		\
			    w_ ? w_->name : "(none)");			\
	assert_ptr_equal(g_, w_);					\
} while (0)

/* ---- helpers --------------------------------------------------------------- */

static __u64 mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * SEC + (__u64)ts.tv_nsec;
}

/* Sleep at least ns (a sleep may overshoot, never undershoot). */
static void sleep_ns(__u64 ns)
{
	__u64 until = mono() + ns;
	struct timespec ts = { .tv_sec = (time_t)(until / SEC), .tv_nsec = (long)(until % SEC) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* A fresh configuration (heap: it is ~40 KiB) with memory_max_keys 65536. */
static struct xrl_http_cfg *cfg_new(void)
{
	struct xrl_http_cfg *c = malloc(sizeof(*c));

	assert_non_null(c);
	xrl_http_cfg_init(c);
	c->memory_max_keys = 65536;
	return c;
}

/* Add a rule keyed by a header; returns its index (pointers are taken after
 * cfg_done, the array does not move). */
static __u32 rule_add(struct xrl_http_cfg *c, const char *name, const char *rate, __u32 burst)
{
	struct xrl_http_rule *r;
	char err[256] = "";
	int rc;

	assert_true(c->n_rules < XRL_HTTP_MAX_RULES);
	r = &c->rules[c->n_rules];
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->key_kind = XRL_KEY_HEADER;
	snprintf(r->header, sizeof(r->header), "X-Api-Key");
	rc = xrl_rate_parse(rate, &r->rate, err, sizeof(err));
	if (rc)
		print_error("[%s] xrl_rate_parse(\"%s\") = %d: %s\n", ctx, rate, rc, err);
	assert_int_equal(rc, 0);
	r->burst = burst;
	r->cost = 1;
	r->on_backend_error = XRL_BE_OPEN;
	r->on_missing_key = XRL_MISSING_REFUSE;
	return c->n_rules++;
}

static void cfg_done(struct xrl_http_cfg *c)
{
	char err[256] = "";
	int rc = xrl_http_cfg_finish(c, err, sizeof(err));

	if (rc)
		print_error("[%s] xrl_http_cfg_finish = %d: %s\n", ctx, rc, err);
	assert_int_equal(rc, 0);
}

static struct xrl_limiter *lim_new(const struct xrl_http_cfg *c)
{
	struct xrl_limiter *l = NULL;
	int rc = xrl_limiter_new(c, &l);

	if (rc)
		print_error("[%s] xrl_limiter_new = %d\n", ctx, rc);
	assert_int_equal(rc, 0);
	assert_non_null(l);
	return l;
}

/* One request matched by one rule, the rule's own cost. */
static struct xrl_decision dec1(struct xrl_limiter *l, const struct xrl_http_rule *r,
				const char *key)
{
	struct xrl_decision d;
	int rc = xrl_limiter_decide(l, &r, &key, NULL, 1, &d);

	if (rc)
		print_error("[%s] xrl_limiter_decide(%s, \"%s\") = %d\n", ctx, r->name,
			    key ? key : "(null)", rc);
	assert_int_equal(rc, 0);
	return d;
}

/* One request matched by two rules, the same key for both. */
static struct xrl_decision dec2(struct xrl_limiter *l, const struct xrl_http_rule *a,
				const struct xrl_http_rule *b, const char *key)
{
	const struct xrl_http_rule *rs[2] = { a, b };
	const char *ks[2] = { key, key };
	struct xrl_decision d;
	int rc = xrl_limiter_decide(l, rs, ks, NULL, 2, &d);

	if (rc)
		print_error("[%s] xrl_limiter_decide(%s+%s, \"%s\") = %d\n", ctx, a->name,
			    b->name, key, rc);
	assert_int_equal(rc, 0);
	return d;
}

/* Decide (rule, key) until refused; the number allowed (at most cap + 1). */
static __u64 drain(struct xrl_limiter *l, const struct xrl_http_rule *r, const char *key,
		   __u64 cap)
{
	__u64 n = 0;

	while (n <= cap && dec1(l, r, key).allowed)
		n++;
	return n;
}

static struct xrl_limiter_stats stats(struct xrl_limiter *l)
{
	struct xrl_limiter_stats s;

	xrl_limiter_get_stats(l, &s);
	return s;
}

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

/* ---- exact burst, then refusals, with every decision field --------------- */

static void test_exact_burst_then_refused(void **state)
{
	static const struct { const char *rate; __u32 burst; __u64 emit_s; } t[] = {
		{ "1/6s",   5, 6 },
		{ "10/min", 10, 6 },
		{ "1/h",    3, 3600 },
		{ "1/h",    1, 3600 },
		{ "20/h",   40, 180 },
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

			CTX("rate %s burst %u: refusal %d after the burst", t[i].rate, t[i].burst, k);
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
		xrl_limiter_free(l);
		free(c);
	}
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
	xrl_limiter_free(l);
	free(c);
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
	xrl_limiter_free(l);
	free(c);
}

/* ---- check all, then take from all ----------------------------------------- */

static void test_two_rules_refusal_spends_nothing(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;
	const struct xrl_http_rule *site, *login;
	struct xrl_decision d;

	CTX("site 1/h burst 5, login 1/h burst 1");
	site = &c->rules[rule_add(c, "site", "1/h", 5)];
	login = &c->rules[rule_add(c, "login", "1/h", 1)];
	cfg_done(c);
	l = lim_new(c);

	/* both admit: the answer names the rule with the fewest tokens left */
	d = dec2(l, site, login, "k1");
	CTX("k1: site+login, both admit");
	EQ(d.allowed, true);
	EQ(d.n_rules, 2);
	RULE_IS(d.rule, login);
	EQ(d.limit, 1);
	EQ(d.remaining, 0);
	CTX("k1: site was charged once by the admitted request");
	EQ(drain(l, site, "k1", 10), 4);

	/* k2: login's bucket empty, then 10 requests matched by both */
	CTX("k2: login alone");
	EQ(dec1(l, login, "k2").allowed, true);
	for (int i = 0; i < 10; i++) {
		d = i & 1 ? dec2(l, login, site, "k2") : dec2(l, site, login, "k2");
		CTX("k2: request %d matched by site and login, login empty", i);
		EQ(d.allowed, false);
		RULE_IS(d.rule, login);
		EQ(d.limit, 1);
		EQ(d.remaining, 0);
		EQ(d.retry_after_s, 3600);
	}
	CTX("k2: site still has its full burst after 10 refusals by login");
	EQ(drain(l, site, "k2", 10), 5);

	/* and the other way round: site empty, login untouched */
	CTX("k3: site drained alone");
	EQ(drain(l, site, "k3", 10), 5);
	for (int i = 0; i < 5; i++) {
		CTX("k3: request %d matched by both, site empty", i);
		d = dec2(l, login, site, "k3");
		EQ(d.allowed, false);
		RULE_IS(d.rule, site);
		EQ(d.limit, 5);
	}
	CTX("k3: login still has its token");
	EQ(drain(l, login, "k3", 10), 1);

	CTX("stats");
	EQ(stats(l).decisions, 1 + 5 + 1 + 10 + 6 + 6 + 5 + 2);
	xrl_limiter_free(l);
	free(c);
}

/* A refusal by the rule with the longer wait is the one reported. */
static void test_refusal_reports_longest_wait(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;
	const struct xrl_http_rule *fast, *slow;
	struct xrl_decision d;

	CTX("fast 1/6s burst 1, slow 1/h burst 1");
	fast = &c->rules[rule_add(c, "fast", "1/6s", 1)];
	slow = &c->rules[rule_add(c, "slow", "1/h", 1)];
	cfg_done(c);
	l = lim_new(c);
	EQ(dec2(l, fast, slow, "k").allowed, true);
	d = dec2(l, fast, slow, "k");
	CTX("both empty: the answer is the one to wait longest for");
	EQ(d.allowed, false);
	RULE_IS(d.rule, slow);
	EQ(d.retry_after_s, 3600);
	xrl_limiter_free(l);
	free(c);
}

/* ---- shadow rules ------------------------------------------------------------ */

static void test_shadow_refusals_allow_and_count(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;
	const struct xrl_http_rule *enf, *sh;
	struct xrl_limiter_stats s;
	struct xrl_decision d;

	CTX("enforcing 1/h burst 100, shadow 1/h burst 2");
	enf = &c->rules[rule_add(c, "enforcing", "1/h", 100)];
	sh = &c->rules[rule_add(c, "shadowed", "1/h", 2)];
	c->rules[1].shadow = true;
	cfg_done(c);
	l = lim_new(c);

	for (int i = 1; i <= 5; i++) {
		d = dec2(l, enf, sh, "k");
		CTX("request %d matched by enforcing and shadow (shadow burst 2)", i);
		EQ(d.allowed, true);
		EQ(stats(l).shadow_refused, i > 2 ? i - 2 : 0);
	}
	/* the shadow rule's refusals did not stop the enforcing rule's charges */
	CTX("enforcing after 5 admitted requests");
	d = dec1(l, enf, "k");
	EQ(d.allowed, true);
	EQ(d.remaining, 100 - 6);
	/* a shadow rule alone never refuses */
	for (int i = 0; i < 3; i++) {
		CTX("shadow rule alone, request %d (empty)", i);
		d = dec1(l, sh, "k");
		EQ(d.allowed, true);
		EQ(d.penalized, false);
	}
	CTX("stats");
	s = stats(l);
	EQ(s.decisions, 9);
	EQ(s.allowed, 9);
	EQ(s.refused, 0);
	EQ(s.shadow_refused, 3 + 3);
	xrl_limiter_free(l);
	free(c);
}

/*
 * A shadow rule is invisible to clients: when the request is admitted the
 * headers (rule, limit, remaining, reset) come from an enforcing rule, not
 * from a shadow rule that would have refused (RateLimit: r=0 would make
 * well-behaved clients back off from a rule that is only being watched).
 */
static void test_shadow_rule_not_reported(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;
	const struct xrl_http_rule *enf, *sh;
	struct xrl_decision d;

	CTX("enforcing 1/h burst 100, shadow 1/h burst 1");
	enf = &c->rules[rule_add(c, "enforcing", "1/h", 100)];
	sh = &c->rules[rule_add(c, "shadowed", "1/h", 1)];
	c->rules[1].shadow = true;
	cfg_done(c);
	l = lim_new(c);
	EQ(dec2(l, enf, sh, "k").allowed, true);
	d = dec2(l, enf, sh, "k");
	CTX("admitted while the shadow rule would refuse: reported rule");
	EQ(d.allowed, true);
	RULE_IS(d.rule, enf);
	EQ(d.limit, 100);
	EQ(d.remaining, 98);
	xrl_limiter_free(l);
	free(c);
}

/* ---- costs ------------------------------------------------------------------- */

static void test_cost_above_burst(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;
	const struct xrl_http_rule *a, *b;
	const struct xrl_http_rule *rs[2];
	const char *ks[2] = { "k", "k" };
	__u32 costs[2];
	struct xrl_decision d;
	int rc;

	CTX("a 1/h burst 5, b 1/h burst 3");
	a = &c->rules[rule_add(c, "a", "1/h", 5)];
	b = &c->rules[rule_add(c, "b", "1/h", 3)];
	cfg_done(c);
	l = lim_new(c);
	rs[0] = a;
	rs[1] = b;

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
	EQ(d.allowed, true);
	EQ(d.remaining, 0);
	EQ(d.reset_s, 5 * 3600);
	CTX("cost 5 again");
	EQ(xrl_limiter_decide(l, rs, ks, costs, 1, &d), 0);
	EQ(d.allowed, false);
	/* all 5 tokens must come back: 5 emission intervals after the first */
	EQ(d.retry_after_s, 5 * 3600);
	xrl_limiter_free(l);
	free(c);
}

static void test_cost_zero_and_rule_cost(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;
	const struct xrl_http_rule *a, *heavy;
	const char *key = "k";
	__u32 zero = 0;
	struct xrl_decision d;
	__u64 keys0;

	CTX("a 1/h burst 2, heavy 1/h burst 5 cost 2");
	a = &c->rules[rule_add(c, "a", "1/h", 2)];
	heavy = &c->rules[rule_add(c, "heavy", "1/h", 5)];
	c->rules[1].cost = 2;
	cfg_done(c);
	l = lim_new(c);

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
	xrl_limiter_free(l);
	free(c);
}

/* ---- missing keys -------------------------------------------------------------- */

static void test_missing_key_refused(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;
	const struct xrl_http_rule *a, *b;
	const struct xrl_http_rule *rs[2];
	const char *ks[2] = { "k", NULL };
	struct xrl_decision d;
	struct xrl_limiter_stats s;

	CTX("a 1/h burst 3, b 1/h burst 3");
	a = &c->rules[rule_add(c, "a", "1/h", 3)];
	b = &c->rules[rule_add(c, "b", "1/h", 3)];
	cfg_done(c);
	l = lim_new(c);
	rs[0] = a;
	rs[1] = b;

	CTX("b's key missing (NULL)");
	d = dec1(l, b, NULL);
	EQ(d.allowed, false);
	EQ(d.missing_key, true);
	RULE_IS(d.rule, b);
	EQ(d.limit, 3);
	EQ(d.remaining, 0);
	EQ(d.retry_after_s, 1);
	EQ(d.penalized, false);
	EQ(d.shed, false);
	for (int i = 0; i < 5; i++) {
		CTX("a with key k, b missing: request %d", i);
		EQ(xrl_limiter_decide(l, rs, ks, NULL, 2, &d), 0);
		EQ(d.allowed, false);
		EQ(d.missing_key, true);
		RULE_IS(d.rule, b);
	}
	CTX("a's bucket after 5 refusals for b's missing key");
	EQ(drain(l, a, "k", 10), 3);
	CTX("stats");
	s = stats(l);
	EQ(s.decisions, 6 + 4);
	EQ(s.refused, 6 + 1);
	EQ(s.allowed, 3);
	xrl_limiter_free(l);
	free(c);
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
	xrl_limiter_free(l);
	free(c);
}

/* ---- hostile key cardinality ------------------------------------------------- */

#define FLOOD 1000000U
#define TABLE 65536U    /* memory_max_keys 65536: 64 shards x 1024 slots */

/* Every insert into the table is a new key, an idle eviction or an active one. */
static __u64 inserts(struct xrl_limiter *l)
{
	struct xrl_limiter_stats s = stats(l);

	return s.keys + s.evictions_idle + s.evictions_active;
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
		      "checks admitted\n", FLOOD, (double)(mono() - t0) / SEC,
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
	xrl_limiter_free(l);
	free(c);
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
	xrl_limiter_free(l);
	free(c);
}

/* ---- penalties ------------------------------------------------------------- */

static void penalty_cfg(struct xrl_http_cfg *c, __u32 strikes, __u64 window, __u64 base,
			__u64 max)
{
	c->penalty.enabled = true;
	c->penalty.strikes = strikes;
	c->penalty.window_ns = window;
	c->penalty.base_ns = base;
	c->penalty.max_ns = max;
}

static void test_penalty_two_windows(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;
	const struct xrl_http_rule *r, *sh;
	struct xrl_decision d;

	CTX("1/h burst 1, penalty { strikes 2, window 1s, base 2s, max 8s }");
	r = &c->rules[rule_add(c, "login", "1/h", 1)];
	sh = &c->rules[rule_add(c, "watch", "1/h", 1)];
	c->rules[1].shadow = true;
	penalty_cfg(c, 2, 1 * SEC, 2 * SEC, 8 * SEC);
	cfg_done(c);
	l = lim_new(c);

	align_window(1 * SEC);
	EQ(dec1(l, r, "mallory").allowed, true);
	/* many refusals in one window are one strike */
	for (int i = 0; i < 5; i++) {
		CTX("mallory: refusal %d in the first window", i);
		d = dec1(l, r, "mallory");
		EQ(d.allowed, false);
		EQ(d.penalized, false);
	}
	EQ(stats(l).penalties, 0);
	/* a shadow rule's refusals never strike */
	EQ(dec1(l, sh, "eve").allowed, true);
	sleep_ns(1100 * MS);
	CTX("mallory: refused in a second window (the second strike)");
	d = dec1(l, r, "mallory");
	EQ(d.allowed, false);
	EQ(d.penalized, false);
	LE(d.retry_after_s, 3600 - 1);
	GE(d.retry_after_s, 3600 - 2);
	EQ(stats(l).penalties, 1);
	CTX("mallory: the next request, under penalty");
	d = dec1(l, r, "mallory");
	EQ(d.allowed, false);
	EQ(d.penalized, true);
	RULE_IS(d.rule, r);
	EQ(d.limit, 1);
	EQ(d.retry_after_s, 2);

	CTX("bob: another key of the same rule");
	d = dec1(l, r, "bob");
	EQ(d.allowed, true);
	EQ(d.penalized, false);
	d = dec1(l, r, "bob");
	EQ(d.allowed, false);
	EQ(d.penalized, false);
	CTX("mallory on another rule (a bucket of its own)");
	d = dec1(l, sh, "mallory");
	EQ(d.allowed, true);
	EQ(d.penalized, false);
	CTX("eve: shadow refusals in two windows");
	for (int i = 0; i < 3; i++)
		EQ(dec1(l, sh, "eve").allowed, true);
	EQ(stats(l).penalties, 1);
	xrl_limiter_free(l);
	free(c);
}

/* Refused in `strikes` windows: a penalty of base, then 2 x base (at most max). */
static void test_penalty_escalates(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;
	const struct xrl_http_rule *r;
	struct xrl_decision d;

	CTX("1/h burst 1, penalty { strikes 2, window 100ms, base 250ms, max 500ms }");
	r = &c->rules[rule_add(c, "login", "1/h", 1)];
	penalty_cfg(c, 2, 100 * MS, 250 * MS, 500 * MS);
	cfg_done(c);
	l = lim_new(c);

	EQ(dec1(l, r, "k").allowed, true);
	EQ(dec1(l, r, "k").allowed, false);
	sleep_ns(110 * MS);
	CTX("second window: the first offence");
	EQ(dec1(l, r, "k").penalized, false);
	EQ(dec1(l, r, "k").penalized, true);
	EQ(stats(l).penalties, 1);
	sleep_ns(300 * MS);
	CTX("300 ms after a 250 ms penalty: refused by the bucket again (a strike)");
	d = dec1(l, r, "k");
	EQ(d.allowed, false);
	EQ(d.penalized, false);
	sleep_ns(110 * MS);
	CTX("the next window: the second offence");
	EQ(dec1(l, r, "k").penalized, false);
	EQ(stats(l).penalties, 2);
	sleep_ns(300 * MS);
	CTX("300 ms into the second penalty (2 x 250 ms)");
	d = dec1(l, r, "k");
	EQ(d.penalized, true);
	EQ(d.retry_after_s, 1);
	xrl_limiter_free(l);
	free(c);
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
	xrl_limiter_free(l);
	free(c);
}

/* ---- concurrency --------------------------------------------------------------- */

struct worker {
	struct xrl_limiter *l;
	const struct xrl_http_rule *rules[3];
	int n_rules;
	int n;             /* decisions */
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

static void test_concurrent_same_key(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;
	struct worker w[4];
	pthread_t th[4];
	pthread_barrier_t go;
	struct xrl_limiter_stats s;
	__u64 allowed = 0;

	CTX("4 threads x 2500 decisions, one key, 1/h burst 1000");
	rule_add(c, "api", "1/h", 1000);
	cfg_done(c);
	l = lim_new(c);
	pthread_barrier_init(&go, NULL, 4);
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ .l = l, .rules = { &c->rules[0] }, .n_rules = 1,
					.n = 2500, .id = i, .go = &go };
		assert_int_equal(pthread_create(&th[i], NULL, worker_same_key, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		EQ(w[i].errors, 0);
		allowed += w[i].allowed;
	}
	pthread_barrier_destroy(&go);
	EQ(allowed, 1000);
	s = stats(l);
	EQ(s.decisions, 10000);
	EQ(s.allowed, 1000);
	EQ(s.refused, 9000);
	xrl_limiter_free(l);
	free(c);
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

/*
 * Requests matched by three rules (bursts 50, 30, 1000) from 4 threads in
 * different rule orders: no deadlock, and "all admit or none is charged"
 * holds between threads, so the tightest rule admits exactly its burst per
 * key.
 */
static void test_concurrent_multi_rule(void **state)
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;
	struct worker w[4];
	pthread_t th[4];
	pthread_barrier_t go;
	__u64 allowed = 0, per_key[8] = { 0 };

	CTX("4 threads x 20000 decisions, 8 keys, rules of burst 50, 30, 1000 (1/h)");
	rule_add(c, "a", "1/h", 50);
	rule_add(c, "b", "1/h", 30);
	rule_add(c, "c", "1/h", 1000);
	c->memory_max_keys = 1024;
	cfg_done(c);
	l = lim_new(c);
	pthread_barrier_init(&go, NULL, 4);
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ .l = l,
					.rules = { &c->rules[0], &c->rules[1], &c->rules[2] },
					.n_rules = 3, .n = 20000, .id = i, .go = &go };
		assert_int_equal(pthread_create(&th[i], NULL, worker_multi, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		EQ(w[i].errors, 0);
		allowed += w[i].allowed;
		for (int k = 0; k < 8; k++)
			per_key[k] += w[i].allowed_key[k];
	}
	pthread_barrier_destroy(&go);
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
	xrl_limiter_free(l);
	free(c);
}

/* ---- Redis that is not there --------------------------------------------- */

static struct xrl_http_cfg *cfg_redis(const char *url, enum xrl_backend_err be, __u32 burst)
{
	struct xrl_http_cfg *c = cfg_new();
	char err[256] = "";
	int rc = xrl_http_backend_parse(url, c, err, sizeof(err));

	if (rc)
		print_error("[%s] xrl_http_backend_parse(%s) = %d: %s\n", ctx, url, rc, err);
	assert_int_equal(rc, 0);
	c->redis_timeout_ns = 50 * MS;
	rule_add(c, "api", "1/h", burst);
	c->rules[0].on_backend_error = be;
	cfg_done(c);
	return c;
}

/* Time one decision (ns). */
static __u64 timed(struct xrl_limiter *l, const struct xrl_http_rule *r, const char *key,
		   struct xrl_decision *d)
{
	__u64 t0 = mono();

	*d = dec1(l, r, key);
	return mono() - t0;
}

static void test_redis_down_open(void **state)
{
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_decision d;
	struct xrl_limiter_stats s;
	__u64 ns;

	CTX("redis://127.0.0.1:1, on_backend_error open, 1/h burst 2");
	c = cfg_redis("redis://127.0.0.1:1", XRL_BE_OPEN, 2);
	l = lim_new(c);
	EQ(xrl_limiter_breaker_state(l), 0);
	ns = timed(l, &c->rules[0], "k", &d);
	CTX("the first decision (connection refused)");
	EQ(d.allowed, true);
	EQ(d.backend_error, true);
	EQ(d.shed, false);
	LE(ns, c->redis_timeout_ns + 100 * MS);
	EQ(xrl_limiter_breaker_state(l), 1);
	for (int i = 1; i < 10; i++) {
		ns = timed(l, &c->rules[0], "k", &d);
		CTX("decision %d, breaker open: fails open, far beyond the burst", i);
		EQ(d.allowed, true);
		EQ(d.backend_error, true);
		LE(ns, 5 * MS);
	}
	CTX("stats");
	s = stats(l);
	EQ(s.decisions, 10);
	EQ(s.allowed, 10);
	EQ(s.backend_errors, 10);
	EQ(s.fallback_open, 10);
	EQ(s.breaker_open_skips, 9);
	EQ(s.fallback_closed + s.fallback_local + s.shed, 0);
	xrl_limiter_free(l);
	free(c);
}

static void test_redis_down_closed(void **state)
{
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_decision d;
	struct xrl_limiter_stats s;

	CTX("redis://127.0.0.1:1, on_backend_error closed");
	c = cfg_redis("redis://127.0.0.1:1", XRL_BE_CLOSED, 2);
	l = lim_new(c);
	for (int i = 0; i < 3; i++) {
		CTX("decision %d: shed", i);
		d = dec1(l, &c->rules[0], "k");
		EQ(d.allowed, false);
		EQ(d.shed, true);
		EQ(d.backend_error, true);
		RULE_IS(d.rule, &c->rules[0]);
		EQ(d.limit, 2);
		/* come back when the breaker tries again (cooldown 1 s) */
		EQ(d.retry_after_s, 1);
	}
	CTX("stats");
	s = stats(l);
	EQ(s.shed, 3);
	EQ(s.fallback_closed, 3);
	EQ(s.backend_errors, 3);
	EQ(s.allowed, 0);
	EQ(s.fallback_open + s.fallback_local, 0);
	xrl_limiter_free(l);
	free(c);
}

static void test_redis_down_local(void **state)
{
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_decision d;
	struct xrl_limiter_stats s;

	CTX("redis://127.0.0.1:1, on_backend_error local, 1/h burst 3");
	c = cfg_redis("redis://127.0.0.1:1", XRL_BE_LOCAL, 3);
	l = lim_new(c);
	for (__u32 k = 1; k <= 3; k++) {
		CTX("local bucket, request %u of the burst", k);
		d = dec1(l, &c->rules[0], "k");
		EQ(d.allowed, true);
		EQ(d.backend_error, true);
		RULE_IS(d.rule, &c->rules[0]);
		EQ(d.remaining, 3 - k);
	}
	CTX("local bucket after the burst");
	d = dec1(l, &c->rules[0], "k");
	EQ(d.allowed, false);
	EQ(d.backend_error, true);
	EQ(d.shed, false);
	EQ(d.remaining, 0);
	EQ(d.retry_after_s, 3600);
	CTX("another key: its own local bucket");
	EQ(drain(l, &c->rules[0], "other", 10), 3);
	CTX("stats");
	s = stats(l);
	EQ(s.fallback_local, 4 + 4);
	EQ(s.allowed, 6);
	EQ(s.refused, 2);
	EQ(s.keys, 2);
	xrl_limiter_free(l);
	free(c);
}

/* One request matched by an open rule and a local one: the local one decides. */
static void test_redis_down_mixed(void **state)
{
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	const struct xrl_http_rule *open, *local, *closed;
	struct xrl_decision d;

	CTX("redis://127.0.0.1:1, rules open (burst 1), local (burst 2), closed");
	c = cfg_redis("redis://127.0.0.1:1", XRL_BE_OPEN, 1);
	rule_add(c, "local", "1/h", 2);
	c->rules[1].on_backend_error = XRL_BE_LOCAL;
	rule_add(c, "closed", "1/h", 5);
	c->rules[2].on_backend_error = XRL_BE_CLOSED;
	cfg_done(c);
	l = lim_new(c);
	open = &c->rules[0];
	local = &c->rules[1];
	closed = &c->rules[2];
	for (int i = 1; i <= 2; i++) {
		CTX("open+local, request %d", i);
		d = dec2(l, open, local, "k");
		EQ(d.allowed, true);
		EQ(d.backend_error, true);
		RULE_IS(d.rule, local);
	}
	CTX("open+local, local empty");
	d = dec2(l, open, local, "k");
	EQ(d.allowed, false);
	RULE_IS(d.rule, local);
	CTX("local+closed: shed");
	d = dec2(l, local, closed, "k2");
	EQ(d.allowed, false);
	EQ(d.shed, true);
	RULE_IS(d.rule, closed);
	xrl_limiter_free(l);
	free(c);
}

/* After the cooldown one probe goes to Redis; it fails and the breaker re-opens. */
static void test_redis_breaker_probe(void **state)
{
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_decision d;
	struct xrl_limiter_stats s0, s1;

	CTX("redis://127.0.0.1:1, cooldown 200 ms");
	c = cfg_redis("redis://127.0.0.1:1", XRL_BE_OPEN, 2);
	c->breaker_cooldown_ns = 200 * MS;
	l = lim_new(c);
	d = dec1(l, &c->rules[0], "k");
	EQ(d.backend_error, true);
	EQ(xrl_limiter_breaker_state(l), 1);
	d = dec1(l, &c->rules[0], "k");
	s0 = stats(l);
	EQ(s0.breaker_open_skips, 1);
	sleep_ns(250 * MS);
	CTX("the first decision after the cooldown: a probe, not a skip");
	d = dec1(l, &c->rules[0], "k");
	EQ(d.allowed, true);
	EQ(d.backend_error, true);
	s1 = stats(l);
	EQ(s1.breaker_open_skips, s0.breaker_open_skips);
	EQ(s1.backend_errors, s0.backend_errors + 1);
	EQ(xrl_limiter_breaker_state(l), 1);
	CTX("right after the failed probe: open again, skipped");
	d = dec1(l, &c->rules[0], "k");
	EQ(stats(l).breaker_open_skips, s0.breaker_open_skips + 1);
	xrl_limiter_free(l);
	free(c);
}

/*
 * A Redis that accepts the connection and never answers (a listening socket
 * nobody accepts on: the kernel completes the handshake): the first decision
 * waits out redis_timeout, once; with the breaker open the next ones take no
 * time at all.
 */
static void test_redis_silent_timeout(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_decision d;
	char url[64];
	__u64 ns;
	int fd;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	snprintf(url, sizeof(url), "redis://127.0.0.1:%u", ntohs(sa.sin_port));
	CTX("%s (never answers), timeout 50 ms, on_backend_error local", url);
	c = cfg_redis(url, XRL_BE_LOCAL, 2);
	l = lim_new(c);

	ns = timed(l, &c->rules[0], "k", &d);
	CTX("the first decision: waits out the 50 ms timeout once");
	print_message("  silent redis: first decision %.1f ms\n", (double)ns / MS);
	EQ(d.allowed, true);
	EQ(d.backend_error, true);
	GE(ns, 45 * MS);
	LE(ns, c->redis_timeout_ns + 100 * MS);
	EQ(xrl_limiter_breaker_state(l), 1);
	for (int i = 1; i <= 5; i++) {
		ns = timed(l, &c->rules[0], "k", &d);
		CTX("decision %d with the breaker open", i);
		LE(ns, 5 * MS);
		EQ(d.backend_error, true);
		EQ(d.allowed, i < 2);
	}
	xrl_limiter_free(l);
	free(c);
	close(fd);
}

/* ---- a real Redis: batches, precision, NOSCRIPT, outages ------------------- */

/*
 * These start a redis-server of their own on a free loopback port (skipped
 * when there is none on PATH). The asynchronous ones drive a pipe the way a
 * server thread's event loop does: queue decisions, run the pipe, poll its
 * fd; what is queued while a batch is in flight goes out in the next.
 */
struct rsrv {
	pid_t pid;
	int port;
	char url[64];
};

/* The servers running, stopped by redis_teardown even when a test failed. */
static struct rsrv *live_rs[4];

static int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

static bool have_redis_server(void)
{
	return system("command -v redis-server >/dev/null 2>&1") == 0;
}

/*
 * A test against a real redis-server: skipped without one, but a failure
 * under CI=true (where every test must run). Returns from the test.
 */
#define NEED_REDIS_SERVER()                                                           \
	do {                                                                          \
		if (!have_redis_server()) {                                           \
			const char *ci = getenv("CI");                                \
			if (ci && !strcmp(ci, "true"))                                \
				fail_msg("redis-server is missing: under CI=true a "  \
					 "skip is a failure");                        \
			skip();                                                       \
		}                                                                     \
	} while (0)

/* Start redis-server on r->port (a free one when 0); wait until it answers. */
static void redis_up(struct rsrv *r)
{
	char port[16];

	if (!r->port)
		r->port = free_port();
	snprintf(port, sizeof(port), "%d", r->port);
	snprintf(r->url, sizeof(r->url), "redis://127.0.0.1:%d", r->port);
	r->pid = fork();
	assert_true(r->pid >= 0);
	if (!r->pid) {
		int fd = open("/dev/null", O_RDWR);

		dup2(fd, 1);
		dup2(fd, 2);
		execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1",
		       "--save", "", "--appendonly", "no", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 4; i++)
		if (!live_rs[i] || live_rs[i] == r) {
			live_rs[i] = r;
			break;
		}
	for (int i = 0; i < 100; i++) {
		struct timeval tv = { 0, 100000 };
		redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
		redisReply *rep = c && !c->err ? redisCommand(c, "PING") : NULL;
		bool ok = rep && rep->type == REDIS_REPLY_STATUS;

		if (rep)
			freeReplyObject(rep);
		if (c)
			redisFree(c);
		if (ok)
			return;
		sleep_ns(50 * MS);
	}
	fail_msg("redis-server on port %d did not answer", r->port);
}

static void redis_down(struct rsrv *r)
{
	for (int i = 0; i < 4; i++)
		if (live_rs[i] == r)
			live_rs[i] = NULL;
	if (r->pid <= 0)
		return;
	kill(r->pid, SIGCONT);
	kill(r->pid, SIGTERM);
	waitpid(r->pid, NULL, 0);
	r->pid = 0;
}

static int redis_teardown(void **state)
{
	for (int i = 0; i < 4; i++)
		if (live_rs[i])
			redis_down(live_rs[i]);
	return 0;
}

/* One command to the test's Redis, by a connection of the test's own. */
static void redis_cmd_reply(const struct rsrv *r, const char *cmd, char *out, size_t len)
{
	struct timeval tv = { 1, 0 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
	redisReply *rep;

	assert_true(c && !c->err);
	rep = redisCommand(c, cmd);
	assert_non_null(rep);
	if (out)
		snprintf(out, len, "%s", rep->str ? rep->str : "");
	freeReplyObject(rep);
	redisFree(c);
}

static void redis_cmd(const struct rsrv *r, const char *cmd)
{
	redis_cmd_reply(r, cmd, NULL, 0);
}

/* Someone else's key under our name was left alone: still of its type. */
static void redis_type_is(const struct rsrv *r, const char *key, const char *want)
{
	char cmd[128], type[16];

	snprintf(cmd, sizeof(cmd), "TYPE %s", key);
	redis_cmd_reply(r, cmd, type, sizeof(type));
	CTX("%s left alone: %s", key, type);
	EQ(strcmp(type, want), 0);
}

/* Decisions queued on a pipe: how many were queued and decided. */
struct flight {
	int queued, decided;
};

static void fl_queued(void *arg)
{
	((struct flight *)arg)->queued++;
}

static void fl_decided(void *arg)
{
	((struct flight *)arg)->decided++;
}

/* Queue one decision (rule r, key) on p; xrl_limiter_decide_async's result. */
static int dec_async(struct xrl_limiter *l, struct xrl_redis_pipe *p, const struct xrl_http_rule *r,
		     const char *key, struct flight *f, struct xrl_decision *d)
{
	struct xrl_limiter_wait w = { .queued = fl_queued, .decided = fl_decided, .arg = f };

	return xrl_limiter_decide_async(l, p, &r, &key, NULL, 1, d, &w);
}

/* Run the pipe as an event loop would until `n` decisions are decided;
 * the time it took (ns). */
static __u64 drive(struct xrl_redis_pipe *p, struct flight *f, int n)
{
	__u64 t0 = mono();

	xrl_limiter_pipe_run(p, 0);
	while (f->decided < n) {
		struct pollfd pfd = { .fd = -1 };
		__u64 left;
		__u32 gen;

		pfd.fd = xrl_limiter_pipe_poll(p, &pfd.events, &left, &gen);
		assert_true(pfd.fd >= 0);
		poll(&pfd, 1, left == UINT64_MAX ? -1 : (int)((left + 999999) / 1000000));
		xrl_limiter_pipe_run(p, pfd.revents);
		assert_true(mono() - t0 < 10 * SEC);
	}
	return mono() - t0;
}

static struct xrl_http_cfg *cfg_live(const struct rsrv *r, const char *rate, __u32 burst,
				     __u64 timeout)
{
	struct xrl_http_cfg *c = cfg_new();
	char err[256] = "";

	assert_int_equal(xrl_http_backend_parse(r->url, c, err, sizeof(err)), 0);
	rule_add(c, "api", rate, burst);
	c->redis_timeout_ns = timeout;
	c->breaker_cooldown_ns = 200 * MS;
	cfg_done(c);
	return c;
}

/*
 * One decision in flight, N queued behind it: the N go out in one write as
 * soon as the one in flight is answered (the pipe's round trips: the first,
 * the one in flight, the N), in ceil(N / XRL_REDIS_CALL_MAX) script calls,
 * with exact counts (decisions of one key within a call see each other's
 * charges); a refused key is refused afterwards from the over-limit cache,
 * without a round trip.
 */
static void test_redis_batches(void **state)
{
	enum { N = 300 };
	static struct rsrv rs; /* static: redis_teardown reaches it after a failure */
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_redis_pipe *p;
	struct xrl_limiter_stats s;
	struct flight f = {};
	static struct xrl_decision d[N + 2];
	int allowed = 0;

	NEED_REDIS_SERVER();
	rs = (struct rsrv){};
	redis_up(&rs);
	CTX("%s, 1/h burst 100: 1 + %d decisions of one key", rs.url, N);
	c = cfg_live(&rs, "1/h", 100, 2 * SEC);
	l = lim_new(c);
	p = xrl_limiter_pipe_new(l);
	assert_non_null(p);
	/* connect and load the script first */
	EQ(dec_async(l, p, &c->rules[0], "warm", &f, &d[N + 1]), 1);
	drive(p, &f, 1);
	EQ(d[N + 1].allowed, true);
	EQ(dec_async(l, p, &c->rules[0], "k", &f, &d[0]), 1);
	xrl_limiter_pipe_run(p, 0); /* in flight */
	EQ(xrl_limiter_pipe_busy(p), true);
	for (int i = 1; i <= N; i++)
		EQ(dec_async(l, p, &c->rules[0], "k", &f, &d[i]), 1);
	EQ(f.queued, 1 + 1 + N);
	EQ(f.decided, 1);
	drive(p, &f, 1 + 1 + N);
	for (int i = 0; i <= N; i++) {
		allowed += d[i].allowed;
		EQ(d[i].backend_error, false);
	}
	CTX("allowed of 1 + %d", N);
	EQ(allowed, 100);
	s = stats(l);
	CTX("stats after 1 + 1 + %d decisions", N);
	EQ(s.redis_calls, 1 + 1 + (N + XRL_REDIS_CALL_MAX - 1) / XRL_REDIS_CALL_MAX);
	EQ(s.redis_round_trips, 3);
	EQ(s.backend_errors, 0);
	CTX("the over-limit cache: refused at once, no round trip");
	EQ(dec_async(l, p, &c->rules[0], "k", &f, &d[0]), 0);
	EQ(d[0].allowed, false);
	EQ(stats(l).redis_round_trips, 3);
	xrl_limiter_pipe_free(p);
	xrl_limiter_free(l);
	free(c);
	redis_down(&rs);
}

/*
 * Times of the shared clock keep sub-microsecond steps: at 10,000,000/s
 * (100 ns a token), burst 50, one batch of decisions of one key at one
 * "now" admits exactly the first 50. (Counted in us since 1970, ~1.7e15, a
 * double's step is 0.25 us: the 0.1 us steps were lost, all admitted.)
 * Only the first 51 are judged: the key's expiry is Redis's own clock, so
 * a stall of Redis of 2 ms within the batch rightly refills the bucket.
 */
static void test_redis_fast_rule_precision(void **state)
{
	enum { N = 60 };
	static struct rsrv rs; /* static: redis_teardown reaches it after a failure */
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_redis_pipe *p;
	struct flight f = {};
	static struct xrl_decision d[N + 1];

	NEED_REDIS_SERVER();
	rs = (struct rsrv){};
	redis_up(&rs);
	CTX("%s, 10000000/s burst 50", rs.url);
	c = cfg_live(&rs, "10000000/s", 50, 2 * SEC);
	l = lim_new(c);
	p = xrl_limiter_pipe_new(l);
	assert_non_null(p);
	EQ(dec_async(l, p, &c->rules[0], "other", &f, &d[0]), 1);
	xrl_limiter_pipe_run(p, 0);
	for (int i = 1; i <= N; i++)
		EQ(dec_async(l, p, &c->rules[0], "k", &f, &d[i]), 1);
	drive(p, &f, N + 1);
	EQ(stats(l).redis_round_trips, 2);
	for (int i = 1; i <= 51; i++) {
		CTX("decision %d of one batch at one now", i);
		EQ(d[i].allowed, i <= 50);
	}
	xrl_limiter_pipe_free(p);
	xrl_limiter_free(l);
	free(c);
	redis_down(&rs);
}

/* SCRIPT FLUSH: the next decision reloads the script, no backend error. */
static void test_redis_noscript(void **state)
{
	static struct rsrv rs; /* static: redis_teardown reaches it after a failure */
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_limiter_stats s0, s1;
	struct xrl_decision d;

	NEED_REDIS_SERVER();
	rs = (struct rsrv){};
	redis_up(&rs);
	CTX("%s, 1/h burst 3", rs.url);
	c = cfg_live(&rs, "1/h", 3, 1 * SEC);
	l = lim_new(c);
	EQ(dec1(l, &c->rules[0], "k").allowed, true);
	redis_cmd(&rs, "SCRIPT FLUSH");
	s0 = stats(l);
	d = dec1(l, &c->rules[0], "k");
	CTX("after SCRIPT FLUSH");
	EQ(d.allowed, true);
	EQ(d.backend_error, false);
	EQ(d.remaining, 1);
	s1 = stats(l);
	EQ(s1.backend_errors, 0);
	EQ(s1.redis_round_trips - s0.redis_round_trips, 2); /* NOSCRIPT, then load + again */
	EQ(xrl_limiter_breaker_state(l), 0);
	CTX("the third and fourth");
	EQ(dec1(l, &c->rules[0], "k").allowed, true);
	EQ(dec1(l, &c->rules[0], "k").allowed, false);
	xrl_limiter_free(l);
	free(c);
	redis_down(&rs);
}

/* A Redis of its own for rs, rules a (1/h, burst 2) and b (1/h, burst 5), a limiter. */
static struct xrl_http_cfg *two_rules_live(struct rsrv *rs, struct xrl_limiter **l)
{
	struct xrl_http_cfg *c;

	*rs = (struct rsrv){};
	redis_up(rs);
	CTX("%s, rules a (burst 2) and b (burst 5)", rs->url);
	c = cfg_live(rs, "1/h", 2, 1 * SEC);
	rule_add(c, "b", "1/h", 5);
	cfg_done(c);
	*l = lim_new(c);
	return c;
}

/* Two rules in Redis: a refusal by one charges neither (one script call). */
static void test_redis_two_rules_atomic(void **state)
{
	static struct rsrv rs; /* static: redis_teardown reaches it after a failure */
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	const struct xrl_http_rule *a, *b;
	int n = 0;

	NEED_REDIS_SERVER();
	c = two_rules_live(&rs, &l);
	a = &c->rules[0];
	b = &c->rules[1];
	for (int i = 0; i < 6; i++)
		n += dec2(l, a, b, "k").allowed;
	EQ(n, 2);
	CTX("b alone afterwards: charged 2 of 5");
	EQ(drain(l, b, "k", 10), 3);
	xrl_limiter_free(l);
	free(c);
	redis_down(&rs);
}

/*
 * One call, decisions of different shapes: k1 asks rules a (burst 2) and b
 * (burst 5), k2 asks b alone, in turn, 6 times each, all queued behind one
 * in flight so that they share a call. Each gets its own share of the
 * reply: a admits k1 twice, then refuses it without charging b; b admits
 * k2 five times; b's k1 bucket holds the 2 that a admitted.
 */
static void test_redis_call_mixed(void **state)
{
	enum { N = 6 };
	static struct rsrv rs; /* static: redis_teardown reaches it after a failure */
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_redis_pipe *p;
	struct flight f = {};
	struct xrl_decision d1[N], d2[N], w;
	const struct xrl_http_rule *ab[2];
	const char *k1[2] = { "k1", "k1" };
	struct xrl_limiter_wait wt = { .queued = fl_queued, .decided = fl_decided, .arg = &f };
	int a1 = 0, a2 = 0;

	NEED_REDIS_SERVER();
	c = two_rules_live(&rs, &l);
	ab[0] = &c->rules[0];
	ab[1] = &c->rules[1];
	p = xrl_limiter_pipe_new(l);
	assert_non_null(p);
	EQ(dec_async(l, p, ab[1], "warm", &f, &w), 1);
	xrl_limiter_pipe_run(p, 0); /* in flight */
	for (int i = 0; i < N; i++) {
		EQ(xrl_limiter_decide_async(l, p, ab, k1, NULL, 2, &d1[i], &wt), 1);
		EQ(dec_async(l, p, ab[1], "k2", &f, &d2[i]), 1);
	}
	drive(p, &f, 1 + 2 * N);
	for (int i = 0; i < N; i++) {
		EQ(d1[i].backend_error, false);
		EQ(d2[i].backend_error, false);
		a1 += d1[i].allowed;
		a2 += d2[i].allowed;
	}
	EQ(stats(l).redis_calls, 2);
	EQ(a1, 2);
	EQ(a2, 5);
	CTX("b for k1 afterwards: charged 2 of 5");
	EQ(drain(l, ab[1], "k1", 10), 3);
	xrl_limiter_pipe_free(p);
	xrl_limiter_free(l);
	free(c);
	redis_down(&rs);
}

/*
 * A key that is not ours to read (a hash under the name xrl:{api:bad}: the
 * call's MGET reads it as missing, TYPE says hash) fails its own decision
 * only: the decisions
 * sharing its call are decided by Redis and charged once, the bad one falls
 * back (on_backend_error: open) and writes nothing, the key stays a hash.
 */
static void test_redis_wrongtype_isolated(void **state)
{
	static struct rsrv rs; /* static: redis_teardown reaches it after a failure */
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_redis_pipe *p;
	struct flight f = {};
	struct xrl_decision w, d[3];
	static const char *const keys[3] = { "good1", "bad", "good2" };

	NEED_REDIS_SERVER();
	rs = (struct rsrv){};
	redis_up(&rs);
	CTX("%s, 1/h burst 3; xrl:{api:bad} is a hash", rs.url);
	redis_cmd(&rs, "HSET xrl:{api:bad} someone else");
	c = cfg_live(&rs, "1/h", 3, 1 * SEC);
	l = lim_new(c);
	p = xrl_limiter_pipe_new(l);
	assert_non_null(p);
	EQ(dec_async(l, p, &c->rules[0], "warm", &f, &w), 1);
	xrl_limiter_pipe_run(p, 0); /* in flight: the three share the next call */
	for (int i = 0; i < 3; i++)
		EQ(dec_async(l, p, &c->rules[0], keys[i], &f, &d[i]), 1);
	drive(p, &f, 4);
	EQ(stats(l).redis_calls, 2);
	EQ(d[0].allowed, true);
	EQ(d[0].backend_error, false);
	EQ(d[1].allowed, true); /* open */
	EQ(d[1].backend_error, true);
	EQ(d[2].allowed, true);
	EQ(d[2].backend_error, false);
	xrl_limiter_pipe_free(p);
	CTX("good1 and good2 charged once each: 2 of 3 left");
	EQ(drain(l, &c->rules[0], "good1", 10), 2);
	EQ(drain(l, &c->rules[0], "good2", 10), 2);
	xrl_limiter_free(l);
	free(c);
	redis_type_is(&rs, "xrl:{api:bad}", "hash");
	redis_down(&rs);
}

/* A limiter of rules a and b (1/h, burst 3 each) on the Redis at url. */
static struct xrl_limiter *auth_lim(const struct rsrv *rs, const char *userinfo,
				    struct xrl_http_cfg **c)
{
	struct rsrv as = *rs;

	snprintf(as.url, sizeof(as.url), "redis://%s@127.0.0.1:%d", userinfo, rs->port);
	CTX("%s", as.url);
	*c = cfg_live(&as, "1/h", 3, 1 * SEC);
	rule_add(*c, "b", "1/h", 3);
	cfg_done(*c);
	return lim_new(*c);
}

/*
 * A Redis that wants a password (requirepass), and ACL users allowed only
 * the commands docs/policy.md lists: the right password decides, exactly,
 * and a reload to another user takes a new connection; a wrong password
 * falls back (on_backend_error: open) until a reload brings the right one;
 * the ACL user decides calls of one key and of two; a user without MGET
 * decides a call of one key, and a call of two fails and falls back.
 */
static void test_redis_auth(void **state)
{
	static struct rsrv rs; /* static: redis_teardown reaches it after a failure */
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_decision d;

	NEED_REDIS_SERVER();
	rs = (struct rsrv){};
	redis_up(&rs);
	redis_cmd(&rs, "ACL SETUSER xrl on >pw2 ~xrl:* -@all +select +script|load +evalsha "
		       "+get +mget +exists +type +set +pexpire");
	redis_cmd(&rs, "ACL SETUSER nomget on >pw3 ~xrl:* -@all +select +script|load +evalsha "
		       "+get +exists +type +set +pexpire");
	redis_cmd(&rs, "CONFIG SET requirepass s3cret");

	l = auth_lim(&rs, ":s3cret", &c);
	EQ(drain(l, &c->rules[0], "k", 10), 3);
	d = dec2(l, &c->rules[0], &c->rules[1], "k2");
	EQ(d.backend_error, false);
	EQ(d.allowed, true);
	EQ(stats(l).redis_calls > 0, true);
	{
		struct xrl_http_cfg *other;
		struct xrl_limiter *l2 = auth_lim(&rs, "nomget:pw3", &other);

		CTX("reloaded as user nomget: its open connection is not reused");
		xrl_limiter_set_cfg(l, other);
		EQ(dec2(l, &c->rules[0], &c->rules[1], "k6").backend_error, true);
		xrl_limiter_free(l2);
		free(other);
	}
	xrl_limiter_free(l);
	free(c);

	l = auth_lim(&rs, ":wrong", &c);
	d = dec1(l, &c->rules[0], "k");
	EQ(d.backend_error, true);
	EQ(d.allowed, true); /* open */
	{
		struct xrl_http_cfg *right;
		struct xrl_limiter *l2 = auth_lim(&rs, ":s3cret", &right);

		CTX("reloaded with the right password, after the breaker's cooldown");
		xrl_limiter_set_cfg(l, right);
		sleep_ns(300 * MS);
		d = dec1(l, &c->rules[0], "k9");
		EQ(d.backend_error, false);
		EQ(d.allowed, true);
		xrl_limiter_free(l2);
		free(right);
	}
	xrl_limiter_free(l);
	free(c);

	l = auth_lim(&rs, "xrl:pw2", &c);
	CTX("user xrl: k has 0 of 3 left, k3 all 3");
	EQ(drain(l, &c->rules[0], "k", 10), 0);
	EQ(dec1(l, &c->rules[0], "k").backend_error, false);
	d = dec2(l, &c->rules[0], &c->rules[1], "k3");
	EQ(d.backend_error, false);
	EQ(d.allowed, true);
	xrl_limiter_free(l);
	free(c);

	l = auth_lim(&rs, "nomget:pw3", &c);
	d = dec1(l, &c->rules[0], "k4");
	EQ(d.backend_error, false);
	EQ(d.allowed, true);
	d = dec2(l, &c->rules[0], &c->rules[1], "k5");
	EQ(d.backend_error, true);
	EQ(d.allowed, true); /* open */
	xrl_limiter_free(l);
	free(c);
	redis_down(&rs);
}

/*
 * The largest call: XRL_REDIS_CALL_MAX decisions of XRL_HTTP_MAX_MATCH rules
 * each (1,024 keys, read with one MGET), over 32 keys in turn, so that each
 * key's four decisions see each other's charges within the call (burst 2:
 * two admitted, two refused, by every rule alike), and one of the keys a
 * hash (xrl:{r3:u5}): the four decisions that name it fall back (open),
 * the 124 others are decided by Redis, and the hash is left alone.
 */
static void test_redis_call_full(void **state)
{
	enum { N = XRL_REDIS_CALL_MAX, R = XRL_HTTP_MAX_MATCH, K = 32 };
	static struct rsrv rs; /* static: redis_teardown reaches it after a failure */
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_redis_pipe *p;
	struct flight f = {};
	struct xrl_limiter_wait wt = { .queued = fl_queued, .decided = fl_decided, .arg = &f };
	static struct xrl_decision d[N];
	struct xrl_decision w;
	const struct xrl_http_rule *rules[R];
	static char names[K][8];
	const char *keys[R];
	int allowed = 0, refused = 0, fell_back = 0;
	static char info[4096];
	const char *mget;

	NEED_REDIS_SERVER();
	rs = (struct rsrv){};
	redis_up(&rs);
	CTX("%s, %d rules of 1/h burst 2, xrl:{r3:u5} a hash", rs.url, R);
	redis_cmd(&rs, "HSET xrl:{r3:u5} someone else");
	c = cfg_live(&rs, "1/h", 2, 1 * SEC);
	for (int r = 1; r < R; r++) {
		char n[8];

		snprintf(n, sizeof(n), "r%d", r);
		rule_add(c, n, "1/h", 2);
	}
	cfg_done(c);
	for (int r = 0; r < R; r++)
		rules[r] = &c->rules[r];
	for (int k = 0; k < K; k++)
		snprintf(names[k], sizeof(names[k]), "u%d", k);
	l = lim_new(c);
	p = xrl_limiter_pipe_new(l);
	assert_non_null(p);
	EQ(dec_async(l, p, rules[0], "warm", &f, &w), 1);
	xrl_limiter_pipe_run(p, 0); /* in flight: the N share the next call */
	for (int i = 0; i < N; i++) {
		for (int r = 0; r < R; r++)
			keys[r] = names[i % K];
		EQ(xrl_limiter_decide_async(l, p, rules, keys, NULL, R, &d[i], &wt), 1);
	}
	drive(p, &f, 1 + N);
	EQ(stats(l).redis_calls, 2);
	for (int i = 0; i < N; i++) {
		CTX("decision %d, key %s", i, names[i % K]);
		if (i % K == 5) {
			EQ(d[i].backend_error, true);
			EQ(d[i].allowed, true); /* open */
			fell_back++;
			continue;
		}
		EQ(d[i].backend_error, false);
		EQ(d[i].allowed, i < 2 * K); /* each key's first two */
		allowed += d[i].allowed;
		refused += !d[i].allowed;
	}
	EQ(fell_back, N / K);
	EQ(allowed, 2 * (K - 1));
	EQ(refused, N - N / K - 2 * (K - 1));
	redis_cmd_reply(&rs, "INFO commandstats", info, sizeof(info));
	mget = strstr(info, "cmdstat_mget:");
	CTX("the call's keys read by one MGET: %.40s", mget ? mget : "(no MGET)");
	assert_non_null(mget);
	EQ(strncmp(mget, "cmdstat_mget:calls=1,", 21), 0);
	xrl_limiter_pipe_free(p);
	xrl_limiter_free(l);
	/* a new limiter: no over-limit cache, so what Redis holds answers */
	l = lim_new(c);
	CTX("u5 by rule r1 afterwards: never charged, 2 of 2 left");
	EQ(drain(l, rules[1], "u5", 10), 2);
	CTX("u6 by rule r7 afterwards: 0 left");
	EQ(drain(l, rules[R - 1], "u6", 10), 0);
	xrl_limiter_free(l);
	free(c);
	redis_type_is(&rs, "xrl:{r3:u5}", "hash");
	redis_down(&rs);
}

/*
 * Redis frozen with one decision in flight and 50 queued: all 51 fall back
 * together once the one in flight times out (not one timeout each), the
 * breaker opens; thawed, after the cooldown, Redis decides again. Then
 * Redis restarted while idle: no backend error (the stale connection is
 * opened again), the buckets start over (a new, empty Redis).
 */
static void test_redis_outage_and_restart(void **state)
{
	enum { N = 50 };
	static struct rsrv rs; /* static: redis_teardown reaches it after a failure */
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_redis_pipe *p;
	struct flight f = {};
	static struct xrl_decision d[N + 1];
	__u64 ns;

	NEED_REDIS_SERVER();
	rs = (struct rsrv){};
	redis_up(&rs);
	CTX("%s, timeout 100 ms, cooldown 200 ms", rs.url);
	c = cfg_live(&rs, "1/h", 1000, 100 * MS);
	l = lim_new(c);
	p = xrl_limiter_pipe_new(l);
	assert_non_null(p);
	EQ(dec_async(l, p, &c->rules[0], "k", &f, &d[0]), 1);
	drive(p, &f, 1);
	EQ(d[0].remaining, 1000 - 1);
	kill(rs.pid, SIGSTOP);
	f = (struct flight){};
	EQ(dec_async(l, p, &c->rules[0], "k", &f, &d[0]), 1);
	xrl_limiter_pipe_run(p, 0);
	for (int i = 1; i <= N; i++)
		EQ(dec_async(l, p, &c->rules[0], "k", &f, &d[i]), 1);
	ns = drive(p, &f, N + 1);
	print_message("  frozen redis: 1 + %d queued decisions answered in %.1f ms\n", N,
		      (double)ns / MS);
	CTX("1 + %d decisions with Redis frozen", N);
	GE(ns, 90 * MS);
	LE(ns, 100 * MS + 150 * MS);
	for (int i = 0; i <= N; i++) {
		EQ(d[i].backend_error, true);
		EQ(d[i].allowed, true); /* on_backend_error open */
	}
	EQ(xrl_limiter_breaker_state(l), 1);
	EQ(stats(l).breaker_open_skips, N); /* the batch behind the failed one */
	kill(rs.pid, SIGCONT);
	sleep_ns(250 * MS);
	CTX("thawed, after the cooldown");
	f = (struct flight){};
	EQ(dec_async(l, p, &c->rules[0], "k", &f, &d[0]), 1);
	drive(p, &f, 1);
	EQ(d[0].backend_error, false);
	/* the one that timed out was written: Redis ran it when it woke (a
	 * timeout never tells whether a command ran); the 50 were never sent */
	EQ(d[0].remaining, 1000 - 3);
	EQ(xrl_limiter_breaker_state(l), 0);

	CTX("redis restarted while idle");
	redis_down(&rs);
	redis_up(&rs);
	f = (struct flight){};
	EQ(dec_async(l, p, &c->rules[0], "k", &f, &d[0]), 1);
	drive(p, &f, 1);
	EQ(d[0].backend_error, false);
	EQ(d[0].remaining, 1000 - 1);
	EQ(stats(l).backend_errors, N + 1);
	xrl_limiter_pipe_free(p);
	xrl_limiter_free(l);
	free(c);
	redis_down(&rs);
}

/* Two limiters (two instances) on one Redis, two threads each: exact counts. */
struct share_arg {
	struct xrl_limiter *l;
	const struct xrl_http_rule *r;
	int allowed, errors;
};

static void *share_worker(void *arg)
{
	struct share_arg *a = arg;

	for (int i = 0; i < 400; i++) {
		struct xrl_decision d;
		const char *key = "shared";

		if (xrl_limiter_decide(a->l, &a->r, &key, NULL, 1, &d))
			a->errors++;
		a->allowed += d.allowed;
		a->errors += d.backend_error;
	}
	return NULL;
}

static void test_redis_two_instances_exact(void **state)
{
	static struct rsrv rs; /* static: redis_teardown reaches it after a failure */
	struct xrl_http_cfg *c;
	struct xrl_limiter *l[2];
	struct share_arg a[4];
	pthread_t t[4];
	int allowed = 0, errors = 0;

	NEED_REDIS_SERVER();
	rs = (struct rsrv){};
	redis_up(&rs);
	CTX("%s, 1/h burst 500, 2 limiters x 2 threads x 400 decisions", rs.url);
	c = cfg_live(&rs, "1/h", 500, 1 * SEC);
	l[0] = lim_new(c);
	l[1] = lim_new(c);
	for (int i = 0; i < 4; i++) {
		a[i] = (struct share_arg){ .l = l[i % 2], .r = &c->rules[0] };
		assert_int_equal(pthread_create(&t[i], NULL, share_worker, &a[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		allowed += a[i].allowed;
		errors += a[i].errors;
	}
	EQ(errors, 0);
	EQ(allowed, 500);
	xrl_limiter_free(l[0]);
	xrl_limiter_free(l[1]);
	free(c);
	redis_down(&rs);
}

/* ---- issue 11: cost, key identity, TTLs, reload race, the model ------------- */

/* One request of `cost` tokens for rule r and key. */
static int decc(struct xrl_limiter *l, const struct xrl_http_rule *r, const char *key,
		__u32 cost, struct xrl_decision *d)
{
	return xrl_limiter_decide(l, &r, &key, &cost, 1, d);
}

/*
 * Finding 6: the over-limit cache answers per cost. Burst 10, 10/min: cost
 * 5 admitted, cost 10 refused (5 left); cost 1 must then be admitted, as
 * the memory backend does, not refused from the cache for the refusal of
 * 10; a cost 10 again is refused from the cache with Redis's own wait.
 */
static void overlimit_per_cost(struct xrl_limiter *l, const struct xrl_http_rule *r,
			       const char *what)
{
	struct xrl_decision d;

	CTX("%s: cost 5 of burst 10", what);
	EQ(decc(l, r, "k", 5, &d), 0);
	EQ(d.allowed, 1);
	CTX("%s: cost 10 with 5 left", what);
	EQ(decc(l, r, "k", 10, &d), 0);
	EQ(d.allowed, 0);
	EQ(d.retry_after_s, 30);                /* 5 tokens of 6 s */
	CTX("%s: cost 1 after the refusal of 10", what);
	EQ(decc(l, r, "k", 1, &d), 0);
	EQ(d.allowed, 1);
	EQ(d.remaining, 4);
	CTX("%s: cost 10 again: 6 tokens short", what);
	EQ(decc(l, r, "k", 10, &d), 0);
	EQ(d.allowed, 0);
	GE(d.retry_after_s, 35);                /* 36 s, less the time the test took */
	LE(d.retry_after_s, 36);
	EQ(d.remaining, 4);
	CTX("%s: cost 4 takes the last 4", what);
	EQ(decc(l, r, "k", 4, &d), 0);
	EQ(d.allowed, 1);
	EQ(d.remaining, 0);
	CTX("%s: cost 1 now refused, 6 s", what);
	EQ(decc(l, r, "k", 1, &d), 0);
	EQ(d.allowed, 0);
	LE(d.retry_after_s, 6);
}

static void test_overlimit_cache_per_cost(void **state)
{
	static struct rsrv rs; /* static: redis_teardown reaches it after a failure */
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;

	rule_add(c, "api", "10/min", 10);
	cfg_done(c);
	l = lim_new(c);
	overlimit_per_cost(l, &c->rules[0], "memory");
	xrl_limiter_free(l);
	free(c);

	NEED_REDIS_SERVER();
	rs = (struct rsrv){};
	redis_up(&rs);
	c = cfg_live(&rs, "10/min", 10, 2 * SEC);
	l = lim_new(c);
	overlimit_per_cost(l, &c->rules[0], "redis");
	CTX("redis: the refusals of 10 and 1 came from the cache");
	GE(stats(l).overlimit_cache_hits, 1);
	xrl_limiter_free(l);
	free(c);
	redis_down(&rs);
}

/* Keys of 4 KiB that differ only in their last byte, one starting with '#'
 * like a digest's name; and the name Redis would give the long one. */
static char long_a[4097], long_b[4097], hash_like[70];

static void long_keys_init(void)
{
	memset(long_a, 'x', 4096);
	memset(long_b, 'x', 4096);
	long_a[4095] = 'a';
	long_b[4095] = 'b';
	snprintf(hash_like, sizeof(hash_like), "#%064d", 0);
}

/* A command of the test's own with one argument: its integer answer, or
 * for an array, the longest string in it; for INFO, used_memory. */
static long long redis_ask(const struct rsrv *r, const char *cmd, const char *arg)
{
	struct timeval tv = { 1, 0 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
	redisReply *rep;
	long long v = 0;

	assert_true(c && !c->err);
	rep = arg ? redisCommand(c, "%s %s", cmd, arg) : redisCommand(c, cmd);
	assert_non_null(rep);
	if (rep->type == REDIS_REPLY_INTEGER)
		v = rep->integer;
	if (rep->type == REDIS_REPLY_STRING && strstr(rep->str, "used_memory:")) /* INFO */
		v = atoll(strstr(rep->str, "used_memory:") + 12);
	for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++)
		if ((long long)rep->element[i]->len > v)
			v = (long long)rep->element[i]->len;
	freeReplyObject(rep);
	redisFree(c);
	return v;
}

static long long redis_pttl(const struct rsrv *r, const char *key)
{
	return redis_ask(r, "PTTL", key);
}

static long long redis_keys_maxlen(const struct rsrv *r)
{
	return redis_ask(r, "KEYS", "xrl:*");
}

/* Finding 13c: keys sharing a 4000-byte prefix (JWTs) never share a bucket. */
static void long_keys_apart(struct xrl_limiter *l, const struct xrl_http_rule *r,
			    const char *what)
{
	CTX("%s: drain a 4 KiB key", what);
	EQ(drain(l, r, long_a, 10), 2);
	CTX("%s: a 4 KiB key with the same first 4095 bytes", what);
	EQ(drain(l, r, long_b, 10), 2);
	CTX("%s: its first 256 bytes", what);
	long_a[256] = '\0';
	EQ(drain(l, r, long_a, 10), 2);
	long_a[256] = 'x';
	CTX("%s: a key shaped like a digest's name", what);
	EQ(drain(l, r, hash_like, 10), 2);
}

static void test_long_keys_distinct(void **state)
{
	static struct rsrv rs; /* static: redis_teardown reaches it after a failure */
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;

	long_keys_init();
	rule_add(c, "api", "1/h", 2);
	cfg_done(c);
	l = lim_new(c);
	long_keys_apart(l, &c->rules[0], "memory");
	xrl_limiter_free(l);
	free(c);

	NEED_REDIS_SERVER();
	rs = (struct rsrv){};
	redis_up(&rs);
	c = cfg_live(&rs, "1/h", 2, 2 * SEC);
	l = lim_new(c);
	long_keys_apart(l, &c->rules[0], "redis");
	CTX("redis: 4 keys, none longer than xrl:{api:} and 128 bytes");
	LE(redis_keys_maxlen(&rs), 9 + 128);
	xrl_limiter_free(l);
	free(c);
	redis_down(&rs);
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

/*
 * Finding 7: a key lives exactly as long as its bucket holds anything (its
 * TAT, rounded up to the ms, + 1 ms), no longer: 1 token of 7/h is
 * 514,285.714286 s, so PTTL <= 514,287 ms; 2 tokens less 100 s are
 * 928,571.43 s, PTTL <= 928,573 ms; a refusal does not extend it.
 */
static void test_redis_key_ttl_minimal(void **state)
{
	static struct rsrv rs; /* static: redis_teardown reaches it after a failure */
	static _Atomic __u64 clk = 1000 * SEC;
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_decision d;

	NEED_REDIS_SERVER();
	rs = (struct rsrv){};
	redis_up(&rs);
	c = cfg_live(&rs, "7/h", 2, 2 * SEC);
	l = lim_new(c);
	xrl_limiter_set_clock(l, &clk);
	CTX("7/h burst 2: one token");
	EQ(decc(l, &c->rules[0], "t", 1, &d), 0);
	EQ(d.allowed, 1);
	LE(redis_pttl(&rs, "xrl:{api:t}"), 514287);
	GE(redis_pttl(&rs, "xrl:{api:t}"), 514287 - 1000);
	CTX("7/h burst 2: one more 100 s later, then cost 2 refused: TAT 2 tokens less 100 s ahead");
	clk += 100 * SEC;
	EQ(decc(l, &c->rules[0], "t", 1, &d), 0);
	EQ(d.allowed, 1);
	EQ(decc(l, &c->rules[0], "t", 2, &d), 0);
	EQ(d.allowed, 0);
	LE(redis_pttl(&rs, "xrl:{api:t}"), 928573);
	GE(redis_pttl(&rs, "xrl:{api:t}"), 928573 - 1000);
	xrl_limiter_free(l);
	free(c);
	redis_down(&rs);
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
	xrl_limiter_free(a.l);
	free(c);
	free(c2);
}

/*
 * Finding 7: a reconnect never blocks the thread that drives the pipe. A
 * Redis that accepts and never answers, timeout 300 ms: queuing a decision
 * and running the pipe (connect, AUTH, SCRIPT LOAD, the batch) returns at
 * once (before: blocked ~300 ms in SCRIPT LOAD, 600 ms with a password);
 * the decision falls back when the batch's one deadline passes.
 */
static void test_redis_reconnect_never_blocks(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_redis_pipe *p;
	struct xrl_decision d;
	struct flight f = {};
	char url[96];
	__u64 t0, ns;
	int fd;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	snprintf(url, sizeof(url), "redis://u:secret@127.0.0.1:%u/3", ntohs(sa.sin_port));
	CTX("%s (never answers), timeout 300 ms", url);
	c = cfg_redis(url, XRL_BE_LOCAL, 2);
	c->redis_timeout_ns = 300 * MS;
	l = lim_new(c);
	p = xrl_limiter_pipe_new(l);
	assert_non_null(p);
	EQ(dec_async(l, p, &c->rules[0], "k", &f, &d), 1);
	t0 = mono();
	xrl_limiter_pipe_run(p, 0);
	ns = mono() - t0;
	print_message("  silent redis: connect + handshake + batch sent in %.3f ms\n", (double)ns / MS);
	LE(ns, 20 * MS);
	EQ(f.decided, 0);
	ns = drive(p, &f, 1);
	CTX("the decision falls back at the batch's deadline");
	EQ(d.backend_error, 1);
	EQ(d.allowed, 1);
	GE(ns, 250 * MS);
	LE(ns, 600 * MS);
	xrl_limiter_pipe_free(p);
	xrl_limiter_free(l);
	free(c);
	close(fd);
}

/*
 * Finding 7: what bounds Redis is its maxmemory, with a volatile-* policy
 * (every xrl key has an expiry). A flood of 20,000 unique keys on a 1/day
 * rule (each kept a day) into a Redis of maxmemory 3 MB: with volatile-ttl
 * every decision is answered and memory stays under the cap (keys closest
 * to full are evicted: their callers regain at most a burst); with
 * noeviction, writes are refused once it is full: backend errors, every
 * rule on on_backend_error (what docs/policy.md warns about).
 */
static __u64 flood_unique(struct xrl_limiter *l, const struct xrl_http_rule *r, int n,
			  const char *tag)
{
	__u64 errors = 0;
	char key[48];

	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s-user-%d@example.com", tag, i);
		errors += dec1(l, r, key).backend_error;
	}
	return errors;
}

static void test_redis_maxmemory_bounds(void **state)
{
	static struct rsrv rs; /* static: redis_teardown reaches it after a failure */
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;

	NEED_REDIS_SERVER();
	rs = (struct rsrv){};
	redis_up(&rs);
	redis_cmd(&rs, "CONFIG SET maxmemory 3mb");
	redis_cmd(&rs, "CONFIG SET maxmemory-policy volatile-ttl");
	c = cfg_live(&rs, "1/day", 5, 2 * SEC);
	c->breaker_cooldown_ns = 1 * MS;
	l = lim_new(c);
	CTX("volatile-ttl, 3 MB: 20,000 unique keys");
	EQ(flood_unique(l, &c->rules[0], 20000, "a"), 0);
	print_message("  maxmemory 3 MB, volatile-ttl: %lld keys kept of 20000, used_memory %lld\n",
		      redis_ask(&rs, "DBSIZE", NULL), redis_ask(&rs, "INFO", "memory"));
	LE(redis_ask(&rs, "DBSIZE", NULL), 19000);
	LE(redis_ask(&rs, "INFO", "memory"), 3 * 1024 * 1024 + 64 * 1024);
	CTX("noeviction, 3 MB: the next 20,000 unique keys");
	redis_cmd(&rs, "CONFIG SET maxmemory-policy noeviction");
	GE(flood_unique(l, &c->rules[0], 20000, "b"), 1);
	xrl_limiter_free(l);
	free(c);
	redis_down(&rs);
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

static void test_reader_guard(void **state)
{
	enum { FULL = XRL_REDIS_CALL_MAX * (1 + 2 * XRL_HTTP_MAX_MATCH) };
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

/* ---- the model: each backend against a plain GCRA --------------------------- */

/*
 * A reference GCRA in integer ns, written out plainly: per key a TAT; a
 * request of c tokens at now: base = max(TAT, now), admitted iff base +
 * c * emit - now <= tau; a cost above the burst is an error, a cost of 0
 * is admitted and changes nothing.
 */
#define MODEL_KEYS 7

struct model {
	const char *what;
	struct xrl_limiter *l;
	const struct xrl_http_rule *r;
	_Atomic __u64 *clk;
	bool back;           /* the clock may step backwards */
	bool real_pace;      /* Redis: the clock never runs slower than real time */
	__u64 tat[MODEL_KEYS];
	const char *keys[MODEL_KEYS];
	unsigned seed, seed0;
};

static __u64 rnd(unsigned *s)
{
	__u64 a = (__u64)rand_r(s), b = (__u64)rand_r(s);

	return a << 31 ^ b;
}

/* The next step of the clock: none, a little, about a token, about the
 * burst, a jump of days; now and then backwards (if allowed). */
static void model_tick(struct model *m, __u64 *real_last)
{
	const struct xrl_gcra_params *g = &m->r->g;
	__u64 now = atomic_load(m->clk), step;

	switch (rnd(&m->seed) % 6) {
	case 0: step = 0; break;
	case 1: step = rnd(&m->seed) % (g->emit_ns / 100); break;
	case 2: step = rnd(&m->seed) % (2 * g->emit_ns); break;
	case 3: step = rnd(&m->seed) % (2 * g->tau_ns); break;
	case 4: step = rnd(&m->seed) % 4 ? 0 : rnd(&m->seed) % (30 * DAY); break;
	default: step = g->emit_ns * (rnd(&m->seed) % 3); break;
	}
	if (m->back && rnd(&m->seed) % 8 == 0) {
		__u64 b = rnd(&m->seed) % (2 * g->tau_ns);

		atomic_store(m->clk, now > b + DAY ? now - b : now);
		return;
	}
	if (m->real_pace) {
		/* a key Redis expires (in its real time) must be a full bucket
		 * in the model's time too: never slower than the real clock,
		 * with 2 ms for a decision's own time */
		__u64 r = mono();

		if (step < r - *real_last + 2 * MS)
			step = r - *real_last + 2 * MS;
		*real_last = r;
	}
	atomic_store(m->clk, now + step);
}

/* One random request, checked against the reference. */
static void model_step(struct model *m, int i)
{
	const struct xrl_gcra_params *g = &m->r->g;
	int k = (int)(rnd(&m->seed) % MODEL_KEYS);
	__u32 cost = (__u32)(rnd(&m->seed) % (g->burst + 3));
	__u64 now = atomic_load(m->clk), base, nt, used, inc = (__u64)cost * g->emit_ns;
	struct xrl_decision d;
	int rc = decc(m->l, m->r, m->keys[k], cost, &d);

	CTX("%s, XRL_MODEL_SEED=%u, step %d: key %d, cost %u, now %llu, model TAT %llu (%+lld ns)", m->what,
	    m->seed0, i, k, cost, (ull)now, (ull)m->tat[k], (long long)(m->tat[k] - now));
	if (cost > g->burst) {
		EQ(rc, -E2BIG);
		return;
	}
	EQ(rc, 0);
	if (!cost) {
		EQ(d.allowed, 1);
		return;
	}
	EQ(d.backend_error, strstr(m->what, "local") != NULL);
	base = m->tat[k] > now ? m->tat[k] : now;
	nt = base + inc;
	EQ(d.limit, g->burst);
	if (nt - now <= g->tau_ns) {
		EQ(d.allowed, 1);
		EQ(d.remaining, (g->tau_ns - (nt - now)) / g->emit_ns);
		EQ(d.reset_s, (nt - now + SEC - 1) / SEC);
		m->tat[k] = nt;
	} else {
		__u64 wait = m->tat[k] + inc - g->tau_ns - now;

		EQ(d.allowed, 0);
		EQ(d.retry_after_s, wait < SEC ? 1 : (wait + SEC - 1) / SEC);
		used = m->tat[k] > now ? m->tat[k] - now : 0; /* beyond tau after a step back */
		EQ(d.remaining, used >= g->tau_ns ? 0 : (g->tau_ns - used) / g->emit_ns);
		EQ(d.reset_s, m->tat[k] > now ? (m->tat[k] - now + SEC - 1) / SEC : 0);
	}
}

/*
 * Run n steps. Keys: short ones, two 4 KiB keys that differ in their last
 * byte, the first 256 bytes of them, and one shaped like a digest's name.
 * The seed is XRL_MODEL_SEED if set, else fixed; printed with any failure.
 */
static void model_run(struct model *m, int n)
{
	const char *env = getenv("XRL_MODEL_SEED");
	static char prefix[257];
	__u64 real_last = mono();

	long_keys_init();
	memcpy(prefix, long_a, 256);
	m->keys[0] = "a";
	m->keys[1] = "b";
	m->keys[2] = long_a;
	m->keys[3] = long_b;
	m->keys[4] = prefix;
	m->keys[5] = hash_like;
	m->keys[6] = "c";
	m->seed = m->seed0 = env ? (unsigned)strtoul(env, NULL, 0) : 20261201;
	for (int k = 0; k < MODEL_KEYS; k++)
		m->tat[k] = 0;
	xrl_limiter_set_clock(m->l, m->clk);
	for (int i = 0; i < n; i++) {
		model_tick(m, &real_last);
		model_step(m, i);
	}
}

/* 7/h (emit 514285714286 ns, not a round number), burst 5. */
static struct xrl_http_cfg *model_cfg(const char *url, enum xrl_backend_err be)
{
	struct xrl_http_cfg *c = cfg_new();
	char err[256] = "";

	if (url)
		assert_int_equal(xrl_http_backend_parse(url, c, err, sizeof(err)), 0);
	rule_add(c, "api", "7/h", 5);
	c->rules[0].on_backend_error = be;
	c->redis_timeout_ns = 2 * SEC;
	c->breaker_cooldown_ns = 1 * SEC;
	cfg_done(c);
	return c;
}

static void test_model_memory(void **state)
{
	static _Atomic __u64 clk = 400 * DAY;
	struct xrl_http_cfg *c = model_cfg(NULL, XRL_BE_OPEN);
	struct model m = { .what = "memory", .clk = &clk, .back = true };

	m.l = lim_new(c);
	m.r = &c->rules[0];
	model_run(&m, 4000);
	xrl_limiter_free(m.l);
	free(c);
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
	xrl_limiter_free(m.l);
	free(c);
}

/* Redis: the script, the over-limit cache, the key names. Its clock only
 * moves forward, never slower than real time (keys expire in Redis's). */
static void test_model_redis(void **state)
{
	static struct rsrv rs; /* static: redis_teardown reaches it after a failure */
	static _Atomic __u64 clk = 400 * DAY;
	struct xrl_http_cfg *c;
	struct model m = { .what = "redis", .clk = &clk, .real_pace = true };

	NEED_REDIS_SERVER();
	rs = (struct rsrv){};
	redis_up(&rs);
	c = model_cfg(rs.url, XRL_BE_CLOSED);
	m.l = lim_new(c);
	m.r = &c->rules[0];
	model_run(&m, 3000);
	CTX("redis: the over-limit cache answered some");
	GE(stats(m.l).overlimit_cache_hits, 1);
	xrl_limiter_free(m.l);
	free(c);
	redis_down(&rs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_burst_then_refused),
		cmocka_unit_test(test_retry_after_truth),
		cmocka_unit_test(test_independent_keys),
		cmocka_unit_test(test_two_rules_refusal_spends_nothing),
		cmocka_unit_test(test_refusal_reports_longest_wait),
		cmocka_unit_test(test_shadow_refusals_allow_and_count),
		cmocka_unit_test(test_shadow_rule_not_reported),
		cmocka_unit_test(test_cost_above_burst),
		cmocka_unit_test(test_cost_zero_and_rule_cost),
		cmocka_unit_test(test_missing_key_refused),
		cmocka_unit_test(test_missing_key_shadow_rule),
		cmocka_unit_test(test_flood_bounded_slow_rate),
		cmocka_unit_test(test_flood_evicts_idle_first),
		cmocka_unit_test(test_penalty_two_windows),
		cmocka_unit_test(test_penalty_escalates),
		cmocka_unit_test(test_penalty_forgiven_after_quiet),
		cmocka_unit_test(test_concurrent_same_key),
		cmocka_unit_test(test_concurrent_multi_rule),
		cmocka_unit_test(test_redis_down_open),
		cmocka_unit_test(test_redis_down_closed),
		cmocka_unit_test(test_redis_down_local),
		cmocka_unit_test(test_redis_down_mixed),
		cmocka_unit_test(test_redis_breaker_probe),
		cmocka_unit_test(test_redis_silent_timeout),
		cmocka_unit_test_teardown(test_redis_batches, redis_teardown),
		cmocka_unit_test_teardown(test_redis_fast_rule_precision, redis_teardown),
		cmocka_unit_test_teardown(test_redis_noscript, redis_teardown),
		cmocka_unit_test_teardown(test_redis_two_rules_atomic, redis_teardown),
		cmocka_unit_test_teardown(test_redis_call_mixed, redis_teardown),
		cmocka_unit_test_teardown(test_redis_wrongtype_isolated, redis_teardown),
		cmocka_unit_test_teardown(test_redis_call_full, redis_teardown),
		cmocka_unit_test_teardown(test_redis_auth, redis_teardown),
		cmocka_unit_test_teardown(test_redis_outage_and_restart, redis_teardown),
		cmocka_unit_test_teardown(test_redis_two_instances_exact, redis_teardown),
		cmocka_unit_test_teardown(test_overlimit_cache_per_cost, redis_teardown),
		cmocka_unit_test_teardown(test_long_keys_distinct, redis_teardown),
		cmocka_unit_test(test_siphash128_vectors),
		cmocka_unit_test(test_reader_guard),
		cmocka_unit_test_teardown(test_redis_key_ttl_minimal, redis_teardown),
		cmocka_unit_test(test_concurrent_reload_penalty),
		cmocka_unit_test(test_redis_reconnect_never_blocks),
		cmocka_unit_test_teardown(test_redis_maxmemory_bounds, redis_teardown),
		cmocka_unit_test(test_model_memory),
		cmocka_unit_test(test_model_local),
		cmocka_unit_test_teardown(test_model_redis, redis_teardown),
	};

	/* e.g. XRL_TEST_FILTER='*concurrent*': the threaded cases (make test-tsan) */
	if (getenv("XRL_TEST_FILTER"))
		cmocka_set_test_filter(getenv("XRL_TEST_FILTER"));
	log_init("test_limiter", XRL_LOG_ERR, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
