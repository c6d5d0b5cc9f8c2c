// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * pktbuild.c - see pktbuild.h. Headers are written byte by byte in network
 * order rather than through the kernel's structs, so a test can put any
 * value in any field (IHL 4, data offset 15, version 5) without bitfields
 * getting in the way.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "pktbuild.h"

static const uint8_t pb_mac_dst[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };
static const uint8_t pb_mac_src[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };

static void put16(uint8_t *b, uint16_t v)
{
	b[0] = v >> 8;
	b[1] = v & 0xff;
}

static void put32(uint8_t *b, uint32_t v)
{
	b[0] = v >> 24;
	b[1] = v >> 16;
	b[2] = v >> 8;
	b[3] = v & 0xff;
}

/* Reserve n zeroed bytes at the end; NULL (and p->err set) if they do not fit. */
static uint8_t *pb_grow(struct pb *p, size_t n)
{
	uint8_t *b;

	if (p->err)
		return NULL;
	if (p->finished) {
		p->err = -EINVAL;
		return NULL;
	}
	if (n > PB_MAX - p->len) {
		p->err = -ENOSPC;
		return NULL;
	}
	b = p->buf + p->len;
	memset(b, 0, n);
	p->len += n;
	return b;
}

/* Fill the previous header's "next protocol" field, if it is still open. */
static void pb_fill_next(struct pb *p, unsigned int value)
{
	if (p->next_off < 0)
		return;
	if (p->next_size == 2)
		put16(p->buf + p->next_off, value);
	else
		p->buf[p->next_off] = value;
	p->next_off = -1;
}

/*
 * A header of len bytes, reserved, with the previous header's "next
 * protocol" field set to proto. NULL (p->err set, the first error kept)
 * when bad (the caller's options make no such header: -EINVAL) or when it
 * does not fit.
 */
static uint8_t *pb_hdr(struct pb *p, bool bad, size_t len, unsigned int proto)
{
	uint8_t *b;

	if (bad && !p->err)
		p->err = -EINVAL;
	b = pb_grow(p, len);
	if (b)
		pb_fill_next(p, proto);
	return b;
}

static void pb_open_next(struct pb *p, size_t off, int size)
{
	p->next_off = off;
	p->next_size = size;
}

static void pb_mark(struct pb *p, enum pb_layer l, size_t off)
{
	if (p->off[l] < 0)
		p->off[l] = off;
}

void pb_init(struct pb *p)
{
	memset(p, 0, sizeof(*p));
	for (int i = 0; i < PB_L_MAX; i++)
		p->off[i] = -1;
	p->next_off = -1;
}

void pb_eth(struct pb *p)
{
	size_t off = p->len;
	uint8_t *b = pb_grow(p, 14);

	if (!b)
		return;
	memcpy(b, pb_mac_dst, 6);
	memcpy(b + 6, pb_mac_src, 6);
	pb_mark(p, PB_L_ETH, off);
	pb_open_next(p, off + 12, 2);
}

void pb_vlan(struct pb *p, uint16_t tpid, uint16_t vid)
{
	size_t off = p->len;
	uint8_t *b;

	/* The TPID goes in the previous EtherType field; the tag itself is
	 * TCI + encapsulated protocol. */
	b = pb_hdr(p, p->next_off < 0 || p->next_size != 2, 4, tpid);
	if (!b)
		return;
	put16(b, vid & 0x0fff);
	pb_mark(p, p->off[PB_L_VLAN] < 0 ? PB_L_VLAN : PB_L_VLAN2, off);
	pb_open_next(p, off + 2, 2);
}

