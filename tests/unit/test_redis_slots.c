// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_redis_slots.c - Redis Cluster routing (user/http/redis/slots.c):
 * CRC16 against Redis's own vectors, the hash-tag rules of the cluster
 * spec, the slot map from a canned CLUSTER SLOTS reply (read by hiredis's
 * own reader, as the pipe reads it), MOVED and ASK answers, good and bad.
 * No server, no root.
 */
#include <stdlib.h>

#include <hiredis/hiredis.h>

#include "check.h"
#include "http/redis/slots.h"

static unsigned slot_of(const char *k)
{
	return xrl_key_slot(k, strlen(k));
}

/* CRC16 vectors: the cluster spec's, and slots redis-cli CLUSTER KEYSLOT gives */
static void t_crc16(void **st)
{
	(void)st;
	CTX("crc16(\"123456789\")");
	EQ(xrl_crc16("123456789", 9), 0x31C3);
	EQ(xrl_crc16("", 0), 0);
	/* CLUSTER KEYSLOT foo = 12182, bar = 5061, hello = 866 (Redis 7.0.15) */
	EQ(slot_of("foo"), 12182);
	EQ(slot_of("bar"), 5061);
	EQ(slot_of("hello"), 866);
}

/* the hash-tag rules of the cluster specification, "Hash tags" */
static void t_hash_tags(void **st)
{
	(void)st;
	CTX("{user1000}.following and user1000");
	EQ(slot_of("{user1000}.following"), slot_of("user1000"));
	EQ(slot_of("{user1000}.followers"), slot_of("user1000"));
	CTX("foo{}{bar}: an empty first tag hashes the whole key");
	EQ(slot_of("foo{}{bar}"), xrl_crc16("foo{}{bar}", 10) & 16383);
	CTX("foo{{bar}}zap: the tag is '{bar'");
	EQ(slot_of("foo{{bar}}zap"), slot_of("{bar"));
	CTX("foo{bar}{zap}: only the first tag");
	EQ(slot_of("foo{bar}{zap}"), slot_of("bar"));
	CTX("an unclosed '{' hashes the whole key");
	EQ(slot_of("foo{bar"), xrl_crc16("foo{bar", 7) & 16383);
	CTX("xrl's key names: rule and key are the tag");
	EQ(slot_of("xrl:{buyers:alice}"), slot_of("buyers:alice"));
}

static redisReply *read_reply(const char *resp)
{
	redisReader *r = redisReaderCreate();
	void *out = NULL;

	assert_non_null(r);
	assert_int_equal(redisReaderFeed(r, resp, strlen(resp)), REDIS_OK);
	assert_int_equal(redisReaderGetReply(r, &out), REDIS_OK);
	redisReaderFree(r);
	assert_non_null(out);
	return out;
}

/* three masters and their replicas, as redis-cli --cluster create makes them */
static const char slots_reply[] =
	"*3\r\n"
	"*4\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$4\r\naaaa\r\n"
	"*3\r\n$9\r\n127.0.0.1\r\n:7004\r\n$4\r\nbbbb\r\n"
	"*4\r\n:5461\r\n:10922\r\n*3\r\n$0\r\n\r\n:7001\r\n$4\r\ncccc\r\n"
	"*3\r\n$9\r\n127.0.0.1\r\n:7005\r\n$4\r\ndddd\r\n"
	"*3\r\n:10923\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:7002\r\n$4\r\neeee\r\n";

static void t_slot_map(void **st)
{
	static struct xrl_slot_map m;
	redisReply *r = read_reply(slots_reply);

	(void)st;
	CTX("the canned CLUSTER SLOTS reply");
	EQ(xrl_slot_map_parse(&m, r, "10.0.0.9"), 16384);
	EQ(m.n_nodes, 3); /* masters only: replicas are not routed to */
	STR_EQ(m.node[m.master[0]].host, "127.0.0.1");
	EQ(m.node[m.master[0]].port, 7000);
	EQ(m.node[m.master[5460]].port, 7000);
	CTX("an empty host is the node asked");
	STR_EQ(m.node[m.master[5461]].host, "10.0.0.9");
	EQ(m.node[m.master[10922]].port, 7001);
	EQ(m.node[m.master[16383]].port, 7002);
	CTX("a second map keeps the indices of the first");
	int i7002 = m.master[16383];

	EQ(xrl_slot_map_node(&m, "127.0.0.1", 7002), i7002);
	EQ(xrl_slot_map_node(&m, "127.0.0.1", 7005), 3);
	EQ(xrl_slot_map_parse(&m, r, "10.0.0.9"), 16384);
	EQ(m.master[16383], i7002);
	freeReplyObject(r);

	CTX("a slot range out of bounds, or not the shape");
	r = read_reply("*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\nh\r\n:1\r\n");
	EQ(xrl_slot_map_parse(&m, r, "x"), -EBADMSG);
	freeReplyObject(r);
	r = read_reply("*1\r\n*3\r\n:9\r\n:1\r\n*2\r\n$1\r\nh\r\n:1\r\n");
	EQ(xrl_slot_map_parse(&m, r, "x"), -EBADMSG);
	freeReplyObject(r);
	r = read_reply("-ERR This instance has cluster support disabled\r\n");
	EQ(xrl_slot_map_parse(&m, r, "x"), -EBADMSG);
	freeReplyObject(r);
	CTX("a map with a hole: its slots have no master");
	r = read_reply("*1\r\n*3\r\n:0\r\n:99\r\n*2\r\n$1\r\nh\r\n:1\r\n");
	EQ(xrl_slot_map_parse(&m, r, "x"), 100);
	EQ(m.master[100], XRL_CLUSTER_NO_NODE);
	freeReplyObject(r);
}

/* A redirect and what it names; an empty host is the node that answered. */
struct redirect_case {
	const char *text;
	bool ask;
	unsigned slot;
	const char *host;
	int port;
};

static void t_redirects(void **st)
{
	static const struct redirect_case good[] = {
		{ "MOVED 3999 127.0.0.1:6381", false, 3999, "127.0.0.1", 6381 },
		{ "ASK 16383 ::1:7002", true, 16383, "::1", 7002 },
		{ "MOVED 0 :7000", false, 0, "", 7000 },
	};
	char host[128];
	unsigned slot = 0;
	int port = 0;
	bool ask = true;

	(void)st;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		const char *e = good[i].text;

		CTX("%s", e);
		EQ(xrl_redirect_parse(e, strlen(e), &ask, &slot, host, sizeof(host), &port), 0);
		EQ(ask, good[i].ask);
		EQ(slot, good[i].slot);
		STR_EQ(host, good[i].host);
		EQ(port, good[i].port);
	}
	static const char *const bad[] = {
		"MOVED",
		"MOVED 16384 h:1",
		"MOVED x h:1",
		"MOVED 1 h",
		"MOVED 1 h:0",
		"MOVED 1 h:65536",
		"ASK 1 h:1x",
		"ERR unknown",
		"NOSCRIPT No matching script",
		"MOVED 1  ",
		"CLUSTERDOWN The cluster is down",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CTX("bad redirect '%s'", bad[i]);
		EQ(xrl_redirect_parse(bad[i], strlen(bad[i]), &ask, &slot, host, sizeof(host),
				      &port),
		   -EINVAL);
	}
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(t_crc16),
		cmocka_unit_test(t_hash_tags),
		cmocka_unit_test(t_slot_map),
		cmocka_unit_test(t_redirects),
	};

	return cmocka_run_group_tests(t, NULL, NULL);
}
