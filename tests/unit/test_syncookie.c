// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_syncookie.c - unit tests of include/xrl_syncookie.h, the cookie
 * arithmetic the XDP program runs: its word-oriented SipHash-2-4 against
 * a byte-oriented one written here from the paper (Aumasson and Bernstein,
 * "SipHash: a fast short-input PRF", 2012), the MSS tables, and the ISN's
 * fields, hash check and time slots.
 *
 * No root, no BPF. The words of xrl_ck_hash are read as a little-endian
 * host reads memory (as BPF does on x86 and arm64), so the reference runs
 * over the bytes those words hold on such a host.
 */
#include <endian.h>

#include "check.h"

#include "xrl_syncookie.h"

/* ---- the reference: SipHash-2-4 over bytes, from the paper -------------- */

static uint64_t rotl(uint64_t x, int b)
{
	return x << b | x >> (64 - b);
}

static void sipround(uint64_t v[4])
{
	v[0] += v[1];
	v[1] = rotl(v[1], 13);
	v[1] ^= v[0];
	v[0] = rotl(v[0], 32);
	v[2] += v[3];
	v[3] = rotl(v[3], 16);
	v[3] ^= v[2];
	v[0] += v[3];
	v[3] = rotl(v[3], 21);
	v[3] ^= v[0];
	v[2] += v[1];
	v[1] = rotl(v[1], 17);
	v[1] ^= v[2];
	v[2] = rotl(v[2], 32);
}

/* Bytes b[0..n) as a little-endian integer (n <= 8). */
static uint64_t le(const uint8_t *b, size_t n)
{
	uint64_t x = 0;

	for (size_t i = 0; i < n; i++)
		x |= (uint64_t)b[i] << (8 * i);
	return x;
}

/* SipHash-2-4 of msg[0..len) under the 16-byte key, as the paper gives it:
 * the key as two little-endian words, the message in 8-byte little-endian
 * words, the last one padded with zeros and len mod 256 in its top byte. */
static uint64_t siphash_ref(const uint8_t key[16], const uint8_t *msg, size_t len)
{
	uint64_t k0 = le(key, 8), k1 = le(key + 8, 8), m;
	uint64_t v[4] = { k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL,
			  k0 ^ 0x6c7967656e657261ULL, k1 ^ 0x7465646279746573ULL };
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		m = le(msg + i, 8);
		v[3] ^= m;
		sipround(v);
		sipround(v);
		v[0] ^= m;
	}
	m = le(msg + i, len - i) | (uint64_t)(len & 0xff) << 56;
	v[3] ^= m;
	sipround(v);
	sipround(v);
	v[0] ^= m;
	v[2] ^= 0xff;
	for (int r = 0; r < 4; r++)
		sipround(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/* The header's SipHash over nwords words. */
static uint64_t siphash_xrl(uint64_t k0, uint64_t k1, const uint64_t *w, uint32_t nwords)
{
	struct xrl_sip s;

	xrl_sip_init(&s, k0, k1);
	for (uint32_t i = 0; i < nwords; i++)
		xrl_sip_word(&s, w[i]);
	return xrl_sip_final(&s, nwords);
}

/* xorshift64*: the same "random" inputs on every run. */
static uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state >> 12;
	rnd_state ^= rnd_state << 25;
	rnd_state ^= rnd_state >> 27;
	return rnd_state * 0x2545f4914f6cdd1dULL;
}

