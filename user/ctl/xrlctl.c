// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xrlctl - the operator's command line for xrld.
 *
 * Verbs that change things go through xrld's socket. Counters are read from
 * the pinned maps directly, so `stats` and `status` work when xrld is down
 * (the data plane does not need it). Human tables by default, --json on
 * every verb; under --json an error is {"error":"..."} on stdout. Exit
 * codes: 0 ok, 1 error, 2 usage. The verbs, their arguments and their
 * help are lib/verbs.c's table, which xrld parses requests with as well.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "config.h"
#include "control_wire.h"
#include "log.h"
#include "report.h"
#include "stats_http.h"
#include "util.h"
#include "verbs.h"
#include "xrl_version.h"
#include "xrl.h"

static const char *sock_path = XRL_SOCKET_DEFAULT;
static const char *pin_root = XRL_PIN_ROOT_DEFAULT;
static int json;

static void usage(FILE *f)
{
	fprintf(f, "usage: xrlctl [--socket PATH] [--pin-dir DIR] [--json] VERB ...\n"
		   "       xrlctl VERB --help | --version\n");
	xrl_verb_usage(f, NULL);
}

/* An error: "xrlctl: msg" on stderr, or {"error":"msg"} on stdout under --json. */
static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char *fmt, ...)
{
	char msg[XRL_ERRLEN + 256];
	struct xrl_buf b = {};
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!json) {
		fprintf(stderr, "xrlctl: %s\n", msg);
		return code;
	}
	xrl_buf_json_error(&b, msg);
	if (b.p)
		fputs(b.p, stdout);
	xrl_buf_free(&b);
	return code;
}

/* A JSON document to stdout (takes j's reference). */
static void put_json(json_t *j)
{
	struct xrl_buf b = {};

	xrl_buf_json(&b, j);
	if (b.p)
		fputs(b.p, stdout);
	xrl_buf_free(&b);
}

/* Send to xrld; its answer into *payload; its exit code, or -errno unreachable. */
static int call_get(int argc, const char *const *argv, char **payload)
{
	const char *args[XRL_CTL_MAXARGS + 1];
	int n = 0;

	*payload = NULL;
	for (int i = 0; i < argc && n < XRL_CTL_MAXARGS - 1; i++)
		args[n++] = argv[i];
	if (json)
		args[n++] = "--json";
	return xrl_ctl_call(sock_path, n, args, payload, 10000);
}

static bool denied(int rc)
{
	return rc == -EACCES || rc == -EPERM;
}

static int unreachable(int rc)
{
	if (denied(rc))
		return fail(1,
			    "permission denied: xrld's socket %s is root's; members of group %s "
			    "may read (status, stats, top, the lists)",
			    sock_path, XRL_READ_GROUP);
	return fail(1, "couldn't reach xrld at %s: %s%s", sock_path, strerror(-rc),
		    rc == -ENOENT || rc == -ECONNREFUSED ? " (is xrld running?)" : "");
}

/* Send to xrld; print its answer; return its exit code (1 if unreachable). */
static int call(int argc, const char *const *argv)
{
	char *payload;
	int rc = call_get(argc, argv, &payload);

	if (rc < 0)
		return unreachable(rc);
	/* a JSON answer, error or not, is the document a script reads on stdout */
	fputs(payload, rc && !json ? stderr : stdout);
	free(payload);
	return rc;
}

/* 0: xrld answers; else why not (-errno): down, or not ours to ask. */
static int daemon_state(void)
{
	const char *argv[] = { "status" };
	char *payload = NULL;
	int rc = xrl_ctl_call(sock_path, 1, argv, &payload, 3000);

	free(payload);
	return rc >= 0 ? 0 : rc;
}

/* xrld's answer, or, for st (daemon_state) not 0, why there is none. */
static int ask(int st, int argc, const char *const *argv)
{
	return st ? unreachable(st) : call(argc, argv);
}

