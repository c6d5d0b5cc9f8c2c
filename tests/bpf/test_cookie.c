// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_cookie.c - BPF_PROG_TEST_RUN tests of the SYN-cookie path
 * (bpf/xrl_cookie.h): the SYN-ACK a SYN gets, the ACKs that come back.
 *
 * Every case loads the program afresh (load only), installs one rule with
 * syn_cookies on (TCP port 80, 10/min, burst 1, so a source's second
 * verified connection is refused), and sends frames built here. The
 * SYN-ACK is checked field by field against the SYN, with both checksums
 * recomputed here, not by the program's code.
 *
 * Two cookie paths (xrl_cookie.own). A program loaded alone gets the
 * kernel's (own = 0): a cookie is shown valid by sending the ACK a client
 * would send and seeing the program's bpf_tcp_raw_check_syncookie_* accept
 * it (cookies_valid) - the same check the kernel's cookie_v4_check makes.
 * The first SYN per port and family is then the primer (xrl_abi.h,
 * XRL_COOKIE_PRIME_S): passed to the kernel; each such case sends it first.
 * The "own:" cases set own = 1 in the map (no TC program here: the ACK's
 * metadata is checked instead) and recompute every cookie here with
 * include/xrl_syncookie.h, the map's key and the slot that the kernel's
 * jiffies (/proc/timer_list) and the cookie's parity bit name.
 *
 * Needs root and bpffs; pinned to one CPU (per-CPU counters). Usage:
 * test_cookie [substring]. Exit 0, 1 on a failure, 77 when not root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xrl.h"
#include "xrl_syncookie.h"
#include "pktbuild.h"

#define V_DROP 1
#define V_PASS 2
#define V_TX   3

static int fails_total;
static int fails;

#define check(...) pb_check(&fails, __VA_ARGS__)

static void check_eq(const char *name, uint64_t got, uint64_t want)
{
	if (got == want)
		check(true, "%s = %llu", name, (unsigned long long)want);
	else
		check(false, "%s: got %llu, want %llu", name, (unsigned long long)got,
		      (unsigned long long)want);
}

#define CHECK_EQ(name, got, want) check_eq(name, (uint64_t)(got), (uint64_t)(want))

/* ---- frames ----------------------------------------------------------- */

struct seg {
	const char *src, *dst;       /* dst NULL: 192.0.2.1 or 2001:db8:ffff::1 */
	uint16_t sport, dport;       /* dport 0: 80 */
	uint16_t vlan;               /* TPID of one tag, 0: none */
	uint8_t  ip_opt_words;
	uint16_t ext6;               /* bytes of an IPv6 destination options header */
	bool     frag;               /* IPv4 first fragment (MF set, offset 0) */
	uint8_t  flags;              /* PB_TCP_* */
	uint8_t  ecn;                /* flags added to a SYN: XRL_TCP_ECE | _CWR */
	uint32_t seq, ack;
	bool     mss, sack, ts, ws;  /* options sent */
	uint16_t mssv;               /* the MSS option's value, 0: 1460 */
	uint8_t  wscale;
	uint32_t tsval, tsecr;
};

#define XRL_TCP_ECE 0x40
#define XRL_TCP_CWR 0x80

static int build_seg(const struct seg *s, struct pb *p)
{
	uint8_t opt[40];
	size_t n = 0;
	int fam;
	uint32_t a[4];

	if (s->mss) {
		uint16_t m = s->mssv ? s->mssv : 1460;

		opt[n++] = 2; opt[n++] = 4; opt[n++] = (uint8_t)(m >> 8); opt[n++] = m & 0xff;
	}
	if (s->sack) {
		opt[n++] = 4; opt[n++] = 2;
	}
	if (s->ts) {
		opt[n++] = 8; opt[n++] = 10;
		for (int i = 3; i >= 0; i--)
			opt[n++] = (uint8_t)(s->tsval >> (8 * i));
		for (int i = 3; i >= 0; i--)
			opt[n++] = (uint8_t)(s->tsecr >> (8 * i));
	}
	if (s->ws) {
		opt[n++] = 1; opt[n++] = 3; opt[n++] = 3; opt[n++] = s->wscale;
	}
	while (n % 4)
		opt[n++] = 1;
	if (pb_parse_addr(s->src, &fam, a) < 0)
		return -EINVAL;
	pb_init(p);
	pb_eth(p);
	if (s->vlan)
		pb_vlan(p, s->vlan, 42);
	if (fam == 4)
		pb_ipv4(p, &(struct pb_ipv4_opts){ .src = s->src, .dst = s->dst ? s->dst : "192.0.2.1",
						   .opt_words = s->ip_opt_words, .df = !s->frag,
						   .mf = s->frag });
	else
		pb_ipv6(p, &(struct pb_ipv6_opts){ .src = s->src,
						   .dst = s->dst ? s->dst : "2001:db8:ffff::1" });
	if (fam == 6 && s->ext6)
		pb_ipv6_ext(p, PB_IPPROTO_DSTOPTS, s->ext6);
	pb_tcp(p, &(struct pb_tcp_opts){ .sport = s->sport, .dport = s->dport ? s->dport : 80,
					 .flags = s->flags, .opt_words = (uint8_t)(n / 4),
					 .seq = s->seq, .ack = s->ack });
	if (p->err)
		return p->err;
	memcpy(p->buf + pb_layer_off(p, PB_L_L4) + 20, opt, n);
	return pb_finish(p);
}

struct out {
	int verdict;
	uint8_t buf[PB_MAX];
	uint32_t len;
};

static int run(struct xrl_handle *h, const uint8_t *in, size_t len, struct out *o)
{
	uint8_t data[PB_MAX];
	LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = data, .data_size_in = (__u32)len,
		    .data_out = o->buf, .data_size_out = sizeof(o->buf), .repeat = 1);
	int rc;

	memcpy(data, in, len);
	rc = bpf_prog_test_run_opts(xrl_prog_fd(h), &t);
	if (rc)
		return -errno;
	o->verdict = (int)t.retval;
	o->len = t.data_size_out;
	return 0;
}

static uint16_t get16(const uint8_t *b) { return (uint16_t)(b[0] << 8 | b[1]); }
static uint32_t get32(const uint8_t *b) { return (uint32_t)get16(b) << 16 | get16(b + 2); }

/* What the SYN-ACK said, for the ACK that answers it. */
struct synack {
	uint32_t cookie;
	bool has_ts;
	uint32_t tsval;
};

/* Offsets of the IP and TCP headers of a frame built by build_seg. */
static void offsets(const struct seg *s, int *l3, int *l4, int *fam)
{
	uint32_t a[4];

	pb_parse_addr(s->src, fam, a);
	*l3 = 14 + (s->vlan ? 4 : 0);
	*l4 = *l3 + (*fam == 4 ? 20 + 4 * s->ip_opt_words : 40 + s->ext6);
}

struct ctx {
	struct xrl_handle *h;
	struct xrl_stats st0;
	struct xrl_cookie_cfg ck;    /* xrl_cookie as the case left it */
};

/* The kernel's jiffies now (what bpf_jiffies64 returns); 0: unknown. */
static uint64_t jiffies_now(void)
{
	char line[128];
	unsigned long long j = 0;
	FILE *f = fopen("/proc/timer_list", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "jiffies: %llu", &j) == 1)
			break;
	fclose(f);
	return j;
}

/* The program's xrl_tick_ns, found as the loader finds it (coarse_tick_ns). */
static uint64_t tick_ns(void)
{
	struct timespec r;

	if (clock_getres(CLOCK_MONOTONIC_COARSE, &r) || (!r.tv_sec && !r.tv_nsec))
		return 4000000;
	return (uint64_t)r.tv_sec * XRL_NSEC_PER_SEC + (uint64_t)r.tv_nsec;
}

/* The cookie's slot as the program computes it now (bpf/xrl.bpf.c,
 * xrl_cookie_step). Read after the SYN: the slot then is the SYN's or the
 * next, and xrl_ck_slot_of turns either into the SYN's by the parity bit. */
static uint64_t slot_now(void)
{
	return jiffies_now() * tick_ns() >> XRL_CK_SLOT_SHIFT;
}

static const char *dst_of(const struct seg *s, int fam)
{
	return s->dst ? s->dst : fam == 4 ? "192.0.2.1" : "2001:db8:ffff::1";
}

/* xrl's cookie hash of the handshake SYN s starts, with key k, in slot. */
static uint64_t own_hash(const struct xrl_cookie_key *k, const struct seg *s, uint64_t slot)
{
	uint32_t src[4], dst[4];
	int fam, f2;

	pb_parse_addr(s->src, &fam, src);
	pb_parse_addr(dst_of(s, fam), &f2, dst);
	return xrl_ck_hash(k->k[0], k->k[1], src, dst, htons(s->sport),
			   htons(s->dport ? s->dport : 80), s->seq, slot);
}

/* The MSS index the cookie of SYN s carries. */
static uint32_t own_mss_idx(const struct seg *s, int fam)
{
	uint32_t m = s->mss ? (s->mssv ? s->mssv : 1460) : fam == 4 ? 536 : 1220;

	return xrl_ck_mss_index(m, fam == 6);
}

/* What a SYN-ACK to SYN s agrees to, on the path c->ck chooses. */
struct agreed {
	bool ts, sack, ws, ecn;
	uint16_t mss;                /* the SYN-ACK's MSS option */
	uint8_t  wscale;             /* the client's, capped, 0xf: none */
};

static struct agreed agreed(const struct ctx *c, const struct seg *s, int fam)
{
	const struct xrl_cookie_cfg *k = &c->ck;
	struct agreed a;

	if (k->own) {
		/* every option the namespace allows, timestamps or not */
		a.ts = s->ts && (k->opts & XRL_CKO_TS);
		a.sack = s->sack && (k->opts & XRL_CKO_SACK);
		a.ws = s->ws && (k->opts & XRL_CKO_WSCALE);
		a.ecn = (k->opts & XRL_CKO_ECN) && (s->ecn & (XRL_TCP_ECE | XRL_TCP_CWR)) ==
							   (XRL_TCP_ECE | XRL_TCP_CWR);
	} else {
		/* the kernel's cookie keeps scaling and SACK in the timestamp */
		a.ts = s->ts;
		a.sack = s->ts && s->sack;
		a.ws = s->ts && s->ws;
		a.ecn = false;
	}
	a.wscale = a.ws ? (s->wscale < 14 ? s->wscale : 14) : 0xf;
	if (fam == 4)
		a.mss = k->mss4 ? k->mss4 : 1460;
	else
		a.mss = k->mss6 ? k->mss6 : 1440;
	return a;
}

