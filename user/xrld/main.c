// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xrld - the xrl daemon: attaches the packet tier to the configured
 * interfaces, pushes policy, reads refusal samples, escalates penalties,
 * serves metrics and answers xrlctl over a unix socket.
 *
 * One epoll loop. Signals arrive through a signalfd, so no handler does
 * anything but wake the loop. The data plane never depends on this process:
 * kill -9 leaves the program attached and enforcing with its pinned maps,
 * and a restarted xrld picks the same maps up (see loader.c).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <microhttpd.h>
#include <netdb.h>

#include "config.h"
#include "http/http.h"
#include "ctl.h"
#include "log.h"
#include "privs.h"
#include "verify.h"
#include "report.h"
#include "xrl.h"

#define MAX_IFACES   XRL_CFG_MAX_IFACES
#define TOP_SLOTS    (1u << 16)   /* refused-source table; bounded under floods */
#define PEN_SLOTS    (1u << 16)

struct iface {
	char name[IF_NAMESIZE];
	enum xrl_attach_mode mode;
	struct xrl_handle *h;
	struct ring_buffer *rb;
	bool from_config;
};

/* One refused source prefix of one rule on one interface, for `top`. */
struct top_ent {
	bool   used;
	__u8   iface;
	__u8   family;
	__u8   plen;
	__u32  rule_id;
	__u32  addr[4];
	__u64  count;          /* refusals, summed from samples */
	__u64  first_ns, last_ns;
};

/* Penalty state of one source prefix on one interface. */
enum pen_skip {
	PEN_SKIP_RULE_OFF,
	PEN_SKIP_UNVERIFIED,
	PEN_SKIP_FLOOR,
	PEN_SKIP_ALLOWLIST,
	PEN_SKIP_FULL,
	PEN_SKIP_FAILED,
	PEN_SKIP_MAX
};

struct pen_ent {
	bool   used;
	__u8   iface;
	__u8   family;
	__u8   plen;
	__u32  addr[4];
	__u64  last_strike_ns; /* sample time of the last strike; 0 = none */
	__u32  strikes;        /* separate windows with refusals */
	__u32  offenses;       /* deny entries earned so far */
	__u64  last_offense_ns;
};

static struct {
	const char *config_path;
	const char *sock_path;
	const char *pin_root;
	bool foreground;
	struct xrld_config *cfg;
	struct iface ifs[MAX_IFACES];
	int n_ifs;
	char shadow_override[XRL_MAX_RULES][XRL_RULE_NAME_LEN]; /* "name" */
	int shadow_val[XRL_MAX_RULES];
	int n_override;
	int epfd, lfd, sfd, tfd;
	struct top_ent *top;
	struct pen_ent *pen;
	__u64 top_dropped, events_seen, penalties, reloads, reload_failures;
	__u64 pen_skipped[PEN_SKIP_MAX];  /* escalations not made, by reason */
	struct MHD_Daemon *mhd;
	struct xrl_http_server *http;     /* the identity tier, when configured */
	pthread_mutex_t lock;        /* ifs[] and counters vs the metrics thread */
	volatile int stop;
} D = { .sock_path = XRL_SOCKET_DEFAULT, .pin_root = XRL_PIN_ROOT_DEFAULT,
	.lock = PTHREAD_MUTEX_INITIALIZER };

/* ---- small helpers ----------------------------------------------------- */

/* Why a refusal sample earned no strike, or a due penalty was not made. */
static const char *const pen_skip_name[PEN_SKIP_MAX] = {
	[PEN_SKIP_RULE_OFF]   = "rule_off",     /* the rule says penalty: off */
	[PEN_SKIP_UNVERIFIED] = "unverified",   /* source not proven (e.g. a SYN) */
	[PEN_SKIP_FLOOR]      = "below_floor",  /* rule keyed shorter than the floor */
	[PEN_SKIP_ALLOWLIST]  = "allowlisted",  /* prefix overlaps the allowlist */
	[PEN_SKIP_FULL]       = "denylist_full",/* penalties' share of the list used */
	[PEN_SKIP_FAILED]     = "deny_failed",  /* the deny write itself failed */
};

