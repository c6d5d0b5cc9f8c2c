// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * metrics.c - Prometheus text for /metrics, served by libmicrohttpd. Every
 * family goes through xrl_prom_family (HELP and TYPE); the names and their
 * renames are in docs/operations.md, "Metrics".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <pthread.h>
#include <microhttpd.h>

#include "http/fleet/fleet.h"
#include "http/http.h"
#include "log.h"
#include "privs.h"
#include "procstat.h"
#include "xrl_version.h"
#include "xrld.h"

/*
 * Naming (docs/operations.md, "Metrics"): one namespace, xrl_; the identity
 * tier's families carry the subsystem http_. A family means one thing in
 * one unit; verdict labels say allowed, refused or shadow_refused in both
 * tiers (the program's XDP_PASS and XDP_DROP are an allowed and a refused
 * packet).
 */
static const char *const verdict_label[XRL_V_MAX] = {
	[XRL_V_PASSED] = "allowed",
	[XRL_V_DROPPED] = "refused",
	[XRL_V_SHADOW_DROPPED] = "shadow_refused",
};

/* One unlabelled series of xrld's own. */
static void own_series(struct xrl_buf *b, const char *name, const char *type, const char *help,
		       __u64 v)
{
	xrl_prom_family(b, name, type, help);
	xrl_buf_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

/* Per interface, rule and verdict: packets, or bytes. */
static void rule_series(struct xrld *d, struct xrl_buf *b, bool bytes)
{
	static struct xrl_stats st;
	struct xrl_ruleset_meta meta;
	const char *name = bytes ? "xrl_rule_bytes_total" : "xrl_rule_packets_total";

	xrl_prom_family(b, name, "counter",
			bytes ? "Bytes (whole frames) a rule matched, by verdict."
			      : "Packets a rule matched, by verdict.");
	for (int i = 0; i < d->n_ifs; i++) {
		if (xrl_read_stats_named(d->ifs[i].h, &st, &meta))
			continue;
		for (__u32 r = 0; r < st.n_rules; r++)
			for (int v = 0; v < XRL_V_MAX; v++)
				xrl_buf_printf(b,
					       "%s{interface=\"%s\",rule=\"%s\",verdict=\"%s\"} %llu\n",
					       name, d->ifs[i].name, meta.names[r],
					       verdict_label[v],
					       (unsigned long long)(bytes ? st.rules[r].bytes[v]
									  : st.rules[r].pkts[v]));
	}
}

/*
 * The program's global counters, each in the one family it means: every
 * XRL_G_* index is a row here, exactly once (the e2e metrics test checks
 * that the families hold as many series as the program has counters).
 */
struct gseries {
	int g;
	int fam;	    /* index into gfam[] */
	const char *labels; /* after interface=".." */
};

static const struct {
	const char *name, *help;
} gfam[] = {
	{ "xrl_seen_packets_total", "Packets the XDP program ran on." },
	{ "xrl_packets_by_reason_total",
	  "Packets decided before or without a rule's bucket, by verdict and reason." },
	{ "xrl_bucket_events_total",
	  "Source bucket table events: buckets created, compare-and-swap races retried." },
	{ "xrl_fast_path_packets_total",
	  "Rule decisions taken without the shared bucket: refusals from the per-CPU cache, "
	  "admits from a per-CPU lease (also counted in xrl_rule_packets_total)." },
	{ "xrl_denylist_expired_hits_total",
	  "Denylist hits on an expired entry, ignored (the packet went on to the rules)." },
	{ "xrl_samples_total", "Refusal samples for xrld, by outcome (sent to, or lost from, "
			       "the ring buffer)." },
	{ "xrl_syncookie_packets_total",
	  "SYN-cookie path packets: SYN-ACKs sent (sent), ACKs with a valid (valid) or bad "
	  "(bad, refused) cookie, SYNs passed to prime the kernel (primer), SYNs a cookie "
	  "rule could not answer (fallback), and on xrl's own cookie path the ACKs the TC "
	  "program made a request socket for (request_socket), could not (request_socket_failed), "
	  "or never saw because the driver carries no XDP metadata (no_metadata)." },
	{ "xrl_aggregate_packets_total",
	  "Rules' aggregate caps: new connections refused by a cap (refused, after the "
	  "source's own bucket admitted), and admitted from the share kept for vouched "
	  "sources (vouched_admitted)." },
};

static const struct gseries gmap[] = {
	{ XRL_G_SEEN, 0, "" },
	{ XRL_G_NON_IP, 1, ",verdict=\"allowed\",reason=\"non_ip\"" },
	{ XRL_G_MALFORMED, 1, ",verdict=\"allowed\",reason=\"malformed\"" },
	{ XRL_G_FRAGMENTS, 1, ",verdict=\"allowed\",reason=\"fragment\"" },
	{ XRL_G_ALLOWLISTED, 1, ",verdict=\"allowed\",reason=\"allowlisted\"" },
	{ XRL_G_NO_RULE, 1, ",verdict=\"allowed\",reason=\"no_rule\"" },
	{ XRL_G_NO_POLICY, 1, ",verdict=\"allowed\",reason=\"no_policy\"" },
	{ XRL_G_BUCKET_INSERT_FAIL, 1, ",verdict=\"allowed\",reason=\"bucket_insert_failed\"" },
	{ XRL_G_CAS_GIVEUP, 1, ",verdict=\"allowed\",reason=\"cas_gave_up\"" },
	{ XRL_G_UNWALKABLE_PASSED, 1, ",verdict=\"allowed\",reason=\"unwalkable\"" },
	{ XRL_G_DENYLISTED, 1, ",verdict=\"refused\",reason=\"denylisted\"" },
	{ XRL_G_TINY_FRAGMENT, 1, ",verdict=\"refused\",reason=\"tiny_fragment\"" },
	{ XRL_G_UNWALKABLE_DROPPED, 1, ",verdict=\"refused\",reason=\"unwalkable\"" },
	{ XRL_G_BUCKET_NEW, 2, ",event=\"created\"" },
	{ XRL_G_CAS_RETRY, 2, ",event=\"cas_retried\"" },
	{ XRL_G_REFUSED_CACHED, 3, ",path=\"refusal_cache\"" },
	{ XRL_G_LEASED, 3, ",path=\"lease\"" },
	{ XRL_G_DENY_EXPIRED, 4, "" },
	{ XRL_G_EVENTS_SENT, 5, ",outcome=\"sent\"" },
	{ XRL_G_EVENTS_LOST, 5, ",outcome=\"lost\"" },
	{ XRL_G_COOKIES_SENT, 6, ",event=\"sent\"" },
	{ XRL_G_COOKIES_VALID, 6, ",event=\"valid\"" },
	{ XRL_G_COOKIES_BAD, 6, ",event=\"bad\"" },
	{ XRL_G_COOKIE_PRIMERS, 6, ",event=\"primer\"" },
	{ XRL_G_COOKIE_FALLBACK, 6, ",event=\"fallback\"" },
	{ XRL_G_AGG_REFUSED, 7, ",event=\"refused\"" },
	{ XRL_G_VOUCHED_ADMITS, 7, ",event=\"vouched_admitted\"" },
	{ XRL_G_COOKIE_REQSK, 6, ",event=\"request_socket\"" },
	{ XRL_G_COOKIE_REQSK_FAIL, 6, ",event=\"request_socket_failed\"" },
	{ XRL_G_COOKIE_NO_META, 6, ",event=\"no_metadata\"" },
};
_Static_assert(sizeof(gmap) / sizeof(gmap[0]) == XRL_G_MAX,
	       "every global counter is in exactly one metrics family");

static void global_series(struct xrld *d, struct xrl_buf *b)
{
	static struct xrl_stats st[MAX_IFACES];
	bool ok[MAX_IFACES];

	for (int i = 0; i < d->n_ifs; i++)
		ok[i] = !xrl_read_stats(d->ifs[i].h, &st[i]);
	for (size_t f = 0; f < sizeof(gfam) / sizeof(gfam[0]); f++) {
		xrl_prom_family(b, gfam[f].name, "counter", gfam[f].help);
		for (int i = 0; i < d->n_ifs; i++)
			for (size_t k = 0; ok[i] && k < sizeof(gmap) / sizeof(gmap[0]); k++)
				if (gmap[k].fam == (int)f)
					xrl_buf_printf(b, "%s{interface=\"%s\"%s} %llu\n",
						       gfam[f].name, d->ifs[i].name, gmap[k].labels,
						       (unsigned long long)st[i]
							       .global.c[gmap[k].g]);
	}
	xrl_prom_family(b, "xrl_buckets", "gauge", "Source buckets in the shared table.");
	for (int i = 0; i < d->n_ifs; i++)
		xrl_buf_printf(b, "xrl_buckets{interface=\"%s\"} %ld\n", d->ifs[i].name,
			       xrl_bucket_count(d->ifs[i].h));
	xrl_prom_family(b, "xrl_bucket_evictions_total", "counter",
			"Buckets evicted from the full LRU table (created - in use).");
	for (int i = 0; i < d->n_ifs; i++) {
		long long n = xrl_bucket_count(d->ifs[i].h), made;

		if (!ok[i])
			continue;
		made = (long long)st[i].global.c[XRL_G_BUCKET_NEW];
		xrl_buf_printf(b, "xrl_bucket_evictions_total{interface=\"%s\"} %lld\n",
			       d->ifs[i].name, made > n ? made - n : 0LL);
	}
	xrl_prom_family(b, "xrl_denylist_entries", "gauge", "Entries on the denylist.");
	for (int i = 0; i < d->n_ifs; i++) {
		struct xrl_config c;
		__u32 zero = 0;

		if (!bpf_map_lookup_elem(xrl_map_fd(d->ifs[i].h, XRL_MAP_CONFIG), &zero, &c))
			xrl_buf_printf(b, "xrl_denylist_entries{interface=\"%s\"} %u\n",
				       d->ifs[i].name, c.deny_v4_n + c.deny_v6_n);
	}
}

/* xrld's own: build, reloads, samples, penalties. */
static void daemon_series(struct xrld *d, struct xrl_buf *b)
{
	xrl_prom_family(b, "xrl_build_info", "gauge",
			"The running xrld's version and commit (always 1).");
	xrl_buf_printf(b, "xrl_build_info{version=\"%s\",commit=\"%s\"} 1\n", XRL_VERSION,
		       XRL_COMMIT);
	xrl_prom_family(b, "xrl_config_reloads_total", "counter",
			"Policy reloads and applies, by result (the start is not counted).");
	xrl_prom_u64(b, "xrl_config_reloads_total", "result", "success", READ(d->reloads));
	xrl_prom_u64(b, "xrl_config_reloads_total", "result", "failure", READ(d->reload_failures));
	own_series(b, "xrl_config_last_reload_successful", "gauge",
		   "1 if the last reload or apply (or the start) installed its policy, 0 if it "
		   "was refused and the previous policy stayed in force.",
		   READ(d->last_reload_ok));
	own_series(b, "xrl_config_last_reload_success_timestamp_seconds", "gauge",
		   "Unix time of the last policy installed (the start, a reload or an apply).",
		   READ(d->last_reload_time_s));
	own_series(b, "xrl_samples_read_total", "counter", "Refusal samples xrld read.",
		   READ(d->events_seen));
	own_series(b, "xrl_top_samples_dropped_total", "counter",
		   "Refusal samples the top table had no room for.", READ(d->top_dropped));
	own_series(b, "xrl_penalties_total", "counter",
		   "Penalties xrld put on the denylist (packet tier).", READ(d->penalties));
	xrl_prom_family(b, "xrl_penalties_skipped_total", "counter",
			"Refusal samples that earned no strike, and due penalties not made, by "
			"reason.");
	for (int i = 0; i < PEN_SKIP_MAX; i++)
		xrl_buf_printf(b, "xrl_penalties_skipped_total{reason=\"%s\"} %llu\n",
			       pen_skip_name[i], (unsigned long long)READ(d->pen_skipped[i]));
}

/*
 * process_*, as the client libraries define them, for xrld's main process
 * without a label (what any exporter's process_* means: the process that
 * serves /metrics) and for the identity process with process="identity".
 * That one is exported too because it is where a Prometheus user would look
 * for trouble: it holds the identity tier's connections (open fds against
 * max_connections) and its in-process buckets (resident memory against
 * max_keys), and it restarts on its own. Its series are read here, from
 * its /proc/PID, not asked of it: a wedged child still shows its CPU and
 * memory, and it cannot report them false. Its fd/ is readable while xrld
 * runs as root (the child is not dumpable, so its /proc/PID is root's);
 * otherwise process_open_fds{process="identity"} is left out.
 */
static void process_series(struct xrld *d, struct xrl_buf *b)
{
	static const char *const label[] = { "", "process=\"identity\"" };
	struct xrl_proc_stat st[2] = {};
	int n = 1, fd = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		xrl_proc_read(fd, true, &st[0]);
		close(fd);
	}
	fd = xrld_idp_proc_dir(d);
	if (fd >= 0) {
		xrl_proc_read(fd, false, &st[1]);
		close(fd);
		n = 2;
	}
	xrl_proc_metrics(b, st, label, n);
}

