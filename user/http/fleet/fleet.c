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
 * instance that starts late, or was cut off, catches up on what is active;
 * a whole read of the deny hash is bracketed (SYNC_BEGIN, SYNC_END) so the
 * packet tier lifts the fleet's entries the hash no longer names: a delete
 * made while an instance was cut off reaches it at the reconnect.
 *
 * The stream is read from the last id seen. Should the stream's ids go
 * back (the key deleted and made again, a Redis restarted empty, or an
 * entry XADDed with an id far ahead and then removed), an XREAD from that
 * id would block for ever with new entries in the stream: once a second,
 * with nothing new, the newest id is compared (XREVRANGE COUNT 1, O(1)),
 * and a stream behind last_id is read again from its start, every entry it
 * holds now being newer than what was read (counted,
 * xrl_fleet_log_resets_total).
 *
 * The live count is kept while Redis is away: the last known one is what
 * NODE_SHARE divides by (an instance that never reached Redis counts 1),
 * and never more than fleet.max_members (a count above is forged, or the
 * policy is out of date: capped, counted and said).
 *
 * On a Redis Cluster every key is in the slot of {fleet:NAME}: the thread
 * connects to its master (cluster_master.c asks the seeds), a MOVED sends
 * it to the node named, a lost master back to the seeds (a failover).
 * While connected, expired hash entries are pruned a step a second
 * (prune()). What is read is checked: malformed entries and expiries more
 * than 30 days ahead are refused and counted.
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

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <hiredis/hiredis.h>

#include "cluster_master.h"
#include "fleet.h"
#include "http/http.h"
#include "log.h"
#include "privs.h"
#include "http/redis/slots.h"

#define FLEET_HB_MS    1000  /* heartbeat period */
#define FLEET_TTL_MS   3000  /* a heartbeat's life: three missed ones */
#define FLEET_BLOCK_MS 100   /* XREAD BLOCK: how late a change may be seen */
#define FLEET_QUEUE    1024  /* entries waiting to be sent */
#define FLEET_LOG_MAX  10000 /* stream entries kept (MAXLEN ~) */
#define FLEET_READ_MAX 100   /* stream entries per XREAD */
#define FLEET_SCAN     200   /* HSCAN COUNT */
#define FLEET_PRUNE_MS 1000  /* one HSCAN step of a hash, per hash, this often */
#define FLEET_LOGCHK_MS 1000 /* the stream's newest id compared, this often */
/* an entry ending further ahead than this is refused (not a TTL anyone
 * set: a corrupt or hostile value); 0, "until removed", stays valid */
#define FLEET_UNTIL_MAX_MS (30ULL * 24 * 3600 * 1000)

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
	struct xrl_node_addr at;	     /* the node connected to */
	struct xrl_node_addr moved;	     /* cluster: where a MOVED sent us; port 0: none */
	char prune_cur[XRL_FLEET_KINDS][32]; /* the periodic HSCAN's cursors */
	__u64 next_prune_ms;
	char last_id[48]; /* the stream's last entry read */
	__u64 next_hb_ms, next_logchk_ms;
	struct {
		xrl_fleet_apply_fn fn;
		void *arg;
	} on[XRL_FLEET_KINDS];
	pthread_mutex_t mu; /* the queue */
	struct xrl_fleet_entry q[FLEET_QUEUE];
	unsigned q_head, q_n;
	_Atomic __u32 live;
#define FLEET_ATOMIC(name) _Atomic __u64 name;
	XRL_FLEET_COUNTERS(FLEET_ATOMIC)
#undef FLEET_ATOMIC
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
	if (!f->c.max_members)
		f->c.max_members = XRL_FLEET_MEMBERS_DEFAULT;
	atomic_store(&f->live, 1);
	*out = f;
	return 0;
}

void xrl_fleet_on(struct xrl_fleet *f, enum xrl_fleet_kind k, xrl_fleet_apply_fn fn, void *arg)
{
	f->on[k].fn = fn;
	f->on[k].arg = arg;
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
#define FLEET_COPY(name) s->name = atomic_load(&f->name);
	XRL_FLEET_COUNTERS(FLEET_COPY)
#undef FLEET_COPY
}