static __u64 hash_key(const void *k, size_t n)
{
	const unsigned char *p = k;
	__u64 h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static struct iface *iface_by_name(const char *name)
{
	for (int i = 0; i < D.n_ifs; i++)
		if (!strcmp(D.ifs[i].name, name))
			return &D.ifs[i];
	return NULL;
}

static const char *rule_name_by_id(struct iface *f, __u32 id, char *buf, size_t len)
{
	struct xrl_ruleset_meta meta;

	/* the policy is the same on every interface; names from the config */
	(void)f;
	(void)meta;
	for (__u32 i = 0; D.cfg && i < D.cfg->policy.n_rules; i++) {
		struct xrl_rule r;

		if (!xrl_rule_compile(&D.cfg->policy.rules[i], &r, NULL, 0) && r.id == id)
			return D.cfg->policy.rules[i].name;
	}
	snprintf(buf, len, "id:%u", id);
	return buf;
}

/* ---- refusal samples: top and penalty escalation ------------------------ */

static void top_note(int ifidx, const struct xrl_event *e)
{
	struct { __u8 i, f, p, pad; __u32 r; __u32 a[4]; } k = {
		.i = (__u8)ifidx, .f = e->family, .p = e->plen, .r = e->rule_id };
	__u64 now = xrl_now_ns();
	__u32 slot;

	memcpy(k.a, e->addr, 16);
	slot = (__u32)hash_key(&k, sizeof(k)) & (TOP_SLOTS - 1);
	/* linear probing, at most 16 steps; a full neighbourhood drops the sample */
	for (int i = 0; i < 16; i++, slot = (slot + 1) & (TOP_SLOTS - 1)) {
		struct top_ent *t = &D.top[slot];

		if (t->used && (t->iface != k.i || t->family != k.f || t->plen != k.p ||
				t->rule_id != k.r || memcmp(t->addr, k.a, 16))) {
			/* reuse a slot idle for 5 minutes */
			if (now - t->last_ns < 300 * XRL_NSEC_PER_SEC)
				continue;
			t->used = false;
		}
		if (!t->used) {
			memset(t, 0, sizeof(*t));
			t->used = true;
			t->iface = k.i;
			t->family = k.f;
			t->plen = k.p;
			t->rule_id = k.r;
			memcpy(t->addr, k.a, 16);
			t->first_ns = now;
		}
		t->count += e->count;
		t->last_ns = now;
		return;
	}
	D.top_dropped++;
}

/* The policy rule a sample came from, or NULL (removed since). */
static const struct xrl_rule_spec *event_rule(const struct xrl_event *e)
{
	for (__u32 i = 0; D.cfg && i < D.cfg->policy.n_rules; i++) {
		const struct xrl_rule_spec *r = &D.cfg->policy.rules[i];

		if ((r->id ? r->id : xrl_rule_id(r->name)) == e->rule_id)
			return r;
	}
	return NULL;
}

/*
 * May this refusal sample count as a strike? Only a refusal by a rule that
 * feeds penalties, of a prefix at least as long as the floor (an aggregate
 * bucket's refusal, a rule keyed on /0 or /8, says nothing about any one
 * source, and denying its key would deny everyone). Returns 0 (no), 1
 * (yes) or 2 (yes if the packet proves its source: penalty: verified; the
 * proof costs a netlink round trip, asked only once the window test passed).
 */
static int strike_ok(const struct xrl_event *e)
{
	const struct xrl_penalty_cfg *pc = &D.cfg->penalty;
	const struct xrl_rule_spec *r;

	if (!pc->enabled || e->action != XRL_ACT_DROP)
		return 0;
	r = event_rule(e);
	if (!r || r->penalty == XRL_PEN_OFF) {
		D.pen_skipped[PEN_SKIP_RULE_OFF]++;
		return 0;
	}
	if (e->plen < (e->family == XRL_AF_INET ? pc->floor4 : pc->floor6)) {
		D.pen_skipped[PEN_SKIP_FLOOR]++;
		return 0;
	}
	return r->penalty == XRL_PEN_VERIFIED ? 2 : 1;
}

/*
 * Does prefix p overlap the allowlist, either way round: covered by an
 * entry (one LPM lookup) or covering one (a walk over the allowlist, only
 * when a penalty is due, which the strike rules make rare)?
 */
static bool allow_overlaps(struct iface *f, const struct xrl_prefix *p)
{
	bool v4 = p->family == XRL_AF_INET;
	int fd = xrl_map_fd(f->h, v4 ? XRL_MAP_ALLOW_V4 : XRL_MAP_ALLOW_V6);
	struct xrl_lpm_v6 k = { .prefixlen = p->plen }, nk, ck;
	size_t ksz = v4 ? sizeof(struct xrl_lpm_v4) : sizeof(struct xrl_lpm_v6);
	struct xrl_allow_val v;
	__u32 m[4];
	void *prev = NULL;

	memcpy(k.addr, p->addr, 16);
	if (!bpf_map_lookup_elem(fd, &k, &v))
		return true;
	xrl_prefix_mask(p->family, p->plen, m);
	while (!bpf_map_get_next_key(fd, prev, &nk)) {
		memcpy(&ck, &nk, ksz);
		prev = &ck;
		if (ck.prefixlen < p->plen)
			continue;
		if ((ck.addr[0] & m[0]) == p->addr[0] &&
		    (v4 || ((ck.addr[1] & m[1]) == p->addr[1] && (ck.addr[2] & m[2]) == p->addr[2] &&
			    (ck.addr[3] & m[3]) == p->addr[3])))
			return true;
	}
	return false;
}

/*
 * Put a due penalty on the denylist, unless that would deny an allowlisted
 * address or fill the list: penalties may use three quarters of it, so an
 * operator's `deny add` always finds room. Returns 0 when denied.
 */
static int penalty_deny(struct iface *f, const struct xrl_prefix *p, __u64 ttl)
{
	__u32 used, cap;
	char buf[64];
	int err;

	if (allow_overlaps(f, p)) {
		D.pen_skipped[PEN_SKIP_ALLOWLIST]++;
		return -EPERM;
	}
	if (!xrl_deny_room(f->h, p->family, &used, &cap) && used >= cap / 4 * 3) {
		if (!D.pen_skipped[PEN_SKIP_FULL]++)
			log_warnx("%s: penalties fill 3/4 of the denylist (%u of %u): no new penalty "
				  "until entries expire (counted in xrld_penalties_skipped_total)",
				  f->name, used, cap);
		return -ENOSPC;
	}
	err = xrl_deny_add(f->h, p, ttl, XRL_ORIGIN_PENALTY);
	if (err) {
		D.pen_skipped[PEN_SKIP_FAILED]++;
		log_warnx("couldn't deny %s on %s: %s", xrl_prefix_str(p, buf, sizeof(buf)), f->name,
			  strerror(-err));
	}
	return err;
}

static void penalty_note(int ifidx, struct iface *f, const struct xrl_event *e)
{
	const struct xrl_penalty_cfg *pc = &D.cfg->penalty;
	struct { __u8 i, f, p, pad; __u32 a[4]; } k = { .i = (__u8)ifidx, .f = e->family, .p = e->plen };
	__u64 now = xrl_now_ns(), ts;
	struct pen_ent *pe = NULL;
	__u32 slot;

	int ok = strike_ok(e);

	if (!ok)
		return;
	/* the program's timestamp: one CPU's samples are >= event_interval apart in it */
	ts = e->ts_ns ? e->ts_ns : now;
	memcpy(k.a, e->addr, 16);
	slot = (__u32)hash_key(&k, sizeof(k)) & (PEN_SLOTS - 1);
	for (int i = 0; i < 16 && !pe; i++, slot = (slot + 1) & (PEN_SLOTS - 1)) {
		struct pen_ent *t = &D.pen[slot];

		if (t->used && t->iface == k.i && t->family == k.f && t->plen == k.p &&
		    !memcmp(t->addr, k.a, 16)) {
			pe = t;
		} else if (!t->used || (t->last_strike_ns + (pc->strikes + 1) * pc->window_ns < ts &&
					now - t->last_offense_ns > 2 * pc->max_ns)) {
			memset(t, 0, sizeof(*t));
			t->used = true;
			t->iface = k.i;
			t->family = k.f;
			t->plen = k.p;
			memcpy(t->addr, k.a, 16);
			pe = t;
		}
	}
	if (!pe)
		return;
	/*
	 * One strike per window of time: samples from several CPUs (one
	 * source's packets spread over receive queues) a few ms apart, on
	 * either side of a window boundary, are one strike, not two.
	 */
	if (pe->last_strike_ns && ts < pe->last_strike_ns + pc->window_ns)
		return;
	if (ok == 2 && xrl_event_proven(e) <= 0) {
		D.pen_skipped[PEN_SKIP_UNVERIFIED]++;
		return;
	}
	/* strikes must be recent; a long quiet spell forgives */
	if (pe->last_strike_ns && ts - pe->last_strike_ns > pc->strikes * pc->window_ns)
		pe->strikes = 0;
	if (pe->offenses && now - pe->last_offense_ns > 2 * pc->max_ns)
		pe->offenses = 0;
	pe->last_strike_ns = ts;
	pe->strikes++;
	if (pe->strikes < pc->strikes)
		return;

	__u64 ttl = pc->base_ns;
	for (__u32 i = 0; i < pe->offenses && ttl < pc->max_ns; i++)
		ttl *= 2;
	if (ttl > pc->max_ns)
		ttl = pc->max_ns;
	struct xrl_prefix p = { .family = e->family, .plen = e->plen };
	char buf[64];

	memcpy(p.addr, e->addr, 16);
	pe->strikes = 0;
	if (penalty_deny(f, &p, ttl))
		return;
	pe->offenses++;
	pe->last_offense_ns = now;
	D.penalties++;
	log_info("%s: %s refused in %u windows: denied for %llus (offense %u)", f->name,
		 xrl_prefix_str(&p, buf, sizeof(buf)), pc->strikes,
		 (unsigned long long)(ttl / XRL_NSEC_PER_SEC), pe->offenses);
}

static int on_event(void *ctx, void *data, size_t size)
{
	int ifidx = (int)(long)ctx;
	const struct xrl_event *e = data;

	if (size < sizeof(*e) || ifidx < 0 || ifidx >= D.n_ifs)
		return 0;
	D.events_seen++;
	top_note(ifidx, e);
	penalty_note(ifidx, &D.ifs[ifidx], e);
	return 0;
}

/* ---- interfaces and policy ---------------------------------------------- */

/* The config's policy with the operator's shadow overrides on top. */
static void effective_policy(const struct xrld_config *c, struct xrl_policy *p)
{
	*p = c->policy;
	for (__u32 i = 0; i < p->n_rules; i++)
		for (int j = 0; j < D.n_override; j++)
			if (!strcmp(p->rules[i].name, D.shadow_override[j]))
				p->rules[i].action = D.shadow_val[j] ? XRL_ACT_SHADOW : XRL_ACT_DROP;
}

static int iface_attach(const char *name, enum xrl_attach_mode mode, bool from_config,
			char *err, size_t errlen)
{
	struct xrl_open_opts o = { .ifname = name, .pin_root = D.pin_root, .mode = mode };
	static struct xrl_policy pol;
	struct iface *f;
	int rc;

	if (iface_by_name(name)) {
		snprintf(err, errlen, "%s is already attached", name);
		return -EEXIST;
	}
	if (D.n_ifs >= MAX_IFACES) {
		snprintf(err, errlen, "at most %d interfaces", MAX_IFACES);
		return -E2BIG;
	}
	if (D.cfg->buckets_max)
		o.buckets_max = D.cfg->buckets_max;
	f = &D.ifs[D.n_ifs];
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->mode = mode;
	f->from_config = from_config;
	rc = xrl_open(&o, &f->h);
	if (rc) {
		snprintf(err, errlen, "couldn't attach to %s: %s", name, strerror(-rc));
		return rc;
	}
	effective_policy(D.cfg, &pol);
	rc = xrl_apply_policy(f->h, &pol, err, errlen);
	if (!rc && D.cfg->event_interval_ns)
		rc = xrl_set_event_interval(f->h, D.cfg->event_interval_ns);
	if (rc) {
		xrl_close(f->h);
		return rc;
	}
	f->rb = ring_buffer__new(xrl_map_fd(f->h, XRL_MAP_EVENTS), on_event,
				 (void *)(long)D.n_ifs, NULL);
	if (!f->rb) {
		log_warn("%s: couldn't read refusal samples", name);
	} else {
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1000 + (__u64)D.n_ifs };

		epoll_ctl(D.epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(f->rb), &ev);
	}
	pthread_mutex_lock(&D.lock);
	D.n_ifs++;
	pthread_mutex_unlock(&D.lock);
	return 0;
}

