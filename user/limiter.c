// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * limiter.c - the identity tier's buckets: in process memory (default) or in
 * Redis, with the GCRA arithmetic of include/xrl_gcra.h.
 *
 * Memory: a fixed-size table, sharded 64 ways with a mutex per shard, open
 * addressing over at most 8 slots. Every slot is 16 bytes (a 48-bit hash of
 * rule and key, its last-use second, and the TAT), allocated once: hostile
 * key cardinality cannot grow it. A bucket whose TAT is in the past is a
 * full bucket, i.e. exactly as if absent, so it is the first thing evicted
 * and losing it loses nothing. Only when all 8 slots hold buckets in use
 * does an insert evict one that still holds state: the least recently used,
 * so a flood of fresh keys cannot reset a key that is being used. Counted.
 *
 * Redis: one EVALSHA per decision (NOSCRIPT reloads), the caller's clock
 * passed in, every key written with an expiry equal to the time until its
 * bucket is full, key names with a hash tag. A breaker stops calling a
 * Redis that fails, so no request waits out a timeout during an outage;
 * each rule then decides per on_backend_error. A key refused until t is
 * refused locally until t without a round trip (the over-limit cache).
 */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "http.h"
#include "log.h"

#define SHARDS      64
#define PROBE       8

/*
 * A slot: the key's hash in the top 48 bits of `h` and the second it was
 * last used (mod 2^16) in the low 16, so that eviction can spare the keys in
 * use; and the bucket's TAT (or "until") in `v`.
 */
struct slot {
	__u64 h;      /* tag << 16 | last-use second; 0 = empty */
	__u64 v;      /* TAT or "until", CLOCK_MONOTONIC ns */
};

#define TAG(h)  ((h) >> 16)

struct shard {
	pthread_mutex_t mu;
	struct slot *slots;
	__u32 mask;
	char pad[64 - sizeof(pthread_mutex_t) % 64];
} __attribute__((aligned(64)));

struct store {
	struct shard sh[SHARDS];
	_Atomic __u64 keys, ev_idle, ev_active;
};

enum { BRK_CLOSED = 0, BRK_OPEN = 1, BRK_HALF = 2 };

struct xrl_limiter {
	struct xrl_http_cfg cfg;           /* copy; swapped under cfg_mu */
	pthread_rwlock_t cfg_mu;
	struct store *mem;                 /* memory backend, or local fallback */
	struct store *overlimit;           /* redis: key -> refused until */
	struct store *pen_block;           /* key -> blocked until */
	struct store *pen_state;           /* key -> packed strikes */
	_Atomic int brk_state;
	_Atomic __u64 brk_until;           /* open until (monotonic ns) */
	_Atomic __u32 brk_fails;
	_Atomic __u64 brk_gen;             /* bumped when Redis fails: connections
					    * opened before are not used again */
	_Atomic int brk_probe;             /* a half-open probe is in flight */
	struct xrl_limiter_stats st;       /* updated with atomic adds */
};

static __thread redisContext *tl_redis;
static __thread const struct xrl_limiter *tl_owner;
static __thread char tl_sha[41];
static __thread __u64 tl_gen;

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * XRL_NSEC_PER_SEC + (__u64)ts.tv_nsec;
}

static __u64 real_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * 1000000ULL + (__u64)ts.tv_nsec / 1000;
}

#define STAT_ADD(l, f, n) __atomic_fetch_add(&(l)->st.f, (n), __ATOMIC_RELAXED)

/* splitmix64 finaliser over FNV-1a: a well-mixed 64-bit hash, never 0. */
static __u64 key_hash(__u32 rule_id, const char *key)
{
	__u64 h = 1469598103934665603ULL ^ rule_id;

	for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
		h ^= *p;
		h *= 1099511628211ULL;
	}
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return TAG(h) ? h : h | 1ULL << 16; /* a zero tag would read as empty */
}

/* ---- the memory store ------------------------------------------------------- */

static struct store *store_new(__u32 max_keys)
{
	struct store *s = aligned_alloc(64, sizeof(*s));
	__u32 per = 16;

