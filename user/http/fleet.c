// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fleet.c - the fleet's meeting place in Redis (fleet.h says what is kept
 * where). One thread with one blocking connection (hiredis, timeouts of
 * 500 ms to connect and 1 s per command): it is never on a request's or a
 * packet's path, so a dead Redis costs it time and nothing else.
 *
 * Each pass: a heartbeat once a second (a script: ZADD with an expiry 3 s
 * ahead on Redis's clock, expired members out, ZCARD: the live count);
 * what this instance queued (HSET or HDEL on the hash, XADD to the
 * stream); the stream's news since
 * the last id read (XREAD BLOCK 100 ms, so a change reaches the others
 * within about 100 ms plus a round trip). On every (re)connect the hashes
 * are read again (HSCAN, expired entries deleted as they are met), so an
 * instance that starts late, or was cut off, catches up on what is active.
 * A delete made while an instance was cut off is not seen by it: the entry
 * lapses there at its own expiry.
 *
 * The live count is kept while Redis is away: the last known one is what
 * NODE_SHARE divides by (an instance that never reached Redis counts 1).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "fleet.h"
#include "http.h"
#include "log.h"
#include "privs.h"

#define FLEET_HB_MS    1000  /* heartbeat period */
#define FLEET_TTL_MS   3000  /* a heartbeat's life: three missed ones */
#define FLEET_BLOCK_MS 100   /* XREAD BLOCK: how late a change may be seen */
#define FLEET_QUEUE    1024  /* entries waiting to be sent */
#define FLEET_LOG_MAX  10000 /* stream entries kept (MAXLEN ~) */
#define FLEET_READ_MAX 100   /* stream entries per XREAD */
#define FLEET_SCAN     200   /* HSCAN COUNT */

static const char *const kind_word[XRL_FLEET_KINDS] = { "deny", "pen" };

struct xrl_fleet {
	struct xrl_fleet_cfg c;
	char id[80]; /* host/pid/random: this instance */
	char k_live[96], k_log[96], k_h[XRL_FLEET_KINDS][96];
	pthread_t thr;
	bool started;
	_Atomic bool stop;
	redisContext *rc;
	struct xrl_reader_guard *guard;
	char last_id[48]; /* the stream's last entry read */
	__u64 next_hb_ms;
	struct {
		xrl_fleet_apply_fn fn;
		void *arg;
	} on[XRL_FLEET_KINDS];
	pthread_mutex_t mu; /* the queue */
	struct xrl_fleet_entry q[FLEET_QUEUE];
	unsigned q_head, q_n;
	_Atomic __u32 live;
	_Atomic __u64 connected, published, applied, errors, dropped, heartbeats;
};

static __u64 real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * 1000 + (__u64)ts.tv_nsec / 1000000;
}

int xrl_fleet_new(const struct xrl_fleet_cfg *c, struct xrl_fleet **out)
{
	struct xrl_fleet *f = calloc(1, sizeof(*f));
	char host[64] = "?";
	__u32 rnd = 0;

	if (!f)
		return -ENOMEM;
	f->c = *c;
	gethostname(host, sizeof(host) - 1);
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (__u32)xrl_now_ns();
	/* unique per start: a restarted instance is a new member, the old
	 * one's heartbeat lapses */
	snprintf(f->id, sizeof(f->id), "%.40s/%d/%08x", host, (int)getpid(), rnd);
	snprintf(f->k_live, sizeof(f->k_live), "xrl:{fleet:%s}:live", c->name);
	snprintf(f->k_log, sizeof(f->k_log), "xrl:{fleet:%s}:log", c->name);
	for (int k = 0; k < XRL_FLEET_KINDS; k++)
		snprintf(f->k_h[k], sizeof(f->k_h[k]), "xrl:{fleet:%s}:%s", c->name, kind_word[k]);
	snprintf(f->last_id, sizeof(f->last_id), "0-0");
	pthread_mutex_init(&f->mu, NULL);
	atomic_store(&f->live, 1);
	*out = f;
	return 0;
}

