// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * gen.c - xrl-gen, a fast bounded SYN / UDP generator for the lab.
 *
 * Where xrl-synflood writes frames to an AF_PACKET socket (the receiving
 * veth then turns each skb into an XDP buffer, which a real NIC never does),
 * xrl-gen has a small XDP program (gen.bpf.c) transmit them: it runs the
 * program with BPF_PROG_RUN in live-frame mode (BPF_F_TEST_XDP_LIVE_FRAMES)
 * with the sending interface as the ingress device, and the program returns
 * XDP_TX, which the kernel turns into a redirect out of that interface. On a
 * veth the frames reach the peer as XDP frames (ndo_xdp_xmit) and run the
 * peer's XDP program natively, on the sender's CPU - the closest this
 * machine gets to a NIC's receive path.
 *
 * The peer veth must accept XDP frames: it needs an XDP program attached or
 * GRO enabled (ethtool -K PEER gro on); otherwise the kernel drops every
 * frame without telling the sender, and xrl-gen stops with an error saying
 * so. The program is kept attached to a harmless place while it runs (see
 * "the keeper" below): without that, every BPF_PROG_RUN call costs two RCU
 * grace periods.
 *
 * Counting. "sent" is what the veth accepted into the peer's receive ring:
 * the program's own per-CPU count of XDP_TX verdicts less the frames the
 * veth refused (ring full), from the device's tx_queue_*_xdp_xmit and
 * tx_queue_*_xdp_xmit_errors ethtool counters. Those are per device: when
 * another XDP sender (another xrl-gen) uses the same interface at the same
 * time, its refusals cannot be told from ours and our share is estimated
 * (see accepted()). On a device without those counters (--allow-physical)
 * the program's count is reported.
 *
 * --count N counts accepted frames: what the senders' shares lose to a full
 * ring is made up at the end by one sender (see top_up()).
 *
 * Pacing: --rate is the total over all threads, split evenly; each thread
 * runs a token bucket against CLOCK_MONOTONIC and sends about a
 * millisecond's worth of frames per BPF_PROG_RUN call; without --rate each
 * call sends --batch frames.
 *
 * Threads are pinned (--cpus, or spread over the usable CPUs). The peer's
 * receive work runs in the softirq of the CPU that scheduled its NAPI poll:
 * on a veth with one receive queue (the default) all senders share one
 * ring and one poll, which mostly runs on one CPU; a veth made with
 * numrxqueues N gives each sender CPU its own ring and poll.
 *
 * Output, one line on stdout:  sent=N duration_ms=M pps=P
 * Exit 0 ok, 1 runtime error, 2 usage error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define PROG          "xrl-gen"
#include "flood.h"
#include "gen.h"
#include "gen.skel.h"

#define BATCH_DEF     1024
#define BATCH_MAX     65536
#define KBATCH_MAX    64          /* frames per kernel round (<= 256) */
#define FRAME_MIN     60          /* Ethernet minimum without the FCS */
#define FRAME_MAX     3000        /* fits a live-frame page with room */

/* ---- configuration -------------------------------------------------------- */

/* --sources NULL: the interface's own address; threads 0: not given. */
static struct {
	FLOOD_GROUP();
} C = { .dport = -1, .vlan = -1, .batch = BATCH_DEF };

struct thr {
	pthread_t tid;
	int idx;
	int cpu;                   /* -1 = not pinned */
	uint64_t rate;             /* this thread's share, 0 = max */
	uint64_t count;            /* this thread's share, 0 = unbounded */
	uint64_t offered;          /* frames handed to BPF_PROG_RUN */
	uint64_t calls;
	uint64_t t_first, t_last;  /* CLOCK_MONOTONIC ns */
	int err;                   /* fatal errno, 0 = none */
};

static uint8_t g_frame[FRAME_MAX];
static unsigned g_flen;
static int g_prog_fd;
static atomic_int g_live;

