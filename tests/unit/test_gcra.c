// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_gcra.c - unit tests of include/xrl_gcra.h with a simulated clock.
 *
 * The clock is a plain __u64 `now` that the tests advance (or freeze, or
 * move backwards). No root, no BPF: the header is the same code the XDP
 * program runs.
 */
#include <errno.h>

#include "check.h"

#include "xrl_gcra.h"

#define NOW_MAX ((1ULL << 62) - 1) /* documented: now < 2^62 */

static struct xrl_gcra_params mkp(__u64 tokens, __u64 period, __u32 burst)
{
	struct xrl_gcra_params p;
	int rc;

	memset(&p, 0xa5, sizeof(p));
	rc = xrl_gcra_init(tokens, period, burst, &p);
	if (rc)
		print_error("[%s] xrl_gcra_init(%llu, %llu, %u) = %d\n", ctx, (ull)tokens,
			    (ull)period, burst, rc);
	assert_int_equal(rc, 0);
	return p;
}

/* Take `cost` repeatedly at a frozen `now` until refused; return the count. */
static __u64 drain(const struct xrl_gcra_params *p, __u64 *tat, __u64 now, __u32 cost)
{
	__u64 n = 0, wait;

	while (xrl_gcra_take(p, tat, now, cost, &wait)) {
		EQ(wait, 0);
		n++;
		if (n > (__u64)p->burst + 1)
			break; /* over-admitting: let the caller's EQ say so */
	}
	return n;
}

/* ---- exact burst with a frozen clock ---------------------------------- */

static void test_exact_burst_frozen_clock(void **state)
{
	static const __u32 bursts[] = { 1, 10, 50, 1000, 1000000 };
	static const __u64 nows[] = { 0, 1, 123456789, 3 * DAY, 1ULL << 61 };

	for (size_t b = 0; b < sizeof(bursts) / sizeof(bursts[0]); b++) {
		for (size_t n = 0; n < sizeof(nows) / sizeof(nows[0]); n++) {
			struct xrl_gcra_params p;
			__u64 tat = 0, now = nows[n], wait, t;

			CTX("burst=%u now=%llu", bursts[b], (ull)now);
			p = mkp(100, SEC, bursts[b]);
			EQ(xrl_gcra_remaining(tat, now, p.emit_ns, p.tau_ns), bursts[b]);
			EQ(drain(&p, &tat, now, 1), bursts[b]);
			EQ(tat, now + p.tau_ns);
			EQ(xrl_gcra_remaining(tat, now, p.emit_ns, p.tau_ns), 0);
			/* ... and refuses forever while the clock stands still */
			t = tat;
			for (int i = 0; i < 1000; i++) {
				assert_false(xrl_gcra_take(&p, &tat, now, 1, &wait));
				EQ(wait, p.emit_ns);
				EQ(tat, t);
			}
		}
	}
}

/* A small deterministic generator, so a failure reproduces. */
static __u64 rng_state = 88172645463325252ULL;
static __u64 rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* ---- requests much faster than the rate over a window ----------------- */

struct window_case {
	const char *name;
	__u64 tokens, period_ns;
	__u32 burst;
	__u64 window_ns;
};