static void iface_remove(int i, bool detach)
{
	struct iface *f = &D.ifs[i];

	pthread_mutex_lock(&D.lock);
	if (f->rb) {
		epoll_ctl(D.epfd, EPOLL_CTL_DEL, ring_buffer__epoll_fd(f->rb), NULL);
		ring_buffer__free(f->rb);
	}
	if (detach)
		xrl_detach(f->h);
	else
		xrl_close(f->h);
	/* keep indices of the ring buffer contexts stable: re-register the rest */
	for (int j = i; j < D.n_ifs - 1; j++) {
		D.ifs[j] = D.ifs[j + 1];
		if (D.ifs[j].rb) {
			epoll_ctl(D.epfd, EPOLL_CTL_DEL, ring_buffer__epoll_fd(D.ifs[j].rb), NULL);
			ring_buffer__free(D.ifs[j].rb);
			D.ifs[j].rb = ring_buffer__new(xrl_map_fd(D.ifs[j].h, XRL_MAP_EVENTS), on_event,
						       (void *)(long)j, NULL);
			if (D.ifs[j].rb) {
				struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1000 + (__u64)j };

				epoll_ctl(D.epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(D.ifs[j].rb), &ev);
			}
		}
	}
	D.n_ifs--;
	memset(D.top, 0, sizeof(*D.top) * TOP_SLOTS);
	memset(D.pen, 0, sizeof(*D.pen) * PEN_SLOTS);
	pthread_mutex_unlock(&D.lock);
}