static void check_hex(const char *name, uint32_t got, uint32_t want)
{
	if (got == want)
		check(true, "%s = %#x", name, want);
	else
		check(false, "%s: got %#x, want %#x", name, got, want);
}

/*
 * The SYN-ACK o answers SYN s (frame in): addresses, ports, numbers, flags,
 * options and both checksums, recomputed here; on the own path the cookie
 * and the TSval too. The IP header is always written afresh: 20 or 40
 * bytes, whatever options, extension headers or fragment fields the SYN had.
 */
static void check_synack(const struct ctx *c, const struct seg *s, const uint8_t *in,
			 const struct out *o, struct synack *sa)
{
	const uint8_t *b = o->buf;
	int l3, l4in, l4, fam, hl;
	uint32_t ps;
	bool mss = false, sack = false, ts = false, ws = false;
	uint32_t tsval = 0, tsecr = 0;
	uint16_t mssv = 0;
	uint8_t wsv = 0;
	struct agreed w;

	offsets(s, &l3, &l4in, &fam);
	l4 = l3 + (fam == 4 ? 20 : 40);
	w = agreed(c, s, fam);
	CHECK_EQ("verdict XDP_TX", o->verdict, V_TX);
	if (o->verdict != V_TX || o->len < (uint32_t)l4 + 20) {
		check(false, "a SYN-ACK frame: %u bytes", o->len);
		return;
	}
	check(!memcmp(b, in + 6, 6) && !memcmp(b + 6, in, 6), "MAC addresses swapped");
	if (s->vlan)
		check(!memcmp(b + 12, in + 12, 4), "the VLAN tag kept");
	if (fam == 4) {
		CHECK_EQ("IPv4 version/IHL (no options)", b[l3], 0x45);
		CHECK_EQ("IPv4 TOS", b[l3 + 1], 0);
		CHECK_EQ("IPv4 total length = frame - L2", get16(b + l3 + 2), o->len - l3);
		CHECK_EQ("IPv4 flags/offset: DF only", get16(b + l3 + 6), 0x4000);
		CHECK_EQ("IPv4 TTL", b[l3 + 8], 64);
		CHECK_EQ("IPv4 protocol", b[l3 + 9], 6);
		check(!memcmp(b + l3 + 12, in + l3 + 16, 4) && !memcmp(b + l3 + 16, in + l3 + 12, 4),
		      "IPv4 addresses swapped");
		CHECK_EQ("IPv4 header checksum verifies", pb_csum_fold(pb_csum_add(0, b + l3, 20)),
			 0);
		ps = pb_csum_add(0, b + l3 + 12, 8) + 6 + (o->len - l4);
	} else {
		CHECK_EQ("IPv6 version", b[l3] >> 4, 6);
		CHECK_EQ("IPv6 payload length = TCP header", get16(b + l3 + 4), o->len - l4);
		CHECK_EQ("IPv6 next header TCP (no extension headers)", b[l3 + 6], 6);
		CHECK_EQ("IPv6 hop limit", b[l3 + 7], 64);
		check(!memcmp(b + l3 + 8, in + l3 + 24, 16) && !memcmp(b + l3 + 24, in + l3 + 8, 16),
		      "IPv6 addresses swapped");
		ps = pb_csum_add(0, b + l3 + 8, 32) + 6 + (o->len - l4);
	}
	CHECK_EQ("TCP source port = SYN's destination", get16(b + l4), get16(in + l4in + 2));
	CHECK_EQ("TCP destination port = SYN's source", get16(b + l4 + 2), get16(in + l4in));
	CHECK_EQ("ack = SYN's seq + 1", get32(b + l4 + 8), s->seq + 1);
	check_hex("flags SYN+ACK (+ECE iff ECN agreed)", b[l4 + 13], 0x12 | (w.ecn ? XRL_TCP_ECE : 0));
	CHECK_EQ("window", get16(b + l4 + 14), 64240);
	CHECK_EQ("urgent pointer", get16(b + l4 + 18), 0);
	hl = (b[l4 + 12] >> 4) * 4;
	CHECK_EQ("TCP header = rest of frame", hl, o->len - l4);
	CHECK_EQ("TCP checksum verifies", pb_csum_fold(pb_csum_add(ps, b + l4, o->len - l4)), 0);
	for (int i = 20; i < hl && i < (int)(o->len - l4);) {
		const uint8_t *op = b + l4 + i;

		if (op[0] == 0)
			break;
		if (op[0] == 1) {
			i++;
			continue;
		}
		if (op[0] == 2 && op[1] == 4) {
			mss = true;
			mssv = get16(op + 2);
		} else if (op[0] == 4 && op[1] == 2) {
			sack = true;
		} else if (op[0] == 8 && op[1] == 10) {
			ts = true;
			tsval = get32(op + 2);
			tsecr = get32(op + 6);
		} else if (op[0] == 3 && op[1] == 3) {
			ws = true;
			wsv = op[2];
		}
		i += op[1] ? op[1] : 1;
	}
	check(mss && mssv == w.mss, "MSS option %u (xrl_cookie's mss%d: %u)", mssv, fam, w.mss);
	CHECK_EQ("timestamp option as agreed", ts, w.ts);
	CHECK_EQ("SACK-permitted as agreed", sack, w.sack);
	CHECK_EQ("window scale as agreed", ws, w.ws);
	if (ws)
		CHECK_EQ("our window scale (the namespace's, as the loader sets it)", wsv,
			 c->ck.wscale ? c->ck.wscale : xrl_syn_wscale());
	if (ts)
		CHECK_EQ("tsecr = the client's tsval", tsecr, s->tsval);
	if (ts && !c->ck.own)
		CHECK_EQ("tsval's low 6 bits: wscale | SACK << 4",
			 tsval & 0x3f, (s->ws ? s->wscale : 0xf) | (s->sack ? 0x10 : 0));
	sa->cookie = get32(b + l4 + 4);
	sa->has_ts = ts;
	sa->tsval = tsval;
	if (c->ck.own) {
		uint64_t now = slot_now(), slot, h;
		uint32_t kid = sa->cookie & XRL_CK_KEYID_BIT ? 1 : 0;

		check(now != 0, "the kernel's jiffies, from /proc/timer_list");
		slot = xrl_ck_slot_of(sa->cookie, now);
		h = own_hash(&c->ck.key[kid], s, slot);
		CHECK_EQ("the cookie's key id = xrl_cookie.key_id", kid, c->ck.key_id & 1);
		check_hex("the cookie = xrl_ck_isn(SipHash recomputed, key id, slot, MSS index, ECN, "
			  "SACK, wscale)",
			  sa->cookie,
			  xrl_ck_isn(h, kid, slot, own_mss_idx(s, fam), w.ecn, w.sack, w.wscale));
		if (ts)
			check_hex("tsval = the hash's upper half, not a clock", tsval, xrl_ck_tsval(h));
	}
}

/* ---- cases ------------------------------------------------------------ */

/* The next rule of pol: name, TCP SYNs to port, tokens a period_ns, burst. */
static struct xrl_rule_spec *syn_rule(struct xrl_policy *pol, const char *name, uint16_t port,
				      __u64 tokens, __u64 period_ns, __u32 burst)
{
	struct xrl_rule_spec *s = &pol->rules[pol->n_rules++];

	xrl_rule_spec_init(s, name);
	s->proto = XRL_PROTO_TCP;
	s->tcp_class = XRL_TCP_SYN;
	s->ports[s->n_ports++] = (struct xrl_port_range){ port, port };
	s->rate = (struct xrl_rate){ .tokens = tokens, .period_ns = period_ns };
	s->burst = burst;
	return s;
}

static int setup(struct ctx *c, uint16_t port)
{
	char err[XRL_ERRLEN] = "";
	struct xrl_policy *pol = calloc(1, sizeof(*pol));
	__u32 zero = 0;
	int rc;

	if (!pol)
		return -ENOMEM;
	rc = xrl_open(&(struct xrl_open_opts){ .buckets_max = 4096, .refused_max = 4096 }, &c->h);
	check(rc == 0, "xrl_open (load only): %d", rc);
	if (rc)
		goto out;
	rc = bpf_map_lookup_elem(xrl_map_fd(c->h, XRL_MAP_COOKIE), &zero, &c->ck) ? -errno : 0;
	check(rc == 0, "read xrl_cookie: %d", rc);
	if (rc)
		goto out;
	syn_rule(pol, "web", port, 10, 60ULL * XRL_NSEC_PER_SEC, 1)->syn_cookies = XRL_COOKIES_ON;
	rc = xrl_apply_policy(c->h, pol, err, sizeof(err));
	check(rc == 0, "xrl_apply_policy: %d %s", rc, err);
	if (!rc)
		rc = xrl_read_stats(c->h, &c->st0);
out:
	free(pol);
	return rc;
}

/* Write k to xrl_cookie, as xrld does; c->ck follows. */
static int cookie_write(struct ctx *c, const struct xrl_cookie_cfg *k)
{
	__u32 zero = 0;
	int rc = bpf_map_update_elem(xrl_map_fd(c->h, XRL_MAP_COOKIE), &zero, k, BPF_ANY) ? -errno
											: 0;

	check(rc == 0, "write xrl_cookie: %d", rc);
	if (!rc)
		c->ck = *k;
	return rc;
}

/*
 * xrl's own cookies from now on: the map's entry read, own = 1 and the
 * options opts (XRL_CKO_*, what the namespace's sysctls would allow),
 * written back. The keys stay those xrl_cookie_refresh made at load.
 */
static int own_on(struct ctx *c, uint8_t opts)
{
	struct xrl_cookie_cfg k;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(xrl_map_fd(c->h, XRL_MAP_COOKIE), &zero, &k)) {
		check(false, "read xrl_cookie: %s", strerror(errno));
		return -1;
	}
	check(k.key[0].made_ns && k.key[1].made_ns, "the loader made both keys");
	k.own = 1;
	k.opts = opts;
	return cookie_write(c, &k);
}

