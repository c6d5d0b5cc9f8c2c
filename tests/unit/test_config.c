// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_config.c - unit tests of the policy file parser (user/lib/config.c):
 * the documented example field by field, defaults, the extensions, every
 * class of error with its FILE:LINE:COL, that a failed parse leaves the
 * caller's config alone, the summary, and the example policies under
 * docs/examples/ (so run it from the repository root). No root, no BPF.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

#include "config.h"
#include "http_cfg.h"
#include "log.h"
#include "xrl.h"

/* One parse with the file name "t.yaml"; the result in *cfg, text in err. */
static struct xrld_config *cfg;
static char err[XRL_ERRLEN];

static int parse(const char *yaml)
{
	memset(err, 0, sizeof(err));
	return xrl_config_parse(yaml, strlen(yaml), "t.yaml", cfg, err, sizeof(err));
}

#define PARSE_OK(yaml) \
	do { \
		int rc_ = parse(yaml); \
		if (rc_) \
			print_error("[%s] parse failed (%d): %s\n", ctx, rc_, err); \
		assert_int_equal(rc_, 0); \
	} while (0)

static int setup(void **state)
{
	cfg = calloc(1, sizeof(*cfg));
	return cfg ? 0 : -1;
}

static int teardown(void **state)
{
	free(cfg);
	cfg = NULL;
	return 0;
}

static const char *pfx(const struct xrl_prefix *p)
{
	static char buf[64];

	return xrl_prefix_str(p, buf, sizeof(buf));
}

/* A rule's dst_ports as written in a summary: "lo" or "lo-hi", by spaces. */
static const char *ports(const struct xrl_rule_spec *r)
{
	static char buf[128];
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < r->n_ports && off < sizeof(buf); i++) {
		const struct xrl_port_range *p = &r->ports[i];
		const char *sep = i ? " " : "";

		if (p->lo == p->hi)
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%u", sep, p->lo);
		else
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%u-%u", sep, p->lo,
						p->hi);
	}
	return buf;
}

/* What a parsed xdp rule holds, field by field (expect_rule checks all). */
struct want_rule {
	const char *name;
	int proto, tcp_class;
	const char *ports; /* as ports() writes them; "" for any port */
	const char *dst;   /* NULL: no dst */
	unsigned plen4, plen6;
	ull tokens, period_ns, burst;
	int action;
};

static void expect_rule(const struct xrl_rule_spec *r, const struct want_rule *w)
{
	STR_EQ(r->name, w->name);
	EQ(r->proto, w->proto);
	EQ(r->tcp_class, w->tcp_class);
	STR_EQ(ports(r), w->ports);
	EQ(r->has_dst, w->dst != NULL);
	if (w->dst)
		STR_EQ(pfx(&r->dst), w->dst);
	EQ(r->key_plen4, w->plen4);
	EQ(r->key_plen6, w->plen6);
	EQ(r->rate.tokens, w->tokens);
	EQ(r->rate.period_ns, w->period_ns);
	EQ(r->burst, w->burst);
	EQ(r->action, w->action);
}

/* The top-level settings a file leaves to their defaults when it omits them. */
static void expect_top_defaults(void)
{
	EQ(cfg->buckets_max, 0);
	EQ(cfg->event_interval_ns, 0);
	STR_EQ(cfg->metrics, "");
	EQ(cfg->on_exit_detach, false);
	EQ(cfg->log_level, -1);
	EQ(cfg->has_http, false);
}

/* Field f of policy.rules[0], [1]... against one wanted value each. */
#define EQ_RULES(f, ...) \
	do { \
		const ull w_[] = { __VA_ARGS__ }; \
		for (size_t i_ = 0; i_ < sizeof(w_) / sizeof(w_[0]); i_++) { \
			ull g_ = (ull)cfg->policy.rules[i_].f; \
			CHECK_(g_ == w_[i_], "policy.rules[%zu].%s = %llu, want %llu\n", i_, #f, \
			       g_, w_[i_]); \
		} \
	} while (0)

/* ---- the documented example ---------------------------------------------- */

static const char example[] =
	"interfaces:\n"
	"  - name: eth0\n"
	"    mode: native            # native | skb | auto\n"
	"xdp:\n"
	"  allow: [10.0.0.0/8, \"2001:db8:100::/48\"]\n"
	"  rules:\n"
	"    - name: syn\n"
	"      match: { proto: tcp, tcp_flags: syn, dst_ports: [80, 443] }\n"
	"      key: { ipv4_prefix: 32, ipv6_prefix: 64 }\n"
	"      rate: 100/s\n"
	"      burst: 50\n"
	"      action: drop          # drop | shadow\n"
	"    - name: login\n"
	"      match: { proto: tcp, tcp_flags: syn, dst: 203.0.113.10/32, dst_ports: [443] }\n"
	"      rate: 10/min\n"
	"      burst: 10\n"
	"penalty: { strikes: 3, window: 60s, base: 60s, max: 1h }\n";

static void test_example(void **state)
{
	const struct xrl_rule_spec *syn, *login;
	struct xrl_rule r;

	CTX("example");
	PARSE_OK(example);
	STR_EQ(err, "");

	EQ(cfg->n_ifaces, 1);
	STR_EQ(cfg->ifaces[0].name, "eth0");
	EQ(cfg->ifaces[0].mode, XRL_MODE_NATIVE);

	EQ(cfg->has_xdp, true);
	EQ(cfg->policy.n_allow, 2);
	STR_EQ(pfx(&cfg->policy.allow[0]), "10.0.0.0/8");
	EQ(cfg->policy.allow[0].family, XRL_AF_INET);
	STR_EQ(pfx(&cfg->policy.allow[1]), "2001:db8:100::/48");
	EQ(cfg->policy.allow[1].family, XRL_AF_INET6);

	EQ(cfg->policy.n_rules, 2);
	syn = &cfg->policy.rules[0];
	CTX("example: rule syn");
	expect_rule(syn, &(struct want_rule){ "syn", XRL_PROTO_TCP, XRL_TCP_SYN, "80 443", NULL, 32,
					      64, 100, SEC, 50, XRL_ACT_DROP });
	EQ(syn->id, 0);
	assert_int_equal(xrl_rule_compile(syn, &r, err, sizeof(err)), 0);
	EQ(r.emit_ns, 10 * MS);
	EQ(r.tau_ns, 500 * MS);
	EQ(r.id, xrl_rule_id("syn"));

	login = &cfg->policy.rules[1];
	CTX("example: rule login");
	expect_rule(login,
		    &(struct want_rule){ "login", XRL_PROTO_TCP, XRL_TCP_SYN, "443",
					 "203.0.113.10/32", 32, 64, 10, MINUTE, 10, XRL_ACT_DROP });
	assert_int_equal(xrl_rule_compile(login, &r, err, sizeof(err)), 0);
	EQ(r.emit_ns, 6 * SEC);
	EQ(r.tau_ns, 60 * SEC);
	EQ(r.dst_family, XRL_AF_INET);
	EQ(r.dst_plen, 32);

	CTX("example: the rest");
	EQ(cfg->penalty.enabled, true);
	EQ(cfg->penalty.strikes, 3);
	EQ(cfg->penalty.window_ns, 60 * SEC);
	EQ(cfg->penalty.base_ns, 60 * SEC);
	EQ(cfg->penalty.max_ns, HOUR);
	expect_top_defaults();
}

/* ---- defaults and the extensions ----------------------------------------- */

static void test_defaults(void **state)
{
	CTX("defaults");
	PARSE_OK("interfaces:\n"
		 "  - name: eth1\n"
		 "xdp:\n"
		 "  rules:\n"
		 "    - name: all\n"
		 "      rate: 1000/s\n"
		 "      burst: 100\n");
	EQ(cfg->n_ifaces, 1);
	STR_EQ(cfg->ifaces[0].name, "eth1");
	EQ(cfg->ifaces[0].mode, XRL_MODE_NATIVE);
	EQ(cfg->has_xdp, true);
	EQ(cfg->policy.n_allow, 0);
	EQ(cfg->policy.n_rules, 1);
	expect_rule(&cfg->policy.rules[0],
		    &(struct want_rule){ "all", XRL_PROTO_ANY, XRL_TCP_ANY, "", NULL, 32, 64, 1000,
					 SEC, 100, XRL_ACT_DROP });
	EQ(cfg->penalty.enabled, false);
	expect_top_defaults();
}

static void expect_empty(const char *what)
{
	EQ(cfg->n_ifaces, 0);
	EQ(cfg->has_xdp, false);
	EQ(cfg->policy.n_rules, 0);
	EQ(cfg->policy.n_allow, 0);
	EQ(cfg->penalty.enabled, false);
	expect_top_defaults();
	(void)what;
}

static void test_empty(void **state)
{
	static const char *const texts[] = {
		"",    "\n", "# only a comment\n", "# one\n\n# two\n", "---\n", "--- # c\n...\n",
		"~\n",
	};
	static const char *const sections[] = {
		"interfaces:\nxdp:\n",
		"interfaces: []\nxdp: {}\n",
		"xdp:\n  allow: []\n  rules: []\n",
	};

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		CTX("empty file %zu: \"%s\"", i, texts[i]);
		memset(cfg, 0x5a, sizeof(*cfg));
		PARSE_OK(texts[i]);
		expect_empty(texts[i]);
	}
	CTX("NULL buffer, length 0");
	assert_int_equal(xrl_config_parse(NULL, 0, "t.yaml", cfg, err, sizeof(err)), 0);
	expect_empty("NULL");

	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		CTX("empty sections: \"%s\"", sections[i]);
		PARSE_OK(sections[i]);
		EQ(cfg->n_ifaces, 0);
		EQ(cfg->has_xdp, true);
		EQ(cfg->policy.n_rules, 0);
	}
}

