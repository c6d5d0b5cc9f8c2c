// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * admin.c - the identity tier's side of xrlctl (admin.h): status, stats,
 * `top --http`, shadow mode of HTTP rules, and per-key overrides with their
 * sharing through Redis.
 *
 * Overrides and Redis: when the backend is Redis, the overrides live in
 * one hash, xrl:overrides, field "RULE:KEY" (rule names have no ':'), value
 * "TOKENS PERIOD_NS BURST UNTIL_MS" (UNTIL_MS wall-clock, so hosts agree
 * on it). The hash expires with its longest-lived entry; a reader skips
 * entries past their time. `xrlctl override` on one instance writes the
 * hash (and its own table at once); every instance reads the whole hash
 * every XRL_OVR_REFRESH_MS on a thread of its own and replaces its table
 * with it, so a decision never waits for Redis because of overrides, and
 * another instance follows within that time. Redis down: the table stays
 * as last read (and entries still expire), and a change through xrlctl
 * fails with the reason, changing nothing.
 *
 * Whoever can write Redis writes the hash too: an entry read that ends
 * more than XRL_OVR_TTL_MAX_MS ahead is held to that (counted), and a hash
 * of more than OVR_FIELDS_MAX fields is still read, by HSCAN steps, up to
 * OVR_SCAN_MAX fields a refresh: what fits (XRL_OVR_MAX in force) is
 * applied, and the hash's size is said and counted, while later changes
 * still come through.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "config.h"
#include "http/fleet/cluster_master.h"
#include "http/fleet/fleet.h"
#include "admin.h"
#include "log.h"
#include "http/redis/slots.h"
#include "server_int.h"
#include "util.h"

#define OVR_KEY "xrl:overrides"

/*
 * Fields of the hash read at most: a hash filled by anyone who can write
 * to Redis is not read (the last overrides read stay in force) rather than
 * allocated whole every XRL_OVR_REFRESH_MS.
 */
#define OVR_FIELDS_MAX (16 * XRL_OVR_MAX)
#define OVR_SCAN_MAX   (4 * OVR_FIELDS_MAX) /* fields visited per refresh, at most */
#define OVR_SCAN_COUNT 1000		    /* HSCAN COUNT */

/* HSET the entry, and the hash's expiry no earlier than the entry's. The
 * fields that ran out by ARGV[4] (ms) go: the hash's expiry moves on with
 * each new entry, so without this it kept every override ever set, and
 * past XRL_OVR_MAX of them the ones in force were no longer read. */
static const char ovr_lua[] = "local a = redis.call('HGETALL', KEYS[1])\n"
			      "for i = 1, #a, 2 do\n"
			      "  local u = tonumber(string.match(a[i + 1], '(%d+)$'))\n"
			      "  if u and u <= tonumber(ARGV[4]) then\n"
			      "    redis.call('HDEL', KEYS[1], a[i])\n"
			      "  end\n"
			      "end\n"
			      "redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])\n"
			      "local t = redis.call('PTTL', KEYS[1])\n"
			      "if t < tonumber(ARGV[3]) then\n"
			      "  redis.call('PEXPIRE', KEYS[1], ARGV[3])\n"
			      "end\n"
			      "return 1\n";

struct xrl_ovr_sync {
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	bool warned; /* a failure was logged; the next success says so */
	bool over;   /* the hash was over OVR_FIELDS_MAX at the last read */
	_Atomic __u64 n_over;	/* refreshes that found the hash over */
	_Atomic __u64 n_capped; /* entries read whose end was held to the max */
};

/* What a Redis connection needs, copied out of the configuration in force. */
struct ovr_redis {
	bool on;
	char host[128];
	int port, db;
	char user[64], pass[256];
	__u64 timeout_ns;
	bool cluster;	 /* redis-cluster://: the master of OVR_KEY's slot */
	char seeds[512]; /* its seeds */
};

static struct ovr_redis redis_of(struct xrl_http_server *s)
{
	struct ovr_redis r = {};
	const struct xrl_http_cfg *c;