/* ---- messages --------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: " PROG " --dev IFACE --dst-mac MAC --dst IP --dport N\n"
"               (--duration SEC | --count N) [options]\n"
"\n"
"Transmit TCP SYNs (or UDP datagrams) from spoofed sources out of IFACE with\n"
"an XDP program run in live-frame mode (BPF_PROG_RUN): on a veth the frames\n"
"reach the peer as XDP frames, like a NIC's receive. The peer needs an XDP\n"
"program or GRO on (ethtool -K PEER gro on). Prints: sent=N duration_ms=M pps=P\n"
"\n"
"  --dev IFACE        veth to send on (required)\n"
"  --dst-mac MAC      destination MAC, aa:bb:cc:dd:ee:ff (required)\n"
"  --dst IP           destination IPv4 or IPv6 address (required); IPv6 makes\n"
"                     IPv6 frames\n"
"  --dport N          destination port (required)\n"
"  --src-mac MAC      source MAC (default: IFACE's own)\n"
"  --sources CIDR     source address and prefix (default: IFACE's own address,\n"
"                     /32 or /128); alone, every frame comes from its address\n"
"  --nsrc N           N sequential sources from the --sources address, round\n"
"                     robin (per sender CPU); must stay inside the prefix\n"
"  --random           random sources inside the --sources prefix\n"
"  --random-dport     a random destination port per frame (1..65535)\n"
"  --udp              UDP datagrams instead of TCP SYNs\n"
"  --vlan ID          add an 802.1Q tag with VLAN ID (0..4095)\n"
"  --size BYTES       frame length without FCS; bytes past the headers are L4\n"
"                     payload (default: headers only, padded to %d)\n"
"  --rate PPS         total frames per second, 0 = as fast as possible (default)\n"
"  --duration SEC     stop after SEC seconds (decimals allowed)\n"
"  --count N          stop after N frames in total taken by the device (frames\n"
"                     its full ring refused are sent again)\n"
"  --threads N        sender threads (default 1, or one per --cpus entry;\n"
"                     at most %d)\n"
"  --cpus LIST        pin thread i to CPU LIST[i %% len], e.g. 0 or 0,1 or 0-3\n"
"                     (default: threads spread over the usable CPUs; a single\n"
"                     thread stays on the CPU it starts on)\n"
"  --batch N          frames per BPF_PROG_RUN call at full speed (default %d,\n"
"                     at most %d)\n"
"  --allow-physical   also send on a device that is not a veth (spoofed frames\n"
"                     must not leave the machine by mistake)\n"
"  -v, --verbose      details on stderr\n"
"  -h, --help         this text\n"
"\n"
"Exit: 0 ok, 1 runtime error, 2 usage error.\n",
		FRAME_MIN, MAX_THREADS, BATCH_DEF, BATCH_MAX);
}

/* ---- argument parsing --------------------------------------------------------- */

static uint64_t parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	uint64_t v = parse_num(opt, s, 10, false);

	if (v < min || v > max)
		die_usage("%s: %s is outside %" PRIu64 "..%" PRIu64, opt, s, min, max);
	return v;
}

static uint64_t parse_max(const char *opt, const char *s, uint64_t max)
{
	return parse_u64(opt, s, 0, max);
}

static void parse_args(int argc, char **argv)
{
	/* --dport 1..65535 and required; --rate up to 1e9 frames/s */
	static const struct flood_limits lim = { .takes = FO_BIT(FO_RANDOM) |
							  FO_BIT(FO_RAND_DPORT) | FO_BIT(FO_SIZE),
						 .num = parse_max,
						 .dport_min = 1,
						 .rate_max = 1000000000,
						 .size_max = FRAME_MAX,
						 .batch_max = BATCH_MAX,
						 .usage = usage };

	flood_parse(argc, argv, &C.a, &lim);
	if (C.dport < 0)
		die_usage("--dport N is required");
	if (C.random && C.nsrc)
		die_usage("--random and --nsrc exclude each other");
	if (!C.threads)
		C.threads = C.n_cpus ? C.n_cpus : 1;
	if (C.n_cpus > C.threads && C.verbose)
		fprintf(stderr, PROG ": note: %d CPUs listed for %d threads; the last "
			"ones are unused\n", C.n_cpus, C.threads);
}

/* ---- the interface ------------------------------------------------------------ */