static void test_http_only(void **state)
{
	const struct xrl_http_rule *r = &cfg->http.rules[0];

	CTX("http only");
	PARSE_OK("# the identity tier alone\n"
		 "http:\n"
		 "  listen: 127.0.0.1:8433\n"
		 "  backend: memory\n"
		 "  trusted_proxies: [127.0.0.1/32]\n"
		 "  rules:\n"
		 "    - name: holds\n"
		 "      match: { method: POST, path_prefix: /api/holds }\n"
		 "      key: header:X-User-Id       # header:NAME | bearer | client_ip\n"
		 "      rate: 1/6s\n"
		 "      burst: 10\n"
		 "      cost: 1\n"
		 "      on_backend_error: open      # open | closed | local\n"
		 "      shadow: false\n");
	EQ(cfg->has_http, true);
	EQ(cfg->has_xdp, false);
	EQ(cfg->n_ifaces, 0);
	EQ(cfg->policy.n_rules, 0);
	EQ(cfg->http.n_rules, 1);
	EQ(cfg->http.redis, false);
	EQ(cfg->http.n_trusted, 1);
	assert_string_equal(r->name, "holds");
	assert_string_equal(r->method, "POST");
	assert_string_equal(r->path_prefix, "/api/holds");
	EQ(r->key_kind, XRL_KEY_HEADER);
	assert_string_equal(r->header, "X-User-Id");
	EQ(r->rate.tokens, 1);
	EQ(r->rate.period_ns, 6 * XRL_NSEC_PER_SEC);
	EQ(r->burst, 10);
	EQ(r->cost, 1);
	EQ(r->on_backend_error, XRL_BE_OPEN);
	EQ(r->shadow, false);
	EQ(r->g.emit_ns, 6 * XRL_NSEC_PER_SEC);
	PARSE_OK("http:\n  backend: redis://127.0.0.1:6390/2\n  rules:\n"
		 "    - { name: k, key: bearer, rate: 5/s, burst: 5, on_backend_error: local }\n");
	EQ(cfg->http.redis, true);
	EQ(cfg->http.redis_port, 6390);
	EQ(cfg->http.redis_db, 2);
	assert_string_equal(cfg->http.redis_host, "127.0.0.1");
	EQ(cfg->http.rules[0].key_kind, XRL_KEY_BEARER);
	EQ(cfg->http.rules[0].on_backend_error, XRL_BE_LOCAL);
	PARSE_OK("http: {}\n");
	EQ(cfg->has_http, true);
	EQ(cfg->http.n_rules, 0);
}

static void test_extensions(void **state)
{
	const struct xrl_rule_spec *r;

	CTX("extensions");
	PARSE_OK("interfaces:\n"
		 "  - name: eth0\n"
		 "    mode: skb\n"
		 "  - name: ens1f0\n"
		 "    mode: auto\n"
		 "  - {name: lo, mode: native}\n"
		 "xdp:\n"
		 "  buckets: 4096\n"
		 "  event_interval: 250ms\n"
		 "  allow:\n"
		 "    - 192.0.2.1\n"
		 "    - ::1\n"
		 "  rules:\n"
		 "    - name: dns\n"
		 "      match:\n"
		 "        proto: udp\n"
		 "        dst_ports: [53, \"8000-8080\", '9000-9000', 10000-10010]\n"
		 "        dst: 2001:db8::/32\n"
		 "      key: {ipv4_prefix: 24, ipv6_prefix: 48}\n"
		 "      rate: 2.5/s\n"
		 "      burst: \"7\"\n"
		 "      action: shadow\n"
		 "    - name: any.thing_1-2\n"
		 "      match: {proto: any, tcp_flags: any}\n"
		 "      rate: 1/6s\n"
		 "      burst: 1\n"
		 "    - name: slow\n"
		 "      match: {}\n"
		 "      key: {ipv4_prefix: 0, ipv6_prefix: 128}\n"
		 "      rate: 20/h\n"
		 "      burst: 3\n"
		 "penalty:\n"
		 "  strikes: 1\n"
		 "  window: 10s\n"
		 "  base: 1h\n"
		 "  max: 1h\n"
		 "metrics: 127.0.0.1:8434\n"
		 "on_exit: detach\n"
		 "log_level: debug\n"
		 "http:\n"
		 "  listen: 127.0.0.1:8080\n");
	EQ(cfg->n_ifaces, 3);
	EQ(cfg->ifaces[0].mode, XRL_MODE_SKB);
	STR_EQ(cfg->ifaces[1].name, "ens1f0");
	EQ(cfg->ifaces[1].mode, XRL_MODE_AUTO);
	STR_EQ(cfg->ifaces[2].name, "lo");
	EQ(cfg->ifaces[2].mode, XRL_MODE_NATIVE);
	EQ(cfg->buckets_max, 4096);
	EQ(cfg->event_interval_ns, 250 * MS);
	EQ(cfg->policy.n_allow, 2);
	STR_EQ(pfx(&cfg->policy.allow[0]), "192.0.2.1/32");
	STR_EQ(pfx(&cfg->policy.allow[1]), "::1/128");

	EQ(cfg->policy.n_rules, 3);
	r = &cfg->policy.rules[0];
	CTX("extensions: dns");
	expect_rule(r, &(struct want_rule){ "dns", XRL_PROTO_UDP, XRL_TCP_ANY,
					    "53 8000-8080 9000 10000-10010", "2001:db8::/32", 24,
					    48, 25, 10 * SEC, 7, XRL_ACT_SHADOW });

	r = &cfg->policy.rules[1];
	CTX("extensions: any.thing_1-2");
	STR_EQ(r->name, "any.thing_1-2");
	EQ(r->proto, XRL_PROTO_ANY);
	EQ(r->tcp_class, XRL_TCP_ANY);
	EQ(r->rate.tokens, 1);
	EQ(r->rate.period_ns, 6 * SEC);

	r = &cfg->policy.rules[2];
	CTX("extensions: slow");
	EQ(r->key_plen4, 0);
	EQ(r->key_plen6, 128);
	EQ(r->rate.period_ns, HOUR);

	CTX("extensions: the rest");
	EQ(cfg->penalty.enabled, true);
	EQ(cfg->penalty.strikes, 1);
	EQ(cfg->penalty.window_ns, 10 * SEC);
	EQ(cfg->penalty.base_ns, HOUR);
	EQ(cfg->penalty.max_ns, HOUR);
	STR_EQ(cfg->metrics, "127.0.0.1:8434");
	EQ(cfg->on_exit_detach, true);
	EQ(cfg->log_level, XRL_LOG_DEBUG);
	EQ(cfg->has_http, true);

	CTX("on_exit keep, other log levels, metrics forms");
	PARSE_OK("on_exit: keep\nlog_level: error\nmetrics: \"[::1]:8434\"\n");
	EQ(cfg->on_exit_detach, false);
	EQ(cfg->log_level, XRL_LOG_ERR);
	STR_EQ(cfg->metrics, "[::1]:8434");
	STR_EQ(cfg->metrics_host, "::1"); /* parsed once, here */
	EQ(cfg->metrics_port, 8434);
	PARSE_OK("log_level: warning\nmetrics: localhost:65535\n");
	EQ(cfg->log_level, XRL_LOG_WARN);
	STR_EQ(cfg->metrics, "localhost:65535");
	STR_EQ(cfg->metrics_host, "localhost");
	EQ(cfg->metrics_port, 65535);
	PARSE_OK("log_level: info\nmetrics: metrics.example.com:1\n");
	EQ(cfg->log_level, XRL_LOG_INFO);

	CTX("anchors and aliases");
	PARSE_OK("xdp:\n"
		 "  rules:\n"
		 "    - name: a\n"
		 "      match: &web {proto: tcp, dst_ports: [80, 443]}\n"
		 "      rate: 1/s\n"
		 "      burst: 1\n"
		 "    - name: b\n"
		 "      match: *web\n"
		 "      rate: 2/s\n"
		 "      burst: 2\n");
	EQ(cfg->policy.rules[1].n_ports, 2);
	EQ(cfg->policy.rules[1].ports[1].lo, 443);

	CTX("syn_cookies on, off, and off by default");
	PARSE_OK("xdp:\n  rules:\n"
		 "    - { name: c, match: { proto: tcp, dst_ports: [443] }, rate: 1/s, burst: 1, syn_cookies: on }\n"
		 "    - { name: d, match: { proto: tcp }, rate: 1/s, burst: 1, syn_cookies: off }\n"
		 "    - { name: e, rate: 1/s, burst: 1 }\n");
	EQ_RULES(syn_cookies, XRL_COOKIES_ON, XRL_COOKIES_OFF, XRL_COOKIES_OFF);

	CTX("syn_cookies auto and its thresholds, with defaults");
	PARSE_OK("xdp:\n  rules:\n"
		 "    - { name: c, match: { proto: tcp }, rate: 1/s, burst: 1, syn_cookies: auto,\n"
		 "        syn_cookies_auto: { on_rate: 600/min, off_rate: 2/s, hold: 3s, queue_pct: 0 } }\n"
		 "    - { name: d, match: { proto: tcp }, rate: 1/s, burst: 1, syn_cookies: auto }\n");
	EQ(cfg->policy.rules[0].syn_cookies, XRL_COOKIES_AUTO);
	EQ(cfg->policy.rules[0].auto_on_rate, 10);
	EQ(cfg->policy.rules[0].auto_off_rate, 2);
	EQ(cfg->policy.rules[0].auto_hold_ns, 3 * XRL_NSEC_PER_SEC);
	EQ(cfg->policy.rules[0].auto_queue_pct, 0);
	EQ(cfg->policy.rules[1].auto_on_rate, XRL_AUTO_ON_RATE);
	EQ(cfg->policy.rules[1].auto_off_rate, XRL_AUTO_OFF_RATE);
	EQ(cfg->policy.rules[1].auto_hold_ns, XRL_AUTO_HOLD_NS);
	EQ(cfg->policy.rules[1].auto_queue_pct, XRL_AUTO_QUEUE_PCT);

	CTX("aggregate: rate, burst, vouched_share in per mille, none by default");
	PARSE_OK("xdp:\n  rules:\n"
		 "    - { name: c, match: { proto: tcp }, rate: 1/s, burst: 1,\n"
		 "        aggregate: { rate: 1000/s, burst: 200, vouched_share: 0.25 } }\n"
		 "    - { name: d, rate: 1/s, burst: 1, aggregate: { rate: 5/s, burst: 5 } }\n"
		 "    - { name: e, rate: 1/s, burst: 1 }\n");
	EQ_RULES(agg_rate.tokens, 1000, 5, 0);
	EQ_RULES(agg_burst, 200, 5);
	EQ_RULES(agg_vouched_pm, 250, 0);
}