#define CKO_ALL (XRL_CKO_SACK | XRL_CKO_WSCALE | XRL_CKO_TS | XRL_CKO_ECN)

/* A counter's change since setup. */
static uint64_t delta(struct ctx *c, int g)
{
	struct xrl_stats st;

	if (xrl_read_stats(c->h, &st))
		return ~0ULL;
	return st.global.c[g] - c->st0.global.c[g];
}

static uint64_t rule_pkts(struct ctx *c, int v)
{
	struct xrl_stats st;

	if (xrl_read_stats(c->h, &st))
		return ~0ULL;
	return st.rules[0].pkts[v] - c->st0.rules[0].pkts[v];
}

/* Send segment s; return the verdict (or -errno), output in *o. */
static int send_seg(struct ctx *c, const struct seg *s, struct pb *p, struct out *o)
{
	int rc = build_seg(s, p);

	if (!rc)
		rc = run(c->h, p->buf, p->len, o);
	if (rc) {
		check(false, "build and run: %s", strerror(-rc));
		return rc;
	}
	return o->verdict;
}

/* The first SYN of a port and family goes to the kernel: the primer. */
static void prime(struct ctx *c, const char *src, uint16_t vlan)
{
	struct seg s = { .src = src, .sport = 1, .flags = PB_TCP_SYN, .mss = true, .vlan = vlan };
	struct pb p;
	struct out o;

	CHECK_EQ("the port's first SYN is the primer: XDP_PASS", send_seg(c, &s, &p, &o), V_PASS);
}

/*
 * The metadata in front of a valid own-cookie ACK a (frame in, len bytes),
 * for the TC program: what the cookie of SYN s agreed, where the headers are;
 * the frame behind it untouched.
 */
static void check_meta(const struct ctx *c, const struct seg *s, const struct seg *a,
		       const uint8_t *in, size_t len, const struct out *o)
{
	struct xrl_ck_meta m;
	int l3, l4, fam;
	struct agreed w;

	offsets(a, &l3, &l4, &fam);
	w = agreed(c, s, fam);
	if (o->len != len + sizeof(m)) {
		check(false, "the ACK comes with %zu bytes of metadata: %u bytes out, %zu in",
		      sizeof(m), o->len, len);
		return;
	}
	memcpy(&m, o->buf, sizeof(m));
	check(!memcmp(o->buf + sizeof(m), in, len), "the frame behind the metadata untouched");
	check_hex("meta magic", m.magic, XRL_CK_META_MAGIC);
	CHECK_EQ("meta family", m.family, fam);
	CHECK_EQ("meta l3_off", m.l3_off, l3);
	CHECK_EQ("meta l4_off", m.l4_off, l4);
	CHECK_EQ("meta mss = the cookie's table entry",
		 m.mss, xrl_ck_mss_of(own_mss_idx(s, fam), fam == 6));
	CHECK_EQ("meta snd_wscale = the client's", m.snd_wscale, w.wscale);
	CHECK_EQ("meta rcv_wscale = ours", m.rcv_wscale,
		 c->ck.wscale ? c->ck.wscale : xrl_syn_wscale());
	check_hex("meta flags", m.flags,
		  (w.sack ? XRL_CKO_SACK : 0) | (a->ts ? XRL_CKO_TS : 0) | (w.ecn ? XRL_CKO_ECN : 0));
	if (a->ts) {
		check_hex("meta tsval = the ACK's", m.tsval, a->tsval);
		check_hex("meta tsecr = its echo", m.tsecr, a->tsecr);
	}
}

/* The ACK a client sends back for SYN s and SYN-ACK sa. */
static struct seg ack_of(const struct seg *s, const struct synack *sa)
{
	struct seg a = *s;

	a.flags = PB_TCP_ACK;
	a.ecn = 0;
	a.seq = s->seq + 1;
	a.ack = sa->cookie + 1;
	a.mss = a.sack = a.ws = false;
	a.ts = sa->has_ts;
	a.tsval = s->tsval + 1;
	a.tsecr = sa->tsval;
	return a;
}

/* SYN s, its SYN-ACK checked; then the ACK a client sends back (with its
 * metadata checked, on the own path, when it passes). */
static int handshake(struct ctx *c, struct seg s, struct synack *sa, struct out *o)
{
	struct pb p, q;
	struct seg a;
	int v;

	s.flags = PB_TCP_SYN | s.ecn;
	if (send_seg(c, &s, &p, o) < 0)
		return -1;
	check_synack(c, &s, p.buf, o, sa);
	a = ack_of(&s, sa);
	v = send_seg(c, &a, &q, o);
	if (v == V_PASS && c->ck.own)
		check_meta(c, &s, &a, q.buf, q.len, o);
	return v;
}

static const struct seg full4 = {
	.src = "198.51.100.7", .sport = 40001, .seq = 0x11223344,
	.mss = true, .sack = true, .ts = true, .ws = true, .wscale = 9, .tsval = 0xa0b0c0d0,
};

static void case_v4(struct ctx *c)
{
	struct synack sa, sa2;
	struct out o;
	struct pb p;
	struct seg s = full4, a;

	prime(c, s.src, 0);
	CHECK_EQ("the ACK with a valid cookie: XDP_PASS", handshake(c, s, &sa, &o), V_PASS);
	CHECK_EQ("cookies_sent", delta(c, XRL_G_COOKIES_SENT), 1);
	CHECK_EQ("cookies_valid", delta(c, XRL_G_COOKIES_VALID), 1);
	CHECK_EQ("the verified source has a bucket", xrl_bucket_count(c->h), 1);
	CHECK_EQ("rule counted it passed", rule_pkts(c, XRL_V_PASSED), 1);

	a = s;
	a.flags = PB_TCP_ACK;
	a.seq = s.seq + 1;
	a.ack = (sa.cookie + 1) ^ 0x01000000;
	a.mss = a.sack = a.ws = a.ts = false;
	CHECK_EQ("a forged cookie: XDP_DROP", send_seg(c, &a, &p, &o), V_DROP);
	a.ack = sa.cookie + 1;
	a.sport = 40002;
	CHECK_EQ("the cookie replayed from another port: XDP_DROP", send_seg(c, &a, &p, &o), V_DROP);
	a.sport = s.sport;
	a.seq = s.seq + 1000;
	CHECK_EQ("the cookie with another sequence number: XDP_DROP", send_seg(c, &a, &p, &o),
		 V_DROP);
	CHECK_EQ("cookies_bad", delta(c, XRL_G_COOKIES_BAD), 3);

	/* burst 1: the source's second verified connection is refused */
	s.sport = 40003;
	CHECK_EQ("a second connection's valid ACK, bucket empty: XDP_DROP",
		 handshake(c, s, &sa2, &o), V_DROP);
	CHECK_EQ("rule counted it dropped", rule_pkts(c, XRL_V_DROPPED), 1);
	CHECK_EQ("still one bucket", xrl_bucket_count(c->h), 1);
	/* a refused cookie ACK is not cached: the next one asks again */
	CHECK_EQ("refused_cached", delta(c, XRL_G_REFUSED_CACHED), 0);
}

static void case_v4_no_options(struct ctx *c)
{
	struct seg s = { .src = "198.51.100.8", .sport = 40001, .seq = 7 };
	struct synack sa;
	struct out o;

	prime(c, s.src, 0);
	CHECK_EQ("the ACK: XDP_PASS", handshake(c, s, &sa, &o), V_PASS);
	s.mss = true;
	s.ts = true;
	s.tsval = 12345;
	s.sport = 40002;
	s.src = "198.51.100.9";
	CHECK_EQ("MSS + timestamp only: the ACK passes", handshake(c, s, &sa, &o), V_PASS);
	CHECK_EQ("cookies_valid", delta(c, XRL_G_COOKIES_VALID), 2);
}

static void case_v6(struct ctx *c)
{
	struct seg s = full4;
	struct synack sa;
	struct out o;

	s.src = "2001:db8:1::7";
	prime(c, s.src, 0);
	CHECK_EQ("IPv6: the ACK with a valid cookie: XDP_PASS", handshake(c, s, &sa, &o), V_PASS);
	CHECK_EQ("cookies_valid", delta(c, XRL_G_COOKIES_VALID), 1);
	CHECK_EQ("one bucket", xrl_bucket_count(c->h), 1);
}

static void case_vlan(struct ctx *c)
{
	struct seg s = full4;
	struct synack sa;
	struct out o;

	s.vlan = PB_ETH_P_8021Q;
	prime(c, s.src, s.vlan);
	CHECK_EQ("802.1Q: the ACK with a valid cookie: XDP_PASS", handshake(c, s, &sa, &o), V_PASS);
	s.src = "2001:db8:1::8";
	s.vlan = PB_ETH_P_8021AD;
	prime(c, s.src, s.vlan);
	CHECK_EQ("802.1ad IPv6: the ACK with a valid cookie: XDP_PASS", handshake(c, s, &sa, &o),
		 V_PASS);
	CHECK_EQ("cookies_valid", delta(c, XRL_G_COOKIES_VALID), 2);
}

static void case_flood(struct ctx *c)
{
	struct seg s = full4;
	unsigned int tx = 0;
	char src[32];
	struct out o;
	struct pb p;

	prime(c, s.src, 0);
	s.flags = PB_TCP_SYN;
	for (int i = 0; i < 2000; i++) {
		snprintf(src, sizeof(src), "10.%d.%d.%d", i >> 16, (i >> 8) & 0xff, i & 0xff);
		s.src = src;
		s.sport = (uint16_t)(1024 + i);
		if (send_seg(c, &s, &p, &o) == V_TX)
			tx++;
	}
	CHECK_EQ("2000 spoofed SYNs answered with XDP_TX", tx, 2000);
	CHECK_EQ("cookies_sent", delta(c, XRL_G_COOKIES_SENT), 2000);
	CHECK_EQ("no bucket for any of them", xrl_bucket_count(c->h), 0);
	CHECK_EQ("no bucket_new", delta(c, XRL_G_BUCKET_NEW), 0);
}

