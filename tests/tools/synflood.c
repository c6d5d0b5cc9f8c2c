// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * synflood.c - a bounded SYN / UDP flood from spoofed sources, for the
 * end-to-end tests and the demo (build/xrl-synflood).
 *
 * Raw Ethernet frames (optional 802.1Q tag, IPv4 or IPv6, TCP SYN with an
 * MSS option or UDP, correct IP and L4 checksums) are written with
 * sendmmsg() to an AF_PACKET socket bound to one interface, bypassing the
 * qdisc layer. Nothing is routed or resolved: the caller names the
 * interface and the destination MAC, so frames go exactly where asked and
 * nowhere else.
 *
 * Every run is bounded: --duration and/or --count is required.
 *
 * Threads: --threads N --cpus LIST pins sender i to CPU LIST[i % len]. On a
 * veth the peer's XDP program runs on the sender's CPU (the transmit runs the
 * peer's NAPI poll in softirq on that CPU), so this is how a test spreads one
 * source's packets over one or several CPUs.
 *
 * --rate is the total rate over all threads, paced per thread against
 * CLOCK_MONOTONIC; 0 sends as fast as the interface takes them. A frame the
 * interface refuses (ENOBUFS: the peer's ring is full) is not counted as
 * sent and is retried.
 *
 * Output, one line on stdout:  sent=N duration_ms=M pps=P
 * where the duration runs from the first send of any thread to the end of
 * the last one. Exit 0 ok, 1 runtime error, 2 usage error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define PROG            "xrl-synflood"
#include "flood.h"

#define BATCH_MAX       256
#define FRAME_MAX       2048

/* ---- configuration ------------------------------------------------------ */

/* nsrc 0: random in the --sources prefix. */
struct cfg {
	FLOOD_GROUP();
};

struct thr {
	pthread_t tid;
	int idx;
	int cpu;                      /* -1 = not pinned */
	int fd;
	uint64_t rate;                /* this thread's share, 0 = max */
	uint64_t count;               /* this thread's share, 0 = unbounded */
	uint64_t sent;
	uint64_t tx_err;              /* ENOBUFS/EAGAIN: refused, retried */
	uint64_t t_first, t_last;     /* CLOCK_MONOTONIC ns */
	int err;                      /* fatal errno, 0 = none */
	uint64_t rng;
	uint64_t seq_next;            /* next index for --nsrc */
};

static struct cfg C = {
	.dport = 80,
	.vlan = -1,
	.threads = 1,
	.batch = 64,
};

/* ---- helpers -------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
"usage: " PROG " --dev IFACE --dst-mac MAC --dst IP (--duration SEC | --count N) [options]\n"
"\n"
"Send TCP SYNs (or UDP datagrams) from spoofed sources out of IFACE as raw\n"
"Ethernet frames. Prints: sent=N duration_ms=M pps=P\n"
"\n"
"  --dev IFACE        interface to send on (required)\n"
"  --dst-mac MAC      destination MAC, aa:bb:cc:dd:ee:ff (required)\n"
"  --src-mac MAC      source MAC (default: IFACE's own)\n"
"  --dst IP           destination IPv4 or IPv6 address (required)\n"
"  --dport N          destination port (default 80)\n"
"  --sport N          fixed source port (default: random per frame)\n"
"  --sources CIDR     spoofed source population (default 198.51.100.0/24,\n"
"                     or 2001:db8:5::/64 with --ipv6); random addresses in it\n"
"  --nsrc N           instead: N sequential sources starting at the --sources\n"
"                     address (e.g. 198.51.100.10/24), used round-robin; a bare\n"
"                     address is a /32 (/128) and holds one source\n"
"  --udp              UDP datagrams instead of TCP SYNs\n"
"  --ipv6             IPv6 (implied by an IPv6 --dst)\n"
"  --vlan ID          add an 802.1Q tag with VLAN ID (0..4095)\n"
"  --payload N        L4 payload bytes (default 0)\n"
"  --rate PPS         total frames per second, 0 = as fast as possible (default 0)\n"
"  --duration SEC     stop after SEC seconds (decimals allowed)\n"
"  --count N          stop after N frames in total\n"
"  --threads N        sender threads (default 1, at most %d)\n"
"  --cpus LIST        pin thread i to CPU LIST[i %% len], e.g. 0 or 0,1 or 0-3\n"
"  --batch N          frames per sendmmsg (default 64, at most %d)\n"
"  --allow-physical   also send on a physical NIC (default: virtual devices\n"
"                     only - veth, dummy, tun, macvlan, ipvlan, VLAN, bridge,\n"
"                     loopback - so spoofed frames cannot leave the machine\n"
"                     by mistake)\n"
"  -v, --verbose      per-thread details on stderr\n"
"  -h, --help         this text\n"
"\n"
"Exit: 0 ok, 1 runtime error, 2 usage error.\n", MAX_THREADS, BATCH_MAX);
}

/* xorshift64*: fast, per thread, good enough for addresses and ports. */
static uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static uint64_t parse_u64(const char *opt, const char *s, uint64_t max)
{
	uint64_t v = parse_num(opt, s, 0, true);

	if (v > max)
		die_usage("%s: %s is above the maximum %" PRIu64, opt, s, max);
	return v;
}

/* ---- frames --------------------------------------------------------------- */

static size_t l4_len(void)
{
	return (C.udp ? UDP_HLEN : TCP_HLEN) + C.payload;
}

static size_t frame_len(void)
{
	return fl_l4_off(C.vlan, C.family) + l4_len();
}

/* The source address of the next frame of thread t, network order. */
static void next_source(struct thr *t, uint8_t out[16])
{
	int alen = C.family == AF_INET ? 4 : 16;

	memcpy(out, C.src, 16);
	if (C.nsrc) {
		/* big-endian add of the index to the start address */
		uint64_t add = t->seq_next;

		t->seq_next = (t->seq_next + 1) % C.nsrc;
		for (int i = alen - 1; i >= 0 && add; i--) {
			uint64_t v = out[i] + (add & 0xff);

			out[i] = (uint8_t)v;
			add = (add >> 8) + (v >> 8);
		}
		return;
	}
	for (int i = C.src_plen / 8; i < alen; i += 8) {
		uint64_t r = rnd(&t->rng);

		for (int j = i; j < alen && j < i + 8; j++) {
			int bit0 = j * 8;           /* first bit of this byte */
			uint8_t keep = 0;

			if (bit0 < C.src_plen)      /* the byte the prefix ends in */
				keep = (uint8_t)(0xff << (8 - (C.src_plen - bit0)));
			out[j] = (uint8_t)((out[j] & keep) | ((uint8_t)(r >> ((j - i) * 8)) & ~keep));
		}
	}
}

/* Header bytes that never change are written once per buffer. */
static void frame_init(uint8_t *f)
{
	struct fl_spec spec = {
		.dst_mac = C.dst_mac, .src_mac = C.src_mac, .vlan = C.vlan,
		.family = C.family, .dst = C.dst, .udp = C.udp, .dport = C.dport,
		.l4_len = l4_len(),
	};

	fl_init(f, FRAME_MAX, &spec);
}

/* Fill the per-frame fields (source, ports, sequence) and the checksums. */
static void frame_fill(struct thr *t, uint8_t *f)
{
	uint8_t *p = f + fl_l3_off(C.vlan), *l4 = f + fl_l4_off(C.vlan, C.family);
	uint8_t src[16];
	uint64_t r = rnd(&t->rng);
	uint16_t sport = C.sport ? C.sport : (uint16_t)(1024 + (r % (65536 - 1024)));
	size_t len4 = l4_len();
	uint32_t sum;

	next_source(t, src);
	if (C.family == AF_INET) {
		struct fl_ip4 *ip = (struct fl_ip4 *)p;

		memcpy(&ip->saddr, src, 4);
		ip->id = (uint16_t)(r >> 32);
		ip->csum = 0;
		ip->csum = (uint16_t)~csum_add(0, ip, sizeof(*ip));
	} else {
		memcpy(((struct fl_ip6 *)p)->saddr, src, 16);
	}
	sum = csum_add(csum_pseudo(C.family, C.dst, C.udp, len4), src,
		       C.family == AF_INET ? 4 : 16);

	if (C.udp) {
		struct fl_udp *u = (struct fl_udp *)l4;
		uint16_t c;

		u->sport = htons(sport);
		u->csum = 0;
		c = (uint16_t)~csum_add(sum, l4, len4);
		u->csum = c ? c : 0xffff;               /* 0 means "none" in UDP */
	} else {
		struct fl_tcp *tc = (struct fl_tcp *)l4;

		tc->sport = htons(sport);
		tc->seq = (uint32_t)(r >> 16);
		tc->csum = 0;
		tc->csum = (uint16_t)~csum_add(sum, l4, len4);
	}
}

/* ---- senders -------------------------------------------------------------- */

static int open_socket(void)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = 0,      /* send only: receive nothing */
		.sll_ifindex = C.ifindex,
	};
	int one = 1, sndbuf = 4 << 20;
	int fd = socket(AF_PACKET, SOCK_RAW, 0);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		int err = -errno;

		close(fd);
		return err;
	}
	/* best effort: without them it is only slower */
	setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	return fd;
}