static void test_limits(void **state)
{
	char *y = malloc(64 * 1024);
	size_t off;

	assert_non_null(y);
	CTX("64 rules accepted");
	off = (size_t)sprintf(y, "xdp:\n  rules:\n");
	for (int i = 0; i < XRL_MAX_RULES; i++)
		off += (size_t)sprintf(y + off, "    - {name: r%d, rate: 1/s, burst: 1}\n", i);
	PARSE_OK(y);
	EQ(cfg->policy.n_rules, XRL_MAX_RULES);
	STR_EQ(cfg->policy.rules[63].name, "r63");

	CTX("65 rules refused");
	sprintf(y + off, "    - {name: r64, rate: 1/s, burst: 1}\n");
	EQ(parse(y), -EINVAL);
	HAS(err, "t.yaml:67:7: xdp.rules[64]: at most 64 rules");

	CTX("8 port ranges accepted, 9 refused");
	PARSE_OK("xdp:\n  rules:\n    - name: p\n      rate: 1/s\n      burst: 1\n"
		 "      match: {dst_ports: [1, 2, 3, 4, 5, 6, 7, \"8-9\"]}\n");
	EQ(cfg->policy.rules[0].n_ports, 8);
	EQ(parse("xdp:\n  rules:\n    - name: p\n      rate: 1/s\n      burst: 1\n"
		 "      match: {dst_ports: [1, 2, 3, 4, 5, 6, 7, 8, 9]}\n"),
	   -EINVAL);
	HAS(err,
	    "t.yaml:6:51: xdp.rules[0].match.dst_ports[8]: at most 8 ports or port ranges per rule");

	CTX("a 31-character rule name accepted, 32 refused");
	PARSE_OK(
		"xdp:\n  rules:\n    - {name: aaaaaaaaaabbbbbbbbbbccccccccccd, rate: 1/s, burst: 1}\n");
	EQ(parse("xdp:\n  rules:\n    - {name: aaaaaaaaaabbbbbbbbbbccccccccccdd, rate: 1/s, burst: 1}\n"),
	   -EINVAL);
	HAS(err, "t.yaml:3:14: xdp.rules[0].name: expected a rule name of 1-31 letters");
	free(y);
}

/* ---- errors ------------------------------------------------------------------ */

struct bad {
	const char *what;
	const char *yaml;
	const char *want; /* a substring of the message, FILE:LINE:COL first */
};

