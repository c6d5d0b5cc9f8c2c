// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * redis_lease.c - giving a concurrency slot back in Redis (lease.lua): the
 * lease leaves its set "xrl:{RULE:KEY}:c" (ZREM) and a post-paid cost is
 * charged to the key's bucket "xrl:{RULE:KEY}" with gcra.lua's arithmetic,
 * in one script, so the next decision on any instance sees it.
 *
 * The slot itself is taken by gcra.lua, in the same call as the request's
 * rate decision (one round trip, all or nothing). A release is answered
 * while its HTTP request waits (POST /v1/release is not deferred like a
 * decision): one blocking connection per limiter, under a mutex, with the
 * Redis timeout on every read and write. Known limit: releases of all
 * server threads queue on that connection (one round trip each, about 50
 * us on a loopback). While the breaker is open no release is tried: the
 * slot waits out its lease_ttl (docs/policy.md).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include "limiter_int.h"
#include "log.h"

static void rel_drop(struct xrl_limiter *l)
{
	if (l->rel_c)
		redisFree(l->rel_c);
	l->rel_c = NULL;
}

/* A command that must answer +OK (AUTH, SELECT): 0 or -EIO. */
static int rel_ok(redisContext *c, int argc, const char **argv)
{
	redisReply *r = redisCommandArgv(c, argc, argv, NULL);
	int rc = r && r->type == REDIS_REPLY_STATUS ? 0 : -EIO;

	if (r)
		freeReplyObject(r);
	return rc;
}

/* The release connection (rel_mu and cfg_mu held): open, or -EIO. */
static int rel_connect(struct xrl_limiter *l)
{
	const struct xrl_http_cfg *c = &l->cfg;
	struct timeval tv = { .tv_sec = (time_t)(c->redis_timeout_ns / XRL_NSEC_PER_SEC),
			      .tv_usec = (suseconds_t)(c->redis_timeout_ns % XRL_NSEC_PER_SEC /
						       1000) };
	char db[16];

	if (l->rel_c)
		return 0;
	l->rel_c = redisConnectWithTimeout(c->redis_host, c->redis_port, tv);
	if (!l->rel_c || l->rel_c->err || redisSetTimeout(l->rel_c, tv) != REDIS_OK) {
		log_warnx("couldn't connect to redis %s:%d for a release: %s", c->redis_host,
			  c->redis_port, l->rel_c ? l->rel_c->errstr : "out of memory");
		rel_drop(l);
		return -EIO;
	}
	snprintf(db, sizeof(db), "%d", c->redis_db);
	if ((c->redis_pass[0] &&
	     rel_ok(l->rel_c, c->redis_user[0] ? 3 : 2,
		    c->redis_user[0] ? (const char *[]){ "AUTH", c->redis_user, c->redis_pass }
				     : (const char *[]){ "AUTH", c->redis_pass })) ||
	    (c->redis_db && rel_ok(l->rel_c, 2, (const char *[]){ "SELECT", db }))) {
		log_warnx(
			"couldn't prepare the redis connection for releases: AUTH or SELECT refused");
		rel_drop(l);
		return -EIO;
	}
	return 0;
}

/* "xrl:{RULE:KN}" and sfx into out; its length. */
static size_t rel_key(char *out, const char *rule, const char *kn, size_t knl, const char *sfx)
{
	size_t n = (size_t)snprintf(out, 8 + XRL_RULE_NAME_LEN, "xrl:{%s:", rule);

	memcpy(out + n, kn, knl);
	n += knl;
	out[n++] = '}';
	memcpy(out + n, sfx, strlen(sfx));
	return n + strlen(sfx);
}

/*
 * Give back lease nonce of (rule, key name kn) in Redis, and charge cost to
 * rule r's bucket of that key when it was held (r NULL or without a rate:
 * no charge). 1 when it was held, 0 when not, -EIO when Redis failed or
 * the breaker is open (cfg_mu held).
 */
int xrl_redis_lease_release(struct xrl_limiter *l, const char *rule, const char *kn, size_t knl,
			    __u64 nonce, const struct xrl_http_rule *r, __u32 cost, bool *charged)
{
	char ck[XRL_RULE_NAME_LEN + XRL_REDIS_KEY_LITERAL + 16], rk[sizeof(ck)], member[17];
	char now[32], tau[32], inc[32];
	const char *argv[9] = { "EVALSHA", l->rel_sha, "2", ck, rk, member, now, tau, inc };
	size_t argl[9] = { 7, 40, 1 };
	bool rate = r && r->has_rate && cost;
	redisReply *rep = NULL;
	int rc = -EIO;

	*charged = false;
	if (atomic_load(&l->brk_state) != BRK_CLOSED)
		return -EIO; /* the breaker: no release waits out a dead Redis */
	argl[3] = rel_key(ck, rule, kn, knl, ":c");
	argl[4] = rel_key(rk, rule, kn, knl, "");
	for (int b = 15; b >= 0; b--)
		member[15 - b] = "0123456789abcdef"[(nonce >> (4 * b)) & 15];
	argl[5] = 16;
	argl[6] = (size_t)(xrl_redis_put_us(now, l->clock ? lim_now(l) : xrl_redis_now_ns()) - now);
	argl[7] = (size_t)(xrl_redis_put_us(tau, rate ? r->g.tau_ns : 0) - tau);
	argl[8] = (size_t)(xrl_redis_put_us(inc, rate ? (__u64)cost * r->g.emit_ns : 0) - inc);
	pthread_mutex_lock(&l->rel_mu);
	if (!rel_connect(l)) {
		rep = redisCommandArgv(l->rel_c, 9, argv, argl);
		if (rep && rep->type == REDIS_REPLY_ERROR && !strncmp(rep->str, "NOSCRIPT", 8)) {
			freeReplyObject(rep);
			argv[0] = "EVAL";
			argv[1] = xrl_lua_lease;
			argl[0] = 4;
			argl[1] = xrl_lua_lease_len;
			rep = redisCommandArgv(l->rel_c, 9, argv, argl);
		}
		if (!rep)
			rel_drop(l);
	}
	pthread_mutex_unlock(&l->rel_mu);
	if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
	    rep->element[0]->type == REDIS_REPLY_INTEGER) {
		rc = rep->element[0]->integer > 0;
		*charged = rep->element[1]->type == REDIS_REPLY_INTEGER && rep->element[1]->integer;
	} else {
		log_warnx("couldn't release a lease of rule %s in redis: %s", rule,
			  rep && rep->type == REDIS_REPLY_ERROR ? rep->str : "no answer");
	}
	if (rep)
		freeReplyObject(rep);
	return rc;
}

void xrl_redis_lease_free(struct xrl_limiter *l)
{
	rel_drop(l);
}