/* Push the current config's policy (with overrides) to every interface. */
static int push_policy(char *err, size_t errlen)
{
	static struct xrl_policy pol;
	int rc;

	effective_policy(D.cfg, &pol);
	rc = xrl_policy_validate(&pol, err, errlen);
	if (rc)
		return rc;
	for (int i = 0; i < D.n_ifs; i++) {
		rc = xrl_apply_policy(D.ifs[i].h, &pol, err, errlen);
		if (!rc && D.cfg->event_interval_ns)
			rc = xrl_set_event_interval(D.ifs[i].h, D.cfg->event_interval_ns);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Replace the running config by `next` (already parsed and valid). The new
 * policy is validated before anything is touched; an interface that cannot
 * be attached is reported and the rest goes on.
 */
static int install_config(struct xrld_config *next, char *err, size_t errlen)
{
	static struct xrl_policy pol;
	struct xrld_config *old = D.cfg;
	int rc;

	effective_policy(next, &pol);
	rc = xrl_policy_validate(&pol, err, errlen);
	if (rc)
		return rc;
	/* the metrics thread reads D.cfg and D.http under D.lock */
	pthread_mutex_lock(&D.lock);
	D.cfg = next;
	pthread_mutex_unlock(&D.lock);
	rc = push_policy(err, errlen);
	if (rc) {
		/* should not happen after validation; restore the old one */
		pthread_mutex_lock(&D.lock);
		D.cfg = old;
		pthread_mutex_unlock(&D.lock);
		push_policy(NULL, 0);
		return rc;
	}
	for (__u32 i = 0; i < next->n_ifaces; i++) {
		char e2[XRL_ERRLEN];

		if (iface_by_name(next->ifaces[i].name))
			continue;
		if (iface_attach(next->ifaces[i].name, next->ifaces[i].mode, true, e2, sizeof(e2)))
			log_warnx("%s", e2);
	}
	for (int i = 0; i < D.n_ifs; i++) {
		bool listed = false;

		for (__u32 j = 0; j < next->n_ifaces; j++)
			listed |= !strcmp(next->ifaces[j].name, D.ifs[i].name);
		if (D.ifs[i].from_config && !listed)
			log_warnx("%s is no longer in the policy file but stays attached and "
				  "enforcing; `xrlctl detach %s` removes it", D.ifs[i].name, D.ifs[i].name);
	}
	if (D.cfg->log_level >= 0 && !D.foreground)
		log_set_level(D.cfg->log_level);
	if (next->has_http && D.http) {
		xrl_http_reload(D.http, &next->http);
	} else if (next->has_http) {
		struct xrl_http_server *srv = NULL;
		char e2[XRL_ERRLEN];

		if (xrl_http_start(&next->http, &srv, e2, sizeof(e2)))
			log_err("%s", e2);
		pthread_mutex_lock(&D.lock);
		D.http = srv;
		pthread_mutex_unlock(&D.lock);
	} else if (D.http) {
		struct xrl_http_server *gone = D.http;

		log_warnx("the http: section is gone: the identity tier stops");
		/* unpublished first: a scrape in progress finishes with it */
		pthread_mutex_lock(&D.lock);
		D.http = NULL;
		pthread_mutex_unlock(&D.lock);
		xrl_http_stop(gone);
	}
	free(old);
	return 0;
}

static int reload_from(const char *text, size_t len, const char *name, char *err, size_t errlen)
{
	struct xrld_config *next = calloc(1, sizeof(*next));
	int rc;

	if (!next)
		return -ENOMEM;
	rc = text ? xrl_config_parse(text, len, name, next, err, errlen)
		  : xrl_config_load(name, next, err, errlen);
	if (!rc)
		rc = install_config(next, err, errlen);
	if (rc) {
		free(next);
		D.reload_failures++;
		return rc;
	}
	D.reloads++;
	return 0;
}

/* ---- control socket ------------------------------------------------------ */

static void cmd_status(struct xrl_buf *b, bool json)
{
	if (json)
		xrl_buf_printf(b, "{\"daemon\":{\"pid\":%d,\"config\":", (int)getpid());
	if (json) {
		xrl_buf_json_str(b, D.config_path ? D.config_path : "");
		xrl_buf_printf(b, ",\"pin_dir\":");
		xrl_buf_json_str(b, D.pin_root);
		xrl_buf_printf(b, ",\"reloads\":%llu,\"reload_failures\":%llu,\"penalties\":%llu,"
			       "\"penalties_skipped\":{", (unsigned long long)D.reloads,
			       (unsigned long long)D.reload_failures, (unsigned long long)D.penalties);
		for (int i = 0; i < PEN_SKIP_MAX; i++)
			xrl_buf_printf(b, "%s\"%s\":%llu", i ? "," : "", pen_skip_name[i],
				       (unsigned long long)D.pen_skipped[i]);
		xrl_buf_printf(b, "}},\"interfaces\":[");
	} else {
		xrl_buf_printf(b, "xrld pid %d, config %s, pins %s\n", (int)getpid(),
			       D.config_path ? D.config_path : "-", D.pin_root);
		xrl_buf_printf(b, "%-16s %-8s %-8s %-10s %-18s %s\n", "INTERFACE", "PROG", "MODE",
			       "ATTACHED", "HOW", "RULES");
	}
	for (int i = 0; i < D.n_ifs; i++) {
		struct xrl_attach_info now = *xrl_info(D.ifs[i].h), *in = &now;
		struct xrl_handle *ph;
		const char *how;

		/* xrl_info() is what attach saw; the program may have been
		 * removed since (ip link set dev X xdp off, another loader) */
		if (!xrl_open_pinned(D.pin_root, D.ifs[i].name, &ph)) {
			now.attached = xrl_info(ph)->attached;
			now.prog_id = xrl_info(ph)->prog_id;
			xrl_close(ph);
		}
		how = in->multiprog ? "libxdp dispatcher" : "single program";

		if (json) {
			xrl_buf_printf(b, "%s{\"name\":", i ? "," : "");
			xrl_buf_json_str(b, D.ifs[i].name);
			xrl_buf_printf(b, ",\"prog_id\":%u,\"mode\":\"%s\",\"attached\":%s,"
				       "\"multiprog\":%s,\"rules\":%u}", in->prog_id,
				       in->mode == XRL_MODE_SKB ? "skb" : "native",
				       in->attached ? "true" : "false", in->multiprog ? "true" : "false",
				       D.cfg->policy.n_rules);
		} else {
			xrl_buf_printf(b, "%-16s %-8u %-8s %-10s %-18s %u\n", D.ifs[i].name, in->prog_id,
				       in->mode == XRL_MODE_SKB ? "skb" : "native",
				       in->attached ? "yes" : "NO", how, D.cfg->policy.n_rules);
		}
	}
	if (json)
		xrl_buf_printf(b, "]}\n");
}

static int cmd_stats(struct xrl_buf *b, bool json)
{
	static struct xrl_stats st;
	struct xrl_ruleset_meta meta;

	if (json)
		xrl_buf_printf(b, "{\"interfaces\":[");
	for (int i = 0; i < D.n_ifs; i++) {
		if (xrl_read_stats(D.ifs[i].h, &st) || xrl_read_rule_names(D.ifs[i].h, &meta))
			return 1;
		if (json && i)
			xrl_buf_printf(b, ",");
		xrl_report_stats(b, D.ifs[i].name, &st, &meta, xrl_bucket_count(D.ifs[i].h), NULL, 0, json);
	}
	if (json)
		xrl_buf_printf(b, "]}\n");
	return 0;
}

static int top_cmp(const void *a, const void *b)
{
	const struct top_ent *x = *(const struct top_ent *const *)a, *y = *(const struct top_ent *const *)b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

static int cmd_top(struct xrl_buf *b, const char *rule, long n, bool json)
{
	struct top_ent **v = malloc(sizeof(*v) * TOP_SLOTS);
	__u32 want_id = 0;
	size_t m = 0;
	char nb[32];

	if (!v)
		return 1;
	if (rule) {
		bool found = false;

		for (__u32 i = 0; i < D.cfg->policy.n_rules; i++)
			if (!strcmp(D.cfg->policy.rules[i].name, rule)) {
				struct xrl_rule r;

				xrl_rule_compile(&D.cfg->policy.rules[i], &r, NULL, 0);
				want_id = r.id;
				found = true;
			}
		if (!found) {
			xrl_buf_printf(b, "no rule named '%s'\n", rule);
			free(v);
			return 1;
		}
	}
	for (__u32 i = 0; i < TOP_SLOTS; i++)
		if (D.top[i].used && (!rule || D.top[i].rule_id == want_id))
			v[m++] = &D.top[i];
	qsort(v, m, sizeof(*v), top_cmp);
	if (json)
		xrl_buf_printf(b, "[");
	else
		xrl_buf_printf(b, "%-44s %-12s %-10s %12s %10s\n", "SOURCE", "INTERFACE", "RULE",
			       "REFUSED", "LAST (s)");
	for (size_t i = 0; i < m && (long)i < n; i++) {
		struct xrl_prefix p = { .family = v[i]->family, .plen = v[i]->plen };
		const char *iname = v[i]->iface < D.n_ifs ? D.ifs[v[i]->iface].name : "?";
		const char *rn = rule_name_by_id(NULL, v[i]->rule_id, nb, sizeof(nb));
		double ago = (double)(xrl_now_ns() - v[i]->last_ns) / 1e9;
		char buf[64];

		memcpy(p.addr, v[i]->addr, 16);
		xrl_prefix_str(&p, buf, sizeof(buf));
		if (json)
			xrl_buf_printf(b, "%s{\"source\":\"%s\",\"interface\":\"%s\",\"rule\":\"%s\","
				       "\"refused\":%llu,\"last_seen_s_ago\":%.1f}", i ? "," : "", buf,
				       iname, rn, (unsigned long long)v[i]->count, ago);
		else
			xrl_buf_printf(b, "%-44s %-12s %-10s %12llu %10.1f\n", buf, iname, rn,
				       (unsigned long long)v[i]->count, ago);
	}
	if (json)
		xrl_buf_printf(b, "]\n");
	free(v);
	return 0;
}

static int parse_ttl(int argc, char **argv, int from, __u64 *ttl, struct xrl_buf *b)
{
	char err[XRL_ERRLEN];

	*ttl = 0;
	for (int i = from; i < argc; i++) {
		if (!strcmp(argv[i], "--ttl") && i + 1 < argc) {
			if (xrl_duration_parse(argv[i + 1], ttl, err, sizeof(err))) {
				xrl_buf_printf(b, "--ttl: %s\n", err);
				return 2;
			}
			if (!*ttl) {
				/* 0 would store a permanent entry; leave --ttl out for that */
				xrl_buf_printf(b, "--ttl: '%s' must be above zero\n", argv[i + 1]);
				return 2;
			}
			i++;
		} else {
			xrl_buf_printf(b, "unexpected argument '%s'\n", argv[i]);
			return 2;
		}
	}
	return 0;
}

static int cmd_list(struct xrl_buf *b, int argc, char **argv, bool deny, bool json)
{
	struct xrl_prefix p;
	char err[XRL_ERRLEN];
	__u64 ttl = 0;
	int rc;

	if (argc < 2) {
		xrl_buf_printf(b, "usage: %s add|del CIDR | list\n", deny ? "deny add CIDR [--ttl D]" : "allow");
		return 2;
	}
	if (!strcmp(argv[1], "list")) {
		for (int i = 0; i < D.n_ifs; i++) {
			if (!json)
				xrl_buf_printf(b, "%s%s:\n", i ? "\n" : "", D.ifs[i].name);
			xrl_report_list(b, D.ifs[i].h, deny, json);
			if (json)
				break; /* the lists are the same on every interface */
		}
		xrl_buf_printf(b, "%s", json ? "\n" : "");
		return 0;
	}
	if ((strcmp(argv[1], "add") && strcmp(argv[1], "del")) || argc < 3) {
		xrl_buf_printf(b, "usage: %s add|del CIDR | list\n", deny ? "deny" : "allow");
		return 2;
	}
	if (xrl_prefix_parse(argv[2], &p, err, sizeof(err))) {
		xrl_buf_printf(b, "%s\n", err);
		return 2;
	}
	rc = parse_ttl(argc, argv, 3, &ttl, b);
	if (rc)
		return rc;
	if (ttl && (!deny || strcmp(argv[1], "add"))) {
		xrl_buf_printf(b, "--ttl only applies to deny add\n");
		return 2;
	}
	if (!D.n_ifs) {
		xrl_buf_printf(b, "no interface is attached\n");
		return 1;
	}
	for (int i = 0; i < D.n_ifs; i++) {
		struct xrl_handle *h = D.ifs[i].h;

		if (!strcmp(argv[1], "add"))
			rc = deny ? xrl_deny_add(h, &p, ttl, XRL_ORIGIN_RUNTIME) : xrl_allow_add(h, &p);
		else
			rc = deny ? xrl_deny_del(h, &p) : xrl_allow_del(h, &p);
		if (rc == -ENOENT) {
			xrl_buf_printf(b, "%s is not on the %s list\n", argv[2], deny ? "deny" : "allow");
			return 1;
		}
		if (rc) {
			xrl_buf_printf(b, "couldn't update %s: %s\n", D.ifs[i].name, strerror(-rc));
			return 1;
		}
	}
	xrl_buf_printf(b, "%s %s %s%s\n", deny ? "deny" : "allow",
		       !strcmp(argv[1], "add") ? "added" : "removed", argv[2], "");
	return 0;
}

static int handle(int argc, char **argv, struct xrl_buf *b)
{
	char err[XRL_ERRLEN] = "";
	bool json = false;
	int n = 0;

	/* --json anywhere */
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else
			argv[n++] = argv[i];
	}
	argc = n;
	if (argc < 1) {
		xrl_buf_printf(b, "empty request\n");
		return 2;
	}
	if (!strcmp(argv[0], "status")) {
		cmd_status(b, json);
		return 0;
	}
	if (!strcmp(argv[0], "stats"))
		return cmd_stats(b, json);
	if (!strcmp(argv[0], "top")) {
		const char *rule = NULL;
		long cnt = 20;

		for (int i = 1; i < argc; i++) {
			if (!strcmp(argv[i], "--rule") && i + 1 < argc) {
				rule = argv[++i];
			} else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
				char *end;

				cnt = strtol(argv[++i], &end, 10);
				if (*end || cnt < 1) {
					xrl_buf_printf(b, "-n wants a positive number\n");
					return 2;
				}
			} else {
				xrl_buf_printf(b, "usage: top [--rule NAME] [-n N] [--json]\n");
				return 2;
			}
		}
		return cmd_top(b, rule, cnt, json);
	}
	if (!strcmp(argv[0], "allow") || !strcmp(argv[0], "deny"))
		return cmd_list(b, argc, argv, argv[0][0] == 'd', json);
	if (!strcmp(argv[0], "attach")) {
		enum xrl_attach_mode mode = XRL_MODE_NATIVE;

		if (argc != 2 && !(argc == 4 && !strcmp(argv[2], "--mode"))) {
			xrl_buf_printf(b, "usage: attach IFACE [--mode native|skb|auto]\n");
			return 2;
		}
		if (argc == 4) {
			if (!strcmp(argv[3], "skb")) mode = XRL_MODE_SKB;
			else if (!strcmp(argv[3], "auto")) mode = XRL_MODE_AUTO;
			else if (strcmp(argv[3], "native")) {
				xrl_buf_printf(b, "--mode: want native, skb or auto\n");
				return 2;
			}
		}
		if (iface_attach(argv[1], mode, false, err, sizeof(err))) {
			xrl_buf_printf(b, "%s\n", err);
			return 1;
		}
		xrl_buf_printf(b, "%s attached\n", argv[1]);
		return 0;
	}
	if (!strcmp(argv[0], "detach")) {
		if (argc != 2) {
			xrl_buf_printf(b, "usage: detach IFACE\n");
			return 2;
		}
		for (int i = 0; i < D.n_ifs; i++) {
			if (!strcmp(D.ifs[i].name, argv[1])) {
				iface_remove(i, true);
				xrl_buf_printf(b, "%s detached, pinned state removed\n", argv[1]);
				return 0;
			}
		}
		xrl_buf_printf(b, "%s is not attached by this xrld\n", argv[1]);
		return 1;
	}
	if (!strcmp(argv[0], "policy")) {
		if (argc >= 2 && !strcmp(argv[1], "show")) {
			char *buf = malloc(1 << 16);

			if (!buf)
				return 1;
			xrl_config_summary(D.cfg, buf, 1 << 16);
			if (json) {
				xrl_buf_printf(b, "{\"config\":");
				xrl_buf_json_str(b, D.config_path ? D.config_path : "");
				xrl_buf_printf(b, ",\"summary\":");
				xrl_buf_json_str(b, buf);
				xrl_buf_printf(b, ",\"shadow_overrides\":{");
				for (int i = 0; i < D.n_override; i++) {
					xrl_buf_printf(b, "%s", i ? "," : "");
					xrl_buf_json_str(b, D.shadow_override[i]);
					xrl_buf_printf(b, ":%s", D.shadow_val[i] ? "true" : "false");
				}
				xrl_buf_printf(b, "}}\n");
			} else {
				xrl_buf_printf(b, "%s", buf);
				for (int i = 0; i < D.n_override; i++)
					xrl_buf_printf(b, "override: rule %s shadow %s (xrlctl shadow)\n",
						       D.shadow_override[i], D.shadow_val[i] ? "on" : "off");
			}
			free(buf);
			return 0;
		}
		if (argc == 4 && !strcmp(argv[1], "apply")) {
			/* argv[2] = the file's name, argv[3] = its text */
			if (reload_from(argv[3], strlen(argv[3]), argv[2], err, sizeof(err))) {
				xrl_buf_printf(b, "policy refused, the running policy stays in force: %s\n", err);
				return 1;
			}
			xrl_buf_printf(b, "policy from %s applied to %d interface(s)\n", argv[2], D.n_ifs);
			log_info("policy from %s applied by xrlctl", argv[2]);
			return 0;
		}
		xrl_buf_printf(b, "usage: policy show | policy apply FILE\n");
		return 2;
	}
	if (!strcmp(argv[0], "shadow")) {
		bool found = false;
		int on, k;

		if (argc != 3 || (strcmp(argv[2], "on") && strcmp(argv[2], "off"))) {
			xrl_buf_printf(b, "usage: shadow RULE on|off\n");
			return 2;
		}
		for (__u32 i = 0; i < D.cfg->policy.n_rules; i++)
			found |= !strcmp(D.cfg->policy.rules[i].name, argv[1]);
		if (!found) {
			xrl_buf_printf(b, "no rule named '%s'\n", argv[1]);
			return 1;
		}
		on = !strcmp(argv[2], "on");
		for (k = 0; k < D.n_override; k++)
			if (!strcmp(D.shadow_override[k], argv[1]))
				break;
		if (k == D.n_override) {
			if (D.n_override >= XRL_MAX_RULES) {
				xrl_buf_printf(b, "too many overrides\n");
				return 1;
			}
			snprintf(D.shadow_override[k], XRL_RULE_NAME_LEN, "%s", argv[1]);
			D.n_override++;
		}
		D.shadow_val[k] = on;
		if (push_policy(err, sizeof(err))) {
			xrl_buf_printf(b, "%s\n", err);
			return 1;
		}
		xrl_buf_printf(b, "rule %s: shadow %s (until xrld restarts; set `action:` in the "
			       "policy file to make it permanent)\n", argv[1], on ? "on" : "off");
		return 0;
	}
	xrl_buf_printf(b, "unknown command '%s'\n", argv[0]);
	return 2;
}

/* ---- control socket clients -------------------------------------------- */

#define CTL_CLIENTS     16      /* control connections open at once */
#define CTL_TAG         2000    /* epoll tag of client slot i: CTL_TAG + i */
#define CTL_DEADLINE_NS (2 * 1000000000ULL) /* to send the request; to take the answer */

/*
 * A control client, served from the event loop without blocking it: the
 * request is read as it arrives, handled when the client shuts down its
 * write side, and the answer written as the socket takes it. Each phase has
 * CTL_DEADLINE_NS in total, however the client dribbles its bytes, so no
 * client holds the loop or a slot for longer. The socket is 0600 (root's),
 * so the slots bound mistakes more than attacks.
 */
struct ctl_client {
	bool   used;
	bool   answering;       /* the request was handled; writing hdr + out */
	int    fd;
	char  *buf;             /* the request so far, not NUL-terminated */
	size_t len, cap;
	char   hdr[16];         /* "<exit code>\n" */
	size_t hdr_len;
	struct xrl_buf out;     /* the payload */
	size_t off;             /* bytes of hdr + out written */
	__u64  deadline;        /* CLOCK_MONOTONIC ns */
};

static struct ctl_client ctl_cl[CTL_CLIENTS];

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

static void ctl_close(struct ctl_client *c)
{
	/* closing the fd also takes it out of the epoll set */
	close(c->fd);
	free(c->buf);
	xrl_buf_free(&c->out);
	*c = (struct ctl_client){ .fd = -1 };
}

/* Write what the socket takes of hdr + out; close when all is out. */
static void ctl_write(struct ctl_client *c)
{
	size_t total = c->hdr_len + c->out.len;

	while (c->off < total) {
		struct iovec iov[2];
		int n = 0;
		ssize_t w;

		if (c->off < c->hdr_len)
			iov[n++] = (struct iovec){ c->hdr + c->off, c->hdr_len - c->off };
		if (c->out.len) {
			size_t o = c->off > c->hdr_len ? c->off - c->hdr_len : 0;

			iov[n++] = (struct iovec){ c->out.p + o, c->out.len - o };
		}
		w = writev(c->fd, iov, n);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (w <= 0)
			break;
		c->off += (size_t)w;
	}
	ctl_close(c);
}

/* The whole request is in: handle it and start the answer. */
static void ctl_answer(struct ctl_client *c, int slot)
{
	struct epoll_event ev = { .events = EPOLLOUT, .data.u64 = CTL_TAG + (__u64)slot };
	char *argv[XRL_CTL_MAXARGS + 1];
	int code, argc;

	if (xrl_ctl_decode(c->buf, c->len, &argc, argv)) {
		xrl_buf_printf(&c->out, "malformed request\n");
		code = 2;
	} else {
		code = handle(argc, argv, &c->out);
	}
	if (c->out.oom)
		code = 1;
	c->hdr_len = (size_t)snprintf(c->hdr, sizeof(c->hdr), "%d\n", code);
	c->answering = true;
	c->deadline = mono_ns() + CTL_DEADLINE_NS;
	if (epoll_ctl(D.epfd, EPOLL_CTL_MOD, c->fd, &ev)) {
		ctl_close(c);
		return;
	}
	ctl_write(c);
}

/* Read what has arrived; the client's shutdown (EOF) ends the request. */
static void ctl_read(struct ctl_client *c, int slot)
{
	for (;;) {
		ssize_t r;

		if (c->len == c->cap) {
			/* one byte past the limit tells a full request from a larger one */
			size_t cap = c->cap ? c->cap * 2 : 4096;
			char *np;

			if (c->len > XRL_CTL_MAX) {
				log_warnx("control client dropped: request larger than %d bytes",
					  XRL_CTL_MAX);
				ctl_close(c);
				return;
			}
			if (cap > XRL_CTL_MAX + 1)
				cap = XRL_CTL_MAX + 1;
			np = realloc(c->buf, cap);
			if (!np) {
				ctl_close(c);
				return;
			}
			c->buf = np;
			c->cap = cap;
		}
		r = read(c->fd, c->buf + c->len, c->cap - c->len);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (r < 0) {
			ctl_close(c);
			return;
		}
		if (r == 0)
			break;
		c->len += (size_t)r;
	}
	ctl_answer(c, slot);
}

static void ctl_event(int slot)
{
	struct ctl_client *c = &ctl_cl[slot];

	if (!c->used)
		return;
	if (c->answering)
		ctl_write(c);
	else
		ctl_read(c, slot);
}

static void ctl_accept(int lfd)
{
	static const char busy[] = "1\nxrld is busy: too many control connections, try again\n";
	struct epoll_event ev = { .events = EPOLLIN };
	int fd, i;

	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	for (i = 0; i < CTL_CLIENTS && ctl_cl[i].used; i++)
		;
	if (i == CTL_CLIENTS) {
		/* best effort: an empty socket buffer takes one line without blocking */
		if (write(fd, busy, sizeof(busy) - 1) < 0)
			log_debug("couldn't tell a control client that xrld is busy");
		close(fd);
		return;
	}
	ctl_cl[i] = (struct ctl_client){ .used = true, .fd = fd,
					 .deadline = mono_ns() + CTL_DEADLINE_NS };
	ev.data.u64 = CTL_TAG + (__u64)i;
	if (epoll_ctl(D.epfd, EPOLL_CTL_ADD, fd, &ev)) {
		ctl_close(&ctl_cl[i]);
		return;
	}
	ctl_read(&ctl_cl[i], i);
}

/* Drop clients past their deadline; returns the epoll timeout (ms) until the next one. */
static int ctl_expire(void)
{
	__u64 now = mono_ns(), next = 0;

	for (int i = 0; i < CTL_CLIENTS; i++) {
		struct ctl_client *c = &ctl_cl[i];

		if (!c->used)
			continue;
		if (c->deadline <= now) {
			log_warnx("control client dropped: %s not done within %llu s",
				  c->answering ? "answer" : "request",
				  CTL_DEADLINE_NS / 1000000000ULL);
			ctl_close(c);
			continue;
		}
		if (!next || c->deadline < next)
			next = c->deadline;
	}
	/* rounded up, so the loop does not wake just before the deadline */
	return next ? (int)((next - now + 999999) / 1000000) : -1;
}

static int listen_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[PATH_MAX], *slash;
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST)
			return -errno;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* someone answering there means another xrld: refuse to start */
	if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -EADDRINUSE;
	}
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(path, 0600) || listen(fd, 16)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* ---- metrics (Prometheus text) -------------------------------------------- */

