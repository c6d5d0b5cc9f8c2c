/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * pktbuild.h - a small Ethernet frame builder for BPF_PROG_TEST_RUN tests.
 *
 * Headers are appended in wire order to one buffer:
 *
 *	struct pb p;
 *
 *	pb_init(&p);
 *	pb_eth(&p);
 *	pb_vlan(&p, 0x8100, 10);
 *	pb_ipv4(&p, &(struct pb_ipv4_opts){ .src = "198.51.100.1",
 *					    .dst = "192.0.2.1" });
 *	pb_tcp(&p, &(struct pb_tcp_opts){ .dport = 80, .flags = PB_TCP_SYN });
 *	if (pb_finish(&p) < 0) ...
 *	pb_truncate(&p, pb_layer_off(&p, PB_L_L4) + 10);
 *
 * Each header fills in the "next protocol" field of the one before it
 * (EtherType, VLAN encapsulated protocol, IPv4 protocol, IPv6 next header)
 * unless that field was given explicitly. pb_finish() fills in lengths and
 * checksums that were not given explicitly; pb_truncate() afterwards cuts
 * the frame without touching them, which is how malformed frames are made.
 *
 * Errors are sticky: the first failing call records -errno in p->err, later
 * calls do nothing, and pb_finish() returns it. So a builder sequence needs
 * one check at the end.
 */
#ifndef XRL_PKTBUILD_H
#define XRL_PKTBUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Comfortably above an untagged 1514-byte frame with two tags and options,
 * below what BPF_PROG_TEST_RUN accepts for XDP (a page minus head/tailroom). */
#define PB_MAX 2048

#define PB_ETH_P_IP     0x0800
#define PB_ETH_P_ARP    0x0806
#define PB_ETH_P_IPV6   0x86DD
#define PB_ETH_P_8021Q  0x8100
#define PB_ETH_P_8021AD 0x88A8

#define PB_IPPROTO_HOPOPTS  0
#define PB_IPPROTO_ICMP     1
#define PB_IPPROTO_TCP      6
#define PB_IPPROTO_UDP      17
#define PB_IPPROTO_ROUTING  43
#define PB_IPPROTO_FRAGMENT 44
#define PB_IPPROTO_AH       51
#define PB_IPPROTO_NONE     59
#define PB_IPPROTO_DSTOPTS  60

#define PB_TCP_FIN 0x01
#define PB_TCP_SYN 0x02
#define PB_TCP_RST 0x04
#define PB_TCP_PSH 0x08
#define PB_TCP_ACK 0x10

/* Layers whose first header's offset is recorded, for truncation. */
enum pb_layer {
	PB_L_NONE = 0,
	PB_L_ETH,      /* Ethernet header */
	PB_L_VLAN,     /* first VLAN tag */
	PB_L_VLAN2,    /* second VLAN tag */
	PB_L_IP,       /* IPv4 / IPv6 header (or the ARP body) */
	PB_L_EXT,      /* first IPv6 extension header */
	PB_L_L4,       /* TCP / UDP header */
	PB_L_PAYLOAD,  /* payload */
	PB_L_MAX,
};

struct pb {
	uint8_t buf[PB_MAX];
	size_t  len;
	int     err;                 /* first error, 0 or -errno */
	int     off[PB_L_MAX];       /* offset of each layer, -1 if absent */
	/* The pending "next protocol" field the next header fills in. */
	int     next_off;            /* -1: none */
	int     next_size;           /* 2: EtherType, 1: IP protocol */
	/* For pb_finish. */
	int     ip_family;           /* 0, 4 or 6 */
	int     ip_off;
	int     ip_hlen;             /* IPv4 header bytes written */
	bool    ip_tot_len_given;
	int     l4_proto;            /* PB_IPPROTO_TCP / _UDP, 0 none */
	int     l4_off;
	bool    finished;
};

struct pb_ipv4_opts {
	const char *src;             /* dotted quad */
	const char *dst;
	uint8_t  opt_words;          /* 32-bit words of options (NOPs + EOL), 0..10 */
	uint8_t  ihl;                /* 0: 5 + opt_words; else written as is */
	uint8_t  version;            /* 0: 4 */
	uint16_t frag_off;           /* fragment offset in 8-byte units */
	bool     mf;                 /* more fragments */
	bool     df;
	uint16_t tot_len;            /* 0: computed by pb_finish */
	int      proto;              /* 0: from the next header; -1: 0 (HOPOPT) */
	uint8_t  ttl;                /* 0: 64 */
};