void pb_arp(struct pb *p)
{
	size_t off = p->len;
	uint8_t *b = pb_grow(p, 28);

	if (!b)
		return;
	pb_fill_next(p, PB_ETH_P_ARP);
	put16(b, 1);                 /* Ethernet */
	put16(b + 2, PB_ETH_P_IP);
	b[4] = 6;
	b[5] = 4;
	put16(b + 6, 1);             /* request */
	memcpy(b + 8, pb_mac_src, 6);
	put32(b + 14, 0xc0000201);   /* 192.0.2.1 */
	put32(b + 24, 0xc0000202);   /* 192.0.2.2 */
	pb_mark(p, PB_L_IP, off);
}

void pb_ipv4(struct pb *p, const struct pb_ipv4_opts *o)
{
	uint32_t src[4], dst[4];
	int fs, fd;
	size_t off = p->len, hlen = 20 + 4 * o->opt_words;
	bool bad = pb_parse_addr(o->src, &fs, src) < 0 || fs != 4 ||
		   pb_parse_addr(o->dst, &fd, dst) < 0 || fd != 4;
	uint16_t frag;
	/* a 4-bit IHL in words: at most 10 words of options */
	uint8_t *b = pb_hdr(p, bad || o->opt_words > 10, hlen, PB_ETH_P_IP);

	if (!b)
		return;
	b[0] = (o->version ? o->version : 4) << 4 |
	       ((o->ihl ? o->ihl : 5 + o->opt_words) & 0x0f);
	put16(b + 2, o->tot_len);
	put16(b + 4, 0x1234);
	frag = o->frag_off & 0x1fff;
	if (o->mf)
		frag |= 0x2000;
	if (o->df)
		frag |= 0x4000;
	put16(b + 6, frag);
	b[8] = o->ttl ? o->ttl : 64;
	memcpy(b + 12, src, 4);
	memcpy(b + 16, dst, 4);
	if (o->opt_words) {
		/* NOPs ended by End of Option List */
		memset(b + 20, 0x01, hlen - 20);
		b[hlen - 1] = 0x00;
	}
	pb_mark(p, PB_L_IP, off);
	p->ip_family = 4;
	p->ip_off = off;
	p->ip_hlen = hlen;
	p->ip_tot_len_given = o->tot_len != 0;
	if (o->proto) {
		b[9] = o->proto < 0 ? 0 : o->proto;
		p->next_off = -1;
	} else {
		pb_open_next(p, off + 9, 1);
	}
}

void pb_ipv6(struct pb *p, const struct pb_ipv6_opts *o)
{
	uint32_t src[4], dst[4];
	int fs, fd;
	size_t off = p->len;
	bool bad = pb_parse_addr(o->src, &fs, src) < 0 || fs != 6 ||
		   pb_parse_addr(o->dst, &fd, dst) < 0 || fd != 6;
	uint8_t *b = pb_hdr(p, bad, 40, PB_ETH_P_IPV6);

	if (!b)
		return;
	put32(b, 6u << 28);
	b[7] = o->hop_limit ? o->hop_limit : 64;
	memcpy(b + 8, src, 16);
	memcpy(b + 24, dst, 16);
	pb_mark(p, PB_L_IP, off);
	p->ip_family = 6;
	p->ip_off = off;
	if (o->nexthdr) {
		b[6] = o->nexthdr < 0 ? 0 : o->nexthdr;
		p->next_off = -1;
	} else {
		pb_open_next(p, off + 6, 1);
	}
}

void pb_ipv6_ext(struct pb *p, uint8_t type, size_t len)
{
	size_t off = p->len;
	uint8_t *b;

	if (p->err)
		return;
	switch (type) {
	case PB_IPPROTO_HOPOPTS:
	case PB_IPPROTO_ROUTING:
	case PB_IPPROTO_DSTOPTS:
		if (len < 8 || len > 2048 || len % 8) {
			p->err = -EINVAL;
			return;
		}
		break;
	case PB_IPPROTO_AH:
		if (len < 12 || len > 1028 || len % 4) {
			p->err = -EINVAL;
			return;
		}
		break;
	default:
		p->err = -EINVAL;
		return;
	}
	b = pb_grow(p, len);
	if (!b)
		return;
	pb_fill_next(p, type);
	if (type == PB_IPPROTO_AH) {
		b[1] = len / 4 - 2;
		put32(b + 4, 0x100);     /* SPI */
		put32(b + 8, 1);         /* sequence */
	} else {
		b[1] = len / 8 - 1;
		if (type == PB_IPPROTO_ROUTING) {
			b[2] = 253;      /* routing type: experimental */
			b[3] = 0;        /* segments left: ignorable */
		} else {
			b[2] = 1;        /* PadN over the rest */
			b[3] = len - 4;
		}
	}
	pb_mark(p, PB_L_EXT, off);
	pb_open_next(p, off, 1);
}