	if (!s)
		return NULL;
	memset(s, 0, sizeof(*s));
	while ((__u64)per * SHARDS < max_keys)
		per <<= 1;
	for (int i = 0; i < SHARDS; i++) {
		pthread_mutex_init(&s->sh[i].mu, NULL);
		s->sh[i].mask = per - 1;
		s->sh[i].slots = calloc(per, sizeof(struct slot));
		if (!s->sh[i].slots)
			return NULL; /* leaks on OOM at start-up; the daemon exits */
	}
	return s;
}

static void store_free(struct store *s)
{
	if (!s)
		return;
	for (int i = 0; i < SHARDS; i++)
		free(s->sh[i].slots);
	free(s);
}

static struct shard *shard_of(struct store *s, __u64 h)
{
	return &s->sh[h & (SHARDS - 1)];
}

/*
 * The slot for h in its (locked) shard, inserting it with v = 0 when absent,
 * and marking it used now. Victims, in order: an empty slot; an idle one
 * (v <= now: a full bucket, an expired refusal, exactly as if absent); among
 * those that owe no more than `cheap` (the newcomer's cost), the one used
 * least recently (a key in use keeps its state against a flood of fresh
 * keys), then the one closest to full; only when all owe more, the one
 * closest to full. So a drained key that waits out its Retry-After is not
 * handed a fresh burst by a flood of one-request keys.
 */
static struct slot *slot_get(struct store *s, struct shard *sh, __u64 h, __u64 now, __u64 cheap)
{
	__u32 i = (__u32)(TAG(h) & 0xffffffff) & sh->mask;
	__u64 sec = (now / XRL_NSEC_PER_SEC) & 0xffff, age, vage = 0;
	struct slot *free_s = NULL, *idle = NULL, *victim = NULL, *dear = NULL;

	for (int n = 0; n < PROBE; n++, i = (i + 1) & sh->mask) {
		struct slot *x = &sh->slots[i];

		if (x->h && TAG(x->h) == TAG(h)) {
			x->h = TAG(h) << 16 | sec;
			return x;
		}
		if (!x->h) {
			if (!free_s)
				free_s = x;
			break; /* nothing beyond an empty slot was ever placed for h */
		}
		age = (sec - (x->h & 0xffff)) & 0xffff;
		if (x->v <= now) {
			if (!idle)
				idle = x;
		} else if (x->v - now > cheap) {
			/* it owes more than the newcomer will: evicting it would
			 * hand its owner more than the newcomer spends */
			if (!dear || x->v < dear->v)
				dear = x;
		} else if (!victim || age > vage || (age == vage && x->v < victim->v)) {
			victim = x;
			vage = age;
		}
	}
	if (free_s) {
		atomic_fetch_add(&s->keys, 1);
	} else if (idle) {
		free_s = idle;
		atomic_fetch_add(&s->ev_idle, 1);
	} else {
		free_s = victim ? victim : dear;
		atomic_fetch_add(&s->ev_active, 1);
	}
	free_s->h = TAG(h) << 16 | sec;
	free_s->v = 0;
	return free_s;
}

/* Peek without inserting: the value, or 0. */
static __u64 store_peek(struct store *s, __u64 h)
{
	struct shard *sh = shard_of(s, h);
	__u32 i = (__u32)(TAG(h) & 0xffffffff) & sh->mask;
	__u64 v = 0;

	pthread_mutex_lock(&sh->mu);
	for (int n = 0; n < PROBE; n++, i = (i + 1) & sh->mask) {
		if (sh->slots[i].h && TAG(sh->slots[i].h) == TAG(h)) {
			v = sh->slots[i].v;
			break;
		}
		if (!sh->slots[i].h)
			break;
	}
	pthread_mutex_unlock(&sh->mu);
	return v;
}

static void store_put(struct store *s, __u64 h, __u64 v, __u64 now)
{
	struct shard *sh = shard_of(s, h);

	pthread_mutex_lock(&sh->mu);
	slot_get(s, sh, h, now, ~0ULL)->v = v;
	pthread_mutex_unlock(&sh->mu);
}

