/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * http_cfg.h - the `http:` section of the policy file: the identity tier's
 * rules and settings as plain types. The library parses and checks them
 * (config.c, http_cfg.c) without depending on the tier that runs them
 * (user/http/), which includes this header in turn.
 */
#ifndef XRL_HTTP_CFG_H
#define XRL_HTTP_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "xrl.h"

#define XRL_HTTP_MAX_RULES   64
#define XRL_HTTP_MAX_TRUSTED 64
#define XRL_HTTP_MAX_CALLERS 64
#define XRL_HTTP_SECRET_MIN  16  /* bytes of http.caller_secret_file, at least */
#define XRL_HTTP_SECRET_MAX  256 /* and at most (one line; a final newline is cut) */
#define XRL_HTTP_SECRET_HDR  "X-Xrl-Caller-Secret"
#define XRL_HTTP_MAX_MATCH   8 /* rules one request is checked against */
#define XRL_HTTP_KEY_MAX \
	256 /* a derived key (address, bearer digest); header keys are used whole */
#define XRL_HTTP_PATH_MAX 8192 /* bytes of a request path (query cut); beyond: 414 */
#define XRL_HTTP_MAX_EXEMPT 16	     /* http.exempt entries */
#define XRL_HTTP_MAX_SHED   16	     /* http.shed routes */
#define XRL_HTTP_CONC_MAX   65536    /* a concurrency rule's slots per key */
#define XRL_HTTP_LEASE_TTL  (60 * XRL_NSEC_PER_SEC) /* lease_ttl's default */

enum xrl_key_kind {
	XRL_KEY_HEADER = 0, /* header:NAME */
	XRL_KEY_BEARER,	    /* Authorization: Bearer <token>, hashed */
	XRL_KEY_CLIENT_IP,  /* the client address (trusted proxies walked) */
	XRL_KEY_GLOBAL,	    /* one key for every request: the service's own limit */
};

enum xrl_backend_err {
	XRL_BE_OPEN = 0, /* allow (fail open: fairness limits) */
	XRL_BE_CLOSED,	 /* 503 (fail closed: capacity limits) */
	XRL_BE_LOCAL,	 /* an in-process bucket */
};

enum xrl_missing_key {
	XRL_MISSING_SKIP = 0,  /* the rule does not apply to this request */
	XRL_MISSING_REFUSE,    /* refuse: 429 naming the missing identity */
	XRL_MISSING_CLIENT_IP, /* fall back to the client address */
};

/*
 * Who tells xrld the original request's method and URI (http.forwarded_from).
 * The headers of the chosen kind are believed only from a trusted proxy;
 * those of any other kind are never read.
 */
enum xrl_fwd_from {
	XRL_FWD_NGINX = 0, /* X-Original-Method, X-Original-URI (default) */
	XRL_FWD_TRAEFIK,   /* X-Forwarded-Method, X-Forwarded-Uri */
	XRL_FWD_CADDY,	   /* the same headers as Traefik */
	XRL_FWD_ENVOY,	   /* ext_authz: the request's own method, its path after /v1/auth */
	XRL_FWD_NONE,	   /* the same as envoy: no header is read */
};

