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
#include <linux/if_ether.h>
#include <linux/sockios.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PROG            "xrl-synflood"
#define MAX_THREADS     64
#define BATCH_MAX       256
#define FRAME_MAX       2048
#define TCP_HDR_LEN     24        /* 20 + MSS option */
#define UDP_HDR_LEN     8

/* ---- wire headers (byte order: network unless noted) -------------------- */

struct fl_eth {
	uint8_t  dst[6];
	uint8_t  src[6];
	uint16_t proto;
} __attribute__((packed));

struct fl_vlan {
	uint16_t tci;
	uint16_t proto;
} __attribute__((packed));

struct fl_ip4 {
	uint8_t  ver_ihl;
	uint8_t  tos;
	uint16_t tot_len;
	uint16_t id;
	uint16_t frag_off;
	uint8_t  ttl;
	uint8_t  proto;
	uint16_t csum;
	uint32_t saddr;
	uint32_t daddr;
} __attribute__((packed));

struct fl_ip6 {
	uint32_t ver_tc_flow;
	uint16_t payload_len;
	uint8_t  nexthdr;
	uint8_t  hop_limit;
	uint8_t  saddr[16];
	uint8_t  daddr[16];
} __attribute__((packed));

struct fl_tcp {
	uint16_t sport;
	uint16_t dport;
	uint32_t seq;
	uint32_t ack;
	uint8_t  doff_res;        /* data offset in 32-bit words << 4 */
	uint8_t  flags;
	uint16_t window;
	uint16_t csum;
	uint16_t urg;
	uint8_t  opt[4];          /* MSS: kind 2, len 4, value */
} __attribute__((packed));

struct fl_udp {
	uint16_t sport;
	uint16_t dport;
	uint16_t len;
	uint16_t csum;
} __attribute__((packed));

_Static_assert(sizeof(struct fl_tcp) == TCP_HDR_LEN, "tcp header");
_Static_assert(sizeof(struct fl_ip4) == 20, "ipv4 header");
_Static_assert(sizeof(struct fl_ip6) == 40, "ipv6 header");

/* ---- configuration ------------------------------------------------------ */

struct cfg {
	const char *dev;
	int ifindex;
	uint8_t src_mac[6];
	bool has_src_mac;
	uint8_t dst_mac[6];
	bool has_dst_mac;
	int family;                   /* AF_INET or AF_INET6 */
	uint8_t dst[16];              /* network order; v4 in the first 4 */
	uint16_t dport;               /* host order */
	uint16_t sport;               /* host order, 0 = random per frame */
	uint8_t src[16];              /* --sources address, network order */
	int src_plen;
	uint64_t nsrc;                /* 0 = random in the prefix */
	bool udp;
	int vlan;                     /* -1 = untagged */
	uint64_t rate;                /* frames/s over all threads, 0 = max */
	double duration;              /* s, 0 = unbounded in time */
	uint64_t count;               /* frames over all threads, 0 = unbounded */
	int threads;
	int cpus[MAX_THREADS];
	int n_cpus;                   /* 0 = no pinning */
	int batch;
	unsigned payload;
	bool verbose;
	bool allow_physical;
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
static volatile sig_atomic_t g_stop;
static pthread_barrier_t g_barrier;
static uint64_t g_deadline;       /* CLOCK_MONOTONIC ns, 0 = none */

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

static void __attribute__((noreturn, format(printf, 1, 2))) die_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '" PROG " --help'.\n");
	exit(2);
}

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = {
		.tv_sec = (time_t)(t / 1000000000ull),
		.tv_nsec = (long)(t % 1000000000ull),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR &&
	       !g_stop)
		;
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
	unsigned long long v;
	char *end;

	errno = 0;
	if (!s || !*s || *s == '-')
		die_usage("%s: '%s' is not a non-negative integer", opt, s ? s : "");
	v = strtoull(s, &end, 0);
	if (errno || *end)
		die_usage("%s: '%s' is not a non-negative integer", opt, s);
	if (v > max)
		die_usage("%s: %s is above the maximum %" PRIu64, opt, s, max);
	return v;
}

static void parse_mac(const char *opt, const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3],
		   &b[4], &b[5], &tail) != 6)
		die_usage("%s: '%s' is not a MAC address like 02:00:00:00:00:01", opt, s);
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
}

/* "a.b.c.d" or IPv6 text into 16 bytes; returns AF_INET/AF_INET6 or 0. */
static int parse_ip(const char *s, uint8_t out[16])
{
	memset(out, 0, 16);
	if (inet_pton(AF_INET, s, out) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, s, out) == 1)
		return AF_INET6;
	return 0;
}