static const struct bad bads[] = {
	/* unknown keys */
	{ "unknown key in rule", "xdp:\n  rules:\n    - name: a\n      rate: 1/s\n      burts: 5\n",
	  "t.yaml:5:7: xdp.rules[0]: unknown key 'burts' in rule; expected one of name, match, key, rate, burst, action" },
	{ "unknown top-level key", "interfaces: []\nxpd: {}\n",
	  "t.yaml:2:1: unknown key 'xpd' in the top level; expected one of interfaces, xdp, penalty, metrics, on_exit, log_level, http, fleet (did you mean 'xdp'?)" },
	{ "unknown key in match",
	  "xdp:\n  rules:\n    - name: a\n      match: {port: 80}\n      rate: 1/s\n      burst: 1\n",
	  "t.yaml:4:15: xdp.rules[0].match: unknown key 'port' in match; expected one of proto, tcp_flags, dst_ports, dst" },
	{ "unknown key in key",
	  "xdp:\n  rules:\n    - name: a\n      key: {ipv4: 24}\n      rate: 1/s\n      burst: 1\n",
	  "t.yaml:4:13: xdp.rules[0].key: unknown key 'ipv4' in key; expected one of ipv4_prefix, ipv6_prefix" },
	{ "unknown key in xdp", "xdp:\n  allowlist: []\n",
	  "t.yaml:2:3: xdp: unknown key 'allowlist' in xdp; expected one of allow, rules, buckets, event_interval" },
	{ "unknown key in interface", "interfaces:\n  - name: eth0\n    driver: ixgbe\n",
	  "t.yaml:3:5: interfaces[0]: unknown key 'driver' in interface; expected one of name, mode" },
	{ "unknown key in penalty",
	  "penalty: { strikes: 3, window: 60s, base: 60s, max: 1h, min: 1s }\n",
	  "t.yaml:1:57: penalty: unknown key 'min' in penalty; expected one of strikes, window, base, max" },
	{ "key given twice",
	  "xdp:\n  rules:\n    - name: a\n      rate: 1/s\n      burst: 1\n      rate: 2/s\n",
	  "t.yaml:6:7: xdp.rules[0]: key 'rate' is given twice (first at line 4)" },

	/* bad rates and durations */
	{ "rate without a period",
	  "xdp:\n  rules:\n    - name: a\n      rate: 100\n      burst: 5\n",
	  "t.yaml:4:13: xdp.rules[0].rate: expected COUNT/PERIOD such as 100/s or 10/min, got '100'" },
	{ "rate with an unknown unit",
	  "xdp:\n  rules:\n    - name: a\n      rate: 10/fortnight\n      burst: 5\n",
	  "t.yaml:4:13: xdp.rules[0].rate: expected COUNT/PERIOD such as 100/s or 10/min, got '10/fortnight': unknown period unit" },
	{ "rate of zero", "xdp:\n  rules:\n    - name: a\n      rate: 0/s\n      burst: 5\n",
	  "t.yaml:4:13: xdp.rules[0].rate: expected COUNT/PERIOD such as 100/s or 10/min, got '0/s': a rate of zero" },
	{ "rate empty", "xdp:\n  rules:\n    - name: a\n      rate:\n      burst: 5\n",
	  "xdp.rules[0].rate: expected COUNT/PERIOD such as 100/s or 10/min, got nothing" },
	{ "rate out of range",
	  "xdp:\n  rules:\n    - name: a\n      rate: 1/100d\n      burst: 1\n",
	  "t.yaml:4:13: xdp.rules[0]: rule a: rate must be between" },
	{ "bad duration", "xdp:\n  event_interval: soon\n",
	  "t.yaml:2:19: xdp.event_interval: expected a duration such as 500ms, 60s, 10m or 1h, got 'soon'" },
	{ "duration of zero", "xdp:\n  event_interval: 0s\n",
	  "t.yaml:2:19: xdp.event_interval: expected a duration such as 500ms, 60s, 10m or 1h, got '0s': it must be above zero" },
	{ "penalty window without unit",
	  "penalty: { strikes: 3, window: 60, base: 60s, max: 1h }\n",
	  "t.yaml:1:32: penalty.window: expected a duration such as 500ms, 60s, 10m or 1h, got '60': unknown or missing unit" },

	/* bad prefixes */
	{ "allow entry with host bits", "xdp:\n  allow: [10.0.0.0/8, 10.0.0.1/8]\n",
	  "t.yaml:2:23: xdp.allow[1]: expected an address prefix such as 10.0.0.0/8 or 2001:db8::/48, got '10.0.0.1/8': has host bits set" },
	{ "allow entry not an address", "xdp:\n  allow:\n    - example.com\n",
	  "t.yaml:3:7: xdp.allow[0]: expected an address prefix such as 10.0.0.0/8 or 2001:db8::/48, got 'example.com'" },
	{ "allow prefix too long", "xdp:\n  allow: [\"2001:db8::/129\"]\n",
	  "t.yaml:2:11: xdp.allow[0]: expected an address prefix such as 10.0.0.0/8 or 2001:db8::/48, got '2001:db8::/129': prefix length must be 0..128" },
	{ "allow entry twice", "xdp:\n  allow: [10.0.0.0/8, 192.0.2.0/24, 10.0.0.0/8]\n",
	  "t.yaml:2:37: xdp.allow[2]: 10.0.0.0/8 is listed twice (first as xdp.allow[0])" },
	{ "bad dst",
	  "xdp:\n  rules:\n    - name: a\n      match: {dst: 203.0.113.10/24}\n      rate: 1/s\n      burst: 1\n",
	  "t.yaml:4:20: xdp.rules[0].match.dst: expected an address prefix such as 10.0.0.0/8 or 2001:db8::/48, got '203.0.113.10/24': has host bits set" },

	/* bad ports */
	{ "port above 65535",
	  "xdp:\n  rules:\n    - name: a\n      match: {dst_ports: [80, 70000]}\n      rate: 1/s\n      burst: 1\n",
	  "t.yaml:4:31: xdp.rules[0].match.dst_ports[1]: expected a port 1-65535 or a range such as 8000-8080, got '70000'" },
	{ "port zero",
	  "xdp:\n  rules:\n    - name: a\n      match: {dst_ports: [0]}\n      rate: 1/s\n      burst: 1\n",
	  "t.yaml:4:27: xdp.rules[0].match.dst_ports[0]: expected a port 1-65535 or a range such as 8000-8080, got '0'" },
	{ "port range backwards",
	  "xdp:\n  rules:\n    - name: a\n      match: {dst_ports: [\"9000-8000\"]}\n      rate: 1/s\n      burst: 1\n",
	  "t.yaml:4:27: xdp.rules[0].match.dst_ports[0]: expected a port 1-65535 or a range such as 8000-8080, got '9000-8000': the range is backwards" },
	{ "port range malformed",
	  "xdp:\n  rules:\n    - name: a\n      match: {dst_ports: [\"80-\"]}\n      rate: 1/s\n      burst: 1\n",
	  "t.yaml:4:27: xdp.rules[0].match.dst_ports[0]: expected a port 1-65535 or a range such as 8000-8080, got '80-'" },
	{ "port as a word",
	  "xdp:\n  rules:\n    - name: a\n      match:\n        dst_ports:\n          - https\n      rate: 1/s\n      burst: 1\n",
	  "t.yaml:6:13: xdp.rules[0].match.dst_ports[0]: expected a port 1-65535 or a range such as 8000-8080, got 'https'" },
	{ "dst_ports not a list",
	  "xdp:\n  rules:\n    - name: a\n      match: {dst_ports: 443}\n      rate: 1/s\n      burst: 1\n",
	  "t.yaml:4:26: xdp.rules[0].match.dst_ports: expected a list of ports (443) or ranges (\"8000-8080\"), got '443'" },
	{ "dst_ports empty",
	  "xdp:\n  rules:\n    - name: a\n      match: {dst_ports: []}\n      rate: 1/s\n      burst: 1\n",
	  "t.yaml:4:26: xdp.rules[0].match.dst_ports: expected at least one port" },

	/* missing fields */
	{ "missing burst", "xdp:\n  rules:\n    - name: a\n      rate: 1/s\n",
	  "t.yaml:3:7: xdp.rules[0]: missing 'burst'" },
	{ "missing rate", "xdp:\n  rules:\n    - name: a\n      burst: 1\n",
	  "t.yaml:3:7: xdp.rules[0]: missing 'rate'" },
	{ "missing name", "xdp:\n  rules:\n    - rate: 1/s\n      burst: 1\n",
	  "t.yaml:3:7: xdp.rules[0]: missing 'name'" },
	{ "missing interface name", "interfaces:\n  - mode: skb\n",
	  "t.yaml:2:5: interfaces[0]: missing 'name'" },
	{ "empty rule", "xdp:\n  rules:\n    -\n",
	  "t.yaml:3:6: xdp.rules[0]: expected a rule (a mapping with name, rate and burst), got nothing" },

	/* duplicates */
	{ "duplicate rule name",
	  "xdp:\n  rules:\n    - name: a\n      rate: 1/s\n      burst: 1\n"
	  "    - name: b\n      rate: 1/s\n      burst: 1\n"
	  "    - name: a\n      rate: 2/s\n      burst: 2\n",
	  "t.yaml:9:13: xdp.rules[2].name: rule name 'a' is used twice (first at line 3)" },
	{ "duplicate interface",
	  "interfaces:\n  - name: eth0\n  - name: eth1\n  - name: eth0\n    mode: skb\n",
	  "t.yaml:4:11: interfaces[2].name: interface 'eth0' is listed twice (first at line 2)" },

	/* wrong types */
	{ "mapping where a value is expected",
	  "xdp:\n  rules:\n    - name: a\n      rate: {per: s}\n      burst: 1\n",
	  "t.yaml:4:13: xdp.rules[0].rate: expected COUNT/PERIOD such as 100/s or 10/min, got a mapping" },
	{ "list where a mapping is expected",
	  "xdp:\n  rules:\n    - name: a\n      match: [tcp, syn]\n      rate: 1/s\n      burst: 1\n",
	  "t.yaml:4:14: xdp.rules[0].match: expected a mapping (proto, tcp_flags, dst_ports, dst), got a list" },
	{ "value where a list is expected", "xdp:\n  allow: 10.0.0.0/8\n",
	  "t.yaml:2:10: xdp.allow: expected a list of address prefixes, got '10.0.0.0/8'" },
	{ "interface as a bare word", "interfaces:\n  - eth0\n",
	  "t.yaml:2:5: interfaces[0]: expected a mapping (name, mode), got 'eth0'" },
	{ "top level a list", "- xdp\n",
	  "t.yaml:1:1: expected a mapping (interfaces, xdp, penalty, metrics, on_exit, log_level, http, fleet), got a list" },
	{ "top level a word", "hello\n",
	  "t.yaml:1:1: expected a mapping (interfaces, xdp, penalty, metrics, on_exit, log_level, http, fleet), got 'hello'" },
	{ "rule a list", "xdp:\n  rules:\n    - [a, 1/s, 1]\n",
	  "t.yaml:3:7: xdp.rules[0]: expected a mapping (name, match, key, rate, burst, action, penalty, syn_cookies, aggregate, syn_cookies_auto), got a list" },
	{ "rule syn_cookies word",
	  "xdp:\n  rules:\n    - { name: a, match: { proto: tcp }, rate: 1/s, burst: 1, syn_cookies: yes }\n",
	  "xdp.rules[0].syn_cookies: expected one of off, on or auto, got 'yes'" },
	{ "syn_cookies_auto without hysteresis",
	  "xdp:\n  rules:\n    - { name: a, match: { proto: tcp }, rate: 1/s, burst: 1, syn_cookies: auto,\n"
	  "        syn_cookies_auto: { on_rate: 100/s, off_rate: 100/s } }\n",
	  "xdp.rules[0].syn_cookies_auto: off_rate (100/s) must be below on_rate (100/s)" },
	{ "syn_cookies_auto queue_pct above 100",
	  "xdp:\n  rules:\n    - { name: a, match: { proto: tcp }, rate: 1/s, burst: 1, syn_cookies: auto,\n"
	  "        syn_cookies_auto: { queue_pct: 101 } }\n",
	  "xdp.rules[0].syn_cookies_auto.queue_pct: expected a percentage from 0 (not watched) to 100, got '101'" },
	{ "syn_cookies_auto unknown key",
	  "xdp:\n  rules:\n    - { name: a, match: { proto: tcp }, rate: 1/s, burst: 1,\n"
	  "        syn_cookies_auto: { on: 5/s } }\n",
	  "xdp.rules[0].syn_cookies_auto: unknown key 'on'" },
	{ "rule syn_cookies without proto tcp",
	  "xdp:\n  rules:\n    - { name: a, rate: 1/s, burst: 1, syn_cookies: on }\n",
	  "t.yaml:3:52: xdp.rules[0].syn_cookies: SYN cookies need match.proto: tcp" },
	{ "aggregate share too large",
	  "xdp:\n  rules:\n    - { name: a, rate: 1/s, burst: 1, aggregate: { rate: 9/s, burst: 9, vouched_share: 1 } }\n",
	  "xdp.rules[0].aggregate.vouched_share: expected a share from 0 to 0.9, such as 0.2 (the rest is how new sources get in), got '1'" },
	{ "aggregate without burst",
	  "xdp:\n  rules:\n    - { name: a, rate: 1/s, burst: 1, aggregate: { rate: 9/s } }\n",
	  "xdp.rules[0].aggregate: needs rate and burst" },
	{ "aggregate burst 1 with a share",
	  "xdp:\n  rules:\n    - { name: a, rate: 1/s, burst: 1, aggregate: { rate: 9/s, burst: 1, vouched_share: 0.5 } }\n",
	  "aggregate burst must be at least 2 with a vouched share" },
	{ "rule penalty word",
	  "xdp:\n  rules:\n    - { name: a, rate: 1/s, burst: 1, penalty: yes }\n",
	  "xdp.rules[0].penalty: expected one of verified, unverified or off, got 'yes'" },
	{ "penalty floor too short",
	  "penalty: { strikes: 1, window: 1s, base: 1s, max: 1s, floor_v4: 0 }\n",
	  "penalty.floor_v4: expected a prefix length from 8 to 32, got '0'" },
	{ "penalty floor v6 too long",
	  "penalty: { strikes: 1, window: 1s, base: 1s, max: 1s, floor_v6: 129 }\n",
	  "penalty.floor_v6: expected a prefix length from 16 to 128, got '129'" },
	{ "http penalty has no floor",
	  "http:\n  penalty: { strikes: 1, window: 1s, base: 1s, max: 1s, floor_v4: 24 }\n",
	  "penalty: unknown key 'floor_v4' in penalty; expected one of strikes, window, base, max" },
	{ "burst a list", "xdp:\n  rules:\n    - name: a\n      rate: 1/s\n      burst: [1]\n",
	  "t.yaml:5:14: xdp.rules[0].burst: expected a whole number of packets from 1 to 100000000, got a list" },
	{ "http a value", "http: on\n", "t.yaml:1:7: http: expected a mapping (listen, backend" },
	{ "http bad key kind",
	  "http:\n  rules:\n    - { name: a, key: cookie, rate: 1/s, burst: 1 }\n",
	  "t.yaml:3:23: http.rules[0].key: expected header:NAME, bearer, client_ip or global, got 'cookie'" },
	{ "http bad backend", "http:\n  backend: memcached://x\n",
	  "t.yaml:2:12: http.backend: expected memory or redis://[[USER]:PASSWORD@]HOST:PORT[/DB]" },
	{ "http cost above burst",
	  "http:\n  rules:\n    - { name: a, rate: 1/s, burst: 2, cost: 3 }\n",
	  "t.yaml:3:45: http.rules[0].cost: expected a whole number of tokens" },
	{ "non-scalar key", "xdp:\n  ? [a, b]\n  : 1\n",
	  "t.yaml:2:5: xdp: expected a key (allow, rules, buckets, event_interval, cookie_path), got a list" },

	/* bad words and numbers */
	{ "burst zero", "xdp:\n  rules:\n    - name: a\n      rate: 1/s\n      burst: 0\n",
	  "t.yaml:5:14: xdp.rules[0].burst: expected a whole number of packets from 1 to 100000000, got '0'" },
	{ "burst negative", "xdp:\n  rules:\n    - name: a\n      rate: 1/s\n      burst: -5\n",
	  "t.yaml:5:14: xdp.rules[0].burst: expected a whole number of packets from 1 to 100000000, got '-5'" },
	{ "burst too large",
	  "xdp:\n  rules:\n    - name: a\n      rate: 1/s\n      burst: 100000001\n",
	  "got '100000001'" },
	{ "bad action",
	  "xdp:\n  rules:\n    - name: a\n      rate: 1/s\n      burst: 1\n      action: reject\n",
	  "t.yaml:6:15: xdp.rules[0].action: expected one of drop or shadow, got 'reject'" },
	{ "bad proto",
	  "xdp:\n  rules:\n    - name: a\n      match: {proto: icmp}\n      rate: 1/s\n      burst: 1\n",
	  "t.yaml:4:22: xdp.rules[0].match.proto: expected one of tcp, udp or any, got 'icmp'" },
	{ "bad tcp_flags",
	  "xdp:\n  rules:\n    - name: a\n      match: {tcp_flags: ack}\n      rate: 1/s\n      burst: 1\n",
	  "t.yaml:4:26: xdp.rules[0].match.tcp_flags: expected one of syn or any, got 'ack'" },
	{ "syn with udp",
	  "xdp:\n  rules:\n    - name: a\n      match: {proto: udp, tcp_flags: syn}\n      rate: 1/s\n      burst: 1\n",
	  "t.yaml:4:38: xdp.rules[0].match.tcp_flags: tcp_flags syn matches TCP only, but proto is udp" },
	{ "bad key prefix",
	  "xdp:\n  rules:\n    - name: a\n      key: {ipv6_prefix: 129}\n      rate: 1/s\n      burst: 1\n",
	  "t.yaml:4:26: xdp.rules[0].key.ipv6_prefix: expected a prefix length 0-128" },
	{ "bad rule name",
	  "xdp:\n  rules:\n    - name: \"web syn\"\n      rate: 1/s\n      burst: 1\n",
	  "t.yaml:3:13: xdp.rules[0].name: expected a rule name of 1-31 letters, digits, '-', '_' or '.', got 'web syn'" },
	{ "bad mode", "interfaces:\n  - name: eth0\n    mode: generic\n",
	  "t.yaml:3:11: interfaces[0].mode: expected one of native, skb or auto, got 'generic'" },
	{ "bad interface name", "interfaces:\n  - name: averyveryverylongname\n",
	  "t.yaml:2:11: interfaces[0].name: expected an interface name of 1-15 characters" },
	{ "buckets too small", "xdp:\n  buckets: 10\n",
	  "t.yaml:2:12: xdp.buckets: expected a bucket table size from 1024 to 268435456 entries, got '10'" },
	{ "metrics without a port", "metrics: 127.0.0.1\n",
	  "t.yaml:1:10: metrics: expected HOST:PORT such as 127.0.0.1:8434 or [::1]:8434, port 1-65535, got '127.0.0.1'" },
	{ "metrics port 0", "metrics: 127.0.0.1:0\n", "t.yaml:1:10: metrics: expected HOST:PORT" },
	{ "metrics port too large", "metrics: localhost:65536\n",
	  "t.yaml:1:10: metrics: expected HOST:PORT" },
	{ "metrics IPv6 without brackets", "metrics: \"::1:8434\"\n",
	  "t.yaml:1:10: metrics: expected HOST:PORT" },
	{ "bad on_exit", "on_exit: stay\n",
	  "t.yaml:1:10: on_exit: expected one of detach or keep, got 'stay'" },
	{ "bad log_level", "log_level: verbose\n",
	  "t.yaml:1:12: log_level: expected one of error, warning, info or debug, got 'verbose'" },
	{ "a NUL inside a value",
	  "xdp:\n  rules:\n    - name: a\n      rate: \"1/s\\0x\"\n      burst: 1\n",
	  "t.yaml:4:13: xdp.rules[0].rate: expected COUNT/PERIOD such as 100/s or 10/min, got a value with a NUL character in it" },

	/* penalty */
	{ "penalty base above max", "penalty: { strikes: 3, window: 60s, base: 2h, max: 1h }\n",
	  "t.yaml:1:43: penalty.base: expected base <= max, got base 2h and max 1h" },
	{ "penalty strikes zero", "penalty:\n  strikes: 0\n  window: 60s\n  base: 60s\n  max: 1h\n",
	  "t.yaml:2:12: penalty.strikes: expected a whole number of strikes, 1 or more, got '0'" },
	{ "penalty missing max", "penalty:\n  strikes: 3\n  window: 60s\n  base: 60s\n",
	  "t.yaml:2:3: penalty: missing 'max'" },
	{ "penalty empty", "penalty: {}\n", "t.yaml:1:10: penalty: missing 'strikes'" },
	{ "penalty a value", "penalty: on\n",
	  "t.yaml:1:10: penalty: expected a mapping (strikes, window, base, max, floor_v4, floor_v6), got 'on'" },

	/* YAML itself */
	{ "bad indentation", "xdp:\n  rules:\n  - name: a\n   rate: 1/s\n",
	  "t.yaml:4:4: YAML syntax error: did not find expected key (while parsing a block mapping at line 2 column 3)" },
	{ "unclosed flow sequence", "xdp:\n  allow: [10.0.0.0/8\n",
	  "t.yaml:3:1: YAML syntax error: did not find expected ',' or ']'" },
	{ "tab indentation", "xdp:\n\trules: []\n",
	  "t.yaml:2:1: YAML syntax error: found character that cannot start any token" },
	{ "mapping value in a plain scalar", "metrics: a: b\n",
	  "t.yaml:1:11: YAML syntax error: mapping values are not allowed in this context" },
	{ "undefined alias", "xdp:\n  rules: *rules\n",
	  "t.yaml:2:10: YAML syntax error: found undefined alias" },
	{ "invalid UTF-8", "xdp:\n  allow: [\xc3\x28]\n",
	  "t.yaml:2:12: YAML error: invalid trailing UTF-8 octet" },
	{ "a second document", "xdp: {}\n---\nxdp: {}\n",
	  "t.yaml:3:1: expected one YAML document, but a second one starts here" },
	{ "a syntax error in a second document", "xdp: {}\n---\nxdp: [\n",
	  "t.yaml:4:1: YAML syntax error" },
	{ "fleet without a name", "fleet: { redis: 'redis://127.0.0.1:6379' }\n",
	  "fleet: missing 'name'" },
	{ "fleet without a Redis", "fleet: { name: f1 }\n", "fleet 'f1': no Redis to meet in" },
	{ "fleet.redis memory", "fleet: { name: f1, redis: memory }\n",
	  "fleet.redis: expected a redis:// URL, got memory" },
	{ "fleet name with a space", "fleet: { name: 'a b' }\n",
	  "fleet.name: expected a fleet name" },
	{ "fleet.protect not a prefix",
	  "fleet: { name: f1, redis: 'redis://127.0.0.1:6379', protect: [10.0.0.0/8, nope] }\n",
	  "fleet.protect[1]: expected an address prefix such as 10.0.0.0/8 or 2001:db8::/48, got 'nope'" },
	{ "fleet.protect not a list",
	  "fleet: { name: f1, redis: 'redis://127.0.0.1:6379', protect: 10.0.0.0/8 }\n",
	  "fleet.protect: expected a list of address prefixes" },
	{ "fleet.protect twice",
	  "fleet: { name: f1, redis: 'redis://127.0.0.1:6379', protect: [10.0.0.0/8, 10.0.0.0/8] }\n",
	  "fleet.protect[1]: 10.0.0.0/8 is listed twice" },
	{ "fleet.max_members 0",
	  "fleet: { name: f1, redis: 'redis://127.0.0.1:6379', max_members: 0 }\n",
	  "fleet.max_members: expected a member count from 1 to 65536" },
	{ "http.fleet another fleet",
	  "fleet: { name: f1, redis: 'redis://127.0.0.1:6379' }\nhttp:\n  fleet: f2\n",
	  "http.fleet: 'f2' is not the fleet 'f1'" },
};