static void *sender(void *arg)
{
	struct thr *t = arg;
	uint8_t (*frames)[FRAME_MAX] = calloc((size_t)C.batch, FRAME_MAX);
	struct mmsghdr msgs[BATCH_MAX];
	struct iovec iov[BATCH_MAX];
	size_t flen = frame_len();
	uint64_t start;

	t->err = pin_sender(t->idx, t->cpu);
	if (!frames && !t->err)
		t->err = ENOMEM;
	memset(msgs, 0, sizeof(msgs));
	for (unsigned i = 0; frames && i < C.batch; i++) {
		frame_init(frames[i]);
		iov[i].iov_base = frames[i];
		iov[i].iov_len = flen;
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}

	pthread_barrier_wait(&g_barrier);
	if (t->err) {
		free(frames);
		return NULL;
	}
	start = now_ns();

	while (!g_stop) {
		uint64_t now = now_ns(), want = (uint64_t)C.batch;
		int n;

		if (g_deadline && now >= g_deadline)
			break;
		if (t->count) {
			if (t->sent >= t->count)
				break;
			if (t->count - t->sent < want)
				want = t->count - t->sent;
		}
		if (t->rate) {
			/* frames due by now since start, minus those sent */
			uint64_t due = (uint64_t)((unsigned __int128)(now - start) * t->rate /
						  1000000000ull) + 1;

			if (due <= t->sent) {
				uint64_t next = start + (uint64_t)((unsigned __int128)t->sent *
								   1000000000ull / t->rate);

				if (g_deadline && next > g_deadline)
					next = g_deadline;
				sleep_until(next);
				continue;
			}
			if (due - t->sent < want)
				want = due - t->sent;
		}
		for (uint64_t i = 0; i < want; i++)
			frame_fill(t, frames[i]);
		if (!t->t_first)
			t->t_first = now_ns();
		n = sendmmsg(t->fd, msgs, (unsigned int)want, 0);
		if (n > 0) {
			t->sent += (uint64_t)n;
			t->t_last = now_ns();
			continue;
		}
		if (n < 0 && (errno == ENOBUFS || errno == EAGAIN || errno == EINTR)) {
			t->tx_err++;
			sched_yield();
			continue;
		}
		t->err = n < 0 ? errno : EIO;
		break;
	}
	free(frames);
	return NULL;
}