	pthread_rwlock_rdlock(&s->mu);
	c = &s->cfg->c;
	r.on = c->redis;
	snprintf(r.host, sizeof(r.host), "%s", c->redis_host);
	r.port = c->redis_port;
	r.db = c->redis_db;
	snprintf(r.user, sizeof(r.user), "%s", c->redis_user);
	snprintf(r.pass, sizeof(r.pass), "%s", c->redis_pass);
	r.timeout_ns = c->redis_timeout_ns ? c->redis_timeout_ns : 50000000;
	r.cluster = c->redis_cluster;
	snprintf(r.seeds, sizeof(r.seeds), "%s", c->redis_seeds);
	pthread_rwlock_unlock(&s->mu);
	return r;
}

/* One command's reply, an error reply as -EIO with its text in err. */
static redisReply *command(redisContext *c, char *err, size_t errlen, const char *fmt, ...)
{
	redisReply *rep;
	va_list ap;

	va_start(ap, fmt);
	rep = redisvCommand(c, fmt, ap);
	va_end(ap);
	if (!rep) {
		snprintf(err, errlen, "%s", c->errstr[0] ? c->errstr : "no answer");
		return NULL;
	}
	if (rep->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "%.120s", rep->str);
		freeReplyObject(rep);
		return NULL;
	}
	return rep;
}

/*
 * On a cluster, the master of OVR_KEY's slot, from the seeds' map, read
 * afresh at each connect: a failover or a reshard ends the connection
 * (an error, or MOVED), and the next connect finds the new master.
 */
static int ovr_owner(struct ovr_redis *r, char *err, size_t errlen)
{
	struct xrl_fleet_cfg fc = { .redis_cluster = true };
	struct xrl_node_addr a;
	int rc;

	snprintf(fc.redis_seeds, sizeof(fc.redis_seeds), "%s", r->seeds);
	snprintf(fc.redis_user, sizeof(fc.redis_user), "%s", r->user);
	snprintf(fc.redis_pass, sizeof(fc.redis_pass), "%s", r->pass);
	/* as one command would be: redis_timeout a seed, for connect and ask */
	rc = xrl_fleet_cluster_owner_to(&fc, OVR_KEY, &a, r->timeout_ns / 1000,
					r->timeout_ns / 1000);
	explicit_bzero(fc.redis_pass, sizeof(fc.redis_pass));
	if (rc == -EACCES) {
		snprintf(err, errlen, "the cluster's seeds (%.200s) refused AUTH", r->seeds);
		return rc;
	}
	if (rc) {
		snprintf(err, errlen, "no seed of the cluster (%.200s) named the master of %s's slot",
			 r->seeds, OVR_KEY);
		return rc;
	}
	snprintf(r->host, sizeof(r->host), "%s", a.host);
	r->port = a.port;
	return 0;
}

/* A blocking connection with AUTH and SELECT done; NULL with err. The
 * password is never in err (only Redis's answer to AUTH is). */
static redisContext *ovr_connect_auth(struct ovr_redis *r, char *err, size_t errlen)
{
	struct timeval tv = { .tv_sec = (time_t)(r->timeout_ns / 1000000000),
			      .tv_usec = (suseconds_t)(r->timeout_ns % 1000000000 / 1000) };
	redisContext *c;
	redisReply *rep = NULL;

	if (r->cluster && ovr_owner(r, err, errlen))
		return NULL;
	c = redisConnectWithTimeout(r->host, r->port, tv);
	if (!c || c->err) {
		snprintf(err, errlen, "couldn't connect to Redis at %s:%d: %s", r->host, r->port,
			 c ? c->errstr : "out of memory");
		redisFree(c);
		return NULL;
	}
	redisSetTimeout(c, tv);
	if (r->pass[0]) {
		char e[160] = "";

		rep = r->user[0] ? command(c, e, sizeof(e), "AUTH %s %s", r->user, r->pass)
				 : command(c, e, sizeof(e), "AUTH %s", r->pass);
		if (!rep) {
			snprintf(err, errlen, "Redis refused AUTH: %s", e);
			redisFree(c);
			return NULL;
		}
		freeReplyObject(rep);
	}
	if (r->db) {
		char e[160] = "";

		rep = command(c, e, sizeof(e), "SELECT %d", r->db);
		if (!rep) {
			snprintf(err, errlen, "Redis refused SELECT %d: %s", r->db, e);
			redisFree(c);
			return NULL;
		}
		freeReplyObject(rep);
	}
	return c;
}

/* A connection for the overrides; r's copy of the password is wiped,
 * whatever the outcome (r is a caller's copy, made for this one connect). */
