// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_limiter_redis.c - the identity tier against Redis (user/http/redis/
 * pipe.c, script.c): first a Redis that is not there
 * (127.0.0.1 port 1, and a local socket that accepts and never answers)
 * for the breaker and the on_backend_error fallbacks; then a real
 * redis-server, started once by the group's setup and wiped between tests
 * (xrl_lim_live_reset), for batches, precision, NOSCRIPT, outages, shared
 * counts, key names and TTLs. Without redis-server the live group is
 * skipped, and under CI=true that is a failure.
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
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
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

/* On rs, rules a (1/h, burst 2) and b (1/h, burst 5), a limiter. */
static struct xrl_http_cfg *two_rules_live(struct rsrv *rs, struct xrl_limiter **l)
{
	struct xrl_http_cfg *c;

	CTX("%s, rules a (burst 2) and b (burst 5)", rs->url);
	c = cfg_live(rs, "1/h", 2, 1 * SEC);
	rule_add(c, "b", "1/h", 5);
	cfg_done(c);
	*l = lim_new(c);
	return c;
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

/*
 * Finding 6: the over-limit cache answers per cost. Burst 10, 10/min: cost
 * 5 admitted, cost 10 refused (5 left); cost 1 must then be admitted, as
 * the memory backend does, not refused from the cache for the refusal of
 * 10; a cost 10 again is refused from the cache with Redis's own wait.
 */
static void overlimit_per_cost(struct xrl_limiter *l, const struct xrl_http_rule *r,
			       const char *what)
{
	static const struct want_step steps[] = {
		{ "cost 5 of burst 10", 5, "allowed" },
		{ "cost 10 with 5 left", 10, "!allowed retry=30" }, /* 5 tokens of 6 s */
		{ "cost 1 after the refusal of 10", 1, "allowed remaining=4" },
		/* 36 s, less the time the test took */
		{ "cost 10 again: 6 tokens short", 10, "!allowed retry>=35 retry<=36 remaining=4" },
		{ "cost 4 takes the last 4", 4, "allowed remaining=0" },
		{ "cost 1 now refused, 6 s", 1, "!allowed retry<=6" },
	};

	want_steps(l, r, "k", what, steps, sizeof(steps) / sizeof(steps[0]));
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
static void long_keys_apart(struct xrl_limiter *l, const struct xrl_http_rule *r, const char *what)
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

static void test_redis_down_open(void **state)
{
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_decision d;
	__u64 ns;

	CTX("redis://127.0.0.1:1, on_backend_error open, 1/h burst 2");
	c = cfg_redis("redis://127.0.0.1:1", XRL_BE_OPEN, 2);
	l = lim_new(c);
	EQ(xrl_limiter_breaker_state(l), 0);
	ns = timed(l, &c->rules[0], "k", &d);
	CTX("the first decision (connection refused)");
	WANT(d, "allowed error !shed");
	LE(ns, c->redis_timeout_ns + 100 * MS);
	EQ(xrl_limiter_breaker_state(l), 1);
	for (int i = 1; i < 10; i++) {
		ns = timed(l, &c->rules[0], "k", &d);
		CTX("decision %d, breaker open: fails open, far beyond the burst", i);
		WANT(d, "allowed error");
		LE(ns, 5 * MS);
	}
	CTX("stats");
	WANT_STATS(l, "decisions=10 allowed=10 backend_errors=10 fallback_open=10 "
		      "breaker_open_skips=9 fallback_closed=0 fallback_local=0 shed=0");
}

static void test_redis_down_closed(void **state)
{
	struct xrl_http_cfg *c = cfg_redis("redis://127.0.0.1:1", XRL_BE_CLOSED, 2);
	struct xrl_limiter *l = lim_new(c);

	for (int i = 0; i < 3; i++) {
		CTX("redis://127.0.0.1:1, on_backend_error closed: decision %d, shed", i);
		/* retry=1: come back when the breaker tries again (cooldown 1 s) */
		WANT_RULE(dec1(l, &c->rules[0], "k"), &c->rules[0],
			  "!allowed shed error limit=2 retry=1");
	}
	CTX("stats");
	WANT_STATS(l, "shed=3 fallback_closed=3 backend_errors=3 allowed=0 fallback_open=0 "
		      "fallback_local=0");
}

static void test_redis_down_local(void **state)
{
	static const struct want_step steps[] = {
		{ "request 1 of the burst", 1, "allowed error remaining=2" },
		{ "request 2 of the burst", 1, "allowed error remaining=1" },
		{ "request 3 of the burst", 1, "allowed error remaining=0" },
		{ "after the burst", 1, "!allowed error !shed remaining=0 retry=3600" },
	};
	struct xrl_http_cfg *c = cfg_redis("redis://127.0.0.1:1", XRL_BE_LOCAL, 3);
	struct xrl_limiter *l = lim_new(c);

	want_steps(l, &c->rules[0], "k", "on_backend_error local, 1/h burst 3: local bucket", steps,
		   sizeof(steps) / sizeof(steps[0]));
	CTX("another key: its own local bucket");
	EQ(drain(l, &c->rules[0], "other", 10), 3);
	CTX("stats");
	WANT_STATS(l, "fallback_local=%d allowed=6 refused=2 keys=2", 4 + 4);
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
}

/*
 * A Redis that accepts the connection and never answers (a listening socket
 * nobody accepts on: the kernel completes the handshake): the first decision
 * waits out redis_timeout, once; with the breaker open the next ones take no
 * time at all.
 */
/*
 * A loopback socket that listens and never accepts (the kernel completes
 * the handshake; nothing ever answers): its fd, and in url the url of fmt
 * (a printf format with one %u: the port).
 */
static int silent_listener(char *url, size_t size, const char *fmt)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	snprintf(url, size, fmt, ntohs(sa.sin_port));
	return fd;
}

static void test_redis_silent_timeout(void **state)
{
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_decision d;
	char url[64];
	__u64 ns;
	int fd = silent_listener(url, sizeof(url), "redis://127.0.0.1:%u");

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
	lim_free(l);
	cfg_free(c);
	close(fd);
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
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_redis_pipe *p;
	struct xrl_decision d;
	struct flight f = {};
	char url[96];
	__u64 t0, ns;
	int fd = silent_listener(url, sizeof(url), "redis://u:secret@127.0.0.1:%u/3");

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
	print_message("  silent redis: connect + handshake + batch sent in %.3f ms\n",
		      (double)ns / MS);
	LE(ns, 20 * MS);
	EQ(f.decided, 0);
	ns = drive(p, &f, 1);
	CTX("the decision falls back at the batch's deadline");
	EQ(d.backend_error, 1);
	EQ(d.allowed, 1);
	GE(ns, 250 * MS);
	LE(ns, 600 * MS);
	xrl_limiter_pipe_free(p);
	lim_free(l);
	cfg_free(c);
	close(fd);
}

/* ---- the live group's redis-server ------------------------------------------ */

/* The group's server: started by xrl_lim_live_setup, wiped after each test. */
static struct rsrv group_rs;

/*
 * One redis-server for the live group. Without redis-server the group's
 * tests are skipped (live() in each), but under CI=true, where every test
 * must run, the setup fails.
 */
int xrl_lim_live_setup(void **state)
{
	const char *ci = getenv("CI");

	*state = NULL;
	if (!have_redis_server()) {
		if (ci && !strcmp(ci, "true")) {
			print_error("redis-server is missing: under CI=true a skip is a failure\n");
			return -1;
		}
		return 0;
	}
	group_rs = (struct rsrv){};
	redis_up(&group_rs);
	*state = &group_rs;
	return 0;
}

int xrl_lim_live_teardown(void **state)
{
	for (int i = 0; i < 4; i++)
		if (live_rs[i])
			redis_down(live_rs[i]);
	redis_down(&group_rs);
	return 0;
}

/*
 * After each live test, even a failed one: servers a test started of its
 * own stop, the group's runs again (a test may have stopped or paused it)
 * and is wiped: no key, no script, no memory limit, no command counts.
 */
static int xrl_lim_live_reset(void **state)
{
	xrl_lim_fx_teardown(state);
	if (!*state)
		return 0;
	for (int i = 0; i < 4; i++)
		if (live_rs[i] && live_rs[i] != &group_rs)
			redis_down(live_rs[i]);
	if (group_rs.pid > 0)
		kill(group_rs.pid, SIGCONT);
	else
		redis_up(&group_rs);
	redis_cmd(&group_rs, "FLUSHALL");
	redis_cmd(&group_rs, "SCRIPT FLUSH");
	redis_cmd(&group_rs, "CONFIG SET maxmemory 0");
	redis_cmd(&group_rs, "CONFIG SET maxmemory-policy noeviction");
	redis_cmd(&group_rs, "CONFIG RESETSTAT"); /* tests count commands in INFO */
	return 0;
}

/* The group's server, or the test is skipped (no redis-server here). */
static struct rsrv *live(void **state)
{
	if (!*state)
		skip();
	return *state;
}

/* A test's limiter on the group's Redis, and a pipe on it. */
struct live_pipe {
	struct rsrv *rs;
	struct xrl_http_cfg *c; /* one rule, "api" (cfg_live) */
	struct xrl_limiter *l;
	struct xrl_redis_pipe *p;
	struct flight f;
};

/* The group's Redis (or the test is skipped), cfg_live(rate, burst,
 * timeout) on it, a limiter and a pipe (the test frees the pipe). */
static void live_pipe(void **state, struct live_pipe *t, const char *rate, __u32 burst,
		      __u64 timeout_ns)
{
	t->rs = live(state);
	t->c = cfg_live(t->rs, rate, burst, timeout_ns);
	t->l = lim_new(t->c);
	t->p = xrl_limiter_pipe_new(t->l);
	assert_non_null(t->p);
	t->f = (struct flight){};
}

/* Queue a decision of t's rule for key on t's pipe (dec_async). */
static int lp_queue(struct live_pipe *t, const char *key, struct xrl_decision *d)
{
	return dec_async(t->l, t->p, &t->c->rules[0], key, &t->f, d);
}

/* Run t's pipe until n decisions are decided (drive); the time it took. */
static __u64 lp_drive(struct live_pipe *t, int n)
{
	return drive(t->p, &t->f, n);
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
	struct live_pipe t;
	struct xrl_limiter_stats s;
	static struct xrl_decision d[N + 2];
	int allowed = 0;

	live_pipe(state, &t, "1/h", 100, 2 * SEC);
	CTX("%s, 1/h burst 100: 1 + %d decisions of one key", t.rs->url, N);
	/* connect and load the script first */
	EQ(lp_queue(&t, "warm", &d[N + 1]), 1);
	lp_drive(&t, 1);
	EQ(d[N + 1].allowed, true);
	EQ(lp_queue(&t, "k", &d[0]), 1);
	xrl_limiter_pipe_run(t.p, 0); /* in flight */
	EQ(xrl_limiter_pipe_busy(t.p), true);
	for (int i = 1; i <= N; i++)
		EQ(lp_queue(&t, "k", &d[i]), 1);
	EQ(t.f.queued, 1 + 1 + N);
	EQ(t.f.decided, 1);
	lp_drive(&t, 1 + 1 + N);
	for (int i = 0; i <= N; i++) {
		allowed += d[i].allowed;
		EQ(d[i].backend_error, false);
	}
	CTX("allowed of 1 + %d", N);
	EQ(allowed, 100);
	s = stats(t.l);
	CTX("stats after 1 + 1 + %d decisions", N);
	EQ(s.redis_calls, 1 + 1 + (N + XRL_REDIS_CALL_MAX - 1) / XRL_REDIS_CALL_MAX);
	EQ(s.redis_round_trips, 3);
	EQ(s.backend_errors, 0);
	CTX("the over-limit cache: refused at once, no round trip");
	EQ(lp_queue(&t, "k", &d[0]), 0);
	EQ(d[0].allowed, false);
	EQ(stats(t.l).redis_round_trips, 3);
	xrl_limiter_pipe_free(t.p);
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
	struct live_pipe t;
	static struct xrl_decision d[N + 1];

	live_pipe(state, &t, "10000000/s", 50, 2 * SEC);
	CTX("%s, 10000000/s burst 50", t.rs->url);
	EQ(lp_queue(&t, "other", &d[0]), 1);
	xrl_limiter_pipe_run(t.p, 0);
	for (int i = 1; i <= N; i++)
		EQ(lp_queue(&t, "k", &d[i]), 1);
	lp_drive(&t, N + 1);
	EQ(stats(t.l).redis_round_trips, 2);
	for (int i = 1; i <= 51; i++) {
		CTX("decision %d of one batch at one now", i);
		EQ(d[i].allowed, i <= 50);
	}
	xrl_limiter_pipe_free(t.p);
}

/* SCRIPT FLUSH: the next decision reloads the script, no backend error. */
static void test_redis_noscript(void **state)
{
	struct rsrv *rs = live(state);
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_limiter_stats s0, s1;
	struct xrl_decision d;

	CTX("%s, 1/h burst 3", rs->url);
	c = cfg_live(rs, "1/h", 3, 1 * SEC);
	l = lim_new(c);
	EQ(dec1(l, &c->rules[0], "k").allowed, true);
	redis_cmd(rs, "SCRIPT FLUSH");
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
}

/* Two rules in Redis: a refusal by one charges neither (one script call). */
static void test_redis_two_rules_atomic(void **state)
{
	struct rsrv *rs = live(state);
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	const struct xrl_http_rule *a, *b;
	int n = 0;

	c = two_rules_live(rs, &l);
	a = &c->rules[0];
	b = &c->rules[1];
	for (int i = 0; i < 6; i++)
		n += dec2(l, a, b, "k").allowed;
	EQ(n, 2);
	CTX("b alone afterwards: charged 2 of 5");
	EQ(drain(l, b, "k", 10), 3);
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
	struct rsrv *rs = live(state);
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_redis_pipe *p;
	struct flight f = {};
	struct xrl_decision d1[N], d2[N], w;
	const struct xrl_http_rule *ab[2];
	const char *k1[2] = { "k1", "k1" };
	struct xrl_limiter_wait wt = { .queued = fl_queued, .decided = fl_decided, .arg = &f };
	int a1 = 0, a2 = 0;

	c = two_rules_live(rs, &l);
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
	struct rsrv *rs = live(state);
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_redis_pipe *p;
	struct flight f = {};
	struct xrl_decision w, d[3];
	static const char *const keys[3] = { "good1", "bad", "good2" };

	CTX("%s, 1/h burst 3; xrl:{api:bad} is a hash", rs->url);
	redis_cmd(rs, "HSET xrl:{api:bad} someone else");
	c = cfg_live(rs, "1/h", 3, 1 * SEC);
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
	lim_free(l);
	cfg_free(c);
	redis_type_is(rs, "xrl:{api:bad}", "hash");
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
	struct rsrv *rs = live(state);
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

	CTX("%s, %d rules of 1/h burst 2, xrl:{r3:u5} a hash", rs->url, R);
	redis_cmd(rs, "HSET xrl:{r3:u5} someone else");
	c = cfg_live(rs, "1/h", 2, 1 * SEC);
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
	redis_cmd_reply(rs, "INFO commandstats", info, sizeof(info));
	mget = strstr(info, "cmdstat_mget:");
	CTX("the call's keys read by one MGET: %.40s", mget ? mget : "(no MGET)");
	assert_non_null(mget);
	EQ(strncmp(mget, "cmdstat_mget:calls=1,", 21), 0);
	xrl_limiter_pipe_free(p);
	lim_free(l);
	/* a new limiter: no over-limit cache, so what Redis holds answers */
	l = lim_new(c);
	CTX("u5 by rule r1 afterwards: never charged, 2 of 2 left");
	EQ(drain(l, rules[1], "u5", 10), 2);
	CTX("u6 by rule r7 afterwards: 0 left");
	EQ(drain(l, rules[R - 1], "u6", 10), 0);
	lim_free(l);
	cfg_free(c);
	redis_type_is(rs, "xrl:{r3:u5}", "hash");
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
	/* a Redis of its own: requirepass and ACL users are this test's */
	static struct rsrv own; /* static: the teardown reaches it after a failure */
	struct rsrv *rs = &own;
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_decision d;

	live(state);
	own = (struct rsrv){};
	redis_up(rs);
	redis_cmd(rs, "ACL SETUSER xrl on >pw2 ~xrl:* -@all +select +script|load +evalsha "
		      "+get +mget +exists +type +set +pexpire");
	redis_cmd(rs, "ACL SETUSER nomget on >pw3 ~xrl:* -@all +select +script|load +evalsha "
		      "+get +exists +type +set +pexpire");
	redis_cmd(rs, "CONFIG SET requirepass s3cret");

	l = auth_lim(rs, ":s3cret", &c);
	EQ(drain(l, &c->rules[0], "k", 10), 3);
	d = dec2(l, &c->rules[0], &c->rules[1], "k2");
	EQ(d.backend_error, false);
	EQ(d.allowed, true);
	EQ(stats(l).redis_calls > 0, true);
	{
		struct xrl_http_cfg *other;
		struct xrl_limiter *l2 = auth_lim(rs, "nomget:pw3", &other);

		CTX("reloaded as user nomget: its open connection is not reused");
		xrl_limiter_set_cfg(l, other);
		EQ(dec2(l, &c->rules[0], &c->rules[1], "k6").backend_error, true);
		lim_free(l2);
		cfg_free(other);
	}
	lim_free(l);
	cfg_free(c);

	l = auth_lim(rs, ":wrong", &c);
	d = dec1(l, &c->rules[0], "k");
	EQ(d.backend_error, true);
	EQ(d.allowed, true); /* open */
	{
		struct xrl_http_cfg *right;
		struct xrl_limiter *l2 = auth_lim(rs, ":s3cret", &right);

		CTX("reloaded with the right password, after the breaker's cooldown");
		xrl_limiter_set_cfg(l, right);
		sleep_ns(300 * MS);
		d = dec1(l, &c->rules[0], "k9");
		EQ(d.backend_error, false);
		EQ(d.allowed, true);
		lim_free(l2);
		cfg_free(right);
	}
	lim_free(l);
	cfg_free(c);

	l = auth_lim(rs, "xrl:pw2", &c);
	CTX("user xrl: k has 0 of 3 left, k3 all 3");
	EQ(drain(l, &c->rules[0], "k", 10), 0);
	EQ(dec1(l, &c->rules[0], "k").backend_error, false);
	d = dec2(l, &c->rules[0], &c->rules[1], "k3");
	EQ(d.backend_error, false);
	EQ(d.allowed, true);
	lim_free(l);
	cfg_free(c);

	l = auth_lim(rs, "nomget:pw3", &c);
	d = dec1(l, &c->rules[0], "k4");
	EQ(d.backend_error, false);
	EQ(d.allowed, true);
	d = dec2(l, &c->rules[0], &c->rules[1], "k5");
	EQ(d.backend_error, true);
	EQ(d.allowed, true); /* open */
	lim_free(l);
	cfg_free(c);
	redis_down(rs);
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
	struct live_pipe t;
	static struct xrl_decision d[N + 1];
	__u64 ns;

	live_pipe(state, &t, "1/h", 1000, 100 * MS);
	CTX("%s, timeout 100 ms, cooldown 200 ms", t.rs->url);
	EQ(lp_queue(&t, "k", &d[0]), 1);
	lp_drive(&t, 1);
	EQ(d[0].remaining, 1000 - 1);
	kill(t.rs->pid, SIGSTOP);
	t.f = (struct flight){};
	EQ(lp_queue(&t, "k", &d[0]), 1);
	xrl_limiter_pipe_run(t.p, 0);
	for (int i = 1; i <= N; i++)
		EQ(lp_queue(&t, "k", &d[i]), 1);
	ns = lp_drive(&t, N + 1);
	print_message("  frozen redis: 1 + %d queued decisions answered in %.1f ms\n", N,
		      (double)ns / MS);
	CTX("1 + %d decisions with Redis frozen", N);
	GE(ns, 90 * MS);
	LE(ns, 100 * MS + 150 * MS);
	for (int i = 0; i <= N; i++) {
		EQ(d[i].backend_error, true);
		EQ(d[i].allowed, true); /* on_backend_error open */
	}
	EQ(xrl_limiter_breaker_state(t.l), 1);
	EQ(stats(t.l).breaker_open_skips, N); /* the batch behind the failed one */
	kill(t.rs->pid, SIGCONT);
	sleep_ns(250 * MS);
	CTX("thawed, after the cooldown");
	t.f = (struct flight){};
	EQ(lp_queue(&t, "k", &d[0]), 1);
	lp_drive(&t, 1);
	EQ(d[0].backend_error, false);
	/* the one that timed out was written: Redis ran it when it woke (a
	 * timeout never tells whether a command ran); the 50 were never sent */
	EQ(d[0].remaining, 1000 - 3);
	EQ(xrl_limiter_breaker_state(t.l), 0);

	CTX("redis restarted while idle");
	redis_down(t.rs);
	redis_up(t.rs);
	t.f = (struct flight){};
	EQ(lp_queue(&t, "k", &d[0]), 1);
	lp_drive(&t, 1);
	EQ(d[0].backend_error, false);
	EQ(d[0].remaining, 1000 - 1);
	EQ(stats(t.l).backend_errors, N + 1);
	xrl_limiter_pipe_free(t.p);
}

static void test_redis_two_instances_exact(void **state)
{
	struct rsrv *rs = live(state);
	struct xrl_http_cfg *c;
	struct xrl_limiter *l[2];
	struct share_arg a[4];
	pthread_t t[4];
	int allowed = 0, errors = 0;

	CTX("%s, 1/h burst 500, 2 limiters x 2 threads x 400 decisions", rs->url);
	c = cfg_live(rs, "1/h", 500, 1 * SEC);
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
}

/*
 * fn on a limiter in memory with one rule "api" of rate and burst, then on
 * one on the group's Redis (timeout 2 s), which is returned (for checks
 * of Redis's own).
 */
static struct xrl_limiter *memory_then_redis(struct rsrv *rs, const char *rate, __u32 burst,
					     void (*fn)(struct xrl_limiter *,
							const struct xrl_http_rule *, const char *))
{
	struct xrl_http_cfg *c = cfg_new();
	struct xrl_limiter *l;

	rule_add(c, "api", rate, burst);
	l = lim_done(c);
	fn(l, &c->rules[0], "memory");
	lim_free(l);
	cfg_free(c);
	c = cfg_live(rs, rate, burst, 2 * SEC);
	l = lim_new(c);
	fn(l, &c->rules[0], "redis");
	return l;
}

static void test_overlimit_cache_per_cost(void **state)
{
	struct xrl_limiter *l = memory_then_redis(live(state), "10/min", 10, overlimit_per_cost);

	CTX("redis: the refusals of 10 and 1 came from the cache");
	WANT_STATS(l, "overlimit_cache_hits>=1");
}

static void test_long_keys_distinct(void **state)
{
	struct rsrv *rs = live(state);

	long_keys_init();
	memory_then_redis(rs, "1/h", 2, long_keys_apart);
	CTX("redis: 4 keys, none longer than xrl:{api:} and 128 bytes");
	LE(redis_keys_maxlen(rs), 9 + 128);
}

/*
 * Finding 7: a key lives exactly as long as its bucket holds anything (its
 * TAT, rounded up to the ms, + 1 ms), no longer: 1 token of 7/h is
 * 514,285.714286 s, so PTTL <= 514,287 ms; 2 tokens less 100 s are
 * 928,571.43 s, PTTL <= 928,573 ms; a refusal does not extend it.
 */
static void test_redis_key_ttl_minimal(void **state)
{
	struct rsrv *rs = live(state);
	static _Atomic __u64 clk = 1000 * SEC;
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;
	struct xrl_decision d;

	c = cfg_live(rs, "7/h", 2, 2 * SEC);
	l = lim_new(c);
	xrl_limiter_set_clock(l, &clk);
	CTX("7/h burst 2: one token");
	EQ(decc(l, &c->rules[0], "t", 1, &d), 0);
	EQ(d.allowed, 1);
	LE(redis_pttl(rs, "xrl:{api:t}"), 514287);
	GE(redis_pttl(rs, "xrl:{api:t}"), 514287 - 1000);
	CTX("7/h burst 2: one more 100 s later, then cost 2 refused: TAT 2 tokens less 100 s ahead");
	clk += 100 * SEC;
	EQ(decc(l, &c->rules[0], "t", 1, &d), 0);
	EQ(d.allowed, 1);
	EQ(decc(l, &c->rules[0], "t", 2, &d), 0);
	EQ(d.allowed, 0);
	LE(redis_pttl(rs, "xrl:{api:t}"), 928573);
	GE(redis_pttl(rs, "xrl:{api:t}"), 928573 - 1000);
}

static void test_redis_maxmemory_bounds(void **state)
{
	struct rsrv *rs = live(state);
	struct xrl_http_cfg *c;
	struct xrl_limiter *l;

	redis_cmd(rs, "CONFIG SET maxmemory 3mb");
	redis_cmd(rs, "CONFIG SET maxmemory-policy volatile-ttl");
	c = cfg_live(rs, "1/day", 5, 2 * SEC);
	c->breaker_cooldown_ns = 1 * MS;
	l = lim_new(c);
	CTX("volatile-ttl, 3 MB: 20,000 unique keys");
	EQ(flood_unique(l, &c->rules[0], 20000, "a"), 0);
	print_message("  maxmemory 3 MB, volatile-ttl: %lld keys kept of 20000, used_memory %lld\n",
		      redis_ask(rs, "DBSIZE", NULL), redis_ask(rs, "INFO", "memory"));
	LE(redis_ask(rs, "DBSIZE", NULL), 19000);
	LE(redis_ask(rs, "INFO", "memory"), 3 * 1024 * 1024 + 64 * 1024);
	CTX("noeviction, 3 MB: the next 20,000 unique keys");
	redis_cmd(rs, "CONFIG SET maxmemory-policy noeviction");
	GE(flood_unique(l, &c->rules[0], 20000, "b"), 1);
}

/* Redis: the script, the over-limit cache, the key names. Its clock only
 * moves forward, never slower than real time (keys expire in Redis's). */
static void test_model_redis(void **state)
{
	struct rsrv *rs = live(state);
	static _Atomic __u64 clk = 400 * DAY;
	struct xrl_http_cfg *c;
	struct model m = { .what = "redis", .clk = &clk, .real_pace = true };

	c = model_cfg(rs->url, XRL_BE_CLOSED);
	m.l = lim_new(c);
	m.r = &c->rules[0];
	model_run(&m, 3000);
	CTX("redis: the over-limit cache answered some");
	GE(stats(m.l).overlimit_cache_hits, 1);
}

const struct CMUnitTest xrl_lim_absent_tests[] = {
	cmocka_unit_test_teardown(test_redis_down_open, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_redis_down_closed, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_redis_down_local, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_redis_down_mixed, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_redis_breaker_probe, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_redis_silent_timeout, xrl_lim_fx_teardown),
	cmocka_unit_test_teardown(test_redis_reconnect_never_blocks, xrl_lim_fx_teardown),
};
const size_t xrl_lim_absent_n = sizeof(xrl_lim_absent_tests) / sizeof(xrl_lim_absent_tests[0]);

/*
 * Concurrency slots in Redis, shared by two limiters (two instances): rule
 * api {1/h, burst 10, concurrency 2}. Two leases, one on each; a third is
 * refused (429: the key is a caller's own) and costs no token; a release
 * on the other instance with cost 5 gives the slot back and takes 5 tokens,
 * which the next decision's remaining shows. A decision its bucket refuses
 * leaves no slot behind (the script adds the lease only when all admit).
 */
static void test_redis_leases_shared(void **state)
{
	struct rsrv *rs = live(state);
	struct xrl_http_cfg *c = cfg_live(rs, "1/h", 10, 1 * SEC);
	const struct xrl_http_rule *r = &c->rules[0];
	struct xrl_limiter *l1, *l2;
	struct xrl_decision d1, d2, d3, d4;
	struct xrl_release res;
	const char *key = "u", *id;
	__u32 ten = 10, one = 1;

	c->rules[0].concurrency = 2;
	c->rules[0].lease_ttl_ns = 60 * SEC;
	l1 = lim_new(c);
	l2 = lim_new(c);
	CTX("a lease on each instance");
	d1 = dec1(l1, r, "u");
	d2 = dec1(l2, r, "u");
	EQ(d1.allowed && d2.allowed, true);
	EQ(d1.n_leases + d2.n_leases, 2);
	EQ(redis_ask(rs, "ZCARD", "xrl:{api:u}:c"), 2);
	CTX("the third, on the first: both slots held");
	d3 = dec1(l1, r, "u");
	EQ(d3.allowed, false);
	EQ(d3.conc, true);
	EQ(d3.shed, false);
	EQ(d3.limit, 2);
	CTX("the first's lease released on the second, cost 5");
	id = d1.lease[0];
	assert_int_equal(xrl_limiter_release(l2, &id, 1, 5, &res), 0);
	EQ(res.released[0], true);
	EQ(res.charged[0], true);
	EQ(redis_ask(rs, "ZCARD", "xrl:{api:u}:c"), 1);
	CTX("released again: not held");
	assert_int_equal(xrl_limiter_release(l1, &id, 1, 0, &res), 0);
	EQ(res.released[0], false);
	CTX("the next decision: 10 - 2 - 5 - 1 left (the refused one took none)");
	d4 = dec1(l1, r, "u");
	EQ(d4.allowed, true);
	EQ(d4.remaining, 2);
	CTX("a decision its bucket refuses keeps no slot");
	key = "v";
	id = NULL;
	assert_int_equal(xrl_limiter_decide(l1, &r, &key, &ten, 1, &d1), 0);
	EQ(d1.allowed, true);
	id = d1.lease[0];
	assert_int_equal(xrl_limiter_release(l1, &id, 1, 0, &res), 0);
	assert_int_equal(xrl_limiter_decide(l2, &r, &key, &one, 1, &d2), 0);
	EQ(d2.allowed, false);
	EQ(d2.conc, false);
	EQ(redis_ask(rs, "ZCARD", "xrl:{api:v}:c"), 0);
	lim_free(l1);
	lim_free(l2);
	cfg_free(c);
}

/*
 * A slot set that is not a sorted set (another program's string under the
 * name) fails its decision alone, which follows on_backend_error (open:
 * admitted, no lease) and leaves the key as it was; a rule of concurrency
 * only, so the decision has no bucket at all.
 */
static void test_redis_lease_wrongtype(void **state)
{
	struct rsrv *rs = live(state);
	struct xrl_http_cfg *c = cfg_live(rs, "1/h", 10, 1 * SEC);
	const struct xrl_http_rule *r = &c->rules[0];
	struct xrl_limiter *l;
	struct xrl_decision d;

	c->rules[0].has_rate = false;
	c->rules[0].concurrency = 1;
	c->rules[0].lease_ttl_ns = 60 * SEC;
	l = lim_new(c);
	redis_cmd(rs, "SET xrl:{api:w}:c foreign");
	CTX("a slot set that is a string");
	d = dec1(l, r, "w");
	EQ(d.allowed, true);
	EQ(d.backend_error, true);
	EQ(d.n_leases, 0);
	redis_type_is(rs, "xrl:{api:w}:c", "string");
	CTX("another key of the rule is not touched by it");
	d = dec1(l, r, "x");
	EQ(d.allowed, true);
	EQ(d.n_leases, 1);
	lim_free(l);
	cfg_free(c);
}

const struct CMUnitTest xrl_lim_live_tests[] = {
	cmocka_unit_test_teardown(test_redis_batches, xrl_lim_live_reset),
	cmocka_unit_test_teardown(test_redis_fast_rule_precision, xrl_lim_live_reset),
	cmocka_unit_test_teardown(test_redis_noscript, xrl_lim_live_reset),
	cmocka_unit_test_teardown(test_redis_two_rules_atomic, xrl_lim_live_reset),
	cmocka_unit_test_teardown(test_redis_call_mixed, xrl_lim_live_reset),
	cmocka_unit_test_teardown(test_redis_wrongtype_isolated, xrl_lim_live_reset),
	cmocka_unit_test_teardown(test_redis_call_full, xrl_lim_live_reset),
	cmocka_unit_test_teardown(test_redis_auth, xrl_lim_live_reset),
	cmocka_unit_test_teardown(test_redis_outage_and_restart, xrl_lim_live_reset),
	cmocka_unit_test_teardown(test_redis_two_instances_exact, xrl_lim_live_reset),
	cmocka_unit_test_teardown(test_overlimit_cache_per_cost, xrl_lim_live_reset),
	cmocka_unit_test_teardown(test_long_keys_distinct, xrl_lim_live_reset),
	cmocka_unit_test_teardown(test_redis_key_ttl_minimal, xrl_lim_live_reset),
	cmocka_unit_test_teardown(test_redis_maxmemory_bounds, xrl_lim_live_reset),
	cmocka_unit_test_teardown(test_model_redis, xrl_lim_live_reset),
	cmocka_unit_test_teardown(test_redis_leases_shared, xrl_lim_live_reset),
	cmocka_unit_test_teardown(test_redis_lease_wrongtype, xrl_lim_live_reset),
};
const size_t xrl_lim_live_n = sizeof(xrl_lim_live_tests) / sizeof(xrl_lim_live_tests[0]);