static void metrics_text(struct xrl_buf *b)
{
	static struct xrl_stats st;
	static const char *vn[XRL_V_MAX] = { "passed", "dropped", "shadow_dropped" };
	struct xrl_ruleset_meta meta;

	xrl_buf_printf(b, "# HELP xrl_rule_packets_total Packets per rule and verdict.\n"
		       "# TYPE xrl_rule_packets_total counter\n");
	pthread_mutex_lock(&D.lock);
	for (int i = 0; i < D.n_ifs; i++) {
		if (xrl_read_stats(D.ifs[i].h, &st) || xrl_read_rule_names(D.ifs[i].h, &meta))
			continue;
		for (__u32 r = 0; r < st.n_rules; r++)
			for (int v = 0; v < XRL_V_MAX; v++)
				xrl_buf_printf(b, "xrl_rule_packets_total{interface=\"%s\",rule=\"%s\",verdict=\"%s\"} %llu\n",
					       D.ifs[i].name, meta.names[r], vn[v],
					       (unsigned long long)st.rules[r].pkts[v]);
	}
	xrl_buf_printf(b, "# HELP xrl_rule_bytes_total Bytes per rule and verdict.\n"
		       "# TYPE xrl_rule_bytes_total counter\n");
	for (int i = 0; i < D.n_ifs; i++) {
		if (xrl_read_stats(D.ifs[i].h, &st) || xrl_read_rule_names(D.ifs[i].h, &meta))
			continue;
		for (__u32 r = 0; r < st.n_rules; r++)
			for (int v = 0; v < XRL_V_MAX; v++)
				xrl_buf_printf(b, "xrl_rule_bytes_total{interface=\"%s\",rule=\"%s\",verdict=\"%s\"} %llu\n",
					       D.ifs[i].name, meta.names[r], vn[v],
					       (unsigned long long)st.rules[r].bytes[v]);
	}
	xrl_buf_printf(b, "# HELP xrl_packets_total Global packet counters of the XDP program.\n"
		       "# TYPE xrl_packets_total counter\n");
	for (int i = 0; i < D.n_ifs; i++) {
		if (xrl_read_stats(D.ifs[i].h, &st))
			continue;
		for (int g = 0; g < XRL_G_MAX; g++)
			xrl_buf_printf(b, "xrl_packets_total{interface=\"%s\",counter=\"%s\"} %llu\n",
				       D.ifs[i].name, xrl_global_name(g), (unsigned long long)st.global.c[g]);
	}
	xrl_buf_printf(b, "# HELP xrl_buckets Source buckets in the shared table.\n# TYPE xrl_buckets gauge\n");
	for (int i = 0; i < D.n_ifs; i++)
		xrl_buf_printf(b, "xrl_buckets{interface=\"%s\"} %ld\n", D.ifs[i].name,
			       xrl_bucket_count(D.ifs[i].h));
	xrl_buf_printf(b, "# HELP xrl_bucket_evictions_total Buckets evicted from the full LRU table (new - in use).\n"
		       "# TYPE xrl_bucket_evictions_total counter\n");
	for (int i = 0; i < D.n_ifs; i++) {
		long n = xrl_bucket_count(D.ifs[i].h);

		if (xrl_read_stats(D.ifs[i].h, &st))
			continue;
		xrl_buf_printf(b, "xrl_bucket_evictions_total{interface=\"%s\"} %lld\n", D.ifs[i].name,
			       (long long)st.global.c[XRL_G_BUCKET_NEW] > n
				       ? (long long)st.global.c[XRL_G_BUCKET_NEW] - n : 0LL);
	}
	xrl_buf_printf(b, "# HELP xrl_denylist_entries Entries on the denylist.\n# TYPE xrl_denylist_entries gauge\n");
	for (int i = 0; i < D.n_ifs; i++) {
		struct xrl_config c;
		__u32 zero = 0;

		if (!bpf_map_lookup_elem(xrl_map_fd(D.ifs[i].h, XRL_MAP_CONFIG), &zero, &c))
			xrl_buf_printf(b, "xrl_denylist_entries{interface=\"%s\"} %u\n", D.ifs[i].name,
				       c.deny_v4_n + c.deny_v6_n);
	}
	xrl_buf_printf(b, "# HELP xrl_events_lost_total Refusal samples lost (ring buffer full).\n"
		       "# TYPE xrl_events_lost_total counter\n");
	for (int i = 0; i < D.n_ifs; i++)
		if (!xrl_read_stats(D.ifs[i].h, &st))
			xrl_buf_printf(b, "xrl_events_lost_total{interface=\"%s\"} %llu\n", D.ifs[i].name,
				       (unsigned long long)st.global.c[XRL_G_EVENTS_LOST]);
	xrl_buf_printf(b, "# TYPE xrld_events_total counter\nxrld_events_total %llu\n"
		       "# TYPE xrld_penalties_total counter\nxrld_penalties_total %llu\n"
		       "# TYPE xrld_reloads_total counter\nxrld_reloads_total %llu\n"
		       "# TYPE xrld_reload_failures_total counter\nxrld_reload_failures_total %llu\n"
		       "# TYPE xrld_top_dropped_total counter\nxrld_top_dropped_total %llu\n",
		       (unsigned long long)D.events_seen, (unsigned long long)D.penalties,
		       (unsigned long long)D.reloads, (unsigned long long)D.reload_failures,
		       (unsigned long long)D.top_dropped);
	xrl_buf_printf(b, "# HELP xrld_penalties_skipped_total Refusal samples that earned no strike, "
		       "and due penalties not made, by reason.\n"
		       "# TYPE xrld_penalties_skipped_total counter\n");
	for (int i = 0; i < PEN_SKIP_MAX; i++)
		xrl_buf_printf(b, "xrld_penalties_skipped_total{reason=\"%s\"} %llu\n", pen_skip_name[i],
			       (unsigned long long)D.pen_skipped[i]);
	if (D.http)
		xrl_http_metrics(D.http, b);
	pthread_mutex_unlock(&D.lock);
}