void xrl_fleet_on(struct xrl_fleet *f, enum xrl_fleet_kind k, xrl_fleet_apply_fn fn, void *arg)
{
	f->on[k].fn = fn;
	f->on[k].arg = arg;
}

const char *xrl_fleet_name(const struct xrl_fleet *f)
{
	return f->c.name;
}

const char *xrl_fleet_id(const struct xrl_fleet *f)
{
	return f->id;
}

__u32 xrl_fleet_live(const struct xrl_fleet *f)
{
	__u32 n = atomic_load(&f->live);

	return n ? n : 1;
}

void xrl_fleet_get_stats(const struct xrl_fleet *f, struct xrl_fleet_stats *s)
{
	s->live = xrl_fleet_live(f);
	s->connected = atomic_load(&f->connected);
	s->published = atomic_load(&f->published);
	s->applied = atomic_load(&f->applied);
	s->errors = atomic_load(&f->errors);
	s->dropped = atomic_load(&f->dropped);
	s->heartbeats = atomic_load(&f->heartbeats);
}

int xrl_fleet_publish(struct xrl_fleet *f, const struct xrl_fleet_entry *e)
{
	int rc = 0;

	pthread_mutex_lock(&f->mu);
	if (f->q_n == FLEET_QUEUE) {
		rc = -ENOBUFS;
		atomic_fetch_add(&f->dropped, 1);
	} else {
		f->q[(f->q_head + f->q_n++) % FLEET_QUEUE] = *e;
	}
	pthread_mutex_unlock(&f->mu);
	return rc;
}

/* ---- the connection ---------------------------------------------------------- */

static void drop(struct xrl_fleet *f, const char *why)
{
	if (f->rc) {
		if (atomic_exchange(&f->connected, 0) && strcmp(why, "stopping"))
			log_warnx("fleet %s: lost redis %s:%d (%s): denials and penalties stay "
				  "local, NODE_SHARE keeps %u live instances until it is back",
				  f->c.name, f->c.redis_host, f->c.redis_port, why,
				  xrl_fleet_live(f));
		redisFree(f->rc);
	}
	f->rc = NULL;
	free(f->guard);
	f->guard = NULL;
}

/* A command's reply, or NULL (counted; a failed connection is dropped). */
static redisReply *reply_of(struct xrl_fleet *f, redisReply *r)
{
	if (!r) {
		atomic_fetch_add(&f->errors, 1);
		drop(f, f->rc && f->rc->errstr[0] ? f->rc->errstr : "no answer");
		return NULL;
	}
	if (f->guard)
		xrl_reader_guard_reset(f->guard);
	if (r->type == REDIS_REPLY_ERROR) {
		atomic_fetch_add(&f->errors, 1);
		log_agg(XRL_LOG_WARN, "fleet: redis", "errors", "fleet %s: redis: %.120s",
			f->c.name, r->str);
		freeReplyObject(r);
		return NULL;
	}
	return r;
}

static redisReply *cmd(struct xrl_fleet *f, const char *fmt, ...)
{
	va_list ap;
	void *r;

	if (!f->rc)
		return NULL;
	va_start(ap, fmt);
	r = redisvCommand(f->rc, fmt, ap);
	va_end(ap);
	return reply_of(f, r);
}

/* The next pipelined reply, checked. */
static redisReply *next_reply(struct xrl_fleet *f)
{
	void *r = NULL;

	if (!f->rc)
		return NULL;
	if (redisGetReply(f->rc, &r) != REDIS_OK)
		r = NULL;
	return reply_of(f, r);
}