static void metrics_text(struct xrld *d, struct xrl_buf *b)
{
	struct xrl_buf idb = {};
	struct xrl_fleet_stats fst;
	bool fok;

	/* what the identity process tells, asked before d->lock is taken: a
	 * slow child must not hold up the main loop through it */
	process_series(d, b);
	xrld_idp_metrics(d, &idb);
	fok = xrld_fleet_stats_get(d, &fst);
	pthread_mutex_lock(&d->lock);
	daemon_series(d, b);
	rule_series(d, b, false);
	rule_series(d, b, true);
	global_series(d, b);
	xrld_cookies_metrics(d, b);
	xrld_vouch_metrics(d, b);
	if (idb.p)
		xrl_buf_add(b, idb.p, idb.len);
	xrld_fleet_metrics(d, b, fok ? &fst : NULL);
	if (d->http)
		xrld_evidence_metrics(d, b);
	pthread_mutex_unlock(&d->lock);
	xrl_buf_free(&idb);
}

/*
 * The metrics server's thread (libmicrohttpd's own) parses what scrapers
 * send: before the first connection's first byte, it gives up every
 * capability. It keeps bpf() on xrld's descriptors, which needs none.
 */
static void metrics_thread_caps(void *cls, struct MHD_Connection *c, void **socket_context,
				enum MHD_ConnectionNotificationCode toe)
{
	static __thread bool dropped;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED && !dropped) {
		if (xrl_thread_drop_caps())
			log_warnx("couldn't drop the metrics thread's capabilities");
		dropped = true;
	}
}