static enum MHD_Result on_metrics(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct MHD_Response *r;
	struct xrl_buf b = {};
	enum MHD_Result ret;
	int status = MHD_HTTP_OK;

	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
		xrl_buf_printf(&b, "GET only\n");
	} else if (!strcmp(url, "/metrics")) {
		metrics_text(&b);
	} else if (!strcmp(url, "/healthz")) {
		xrl_buf_printf(&b, "ok\n");
	} else {
		status = MHD_HTTP_NOT_FOUND;
		xrl_buf_printf(&b, "not found; try /metrics\n");
	}
	r = MHD_create_response_from_buffer(b.len, b.p ? b.p : (char *)"", MHD_RESPMEM_MUST_COPY);
	xrl_buf_free(&b);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4");
	ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

/* HOST:PORT or [V6]:PORT; a host name is resolved once, at start. */
static int start_metrics(const char *hostport)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *ai;
	char host[80], port_s[8];
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
	int port;

	if (xrl_hostport_parse(hostport, strlen(hostport), host, sizeof(host), &port))
		return -EINVAL;
	snprintf(port_s, sizeof(port_s), "%d", port);
	if (getaddrinfo(host, port_s, &hints, &ai) || !ai)
		return -EINVAL;
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	D.mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_metrics, NULL,
				 MHD_OPTION_SOCK_ADDR, ai->ai_addr,
				 MHD_OPTION_CONNECTION_LIMIT, 64U, MHD_OPTION_CONNECTION_TIMEOUT, 10U,
				 MHD_OPTION_END);
	freeaddrinfo(ai);
	return D.mhd ? 0 : -EADDRINUSE;
}

