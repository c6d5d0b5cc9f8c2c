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
#include "xrl.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xrl-load [--pin-dir DIR] [-v] COMMAND IFACE [ARGS]\n"
		"  attach IFACE [--mode native|skb|auto] [--fine-clock] [--rule SPEC]... [--allow CIDR]...\n"
		"  policy IFACE [--rule SPEC]... [--allow CIDR]...\n"
		"  stats  IFACE\n"
		"  deny   IFACE CIDR [--ttl DURATION]\n"
		"  allow  IFACE CIDR\n"
		"  detach IFACE\n"
		"SPEC: name=N,proto=tcp|udp|any,flags=syn|any,ports=80;443;8000-8080,dst=CIDR,\n"
		"      rate=100/s,burst=50,action=drop|shadow,key4=32,key6=64\n");
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
			if (!strcmp(v, "tcp")) r->proto = XRL_PROTO_TCP;
			else if (!strcmp(v, "udp")) r->proto = XRL_PROTO_UDP;
			else if (!strcmp(v, "any")) r->proto = XRL_PROTO_ANY;
			else { snprintf(err, errlen, "proto '%s': want tcp, udp or any", v); rc = -EINVAL; }
		} else if (!strcmp(tok, "flags")) {
			if (!strcmp(v, "syn")) r->tcp_class = XRL_TCP_SYN;
			else if (!strcmp(v, "any")) r->tcp_class = XRL_TCP_ANY;
			else { snprintf(err, errlen, "flags '%s': want syn or any", v); rc = -EINVAL; }
		} else if (!strcmp(tok, "action")) {
			if (!strcmp(v, "drop")) r->action = XRL_ACT_DROP;
			else if (!strcmp(v, "shadow")) r->action = XRL_ACT_SHADOW;
			else { snprintf(err, errlen, "action '%s': want drop or shadow", v); rc = -EINVAL; }
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
	static const char *vn[XRL_V_MAX] = { "passed", "dropped", "shadow_dropped" };
	struct xrl_config cfg;
	__u32 zero = 0;

	if (xrl_read_stats(h, &st)) {
		log_warn("couldn't read the counters");
		return;
	}
	memset(&meta, 0, sizeof(meta));
	if (!bpf_map_lookup_elem(xrl_map_fd(h, XRL_MAP_CONFIG), &zero, &cfg))
		bpf_map_lookup_elem(xrl_map_fd(h, XRL_MAP_META), &cfg.active_ruleset, &meta);
	for (int i = 0; i < XRL_G_MAX; i++)
		printf("global.%s %llu\n", xrl_global_name(i), (unsigned long long)st.global.c[i]);
	for (__u32 r = 0; r < st.n_rules; r++)
		for (int v = 0; v < XRL_V_MAX; v++)
			printf("rule.%s.%s %llu %llu\n", meta.names[r][0] ? meta.names[r] : "?", vn[v],
			       (unsigned long long)st.rules[r].pkts[v],
			       (unsigned long long)st.rules[r].bytes[v]);
	printf("buckets %ld\n", xrl_bucket_count(h));
}

