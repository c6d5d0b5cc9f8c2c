// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xrlctl - the operator's command line for xrld.
 *
 * Verbs that change things go through xrld's socket. Counters are read from
 * the pinned maps directly, so `stats` and `status` work when xrld is down
 * (the data plane does not need it). Human tables by default, --json on
 * every read verb. Exit codes: 0 ok, 1 error, 2 usage.
 */
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

#include "config.h"
#include "ctl.h"
#include "log.h"
#include "report.h"
#include "xrl.h"

static const char *sock_path = XRL_SOCKET_DEFAULT;
static const char *pin_root = XRL_PIN_ROOT_DEFAULT;
static int json;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xrlctl [--socket PATH] [--pin-dir DIR] [--json] VERB ...\n"
		"  status                          daemon and interfaces (from the pins if xrld is down)\n"
		"  attach IFACE [--mode native|skb|auto]\n"
		"  detach IFACE                    remove the program and its pinned state\n"
		"  policy check FILE               validate a policy file and summarise it\n"
		"  policy apply FILE               atomically replace the running policy\n"
		"  policy show\n"
		"  stats [--iface IF] [--watch SECONDS]\n"
		"  top [--rule NAME] [-n N]        top refused source prefixes\n"
		"  allow add|del CIDR | allow list\n"
		"  deny add CIDR [--ttl DURATION] | deny del CIDR | deny list\n"
		"  shadow RULE on|off\n");
}

/* Send to xrld; print its answer; return its exit code (1 if unreachable). */
static int call(int argc, const char *const *argv)
{
	const char *args[XRL_CTL_MAXARGS + 1];
	char *payload = NULL;
	int n = 0, rc;

	for (int i = 0; i < argc && n < XRL_CTL_MAXARGS - 1; i++)
		args[n++] = argv[i];
	if (json)
		args[n++] = "--json";
	rc = xrl_ctl_call(sock_path, n, args, &payload, 10000);
	if (rc < 0) {
		fprintf(stderr, "xrlctl: couldn't reach xrld at %s: %s%s\n", sock_path, strerror(-rc),
			rc == -ENOENT || rc == -ECONNREFUSED ? " (is xrld running?)" : "");
		return 1;
	}
	fputs(payload, rc ? stderr : stdout);
	free(payload);
	return rc;
}

static bool daemon_up(void)
{
	const char *argv[] = { "status" };
	char *payload = NULL;
	int rc = xrl_ctl_call(sock_path, 1, argv, &payload, 3000);

	free(payload);
	return rc >= 0;
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

	if (n < 0) {
		fprintf(stderr, "xrlctl: xrld is not running and %s holds no pinned state: %s\n",
			pin_root, strerror(-n));
		return 1;
	}
	if (json)
		printf("{\"daemon\":null,\"interfaces\":[");
	else
		printf("xrld: not running (%s); the data plane, read from %s:\n"
		       "%-16s %-8s %-8s %-10s\n", sock_path, pin_root, "INTERFACE", "PROG", "MODE", "ATTACHED");
	for (int i = 0, shown = 0; i < n; i++) {
		struct xrl_handle *h;
		const struct xrl_attach_info *in;

		if (xrl_open_pinned(pin_root, names[i], &h))
			continue;
		in = xrl_info(h);
		if (json)
			printf("%s{\"name\":\"%s\",\"prog_id\":%u,\"mode\":\"%s\",\"attached\":%s}", shown++ ? "," : "",
			       names[i], in->prog_id, in->mode == XRL_MODE_SKB ? "skb" : "native",
			       in->attached ? "true" : "false");
		else
			printf("%-16s %-8u %-8s %-10s\n", names[i], in->prog_id,
			       in->attached ? (in->mode == XRL_MODE_SKB ? "skb" : "native") : "-",
			       in->attached ? "yes (enforcing)" : "NO");
		xrl_close(h);
	}
	if (json)
		printf("]}\n");
	return 0;
}

struct snap {
	char name[IF_NAMESIZE];
	struct xrl_stats st;
	struct xrl_ruleset_meta meta;
	long buckets;
};

static int take_snaps(const char *only, struct snap *s, int max)
{
	char names[XRL_CFG_MAX_IFACES][IF_NAMESIZE];
	int n = pinned_ifaces(names, XRL_CFG_MAX_IFACES), m = 0;

	if (n < 0)
		return n;
	for (int i = 0; i < n && m < max; i++) {
		struct xrl_handle *h;

		if (only && strcmp(only, names[i]))
			continue;
		if (xrl_open_pinned(pin_root, names[i], &h))
			continue;
		memcpy(s[m].name, names[i], IF_NAMESIZE);
		s[m].name[IF_NAMESIZE - 1] = '\0';
		if (!xrl_read_stats(h, &s[m].st) && !xrl_read_rule_names(h, &s[m].meta)) {
			s[m].buckets = xrl_bucket_count(h);
			m++;
		}
		xrl_close(h);
	}
	return m;
}