/* A connection on loopback to port, through the host's TCP. */
struct conn {
	int ls, cs, as;
	uint16_t cport;              /* the client's port */
};

static int conn_open(struct conn *k, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in ca;
	socklen_t cl = sizeof(ca);
	int one = 1;

	k->as = -1;
	k->ls = socket(AF_INET, SOCK_STREAM, 0);
	k->cs = socket(AF_INET, SOCK_STREAM, 0);
	if (k->ls >= 0)
		setsockopt(k->ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (k->ls < 0 || k->cs < 0 || bind(k->ls, (void *)&sa, sizeof(sa)) || listen(k->ls, 8) ||
	    connect(k->cs, (void *)&sa, sizeof(sa)) || getsockname(k->cs, (void *)&ca, &cl) ||
	    (k->as = accept(k->ls, NULL, NULL)) < 0) {
		check(false, "a loopback connection to port %u: %s", port, strerror(errno));
		return -1;
	}
	k->cport = ntohs(ca.sin_port);
	return 0;
}

static void conn_close(struct conn *k)
{
	if (k->as >= 0)
		close(k->as);
	if (k->cs >= 0)
		close(k->cs);
	if (k->ls >= 0)
		close(k->ls);
}

/*
 * A SYN the program cannot answer: one for the 4-tuple of a connection the
 * host has (a client reusing its port, the server's time-wait socket still
 * there). It goes to the kernel untouched, and meets no bucket.
 */
static void fallback_known(struct ctx *c, uint16_t port)
{
	struct seg s = { .src = "127.0.0.1", .dst = "127.0.0.1", .dport = port,
			 .flags = PB_TCP_SYN, .seq = 99, .mss = true };
	struct conn k;
	struct out o;
	struct pb p;

	if (conn_open(&k, port) == 0) {
		s.sport = k.cport;
		CHECK_EQ("a SYN of a 4-tuple the host has a socket for: XDP_PASS",
			 send_seg(c, &s, &p, &o), V_PASS);
		check(o.len == p.len && !memcmp(o.buf, p.buf, p.len), "... and untouched");
		CHECK_EQ("cookie_fallback", delta(c, XRL_G_COOKIE_FALLBACK), 1);
		CHECK_EQ("no bucket for it", xrl_bucket_count(c->h), 0);
		CHECK_EQ("no bucket_new", delta(c, XRL_G_BUCKET_NEW), 0);
	}
	conn_close(&k);
}

/*
 * SYNs whose IP layer the SYN-ACK does not echo: one with IPv4 options, an
 * IPv4 first fragment (MF), one with an IPv6 destination options header.
 * Each is answered with a SYN-ACK whose IP header is 20 or 40 bytes (see
 * check_synack) and none meets a bucket. The ACK has the same IP layer.
 */
static void ip_layers(struct ctx *c)
{
	struct seg s = full4;
	struct synack sa;
	struct out o;

	s.ip_opt_words = 1;
	CHECK_EQ("IPv4 options (one word of NOPs): the ACK passes", handshake(c, s, &sa, &o),
		 V_PASS);
	s = full4;
	s.src = "198.51.100.20";
	s.frag = true;
	CHECK_EQ("an IPv4 first fragment: the ACK passes", handshake(c, s, &sa, &o), V_PASS);
	s = full4;
	s.src = "2001:db8:1::20";
	s.ext6 = 8;
	CHECK_EQ("an IPv6 destination options header: the ACK passes", handshake(c, s, &sa, &o),
		 V_PASS);
	CHECK_EQ("cookies_sent", delta(c, XRL_G_COOKIES_SENT), 3);
	CHECK_EQ("cookies_valid", delta(c, XRL_G_COOKIES_VALID), 3);
	CHECK_EQ("cookie_fallback", delta(c, XRL_G_COOKIE_FALLBACK), 0);
	CHECK_EQ("a bucket for each verified source only", xrl_bucket_count(c->h), 3);
}

static void case_fallback(struct ctx *c)
{
	prime(c, full4.src, 0);
	prime(c, "2001:db8:1::7", 0);
	ip_layers(c);
}

static void case_fallback_known(struct ctx *c)
{
	struct seg s = { .src = "127.0.0.2", .dst = "127.0.0.1", .dport = 18081, .sport = 1,
			 .flags = PB_TCP_SYN, .mss = true };
	struct out o;
	struct pb p;

	CHECK_EQ("the port's first SYN is the primer: XDP_PASS", send_seg(c, &s, &p, &o), V_PASS);
	fallback_known(c, 18081);
}

/* A real connection on loopback: its ACKs are the kernel's business. */
static void case_established(struct ctx *c, uint16_t port)
{
	struct seg s = { .src = "127.0.0.1", .dst = "127.0.0.1", .dport = port,
			 .flags = PB_TCP_ACK, .seq = 1, .ack = 1 };
	struct conn k;
	struct out o;
	struct pb p;

	if (conn_open(&k, port))
		goto out;
	s.sport = k.cport;
	CHECK_EQ("an ACK of the established connection: XDP_PASS", send_seg(c, &s, &p, &o),
		 V_PASS);
	check(o.len == p.len && !memcmp(o.buf, p.buf, p.len), "... and untouched");
	CHECK_EQ("cookies_bad", delta(c, XRL_G_COOKIES_BAD), 0);
	CHECK_EQ("cookies_valid", delta(c, XRL_G_COOKIES_VALID), 0);
	s.sport = (uint16_t)(k.cport ^ 0x4000);
	CHECK_EQ("an ACK of no connection, to the listener: XDP_DROP", send_seg(c, &s, &p, &o),
		 V_DROP);
	CHECK_EQ("cookies_bad", delta(c, XRL_G_COOKIES_BAD), 1);
out:
	conn_close(&k);
}

static void case_est(struct ctx *c) { case_established(c, 18080); }

/* Is src's /24 (or /48) vouched, with origin *origin? */
static bool vouched(struct ctx *c, const char *src, __u32 *origin)
{
	struct xrl_vouch v[16];
	struct xrl_prefix p;
	size_t n = 0;

	if (xrl_prefix_parse(src, &p, NULL, 0) || xrl_vouch_list(c->h, v, 16, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		__u32 m[4];
		bool eq = v[i].prefix.family == p.family;

		xrl_prefix_mask(p.family, v[i].prefix.plen, m);
		for (int w = 0; w < 4; w++)
			eq = eq && (p.addr[w] & m[w]) == v[i].prefix.addr[w];
		if (eq) {
			*origin = v[i].origin;
			return true;
		}
	}
	return false;
}

/* A verified connection vouches its source's /24. */
static void case_vouch_cookie(struct ctx *c)
{
	struct synack sa;
	struct out o;
	__u32 origin = 99;

	prime(c, full4.src, 0);
	check(!vouched(c, full4.src, &origin), "198.51.100.0/24 is not vouched before");
	CHECK_EQ("the ACK with a valid cookie: XDP_PASS", handshake(c, full4, &sa, &o), V_PASS);
	check(vouched(c, full4.src, &origin), "198.51.100.0/24 is vouched after");
	CHECK_EQ("... by a cookie", origin, XRL_ORIGIN_COOKIE);
}

/*
 * n SYNs to port 80 from src_fmt % i (i from first): how many passed.
 * The rule has no cookies here: SYNs meet the buckets and the cap.
 */
static int syns(struct ctx *c, const char *src_fmt, int first, int n)
{
	struct seg s = { .sport = 1000, .flags = PB_TCP_SYN, .mss = true };
	int passed = 0;
	char src[48];
	struct out o;
	struct pb p;

	for (int i = first; i < first + n; i++) {
		snprintf(src, sizeof(src), src_fmt, i);
		s.src = src;
		if (send_seg(c, &s, &p, &o) == V_PASS)
			passed++;
	}
	return passed;
}

/*
 * An aggregate cap of burst `burst` (1/min: nothing refills during a
 * test), half of it reserved for vouched sources. Sources' own buckets
 * are wide (burst 1000) so only the cap refuses. Cookies off: SYNs meet
 * the buckets and the cap.
 */
static int agg_policy(struct ctx *c, __u32 burst)
{
	struct xrl_policy *pol = calloc(1, sizeof(*pol));
	char err[XRL_ERRLEN] = "";
	struct xrl_rule_spec *s;
	int rc;

	if (!pol)
		return -ENOMEM;
	s = syn_rule(pol, "agg", 80, 1000, XRL_NSEC_PER_SEC, 1000);
	s->agg_rate = (struct xrl_rate){ .tokens = 1, .period_ns = 60ULL * XRL_NSEC_PER_SEC };
	s->agg_burst = burst;
	s->agg_vouched_pm = 500;
	rc = xrl_apply_policy(c->h, pol, err, sizeof(err));
	free(pol);
	check(rc == 0, "apply the aggregate policy: %d %s", rc, err);
	if (!rc)
		xrl_read_stats(c->h, &c->st0);
	return rc;
}

/* 5 open + 5 reserved. */
static void case_aggregate(struct ctx *c)
{
	struct xrl_vouch_key k = { .family = XRL_AF_INET };
	struct xrl_vouch_val v = { .origin = XRL_ORIGIN_COOKIE, .expires_ns = 1 };
	struct xrl_prefix pf;
	int rc;

	if (agg_policy(c, 10))
		return;
	rc = xrl_prefix_parse("203.0.113.0/24", &pf, NULL, 0);
	rc = rc ? rc : xrl_vouch_add(c->h, &pf, 60ULL * XRL_NSEC_PER_SEC);
	check(rc == 0, "vouch for 203.0.113.0/24: %d", rc);
	/* 198.51.101.0/24 vouched, but expired (CLOCK_MONOTONIC 1 ns) */
	k.addr[0] = htonl(0xc6336500);
	bpf_map_update_elem(xrl_map_fd(c->h, XRL_MAP_VOUCH), &k, &v, BPF_ANY);

	CHECK_EQ("20 new sources: the open share (5) passes", syns(c, "10.1.0.%d", 1, 20), 5);
	CHECK_EQ("aggregate_refused", delta(c, XRL_G_AGG_REFUSED), 15);
	CHECK_EQ("rule counted them dropped", rule_pkts(c, XRL_V_DROPPED), 15);
	CHECK_EQ("an expired vouch is no vouch", syns(c, "198.51.101.%d", 1, 3), 0);
	CHECK_EQ("10 vouched sources: the reserved share (5) passes",
		 syns(c, "203.0.113.%d", 1, 10), 5);
	CHECK_EQ("vouched_admits", delta(c, XRL_G_VOUCHED_ADMITS), 5);
	CHECK_EQ("aggregate_refused", delta(c, XRL_G_AGG_REFUSED), 23);
	CHECK_EQ("no refusal was cached (the cap is not the source's)",
		 delta(c, XRL_G_REFUSED_CACHED), 0);
	CHECK_EQ("no sample, so no strike", delta(c, XRL_G_EVENTS_SENT), 0);
	rc = xrl_vouch_del(c->h, &pf);
	check(rc == 0, "xrl_vouch_del: %d", rc);
	pf.plen = 16;
	CHECK_EQ("a vouch shorter than /24: -EINVAL", xrl_vouch_add(c->h, &pf, 0), -EINVAL);
}

#ifdef XRL_MAP_VOUCH_OP
/* The value map m holds for cidr's /24 or /48: 0, or -ENOENT. */
static int vouch_get(struct ctx *c, const char *m, const char *cidr, struct xrl_vouch_val *v)
{
	struct xrl_vouch_key k = { 0 };
	struct xrl_prefix p;

	if (xrl_prefix_parse(cidr, &p, NULL, 0))
		return -EINVAL;
	k.family = p.family;
	memcpy(k.addr, p.addr, sizeof(k.addr));
	return bpf_map_lookup_elem(xrl_map_fd(c->h, m), &k, v) ? -errno : 0;
}

static int vouch_op(struct ctx *c, const char *cidr, __u64 ttl_ns)
{
	struct xrl_prefix p;

	return xrl_prefix_parse(cidr, &p, NULL, 0) ? -EINVAL : xrl_vouch_add(c->h, &p, ttl_ns);
}

static int vouch_auto(struct ctx *c, const char *cidr, __u64 ttl_ns, __u32 origin)
{
	struct xrl_prefix p;

	return xrl_prefix_parse(cidr, &p, NULL, 0) ? -EINVAL
						    : xrl_vouch_auto(c->h, &p, ttl_ns, origin);
}

/*
 * Issue 22 (vouches by origin): one identity-tier write for an operator's
 * prefix used to replace its permanent vouch (BPF_ANY on one shared map)
 * with a 600 s one, and 70,000 of them for other prefixes pushed it out
 * of the LRU. Now each origin has its own space.
 */
static void case_vouch_origin(struct ctx *c)
{
	const __u64 ttl = 600ULL * XRL_NSEC_PER_SEC;
	struct xrl_vouch_val v = { 0 };
	struct xrl_prefix p = { .family = XRL_AF_INET6, .plen = 48 };
	int rc = 0, n = 0;

	CHECK_EQ("operator vouch 203.0.113.0/24, permanent", vouch_op(c, "203.0.113.0/24", 0), 0);
	CHECK_EQ("identity vouch of the same /24, 600 s",
		 vouch_auto(c, "203.0.113.9", ttl, XRL_ORIGIN_IDENTITY), 0);
	rc = vouch_get(c, XRL_MAP_VOUCH_OP, "203.0.113.0/24", &v);
	CHECK_EQ("the operator's entry is still there", rc, 0);
	CHECK_EQ("... and never expires", v.expires_ns, 0);
	CHECK_EQ("... origin runtime", v.origin, XRL_ORIGIN_RUNTIME);
	rc = vouch_get(c, XRL_MAP_VOUCH, "203.0.113.0/24", &v);
	CHECK_EQ("the identity vouch is in the automatic space", rc, 0);
	CHECK_EQ("... origin identity", v.origin, XRL_ORIGIN_IDENTITY);
	CHECK_EQ("an automatic write cannot claim the operator's origin",
		 vouch_auto(c, "192.0.2.0/24", 0, XRL_ORIGIN_RUNTIME), -EINVAL);

	/* 70,000 distinct /48s (2001:db8:N::/48 with N in the second and
	 * third words): more than the automatic space holds */
	for (int i = 0; i < 70000 && !rc; i++, n++) {
		p.addr[0] = htonl(0x20010000 | (__u32)(i >> 16));
		p.addr[1] = htonl((__u32)(i & 0xffff) << 16);
		rc = xrl_vouch_auto(c->h, &p, ttl, XRL_ORIGIN_IDENTITY);
	}
	CHECK_EQ("70,000 identity vouches written", n, 70000);
	check(rc == 0, "... each one: %d", rc);
	rc = vouch_get(c, XRL_MAP_VOUCH, "203.0.113.0/24", &v);
	CHECK_EQ("the identity vouch of 203.0.113.0/24 was pushed out (LRU)", rc, -ENOENT);
	rc = vouch_get(c, XRL_MAP_VOUCH_OP, "203.0.113.0/24", &v);
	CHECK_EQ("the operator's is not", rc, 0);
	CHECK_EQ("... still permanent", v.expires_ns, 0);
	p = (struct xrl_prefix){ 0 };
	xrl_prefix_parse("203.0.113.0/24", &p, NULL, 0);
	check(xrl_vouched(c->h, &p), "xrl_vouched(203.0.113.0/24) after the flood");
	CHECK_EQ("vouch del removes it", xrl_vouch_del(c->h, &p), 0);
	check(!xrl_vouched(c->h, &p), "... and it is no longer vouched");
	CHECK_EQ("a second del: -ENOENT", xrl_vouch_del(c->h, &p), -ENOENT);
}

/* The program reads both spaces; an expired entry in one does not hide
 * the other's. Reserved share: 5. */
static void case_vouch_spaces(struct ctx *c)
{
	struct xrl_vouch_key k = { .family = XRL_AF_INET };
	struct xrl_vouch_val v = { .expires_ns = 1 };

	if (agg_policy(c, 10))
		return;
	CHECK_EQ("operator 203.0.113.0/24", vouch_op(c, "203.0.113.0/24", 0), 0);
	CHECK_EQ("identity 198.51.102.0/24",
		 vouch_auto(c, "198.51.102.0/24", 60ULL * XRL_NSEC_PER_SEC, XRL_ORIGIN_IDENTITY), 0);
	CHECK_EQ("operator 198.51.101.0/24 (ttl 1 h)",
		 vouch_op(c, "198.51.101.0/24", 3600ULL * XRL_NSEC_PER_SEC), 0);
	/* ... whose automatic entry expired (CLOCK_MONOTONIC 1 ns) */
	v.origin = XRL_ORIGIN_COOKIE;
	k.addr[0] = htonl(0xc6336500);
	bpf_map_update_elem(xrl_map_fd(c->h, XRL_MAP_VOUCH), &k, &v, BPF_ANY);
	/* 198.51.103.0/24: an operator's vouch that expired */
	v.origin = XRL_ORIGIN_RUNTIME;
	k.addr[0] = htonl(0xc6336700);
	bpf_map_update_elem(xrl_map_fd(c->h, XRL_MAP_VOUCH_OP), &k, &v, BPF_ANY);

	CHECK_EQ("20 new sources: the open share (5) passes", syns(c, "10.1.0.%d", 1, 20), 5);
	CHECK_EQ("an expired operator vouch is no vouch", syns(c, "198.51.103.%d", 1, 3), 0);
	CHECK_EQ("operator-vouched: the reserved share", syns(c, "203.0.113.%d", 1, 2), 2);
	CHECK_EQ("identity-vouched: the reserved share", syns(c, "198.51.102.%d", 1, 2), 2);
	CHECK_EQ("operator-vouched behind an expired automatic entry",
		 syns(c, "198.51.101.%d", 1, 1), 1);
	CHECK_EQ("vouched_admits", delta(c, XRL_G_VOUCHED_ADMITS), 5);
	CHECK_EQ("the reserved share is spent", syns(c, "203.0.113.%d", 10, 2), 0);
}

/* The operator's space is bounded: XRL_VOUCH_OP_MAX, then -ENOSPC; a
 * replacement still goes in, and automatic vouches do not share it. */
static void case_vouch_op_full(struct ctx *c)
{
	struct xrl_prefix p = { .family = XRL_AF_INET, .plen = 24 };
	__u32 used = 0, cap = 0;
	int rc = 0, n = 0;

	for (__u32 i = 0; i < XRL_VOUCH_OP_MAX && !rc; i++, n++) {
		p.addr[0] = htonl(0x0a000000 | i << 8);
		rc = xrl_vouch_add(c->h, &p, 0);
	}
	CHECK_EQ("XRL_VOUCH_OP_MAX operator vouches", n, XRL_VOUCH_OP_MAX);
	check(rc == 0, "... each one: %d", rc);
	rc = xrl_vouch_op_room(c->h, &used, &cap);
	CHECK_EQ("xrl_vouch_op_room", rc, 0);
	CHECK_EQ("... used", used, XRL_VOUCH_OP_MAX);
	CHECK_EQ("... capacity", cap, XRL_VOUCH_OP_MAX);
	CHECK_EQ("one more: -ENOSPC", vouch_op(c, "192.0.2.0/24", 0), -ENOSPC);
	CHECK_EQ("replacing one held: 0", vouch_op(c, "10.0.0.0/24", 60ULL * XRL_NSEC_PER_SEC), 0);
	CHECK_EQ("an identity vouch still goes in",
		 vouch_auto(c, "192.0.2.0/24", 60ULL * XRL_NSEC_PER_SEC, XRL_ORIGIN_IDENTITY), 0);
	CHECK_EQ("del one", xrl_vouch_del(c->h, &p), 0);
	CHECK_EQ("then the add fits", vouch_op(c, "192.0.2.0/24", 0), 0);
}
#endif

/* The rule's SYN counter since setup. */
static uint64_t rule_syns(struct ctx *c)
{
	struct xrl_stats st;

	if (xrl_read_stats(c->h, &st))
		return ~0ULL;
	return st.rules[0].syns - c->st0.rules[0].syns;
}

/*
 * syn_cookies: auto. Idle, the rule is one without cookies: a SYN meets
 * the bucket, an ACK is not its business. Engaged (the byte xrld flips,
 * here flipped by the library call xrld uses), SYNs get cookie SYN-ACKs;
 * let go, they meet the bucket again. The SYN counter counts all of them.
 */
static void case_auto(struct ctx *c)
{
	struct seg s = full4, a = full4;
	struct out o;
	struct pb p;
	__u8 was = 0;

	CHECK_EQ("web to auto", xrl_rule_cookies_set(c->h, "web", XRL_COOKIES_AUTO, &was), 0);
	CHECK_EQ("it was on", was, XRL_COOKIES_ON);
	s.flags = PB_TCP_SYN;
	CHECK_EQ("auto, idle: a SYN meets the bucket (XDP_PASS)", send_seg(c, &s, &p, &o), V_PASS);
	CHECK_EQ("no cookie sent", delta(c, XRL_G_COOKIES_SENT), 0);
	CHECK_EQ("the source has a bucket", xrl_bucket_count(c->h), 1);
	a.flags = PB_TCP_ACK;
	a.ack = 12345;
	CHECK_EQ("auto, idle: an ACK of no connection is not the rule's (XDP_PASS)",
		 send_seg(c, &a, &p, &o), V_PASS);
	CHECK_EQ("no cookie checked", delta(c, XRL_G_COOKIES_BAD), 0);

	CHECK_EQ("engage", xrl_rule_cookies_set(c->h, "web", XRL_COOKIES_AUTO_ON, NULL), 0);
	prime(c, "192.0.2.1", 0);
	s.src = "198.51.100.99";
	CHECK_EQ("auto, engaged: a SYN gets a SYN-ACK (XDP_TX)", send_seg(c, &s, &p, &o), V_TX);
	CHECK_EQ("cookies_sent", delta(c, XRL_G_COOKIES_SENT), 1);
	CHECK_EQ("auto, engaged: the ACK of no connection is a bad cookie (XDP_DROP)",
		 send_seg(c, &a, &p, &o), V_DROP);

	CHECK_EQ("let go", xrl_rule_cookies_set(c->h, "web", XRL_COOKIES_AUTO, &was), 0);
	CHECK_EQ("it was engaged", was, XRL_COOKIES_AUTO_ON);
	s.src = "198.51.100.100";
	CHECK_EQ("auto, let go: a SYN meets the bucket again", send_seg(c, &s, &p, &o), V_PASS);
	CHECK_EQ("cookies_sent unchanged", delta(c, XRL_G_COOKIES_SENT), 1);
	CHECK_EQ("the rule counted every SYN (2 idle, the primer, 1 engaged)", rule_syns(c), 4);
	CHECK_EQ("no such rule: -ENOENT",
		 xrl_rule_cookies_set(c->h, "nope", XRL_COOKIES_ON, NULL), -ENOENT);
}

/* ---- own cookies (xrl_cookie.own = 1) -------------------------------- */

/*
 * The own path's handshake: no primer (no SYN goes to the kernel), the
 * cookie recomputed, the ACK checked here and its options handed on as
 * metadata; forged ACKs dropped.
 */
static void case_own_v4(struct ctx *c)
{
	struct seg s = full4, a;
	struct synack sa, sa2;
	struct out o;
	struct pb p;

	if (own_on(c, CKO_ALL))
		return;
	CHECK_EQ("the ACK with a valid cookie: XDP_PASS", handshake(c, s, &sa, &o), V_PASS);
	CHECK_EQ("no primer on the own path", delta(c, XRL_G_COOKIE_PRIMERS), 0);
	CHECK_EQ("cookies_sent", delta(c, XRL_G_COOKIES_SENT), 1);
	CHECK_EQ("cookies_valid", delta(c, XRL_G_COOKIES_VALID), 1);
	CHECK_EQ("cookie_no_meta", delta(c, XRL_G_COOKIE_NO_META), 0);
	CHECK_EQ("the verified source has a bucket", xrl_bucket_count(c->h), 1);
	CHECK_EQ("rule counted it passed", rule_pkts(c, XRL_V_PASSED), 1);

	a = ack_of(&s, &sa);
	a.ack ^= 1u << XRL_CK_HASH_SHIFT;
	CHECK_EQ("the hash's lowest bit flipped: XDP_DROP", send_seg(c, &a, &p, &o), V_DROP);
	a.ack ^= 1u << XRL_CK_HASH_SHIFT | 1u << 31;
	CHECK_EQ("the hash's highest bit flipped: XDP_DROP", send_seg(c, &a, &p, &o), V_DROP);
	a = ack_of(&s, &sa);
	a.tsecr ^= 1;
	CHECK_EQ("a wrong TS echo (hash right): XDP_DROP", send_seg(c, &a, &p, &o), V_DROP);
	a = ack_of(&s, &sa);
	a.sport = 40002;
	CHECK_EQ("the cookie replayed from another port: XDP_DROP", send_seg(c, &a, &p, &o),
		 V_DROP);
	a = ack_of(&s, &sa);
	a.seq += 1000;
	CHECK_EQ("the cookie with another sequence number: XDP_DROP", send_seg(c, &a, &p, &o),
		 V_DROP);
	CHECK_EQ("cookies_bad", delta(c, XRL_G_COOKIES_BAD), 5);
	CHECK_EQ("still one bucket", xrl_bucket_count(c->h), 1);

	/* burst 1: the source's second verified connection is refused */
	s.sport = 40003;
	CHECK_EQ("a second connection's valid ACK, bucket empty: XDP_DROP",
		 handshake(c, s, &sa2, &o), V_DROP);
	CHECK_EQ("cookies_valid", delta(c, XRL_G_COOKIES_VALID), 2);
	CHECK_EQ("rule counted it dropped", rule_pkts(c, XRL_V_DROPPED), 1);
}

/*
 * The options: window scale and SACK ride in the cookie, so they are
 * offered without timestamps; what the namespace forbids (opts) is not
 * offered; the MSS index rounds the client's MSS down.
 */
static void case_own_options(struct ctx *c)
{
	struct seg s = full4;
	struct synack sa;
	struct out o;

	if (own_on(c, CKO_ALL))
		return;
	s.ts = false;
	CHECK_EQ("SACK + window scale, no timestamp: the ACK passes", handshake(c, s, &sa, &o),
		 V_PASS);
	s = (struct seg){ .src = "198.51.100.31", .sport = 40001, .seq = 7 };
	CHECK_EQ("no options at all (MSS 536): the ACK passes", handshake(c, s, &sa, &o), V_PASS);
	s = full4;
	s.src = "198.51.100.32";
	s.mssv = 1399;
	s.wscale = 15;
	CHECK_EQ("MSS 1399 (table: 1300), window scale 15 (capped 14): the ACK passes",
		 handshake(c, s, &sa, &o), V_PASS);
	s = full4;
	s.src = "2001:db8:1::31";
	s.ts = false;
	s.mssv = 1220;
	CHECK_EQ("IPv6, MSS 1220, no timestamp: the ACK passes", handshake(c, s, &sa, &o), V_PASS);
	s = full4;
	s.src = "2001:db8:2::32";   /* another /64: another bucket */
	CHECK_EQ("IPv6, all options: the ACK passes", handshake(c, s, &sa, &o), V_PASS);

	if (own_on(c, 0))
		return;
	s = full4;
	s.src = "198.51.100.33";
	s.ecn = XRL_TCP_ECE | XRL_TCP_CWR;
	CHECK_EQ("the namespace allows no option: MSS only, and the ACK passes",
		 handshake(c, s, &sa, &o), V_PASS);
	if (own_on(c, XRL_CKO_TS))
		return;
	s.src = "198.51.100.34";
	CHECK_EQ("timestamps only: the ACK passes", handshake(c, s, &sa, &o), V_PASS);
	CHECK_EQ("cookies_valid", delta(c, XRL_G_COOKIES_VALID), 7);
	CHECK_EQ("a bucket per source", xrl_bucket_count(c->h), 7);
}

/*
 * ECN setup (RFC 3168 6.1.1): a SYN with ECE and CWR gets ECE in the
 * SYN-ACK and the ECN bit in the cookie (check_synack), and the ACK's
 * metadata says ECN (check_meta); ECE alone is no setup.
 */
static void case_own_ecn(struct ctx *c)
{
	struct seg s = full4;
	struct synack sa;
	struct out o;

	if (own_on(c, CKO_ALL))
		return;
	s.ecn = XRL_TCP_ECE | XRL_TCP_CWR;
	CHECK_EQ("ECE|CWR: SYN-ACK with ECE, the ACK passes", handshake(c, s, &sa, &o), V_PASS);
	check(sa.cookie & XRL_CK_ECN, "the cookie's ECN bit set");
	s.src = "198.51.100.41";
	s.ecn = XRL_TCP_ECE;
	CHECK_EQ("ECE alone: no ECE back, the ACK passes", handshake(c, s, &sa, &o), V_PASS);
	check(!(sa.cookie & XRL_CK_ECN), "the cookie's ECN bit clear");
	s.src = "2001:db8:1::41";
	s.ecn = XRL_TCP_ECE | XRL_TCP_CWR;
	s.ts = false;
	CHECK_EQ("IPv6, ECE|CWR, no timestamp: ECE back, the ACK passes", handshake(c, s, &sa, &o),
		 V_PASS);
}

/* Send SYN s; its SYN-ACK checked into *sa. */
static void syn_only(struct ctx *c, struct seg s, struct synack *sa)
{
	struct out o;
	struct pb p;

	s.flags = PB_TCP_SYN | s.ecn;
	if (send_seg(c, &s, &p, &o) >= 0)
		check_synack(c, &s, p.buf, &o, sa);
}

/*
 * Key rotation (xrl_cookie_rotate): xrld writes a fresh key into the slot
 * not in use and switches key_id. A cookie made with the old key names it
 * by its key id bit and still checks; once that key is overwritten, not.
 */
static void case_own_keyid(struct ctx *c)
{
	struct seg s1 = full4, s2 = full4, s3 = full4, a;
	struct synack sa1, sa2, sa3;
	struct xrl_cookie_cfg k;
	uint32_t old;
	struct out o;
	struct pb p;

	if (own_on(c, CKO_ALL))
		return;
	old = c->ck.key_id & 1;
	s2.src = "198.51.100.51";
	s3.src = "198.51.100.52";
	syn_only(c, s1, &sa1);
	syn_only(c, s2, &sa2);
	CHECK_EQ("cookies made with key id", !!(sa1.cookie & XRL_CK_KEYID_BIT), old);

	k = c->ck;
	k.key_id = (uint8_t)(old ^ 1);
	if (cookie_write(c, &k))
		return;
	syn_only(c, s3, &sa3);
	CHECK_EQ("a new SYN's cookie has the new key id", !!(sa3.cookie & XRL_CK_KEYID_BIT),
		 old ^ 1);
	a = ack_of(&s1, &sa1);
	CHECK_EQ("the ACK of an old-key cookie after the switch: XDP_PASS",
		 send_seg(c, &a, &p, &o), V_PASS);
	a = ack_of(&s3, &sa3);
	CHECK_EQ("the ACK of a new-key cookie: XDP_PASS", send_seg(c, &a, &p, &o), V_PASS);
	CHECK_EQ("cookies_valid", delta(c, XRL_G_COOKIES_VALID), 2);

	k.key[old].k[0] ^= 0x5a5a5a5a5a5a5a5aULL;
	k.key[old].k[1] += 1;
	if (cookie_write(c, &k))
		return;
	a = ack_of(&s2, &sa2);
	CHECK_EQ("the old key overwritten: its cookie's ACK is dropped", send_seg(c, &a, &p, &o),
		 V_DROP);
	CHECK_EQ("cookies_bad", delta(c, XRL_G_COOKIES_BAD), 1);
	CHECK_EQ("buckets: the two verified sources", xrl_bucket_count(c->h), 2);
}

/* (d) IPv4 options, a first fragment, IPv6 extension headers: answered. */
static void case_own_ip_layers(struct ctx *c)
{
	struct seg s = full4;
	struct synack sa;

	if (own_on(c, CKO_ALL))
		return;
	s.ip_opt_words = 1;
	syn_only(c, s, &sa);
	s = full4;
	s.src = "2001:db8:1::61";
	s.ext6 = 8;
	syn_only(c, s, &sa);
	CHECK_EQ("cookies_sent", delta(c, XRL_G_COOKIES_SENT), 2);
	CHECK_EQ("no bucket for either SYN", xrl_bucket_count(c->h), 0);
	CHECK_EQ("no bucket_new", delta(c, XRL_G_BUCKET_NEW), 0);
	CHECK_EQ("cookie_fallback", delta(c, XRL_G_COOKIE_FALLBACK), 0);
	xrl_read_stats(c->h, &c->st0);
	ip_layers(c);
}

static void case_own_known(struct ctx *c)
{
	if (!own_on(c, CKO_ALL))
		fallback_known(c, 18082);
}

static void case_own_est(struct ctx *c)
{
	if (!own_on(c, CKO_ALL))
		case_established(c, 18083);
}

static const struct {
	const char *name;
	uint16_t port;
	void (*fn)(struct ctx *c);
} cases[] = {
	{ "syn_cookies auto: idle as off, engaged as on, let go", 80, case_auto },
	{ "v4 SYN-ACK, valid ACK charges the bucket, forged and replayed ACKs dropped", 80, case_v4 },
	{ "v4 without options, with MSS and timestamp only", 80, case_v4_no_options },
	{ "v6 SYN-ACK and ACK", 80, case_v6 },
	{ "a verified connection vouches its /24", 80, case_vouch_cookie },
	{ "aggregate cap: open share for new sources, reserved share for vouched, expiry", 80,
	  case_aggregate },
#ifdef XRL_MAP_VOUCH_OP
	{ "vouch origins: an operator's survives an identity write and 70,000 /48s", 80,
	  case_vouch_origin },
	{ "vouch origins: the program honours both spaces, expiry in each", 80, case_vouch_spaces },
	{ "vouch origins: the operator's space is bounded (ENOSPC)", 80, case_vouch_op_full },
#endif
	{ "VLAN tags (802.1Q v4, 802.1ad v6)", 80, case_vlan },
	{ "a spoofed SYN flood creates no bucket", 80, case_flood },
	{ "IPv4 options, a first fragment, IPv6 extension headers: answered, no bucket", 80,
	  case_fallback },
	{ "a SYN of a 4-tuple the host has goes to the kernel, no bucket", 18081,
	  case_fallback_known },
	{ "ACKs of established flows pass untouched", 18080, case_est },
	{ "own: v4 SYN-ACK and cookie recomputed, valid ACK, forged ACKs dropped", 80,
	  case_own_v4 },
	{ "own: SACK and window scale without timestamps, MSS index, namespace options", 80,
	  case_own_options },
	{ "own: ECN setup", 80, case_own_ecn },
	{ "own: key id, an old key's cookie checks after a switch", 80, case_own_keyid },
	{ "own: IPv4 options, a first fragment, IPv6 extension headers: answered, no bucket", 80,
	  case_own_ip_layers },
	{ "own: a SYN of a 4-tuple the host has goes to the kernel, no bucket", 18082,
	  case_own_known },
	{ "own: ACKs of established flows pass untouched", 18083, case_own_est },
};

/* ---- costs (test_cookie --bench) ------------------------------------ */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * n runs of frame f, one run per call, their ns into d: a repeated run
 * would see its own SYN-ACK (XDP rewrites the frame in place), and live
 * frames would hand the passed ones to the stack. The last verdict into
 * *verdict. Returns 0 or -errno.
 */
static int runs(struct xrl_handle *h, const struct pb *f, uint32_t *d, int n, int *verdict)
{
	uint8_t data[PB_MAX], out[PB_MAX];
	LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = data, .data_size_in = (__u32)f->len,
		    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);

	for (int i = 0; i < n; i++) {
		memcpy(data, f->buf, f->len);
		t.data_size_out = sizeof(out);
		if (bpf_prog_test_run_opts(xrl_prog_fd(h), &t))
			return -errno;
		d[i] = t.duration;
	}
	*verdict = (int)t.retval;
	return 0;
}

static double median(uint32_t *d, int n)
{
	qsort(d, (size_t)n, sizeof(*d), cmp_u32);
	return d[n / 2];
}

/*
 * Each row is measured in BENCH_ROUNDS rounds that alternate the paths
 * (own flipped in xrl_cookie between them) and the floor, so that a busy
 * neighbour or a frequency change lands on all three columns alike.
 */
#define BENCH_ROUNDS 5
#define BENCH_PER    10000
#define BENCH_RUNS   (BENCH_ROUNDS * BENCH_PER)
#define BENCH_WIDE 8080   /* the bench's second rule: wide, every ACK admitted */

/* One row of the table: the frame on each path and the counter each run
 * of it should move (-1: none). */
struct bench_row {
	const char *what;
	struct seg k, o;             /* kernel path, own path */
	int g;
	int want;                    /* the verdict wanted */
};

struct bench_cell {
	double ns;                   /* median */
	int verdict;                 /* the last run's */
	uint64_t moved;              /* the counter's change over the runs */
	uint32_t d[BENCH_RUNS];
	int n;
};

/* One round of a cell: BENCH_PER runs of s on the path own, into x. */
static int bench_round(struct ctx *c, const struct seg *s, int g, bool own, struct bench_cell *x)
{
	struct xrl_cookie_cfg k = c->ck;
	uint64_t before;
	struct pb p;
	int rc;

	if (c->ck.own != own) {
		k.own = own;
		if ((rc = cookie_write(c, &k)))
			return rc;
	}
	if ((rc = build_seg(s, &p)))
		return rc;
	before = g >= 0 ? delta(c, g) : 0;
	if ((rc = runs(c->h, &p, x->d + x->n, BENCH_PER, &x->verdict)))
		return rc;
	x->n += BENCH_PER;
	x->moved += g >= 0 ? delta(c, g) - before : 0;
	return 0;
}

static const char *vname(int v)
{
	return v == V_DROP ? "DROP" : v == V_PASS ? "PASS" : v == V_TX ? "TX" : "?";
}

/* "  812.3 +640.1 TX", with a ! where the verdict or the counter is off. */
static void bench_print_cell(const struct bench_row *r, const struct bench_cell *x, double floor)
{
	bool ok = x->verdict == r->want && (r->g < 0 || x->moved == BENCH_RUNS);

	printf("  %7.1f %+7.1f %-4s%s   ", x->ns, x->ns - floor, vname(x->verdict), ok ? " " : "!");
}

/* The bench's policy: setup's web rule on port 80 (burst 1: a source's
 * second verified connection is refused) and a wide one on BENCH_WIDE. */
static int bench_policy(struct ctx *c)
{
	struct xrl_policy *pol = calloc(1, sizeof(*pol));
	char err[XRL_ERRLEN] = "";
	int rc;

	if (!pol)
		return -ENOMEM;
	syn_rule(pol, "web", 80, 10, 60ULL * XRL_NSEC_PER_SEC, 1)->syn_cookies = XRL_COOKIES_ON;
	syn_rule(pol, "wide", BENCH_WIDE, 1000000, XRL_NSEC_PER_SEC, 1000000)->syn_cookies =
		XRL_COOKIES_ON;
	rc = xrl_apply_policy(c->h, pol, err, sizeof(err));
	free(pol);
	if (rc)
		fprintf(stderr, "test_cookie: couldn't apply the bench policy: %s\n", err);
	return rc;
}

/*
 * The frames of the ACK rows on the path c is on now: a handshake each on
 * port 80 and BENCH_WIDE makes the cookies; s's source is then verified
 * once on port 80, so its next valid ACK is refused.
 */
static void bench_acks(struct ctx *c, struct bench_row *rows, int n, bool own)
{
	struct seg s = full4, w = full4;
	struct synack sa, sw;
	struct out o;

	w.dport = BENCH_WIDE;
	if (!own) {
		struct seg p = { .src = "192.0.2.99", .sport = 1, .dport = BENCH_WIDE,
				 .flags = PB_TCP_SYN, .mss = true };
		struct pb pp;

		send_seg(c, &p, &pp, &o); /* the primer of BENCH_WIDE */
	}
	handshake(c, s, &sa, &o);
	handshake(c, w, &sw, &o);
	for (int i = 0; i < n; i++) {
		struct seg *x = own ? &rows[i].o : &rows[i].k;

		if (!(rows[i].k.flags & PB_TCP_ACK))
			continue;
		if (x->dport == BENCH_WIDE)
			*x = ack_of(&w, &sw);
		else if (x->src && !strcmp(x->src, "198.51.100.99")) {
			*x = ack_of(&s, &sa);
			x->src = "198.51.100.99"; /* another source's cookie */
		} else
			*x = ack_of(&s, &sa);
	}
}

/* The CPU's name, for the table's header. */
static void cpu_name(char *out, size_t n)
{
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "r");

	snprintf(out, n, "?");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *v = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && v) {
			snprintf(out, n, "%s", v + 2);
			out[strcspn(out, "\n")] = '\0';
			break;
		}
	}
	fclose(f);
}