/* ---- main ----------------------------------------------------------------- */

static void parse_args(int argc, char **argv)
{
	/* --dport 0..65535, 80 by default; --rate up to 1e8 frames/s */
	static const struct flood_limits lim = { .takes = FO_BIT(FO_SPORT) | FO_BIT(FO_IPV6) |
							  FO_BIT(FO_PAYLOAD),
						 .num = parse_u64,
						 .rate_max = 100000000,
						 .payload_max = 1400,
						 .batch_max = BATCH_MAX,
						 .usage = usage };
	const char *dst, *sources;

	flood_parse(argc, argv, &C.a, &lim);
	dst = C.dst_arg;
	sources = C.sources;
	if (C.ipv6 && C.family != AF_INET6)
		die_usage("--ipv6 given but --dst %s is an IPv4 address", dst);

	if (!sources)
		sources = C.family == AF_INET ? "198.51.100.0/24" : "2001:db8:5::/64";
	if (parse_cidr("--sources", sources, C.src, &C.src_plen, parse_u64) != C.family)
		die_usage("--sources %s and --dst %s are of different families", sources, dst);
	if (C.nsrc) {
		/* sequential from the given address; must stay in the prefix
		 * (checked for host parts below 64 bits, as it always was) */
		int host = (C.family == AF_INET ? 32 : 128) - C.src_plen;

		if (host < 64 && !src_seq_fits(C.family, C.src, C.src_plen, C.nsrc))
			die_usage("--nsrc %" PRIu64 " from %s runs past the end of the "
				  "prefix /%d (give a wider one, e.g. --sources "
				  "198.51.100.10/24)", C.nsrc, sources, C.src_plen);
	} else {
		src_zero_host(C.src, C.src_plen);
	}

	C.ifindex = (int)if_nametoindex(C.dev);
	if (!C.ifindex)
		die_usage("--dev: no interface '%s' in this network namespace", C.dev);
	if (C.n_cpus && C.threads < C.n_cpus && C.verbose)
		fprintf(stderr, PROG ": note: %d CPUs listed for %d threads; "
			"the last ones are unused\n", C.n_cpus, C.threads);
}

