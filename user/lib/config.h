/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * config.h - xrld's policy file (YAML, parsed with libyaml).
 *
 * Errors name the file, line and column and say what was expected:
 *   "policy.yaml:12:7: rate: expected COUNT/PERIOD such as 100/s, got '100'"
 */
#ifndef XRL_CONFIG_H
#define XRL_CONFIG_H

#include <net/if.h>
#include <stdbool.h>

#include <jansson.h>

#include "http_cfg.h"
#include "xrl.h"

#define XRL_CFG_MAX_IFACES 16
#define XRL_FLEET_MAX_PROTECT 64	 /* fleet.protect entries */
#define XRL_FLEET_MEMBERS_DEFAULT 64	 /* fleet.max_members when not given */
#define XRL_FLEET_MEMBERS_MAX	  65536
/* The longest a fleet entry denies a prefix on a host whose penalties are
 * off (with them: penalty.max); an entry with no expiry gets this too. */
#define XRL_FLEET_DENY_MAX_NS (3600ULL * 1000000000ULL)

struct xrl_iface_cfg {
	char name[IF_NAMESIZE];
	enum xrl_attach_mode mode; /* native (default) | skb | auto */
};

/* A source refused in `strikes` separate windows is denied for `base`,
 * doubling on each repeat up to `max`. */
struct xrl_penalty_cfg {
	bool enabled; /* false when the section is absent */
	__u32 strikes;
	__u64 window_ns;
	__u64 base_ns;
	__u64 max_ns;
	__u8 floor4; /* shortest prefix a penalty denies: /24 */
	__u8 floor6; /* and for IPv6: /48 */
};

/*
 * The fleet (top-level `fleet: {name, redis}`, and `http.fleet: NAME`):
 * instances of one name share penalties and packet-tier denials through
 * one Redis, and count each other for NODE_SHARE. Resolved after parsing:
 * the Redis is fleet.redis, else the identity tier's redis:// backend.
 */
struct xrl_fleet_cfg {
	bool enabled;	/* a fleet is configured (either way) */
	bool packet;	/* a top-level fleet: section: packet-tier denials shared */
	char name[64];	/* [A-Za-z0-9_.-], 1 to 63 bytes */
	bool own_redis; /* fleet.redis was given (else the backend's) */
	char redis_host[128];
	int redis_port;
	int redis_db;
	char redis_user[64];
	char redis_pass[256]; /* never logged */
	bool redis_cluster;   /* a redis-cluster:// URL: the fleet's slot's master */
	char redis_seeds[512]; /* then its seeds, "HOST:PORT,..." */
	/* fleet.protect: prefixes no fleet entry may cover (admin networks,
	 * monitoring), besides the allowlist, the fleet's Redis and this
	 * host's own addresses, which are always protected */
	__u32 n_protect;
	struct xrl_prefix protect[XRL_FLEET_MAX_PROTECT];
	/* fleet.max_members: the live count NODE_SHARE may divide by; a
	 * larger count read from Redis is forged or a misconfiguration */
	__u32 max_members;
};

struct xrld_config {
	__u32 n_ifaces;
	struct xrl_iface_cfg ifaces[XRL_CFG_MAX_IFACES];
	bool has_xdp;		  /* an xdp: section was present */
	struct xrl_policy policy; /* xdp.rules and xdp.allow */
	__u32 buckets_max;	  /* xdp.buckets: 0 = default */
	__u64 event_interval_ns;  /* xdp.event_interval: 0 = default 1s */
	bool kernel_cookies;	  /* xdp.cookie_path: kernel (default auto: xrl's
				   * own where the kernel can take them) */
	struct xrl_penalty_cfg penalty;
	char metrics[64];	  /* "127.0.0.1:8434"; "" = off */
	char metrics_host[64];	  /* metrics parsed once: HOST (brackets off) */
	int metrics_port;	  /* and PORT */
	bool on_exit_detach;	  /* on_exit: detach | keep (default) */
	int log_level;		  /* log_level: error|warning|info|debug; -1 unset */
	bool has_http;		  /* an http: section (the identity tier) */
	struct xrl_http_cfg http; /* valid when has_http */
	struct xrl_fleet_cfg fleet;
};

/* Parse a YAML policy from a buffer; `name` is used in error messages. */
int xrl_config_parse(const char *buf, size_t len, const char *name, struct xrld_config *out,
		     char *err, size_t errlen);
/* Whether a parse reads http.caller_secret_file (default true). The
 * identity process runs as another user and takes the secret from xrld:
 * its parse only notes the path. */
void xrl_config_secret_files(bool read);
/* Read and parse a file. */
int xrl_config_load(const char *path, struct xrld_config *out, char *err, size_t errlen);
/* As xrl_config_load, and the bytes parsed in *text (malloc'd, *textlen
 * long; not terminated) when it succeeds. */
int xrl_config_load_text(const char *path, struct xrld_config *out, char **text, size_t *textlen,
			 char *err, size_t errlen);
/* A human summary (for --check and `policy show`), into buf: XRL_SUMMARY_MAX
 * bytes hold any policy's. */
#define XRL_SUMMARY_MAX (1 << 16)
int xrl_config_summary(const struct xrld_config *c, char *buf, size_t len);
/* The policy as structured JSON (`policy show --json`), NULL on no memory:
 * {"interfaces":[{"name","mode"}],"xdp":{"rules":[...],"allow":[...]}|null,
 *  "penalty":{...}|null,"metrics":..,"http":{...}|null} */
json_t *xrl_config_json(const struct xrld_config *c);
/* A rate as a policy file writes it: "100/s", "10/min", "1/6s". */
const char *xrl_rate_str(const struct xrl_rate *r, char *buf, size_t len);
/* An http rule in full, as `policy show --json` and the identity tier's
 * status give it: key, rate and burst or null, concurrency and lease_ttl or
 * null, cost, shadow, on_missing_key, on_backend_error, vouch. */
json_t *xrl_http_rule_json(const struct xrl_http_rule *r);
/* The http section as `policy show --json` gives it (no secret in it). */
json_t *xrl_http_cfg_json(const struct xrl_http_cfg *h);
/* "client_ip", "global", "bearer", "header:X-Api-Key". */
const char *xrl_http_key_str(const struct xrl_http_rule *r, char *buf, size_t len);
/* "memory", "redis://HOST:PORT/DB", "redis-cluster://SEEDS": never a
 * user or password. */
const char *xrl_http_backend_str(const struct xrl_http_cfg *h, char *buf, size_t len);
struct xrl_buf;
/* The http section as policy check and policy show print it. */
void xrl_http_summary(struct xrl_buf *b, const struct xrl_http_cfg *h);
/* --check and `policy check`: load path into a new *cfg and its summary
 * into a new *summary (free both), or fail with err saying why. */
int xrl_config_check(const char *path, struct xrld_config **cfg, char **summary, char *err,
		     size_t errlen);

#endif /* XRL_CONFIG_H */