static int fleet_connect(struct xrl_fleet *f)
{
	struct timeval cto = { 0, 500000 }, to = { 1, 0 };
	redisReply *r;

	f->rc = redisConnectWithTimeout(f->c.redis_host, f->c.redis_port, cto);
	if (!f->rc || f->rc->err) {
		atomic_fetch_add(&f->errors, 1);
		if (f->rc)
			redisFree(f->rc);
		f->rc = NULL;
		return -EIO;
	}
	redisSetTimeout(f->rc, to);
	f->guard = xrl_reader_guard_new(f->rc->reader);
	if (!f->guard) {
		drop(f, "out of memory");
		return -ENOMEM;
	}
	if (f->c.redis_pass[0]) {
		r = f->c.redis_user[0] ? cmd(f, "AUTH %s %s", f->c.redis_user, f->c.redis_pass)
				       : cmd(f, "AUTH %s", f->c.redis_pass);
		if (!r)
			return drop(f, "AUTH"), -EACCES;
		freeReplyObject(r);
	}
	if (f->c.redis_db) {
		r = cmd(f, "SELECT %d", f->c.redis_db);
		if (!r)
			return drop(f, "SELECT"), -EIO;
		freeReplyObject(r);
	}
	atomic_store(&f->connected, 1);
	log_info("fleet %s: member %s, redis %s:%d", f->c.name, f->id, f->c.redis_host,
		 f->c.redis_port);
	return 0;
}

/* ---- entries ------------------------------------------------------------------ */

static void apply(struct xrl_fleet *f, const struct xrl_fleet_entry *e)
{
	if (e->kind >= XRL_FLEET_KINDS || !f->on[e->kind].fn)
		return;
	f->on[e->kind].fn(f->on[e->kind].arg, e);
	atomic_fetch_add(&f->applied, 1);
}

/* "UNTIL_MS LEVEL" into e; false: not that. */
static bool parse_value(const char *s, size_t n, struct xrl_fleet_entry *e)
{
	char buf[64], *end;
	unsigned long long u;
	unsigned long lv;

	if (n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	u = strtoull(buf, &end, 10);
	if (end == buf || *end != ' ')
		return false;
	lv = strtoul(end + 1, &end, 10);
	if (*end)
		return false;
	e->until_ms = u;
	e->level = lv > 0xff ? 0xff : (__u32)lv;
	return true;
}

static bool field_ok(const char *s, size_t n)
{
	if (!n || n >= sizeof(((struct xrl_fleet_entry *)0)->field))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

/*
 * One hash read again (at a connect): every active entry applied, the
 * expired ones deleted. HSCAN in steps, so a long hash never makes one
 * huge reply.
 */
static void resync_hash(struct xrl_fleet *f, int kind, __u64 now)
{
	char cursor[32] = "0";

	do {
		redisReply *r = cmd(f, "HSCAN %s %s COUNT %d", f->k_h[kind], cursor, FLEET_SCAN);
		redisReply *a;

		if (!r)
			return;
		if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    r->element[0]->type != REDIS_REPLY_STRING ||
		    r->element[1]->type != REDIS_REPLY_ARRAY) {
			freeReplyObject(r);
			return;
		}
		snprintf(cursor, sizeof(cursor), "%.*s", (int)r->element[0]->len,
			 r->element[0]->str);
		a = r->element[1];
		for (size_t i = 0; i + 1 < a->elements; i += 2) {
			struct xrl_fleet_entry e = { .op = XRL_FLEET_ADD, .kind = (__u8)kind };
			redisReply *k = a->element[i], *v = a->element[i + 1];

			if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
			    !field_ok(k->str, k->len) || !parse_value(v->str, v->len, &e))
				continue;
			memcpy(e.field, k->str, k->len);
			if (e.until_ms && e.until_ms <= now) {
				redisReply *d = cmd(f, "HDEL %s %b", f->k_h[kind], k->str, k->len);

				if (d)
					freeReplyObject(d);
				continue;
			}
			apply(f, &e);
		}
		freeReplyObject(r);
	} while (strcmp(cursor, "0") && f->rc && !atomic_load(&f->stop));
}

/* Where the stream is now (read from there on), then the hashes. */
static void resync(struct xrl_fleet *f)
{
	redisReply *r = cmd(f, "XREVRANGE %s + - COUNT 1", f->k_log);
	__u64 now = real_ms();

	if (!r)
		return;
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
	    r->element[0]->type == REDIS_REPLY_ARRAY && r->element[0]->elements >= 1 &&
	    r->element[0]->element[0]->type == REDIS_REPLY_STRING)
		snprintf(f->last_id, sizeof(f->last_id), "%.*s",
			 (int)r->element[0]->element[0]->len, r->element[0]->element[0]->str);
	else
		snprintf(f->last_id, sizeof(f->last_id), "0-0");
	freeReplyObject(r);
	for (int k = 0; k < XRL_FLEET_KINDS && f->rc; k++)
		resync_hash(f, k, now);
}