/* {"rules":[{"name":..,"interface":..,"passed":..}],"global":{summed},"interfaces":[...]} */
static void print_snaps(struct snap *s, int n, struct snap *prev, double dt)
{
	static const char *vn[XRL_V_MAX] = { "passed", "dropped", "shadow_dropped" };
	struct xrl_buf b = {};

	if (json) {
		struct xrl_global_ctr g = {};
		int first = 1;

		xrl_buf_printf(&b, "{\"rules\":[");
		for (int i = 0; i < n; i++) {
			for (__u32 r = 0; r < s[i].st.n_rules; r++) {
				xrl_buf_printf(&b, "%s{\"name\":", first ? "" : ",");
				xrl_buf_json_str(&b, s[i].meta.names[r]);
				xrl_buf_printf(&b, ",\"interface\":");
				xrl_buf_json_str(&b, s[i].name);
				for (int v = 0; v < XRL_V_MAX; v++)
					xrl_buf_printf(&b, ",\"%s\":%llu,\"%s_bytes\":%llu", vn[v],
						       (unsigned long long)s[i].st.rules[r].pkts[v], vn[v],
						       (unsigned long long)s[i].st.rules[r].bytes[v]);
				if (prev && dt > 0)
					for (int v = 0; v < XRL_V_MAX; v++)
						xrl_buf_printf(&b, ",\"%s_per_s\":%.1f", vn[v],
							       (double)(s[i].st.rules[r].pkts[v] -
									prev[i].st.rules[r].pkts[v]) / dt);
				xrl_buf_printf(&b, "}");
				first = 0;
			}
			for (int k = 0; k < XRL_G_MAX; k++)
				g.c[k] += s[i].st.global.c[k];
		}
		xrl_buf_printf(&b, "],\"global\":{");
		for (int k = 0; k < XRL_G_MAX; k++)
			xrl_buf_printf(&b, "%s\"%s\":%llu", k ? "," : "", xrl_global_name(k),
				       (unsigned long long)g.c[k]);
		xrl_buf_printf(&b, "},\"interfaces\":[");
		for (int i = 0; i < n; i++) {
			xrl_buf_printf(&b, "%s", i ? "," : "");
			xrl_report_stats(&b, s[i].name, &s[i].st, &s[i].meta, s[i].buckets,
					 prev ? &prev[i].st : NULL, dt, 1);
		}
		xrl_buf_printf(&b, "]}\n");
	} else {
		for (int i = 0; i < n; i++)
			xrl_report_stats(&b, s[i].name, &s[i].st, &s[i].meta, s[i].buckets,
					 prev ? &prev[i].st : NULL, dt, 0);
	}
	if (b.p)
		fputs(b.p, stdout);
	fflush(stdout);
	xrl_buf_free(&b);
}

static volatile sig_atomic_t stop_watch;
static void on_int(int sig) { (void)sig; stop_watch = 1; }

