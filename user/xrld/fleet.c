// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fleet.c - xrld in a fleet (http/fleet/fleet.c keeps the Redis side, in the
 * identity process: idproc.h). The denials of other instances arrive as
 * checked events on the main loop (fleet_in) and are written to the
 * XDP denylists here, with the time they have left, so no bpf() call
 * happens off the loop and the loop never waits for Redis. What this host
 * denies (an operator's deny add/del, a penalty of a `penalty: verified`
 * rule) is handed to the identity process for the fleet.
 *
 * Whoever can write the fleet's Redis writes these entries: each is held
 * to this host's own limits, and one refused is counted by reason
 * (xrl_fleet_entries_skipped_total{reason}):
 *  - never wider than this host's penalty floor (/24 and /48 unless
 *    penalty.floor_v4/v6 say otherwise; "wide"): no 0.0.0.0/0 on every
 *    host. An operator's wider deny add stays on the host it was made on;
 *  - never longer than this host's penalty.max (penalties off: 1 h,
 *    XRL_FLEET_DENY_MAX_NS), "until removed" included: an entry lasts at
 *    most that (xrl_fleet_entries_capped_total);
 *  - never covering (containing or inside) the allowlist ("allowlist"), a
 *    source this host vouches for ("vouched"), the fleet's Redis (the
 *    configured host and seeds, resolved at start, and every node the
 *    fleet connected to; "fleet_redis"), this host's own addresses
 *    (getifaddrs, read again every OWN_REFRESH_NS; "own_address") or a
 *    prefix of fleet.protect ("protect"): a denial that cut the host off
 *    its Redis could never be lifted through it;
 *  - at most three quarters of a denylist with the penalties ("full"):
 *    the operator's deny add always finds the last quarter;
 *  - never replacing or lifting this host's own entry ("local").
 * A whole read of the deny hash at a (re)connect (SYNC_BEGIN .. SYNC_END)
 * lifts the fleet's entries here that the hash no longer names: the
 * deletes this host missed while cut off (xrl_fleet_entries_lifted_total).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "http/fleet/fleet.h"
#include "http/http.h"
#include "idproc.h"
#include "log.h"
#include "xrld.h"

#define REDIS_ADDRS    32			 /* the fleet's Redis addresses kept */
#define OWN_MAX	       256			 /* this host's addresses kept */
#define OWN_REFRESH_NS (5ULL * XRL_NSEC_PER_SEC) /* getifaddrs again after this */
#define SEEN_MAX       (1u << 20)		 /* prefixes one hash read may name */

/* Why a fleet entry was not applied: xrl_fleet_entries_skipped_total{reason}. */
enum fleet_skip {
	SKIP_VOUCHED,
	SKIP_FAILED,
	SKIP_WIDE,
	SKIP_LOCAL,
	SKIP_FULL,
	SKIP_ALLOWLIST,
	SKIP_PROTECT,
	SKIP_REDIS,
	SKIP_OWN,
	SKIP_N
};
static const char *const skip_name[SKIP_N] = {
	[SKIP_VOUCHED] = "vouched", [SKIP_FAILED] = "failed",	  [SKIP_WIDE] = "wide",
	[SKIP_LOCAL] = "local",	    [SKIP_FULL] = "full",	  [SKIP_ALLOWLIST] = "allowlist",
	[SKIP_PROTECT] = "protect", [SKIP_REDIS] = "fleet_redis", [SKIP_OWN] = "own_address",
};

/* This host's addresses, and when they were read (CLOCK_MONOTONIC). */
struct own_addrs {
	struct xrl_prefix a[OWN_MAX];
	int n;
	__u64 ns;
};

struct xrld_fleet {
	__u64 applied;	    /* deny entries, on this loop */
	__u64 skip[SKIP_N]; /* not applied, by reason */
	__u64 refused;	    /* deny entries that are no prefix */
	__u64 capped;	    /* held to the longest this host denies */
	__u64 lifted;	    /* gone from the hash while cut off: lifted */
	/* the configured Redis (host and seeds), resolved at start, then
	 * the nodes the fleet connected to (PEER entries), oldest first out */
	struct xrl_prefix redis[REDIS_ADDRS];
	int n_redis, n_conf;
	struct own_addrs own;
	/* a read of the deny hash under way (loop only): the prefixes it
	 * named, and whether they outgrew SEEN_MAX (then nothing is lifted) */
	bool syncing, seen_over;
	struct xrl_prefix *seen;
	size_t n_seen, cap_seen;
};