/* Interfaces with pinned state under pin_root. */
static int pinned_ifaces(char names[][IF_NAMESIZE], int max)
{
	DIR *d = opendir(pin_root);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)) && n < max) {
		char path[PATH_MAX + 512];
		struct stat st;

		if (de->d_name[0] == '.' || strlen(de->d_name) >= IF_NAMESIZE)
			continue;
		snprintf(path, sizeof(path), "%s/%s/%s", pin_root, de->d_name, XRL_MAP_CONFIG);
		if (stat(path, &st))
			continue;
		snprintf(names[n++], IF_NAMESIZE, "%s", de->d_name);
	}
	closedir(d);
	return n;
}

static int status_from_pins(void)
{
	char names[XRL_CFG_MAX_IFACES][IF_NAMESIZE];
	int n = pinned_ifaces(names, XRL_CFG_MAX_IFACES);
	json_t *ifs = json_array();

	if (denied(n))
		return json_decref(ifs),
		       fail(1,
			    "permission denied: xrld is not running (%s), and its pinned state "
			    "under %s is root's to read",
			    sock_path, pin_root);
	if (n < 0)
		return json_decref(ifs),
		       fail(1, "xrld is not running and %s holds no pinned state: %s", pin_root,
			    strerror(-n));
	if (!json)
		printf("xrld: not running (%s); the data plane, read from %s:\n"
		       "%-16s %-8s %-8s %-10s\n",
		       sock_path, pin_root, "INTERFACE", "PROG", "MODE", "ATTACHED");
	for (int i = 0; i < n; i++) {
		const char *mode;
		struct xrl_handle *h;
		const struct xrl_attach_info *in;

		if (xrl_open_pinned(pin_root, names[i], &h))
			continue;
		in = xrl_info(h);
		mode = in->mode == XRL_MODE_SKB ? "skb" : "native";
		if (json)
			json_array_append_new(ifs,
					      json_pack("{s:s,s:I,s:s,s:b}", "name", names[i],
							"prog_id", (json_int_t)in->prog_id, "mode",
							mode, "attached", in->attached));
		else
			printf("%-16s %-8u %-8s %-10s\n", names[i], in->prog_id,
			       in->attached ? mode : "-", in->attached ? "yes (enforcing)" : "NO");
		xrl_close(h);
	}
	if (json)
		put_json(json_pack("{s:n,s:o}", "daemon", "interfaces", ifs));
	else
		json_decref(ifs);
	return 0;
}

struct snap {
	char name[IF_NAMESIZE];
	struct xrl_stats st;
	struct xrl_ruleset_meta meta;
	long buckets;
};

/* The pinned interfaces' counters into s; how many, or -errno (-EACCES
 * too when every one there was refused us). */
static int take_snaps(const char *only, struct snap *s, int max)
{
	char names[XRL_CFG_MAX_IFACES][IF_NAMESIZE];
	int n = pinned_ifaces(names, XRL_CFG_MAX_IFACES), m = 0, refused = 0;

	if (n < 0)
		return n;
	for (int i = 0; i < n && m < max; i++) {
		struct xrl_handle *h;
		int rc;

		if (only && strcmp(only, names[i]))
			continue;
		if ((rc = xrl_open_pinned(pin_root, names[i], &h))) {
			refused += denied(rc);
			continue;
		}
		memcpy(s[m].name, names[i], IF_NAMESIZE);
		s[m].name[IF_NAMESIZE - 1] = '\0';
		if (!xrl_read_stats(h, &s[m].st) && !xrl_read_rule_names(h, &s[m].meta)) {
			s[m].buckets = xrl_bucket_count(h);
			m++;
		}
		xrl_close(h);
	}
	return !m && refused ? -EACCES : m;
}