/* ---- decisions ------------------------------------------------------------ */

struct item {
	const struct xrl_http_rule *r;
	__u64 h;          /* key hash */
	__u64 inc;        /* cost * emit, ns */
	__u64 tat;        /* before */
	__u64 new_tat;    /* after an admit */
	bool  ok;
	const char *key;
};

static __u64 ceil_s(__u64 ns)
{
	return (ns + XRL_NSEC_PER_SEC - 1) / XRL_NSEC_PER_SEC;
}

/* Fill the answer from the items: refusing rule with the longest wait, or
 * the admitting rule with the fewest tokens left. */
static void conclude(struct item *it, int n, __u64 now, struct xrl_decision *d)
{
	__u64 best_wait = 0, best_rem = UINT64_MAX;
	int pick = -1;

	d->allowed = true;
	for (int i = 0; i < n; i++) {
		if (!it[i].ok && !it[i].r->shadow) {
			__u64 w = xrl_gcra_wait(it[i].tat, now, it[i].inc, it[i].r->g.tau_ns);

			if (d->allowed || w > best_wait) {
				best_wait = w;
				pick = i;
			}
			d->allowed = false;
		}
	}
	if (d->allowed) {
		for (int i = 0; i < n; i++) {
			__u64 t = it[i].ok ? it[i].new_tat : it[i].tat;
			__u64 rem = xrl_gcra_remaining(t, now, it[i].r->g.emit_ns, it[i].r->g.tau_ns);

			if (it[i].r->shadow)
				continue; /* invisible to clients: no headers from it */
			if (pick < 0 || rem < best_rem) {
				best_rem = rem;
				pick = i;
			}
		}
	}
	if (pick < 0)
		return;
	d->rule = it[pick].r;
	d->limit = it[pick].r->burst;
	if (d->allowed) {
		d->remaining = best_rem;
		d->reset_s = ceil_s(xrl_gcra_reset(it[pick].ok ? it[pick].new_tat : it[pick].tat, now));
	} else {
		d->remaining = xrl_gcra_remaining(it[pick].tat, now, it[pick].r->g.emit_ns,
						  it[pick].r->g.tau_ns);
		d->retry_after_s = ceil_s(best_wait);
		if (d->retry_after_s < 1)
			d->retry_after_s = 1;
		d->reset_s = ceil_s(xrl_gcra_reset(it[pick].tat, now));
	}
}

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/* Check all items against one store, then take from all or from none. */
static void decide_store(struct store *s, struct item *it, int n, __u64 now)
{
	__u32 idx[XRL_HTTP_MAX_MATCH];
	int m = 0;
	bool all_ok = true;

	for (int i = 0; i < n; i++)
		idx[m++] = (__u32)(it[i].h & (SHARDS - 1));
	qsort(idx, (size_t)m, sizeof(idx[0]), cmp_u32);
	/* lock each shard once, in order: no deadlock between requests */
	for (int i = 0; i < m; i++)
		if (!i || idx[i] != idx[i - 1])
			pthread_mutex_lock(&s->sh[idx[i]].mu);
	for (int i = 0; i < n; i++) {
		struct slot *x = slot_get(s, shard_of(s, it[i].h), it[i].h, now, it[i].inc);

		it[i].tat = x->v;
		it[i].ok = xrl_gcra_decide(x->v, now, it[i].inc, it[i].r->g.tau_ns, &it[i].new_tat);
		if (!it[i].ok && !it[i].r->shadow)
			all_ok = false;
	}
	if (all_ok)
		for (int i = 0; i < n; i++)
			if (it[i].ok)
				slot_get(s, shard_of(s, it[i].h), it[i].h, now, it[i].inc)->v = it[i].new_tat;
	for (int i = m - 1; i >= 0; i--)
		if (!i || idx[i] != idx[i - 1])
			pthread_mutex_unlock(&s->sh[idx[i]].mu);
}