static void test_errors(void **state)
{
	struct xrld_config *before = malloc(sizeof(*before));

	assert_non_null(before);
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		const struct bad *b = &bads[i];
		int rc;

		CTX("%s", b->what);
		memset(cfg, 0xa5, sizeof(*cfg));
		memcpy(before, cfg, sizeof(*before));
		rc = parse(b->yaml);
		if (rc != -EINVAL)
			print_error("[%s] rc %d, err \"%s\"\n", ctx, rc, err);
		EQ(rc, -EINVAL);
		HAS(err, b->want);
		/* every message is positioned and fits */
		assert_int_equal(strncmp(err, "t.yaml:", 7), 0);
		assert_true(strlen(err) < sizeof(err) - 1);
		if (memcmp(cfg, before, sizeof(*cfg)))
			print_error("[%s] the config was written on error\n", ctx);
		assert_memory_equal(cfg, before, sizeof(*cfg));
	}
	free(before);
}

/* An error found only by xrl_policy_compile: two names with one FNV-1a id. */
static void test_validate(void **state)
{
	CTX("rule id collision");
	assert_int_equal(xrl_rule_id("r66999"), xrl_rule_id("r916676"));
	memset(cfg, 0xa5, sizeof(*cfg));
	EQ(parse("xdp:\n  rules:\n"
		 "    - {name: r66999, rate: 1/s, burst: 1}\n"
		 "    - {name: r916676, rate: 1/s, burst: 1}\n"),
	   -EINVAL);
	HAS(err, "t.yaml: rules 'r66999' and 'r916676' have the same id");
	EQ(cfg->n_ifaces, 0xa5a5a5a5u);
}

/*
 * A reload compiles each rule once: the parse (which compiles a rule to
 * place its error), then the checks xrld makes before and while it applies
 * (install_config, xrld_push_policy, xrl_apply_policy: each a
 * xrl_policy_compile) and the id lookups read p->compiled, never compiling
 * again. xrl_apply_policy's ruleset copies p->compiled (tests/bpf counts it
 * over a real apply).
 */
static void test_compile_once(void **state)
{
	static struct xrl_policy pol;
	char yaml[8192], e[XRL_ERRLEN];
	size_t off;
	unsigned long before;
	const unsigned n = 40;

	CTX("compiled once per rule");
	off = (size_t)snprintf(yaml, sizeof(yaml), "xdp:\n  rules:\n");
	for (unsigned i = 0; i < n; i++)
		off += (size_t)snprintf(yaml + off, sizeof(yaml) - off,
					"    - {name: r%u, rate: %u/s, burst: 5}\n", i, i + 1);
	before = xrl_rule_compile_count();
	PARSE_OK(yaml);
	EQ(cfg->policy.n_compiled, n);
	pol = cfg->policy;
	for (int k = 0; k < 3; k++)
		EQ(xrl_policy_compile(&pol, e, sizeof(e)), 0);
	xrl_policy_set_action(&pol, 3, XRL_ACT_SHADOW);
	EQ(xrl_policy_compile(&pol, e, sizeof(e)), 0);
	EQ(pol.compiled[3].action, XRL_ACT_SHADOW);
	EQ(xrl_rule_compile_count() - before, n);
	EQ(pol.compiled[7].id, xrl_rule_id("r7"));
}