/* {"rules":[{"name":..,"interface":..,"passed":..}],"global":{summed},"interfaces":[...]} */
static json_t *snaps_json(struct snap *s, int n, struct snap *prev, double dt)
{
	json_t *rules = json_array(), *ifs = json_array();
	struct xrl_global_ctr g = {};

	for (int i = 0; i < n; i++) {
		json_t *one = xrl_report_stats_json(s[i].name, &s[i].st, &s[i].meta, s[i].buckets,
						    prev ? &prev[i].st : NULL, dt);
		size_t k;
		json_t *r;

		/* the rules of every interface, each naming its interface */
		json_array_foreach (json_object_get(one, "rules"), k, r) {
			json_object_set_new(r, "interface", json_string(s[i].name));
			json_array_append(rules, r);
		}
		json_array_append_new(ifs, one);
		for (int c = 0; c < XRL_G_MAX; c++)
			g.c[c] += s[i].st.global.c[c];
	}
	return json_pack("{s:o,s:o,s:o}", "rules", rules, "global", xrl_global_json(&g),
			 "interfaces", ifs);
}

/*
 * One screen: the packet tier from the pins (n interfaces; none: it is not
 * loaded, said in words, or "packet_tier_loaded": false), then the
 * identity tier's rules from xrld (http; NULL: none).
 */
static void snaps_text(struct xrl_buf *b, struct snap *s, int n, struct snap *prev, double dt,
		       unsigned flags, json_t *http)
{
	if (json) {
		json_t *j = snaps_json(s, n, prev, dt);

		json_object_set_new(j, "packet_tier_loaded", json_boolean(n > 0));
		json_object_set(j, "http", http ? http : json_null());
		xrl_buf_json(b, j);
		return;
	}
	for (int i = 0; i < n; i++)
		xrl_report_stats(b, s[i].name, &s[i].st, &s[i].meta, s[i].buckets,
				 prev ? &prev[i].st : NULL, dt, flags);
	if (!n)
		xrl_buf_printf(b, "packet tier: not loaded (no pinned state under %s)\n", pin_root);
	if (http)
		xrlctl_http_text(b, http);
}

static volatile sig_atomic_t stop_watch;
static void on_int(int sig)
{
	(void)sig;
	stop_watch = 1;
}

/*
 * The watch modes' output. On a terminal, each screen is drawn over the
 * last like top(1): cursor home, every line cleared to its end, the rest
 * of the screen cleared after it, so it does not flicker. Piped, or with
 * --json, each screen is appended (a "--- HH:MM:SS" line before each text
 * block after the first), for scripts and logs.
 */
struct watch_out {
	bool tty;
	int n;	      /* screens shown */
	double every; /* seconds */
	const char *what;
};

static void watch_show(struct watch_out *w, const char *text)
{
	time_t now = time(NULL);
	char tb[32];

	strftime(tb, sizeof(tb), "%H:%M:%S", localtime(&now));
	if (w->tty) {
		/* ESC[H: home; ESC[K: clear to end of line; ESC[J: clear below */
		fputs("\033[H", stdout);
		printf("xrlctl %s, every %gs, %s (Ctrl-C to stop)\033[K\n", w->what, w->every, tb);
		for (const char *p = text, *e; p && *p; p = e ? e + 1 : NULL) {
			e = strchr(p, '\n');
			fwrite(p, 1, e ? (size_t)(e - p) : strlen(p), stdout);
			fputs("\033[K\n", stdout);
		}
		fputs("\033[J", stdout);
	} else {
		if (w->n && !json)
			printf("\n--- %s\n", tb);
		fputs(text, stdout);
	}
	fflush(stdout);
	w->n++;
}

/* Sleep the watch interval; false once SIGINT or SIGTERM came. */
static bool watch_sleep(double every)
{
	struct timespec ts = { .tv_sec = (time_t)every,
			       .tv_nsec = (long)((every - (double)(time_t)every) * 1e9) };

	nanosleep(&ts, NULL);
	return !stop_watch;
}

static void watch_begin(struct watch_out *w, double every, const char *what)
{
	*w = (struct watch_out){ .tty = !json && isatty(STDOUT_FILENO),
				 .every = every,
				 .what = what };
	signal(SIGINT, on_int);
	signal(SIGTERM, on_int);
	if (w->tty)
		fputs("\033[H\033[2J", stdout); /* a clean screen to draw on */
}