/* The interface's own address of C.family (IPv6: global before link-local). */
static bool iface_addr(uint8_t out[16])
{
	struct ifaddrs *ifa, *i;
	bool found = false;

	if (getifaddrs(&ifa))
		die("couldn't list the addresses of %s: %s", C.dev, strerror(errno));
	for (int pass = 0; pass < 2 && !found; pass++) {
		for (i = ifa; i && !found; i = i->ifa_next) {
			if (!i->ifa_addr || i->ifa_addr->sa_family != C.family ||
			    strcmp(i->ifa_name, C.dev))
				continue;
			if (C.family == AF_INET) {
				memcpy(out, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
				found = true;
			} else {
				const struct in6_addr *a =
					&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;

				if (pass == 0 && IN6_IS_ADDR_LINKLOCAL(a))
					continue;
				memcpy(out, a, 16);
				found = true;
			}
		}
	}
	freeifaddrs(ifa);
	return found;
}

static size_t l3_off(void)
{
	return fl_l3_off(C.vlan);
}

static size_t l4_off(void)
{
	return fl_l4_off(C.vlan, C.family);
}

static size_t hdr_len(void)
{
	return l4_off() + (C.udp ? UDP_HLEN : TCP_HLEN);
}

static void iface_setup(void)
{
	struct ifreq ifr = { 0 };
	struct ethtool_drvinfo di = { .cmd = ETHTOOL_GDRVINFO };
	int fd = iface_socket();

	C.ifindex = (int)if_nametoindex(C.dev);
	if (!C.ifindex)
		die_usage("--dev: no interface '%s' in this network namespace", C.dev);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", C.dev);
	ifr.ifr_data = (char *)&di;
	if (ioctl(fd, SIOCETHTOOL, &ifr))
		di.driver[0] = '\0';
	if (strcmp(di.driver, "veth") && !C.allow_physical)
		die_usage("--dev %s (driver '%s') is not a veth: refusing to send spoofed "
			  "frames out of this machine; add --allow-physical if that is "
			  "really meant", C.dev, di.driver[0] ? di.driver : "unknown");
	if (!C.has_src_mac) {
		iface_get(fd, C.dev, SIOCGIFHWADDR, &ifr, "MAC");
		memcpy(C.src_mac, ifr.ifr_hwaddr.sa_data, 6);
	}
	iface_get(fd, C.dev, SIOCGIFFLAGS, &ifr, "flags");
	if (!(ifr.ifr_flags & IFF_UP))
		die("couldn't send on %s: the interface is down", C.dev);
	iface_get(fd, C.dev, SIOCGIFMTU, &ifr, "MTU");
	close(fd);

	if (C.size && C.size < hdr_len())
		die_usage("--size %u is below the %zu bytes of the headers", C.size, hdr_len());
	g_flen = C.size ? C.size : (unsigned)(hdr_len() > FRAME_MIN ? hdr_len() : FRAME_MIN);
	if (C.size && C.size - l3_off() > (size_t)ifr.ifr_mtu)
		die_usage("--size %u makes %zu-byte packets, above the MTU %d of %s",
			  C.size, C.size - l3_off(), ifr.ifr_mtu, C.dev);

	/* the source population */
	if (C.sources) {
		if (parse_cidr("--sources", C.sources, C.src, &C.src_plen, parse_max) !=
		    C.family)
			die_usage("--sources %s and --dst are of different families", C.sources);
	} else {
		if (!iface_addr(C.src))
			die_usage("%s has no %s address to send from: give --sources", C.dev,
				  C.family == AF_INET ? "IPv4" : "IPv6");
		C.src_plen = C.family == AF_INET ? 32 : 128;
	}
	/* sequential from the given address, inside the prefix */
	if (C.nsrc && !src_seq_fits(C.family, C.src, C.src_plen, C.nsrc))
		die_usage("--nsrc %" PRIu64 " from %s runs past the end of its prefix "
			  "/%d (give a wider one, e.g. --sources 198.51.100.0/24)",
			  C.nsrc, C.sources ? C.sources : "the interface's address",
			  C.src_plen);
	if (!C.nsrc && C.random)
		src_zero_host(C.src, C.src_plen);
}

/* ---- the template frame and its checksum sums ------------------------------------ */

static void build_frame(struct xrl_gen_cfg *g)
{
	size_t l4len = (C.size ? C.size : hdr_len()) - l4_off();
	struct fl_spec spec = {
		.dst_mac = C.dst_mac, .src_mac = C.src_mac, .vlan = C.vlan,
		.family = C.family, .dst = C.dst, .udp = C.udp,
		.dport = C.rand_dport ? -1 : C.dport, .l4_len = l4len,
	};

	fl_init(g_frame, sizeof(g_frame), &spec);
	/* the source, the IPv4 check, sport, seq, the L4 checksum and a
	 * random dport are zero here: the program writes them and adds them
	 * to the sums */
	if (C.family == AF_INET)
		g->ip_sum = csum_add(0, g_frame + l3_off(), sizeof(struct fl_ip4));
	g->l4_sum = csum_add(csum_pseudo(C.family, C.dst, C.udp, l4len),
			     g_frame + l4_off(), l4len);
	/* whole words: of a frame whose length is not a multiple of 4 the
	 * last 1-3 bytes are left as they are (an untagged IPv6 TCP frame's
	 * urgent pointer, which no answer sets) */
	g->tmpl_len = (g_flen < XRL_GEN_TMPL ? g_flen : XRL_GEN_TMPL) & ~3u;
	memcpy(g->tmpl, g_frame, g->tmpl_len);
}

static void fill_cfg(struct xrl_gen_cfg *g)
{
	memset(g, 0, sizeof(*g));
	g->ifindex = (uint32_t)C.ifindex;
	g->family = C.family == AF_INET ? 4 : 6;
	g->l3_off = (uint32_t)l3_off();
	g->l4_off = (uint32_t)l4_off();
	g->udp = C.udp;
	g->rand_dport = C.rand_dport;
	memcpy(g->src, C.src, 16);
	if (C.nsrc) {
		g->mode = XRL_GEN_SEQ;
		g->nsrc = (uint32_t)C.nsrc;
		if (C.family == AF_INET) {
			g->base4 = ntohl(g->src[0]);
		} else {
			g->base6_hi = (uint64_t)ntohl(g->src[0]) << 32 | ntohl(g->src[1]);
			g->base6_lo = (uint64_t)ntohl(g->src[2]) << 32 | ntohl(g->src[3]);
		}
	} else if (C.random) {
		g->mode = XRL_GEN_RANDOM;
		for (int w = 0; w < 4; w++) {
			int bits = C.src_plen - w * 32;   /* prefix bits in this word */
			uint32_t m;

			if (C.family == AF_INET && w > 0)
				break;
			m = bits >= 32 ? 0 : bits <= 0 ? UINT32_MAX : UINT32_MAX >> bits;
			g->hostmask[w] = htonl(m);
		}
	} else {
		g->mode = XRL_GEN_ONE;
	}
	build_frame(g);
}

/* ---- the veth's XDP transmit counters (ethtool -S) ------------------------------- */

static struct {
	int fd;
	unsigned n;
	bool *is_xmit, *is_err;
	bool ok;
} S = { .fd = -1 };

static int ethtool_ioctl(void *cmd)
{
	struct ifreq ifr = { 0 };

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", C.dev);
	ifr.ifr_data = cmd;
	return ioctl(S.fd, SIOCETHTOOL, &ifr);
}

/* Finds tx_queue_<n>_xdp_xmit and tx_queue_<n>_xdp_xmit_errors. */
static void stats_init(void)
{
	struct {
		struct ethtool_sset_info hdr;
		uint32_t len;
	} ssi = { .hdr = { .cmd = ETHTOOL_GSSET_INFO, .sset_mask = 1ull << ETH_SS_STATS } };
	struct ethtool_gstrings *gs;
	unsigned found = 0;

	S.fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (S.fd < 0 || ethtool_ioctl(&ssi) || !ssi.hdr.sset_mask || !ssi.len)
		return;
	S.n = ssi.len;
	gs = calloc(1, sizeof(*gs) + (size_t)S.n * ETH_GSTRING_LEN);
	S.is_xmit = calloc(S.n, sizeof(bool));
	S.is_err = calloc(S.n, sizeof(bool));
	if (!gs || !S.is_xmit || !S.is_err)
		die("out of memory");
	gs->cmd = ETHTOOL_GSTRINGS;
	gs->string_set = ETH_SS_STATS;
	gs->len = S.n;
	if (ethtool_ioctl(gs)) {
		free(gs);
		return;
	}
	for (unsigned i = 0; i < S.n; i++) {
		char name[ETH_GSTRING_LEN + 1];
		const char *p = name + strlen("tx_queue_");

		memcpy(name, gs->data + (size_t)i * ETH_GSTRING_LEN, ETH_GSTRING_LEN);
		name[ETH_GSTRING_LEN] = '\0';
		if (strncmp(name, "tx_queue_", strlen("tx_queue_")) || !(*p >= '0' && *p <= '9'))
			continue;
		while (*p >= '0' && *p <= '9')
			p++;
		if (!strcmp(p, "_xdp_xmit")) {
			S.is_xmit[i] = true;
			found |= 1;
		} else if (!strcmp(p, "_xdp_xmit_errors")) {
			S.is_err[i] = true;
			found |= 2;
		}
	}
	free(gs);
	S.ok = found == 3;
}

static int stats_read(uint64_t *xmit, uint64_t *err)
{
	struct ethtool_stats *st;

	*xmit = *err = 0;
	if (!S.ok)
		return -1;
	st = calloc(1, sizeof(*st) + (size_t)S.n * sizeof(uint64_t));
	if (!st)
		die("out of memory");
	st->cmd = ETHTOOL_GSTATS;
	st->n_stats = S.n;
	if (ethtool_ioctl(st)) {
		free(st);
		return -1;
	}
	for (unsigned i = 0; i < S.n && i < st->n_stats; i++) {
		if (S.is_xmit[i])
			*xmit += st->data[i];
		if (S.is_err[i])
			*err += st->data[i];
	}
	free(st);
	return 0;
}

/* The program's per-CPU counters, summed. */
static void prog_counts(int map_fd, uint64_t *tx, uint64_t *bad)
{
	int ncpu = libbpf_num_possible_cpus();
	struct xrl_gen_ctr *v;
	uint32_t key = 0;

	*tx = *bad = 0;
	if (ncpu <= 0)
		die("couldn't count the possible CPUs: %s", strerror(-ncpu));
	v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		die("out of memory");
	if (bpf_map_lookup_elem(map_fd, &key, v))
		die("couldn't read the program's counters: %s", strerror(errno));
	for (int i = 0; i < ncpu; i++) {
		*tx += v[i].tx;
		*bad += v[i].bad;
	}
	free(v);
}

/*
 * Frames of ours the device took, from what the program sent (tx) and the
 * device's accepted and refused deltas (dx, de). Alone on the device
 * tx = dx + de and this is dx, exact. When another XDP sender used the
 * device at the same time (dx + de > tx) the refusals cannot be told apart:
 * ours are estimated as a share of them proportional to our part of all
 * the frames offered.
 */
static uint64_t accepted(uint64_t tx, uint64_t dx, uint64_t de)
{
	uint64_t offered = dx + de;

	if (tx >= offered)
		return dx < tx ? dx : tx;
	return tx - (uint64_t)((unsigned __int128)de * tx / offered);
}

/*
 * The keeper. BPF_PROG_RUN with repeat > 1 puts the program into the
 * kernel's XDP dispatcher for the length of the call and takes it out
 * again; each change waits for an RCU grace period (about 12 ms here), so
 * every call would cost ~25 ms whatever it sends. A program that is
 * attached somewhere stays in the dispatcher and the calls skip both
 * updates. So the program is attached, in generic mode through a BPF link
 * (detached when the process goes, however it goes), to a device where it
 * passes every packet untouched (its first test is the ingress device):
 * this namespace's loopback, or - when lo already has an XDP program, e.g.
 * another xrl-gen's - a veth pair of our own, xrlgen<pid>/xrlgen<pid>p, kept
 * down and deleted at exit (a pair left behind by a killed xrl-gen is
 * deleted by the next one started in the namespace).
 */
static char g_kpair[IFNAMSIZ];  /* our veth pair, "" = none */

struct nl_req {
	struct nlmsghdr nh;
	struct ifinfomsg ifi;
	char buf[512];
};

static struct rtattr *nl_attr(struct nl_req *r, unsigned short type, const void *data,
			      size_t len)
{
	struct rtattr *rta = (struct rtattr *)((char *)r + NLMSG_ALIGN(r->nh.nlmsg_len));

	rta->rta_type = type;
	rta->rta_len = (unsigned short)RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(rta), data, len);
	r->nh.nlmsg_len = NLMSG_ALIGN(r->nh.nlmsg_len) + RTA_ALIGN(rta->rta_len);
	return rta;
}