/* http.listen is parsed once, at the parse: its port and socket address. */
static void test_listen_addr(void **state)
{
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)&cfg->http.listen_addr;
	const struct sockaddr_in *a4 = (const struct sockaddr_in *)&cfg->http.listen_addr;
	struct xrl_http_cfg h;

	CTX("listen v4");
	PARSE_OK("http:\n  listen: 127.0.0.2:8080\n");
	EQ(cfg->http.listen_addr.ss_family, AF_INET);
	EQ(cfg->http.listen_addrlen, sizeof(*a4));
	EQ(ntohs(a4->sin_port), 8080);
	EQ(ntohl(a4->sin_addr.s_addr), 0x7f000002u);
	EQ(cfg->http.listen_port, 8080);
	CTX("listen v6");
	PARSE_OK("http:\n  listen: '[::1]:99'\n");
	EQ(cfg->http.listen_addr.ss_family, AF_INET6);
	EQ(cfg->http.listen_addrlen, sizeof(*a6));
	EQ(ntohs(a6->sin6_port), 99);
	EQ(a6->sin6_addr.s6_addr[15], 1);
	CTX("listen by name: no address, the port kept");
	PARSE_OK("http:\n  listen: localhost:8433\n");
	EQ(cfg->http.listen_addr.ss_family, AF_UNSPEC);
	EQ(cfg->http.listen_addrlen, 0);
	EQ(cfg->http.listen_port, 8433);
	CTX("listen's default");
	xrl_http_cfg_init(&h);
	STR_EQ(h.listen, "127.0.0.1:8433");
	EQ(h.listen_addr.ss_family, AF_INET);
	EQ(h.listen_port, 8433);
	CTX("a bad listen leaves c as it was");
	EQ(xrl_http_cfg_listen(&h, "127.0.0.1"), -EINVAL);
	STR_EQ(h.listen, "127.0.0.1:8433");
}

/* A failed parse leaves a good config as it was; a good one replaces all. */
static void test_untouched(void **state)
{
	struct xrld_config *good = malloc(sizeof(*good));
	char small[8];

	assert_non_null(good);
	CTX("untouched on error");
	PARSE_OK(example);
	memcpy(good, cfg, sizeof(*good));
	/* an error late in the file, after rules and interfaces were read */
	EQ(parse("interfaces:\n  - name: eth9\nxdp:\n  rules:\n"
		 "    - {name: x, rate: 5/s, burst: 5}\n"
		 "penalty: { strikes: 3, window: 60s, base: 2h, max: 1h }\n"),
	   -EINVAL);
	assert_memory_equal(cfg, good, sizeof(*cfg));
	EQ(parse("xdp: [\n"), -EINVAL);
	assert_memory_equal(cfg, good, sizeof(*cfg));

	CTX("a tiny or missing err buffer");
	EQ(xrl_config_parse("x: 1\n", 5, "t.yaml", cfg, small, sizeof(small)), -EINVAL);
	EQ(strlen(small), sizeof(small) - 1);
	EQ(xrl_config_parse("x: 1\n", 5, "t.yaml", cfg, NULL, 0), -EINVAL);
	assert_memory_equal(cfg, good, sizeof(*cfg));

	CTX("success replaces everything");
	PARSE_OK("http: {}\n");
	EQ(cfg->n_ifaces, 0);
	EQ(cfg->policy.n_rules, 0);
	EQ(cfg->penalty.enabled, false);
	EQ(cfg->has_http, true);
	free(good);
}

/* ---- hostile YAML ----------------------------------------------------------- */

/* len bytes: prefix, then unit repeated (cut to fit), NUL-terminated. */
static char *fill(const char *prefix, const char *unit, size_t len)
{
	size_t pl = strlen(prefix), ul = strlen(unit);
	char *y = malloc(len + 1);

	assert_non_null(y);
	memcpy(y, prefix, pl);
	for (size_t off = pl; off < len; off += ul)
		memcpy(y + off, unit, len - off < ul ? len - off : ul);
	y[len] = '\0';
	return y;
}

/* n lines, each fmt with the line's number i (from 0), after i spaces when
 * indent: a block nested n deep, or n numbered entries. */
static char *lines(int n, bool indent, const char *fmt)
{
	char *y = malloc(64 * 1024);
	size_t off = 0;

	assert_non_null(y);
	y[0] = '\0';
	for (int i = 0; i < n; i++) {
		off += (size_t)sprintf(y + off, "%*s", indent ? i : 0, "");
		off += (size_t)sprintf(y + off, fmt, i);
	}
	return y;
}

/* Parse y (freed) and check the error: -E2BIG, position and message. */
static void refused(const char *what, char *y, const char *want)
{
	CTX("%s", what);
	EQ(parse(y), -E2BIG);
	HAS(err, want);
	free(y);
}

/*
 * Issue 11, finding 11: libyaml is quadratic in flow depth and in anchors,
 * so bounds are checked on its events before it builds a tree. Each input
 * here took seconds to minutes before (1 MiB of '[' did not finish in 60 s);
 * now each is refused at the first bound crossed, with where and why.
 */
static void test_hostile_yaml(void **state)
{
	char *y;

	refused("40 '[' (small: a syntax error before the bound)", fill("", "[", 40),
		"t.yaml:1:33: too much YAML for a policy: nested deeper than 32 levels");
	refused("1 MiB of '['", fill("", "[", 1 << 20),
		"t.yaml:1:33: too much YAML for a policy: nested deeper than 32 levels");
	refused("1 MiB of '{a: '", fill("", "{a: ", 1 << 20),
		"t.yaml:1:129: too much YAML for a policy: nested deeper than 32 levels");
	refused("flow nesting inside a policy", fill("xdp: {rules: ", "[", 1 << 20),
		"t.yaml:1:44: too much YAML for a policy: nested deeper than 32 levels");

	refused("block nesting 40 deep", lines(40, true, "a:\n"),
		"t.yaml:33:33: too much YAML for a policy: nested deeper than 32 levels");
	refused("300 anchors", lines(300, false, "- &a%d x\n"),
		"t.yaml:257:3: too much YAML for a policy: more than 256 anchors (&name)");
	refused("1 MiB of aliases", fill("- &a x\n", "- *a\n", 1 << 20),
		"t.yaml:1026:3: too much YAML for a policy: more than 1024 aliases (*name)");
	refused("1 MiB of scalars", fill("", "- x\n", 1 << 20),
		"t.yaml:65536:3: too much YAML for a policy: more than 65536 nodes");

	CTX("a buffer over 1 MiB");
	y = fill("", "#\n", (1 << 20) + 1);
	EQ(parse(y), -EFBIG);
	STR_EQ(err, "t.yaml: larger than 1024 KiB, too large for a policy file");
	free(y);

	CTX("32 levels, anchors and aliases within bounds are still YAML");
	y = fill("", "[", 31);
	y = realloc(y, 128);
	assert_non_null(y);
	strcpy(y + 31, "x");
	for (int i = 0; i < 31; i++)
		strcat(y, "]");
	EQ(parse(y), -EINVAL);
	HAS(err, "t.yaml:1:1: expected a mapping");
	free(y);
	PARSE_OK("penalty: &p {strikes: 3, window: 60s, base: 5m, max: 1h}\n"
		 "log_level: info\n");
	EQ(cfg->penalty.strikes, 3);
}

/* ---- files ------------------------------------------------------------------- */