struct xrl_http_rule {
	char name[XRL_RULE_NAME_LEN];
	char method[16];       /* "" = any */
	char path_prefix[256]; /* "" = any */
	enum xrl_key_kind key_kind;
	char header[64]; /* for XRL_KEY_HEADER */
	struct xrl_rate rate;
	__u32 burst;
	__u32 cost;		  /* tokens per request, default 1 */
	struct xrl_gcra_params g; /* from rate and burst */
	enum xrl_backend_err on_backend_error;
	enum xrl_missing_key on_missing_key;
	bool shadow;
	__u32 id; /* xrl_rule_id(name) */
	bool has_rate;	     /* rate and burst given (a rule may have only concurrency) */
	bool cost_zero;	     /* cost: 0 was written: counted, never refused */
	__u32 concurrency;   /* requests held at once per key; 0: no such limit */
	__u64 lease_ttl_ns;  /* a slot not given back is free after this; 60 s */
	/* vouch: true: a request this rule admits vouches for the client's
	 * /24 or /48 in the packet tier's xrl_vouch map for vouch_ttl_ns
	 * (xrld writes it; docs/security.md says when to use it) */
	bool vouch;
	__u64 vouch_ttl_ns; /* default XRL_VOUCH_TTL_S */
	/* disarm: { refused_sources: P%, window: W }: xrld turns the rule to
	 * shadow when, over W, it refused more than P % of the callers it saw
	 * among those within XRL_DISARM_FAR x its rate (xrld/evidence.c);
	 * disarm_pct 0: never */
	__u32 disarm_pct;
	__u64 disarm_window_ns;
};
/* A caller sending more than this many times a rule's rate is "far over":
 * a flood's, never counted towards disarming the rule. */
#define XRL_DISARM_FAR 10

/* A method and path prefix, as a rule's match (http.exempt, http.shed). */
struct xrl_http_route {
	char method[16];       /* "" = any */
	char path_prefix[256]; /* "" = any */
};

/* One capacity bucket of http.shed's list form: the requests it matches. */
struct xrl_http_shed {
	struct xrl_http_route match;
	struct xrl_rate rate;
	__u32 burst;
	struct xrl_gcra_params g;
};

struct xrl_http_cfg {
	bool enabled;	 /* an http: section was present */
	char listen[64]; /* "127.0.0.1:8433" */
	/* listen parsed once (xrl_http_cfg_listen): its port, and its socket
	 * address when HOST is an address (AF_UNSPEC for a host name, which
	 * the tier does not resolve: it cannot listen there) */
	int listen_port;
	struct sockaddr_storage listen_addr;
	socklen_t listen_addrlen;
	bool redis;	 /* backend: redis://... */
	char redis_host[128];
	int redis_port;
	int redis_db;
	char redis_user[64];	   /* AUTH user (Redis 6 ACL); "": the default user */
	char redis_pass[256];	   /* AUTH password; "": no AUTH. Never logged */
	bool redis_cluster;	   /* backend: redis-cluster://; redis is true too */
	char redis_seeds[512];	   /* the cluster's seed nodes, "HOST:PORT,..." */
	__u64 redis_timeout_ns;	   /* connect and command; default 50 ms */
	__u64 breaker_cooldown_ns; /* how long a dead Redis is left alone; 1 s */
	__u32 n_trusted;
	struct xrl_prefix trusted[XRL_HTTP_MAX_TRUSTED];
	enum xrl_fwd_from forwarded_from; /* default nginx */
	bool ignore_path_case;		  /* match path_prefix case-insensitively */
	__u32 n_rules;
	struct xrl_http_rule rules[XRL_HTTP_MAX_RULES];
	bool x_ratelimit_headers; /* X-RateLimit-*; default on */
	bool ietf_headers;	  /* RateLimit-Policy / RateLimit; default on */
	__u32 max_connections;	  /* default 1024 */
	__u64 idle_timeout_ns;	  /* default 30 s; whole seconds, 1 s to 1 day */
	__u32 max_header_bytes;	  /* default 8192; beyond: 431 (the head, see docs/policy.md) */
	__u64 head_timeout_ns;	  /* a request's head read whole within; default 10 s */
	__u32 max_conn_per_peer;  /* connections of one peer address; 0: no bound */
	/* who may ask (http.callers): loopback and the trusted proxies always;
	 * these prefixes too. The direct peer's address, never a forwarded one */
	__u32 n_callers;
	struct xrl_prefix callers[XRL_HTTP_MAX_CALLERS];
	/* http.caller_secret_file: its content, which every caller must send in
	 * X-Xrl-Caller-Secret (len 0: none asked). Never logged or shown */
	char caller_secret_file[256];
	char caller_secret[XRL_HTTP_SECRET_MAX];
	__u32 caller_secret_len;
	__u32 memory_max_keys;	  /* in-process buckets; default 1,000,000 */
	__u32 threads;		  /* server threads; default 2 */
	bool shed_enabled;	  /* shed: global capacity bucket -> 503 */
	struct xrl_rate shed_rate;
	__u32 shed_burst;
	struct xrl_gcra_params shed_g;
	struct {
		bool enabled;
		__u32 strikes;
		__u64 window_ns, base_ns, max_ns;
	} penalty; /* key escalation, as in the packet tier */
	/* never refused, never counted: health checks, load-balancer probes */
	__u32 n_exempt;
	struct xrl_http_route exempt[XRL_HTTP_MAX_EXEMPT];
	/* shed: as a list, a capacity bucket per route; the first that matches
	 * a request is the one it is shed by (shed_enabled: the mapping form) */
	__u32 n_shed;
	struct xrl_http_shed shed[XRL_HTTP_MAX_SHED];
	char fleet[64]; /* http.fleet: the fleet this instance counts in; "": none */
};