static redisContext *ovr_connect(struct ovr_redis *r, char *err, size_t errlen)
{
	redisContext *c = ovr_connect_auth(r, err, errlen);

	explicit_bzero(r->pass, sizeof(r->pass));
	return c;
}

/* "RULE:KEY" and "TOKENS PERIOD_NS BURST UNTIL_MS" into e; false: not that. */
static bool ovr_parse(const redisReply *f, const redisReply *v, struct xrl_ovr *e)
{
	const char *colon;
	unsigned long long tok, per, until;
	unsigned burst;
	size_t rl, kl;
	int used = 0;

	if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
		return false;
	colon = memchr(f->str, ':', f->len);
	if (!colon)
		return false;
	rl = (size_t)(colon - f->str);
	kl = f->len - rl - 1;
	if (!rl || rl >= sizeof(e->rule) || !kl || kl >= sizeof(e->key) ||
	    memchr(colon + 1, '\0', kl))
		return false;
	memset(e, 0, sizeof(*e));
	memcpy(e->rule, f->str, rl);
	memcpy(e->key, colon + 1, kl);
	if (sscanf(v->str, "%llu %llu %u %llu%n", &tok, &per, &burst, &until, &used) != 4 ||
	    (size_t)used != v->len)
		return false;
	e->rate = (struct xrl_rate){ tok, per };
	e->burst = burst;
	e->until_ms = until;
	return true;
}

/* The whole hash into the limiter's table; -errno with err. Bounded: HSCAN
 * steps of OVR_SCAN_COUNT, OVR_SCAN_MAX fields visited at most. */
static int ovr_refresh(struct xrl_http_server *s, redisContext *c, char *err, size_t errlen)
{
	struct xrl_ovr_sync *y = s->ovr_sync;
	struct xrl_ovr *e;
	redisReply *rep = command(c, err, errlen, "HLEN %s", OVR_KEY);
	__u64 now = xrl_ovr_now_ms(), capped = 0;
	long long len = 0;
	char cursor[32] = "0";
	size_t seen = 0;
	int n = 0, rc = 0;

	if (!rep)
		return -EIO;
	if (rep->type == REDIS_REPLY_INTEGER)
		len = rep->integer;
	freeReplyObject(rep);
	e = calloc(XRL_OVR_MAX, sizeof(*e));
	if (!e)
		return -ENOMEM;
	do {
		redisReply *a;

		rep = command(c, err, errlen, "HSCAN %s %s COUNT %d", OVR_KEY, cursor,
			      OVR_SCAN_COUNT);
		if (!rep) {
			rc = -EIO;
			break;
		}
		if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
		    rep->element[0]->type != REDIS_REPLY_STRING ||
		    rep->element[1]->type != REDIS_REPLY_ARRAY) {
			snprintf(err, errlen, "HSCAN %s: not a hash", OVR_KEY);
			freeReplyObject(rep);
			rc = -EBADMSG;
			break;
		}
		snprintf(cursor, sizeof(cursor), "%.*s", (int)rep->element[0]->len,
			 rep->element[0]->str);
		a = rep->element[1];
		for (size_t i = 0; i + 1 < a->elements && n < XRL_OVR_MAX; i += 2) {
			if (!ovr_parse(a->element[i], a->element[i + 1], &e[n]) ||
			    e[n].until_ms <= now)
				continue; /* the ones in force: expired ones took the room before */
			if (e[n].until_ms > now + XRL_OVR_TTL_MAX_MS) {
				e[n].until_ms = now + XRL_OVR_TTL_MAX_MS;
				capped++;
			}
			n++;
		}
		seen += a->elements / 2;
		freeReplyObject(rep);
	} while (strcmp(cursor, "0") && seen < OVR_SCAN_MAX);
	if (!rc)
		xrl_limiter_override_replace(s->lim, e, n);
	free(e);
	if (capped && y)
		atomic_fetch_add(&y->n_capped, capped);
	if (y && len > OVR_FIELDS_MAX) {
		atomic_fetch_add(&y->n_over, 1);
		if (!y->over)
			log_warnx("http: %s holds %lld fields, more than %d: %d overrides in force "
				  "applied from the first %zu read (xrl_http_overrides_over_total)",
				  OVR_KEY, len, OVR_FIELDS_MAX, n, seen);
	} else if (y && y->over) {
		log_info("http: %s holds %lld fields again", OVR_KEY, len);
	}
	if (y)
		y->over = len > OVR_FIELDS_MAX;
	return rc;
}