static double elapsed_s(struct timespec *t0)
{
	struct timespec t1;
	double dt;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	dt = (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
	*t0 = t1;
	return dt;
}

/*
 * xrld's answer to argv, once, or with --watch N (watch > 0) again every N
 * seconds (without --watch on the wire: the daemon answers one screen);
 * with_http, the identity tier's table after each (stats' text). What
 * `top --watch` is, and `stats` for a caller who may not read the pins.
 */
static int poll_xrld(const char *what, double watch, int argc, char **argv, bool with_http)
{
	const char *args[XRL_CTL_MAXARGS];
	struct watch_out w;
	int n = 0, rc;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--watch") && i + 1 < argc)
			i++;
		else
			args[n++] = argv[i];
	}
	if (watch)
		watch_begin(&w, watch, what);
	do {
		struct xrl_buf b = {};
		char *payload;
		json_t *http;

		rc = call_get(n, args, &payload);
		if (rc < 0)
			return unreachable(rc);
		if (rc) {
			fputs(payload, json ? stdout : stderr);
			free(payload);
			return rc;
		}
		xrl_buf_printf(&b, "%s", payload);
		free(payload);
		if (with_http && (http = xrlctl_http_stats(sock_path))) {
			xrlctl_http_text(&b, http);
			json_decref(http);
		}
		if (watch)
			watch_show(&w, b.p ? b.p : "");
		else
			fputs(b.p ? b.p : "", stdout);
		xrl_buf_free(&b);
	} while (watch && watch_sleep(watch));
	return 0;
}

static int cmd_stats(const struct xrl_verb_call *c, int argc, char **argv)
{
	static struct snap cur[XRL_CFG_MAX_IFACES], prev[XRL_CFG_MAX_IFACES];
	const char *only = c->a.stats.iface.text;
	double watch = c->a.stats.watch.text ? c->a.stats.watch.s : 0, dt = 0;
	/* on a terminal: human numbers; watching, the rate columns from the
	 * first screen on, so the layout does not jump */
	unsigned flags = !json && isatty(STDOUT_FILENO) ? XRL_REPORT_HUMAN : 0;
	struct watch_out w;
	struct timespec t0;
	json_t *http, *hprev = NULL;
	int n, pn = 0;

	n = take_snaps(only, cur, XRL_CFG_MAX_IFACES);
	/* the pins are root's (bpf(2) is): a member of the read-only group
	 * sees the packet tier through xrld, which reads its own maps */
	if (denied(n))
		return poll_xrld("stats", watch, argc, argv, !json);
	http = xrlctl_http_stats(sock_path);
	if (n < 0)
		n = 0;
	if (!n && (only || !http))
		return fail(1, "no xrl state under %s%s%s%s", pin_root, only ? " for " : "",
			    only ? only : "",
			    only ? ""
				 : ", and no identity tier at xrld's socket (is xrld running?)");
	if (watch)
		watch_begin(&w, watch, "stats");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct xrl_buf b = {};

		if (http)
			xrlctl_http_rates(http, hprev, dt);
		snaps_text(&b, cur, n, pn && n == pn ? prev : NULL, dt,
			   flags | (watch && (flags & XRL_REPORT_HUMAN) ? XRL_REPORT_RATES : 0),
			   http);
		if (!watch) {
			fputs(b.p ? b.p : "", stdout);
			xrl_buf_free(&b);
			json_decref(http);
			return 0;
		}
		watch_show(&w, b.p ? b.p : "");
		xrl_buf_free(&b);
		memcpy(prev, cur, sizeof(cur));
		pn = n;
		json_decref(hprev);
		hprev = http;
		if (!watch_sleep(watch)) {
			json_decref(hprev);
			return 0;
		}
		n = take_snaps(only, cur, XRL_CFG_MAX_IFACES);
		n = n < 0 ? 0 : n;
		http = xrlctl_http_stats(sock_path);
		dt = elapsed_s(&t0);
	}
}