int main(int argc, char **argv)
{
	static struct xrl_policy pol;
	struct xrl_open_opts o = { .pin_root = XRL_PIN_ROOT_DEFAULT, .mode = XRL_MODE_AUTO };
	const char *cmd, *ttl = NULL, *cidr;
	char err[XRL_ERRLEN] = "";
	struct xrl_handle *h;
	bool have_policy = false;
	int rc, verbose = 0;
	__u64 ttl_ns = 0;
	static const struct option lo[] = {
		{ "pin-dir", required_argument, NULL, 'p' },
		{ "mode", required_argument, NULL, 'm' },
		{ "rule", required_argument, NULL, 'r' },
		{ "allow", required_argument, NULL, 'a' },
		{ "ttl", required_argument, NULL, 't' },
		{ "fine-clock", no_argument, NULL, 'f' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c;

	/* GNU getopt permutes: options may come before or after the words */
	while ((c = getopt_long(argc, argv, "p:m:r:a:t:fvh", lo, NULL)) != -1) {
		switch (c) {
		case 'p': o.pin_root = optarg; break;
		case 'm':
			if (!strcmp(optarg, "native")) o.mode = XRL_MODE_NATIVE;
			else if (!strcmp(optarg, "skb")) o.mode = XRL_MODE_SKB;
			else if (!strcmp(optarg, "auto")) o.mode = XRL_MODE_AUTO;
			else { fprintf(stderr, "xrl-load: --mode '%s': want native, skb or auto\n", optarg); return 2; }
			break;
		case 'r':
			if (pol.n_rules >= XRL_MAX_RULES ||
			    parse_rule(optarg, &pol.rules[pol.n_rules], err, sizeof(err))) {
				fprintf(stderr, "xrl-load: --rule '%s': %s\n", optarg,
					err[0] ? err : "too many rules");
				return 2;
			}
			pol.n_rules++;
			have_policy = true;
			break;
		case 'a':
			if (pol.n_allow >= XRL_POLICY_MAX_ALLOW ||
			    xrl_prefix_parse(optarg, &pol.allow[pol.n_allow], err, sizeof(err))) {
				fprintf(stderr, "xrl-load: --allow: %s\n", err[0] ? err : "too many entries");
				return 2;
			}
			pol.n_allow++;
			have_policy = true;
			break;
		case 't': ttl = optarg; break;
		case 'f': o.fine_clock = true; break;
		case 'v': verbose++; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (argc - optind < 2 || argc - optind > 3) {
		usage(stderr);
		return 2;
	}
	cmd = argv[optind];
	o.ifname = argv[optind + 1];
	cidr = argc - optind == 3 ? argv[optind + 2] : NULL;

	log_init("xrl-load", verbose > 1 ? XRL_LOG_DEBUG : verbose ? XRL_LOG_INFO : XRL_LOG_WARN, 0);
	log_hook_libs();

	if (ttl && xrl_duration_parse(ttl, &ttl_ns, err, sizeof(err))) {
		fprintf(stderr, "xrl-load: --ttl: %s\n", err);
		return 2;
	}
	if ((!strcmp(cmd, "deny") || !strcmp(cmd, "allow")) && !cidr) {
		fprintf(stderr, "xrl-load: %s needs a CIDR\n", cmd);
		return 2;
	}
	if (have_policy && (rc = xrl_policy_validate(&pol, err, sizeof(err)))) {
		fprintf(stderr, "xrl-load: invalid policy: %s\n", err);
		return 2;
	}
	if (strcmp(cmd, "attach") && strcmp(cmd, "policy") && strcmp(cmd, "stats") &&
	    strcmp(cmd, "deny") && strcmp(cmd, "allow") && strcmp(cmd, "detach")) {
		fprintf(stderr, "xrl-load: unknown command '%s'\n", cmd);
		usage(stderr);
		return 2;
	}

	/* only attach loads and attaches; every other verb works on the pins */
	rc = !strcmp(cmd, "attach") ? xrl_open(&o, &h) : xrl_open_pinned(o.pin_root, o.ifname, &h);
	if (rc) {
		fprintf(stderr, "xrl-load: couldn't open xrl on %s: %s%s\n", o.ifname, strerror(-rc),
			rc == -ENOENT && strcmp(cmd, "attach") ? " (not attached: run attach first)" : "");
		return 1;
	}
	if (!strcmp(cmd, "attach") || !strcmp(cmd, "policy")) {
		const struct xrl_attach_info *in = xrl_info(h);

		if (have_policy && (rc = xrl_apply_policy(h, &pol, err, sizeof(err)))) {
			fprintf(stderr, "xrl-load: %s\n", err);
			xrl_close(h);
			return 1;
		}
		printf("%s: prog %u %s, mode %s, %s, pins %s\n", o.ifname, in->prog_id,
		       in->reused_prog ? "kept" : "attached",
		       in->mode == XRL_MODE_SKB ? "skb" : "native",
		       in->multiprog ? "libxdp dispatcher" : "single program",
		       in->reused_pins ? "reused" : "new");
	} else if (!strcmp(cmd, "stats")) {
		print_stats(h);
	} else if (!strcmp(cmd, "deny") || !strcmp(cmd, "allow")) {
		struct xrl_prefix p;

		if (xrl_prefix_parse(cidr, &p, err, sizeof(err))) {
			fprintf(stderr, "xrl-load: %s\n", err);
			xrl_close(h);
			return 2;
		}
		rc = !strcmp(cmd, "deny") ? xrl_deny_add(h, &p, ttl_ns, 0) : xrl_allow_add(h, &p);
		if (rc) {
			fprintf(stderr, "xrl-load: couldn't add %s: %s\n", cidr, strerror(-rc));
			xrl_close(h);
			return 1;
		}
	} else if (!strcmp(cmd, "detach")) {
		rc = xrl_detach(h);
		if (rc) {
			fprintf(stderr, "xrl-load: couldn't detach from %s: %s\n", o.ifname, strerror(-rc));
			return 1;
		}
		printf("%s: detached, pins removed\n", o.ifname);
		return 0;
	}
	xrl_close(h);
	return 0;
}