void xrl_srv_ovr_metrics(struct xrl_http_server *s, struct xrl_buf *b)
{
	struct xrl_ovr_sync *y = s->ovr_sync;

	if (!y)
		return;
	xrl_prom_family(b, "xrl_http_overrides_over_total", "counter",
			"Reads of the overrides hash that found more than 8192 fields (what fits "
			"is applied)");
	xrl_buf_printf(b, "xrl_http_overrides_over_total %llu\n",
		       (unsigned long long)atomic_load(&y->n_over));
	xrl_prom_family(b, "xrl_http_overrides_capped_total", "counter",
			"Overrides read from Redis ending more than 30 days ahead, held to that");
	xrl_buf_printf(b, "xrl_http_overrides_capped_total %llu\n",
		       (unsigned long long)atomic_load(&y->n_capped));
}

/* Sleep XRL_OVR_REFRESH_MS, or until stopped: false once stopped. */
static bool sync_wait(struct xrl_ovr_sync *y)
{
	struct timespec ts;
	bool stop;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += (long)XRL_OVR_REFRESH_MS * 1000000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	pthread_mutex_lock(&y->mu);
	if (!y->stop)
		pthread_cond_timedwait(&y->cv, &y->mu, &ts);
	stop = y->stop;
	pthread_mutex_unlock(&y->mu);
	return !stop;
}

static void *sync_main(void *arg)
{
	struct xrl_http_server *s = arg;
	struct xrl_ovr_sync *y = s->ovr_sync;
	redisContext *c = NULL;
	char err[256];

	while (sync_wait(y)) {
		struct ovr_redis r = redis_of(s);

		if (!r.on) {
			redisFree(c);
			c = NULL;
			continue;
		}
		err[0] = '\0';
		if (!c)
			c = ovr_connect(&r, err, sizeof(err));
		explicit_bzero(r.pass, sizeof(r.pass)); /* connected or not: not kept */
		if (c && ovr_refresh(s, c, err, sizeof(err))) {
			redisFree(c);
			c = NULL;
		}
		if (!c && !y->warned) {
			log_warnx("http: couldn't read the overrides from Redis: %s (the last ones "
				  "read stay in force)",
				  err);
			y->warned = true;
		} else if (c && y->warned) {
			log_info("http: reading the overrides from Redis again");
			y->warned = false;
		}
	}
	redisFree(c);
	return NULL;
}

int xrl_srv_ovr_sync_start(struct xrl_http_server *s)
{
	struct xrl_ovr_sync *y = calloc(1, sizeof(*y));
	pthread_condattr_t ca;

	if (!y)
		return -ENOMEM;
	pthread_mutex_init(&y->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&y->cv, &ca);
	pthread_condattr_destroy(&ca);
	s->ovr_sync = y;
	if (pthread_create(&y->thr, NULL, sync_main, s)) {
		s->ovr_sync = NULL;
		free(y);
		return -EAGAIN;
	}
	return 0;
}

void xrl_srv_ovr_sync_stop(struct xrl_http_server *s)
{
	struct xrl_ovr_sync *y = s->ovr_sync;

	if (!y)
		return;
	xrl_thread_stop(&y->mu, &y->cv, &y->stop, y->thr);
	pthread_cond_destroy(&y->cv);
	pthread_mutex_destroy(&y->mu);
	free(y);
	s->ovr_sync = NULL;
}

/* ---- shadow --------------------------------------------------------------- */

static int rule_index(const struct xrl_http_cfg *c, const char *rule)
{
	for (__u32 i = 0; i < c->n_rules; i++)
		if (!strcmp(c->rules[i].name, rule))
			return (int)i;
	return -1;
}

bool xrl_http_has_rule(struct xrl_http_server *s, const char *rule)
{
	bool has;

	pthread_rwlock_rdlock(&s->mu);
	has = rule_index(&s->cfg->c, rule) >= 0;
	pthread_rwlock_unlock(&s->mu);
	return has;
}

/*
 * A new configuration like the one in force but for the rule's shadow
 * flag, swapped in as a reload does (requests waiting for Redis keep the
 * old one), without a reset of the counters: the rules are the same.
 */
