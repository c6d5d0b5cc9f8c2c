/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * cases.h - the vocabulary of test_bpf's case table: a packet spec, a step,
 * a rule, a case. test_bpf.c is the runner; the tables live one theme a file
 * (cases_rules.c, cases_lists.c, cases_parse.c, cases_framing.c,
 * cases_events.c) and are run in that order, numbered on from one file to
 * the next. What a case checks is described at the top of test_bpf.c.
 */
#ifndef XRL_TEST_CASES_H
#define XRL_TEST_CASES_H

#include <stdbool.h>
#include <stdint.h>

#include "xrl.h"
#include "pktbuild.h"

#define XDP_DROP_V 1
#define XDP_PASS_V 2

#define MAX_T_RULES 6
#define MAX_T_STEPS 24
#define MAX_T_LIST  4
#define MAX_EVENTS  16
#define MAX_T_TAGS  12
#define MAX_T_EXT   20

#define NS_PER_MIN (60ULL * XRL_NSEC_PER_SEC)
#define PER_MIN(n) { .tokens = (n), .period_ns = NS_PER_MIN }

/* Per-rule verdict a step's packets are counted under; 0 = not counted. */
enum {
	RV_NONE = 0,
	RV_P = 1 + XRL_V_PASSED,
	RV_D = 1 + XRL_V_DROPPED,
	RV_S = 1 + XRL_V_SHADOW_DROPPED,
};

/* IPv6 extension headers a packet spec can carry, outermost first. */
enum ext {
	X_END = 0,
	X_HOP,        /* hop-by-hop options, 8 bytes */
	X_HOP16,      /* hop-by-hop options, 16 bytes */
	X_DST,        /* destination options, 8 bytes */
	X_RT,         /* routing, 8 bytes */
	X_AH,         /* authentication header, 12 bytes */
	X_FRAG,       /* fragment header: offset and M from pspec.frag_off/mf */
	X_NONE,       /* "no next header" (59): ends the chain, no L4 */
};

enum l4kind {
	L4_TCP = 0,
	L4_UDP,
	L4_RAW,       /* protocol number raw_proto, no header: payload only */
};

/* A packet, declaratively. Zero fields take the common default. */
struct pspec {
	const char *src;          /* family by syntax; NULL: non-IP frame */
	const char *dst;          /* NULL: 192.0.2.1 or 2001:db8:ffff::1 */
	bool     arp;             /* with src NULL: ARP; else EtherType 0x88cc */
	uint16_t vlan[MAX_T_TAGS];/* TPIDs, outermost first; 0 ends */
	bool     vid0;            /* every tag VLAN id 0 (a priority tag) */
	uint8_t  l4;              /* enum l4kind */
	uint8_t  raw_proto;       /* L4_RAW: 0 = ICMP / ICMPv6 */
	uint8_t  flags;           /* TCP flags; 0: SYN */
	uint16_t dport;           /* 0: 80 */
	uint16_t sport;           /* 0: 40000 */
	/* IPv4 */
	uint8_t  ihl;             /* 0: 5 + opt_words */
	uint8_t  opt_words;
	uint8_t  version;         /* 0: 4 */
	uint16_t tot_len;         /* 0: computed */
	uint16_t frag_off;        /* 8-byte units; IPv4 header or X_FRAG */
	bool     mf;
	bool     df;
	/* IPv6 */
	uint8_t  ext[MAX_T_EXT];  /* enum ext; X_END ends */
	int32_t  v6_plen;         /* 0: computed; > 0: written as is; -1: 0 */
	/* TCP */
	uint8_t  doff;            /* 0: 5 + tcp_opt_words */
	uint8_t  tcp_opt_words;
	uint32_t ack;             /* acknowledgment number */
	uint16_t payload;         /* bytes after the L4 header */
	/* cut the finished frame to the offset of a layer plus trunc_at */
	uint8_t  trunc_layer;     /* enum pb_layer; 0: keep whole */
	int16_t  trunc_at;
	bool     len_fix;         /* then make the IP length say the cut frame */
};

