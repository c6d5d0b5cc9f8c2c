// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * limiter.c - the identity tier's buckets: in process memory (default) or in
 * Redis, with the GCRA arithmetic of include/xrl_gcra.h.
 *
 * Memory: a fixed-size table, sharded 64 ways with a mutex per shard, open
 * addressing over at most 8 slots. Every slot is 24 bytes (112 bits of a
 * keyed 128-bit SipHash of rule and whole key, its last-use second, and the
 * TAT), allocated once: hostile key cardinality cannot grow it. A bucket
 * whose TAT is in the past is a full bucket, i.e. exactly as if absent, so
 * it is the first thing evicted and losing it loses nothing. Only when all
 * 8 slots hold buckets in use does an insert evict one that still holds
 * state: the least recently used, so a flood of fresh keys cannot reset a
 * key that is being used. Counted.
 *
 * Redis: one script decides a decision's keys atomically (NOSCRIPT
 * reloads), the caller's clock passed in, every key written with an expiry
 * equal to the time until its bucket is full, key names with a hash tag
 * (long keys by their SHA-256). Each server thread's event loop owns a
 * connection, opened without blocking, and pipelines on it: the decisions
 * queued while a batch is in flight go out together in the next, as one
 * script call (see "the Redis pipe"). A breaker stops calling a Redis that
 * fails, so no request waits out a timeout during an outage; each rule then
 * decides per on_backend_error. A key Redis refused keeps its TAT here, and
 * a request that TAT could not admit at its cost is refused without a round
 * trip (the over-limit cache).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include "http.h"
#include "log.h"

#define SHARDS      64
#define PROBE       8

/*
 * A bucket's identity: 128 bits of SipHash-2-4 over (rule name, NUL, the
 * whole key) under a key drawn from getrandom() when the limiter is made.
 * Keyed, so collisions cannot be searched for offline; over the whole key,
 * so keys that share a prefix (JWTs) never merge. The low 6 bits of a pick
 * its shard and the next ones its first slot; a slot keeps `a` whole and 48
 * bits of `b`: 118 bits tell keys of one shard apart, so two keys share a
 * bucket only with odds of about n^2 / 2^119 (1e-23 for a million keys).
 */
struct kd {
	__u64 a, b;
};

/*
 * A slot: the digest (a, and the top 48 bits of b in `h` above the second
 * it was last used, mod 2^16, so that eviction can spare the keys in use);
 * and the bucket's TAT (or "until") in `v`. 24 bytes.
 */
struct slot {
	__u64 a;      /* kd.a */
	__u64 h;      /* kd.b >> 16 << 16 | last-use second; 0 = empty */
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
	struct store *overlimit;           /* redis: key -> TAT it was refused against */
	struct store *pen_block;           /* key -> blocked until */
	struct store *pen_state;           /* key -> packed strikes */
	__u64 sip[2];                      /* SipHash key of bucket identities */
	const _Atomic __u64 *clock;        /* tests: the time; NULL: the clocks */
	_Atomic int brk_state;
	_Atomic __u64 brk_until;           /* open until (monotonic ns) */
	_Atomic __u32 brk_fails;
	_Atomic int brk_probe;             /* a half-open probe is in flight */
	char sha[41];                      /* SHA1 of lua_gcra, for EVALSHA */
	__u64 auth;                        /* auth_tag(&cfg) */
	char *load_cmd;                    /* SCRIPT LOAD lua_gcra, formatted */
	size_t load_len;
	pthread_mutex_t sync_mu;           /* xrl_limiter_decide: one at a time */
	struct xrl_redis_pipe *sync_pipe;  /* on a pipe of its own */
	struct xrl_limiter_stats st;       /* updated with atomic adds */
};

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * XRL_NSEC_PER_SEC + (__u64)ts.tv_nsec;
}

/* The limiter's now on CLOCK_MONOTONIC (or the test's clock). */
static __u64 lim_now(const struct xrl_limiter *l)
{
	return l->clock ? atomic_load(l->clock) : mono_ns();
}

#define STAT_ADD(l, f, n) __atomic_fetch_add(&(l)->st.f, (n), __ATOMIC_RELAXED)

/* ---- SipHash-2-4, 128-bit output (Aumasson and Bernstein, reference) -------- */

#define ROTL(x, b) (__u64)(((x) << (b)) | ((x) >> (64 - (b))))

struct sip {
	__u64 v0, v1, v2, v3;
	__u64 tail;      /* bytes not yet a whole word, little-endian */
	size_t len;      /* bytes absorbed */
};

static void sip_round(struct sip *s, int n)
{
	while (n--) {
		s->v0 += s->v1; s->v1 = ROTL(s->v1, 13); s->v1 ^= s->v0; s->v0 = ROTL(s->v0, 32);
		s->v2 += s->v3; s->v3 = ROTL(s->v3, 16); s->v3 ^= s->v2;
		s->v0 += s->v3; s->v3 = ROTL(s->v3, 21); s->v3 ^= s->v0;
		s->v2 += s->v1; s->v1 = ROTL(s->v1, 17); s->v1 ^= s->v2; s->v2 = ROTL(s->v2, 32);
	}
}

static void sip_init(struct sip *s, const __u64 k[2])
{
	s->v0 = 0x736f6d6570736575ULL ^ k[0];
	s->v1 = 0x646f72616e646f6dULL ^ k[1] ^ 0xee; /* 0xee: the 128-bit variant */
	s->v2 = 0x6c7967656e657261ULL ^ k[0];
	s->v3 = 0x7465646279746573ULL ^ k[1];
	s->tail = 0;
	s->len = 0;
}

static void sip_word(struct sip *s, __u64 m)
{
	s->v3 ^= m;
	sip_round(s, 2);
	s->v0 ^= m;
}

static void sip_add(struct sip *s, const void *in, size_t n)
{
	const unsigned char *p = in;

	for (size_t i = 0; i < n; i++) {
		s->tail |= (__u64)p[i] << (8 * (s->len & 7));
		if ((++s->len & 7) == 0) {
			sip_word(s, s->tail);
			s->tail = 0;
		}
	}
}