struct pb_ipv6_opts {
	const char *src;             /* RFC 4291 text */
	const char *dst;
	int      nexthdr;            /* 0: from the next header; -1: 0 (HOPOPTS) */
	uint8_t  hop_limit;          /* 0: 64 */
};

struct pb_tcp_opts {
	uint16_t sport;              /* 0: 40000 */
	uint16_t dport;
	uint8_t  flags;              /* PB_TCP_* */
	uint8_t  opt_words;          /* 32-bit words of options (NOPs), 0..10 */
	uint8_t  doff;               /* 0: 5 + opt_words; else written as is */
	uint32_t seq;
	uint32_t ack;                /* 0: 1 if PB_TCP_ACK is set */
};

void pb_init(struct pb *p);
void pb_eth(struct pb *p);
/* tpid PB_ETH_P_8021Q or PB_ETH_P_8021AD (anything is written as given). */
void pb_vlan(struct pb *p, uint16_t tpid, uint16_t vid);
/* An ARP request, 28 bytes. */
void pb_arp(struct pb *p);
void pb_ipv4(struct pb *p, const struct pb_ipv4_opts *o);
void pb_ipv6(struct pb *p, const struct pb_ipv6_opts *o);
/*
 * A hop-by-hop, routing or destination options header of len bytes
 * (a multiple of 8, 8..2048), or an AH header (a multiple of 4, >= 12).
 * The body is PadN / zeros.
 */
void pb_ipv6_ext(struct pb *p, uint8_t type, size_t len);
/* An IPv6 fragment header; offset in 8-byte units. */
void pb_ipv6_frag(struct pb *p, uint16_t offset, bool more, uint32_t id);
void pb_tcp(struct pb *p, const struct pb_tcp_opts *o);
void pb_udp(struct pb *p, uint16_t sport, uint16_t dport);
/*
 * Fill the open "next protocol" field with a value and no header of its
 * own: an L4 protocol whose header the test writes as payload (ICMP, a
 * fragment's TCP), or an EtherType nothing here builds (LLDP).
 */
void pb_next_proto(struct pb *p, uint16_t value);
void pb_payload(struct pb *p, size_t n, uint8_t fill);

/* Fill lengths and checksums not given explicitly. Returns 0 or p->err. */
int pb_finish(struct pb *p);
/* Cut the frame to n bytes (n <= current length). Returns 0 or -EINVAL. */
int pb_truncate(struct pb *p, size_t n);
/*
 * After pb_finish: make the IP header's length field say len bytes from the
 * start of the IP header (IPv4 total length, with its header checksum
 * redone; IPv6 40 + payload length). With pb_truncate, an honest short
 * packet; alone, one that claims more or less than the frame holds.
 * Returns 0 or -EINVAL.
 */
int pb_set_ip_len(struct pb *p, size_t len);
/* Offset of a layer's first header, or -1 if the frame has none. */
int pb_layer_off(const struct pb *p, enum pb_layer l);

/* Address text to network-order words; family 4 or 6 by syntax.
 * Returns 0 or -EINVAL. */
int pb_parse_addr(const char *s, int *family, uint32_t addr[4]);

/* 16 bytes a line, offset, hex and ASCII, each line prefixed with indent. */
void pb_hexdump(FILE *f, const char *indent, const void *buf, size_t len);

/* RFC 1071 one's complement sum of n bytes, not yet folded or inverted. */
uint32_t pb_csum_add(uint32_t sum, const uint8_t *b, size_t n);
/* The folded, inverted sum: the checksum field's value; 0 when the sum
 * ran over a header whose checksum verifies. */
uint16_t pb_csum_fold(uint32_t sum);

/* One check's line, "  ok   what" or "  FAIL what"; a failure counts in
 * *fails. The tests' own check() calls this with their counter. */
void pb_check(int *fails, bool ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif /* XRL_PKTBUILD_H */