struct step {
	const char *what;         /* label; the packet is described anyway */
	unsigned int sleep_ms;    /* wait this long before sending */
	struct pspec p;
	unsigned int n;           /* copies sent; 0: 1 */
	int v;                    /* verdict each copy must get */
	uint8_t r[MAX_T_RULES];   /* per rule slot: RV_* each copy is counted as */
	uint8_t g[XRL_G_MAX];     /* global counters each copy adds */
};

struct rule_def {
	const char *name;
	uint8_t  proto;           /* enum xrl_proto */
	uint8_t  tcp_class;       /* enum xrl_tcp_class */
	uint8_t  action;          /* enum xrl_action */
	struct xrl_port_range ports[XRL_MAX_PORT_RANGES]; /* {0,0} ends */
	const char *dst;          /* destination prefix or NULL */
	uint8_t  key_plen4;       /* 0: library default (32) */
	uint8_t  key_plen6;       /* 0: library default (64) */
	struct xrl_rate rate;     /* 0: 10/min */
	uint32_t burst;
};

struct deny_def {
	const char *prefix;
	uint64_t ttl_ns;          /* 0: never expires */
	bool expired;             /* overwrite expires_ns with 1: long past */
};

struct run;

struct tcase {
	const char *name;
	struct rule_def rules[MAX_T_RULES];  /* name NULL ends; none: no policy */
	bool empty_policy;                   /* apply a policy with no rules */
	const char *policy_allow[MAX_T_LIST];/* the policy's own allowlist */
	const char *allow[MAX_T_LIST];       /* xrl_allow_add after the policy */
	struct deny_def deny[MAX_T_LIST];    /* xrl_deny_add after the policy */
	struct step s[MAX_T_STEPS];          /* .v == 0 ends */
	uint64_t g[XRL_G_MAX];               /* global deltas beyond the steps' */
	uint32_t loose;                      /* bit i: don't compare counter i */
	int (*check)(struct run *r);         /* extra checks after the steps */
};

/* One theme's table. */
struct case_set {
	const struct tcase *c;
	int n;
};

extern const struct case_set cases_rules, cases_lists, cases_parse, cases_framing, cases_events;

/* Extra checks a case names (test_bpf.c); 0 or -1, each failure printed. */
int check_events(struct run *r);
int check_deny_gc(struct run *r);
int check_leases(struct run *r);
int check_leases_busy(struct run *r);

/* ---- shorthand for the tables ----------------------------------------- */

#define PASS XDP_PASS_V
#define DROP XDP_DROP_V
#define SYN PB_TCP_SYN
#define ACK PB_TCP_ACK
#define SYNACK (PB_TCP_SYN | PB_TCP_ACK)
#define TCP XRL_PROTO_TCP
#define UDP XRL_PROTO_UDP
#define CLS_SYN XRL_TCP_SYN
#define SHADOW XRL_ACT_SHADOW
#define PORT(p) { (p), (p) }
#define G(x) [XRL_G_##x]

#define Q PB_ETH_P_8021Q
#define AD PB_ETH_P_8021AD
#define D4 X_DST, X_DST, X_DST, X_DST
#define D8 D4, D4
#define D16 D8, D8

#define SRC_A "198.51.100.1"
#define SRC_B "198.51.100.2"
#define SRC6_A "2001:db8:1:2::1"
#define LOGIN4 "203.0.113.10"
#define LOGIN6 "2001:db8:ffff::10"

/* A rule that matches every IPv4/IPv6 packet with an L4 header. */
#define RULE_ALL(b) { .name = "all", .burst = (b) }
#define RULE_SYN(b) { .name = "syn", .proto = TCP, .tcp_class = CLS_SYN, .burst = (b) }

#define CASE_SET(c) { (c), (int)(sizeof(c) / sizeof((c)[0])) }

#endif /* XRL_TEST_CASES_H */