static void nl_nest_end(struct nl_req *r, struct rtattr *nest)
{
	nest->rta_len = (unsigned short)((char *)r + r->nh.nlmsg_len - (char *)nest);
}

/* Sends one rtnetlink request; returns 0 or -errno from the kernel's ack. */
static int nl_talk(struct nl_req *r)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	char buf[1024];
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), err = -EIO;
	ssize_t n;

	if (fd < 0)
		return -errno;
	r->nh.nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	if (sendto(fd, r, r->nh.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
	} else if ((n = recv(fd, buf, sizeof(buf), 0)) >= (ssize_t)NLMSG_LENGTH(sizeof(int))) {
		struct nlmsghdr *h = (struct nlmsghdr *)buf;

		if (h->nlmsg_type == NLMSG_ERROR)
			err = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
	}
	close(fd);
	return err;
}

static int link_del(int ifindex)
{
	struct nl_req r = {
		.nh = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg)),
			.nlmsg_type = RTM_DELLINK },
		.ifi = { .ifi_family = AF_UNSPEC, .ifi_index = ifindex },
	};

	return nl_talk(&r);
}

/* A veth pair NAME / NAMEp, left down. */
static int veth_add(const char *name)
{
	struct nl_req r = {
		.nh = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg)),
			.nlmsg_type = RTM_NEWLINK,
			.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL },
		.ifi = { .ifi_family = AF_UNSPEC },
	};
	struct ifinfomsg peer_ifi = { .ifi_family = AF_UNSPEC };
	struct rtattr *info, *data, *peer;
	char peer_name[IFNAMSIZ + 2];

	if (strlen(name) + 1 >= IFNAMSIZ)
		return -ENAMETOOLONG;
	snprintf(peer_name, sizeof(peer_name), "%sp", name);
	nl_attr(&r, IFLA_IFNAME, name, strlen(name) + 1);
	info = nl_attr(&r, IFLA_LINKINFO, NULL, 0);
	nl_attr(&r, IFLA_INFO_KIND, "veth", strlen("veth"));
	data = nl_attr(&r, IFLA_INFO_DATA, NULL, 0);
	peer = nl_attr(&r, VETH_INFO_PEER, &peer_ifi, sizeof(peer_ifi));
	nl_attr(&r, IFLA_IFNAME, peer_name, strlen(peer_name) + 1);
	nl_nest_end(&r, peer);
	nl_nest_end(&r, data);
	nl_nest_end(&r, info);
	return nl_talk(&r);
}