static void run_window(const struct window_case *c)
{
	struct xrl_gcra_params p;
	const __u64 t0 = 1000000007ULL; /* an arbitrary uptime */
	const __u64 end = t0 + c->window_ns;
	__u64 tat = 0, now, step = 0, admitted = 0, model, ideal, tol, wait;
	bool exact;
	double bound;

	CTX("%s over %llu ns", c->name, (ull)c->window_ns);
	p = mkp(c->tokens, c->period_ns, c->burst);
	/*
	 * Several requests per emission interval, two at each instant.
	 * With a burst of 2 or more, a refusal leaves the TAT more than
	 * tau - emit >= emit ahead of now, so any arrival pattern faster than
	 * the rate takes every token: irregular gaps of 1..emit/3 ns.
	 * With a burst of 1 the bucket is full the moment a token is due and
	 * a late arrival loses the difference (that is a bucket of one), so
	 * there the arrivals are regular and fall on every due instant.
	 */
	if (c->burst == 1) {
		for (__u64 k = 7; k < 1000 && !step; k++)
			if (p.emit_ns % k == 0)
				step = p.emit_ns / k;
		assert_true(step > 0);
	}
	assert_true(p.emit_ns >= 3);
	for (now = t0;; now += step ? step : 1 + rng() % (p.emit_ns / 3)) {
		if (now > end)
			now = end;
		for (int k = 0; k < 2; k++)
			admitted += xrl_gcra_take(&p, &tat, now, 1, &wait);
		/* never more than the bucket allows at any instant */
		LE(tat, now + p.tau_ns);
		if (now == end)
			break;
	}
	/* What the arithmetic must do, exactly, with the rounded emit... */
	model = c->burst + c->window_ns / p.emit_ns;
	EQ(admitted, model);
	/* ... and how far that may be from the rate asked for: emit is within
	 * 0.5 ns of period/tokens, so over the window the count can differ by
	 * at most T*0.5/(emit*(emit-0.5)) (plus 1 for the floors), and not at
	 * all when period/tokens is a whole number of ns. */
	ideal = c->burst + (__u64)((unsigned __int128)c->window_ns * c->tokens / c->period_ns);
	exact = c->period_ns % c->tokens == 0;
	bound = (double)c->window_ns * 0.5 / ((double)p.emit_ns * ((double)p.emit_ns - 0.5));
	tol = exact ? 0 : (__u64)bound + 1;
	if ((admitted > ideal ? admitted - ideal : ideal - admitted) > tol)
		print_error("[%s] admitted %llu, ideal %llu, tolerance %llu "
			    "(emit %llu)\n",
			    ctx, (ull)admitted, (ull)ideal, (ull)tol, (ull)p.emit_ns);
	assert_in_range(admitted, ideal - (tol < ideal ? tol : ideal), ideal + tol);
}

static void test_window_rates(void **state)
{
	static const struct window_case cases[] = {
		{ "1/hour", 1, HOUR, 1, 48 * HOUR },
		{ "1/hour b3", 1, HOUR, 3, 10 * HOUR + 1 },
		{ "10/min", 10, MINUTE, 5, HOUR },
		{ "1/6s", 1, 6 * SEC, 3, HOUR + 5 * SEC },
		{ "100/s", 100, SEC, 20, 60 * SEC },
		{ "100/s b1", 100, SEC, 1, 1234567891ULL },
		{ "3/s", 3, SEC, 1, HOUR },
		{ "3/s long", 3, SEC, 7, 1000000 * SEC },
		{ "1000000/s", 1000000, SEC, 1000, SEC },
		{ "10000000/s", 10000000, SEC, 100000, SEC },
		{ "7000000/s", 7000000, SEC, 7, SEC },
		{ "7000000/s b1M", 7000000, SEC, 1000000, 300 * MS },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_window(&cases[i]);
}

/* The 0.5 ns bound itself, stated in the header: 0.5 % at 10M/s. */
static void test_emit_rounding_bound(void **state)
{
	static const __u64 rates[] = { 3,	 7,	    1000,      3000001,	  7000000,
				       10000000, 333333333, 999999999, 1000000000 };

	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		struct xrl_gcra_params p;
		double want, err;

		CTX("%llu/s", (ull)rates[i]);
		p = mkp(rates[i], SEC, 1);
		want = (double)SEC / (double)rates[i];
		err = (double)p.emit_ns - want;
		if (err > 0.5 || err < -0.5)
			print_error("[%s] emit %llu vs %.3f\n", ctx, (ull)p.emit_ns, want);
		assert_true(err <= 0.5 && err >= -0.5);
	}
	CTX("7000000/s");
	EQ(mkp(7000000, SEC, 1).emit_ns, 143);
	CTX("3/s");
	EQ(mkp(3, SEC, 1).emit_ns, 333333333);
	CTX("2/3ns rounds half up");
	EQ(mkp(2, 3, 1).emit_ns, 2);
	CTX("2/5ns rounds half up");
	EQ(mkp(2, 5, 1).emit_ns, 3);
}

