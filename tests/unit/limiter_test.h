/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * limiter_test.h - what the limiter's suites share (limiter_test.c): a
 * configuration and a limiter in a line, one decision at a time or queued
 * on a pipe, the clock, and the model every backend is checked against.
 * The suites: test_limiter_memory.c (buckets in process memory, penalties,
 * threads), test_limiter_redis.c (a Redis that is not there, and a real
 * redis-server started once for its group). test_limiter.c runs them.
 */
#ifndef XRL_LIMITER_TEST_H
#define XRL_LIMITER_TEST_H

#define XRL_CHECK_SHARED_CTX /* one ctx for the suites and the helpers */

#include "check.h"

#include "http/http.h"

/* Which rule a decision names: compared by pointer, printed by name. */
#define RULE_IS(got, want) \
	do { \
		const struct xrl_http_rule *g_ = (got), *w_ = (want); \
		if (g_ != w_) \
			print_error("[%s] %s = %s, want %s = %s\n", ctx, #got, \
				    g_ ? g_->name : "(none)", #want, w_ ? w_->name : "(none)"); \
		assert_ptr_equal(g_, w_); \
	} while (0)

/* Decisions queued on a pipe: how many were queued and decided. */
struct flight {
	int queued, decided;
};

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
	bool back;	/* the clock may step backwards */
	bool real_pace; /* Redis: the clock never runs slower than real time */
	__u64 tat[MODEL_KEYS];
	const char *keys[MODEL_KEYS];
	unsigned seed, seed0;
};

__u64 mono(void);

/* Sleep at least ns (a sleep may overshoot, never undershoot). */
void sleep_ns(__u64 ns);

/* A fresh configuration (heap: it is ~40 KiB) with memory_max_keys 65536. */
struct xrl_http_cfg *cfg_new(void);

/* Add a rule keyed by a header; returns its index (pointers are taken after
 * cfg_done, the array does not move). */
__u32 rule_add(struct xrl_http_cfg *c, const char *name, const char *rate, __u32 burst);

void cfg_done(struct xrl_http_cfg *c);

/* A configuration with the rules of spec, "NAME RATE BURST [shadow]" each,
 * separated by ", "; CTX names them. lim_done finishes it (cfg_done) and
 * makes a limiter on it. */
struct xrl_http_cfg *cfg_rules(const char *spec);
struct xrl_limiter *lim_done(struct xrl_http_cfg *c);

struct xrl_limiter *lim_new(const struct xrl_http_cfg *c);
/* Free early what a test replaces; the rest goes after the test. */
void lim_free(struct xrl_limiter *l);
void cfg_free(struct xrl_http_cfg *c);
/* Per test: frees every configuration and limiter the test made. */
int xrl_lim_fx_teardown(void **state);

/* One request matched by one rule, the rule's own cost. */
struct xrl_decision dec1(struct xrl_limiter *l, const struct xrl_http_rule *r, const char *key);

/* One request matched by two rules, the same key for both. */
struct xrl_decision dec2(struct xrl_limiter *l, const struct xrl_http_rule *a,
			 const struct xrl_http_rule *b, const char *key);

/*
 * WANT(d, FMT, ...): check the fields of decision d that the spec (FMT, as
 * printf) names, one word each: a flag "allowed", "shed", "error"
 * (backend_error), "missing" (missing_key) or "penalized", true, or with a
 * leading '!' false, or "flag=N"; a number "limit", "remaining", "reset"
 * (reset_s), "retry" (retry_after_s), "rules" (n_rules), "shadow"
 * (n_shadow) as "name=N", "name<=N" or "name>=N". WANT_RULE(d, r, ...)
 * also wants d.rule == r. WANT_STATS(l, ...) checks stats(l) the same way,
 * by the names of struct xrl_limiter_stats ("decisions=10 shed=0"). Each
 * fails the test at its own line, naming every check that does not hold
 * (a word that names nothing fails too); each returns what it checked:
 * d = WANT(dec1(l, r, "k"), "allowed remaining=%u", n).
 */
