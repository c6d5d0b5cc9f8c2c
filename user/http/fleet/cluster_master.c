// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * cluster_master.c - where a fleet meets on a Redis Cluster: all its keys
 * carry one hash tag ({fleet:NAME}), so one master serves them all, and
 * fleet.c keeps one connection to that master. This finds it: the seeds
 * are asked in turn for CLUSTER SLOTS (redis/slots.c reads the answer)
 * until one answers. Called at every (re)connect of the fleet's thread:
 * after a MOVED (the slot moved) or a lost master (a failover), so the
 * map is always read fresh, never kept. Blocking, 500 ms per seed to
 * connect and 1 s per command: the fleet's thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "cluster_master.h"
#include "config.h"
#include "http/http.h"
#include "log.h"
#include "http/redis/slots.h"

static struct timeval tv_us(__u64 us)
{
	return (struct timeval){ (time_t)(us / 1000000), (suseconds_t)(us % 1000000) };
}

/* One seed's CLUSTER SLOTS into m; 0 or -errno (-EACCES: AUTH refused),
 * within cto_us to connect and to_us a command. */
static int seed_slots(const struct xrl_fleet_cfg *c, const char *host, int port,
		      struct xrl_slot_map *m, __u64 cto_us, __u64 to_us)
{
	struct timeval to = tv_us(to_us);
	redisContext *rc = redisConnectWithTimeout(host, port, tv_us(cto_us));
	struct xrl_reader_guard *g = NULL;
	redisReply *r = NULL;
	int err = -EIO;

	if (!rc || rc->err)
		goto out;
	redisSetTimeout(rc, to);
	g = xrl_reader_guard_new(rc->reader); /* a seed's reply is bounded too */
	if (!g) {
		err = -ENOMEM;
		goto out;
	}
	if (c->redis_pass[0]) {
		r = c->redis_user[0] ? redisCommand(rc, "AUTH %s %s", c->redis_user, c->redis_pass)
				     : redisCommand(rc, "AUTH %s", c->redis_pass);
		if (!r || r->type == REDIS_REPLY_ERROR) {
			err = -EACCES;
			goto out;
		}
		freeReplyObject(r);
		xrl_reader_guard_reset(g);
	}
	r = redisCommand(rc, "CLUSTER SLOTS");
	if (!r || r->type != REDIS_REPLY_ARRAY)
		goto out;
	err = xrl_slot_map_parse(m, r, host);
	err = err < 0 ? err : 0;
out:
	if (r)
		freeReplyObject(r);
	if (rc)
		redisFree(rc);
	free(g);
	return err;
}

/*
 * The master of key's slot, from the first seed that answers with a map
 * in which a master serves it: 0 with *out; -EHOSTUNREACH when no seed
 * did (all down, or the slot has no master: a failover not done yet),
 * -EACCES when a seed refused AUTH and none answered. Each seed gets
 * cto_us to connect and to_us a command.
 */
int xrl_fleet_cluster_owner_to(const struct xrl_fleet_cfg *c, const char *key,
			       struct xrl_node_addr *out, __u64 cto_us, __u64 to_us)
{
	struct xrl_slot_map *m = calloc(1, sizeof(*m)); /* 41 KiB: not on a stack */
	unsigned slot = xrl_key_slot(key, strlen(key));
	const char *p = c->redis_seeds, *comma;
	int rc = -EHOSTUNREACH;

	if (!m)
		return -ENOMEM;
	for (; p && *p; p = comma ? comma + 1 : NULL) {
		char host[128];
		int port;

		comma = strchr(p, ',');
		if (xrl_hostport_parse(p, comma ? (size_t)(comma - p) : strlen(p), host,
				       sizeof(host), &port))
			continue; /* checked when the configuration was read */
		int e = seed_slots(c, host, port, m, cto_us, to_us);

		if (e == -EACCES)
			rc = -EACCES; /* said, unless another seed answers */
		if (e || m->master[slot] == XRL_CLUSTER_NO_NODE)
			continue;
		*out = m->node[m->master[slot]];
		rc = 0;
		break;
	}
	free(m);
	return rc;
}

/* The fleet's thread: 500 ms a seed to connect, 1 s a command. */
int xrl_fleet_cluster_owner(const struct xrl_fleet_cfg *c, const char *key,
			    struct xrl_node_addr *out)
{
	return xrl_fleet_cluster_owner_to(c, key, out, 500000, 1000000);
}