/*
 * The heartbeat, on Redis's clock (TIME), not this host's: a host whose
 * clock ran a day ahead wrote scores no one expired, so a dead instance
 * stayed live (NODE_SHARE divided by too many), and one behind was
 * expired by the others at once. A member scored further ahead than two
 * lifetimes was written by no instance (forged, or of an old clock) and
 * goes. One script, one round trip; it answers the live count.
 */
static const char hb_lua[] =
	"if redis.replicate_commands then redis.replicate_commands() end\n"
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
	"local ttl = tonumber(ARGV[2])\n"
	"redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])\n"
	"redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('(%.0f', now))\n"
	"redis.call('ZREMRANGEBYSCORE', KEYS[1], string.format('(%.0f', now + 2 * ttl), '+inf')\n"
	"redis.call('PEXPIRE', KEYS[1], 10 * ttl)\n"
	"return redis.call('ZCARD', KEYS[1])\n";

static void heartbeat(struct xrl_fleet *f, __u64 now)
{
	redisReply *r = cmd(f, "EVAL %s 1 %s %s %d", hb_lua, f->k_live, f->id, FLEET_TTL_MS);

	(void)now;
	if (r && r->type == REDIS_REPLY_INTEGER && r->integer > 0) {
		__u32 n = r->integer > UINT32_MAX ? UINT32_MAX : (__u32)r->integer;
		__u32 was = atomic_exchange(&f->live, n);

		if (n != was)
			log_info("fleet %s: %u live instance%s", f->c.name, n, n == 1 ? "" : "s");
		atomic_fetch_add(&f->heartbeats, 1);
	}
	if (r)
		freeReplyObject(r);
}

/* Send what is queued, oldest first; an entry leaves the queue once Redis
 * took it (a failure keeps it for the next connection). */
static void flush(struct xrl_fleet *f)
{
	for (;;) {
		struct xrl_fleet_entry e;
		char v[48];
		redisReply *r1, *r2;
		const char *op;

		pthread_mutex_lock(&f->mu);
		if (!f->q_n) {
			pthread_mutex_unlock(&f->mu);
			return;
		}
		e = f->q[f->q_head];
		pthread_mutex_unlock(&f->mu);
		snprintf(v, sizeof(v), "%llu %u", (unsigned long long)e.until_ms, e.level);
		op = e.op == XRL_FLEET_DEL ? "del" : "add";
		if (e.op == XRL_FLEET_DEL)
			redisAppendCommand(f->rc, "HDEL %s %s", f->k_h[e.kind], e.field);
		else
			redisAppendCommand(f->rc, "HSET %s %s %s", f->k_h[e.kind], e.field, v);
		redisAppendCommand(f->rc, "XADD %s MAXLEN ~ %d * op %s kind %s f %s v %s src %s",
				   f->k_log, FLEET_LOG_MAX, op, kind_word[e.kind], e.field, v,
				   f->id);
		r1 = next_reply(f);
		r2 = next_reply(f);
		if (r1)
			freeReplyObject(r1);
		if (r2)
			freeReplyObject(r2);
		if (!f->rc || !r1 || !r2)
			return;
		pthread_mutex_lock(&f->mu);
		f->q_head = (f->q_head + 1) % FLEET_QUEUE;
		f->q_n--;
		pthread_mutex_unlock(&f->mu);
		atomic_fetch_add(&f->published, 1);
	}
}

/* One stream entry's fields (op, kind, f, v, src) into e; false: ours, or
 * not an entry of ours to read. */