/* Deletes keeper pairs whose xrl-gen is gone. */
static void keeper_sweep(void)
{
	struct if_nameindex *ifs = if_nameindex(), *i;

	for (i = ifs; i && i->if_index; i++) {
		unsigned pid;
		char tail;

		if (sscanf(i->if_name, "xrlgen%u%c", &pid, &tail) == 1 && pid > 0 &&
		    kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			link_del((int)i->if_index);
	}
	if (ifs)
		if_freenameindex(ifs);
}

static int keeper_link(int ifindex)
{
	LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = XDP_FLAGS_SKB_MODE);
	int fd = bpf_link_create(g_prog_fd, ifindex, BPF_XDP, &lo);

	return fd < 0 ? -errno : fd;
}

/* Returns the link fd or -errno. */
static int keeper_attach(void)
{
	int ifindex = (int)if_nametoindex("lo"), fd = -ENODEV, err;

	if (ifindex && ifindex != C.ifindex) {
		fd = keeper_link(ifindex);
		if (fd >= 0)
			return fd;
	}
	keeper_sweep();
	snprintf(g_kpair, sizeof(g_kpair), "xrlgen%d", (int)getpid());
	err = veth_add(g_kpair);
	if (err) {
		g_kpair[0] = '\0';
		return err;
	}
	ifindex = (int)if_nametoindex(g_kpair);
	fd = ifindex ? keeper_link(ifindex) : -ENODEV;
	if (C.verbose)
		fprintf(stderr, PROG ": lo is taken; the keeper is on %s\n", g_kpair);
	return fd;
}

