/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xrl_syncookie.h - xrl's own SYN cookie: the one arithmetic that the XDP
 * program writes into a SYN-ACK and checks in the ACK, compiled into the
 * program and into the unit tests alike (integers only).
 *
 * The ISN of the SYN-ACK (host order):
 *
 *   31 ........ 10 | 9      | 8      | 7 6     | 5   | 4    | 3 ... 0
 *   hash (22 bits) | key id | slot&1 | MSS idx | ECN | SACK | wscale (0xf: none)
 *
 * hash = SipHash-2-4(key[key id], addresses, ports, the client's ISN, slot).
 * The slot is the time in units of 2^36 ns (68.7 s): an ACK is good in the
 * slot its SYN-ACK was sent in and the next one, 69-137 s, and the parity bit
 * says which of the two to hash, so a check is one hash. The key id names
 * which of the two keys of xrl_cookie made it: xrld writes a fresh key into
 * the slot not in use and then switches (xrl_cookie_rotate), so a cookie in
 * flight over a rotation still checks.
 *
 * With timestamps, the SYN-ACK's TSval is the hash's upper 32 bits and an
 * ACK that carries a timestamp must echo them: an honest client's ACK is
 * checked on 54 bits, and there is no clock in the timestamp (the kernel's
 * own cookies put jiffies there: the host's uptime). A forger simply sends
 * no timestamp, so 22 bits is what a guess is up against.
 * The kernel takes the offset from the echo (bpf_sk_assign_tcp_reqsk: ts_off
 * = tsecr - now), so the connection's timestamps go on from that value.
 *
 * A blind guess of a 22-bit hash is right once in 4 million: an attacker
 * sending a million forged ACKs a second lands one every four seconds, and
 * each lands only as one connection that the rule's bucket then charges.
 */
#ifndef XRL_SYNCOOKIE_H
#define XRL_SYNCOOKIE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define XRL_CK_SLOT_SHIFT   36          /* ns >> 36: 68.7 s slots */
#define XRL_CK_HASH_SHIFT   10
#define XRL_CK_KEYID_BIT    (1u << 9)
#define XRL_CK_SLOT_BIT     (1u << 8)
#define XRL_CK_MSS_SHIFT    6
#define XRL_CK_ECN          (1u << 5)
#define XRL_CK_SACK         (1u << 4)
#define XRL_CK_WSCALE_MASK  0xfu        /* 0xf: the client sent no window scale */

/* The MSS a client's SYN offered, rounded down to one of four (the kernel's
 * own cookie tables, include/net/tcp.h msstab, IPv6's minimum first). */
static inline __u32 xrl_ck_mss_index(__u32 mss, int v6)
{
	if (v6)
		return mss >= 9000 - 60 ? 3 : mss >= 1500 - 60 ? 2 : mss >= 1480 - 60 ? 1 : 0;
	return mss >= 1460 ? 3 : mss >= 1440 ? 2 : mss >= 1300 ? 1 : 0;
}

static inline __u16 xrl_ck_mss_of(__u32 idx, int v6)
{
	idx &= 3;
	if (v6)
		return idx == 3 ? 9000 - 60 : idx == 2 ? 1500 - 60 : idx == 1 ? 1480 - 60 : 1280 - 60;
	return idx == 3 ? 1460 : idx == 2 ? 1440 : idx == 1 ? 1300 : 536;
}

/* ---- SipHash-2-4 over whole 64-bit words -------------------------------- */

#define XRL_ROTL64(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

struct xrl_sip {
	__u64 v0, v1, v2, v3;
};

static inline void xrl_sip_round(struct xrl_sip *s)
{
	s->v0 += s->v1;
	s->v1 = XRL_ROTL64(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = XRL_ROTL64(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = XRL_ROTL64(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = XRL_ROTL64(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = XRL_ROTL64(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = XRL_ROTL64(s->v2, 32);
}

static inline void xrl_sip_init(struct xrl_sip *s, __u64 k0, __u64 k1)
{
	s->v0 = k0 ^ 0x736f6d6570736575ULL;
	s->v1 = k1 ^ 0x646f72616e646f6dULL;
	s->v2 = k0 ^ 0x6c7967656e657261ULL;
	s->v3 = k1 ^ 0x7465646279746573ULL;
}

/* One 8-byte word of the message, little-endian as SipHash reads bytes. */
static inline void xrl_sip_word(struct xrl_sip *s, __u64 m)
{
	s->v3 ^= m;
	xrl_sip_round(s);
	xrl_sip_round(s);
	s->v0 ^= m;
}

/* The end of a message of nwords words (no partial word). */
static inline __u64 xrl_sip_final(struct xrl_sip *s, __u32 nwords)
{
	__u64 b = (__u64)(nwords * 8) << 56;

	s->v3 ^= b;
	xrl_sip_round(s);
	xrl_sip_round(s);
	s->v0 ^= b;
	s->v2 ^= 0xff;
	xrl_sip_round(s);
	xrl_sip_round(s);
	xrl_sip_round(s);
	xrl_sip_round(s);
	return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

/*
 * The cookie's hash for one handshake. Addresses in network order as the
 * packet has them (v4 in a[0], the rest zero), ports in network order, isn
 * the client's ISN (host order), slot the time slot. Six words for IPv4 and
 * IPv6 alike (the v4 addresses' unused words are zero), so one code path.
 */
static inline __u64 xrl_ck_hash(__u64 k0, __u64 k1, const __u32 *src, const __u32 *dst,
				__u16 sport, __u16 dport, __u32 isn, __u64 slot)
{
	struct xrl_sip s;

	xrl_sip_init(&s, k0, k1);
	xrl_sip_word(&s, (__u64)src[0] | (__u64)src[1] << 32);
	xrl_sip_word(&s, (__u64)src[2] | (__u64)src[3] << 32);
	xrl_sip_word(&s, (__u64)dst[0] | (__u64)dst[1] << 32);
	xrl_sip_word(&s, (__u64)dst[2] | (__u64)dst[3] << 32);
	xrl_sip_word(&s, (__u64)isn | (__u64)sport << 32 | (__u64)dport << 48);
	xrl_sip_word(&s, slot);
	return xrl_sip_final(&s, 6);
}

/* The ISN of the SYN-ACK, from the hash and what the SYN offered. */
static inline __u32 xrl_ck_isn(__u64 h, __u32 keyid, __u64 slot, __u32 mss_idx, __u32 ecn,
			       __u32 sack, __u32 wscale)
{
	return ((__u32)h << XRL_CK_HASH_SHIFT) | (keyid ? XRL_CK_KEYID_BIT : 0) |
	       (slot & 1 ? XRL_CK_SLOT_BIT : 0) | (mss_idx & 3) << XRL_CK_MSS_SHIFT |
	       (ecn ? XRL_CK_ECN : 0) | (sack ? XRL_CK_SACK : 0) | (wscale & XRL_CK_WSCALE_MASK);
}

/* The TSval of the SYN-ACK: the hash's upper half, never 0 (an echo of 0
 * reads as "no timestamp echoed"). */
static inline __u32 xrl_ck_tsval(__u64 h)
{
	__u32 t = (__u32)(h >> 32);

	return t ? t : 1;
}

/* Which slot an ACK's cookie names, given the slot now. */
static inline __u64 xrl_ck_slot_of(__u32 cookie, __u64 now_slot)
{
	return ((cookie & XRL_CK_SLOT_BIT) != 0) == (now_slot & 1) ? now_slot : now_slot - 1;
}

/* Does the ACK's cookie (ack_seq - 1) carry hash h? */
static inline int xrl_ck_hash_ok(__u32 cookie, __u64 h)
{
	return (cookie >> XRL_CK_HASH_SHIFT) == ((__u32)h & ((1u << (32 - XRL_CK_HASH_SHIFT)) - 1));
}

#endif /* XRL_SYNCOOKIE_H */
