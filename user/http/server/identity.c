// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * identity.c - who a request is from and what it asks: the client address
 * (trusted proxies walked), the key a rule counts (a header, a bearer
 * token's digest, the address), and the original method and path.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>
#include <openssl/evp.h>

#include "privs.h"
#include "http/http.h"
#include "log.h"
#include "report.h"
#include "server_int.h"

bool xrl_srv_peer_text(struct MHD_Connection *conn, char *out, size_t len)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	snprintf(out, len, "unknown");
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out,
			  (socklen_t)len);
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out,
			  (socklen_t)len);
	else
		return false;
	return true;
}

static bool peer_trusted(const struct xrl_http_cfg *c, const char *peer)
{
	struct xrl_prefix p;

	return !xrl_http_addr_parse(peer, strlen(peer), &p) && xrl_http_trusted(c, &p);
}

/* All X-Forwarded-For fields, in order, as one list (RFC 9110 5.3): a proxy
 * may add its own field line after the client's instead of appending. */
static enum MHD_Result xff_join(void *cls, enum MHD_ValueKind kind, const char *key,
				const char *value)
{
	struct xrl_buf *b = cls;

	(void)kind;
	if (key && value && !strcasecmp(key, "X-Forwarded-For"))
		xrl_buf_printf(b, "%s%s", b->len ? "," : "", value);
	return MHD_YES;
}

/* The client address (xrl_http_client_addr): X-Forwarded-For is read only
 * when the peer is a trusted proxy. */
void xrl_srv_client_ip(const struct xrl_http_cfg *c, struct MHD_Connection *conn, char *out,
		       size_t len)
{
	char peer[INET6_ADDRSTRLEN];
	struct xrl_buf xb = {};

	xrl_srv_peer_text(conn, peer, sizeof(peer));
	if (peer_trusted(c, peer))
		MHD_get_connection_values(conn, MHD_HEADER_KIND, xff_join, &xb);
	xrl_http_client_addr(c, peer, xb.oom ? NULL : xb.p, xb.oom ? 0 : xb.len, out, len);
	xrl_buf_free(&xb);
}

/*
 * The key of a client address: an IPv4 address as it is, an IPv6 address
 * as its /64 (one subscriber's allocation; keying on the full address would
 * give one client 2^64 buckets), as the packet tier does by default.
 */
void xrl_srv_client_key(const char *ip, char *out, size_t len)
{
	struct xrl_prefix p;
	__u32 m[4];

	if (!strchr(ip, ':') || xrl_http_addr_parse(ip, strlen(ip), &p)) {
		snprintf(out, len, "%s", ip);
		return;
	}
	xrl_prefix_mask(XRL_AF_INET6, 64, m);
	for (int i = 0; i < 4; i++)
		p.addr[i] &= m[i];
	p.plen = 64;
	xrl_prefix_str(&p, out, len);
}