/* The address of the node just connected to, to the deny kind's taker (a
 * PEER entry): an entry must never deny the fleet's own Redis, a
 * cluster's masters as they are learnt included. */
static void peer_note(struct xrl_fleet *f)
{
	struct xrl_fleet_entry e = { .op = XRL_FLEET_PEER, .kind = XRL_FLEET_DENY };
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char a[INET6_ADDRSTRLEN];

	if (!f->on[XRL_FLEET_DENY].fn || getpeername(f->rc->fd, (struct sockaddr *)&ss, &sl))
		return;
	if (ss.ss_family == AF_INET &&
	    inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, a, sizeof(a)))
		snprintf(e.field, sizeof(e.field), "%s/32", a);
	else if (ss.ss_family == AF_INET6 &&
		 inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, a, sizeof(a)))
		snprintf(e.field, sizeof(e.field), "%s/128", a);
	else
		return; /* a unix socket: no address to keep */
	f->on[XRL_FLEET_DENY].fn(f->on[XRL_FLEET_DENY].arg, &e);
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
				  f->c.name, f->at.host, f->at.port, why, xrl_fleet_live(f));
		redisFree(f->rc);
	}
	f->rc = NULL;
	free(f->guard);
	f->guard = NULL;
}

/* A cluster's MOVED: the fleet's slot is served elsewhere now. The
 * connection is dropped (its other replies are moot) and the next one goes
 * to the node named; true when r was that. */
static bool moved_to(struct xrl_fleet *f, const redisReply *r)
{
	unsigned slot;
	bool ask;

	if (xrl_redirect_parse(r->str, r->len, &ask, &slot, f->moved.host, sizeof(f->moved.host),
			       &f->moved.port) ||
	    ask) {
		f->moved.port = 0; /* ASK: a migration under way; counted as an error */
		return false;
	}
	if (!f->moved.host[0]) /* "MOVED SLOT :PORT": the node that answered */
		snprintf(f->moved.host, sizeof(f->moved.host), "%s", f->at.host);
	atomic_fetch_add(&f->redirects, 1);
	log_info("fleet %s: the slot moved to %s:%d", f->c.name, f->moved.host, f->moved.port);
	drop(f, "MOVED");
	return true;
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
	if (r->type == REDIS_REPLY_ERROR && f->c.redis_cluster && moved_to(f, r)) {
		freeReplyObject(r);
		return NULL;
	}
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

	if (f->c.redis_cluster && f->moved.port) {
		f->at = f->moved; /* once: if it fails, the seeds are asked again */
		f->moved.port = 0;
	} else if (f->c.redis_cluster) {
		int err = xrl_fleet_cluster_owner(&f->c, f->k_live, &f->at);

		if (err) {
			atomic_fetch_add(&f->errors, 1);
			return err;
		}
	} else {
		snprintf(f->at.host, sizeof(f->at.host), "%s", f->c.redis_host);
		f->at.port = f->c.redis_port;
	}
	f->rc = redisConnectWithTimeout(f->at.host, f->at.port, cto);
	if (!f->rc || f->rc->err) {
		atomic_fetch_add(&f->errors, 1);
		if (f->rc)
			redisFree(f->rc);
		f->rc = NULL;
		return -EIO;
	}
	redisSetTimeout(f->rc, to);
	peer_note(f);
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
	log_info("fleet %s: member %s, redis %s:%d%s", f->c.name, f->id, f->at.host, f->at.port,
		 f->c.redis_cluster ? " (the master of the fleet's slot)" : "");
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

/* HDEL KEYS[1] ARGV[1] if its value is still ARGV[2]: 1 deleted, else 0. */
static const char hdel_if[] = "if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then "
			      "return redis.call('HDEL', KEYS[1], ARGV[1]) end return 0";

/* An entry's expiry no one set: further ahead than FLEET_UNTIL_MAX_MS
 * (counted; a writer to the fleet's Redis must not deny for decades). */
static bool until_absurd(struct xrl_fleet *f, const struct xrl_fleet_entry *e, __u64 now)
{
	if (e->until_ms <= now + FLEET_UNTIL_MAX_MS)
		return false;
	atomic_fetch_add(&f->refused, 1);
	log_agg(XRL_LOG_WARN, "fleet: refused", "fleet entries refused",
		"fleet %s: refused %.40s: it ends %llu s from now", f->c.name, e->field,
		(unsigned long long)((e->until_ms - now) / 1000));
	return true;
}

/*
 * One HSCAN step of a hash from cursor (updated; "0" once round): expired
 * entries deleted, the active ones applied when apply is set. Bounded: at
 * most about FLEET_SCAN fields a step, whatever the hash holds. 0, or
 * -EIO when the step failed.
 */
static int scan_step(struct xrl_fleet *f, int kind, char cursor[32], __u64 now, bool apply_them)
{
	redisReply *r = cmd(f, "HSCAN %s %s COUNT %d", f->k_h[kind], cursor, FLEET_SCAN);
	redisReply *a;

	if (!r)
		return -EIO;
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY) {
		freeReplyObject(r);
		return -EIO;
	}
	snprintf(cursor, 32, "%.*s", (int)r->element[0]->len, r->element[0]->str);
	a = r->element[1];
	for (size_t i = 0; i + 1 < a->elements; i += 2) {
		struct xrl_fleet_entry e = { .op = XRL_FLEET_ADD, .kind = (__u8)kind };
		redisReply *k = a->element[i], *v = a->element[i + 1];

		if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
		    !field_ok(k->str, k->len) || !parse_value(v->str, v->len, &e)) {
			atomic_fetch_add(&f->refused, 1);
			continue;
		}
		memcpy(e.field, k->str, k->len);
		if (e.until_ms && e.until_ms <= now) {
			/* only if it still holds what was read: another instance may
			 * have set the entry again since the HSCAN */
			redisReply *d = cmd(f, "EVAL %s 1 %s %b %b", hdel_if, f->k_h[kind], k->str,
					    k->len, v->str, v->len);

			if (d && d->type == REDIS_REPLY_INTEGER && d->integer > 0)
				atomic_fetch_add(&f->pruned, 1);
			if (d)
				freeReplyObject(d);
			continue;
		}
		if (apply_them && !until_absurd(f, &e, now))
			apply(f, &e);
	}
	freeReplyObject(r);
	return 0;
}

