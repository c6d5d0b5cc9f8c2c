// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_policy.c - unit tests of the pure part of the library (user/lib/policy.c):
 * prefixes, rates, durations, rule compilation and policy validation.
 * No root, no BPF.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>

#include "check.h"

#include "report.h"
#include "xrl.h"

/* An error was reported, with a sentence. */
#define ERR_SET(err) \
	do { \
		if (!(err)[0]) \
			print_error("[%s] no error text\n", ctx); \
		assert_true((err)[0] != '\0'); \
		assert_true(strlen(err) < XRL_ERRLEN); \
	} while (0)

static __u32 be(__u32 host)
{
	return htonl(host);
}

/* ---- prefixes ---------------------------------------------------------- */

struct prefix_case {
	const char *s;
	__u8 family, plen;
	__u32 addr[4]; /* host order words, converted with htonl */
};

static void check_prefix(const struct prefix_case *c)
{
	struct xrl_prefix p;
	char err[XRL_ERRLEN] = "";

	CTX("parse \"%s\"", c->s);
	memset(&p, 0xa5, sizeof(p));
	EQ(xrl_prefix_parse(c->s, &p, err, sizeof(err)), 0);
	EQ(p.family, c->family);
	EQ(p.plen, c->plen);
	for (int i = 0; i < 4; i++)
		EQ(p.addr[i], be(c->addr[i]));
}