static void keeper_detach(int fd)
{
	int ifindex;

	if (fd >= 0)
		close(fd);
	if (g_kpair[0] && (ifindex = (int)if_nametoindex(g_kpair)))
		link_del(ifindex);
	g_kpair[0] = '\0';
}

/* ---- senders ---------------------------------------------------------------------- */

/*
 * Send t->count frames (0 = no limit) at t->rate (0 = at once) until the
 * deadline or a signal, from the calling thread.
 */
static void send_loop(struct thr *t)
{
	struct xdp_md ctx = { .data_end = g_flen, .ingress_ifindex = (uint32_t)C.ifindex };
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		.data_in = g_frame,
		.data_size_in = g_flen,
		.ctx_in = &ctx,
		.ctx_size_in = sizeof(ctx),
		.flags = BPF_F_TEST_XDP_LIVE_FRAMES,
		.batch_size = C.batch < KBATCH_MAX ? C.batch : KBATCH_MAX,
	);
	uint64_t chunk = C.batch, last, done = 0;
	double tokens = 0, cap = 0;

	if (t->rate) {
		/* about a millisecond's worth per call; the bucket holds 2 ms
		 * (at least two calls), so a late wake-up is made up but a
		 * stall is not turned into a burst: frames sent back to back
		 * faster than the receiver drains them overflow the veth's
		 * 256-frame ring, and take the clients' SYNs with them, which
		 * a paced flood must not do (the rate reported is what went) */
		chunk = t->rate / 1000;
		if (chunk < 1)
			chunk = 1;
		if (chunk > C.batch)
			chunk = C.batch;
		cap = (double)t->rate * 0.002;
		if (cap < 2.0 * (double)chunk)
			cap = 2.0 * (double)chunk;
	}
	last = now_ns();
	if (!t->t_first)
		t->t_first = last;
	while (!g_stop) {
		uint64_t now = now_ns(), want = chunk;

		if (g_deadline && now >= g_deadline)
			break;
		if (t->count) {
			if (done >= t->count)
				break;
			if (t->count - done < want)
				want = t->count - done;
		}
		if (t->rate) {
			tokens += (double)(now - last) * (double)t->rate / 1e9;
			last = now;
			if (tokens > cap)
				tokens = cap;
			if (tokens < (double)want) {
				uint64_t wake = now + (uint64_t)(((double)want - tokens) * 1e9 /
								 (double)t->rate) + 1;

				if (g_deadline && wake > g_deadline)
					wake = g_deadline;
				sleep_until(wake);
				continue;
			}
		}
		opts.repeat = (uint32_t)want;
		if (bpf_prog_test_run_opts(g_prog_fd, &opts)) {
			if (errno == EINTR)
				continue;         /* a signal: g_stop is set */
			t->err = errno;
			break;
		}
		done += want;
		t->offered += want;
		t->calls++;
		tokens -= (double)want;
		t->t_last = now_ns();
	}
}

static void *sender(void *arg)
{
	struct thr *t = arg;

	/* Pinned: a veth delivers on the sender's CPU, and a sender that
	 * migrates away from the NAPI poll it scheduled outruns it and sees
	 * its frames refused. A lone thread without --cpus stays on the CPU
	 * it starts on. */
	if (t->cpu < 0)
		t->cpu = sched_getcpu();
	t->err = pin_sender(t->idx, t->cpu);
	pthread_barrier_wait(&g_barrier);
	if (!t->err)
		send_loop(t);
	atomic_fetch_sub(&g_live, 1);
	return NULL;
}