static int cmd_stats(int argc, char **argv)
{
	static struct snap cur[XRL_CFG_MAX_IFACES], prev[XRL_CFG_MAX_IFACES];
	const char *only = NULL;
	double watch = 0;
	struct timespec t0, t1;
	int n, pn = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--watch") && i + 1 < argc) {
			char *end;

			watch = strtod(argv[++i], &end);
			if (*end || watch <= 0) {
				fprintf(stderr, "xrlctl: --watch wants a positive number of seconds\n");
				return 2;
			}
		} else if (!strcmp(argv[i], "--iface") && i + 1 < argc) {
			only = argv[++i];
		} else {
			fprintf(stderr, "xrlctl: stats: unexpected '%s'\n", argv[i]);
			return 2;
		}
	}
	n = take_snaps(only, cur, XRL_CFG_MAX_IFACES);
	if (n <= 0) {
		fprintf(stderr, "xrlctl: no xrl state under %s%s%s\n", pin_root, only ? " for " : "",
			only ? only : "");
		return 1;
	}
	if (!watch) {
		print_snaps(cur, n, NULL, 0);
		return 0;
	}
	signal(SIGINT, on_int);
	signal(SIGTERM, on_int);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	print_snaps(cur, n, NULL, 0);
	while (!stop_watch) {
		struct timespec ts = { .tv_sec = (time_t)watch,
				       .tv_nsec = (long)((watch - (double)(time_t)watch) * 1e9) };

		memcpy(prev, cur, sizeof(cur));
		pn = n;
		nanosleep(&ts, NULL);
		if (stop_watch)
			break;
		n = take_snaps(only, cur, XRL_CFG_MAX_IFACES);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (!json) {
			time_t now = time(NULL);
			char tb[32];

			strftime(tb, sizeof(tb), "%H:%M:%S", localtime(&now));
			printf("\n--- %s\n", tb);
		}
		print_snaps(cur, n, n == pn ? prev : NULL,
			    (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
		t0 = t1;
	}
	return 0;
}

static int read_file(const char *path, char **out)
{
	FILE *f = fopen(path, "r");
	size_t cap = 4096, len = 0;
	char *p;

	if (!f)
		return -errno;
	p = malloc(cap);
	while (p) {
		size_t r = fread(p + len, 1, cap - len - 1, f);

		len += r;
		if (r == 0)
			break;
		if (len + 1 >= cap) {
			if (cap >= XRL_CTL_MAX / 2) {
				free(p);
				fclose(f);
				return -EFBIG;
			}
			char *np = realloc(p, cap * 2);

			if (!np) {
				free(p);
				p = NULL;
				break;
			}
			p = np;
			cap *= 2;
		}
	}
	fclose(f);
	if (!p)
		return -ENOMEM;
	p[len] = '\0';
	*out = p;
	return 0;
}

static int cmd_policy(int argc, char **argv)
{
	char err[XRL_ERRLEN];

	if (argc >= 2 && !strcmp(argv[1], "show") && argc == 2)
		return call(argc, (const char *const *)argv);
	if (argc != 3 || (strcmp(argv[1], "check") && strcmp(argv[1], "apply"))) {
		fprintf(stderr, "usage: xrlctl policy check FILE | policy apply FILE | policy show\n");
		return 2;
	}
	if (!strcmp(argv[1], "check")) {
		struct xrld_config *c = calloc(1, sizeof(*c));
		char *sum = malloc(1 << 16);
		int rc = 1;

		if (c && sum) {
			if (xrl_config_load(argv[2], c, err, sizeof(err))) {
				fprintf(stderr, "%s\n", err);
			} else {
				xrl_config_summary(c, sum, 1 << 16);
				if (json)
					printf("{\"file\":\"%s\",\"valid\":true}\n", argv[2]);
				else
					printf("%s: ok\n%s", argv[2], sum);
				rc = 0;
			}
		}
		free(c);
		free(sum);
		return rc;
	} else {
		const char *args[4] = { "policy", "apply", argv[2], NULL };
		char *text = NULL;
		int rc = read_file(argv[2], &text);

		if (rc) {
			fprintf(stderr, "xrlctl: couldn't read %s: %s\n", argv[2], strerror(-rc));
			return 1;
		}
		args[3] = text;
		rc = call(4, args);
		free(text);
		return rc;
	}
}

/* xrld is down: detach straight from the pins. */
static int detach_from_pins(const char *ifname)
{
	struct xrl_handle *h;
	int rc = xrl_open_pinned(pin_root, ifname, &h);

	if (rc) {
		fprintf(stderr, "xrlctl: no xrl state for %s under %s: %s\n", ifname, pin_root, strerror(-rc));
		return 1;
	}
	rc = xrl_detach(h);
	if (rc) {
		fprintf(stderr, "xrlctl: couldn't detach %s: %s\n", ifname, strerror(-rc));
		return 1;
	}
	printf("%s detached, pinned state removed (xrld was not running)\n", ifname);
	return 0;
}

static int list_from_pins(bool deny)
{
	char names[XRL_CFG_MAX_IFACES][IF_NAMESIZE];
	int n = pinned_ifaces(names, XRL_CFG_MAX_IFACES);
	struct xrl_buf b = {};
	struct xrl_handle *h;

	if (n <= 0 || xrl_open_pinned(pin_root, names[0], &h)) {
		fprintf(stderr, "xrlctl: xrld is not running and there is no pinned state under %s\n", pin_root);
		return 1;
	}
	xrl_report_list(&b, h, deny, json);
	if (b.p)
		printf("%s%s", b.p, json ? "\n" : "");
	xrl_buf_free(&b);
	xrl_close(h);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "pin-dir", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	char *args[XRL_CTL_MAXARGS];
	int c, n = 0;

	/* global options come before the verb; --json may also follow it */
	while ((c = getopt_long(argc, argv, "+s:p:jh", lo, NULL)) != -1) {
		switch (c) {
		case 's': sock_path = optarg; break;
		case 'p': pin_root = optarg; break;
		case 'j': json = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
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
	log_init("xrlctl", XRL_LOG_WARN, 0);
	log_hook_libs();

	if (!strcmp(args[0], "status"))
		return daemon_up() ? call(n, (const char *const *)args) : status_from_pins();
	if (!strcmp(args[0], "stats"))
		return cmd_stats(n, args);
	if (!strcmp(args[0], "policy"))
		return cmd_policy(n, args);
	if (!strcmp(args[0], "detach")) {
		if (n != 2) {
			fprintf(stderr, "usage: xrlctl detach IFACE\n");
			return 2;
		}
		return daemon_up() ? call(n, (const char *const *)args) : detach_from_pins(args[1]);
	}
	if ((!strcmp(args[0], "allow") || !strcmp(args[0], "deny")) && n == 2 &&
	    !strcmp(args[1], "list") && !daemon_up())
		return list_from_pins(args[0][0] == 'd');
	if (!strcmp(args[0], "attach") || !strcmp(args[0], "top") || !strcmp(args[0], "allow") ||
	    !strcmp(args[0], "deny") || !strcmp(args[0], "shadow"))
		return call(n, (const char *const *)args);
	fprintf(stderr, "xrlctl: unknown verb '%s'\n", args[0]);
	usage(stderr);
	return 2;
}