/* ---- costs ------------------------------------------------------------- */

static void test_cost_above_one(void **state)
{
	struct xrl_gcra_params p;
	__u64 t0 = 5 * SEC, tat = 0, wait, t;

	CTX("10/s burst 10, cost 5");
	p = mkp(10, SEC, 10);
	assert_true(xrl_gcra_take(&p, &tat, t0, 5, &wait));
	EQ(xrl_gcra_remaining(tat, t0, p.emit_ns, p.tau_ns), 5);
	assert_true(xrl_gcra_take(&p, &tat, t0, 5, &wait));
	EQ(xrl_gcra_remaining(tat, t0, p.emit_ns, p.tau_ns), 0);
	t = tat;
	assert_false(xrl_gcra_take(&p, &tat, t0, 5, &wait));
	EQ(tat, t);
	EQ(wait, 5 * p.emit_ns);
	/* one token is not enough for a cost of 5 */
	assert_false(xrl_gcra_take(&p, &tat, t0 + p.emit_ns, 5, &wait));
	EQ(wait, 4 * p.emit_ns);
	/* but it is for a cost of 1 */
	assert_true(xrl_gcra_take(&p, &tat, t0 + p.emit_ns, 1, &wait));

	/* burst 10, cost 3: 3 admitted at t0, 1 token stays unused */
	CTX("10/s burst 10, cost 3");
	tat = 0;
	EQ(drain(&p, &tat, t0, 3), 3);
	EQ(xrl_gcra_remaining(tat, t0, p.emit_ns, p.tau_ns), 1);
	assert_true(xrl_gcra_take(&p, &tat, t0, 1, &wait));

	/* cost == burst: admitted only when the bucket is full */
	CTX("cost == burst");
	tat = 0;
	EQ(drain(&p, &tat, t0, 10), 1);
	assert_false(xrl_gcra_take(&p, &tat, t0 + p.tau_ns - 1, 10, &wait));
	EQ(wait, 1);
	assert_true(xrl_gcra_take(&p, &tat, t0 + p.tau_ns, 10, &wait));
}

static void test_cost_above_burst(void **state)
{
	static const __u64 nows[] = { 0, SEC, 10 * YEAR, NOW_MAX };
	struct xrl_gcra_params p;
	__u64 tat, wait;

	p = mkp(100, SEC, 10);
	for (size_t i = 0; i < sizeof(nows) / sizeof(nows[0]); i++) {
		CTX("cost 11 burst 10 now=%llu", (ull)nows[i]);
		tat = 0;
		assert_false(xrl_gcra_take(&p, &tat, nows[i], 11, &wait));
		EQ(wait, UINT64_MAX);
		EQ(tat, 0);
		assert_false(xrl_gcra_take(&p, &tat, nows[i], UINT32_MAX, &wait));
		EQ(wait, UINT64_MAX);
		EQ(tat, 0);
		/* the bucket is untouched: a full burst still follows */
		EQ(drain(&p, &tat, nows[i], 1), 10);
	}
	CTX("cost 2 burst 1");
	p = mkp(1, HOUR, 1);
	tat = 0;
	assert_false(xrl_gcra_take(&p, &tat, DAY, 2, &wait));
	EQ(wait, UINT64_MAX);
	/* the biggest burst the ranges allow, one above it */
	CTX("cost burst+1 at the largest burst");
	p = mkp(10000000, SEC, XRL_GCRA_BURST_MAX);
	tat = 0;
	assert_false(xrl_gcra_take(&p, &tat, SEC, XRL_GCRA_BURST_MAX + 1, &wait));
	EQ(wait, UINT64_MAX);
	assert_true(xrl_gcra_take(&p, &tat, SEC, XRL_GCRA_BURST_MAX, &wait));
}