/*
 * --count counts frames the device took. Senders on several CPUs share the
 * peer's one receive ring and some of their frames are refused; one sender
 * makes up the difference, reading the device's counters between rounds.
 */
static void top_up(struct thr *thr, int map_fd, uint64_t x0, uint64_t e0)
{
	struct thr t = { .idx = -1, .cpu = thr[0].cpu, .rate = C.rate };
	uint64_t prev = UINT64_MAX;

	if (t.cpu >= 0)
		pin_self(t.cpu);
	for (int round = 0; round < 64 && !g_stop; round++) {
		uint64_t x, e, tx, bad, acc;

		if (stats_read(&x, &e))
			break;
		prog_counts(map_fd, &tx, &bad);
		acc = accepted(tx, x - x0, e - e0);
		/* done, or the last round got nothing in, or nothing ever did
		 * (the peer takes no XDP frames: main() says so) */
		if (acc >= C.count || acc == prev || acc == 0)
			break;
		prev = acc;
		t.count = C.count - acc;
		send_loop(&t);
		if (t.err)
			break;
	}
	thr[0].offered += t.offered;
	thr[0].calls += t.calls;
	if (t.t_last > thr[0].t_last)
		thr[0].t_last = t.t_last;
	if (t.err && !thr[0].err)
		thr[0].err = t.err;
	if (C.verbose && t.offered)
		fprintf(stderr, PROG ": topped up --count with %" PRIu64 " more frames\n",
			t.offered);
}