#define WANT(d, ...)	     want_dec((d), false, NULL, __FILE__, __LINE__, __VA_ARGS__)
#define WANT_RULE(d, r, ...) want_dec((d), true, (r), __FILE__, __LINE__, __VA_ARGS__)
#define WANT_STATS(l, ...)   want_stats(stats(l), __FILE__, __LINE__, __VA_ARGS__)
struct xrl_decision want_dec(struct xrl_decision d, bool check_rule,
			     const struct xrl_http_rule *rule, const char *file, int line,
			     const char *fmt, ...) __attribute__((format(printf, 6, 7)));
struct xrl_limiter_stats want_stats(struct xrl_limiter_stats s, const char *file, int line,
				    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* One request of `cost` tokens for rule r and key, which must not fail. */
struct xrl_decision dec_cost(struct xrl_limiter *l, const struct xrl_http_rule *r, const char *key,
			     __u32 cost);

/* A step of a table: a request of `cost` tokens, what it is about, and the
 * WANT spec of its decision. */
struct want_step {
	const char *what;
	__u32 cost;
	const char *want;
};

/* Each step on (r, key) in turn, CTX "what: step's what": its decision
 * names r and is as the step's spec says. */
void want_steps(struct xrl_limiter *l, const struct xrl_http_rule *r, const char *key,
		const char *what, const struct want_step *steps, size_t n);

/* Decide (rule, key) until refused; the number allowed (at most cap + 1). */
__u64 drain(struct xrl_limiter *l, const struct xrl_http_rule *r, const char *key, __u64 cap);

struct xrl_limiter_stats stats(struct xrl_limiter *l);

/* Time one decision (ns). */
__u64 timed(struct xrl_limiter *l, const struct xrl_http_rule *r, const char *key,
	    struct xrl_decision *d);

void fl_queued(void *arg);

void fl_decided(void *arg);

/* Queue one decision (rule r, key) on p; xrl_limiter_decide_async's result. */
int dec_async(struct xrl_limiter *l, struct xrl_redis_pipe *p, const struct xrl_http_rule *r,
	      const char *key, struct flight *f, struct xrl_decision *d);

/* Run the pipe as an event loop would until `n` decisions are decided;
 * the time it took (ns). */
__u64 drive(struct xrl_redis_pipe *p, struct flight *f, int n);

/* One request of `cost` tokens for rule r and key. */
int decc(struct xrl_limiter *l, const struct xrl_http_rule *r, const char *key, __u32 cost,
	 struct xrl_decision *d);

extern char long_a[4097], long_b[4097], hash_like[70];

void long_keys_init(void);

__u64 rnd(unsigned *s);

/* The next step of the clock: none, a little, about a token, about the
 * burst, a jump of days; now and then backwards (if allowed). */
void model_tick(struct model *m, __u64 *real_last);

/* One random request, checked against the reference. */
void model_step(struct model *m, int i);

/*
 * Run n steps. Keys: short ones, two 4 KiB keys that differ in their last
 * byte, the first 256 bytes of them, and one shaped like a digest's name.
 * The seed is XRL_MODEL_SEED if set, else fixed; printed with any failure.
 */
void model_run(struct model *m, int n);

/* 7/h (emit 514285714286 ns, not a round number), burst 5. */
struct xrl_http_cfg *model_cfg(const char *url, enum xrl_backend_err be);

extern const struct CMUnitTest xrl_lim_memory_tests[];
extern const size_t xrl_lim_memory_n;
extern const struct CMUnitTest xrl_lim_lease_tests[];
extern const size_t xrl_lim_lease_n;
extern const struct CMUnitTest xrl_lim_absent_tests[];
extern const size_t xrl_lim_absent_n;
extern const struct CMUnitTest xrl_lim_live_tests[];
extern const size_t xrl_lim_live_n;
int xrl_lim_live_setup(void **state);
int xrl_lim_live_teardown(void **state);

#endif /* XRL_LIMITER_TEST_H */