/* One hash read again (at a connect): every active entry applied, the
 * expired ones deleted, step by step (never one huge reply). True when
 * the scan went round: every field the hash held throughout was met. */
static bool resync_hash(struct xrl_fleet *f, int kind, __u64 now)
{
	char cursor[32] = "0";

	do {
		if (scan_step(f, kind, cursor, now, true))
			return false;
	} while (strcmp(cursor, "0") && f->rc && !atomic_load(&f->stop));
	return f->rc && !strcmp(cursor, "0");
}

/* A marker (SYNC_BEGIN, SYNC_END) to the deny kind's taker. */
static void mark(struct xrl_fleet *f, enum xrl_fleet_op op)
{
	struct xrl_fleet_entry e = { .op = (__u8)op, .kind = XRL_FLEET_DENY };

	if (f->on[XRL_FLEET_DENY].fn)
		f->on[XRL_FLEET_DENY].fn(f->on[XRL_FLEET_DENY].arg, &e);
}

/*
 * Expired entries out of the hashes while connected: one step of each hash
 * every FLEET_PRUNE_MS, so a hash is swept in about size / FLEET_SCAN
 * seconds and an entry outlives its expiry by that much at most, without
 * a reconnect. Cost: two HSCANs of about FLEET_SCAN fields a second.
 */
static void prune(struct xrl_fleet *f, __u64 now)
{
	if (now < f->next_prune_ms)
		return;
	f->next_prune_ms = now + FLEET_PRUNE_MS;
	for (int k = 0; k < XRL_FLEET_KINDS && f->rc; k++) {
		if (!f->prune_cur[k][0])
			snprintf(f->prune_cur[k], sizeof(f->prune_cur[k]), "0");
		if (scan_step(f, k, f->prune_cur[k], now, false))
			f->prune_cur[k][0] = '\0'; /* from the start, next time */
	}
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
	f->next_logchk_ms = now + FLEET_LOGCHK_MS;
	for (int k = 0; k < XRL_FLEET_KINDS && f->rc; k++) {
		bool whole;

		if (k == XRL_FLEET_DENY)
			mark(f, XRL_FLEET_SYNC_BEGIN);
		whole = resync_hash(f, k, now);
		/* only a whole read may lift what it did not name */
		if (k == XRL_FLEET_DENY && whole)
			mark(f, XRL_FLEET_SYNC_END);
	}
}