static void test_cost_zero(void **state)
{
	struct xrl_gcra_params p;
	__u64 tat = 0, now = 7 * SEC, wait = 12345, t;

	CTX("cost 0");
	p = mkp(1, HOUR, 2);
	/* fresh bucket: admitted, nothing spent */
	assert_true(xrl_gcra_take(&p, &tat, now, 0, &wait));
	EQ(wait, 0);
	EQ(tat, 0);
	EQ(drain(&p, &tat, now, 1), 2);
	/* empty bucket: still admitted, still nothing spent */
	t = tat;
	for (int i = 0; i < 100; i++) {
		wait = 12345;
		assert_true(xrl_gcra_take(&p, &tat, now, 0, &wait));
		EQ(wait, 0);
		EQ(tat, t);
	}
	/* and with the clock behind the bucket */
	assert_true(xrl_gcra_take(&p, &tat, 0, 0, &wait));
	EQ(tat, t);
}

/* ---- Retry-After ------------------------------------------------------- */

static void check_retry_after(const struct xrl_gcra_params *p, __u64 tat, __u64 now, __u32 cost,
			      __u64 wait)
{
	__u64 t, w2, inc = (__u64)cost * p->emit_ns;

	assert_true(wait >= 1);
	assert_true(wait != UINT64_MAX);
	EQ(xrl_gcra_conform_at(tat, inc, p->tau_ns), now + wait);
	EQ(xrl_gcra_wait(tat, now, inc, p->tau_ns), wait);
	/* one ns early: refused, and told to wait exactly 1 ns more */
	t = tat;
	assert_false(xrl_gcra_take(p, &t, now + wait - 1, cost, &w2));
	EQ(w2, 1);
	EQ(t, tat);
	/* on time: admitted */
	t = tat;
	assert_true(xrl_gcra_take(p, &t, now + wait, cost, &w2));
	EQ(w2, 0);
	/* and later, still admitted */
	t = tat;
	assert_true(xrl_gcra_take(p, &t, now + wait + 1 + rng() % SEC, cost, &w2));
}