/* ---- Redis ------------------------------------------------------------------ */

/*
 * Several buckets at once, all admit or none is charged. Times in
 * microseconds of the caller's clock (CLOCK_REALTIME, shared by every
 * instance), so the script is a pure function of its arguments.
 * ARGV[1] = now; per key i: ARGV[3i-1] = tau (negative: a shadow rule, whose
 * refusal does not refuse the request), ARGV[3i] = inc (cost x emit),
 * ARGV[3i+1] = unused (reserved).
 * Returns { refused (0 or 1), then per key "A" or "R" and the TAT }.
 */
static const char lua_gcra[] =
	"local now = tonumber(ARGV[1])\n"
	"local n = #KEYS\n"
	"local tat, new, ok = {}, {}, {}\n"
	"local refused = 0\n"
	"for i = 1, n do\n"
	"  local tau = tonumber(ARGV[3*i-1])\n"
	"  local inc = tonumber(ARGV[3*i])\n"
	"  local shadow = tau < 0\n"
	"  if shadow then tau = -tau end\n"
	"  local t = tonumber(redis.call('GET', KEYS[i]) or '0') or 0\n"
	"  tat[i] = t\n"
	"  local base = t\n"
	"  if base < now then base = now end\n"
	"  new[i] = base + inc\n"
	"  ok[i] = (new[i] - now) <= tau\n"
	"  if not ok[i] and not shadow then refused = 1 end\n"
	"end\n"
	"local out = { refused }\n"
	"for i = 1, n do\n"
	"  if refused == 0 and ok[i] then\n"
	"    local ttl = math.ceil((new[i] - now) / 1000) + 1\n"
	"    redis.call('SET', KEYS[i], string.format('%.0f', new[i]), 'PX', ttl)\n"
	"    out[#out + 1] = 'A'\n"
	"    out[#out + 1] = string.format('%.0f', new[i])\n"
	"  else\n"
	"    if tat[i] > now then redis.call('PEXPIRE', KEYS[i], math.ceil((tat[i] - now) / 1000) + 1) end\n"
	"    out[#out + 1] = ok[i] and 'a' or 'R'\n"
	"    out[#out + 1] = string.format('%.0f', tat[i])\n"
	"  end\n"
	"end\n"
	"return out\n";

static void redis_drop(void)
{
	if (tl_redis)
		redisFree(tl_redis);
	tl_redis = NULL;
}

static redisContext *redis_get(struct xrl_limiter *l)
{
	struct timeval tv = { .tv_sec = (time_t)(l->cfg.redis_timeout_ns / XRL_NSEC_PER_SEC),
			      .tv_usec = (suseconds_t)(l->cfg.redis_timeout_ns % XRL_NSEC_PER_SEC / 1000) };
	redisReply *r;

	/* a connection from before the last failure may be to a Redis that
	 * has died since (every thread has its own): open a new one */
	if (tl_redis && tl_owner == l && tl_gen == atomic_load(&l->brk_gen))
		return tl_redis;
	redis_drop();
	tl_gen = atomic_load(&l->brk_gen);
	tl_redis = redisConnectWithTimeout(l->cfg.redis_host, l->cfg.redis_port, tv);
	tl_owner = l;
	if (!tl_redis || tl_redis->err) {
		redis_drop();
		return NULL;
	}
	redisSetTimeout(tl_redis, tv);
	if (l->cfg.redis_db) {
		r = redisCommand(tl_redis, "SELECT %d", l->cfg.redis_db);
		if (!r || r->type == REDIS_REPLY_ERROR) {
			if (r)
				freeReplyObject(r);
			redis_drop();
			return NULL;
		}
		freeReplyObject(r);
	}
	r = redisCommand(tl_redis, "SCRIPT LOAD %s", lua_gcra);
	if (!r || r->type != REDIS_REPLY_STRING || r->len != 40) {
		if (r)
			freeReplyObject(r);
		redis_drop();
		return NULL;
	}
	memcpy(tl_sha, r->str, 40);
	tl_sha[40] = '\0';
	freeReplyObject(r);
	return tl_redis;
}