/* "MS-SEQ" into its two numbers; false: not a stream id. */
static bool id_parse(const char *s, unsigned long long *ms, unsigned long long *seq)
{
	char *end;

	*ms = strtoull(s, &end, 10);
	if (end == s || *end != '-')
		return false;
	s = end + 1;
	*seq = strtoull(s, &end, 10);
	return end != s && !*end;
}

/* Is stream id a before b? */
static bool id_before(const char *a, const char *b)
{
	unsigned long long am, as, bm, bs;

	if (!id_parse(a, &am, &as) || !id_parse(b, &bm, &bs))
		return false;
	return am < bm || (am == bm && as < bs);
}

/* With nothing new read: has the stream gone back behind last_id? Then it
 * is read again from its start: it was made again since last_id, so all
 * it holds is news (at most FLEET_LOG_MAX entries, FLEET_READ_MAX a read). */
static void log_check(struct xrl_fleet *f, __u64 now)
{
	redisReply *r;
	char newest[48] = "0-0";

	if (now < f->next_logchk_ms)
		return;
	f->next_logchk_ms = now + FLEET_LOGCHK_MS;
	r = cmd(f, "XREVRANGE %s + - COUNT 1", f->k_log);
	if (!r)
		return;
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
	    r->element[0]->type == REDIS_REPLY_ARRAY && r->element[0]->elements >= 1 &&
	    r->element[0]->element[0]->type == REDIS_REPLY_STRING)
		snprintf(newest, sizeof(newest), "%.*s", (int)r->element[0]->element[0]->len,
			 r->element[0]->element[0]->str);
	freeReplyObject(r);
	if (!id_before(newest, f->last_id))
		return;
	atomic_fetch_add(&f->log_reset, 1);
	log_warnx("fleet %s: the stream %s went back (newest %s, last read %s): read again "
		  "from its start",
		  f->c.name, f->k_log, newest, f->last_id);
	snprintf(f->last_id, sizeof(f->last_id), "0-0");
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
		__u64 had = atomic_exchange(&f->live_read, n);
		__u32 was;

		/* more members than the policy says the fleet has: forged
		 * heartbeats, or a policy out of date; NODE_SHARE must not
		 * divide a rule by whatever a writer to Redis chose */
		if (n > f->c.max_members) {
			atomic_fetch_add(&f->live_over, 1);
			if (had <= f->c.max_members)
				log_warnx("fleet %s: %u live members in %s, more than fleet.max_members "
					  "(%u): counted as %u (forged heartbeats, or raise "
					  "fleet.max_members)",
					  f->c.name, n, f->k_live, f->c.max_members,
					  f->c.max_members);
			n = f->c.max_members;
		}
		was = atomic_exchange(&f->live, n);

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

		if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) {
			atomic_fetch_add(&f->refused, 1);
			return false;
		}
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
	if (!have_f || !have_v || !have_k)
		atomic_fetch_add(&f->refused, 1);
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
		log_check(f, real_ms());
		return;
	}
	es = r->element[0]->element[1];
	for (size_t i = 0; i < es->elements; i++) {
		const redisReply *en = es->element[i];
		struct xrl_fleet_entry e;

		if (en->type != REDIS_REPLY_ARRAY || en->elements < 1 ||
		    en->element[0]->type != REDIS_REPLY_STRING)
			continue;
		/* past it whatever it holds: an entry not read as one must
		 * not be asked for again and again */
		snprintf(f->last_id, sizeof(f->last_id), "%.*s", (int)en->element[0]->len,
			 en->element[0]->str);
		if (en->elements != 2 || en->element[1]->type != REDIS_REPLY_ARRAY) {
			atomic_fetch_add(&f->refused, 1);
			continue;
		}
		if (stream_entry(f, en->element[1], &e) && !until_absurd(f, &e, real_ms()))
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
			prune(f, now);
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