static void test_retry_after_exact(void **state)
{
	static const struct {
		__u64 tokens, period;
		__u32 burst;
	} cases[] = {
		{ 100, SEC, 10 },	{ 3, SEC, 4 },
		{ 1, HOUR, 1 },		{ 1, HOUR, 1000000 },
		{ 7000000, SEC, 50 },	{ 10000000, SEC, 1 },
		{ 1000000000, SEC, 3 }, { 1, XRL_GCRA_EMIT_MAX, 2 },
		{ 20, HOUR, 20 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct xrl_gcra_params p;
		__u64 tat, now = 1000 * SEC + rng() % SEC, wait;
		int refusals = 0;

		CTX("%llu per %llu ns burst %u", (ull)cases[i].tokens, (ull)cases[i].period,
		    cases[i].burst);
		p = mkp(cases[i].tokens, cases[i].period, cases[i].burst);
		tat = now + p.tau_ns; /* start empty, or a big burst never refuses */
		for (int n = 0; n < 1500; n++) {
			__u32 cost = 1 + rng() % (p.burst < 5 ? p.burst : 5);
			__u64 before = tat;

			/* mostly too fast, sometimes a pause */
			now += rng() % (n % 10 == 9 ? 3 * p.emit_ns : p.emit_ns / 4 + 1);
			if (xrl_gcra_take(&p, &tat, now, cost, &wait)) {
				EQ(wait, 0);
				continue;
			}
			EQ(tat, before);
			check_retry_after(&p, tat, now, cost, wait);
			refusals++;
		}
		assert_true(refusals > 50);
	}

	/* the worked example: 100/s burst 10 drained at t0 */
	CTX("100/s burst 10 drained");
	{
		struct xrl_gcra_params p = mkp(100, SEC, 10);
		__u64 tat = 0, t0 = 42 * SEC, wait;

		EQ(drain(&p, &tat, t0, 1), 10);
		assert_false(xrl_gcra_take(&p, &tat, t0, 1, &wait));
		EQ(wait, 10 * MS);
		assert_false(xrl_gcra_take(&p, &tat, t0 + 3 * MS, 1, &wait));
		EQ(wait, 7 * MS);
		assert_false(xrl_gcra_take(&p, &tat, t0 + 3 * MS, 3, &wait));
		EQ(wait, 27 * MS);
		check_retry_after(&p, tat, t0 + 3 * MS, 3, wait);
	}
}

/* ---- long idle periods -------------------------------------------------- */

static void test_long_idle(void **state)
{
	static const struct {
		__u64 tokens, period;
		__u32 burst;
	} cases[] = {
		{ 100, SEC, 10 },
		{ 1, HOUR, 1000000 },
		{ 10000000, SEC, 1000000 },
		{ 1, XRL_GCRA_EMIT_MAX, 1024 },
		{ 3, SEC, 1 },
	};
	static const __u64 idles[] = { DAY, 30 * DAY, YEAR, 100 * YEAR, 140 * YEAR };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct xrl_gcra_params p;
		const __u64 t0 = 17 * SEC;
		__u64 now, tat, drained, want;

		p = mkp(cases[i].tokens, cases[i].period, cases[i].burst);
		for (size_t j = 0; j <= sizeof(idles) / sizeof(idles[0]); j++) {
			now = j < sizeof(idles) / sizeof(idles[0]) ? t0 + idles[j] : NOW_MAX;
			assert_true(now <= NOW_MAX);
			CTX("%llu per %llu ns burst %u, idle until %llu", (ull)cases[i].tokens,
			    (ull)cases[i].period, cases[i].burst, (ull)now);
			tat = 0;
			EQ(drain(&p, &tat, t0, 1), p.burst);
			drained = tat;
			/* full again once the idle time covers tau; otherwise
			 * what accrued, never more */
			want = now >= drained ? p.burst : (p.tau_ns - (drained - now)) / p.emit_ns;
			EQ(xrl_gcra_remaining(tat, now, p.emit_ns, p.tau_ns), want);
			EQ(xrl_gcra_reset(tat, now), now >= drained ? 0 : drained - now);
			EQ(drain(&p, &tat, now, 1), want);
			LE(tat, now + p.tau_ns);
			assert_true(tat >= now); /* no wrap-around */
			EQ(drain(&p, &tat, now, 1), 0);
		}
		/* a bucket that has never been used, at the end of time */
		CTX("%llu per %llu ns burst %u fresh at NOW_MAX", (ull)cases[i].tokens,
		    (ull)cases[i].period, cases[i].burst);
		tat = 0;
		EQ(drain(&p, &tat, NOW_MAX, 1), p.burst);
		EQ(tat, NOW_MAX + p.tau_ns);
		/* the wait after that is exact and fits */
		{
			__u64 wait;
			assert_false(xrl_gcra_take(&p, &tat, NOW_MAX, 1, &wait));
			EQ(wait, p.emit_ns);
		}
	}
	/* largest tau at the largest now, costs up to the burst */
	CTX("tau = 2^62 at now = 2^62-1");
	{
		struct xrl_gcra_params p = mkp(1, XRL_GCRA_EMIT_MAX, 1024);
		__u64 tat = 0, wait;

		EQ(p.tau_ns, XRL_GCRA_TAU_MAX);
		assert_true(xrl_gcra_take(&p, &tat, NOW_MAX, 1024, &wait));
		EQ(tat, NOW_MAX + XRL_GCRA_TAU_MAX);
		assert_false(xrl_gcra_take(&p, &tat, NOW_MAX, 1024, &wait));
		EQ(wait, XRL_GCRA_TAU_MAX);
	}
}

/* ---- clocks that stand still or step back ------------------------------- */

static void test_repeated_same_now(void **state)
{
	struct xrl_gcra_params p;
	__u64 tat = 0, t0 = 3 * SEC, now, wait;

	CTX("100/s burst 5, partial refill");
	p = mkp(100, SEC, 5);
	EQ(drain(&p, &tat, t0, 1), 5);
	/* 3.5 emission intervals later: exactly 3 more, whatever the repeats */
	now = t0 + 3 * p.emit_ns + p.emit_ns / 2;
	EQ(drain(&p, &tat, now, 1), 3);
	for (int i = 0; i < 1000; i++)
		assert_false(xrl_gcra_take(&p, &tat, now, 1, &wait));
	EQ(wait, p.emit_ns / 2);
	/* one ns at a time through an interval: exactly one more */
	{
		__u64 n = 0;

		for (__u64 t = now; t < now + p.emit_ns; t += MS / 10)
			for (int k = 0; k < 3; k++)
				n += xrl_gcra_take(&p, &tat, t, 1, &wait);
		EQ(n, 1);
	}
}