/* Breaker: may we call Redis now? One probe at a time once the cooldown is over. */
static bool brk_allow(struct xrl_limiter *l, __u64 now, bool *probe)
{
	int st = atomic_load(&l->brk_state);

	*probe = false;
	if (st == BRK_CLOSED)
		return true;
	if (now < atomic_load(&l->brk_until))
		return false;
	int expect = 0;

	if (!atomic_compare_exchange_strong(&l->brk_probe, &expect, 1))
		return false;
	atomic_store(&l->brk_state, BRK_HALF);
	*probe = true;
	return true;
}

static void brk_result(struct xrl_limiter *l, bool ok, bool probe, __u64 now)
{
	if (ok) {
		atomic_store(&l->brk_fails, 0);
		if (atomic_exchange(&l->brk_state, BRK_CLOSED) != BRK_CLOSED)
			log_info("redis %s:%d answers again: shared limits resumed",
				 l->cfg.redis_host, l->cfg.redis_port);
	} else {
		/* one timeout is enough: the next request must not wait it out too */
		if (atomic_exchange(&l->brk_state, BRK_OPEN) == BRK_CLOSED)
			log_warnx("redis %s:%d failed: breaker open, rules fall back to on_backend_error",
				  l->cfg.redis_host, l->cfg.redis_port);
		atomic_store(&l->brk_until, now + l->cfg.breaker_cooldown_ns);
		atomic_fetch_add(&l->brk_fails, 1);
		atomic_fetch_add(&l->brk_gen, 1);
	}
	if (probe)
		atomic_store(&l->brk_probe, 0);
}

/* One EVALSHA for all items. Returns 0, or -EIO when Redis failed. */
static int decide_redis(struct xrl_limiter *l, struct item *it, int n)
{
	const char *argv[4 + 2 * XRL_HTTP_MAX_MATCH + 3 * XRL_HTTP_MAX_MATCH + 2];
	size_t argl[sizeof(argv) / sizeof(argv[0])];
	char keys[XRL_HTTP_MAX_MATCH][XRL_RULE_NAME_LEN + XRL_HTTP_KEY_MAX + 16];
	char nums[1 + 3 * XRL_HTTP_MAX_MATCH][32];
	char nk[16];
	__u64 now_us = real_us();
	redisContext *c;
	redisReply *r;
	bool reused;
	int a = 0;

	reused = tl_redis && tl_owner == l && tl_gen == atomic_load(&l->brk_gen);
	c = redis_get(l);
	if (!c)
		return -EIO;
	snprintf(nk, sizeof(nk), "%d", n);
	argv[a++] = "EVALSHA";
	argv[a++] = tl_sha;
	argv[a++] = nk;
	for (int i = 0; i < n; i++) {
		/* hash tag on the key: one bucket's key always maps to one slot */
		snprintf(keys[i], sizeof(keys[i]), "xrl:{%s:%s}", it[i].r->name, it[i].key);
		argv[a++] = keys[i];
	}
	snprintf(nums[0], sizeof(nums[0]), "%llu", (unsigned long long)now_us);
	argv[a++] = nums[0];
	for (int i = 0; i < n; i++) {
		double tau = (double)it[i].r->g.tau_ns / 1000.0;

		snprintf(nums[1 + 3 * i], 32, "%.3f", it[i].r->shadow ? -tau : tau);
		snprintf(nums[2 + 3 * i], 32, "%.3f", (double)it[i].inc / 1000.0);
		snprintf(nums[3 + 3 * i], 32, "0");
		argv[a++] = nums[1 + 3 * i];
		argv[a++] = nums[2 + 3 * i];
		argv[a++] = nums[3 + 3 * i];
	}
	for (int i = 0; i < a; i++)
		argl[i] = strlen(argv[i]);
	r = redisCommandArgv(c, a, argv, argl);
	if (!r && reused && (c->err == REDIS_ERR_EOF ||
			     (c->err == REDIS_ERR_IO && errno != EAGAIN && errno != EWOULDBLOCK &&
			      errno != EINTR))) {
		/* Redis closed this connection while it was idle (a restart, its
		 * client timeout): not a failure yet; once more on a new one. A
		 * timeout (EAGAIN) is not retried: no request waits it out twice. */
		redis_drop();
		c = redis_get(l);
		if (!c)
			return -EIO;
		argv[1] = tl_sha;
		r = redisCommandArgv(c, a, argv, argl);
	}
	if (r && r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOSCRIPT", 8)) {
		freeReplyObject(r);
		argv[0] = "EVAL";
		argv[1] = lua_gcra;
		argl[0] = 4;
		argl[1] = strlen(lua_gcra);
		r = redisCommandArgv(c, a, argv, argl);
	}
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 1 + 2 * (size_t)n) {
		if (r && r->type == REDIS_REPLY_ERROR)
			log_warnx("redis: %s", r->str);
		if (r)
			freeReplyObject(r);
		redis_drop();
		return -EIO;
	}
	/* translate the µs of the shared clock into ns relative to our monotonic now */
	for (int i = 0; i < n; i++) {
		redisReply *f = r->element[1 + 2 * i], *t = r->element[2 + 2 * i];
		double tat_us = t->type == REDIS_REPLY_STRING ? strtod(t->str, NULL) : 0;
		__u64 mono = mono_ns();
		double rel = (tat_us - (double)now_us) * 1000.0;

		it[i].ok = f->type == REDIS_REPLY_STRING && (f->str[0] == 'A' || f->str[0] == 'a');
		it[i].tat = rel > 0 ? mono + (__u64)rel : 0;
		it[i].new_tat = it[i].tat;
		if (f->str[0] == 'a') /* would admit, but another rule refused */
			it[i].new_tat = it[i].tat;
	}
	freeReplyObject(r);
	return 0;
}

