// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * limiter_test.c - the limiter suites' helpers (limiter_test.h).
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

#include "limiter_test.h"
#include "log.h"
#include "xrl.h"

char ctx[256];

/* ---- helpers --------------------------------------------------------------- */

__u64 mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * SEC + (__u64)ts.tv_nsec;
}

/* Sleep at least ns (a sleep may overshoot, never undershoot). */
void sleep_ns(__u64 ns)
{
	__u64 until = mono() + ns;
	struct timespec ts = { .tv_sec = (time_t)(until / SEC), .tv_nsec = (long)(until % SEC) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* A fresh configuration (heap: it is ~40 KiB) with memory_max_keys 65536. */
/*
 * What a test made, freed by xrl_lim_fx_teardown after it, passed or not:
 * a test frees early only what it replaces (lim_free, cfg_free).
 */
#define MADE_MAX 16
static void *made[2][MADE_MAX]; /* [0] configurations, [1] limiters */

static void made_add(int kind, void *p)
{
	for (int i = 0; i < MADE_MAX; i++)
		if (!made[kind][i]) {
			made[kind][i] = p;
			return;
		}
	fail_msg("more than %d %s in one test", MADE_MAX, kind ? "limiters" : "configurations");
}

static bool made_del(int kind, void *p)
{
	for (int i = 0; p && i < MADE_MAX; i++)
		if (made[kind][i] == p) {
			made[kind][i] = NULL;
			return true;
		}
	return false;
}

struct xrl_http_cfg *cfg_new(void)
{
	struct xrl_http_cfg *c = malloc(sizeof(*c));

	assert_non_null(c);
	xrl_http_cfg_init(c);
	c->memory_max_keys = 65536;
	made_add(0, c);
	return c;
}

void cfg_free(struct xrl_http_cfg *c)
{
	made_del(0, c);
	free(c);
}

void lim_free(struct xrl_limiter *l)
{
	made_del(1, l);
	xrl_limiter_free(l);
}

int xrl_lim_fx_teardown(void **state)
{
	for (int i = 0; i < MADE_MAX; i++) {
		xrl_limiter_free(made[1][i]); /* the limiters copy their configuration */
		made[1][i] = NULL;
	}
	for (int i = 0; i < MADE_MAX; i++) {
		free(made[0][i]);
		made[0][i] = NULL;
	}
	return 0;
}

/* Add a rule keyed by a header; returns its index (pointers are taken after
 * cfg_done, the array does not move). */
__u32 rule_add(struct xrl_http_cfg *c, const char *name, const char *rate, __u32 burst)
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

void cfg_done(struct xrl_http_cfg *c)
{
	char err[256] = "";
	int rc = xrl_http_cfg_finish(c, err, sizeof(err));

	if (rc)
		print_error("[%s] xrl_http_cfg_finish = %d: %s\n", ctx, rc, err);
	assert_int_equal(rc, 0);
}

struct xrl_limiter *lim_new(const struct xrl_http_cfg *c)
{
	struct xrl_limiter *l = NULL;
	int rc = xrl_limiter_new(c, &l);

	if (rc)
		print_error("[%s] xrl_limiter_new = %d\n", ctx, rc);
	assert_int_equal(rc, 0);
	assert_non_null(l);
	made_add(1, l);
	return l;
}

/* One request matched by one rule, the rule's own cost. */
struct xrl_decision dec1(struct xrl_limiter *l, const struct xrl_http_rule *r, const char *key)
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
struct xrl_decision dec2(struct xrl_limiter *l, const struct xrl_http_rule *a,
			 const struct xrl_http_rule *b, const char *key)
{
	const struct xrl_http_rule *rs[2] = { a, b };
	const char *ks[2] = { key, key };
	struct xrl_decision d;
	int rc = xrl_limiter_decide(l, rs, ks, NULL, 2, &d);

	if (rc)
		print_error("[%s] xrl_limiter_decide(%s+%s, \"%s\") = %d\n", ctx, a->name, b->name,
			    key, rc);
	assert_int_equal(rc, 0);
	return d;
}

/*
 * A configuration with the rules of spec: "NAME RATE BURST [shadow]" each,
 * separated by ", " ("site 1/h 5, login 1/h 1"), in that order. Not
 * finished (a test may still change it): lim_done finishes it. CTX names
 * the rules.
 */
struct xrl_http_cfg *cfg_rules(const char *spec)
{
	struct xrl_http_cfg *c = cfg_new();
	char name[64], rate[32], more[16];
	const char *p = spec;
	unsigned burst;
	int n, got;

	CTX("%s", spec);
	while (*p) {
		more[0] = '\0';
		got = sscanf(p, "%63s %31s %u%n %15[a-z]%n", name, rate, &burst, &n, more, &n);
		if (got < 3 || (got == 4 && strcmp(more, "shadow")))
			fail_msg("cfg_rules: bad spec at \"%s\"", p);
		c->rules[rule_add(c, name, rate, burst)].shadow = got == 4;
		p += n;
		p += strspn(p, ", ");
	}
	return c;
}

/* cfg_done(c), then a limiter on it. */
struct xrl_limiter *lim_done(struct xrl_http_cfg *c)
{
	cfg_done(c);
	return lim_new(c);
}

/* ---- WANT: a decision or the stats checked in one line ------------------- */

enum { WF_BOOL, WF_U64, WF_U32 };

struct want_field {
	const char *name;
	size_t off;
	int kind;
};

#define WD(name, field, kind) \
	{ \
		name, offsetof(struct xrl_decision, field), kind \
	}
static const struct want_field dec_fields[] = {
	WD("allowed", allowed, WF_BOOL),     WD("shed", shed, WF_BOOL),
	WD("error", backend_error, WF_BOOL), WD("missing", missing_key, WF_BOOL),
	WD("penalized", penalized, WF_BOOL), WD("limit", limit, WF_U64),
	WD("remaining", remaining, WF_U64),  WD("reset", reset_s, WF_U64),
	WD("retry", retry_after_s, WF_U64),  WD("rules", n_rules, WF_U32),
	WD("shadow", n_shadow, WF_U32),
};

#define WS(field) \
	{ \
#field, offsetof(struct xrl_limiter_stats, field), WF_U64 \
	}
static const struct want_field stats_fields[] = {
	WS(decisions),
	WS(allowed),
	WS(refused),
	WS(shadow_refused),
	WS(shed),
	WS(backend_errors),
	WS(breaker_open_skips),
	WS(overlimit_cache_hits),
	WS(fallback_open),
	WS(fallback_closed),
	WS(fallback_local),
	WS(keys),
	WS(evictions_idle),
	WS(evictions_active),
	WS(penalties),
	WS(redis_round_trips),
	WS(redis_calls),
	WS(redis_decisions),
};

/* The value of field f of obj, widened. */
static ull want_get(const void *obj, const struct want_field *f)
{
	const char *p = (const char *)obj + f->off;

	if (f->kind == WF_BOOL)
		return *(const bool *)p;
	if (f->kind == WF_U32)
		return *(const __u32 *)p;
	return *(const __u64 *)p;
}

/*
 * Check one word of a spec ("name", "!name", "name=N", "name<=N" or
 * "name>=N", n bytes at w) against obj, whose fields are tab[0..n_tab);
 * false (and a message) when it does not hold or names no field.
 */
static bool want_word(const void *obj, const struct want_field *tab, size_t n_tab, const char *spec,
		      const char *w, size_t n)
{
	bool neg = *w == '!';
	size_t len = strcspn(w, "<>= "), op_len = 0;
	int op = 0; /* '=', '<' (<=), '>' (>=), 0: a flag */
	const char *rel = "";
	ull want = !neg, got;
	bool ok;

	if (len < n) {
		op = w[len];
		op_len = op == '=' ? 1 : 2;
		rel = op == '=' ? "" : op == '<' ? "<= " : ">= ";
		if (op != '=' && w[len + 1] != '=')
			op = -1;
		else
			want = strtoull(w + len + op_len, NULL, 0);
	}
	for (size_t i = 0; op >= 0 && i < n_tab; i++) {
		if (strlen(tab[i].name) != len - neg || strncmp(w + neg, tab[i].name, len - neg))
			continue;
		if (!op && tab[i].kind != WF_BOOL)
			break; /* a number needs its value */
		got = want_get(obj, &tab[i]);
		ok = op == '<' ? got <= want : op == '>' ? got >= want : got == want;
		if (!ok)
			print_error("[%s] %s: %s = %llu, want %s%llu\n", ctx, spec, tab[i].name,
				    got, rel, want);
		return ok;
	}
	print_error("[%s] WANT \"%s\": no such check '%.*s'\n", ctx, spec, (int)n, w);
	return false;
}

/*
 * Every word of the spec (fmt, ap) against obj, whose fields are
 * tab[0..n_tab); the test fails at file:line unless all hold and no other
 * check failed (fault: what it found, or NULL).
 */
static void want_all(const void *obj, const struct want_field *tab, size_t n_tab, const char *fault,
		     const char *file, int line, const char *fmt, va_list ap)
{
	char spec[512];
	const char *w = spec;
	bool ok = !fault;

	vsnprintf(spec, sizeof(spec), fmt, ap);
	if (fault)
		print_error("[%s] %s: %s\n", ctx, spec, fault);
	while (*w) {
		size_t n = strcspn(w, " ");

		if (n)
			ok &= want_word(obj, tab, n_tab, spec, w, n);
		w += n + (w[n] == ' ');
	}
	if (!ok)
		_fail(file, line);
}

struct xrl_decision want_dec(struct xrl_decision d, bool check_rule,
			     const struct xrl_http_rule *rule, const char *file, int line,
			     const char *fmt, ...)
{
	char fault[128];
	va_list ap;

	snprintf(fault, sizeof(fault), "rule = %s, want %s", d.rule ? d.rule->name : "(none)",
		 rule ? rule->name : "(none)");
	va_start(ap, fmt);
	want_all(&d, dec_fields, sizeof(dec_fields) / sizeof(dec_fields[0]),
		 check_rule && d.rule != rule ? fault : NULL, file, line, fmt, ap);
	va_end(ap);
	return d;
}

struct xrl_limiter_stats want_stats(struct xrl_limiter_stats s, const char *file, int line,
				    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	want_all(&s, stats_fields, sizeof(stats_fields) / sizeof(stats_fields[0]), NULL, file, line,
		 fmt, ap);
	va_end(ap);
	return s;
}

/* One request of `cost` tokens for rule r and key (decc), which must not fail. */
struct xrl_decision dec_cost(struct xrl_limiter *l, const struct xrl_http_rule *r, const char *key,
			     __u32 cost)
{
	struct xrl_decision d;

	EQ(decc(l, r, key, cost, &d), 0);
	return d;
}

/* Each step of steps[0..n) on (r, key): its cost, then WANT its spec. */
void want_steps(struct xrl_limiter *l, const struct xrl_http_rule *r, const char *key,
		const char *what, const struct want_step *steps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		CTX("%s: %s", what, steps[i].what);
		WANT_RULE(dec_cost(l, r, key, steps[i].cost), r, "%s", steps[i].want);
	}
}

/* Decide (rule, key) until refused; the number allowed (at most cap + 1). */
__u64 drain(struct xrl_limiter *l, const struct xrl_http_rule *r, const char *key, __u64 cap)
{
	__u64 n = 0;

	while (n <= cap && dec1(l, r, key).allowed)
		n++;
	return n;
}

struct xrl_limiter_stats stats(struct xrl_limiter *l)
{
	struct xrl_limiter_stats s;

	xrl_limiter_get_stats(l, &s);
	return s;
}

/* Time one decision (ns). */
__u64 timed(struct xrl_limiter *l, const struct xrl_http_rule *r, const char *key,
	    struct xrl_decision *d)
{
	__u64 t0 = mono();

	*d = dec1(l, r, key);
	return mono() - t0;
}

void fl_queued(void *arg)
{
	((struct flight *)arg)->queued++;
}

void fl_decided(void *arg)
{
	((struct flight *)arg)->decided++;
}

/* Queue one decision (rule r, key) on p; xrl_limiter_decide_async's result. */
int dec_async(struct xrl_limiter *l, struct xrl_redis_pipe *p, const struct xrl_http_rule *r,
	      const char *key, struct flight *f, struct xrl_decision *d)
{
	struct xrl_limiter_wait w = { .queued = fl_queued, .decided = fl_decided, .arg = f };

	return xrl_limiter_decide_async(l, p, &r, &key, NULL, 1, d, &w);
}

/* Run the pipe as an event loop would until `n` decisions are decided;
 * the time it took (ns). */
__u64 drive(struct xrl_redis_pipe *p, struct flight *f, int n)
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

/* ---- issue 11: cost, key identity, TTLs, reload race, the model ------------- */

/* One request of `cost` tokens for rule r and key. */
int decc(struct xrl_limiter *l, const struct xrl_http_rule *r, const char *key, __u32 cost,
	 struct xrl_decision *d)
{
	return xrl_limiter_decide(l, &r, &key, &cost, 1, d);
}

/* Keys of 4 KiB that differ only in their last byte, one starting with '#'
 * like a digest's name; and the name Redis would give the long one. */
char long_a[4097], long_b[4097], hash_like[70];

void long_keys_init(void)
{
	memset(long_a, 'x', 4096);
	memset(long_b, 'x', 4096);
	long_a[4095] = 'a';
	long_b[4095] = 'b';
	snprintf(hash_like, sizeof(hash_like), "#%064d", 0);
}

__u64 rnd(unsigned *s)
{
	__u64 a = (__u64)rand_r(s), b = (__u64)rand_r(s);

	return a << 31 ^ b;
}

/* The next step of the clock: none, a little, about a token, about the
 * burst, a jump of days; now and then backwards (if allowed). */
void model_tick(struct model *m, __u64 *real_last)
{
	const struct xrl_gcra_params *g = &m->r->g;
	__u64 now = atomic_load(m->clk), step;

	switch (rnd(&m->seed) % 6) {
	case 0:
		step = 0;
		break;
	case 1:
		step = rnd(&m->seed) % (g->emit_ns / 100);
		break;
	case 2:
		step = rnd(&m->seed) % (2 * g->emit_ns);
		break;
	case 3:
		step = rnd(&m->seed) % (2 * g->tau_ns);
		break;
	case 4:
		step = rnd(&m->seed) % 4 ? 0 : rnd(&m->seed) % (30 * DAY);
		break;
	default:
		step = g->emit_ns * (rnd(&m->seed) % 3);
		break;
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
void model_step(struct model *m, int i)
{
	const struct xrl_gcra_params *g = &m->r->g;
	int k = (int)(rnd(&m->seed) % MODEL_KEYS);
	__u32 cost = (__u32)(rnd(&m->seed) % (g->burst + 3));
	__u64 now = atomic_load(m->clk), base, nt, used, inc = (__u64)cost * g->emit_ns;
	struct xrl_decision d;
	int rc = decc(m->l, m->r, m->keys[k], cost, &d);

	CTX("%s, XRL_MODEL_SEED=%u, step %d: key %d, cost %u, now %llu, model TAT %llu (%+lld ns)",
	    m->what, m->seed0, i, k, cost, (ull)now, (ull)m->tat[k], (long long)(m->tat[k] - now));
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
void model_run(struct model *m, int n)
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
struct xrl_http_cfg *model_cfg(const char *url, enum xrl_backend_err be)
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