static int cmd_policy_check(const char *path)
{
	struct xrld_config *c;
	char err[XRL_ERRLEN], *sum;

	if (xrl_config_check(path, &c, &sum, err, sizeof(err)))
		return fail(1, "%s", err); /* "xrlctl: FILE:LINE:COL: ...", as every error */
	if (json)
		put_json(json_pack("{s:s,s:b,s:o}", "file", path, "valid", 1, "policy",
				   xrl_config_json(c)));
	else
		printf("%s: ok\n%s", path, sum);
	free(sum);
	free(c);
	return 0;
}

static int cmd_policy_apply(const char *path)
{
	const char *args[4] = { "policy", "apply", path, NULL };
	char *text = NULL;
	size_t len;
	int rc = xrl_read_all(path, XRL_CTL_MAX / 2, &text, &len);

	if (rc)
		return fail(1, "couldn't read %s: %s", path, strerror(-rc));
	args[3] = text;
	rc = call(4, args);
	free(text);
	return rc;
}

/* xrld is down: detach straight from the pins. */
static int detach_from_pins(const char *ifname)
{
	struct xrl_handle *h;
	int rc = xrl_open_pinned(pin_root, ifname, &h);

	if (rc)
		return fail(1, "no xrl state for %s under %s: %s", ifname, pin_root, strerror(-rc));
	rc = xrl_detach(h);
	if (rc)
		return fail(1, "couldn't detach %s: %s", ifname, strerror(-rc));
	if (json)
		put_json(json_pack("{s:b,s:s}", "ok", 1, "message",
				   "detached, pinned state removed (xrld was not running)"));
	else
		printf("%s detached, pinned state removed (xrld was not running)\n", ifname);
	return 0;
}

static int list_from_pins(bool deny)
{
	char names[XRL_CFG_MAX_IFACES][IF_NAMESIZE];
	int n = pinned_ifaces(names, XRL_CFG_MAX_IFACES);
	struct xrl_buf b = {};
	struct xrl_handle *h;

	if (n <= 0 || xrl_open_pinned(pin_root, names[0], &h))
		return fail(1, "xrld is not running and there is no pinned state under %s",
			    pin_root);
	if (json)
		xrl_buf_json(&b, xrl_report_list_json(h, deny));
	else
		xrl_report_list(&b, h, deny);
	if (b.p)
		fputs(b.p, stdout);
	xrl_buf_free(&b);
	xrl_close(h);
	return 0;
}

static int vouch_from_pins(void)
{
	char names[XRL_CFG_MAX_IFACES][IF_NAMESIZE];
	int n = pinned_ifaces(names, XRL_CFG_MAX_IFACES), rc;
	struct xrl_buf b = {};
	struct xrl_handle *h;
	json_t *a = NULL;

	if (n <= 0 || xrl_open_pinned(pin_root, names[0], &h))
		return fail(1, "xrld is not running and there is no pinned state under %s",
			    pin_root);
	if (json) {
		a = xrl_report_vouch_json(h);
		rc = a ? 0 : -EIO;
		if (a)
			xrl_buf_json(&b, a);
	} else {
		rc = xrl_report_vouch(&b, h);
	}
	xrl_close(h);
	if (rc) {
		xrl_buf_free(&b);
		return fail(1, "couldn't read the vouched sources: %s", strerror(-rc));
	}
	if (b.p)
		fputs(b.p, stdout);
	xrl_buf_free(&b);
	return 0;
}

/* What xrlctl does for a verb: the daemon when it is up, the pins otherwise. */
/*
 * penalty del KEY|HASH: 8 to 32 hex digits are a key hash (as `penalty
 * list` shows it); anything else is a key, and only its hash (SHA-256,
 * the first 32 hex digits) leaves xrlctl: the key, a bearer token perhaps,
 * is never on the socket nor in xrld's log of changes. A key that is
 * itself 8 to 32 hex digits is given by its hash (`printf %s KEY |
 * sha256sum`).
 */
