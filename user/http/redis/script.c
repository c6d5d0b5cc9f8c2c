// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * script.c - the Redis side of a decision: the script (gcra.lua,
 * embedded at build time), the keys and arguments a decision sends it in
 * RESP, and the walk of its reply.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include "redis_int.h"

/*
 * gcra.lua: decisions, in order, each over several buckets: all admit or none is
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
 * not refuse the request) and inc (cost x emit; negative: a post-paid
 * charge, never refused, the TAT capped at now + tau). Comparisons allow half a
 * ns of rounding. A stored TAT without decimals is one an older xrl wrote,
 * in whole us since 1970: it is moved to the 2024 epoch. A stored TAT
 * beyond now + tau (written by an instance whose clock is ahead) counts as
 * now + tau, a drained bucket, and is written back so: never more than a
 * burst of debt.
 * Concurrency slots (a decision's count "M/C": M buckets, then C slot
 * sets "xrl:{RULE:KEY}:c" in KEYS, each with three arguments: the limit,
 * negative for a shadow rule; lease_ttl in us; the lease's member, its
 * nonce in hex). A set is a sorted set of leases scored by when they run
 * out (us, the script's epoch): ZREMRANGEBYSCORE drops the run-out ones,
 * ZCARD counts the rest, and only when every set has room and every bucket
 * admits is the lease added (ZADD) and the set's expiry pushed to the
 * lease's (PEXPIRE): slots before buckets, all or nothing, in one call, so
 * a refusal has nothing to give back. Per set the reply has its flag ("A"
 * taken, "a" room but not taken, "R" full, "E" not a sorted set) followed
 * by the leases it held, and the time until its earliest runs out (us, for
 * Retry-After). A release (count "rN") of N leases: per lease its set and
 * its bucket in KEYS, and the member, the rule's tau and the post-paid
 * cost x emit: ZREM, and if the lease was held, the cost charged to the
 * bucket with the arithmetic below but never refused (at most a drained
 * bucket: TAT <= now + tau). Reply { 0, per lease "A"/"R" (held), "0",
 * "A"/"R" (charged) and the TAT }.
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
#include "gcra.lua.h"

/* ns since REDIS_EPOCH_S on CLOCK_REALTIME */
__u64 xrl_redis_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	if ((__u64)ts.tv_sec < REDIS_EPOCH_S)
		return 0;
	return ((__u64)ts.tv_sec - REDIS_EPOCH_S) * XRL_NSEC_PER_SEC + (__u64)ts.tv_nsec;
}

/* ns as microseconds with three decimals: "1234.567" */
char *xrl_redis_put_us(char *p, __u64 ns)
{
	p = xrl_put_u64(p, ns / 1000);
	*p++ = '.';
	*p++ = (char)('0' + ns % 1000 / 100);
	*p++ = (char)('0' + ns % 100 / 10);
	*p++ = (char)('0' + ns % 10);
	return p;
}

/* A RESP bulk string. */
char *xrl_redis_put_bulk(char *p, const char *s, size_t n)
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
__u64 xrl_redis_parse_us(const char *s)
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

/*
 * The name of key in Redis after "xrl:{RULE:": the key itself up to
 * XRL_REDIS_KEY_LITERAL bytes (readable with redis-cli), or else '#' and
 * the hex of its SHA-256, shared by every instance and collision-resistant.
 * A key that starts with '#' is always digested, so no literal key can be
 * taken for another's digest. Returns the length at out.
 */
size_t xrl_redis_key_name(const char *key, char out[XRL_REDIS_KEY_LITERAL])
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

/* "$N\r\nxrl:{RULE:KN}SFX\r\n": a hash tag, so a key's bucket and slots map to one slot */
static char *put_key(char *p, const char *rule, const char *kn, size_t kl, const char *sfx)
{
	size_t nl = strlen(rule), sl = strlen(sfx);

	*p++ = '$';
	p = xrl_put_u64(p, 7 + nl + kl + sl);
	memcpy(p, "\r\nxrl:{", 7);
	p += 7;
	memcpy(p, rule, nl);
	p += nl;
	*p++ = ':';
	memcpy(p, kn, kl);
	p += kl;
	*p++ = '}';
	memcpy(p, sfx, sl);
	p += sl;
	memcpy(p, "\r\n", 2);
	return p + 2;
}

static char *put_us_bulk(char *p, __u64 ns, bool neg)
{
	char num[32], *e = num;

	if (neg)
		*e++ = '-';
	e = xrl_redis_put_us(e, ns);
	return xrl_redis_put_bulk(p, num, (size_t)(e - num));
}

/*
 * j's keys and arguments, keys from the caller: its buckets (tau, inc),
 * then its slot sets "xrl:{RULE:KEY}:c" (limit, negative for a shadow
 * rule; lease_ttl in us; the lease's nonce, the set's member).
 */