/* The shortest prefix the fleet denies: the penalty floor, also when
 * penalties are off (then the default floor). */
static bool too_wide(const struct xrld *d, const struct xrl_prefix *p)
{
	const struct xrl_penalty_cfg *pc = &d->cfg->penalty;
	__u8 f4 = pc->floor4 ? pc->floor4 : 24, f6 = pc->floor6 ? pc->floor6 : 48;

	return p->plen < (p->family == XRL_AF_INET ? f4 : f6);
}

static __u64 real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * 1000 + (__u64)ts.tv_nsec / 1000000;
}

/* Do a and b overlap, one containing the other (same family)? */
static bool overlap(const struct xrl_prefix *a, const struct xrl_prefix *b)
{
	__u32 m[4];

	if (a->family != b->family)
		return false;
	xrl_prefix_mask(a->family, a->plen < b->plen ? a->plen : b->plen, m);
	for (int i = 0; i < (a->family == XRL_AF_INET ? 1 : 4); i++)
		if ((a->addr[i] & m[i]) != (b->addr[i] & m[i]))
			return false;
	return true;
}

/* The first of l[0..n) that p overlaps, or NULL. */
static const struct xrl_prefix *overlaps_any(const struct xrl_prefix *p, const struct xrl_prefix *l,
					     int n)
{
	for (int i = 0; i < n; i++)
		if (overlap(p, &l[i]))
			return &l[i];
	return NULL;
}

/* sa as a host prefix (/32, /128) into p; false: not an IP address. */
static bool sa_prefix(const struct sockaddr *sa, struct xrl_prefix *p)
{
	*p = (struct xrl_prefix){ 0 };
	if (sa && sa->sa_family == AF_INET) {
		p->family = XRL_AF_INET;
		p->plen = 32;
		p->addr[0] = ((const struct sockaddr_in *)sa)->sin_addr.s_addr;
		return true;
	}
	if (sa && sa->sa_family == AF_INET6) {
		p->family = XRL_AF_INET6;
		p->plen = 128;
		memcpy(p->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return true;
	}
	return false;
}

/* host's addresses (a name resolved: this blocks, at start only) into
 * x->redis. */
static void redis_resolve(struct xrld_fleet *x, const char *host)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *a;

	if (!host[0] || getaddrinfo(host, NULL, &hints, &ai))
		return;
	for (a = ai; a && x->n_redis < REDIS_ADDRS; a = a->ai_next) {
		struct xrl_prefix p;

		if (sa_prefix(a->ai_addr, &p) && !overlaps_any(&p, x->redis, x->n_redis))
			x->redis[x->n_redis++] = p;
	}
	freeaddrinfo(ai);
}

/* The configured Redis: its host, or each seed of "HOST:PORT,..." (an
 * IPv6 address in brackets). The nodes a cluster names later are the
 * fleet's peers (xrl_fleet_peers). */