/*
 * The SYN-cookie costs on both paths, side by side, above the floor (a
 * SYN no rule names: the parse and the rule walk). One program: the
 * kernel path's column is measured first (own = 0, as loaded), then own is
 * set in xrl_cookie and the same rows are measured again.
 */
static int bench(void)
{
	struct ctx c = { 0 };
	struct seg fseg = full4;
	struct bench_row rows[] = {
		{ "SYN -> cookie SYN-ACK, all options", full4, full4, XRL_G_COOKIES_SENT, V_TX },
		{ "SYN -> cookie SYN-ACK, MSS only", full4, full4, XRL_G_COOKIES_SENT, V_TX },
		{ "ACK, cookie invalid (lookup + check)",
		  { .src = "198.51.100.99", .flags = PB_TCP_ACK },
		  { .src = "198.51.100.99", .flags = PB_TCP_ACK }, XRL_G_COOKIES_BAD, V_DROP },
		{ "ACK, cookie valid, bucket admits",
		  { .dport = BENCH_WIDE, .flags = PB_TCP_ACK },
		  { .dport = BENCH_WIDE, .flags = PB_TCP_ACK }, XRL_G_COOKIES_VALID, V_PASS },
		{ "ACK, cookie valid, bucket refuses", { .flags = PB_TCP_ACK },
		  { .flags = PB_TCP_ACK }, XRL_G_COOKIES_VALID, V_DROP },
	};
	enum { N = sizeof(rows) / sizeof(rows[0]) };
	struct bench_cell *kc = calloc(N, sizeof(*kc)), *oc = calloc(N, sizeof(*oc));
	struct bench_cell *fc = calloc(1, sizeof(*fc));
	char cpu[128];
	int rc = 0;
	struct pb p;

	for (int i = 0; i < 2; i++)
		rows[i].k.flags = rows[i].o.flags = PB_TCP_SYN;
	rows[1].k.sack = rows[1].k.ts = rows[1].k.ws = false;
	rows[1].o = rows[1].k;
	fseg.dport = 81;
	cpu_name(cpu, sizeof(cpu));
	fails = 0;
	if (!kc || !oc || !fc || setup(&c, 80) || bench_policy(&c) || build_seg(&fseg, &p)) {
		rc = 1;
		goto out;
	}
	/* the ACK rows' cookies, made on each path */
	prime(&c, full4.src, 0);
	bench_acks(&c, rows, N, false);
	if (own_on(&c, CKO_ALL)) {
		rc = 1;
		goto out;
	}
	bench_acks(&c, rows, N, true);
	for (int r = 0; r < BENCH_ROUNDS && !rc; r++) {
		rc = bench_round(&c, &fseg, XRL_G_NO_RULE, false, fc);
		for (int i = 0; i < N && !rc; i++) {
			rc = bench_round(&c, &rows[i].k, rows[i].g, false, &kc[i]);
			if (!rc)
				rc = bench_round(&c, &rows[i].o, rows[i].g, true, &oc[i]);
		}
	}
	if (rc) {
		fprintf(stderr, "test_cookie: the bench's runs: %s\n", strerror(-rc));
		goto out;
	}
	fc->ns = median(fc->d, fc->n);
	for (int i = 0; i < N; i++) {
		kc[i].ns = median(kc[i].d, kc[i].n);
		oc[i].ns = median(oc[i].d, oc[i].n);
	}

	printf("costs, BPF_PROG_TEST_RUN, median ns of %d single runs each (%d rounds "
	       "alternating the paths), %s\n",
	       BENCH_RUNS, BENCH_ROUNDS, cpu);
	printf("  %-40s %7.1f ns, verdict %s\n", "SYN to a port no rule names (the floor)",
	       fc->ns, vname(fc->verdict));
	printf("  %-40s  %-24s%-24s\n", "ns, ns above the floor, verdict",
	       "kernel cookie (own=0)", "xrl cookie (own=1)");
	for (int i = 0; i < N; i++) {
		printf("  %-40s", rows[i].what);
		bench_print_cell(&rows[i], &kc[i], fc->ns);
		bench_print_cell(&rows[i], &oc[i], fc->ns);
		putchar('\n');
		for (int w = 0; w < 2; w++) {
			const struct bench_cell *x = w ? &oc[i] : &kc[i];

			if (x->verdict == rows[i].want && x->moved == BENCH_RUNS)
				continue;
			printf("    ! %s path: verdict %s (want %s), counter +%llu for %d runs\n",
			       w ? "own" : "kernel", vname(x->verdict), vname(rows[i].want),
			       (unsigned long long)x->moved, BENCH_RUNS);
			rc = 1;
		}
	}
out:
	xrl_close(c.h);
	free(kc);
	free(oc);
	free(fc);
	return rc || fails ? 1 : 0;
}