/* Bearer tokens are never kept or logged: the key is a SHA-256 prefix. */
static bool bearer_key(struct MHD_Connection *conn, char *out, size_t len)
{
	const char *a = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (!a || strncasecmp(a, "Bearer ", 7))
		return false;
	a += 7;
	while (*a == ' ')
		a++;
	if (!*a || !EVP_Digest(a, strlen(a), md, &mdlen, EVP_sha256(), NULL))
		return false;
	for (unsigned i = 0; i < 16 && 2 * i + 2 < len; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	return true;
}

struct fwd_scan {
	const char *mh, *uh, *m, *u;
	bool dup;
};

static enum MHD_Result fwd_scan_one(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	struct fwd_scan *f = cls;

	(void)kind;
	if (key && !strcasecmp(key, f->mh)) {
		f->dup |= f->m != NULL;
		f->m = value ? value : "";
	} else if (key && !strcasecmp(key, f->uh)) {
		f->dup |= f->u != NULL;
		f->u = value ? value : "";
	}
	return MHD_YES;
}

/*
 * The method and normalised path rules see (xrl_http_original): the
 * headers of http.forwarded_from, from a trusted proxy only. Returns 0, or
 * -errno once a 400 or 414 is queued (*ret its result).
 */
int xrl_srv_original_of(struct xrl_http_server *s, const struct xrl_http_cfg *c,
			struct MHD_Connection *conn, const char *method, const char *url,
			const char **om, char *path, size_t pathlen, enum MHD_Result *ret)
{
	struct fwd_scan f = {};
	char peer[INET6_ADDRSTRLEN];
	const char *why = "";
	bool trusted = false;
	int rc;

	xrl_http_fwd_headers(c->forwarded_from, &f.mh, &f.uh);
	if (f.mh) {
		xrl_srv_peer_text(conn, peer, sizeof(peer));
		trusted = peer_trusted(c, peer);
		if (trusted)
			MHD_get_connection_values(conn, MHD_HEADER_KIND, fwd_scan_one, &f);
		else if (MHD_lookup_connection_value(conn, MHD_HEADER_KIND, f.uh) &&
			 !atomic_exchange(&s->warned_untrusted, true))
			log_warnx("http: %s from %s is ignored, as %s is not in http.trusted_proxies: "
				  "rules see the request's own line (said once)",
				  f.uh, peer, peer);
	}
	rc = xrl_http_original(c, trusted, method, url, f.m, f.u, f.dup, om, path, pathlen, &why);
	if (!rc)
		return 0;
	if (rc == -ENAMETOOLONG) {
		atomic_fetch_add(&s->status[ST_414], 1);
		*ret = xrl_srv_problem(conn, 414, "URI Too Long", why);
	} else {
		atomic_fetch_add(&s->status[ST_400], 1);
		*ret = xrl_srv_problem(conn, 400, "Bad Request", why);
	}
	return rc;
}

/* The key of rule r for this request into kb (NULL: the request has none,
 * before on_missing_key); ip is the client address, found once. */
const char *xrl_srv_rule_key(const struct xrl_http_cfg *c, struct MHD_Connection *conn,
			     const struct xrl_http_rule *r, char *kb, size_t kblen, char *ip,
			     size_t iplen)
{
	const char *v = NULL;

	switch (r->key_kind) {
	case XRL_KEY_HEADER:
		v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, r->header);
		if (!v || !*v)
			return NULL;
		return v; /* whole: the limiter copies what it keeps (a 4 KiB JWT too) */
	case XRL_KEY_BEARER:
		return bearer_key(conn, kb, kblen) ? kb : NULL;
	case XRL_KEY_GLOBAL:
		return "*"; /* one bucket (or set of slots) for every request */
	case XRL_KEY_CLIENT_IP:
		break;
	}
	if (!ip[0])
		xrl_srv_client_ip(c, conn, ip, iplen);
	xrl_srv_client_key(ip, kb, kblen);
	return kb;
}

/*
 * Forward-auth: which rules match the original request, their keys, one
 * decision. nginx: refusals as 403 and shedding as 401 (see the top).
 */

void xrl_http_set_vouch(struct xrl_http_server *s, xrl_http_vouch_fn fn, void *arg)
{
	atomic_store(&s->vouch_arg, arg);
	atomic_store(&s->vouch_fn, fn);
}

void xrl_srv_vouch_admitted(struct xrl_http_server *s, const struct xrl_http_cfg *c,
			    struct MHD_Connection *conn, const struct xrl_http_rule *const *rules,
			    int n, const struct xrl_decision *d)
{
	xrl_http_vouch_fn fn = atomic_load(&s->vouch_fn);
	char ip[INET6_ADDRSTRLEN] = "";
	struct xrl_prefix p;
	__u64 ttl = 0;

	for (int i = 0; fn && i < n; i++) {
		bool shadowed = false;

		for (__u32 k = 0; k < d->n_shadow; k++)
			shadowed |= d->shadow[k] == rules[i];
		if (rules[i]->vouch && !shadowed && rules[i]->vouch_ttl_ns > ttl)
			ttl = rules[i]->vouch_ttl_ns;
	}
	if (!ttl)
		return;
	xrl_srv_client_ip(c, conn, ip, sizeof(ip));
	if (!xrl_http_addr_parse(ip, strlen(ip), &p))
		fn(atomic_load(&s->vouch_arg), &p, ttl);
}
