// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * digest.c - the identities of buckets and slot sets: SipHash-2-4 with a
 * 128-bit output, keyed per process (limiter.c's opening comment says why),
 * over a rule's name and a key.
 */
#include <string.h>

#include "limiter_int.h"
#include "xrl_syncookie.h"

/* ---- SipHash-2-4, 128-bit output (Aumasson and Bernstein, reference) --------
 * The round, the keyed start and a word are the packet tier's
 * (include/xrl_syncookie.h); the 128-bit variant's constants, the byte
 * stream and its ending are this file's. */

struct sip {
	struct xrl_sip v;
	__u64 tail; /* bytes not yet a whole word, little-endian */
	size_t len; /* bytes absorbed */
};

static void sip_init(struct sip *s, const __u64 k[2])
{
	xrl_sip_init(&s->v, k[0], k[1]);
	s->v.v1 ^= 0xee; /* the 128-bit variant */
	s->tail = 0;
	s->len = 0;
}

static void sip_add(struct sip *s, const void *in, size_t n)
{
	const unsigned char *p = in;

	for (size_t i = 0; i < n; i++) {
		s->tail |= (__u64)p[i] << (8 * (s->len & 7));
		if ((++s->len & 7) == 0) {
			xrl_sip_word(&s->v, s->tail);
			s->tail = 0;
		}
	}
}

static void sip_rounds(struct xrl_sip *v, int n)
{
	while (n--)
		xrl_sip_round(v);
}

static void sip_end(struct sip *s, __u64 out[2])
{
	struct xrl_sip *v = &s->v;

	xrl_sip_word(v, s->tail | (__u64)s->len << 56);
	v->v2 ^= 0xee;
	sip_rounds(v, 4);
	out[0] = v->v0 ^ v->v1 ^ v->v2 ^ v->v3;
	v->v1 ^= 0xdd;
	sip_rounds(v, 4);
	out[1] = v->v0 ^ v->v1 ^ v->v2 ^ v->v3;
}

void xrl_siphash128(const __u64 k[2], const void *in, size_t n, __u64 out[2])
{
	struct sip s;

	sip_init(&s, k);
	sip_add(&s, in, n);
	sip_end(&s, out);
}

/* The identity of rule r's bucket for key: the rule's name, not its 32-bit
 * id, so two rules never share buckets either. */
struct xrl_kd xrl_lim_digest(const struct xrl_limiter *l, const char *rule, const char *key)
{
	struct sip s;
	__u64 o[2];

	sip_init(&s, l->sip);
	sip_add(&s, rule, strnlen(rule, XRL_RULE_NAME_LEN) + 1); /* with its NUL */
	sip_add(&s, key, strlen(key));
	sip_end(&s, o);
	if (!TAG(o[1]))
		o[1] |= 1ULL << 16; /* a zero tag would read as empty */
	return (struct xrl_kd){ o[0], o[1] };
}

/* The set of slots of rule r and a key's name kn (memory): apart from its
 * buckets by the 'c' after the name's NUL, which no key's bytes can forge. */
struct xrl_kd xrl_lim_set_digest(const struct xrl_limiter *l, const char *rule, const char *kn,
				 size_t knl)
{
	struct sip s;
	__u64 o[2];

	sip_init(&s, l->sip);
	sip_add(&s, rule, strlen(rule) + 1);
	sip_add(&s, "c", 2);
	sip_add(&s, kn, knl);
	sip_end(&s, o);
	return (struct xrl_kd){ o[0], o[1] | 1ULL << 16 };
}