/* ---- main ---------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f, "usage: xrld --config FILE [--foreground] [--socket PATH] [--pin-dir DIR] [-v]\n"
		   "       xrld --check FILE\n");
}

/* Is HOST:PORT's port below 1024 (binding it needs CAP_NET_BIND_SERVICE)? */
static bool low_port(const char *hostport)
{
	char host[256];
	int port;

	return hostport[0] && !xrl_hostport_parse(hostport, strlen(hostport), host, sizeof(host), &port) &&
	       port < 1024;
}

/*
 * After the interfaces are attached and before any thread starts: keep
 * what a reload needs to attach or detach an interface, CAP_BPF and
 * CAP_NET_ADMIN (an XDP program takes both) and CAP_PERFMON (measured:
 * without it the verifier refuses xrl's program with EPERM), and
 * CAP_NET_BIND_SERVICE only for a configured port below 1024. Everything
 * else goes for good, CAP_SYS_ADMIN first among them: map reads and writes,
 * the ring buffer and the pins need no capability on descriptors xrld holds.
 */
static int drop_privileges(void)
{
	__u64 keep = XRL_CAP(CAP_BPF) | XRL_CAP(CAP_NET_ADMIN) | XRL_CAP(CAP_PERFMON);
	__u64 eff, prm;
	int err;

	if ((D.cfg->has_http && low_port(D.cfg->http.listen)) || low_port(D.cfg->metrics))
		keep |= XRL_CAP(CAP_NET_BIND_SERVICE);
	err = xrl_caps_limit(keep);
	if (err)
		return err;
	if (!xrl_caps_get(&eff, &prm))
		log_debug("capabilities now 0x%llx (permitted 0x%llx)", (unsigned long long)eff,
			  (unsigned long long)prm);
	return 0;
}