/* ---- penalties -------------------------------------------------------------- */

/* Packed state: [63..24] window index, [23..16] strikes, [15..8] offenses. */
static void penalty_strike(struct xrl_limiter *l, struct item *x, __u64 now)
{
	__u64 win = now / l->cfg.penalty.window_ns, st, ttl;
	struct shard *sh = shard_of(l->pen_state, x->h);
	__u32 strikes, offenses;
	struct slot *s;

	pthread_mutex_lock(&sh->mu);
	s = slot_get(l->pen_state, sh, x->h, 0, ~0ULL);
	st = s->v;
	strikes = (st >> 16) & 0xff;
	offenses = (st >> 8) & 0xff;
	if (st && (st >> 24) == win) {
		pthread_mutex_unlock(&sh->mu);
		return;
	}
	if (st && win - (st >> 24) > l->cfg.penalty.strikes)
		strikes = 0;
	/* as in the packet tier: more than 2 x max without an offence forgives
	 * (measured from the last strike, which is never before the last offence) */
	if (st && offenses && win - (st >> 24) > 2 * l->cfg.penalty.max_ns / l->cfg.penalty.window_ns)
		offenses = 0;
	strikes++;
	ttl = 0;
	if (strikes >= l->cfg.penalty.strikes) {
		ttl = l->cfg.penalty.base_ns;
		for (__u32 i = 0; i < offenses && ttl < l->cfg.penalty.max_ns; i++)
			ttl *= 2;
		if (ttl > l->cfg.penalty.max_ns)
			ttl = l->cfg.penalty.max_ns;
		strikes = 0;
		if (offenses < 0xff)
			offenses++;
	}
	s->v = (win << 24) | ((__u64)strikes << 16) | ((__u64)offenses << 8) | 1;
	pthread_mutex_unlock(&sh->mu);
	if (ttl) {
		store_put(l->pen_block, x->h, now + ttl, now);
		STAT_ADD(l, penalties, 1);
		log_info("identity tier: a key of rule %s refused in %u windows: blocked for %llus",
			 x->r->name, l->cfg.penalty.strikes, (unsigned long long)(ttl / XRL_NSEC_PER_SEC));
	}
}

