// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * owncookie.c - what xrl's own SYN cookies need from userspace
 * (include/xrl_syncookie.h, bpf/xrl_tc.h): whether this kernel can take
 * them, their keys, and what the SYN-ACK may offer on an interface (its
 * MTU, the namespace's TCP sysctls, read only). The loader writes the
 * result into xrl_cookie (xrl_cookie_refresh); xrld calls that once a
 * second, so an MTU or sysctl changed under a running xrld is followed.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>

#include "log.h"
#include "xrl.h"

/* A key lives this long before a fresh one takes over. */
#define XRL_CK_ROTATE_NS (24ULL * 3600 * XRL_NSEC_PER_SEC)

bool xrl_own_cookies_supported(void)
{
	static int known = -1;
	struct btf *btf;

	if (known >= 0)
		return known;
	btf = btf__load_vmlinux_btf();
	if (libbpf_get_error(btf)) {
		known = 0;
		return false;
	}
	known = btf__find_by_name_kind(btf, "bpf_sk_assign_tcp_reqsk", BTF_KIND_FUNC) > 0;
	btf__free(btf);
	return known;
}

static int read_int(const char *path, int dflt)
{
	FILE *f = fopen(path, "r");
	int v;

	if (!f)
		return dflt;
	if (fscanf(f, "%d", &v) != 1)
		v = dflt;
	fclose(f);
	return v;
}

__u8 xrl_cookie_opts(void)
{
	__u8 o = 0;

	if (read_int("/proc/sys/net/ipv4/tcp_sack", 1))
		o |= XRL_CKO_SACK;
	if (read_int("/proc/sys/net/ipv4/tcp_window_scaling", 1))
		o |= XRL_CKO_WSCALE;
	if (read_int("/proc/sys/net/ipv4/tcp_timestamps", 1))
		o |= XRL_CKO_TS;
	if (read_int("/proc/sys/net/ipv4/tcp_ecn", 2))
		o |= XRL_CKO_ECN;
	return o;
}

int xrl_iface_mtu(int ifindex)
{
	struct ifreq ifr = {};
	int fd, err = 0;

	/* an ioctl, not /sys/class/net: a process that only entered the
	 * interface's network namespace still sees the /sys of another */
	if (!if_indextoname((unsigned)ifindex, ifr.ifr_name))
		return -errno;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, SIOCGIFMTU, &ifr))
		err = -errno;
	close(fd);
	return err ? err : ifr.ifr_mtu;
}

void xrl_cookie_mss(int mtu, __u16 *mss4, __u16 *mss6)
{
	if (mtu <= 0)
		mtu = 1500;
	/* what tcp_mss_to_mtu's inverse gives a SYN-ACK: no options counted,
	 * as the kernel's advmss; IPv4's floor is 536 + 40, IPv6's 1280 */
	*mss4 = (__u16)(mtu - 40 < 536 ? 536 : mtu - 40 > 65495 ? 65495 : mtu - 40);
	*mss6 = (__u16)(mtu - 60 < 1220 ? 1220 : mtu - 60 > 65475 ? 65475 : mtu - 60);
}

static int fresh_key(struct xrl_cookie_key *k)
{
	size_t got = 0;

	while (got < sizeof(k->k)) {
		ssize_t n = getrandom((char *)k->k + got, sizeof(k->k) - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	k->made_ns = xrl_now_ns();
	if (!k->made_ns)
		k->made_ns = 1;
	return 0;
}

int xrl_cookie_cfg_next(struct xrl_cookie_cfg *c, bool own, int mtu, __u8 wscale, __u64 now,
			bool *rotated)
{
	int err;

	*rotated = false;
	for (int i = 0; i < 2; i++)
		if (!c->key[i].made_ns && (err = fresh_key(&c->key[i])))
			return err;
	c->key_id &= 1;
	/* the key not in use was last used a day ago: a cookie lives 137 s */
	if (now > c->key[c->key_id].made_ns &&
	    now - c->key[c->key_id].made_ns >= XRL_CK_ROTATE_NS) {
		if ((err = fresh_key(&c->key[c->key_id ^ 1])))
			return err;
		c->key_id ^= 1;
		*rotated = true;
	}
	c->own = own;
	c->opts = xrl_cookie_opts();
	c->wscale = wscale;
	xrl_cookie_mss(mtu, &c->mss4, &c->mss6);
	return 0;
}

/* The driver of an interface, as ethtool names it ("veth", "mlx5_core"). */
int xrl_iface_driver(const char *ifname, char *out, size_t n)
{
	struct ethtool_drvinfo di = { .cmd = ETHTOOL_GDRVINFO };
	struct ifreq ifr = {};
	int fd, err = 0;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&di;
	if (ioctl(fd, SIOCETHTOOL, &ifr))
		err = -errno;
	close(fd);
	if (!err)
		snprintf(out, n, "%s", di.driver);
	return err;
}