static void iface_setup(void)
{
	struct ifreq ifr = { 0 };
	int fd = iface_socket();
	size_t l2 = fl_l3_off(C.vlan);

	if (!C.has_src_mac) {
		iface_get(fd, C.dev, SIOCGIFHWADDR, &ifr, "MAC");
		memcpy(C.src_mac, ifr.ifr_hwaddr.sa_data, 6);
	}
	iface_get(fd, C.dev, SIOCGIFMTU, &ifr, "MTU");
	if (frame_len() - l2 > (size_t)ifr.ifr_mtu)
		die_usage("--payload %u makes %zu-byte packets, above the MTU %d of %s",
			  C.payload, frame_len() - l2, ifr.ifr_mtu, C.dev);
	iface_get(fd, C.dev, SIOCGIFFLAGS, &ifr, "flags");
	if (!(ifr.ifr_flags & IFF_UP))
		die("couldn't send on %s: the interface is down", C.dev);
	if (!(ifr.ifr_flags & IFF_LOOPBACK) && !C.allow_physical) {
		/* spoofed sources belong in a lab: only virtual devices unless asked */
		static const char *const virt[] = {
			"veth", "dummy", "tun", "macvlan", "ipvlan", "802.1Q VLAN Support",
			"bridge", "vxlan", "geneve", "netkit",
		};
		struct ethtool_drvinfo di = { .cmd = ETHTOOL_GDRVINFO };
		bool ok = false;

		ifr.ifr_data = (char *)&di;
		if (ioctl(fd, SIOCETHTOOL, &ifr) == 0) {
			for (size_t i = 0; i < sizeof(virt) / sizeof(virt[0]); i++)
				ok |= !strcmp(di.driver, virt[i]);
		}
		if (!ok)
			die_usage("--dev %s (driver '%s') is not a virtual device: refusing to "
				  "send spoofed frames out of this machine; add --allow-physical "
				  "if that is really meant", C.dev,
				  di.driver[0] ? di.driver : "unknown");
	}
	close(fd);
}