static void parse_cidr(const char *opt, const char *s, uint8_t addr[16], int *plen,
		       int *family)
{
	char buf[INET6_ADDRSTRLEN + 8];
	char *slash;
	int max;

	if (strlen(s) >= sizeof(buf))
		die_usage("%s: '%s' is too long for an address prefix", opt, s);
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	*family = parse_ip(buf, addr);
	if (!*family)
		die_usage("%s: '%s' is not an IPv4 or IPv6 address", opt, buf);
	max = *family == AF_INET ? 32 : 128;
	*plen = max;
	if (slash)
		*plen = (int)parse_u64(opt, slash + 1, (uint64_t)max);
}

/* "0,1" "0-3" "0,2-3" into cpus[]; every CPU must be in our affinity mask. */
static void parse_cpus(const char *s)
{
	cpu_set_t allowed;
	char *dup = strdup(s), *save = NULL, *tok;

	if (!dup)
		die("couldn't parse --cpus: out of memory");
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		die("couldn't read the CPU affinity mask: %s", strerror(errno));
	C.n_cpus = 0;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(tok, '-');
		uint64_t lo, hi;

		if (dash) {
			*dash = '\0';
			lo = parse_u64("--cpus", tok, CPU_SETSIZE - 1);
			hi = parse_u64("--cpus", dash + 1, CPU_SETSIZE - 1);
		} else {
			lo = hi = parse_u64("--cpus", tok, CPU_SETSIZE - 1);
		}
		if (lo > hi)
			die_usage("--cpus: range %" PRIu64 "-%" PRIu64 " is backwards", lo, hi);
		for (uint64_t c = lo; c <= hi; c++) {
			if (!CPU_ISSET((int)c, &allowed))
				die_usage("--cpus: CPU %" PRIu64 " is not online or not "
					  "allowed for this process", c);
			if (C.n_cpus == MAX_THREADS)
				die_usage("--cpus: more than %d CPUs listed", MAX_THREADS);
			C.cpus[C.n_cpus++] = (int)c;
		}
	}
	free(dup);
	if (!C.n_cpus)
		die_usage("--cpus: '%s' lists no CPU", s);
}