/* SIGUSR1 only interrupts a BPF_PROG_RUN call that overran the deadline */
static void on_wake(int sig)
{
	(void)sig;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !getenv("XRL_GEN_DEBUG"))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* ---- main --------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	static struct thr thr[MAX_THREADS];
	struct sigaction sa = { .sa_handler = on_wake };
	struct xrl_gen_cfg gcfg;
	struct gen *skel;
	uint64_t x0 = 0, e0 = 0, x1 = 0, e1 = 0, tx = 0, bad = 0, offered = 0, sent;
	uint64_t t0 = UINT64_MAX, t1 = 0, ms;
	bool have_stats, peer_dead = false;
	int fatal = 0, err, keeper;

	parse_args(argc, argv);
	iface_setup();
	fill_cfg(&gcfg);
	if (!C.n_cpus && C.threads > 1) {
		/* several threads: spread them over the CPUs we may use (one
		 * thread stays on the CPU it starts on, see sender()) */
		cpu_set_t allowed;

		if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
			for (int c = 0; c < CPU_SETSIZE && C.n_cpus < MAX_THREADS; c++)
				if (CPU_ISSET(c, &allowed))
					C.cpus[C.n_cpus++] = c;
	}
	for (int i = 0; i < C.threads; i++) {
		struct thr *t = &thr[i];

		t->idx = i;
		t->cpu = C.n_cpus ? C.cpus[i % C.n_cpus] : -1;
		thread_share(C.rate, C.count, C.threads, i, &t->rate, &t->count);
	}

	libbpf_set_print(libbpf_quiet);
	skel = gen__open();
	if (!skel)
		die("couldn't open the XDP program: %s", strerror(errno));
	skel->rodata->cfg = gcfg;
	err = gen__load(skel);
	if (err)
		die("couldn't load the XDP program: %s", strerror(-err));
	g_prog_fd = bpf_program__fd(skel->progs.xrl_gen);
	keeper = keeper_attach();
	if (keeper < 0)
		fprintf(stderr, PROG ": warning: couldn't keep the program attached (%s): "
			"every BPF_PROG_RUN call will wait for two RCU grace periods, so "
			"expect a far lower rate\n", strerror(-keeper));

	stats_init();
	have_stats = stats_read(&x0, &e0) == 0;
	if (!have_stats && C.verbose)
		fprintf(stderr, PROG ": note: %s has no XDP transmit counters; frames the "
			"device refuses would be counted as sent\n", C.dev);

	catch_stop();
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);

	if (C.verbose) {
		char a[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];

		inet_ntop(C.family, C.src, a, sizeof(a));
		inet_ntop(C.family, C.dst, d, sizeof(d));
		fprintf(stderr, PROG ": dev=%s (ifindex %d) %s %s -> [%s]:%u%s, sources %s/%d "
			"(%s", C.dev, C.ifindex, C.udp ? "UDP" : "TCP SYN",
			C.family == AF_INET ? "IPv4" : "IPv6", d, C.dport,
			C.rand_dport ? " (random dport)" : "", a, C.src_plen,
			C.nsrc ? "sequential" : C.random ? "random" : "one address");
		if (C.nsrc)
			fprintf(stderr, " x%" PRIu64, C.nsrc);
		fprintf(stderr, "), %u-byte frames%s, rate=%" PRIu64 " duration=%g count=%"
			PRIu64 " threads=%d batch=%u\n", g_flen,
			C.vlan >= 0 ? " with a VLAN tag" : "", C.rate, C.duration, C.count,
			C.threads, C.batch);
	}

	barrier_init(C.threads);
	atomic_store(&g_live, C.threads);
	for (int i = 0; i < C.threads; i++) {
		err = pthread_create(&thr[i].tid, NULL, sender, &thr[i]);
		if (err)
			die("couldn't start sender thread %d: %s", i, strerror(err));
	}
	release_senders(C.duration);

	/* Watch the first moments: a peer that takes no XDP frames makes the
	 * kernel drop every one of them without an error to the sender. And
	 * keep the bound: a call still running 50 ms after the deadline (its
	 * thread starved of CPU) is interrupted. */
	{
		uint64_t start = now_ns();
		bool checked = !have_stats;

		while (atomic_load(&g_live) > 0) {
			usleep(10000);
			if ((g_deadline && now_ns() > g_deadline + 50000000ull) || g_stop) {
				for (int i = 0; i < C.threads; i++)
					pthread_kill(thr[i].tid, SIGUSR1);
			}
			if (!checked && now_ns() - start > 100000000ull) {
				uint64_t x, e, ptx, pbad;

				prog_counts(bpf_map__fd(skel->maps.xrl_gen_ctr), &ptx, &pbad);
				if (ptx > 0 && stats_read(&x, &e) == 0) {
					checked = true;
					if (x == x0) {
						peer_dead = true;
						g_stop = 1;
					}
				}
			}
		}
	}
	for (int i = 0; i < C.threads; i++) {
		pthread_join(thr[i].tid, NULL);
		fatal |= thr[i].err != 0;
	}
	if (C.count && have_stats && !g_stop && !peer_dead && !fatal)
		top_up(thr, bpf_map__fd(skel->maps.xrl_gen_ctr), x0, e0);

	prog_counts(bpf_map__fd(skel->maps.xrl_gen_ctr), &tx, &bad);
	if (have_stats)
		have_stats = stats_read(&x1, &e1) == 0;
	for (int i = 0; i < C.threads; i++) {
		struct thr *t = &thr[i];

		offered += t->offered;
		if (t->calls && t->t_first < t0)
			t0 = t->t_first;
		if (t->calls && t->t_last > t1)
			t1 = t->t_last;
		if (t->err)
			fprintf(stderr, PROG ": thread %d: BPF_PROG_RUN on %s failed: %s\n", i,
				C.dev, strerror(t->err));
		if (C.verbose)
			fprintf(stderr, PROG ": thread %d cpu %d offered=%" PRIu64 " calls=%"
				PRIu64 "\n", i, t->cpu, t->offered, t->calls);
	}
	sent = have_stats ? accepted(tx, x1 - x0, e1 - e0) : tx;
	if (C.verbose && have_stats && (x1 - x0) + (e1 - e0) > tx)
		fprintf(stderr, PROG ": another XDP sender used %s at the same time: "
			"%" PRIu64 " of its refusals counted as ours (an estimate)\n", C.dev,
			tx - sent);
	if (C.verbose)
		fprintf(stderr, PROG ": offered=%" PRIu64 " program XDP_TX=%" PRIu64
			" aborted=%" PRIu64 " device accepted=%s%" PRIu64 " refused=%" PRIu64
			"\n", offered, tx, bad, have_stats ? "" : "(unknown) ", x1 - x0, e1 - e0);
	if (bad) {
		fprintf(stderr, PROG ": %" PRIu64 " frames were too short for their headers "
			"(a bug)\n", bad);
		fatal = 1;
	}
	if (peer_dead || (have_stats && tx && x1 == x0)) {
		fprintf(stderr, PROG ": %s took none of the %" PRIu64 " frames: its peer takes "
			"XDP frames only with an XDP program attached or GRO on "
			"(ethtool -K PEER gro on)\n", C.dev, tx);
		fatal = 1;
	}
	ms = t1 > t0 ? (t1 - t0) / 1000000 : 0;
	printf("sent=%" PRIu64 " duration_ms=%" PRIu64 " pps=%" PRIu64 "\n", sent, ms,
	       t1 > t0 ? (uint64_t)((double)sent * 1e9 / (double)(t1 - t0)) : 0);
	fflush(stdout);
	keeper_detach(keeper);
	gen__destroy(skel);
	if (!fatal && !sent && !g_stop) {
		fprintf(stderr, PROG ": no frame was sent\n");
		return 1;
	}
	return fatal;
}