/* ---- public ---------------------------------------------------------------- */

int xrl_limiter_new(const struct xrl_http_cfg *c, struct xrl_limiter **out)
{
	struct xrl_limiter *l = calloc(1, sizeof(*l));
	__u32 cap = c->memory_max_keys ? c->memory_max_keys : 1000000;

	if (!l)
		return -ENOMEM;
	l->cfg = *c;
	pthread_rwlock_init(&l->cfg_mu, NULL);
	/* memory: the buckets (or the local fallback when the backend is Redis) */
	l->mem = store_new(c->redis ? cap / 4 : cap);
	l->overlimit = store_new(c->redis ? cap / 4 : 1024);
	l->pen_block = store_new(cap / 16);
	l->pen_state = store_new(cap / 16);
	if (!l->mem || !l->overlimit || !l->pen_block || !l->pen_state) {
		xrl_limiter_free(l);
		return -ENOMEM;
	}
	*out = l;
	return 0;
}

void xrl_limiter_free(struct xrl_limiter *l)
{
	if (!l)
		return;
	store_free(l->mem);
	store_free(l->overlimit);
	store_free(l->pen_block);
	store_free(l->pen_state);
	free(l);
}

void xrl_limiter_set_cfg(struct xrl_limiter *l, const struct xrl_http_cfg *c)
{
	pthread_rwlock_wrlock(&l->cfg_mu);
	l->cfg = *c;
	pthread_rwlock_unlock(&l->cfg_mu);
}

int xrl_limiter_breaker_state(struct xrl_limiter *l)
{
	return atomic_load(&l->brk_state);
}

void xrl_limiter_get_stats(struct xrl_limiter *l, struct xrl_limiter_stats *s)
{
	/* field by field: each counter is read atomically, the set need not be */
	for (size_t i = 0; i < sizeof(*s) / sizeof(__u64); i++)
		((__u64 *)s)[i] = __atomic_load_n(&((__u64 *)&l->st)[i], __ATOMIC_RELAXED);
	s->keys = atomic_load(&l->mem->keys);
	s->evictions_idle = atomic_load(&l->mem->ev_idle);
	s->evictions_active = atomic_load(&l->mem->ev_active);
}