static void redis_addrs(struct xrld_fleet *x, const struct xrl_fleet_cfg *c)
{
	char seeds[sizeof(c->redis_seeds)], *save = NULL;

	redis_resolve(x, c->redis_host);
	snprintf(seeds, sizeof(seeds), "%s", c->redis_seeds);
	for (char *t = strtok_r(seeds, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *colon = strrchr(t, ':');

		if (colon)
			*colon = '\0';
		if (t[0] == '[') {
			t++;
			t[strcspn(t, "]")] = '\0';
		}
		redis_resolve(x, t);
	}
}

/* This host's addresses, read again when older than OWN_REFRESH_NS (an
 * address added since must not be denied by the fleet for long). */
static void own_refresh(struct own_addrs *o)
{
	struct ifaddrs *ifa, *i;
	__u64 now = xrl_now_ns();

	if (o->ns && now - o->ns < OWN_REFRESH_NS)
		return;
	if (getifaddrs(&ifa))
		return; /* the last known ones stay */
	o->ns = now;
	o->n = 0;
	for (i = ifa; i && o->n < OWN_MAX; i = i->ifa_next) {
		struct xrl_prefix p;

		if (sa_prefix(i->ifa_addr, &p))
			o->a[o->n++] = p;
	}
	freeifaddrs(ifa);
}

/* Does p cover something this host keeps from the fleet whatever the
 * interface (fleet.protect, the fleet's Redis, its own addresses)? The
 * reason, or SKIP_N. */
static enum fleet_skip protected(struct xrld *d, struct xrld_fleet *x, const struct xrl_prefix *p) {
	const struct xrl_fleet_cfg *c = &d->cfg->fleet;

	if (overlaps_any(p, c->protect, (int)c->n_protect)) return SKIP_PROTECT;
	if (overlaps_any(p, x->redis, x->n_redis)) return SKIP_REDIS;
	own_refresh(&x->own);
	if (overlaps_any(p, x->own.a, x->own.n)) return SKIP_OWN;
	return SKIP_N;
}

/* A node the fleet connected to: kept from denials (the configured
 * addresses stay; of the learnt ones the oldest goes when full). */
static void peer_keep(struct xrld_fleet *x, const struct xrl_prefix *p)
{
	if (overlaps_any(p, x->redis, x->n_redis))
		return;
	if (x->n_redis == REDIS_ADDRS) {
		if (x->n_conf >= REDIS_ADDRS)
			return;
		memmove(&x->redis[x->n_conf], &x->redis[x->n_conf + 1],
			(size_t)(REDIS_ADDRS - x->n_conf - 1) * sizeof(*p));
		x->n_redis--;
	}
	x->redis[x->n_redis++] = *p;
}

static void skip(struct xrld_fleet *x, enum fleet_skip why, const char *field)
{
	COUNT(x->skip[why]);
	if (why == SKIP_PROTECT || why == SKIP_REDIS || why == SKIP_OWN || why == SKIP_FULL)
		log_agg(XRL_LOG_WARN, skip_name[why], "fleet entries not applied",
			"fleet: not denying %s: %s", field,
			why == SKIP_PROTECT ? "it covers a prefix of fleet.protect"
			: why == SKIP_REDIS ? "it covers the fleet's own Redis"
			: why == SKIP_OWN   ? "it covers an address of this host"
					    : "the fleet and penalties hold 3/4 of the denylist");
}

static int prefix_cmp(const void *a, const void *b)
{
	const struct xrl_prefix *p = a, *q = b;

	if (p->family != q->family)
		return p->family - q->family;
	if (p->plen != q->plen)
		return p->plen - q->plen;
	return memcmp(p->addr, q->addr, sizeof(p->addr));
}

/* A prefix named by the hash read under way. */
static void seen_add(struct xrld_fleet *x, const struct xrl_prefix *p)
{
	if (x->seen_over)
		return;
	if (x->n_seen == x->cap_seen) {
		size_t cap = x->cap_seen ? x->cap_seen * 2 : 4096;
		void *n = cap <= SEEN_MAX ? realloc(x->seen, cap * sizeof(*p)) : NULL;

		if (!n) {
			x->seen_over = true;
			return;
		}
		x->seen = n;
		x->cap_seen = cap;
	}
	x->seen[x->n_seen] = *p;
	x->seen[x->n_seen].pad[0] = x->seen[x->n_seen].pad[1] = 0;
	x->n_seen++;
}

/*
 * The hash was read whole: every entry of the fleet on h's denylists that
 * it did not name was deleted while this host was cut off, and is lifted.
 * The host's own entries (policy, operator, penalty) are never touched.
 * Cost: a walk of both lists and a binary search per fleet entry, at each
 * (re)connect only. Returns how many were lifted.
 */
static unsigned lift_missing(struct xrl_handle *h, struct xrld_fleet *x)
{
	static const char *const maps[2] = { XRL_MAP_DENY_V4, XRL_MAP_DENY_V6 };
	struct xrl_prefix *gone = NULL;
	size_t n_gone = 0, cap = 0;
	unsigned lifted = 0;

	for (int f = 0; f < 2; f++) {
		int fd = xrl_map_fd(h, maps[f]);
		struct xrl_lpm_v6 k = { 0 }, nk = { 0 };
		bool first = true;

		if (fd < 0)
			continue;
		while (!bpf_map_get_next_key(fd, first ? NULL : &k, &nk)) {
			struct xrl_deny_val v;
			struct xrl_prefix p = { .family = f ? XRL_AF_INET6 : XRL_AF_INET };

			first = false;
			k = nk;
			if (bpf_map_lookup_elem(fd, &k, &v) || v.origin != XRL_ORIGIN_FLEET)
				continue;
			p.plen = (__u8)k.prefixlen;
			memcpy(p.addr, k.addr, f ? 16 : 4);
			if (bsearch(&p, x->seen, x->n_seen, sizeof(p), prefix_cmp))
				continue;
			if (n_gone == cap) {
				void *n = realloc(gone, (cap ? cap * 2 : 256) * sizeof(p));

				if (!n)
					break;
				gone = n;
				cap = cap ? cap * 2 : 256;
			}
			gone[n_gone++] = p;
		}
	}
	for (size_t i = 0; i < n_gone; i++)
		if (!xrl_deny_del(h, &gone[i]))
			lifted++;
	free(gone);
	return lifted;
}

static void sync_end(struct xrld *d, struct xrld_fleet *x)
{
	unsigned n = 0;

	if (!x->syncing)
		return;
	x->syncing = false;
	if (x->seen_over) {
		log_warnx("fleet %s: the deny hash names more than %u prefixes: entries deleted "
			  "while this host was cut off are not looked for (they lapse)",
			  d->cfg->fleet.name, SEEN_MAX);
		return;
	}
	qsort(x->seen, x->n_seen, sizeof(*x->seen), prefix_cmp);
	for (int i = 0; i < d->n_ifs; i++)
		n += lift_missing(d->ifs[i].h, x);
	__atomic_fetch_add(&x->lifted, n, __ATOMIC_RELAXED);
	if (n)
		log_info("fleet %s: lifted %u denial%s the fleet deleted while this host was cut "
			 "off",
			 d->cfg->fleet.name, n, n == 1 ? "" : "s");
}

/* One entry to every interface's denylist, within this host's bounds. */
static void deny_apply(struct xrld *d, struct xrld_fleet *x, const struct xrl_fleet_entry *e)
{
	const struct xrl_penalty_cfg *pc = &d->cfg->penalty;
	__u64 max_ns = pc->enabled && pc->max_ns ? pc->max_ns : XRL_FLEET_DENY_MAX_NS;
	char err[XRL_ERRLEN];
	struct xrl_prefix p;
	__u64 ttl = max_ns, now = real_ms();
	enum fleet_skip why;
	bool held = false, done = false;

	if (e->op == XRL_FLEET_SYNC_BEGIN) {
		x->syncing = true;
		x->seen_over = false;
		x->n_seen = 0;
		return;
	}
	if (e->op == XRL_FLEET_SYNC_END) {
		sync_end(d, x);
		return;
	}
	if (xrl_prefix_parse(e->field, &p, err, sizeof(err))) {
		COUNT(x->refused);
		return;
	}
	if (e->op == XRL_FLEET_PEER) {
		peer_keep(x, &p);
		return;
	}
	if (e->op == XRL_FLEET_ADD && x->syncing)
		seen_add(x, &p);
	if (e->op == XRL_FLEET_ADD) {
		if (e->until_ms && e->until_ms <= now)
			return; /* over already */
		/* "until removed" (0) too: a removal may never reach a host */
		if (e->until_ms && e->until_ms - now < max_ns / 1000000)
			ttl = (e->until_ms - now) * 1000000ULL;
		else
			held = true;
	}
	if (e->op == XRL_FLEET_ADD && too_wide(d, &p)) {
		COUNT(x->skip[SKIP_WIDE]);
		log_agg(XRL_LOG_WARN, "fleet: wide", "fleet entries wider than the floor",
			"fleet: not denying %s: wider than the penalty floor", e->field);
		return;
	}
	if (e->op == XRL_FLEET_ADD && (why = protected(d, x, &p)) != SKIP_N) {
		skip(x, why, e->field);
		return;
	}
	for (int i = 0; i < d->n_ifs; i++) {
		struct xrl_handle *h = d->ifs[i].h;
		__u32 origin, used, cap;
		int rc, absent = xrl_deny_origin(h, &p, &origin);

		/* This host's own entry for the prefix (its policy's, its
		 * operator's, its penalty's) is never replaced or lifted by
		 * the fleet: another host's TTL must not shorten it, and
		 * whoever can write the fleet's Redis must not lift it. */
		if (!absent && origin != XRL_ORIGIN_FLEET) {
			COUNT(x->skip[SKIP_LOCAL]);
			continue;
		}
		if (e->op == XRL_FLEET_DEL) {
			rc = xrl_deny_del(h, &p);
			if (rc && rc != -ENOENT)
				COUNT(x->skip[SKIP_FAILED]);
			continue;
		}
		if (xrl_vouched(h, &p)) {
			COUNT(x->skip[SKIP_VOUCHED]);
			continue;
		}
		if (xrld_allow_overlaps(&d->ifs[i], &p)) {
			COUNT(x->skip[SKIP_ALLOWLIST]);
			continue;
		}
		/* a new entry: the fleet shares the penalties' 3/4 */
		if (absent && !xrl_deny_room(h, p.family, &used, &cap) && used >= cap / 4 * 3) {
			skip(x, SKIP_FULL, e->field);
			continue;
		}
		rc = xrl_deny_add(h, &p, ttl, XRL_ORIGIN_FLEET);
		if (rc) {
			COUNT(x->skip[SKIP_FAILED]);
			log_agg(XRL_LOG_WARN, "fleet: deny", "fleet entries not applied",
				"%s: couldn't deny %s from the fleet: %s", d->ifs[i].name, e->field,
				strerror(-rc));
			continue;
		}
		COUNT(x->applied);
		done = true;
	}
	if (held && done)
		COUNT(x->capped);
}

/* An entry of another instance, from the identity process (checked there). */
static void fleet_in(struct xrld *d, const struct xrl_idev *e)
{
	if (d->fleet && d->cfg->fleet.packet)
		deny_apply(d, d->fleet, &e->fleet);
}

int xrld_fleet_start(struct xrld *d)
{
	const struct xrl_fleet_cfg *c = &d->cfg->fleet;

	if (!c->enabled)
		return 0;
	d->fleet = calloc(1, sizeof(*d->fleet));
	if (!d->fleet)
		return -ENOMEM;
	redis_addrs(d->fleet, c);
	d->fleet->n_conf = d->fleet->n_redis;
	xrld_idp_take(d, XRL_IDEV_FLEET, fleet_in);
	log_info("fleet %s: %s%s", c->name, c->packet ? "packet-tier denials shared" : "",
		 d->http && d->cfg->http.fleet[0]
			 ? (c->packet ? ", identity tier in (NODE_SHARE, penalties)"
				      : "identity tier in (NODE_SHARE, penalties)")
			 : "");
	return 0;
}

void xrld_fleet_stop(struct xrld *d)
{
	if (d->fleet)
		free(d->fleet->seen);
	free(d->fleet);
	d->fleet = NULL;
}

/* The fleet's counters, from the identity process (false: it does not answer). */
static bool fleet_stats(struct xrld *d, struct xrl_fleet_stats *st, char *id, size_t idlen)
{
	char err[XRL_ERRLEN];
	json_t *r = xrld_idp_call(d, json_pack("{s:s}", "op", "fleet_stats"), NULL, 0, NULL, err,
				  sizeof(err));
	const char *s;

	memset(st, 0, sizeof(*st));
	if (!json_is_object(r)) {
		json_decref(r);
		if (id)
			snprintf(id, idlen, "-");
		return false;
	}
#define F(n) st->n = (__u64)json_integer_value(json_object_get(r, #n))
	F(live);
	F(connected);
	F(published);
	F(applied);
	F(errors);
	F(dropped);
	F(heartbeats);
	F(redirects);
	F(pruned);
	F(refused);
	F(live_read);
	F(live_over);
	F(log_reset);
#undef F
	s = json_string_value(json_object_get(r, "id"));
	if (id)
		snprintf(id, idlen, "%s", s ? s : "-");
	json_decref(r);
	return true;
}

/* Does p cover the identity tier's Redis (http.backend's host or a
 * cluster seed)? Addresses only: a name is not resolved on the main loop
 * (the fleet's Redis, resolved at start, is checked apart). */
static bool covers_backend(const struct xrl_http_cfg *h, const struct xrl_prefix *p,
			   struct xrl_prefix *hit)
{
	char seeds[sizeof(h->redis_seeds) + sizeof(h->redis_host) + 2], *save = NULL;

	if (!h->redis)
		return false;
	snprintf(seeds, sizeof(seeds), "%s,%s", h->redis_host, h->redis_seeds);
	for (char *t = strtok_r(seeds, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		struct addrinfo hints = { .ai_flags = AI_NUMERICHOST }, *ai;
		char *colon = strrchr(t, ':');

		if (t[0] == '[') {
			t++;
			t[strcspn(t, "]")] = '\0';
		} else if (colon && colon == strchr(t, ':'))
			*colon = '\0'; /* HOST:PORT, not a bare IPv6 address */
		if (!t[0] || getaddrinfo(t, NULL, &hints, &ai))
			continue;
		if (sa_prefix(ai->ai_addr, hit) && overlap(p, hit)) {
			freeaddrinfo(ai);
			return true;
		}
		freeaddrinfo(ai);
	}
	return false;
}

/* why = printf(fmt, hit as text); 1. */
static int guard_says(char *why, size_t len, const char *fmt, const struct xrl_prefix *hit)
{
	char s[64];

	xrl_prefix_str(hit, s, sizeof(s));
	snprintf(why, len, fmt, s);
	return 1;
}

int xrld_deny_guard(struct xrld *d, const struct xrl_prefix *p, char *why, size_t len)
{
	static struct own_addrs host_own; /* without a fleet; the main loop's */
	const struct xrl_penalty_cfg *pc = &d->cfg->penalty;
	const struct xrl_fleet_cfg *c = &d->cfg->fleet;
	struct own_addrs *o = d->fleet ? &d->fleet->own : &host_own;
	const struct xrl_prefix *hit;
	struct xrl_prefix be;

	if (too_wide(d, p)) {
		snprintf(why, len,
			 "it is wider than the penalty floor (/%u for IPv4, /%u for IPv6)",
			 pc->floor4 ? pc->floor4 : 24, pc->floor6 ? pc->floor6 : 48);
		return 1;
	}
	own_refresh(o);
	if ((hit = overlaps_any(p, o->a, o->n)))
		return guard_says(why, len, "it covers this host's own address %s", hit);
	if ((hit = overlaps_any(p, c->protect, (int)c->n_protect)))
		return guard_says(why, len, "it covers %s of fleet.protect", hit);
	if (d->fleet && (hit = overlaps_any(p, d->fleet->redis, d->fleet->n_redis)))
		return guard_says(why, len, "it covers the fleet's Redis at %s", hit);
	if (d->cfg->has_http && covers_backend(&d->cfg->http, p, &be))
		return guard_says(why, len, "it covers the identity tier's Redis at %s", &be);
	for (int i = 0; i < d->n_ifs; i++) {
		if (xrld_allow_overlaps(&d->ifs[i], p)) {
			snprintf(why, len, "it covers an allowlist entry of %s (xrlctl allow list)",
				 d->ifs[i].name);
			return 1;
		}
		if (xrl_vouched(d->ifs[i].h, p)) {
			snprintf(why, len,
				 "it covers a source this host vouches for (xrlctl vouch list)");
			return 1;
		}
	}
	return 0;
}

int xrld_fleet_deny_out(struct xrld *d, const struct xrl_prefix *p, __u64 ttl_ns, bool add)
{
	struct xrl_fleet_entry e = { .op = add ? XRL_FLEET_ADD : XRL_FLEET_DEL,
				     .kind = XRL_FLEET_DENY };

	if (!d->fleet || !d->cfg->fleet.packet)
		return 0;
	if (add && too_wide(d, p))
		return -ERANGE; /* the others would not apply it */
	xrl_prefix_str(p, e.field, sizeof(e.field));
	if (add && ttl_ns)
		e.until_ms = real_ms() + (ttl_ns + 999999) / 1000000;
	/* never waited for: the main loop does not stop for Redis */
	if (xrld_idp_publish(d, &e))
		log_agg(XRL_LOG_WARN, "fleet: queue", "fleet entries dropped",
			"fleet %s: %s stays local: the identity process did not take it",
			d->cfg->fleet.name, e.field);
	return 0;
}

void xrld_fleet_status(struct xrld *d, struct xrl_buf *b, json_t *o)
{
	struct xrl_fleet_stats st;
	char id[128];

	if (!d->fleet)
		return;
	fleet_stats(d, &st, id, sizeof(id));
	if (o) {
		json_object_set_new(o, "fleet",
				    json_pack("{s:s,s:s,s:b,s:I,s:b,s:b,s:I,s:I,s:I}", "name",
					      d->cfg->fleet.name, "member", id, "redis_connected",
					      (int)st.connected, "live_instances",
					      (json_int_t)st.live, "denials_shared",
					      d->cfg->fleet.packet, "identity_tier",
					      d->http && d->cfg->http.fleet[0], "published",
					      (json_int_t)st.published, "applied",
					      (json_int_t)READ(d->fleet->applied), "errors",
					      (json_int_t)st.errors));
		return;
	}
	xrl_buf_printf(b,
		       "fleet %s: %llu live instance%s%s (NODE_SHARE divides by this), "
		       "redis %s; entries published %llu, applied %llu\n",
		       d->cfg->fleet.name, (unsigned long long)st.live, st.live == 1 ? "" : "s",
		       st.connected ? "" : " (last known)", st.connected ? "up" : "DOWN",
		       (unsigned long long)st.published,
		       (unsigned long long)READ(d->fleet->applied));
}

/* Gauges and counters of one value each, with their HELP and TYPE. */
struct fleet_family {
	const char *name, *type, *help;
	__u64 v;
};

static void families(struct xrl_buf *b, const struct fleet_family *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		xrl_prom_family(b, f[i].name, f[i].type, f[i].help);
		xrl_buf_printf(b, "%s %llu\n", f[i].name, (unsigned long long)f[i].v);
	}
}

bool xrld_fleet_stats_get(struct xrld *d, struct xrl_fleet_stats *st)
{
	return d->fleet && fleet_stats(d, st, NULL, 0);
}

void xrld_fleet_metrics(struct xrld *d, struct xrl_buf *b, const struct xrl_fleet_stats *st0)
{
	static const struct xrl_fleet_stats none;
	const struct xrl_fleet_stats *st = st0 ? st0 : &none;
	struct xrld_fleet *x = d->fleet;

	if (!x)
		return;
	const struct fleet_family head[] = {
		{ "xrl_fleet_live_instances", "gauge",
		  "Instances of the fleet with a live heartbeat (the last known while Redis is "
		  "down); NODE_SHARE divides rate and burst by it", st->live },
		{ "xrl_fleet_redis_up", "gauge", "1 when the fleet's Redis answers", st->connected },
		{ "xrl_fleet_entries_published_total", "counter",
		  "Denials and penalties this instance sent to the fleet", st->published },
	};
	const struct fleet_family tail[] = {
		{ "xrl_fleet_entries_capped_total", "counter",
		  "Fleet denials held to this host's penalty.max (penalties off: 1h), those with "
		  "no expiry included", READ(x->capped) },
		{ "xrl_fleet_entries_lifted_total", "counter",
		  "Fleet denials lifted at a reconnect: the fleet's hash no longer named them",
		  READ(x->lifted) },
		{ "xrl_fleet_live_read", "gauge",
		  "The live count Redis answered last, before fleet.max_members caps it",
		  st->live_read },
		{ "xrl_fleet_live_over_max_total", "counter",
		  "Heartbeats that counted more live members than fleet.max_members", st->live_over },
		{ "xrl_fleet_log_resets_total", "counter",
		  "Times the fleet's stream was found behind the last id read, and read again",
		  st->log_reset },
		{ "xrl_fleet_redis_errors_total", "counter",
		  "Failed connects and commands of the fleet's Redis connection", st->errors },
		{ "xrl_fleet_heartbeats_total", "counter", "Heartbeats written", st->heartbeats },
		{ "xrl_fleet_redirects_total", "counter",
		  "Redis Cluster MOVED answers followed (the fleet's slot changed master)",
		  st->redirects },
		{ "xrl_fleet_entries_pruned_total", "counter",
		  "Expired deny and penalty entries deleted from the fleet's hashes", st->pruned },
		{ "xrl_fleet_entries_refused_total", "counter",
		  "Entries read from the fleet and refused (malformed, absurd expiry, a deny "
		  "shorter than the penalty floor)", st->refused + READ(x->refused) },
	};

	families(b, head, sizeof(head) / sizeof(head[0]));
	xrl_prom_family(b, "xrl_fleet_entries_applied_total", "counter",
			"Entries of other instances applied here (deny: per interface)");
	xrl_prom_u64(b, "xrl_fleet_entries_applied_total", "tier", "packet", READ(x->applied));
	xrl_prom_u64(b, "xrl_fleet_entries_applied_total", "tier", "all", st->applied);
	xrl_prom_family(b, "xrl_fleet_entries_skipped_total", "counter",
			"Fleet entries not applied or not sent, by reason");
	for (int i = 0; i < SKIP_N; i++)
		xrl_prom_u64(b, "xrl_fleet_entries_skipped_total", "reason", skip_name[i],
			     READ(x->skip[i]));
	xrl_prom_u64(b, "xrl_fleet_entries_skipped_total", "reason", "queue_full", st->dropped);
	families(b, tail, sizeof(tail) / sizeof(tail[0]));
}