/*
 * The secret in file path (http.caller_secret_file) into c: its bytes, one
 * final newline (LF or CRLF) cut, XRL_HTTP_SECRET_MIN to _MAX of them, each
 * visible ASCII (0x21-0x7e). Returns 0, or -errno with err saying why (never
 * what the file holds).
 */
int xrl_http_secret_load(struct xrl_http_cfg *c, const char *path, char *err, size_t errlen);
/* a is loopback (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104). */
bool xrl_http_loopback(const struct xrl_prefix *a);
/* a may ask the identity tier: loopback, a trusted proxy, or in http.callers. */
bool xrl_http_caller_ok(const struct xrl_http_cfg *c, const struct xrl_prefix *a);

/* Fill defaults for a new http: section. */
void xrl_http_cfg_init(struct xrl_http_cfg *c);
/* Validate and derive (gcra params, ids); err names the problem. */
int xrl_http_cfg_finish(struct xrl_http_cfg *c, char *err, size_t errlen);
/* "redis://HOST:PORT[/DB]", "redis-cluster://HOST:PORT[,HOST:PORT...]" or
 * "memory". */
int xrl_http_backend_parse(const char *s, struct xrl_http_cfg *c, char *err, size_t errlen);
/* HOST:PORT or [V6]:PORT, the n bytes at s (HOST an IPv4 address or a host
 * name): host (brackets off) and port. -EINVAL: not that shape, or not such
 * a host, or one too long; -ERANGE: the port is not a number from 1 to
 * 65535. */
int xrl_hostport_parse(const char *s, size_t n, char *host, size_t hostlen, int *port);
/* c->listen = s (HOST:PORT or [V6]:PORT) with its port and socket address,
 * the one parse of it; -EINVAL: not that shape or too long, c unchanged. */
int xrl_http_cfg_listen(struct xrl_http_cfg *c, const char *s);

/*
 * The path a rule is matched against, from a request target (the n bytes at
 * in: origin-form "/p?q", or absolute-form "http://h/p"), into out (at most
 * n + 1 bytes are written, NUL included; the result is never longer than
 * the input). What the backend could route to one handler comes out as one
 * string: query and fragment cut; %XX of unreserved characters and of '/'
 * decoded (as nginx does), other escapes kept with upper-case hex; ";params"
 * cut from each segment (Tomcat's "..;/"); "." and ".." segments removed
 * (RFC 3986 5.2.4, ".." above the root stays at the root); runs of '/'
 * merged. Case is kept (RFC 3986: paths are case-sensitive).
 * Returns the length, -EINVAL for what no server accepts (an empty or
 * relative target, a bad or truncated escape, %00, a control byte), or
 * -ENAMETOOLONG when the path does not fit outlen. Idempotent: normalising
 * the result again gives it back.
 */
int xrl_http_path_norm(const char *in, size_t n, char *out, size_t outlen);

#endif /* XRL_HTTP_CFG_H */
