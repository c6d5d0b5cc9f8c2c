// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * slots.c - Redis Cluster routing: CRC16 and hash tags, the slot map
 * from CLUSTER SLOTS, MOVED/ASK answers. Pure functions, unit tested
 * (tests/unit/test_redis_slots.c) against Redis's own vectors.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "slots.h"

__u16 xrl_crc16(const char *s, size_t n)
{
	__u16 crc = 0;

	/* bit by bit: a key is short and the table would be 512 bytes of cache */
	for (size_t i = 0; i < n; i++) {
		crc ^= (__u16)((unsigned char)s[i] << 8);
		for (int b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (__u16)(crc << 1 ^ 0x1021) : (__u16)(crc << 1);
	}
	return crc;
}

unsigned xrl_key_slot(const char *key, size_t n)
{
	const char *open = memchr(key, '{', n), *close;

	/* Redis's rule: the first '{', then the first '}' after it; an empty
	 * tag ("{}") hashes the whole key */
	if (open) {
		close = memchr(open + 1, '}', n - (size_t)(open + 1 - key));
		if (close && close > open + 1) {
			key = open + 1;
			n = (size_t)(close - open - 1);
		}
	}
	return xrl_crc16(key, n) & (XRL_CLUSTER_SLOTS - 1);
}

int xrl_slot_map_node(struct xrl_slot_map *m, const char *host, int port)
{
	for (__u32 i = 0; i < m->n_nodes; i++)
		if (m->node[i].port == port && !strcmp(m->node[i].host, host))
			return (int)i;
	if (m->n_nodes >= XRL_CLUSTER_NODES_MAX || strlen(host) >= sizeof(m->node[0].host))
		return -ENOSPC;
	snprintf(m->node[m->n_nodes].host, sizeof(m->node[0].host), "%s", host);
	m->node[m->n_nodes].port = port;
	return (int)m->n_nodes++;
}

/* One range of CLUSTER SLOTS: [start, end, [host, port, id...], replicas...]. */
static int slot_range(struct xrl_slot_map *m, const redisReply *e, const char *asked_host)
{
	const redisReply *h, *p;
	char host[128];
	int idx;

	if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
	    e->element[0]->type != REDIS_REPLY_INTEGER ||
	    e->element[1]->type != REDIS_REPLY_INTEGER ||
	    e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2)
		return -EBADMSG;
	h = e->element[2]->element[0];
	p = e->element[2]->element[1];
	if (h->type != REDIS_REPLY_STRING || p->type != REDIS_REPLY_INTEGER || p->integer < 1 ||
	    p->integer > 65535 || e->element[0]->integer < 0 ||
	    e->element[1]->integer >= XRL_CLUSTER_SLOTS ||
	    e->element[0]->integer > e->element[1]->integer || h->len >= sizeof(host))
		return -EBADMSG;
	/* "" or "?" (cluster-preferred-endpoint-type unknown-endpoint): the node asked */
	snprintf(host, sizeof(host), "%s", h->len && strcmp(h->str, "?") ? h->str : asked_host);
	idx = xrl_slot_map_node(m, host, (int)p->integer);
	if (idx < 0)
		return idx;
	for (long long s = e->element[0]->integer; s <= e->element[1]->integer; s++)
		m->master[s] = (__u16)idx;
	return (int)(e->element[1]->integer - e->element[0]->integer + 1);
}

int xrl_slot_map_parse(struct xrl_slot_map *m, const struct redisReply *r, const char *asked_host)
{
	int served = 0;

	if (r->type != REDIS_REPLY_ARRAY)
		return -EBADMSG;
	for (unsigned s = 0; s < XRL_CLUSTER_SLOTS; s++)
		m->master[s] = XRL_CLUSTER_NO_NODE;
	for (size_t i = 0; i < r->elements; i++) {
		int n = slot_range(m, r->element[i], asked_host);

		if (n < 0)
			return n;
		served += n;
	}
	return served;
}

int xrl_redirect_parse(const char *err, size_t n, bool *ask, unsigned *slot, char *host,
		       size_t hostlen, int *port)
{
	const char *p, *end = err + n, *colon;
	unsigned long s = 0, pt = 0;

	if (n > 6 && !memcmp(err, "MOVED ", 6)) {
		*ask = false;
		p = err + 6;
	} else if (n > 4 && !memcmp(err, "ASK ", 4)) {
		*ask = true;
		p = err + 4;
	} else {
		return -EINVAL;
	}
	if (p >= end || *p < '0' || *p > '9')
		return -EINVAL;
	while (p < end && *p >= '0' && *p <= '9' && s < XRL_CLUSTER_SLOTS)
		s = s * 10 + (unsigned long)(*p++ - '0');
	if (s >= XRL_CLUSTER_SLOTS || p >= end || *p++ != ' ')
		return -EINVAL;
	/* the last ':' splits host and port: an IPv6 host has its own */
	colon = NULL;
	for (const char *q = p; q < end; q++)
		if (*q == ':')
			colon = q;
	if (!colon || colon + 1 >= end || (size_t)(colon - p) >= hostlen)
		return -EINVAL;
	for (const char *q = colon + 1; q < end; q++) {
		if (*q < '0' || *q > '9' || pt > 65535)
			return -EINVAL;
		pt = pt * 10 + (unsigned long)(*q - '0');
	}
	if (pt < 1 || pt > 65535)
		return -EINVAL;
	memcpy(host, p, (size_t)(colon - p));
	host[colon - p] = '\0';
	*slot = (unsigned)s;
	*port = (int)pt;
	return 0;
}