/* Ones' complement sum, folded later. */
static uint32_t csum_add(uint32_t sum, const void *data, size_t len)
{
	const uint8_t *p = data;

	while (len > 1) {
		sum += (uint32_t)p[0] << 8 | p[1];
		p += 2;
		len -= 2;
	}
	if (len)
		sum += (uint32_t)p[0] << 8;
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

/* ---- frames --------------------------------------------------------------- */

static size_t l4_len(void)
{
	return (C.udp ? UDP_HDR_LEN : TCP_HDR_LEN) + C.payload;
}

static size_t frame_len(void)
{
	return sizeof(struct fl_eth) + (C.vlan >= 0 ? sizeof(struct fl_vlan) : 0) +
	       (C.family == AF_INET ? sizeof(struct fl_ip4) : sizeof(struct fl_ip6)) +
	       l4_len();
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
	struct fl_eth *eth = (struct fl_eth *)f;
	uint8_t *p = f + sizeof(*eth);
	uint16_t l3 = htons(C.family == AF_INET ? ETH_P_IP : ETH_P_IPV6);

	memset(f, 0, FRAME_MAX);
	memcpy(eth->dst, C.dst_mac, 6);
	memcpy(eth->src, C.src_mac, 6);
	if (C.vlan >= 0) {
		struct fl_vlan *vh = (struct fl_vlan *)p;

		eth->proto = htons(ETH_P_8021Q);
		vh->tci = htons((uint16_t)C.vlan);
		vh->proto = l3;
		p += sizeof(*vh);
	} else {
		eth->proto = l3;
	}
	if (C.family == AF_INET) {
		struct fl_ip4 *ip = (struct fl_ip4 *)p;

		ip->ver_ihl = 0x45;
		ip->tot_len = htons((uint16_t)(sizeof(*ip) + l4_len()));
		ip->frag_off = htons(0x4000);   /* DF */
		ip->ttl = 64;
		ip->proto = C.udp ? IPPROTO_UDP : IPPROTO_TCP;
		memcpy(&ip->daddr, C.dst, 4);
		p += sizeof(*ip);
	} else {
		struct fl_ip6 *ip6 = (struct fl_ip6 *)p;

		ip6->ver_tc_flow = htonl(6u << 28);
		ip6->payload_len = htons((uint16_t)l4_len());
		ip6->nexthdr = C.udp ? IPPROTO_UDP : IPPROTO_TCP;
		ip6->hop_limit = 64;
		memcpy(ip6->daddr, C.dst, 16);
		p += sizeof(*ip6);
	}
	if (C.udp) {
		struct fl_udp *u = (struct fl_udp *)p;

		u->dport = htons(C.dport);
		u->len = htons((uint16_t)l4_len());
	} else {
		struct fl_tcp *t = (struct fl_tcp *)p;

		t->dport = htons(C.dport);
		t->doff_res = (TCP_HDR_LEN / 4) << 4;
		t->flags = 0x02;                /* SYN */
		t->window = htons(64240);
		t->opt[0] = 2;                  /* MSS */
		t->opt[1] = 4;
		t->opt[2] = 1460 >> 8;
		t->opt[3] = 1460 & 0xff;
	}
}

/* Fill the per-frame fields (source, ports, sequence) and the checksums. */
static void frame_fill(struct thr *t, uint8_t *f)
{
	uint8_t *p = f + sizeof(struct fl_eth) + (C.vlan >= 0 ? sizeof(struct fl_vlan) : 0);
	uint8_t src[16];
	uint64_t r = rnd(&t->rng);
	uint16_t sport = C.sport ? C.sport : (uint16_t)(1024 + (r % (65536 - 1024)));
	size_t len4 = l4_len();
	uint32_t sum = 0;
	uint8_t *l4;

	next_source(t, src);
	if (C.family == AF_INET) {
		struct fl_ip4 *ip = (struct fl_ip4 *)p;

		memcpy(&ip->saddr, src, 4);
		ip->id = (uint16_t)(r >> 32);
		ip->csum = 0;
		ip->csum = csum_fold(csum_add(0, ip, sizeof(*ip)));
		sum = csum_add(sum, &ip->saddr, 8);     /* saddr, daddr */
		l4 = p + sizeof(*ip);
	} else {
		struct fl_ip6 *ip6 = (struct fl_ip6 *)p;

		memcpy(ip6->saddr, src, 16);
		sum = csum_add(sum, ip6->saddr, 32);    /* saddr, daddr */
		l4 = p + sizeof(*ip6);
	}
	/* pseudo header: protocol and L4 length (the v4 and v6 sums agree for
	 * lengths below 64 KiB) */
	sum += C.udp ? IPPROTO_UDP : IPPROTO_TCP;
	sum += (uint32_t)len4;

	if (C.udp) {
		struct fl_udp *u = (struct fl_udp *)l4;
		uint16_t c;

		u->sport = htons(sport);
		u->csum = 0;
		c = csum_fold(csum_add(sum, l4, len4));
		u->csum = c ? c : 0xffff;               /* 0 means "none" in UDP */
	} else {
		struct fl_tcp *tc = (struct fl_tcp *)l4;

		tc->sport = htons(sport);
		tc->seq = (uint32_t)(r >> 16);
		tc->csum = 0;
		tc->csum = csum_fold(csum_add(sum, l4, len4));
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

	if (t->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(t->cpu, &set);
		t->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
		if (t->err)
			fprintf(stderr, PROG ": couldn't pin thread %d to CPU %d: %s\n",
				t->idx, t->cpu, strerror(t->err));
	}
	if (!frames && !t->err)
		t->err = ENOMEM;
	memset(msgs, 0, sizeof(msgs));
	for (int i = 0; frames && i < C.batch; i++) {
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

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

/* ---- main ----------------------------------------------------------------- */

static void parse_args(int argc, char **argv)
{
	enum {
		O_DEV = 256, O_SRC_MAC, O_DST_MAC, O_DST, O_DPORT, O_SPORT, O_SOURCES,
		O_NSRC, O_UDP, O_IPV6, O_VLAN, O_PAYLOAD, O_RATE, O_DURATION,
		O_COUNT, O_THREADS, O_CPUS, O_BATCH, O_ALLOW_PHYS,
	};
	static const struct option opts[] = {
		{ "dev",      required_argument, NULL, O_DEV },
		{ "src-mac",  required_argument, NULL, O_SRC_MAC },
		{ "dst-mac",  required_argument, NULL, O_DST_MAC },
		{ "dst",      required_argument, NULL, O_DST },
		{ "dport",    required_argument, NULL, O_DPORT },
		{ "sport",    required_argument, NULL, O_SPORT },
		{ "sources",  required_argument, NULL, O_SOURCES },
		{ "nsrc",     required_argument, NULL, O_NSRC },
		{ "udp",      no_argument,       NULL, O_UDP },
		{ "ipv6",     no_argument,       NULL, O_IPV6 },
		{ "vlan",     required_argument, NULL, O_VLAN },
		{ "payload",  required_argument, NULL, O_PAYLOAD },
		{ "rate",     required_argument, NULL, O_RATE },
		{ "duration", required_argument, NULL, O_DURATION },
		{ "count",    required_argument, NULL, O_COUNT },
		{ "threads",  required_argument, NULL, O_THREADS },
		{ "cpus",     required_argument, NULL, O_CPUS },
		{ "batch",    required_argument, NULL, O_BATCH },
		{ "allow-physical", no_argument, NULL, O_ALLOW_PHYS },
		{ "verbose",  no_argument,       NULL, 'v' },
		{ "help",     no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dst = NULL, *sources = NULL;
	bool ipv6 = false;
	int o;

	opterr = 0;
	while ((o = getopt_long(argc, argv, ":vh", opts, NULL)) != -1) {
		switch (o) {
		case O_DEV:
			C.dev = optarg;
			break;
		case O_SRC_MAC:
			parse_mac("--src-mac", optarg, C.src_mac);
			C.has_src_mac = true;
			break;
		case O_DST_MAC:
			parse_mac("--dst-mac", optarg, C.dst_mac);
			C.has_dst_mac = true;
			break;
		case O_DST:
			dst = optarg;
			break;
		case O_DPORT:
			C.dport = (uint16_t)parse_u64("--dport", optarg, 65535);
			break;
		case O_SPORT:
			C.sport = (uint16_t)parse_u64("--sport", optarg, 65535);
			break;
		case O_SOURCES:
			sources = optarg;
			break;
		case O_NSRC:
			C.nsrc = parse_u64("--nsrc", optarg, UINT32_MAX);
			if (!C.nsrc)
				die_usage("--nsrc: must be at least 1");
			break;
		case O_UDP:
			C.udp = true;
			break;
		case O_IPV6:
			ipv6 = true;
			break;
		case O_VLAN:
			C.vlan = (int)parse_u64("--vlan", optarg, 4095);
			break;
		case O_PAYLOAD:
			C.payload = (unsigned)parse_u64("--payload", optarg, 1400);
			break;
		case O_RATE:
			C.rate = parse_u64("--rate", optarg, 100000000);
			break;
		case O_DURATION: {
			char *end;

			errno = 0;
			C.duration = strtod(optarg, &end);
			if (errno || *end || end == optarg || !(C.duration > 0) ||
			    C.duration > 3600)
				die_usage("--duration: '%s' is not a number of seconds in "
					  "(0, 3600]", optarg);
			break;
		}
		case O_COUNT:
			C.count = parse_u64("--count", optarg, UINT64_MAX / 2);
			if (!C.count)
				die_usage("--count: must be at least 1");
			break;
		case O_THREADS:
			C.threads = (int)parse_u64("--threads", optarg, MAX_THREADS);
			if (!C.threads)
				die_usage("--threads: must be at least 1");
			break;
		case O_CPUS:
			parse_cpus(optarg);
			break;
		case O_BATCH:
			C.batch = (int)parse_u64("--batch", optarg, BATCH_MAX);
			if (!C.batch)
				die_usage("--batch: must be at least 1");
			break;
		case O_ALLOW_PHYS:
			C.allow_physical = true;
			break;
		case 'v':
			C.verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case ':':
			die_usage("option '%s' needs an argument", argv[optind - 1]);
		default:
			die_usage("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'", argv[optind]);

	if (!C.dev)
		die_usage("--dev IFACE is required");
	if (!C.has_dst_mac)
		die_usage("--dst-mac MAC is required (the receiver's MAC: "
			  "ip -n NS link show dev IFACE)");
	if (!dst)
		die_usage("--dst IP is required");
	if (!C.duration && !C.count)
		die_usage("give --duration SEC and/or --count N: a flood must be bounded");

	C.family = parse_ip(dst, C.dst);
	if (!C.family)
		die_usage("--dst: '%s' is not an IPv4 or IPv6 address", dst);
	if (ipv6 && C.family != AF_INET6)
		die_usage("--ipv6 given but --dst %s is an IPv4 address", dst);

	if (!sources)
		sources = C.family == AF_INET ? "198.51.100.0/24" : "2001:db8:5::/64";
	{
		int fam;

		parse_cidr("--sources", sources, C.src, &C.src_plen, &fam);
		if (fam != C.family)
			die_usage("--sources %s and --dst %s are of different families",
				  sources, dst);
	}
	{
		int alen = C.family == AF_INET ? 4 : 16;
		int host = alen * 8 - C.src_plen;

		if (C.nsrc) {
			/* sequential from the given address; must stay in the prefix */
			uint64_t offset = 0, space;

			for (int i = alen - 8 > 0 ? alen - 8 : 0; i < alen; i++) {
				int bit0 = i * 8;
				uint8_t hostmask = bit0 + 8 <= C.src_plen ? 0 :
					bit0 >= C.src_plen ? 0xff :
					(uint8_t)(0xff >> (C.src_plen - bit0));

				offset = offset << 8 | (C.src[i] & hostmask);
			}
			space = host >= 64 ? UINT64_MAX : (1ull << host);
			if (host < 64 && (C.nsrc > space || offset > space - C.nsrc))
				die_usage("--nsrc %" PRIu64 " from %s runs past the end of the "
					  "prefix /%d (give a wider one, e.g. --sources "
					  "198.51.100.10/24)", C.nsrc, sources, C.src_plen);
		} else {
			/* random: the host bits are drawn, so zero them here */
			for (int i = 0; i < alen; i++) {
				int bit0 = i * 8;

				if (bit0 >= C.src_plen)
					C.src[i] = 0;
				else if (bit0 + 8 > C.src_plen)
					C.src[i] &= (uint8_t)(0xff << (8 - (C.src_plen - bit0)));
			}
		}
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
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	size_t l2 = sizeof(struct fl_eth) + (C.vlan >= 0 ? sizeof(struct fl_vlan) : 0);

	if (fd < 0)
		die("couldn't open a socket for interface queries: %s", strerror(errno));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", C.dev);
	if (!C.has_src_mac) {
		if (ioctl(fd, SIOCGIFHWADDR, &ifr))
			die("couldn't read the MAC of %s: %s", C.dev, strerror(errno));
		memcpy(C.src_mac, ifr.ifr_hwaddr.sa_data, 6);
	}
	if (ioctl(fd, SIOCGIFMTU, &ifr))
		die("couldn't read the MTU of %s: %s", C.dev, strerror(errno));
	if (frame_len() - l2 > (size_t)ifr.ifr_mtu)
		die_usage("--payload %u makes %zu-byte packets, above the MTU %d of %s",
			  C.payload, frame_len() - l2, ifr.ifr_mtu, C.dev);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr))
		die("couldn't read the flags of %s: %s", C.dev, strerror(errno));
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
	struct sigaction sa = { .sa_handler = on_signal };
	uint64_t sent = 0, tx_err = 0, t0 = UINT64_MAX, t1 = 0, seed;
	double dur_s;
	int fatal = 0;

	parse_args(argc, argv);
	iface_setup();

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	memset(thr, 0, sizeof(thr));
	seed = now_ns() ^ ((uint64_t)getpid() << 32);
	for (int i = 0; i < C.threads; i++) {
		struct thr *t = &thr[i];

		t->idx = i;
		t->cpu = C.n_cpus ? C.cpus[i % C.n_cpus] : -1;
		t->rate = C.rate / (uint64_t)C.threads +
			  ((uint64_t)i < C.rate % (uint64_t)C.threads);
		if (C.rate && !t->rate)
			die_usage("--rate %" PRIu64 " is below one frame per second per "
				  "thread for %d threads", C.rate, C.threads);
		t->count = C.count / (uint64_t)C.threads +
			   ((uint64_t)i < C.count % (uint64_t)C.threads);
		if (C.count && !t->count)
			die_usage("--count %" PRIu64 " is smaller than --threads %d",
				  C.count, C.threads);
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

	if (pthread_barrier_init(&g_barrier, NULL, (unsigned)C.threads + 1))
		die("couldn't create a barrier: %s", strerror(errno));
	for (int i = 0; i < C.threads; i++) {
		int err = pthread_create(&thr[i].tid, NULL, sender, &thr[i]);

		if (err)
			die("couldn't start sender thread %d: %s", i, strerror(err));
	}
	if (C.duration)
		g_deadline = now_ns() + (uint64_t)(C.duration * 1e9);
	pthread_barrier_wait(&g_barrier);
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