/*
 * test_cookie --bench-vouch: what an admit under an aggregate cap costs by
 * where its source's vouch is (issue 22: the operators' space is a second
 * lookup, made only when the automatic one has no live entry). Single runs
 * (runs()), BENCH_ROUNDS rounds of BENCH_PER that alternate the rows;
 * medians. Uses only what every version has (xrl_vouch_add, the automatic
 * map written directly), so the same file measures the code before too.
 */
static int bench_vouch(void)
{
	static const struct {
		const char *what, *src;
		uint16_t dport;
	} rows[] = {
		{ "SYN admitted, no aggregate cap (no vouch lookup)", "10.9.0.1", 81 },
		{ "SYN admitted under a cap, source in the automatic map", "203.0.113.5", 80 },
		{ "SYN admitted under a cap, source vouched by an operator", "198.51.102.5", 80 },
		{ "SYN admitted under a cap, source not vouched", "10.9.0.2", 80 },
	};
	enum { N = sizeof(rows) / sizeof(rows[0]) };
	struct xrl_policy *pol = calloc(1, sizeof(*pol));
	struct bench_cell *x = calloc(N, sizeof(*x));
	struct xrl_vouch_key k = { .family = XRL_AF_INET, .addr = { htonl(0xcb007100) } };
	struct xrl_vouch_val v = { .origin = XRL_ORIGIN_COOKIE };
	char err[XRL_ERRLEN] = "";
	struct xrl_rule_spec *s;
	struct ctx c = { 0 };
	struct xrl_prefix pf;
	struct pb p[N];
	int rc = 0;

	if (!pol || !x || setup(&c, 80)) {
		rc = 1;
		goto out;
	}
	s = syn_rule(pol, "agg", 80, 1000000, XRL_NSEC_PER_SEC, 1000000);
	s->agg_rate = s->rate;
	s->agg_burst = 1000000;
	s->agg_vouched_pm = 500;
	syn_rule(pol, "plain", 81, 1000000, XRL_NSEC_PER_SEC, 1000000);
	rc = xrl_apply_policy(c.h, pol, err, sizeof(err));
	v.expires_ns = xrl_now_ns() + 3600ULL * XRL_NSEC_PER_SEC;
	rc = rc ? rc : bpf_map_update_elem(xrl_map_fd(c.h, XRL_MAP_VOUCH), &k, &v, BPF_ANY);
	rc = rc ? rc : xrl_prefix_parse("198.51.102.0/24", &pf, NULL, 0);
	rc = rc ? rc : xrl_vouch_add(c.h, &pf, 0);
	for (int i = 0; i < N && !rc; i++) {
		struct seg sg = { .src = rows[i].src, .sport = 1000, .dport = rows[i].dport,
				  .flags = PB_TCP_SYN, .mss = true };

		rc = build_seg(&sg, &p[i]);
	}
	for (int r = 0; r < BENCH_ROUNDS && !rc; r++)
		for (int i = 0; i < N && !rc; i++) {
			rc = runs(c.h, &p[i], x[i].d + x[i].n, BENCH_PER, &x[i].verdict);
			x[i].n += BENCH_PER;
		}
	if (rc) {
		fprintf(stderr, "test_cookie: the vouch bench: %d %s\n", rc, err);
		goto out;
	}
	printf("vouch lookups, BPF_PROG_TEST_RUN, median ns of %d single runs each\n",
	       BENCH_RUNS);
	for (int i = 0; i < N; i++) {
		x[i].ns = median(x[i].d, x[i].n);
		printf("  %-58s %7.1f %+7.1f %s\n", rows[i].what, x[i].ns, x[i].ns - x[0].ns,
		       vname(x[i].verdict));
	}
out:
	free(pol);
	free(x);
	xrl_close(c.h);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	int passed = 0, failed = 0;
	cpu_set_t set;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("test_cookie: needs root (BPF_PROG_TEST_RUN of an XDP program)\n");
		return 77;
	}
	CPU_ZERO(&set);
	CPU_SET(sched_getcpu(), &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fprintf(stderr, "warning: couldn't pin to one CPU: %s\n", strerror(errno));
	if (only && !strcmp(only, "--bench"))
		return bench();
	if (only && !strcmp(only, "--bench-vouch"))
		return bench_vouch();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ctx c = { 0 };

		if (only && !strstr(cases[i].name, only))
			continue;
		printf("== %s\n", cases[i].name);
		fails = 0;
		if (!setup(&c, cases[i].port))
			cases[i].fn(&c);
		xrl_close(c.h);
		printf("%s %s\n", fails ? "FAILED" : "PASSED", cases[i].name);
		if (fails)
			failed++;
		else
			passed++;
		fails_total += fails;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