static int cmd_penalty_del(const char *arg)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	char hex[65];
	unsigned int n = 0;
	size_t len = strlen(arg), i;
	const char *argv[3] = { "penalty", "del", hex };

	for (i = 0; i < len && isxdigit((unsigned char)arg[i]); i++)
		;
	if (i == len && len >= 8 && len <= 32) {
		for (i = 0; i <= len; i++)
			hex[i] = (char)tolower((unsigned char)arg[i]);
	} else {
		if (!EVP_Digest(arg, len, md, &n, EVP_sha256(), NULL) || n < 16)
			return fail(1, "couldn't hash the key: %s", strerror(EIO));
		for (i = 0; i < 16; i++)
			snprintf(hex + 2 * i, 3, "%02x", md[i]);
	}
	return call(3, argv);
}

static int run(const struct xrl_verb_call *c, int argc, char **argv)
{
	const char *const *args = (const char *const *)argv;
	int st;

	switch (c->v->id) {
	case XRL_VERB_STATUS:
		/* through xrld when it answers; when it is down, from the pins (the
		 * data plane's state); a caller its socket refuses is told so */
		if (!(st = daemon_state()) || denied(st))
			return ask(st, argc, args);
		return status_from_pins();
	case XRL_VERB_DETACH:
		if (!(st = daemon_state()) || denied(st))
			return ask(st, argc, args);
		return detach_from_pins(c->a.detach.iface.text);
	case XRL_VERB_ALLOW_LIST:
	case XRL_VERB_DENY_LIST:
		if (!(st = daemon_state()) || denied(st))
			return ask(st, argc, args);
		return list_from_pins(c->v->id == XRL_VERB_DENY_LIST);
	case XRL_VERB_VOUCH_LIST:
		if (!(st = daemon_state()) || denied(st))
			return ask(st, argc, args);
		return vouch_from_pins();
	case XRL_VERB_POLICY_CHECK:
		return cmd_policy_check(c->a.policy.file.text);
	case XRL_VERB_POLICY_APPLY:
		return cmd_policy_apply(c->a.policy.file.text);
	case XRL_VERB_STATS:
		return cmd_stats(c, argc, argv);
	case XRL_VERB_TOP:
		return c->a.top.watch.text ? poll_xrld("top", c->a.top.watch.s, argc, argv, false)
					   : call(argc, args);
	case XRL_VERB_PENALTY_DEL:
		return cmd_penalty_del(c->a.penalty.key.text);
	default:
		return call(argc, args);
	}
}

/* The verb's usage and help (every verb of the word when only it was given). */
static int verb_help(const struct xrl_verb_call *c, const char *word)
{
	char syn[128];

	if (!c->v || (!c->v->sub && c->v->id == XRL_VERB_OVERRIDE)) {
		printf("usage: xrlctl [--socket PATH] [--pin-dir DIR] [--json] %s ...\n", word);
		xrl_verb_usage(stdout, word);
		return 0;
	}
	xrl_verb_synopsis(c->v, syn, sizeof(syn));
	printf("usage: xrlctl [--socket PATH] [--pin-dir DIR] [--json] %s\n  %s\n", syn,
	       c->v->help);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		XRL_CTL_LONGOPTS,
		{},
	};
	char err[XRL_ERRLEN + 256], *args[XRL_CTL_MAXARGS];
	struct xrl_verb_call c;
	const char *word;
	int o, n = 0, rc;

	/* global options come before the verb; --json may also follow it */
	while ((o = getopt_long(argc, argv, "+s:p:jh", lo, NULL)) != -1) {
		switch (o) {
		case 's':
			sock_path = optarg;
			break;
		case 'p':
			pin_root = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("xrlctl %s\n", XRL_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	for (int i = optind; i < argc && n < XRL_CTL_MAXARGS; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else
			args[n++] = argv[i];
	}
	if (n < 1) {
		usage(stderr);
		return 2;
	}
	rc = xrl_verb_parse(n, args, false, &c, &word, err, sizeof(err));
	if (rc) {
		fail(rc, "%s", err);
		if (!json && !word)
			usage(stderr);
		return rc;
	}
	if (c.help)
		return verb_help(&c, word);
	log_init("xrlctl", XRL_LOG_WARN, 0);
	log_hook_libs();
	return run(&c, n, args);
}
