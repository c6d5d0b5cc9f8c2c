// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * cases_framing.c - test_bpf's cases about framing (issue 11, finding 3):
 * deep tag stacks and header chains, lengths that tell the truth or not.
 */
#include "cases.h"

static const struct tcase cases[] = {
/*
 * ---- framing (issue 11, finding 3) ----
 * What the kernel delivers, it delivers whatever the framing: every case
 * here is a frame Linux takes (or drops: said per step) and the verdict and
 * counter xrl must give it. docs/design.md, "What the parser walks", says
 * which kernel behaviour each bound follows.
 */
{
	.name = "finding 3: an IPv6 SYN behind 7 destination-options headers meets a 1/min rule",
	.rules = { { .name = "syn", .proto = TCP, .tcp_class = CLS_SYN, .rate = PER_MIN(1),
		     .burst = 1 } },
	.s = {
		{ .p = { .src = SRC6_A, .ext = { D4, X_DST, X_DST, X_DST } }, .v = PASS,
		  .r = { RV_P } },
		{ .what = "49 more: refused, as without the headers",
		  .p = { .src = SRC6_A, .ext = { D4, X_DST, X_DST, X_DST } }, .n = 49, .v = DROP,
		  .r = { RV_D } },
	},
	.g = { G(BUCKET_NEW) = 1, G(EVENTS_SENT) = 1, G(REFUSED_CACHED) = 48 },
},
{
	/*
	 * Found in review: P1 = IPv6 | Frag(offset 0, M) | DSTOPTS (next:
	 * DSTOPTS), the frame ending there, IP length consistent. Linux lets it
	 * through (ipv6frag_thdr_truncated is false when the chain cannot be
	 * walked) and reassembles it with P2 = Frag(offset 8) | DSTOPTS | TCP
	 * SYN, a later fragment no rule can read: a SYN delivered around every
	 * rule. P1 was passed as malformed; it is dropped as a tiny fragment,
	 * unless its source is allowlisted, and the denylist still applies.
	 */
	.name = "review: an IPv6 first fragment whose header chain is cut is dropped as tiny",
	.rules = { { .name = "syn", .proto = TCP, .tcp_class = CLS_SYN, .rate = PER_MIN(1),
		     .burst = 1 } },
	.allow = { "2001:db8:a11::7/128" },
	.s = {
		{ .what = "cut after the first destination options",
		  .p = { .src = SRC6_A, .ext = { X_FRAG, X_DST, X_DST }, .mf = true,
			 .trunc_layer = PB_L_EXT, .trunc_at = 16, .len_fix = true },
		  .n = 3, .v = DROP, .g = { G(TINY_FRAGMENT) = 1 } },
		{ .what = "cut inside the second destination options",
		  .p = { .src = SRC6_A, .ext = { X_FRAG, X_DST, X_DST }, .mf = true,
			 .trunc_layer = PB_L_EXT, .trunc_at = 20, .len_fix = true },
		  .v = DROP, .g = { G(TINY_FRAGMENT) = 1 } },
		{ .what = "not a fragment: the kernel drops the cut chain, passed",
		  .p = { .src = SRC6_A, .ext = { X_DST, X_DST }, .trunc_layer = PB_L_EXT,
			 .trunc_at = 8, .len_fix = true },
		  .v = PASS, .g = { G(MALFORMED) = 1 } },
		{ .what = "from an allowlisted source: passed",
		  .p = { .src = "2001:db8:a11::7", .ext = { X_FRAG, X_DST, X_DST }, .mf = true,
			 .trunc_layer = PB_L_EXT, .trunc_at = 16, .len_fix = true },
		  .v = PASS, .g = { G(ALLOWLISTED) = 1 } },
	},
},
{
	.name = "finding 3: IPv4 SYNs inside 3 priority (VID 0) tags meet a 1/min rule",
	.rules = { { .name = "syn", .proto = TCP, .tcp_class = CLS_SYN, .rate = PER_MIN(1),
		     .burst = 1 } },
	.s = {
		{ .p = { .src = SRC_A, .vlan = { Q, Q, Q }, .vid0 = true }, .v = PASS,
		  .r = { RV_P } },
		{ .p = { .src = SRC_A, .vlan = { Q, Q, Q }, .vid0 = true }, .n = 19, .v = DROP,
		  .r = { RV_D } },
	},
	.g = { G(BUCKET_NEW) = 1, G(EVENTS_SENT) = 1, G(REFUSED_CACHED) = 18 },
},
{
	.name = "VLAN stacks: 8 tags walked; deeper is dropped while a drop rule exists",
	.rules = { RULE_SYN(100) },
	.s = {
		{ .what = "QinQ (802.1ad outside 802.1Q)",
		  .p = { .src = SRC_A, .vlan = { AD, Q } }, .v = PASS, .r = { RV_P } },
		{ .what = "802.1Q VID 0 repeated",
		  .p = { .src = SRC_A, .vlan = { Q, Q }, .vid0 = true }, .v = PASS, .r = { RV_P } },
		{ .p = { .src = SRC6_A, .vlan = { AD, Q, Q, Q, Q, Q, Q, Q }, .vid0 = true },
		  .v = PASS, .r = { RV_P } },
		{ .p = { .src = SRC_A, .vlan = { Q, Q, Q, Q, Q, Q, Q, Q } }, .v = PASS,
		  .r = { RV_P } },
		{ .what = "9 tags: the kernel unwraps them, xrl does not",
		  .p = { .src = SRC_A, .vlan = { Q, Q, Q, Q, Q, Q, Q, Q, Q }, .vid0 = true },
		  .n = 2, .v = DROP, .g = { G(UNWALKABLE_DROPPED) = 1 } },
		{ .what = "9 tags hide even ARP from xrl",
		  .p = { .arp = true, .vlan = { Q, Q, Q, Q, Q, Q, Q, Q, Q } }, .v = DROP,
		  .g = { G(UNWALKABLE_DROPPED) = 1 } },
		{ .p = { .arp = true, .vlan = { Q, Q, Q }, .vid0 = true }, .v = PASS,
		  .g = { G(NON_IP) = 1 } },
		{ .what = "TPID 0x9100 is no VLAN tag to Linux (eth_type_vlan)",
		  .p = { .src = SRC_A, .vlan = { 0x9100 } }, .v = PASS, .g = { G(NON_IP) = 1 } },
		{ .what = "a truncated tag", .p = { .src = SRC_A, .vlan = { Q, Q, Q, Q },
		  .trunc_layer = PB_L_VLAN2, .trunc_at = 3 }, .v = PASS, .g = { G(MALFORMED) = 1 } },
	},
	.g = { G(BUCKET_NEW) = 2 },
},
{
	.name = "VLAN stack too deep, only a shadow rule: passed, counted unwalkable_passed",
	.rules = { { .name = "shadow", .proto = TCP, .tcp_class = CLS_SYN, .action = SHADOW,
		     .burst = 1 } },
	.s = {
		{ .p = { .src = SRC_A, .vlan = { Q, Q, Q, Q, Q, Q, Q, Q, Q, Q } }, .v = PASS,
		  .g = { G(UNWALKABLE_PASSED) = 1 } },
	},
},
{
	.name = "IPv6 chains: 16 headers walked; a 17th is dropped when a drop rule covers the dst",
	.rules = { { .name = "login6", .proto = TCP, .tcp_class = CLS_SYN, .dst = LOGIN6 "/128",
		     .ports = { PORT(443) }, .burst = 100 } },
	.allow = { "2001:db8:aaaa::/48" },
	.deny = { { .prefix = "2001:db8:bad::/48" } },
	.s = {
		{ .p = { .src = SRC6_A, .dst = LOGIN6, .dport = 443, .ext = { D16 } }, .v = PASS,
		  .r = { RV_P } },
		{ .p = { .src = SRC6_A, .dst = LOGIN6, .dport = 443, .ext = { X_HOP16, D8, D4, X_RT,
			 X_FRAG, X_AH } }, .v = PASS, .r = { RV_P } },
		{ .p = { .src = SRC6_A, .dst = LOGIN6, .dport = 443, .ext = { D16, X_DST } },
		  .n = 2, .v = DROP, .g = { G(UNWALKABLE_DROPPED) = 1 } },
		{ .what = "no rule covers 2001:db8:ffff::1",
		  .p = { .src = SRC6_A, .dport = 443, .ext = { D16, X_DST } }, .v = PASS,
		  .g = { G(UNWALKABLE_PASSED) = 1 } },
		{ .what = "the lists apply to an unwalkable packet",
		  .p = { .src = "2001:db8:bad::1", .dport = 443, .ext = { D16, X_DST } }, .v = DROP,
		  .g = { G(DENYLISTED) = 1 } },
		{ .p = { .src = "2001:db8:aaaa::1", .dst = LOGIN6, .dport = 443,
			 .ext = { D16, X_DST } }, .v = PASS, .g = { G(ALLOWLISTED) = 1 } },
		{ .what = "hop-by-hop not first: Linux drops it",
		  .p = { .src = SRC6_A, .dst = LOGIN6, .dport = 443, .ext = { X_DST, X_HOP } },
		  .v = PASS, .g = { G(MALFORMED) = 1 } },
		{ .what = "AH, then TCP", .p = { .src = SRC6_A, .dst = LOGIN6, .dport = 443,
		  .ext = { X_AH } }, .v = PASS, .r = { RV_P } },
		{ .what = "ESP: no ports to see (xfrm decrypts it only with an SA)",
		  .p = { .src = SRC6_A, .dst = LOGIN6, .l4 = L4_RAW, .raw_proto = 50,
			 .payload = 40 }, .v = PASS, .g = { G(NO_RULE) = 1 } },
		{ .what = "payload length 0 behind hop-by-hop (jumbo): the frame is the packet",
		  .p = { .src = SRC6_A, .dst = LOGIN6, .dport = 443, .ext = { X_HOP },
			 .v6_plen = -1 }, .v = PASS, .r = { RV_P } },
		{ .what = "payload length 0 without hop-by-hop: trimmed to 40 bytes",
		  .p = { .src = SRC6_A, .dst = LOGIN6, .dport = 443, .v6_plen = -1 }, .v = PASS,
		  .g = { G(MALFORMED) = 1 } },
		{ .what = "payload length beyond the frame: ip6_rcv_core drops it",
		  .p = { .src = SRC6_A, .dst = LOGIN6, .dport = 443, .v6_plen = 100 }, .v = PASS,
		  .g = { G(MALFORMED) = 1 } },
		{ .what = "payload length cutting the TCP header",
		  .p = { .src = SRC6_A, .dst = LOGIN6, .dport = 443, .v6_plen = 12 }, .v = PASS,
		  .g = { G(MALFORMED) = 1 } },
		{ .what = "payload length shorter than the frame (padding): trimmed",
		  .p = { .src = SRC6_A, .dst = LOGIN6, .dport = 443, .payload = 6, .v6_plen = 20 },
		  .v = PASS, .r = { RV_P } },
	},
	.g = { G(BUCKET_NEW) = 1 },
},
{
	.name = "IPv4 lengths: tot_len trims the frame; IHL and data offset inside it",
	.rules = { RULE_SYN(100) },
	.s = {
		{ .what = "Ethernet padding behind tot_len",
		  .p = { .src = SRC_A, .payload = 6, .tot_len = 40 }, .v = PASS, .r = { RV_P } },
		{ .what = "IHL 6 (options)", .p = { .src = SRC_A, .opt_words = 1 }, .v = PASS,
		  .r = { RV_P } },
		{ .what = "tot_len beyond the frame: ip_rcv_core drops it",
		  .p = { .src = SRC_A, .tot_len = 41 }, .v = PASS, .g = { G(MALFORMED) = 1 } },
		{ .what = "tot_len cutting the TCP header",
		  .p = { .src = SRC_A, .tot_len = 39 }, .v = PASS, .g = { G(MALFORMED) = 1 } },
		{ .what = "doff 6 beyond tot_len, within the frame",
		  .p = { .src = SRC_A, .doff = 6, .payload = 4, .tot_len = 40 }, .v = PASS,
		  .g = { G(MALFORMED) = 1 } },
		{ .what = "doff 15 exactly filling tot_len",
		  .p = { .src = SRC_A, .tcp_opt_words = 10 }, .v = PASS, .r = { RV_P } },
		{ .what = "ESP: no ports", .p = { .src = SRC_A, .l4 = L4_RAW, .raw_proto = 50,
		  .payload = 40 }, .v = PASS, .g = { G(NO_RULE) = 1 } },
	},
	.g = { G(BUCKET_NEW) = 1 },
},
{
	.name = "fragments with honest lengths: tiny first fragments dropped, padding not read",
	.rules = { RULE_SYN(100) },
	.allow = { "203.0.113.0/24" },
	.deny = { { .prefix = "2001:db8:bad::/48" } },
	.s = {
		{ .what = "IPv4 first fragment, 8 bytes of TCP",
		  .p = { .src = SRC_A, .mf = true, .trunc_layer = PB_L_L4, .trunc_at = 8,
			 .len_fix = true }, .v = DROP, .g = { G(TINY_FRAGMENT) = 1 } },
		{ .what = "the same, padded with an ACK header the kernel never reads",
		  .p = { .src = SRC_A, .mf = true, .flags = ACK, .tot_len = 28 }, .v = DROP,
		  .g = { G(TINY_FRAGMENT) = 1 } },
		{ .what = "IPv6 first fragment, 12 bytes of TCP",
		  .p = { .src = SRC6_A, .ext = { X_FRAG }, .mf = true, .trunc_layer = PB_L_L4,
			 .trunc_at = 12, .len_fix = true }, .v = DROP, .g = { G(TINY_FRAGMENT) = 1 } },
		{ .what = "IPv6 first fragment behind 3 headers, whole TCP header",
		  .p = { .src = SRC6_A, .ext = { X_HOP, X_DST, X_FRAG }, .mf = true, .payload = 64 },
		  .v = PASS, .r = { RV_P } },
		{ .what = "a later fragment from a denied source",
		  .p = { .src = "2001:db8:bad::7", .ext = { X_DST, X_FRAG }, .frag_off = 10,
			 .l4 = L4_RAW, .raw_proto = PB_IPPROTO_TCP, .payload = 24 }, .v = DROP,
		  .g = { G(DENYLISTED) = 1 } },
		{ .what = "a later IPv4 fragment with tot_len beyond the frame: malformed",
		  .p = { .src = SRC_A, .frag_off = 3, .l4 = L4_RAW, .raw_proto = PB_IPPROTO_TCP,
			 .payload = 24, .tot_len = 100 }, .v = PASS, .g = { G(MALFORMED) = 1 } },
	},
	.g = { G(BUCKET_NEW) = 1 },
},
};

const struct case_set cases_framing = CASE_SET(cases);