int xrl_http_shadow(struct xrl_http_server *s, const char *rule, bool on, char *err, size_t errlen)
{
	struct xrl_srv_cfg *n = calloc(1, sizeof(*n));
	int k;

	if (!n)
		return snprintf(err, errlen, "couldn't set shadow mode: %s", strerror(ENOMEM)),
		       -ENOMEM;
	pthread_rwlock_wrlock(&s->mu);
	if (rule_index(&s->cfg->c, rule) < 0) {
		pthread_rwlock_unlock(&s->mu);
		free(n);
		snprintf(err, errlen, "no http rule named '%s'", rule);
		return -ENOENT;
	}
	for (k = 0; k < s->n_shadow && strcmp(s->shadow_name[k], rule); k++)
		;
	if (k == s->n_shadow) {
		snprintf(s->shadow_name[k], sizeof(s->shadow_name[k]), "%s", rule);
		s->n_shadow++; /* at most one per rule name of the policy: bounded */
	}
	s->shadow_on[k] = on;
	n->c = s->cfg->c;
	xrl_srv_cfg_swap(s, n);
	pthread_rwlock_unlock(&s->mu);
	return 0;
}

/* ---- status and stats ----------------------------------------------------- */

json_t *xrl_http_status_json(struct xrl_http_server *s)
{
	static const char *const brk[] = { "closed", "open", "half-open" };
	struct xrl_ovr *o = calloc(XRL_OVR_MAX, sizeof(*o));
	const struct xrl_http_cfg *c;
	json_t *rules = json_array(), *j;
	char be[700];
	int n_ovr = o ? xrl_limiter_override_list(s->lim, o, XRL_OVR_MAX) : 0;

	free(o);
	pthread_rwlock_rdlock(&s->mu);
	c = &s->cfg->c;
	for (__u32 i = 0; i < c->n_rules; i++)
		json_array_append_new(rules, xrl_http_rule_json(&c->rules[i]));
	xrl_http_backend_str(c, be, sizeof(be));
	j = json_pack("{s:s,s:s,s:s?,s:I,s:b,s:i,s:o}", "listen", c->listen, "backend", be,
		      "breaker", c->redis ? brk[xrl_limiter_breaker_state(s->lim) % 3] : NULL,
		      "threads", (json_int_t)s->n_loops, "penalty", c->penalty.enabled,
		      "overrides", n_ovr, "rules", rules);
	/* and the rest of the policy in force: shed, exempt, who is believed */
	if (j)
		json_object_update_missing_new(j, xrl_http_cfg_json(c));
	pthread_rwlock_unlock(&s->mu);
	return j;
}

json_t *xrl_http_stats_json(struct xrl_http_server *s)
{
	static const char *const sn[ST_MAX] = { "200", "400", "401", "403", "404", "405",
						"413", "414", "429", "503", "431" };
	json_t *rules = json_array(), *resp = json_object();
	struct xrl_limiter_stats st;

	xrl_limiter_get_stats(s->lim, &st);
	for (int i = 0; i < ST_MAX; i++)
		json_object_set_new(resp, sn[i],
				    json_integer((json_int_t)atomic_load(&s->status[i])));
	pthread_rwlock_rdlock(&s->mu);
	for (__u32 i = 0; i < s->cfg->c.n_rules; i++)
		json_array_append_new(rules,
				      json_pack("{s:s,s:I,s:I,s:I,s:I,s:b}", "name",
						s->cfg->c.rules[i].name, "allowed",
						(json_int_t)atomic_load(&s->cfg->ctr[i]->allowed),
						"refused",
						(json_int_t)atomic_load(&s->cfg->ctr[i]->refused),
						"shadow_refused",
						(json_int_t)atomic_load(&s->cfg->ctr[i]->shadow),
						"fallbacks",
						(json_int_t)atomic_load(&s->cfg->ctr[i]->fallback),
						"shadow", s->cfg->c.rules[i].shadow));
	pthread_rwlock_unlock(&s->mu);
	return json_pack(
		"{s:o,s:o,s:I,s:I,s:I,s:{s:I,s:I},s:{s:I,s:I}}", "rules", rules, "responses", resp,
		"decisions", (json_int_t)st.decisions, "backend_errors",
		(json_int_t)st.backend_errors, "keys", (json_int_t)st.keys, "callers_refused",
		"address", (json_int_t)atomic_load(&s->callers_refused[XRL_CALLER_ADDRESS]),
		"secret", (json_int_t)atomic_load(&s->callers_refused[XRL_CALLER_SECRET]),
		"connections_closed", "head_timeout",
		(json_int_t)atomic_load(&s->conn_closed[XRL_CONN_HEAD_TIMEOUT]), "evicted",
		(json_int_t)atomic_load(&s->conn_closed[XRL_CONN_EVICTED]));
}