static void test_clock_backwards(void **state)
{
	struct xrl_gcra_params p;
	__u64 tat = 0, t0 = 100 * SEC, wait, t;
	static const __u64 back[] = { 1, 1000, MS, 10 * MS, SEC, 100 * SEC };

	CTX("100/s burst 10, clock steps back after a drain");
	p = mkp(100, SEC, 10);
	EQ(drain(&p, &tat, t0, 1), 10);
	t = tat;
	for (size_t i = 0; i < sizeof(back) / sizeof(back[0]); i++) {
		assert_false(xrl_gcra_take(&p, &tat, t0 - back[i], 1, &wait));
		EQ(tat, t);
		/* the wait is counted from the earlier now: same instant */
		EQ(t0 - back[i] + wait, t0 + p.emit_ns);
		EQ(xrl_gcra_remaining(tat, t0 - back[i], p.emit_ns, p.tau_ns), 0);
	}

	/* a jittery clock (steps back by up to 3 emits now and then) never
	 * admits more than a monotonic clock at its highest reading would */
	CTX("jitter");
	{
		__u64 now = t0, first = t0, max_now = t0, admitted = 0;

		tat = 0;
		for (int i = 0; i < 200000; i++) {
			if (i % 50 == 49 && now > 2 * p.emit_ns)
				now -= rng() % (2 * p.emit_ns);
			else
				now += rng() % (p.emit_ns / 3);
			if (now > max_now)
				max_now = now;
			admitted += xrl_gcra_take(&p, &tat, now, 1, &wait);
			LE(tat, max_now + p.tau_ns);
			LE(admitted, p.burst + (max_now - first) / p.emit_ns);
		}
		/* and it is not starved either: a monotonic clock at max_now
		 * would admit at most a burst more */
		assert_true(admitted + p.burst + 1 >= (max_now - first) / p.emit_ns);
	}
}

/* ---- xrl_gcra_init ----------------------------------------------------- */

