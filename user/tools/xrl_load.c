// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xrl-load - a thin command line over the loader library, for the lab, the
 * demo and the end-to-end tests. The operator's tools (xrld, xrlctl) are
 * built on the same library.
 *
 * Exit codes: 0 ok, 1 error, 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "log.h"
#include "report.h"
#include "xrl.h"
#include "xrl_version.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xrl-load [--pin-dir DIR] [-v] COMMAND IFACE [ARGS]\n"
		"       xrl-load --help | --version\n"
		"  attach IFACE [--mode native|skb|auto] [--fine-clock] [--kernel-cookies] [--rule SPEC]... [--allow CIDR]...\n"
		"  policy IFACE [--rule SPEC]... [--allow CIDR]...\n"
		"  stats  IFACE\n"
		"  deny   IFACE CIDR [--ttl DURATION]\n"
		"  allow  IFACE CIDR\n"
		"  detach IFACE\n"
		"SPEC: name=N,proto=tcp|udp|any,flags=syn|any,ports=80;443;8000-8080,dst=CIDR,\n"
		"      rate=100/s,burst=50,action=drop|shadow,key4=32,key6=64,cookies=on|off\n");
}

/* A rule option whose value is one of words (NULL-ended), stored as vals[i]. */
static int word_opt(const char *tok, const char *v, const char *want, const char *const *words,
		    const int *vals, __u8 *out, char *err, size_t errlen)
{
	for (int i = 0; words[i]; i++) {
		if (!strcmp(v, words[i])) {
			*out = (__u8)vals[i];
			return 0;
		}
	}
	snprintf(err, errlen, "%s '%s': want %s", tok, v, want);
	return -EINVAL;
}

static int parse_ports(const char *v, struct xrl_rule_spec *r, char *err, size_t errlen)
{
	char buf[256], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", v);
	for (tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		unsigned long lo, hi;
		char *end;

		if (r->n_ports >= XRL_MAX_PORT_RANGES) {
			snprintf(err, errlen, "at most %d port ranges", XRL_MAX_PORT_RANGES);
			return -EINVAL;
		}
		lo = strtoul(tok, &end, 10);
		hi = lo;
		if (*end == '-')
			hi = strtoul(end + 1, &end, 10);
		if (*end || end == tok || lo > 65535 || hi > 65535) {
			snprintf(err, errlen, "'%s' is not a port or port range", tok);
			return -EINVAL;
		}
		r->ports[r->n_ports].lo = (__u16)lo;
		r->ports[r->n_ports].hi = (__u16)hi;
		r->n_ports++;
	}
	return 0;
}