int xrl_limiter_decide(struct xrl_limiter *l, const struct xrl_http_rule *const *rules,
		       const char *const *keys, const __u32 *costs, int n, struct xrl_decision *d)
{
	struct item it[XRL_HTTP_MAX_MATCH];
	__u64 now = mono_ns();
	int m = 0;

	memset(d, 0, sizeof(*d));
	if (n > XRL_HTTP_MAX_MATCH)
		n = XRL_HTTP_MAX_MATCH;
	d->allowed = true;
	d->n_rules = (__u32)n;
	STAT_ADD(l, decisions, 1);
	if (!n) {
		STAT_ADD(l, allowed, 1);
		return 0;
	}

	pthread_rwlock_rdlock(&l->cfg_mu);
	for (int i = 0; i < n; i++) {
		const struct xrl_http_rule *r = rules[i];
		__u32 cost = costs ? costs[i] : r->cost;

		if (!keys[i]) { /* on_missing_key: refuse, decided by the caller */
			if (r->shadow) { /* a shadow refusal: counted, not enforced */
				STAT_ADD(l, shadow_refused, 1);
				continue;
			}
			d->allowed = false;
			d->missing_key = true;
			d->rule = r;
			d->limit = r->burst;
			d->retry_after_s = 1;
			STAT_ADD(l, refused, 1);
			pthread_rwlock_unlock(&l->cfg_mu);
			return 0;
		}
		if (cost == 0)
			continue;
		if (cost > r->burst) {
			pthread_rwlock_unlock(&l->cfg_mu);
			return -E2BIG;
		}
		it[m] = (struct item){ .r = r, .h = key_hash(r->id, keys[i]),
				       .inc = (__u64)cost * r->g.emit_ns, .key = keys[i] };
		m++;
	}

	/* a key under penalty is refused until its block ends */
	if (l->cfg.penalty.enabled) {
		for (int i = 0; i < m; i++) {
			__u64 until = store_peek(l->pen_block, it[i].h);

			if (until > now && !it[i].r->shadow) {
				d->allowed = false;
				d->penalized = true;
				d->rule = it[i].r;
				d->limit = it[i].r->burst;
				d->retry_after_s = ceil_s(until - now);
				STAT_ADD(l, refused, 1);
				pthread_rwlock_unlock(&l->cfg_mu);
				return 0;
			}
		}
	}

	if (!l->cfg.redis) {
		decide_store(l->mem, it, m, now);
	} else {
		bool probe, cached = false;

		/* the over-limit cache: refused until t, without a round trip */
		for (int i = 0; i < m && !cached; i++) {
			__u64 until = it[i].r->shadow ? 0 : store_peek(l->overlimit, it[i].h);

			if (until > now) {
				cached = true;
				d->allowed = false;
				d->rule = it[i].r;
				d->limit = it[i].r->burst;
				d->remaining = 0;
				d->retry_after_s = ceil_s(until - now);
				if (!d->retry_after_s)
					d->retry_after_s = 1;
				d->reset_s = ceil_s(until - now + it[i].r->g.tau_ns);
			}
		}
		if (cached) {
			STAT_ADD(l, overlimit_cache_hits, 1);
			STAT_ADD(l, refused, 1);
			pthread_rwlock_unlock(&l->cfg_mu);
			return 0;
		}
		if (brk_allow(l, now, &probe) && decide_redis(l, it, m) == 0) {
			brk_result(l, true, probe, now);
			now = mono_ns();
			for (int i = 0; i < m; i++)
				if (it[i].ok)
					it[i].new_tat = it[i].tat;
		} else {
			struct item loc[XRL_HTTP_MAX_MATCH];
			int k = 0;

			if (!probe && atomic_load(&l->brk_state) != BRK_CLOSED)
				STAT_ADD(l, breaker_open_skips, 1);
			else
				brk_result(l, false, probe, now);
			STAT_ADD(l, backend_errors, 1);
			d->backend_error = true;
			for (int i = 0; i < m; i++) {
				switch (it[i].r->on_backend_error) {
				case XRL_BE_CLOSED:
					STAT_ADD(l, fallback_closed, 1);
					d->allowed = false;
					d->shed = true;
					d->rule = it[i].r;
					d->limit = it[i].r->burst;
					d->retry_after_s = ceil_s(l->cfg.breaker_cooldown_ns);
					STAT_ADD(l, shed, 1);
					pthread_rwlock_unlock(&l->cfg_mu);
					return 0;
				case XRL_BE_LOCAL:
					loc[k++] = it[i];
					break;
				default:
					STAT_ADD(l, fallback_open, 1);
					break;
				}
			}
			if (k) {
				STAT_ADD(l, fallback_local, 1);
				decide_store(l->mem, loc, k, now);
			}
			memcpy(it, loc, sizeof(loc[0]) * (size_t)k);
			m = k;
		}
	}
	pthread_rwlock_unlock(&l->cfg_mu);

	conclude(it, m, now, d);
	if (!d->allowed) {
		STAT_ADD(l, refused, 1);
		for (int i = 0; i < m; i++) {
			if (it[i].ok || it[i].r->shadow)
				continue;
			if (l->cfg.redis && !d->backend_error)
				store_put(l->overlimit, it[i].h,
					  xrl_gcra_conform_at(it[i].tat, it[i].inc, it[i].r->g.tau_ns), now);
			if (l->cfg.penalty.enabled)
				penalty_strike(l, &it[i], now);
		}
	} else {
		STAT_ADD(l, allowed, 1);
	}
	for (int i = 0; i < m; i++)
		if (!it[i].ok && it[i].r->shadow)
			STAT_ADD(l, shadow_refused, 1);
	return 0;
}