static enum MHD_Result on_metrics(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct xrld *d = cls;
	struct MHD_Response *r;
	struct xrl_buf b = {};
	enum MHD_Result ret;
	int status = MHD_HTTP_OK;

	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
		xrl_buf_printf(&b, "GET only\n");
	} else if (!strcmp(url, "/metrics")) {
		metrics_text(d, &b);
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

struct mstart {
	struct xrld *d;
	unsigned flags;
	int fd;
};

/* libmicrohttpd's thread is created by this one, with no capability: a
 * thread inherits its creator's sets, so the server's never holds one. */
static void *mhd_starter(void *arg)
{
	struct mstart *m = arg;

	if (xrl_thread_drop_caps())
		log_warnx("couldn't drop the metrics thread's capabilities");
	m->d->mhd = MHD_start_daemon(m->flags, 0, NULL, NULL, on_metrics, m->d,
				     MHD_OPTION_LISTEN_SOCKET, (MHD_socket)m->fd,
				     MHD_OPTION_CONNECTION_LIMIT, 64U,
				     MHD_OPTION_CONNECTION_TIMEOUT, 10U,
				     MHD_OPTION_NOTIFY_CONNECTION, metrics_thread_caps, NULL,
				     MHD_OPTION_END);
	return NULL;
}

/* metrics' host and port as the config parsed them; a host name is
 * resolved once, at start. The
 * socket is bound here (a port below 1024 takes this thread's
 * CAP_NET_BIND_SERVICE), the server started by a thread without any. */
int xrld_metrics_start(struct xrld *d, const char *host, int port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *ai;
	char port_s[8];
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;

	/* the start installed the first policy: the last reload gauges' start */
	if (!READ(d->last_reload_time_s)) {
		__atomic_store_n(&d->last_reload_time_s, (__u64)time(NULL), __ATOMIC_RELAXED);
		__atomic_store_n(&d->last_reload_ok, 1, __ATOMIC_RELAXED);
	}
	snprintf(port_s, sizeof(port_s), "%d", port);
	if (getaddrinfo(host, port_s, &hints, &ai) || !ai)
		return -EINVAL;
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	{
		struct mstart m = { .d = d, .flags = flags };
		int one = 1, e;
		pthread_t t;

		m.fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (m.fd >= 0) {
			setsockopt(m.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (ai->ai_family == AF_INET6)
				setsockopt(m.fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		}
		if (m.fd < 0 || bind(m.fd, ai->ai_addr, ai->ai_addrlen) || listen(m.fd, 64)) {
			e = errno;
			if (m.fd >= 0)
				close(m.fd);
			freeaddrinfo(ai);
			return -e;
		}
		freeaddrinfo(ai);
		if ((e = pthread_create(&t, NULL, mhd_starter, &m))) {
			close(m.fd);
			return -e;
		}
		pthread_join(t, NULL);
		if (!d->mhd) {
			close(m.fd);
			return -EADDRINUSE;
		}
	}
	return 0;
}