int xrl_http_top_json(struct xrl_http_server *s, const char *rule, int n, json_t **out, char *err,
		      size_t errlen)
{
	struct xrl_topk_ent e[XRL_TOPK_K];
	__u64 now = (__u64)time(NULL);
	int ri, m;

	pthread_rwlock_rdlock(&s->mu);
	ri = rule_index(&s->cfg->c, rule);
	m = ri < 0 ? 0 : xrl_topk_read(s->topk, (unsigned)ri, e, XRL_TOPK_K);
	pthread_rwlock_unlock(&s->mu);
	if (ri < 0) {
		snprintf(err, errlen, "no http rule named '%s'", rule);
		return -ENOENT;
	}
	*out = json_array();
	for (int i = 0; i < m && i < n; i++)
		json_array_append_new(*out, json_pack("{s:s,s:I,s:I,s:I}", "key", e[i].show,
						      "refused", (json_int_t)e[i].count, "error",
						      (json_int_t)e[i].err, "last_seen_s_ago",
						      (json_int_t)(now - e[i].last_s)));
	return 0;
}

json_t *xrl_http_peaks_json(struct xrl_http_server *s)
{
	return xrl_limiter_peaks_take(s->lim);
}

/* ---- overrides ------------------------------------------------------------ */

/* A key as an operator gives it: 1 to XRL_HTTP_KEY_MAX bytes, no control byte. */
static int key_ok(const char *key, char *err, size_t errlen)
{
	size_t n = strlen(key);

	for (size_t i = 0; i < n; i++)
		if ((unsigned char)key[i] < 0x20 || key[i] == 0x7f)
			return snprintf(err, errlen, "KEY has a control byte"), -EINVAL;
	if (!n || n > XRL_HTTP_KEY_MAX)
		return snprintf(err, errlen, "KEY must be 1 to %d bytes", XRL_HTTP_KEY_MAX),
		       -EINVAL;
	return 0;
}

/* The entry into Redis's hash (the backend is Redis); -errno with err. */
static int redis_put(struct xrl_http_server *s, const struct xrl_ovr *e, bool del, char *err,
		     size_t errlen)
{
	struct ovr_redis r = redis_of(s);
	char field[XRL_RULE_NAME_LEN + XRL_HTTP_KEY_MAX + 2], val[96], ttl[24], why[200] = "";
	redisContext *c;
	redisReply *rep;
	__u64 now = xrl_ovr_now_ms();

	if (!r.on)
		return 0;
	c = ovr_connect(&r, err, errlen);
	if (!c)
		return -EIO;
	snprintf(field, sizeof(field), "%s:%s", e->rule, e->key);
	snprintf(val, sizeof(val), "%llu %llu %u %llu", (unsigned long long)e->rate.tokens,
		 (unsigned long long)e->rate.period_ns, e->burst, (unsigned long long)e->until_ms);
	snprintf(ttl, sizeof(ttl), "%llu",
		 (unsigned long long)(e->until_ms > now ? e->until_ms - now : 1));
	if (del)
		rep = command(c, why, sizeof(why), "HDEL %s %s", OVR_KEY, field);
	else
		rep = command(c, why, sizeof(why), "EVAL %s 1 %s %s %s %s %llu", ovr_lua, OVR_KEY,
			      field, val, ttl, (unsigned long long)now);
	redisFree(c);
	if (!rep) {
		snprintf(err, errlen, "couldn't store the override in Redis: %s", why);
		return -EIO;
	}
	freeReplyObject(rep);
	return 0;
}