static void test_reference_vectors(void **state)
{
	uint8_t key[16], msg[64];

	for (int i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	CTX("the paper's vector: key 00..0f, message 00..0e (15 bytes)");
	EQ(siphash_ref(key, msg, 15), 0xa129ca6149be45e5ULL);
	/* the reference implementation's vectors.h, entries 0 and 8 */
	CTX("the empty message");
	EQ(siphash_ref(key, msg, 0), 0x726fdb47dd0e0e31ULL);
	CTX("message 00..07 (8 bytes)");
	EQ(siphash_ref(key, msg, 8), 0x93f5f5799a932462ULL);
}

/* Messages of whole words (the only ones xrl hashes): 0 to 8 words of
 * 00 01 02 .., then random keys and 48-byte messages. */
static void test_words_match_reference(void **state)
{
	uint8_t key[16], msg[64];
	uint64_t w[8];

	for (int i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	for (uint32_t n = 0; n <= 8; n++) {
		for (uint32_t i = 0; i < n; i++)
			w[i] = le(msg + 8 * i, 8);
		CTX("message 00.. of %u words", n);
		EQ(siphash_xrl(le(key, 8), le(key + 8, 8), w, n), siphash_ref(key, msg, 8 * n));
	}
	for (int t = 0; t < 10000; t++) {
		uint64_t k0 = rnd(), k1 = rnd();

		for (int i = 0; i < 6; i++) {
			w[i] = rnd();
			for (int b = 0; b < 8; b++)
				msg[8 * i + b] = (uint8_t)(w[i] >> (8 * b));
		}
		for (int b = 0; b < 8; b++) {
			key[b] = (uint8_t)(k0 >> (8 * b));
			key[8 + b] = (uint8_t)(k1 >> (8 * b));
		}
		CTX("random 48-byte message %d", t);
		EQ(siphash_xrl(k0, k1, w, 6), siphash_ref(key, msg, 48));
	}
}

/* xrl_ck_hash is SipHash of the 48 bytes: source, destination (16 each, v4
 * in the first 4), the client's ISN (4, little-endian), the ports as the
 * packet has them (2 + 2) and the slot (8, little-endian). */
static void test_ck_hash_layout(void **state)
{
	for (int t = 0; t < 1000; t++) {
		uint32_t src[4], dst[4], isn = (uint32_t)rnd();
		uint16_t sport = (uint16_t)rnd(), dport = (uint16_t)rnd();
		uint64_t slot = rnd() >> 20, k0 = rnd(), k1 = rnd(), s = slot;
		uint8_t key[16], msg[48];
		bool v4 = t & 1;

		for (int i = 0; i < 4; i++) {
			src[i] = v4 && i ? 0 : (uint32_t)rnd();
			dst[i] = v4 && i ? 0 : (uint32_t)rnd();
		}
		memcpy(msg, src, 16);
		memcpy(msg + 16, dst, 16);
		for (int b = 0; b < 4; b++)
			msg[32 + b] = (uint8_t)(isn >> (8 * b));
		memcpy(msg + 36, &sport, 2);
		memcpy(msg + 38, &dport, 2);
		for (int b = 0; b < 8; b++, s >>= 8)
			msg[40 + b] = (uint8_t)s;
		for (int b = 0; b < 8; b++) {
			key[b] = (uint8_t)(k0 >> (8 * b));
			key[8 + b] = (uint8_t)(k1 >> (8 * b));
		}
		CTX("xrl_ck_hash case %d (%s)", t, v4 ? "v4" : "v6");
		if (__BYTE_ORDER == __LITTLE_ENDIAN)
			EQ(xrl_ck_hash(k0, k1, src, dst, sport, dport, isn, slot),
			   siphash_ref(key, msg, 48));
	}
}

/* The largest entry of tab[4] (ascending) <= m, or tab[0]. */
static uint32_t floor_entry(const uint16_t tab[4], uint32_t m)
{
	uint32_t best = tab[0];

	for (int i = 0; i < 4; i++)
		if (tab[i] <= m)
			best = tab[i];
	return best;
}

static void test_mss_tables(void **state)
{
	static const uint16_t v4[4] = { 536, 1300, 1440, 1460 };
	static const uint16_t v6[4] = { 1220, 1420, 1440, 8940 };

	for (int fam = 0; fam < 2; fam++) {
		const uint16_t *tab = fam ? v6 : v4;

		for (uint32_t i = 0; i < 4; i++) {
			CTX("IPv%d table entry %u", fam ? 6 : 4, i);
			EQ(xrl_ck_mss_of(i, fam), tab[i]);
			EQ(xrl_ck_mss_of(i + 4, fam), tab[i]); /* only 2 bits count */
			EQ(xrl_ck_mss_index(tab[i], fam), i);
		}
		for (uint32_t m = 0; m <= 70000; m++) {
			uint32_t idx = xrl_ck_mss_index(m, fam), got = xrl_ck_mss_of(idx, fam);

			CTX("IPv%d MSS %u: index %u", fam ? 6 : 4, m, idx);
			LE(idx, 3);
			if (m >= tab[0])
				LE(got, m);
			/* below the floor, the floor: what the program takes for
			 * a SYN without an MSS option */
			EQ(got, floor_entry(tab, m));
		}
	}
}

/* The ISN's fields, the hash check, and the slot its parity bit names. */
static void test_isn_round_trip(void **state)
{
	uint32_t src[4] = { 0x0764330cU }, dst[4] = { 0x010200c0U };

	for (int t = 0; t < 20000; t++) {
		uint64_t k0 = rnd(), k1 = rnd(), slot = 100000 + (rnd() & 0xfffff), h, h2;
		uint32_t keyid = t & 1, idx = (uint32_t)rnd() & 3, ecn = (t >> 1) & 1,
			 sack = (t >> 2) & 1, ws = (uint32_t)(rnd() % 16), isn = (uint32_t)rnd();
		uint16_t sport = (uint16_t)rnd(), dport = 80;
		uint32_t c;

		if (ws == 15)
			ws = XRL_CK_WSCALE_MASK;
		h = xrl_ck_hash(k0, k1, src, dst, sport, dport, isn, slot);
		c = xrl_ck_isn(h, keyid, slot, idx, ecn, sack, ws);
		CTX("case %d: slot %llu, cookie %#x", t, (ull)slot, c);
		EQ(!!(c & XRL_CK_KEYID_BIT), keyid);
		EQ(!!(c & XRL_CK_SLOT_BIT), slot & 1);
		EQ((c >> XRL_CK_MSS_SHIFT) & 3, idx);
		EQ(!!(c & XRL_CK_ECN), ecn);
		EQ(!!(c & XRL_CK_SACK), sack);
		EQ(c & XRL_CK_WSCALE_MASK, ws);
		EQ(c >> XRL_CK_HASH_SHIFT, (uint32_t)h & 0x3fffff);
		EQ(xrl_ck_tsval(h), h >> 32 ? h >> 32 : 1);
		assert_true(xrl_ck_hash_ok(c, h));
		/* each of the 22 hash bits is checked */
		for (int b = XRL_CK_HASH_SHIFT; b < 32; b++)
			assert_false(xrl_ck_hash_ok(c ^ (1u << b), h));
		/* the ACK in the SYN-ACK's slot and the next names the slot */
		EQ(xrl_ck_slot_of(c, slot), slot);
		EQ(xrl_ck_slot_of(c, slot + 1), slot);
		h2 = xrl_ck_hash(k0, k1, src, dst, sport, dport, isn, xrl_ck_slot_of(c, slot + 1));
		assert_true(xrl_ck_hash_ok(c, h2));
		/* two and three slots later it names a later slot: the check fails */
		EQ(xrl_ck_slot_of(c, slot + 2), slot + 2);
		EQ(xrl_ck_slot_of(c, slot + 3), slot + 2);
		for (uint64_t later = slot + 2; later <= slot + 3; later++) {
			h2 = xrl_ck_hash(k0, k1, src, dst, sport, dport, isn,
					 xrl_ck_slot_of(c, later));
			CTX("case %d: slot %llu, checked at %llu", t, (ull)slot, (ull)later);
			assert_false(xrl_ck_hash_ok(c, h2));
		}
		/* another key, port or ISN: another hash */
		assert_false(xrl_ck_hash_ok(c, xrl_ck_hash(k0 ^ 1, k1, src, dst, sport, dport, isn,
							   slot)));
		assert_false(xrl_ck_hash_ok(c, xrl_ck_hash(k0, k1, src, dst, sport ^ 1, dport, isn,
							   slot)));
		assert_false(xrl_ck_hash_ok(c, xrl_ck_hash(k0, k1, src, dst, sport, dport, isn + 1,
							   slot)));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reference_vectors),
		cmocka_unit_test(test_words_match_reference),
		cmocka_unit_test(test_ck_hash_layout),
		cmocka_unit_test(test_mss_tables),
		cmocka_unit_test(test_isn_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