int main(int argc, char **argv)
{
	struct thr thr[MAX_THREADS];
	uint64_t sent = 0, tx_err = 0, t0 = UINT64_MAX, t1 = 0, seed;
	double dur_s;
	int fatal = 0;

	parse_args(argc, argv);
	iface_setup();

	catch_stop();

	memset(thr, 0, sizeof(thr));
	seed = now_ns() ^ ((uint64_t)getpid() << 32);
	for (int i = 0; i < C.threads; i++) {
		struct thr *t = &thr[i];

		t->idx = i;
		t->cpu = C.n_cpus ? C.cpus[i % C.n_cpus] : -1;
		thread_share(C.rate, C.count, C.threads, i, &t->rate, &t->count);
		t->rng = seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(i + 1));
		if (!t->rng)
			t->rng = 1;
		t->fd = open_socket();
		if (t->fd < 0)
			die("couldn't open an AF_PACKET socket on %s: %s%s", C.dev,
			    strerror(-t->fd), t->fd == -EPERM ? " (needs CAP_NET_RAW)" : "");
	}
	if (C.verbose) {
		char a[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];

		inet_ntop(C.family, C.src, a, sizeof(a));
		inet_ntop(C.family, C.dst, d, sizeof(d));
		fprintf(stderr, PROG ": dev=%s %s %s -> %s port %u, sources %s/%d (",
			C.dev, C.udp ? "UDP" : "TCP SYN", C.family == AF_INET ? "IPv4" : "IPv6",
			d, C.dport, a, C.src_plen);
		if (C.nsrc)
			fprintf(stderr, "%" PRIu64 " sequential", C.nsrc);
		else
			fprintf(stderr, "random");
		fprintf(stderr, "), %zu-byte frames, rate=%" PRIu64 " duration=%g count=%"
			PRIu64 " threads=%d\n", frame_len(), C.rate, C.duration, C.count,
			C.threads);
	}

	barrier_init(C.threads);
	for (int i = 0; i < C.threads; i++) {
		int err = pthread_create(&thr[i].tid, NULL, sender, &thr[i]);

		if (err)
			die("couldn't start sender thread %d: %s", i, strerror(err));
	}
	release_senders(C.duration);
	for (int i = 0; i < C.threads; i++)
		pthread_join(thr[i].tid, NULL);

	for (int i = 0; i < C.threads; i++) {
		struct thr *t = &thr[i];

		sent += t->sent;
		tx_err += t->tx_err;
		if (t->t_first && t->t_first < t0)
			t0 = t->t_first;
		if (t->t_last > t1)
			t1 = t->t_last;
		if (t->err) {
			fprintf(stderr, PROG ": thread %d: couldn't send on %s: %s\n", i,
				C.dev, strerror(t->err));
			fatal = 1;
		}
		if (C.verbose)
			fprintf(stderr, PROG ": thread %d cpu %d sent=%" PRIu64
				" refused_by_device=%" PRIu64 "\n", i, t->cpu, t->sent,
				t->tx_err);
		close(t->fd);
	}
	if (C.verbose && tx_err)
		fprintf(stderr, PROG ": %" PRIu64 " sends refused by the device "
			"(ENOBUFS) and retried\n", tx_err);
	dur_s = sent && t1 > t0 ? (double)(t1 - t0) / 1e9 : 0;
	printf("sent=%" PRIu64 " duration_ms=%" PRIu64 " pps=%" PRIu64 "\n", sent,
	       sent && t1 > t0 ? (t1 - t0) / 1000000 : 0,
	       dur_s > 0 ? (uint64_t)(sent / dur_s) : 0);
	fflush(stdout);
	if (!sent && !g_stop) {
		fprintf(stderr, PROG ": no frame was sent\n");
		return 1;
	}
	return fatal;
}