static int parse_rule(const char *spec, struct xrl_rule_spec *r, char *err, size_t errlen)
{
	char buf[1024], *save = NULL, *tok;
	int rc = 0;

	xrl_rule_spec_init(r, NULL);
	if (strlen(spec) >= sizeof(buf)) {
		snprintf(err, errlen, "rule spec too long");
		return -EINVAL;
	}
	strcpy(buf, spec);
	for (tok = strtok_r(buf, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *v;

		if (!eq) {
			snprintf(err, errlen, "'%s': want key=value", tok);
			return -EINVAL;
		}
		*eq = '\0';
		v = eq + 1;
		if (!strcmp(tok, "name")) {
			snprintf(r->name, sizeof(r->name), "%s", v);
		} else if (!strcmp(tok, "proto")) {
			rc = word_opt(tok, v, "tcp, udp or any", (const char *const[]){ "tcp", "udp", "any", NULL },
				      (const int[]){ XRL_PROTO_TCP, XRL_PROTO_UDP, XRL_PROTO_ANY }, &r->proto,
				      err, errlen);
		} else if (!strcmp(tok, "flags")) {
			rc = word_opt(tok, v, "syn or any", (const char *const[]){ "syn", "any", NULL },
				      (const int[]){ XRL_TCP_SYN, XRL_TCP_ANY }, &r->tcp_class, err, errlen);
		} else if (!strcmp(tok, "action")) {
			rc = word_opt(tok, v, "drop or shadow", (const char *const[]){ "drop", "shadow", NULL },
				      (const int[]){ XRL_ACT_DROP, XRL_ACT_SHADOW }, &r->action, err, errlen);
		} else if (!strcmp(tok, "cookies")) {
			rc = word_opt(tok, v, "on or off", (const char *const[]){ "on", "off", NULL },
				      (const int[]){ XRL_COOKIES_ON, XRL_COOKIES_OFF }, &r->syn_cookies, err,
				      errlen);
		} else if (!strcmp(tok, "ports")) {
			rc = parse_ports(v, r, err, errlen);
		} else if (!strcmp(tok, "dst")) {
			rc = xrl_prefix_parse(v, &r->dst, err, errlen);
			r->has_dst = true;
		} else if (!strcmp(tok, "rate")) {
			rc = xrl_rate_parse(v, &r->rate, err, errlen);
		} else if (!strcmp(tok, "burst")) {
			char *end;
			unsigned long b = strtoul(v, &end, 10);

			if (*end || !*v || b > XRL_GCRA_BURST_MAX) {
				snprintf(err, errlen, "burst '%s': want a whole number", v);
				rc = -EINVAL;
			}
			r->burst = (__u32)b;
		} else if (!strcmp(tok, "key4") || !strcmp(tok, "key6")) {
			char *end;
			unsigned long b = strtoul(v, &end, 10);

			if (*end || !*v || b > (tok[3] == '4' ? 32u : 128u)) {
				snprintf(err, errlen, "%s '%s': want a prefix length", tok, v);
				rc = -EINVAL;
			}
			if (tok[3] == '4')
				r->key_plen4 = (__u8)b;
			else
				r->key_plen6 = (__u8)b;
		} else {
			snprintf(err, errlen, "unknown rule key '%s'", tok);
			rc = -EINVAL;
		}
	}
	return rc;
}

static void print_stats(struct xrl_handle *h)
{
	struct xrl_ruleset_meta meta;
	static struct xrl_stats st;

	if (xrl_read_stats(h, &st)) {
		log_warn("couldn't read the counters");
		return;
	}
	xrl_read_rule_names(h, &meta); /* names stay empty when it fails: "?" */
	for (int i = 0; i < XRL_G_MAX; i++)
		printf("global.%s %llu\n", xrl_global_name(i), (unsigned long long)st.global.c[i]);
	for (__u32 r = 0; r < st.n_rules; r++)
		for (int v = 0; v < XRL_V_MAX; v++)
			printf("rule.%s.%s %llu %llu\n", meta.names[r][0] ? meta.names[r] : "?",
			       xrl_verdict_name(v), (unsigned long long)st.rules[r].pkts[v],
			       (unsigned long long)st.rules[r].bytes[v]);
	printf("buckets %ld\n", xrl_bucket_count(h));
}

/* What the command line asks for. */
struct args {
	struct xrl_policy pol;
	struct xrl_open_opts o;
	const char *cmd, *cidr;
	bool have_policy;
	int verbose;
	__u64 ttl_ns;
};

/* --rule SPEC (rule) or --allow CIDR: one more entry of the policy; 0, or
 * the exit code 2 with the reason said. */
static int add_to_policy(struct args *a, bool rule)
{
	char err[XRL_ERRLEN] = "";
	__u32 *n = rule ? &a->pol.n_rules : &a->pol.n_allow;
	int rc = -1;

	if (*n < (rule ? XRL_MAX_RULES : XRL_POLICY_MAX_ALLOW))
		rc = rule ? parse_rule(optarg, &a->pol.rules[*n], err, sizeof(err))
			  : xrl_prefix_parse(optarg, &a->pol.allow[*n], err, sizeof(err));
	if (rc) {
		if (!err[0])
			snprintf(err, sizeof(err), "too many %s", rule ? "rules" : "entries");
		if (rule)
			fprintf(stderr, "xrl-load: --rule '%s': %s\n", optarg, err);
		else
			fprintf(stderr, "xrl-load: --allow: %s\n", err);
		return 2;
	}
	(*n)++;
	a->have_policy = true;
	return 0;
}

/* One option into a; 0, or the exit code. */
static int take_option(struct args *a, int c, const char **ttl)
{
	switch (c) {
	case 'p':
		a->o.pin_root = optarg;
		return 0;
	case 'm':
		if (!strcmp(optarg, "native"))
			a->o.mode = XRL_MODE_NATIVE;
		else if (!strcmp(optarg, "skb"))
			a->o.mode = XRL_MODE_SKB;
		else if (!strcmp(optarg, "auto"))
			a->o.mode = XRL_MODE_AUTO;
		else {
			fprintf(stderr, "xrl-load: --mode '%s': want native, skb or auto\n",
				optarg);
			return 2;
		}
		return 0;
	case 'r':
	case 'a':
		return add_to_policy(a, c == 'r');
	case 't':
		*ttl = optarg;
		return 0;
	case 'f':
		a->o.fine_clock = true;
		return 0;
	case 'K':
		a->o.kernel_cookies = true;
		return 0;
	case 'v':
		a->verbose++;
		return 0;
	case 'h':
		usage(stdout);
		return -1;
	case 'V':
		printf("xrl-load %s\n", XRL_VERSION);
		return -1;
	default:
		usage(stderr);
		return 2;
	}
}

/* The command line into a: 0, or the exit code (-1: exit 0). */
static int parse_args(struct args *a, int argc, char **argv)
{
	static const struct option lo[] = {
		XRL_OPT_PIN_DIR,
		{ "mode", required_argument, NULL, 'm' },
		{ "rule", required_argument, NULL, 'r' },
		{ "allow", required_argument, NULL, 'a' },
		{ "ttl", required_argument, NULL, 't' },
		{ "fine-clock", no_argument, NULL, 'f' },
		{ "kernel-cookies", no_argument, NULL, 'K' },
		XRL_OPT_VERBOSE,
		XRL_OPT_HELP,
		{ "version", no_argument, NULL, 'V' },
		{},
	};
	const char *ttl = NULL;
	char err[XRL_ERRLEN] = "";
	int c, rc;

	/* GNU getopt permutes: options may come before or after the words */
	while ((c = getopt_long(argc, argv, "p:m:r:a:t:fKvhV", lo, NULL)) != -1)
		if ((rc = take_option(a, c, &ttl)))
			return rc;
	if (argc - optind < 2 || argc - optind > 3) {
		usage(stderr);
		return 2;
	}
	a->cmd = argv[optind];
	a->o.ifname = argv[optind + 1];
	a->cidr = argc - optind == 3 ? argv[optind + 2] : NULL;
	if (ttl && xrl_duration_parse(ttl, &a->ttl_ns, err, sizeof(err))) {
		fprintf(stderr, "xrl-load: --ttl: %s\n", err);
		return 2;
	}
	if ((!strcmp(a->cmd, "deny") || !strcmp(a->cmd, "allow")) && !a->cidr) {
		fprintf(stderr, "xrl-load: %s needs a CIDR\n", a->cmd);
		return 2;
	}
	if (a->have_policy && xrl_policy_compile(&a->pol, err, sizeof(err))) {
		fprintf(stderr, "xrl-load: invalid policy: %s\n", err);
		return 2;
	}
	if (strcmp(a->cmd, "attach") && strcmp(a->cmd, "policy") && strcmp(a->cmd, "stats") &&
	    strcmp(a->cmd, "deny") && strcmp(a->cmd, "allow") && strcmp(a->cmd, "detach")) {
		fprintf(stderr, "xrl-load: unknown command '%s'\n", a->cmd);
		usage(stderr);
		return 2;
	}
	return 0;
}

/* attach and policy: the policy given, then where the program stands. */
static int do_policy(struct args *a, struct xrl_handle *h)
{
	const struct xrl_attach_info *in = xrl_info(h);
	char err[XRL_ERRLEN] = "";

	if (a->have_policy && xrl_apply_policy(h, &a->pol, err, sizeof(err))) {
		fprintf(stderr, "xrl-load: %s\n", err);
		return 1;
	}
	printf("%s: prog %u %s, mode %s, %s, pins %s\n", a->o.ifname, in->prog_id,
	       in->reused_prog ? "kept" : "attached", in->mode == XRL_MODE_SKB ? "skb" : "native",
	       in->multiprog ? "libxdp dispatcher" : "single program",
	       in->reused_pins ? "reused" : "new");
	return 0;
}

static int do_list_add(struct args *a, struct xrl_handle *h)
{
	char err[XRL_ERRLEN] = "";
	struct xrl_prefix p;
	int rc;

	if (xrl_prefix_parse(a->cidr, &p, err, sizeof(err))) {
		fprintf(stderr, "xrl-load: %s\n", err);
		return 2;
	}
	rc = !strcmp(a->cmd, "deny") ? xrl_deny_add(h, &p, a->ttl_ns, 0) : xrl_allow_add(h, &p);
	if (rc) {
		fprintf(stderr, "xrl-load: couldn't add %s: %s\n", a->cidr, strerror(-rc));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct args a = { .o = { .pin_root = XRL_PIN_ROOT_DEFAULT, .mode = XRL_MODE_AUTO } };
	struct xrl_handle *h;
	int rc;

	rc = parse_args(&a, argc, argv);
	if (rc)
		return rc < 0 ? 0 : rc;
	log_init("xrl-load",
		 a.verbose > 1 ? XRL_LOG_DEBUG
		 : a.verbose   ? XRL_LOG_INFO
			       : XRL_LOG_WARN,
		 0);
	log_hook_libs();

	/* only attach loads and attaches; every other verb works on the pins */
	rc = !strcmp(a.cmd, "attach") ? xrl_open(&a.o, &h)
				      : xrl_open_pinned(a.o.pin_root, a.o.ifname, &h);
	if (rc) {
		fprintf(stderr, "xrl-load: couldn't open xrl on %s: %s%s\n", a.o.ifname,
			strerror(-rc),
			rc == -ENOENT && strcmp(a.cmd, "attach")
				? " (not attached: run attach first)"
				: "");
		return 1;
	}
	if (!strcmp(a.cmd, "detach")) {
		rc = xrl_detach(h);
		if (rc) {
			fprintf(stderr, "xrl-load: couldn't detach from %s: %s\n", a.o.ifname,
				strerror(-rc));
			return 1;
		}
		printf("%s: detached, pins removed\n", a.o.ifname);
		return 0;
	}
	if (!strcmp(a.cmd, "attach") || !strcmp(a.cmd, "policy"))
		rc = do_policy(&a, h);
	else if (!strcmp(a.cmd, "stats"))
		print_stats(h);
	else
		rc = do_list_add(&a, h);
	xrl_close(h);
	return rc;
}