void xrl_redis_job_format(struct xrl_redis_job *j, const char *const *keys)
{
	char *p = j->kb, kn[XRL_REDIS_KEY_LITERAL], num[24], *e;

	for (int i = 0; i < j->m; i++) {
		const struct xrl_http_rule *r = j->it[i].r;

		p = put_key(p, r->name, kn, xrl_redis_key_name(keys[i], kn), "");
	}
	for (int i = 0; i < j->nc; i++)
		p = put_key(p, j->ci[i].r->name, j->ci[i].kn, j->ci[i].knl, ":c");
	j->klen = (size_t)(p - j->kb);
	p = j->ab;
	for (int i = 0; i < j->m; i++) {
		p = put_us_bulk(p, j->it[i].g.tau_ns, j->it[i].r->shadow);
		p = put_us_bulk(p, j->it[i].inc, j->it[i].post);
	}
	for (int i = 0; i < j->nc; i++) {
		const struct xrl_http_rule *r = j->ci[i].r;

		e = num;
		if (r->shadow)
			*e++ = '-';
		e = xrl_put_u64(e, r->concurrency);
		p = xrl_redis_put_bulk(p, num, (size_t)(e - num));
		e = xrl_put_u64(num, r->lease_ttl_ns / 1000);
		p = xrl_redis_put_bulk(p, num, (size_t)(e - num));
		for (int b = 15; b >= 0; b--)
			num[15 - b] = "0123456789abcdef"[(j->ci[i].nonce >> (4 * b)) & 15];
		p = xrl_redis_put_bulk(p, num, 16);
	}
	j->alen = (size_t)(p - j->ab);
}

/*
 * A release of j's nc leases, their rules' names from the caller: per
 * lease its set and its bucket (keys), the lease's member, the rule's tau
 * and the post-paid cost x emit (0: no charge). The script's count for it
 * is "rN" (wb_call).
 */
void xrl_redis_release_format(struct xrl_redis_job *j, const char *const *rules)
{
	char *p = j->kb, num[24];

	for (int i = 0; i < j->nc; i++) {
		p = put_key(p, rules[i], j->ci[i].kn, j->ci[i].knl, ":c");
		p = put_key(p, rules[i], j->ci[i].kn, j->ci[i].knl, "");
	}
	j->klen = (size_t)(p - j->kb);
	p = j->ab;
	for (int i = 0; i < j->nc; i++) {
		for (int b = 15; b >= 0; b--)
			num[15 - b] = "0123456789abcdef"[(j->ci[i].nonce >> (4 * b)) & 15];
		p = xrl_redis_put_bulk(p, num, 16);
		p = put_us_bulk(p, j->ci[i].tau, false);
		p = put_us_bulk(p, j->ci[i].inc, false);
	}
	j->alen = (size_t)(p - j->ab);
}

/*
 * The walk of one script call's reply (see xrl_lua_gcra): n decisions, decision
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

			/* 'A' admitted, 'a' would admit (another rule refused), 'R';
			 * a slot set's flag is followed by the leases it held */
			keys[k].ok = str && (f->str[0] == 'A' || f->str[0] == 'a');
			keys[k].taken = str && f->str[0] == 'A';
			keys[k].held = 0;
			for (size_t c = 1; str && c < f->len && c < 8; c++)
				if (f->str[c] >= '0' && f->str[c] <= '9')
					keys[k].held = keys[k].held * 10 + (__u32)(f->str[c] - '0');
			keys[k].rel_ns = t->type == REDIS_REPLY_STRING ? xrl_redis_parse_us(t->str)
								       : 0;
		}
	}
	return 0;
}

/* Breaker: may we call Redis now? One probe at a time once the cooldown is over. */

/*
 * Refund a decision's part: KEYS its buckets, ARGV[1] now (us since the
 * 2024 epoch, as gcra.lua), ARGV[1+k] what the part added to key k (us).
 * The TAT moves back by that much; one in the past is a full bucket,
 * deleted. Another instance's admissions since stay counted: GCRA adds.
 */
const char xrl_lua_refund[] =
	"local function split(v)\n"
	"  local d = string.find(v, '.', 1, true)\n"
	"  if not d then return tonumber(v) or 0, 0 end\n"
	"  return tonumber(string.sub(v, 1, d - 1)) or 0, tonumber(string.sub(v, d)) or 0\n"
	"end\n"
	"local ni, nf = split(ARGV[1])\n"
	"for k = 1, #KEYS do\n"
	"  local v = redis.pcall('GET', KEYS[k])\n"
	"  if type(v) == 'string' then\n"
	"    local ti, tf = split(v)\n"
	"    local r = (ti - ni) + (tf - nf) - tonumber(ARGV[1 + k])\n"
	"    if r <= 0.0005 then redis.call('DEL', KEYS[k]) else\n"
	"      local x = nf + r\n"
	"      local xi = math.floor(x)\n"
	"      local f = math.floor((x - xi) * 1000 + 0.5)\n"
	"      if f >= 1000 then xi = xi + 1; f = f - 1000 end\n"
	"      redis.call('SET', KEYS[k], string.format('%.0f.%03d', ni + xi, f), 'PX',\n"
	"                 math.ceil(r / 1000) + 1)\n"
	"    end\n"
	"  end\n"
	"end\n"
	"return #KEYS\n";