void pb_ipv6_frag(struct pb *p, uint16_t offset, bool more, uint32_t id)
{
	size_t off = p->len;
	uint8_t *b = pb_grow(p, 8);

	if (!b)
		return;
	pb_fill_next(p, PB_IPPROTO_FRAGMENT);
	put16(b + 2, (offset & 0x1fff) << 3 | (more ? 1 : 0));
	put32(b + 4, id);
	pb_mark(p, PB_L_EXT, off);
	pb_open_next(p, off, 1);
}

void pb_tcp(struct pb *p, const struct pb_tcp_opts *o)
{
	size_t off = p->len, hlen = 20 + 4 * o->opt_words;
	/* a 4-bit data offset in words: at most 10 words of options */
	uint8_t *b = pb_hdr(p, o->opt_words > 10, hlen, PB_IPPROTO_TCP);

	if (!b)
		return;
	put16(b, o->sport ? o->sport : 40000);
	put16(b + 2, o->dport);
	put32(b + 4, o->seq);
	if (o->ack || (o->flags & PB_TCP_ACK))
		put32(b + 8, o->ack ? o->ack : 1);
	b[12] = ((o->doff ? o->doff : 5 + o->opt_words) & 0x0f) << 4;
	b[13] = o->flags;
	put16(b + 14, 65535);
	memset(b + 20, 0x01, hlen - 20);  /* NOP options */
	pb_mark(p, PB_L_L4, off);
	p->l4_proto = PB_IPPROTO_TCP;
	p->l4_off = off;
}

void pb_udp(struct pb *p, uint16_t sport, uint16_t dport)
{
	size_t off = p->len;
	uint8_t *b = pb_grow(p, 8);

	if (!b)
		return;
	pb_fill_next(p, PB_IPPROTO_UDP);
	put16(b, sport ? sport : 40000);
	put16(b + 2, dport);
	pb_mark(p, PB_L_L4, off);
	p->l4_proto = PB_IPPROTO_UDP;
	p->l4_off = off;
}

void pb_next_proto(struct pb *p, uint16_t value)
{
	if (!p->err)
		pb_fill_next(p, value);
}

void pb_payload(struct pb *p, size_t n, uint8_t fill)
{
	size_t off = p->len;
	uint8_t *b = pb_grow(p, n);

	if (!b)
		return;
	memset(b, fill, n);
	if (n)
		pb_mark(p, PB_L_PAYLOAD, off);
}

uint32_t pb_csum_add(uint32_t sum, const uint8_t *b, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)b[i] << 8 | b[i + 1];
	if (n & 1)
		sum += (uint32_t)b[n - 1] << 8;
	return sum;
}

uint16_t pb_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