/* text into path, fopen mode "w" (replace) or "a" (append). */
static void put_file(const char *path, const char *mode, const char *text)
{
	FILE *f = fopen(path, mode);

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

static void test_load(void **state)
{
	char path[] = "/tmp/xrl-test-config-XXXXXX";
	static const char bad[] =
		"xdp:\n  rules:\n    - name: a\n      rate: 100\n      burst: 1\n";
	char want[128], *y;
	int fd;

	CTX("missing file");
	memset(cfg, 0xa5, sizeof(*cfg));
	EQ(xrl_config_load("/nonexistent/policy.yaml", cfg, err, sizeof(err)), -ENOENT);
	STR_EQ(err, "couldn't read /nonexistent/policy.yaml: No such file or directory");
	EQ(cfg->n_ifaces, 0xa5a5a5a5u);

	CTX("a directory");
	EQ(xrl_config_load("/", cfg, err, sizeof(err)), -EISDIR);
	HAS(err, "couldn't read /: ");

	CTX("errors name the path");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	put_file(path, "w", bad);
	EQ(xrl_config_load(path, cfg, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:4:13: xdp.rules[0].rate: expected COUNT/PERIOD", path);
	HAS(err, want);

	CTX("a file of 1 MiB is read, a larger one refused");
	y = fill("", "#                                                       comment\n", 1 << 20);
	put_file(path, "w", y);
	free(y);
	EQ(xrl_config_load(path, cfg, err, sizeof(err)), 0);
	put_file(path, "a", "\n");
	EQ(xrl_config_load(path, cfg, err, sizeof(err)), -EFBIG);
	snprintf(want, sizeof(want), "couldn't read %s: larger than 1024 KiB", path);
	HAS(err, want);

	CTX("the example from a file");
	put_file(path, "w", example);
	EQ(xrl_config_load(path, cfg, err, sizeof(err)), 0);
	EQ(cfg->policy.n_rules, 2);
	unlink(path);
}

static void test_examples(void **state)
{
	static const char *const files[] = {
		"docs/examples/onsale-frontend.yaml",
		"docs/examples/login-vip.yaml",
		"docs/examples/shadow-rollout.yaml",
	};
	char sum[4096];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		int rc;

		CTX("%s", files[i]);
		rc = xrl_config_load(files[i], cfg, err, sizeof(err));
		if (rc)
			print_error("[%s] %d: %s (run from the repository root)\n", ctx, rc, err);
		EQ(rc, 0);
		assert_true(cfg->n_ifaces >= 1);
		assert_true(cfg->has_xdp);
		assert_true(cfg->policy.n_rules >= 1);
		EQ(xrl_config_summary(cfg, sum, sizeof(sum)), 0);
	}

	CTX("onsale-frontend: allow and penalty");
	EQ(xrl_config_load(files[0], cfg, err, sizeof(err)), 0);
	assert_true(cfg->policy.n_allow >= 1);
	EQ(cfg->penalty.enabled, true);
	CTX("login-vip: /24 keys");
	EQ(xrl_config_load(files[1], cfg, err, sizeof(err)), 0);
	for (__u32 i = 0; i < cfg->policy.n_rules; i++) {
		CTX("login-vip: rule %s", cfg->policy.rules[i].name);
		EQ(cfg->policy.rules[i].key_plen4, 24);
		EQ(cfg->policy.rules[i].has_dst, true);
	}
	CTX("shadow-rollout: all shadow");
	EQ(xrl_config_load(files[2], cfg, err, sizeof(err)), 0);
	for (__u32 i = 0; i < cfg->policy.n_rules; i++) {
		CTX("shadow-rollout: rule %s", cfg->policy.rules[i].name);
		EQ(cfg->policy.rules[i].action, XRL_ACT_SHADOW);
	}
}

/* ---- summary ------------------------------------------------------------------ */

static void test_summary(void **state)
{
	char sum[4096], small[40];

	CTX("summary of the example");
	PARSE_OK(example);
	EQ(xrl_config_summary(cfg, sum, sizeof(sum)), 0);
	HAS(sum, "interfaces: eth0 (native)\n");
	HAS(sum, "allow: 2 prefixes (1 IPv4, 1 IPv6)\n");
	HAS(sum, "rules: 2\n");
	HAS(sum, "  syn: tcp syn ports 80,443, key /32 /64, 100/s burst 50, drop, "
		 "penalty never earned (see the warning)\n");
	HAS(sum,
	    "  login: tcp syn to 203.0.113.10/32 port 443, key /32 /64, 10/min burst 10, drop, "
	    "penalty never earned (see the warning)\n");
	/* a penalty a rule can never earn is named (SYNs without cookies) */
	HAS(sum, "warning: xdp.rules[0] (syn) never earns its penalty: under penalty: verified "
		 "(the default) a refused SYN proves nothing without SYN cookies; write "
		 "syn_cookies: on, penalty: unverified (trusted sources) or penalty: off\n");
	HAS(sum, "penalty: 3 strikes within 1min -> deny 1min, doubling up to 1h; "
		 "never shorter than /24 (IPv4) /48 (IPv6)\n");
	HAS(sum, "metrics: off\n");

	CTX("summary of the extensions");
	PARSE_OK(
		"interfaces: [{name: eth0, mode: skb}, {name: eth1, mode: auto}]\n"
		"xdp:\n"
		"  buckets: 4096\n"
		"  event_interval: 250ms\n"
		"  rules:\n"
		"    - {name: a, match: {proto: udp, dst_ports: [53, \"8000-8080\"]}, rate: 2.5/s, burst: 3, action: shadow}\n"
		"    - {name: b, rate: 1/6s, burst: 1, key: {ipv4_prefix: 24, ipv6_prefix: 48}}\n"
		"    - {name: c, rate: 3/500ms, burst: 1}\n"
		"    - {name: d, rate: 20/h, burst: 1}\n"
		"metrics: 127.0.0.1:8434\n"
		"on_exit: detach\n"
		"log_level: info\n"
		"http: {}\n");
	EQ(xrl_config_summary(cfg, sum, sizeof(sum)), 0);
	HAS(sum, "interfaces: eth0 (skb), eth1 (auto)\n");
	HAS(sum, "  a: udp ports 53,8000-8080, key /32 /64, 2.5/s burst 3, shadow\n");
	HAS(sum, "  b: any proto, key /24 /48, 1/6s burst 1, drop\n");
	HAS(sum, "  c: any proto, key /32 /64, 3/500ms burst 1, drop\n");
	HAS(sum, "  d: any proto, key /32 /64, 20/h burst 1, drop\n");
	HAS(sum, "buckets: 4096, event interval 250ms\n");
	HAS(sum, "penalty: off\n");
	HAS(sum, "metrics: 127.0.0.1:8434\n");
	HAS(sum, "on exit: detach\n");
	HAS(sum, "log level: info\n");
	HAS(sum, "http: listening on 127.0.0.1:8433, backend memory, 2 threads\n");
	HAS(sum, "  trusted proxies: none (forwarded headers are not believed)\n");

	CTX("summary of the identity tier in full: key global, concurrency, shed, exempt");
	PARSE_OK("http:\n"
		 "  listen: 127.0.0.1:9000\n"
		 "  backend: redis://user:s3cret@10.0.0.5:6380/2\n"
		 "  trusted_proxies: [10.0.0.0/8]\n"
		 "  forwarded_from: traefik\n"
		 "  exempt: [{method: GET, path_prefix: /healthz}]\n"
		 "  shed: {rate: 2000/s, burst: 500}\n"
		 "  rules:\n"
		 "    - {name: checkout, match: {method: POST, path_prefix: /api/checkout}, key: global, "
		 "concurrency: 2}\n"
		 "    - {name: login, key: \"header:X-Login\", rate: 5/min, burst: 3, cost: 0, "
		 "on_missing_key: refuse, on_backend_error: closed, shadow: true}\n");
	EQ(xrl_config_summary(cfg, sum, sizeof(sum)), 0);
	HAS(sum, "http: listening on 127.0.0.1:9000, backend redis://10.0.0.5:6380/2, 2 threads\n");
	HAS(sum, "  trusted proxies: 10.0.0.0/8 (forwarded_from traefik)\n");
	HAS(sum, "  exempt: GET /healthz\n");
	HAS(sum, "  shed: every request, 2000/s burst 500 (503 beyond)\n");
	HAS(sum, "  checkout         POST    /api/checkout        global               -              -"
		 "    1     2 1min   no     skip      open\n");
	HAS(sum, "  login            *       /                    header:X-Login       5/min          3"
		 "    0     - -      yes    refuse    closed\n");
	EQ(strstr(sum, "s3cret") == NULL, 1);
	EQ(strstr(sum, "are never believed") == NULL, 1); /* a trusted proxy is listed */
	{
		json_t *j = xrl_config_json(cfg), *h = json_object_get(j, "http");
		json_t *r0 = json_array_get(json_object_get(h, "rules"), 0);
		char *dump = json_dumps(j, 0);

		STR_EQ(json_string_value(json_object_get(r0, "key")), "global");
		EQ(json_is_null(json_object_get(r0, "rate")), 1);
		EQ(json_integer_value(json_object_get(r0, "concurrency")), 2);
		STR_EQ(json_string_value(json_object_get(h, "forwarded_from")), "traefik");
		STR_EQ(json_string_value(json_object_get(h, "backend")), "redis://10.0.0.5:6380/2");
		EQ(strstr(dump, "s3cret") == NULL, 1);
		free(dump);
		json_decref(j);
	}

	CTX("xrld --check names a rule that can never match: a path behind a proxy none trusts");
	PARSE_OK("http:\n"
		 "  listen: 127.0.0.1:9000\n"
		 "  rules:\n"
		 "    - {name: all, key: client_ip, rate: 5/s, burst: 3}\n"
		 "    - {name: login, match: {path_prefix: /login}, key: client_ip, rate: 5/min, "
		 "burst: 3}\n");
	EQ(xrl_config_summary(cfg, sum, sizeof(sum)), 0);
	HAS(sum, "warning: http.rules[1] (login) matches * /login, but with no http.trusted_proxies "
		 "the X-Original-Method/-URI headers that carry them are never believed");
	PARSE_OK("http:\n"
		 "  listen: 127.0.0.1:9000\n"
		 "  forwarded_from: envoy\n"
		 "  rules:\n"
		 "    - {name: login, match: {path_prefix: /login}, key: client_ip, rate: 5/min, "
		 "burst: 3}\n");
	EQ(xrl_config_summary(cfg, sum, sizeof(sum)), 0);
	EQ(strstr(sum, "are never believed") == NULL, 1); /* envoy: the request's own path */

	CTX("summary of an empty config");
	PARSE_OK("");
	EQ(xrl_config_summary(cfg, sum, sizeof(sum)), 0);
	HAS(sum, "interfaces: none\n");
	HAS(sum, "xdp: no section\n");

	CTX("summary truncated");
	PARSE_OK(example);
	EQ(xrl_config_summary(cfg, small, sizeof(small)), -ENOSPC);
	EQ(strlen(small), sizeof(small) - 1);
	EQ(xrl_config_summary(cfg, small, 0), -ENOSPC);
}

/*
 * http.backend URLs: user and password (%XX-decoded), IPv6 in brackets,
 * whole numbers only, and no error that shows the password.
 */
/*
 * Who may earn a penalty: the per-rule switch (default verified), the
 * floors (default /24 and /48), and what the summary says of an aggregate
 * rule keyed shorter than the floor.
 */
static void test_penalty_trust(void **state)
{
	char sum[2048];

	CTX("penalty modes and floors");
	PARSE_OK(
		"xdp:\n  rules:\n"
		"    - { name: a, rate: 1/s, burst: 1 }\n"
		"    - { name: b, rate: 1/s, burst: 1, penalty: unverified }\n"
		"    - { name: c, rate: 1/s, burst: 1, penalty: off }\n"
		"    - { name: agg, rate: 1000/s, burst: 1, key: { ipv4_prefix: 0, ipv6_prefix: 0 } }\n"
		"    - { name: v4only, rate: 1/s, burst: 1, key: { ipv4_prefix: 32, ipv6_prefix: 32 } }\n"
		"penalty: { strikes: 2, window: 1s, base: 3s, max: 12s }\n");
	EQ_RULES(penalty, XRL_PEN_VERIFIED, XRL_PEN_UNVERIFIED, XRL_PEN_OFF);
	EQ(cfg->penalty.floor4, 24);
	EQ(cfg->penalty.floor6, 48);
	EQ(xrl_config_summary(cfg, sum, sizeof(sum)), 0);
	HAS(sum, "  a: any proto, key /32 /64, 1/s burst 1, drop, penalty on verified sources\n");
	HAS(sum,
	    "  b: any proto, key /32 /64, 1/s burst 1, drop, penalty on any refusal (sources trusted)\n");
	HAS(sum, "  c: any proto, key /32 /64, 1/s burst 1, drop, penalty off\n");
	HAS(sum,
	    "  agg: any proto, key /0 /0, 1000/s burst 1, drop, no penalty (keyed shorter than the floor)\n");
	HAS(sum, "v4only: any proto, key /32 /32, 1/s burst 1, drop, penalty for one family only");

	CTX("floors set");
	PARSE_OK(
		"penalty: { strikes: 2, window: 1s, base: 3s, max: 12s, floor_v4: 16, floor_v6: 56 }\n");
	EQ(cfg->penalty.floor4, 16);
	EQ(cfg->penalty.floor6, 56);
}

static void test_backend_urls(void **state)
{
	static const struct {
		const char *url, *host, *user, *pass;
		int port, db;
	} ok[] = {
		{ "redis://127.0.0.1:6379", "127.0.0.1", "", "", 6379, 0 },
		{ "redis://r.example:1/15", "r.example", "", "", 1, 15 },
		{ "redis://:s3cret@10.0.0.5:6380/2", "10.0.0.5", "", "s3cret", 6380, 2 },
		{ "redis://xrl:p%40ss%3Aw%2F%25@h:65535", "h", "xrl", "p@ss:w/%", 65535, 0 },
		{ "redis://[::1]:6379/0", "::1", "", "", 6379, 0 },
		{ "redis://u:pw@[fe80::1]:7000", "fe80::1", "u", "pw", 7000, 0 },
	};
	static const struct {
		const char *url, *says;
	} bad[] = {
		{ "memcached://x", "backend: expected memory or redis://" },
		{ "redis://h", "backend: expected redis://[[USER]:PASSWORD@]HOST:PORT[/DB]" },
		{ "redis://h:6379x",
		  "backend: the port in the redis:// URL must be a number from 1 to 65535, got '6379x'" },
		{ "redis://h:0", "backend: the port in the redis:// URL must be" },
		{ "redis://h:65536", "backend: the port in the redis:// URL must be" },
		{ "redis://h:", "backend: the port in the redis:// URL must be" },
		{ "redis://h:6379/x",
		  "backend: the database in the redis:// URL must be a number from 0 to 1000, got 'x'" },
		{ "redis://h:6379/", "backend: the database in the redis:// URL must be" },
		{ "redis://h:6379/1001", "backend: the database in the redis:// URL must be" },
		{ "redis://::1:6379", "backend: expected redis://" },
		{ "redis://[::1]6379", "backend: expected redis://" },
		{ "redis://:6379", "backend: expected redis://" },
		{ "redis://bob@h:6379", "backend: redis://USER@...: a user needs a password" },
		{ "redis://bob:@h:6379", "backend: the password in the redis:// URL is empty" },
		{ "redis://:pw%4@h:6379",
		  "backend: the password in the redis:// URL is empty, longer than" },
		{ "redis://:pw%zzx@h:6379", "backend: the password in the redis:// URL" },
		{ "redis://:pw%00x@h:6379", "backend: the password in the redis:// URL" },
		{ "redis://b%g0b:pw@h:6379", "backend: the user in the redis:// URL" },
		{ "redis://:topsecret@h", "backend: expected redis://" },
		{ "redis://:topsecret@h:port", "backend: the port in the redis:// URL" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct xrl_http_cfg c;
		char err[256] = "";

		xrl_http_cfg_init(&c);
		CTX("%s", ok[i].url);
		EQ(xrl_http_backend_parse(ok[i].url, &c, err, sizeof(err)), 0);
		EQ(c.redis, true);
		assert_string_equal(c.redis_host, ok[i].host);
		assert_string_equal(c.redis_user, ok[i].user);
		assert_string_equal(c.redis_pass, ok[i].pass);
		EQ(c.redis_port, ok[i].port);
		EQ(c.redis_db, ok[i].db);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct xrl_http_cfg c;
		char err[256] = "";

		xrl_http_cfg_init(&c);
		EQ(xrl_http_backend_parse(bad[i].url, &c, err, sizeof(err)), -EINVAL);
		CTX("%s -> %s", bad[i].url, err);
		EQ(strncmp(err, bad[i].says, strlen(bad[i].says)), 0);
		EQ(c.redis, false);
		assert_null(strstr(err, "topsecret"));
		assert_null(strstr(err, "pw"));
		assert_null(strstr(err, "s3cret"));
	}
}

/* redis-cluster://: the seeds, the first parsed as redis:// (one AUTH
 * syntax), the others checked as HOST:PORT; no database. */
static void test_cluster_urls(void **state)
{
	static const char *const bad[] = {
		"redis-cluster://h",	     "redis-cluster://h:1,h",
		"redis-cluster://h:1,:2",    "redis-cluster://h:1/3",
		"redis-cluster://:pw@h:1,x", "redis-cluster://bob@h:1,h:2",
		"redis-cluster://h:1,h:0",
	};
	struct xrl_http_cfg c;
	char err[256] = "";

	(void)state;
	xrl_http_cfg_init(&c);
	CTX("two seeds with a user and password");
	EQ(xrl_http_backend_parse("redis-cluster://xrl:p%40ss@10.0.0.1:7000,[::1]:7001", &c, err,
				  sizeof(err)),
	   0);
	EQ(c.redis, true);
	EQ(c.redis_cluster, true);
	assert_string_equal(c.redis_host, "10.0.0.1");
	EQ(c.redis_port, 7000);
	assert_string_equal(c.redis_user, "xrl");
	assert_string_equal(c.redis_pass, "p@ss");
	assert_string_equal(c.redis_seeds, "10.0.0.1:7000,[::1]:7001");
	CTX("a concurrency rule on a cluster: accepted, its lease_ttl defaulted");
	c.n_rules = 1;
	memset(&c.rules[0], 0, sizeof(c.rules[0]));
	snprintf(c.rules[0].name, sizeof(c.rules[0].name), "uploads");
	c.rules[0].concurrency = 2;
	c.rules[0].key_kind = XRL_KEY_CLIENT_IP;
	EQ(xrl_http_cfg_finish(&c, err, sizeof(err)), 0);
	EQ(c.rules[0].lease_ttl_ns, XRL_HTTP_LEASE_TTL);
	CTX("back to redis://: not a cluster");
	EQ(xrl_http_backend_parse("redis://h:1", &c, err, sizeof(err)), 0);
	EQ(c.redis_cluster, false);
	EQ(xrl_http_cfg_finish(&c, err, sizeof(err)), 0);
	c.n_rules = 0;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		xrl_http_cfg_init(&c);
		err[0] = '\0';
		EQ(xrl_http_backend_parse(bad[i], &c, err, sizeof(err)), -EINVAL);
		CTX("%s -> %s", bad[i], err);
		EQ(c.redis, false);
		EQ(c.redis_cluster, false);
		EQ(strncmp(err, "backend: ", 9), 0);
		assert_null(strstr(err, "pw"));
	}
}

/* A fleet on a Redis Cluster: fleet.redis redis-cluster://, or the
 * identity tier's cluster backend, carries the seeds to the fleet. */
static void test_fleet_cluster(void **state)
{
	CTX("fleet.redis: redis-cluster://");
	PARSE_OK("fleet: { name: f1, redis: 'redis-cluster://:pw@10.0.0.1:7000,10.0.0.2:7001' }\n");
	EQ(cfg->fleet.redis_cluster, true);
	assert_string_equal(cfg->fleet.redis_seeds, "10.0.0.1:7000,10.0.0.2:7001");
	assert_string_equal(cfg->fleet.redis_pass, "pw");
	CTX("the identity tier's cluster");
	PARSE_OK("http:\n  backend: 'redis-cluster://10.0.0.1:7000,10.0.0.3:7002'\n  fleet: f2\n");
	EQ(cfg->fleet.enabled, true);
	EQ(cfg->fleet.redis_cluster, true);
	assert_string_equal(cfg->fleet.redis_seeds, "10.0.0.1:7000,10.0.0.3:7002");
	CTX("fleet.redis: redis:// on a cluster backend");
	PARSE_OK("fleet: { name: f3, redis: 'redis://10.0.0.9:6379' }\nhttp:\n"
		 "  backend: 'redis-cluster://10.0.0.1:7000'\n");
	EQ(cfg->fleet.redis_cluster, false);
	EQ(cfg->fleet.redis_port, 6379);
}

/* fleet.protect and fleet.max_members; --check names a protect entry that
 * disarms the fleet for a whole family. */
static void test_fleet_bounds(void **state)
{
	char sum[XRL_SUMMARY_MAX];

	CTX("fleet.protect and max_members");
	PARSE_OK("fleet: { name: f1, redis: 'redis://10.0.0.9:6379', max_members: 12,\n"
		 "         protect: [192.0.2.0/24, '2001:db8::/32', 0.0.0.0/0] }\n");
	EQ(cfg->fleet.n_protect, 3);
	EQ(cfg->fleet.protect[0].plen, 24);
	EQ(cfg->fleet.protect[1].family, XRL_AF_INET6);
	EQ(cfg->fleet.max_members, 12);
	EQ(xrl_config_summary(cfg, sum, sizeof(sum)), 0);
	HAS(sum, "fleet: f1, packet-tier denials shared, NODE_SHARE counts at most 12 members; "
		 "a fleet denial lasts at most 1h (penalties off: the default)");
	HAS(sum, "warning: fleet.protect[2] 0.0.0.0/0 covers every IPv4 address");
	CTX("fleet.max_members by default");
	PARSE_OK("fleet: { name: f1, redis: 'redis://10.0.0.9:6379' }\n");
	EQ(cfg->fleet.max_members, XRL_FLEET_MEMBERS_DEFAULT);
	EQ(cfg->fleet.n_protect, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fleet_cluster, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fleet_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_example, setup, teardown),
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_http_only, setup, teardown),
		cmocka_unit_test(test_backend_urls),
		cmocka_unit_test(test_cluster_urls),
		cmocka_unit_test_setup_teardown(test_extensions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_validate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_untouched, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_yaml, setup, teardown),
		cmocka_unit_test_setup_teardown(test_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_compile_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listen_addr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_examples, setup, teardown),
		cmocka_unit_test_setup_teardown(test_summary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_penalty_trust, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