static void sip_end(struct sip *s, __u64 out[2])
{
	sip_word(s, s->tail | (__u64)s->len << 56);
	s->v2 ^= 0xee;
	sip_round(s, 4);
	out[0] = s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
	s->v1 ^= 0xdd;
	sip_round(s, 4);
	out[1] = s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

void xrl_siphash128(const __u64 k[2], const void *in, size_t n, __u64 out[2])
{
	struct sip s;

	sip_init(&s, k);
	sip_add(&s, in, n);
	sip_end(&s, out);
}

/* The identity of rule r's bucket for key: the rule's name, not its 32-bit
 * id, so two rules never share buckets either. */
static struct kd key_digest(const struct xrl_limiter *l, const struct xrl_http_rule *r,
			    const char *key)
{
	struct sip s;
	__u64 o[2];

	sip_init(&s, l->sip);
	sip_add(&s, r->name, strnlen(r->name, sizeof(r->name)) + 1); /* with its NUL */
	sip_add(&s, key, strlen(key));
	sip_end(&s, o);
	if (!TAG(o[1]))
		o[1] |= 1ULL << 16; /* a zero tag would read as empty */
	return (struct kd){ o[0], o[1] };
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

static struct shard *shard_of(struct store *s, struct kd k)
{
	return &s->sh[k.a & (SHARDS - 1)];
}

static bool slot_is(const struct slot *x, struct kd k)
{
	return x->h && x->a == k.a && TAG(x->h) == TAG(k.b);
}

/*
 * The slot for k in its (locked) shard, inserting it with v = 0 when absent,
 * and marking it used now. Victims, in order: an empty slot; an idle one
 * (v <= now: a full bucket, an expired refusal, exactly as if absent); among
 * those that owe no more than `cheap` (the newcomer's cost), the one used
 * least recently (a key in use keeps its state against a flood of fresh
 * keys), then the one closest to full; only when all owe more, the one
 * closest to full. So a drained key that waits out its Retry-After is not
 * handed a fresh burst by a flood of one-request keys.
 */
static struct slot *slot_get(struct store *s, struct shard *sh, struct kd k, __u64 now, __u64 cheap)
{
	__u32 i = (__u32)(k.a >> 6) & sh->mask;
	__u64 sec = (now / XRL_NSEC_PER_SEC) & 0xffff, age, vage = 0;
	struct slot *free_s = NULL, *idle = NULL, *victim = NULL, *dear = NULL;

	for (int n = 0; n < PROBE; n++, i = (i + 1) & sh->mask) {
		struct slot *x = &sh->slots[i];

		if (slot_is(x, k)) {
			x->h = TAG(k.b) << 16 | sec;
			return x;
		}
		if (!x->h) {
			if (!free_s)
				free_s = x;
			break; /* nothing beyond an empty slot was ever placed for k */
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
	free_s->a = k.a;
	free_s->h = TAG(k.b) << 16 | sec;
	free_s->v = 0;
	return free_s;
}

/* The (locked) slot of k, or NULL. */
static struct slot *slot_find(struct shard *sh, struct kd k)
{
	__u32 i = (__u32)(k.a >> 6) & sh->mask;

	for (int n = 0; n < PROBE; n++, i = (i + 1) & sh->mask) {
		if (slot_is(&sh->slots[i], k))
			return &sh->slots[i];
		if (!sh->slots[i].h)
			break;
	}
	return NULL;
}

/* Peek without inserting: the value, or 0. */
static __u64 store_peek(struct store *s, struct kd k)
{
	struct shard *sh = shard_of(s, k);
	struct slot *x;
	__u64 v;

	pthread_mutex_lock(&sh->mu);
	x = slot_find(sh, k);
	v = x ? x->v : 0;
	pthread_mutex_unlock(&sh->mu);
	return v;
}

static void store_put(struct store *s, struct kd k, __u64 v, __u64 now)
{
	struct shard *sh = shard_of(s, k);

	pthread_mutex_lock(&sh->mu);
	slot_get(s, sh, k, now, ~0ULL)->v = v;
	pthread_mutex_unlock(&sh->mu);
}

/* Set k's value if k is there already (no insert, no eviction). */
static void store_update(struct store *s, struct kd k, __u64 v)
{
	struct shard *sh = shard_of(s, k);
	struct slot *x;

	pthread_mutex_lock(&sh->mu);
	x = slot_find(sh, k);
	if (x)
		x->v = v;
	pthread_mutex_unlock(&sh->mu);
}

/* ---- decisions ------------------------------------------------------------ */

struct item {
	const struct xrl_http_rule *r;
	struct kd k;      /* the bucket's identity */
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
		idx[m++] = (__u32)(it[i].k.a & (SHARDS - 1));
	qsort(idx, (size_t)m, sizeof(idx[0]), cmp_u32);
	/* lock each shard once, in order: no deadlock between requests */
	for (int i = 0; i < m; i++)
		if (!i || idx[i] != idx[i - 1])
			pthread_mutex_lock(&s->sh[idx[i]].mu);
	for (int i = 0; i < n; i++) {
		struct slot *x = slot_get(s, shard_of(s, it[i].k), it[i].k, now, it[i].inc);

		it[i].tat = x->v;
		it[i].ok = xrl_gcra_decide(x->v, now, it[i].inc, it[i].r->g.tau_ns, &it[i].new_tat);
		if (!it[i].ok && !it[i].r->shadow)
			all_ok = false;
	}
	if (all_ok)
		for (int i = 0; i < n; i++)
			if (it[i].ok)
				slot_get(s, shard_of(s, it[i].k), it[i].k, now, it[i].inc)->v = it[i].new_tat;
	for (int i = m - 1; i >= 0; i--)
		if (!i || idx[i] != idx[i - 1])
			pthread_mutex_unlock(&s->sh[idx[i]].mu);
}

/* ---- Redis ------------------------------------------------------------------ */

/*
 * Decisions, in order, each over several buckets: all admit or none is
 * charged. One call carries every decision of a batch (xrl_redis_pipe), so
 * Redis parses, looks up and enters the script once per batch, not once per
 * decision; a decision sees the buckets as the ones before it left them,
 * exactly as if each had been a call of its own. Times in microseconds with
 * three decimals (ns) since 2024-01-01 00:00 UTC on the caller's
 * CLOCK_REALTIME (one epoch, shared by every instance), so the script is a
 * pure function of its arguments. Absolute times are split into their
 * integer and fractional parts and all arithmetic is on times relative to
 * now, which a double holds to far below a ns: a rule of 10,000,000/s
 * (0.1 us a token) counts exactly. (As one double counted from 1970,
 * ~1.7e15 us, a step is 0.25 us: such a key never advanced.)
 * ARGV[1] = now, ARGV[2] = D decisions, ARGV[2+d] = the number of keys of
 * decision d (its keys follow the previous decision's in KEYS); then per
 * key, in KEYS order, two: tau (negative: a shadow rule, whose refusal does
 * not refuse the request) and inc (cost x emit). Comparisons allow half a
 * ns of rounding. A stored TAT without decimals is one an older xrl wrote,
 * in whole us since 1970: it is moved to the 2024 epoch. A stored TAT
 * beyond now + tau (written by an instance whose clock is ahead) counts as
 * now + tau, a drained bucket, and is written back so: never more than a
 * burst of debt.
 * Returns, per decision in turn, { refused (0 or 1), then per key "A"
 * (admitted), "a" (would admit; another rule refused) or "R" and its TAT
 * relative to now in us ("0": in the past, a full bucket) }. A key Redis
 * cannot read as a string (another program's hash under our name) fails
 * its decision alone, which then charges and writes nothing: { 2, then
 * "E", "0" per key }. An error raised by the script itself fails the whole
 * call, with what it wrote before.
 * A call of several keys reads them all with one MGET (a redis.call costs
 * about what a key's arithmetic does); MGET reads a key of another type as
 * missing, so the missing ones are asked EXISTS, and only if some exist,
 * TYPE one by one until as many are found. A single key is one GET,
 * WRONGTYPE caught by pcall. The value a decision writes is what the next
 * one of the call reads, and tau and inc, the same strings for every
 * decision of one rule, are converted once a call. (Script time a decision
 * at 10 decisions a call, redis-benchmark: 6.8-9.7 us against 8.4-11.4 with
 * one GET a key; one key alone: the same. docs/benchmarks.md)
 */
static const char lua_gcra[] =
	"local function split(v)\n"
	"  local d = string.find(v, '.', 1, true)\n"
	"  if not d then return tonumber(v) or 0, 0, true end\n"
	"  return tonumber(string.sub(v, 1, d - 1)) or 0, tonumber(string.sub(v, d)) or 0\n"
	"end\n"
	"local ni, nf = split(ARGV[1])\n"
	"local function abs(r)\n"
	"  local x = nf + r\n"
	"  local xi = math.floor(x)\n"
	"  local f = math.floor((x - xi) * 1000 + 0.5)\n"
	"  if f >= 1000 then xi = xi + 1; f = f - 1000 end\n"
	"  return string.format('%.0f.%03d', ni + xi, f)\n"
	"end\n"
	"local val, bad = {}, {}\n"
	"if #KEYS == 1 then\n"
	"  local v = redis.pcall('GET', KEYS[1])\n"
	"  if type(v) == 'table' and v.err then bad[KEYS[1]] = true else val[KEYS[1]] = v end\n"
	"else\n"
	"  local v, miss = redis.call('MGET', unpack(KEYS)), {}\n"
	"  for k = 1, #KEYS do\n"
	"    if v[k] then val[KEYS[k]] = v[k] else miss[#miss + 1] = KEYS[k] end\n"
	"  end\n"
	"  local left = #miss > 0 and redis.call('EXISTS', unpack(miss)) or 0\n"
	"  for k = 1, #miss do\n"
	"    if left == 0 then break end\n"
	"    if redis.call('TYPE', miss[k]).ok ~= 'none' then bad[miss[k]] = true; left = left - 1 end\n"
	"  end\n"
	"end\n"
	"local num = {}\n"
	"local function arg(a)\n"
	"  local x = num[a]\n"
	"  if not x then x = tonumber(a); num[a] = x end\n"
	"  return x\n"
	"end\n"
	"local nd = tonumber(ARGV[2])\n"
	"local out = {}\n"
	"local rel, new, ok, fix = {}, {}, {}, {}\n"
	"local k0, a0 = 0, nd + 2\n"
	"for d = 1, nd do\n"
	"  local n = tonumber(ARGV[2 + d])\n"
	"  local refused, err = 0, false\n"
	"  for i = 1, n do\n"
	"    local key = KEYS[k0 + i]\n"
	"    local tau = arg(ARGV[a0 + 2*i - 1])\n"
	"    local inc = arg(ARGV[a0 + 2*i])\n"
	"    local shadow = tau < 0\n"
	"    if shadow then tau = -tau end\n"
	"    local v = val[key]\n"
	"    if bad[key] then err = true end\n"
	"    local r = 0\n"
	"    if v then\n"
	"      local ti, tf, old = split(v)\n"
	"      if old then ti = ti - 1704067200000000 end\n"
	"      r = (ti - ni) + (tf - nf)\n"
	"    end\n"
	"    fix[i] = r > tau + 0.0005\n"
	"    if fix[i] then r = tau end\n"
	"    rel[i] = r\n"
	"    if r < 0 then r = 0 end\n"
	"    new[i] = r + inc\n"
	"    ok[i] = new[i] <= tau + 0.0005\n"
	"    if not ok[i] and not shadow then refused = 1 end\n"
	"  end\n"
	"  out[#out + 1] = err and 2 or refused\n"
	"  for i = 1, n do\n"
	"    local r, key = rel[i], KEYS[k0 + i]\n"
	"    if err then\n"
	"      out[#out + 1] = 'E'\n"
	"      out[#out + 1] = '0'\n"
	"    elseif refused == 0 and ok[i] then\n"
	"      val[key] = abs(new[i])\n"
	"      redis.call('SET', key, val[key], 'PX', math.ceil(new[i] / 1000) + 1)\n"
	"      out[#out + 1] = 'A'\n"
	"      out[#out + 1] = string.format('%.3f', new[i])\n"
	"    else\n"
	"      if fix[i] then\n"
	"        val[key] = abs(r)\n"
	"        redis.call('SET', key, val[key], 'PX', math.ceil(r / 1000) + 1)\n"
	"      elseif r > 0 then redis.call('PEXPIRE', key, math.ceil(r / 1000) + 1) end\n"
	"      out[#out + 1] = ok[i] and 'a' or 'R'\n"
	"      out[#out + 1] = r > 0 and string.format('%.3f', r) or '0'\n"
	"    end\n"
	"  end\n"
	"  k0 = k0 + n\n"
	"  a0 = a0 + 2 * n\n"
	"end\n"
	"return out\n";

#define REDIS_EPOCH_S 1704067200ULL   /* 2024-01-01T00:00:00Z */
#define KEYS_MAX      3072            /* a decision's keys, RESP (8 at most) */
#define ARGS_MAX      640             /* a decision's tau and inc, RESP */
#define CALL_MAX      XRL_REDIS_CALL_MAX
#define FREE_JOBS_MAX 1024

/* "$NNN\r\nxrl:{" RULE ":" KEY "}\r\n" per key; "$NN\r\n" -N.NNN "\r\n" twice */
#define XRL_REDIS_KEY_LITERAL 128     /* longer keys are named by their SHA-256 */
_Static_assert(XRL_REDIS_KEY_LITERAL >= 65, "a digest's name fits");
_Static_assert(XRL_HTTP_MAX_MATCH * (6 + 7 + XRL_RULE_NAME_LEN + 1 + XRL_REDIS_KEY_LITERAL + 3) <= KEYS_MAX,
	       "KEYS_MAX holds a decision's keys");
_Static_assert(XRL_HTTP_MAX_MATCH * 2 * (5 + 26 + 2) <= ARGS_MAX, "ARGS_MAX holds a decision's arguments");
/* ns since REDIS_EPOCH_S on CLOCK_REALTIME */
static __u64 redis_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	if ((__u64)ts.tv_sec < REDIS_EPOCH_S)
		return 0;
	return ((__u64)ts.tv_sec - REDIS_EPOCH_S) * XRL_NSEC_PER_SEC + (__u64)ts.tv_nsec;
}

/* ns as microseconds with three decimals: "1234.567" */
static char *put_us(char *p, __u64 ns)
{
	p = xrl_put_u64(p, ns / 1000);
	*p++ = '.';
	*p++ = (char)('0' + ns % 1000 / 100);
	*p++ = (char)('0' + ns % 100 / 10);
	*p++ = (char)('0' + ns % 10);
	return p;
}

/* A RESP bulk string. */
static char *put_bulk(char *p, const char *s, size_t n)
{
	*p++ = '$';
	p = xrl_put_u64(p, n);
	*p++ = '\r';
	*p++ = '\n';
	memcpy(p, s, n);
	p += n;
	*p++ = '\r';
	*p++ = '\n';
	return p;
}

/* The text of a "123.456" microsecond time as ns (no double on the way). */
static __u64 parse_us(const char *s)
{
	__u64 us = 0, f = 0;
	int d = 0;

	while (*s >= '0' && *s <= '9')
		us = us * 10 + (__u64)(*s++ - '0');
	if (*s == '.')
		for (s++; d < 3 && *s >= '0' && *s <= '9'; d++)
			f = f * 10 + (__u64)(*s++ - '0');
	for (; d < 3; d++)
		f *= 10;
	return us * 1000 + f;
}

/* J_BADKEY: Redis answered, but a key of the decision is not a string (not
 * Redis failing: the decision falls back alone, the breaker is not told) */
enum { J_OK = 0, J_FAIL, J_SKIP, J_NOSCRIPT, J_PENDING, J_BADKEY };

/* The answers a batch awaits before its own: a new connection's AUTH,
 * SELECT, SCRIPT LOAD, or the SCRIPT LOAD after NOSCRIPT (HS_SKIP). */
enum { HS_SKIP = 0, HS_AUTH, HS_SELECT, HS_LOAD };

/*
 * One decision waiting for Redis: its items, its part of the batch's
 * EVALSHA already in the wire format (its keys, and its tau and inc per
 * key), where the answer goes.
 */
struct job {
	struct job *next;
	struct xrl_limiter_wait w;
	struct xrl_decision *d;
	struct item it[XRL_HTTP_MAX_MATCH];
	int m;
	int st;                  /* J_* */
	int call_n;              /* first job of a call: the call's decisions */
	__u64 mnow;              /* the batch's now, monotonic (ns) */
	size_t klen, alen;
	char kb[KEYS_MAX];
	char ab[ARGS_MAX];
};

/*
 * The name of key in Redis after "xrl:{RULE:": the key itself up to
 * XRL_REDIS_KEY_LITERAL bytes (readable with redis-cli), or else '#' and
 * the hex of its SHA-256, shared by every instance and collision-resistant.
 * A key that starts with '#' is always digested, so no literal key can be
 * taken for another's digest. Returns the length at out.
 */
static size_t redis_key_name(const char *key, char out[XRL_REDIS_KEY_LITERAL])
{
	size_t kl = strlen(key);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (kl <= XRL_REDIS_KEY_LITERAL && key[0] != '#') {
		memcpy(out, key, kl);
		return kl;
	}
	if (!EVP_Digest(key, kl, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
		memset(md, 0, sizeof(md)); /* not seen: libcrypto's SHA-256 does not fail */
	out[0] = '#';
	for (int i = 0; i < 32; i++) {
		out[1 + 2 * i] = "0123456789abcdef"[md[i] >> 4];
		out[2 + 2 * i] = "0123456789abcdef"[md[i] & 15];
	}
	return 65;
}

/* j's keys and arguments, keys from the caller. */
static void job_format(struct job *j, const char *const *keys)
{
	char *p = j->kb, num[32], *e, kn[XRL_REDIS_KEY_LITERAL];
	int m = j->m;

	for (int i = 0; i < m; i++) {
		const struct xrl_http_rule *r = j->it[i].r;
		size_t nl = strnlen(r->name, sizeof(r->name));
		size_t kl = redis_key_name(keys[i], kn);

		/* xrl:{RULE:KEY}, a hash tag: one bucket's key always maps to one slot */
		*p++ = '$';
		p = xrl_put_u64(p, 7 + nl + kl);
		memcpy(p, "\r\nxrl:{", 7);
		p += 7;
		memcpy(p, r->name, nl);
		p += nl;
		*p++ = ':';
		memcpy(p, kn, kl);
		p += kl;
		memcpy(p, "}\r\n", 3);
		p += 3;
	}
	j->klen = (size_t)(p - j->kb);
	p = j->ab;
	for (int i = 0; i < m; i++) {
		const struct xrl_http_rule *r = j->it[i].r;

		e = num;
		if (r->shadow)
			*e++ = '-';
		e = put_us(e, r->g.tau_ns);
		p = put_bulk(p, num, (size_t)(e - num));
		e = put_us(num, j->it[i].inc);
		p = put_bulk(p, num, (size_t)(e - num));
	}
	j->alen = (size_t)(p - j->ab);
}

/*
 * The walk of one script call's reply (see lua_gcra): n decisions, decision
 * d of nkeys[d] keys. Fills st[d] (XRL_SCRIPT_OK or XRL_SCRIPT_BADKEY, a
 * key not a string) and per key, all decisions' keys in turn, whether it
 * admits (or would) and its TAT relative to the call's now. Returns 0,
 * -ENOEXEC (NOSCRIPT: the script is not loaded), -EIO (an error answer),
 * -EBADMSG (not the shape asked for). Reads nothing beyond the reply's own
 * elements, whatever Redis (or anything posing as it) sent.
 */
int xrl_script_reply(const struct redisReply *r, const int *nkeys, int n, int *st,
		     struct xrl_script_key *keys)
{
	size_t want = 0, off = 0;
	int k = 0;

	for (int d = 0; d < n; d++)
		want += 1 + 2 * (size_t)nkeys[d];
	if (r->type == REDIS_REPLY_ERROR)
		return r->len >= 8 && !strncmp(r->str, "NOSCRIPT", 8) ? -ENOEXEC : -EIO;
	if (r->type != REDIS_REPLY_ARRAY || r->elements != want)
		return -EBADMSG;
	for (int d = 0; d < n; d++) {
		const redisReply *s0 = r->element[off++];

		st[d] = s0->type == REDIS_REPLY_INTEGER && s0->integer == 2 ? XRL_SCRIPT_BADKEY
									     : XRL_SCRIPT_OK;
		for (int i = 0; i < nkeys[d]; i++, k++) {
			const redisReply *f = r->element[off++], *t = r->element[off++];
			bool str = f->type == REDIS_REPLY_STRING && f->len > 0;

			/* 'A' admitted, 'a' would admit (another rule refused), 'R' */
			keys[k].ok = str && (f->str[0] == 'A' || f->str[0] == 'a');
			keys[k].rel_ns = t->type == REDIS_REPLY_STRING ? parse_us(t->str) : 0;
		}
	}
	return 0;
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

static void brk_result(struct xrl_limiter *l, bool ok, bool probe, __u64 now, const char *why)
{
	if (ok) {
		atomic_store(&l->brk_fails, 0);
		if (atomic_exchange(&l->brk_state, BRK_CLOSED) != BRK_CLOSED)
			log_info("redis %s:%d answers again: shared limits resumed",
				 l->cfg.redis_host, l->cfg.redis_port);
	} else {
		/* one timeout is enough: the next request must not wait it out too */
		if (atomic_exchange(&l->brk_state, BRK_OPEN) == BRK_CLOSED)
			log_warnx("redis %s:%d failed (%s): breaker open, rules fall back to on_backend_error",
				  l->cfg.redis_host, l->cfg.redis_port, why ? why : "?");
		atomic_store(&l->brk_until, now + l->cfg.breaker_cooldown_ns);
		atomic_fetch_add(&l->brk_fails, 1);
	}
	if (probe)
		atomic_store(&l->brk_probe, 0);
}

/* ---- penalties -------------------------------------------------------------- */

/* Packed state: [63..24] window index, [23..16] strikes, [15..8] offenses. */
static void penalty_strike(struct xrl_limiter *l, struct item *x, __u64 now)
{
	__u64 win = now / l->cfg.penalty.window_ns, st, ttl;
	struct shard *sh = shard_of(l->pen_state, x->k);
	__u32 strikes, offenses;
	struct slot *s;

	pthread_mutex_lock(&sh->mu);
	s = slot_get(l->pen_state, sh, x->k, 0, ~0ULL);
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
		store_put(l->pen_block, x->k, now + ttl, now);
		STAT_ADD(l, penalties, 1);
		log_info("identity tier: a key of rule %s refused in %u windows: blocked for %llus",
			 x->r->name, l->cfg.penalty.strikes, (unsigned long long)(ttl / XRL_NSEC_PER_SEC));
	}
}

/* ---- deciding --------------------------------------------------------------- */

/*
 * The over-limit cache keeps, per key Redis refused, the TAT it was refused
 * against (on our monotonic clock), and follows that key's TAT in every
 * later answer of Redis while it is there. A TAT answers for every cost: a
 * request of cost c conforms from TAT + c x emit - tau on, so a refusal of
 * a large cost never refuses a smaller one that Redis would admit. Other
 * instances can only have moved the TAT later, so a refusal by the cache is
 * one Redis would give too (cfg_mu held).
 */
static void overlimit_note(struct xrl_limiter *l, struct item *it, int m, __u64 now)
{
	for (int i = 0; i < m; i++) {
		if (it[i].r->shadow)
			continue;
		if (!it[i].ok)
			store_put(l->overlimit, it[i].k, it[i].tat, now);
		else
			store_update(l->overlimit, it[i].k, it[i].tat);
	}
}

/* The end of every decision (cfg_mu held): the answer from the items, the
 * counters, the over-limit cache and penalties of a refusal. */
static void conclude_count(struct xrl_limiter *l, struct item *it, int m, __u64 now,
			   struct xrl_decision *d)
{
	conclude(it, m, now, d);
	if (l->cfg.redis && !d->backend_error)
		overlimit_note(l, it, m, now);
	if (!d->allowed) {
		STAT_ADD(l, refused, 1);
		for (int i = 0; i < m; i++)
			if (!it[i].ok && !it[i].r->shadow && l->cfg.penalty.enabled)
				penalty_strike(l, &it[i], now);
	} else {
		STAT_ADD(l, allowed, 1);
	}
	for (int i = 0; i < m; i++)
		if (!it[i].ok && it[i].r->shadow)
			STAT_ADD(l, shadow_refused, 1);
}

/*
 * A decision Redis did not answer (st: J_SKIP, the breaker is open; J_FAIL,
 * it failed; J_BADKEY, a key of it is not a string): each rule per its
 * on_backend_error. Or one it did (J_OK).
 */
static void finish(struct xrl_limiter *l, struct item *it, int m, int st, __u64 now,
		   struct xrl_decision *d)
{
	struct item loc[XRL_HTTP_MAX_MATCH];
	int k = 0;

	if (st == J_OK) {
		conclude_count(l, it, m, now, d);
		return;
	}
	if (st == J_SKIP)
		STAT_ADD(l, breaker_open_skips, 1);
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
			return;
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
	conclude_count(l, loc, k, now, d);
}

/*
 * The over-limit cache (cfg_mu held): true, with d filled, when a rule
 * refuses for its cached TAT at this request's cost; the rule of the
 * longest wait, as Redis would have named.
 */
static bool overlimit_refuses(struct xrl_limiter *l, struct item *it, int m, __u64 now,
			      struct xrl_decision *d)
{
	__u64 tat = 0, best = 0, wait;
	int pick = -1;

	for (int i = 0; i < m; i++) {
		if (it[i].r->shadow)
			continue;
		it[i].tat = store_peek(l->overlimit, it[i].k);
		wait = xrl_gcra_wait(it[i].tat, now, it[i].inc, it[i].r->g.tau_ns);
		if (wait > best) {
			best = wait;
			pick = i;
		}
	}
	if (pick < 0)
		return false;
	tat = it[pick].tat;
	d->allowed = false;
	d->rule = it[pick].r;
	d->limit = it[pick].r->burst;
	d->remaining = xrl_gcra_remaining(tat, now, it[pick].r->g.emit_ns, it[pick].r->g.tau_ns);
	d->retry_after_s = ceil_s(best);
	d->reset_s = ceil_s(xrl_gcra_reset(tat, now));
	STAT_ADD(l, overlimit_cache_hits, 1);
	STAT_ADD(l, refused, 1);
	return true;
}

/* A key under penalty is refused until its block ends (cfg_mu held). */
static bool penalty_refuses(struct xrl_limiter *l, struct item *it, int m, __u64 now,
			    struct xrl_decision *d)
{
	if (!l->cfg.penalty.enabled)
		return false;
	for (int i = 0; i < m; i++) {
		__u64 until = store_peek(l->pen_block, it[i].k);

		if (until > now && !it[i].r->shadow) {
			d->allowed = false;
			d->penalized = true;
			d->rule = it[i].r;
			d->limit = it[i].r->burst;
			d->retry_after_s = ceil_s(until - now);
			STAT_ADD(l, refused, 1);
			return true;
		}
	}
	return false;
}

/*
 * The items of a request (cfg_mu held): 0 and *pm, or 1 when d is the
 * decision already (a missing key refuses), -E2BIG.
 */
static int items(struct xrl_limiter *l, const struct xrl_http_rule *const *rules,
		 const char *const *keys, const __u32 *costs, int n, struct xrl_decision *d,
		 struct item *it, int *pm)
{
	int m = 0;

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
			return 1;
		}
		if (cost == 0)
			continue;
		if (cost > r->burst)
			return -E2BIG;
		it[m] = (struct item){ .r = r, .k = key_digest(l, r, keys[i]),
				       .inc = (__u64)cost * r->g.emit_ns, .key = keys[i] };
		m++;
	}
	*pm = m;
	return 0;
}

/*
 * Everything before the backend: the items, missing keys, penalties; the
 * memory backend decides here, and so does the over-limit cache. Returns 0
 * when d is the decision, 1 when Redis must decide it[0..*m), -E2BIG.
 * Everything that reads l->cfg does so under cfg_mu (a reload swaps it).
 */
static int prepare(struct xrl_limiter *l, const struct xrl_http_rule *const *rules,
		   const char *const *keys, const __u32 *costs, int n, struct xrl_decision *d,
		   struct item *it, int *pm)
{
	__u64 now = lim_now(l);
	int m = 0, rc;

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
	rc = items(l, rules, keys, costs, n, d, it, &m);
	if (rc) {
		pthread_rwlock_unlock(&l->cfg_mu);
		return rc == 1 ? 0 : rc;
	}
	rc = 0;
	if (penalty_refuses(l, it, m, now, d)) {
		/* d is the decision */
	} else if (!l->cfg.redis) {
		decide_store(l->mem, it, m, now);
		conclude_count(l, it, m, now, d);
	} else if (overlimit_refuses(l, it, m, now, d)) {
		/* refused without a round trip */
	} else if (!m) { /* nothing to charge: costs of 0, shadow rules without a key */
		conclude_count(l, it, m, now, d);
	} else {
		*pm = m;
		rc = 1;
	}
	pthread_rwlock_unlock(&l->cfg_mu);
	return rc;
}

/* ---- the Redis pipe ------------------------------------------------------------ */

/*
 * One connection to Redis, driven by one thread: a server thread's event
 * loop, or poll() in xrl_limiter_decide. Decisions are queued on it and go
 * out whenever it is free: all that are queued, in one write; the replies
 * are read as they arrive, and when the last is in, every decision of the
 * batch is handed back (w.decided). So a decision waits for at most the
 * batch in flight and its own, no timer adds delay, and under load one
 * write and one read serve many decisions, in xrld and in Redis. When Redis
 * fails, the whole batch falls back at once, and so does every batch after
 * it while the breaker is open: no decision waits out a timeout but those
 * of the batch that met it.
 */
struct xrl_redis_pipe {
	struct xrl_limiter *l;
	redisContext *c;              /* connected and non-blocking, or NULL */
	struct xrl_reader_guard *guard; /* of c's reader */
	__u32 gen;                    /* bumped with every new connection */
	char host[128];               /* where c is connected */
	int port, db;
	__u64 auth;                   /* the limiter's auth when c was opened */
	struct job *q, *q_tail;       /* queued */
	struct job *b;                /* the batch in flight; NULL: free */
	struct job *cur;              /* the next reply is this one's */
	__u8  hs[4];                  /* answers due before the batch's (HS_*) */
	int   hs_n, hs_i;             /* how many; how many are in */
	bool  fresh;                  /* c is new: the handshake goes first */
	__u64 t0, deadline;           /* the batch's start; it fails at deadline */
	bool probe;                   /* the batch is the breaker's probe */
	bool reused;                  /* c was open before the batch */
	bool retried, reloaded;       /* sent once more: on a new connection; after NOSCRIPT */
	bool answered;                /* a reply of the batch came in */
	bool aborting;                /* pipe_abort: not Redis's failure */
	char *wb;                     /* the batch's bytes; wb[woff..wlen) unwritten */
	size_t wlen, woff, wcap;
	struct job *free;             /* spare jobs */
	__u32 nfree;
	__u32 handed;                 /* decisions handed back (pipe_run's count) */
	const char *why;              /* what failed, for the log */
	char why_buf[160];
};

/*
 * hiredis 0.14 allocates an array's element pointers as soon as it reads
 * "*N", and N is the peer's to choose: "*400000000" costs 3.2 GB before a
 * single element arrives (found by tests/fuzz/fuzz_resp.c). The guard lets
 * the arrays of one reply hold REPLY_ELEMENTS_MAX elements in all, the
 * most any answer we ask for has (a full call: CALL_MAX decisions of
 * XRL_HTTP_MAX_MATCH keys); beyond it the reader fails, and the pipe drops
 * the connection ("not the Redis protocol") as for any garbage.
 */
#define REPLY_ELEMENTS_MAX (CALL_MAX * (1 + 2 * XRL_HTTP_MAX_MATCH))

struct xrl_reader_guard {
	redisReplyObjectFunctions fn;            /* hiredis's, createArray wrapped */
	const redisReplyObjectFunctions *orig;
	long left;                               /* elements this reply may still have */
};

static void *guard_array(const redisReadTask *t, int n)
{
	struct xrl_reader_guard *g = t->privdata;

	if (!g || n < 0 || n > g->left)
		return NULL; /* the reader reports it as out of memory: an error */
	g->left -= n;
	return g->orig->createArray(t, n);
}

struct xrl_reader_guard *xrl_reader_guard_new(struct redisReader *r)
{
	struct xrl_reader_guard *g = calloc(1, sizeof(*g));

	if (!g || !r->fn || !r->fn->createArray) {
		free(g);
		return NULL;
	}
	g->orig = r->fn;
	g->fn = *r->fn;
	g->fn.createArray = guard_array;
	g->left = REPLY_ELEMENTS_MAX;
	r->fn = &g->fn;
	r->privdata = g;
	return g;
}

void xrl_reader_guard_reset(struct xrl_reader_guard *g)
{
	g->left = REPLY_ELEMENTS_MAX;
}

static void pipe_drop(struct xrl_redis_pipe *p)
{
	if (p->c)
		redisFree(p->c);
	p->c = NULL;
	free(p->guard);
	p->guard = NULL;
}

/* What tells one user and password from another (a reload that changes
 * them takes a new connection), without keeping a copy of the password. */
static __u64 auth_tag(const struct xrl_http_cfg *c)
{
	__u64 h = 0xcbf29ce484222325ULL; /* FNV-1a over user, NUL, password */

	for (const char *q = c->redis_user;; q++) {
		h = (h ^ (unsigned char)*q) * 0x100000001b3ULL;
		if (!*q)
			break;
	}
	for (const char *q = c->redis_pass; *q; q++)
		h = (h ^ (unsigned char)*q) * 0x100000001b3ULL;
	return h;
}

/*
 * A connection to the configured Redis (cfg_mu held): the open one, or a
 * new one, connecting without blocking. Its AUTH, SELECT and SCRIPT LOAD
 * go out ahead of the batch in the same write (pipe_handshake) and are
 * answered before it, all within the batch's deadline: no thread waits for
 * a connect or a handshake, and a Redis that never answers costs the batch
 * its timeout and nothing more (then the breaker). Only a host name's
 * lookup (getaddrinfo) still blocks; an address in the URL needs none.
 */
static int pipe_connect(struct xrl_redis_pipe *p)
{
	const struct xrl_http_cfg *c = &p->l->cfg;

	p->reused = p->fresh = false;
	if (p->c && p->port == c->redis_port && p->db == c->redis_db && !strcmp(p->host, c->redis_host) &&
	    p->auth == p->l->auth) {
		p->reused = true;
		return 0;
	}
	pipe_drop(p);
	p->c = redisConnectNonBlock(c->redis_host, c->redis_port);
	if (p->c && !p->c->err)
		p->guard = xrl_reader_guard_new(p->c->reader);
	if (!p->c || p->c->err || !p->guard) {
		snprintf(p->why_buf, sizeof(p->why_buf), "connect: %.100s",
			 p->c && p->c->err ? p->c->errstr : "out of memory");
		p->why = p->why_buf;
		pipe_drop(p);
		return -EIO;
	}
	snprintf(p->host, sizeof(p->host), "%s", c->redis_host);
	p->port = c->redis_port;
	p->db = c->redis_db;
	p->auth = p->l->auth;
	p->gen++;
	p->fresh = true;
	return 0;
}

static int wb_add(struct xrl_redis_pipe *p, const char *s, size_t n)
{
	if (p->wlen + n > p->wcap) {
		size_t cap = p->wcap ? p->wcap : 16384;
		char *nb;

		while (cap < p->wlen + n)
			cap *= 2;
		nb = realloc(p->wb, cap);
		if (!nb)
			return -ENOMEM;
		p->wb = nb;
		p->wcap = cap;
	}
	memcpy(p->wb + p->wlen, s, n);
	p->wlen += n;
	return 0;
}

/* A formatted command into the batch's bytes, wiped from the heap after
 * (it may hold the password); answered as `kind`. */
static int wb_cmd(struct xrl_redis_pipe *p, int kind, const char *fmt, ...)
{
	char *cmd = NULL;
	va_list ap;
	int len, rc;

	va_start(ap, fmt);
	len = redisvFormatCommand(&cmd, fmt, ap);
	va_end(ap);
	if (len < 0)
		return -ENOMEM;
	rc = wb_add(p, cmd, (size_t)len);
	explicit_bzero(cmd, (size_t)len);
	redisFreeCommand(cmd);
	if (!rc)
		p->hs[p->hs_n++] = (__u8)kind;
	return rc;
}

/* A new connection's commands, ahead of the batch (cfg_mu held). */
static int pipe_handshake(struct xrl_redis_pipe *p)
{
	const struct xrl_http_cfg *c = &p->l->cfg;
	int rc = 0;

	if (c->redis_pass[0])
		rc = c->redis_user[0] ? wb_cmd(p, HS_AUTH, "AUTH %s %s", c->redis_user, c->redis_pass)
				      : wb_cmd(p, HS_AUTH, "AUTH %s", c->redis_pass);
	if (!rc && c->redis_db)
		rc = wb_cmd(p, HS_SELECT, "SELECT %d", c->redis_db);
	if (!rc)
		rc = wb_add(p, p->l->load_cmd, p->l->load_len);
	if (!rc)
		p->hs[p->hs_n++] = HS_LOAD;
	return rc;
}

/* The answer r to a handshake command: NULL, or what is wrong (cfg_mu
 * not needed: the user name is the pipe's copy of the configuration's). */
static const char *hs_check(struct xrl_redis_pipe *p, int kind, const redisReply *r)
{
	const char *err = r->type == REDIS_REPLY_ERROR ? r->str : "unexpected answer";

	switch (kind) {
	case HS_AUTH:
		if (r->type == REDIS_REPLY_STATUS)
			return NULL;
		/* Redis's answer never repeats the password; neither does the log */
		snprintf(p->why_buf, sizeof(p->why_buf), "AUTH: %.120s", err);
		return p->why_buf;
	case HS_SELECT:
		if (r->type == REDIS_REPLY_STATUS)
			return NULL;
		snprintf(p->why_buf, sizeof(p->why_buf), "SELECT: %.120s", err);
		return p->why_buf;
	case HS_LOAD:
		if (r->type == REDIS_REPLY_STRING && r->len == 40 && !memcmp(r->str, p->l->sha, 40))
			return NULL;
		if (r->type == REDIS_REPLY_STRING && r->len == 40)
			log_warnx("redis: SCRIPT LOAD gave %.40s, not the SHA1 %s of the script",
				  r->str, p->l->sha);
		snprintf(p->why_buf, sizeof(p->why_buf), "SCRIPT LOAD: %.120s", err);
		return p->why_buf;
	default:
		return NULL; /* HS_SKIP: the load after NOSCRIPT; the retry tells */
	}
}

/* Write what the socket takes. 0 (all written, or EAGAIN), or -errno. */
static int pipe_write(struct xrl_redis_pipe *p)
{
	while (p->woff < p->wlen) {
		ssize_t n = send(p->c->fd, p->wb + p->woff, p->wlen - p->woff, MSG_NOSIGNAL);

		if (n > 0)
			p->woff += (size_t)n;
		else if (n < 0 && errno == EINTR)
			continue;
		else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		else
			return n < 0 ? -errno : -EIO;
	}
	return 0;
}

/* A RESP bulk string of a number. */
static int wb_num(struct xrl_redis_pipe *p, __u64 v)
{
	char t[32], n[24], *e = xrl_put_u64(n, v);

	return wb_add(p, t, (size_t)(put_bulk(t, n, (size_t)(e - n)) - t));
}

/*
 * One EVALSHA for the n pending jobs from j on: their keys, now (already a
 * RESP bulk string), n, their key counts, their arguments. The first job
 * records n (its reply is the call's); each job records the monotonic now
 * its TATs are relative to.
 */
static int wb_call(struct xrl_redis_pipe *p, struct job *j, int n, const char *now,
		   __u64 mnow)
{
	struct xrl_limiter *l = p->l;
	char hdr[64], *h = hdr;
	int keys = 0;
	struct job *x;
	int i;

	for (x = j, i = 0; i < n; x = x->next)
		if (x->st == J_PENDING) {
			keys += x->m;
			i++;
		}
	*h++ = '*';
	h = xrl_put_u64(h, (__u64)(3 + keys + 2 + n + 2 * keys));
	*h++ = '\r';
	*h++ = '\n';
	if (wb_add(p, hdr, (size_t)(h - hdr)) || wb_add(p, "$7\r\nEVALSHA\r\n$40\r\n", 18) ||
	    wb_add(p, l->sha, 40) || wb_add(p, "\r\n", 2) || wb_num(p, (__u64)keys))
		return -ENOMEM;
	for (x = j, i = 0; i < n; x = x->next)
		if (x->st == J_PENDING) {
			if (wb_add(p, x->kb, x->klen))
				return -ENOMEM;
			i++;
		}
	if (wb_add(p, now, strlen(now)) || wb_num(p, (__u64)n))
		return -ENOMEM;
	for (x = j, i = 0; i < n; x = x->next)
		if (x->st == J_PENDING) {
			if (wb_num(p, (__u64)x->m))
				return -ENOMEM;
			i++;
		}
	for (x = j, i = 0; i < n; x = x->next)
		if (x->st == J_PENDING) {
			if (wb_add(p, x->ab, x->alen))
				return -ENOMEM;
			x->mnow = mnow;
			x->call_n = i ? 0 : n;
			i++;
		}
	return 0;
}

/*
 * Send the batch's pending jobs (cfg_mu held), CALL_MAX decisions to an
 * EVALSHA, on the open connection or a new one; after NOSCRIPT, SCRIPT
 * LOAD first. -EIO: no connection; -EPIPE: the connection failed as it was
 * written to.
 */
static int pipe_send(struct xrl_redis_pipe *p)
{
	struct xrl_limiter *l = p->l;
	__u64 rnow, mnow, calls = 0, decisions = 0;
	char now[48], us[32]; /* the batch's now as a RESP bulk string, "$N\r\nUS.NNN\r\n" */
	struct job *first = NULL;
	int n = 0;

	if (pipe_connect(p))
		return -EIO;
	rnow = l->clock ? atomic_load(l->clock) : redis_now_ns();
	mnow = lim_now(l);
	*put_bulk(now, us, (size_t)(put_us(us, rnow) - us)) = '\0';
	p->wlen = p->woff = 0;
	p->hs_n = p->hs_i = 0;
	if (p->fresh) {
		if (pipe_handshake(p))
			goto oom;
	} else if (p->reloaded) {
		if (wb_add(p, l->load_cmd, l->load_len))
			goto oom;
		p->hs[p->hs_n++] = HS_SKIP;
	}
	for (struct job *j = p->b; j; j = j->next) {
		if (j->st != J_PENDING)
			continue;
		decisions++;
		if (!first)
			first = j;
		if (++n == CALL_MAX) {
			if (wb_call(p, first, n, now, mnow))
				goto oom;
			calls++;
			first = NULL;
			n = 0;
		}
	}
	if (n) {
		if (wb_call(p, first, n, now, mnow))
			goto oom;
		calls++;
	}
	STAT_ADD(l, redis_round_trips, 1);
	STAT_ADD(l, redis_calls, calls);
	STAT_ADD(l, redis_decisions, decisions);
	p->cur = p->b;
	p->deadline = mnow + l->cfg.redis_timeout_ns;
	return pipe_write(p) ? -EPIPE : 0;
oom:
	p->why = "out of memory";
	return -EIO;
}

/*
 * The reply r to the call of the n pending jobs from j on: each job's
 * share of it (an error is every job's). Returns the job after the call.
 */
static struct job *call_reply(struct job *j, int n, redisReply *r)
{
	struct xrl_script_key keys[CALL_MAX * XRL_HTTP_MAX_MATCH];
	int nk[CALL_MAX] = { 0 }, sts[CALL_MAX], i, k = 0, rc, st = J_PENDING;
	struct job *x;

	for (x = j, i = 0; i < n; x = x->next)
		if (x->st == J_PENDING)
			nk[i++] = x->m;
	rc = xrl_script_reply(r, nk, n, sts, keys);
	if (rc == -ENOEXEC) {
		st = J_NOSCRIPT;
	} else if (rc == -EIO) {
		log_warnx("redis: %s", r->str);
		st = J_FAIL;
	} else if (rc) {
		log_warnx("redis: an answer of %zu elements to %d decisions, not the shape asked for",
			  r->type == REDIS_REPLY_ARRAY ? r->elements : 0, n);
		st = J_FAIL;
	}
	for (x = j, i = 0; i < n; x = x->next) {
		if (x->st != J_PENDING)
			continue;
		if (st != J_PENDING) {
			x->st = st;
		} else if (sts[i] == XRL_SCRIPT_BADKEY) {
			log_warnx("redis: a key of rule %s is not a string (WRONGTYPE): that decision "
				  "falls back", x->it[0].r->name);
			x->st = J_BADKEY;
			k += x->m;
		} else {
			/* TATs relative to the batch's now: on our monotonic clock */
			for (int q = 0; q < x->m; q++, k++) {
				x->it[q].ok = keys[k].ok;
				x->it[q].tat = keys[k].rel_ns ? x->mnow + keys[k].rel_ns : 0;
				x->it[q].new_tat = x->it[q].tat;
			}
			x->st = J_OK;
		}
		i++;
	}
	return x;
}

/* The batch is over: the breaker, the decisions, back to their callers. */
static void pipe_end(struct xrl_redis_pipe *p)
{
	struct xrl_limiter *l = p->l;
	struct job *b = p->b, *next;
	bool ok = true, skipped = false;
	__u64 now;

	for (struct job *j = b; j; j = j->next) {
		ok &= j->st == J_OK || j->st == J_BADKEY;
		skipped |= j->st == J_SKIP;
	}
	pthread_rwlock_rdlock(&l->cfg_mu);
	if (!skipped && !p->aborting)
		brk_result(l, ok, p->probe, p->t0, p->why);
	else if (p->probe)
		atomic_store(&l->brk_probe, 0); /* the probe is given up */
	now = lim_now(l);
	for (struct job *j = b; j; j = j->next)
		finish(l, j->it, j->m, j->st, now, j->d);
	pthread_rwlock_unlock(&l->cfg_mu);
	p->b = NULL;
	p->probe = false;
	for (struct job *j = b; j; j = next) {
		next = j->next;
		j->w.decided(j->w.arg); /* d is the caller's again */
		p->handed++;
		if (p->nfree < FREE_JOBS_MAX) {
			j->next = p->free;
			p->free = j;
			p->nfree++;
		} else {
			free(j);
		}
	}
}

/*
 * The connection failed (closed: Redis closed it, rather than a timeout
 * or an error answer). One that Redis closed while it was idle (a restart,
 * its client timeout) is not an outage: if nothing was answered on it, the
 * batch goes once more on a new one. Otherwise what is unanswered fails.
 */
static void pipe_fail(struct xrl_redis_pipe *p, bool closed, const char *why)
{
	if (why)
		p->why = why;
	pipe_drop(p);
	if (closed && p->reused && !p->answered && !p->retried) {
		int rc;

		p->retried = true;
		pthread_rwlock_rdlock(&p->l->cfg_mu);
		rc = pipe_send(p);
		pthread_rwlock_unlock(&p->l->cfg_mu);
		if (!rc)
			return;
		pipe_drop(p);
	}
	for (struct job *j = p->b; j; j = j->next)
		if (j->st == J_PENDING || j->st == J_NOSCRIPT)
			j->st = J_FAIL;
	pipe_end(p);
}

static void pipe_start(struct xrl_redis_pipe *p)
{
	struct xrl_limiter *l = p->l;
	int rc;

	p->b = p->q;
	p->q = p->q_tail = NULL;
	for (struct job *j = p->b; j; j = j->next)
		j->st = J_PENDING;
	p->t0 = lim_now(l);
	p->retried = p->reloaded = p->answered = false;
	p->why = NULL;
	pthread_rwlock_rdlock(&l->cfg_mu);
	if (!brk_allow(l, p->t0, &p->probe)) {
		pthread_rwlock_unlock(&l->cfg_mu);
		for (struct job *j = p->b; j; j = j->next)
			j->st = J_SKIP;
		pipe_end(p);
		return;
	}
	rc = pipe_send(p);
	pthread_rwlock_unlock(&l->cfg_mu);
	if (rc)
		pipe_fail(p, rc == -EPIPE, rc == -EPIPE ? "write" : NULL);
}

/* Replies that have arrived. */
static void pipe_read(struct xrl_redis_pipe *p)
{
	bool noscript = false, bad = false;

	if (redisBufferRead(p->c) != REDIS_OK) {
		int err = errno;

		snprintf(p->why_buf, sizeof(p->why_buf), "read: %.100s", p->c->errstr);
		pipe_fail(p, p->c->err == REDIS_ERR_EOF ||
			     (p->c->err == REDIS_ERR_IO && err != EAGAIN && err != EINTR), p->why_buf);
		return;
	}
	for (;;) {
		redisReply *r = NULL;

		if (redisGetReplyFromReader(p->c, (void **)&r) != REDIS_OK) {
			pipe_fail(p, false, "not the Redis protocol");
			return;
		}
		if (!r)
			break;
		xrl_reader_guard_reset(p->guard); /* a reply is whole: the next one's budget */
		if (p->hs_i < p->hs_n) {
			const char *why = hs_check(p, p->hs[p->hs_i++], r);

			freeReplyObject(r);
			if (why) {
				pipe_fail(p, false, why); /* not fit to decide: the breaker */
				return;
			}
			continue;
		}
		while (p->cur && p->cur->st != J_PENDING)
			p->cur = p->cur->next;
		if (!p->cur || p->cur->call_n <= 0) {
			freeReplyObject(r);
			pipe_fail(p, false, "an answer too many");
			return;
		}
		p->cur = call_reply(p->cur, p->cur->call_n, r);
		p->answered = true;
		freeReplyObject(r);
	}
	while (p->cur && p->cur->st != J_PENDING)
		p->cur = p->cur->next;
	if (p->cur || p->hs_i < p->hs_n)
		return; /* more to come */
	for (struct job *j = p->b; j; j = j->next) {
		noscript |= j->st == J_NOSCRIPT;
		bad |= j->st == J_FAIL;
	}
	if (noscript && !p->reloaded) {
		/* a flushed script cache: load it, and those once more */
		int rc;

		p->reloaded = true;
		for (struct job *j = p->b; j; j = j->next)
			if (j->st == J_NOSCRIPT)
				j->st = J_PENDING;
		pthread_rwlock_rdlock(&p->l->cfg_mu);
		rc = pipe_send(p);
		pthread_rwlock_unlock(&p->l->cfg_mu);
		if (rc)
			pipe_fail(p, false, rc == -EPIPE ? "write" : NULL);
		return;
	}
	for (struct job *j = p->b; j; j = j->next)
		if (j->st == J_NOSCRIPT)
			j->st = J_FAIL;
	if (noscript || bad) {
		p->why = noscript ? "NOSCRIPT after SCRIPT LOAD" : "an error answer";
		pipe_drop(p); /* Redis is not fit to decide */
	}
	pipe_end(p);
}

struct xrl_redis_pipe *xrl_limiter_pipe_new(struct xrl_limiter *l)
{
	struct xrl_redis_pipe *p = calloc(1, sizeof(*p));

	if (p)
		p->l = l;
	return p;
}

void xrl_limiter_pipe_abort(struct xrl_redis_pipe *p)
{
	struct job **tail = &p->b;

	/* the batch in flight and the queue, as one failed batch; not a
	 * failure of Redis: the breaker is left as it is */
	while (*tail)
		tail = &(*tail)->next;
	*tail = p->q;
	p->q = p->q_tail = NULL;
	pipe_drop(p);
	if (!p->b)
		return;
	for (struct job *j = p->b; j; j = j->next)
		if (j->st != J_OK)
			j->st = J_FAIL;
	p->aborting = true;
	pipe_end(p);
	p->aborting = false;
}

void xrl_limiter_pipe_free(struct xrl_redis_pipe *p)
{
	struct job *next;

	if (!p)
		return;
	xrl_limiter_pipe_abort(p);
	for (struct job *j = p->free; j; j = next) {
		next = j->next;
		free(j);
	}
	free(p->wb);
	free(p);
}

int xrl_limiter_pipe_poll(struct xrl_redis_pipe *p, short *events, __u64 *timeout_ns, __u32 *gen)
{
	*events = 0;
	*timeout_ns = UINT64_MAX;
	*gen = p->gen;
	if (!p->c)
		return -1;
	/* idle: POLLIN sees Redis close the connection (a restart) */
	*events = POLLIN;
	if (p->b) {
		__u64 now = lim_now(p->l);

		if (p->woff < p->wlen)
			*events |= POLLOUT;
		*timeout_ns = p->deadline > now ? p->deadline - now : 0;
	}
	return p->c->fd;
}

int xrl_limiter_pipe_run(struct xrl_redis_pipe *p, short revents)
{
	p->handed = 0;
	if (p->b) {
		if (p->woff < p->wlen && (revents & (POLLOUT | POLLERR | POLLHUP)) && pipe_write(p))
			pipe_fail(p, true, "write");
		if (p->b && (revents & (POLLIN | POLLERR | POLLHUP)))
			pipe_read(p);
		if (p->b && lim_now(p->l) >= p->deadline) {
			/* the replies may be in, unread: this thread was busy */
			if (!(revents & POLLIN) && p->woff == p->wlen)
				pipe_read(p);
			if (p->b && lim_now(p->l) >= p->deadline)
				pipe_fail(p, false, "timeout"); /* not once more */
		}
	} else if (p->c && (revents & (POLLIN | POLLERR | POLLHUP))) {
		char buf[64];
		ssize_t n = recv(p->c->fd, buf, sizeof(buf), MSG_DONTWAIT);

		/* idle: closed by Redis (or anything unasked for): let it go */
		if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			pipe_drop(p);
	}
	if (!p->b && p->q)
		pipe_start(p);
	return (int)p->handed;
}

bool xrl_limiter_pipe_busy(const struct xrl_redis_pipe *p)
{
	return p->b || p->q;
}

/* ---- public ---------------------------------------------------------------- */

int xrl_limiter_new(const struct xrl_http_cfg *c, struct xrl_limiter **out)
{
	struct xrl_limiter *l = calloc(1, sizeof(*l));
	__u32 cap = c->memory_max_keys ? c->memory_max_keys : 1000000;
	const char *argv[3] = { "SCRIPT", "LOAD", lua_gcra };
	size_t argl[3] = { 6, 4, sizeof(lua_gcra) - 1 };
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	int len;

	if (!l)
		return -ENOMEM;
	l->cfg = *c;
	l->auth = auth_tag(c);
	/* the bucket identities' key: unknown outside this process */
	if (getrandom(l->sip, sizeof(l->sip), 0) != sizeof(l->sip)) {
		int err = -errno;

		free(l);
		return err ? err : -EIO;
	}
	pthread_rwlock_init(&l->cfg_mu, NULL);
	pthread_mutex_init(&l->sync_mu, NULL);
	if (!EVP_Digest(lua_gcra, sizeof(lua_gcra) - 1, md, &mdlen, EVP_sha1(), NULL) || mdlen != 20) {
		free(l);
		return -EINVAL;
	}
	for (int i = 0; i < 20; i++)
		snprintf(l->sha + 2 * i, 3, "%02x", md[i]);
	len = redisFormatCommandArgv(&l->load_cmd, 3, argv, argl);
	if (len < 0) {
		free(l);
		return -ENOMEM;
	}
	l->load_len = (size_t)len;
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
	xrl_limiter_pipe_free(l->sync_pipe);
	redisFreeCommand(l->load_cmd);
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
	l->auth = auth_tag(c);
	pthread_rwlock_unlock(&l->cfg_mu);
}

void xrl_limiter_set_clock(struct xrl_limiter *l, const _Atomic __u64 *now_ns)
{
	l->clock = now_ns;
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

int xrl_limiter_decide_async(struct xrl_limiter *l, struct xrl_redis_pipe *p,
			     const struct xrl_http_rule *const *rules, const char *const *keys,
			     const __u32 *costs, int n, struct xrl_decision *d,
			     const struct xrl_limiter_wait *w)
{
	struct item it[XRL_HTTP_MAX_MATCH];
	const char *ik[XRL_HTTP_MAX_MATCH];
	struct job *j;
	int m = 0, rc;

	rc = prepare(l, rules, keys, costs, n, d, it, &m);
	if (rc != 1)
		return rc;
	j = p->free;
	if (j) {
		p->free = j->next;
		p->nfree--;
	} else {
		j = malloc(sizeof(*j));
	}
	if (!j) {
		/* no memory to queue it: as if Redis had failed (no breaker) */
		pthread_rwlock_rdlock(&l->cfg_mu);
		finish(l, it, m, J_FAIL, lim_now(l), d);
		pthread_rwlock_unlock(&l->cfg_mu);
		return 0;
	}
	for (int i = 0; i < m; i++) {
		ik[i] = it[i].key;
		it[i].key = NULL; /* the caller's: gone once we return */
	}
	memcpy(j->it, it, sizeof(it[0]) * (size_t)m);
	j->m = m;
	j->d = d;
	j->w = *w;
	j->st = J_PENDING;
	j->next = NULL;
	job_format(j, ik);
	if (w->queued)
		w->queued(w->arg);
	if (p->q_tail)
		p->q_tail->next = j;
	else
		p->q = j;
	p->q_tail = j;
	return 1;
}

static void sync_decided(void *arg)
{
	*(bool *)arg = true;
}

/* One decision at a time on the limiter's own pipe, driven by poll(). */
int xrl_limiter_decide(struct xrl_limiter *l, const struct xrl_http_rule *const *rules,
		       const char *const *keys, const __u32 *costs, int n, struct xrl_decision *d)
{
	bool done = false;
	struct xrl_limiter_wait w = { .decided = sync_decided, .arg = &done };
	struct xrl_redis_pipe *p;
	int rc;

	pthread_mutex_lock(&l->sync_mu);
	if (!l->sync_pipe)
		l->sync_pipe = xrl_limiter_pipe_new(l);
	p = l->sync_pipe;
	if (!p) {
		pthread_mutex_unlock(&l->sync_mu);
		return -ENOMEM;
	}
	rc = xrl_limiter_decide_async(l, p, rules, keys, costs, n, d, &w);
	if (rc == 1) {
		xrl_limiter_pipe_run(p, 0);
		while (!done) {
			struct pollfd pfd = { .fd = -1 };
			__u64 left;
			__u32 gen;
			int ms;

			pfd.fd = xrl_limiter_pipe_poll(p, &pfd.events, &left, &gen);
			if (pfd.fd < 0) {
				xrl_limiter_pipe_abort(p); /* nothing to wait for */
				break;
			}
			ms = left == UINT64_MAX ? -1 : (int)((left + 999999) / 1000000);
			if (poll(&pfd, 1, ms) < 0 && errno != EINTR)
				pfd.revents = POLLERR;
			xrl_limiter_pipe_run(p, pfd.revents);
		}
		rc = 0;
	}
	pthread_mutex_unlock(&l->sync_mu);
	return rc;
}