/* TCP/UDP checksum over the pseudo header and everything from l4_off on. */
static void pb_l4_csum(struct pb *p)
{
	size_t l4len = p->len - p->l4_off;
	uint8_t *l4 = p->buf + p->l4_off, *ip = p->buf + p->ip_off;
	uint32_t sum = 0;
	int csum_at = p->l4_proto == PB_IPPROTO_TCP ? 16 : 6;
	uint16_t c;

	if (p->ip_family == 4) {
		sum = pb_csum_add(sum, ip + 12, 8);
	} else if (p->ip_family == 6) {
		sum = pb_csum_add(sum, ip + 8, 32);
		sum += l4len >> 16;
	} else {
		return;
	}
	sum += p->l4_proto;
	sum += l4len & 0xffff;
	l4[csum_at] = 0;
	l4[csum_at + 1] = 0;
	sum = pb_csum_add(sum, l4, l4len);
	c = pb_csum_fold(sum);
	/* UDP sends 0 as "no checksum"; a computed 0 is written as 0xffff */
	if (p->l4_proto == PB_IPPROTO_UDP && c == 0)
		c = 0xffff;
	put16(l4 + csum_at, c);
}

int pb_finish(struct pb *p)
{
	if (p->err)
		return p->err;
	if (p->finished)
		return -EINVAL;
	if (p->ip_family == 4) {
		uint8_t *ip = p->buf + p->ip_off;

		if (!p->ip_tot_len_given)
			put16(ip + 2, p->len - p->ip_off);
		ip[10] = 0;
		ip[11] = 0;
		/* over the bytes written, whatever the IHL field says */
		put16(ip + 10, pb_csum_fold(pb_csum_add(0, ip, p->ip_hlen)));
	} else if (p->ip_family == 6) {
		put16(p->buf + p->ip_off + 4, p->len - p->ip_off - 40);
	}
	if (p->l4_proto == PB_IPPROTO_UDP)
		put16(p->buf + p->l4_off + 4, p->len - p->l4_off);
	if (p->l4_proto)
		pb_l4_csum(p);
	p->finished = true;
	return 0;
}

int pb_truncate(struct pb *p, size_t n)
{
	if (n > p->len)
		return -EINVAL;
	p->len = n;
	return 0;
}

int pb_set_ip_len(struct pb *p, size_t len)
{
	uint8_t *ip = p->buf + p->ip_off;

	if (!p->finished || !p->ip_family || len > 0xffff + 40u)
		return -EINVAL;
	if (p->ip_family == 4) {
		if (len > 0xffff || (size_t)p->ip_off + p->ip_hlen > p->len)
			return -EINVAL;
		put16(ip + 2, len);
		ip[10] = 0;
		ip[11] = 0;
		put16(ip + 10, pb_csum_fold(pb_csum_add(0, ip, p->ip_hlen)));
	} else {
		if (len < 40 || (size_t)p->ip_off + 40 > p->len)
			return -EINVAL;
		put16(ip + 4, len - 40);
	}
	return 0;
}

int pb_layer_off(const struct pb *p, enum pb_layer l)
{
	if (l <= PB_L_NONE || l >= PB_L_MAX)
		return -1;
	return p->off[l];
}

int pb_parse_addr(const char *s, int *family, uint32_t addr[4])
{
	memset(addr, 0, 16);
	if (!s)
		return -EINVAL;
	if (inet_pton(AF_INET, s, addr) == 1) {
		*family = 4;
		return 0;
	}
	if (inet_pton(AF_INET6, s, addr) == 1) {
		*family = 6;
		return 0;
	}
	return -EINVAL;
}

void pb_hexdump(FILE *f, const char *indent, const void *buf, size_t len)
{
	const uint8_t *b = buf;

	for (size_t i = 0; i < len; i += 16) {
		fprintf(f, "%s%04zx ", indent, i);
		for (size_t j = i; j < i + 16; j++) {
			if (j < len)
				fprintf(f, " %02x", b[j]);
			else
				fputs("   ", f);
			if (j - i == 7)
				fputc(' ', f);
		}
		fputs("  |", f);
		for (size_t j = i; j < i + 16 && j < len; j++)
			fputc(b[j] >= 0x20 && b[j] < 0x7f ? b[j] : '.', f);
		fputs("|\n", f);
	}
}

void pb_check(int *fails, bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("  %s ", ok ? "ok  " : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!ok)
		(*fails)++;
}