static void tick(void)
{
	for (int i = 0; i < D.n_ifs; i++)
		xrl_deny_gc(D.ifs[i].h);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", required_argument, NULL, 'n' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "socket", required_argument, NULL, 's' },
		{ "pin-dir", required_argument, NULL, 'p' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *check = NULL;
	char err[XRL_ERRLEN];
	struct itimerspec its = { .it_interval.tv_sec = 1, .it_value.tv_sec = 1 };
	struct epoll_event ev;
	sigset_t mask;
	int c, verbose = 0, rc;

	while ((c = getopt_long(argc, argv, "c:n:fs:p:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'c': D.config_path = optarg; break;
		case 'n': check = optarg; break;
		case 'f': D.foreground = true; break;
		case 's': D.sock_path = optarg; break;
		case 'p': D.pin_root = optarg; break;
		case 'v': verbose++; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || (!check && !D.config_path)) {
		usage(stderr);
		return 2;
	}
	log_init("xrld", verbose > 1 ? XRL_LOG_DEBUG : verbose ? XRL_LOG_INFO : XRL_LOG_INFO,
		 !(D.foreground || check));
	log_hook_libs();

	D.cfg = calloc(1, sizeof(*D.cfg));
	if (!D.cfg)
		return 1;
	if (check) {
		char *sum = malloc(1 << 16);

		if (xrl_config_load(check, D.cfg, err, sizeof(err))) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		if (sum && !xrl_config_summary(D.cfg, sum, 1 << 16))
			printf("%s: ok\n%s", check, sum);
		free(sum);
		return 0;
	}
	if (xrl_config_load(D.config_path, D.cfg, err, sizeof(err))) {
		log_err("%s", err);
		return 1;
	}
	if (D.cfg->log_level >= 0 && !verbose)
		log_set_level(D.cfg->log_level);

	D.top = calloc(TOP_SLOTS, sizeof(*D.top));
	D.pen = calloc(PEN_SLOTS, sizeof(*D.pen));
	if (!D.top || !D.pen)
		return 1;

	sigemptyset(&mask);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	D.sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	D.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	D.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (D.sfd < 0 || D.tfd < 0 || D.epfd < 0) {
		log_warn("couldn't set up the event loop");
		return 1;
	}
	timerfd_settime(D.tfd, 0, &its, NULL);

	D.lfd = listen_socket(D.sock_path);
	if (D.lfd < 0) {
		log_err("couldn't listen on %s: %s", D.sock_path,
			D.lfd == -EADDRINUSE ? "another xrld answers there" : strerror(-D.lfd));
		return 1;
	}
	for (__u32 i = 0; i < D.cfg->n_ifaces; i++) {
		if (iface_attach(D.cfg->ifaces[i].name, D.cfg->ifaces[i].mode, true, err, sizeof(err))) {
			log_err("%s", err);
			unlink(D.sock_path);
			return 1;
		}
		log_info("%s: enforcing %u rules", D.cfg->ifaces[i].name, D.cfg->policy.n_rules);
	}
	if ((rc = drop_privileges())) {
		log_err("couldn't drop privileges: %s", strerror(-rc));
		unlink(D.sock_path);
		return 1;
	}
	if (D.cfg->has_http && xrl_http_start(&D.cfg->http, &D.http, err, sizeof(err))) {
		log_err("%s", err);
		unlink(D.sock_path);
		return 1;
	}
	if (D.cfg->metrics[0] && (rc = start_metrics(D.cfg->metrics))) {
		log_err("couldn't serve metrics on %s: %s", D.cfg->metrics, strerror(-rc));
		unlink(D.sock_path);
		return 1;
	}

	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 1 };
	epoll_ctl(D.epfd, EPOLL_CTL_ADD, D.lfd, &ev);
	ev.data.u64 = 2;
	epoll_ctl(D.epfd, EPOLL_CTL_ADD, D.sfd, &ev);
	ev.data.u64 = 3;
	epoll_ctl(D.epfd, EPOLL_CTL_ADD, D.tfd, &ev);

	if (!D.foreground && daemon(0, 0)) {
		log_warn("couldn't go to the background");
		return 1;
	}
	log_info("ready: %d interface(s), socket %s, pins under %s", D.n_ifs, D.sock_path, D.pin_root);

	while (!D.stop) {
		struct epoll_event evs[16];
		int n = epoll_wait(D.epfd, evs, 16, ctl_expire());

		if (n < 0 && errno != EINTR) {
			log_warn("epoll_wait");
			break;
		}
		for (int i = 0; i < n; i++) {
			__u64 tag = evs[i].data.u64;

			if (tag == 1) {
				ctl_accept(D.lfd);
			} else if (tag >= CTL_TAG && tag - CTL_TAG < CTL_CLIENTS) {
				ctl_event((int)(tag - CTL_TAG));
			} else if (tag == 2) {
				struct signalfd_siginfo si;

				if (read(D.sfd, &si, sizeof(si)) != sizeof(si))
					continue;
				if (si.ssi_signo == SIGHUP) {
					if (reload_from(NULL, 0, D.config_path, err, sizeof(err)))
						log_err("reload refused, the running policy stays in force: %s", err);
					else
						log_info("reloaded %s", D.config_path);
				} else {
					D.stop = 1;
				}
			} else if (tag == 3) {
				__u64 exp;

				if (read(D.tfd, &exp, sizeof(exp)) == sizeof(exp))
					tick();
			} else if (tag >= 1000 && tag - 1000 < (__u64)D.n_ifs && D.ifs[tag - 1000].rb) {
				ring_buffer__consume(D.ifs[tag - 1000].rb);
			}
		}
	}

	log_info("stopping; %s", D.cfg->on_exit_detach ? "detaching (on_exit: detach)"
			       : "the program stays attached and enforcing");
	if (D.mhd)
		MHD_stop_daemon(D.mhd);
	if (D.http)
		xrl_http_stop(D.http);
	while (D.n_ifs)
		iface_remove(D.n_ifs - 1, D.cfg->on_exit_detach);
	close(D.lfd);
	unlink(D.sock_path);
	return 0;
}