static void test_init_ranges(void **state)
{
	struct xrl_gcra_params p;

	CTX("init");
	/* zero fields */
	EQ(xrl_gcra_init(0, SEC, 10, &p), -EINVAL);
	EQ(xrl_gcra_init(100, 0, 10, &p), -EINVAL);
	EQ(xrl_gcra_init(100, SEC, 0, &p), -EINVAL);
	EQ(xrl_gcra_init(0, 0, 0, &p), -EINVAL);

	/* faster than one token per ns */
	EQ(xrl_gcra_init(3, 1, 1, &p), -ERANGE);
	EQ(xrl_gcra_init(1000, 1, 1, &p), -ERANGE);
	EQ(xrl_gcra_init(UINT64_MAX, 1, 1, &p), -ERANGE);
	EQ(xrl_gcra_init(UINT64_MAX, SEC, 1, &p), -ERANGE);
	EQ(xrl_gcra_init(2, 1, 1, &p), -ERANGE); /* 2/ns, not 1/ns */
	EQ(xrl_gcra_init(3, 2, 1, &p), -ERANGE); /* 1.5/ns */
	EQ(xrl_gcra_init(SEC + 1, SEC, 1, &p), -ERANGE);
	/* exactly one per ns is the limit */
	EQ(xrl_gcra_init(1, 1, 1, &p), 0);
	EQ(p.emit_ns, 1);
	EQ(xrl_gcra_init(SEC, SEC, 7, &p), 0);
	EQ(p.emit_ns, 1);
	EQ(p.tau_ns, 7);

	/* slower than one token per 2^52 ns */
	EQ(xrl_gcra_init(1, XRL_GCRA_EMIT_MAX + 1, 1, &p), -ERANGE);
	EQ(xrl_gcra_init(1, UINT64_MAX, 1, &p), -ERANGE);
	EQ(xrl_gcra_init(2, 2 * XRL_GCRA_EMIT_MAX + 1, 1, &p), -ERANGE);
	EQ(xrl_gcra_init(4, 4 * XRL_GCRA_EMIT_MAX + 1, 1, &p), -ERANGE);
	EQ(xrl_gcra_init(1, XRL_GCRA_EMIT_MAX, 1, &p), 0);
	EQ(p.emit_ns, XRL_GCRA_EMIT_MAX);
	/* large but in range: 2^64-1 tokens over the same in ns */
	EQ(xrl_gcra_init(UINT64_MAX, UINT64_MAX, 1, &p), 0);
	EQ(p.emit_ns, 1);
	EQ(xrl_gcra_init(1ULL << 10, XRL_GCRA_EMIT_MAX << 10, 1, &p), 0);
	EQ(p.emit_ns, XRL_GCRA_EMIT_MAX);

	/* burst * emit > 2^62 */
	EQ(xrl_gcra_init(1, XRL_GCRA_EMIT_MAX, 1025, &p), -ERANGE);
	EQ(xrl_gcra_init(1, XRL_GCRA_EMIT_MAX, 1024, &p), 0);
	EQ(p.tau_ns, XRL_GCRA_TAU_MAX);
	EQ(xrl_gcra_init(1, HOUR, 2000000, &p), -ERANGE);
	EQ(xrl_gcra_init(1, DAY, 100000, &p), -ERANGE);
	/* burst above XRL_GCRA_BURST_MAX, even where tau would fit */
	EQ(xrl_gcra_init(SEC, SEC, XRL_GCRA_BURST_MAX + 1, &p), -ERANGE);
	EQ(xrl_gcra_init(SEC, SEC, UINT32_MAX, &p), -ERANGE);
	EQ(xrl_gcra_init(SEC, SEC, XRL_GCRA_BURST_MAX, &p), 0);

	/* 1/hour with a burst of a million: tau = 3.6e18 < 2^62 */
	EQ(xrl_gcra_init(1, HOUR, 1000000, &p), 0);
	EQ(p.emit_ns, HOUR);
	EQ(p.tau_ns, 1000000ULL * HOUR);
	EQ(p.burst, 1000000);
	/* 10M/s with a burst of a million */
	EQ(xrl_gcra_init(10000000, SEC, 1000000, &p), 0);
	EQ(p.emit_ns, 100);
	EQ(p.tau_ns, 100000000);
	EQ(p.burst, 1000000);
	/* the usual */
	EQ(xrl_gcra_init(100, SEC, 20, &p), 0);
	EQ(p.emit_ns, 10 * MS);
	EQ(p.tau_ns, 200 * MS);
	EQ(p.burst, 20);
	EQ(xrl_gcra_init(5, 2 * SEC, 1, &p), 0); /* 2.5/s */
	EQ(p.emit_ns, 400 * MS);
}

/* ---- remaining / reset / decide / conform_at --------------------------- */