static bool stream_entry(struct xrl_fleet *f, const redisReply *kv, struct xrl_fleet_entry *e)
{
	bool have_f = false, have_v = false, have_k = false;

	*e = (struct xrl_fleet_entry){ .op = XRL_FLEET_ADD };
	for (size_t i = 0; i + 1 < kv->elements; i += 2) {
		const redisReply *k = kv->element[i], *v = kv->element[i + 1];

		if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
			return false;
		if (!strcmp(k->str, "src") && !strcmp(v->str, f->id))
			return false; /* applied here when it was made */
		if (!strcmp(k->str, "op")) {
			e->op = !strcmp(v->str, "del") ? XRL_FLEET_DEL : XRL_FLEET_ADD;
		} else if (!strcmp(k->str, "kind")) {
			for (int q = 0; q < XRL_FLEET_KINDS; q++)
				if (!strcmp(v->str, kind_word[q])) {
					e->kind = (__u8)q;
					have_k = true;
				}
		} else if (!strcmp(k->str, "f") && field_ok(v->str, v->len)) {
			memcpy(e->field, v->str, v->len);
			have_f = true;
		} else if (!strcmp(k->str, "v")) {
			have_v = parse_value(v->str, v->len, e);
		}
	}
	return have_f && have_v && have_k;
}

/* The stream's news since last_id, waiting up to FLEET_BLOCK_MS. */
static void read_log(struct xrl_fleet *f)
{
	redisReply *r = cmd(f, "XREAD COUNT %d BLOCK %d STREAMS %s %s", FLEET_READ_MAX,
			    FLEET_BLOCK_MS, f->k_log, f->last_id);
	const redisReply *es;

	if (!r)
		return;
	if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
	    r->element[0]->type != REDIS_REPLY_ARRAY || r->element[0]->elements != 2 ||
	    r->element[0]->element[1]->type != REDIS_REPLY_ARRAY) {
		freeReplyObject(r); /* nil: nothing new */
		return;
	}
	es = r->element[0]->element[1];
	for (size_t i = 0; i < es->elements; i++) {
		const redisReply *en = es->element[i];
		struct xrl_fleet_entry e;

		if (en->type != REDIS_REPLY_ARRAY || en->elements != 2 ||
		    en->element[0]->type != REDIS_REPLY_STRING ||
		    en->element[1]->type != REDIS_REPLY_ARRAY)
			continue;
		snprintf(f->last_id, sizeof(f->last_id), "%.*s", (int)en->element[0]->len,
			 en->element[0]->str);
		if (stream_entry(f, en->element[1], &e))
			apply(f, &e);
	}
	freeReplyObject(r);
}

static void *fleet_main(void *arg)
{
	struct xrl_fleet *f = arg;
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	prctl(PR_SET_NAME, "xrld-fleet", 0, 0, 0);
	/* Redis's answers are parsed here: no capability, no bpf() */
	if (xrl_thread_confine())
		log_warnx("couldn't confine the fleet thread (seccomp): it runs with xrld's "
			  "privileges");
	while (!atomic_load(&f->stop)) {
		__u64 now = real_ms();

		if (!f->rc) {
			if (fleet_connect(f)) {
				for (int i = 0; i < 10 && !atomic_load(&f->stop); i++)
					usleep(100000); /* again in 1 s */
				continue;
			}
			resync(f);
			f->next_hb_ms = 0;
		}
		if (f->rc && now >= f->next_hb_ms) {
			heartbeat(f, now);
			f->next_hb_ms = now + FLEET_HB_MS;
		}
		if (f->rc)
			flush(f);
		if (f->rc)
			read_log(f);
	}
	if (f->rc) {
		redisReply *r = cmd(f, "ZREM %s %s", f->k_live, f->id); /* leaving: not live */

		if (r)
			freeReplyObject(r);
	}
	drop(f, "stopping");
	return NULL;
}

int xrl_fleet_run(struct xrl_fleet *f)
{
	int err = pthread_create(&f->thr, NULL, fleet_main, f);

	if (err)
		return -err;
	f->started = true;
	return 0;
}

void xrl_fleet_free(struct xrl_fleet *f)
{
	if (!f)
		return;
	atomic_store(&f->stop, true);
	if (f->started)
		pthread_join(f->thr, NULL);
	explicit_bzero(f->c.redis_pass, sizeof(f->c.redis_pass));
	free(f);
}
