// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * allowlist.c - does a prefix overlap an interface's allowlist: asked
 * before a penalty or a fleet entry denies it.
 */
#include <string.h>

#include <bpf/bpf.h>

#include "xrld.h"

/*
 * Does prefix p overlap the allowlist, either way round: covered by an
 * entry (one LPM lookup) or covering one (a walk over the allowlist, only
 * when a penalty is due, which the strike rules make rare)?
 */
bool xrld_allow_overlaps(struct xrld_iface *f, const struct xrl_prefix *p)
{
	bool v4 = p->family == XRL_AF_INET;
	int fd = xrl_map_fd(f->h, v4 ? XRL_MAP_ALLOW_V4 : XRL_MAP_ALLOW_V6);
	struct xrl_lpm_v6 k = { .prefixlen = p->plen }, nk, ck;
	size_t ksz = v4 ? sizeof(struct xrl_lpm_v4) : sizeof(struct xrl_lpm_v6);
	struct xrl_allow_val v;
	__u32 m[4];
	void *prev = NULL;

	memcpy(k.addr, p->addr, 16);
	if (!bpf_map_lookup_elem(fd, &k, &v))
		return true;
	xrl_prefix_mask(p->family, p->plen, m);
	while (!bpf_map_get_next_key(fd, prev, &nk)) {
		memcpy(&ck, &nk, ksz);
		prev = &ck;
		if (ck.prefixlen < p->plen)
			continue;
		if ((ck.addr[0] & m[0]) == p->addr[0] &&
		    (v4 ||
		     ((ck.addr[1] & m[1]) == p->addr[1] && (ck.addr[2] & m[2]) == p->addr[2] &&
		      (ck.addr[3] & m[3]) == p->addr[3])))
			return true;
	}
	return false;
}