static void test_remaining_reset(void **state)
{
	struct xrl_gcra_params p;
	__u64 tat = 0, t0 = 9 * SEC, wait;

	CTX("100/s burst 10");
	p = mkp(100, SEC, 10); /* emit 10 ms, tau 100 ms */
	EQ(xrl_gcra_remaining(tat, t0, p.emit_ns, p.tau_ns), 10);
	EQ(xrl_gcra_reset(tat, t0), 0);
	for (int i = 0; i < 3; i++)
		assert_true(xrl_gcra_take(&p, &tat, t0, 1, &wait));
	EQ(xrl_gcra_remaining(tat, t0, p.emit_ns, p.tau_ns), 7);
	EQ(xrl_gcra_reset(tat, t0), 30 * MS);
	/* 5 ms later 7.5 tokens: 7 whole ones; 15 ms later 8.5: 8 */
	EQ(xrl_gcra_remaining(tat, t0 + 5 * MS, p.emit_ns, p.tau_ns), 7);
	EQ(xrl_gcra_remaining(tat, t0 + 15 * MS, p.emit_ns, p.tau_ns), 8);
	EQ(xrl_gcra_reset(tat, t0 + 15 * MS), 15 * MS);
	EQ(xrl_gcra_remaining(tat, t0 + 30 * MS - 1, p.emit_ns, p.tau_ns), 9);
	EQ(xrl_gcra_remaining(tat, t0 + 30 * MS, p.emit_ns, p.tau_ns), 10);
	EQ(xrl_gcra_reset(tat, t0 + 30 * MS), 0);
	EQ(xrl_gcra_remaining(tat, t0 + YEAR, p.emit_ns, p.tau_ns), 10);
	/* cost 4 at t0 + 15 ms: 8.5 available, 4.5 left -> 4 */
	assert_true(xrl_gcra_take(&p, &tat, t0 + 15 * MS, 4, &wait));
	EQ(tat, t0 + 70 * MS);
	EQ(xrl_gcra_remaining(tat, t0 + 15 * MS, p.emit_ns, p.tau_ns), 4);
	EQ(xrl_gcra_reset(tat, t0 + 15 * MS), 55 * MS);
	/* drained */
	EQ(drain(&p, &tat, t0 + 15 * MS, 1), 4);
	EQ(xrl_gcra_remaining(tat, t0 + 15 * MS, p.emit_ns, p.tau_ns), 0);
	EQ(xrl_gcra_reset(tat, t0 + 15 * MS), 95 * MS); /* < tau: 0.5 left over */
	/* clock behind the TAT by more than tau: nothing, no underflow */
	EQ(xrl_gcra_remaining(tat, t0 - SEC, p.emit_ns, p.tau_ns), 0);
	EQ(xrl_gcra_remaining(tat, 0, p.emit_ns, p.tau_ns), 0);
	EQ(xrl_gcra_reset(tat, 0), tat);
	/* emit 0 (unset rule) reports nothing rather than dividing by 0 */
	EQ(xrl_gcra_remaining(0, t0, 0, 0), 0);
	EQ(xrl_gcra_remaining(0, t0, 0, 100), 0);
}

static void test_decide_conform_wait(void **state)
{
	__u64 nt;

	CTX("decide");
	/* idle bucket: base is now */
	assert_true(xrl_gcra_decide(100, 1000, 10, 50, &nt));
	EQ(nt, 1010);
	/* busy bucket: base is the TAT; the limit is inclusive */
	assert_true(xrl_gcra_decide(1040, 1000, 10, 50, &nt));
	EQ(nt, 1050);
	assert_false(xrl_gcra_decide(1041, 1000, 10, 50, &nt));
	EQ(nt, 1051); /* what an admit would have produced */
	EQ(xrl_gcra_conform_at(1041, 10, 50), 1001);
	EQ(xrl_gcra_wait(1041, 1000, 10, 50), 1);
	EQ(xrl_gcra_wait(1041, 1001, 10, 50), 0);
	EQ(xrl_gcra_wait(1041, 5000, 10, 50), 0);
	/* conform_at never underflows */
	EQ(xrl_gcra_conform_at(0, 10, 50), 0);
	EQ(xrl_gcra_conform_at(40, 10, 50), 0);
	EQ(xrl_gcra_conform_at(41, 10, 50), 1);
	/* tat = 0 (fresh) at now = 0 */
	assert_true(xrl_gcra_decide(0, 0, 50, 50, &nt));
	EQ(nt, 50);
	assert_false(xrl_gcra_decide(0, 0, 51, 50, &nt));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_burst_frozen_clock),
		cmocka_unit_test(test_window_rates),
		cmocka_unit_test(test_emit_rounding_bound),
		cmocka_unit_test(test_cost_above_one),
		cmocka_unit_test(test_cost_above_burst),
		cmocka_unit_test(test_cost_zero),
		cmocka_unit_test(test_retry_after_exact),
		cmocka_unit_test(test_long_idle),
		cmocka_unit_test(test_repeated_same_now),
		cmocka_unit_test(test_clock_backwards),
		cmocka_unit_test(test_init_ranges),
		cmocka_unit_test(test_remaining_reset),
		cmocka_unit_test(test_decide_conform_wait),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