static void test_prefix_parse_v4(void **state)
{
	static const struct prefix_case cases[] = {
		{ "10.0.0.0/8", XRL_AF_INET, 8, { 0x0a000000 } },
		{ "192.0.2.0/24", XRL_AF_INET, 24, { 0xc0000200 } },
		{ "198.51.100.128/25", XRL_AF_INET, 25, { 0xc6336480 } },
		{ "172.16.0.0/12", XRL_AF_INET, 12, { 0xac100000 } },
		{ "0.0.0.0/0", XRL_AF_INET, 0, { 0 } },
		{ "255.255.255.255/32", XRL_AF_INET, 32, { 0xffffffff } },
		{ "203.0.113.7/32", XRL_AF_INET, 32, { 0xcb007107 } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_prefix(&cases[i]);
}

static void test_prefix_parse_v6(void **state)
{
	static const struct prefix_case cases[] = {
		{ "2001:db8::/32", XRL_AF_INET6, 32, { 0x20010db8 } },
		{ "2001:db8:1::/48", XRL_AF_INET6, 48, { 0x20010db8, 0x00010000 } },
		{ "2001:db8:0:1::/64", XRL_AF_INET6, 64, { 0x20010db8, 0x00000001 } },
		{ "fe80::/10", XRL_AF_INET6, 10, { 0xfe800000 } },
		{ "::/0", XRL_AF_INET6, 0, { 0 } },
		{ "::1/128", XRL_AF_INET6, 128, { 0, 0, 0, 1 } },
		{ "2001:DB8::/33", XRL_AF_INET6, 33, { 0x20010db8 } },
		{ "::ffff:192.0.2.0/120", XRL_AF_INET6, 120, { 0, 0, 0x0000ffff, 0xc0000200 } },
		{ "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127",
		  XRL_AF_INET6,
		  127,
		  { 0xffffffff, 0xffffffff, 0xffffffff, 0xfffffffe } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_prefix(&cases[i]);
}

static void test_prefix_parse_bare_address(void **state)
{
	static const struct prefix_case cases[] = {
		{ "192.0.2.1", XRL_AF_INET, 32, { 0xc0000201 } },
		{ "10.1.2.3", XRL_AF_INET, 32, { 0x0a010203 } },
		{ "0.0.0.0", XRL_AF_INET, 32, { 0 } },
		{ "::1", XRL_AF_INET6, 128, { 0, 0, 0, 1 } },
		{ "::", XRL_AF_INET6, 128, { 0 } },
		{ "2001:db8::5", XRL_AF_INET6, 128, { 0x20010db8, 0, 0, 5 } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_prefix(&cases[i]);
}

static void test_prefix_parse_host_bits(void **state)
{
	static const char *bad[] = {
		"10.0.0.1/8",	  "192.168.1.1/24", "192.0.2.1/31",    "0.0.0.1/0",
		"2001:db8::1/64", "fe80::1/10",	    "2001:db8:1::/32", "::1/127",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct xrl_prefix p;
		char err[XRL_ERRLEN] = "";

		CTX("parse \"%s\"", bad[i]);
		EQ(xrl_prefix_parse(bad[i], &p, err, sizeof(err)), -EINVAL);
		ERR_SET(err);
		/* the sentence names what was wrong so it can be found */
		if (!strstr(err, bad[i]))
			print_error("[%s] error \"%s\" does not quote the input\n", ctx, err);
		assert_non_null(strstr(err, bad[i]));
	}
}

static void test_prefix_parse_bad_input(void **state)
{
	static const char *bad[] = {
		"10.0.0.0/33",
		"abc",
		"",
		"1.2.3.4/",
		"::/129",
		"1.2.3.4/-1",
		"1.2.3.4/8x",
		"1.2.3.4/32/",
		"1.2.3",
		"1.2.3.4.5",
		"256.0.0.0/8",
		"10.0.0.0//8",
		"/8",
		"/",
		"10.0.0.0/8 ",
		" 10.0.0.0/8",
		"2001:db8:::/48",
		"gggg::/16",
		"2001:db8::/",
		"1.2.3.4/999999999999999999999",
		"10.0.0.0/256",
		"::/1000",
		"1.2.3.4/a",
		"10.0.0.0\n/8",
		"1111:2222:3333:4444:5555:6666:7777:8888:9999:aaaa:bbbb:cccc/64",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct xrl_prefix p, before;
		char err[XRL_ERRLEN] = "";

		CTX("parse \"%s\"", bad[i]);
		memset(&p, 0x5a, sizeof(p));
		before = p;
		EQ(xrl_prefix_parse(bad[i], &p, err, sizeof(err)), -EINVAL);
		ERR_SET(err);
		/* the output is not half-written */
		assert_memory_equal(&p, &before, sizeof(p));
	}
}

static void test_prefix_parse_small_err_buffer(void **state)
{
	struct xrl_prefix p;
	char err[16];

	CTX("small err buffer");
	memset(err, 'X', sizeof(err));
	/* errlen 8: the sentence is cut, NUL-terminated, nothing beyond 8 */
	EQ(xrl_prefix_parse("not-an-address-at-all/99", &p, err, 8), -EINVAL);
	EQ(strlen(err), 7);
	for (size_t i = 8; i < sizeof(err); i++)
		EQ(err[i], 'X');
	/* no buffer at all */
	EQ(xrl_prefix_parse("abc", &p, NULL, 0), -EINVAL);
}

static void test_prefix_str_roundtrip(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "10.0.0.0/8", "10.0.0.0/8" },
		{ "0.0.0.0/0", "0.0.0.0/0" },
		{ "192.0.2.1", "192.0.2.1/32" },
		{ "255.255.255.255/32", "255.255.255.255/32" },
		{ "2001:db8::/32", "2001:db8::/32" },
		{ "2001:0DB8:0000::/48", "2001:db8::/48" },
		{ "2001:db8:0:1::/64", "2001:db8:0:1::/64" },
		{ "::/0", "::/0" },
		{ "::1", "::1/128" },
		{ "fe80::/10", "fe80::/10" },
		{ "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
		  "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct xrl_prefix p, q;
		char buf[64], err[XRL_ERRLEN] = "";
		const char *s;

		CTX("round trip \"%s\"", cases[i].in);
		EQ(xrl_prefix_parse(cases[i].in, &p, err, sizeof(err)), 0);
		memset(buf, 'X', sizeof(buf));
		s = xrl_prefix_str(&p, buf, sizeof(buf));
		assert_ptr_equal(s, buf);
		STR_EQ(s, cases[i].out);
		/* and back: the same prefix */
		EQ(xrl_prefix_parse(s, &q, err, sizeof(err)), 0);
		EQ(q.family, p.family);
		EQ(q.plen, p.plen);
		assert_memory_equal(q.addr, p.addr, sizeof(p.addr));
	}
}

/* Reference mask: bit by bit. */
static void ref_mask(int family, int plen, __u32 m[4])
{
	__u8 b[16] = { 0 };
	int max = family == XRL_AF_INET ? 32 : 128;

	for (int i = 0; i < plen && i < max; i++)
		b[i / 8] |= (__u8)(0x80 >> (i % 8));
	memcpy(m, b, 16);
}

static void test_prefix_mask(void **state)
{
	__u32 m[4], want[4];

	for (int fam = 0; fam < 2; fam++) {
		__u8 family = fam ? XRL_AF_INET6 : XRL_AF_INET;
		int max = fam ? 128 : 32;

		for (int plen = 0; plen <= max; plen++) {
			CTX("mask v%u /%d", family, plen);
			memset(m, 0xa5, sizeof(m));
			xrl_prefix_mask(family, (__u8)plen, m);
			ref_mask(family, plen, want);
			for (int i = 0; i < 4; i++)
				EQ(m[i], want[i]);
		}
	}
	/* a few spelled out */
	CTX("mask literals");
	xrl_prefix_mask(XRL_AF_INET, 8, m);
	EQ(m[0], be(0xff000000));
	EQ(m[1], 0);
	xrl_prefix_mask(XRL_AF_INET, 27, m);
	EQ(m[0], be(0xffffffe0));
	xrl_prefix_mask(XRL_AF_INET6, 48, m);
	EQ(m[0], 0xffffffff);
	EQ(m[1], be(0xffff0000));
	EQ(m[2], 0);
	EQ(m[3], 0);
	xrl_prefix_mask(XRL_AF_INET6, 127, m);
	EQ(m[3], be(0xfffffffe));
}

/* ---- rates and durations ----------------------------------------------- */

static void test_rate_parse_ok(void **state)
{
	static const struct {
		const char *s;
		__u64 tokens, period;
		bool exact;
	} cases[] = {
		{ "100/s", 100, SEC, true },
		{ "10/min", 10, MINUTE, true },
		{ "1/6s", 1, 6 * SEC, true },
		{ "20/h", 20, HOUR, true },
		{ "3/500ms", 3, 500 * MS, true },
		{ "1/d", 1, DAY, true },
		{ "1000000/s", 1000000, SEC, true },
		{ "2.5/s", 5, 2 * SEC, false }, /* any equal ratio */
		{ "0.5/s", 1, 2 * SEC, false },
		{ "1/1.5s", 2, 3 * SEC, false },
		{ "2.5/1.5s", 5, 3 * SEC, false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct xrl_rate r = { 0, 0 };
		char err[XRL_ERRLEN] = "";

		CTX("rate \"%s\"", cases[i].s);
		EQ(xrl_rate_parse(cases[i].s, &r, err, sizeof(err)), 0);
		if (cases[i].exact) {
			EQ(r.tokens, cases[i].tokens);
			EQ(r.period_ns, cases[i].period);
		} else {
			/* tokens/period == want.tokens/want.period */
			assert_true(r.tokens > 0 && r.period_ns > 0);
			EQ((unsigned __int128)r.tokens * cases[i].period ==
				   (unsigned __int128)cases[i].tokens * r.period_ns,
			   1);
		}
	}
	/* 2.5/s is 5 per 2 s: one token every 400 ms */
	CTX("2.5/s emit");
	{
		struct xrl_rate r;
		struct xrl_gcra_params g = { 0, 0, 0 };

		EQ(xrl_rate_parse("2.5/s", &r, NULL, 0), 0);
		EQ(xrl_gcra_init(r.tokens, r.period_ns, 5, &g), 0);
		EQ(g.emit_ns, 400 * MS);
		EQ(g.tau_ns, 2 * SEC);
	}
}

static void test_rate_parse_errors(void **state)
{
	static const char *einval[] = {
		"",	     "0/s",    "10",
		"10/parsec", "-1/s",   "1/0s",
		"/s",	     "10/",    "abc/s",
		"1.2.3/s",   "10/s/s", "10/ s",
		" 10/s",     "10/s ",  "0.0/s",
		"1/-1s",     "1/0ms",  "10/S",
		"1e3/s",     "ten/s",  "99999999999999999999999/s",
	};

	for (size_t i = 0; i < sizeof(einval) / sizeof(einval[0]); i++) {
		struct xrl_rate r = { 77, 88 };
		char err[XRL_ERRLEN] = "";
		int rc;

		CTX("rate \"%s\"", einval[i]);
		rc = xrl_rate_parse(einval[i], &r, err, sizeof(err));
		if (i < 6) /* the ones the API promises -EINVAL for */
			EQ(rc, -EINVAL);
		else
			assert_true(rc < 0);
		ERR_SET(err);
		EQ(r.tokens, 77);
		EQ(r.period_ns, 88);
	}
}

static void test_duration_parse(void **state)
{
	static const struct {
		const char *s;
		__u64 ns;
	} ok[] = {
		{ "2s", 2 * SEC },
		{ "500ms", 500 * MS },
		{ "1h", HOUR },
		{ "90m", 90 * MINUTE },
		{ "1d", DAY },
		{ "30s", 30 * SEC },
		{ "1ms", MS },
		{ "7d", 7 * DAY },
		{ "1.5s", 1500 * MS },
		{ "0.25h", 15 * MINUTE },
		{ "10min", 10 * MINUTE },
	};
	static const char *bad[] = {
		"",	   "2",	  "s",	    "ms", "2x",	   "-1s",  "2 s",
		" 2s",	   "2s ", "1.5.5s", "2S", "2sec2", "1e3s", "99999999999999999999999d",
		"300000d",
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		__u64 ns = 12345;
		char err[XRL_ERRLEN] = "";

		CTX("duration \"%s\"", ok[i].s);
		EQ(xrl_duration_parse(ok[i].s, &ns, err, sizeof(err)), 0);
		EQ(ns, ok[i].ns);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		__u64 ns = 12345;
		char err[XRL_ERRLEN] = "";
		int rc;

		CTX("duration \"%s\"", bad[i]);
		rc = xrl_duration_parse(bad[i], &ns, err, sizeof(err));
		if (rc >= 0)
			print_error("[%s] accepted as %llu ns\n", ctx, (ull)ns);
		assert_true(rc == -EINVAL || rc == -ERANGE);
		ERR_SET(err);
		EQ(ns, 12345);
	}
}

/* ---- rules ------------------------------------------------------------- */

static void test_rule_spec_init_and_id(void **state)
{
	struct xrl_rule_spec r;
	char longname[100];

	CTX("spec init");
	memset(&r, 0xa5, sizeof(r));
	xrl_rule_spec_init(&r, "ssh");
	STR_EQ(r.name, "ssh");
	EQ(r.key_plen4, 32);
	EQ(r.key_plen6, 64);
	EQ(r.action, XRL_ACT_DROP);
	EQ(r.tcp_class, XRL_TCP_ANY);
	EQ(r.proto, XRL_PROTO_ANY);
	EQ(r.n_ports, 0);
	EQ(r.has_dst, false);
	EQ(r.id, 0);
	EQ(r.burst, 0);
	EQ(r.rate.tokens, 0);

	/* a long name is cut, not overrun */
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	xrl_rule_spec_init(&r, longname);
	EQ(strnlen(r.name, sizeof(r.name)), sizeof(r.name) - 1);

	/* FNV-1a 32, stable and never 0 */
	CTX("rule id");
	EQ(xrl_rule_id("a"), 0xe40c292c);
	EQ(xrl_rule_id("foobar"), 0xbf9cf968);
	EQ(xrl_rule_id(""), 0x811c9dc5);
	EQ(xrl_rule_id("ssh"), xrl_rule_id("ssh"));
	assert_true(xrl_rule_id("ssh") != xrl_rule_id("ssh2"));
	for (int i = 0; i < 1000; i++) {
		char n[16];

		snprintf(n, sizeof(n), "r%d", i);
		assert_true(xrl_rule_id(n) != 0);
	}
}

static void mkspec(struct xrl_rule_spec *r, const char *name, __u64 tokens, __u64 period,
		   __u32 burst)
{
	xrl_rule_spec_init(r, name);
	r->rate.tokens = tokens;
	r->rate.period_ns = period;
	r->burst = burst;
}

static void test_rule_compile_basic(void **state)
{
	struct xrl_rule_spec s;
	struct xrl_rule r;
	char err[XRL_ERRLEN] = "";

	CTX("ssh");
	mkspec(&s, "ssh", 10, MINUTE, 5);
	s.proto = XRL_PROTO_TCP;
	s.tcp_class = XRL_TCP_SYN;
	s.action = XRL_ACT_SHADOW;
	s.n_ports = 2;
	s.ports[0] = (struct xrl_port_range){ 22, 22 };
	s.ports[1] = (struct xrl_port_range){ 2222, 2229 };
	s.key_plen4 = 24;
	s.key_plen6 = 48;
	memset(&r, 0xa5, sizeof(r));
	EQ(xrl_rule_compile(&s, &r, err, sizeof(err)), 0);
	EQ(r.emit_ns, 6 * SEC);
	EQ(r.tau_ns, 30 * SEC);
	EQ(r.id, xrl_rule_id("ssh"));
	EQ(r.proto, XRL_PROTO_TCP);
	EQ(r.tcp_class, XRL_TCP_SYN);
	EQ(r.action, XRL_ACT_SHADOW);
	EQ(r.n_ports, 2);
	EQ(r.ports[0].lo, 22);
	EQ(r.ports[0].hi, 22);
	EQ(r.ports[1].lo, 2222);
	EQ(r.ports[1].hi, 2229);
	for (int i = 2; i < XRL_MAX_PORT_RANGES; i++) {
		EQ(r.ports[i].lo, 0);
		EQ(r.ports[i].hi, 0);
	}
	EQ(r.key_plen4, 24);
	EQ(r.key_plen6, 48);
	EQ(r.key_mask4, be(0xffffff00));
	EQ(r.key_mask6[0], 0xffffffff);
	EQ(r.key_mask6[1], be(0xffff0000));
	EQ(r.key_mask6[2], 0);
	EQ(r.key_mask6[3], 0);
	/* no destination: any */
	EQ(r.dst_family, 0);
	EQ(r.dst_plen, 0);
	for (int i = 0; i < 4; i++) {
		EQ(r.dst[i], 0);
		EQ(r.dst_mask[i], 0);
	}

	/* defaults: /32 and /64 keys, drop */
	CTX("defaults");
	mkspec(&s, "web", 100, SEC, 20);
	EQ(xrl_rule_compile(&s, &r, err, sizeof(err)), 0);
	EQ(r.key_plen4, 32);
	EQ(r.key_mask4, 0xffffffff);
	EQ(r.key_plen6, 64);
	EQ(r.key_mask6[0], 0xffffffff);
	EQ(r.key_mask6[1], 0xffffffff);
	EQ(r.key_mask6[2], 0);
	EQ(r.key_mask6[3], 0);
	EQ(r.action, XRL_ACT_DROP);
	EQ(r.n_ports, 0);

	/* key prefixes at their ends */
	CTX("key /0 and /128");
	s.key_plen4 = 0;
	s.key_plen6 = 128;
	EQ(xrl_rule_compile(&s, &r, err, sizeof(err)), 0);
	EQ(r.key_mask4, 0);
	for (int i = 0; i < 4; i++)
		EQ(r.key_mask6[i], 0xffffffff);

	/* an explicit id wins over the name */
	CTX("explicit id");
	s.id = 4242;
	EQ(xrl_rule_compile(&s, &r, err, sizeof(err)), 0);
	EQ(r.id, 4242);

	/* eight port ranges is the limit, not over it */
	CTX("8 port ranges");
	s.n_ports = XRL_MAX_PORT_RANGES;
	for (int i = 0; i < XRL_MAX_PORT_RANGES; i++)
		s.ports[i] = (struct xrl_port_range){ (__u16)(1000 * i), (__u16)(1000 * i + 10) };
	s.ports[7] = (struct xrl_port_range){ 65535, 65535 };
	EQ(xrl_rule_compile(&s, &r, err, sizeof(err)), 0);
	EQ(r.n_ports, 8);
	EQ(r.ports[7].lo, 65535);
	EQ(r.ports[3].hi, 3010);

	/* SYN cookies: carried, off by default, TCP only */
	CTX("syn_cookies");
	mkspec(&s, "web", 100, SEC, 20);
	EQ(xrl_rule_compile(&s, &r, err, sizeof(err)), 0);
	EQ(r.syn_cookies, XRL_COOKIES_OFF);
	s.syn_cookies = XRL_COOKIES_ON;
	EQ(xrl_rule_compile(&s, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "SYN cookies need proto tcp"));
	s.proto = XRL_PROTO_TCP;
	EQ(xrl_rule_compile(&s, &r, err, sizeof(err)), 0);
	EQ(r.syn_cookies, XRL_COOKIES_ON);
	s.syn_cookies = XRL_COOKIES_AUTO; /* auto compiles idle: as off until xrld engages */
	EQ(xrl_rule_compile(&s, &r, err, sizeof(err)), 0);
	EQ(r.syn_cookies, XRL_COOKIES_AUTO);
	EQ(r.syn_cookies & XRL_COOKIES_LIVE, 0);
	s.auto_off_rate = s.auto_on_rate; /* no hysteresis */
	EQ(xrl_rule_compile(&s, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "off_rate below on_rate"));
	s.syn_cookies = 4;
	EQ(xrl_rule_compile(&s, &r, err, sizeof(err)), -EINVAL);

	/* the window scale the kernel picks for cookie connections */
	CTX("syn wscale");
	EQ(xrl_syn_wscale_of(6291456, 212992), 7);       /* Debian's defaults */
	EQ(xrl_syn_wscale_of(33554432, 4194304), 10);
	EQ(xrl_syn_wscale_of(4096, 4194304), 7);         /* rmem_max decides */
	EQ(xrl_syn_wscale_of(65535, 0), 0);
	EQ(xrl_syn_wscale_of(65536, 0), 1);
	EQ(xrl_syn_wscale_of(1ULL << 40, 0), 14);
}

static void test_rule_compile_emit_tau(void **state)
{
	static const struct {
		const char *rate;
		__u32 burst;
		__u64 emit, tau;
	} cases[] = {
		{ "100/s", 20, 10 * MS, 200 * MS },	  { "10/min", 5, 6 * SEC, 30 * SEC },
		{ "1/6s", 1, 6 * SEC, 6 * SEC },	  { "20/h", 20, 180 * SEC, HOUR },
		{ "2.5/s", 5, 400 * MS, 2 * SEC },	  { "3/500ms", 3, 166666667, 500000001 },
		{ "3/s", 1, 333333333, 333333333 },	  { "7000000/s", 1000, 143, 143000 },
		{ "10000000/s", 1000000, 100, 100 * MS }, { "1/h", 1000000, HOUR, 1000000 * HOUR },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct xrl_rule_spec s;
		struct xrl_rule r;
		char err[XRL_ERRLEN] = "";

		CTX("%s burst %u", cases[i].rate, cases[i].burst);
		mkspec(&s, "r", 0, 0, cases[i].burst);
		EQ(xrl_rate_parse(cases[i].rate, &s.rate, err, sizeof(err)), 0);
		EQ(xrl_rule_compile(&s, &r, err, sizeof(err)), 0);
		EQ(r.emit_ns, cases[i].emit);
		EQ(r.tau_ns, cases[i].tau);
		EQ(r.tau_ns, r.emit_ns * cases[i].burst);
	}
}

static void test_rule_compile_dst(void **state)
{
	static const struct {
		const char *dst, *want;
	} cases[] = {
		{ "192.0.2.0/24", "192.0.2.0/24" },	{ "198.51.100.7", "198.51.100.7/32" },
		{ "0.0.0.0/0", "0.0.0.0/0" },		{ "2001:db8:1::/48", "2001:db8:1::/48" },
		{ "2001:db8::80", "2001:db8::80/128" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct xrl_rule_spec s;
		struct xrl_rule r;
		struct xrl_prefix back;
		__u32 m[4];
		char err[XRL_ERRLEN] = "", buf[64];

		CTX("dst %s", cases[i].dst);
		mkspec(&s, "dst", 100, SEC, 10);
		s.has_dst = true;
		EQ(xrl_prefix_parse(cases[i].dst, &s.dst, err, sizeof(err)), 0);
		EQ(xrl_rule_compile(&s, &r, err, sizeof(err)), 0);
		EQ(r.dst_family, s.dst.family);
		EQ(r.dst_plen, s.dst.plen);
		xrl_prefix_mask(s.dst.family, s.dst.plen, m);
		for (int k = 0; k < 4; k++) {
			EQ(r.dst_mask[k], m[k]);
			EQ(r.dst[k], s.dst.addr[k]);
			EQ(r.dst[k] & ~r.dst_mask[k], 0);
		}
		/* what the program holds reads back as what was written */
		memset(&back, 0, sizeof(back));
		back.family = r.dst_family;
		back.plen = r.dst_plen;
		memcpy(back.addr, r.dst, sizeof(back.addr));
		STR_EQ(xrl_prefix_str(&back, buf, sizeof(buf)), cases[i].want);
	}

	/* a hand-made prefix with host bits: the ABI form has them zeroed */
	CTX("dst host bits");
	{
		struct xrl_rule_spec s;
		struct xrl_rule r;
		char err[XRL_ERRLEN] = "";

		mkspec(&s, "dst", 100, SEC, 10);
		s.has_dst = true;
		s.dst.family = XRL_AF_INET;
		s.dst.plen = 24;
		s.dst.addr[0] = be(0xc0000201);
		EQ(xrl_rule_compile(&s, &r, err, sizeof(err)), 0);
		EQ(r.dst[0], be(0xc0000200));
	}
}

static void expect_compile_error(const struct xrl_rule_spec *s, int want_rc, const char *what)
{
	struct xrl_rule r;
	char err[XRL_ERRLEN] = "";
	int rc;

	CTX("%s", what);
	rc = xrl_rule_compile(s, &r, err, sizeof(err));
	if (want_rc)
		EQ(rc, want_rc);
	else
		assert_true(rc < 0);
	ERR_SET(err);
	/* the sentence says which rule, when it has a name */
	if (s->name[0] && !strstr(err, s->name))
		print_error("[%s] error \"%s\" does not name rule %s\n", ctx, err, s->name);
	if (s->name[0])
		assert_non_null(strstr(err, s->name));
}

static void test_rule_compile_rejects(void **state)
{
	/* values out of their enums, alone or together */
	static const struct {
		const char *name;
		__u8 proto, tcp_class, action;
		const char *what;
	} enums[] = {
		{ "proto", 1, XRL_TCP_ANY, XRL_ACT_DROP, "proto 1" }, /* ICMP: not a choice */
		{ "tcpclass", XRL_PROTO_ANY, 2, XRL_ACT_DROP, "tcp_class 2" },
		{ "synudp", XRL_PROTO_UDP, XRL_TCP_SYN, XRL_ACT_DROP, "syn + udp" },
		{ "action", XRL_PROTO_ANY, XRL_TCP_ANY, 2, "action 2" },
	};
	struct xrl_rule_spec s;

	mkspec(&s, "ports9", 100, SEC, 10);
	s.n_ports = XRL_MAX_PORT_RANGES + 1;
	expect_compile_error(&s, -EINVAL, "n_ports 9");
	s.n_ports = 255;
	expect_compile_error(&s, -EINVAL, "n_ports 255");

	mkspec(&s, "backwards", 100, SEC, 10);
	s.n_ports = 3;
	s.ports[0] = (struct xrl_port_range){ 80, 80 };
	s.ports[1] = (struct xrl_port_range){ 443, 443 };
	s.ports[2] = (struct xrl_port_range){ 9000, 8000 };
	expect_compile_error(&s, -EINVAL, "lo > hi");

	mkspec(&s, "key4", 100, SEC, 10);
	s.key_plen4 = 33;
	expect_compile_error(&s, -EINVAL, "key_plen4 33");
	s.key_plen4 = 255;
	expect_compile_error(&s, -EINVAL, "key_plen4 255");

	mkspec(&s, "key6", 100, SEC, 10);
	s.key_plen6 = 129;
	expect_compile_error(&s, -EINVAL, "key_plen6 129");

	mkspec(&s, "norate", 0, SEC, 10);
	expect_compile_error(&s, -EINVAL, "tokens 0");
	mkspec(&s, "noperiod", 10, 0, 10);
	expect_compile_error(&s, -EINVAL, "period 0");
	mkspec(&s, "noburst", 10, SEC, 0);
	expect_compile_error(&s, -EINVAL, "burst 0");

	mkspec(&s, "toofast", 3 * SEC, SEC, 10);
	expect_compile_error(&s, -ERANGE, "3e9/s");
	mkspec(&s, "tooslow", 1, 60 * DAY, 1);
	expect_compile_error(&s, -ERANGE, "1 per 60 days");
	mkspec(&s, "toobig", 1, HOUR, 2000000);
	expect_compile_error(&s, -ERANGE, "1/h burst 2e6");

	for (size_t i = 0; i < sizeof(enums) / sizeof(enums[0]); i++) {
		mkspec(&s, enums[i].name, 100, SEC, 10);
		s.proto = enums[i].proto;
		s.tcp_class = enums[i].tcp_class;
		s.action = enums[i].action;
		expect_compile_error(&s, -EINVAL, enums[i].what);
	}

	mkspec(&s, "dstfam", 100, SEC, 10);
	s.has_dst = true;
	s.dst.family = 5;
	expect_compile_error(&s, -EINVAL, "dst family 5");
	s.dst.family = 0;
	expect_compile_error(&s, -EINVAL, "dst family 0");

	mkspec(&s, "", 100, SEC, 10);
	expect_compile_error(&s, -EINVAL, "no name");
}

/* A destination prefix longer than its family cannot be put in the ABI. */
static void test_rule_compile_rejects_dst_plen(void **state)
{
	struct xrl_rule_spec s;

	mkspec(&s, "dstplen4", 100, SEC, 10);
	s.has_dst = true;
	s.dst.family = XRL_AF_INET;
	s.dst.plen = 33;
	expect_compile_error(&s, -EINVAL, "dst v4 /33");
	mkspec(&s, "dstplen6", 100, SEC, 10);
	s.has_dst = true;
	s.dst.family = XRL_AF_INET6;
	s.dst.plen = 129;
	expect_compile_error(&s, -EINVAL, "dst v6 /129");
}

/* ---- whole policies ----------------------------------------------------- */

static struct xrl_policy *policy_new(__u32 n_rules)
{
	struct xrl_policy *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	for (__u32 i = 0; i < n_rules && i < XRL_MAX_RULES; i++) {
		char name[XRL_RULE_NAME_LEN];

		snprintf(name, sizeof(name), "rule-%u", i);
		mkspec(&p->rules[i], name, 100, SEC, 10);
	}
	p->n_rules = n_rules;
	return p;
}

/* Any negative return: the validator's errno is not part of the contract. */
#define REFUSED 1

/*
 * xrl_policy_compile(p) from scratch (the cases edit p between calls): want
 * (0, an -errno, or REFUSED for any error); an error has a message,
 * containing has when given.
 */
static void validate(struct xrl_policy *p, int want, const char *has)
{
	char err[XRL_ERRLEN] = "";
	int rc;

	p->n_compiled = 0;
	rc = xrl_policy_compile(p, err, sizeof(err));
	if (want == REFUSED)
		CHECK_(rc < 0, "xrl_policy_compile = %d, want < 0\n", rc);
	else
		EQ(rc, want);
	if (want) {
		ERR_SET(err);
		if (has)
			HAS(err, has);
	}
}

/* The explicit ids of a policy's first three rules (0: derived from the name). */
static void set_ids(struct xrl_policy *p, __u32 a, __u32 b, __u32 c)
{
	p->rules[0].id = a;
	p->rules[1].id = b;
	p->rules[2].id = c;
}

static void test_policy_validate(void **state)
{
	struct xrl_policy *p;
	char err[XRL_ERRLEN];

	CTX("empty policy");
	p = policy_new(0);
	validate(p, 0, NULL);
	free(p);

	CTX("one rule");
	p = policy_new(1);
	validate(p, 0, NULL);
	free(p);

	CTX("64 rules");
	p = policy_new(XRL_MAX_RULES);
	validate(p, 0, NULL);
	CTX("65 rules");
	p->n_rules = XRL_MAX_RULES + 1;
	validate(p, -E2BIG, NULL);
	p->n_rules = UINT32_MAX;
	validate(p, REFUSED, NULL);
	free(p);

	CTX("duplicate names");
	p = policy_new(5);
	snprintf(p->rules[3].name, sizeof(p->rules[3].name), "%s", p->rules[1].name);
	validate(p, -EINVAL, "rule-1");
	free(p);

	/* the same name with distinct explicit ids: still one name twice */
	CTX("duplicate names, distinct ids");
	p = policy_new(3);
	set_ids(p, 10, 11, 12);
	snprintf(p->rules[2].name, sizeof(p->rules[2].name), "rule-0");
	validate(p, -EINVAL, "rule-0");
	free(p);

	CTX("duplicate explicit ids");
	p = policy_new(3);
	set_ids(p, 7, 0, 7);
	validate(p, -EINVAL, NULL);
	free(p);

	CTX("explicit id equal to another rule's derived id");
	p = policy_new(3);
	set_ids(p, 0, 0, xrl_rule_id(p->rules[0].name));
	validate(p, -EINVAL, NULL);
	free(p);

	CTX("distinct explicit ids");
	p = policy_new(3);
	set_ids(p, 1, 2, 3);
	validate(p, 0, NULL);
	free(p);

	CTX("one bad rule");
	p = policy_new(4);
	p->rules[2].burst = 0;
	validate(p, -EINVAL, "rule-2");
	free(p);

	CTX("rules past n_rules are not looked at");
	p = policy_new(2);
	p->rules[5].burst = 0; /* garbage, unused */
	snprintf(p->rules[6].name, sizeof(p->rules[6].name), "rule-0");
	validate(p, 0, NULL);
	free(p);

	CTX("allowlist");
	p = policy_new(1);
	p->n_allow = 2;
	EQ(xrl_prefix_parse("192.0.2.0/24", &p->allow[0], err, sizeof(err)), 0);
	EQ(xrl_prefix_parse("2001:db8::/32", &p->allow[1], err, sizeof(err)), 0);
	validate(p, 0, NULL);
	p->n_allow = XRL_POLICY_MAX_ALLOW;
	for (__u32 i = 2; i < XRL_POLICY_MAX_ALLOW; i++)
		p->allow[i] = p->allow[0];
	validate(p, 0, NULL);
	p->n_allow = XRL_POLICY_MAX_ALLOW + 1;
	validate(p, REFUSED, NULL);
	p->n_allow = 3;
	memset(&p->allow[2], 0, sizeof(p->allow[2])); /* no family */
	validate(p, REFUSED, NULL);
	free(p);
}

/* xrl_human: what the live view prints for a count or a rate. */
static void test_human_numbers(void **state)
{
	static const struct {
		double v;
		const char *want;
	} t[] = {
		{ 0, "0" },	     { 7, "7" },	  { 49.4, "49.4" },    { 999, "999" },
		{ 1000, "1.0k" },    { 1234, "1.2k" },	  { 99940, "99.9k" },  { 99960, "100k" },
		{ 387123, "387k" },  { 999949, "1000k" }, { 999960, "1.0M" },  { 1.25e6, "1.2M" },
		{ 12.3e6, "12.3M" }, { 4.0e9, "4.0G" },	  { 1.8e19, "18.0E" },
	};
	char out[16];

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		CTX("xrl_human(%g)", t[i].v);
		xrl_human(t[i].v, out, sizeof(out));
		STR_EQ(out, t[i].want);
	}
}

/* The stats table: SHADOW/s, the SYN-cookie line, rates of the global
 * counters, "-" before a second snapshot, exact numbers unless human. */
static void test_stats_table(void **state)
{
	static struct xrl_stats st, prev;
	static struct xrl_ruleset_meta meta;
	struct xrl_buf b = {};

	(void)state;
	st.n_rules = prev.n_rules = 1;
	strcpy(meta.names[0], "syn");
	st.rules[0].pkts[XRL_V_DROPPED] = 2500000;
	st.rules[0].pkts[XRL_V_SHADOW_DROPPED] = 3000;
	prev.rules[0].pkts[XRL_V_SHADOW_DROPPED] = 1000;
	st.global.c[XRL_G_COOKIES_SENT] = 4000;
	prev.global.c[XRL_G_COOKIES_SENT] = 2000;

	CTX("human, with a previous snapshot 2 s before");
	xrl_report_stats(&b, "eth0", &st, &meta, 1, &prev, 2.0, XRL_REPORT_HUMAN);
	HAS(b.p, "SHADOW/s");
	HAS(b.p, "      2.5M");
	HAS(b.p, "      1.0k\n"); /* SHADOW/s: 2000 in 2 s */
	HAS(b.p, "  syn cookies:\n    cookies_sent          4.0k    1.0k/s");
	HAS(b.p, "seen                     0       0/s");
	xrl_buf_free(&b);

	CTX("human, watching, first screen");
	b = (struct xrl_buf){};
	xrl_report_stats(&b, "eth0", &st, &meta, 1, NULL, 0, XRL_REPORT_HUMAN | XRL_REPORT_RATES);
	HAS(b.p, "SHADOW/s");
	HAS(b.p, "cookies_sent          4.0k       -/s");
	xrl_buf_free(&b);

	CTX("exact, one snapshot");
	b = (struct xrl_buf){};
	xrl_report_stats(&b, "eth0", &st, &meta, 1, NULL, 0, 0);
	HAS(b.p, " 2500000 ");
	HAS(b.p, "cookies_sent       4000");
	assert_null(strstr(b.p, "/s"));
	xrl_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_human_numbers),
		cmocka_unit_test(test_stats_table),
		cmocka_unit_test(test_prefix_parse_v4),
		cmocka_unit_test(test_prefix_parse_v6),
		cmocka_unit_test(test_prefix_parse_bare_address),
		cmocka_unit_test(test_prefix_parse_host_bits),
		cmocka_unit_test(test_prefix_parse_bad_input),
		cmocka_unit_test(test_prefix_parse_small_err_buffer),
		cmocka_unit_test(test_prefix_str_roundtrip),
		cmocka_unit_test(test_prefix_mask),
		cmocka_unit_test(test_rate_parse_ok),
		cmocka_unit_test(test_rate_parse_errors),
		cmocka_unit_test(test_duration_parse),
		cmocka_unit_test(test_rule_spec_init_and_id),
		cmocka_unit_test(test_rule_compile_basic),
		cmocka_unit_test(test_rule_compile_emit_tau),
		cmocka_unit_test(test_rule_compile_dst),
		cmocka_unit_test(test_rule_compile_rejects),
		cmocka_unit_test(test_rule_compile_rejects_dst_plen),
		cmocka_unit_test(test_policy_validate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