int xrl_http_override_set(struct xrl_http_server *s, const char *rule, const char *key,
			  const char *rate, unsigned burst, __u64 ttl_ns, char *err, size_t errlen)
{
	struct xrl_ovr e = { .burst = burst }, old = {};
	struct xrl_gcra_params g;
	char why[XRL_ERRLEN];
	bool had = false;
	int rc;

	if (!xrl_http_has_rule(s, rule))
		return snprintf(err, errlen, "no http rule named '%s'", rule), -ENOENT;
	rc = key_ok(key, err, errlen);
	if (rc)
		return rc;
	if (xrl_rate_parse(rate, &e.rate, why, sizeof(why)))
		return snprintf(err, errlen, "--rate: %s", why), -EINVAL;
	if (xrl_gcra_init(e.rate.tokens, e.rate.period_ns, burst, &g))
		return snprintf(err, errlen, "no bucket has rate %s and burst %u", rate, burst),
		       -ERANGE;
	snprintf(e.rule, sizeof(e.rule), "%s", rule);
	snprintf(e.key, sizeof(e.key), "%s", key);
	if (ttl_ns / 1000000 > XRL_OVR_TTL_MAX_MS)
		return snprintf(err, errlen, "--ttl: at most 30 days (%llu s)",
				(unsigned long long)(XRL_OVR_TTL_MAX_MS / 1000)),
		       -ERANGE;
	e.until_ms = xrl_ovr_now_ms() + (ttl_ns + 999999) / 1000000;
	{
		struct xrl_ovr *all = calloc(XRL_OVR_MAX, sizeof(*all));
		int n = all ? xrl_limiter_override_list(s->lim, all, XRL_OVR_MAX) : 0;

		for (int i = 0; i < n; i++)
			if (!strcmp(all[i].rule, rule) && !strcmp(all[i].key, key)) {
				old = all[i];
				had = true;
			}
		free(all);
	}
	rc = xrl_limiter_override_set(s->lim, &e);
	if (rc == -ENOSPC)
		return snprintf(err, errlen, "%d overrides are in force already: delete one first",
				XRL_OVR_MAX),
		       rc;
	if (rc)
		return snprintf(err, errlen, "couldn't set the override: %s", strerror(-rc)), rc;
	rc = redis_put(s, &e, false, err, errlen);
	if (rc) {
		/* nothing changes when Redis, the source of truth, did not take it */
		if (had)
			xrl_limiter_override_set(s->lim, &old);
		else
			xrl_limiter_override_del(s->lim, rule, key);
	}
	return rc;
}

int xrl_http_override_del(struct xrl_http_server *s, const char *rule, const char *key, char *err,
			  size_t errlen)
{
	struct xrl_ovr e = {};
	int rc;

	snprintf(e.rule, sizeof(e.rule), "%s", rule);
	snprintf(e.key, sizeof(e.key), "%s", key);
	rc = redis_put(s, &e, true, err, errlen);
	if (rc)
		return rc;
	rc = xrl_limiter_override_del(s->lim, rule, key);
	if (rc == -ENOENT)
		snprintf(err, errlen, "no override of rule '%s' for that key", rule);
	return rc;
}

static int ovr_cmp(const void *a, const void *b)
{
	const struct xrl_ovr *x = a, *y = b;
	int c = strcmp(x->rule, y->rule);

	return c ? c : strcmp(x->key, y->key);
}

json_t *xrl_http_override_list_json(struct xrl_http_server *s)
{
	struct xrl_ovr *o = calloc(XRL_OVR_MAX, sizeof(*o));
	__u64 now = xrl_ovr_now_ms();
	json_t *a = json_array();
	char rate[48];
	int n;

	if (!o)
		return a;
	n = xrl_limiter_override_list(s->lim, o, XRL_OVR_MAX);
	qsort(o, (size_t)n, sizeof(*o), ovr_cmp);
	for (int i = 0; i < n; i++)
		json_array_append_new(a,
				      json_pack("{s:s,s:s,s:s,s:I,s:I}", "rule", o[i].rule, "key",
						o[i].key, "rate",
						xrl_rate_str(&o[i].rate, rate, sizeof(rate)),
						"burst", (json_int_t)o[i].burst, "expires_in_s",
						(json_int_t)((o[i].until_ms - now + 999) / 1000)));
	free(o);
	return a;
}

void xrl_http_set_fleet(struct xrl_http_server *s, struct xrl_fleet *f)
{
	xrl_limiter_set_fleet(s->lim, f);
}

json_t *xrl_http_penalties(struct xrl_http_server *s)
{
	return xrl_limiter_penalties(s->lim);
}

int xrl_http_penalty_del(struct xrl_http_server *s, const char *hex, int *lifted)
{
	return xrl_limiter_penalty_del(s->lim, hex, lifted);
}
