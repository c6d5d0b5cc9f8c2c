// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * flood.h - what the two lab generators share: xrl-gen (gen.c, frames sent
 * by an XDP program) and xrl-synflood (synflood.c, frames written to an
 * AF_PACKET socket). Messages and exits, option parsing, the source
 * population, the interface queries, the sender threads' start and the
 * frame headers with their checksums.
 *
 * Each tool is a single file: it defines _GNU_SOURCE before its includes
 * and PROG (its name, the prefix of every message) before including this.
 * Everything here is static, so a tool compiles only what it uses.
 *
 * Checksums are ones' complement sums of raw 16-bit words in the machine's
 * byte order (see gen.h): the same bytes as the big-endian sum of RFC 1071,
 * without a byte swap, so xrl-gen's program can add to them directly.
 */
#ifndef XRL_FLOOD_H
#define XRL_FLOOD_H

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/if_ether.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

#ifndef PROG
#error "define PROG, the tool's name, before including flood.h"
#endif

#define MAX_THREADS   64
#define TCP_HLEN      24          /* 20 + MSS option */
#define UDP_HLEN      8

/* ---- the run ---------------------------------------------------------------- */

static volatile sig_atomic_t g_stop;
static pthread_barrier_t g_barrier;
static uint64_t g_deadline;     /* CLOCK_MONOTONIC ns, 0 = none */

/* Exit 2 (a usage error) points at --help, exit 1 does not. */
static inline void __attribute__((noreturn, format(printf, 2, 3)))
flood_die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(code == 2 ? "\nTry '" PROG " --help'.\n" : "\n", stderr);
	exit(code);
}

#define die_usage(...) flood_die(2, __VA_ARGS__)
#define die(...)       flood_die(1, __VA_ARGS__)

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void sleep_until(uint64_t t)
{
	struct timespec ts = {
		.tv_sec = (time_t)(t / 1000000000ull),
		.tv_nsec = (long)(t % 1000000000ull),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR &&
	       !g_stop)
		;
}

static inline void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

/* SIGINT and SIGTERM end the run: the senders stop, the totals are printed. */
static inline void catch_stop(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static inline int pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Sender idx onto its CPU (-1: left alone); 0 or the error, said on stderr. */
static inline int pin_sender(int idx, int cpu)
{
	int err = cpu >= 0 ? pin_self(cpu) : 0;

	if (err)
		fprintf(stderr, PROG ": couldn't pin thread %d to CPU %d: %s\n", idx, cpu,
			strerror(err));
	return err;
}

/* Thread i's share of --rate and --count (0 = none) split over n threads. */
static inline void thread_share(uint64_t rate, uint64_t count, int n, int i,
				uint64_t *my_rate, uint64_t *my_count)
{
	*my_rate = rate / (uint64_t)n + ((uint64_t)i < rate % (uint64_t)n);
	if (rate && !*my_rate)
		die_usage("--rate %" PRIu64 " is below one frame per second per thread "
			  "for %d threads", rate, n);
	*my_count = count / (uint64_t)n + ((uint64_t)i < count % (uint64_t)n);
	if (count && !*my_count)
		die_usage("--count %" PRIu64 " is smaller than --threads %d", count, n);
}

/* The senders wait at g_barrier for each other and for main(). */
static inline void barrier_init(int threads)
{
	int err = pthread_barrier_init(&g_barrier, NULL, (unsigned)threads + 1);

	if (err) /* the error is returned, not in errno */
		die("couldn't create a barrier: %s", strerror(err));
}

/* Once every sender is started: the clock of --duration runs from here. */
static inline void release_senders(double duration)
{
	if (duration)
		g_deadline = now_ns() + (uint64_t)(duration * 1e9);
	pthread_barrier_wait(&g_barrier);
}

/* ---- argument parsing ---------------------------------------------------------- */

/* A tool's own reading of a whole number up to max (they differ in base and
 * wording), for the parsers below. */
typedef uint64_t flood_num_fn(const char *opt, const char *s, uint64_t max);

/* s as a whole number in base; a leading '+' (which strtoull takes) only if
 * plus_ok. */
static inline uint64_t parse_num(const char *opt, const char *s, int base, bool plus_ok)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (!s || !*s || *s == '-' || (*s == '+' && !plus_ok))
		die_usage("%s: '%s' is not a non-negative integer", opt, s ? s : "");
	v = strtoull(s, &end, base);
	if (errno || *end)
		die_usage("%s: '%s' is not a non-negative integer", opt, s);
	return v;
}

static inline void parse_mac(const char *opt, const char *s, uint8_t mac[6])
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
static inline int parse_ip(const char *s, uint8_t out[16])
{
	memset(out, 0, 16);
	if (inet_pton(AF_INET, s, out) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, s, out) == 1)
		return AF_INET6;
	return 0;
}

/* "ADDR[/PLEN]"; returns the family. */
static inline int parse_cidr(const char *opt, const char *s, uint8_t addr[16], int *plen,
			     flood_num_fn *num)
{
	char buf[INET6_ADDRSTRLEN + 8];
	char *slash;
	int family;

	if (strlen(s) >= sizeof(buf))
		die_usage("%s: '%s' is too long for an address prefix", opt, s);
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	family = parse_ip(buf, addr);
	if (!family)
		die_usage("%s: '%s' is not an IPv4 or IPv6 address", opt, buf);
	*plen = family == AF_INET ? 32 : 128;
	if (slash)
		*plen = (int)num(opt, slash + 1, (uint64_t)*plen);
	return family;
}

/*
 * "0,1" "0-3" "0,2-3" into cpus[MAX_THREADS]; every CPU must be allowed for
 * this process. Returns how many, or -ENOMEM (the tools word that apart).
 */
static inline int parse_cpus(const char *s, int *cpus, flood_num_fn *num)
{
	cpu_set_t allowed;
	char *dup = strdup(s), *save = NULL, *tok;
	int n = 0;

	if (!dup)
		return -ENOMEM;
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		die("couldn't read the CPU affinity mask: %s", strerror(errno));
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(tok, '-');
		uint64_t lo, hi;

		if (dash)
			*dash = '\0';
		lo = num("--cpus", tok, CPU_SETSIZE - 1);
		hi = dash ? num("--cpus", dash + 1, CPU_SETSIZE - 1) : lo;
		if (lo > hi)
			die_usage("--cpus: range %" PRIu64 "-%" PRIu64 " is backwards", lo, hi);
		for (uint64_t c = lo; c <= hi; c++) {
			if (!CPU_ISSET((int)c, &allowed))
				die_usage("--cpus: CPU %" PRIu64 " is not online or not allowed "
					  "for this process", c);
			if (n == MAX_THREADS)
				die_usage("--cpus: more than %d CPUs listed", MAX_THREADS);
			cpus[n++] = (int)c;
		}
	}
	free(dup);
	if (!n)
		die_usage("--cpus: '%s' lists no CPU", s);
	return n;
}

static inline double parse_duration(const char *s)
{
	double d;
	char *end;

	errno = 0;
	d = strtod(s, &end);
	if (errno || *end || end == s || !(d > 0) || d > 3600)
		die_usage("--duration: '%s' is not a number of seconds in (0, 3600]", s);
	return d;
}

/* getopt_long's ':' (an argument missing) and '?' (an unknown option). */
static inline void __attribute__((noreturn)) bad_option(int o, char **argv)
{
	if (o == ':')
		die_usage("option '%s' needs an argument", argv[optind - 1]);
	die_usage("unknown option '%s'", argv[optind - 1]);
}

/* ---- the source population ------------------------------------------------------ */

/* Whether nsrc sequential sources from addr stay inside its /plen. */
static inline bool src_seq_fits(int family, const uint8_t addr[16], int plen, uint64_t nsrc)
{
	int alen = family == AF_INET ? 4 : 16, host = alen * 8 - plen;
	unsigned __int128 offset = 0, space;

	for (int i = 0; i < alen; i++) {
		int bit0 = i * 8;
		uint8_t hm = bit0 + 8 <= plen ? 0 : bit0 >= plen ? 0xff :
			     (uint8_t)(0xff >> (plen - bit0));

		offset = offset << 8 | (addr[i] & hm);
	}
	if (host >= 128)
		return true;
	space = (unsigned __int128)1 << host;
	return nsrc <= space && offset <= space - nsrc;
}

/* Random sources draw the host bits: zero them in the base address. */
static inline void src_zero_host(uint8_t addr[16], int plen)
{
	for (int i = 0; i < 16; i++) {
		int bit0 = i * 8;

		if (bit0 >= plen)
			addr[i] = 0;
		else if (bit0 + 8 > plen)
			addr[i] &= (uint8_t)(0xff << (8 - (plen - bit0)));
	}
}

/* ---- the interface ------------------------------------------------------------------ */

static inline int iface_socket(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0)
		die("couldn't open a socket for interface queries: %s", strerror(errno));
	return fd;
}

/* One SIOCGIF* query on dev; what names the answer in the error. */
static inline void iface_get(int fd, const char *dev, unsigned long req, struct ifreq *ifr,
			     const char *what)
{
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", dev);
	if (ioctl(fd, req, ifr))
		die("couldn't read the %s of %s: %s", what, dev, strerror(errno));
}

/* ---- frames ------------------------------------------------------------------------- */

/* Wire headers, network byte order. */
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

_Static_assert(sizeof(struct fl_tcp) == TCP_HLEN, "tcp header");
_Static_assert(sizeof(struct fl_ip4) == 20, "ipv4 header");
_Static_assert(sizeof(struct fl_ip6) == 40, "ipv6 header");

/* What a frame's fixed header fields are made of. */
struct fl_spec {
	const uint8_t *dst_mac, *src_mac;
	int vlan;                 /* -1 = untagged */
	int family;               /* AF_INET / AF_INET6 */
	const uint8_t *dst;       /* network order */
	bool udp;                 /* UDP datagrams, or TCP SYNs */
	int dport;                /* -1 = left zero (drawn per frame) */
	size_t l4_len;            /* L4 header and payload */
};

static inline size_t fl_l3_off(int vlan)
{
	return sizeof(struct fl_eth) + (vlan >= 0 ? sizeof(struct fl_vlan) : 0);
}

static inline size_t fl_l4_off(int vlan, int family)
{
	return fl_l3_off(vlan) +
	       (family == AF_INET ? sizeof(struct fl_ip4) : sizeof(struct fl_ip6));
}

static inline uint8_t fl_proto(bool udp)
{
	return udp ? IPPROTO_UDP : IPPROTO_TCP;
}

/*
 * Zeroes size bytes at f and writes the fields every frame shares. The
 * source address, IPv4 id and checksum, source port, TCP sequence and L4
 * checksum are left zero: the sender fills them per frame.
 */
static inline void fl_init(uint8_t *f, size_t size, const struct fl_spec *s)
{
	struct fl_eth *eth = (struct fl_eth *)f;
	uint8_t *p = f + sizeof(*eth);
	uint16_t l3 = htons(s->family == AF_INET ? ETH_P_IP : ETH_P_IPV6);

	memset(f, 0, size);
	memcpy(eth->dst, s->dst_mac, 6);
	memcpy(eth->src, s->src_mac, 6);
	if (s->vlan >= 0) {
		struct fl_vlan *vh = (struct fl_vlan *)p;

		eth->proto = htons(ETH_P_8021Q);
		vh->tci = htons((uint16_t)s->vlan);
		vh->proto = l3;
		p += sizeof(*vh);
	} else {
		eth->proto = l3;
	}
	if (s->family == AF_INET) {
		struct fl_ip4 *ip = (struct fl_ip4 *)p;

		ip->ver_ihl = 0x45;
		ip->tot_len = htons((uint16_t)(sizeof(*ip) + s->l4_len));
		ip->frag_off = htons(0x4000);   /* DF */
		ip->ttl = 64;
		ip->proto = fl_proto(s->udp);
		memcpy(&ip->daddr, s->dst, 4);
		p += sizeof(*ip);
	} else {
		struct fl_ip6 *ip6 = (struct fl_ip6 *)p;

		ip6->ver_tc_flow = htonl(6u << 28);
		ip6->payload_len = htons((uint16_t)s->l4_len);
		ip6->nexthdr = fl_proto(s->udp);
		ip6->hop_limit = 64;
		memcpy(ip6->daddr, s->dst, 16);
		p += sizeof(*ip6);
	}
	if (s->udp) {
		struct fl_udp *u = (struct fl_udp *)p;

		if (s->dport >= 0)
			u->dport = htons((uint16_t)s->dport);
		u->len = htons((uint16_t)s->l4_len);
	} else {
		struct fl_tcp *t = (struct fl_tcp *)p;

		if (s->dport >= 0)
			t->dport = htons((uint16_t)s->dport);
		t->doff_res = (TCP_HLEN / 4) << 4;
		t->flags = 0x02;                /* SYN */
		t->window = htons(64240);
		t->opt[0] = 2;                  /* MSS 1460 */
		t->opt[1] = 4;
		t->opt[2] = 1460 >> 8;
		t->opt[3] = 1460 & 0xff;
	}
}

/* Adds len bytes as raw 16-bit words to sum; returns it folded to 16 bits. */
static inline uint32_t csum_add(uint32_t sum, const void *data, size_t len)
{
	const uint8_t *p = data;

	for (; len > 1; p += 2, len -= 2) {
		uint16_t w;

		memcpy(&w, p, 2);
		sum += w;
	}
	if (len) {
		uint16_t w = 0;

		memcpy(&w, p, 1);
		sum += w;
	}
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

/* The pseudo header's sum less the source address, which varies per frame. */
static inline uint32_t csum_pseudo(int family, const uint8_t *dst, bool udp, size_t l4_len)
{
	uint16_t w[2] = { htons(fl_proto(udp)), htons((uint16_t)l4_len) };

	/* v4 has the length in 16 bits, v6 in 32: the same sum below 64 KiB */
	return csum_add(csum_add(0, dst, family == AF_INET ? 4 : 16), w, sizeof(w));
}

/* ---- the options of the two tools -------------------------------------------------- */

/*
 * What the options set, and what follows from them (both tools' options in
 * one table; each takes a part, struct flood_limits says which). A tool's
 * configuration holds these as FLOOD_GROUP(): a union of struct flood_args
 * (for flood_parse) and the same fields unnamed (C.dev, C.vlan...), as the
 * kernel's struct_group() does.
 */
#define FLOOD_ARGS_FIELDS \
	const char *dev; \
	int ifindex; \
	uint8_t src_mac[6], dst_mac[6]; \
	bool has_src_mac, has_dst_mac; \
	const char *dst_arg; /* --dst as given */ \
	int family;	     /* of --dst: AF_INET / AF_INET6 */ \
	uint8_t dst[16];     /* network order */ \
	int dport;	     /* host order; -1: not given */ \
	uint16_t sport;	     /* host order; 0: random per frame */ \
	const char *sources; /* NULL: not given */ \
	uint8_t src[16];     /* network order */ \
	int src_plen; \
	uint64_t nsrc; /* 0: not sequential */ \
	bool random, rand_dport, udp, ipv6; \
	int vlan;	  /* -1: untagged */ \
	unsigned size;	  /* frame bytes, 0: minimal (xrl-gen) */ \
	unsigned payload; /* bytes after the L4 header (xrl-synflood) */ \
	uint64_t rate;	  /* frames/s over all threads, 0 = max */ \
	double duration;  /* s, 0 = not bounded in time */ \
	uint64_t count;	  /* frames over all threads, 0 = unbounded */ \
	int threads; \
	int cpus[MAX_THREADS]; \
	int n_cpus; /* 0: no pinning */ \
	unsigned batch; \
	bool verbose; \
	bool allow_physical;

struct flood_args {
	FLOOD_ARGS_FIELDS
};

#define FLOOD_GROUP() \
	union { \
		struct flood_args a; \
		struct { \
			FLOOD_ARGS_FIELDS \
		}; \
	}

/* getopt_long values of the options; FO_BIT(o) for struct flood_limits. */
enum {
	FO_DEV = 256,
	FO_SRC_MAC,
	FO_DST_MAC,
	FO_DST,
	FO_DPORT,
	FO_SPORT,
	FO_SOURCES,
	FO_NSRC,
	FO_RANDOM,
	FO_RAND_DPORT,
	FO_UDP,
	FO_IPV6,
	FO_VLAN,
	FO_SIZE,
	FO_PAYLOAD,
	FO_RATE,
	FO_DURATION,
	FO_COUNT,
	FO_THREADS,
	FO_CPUS,
	FO_BATCH,
	FO_ALLOW_PHYS,
};
#define FO_BIT(o) (1u << ((o)-FO_DEV))

/* What a tool takes and allows where the two differ. */
struct flood_limits {
	unsigned takes;	   /* FO_BIT()s of its own options (the rest are common) */
	flood_num_fn *num; /* its reading of a number */
	unsigned dport_min;
	uint64_t rate_max;
	unsigned size_max, payload_max, batch_max;
	void (*usage)(FILE *f);
};

/* The options only one tool takes; any other is an option of both. */
#define FO_OWN_BITS \
	(FO_BIT(FO_SPORT) | FO_BIT(FO_RANDOM) | FO_BIT(FO_RAND_DPORT) | FO_BIT(FO_IPV6) | \
	 FO_BIT(FO_SIZE) | FO_BIT(FO_PAYLOAD))

static const struct option flood_options[] = {
	{ "dev", required_argument, NULL, FO_DEV },
	{ "src-mac", required_argument, NULL, FO_SRC_MAC },
	{ "dst-mac", required_argument, NULL, FO_DST_MAC },
	{ "dst", required_argument, NULL, FO_DST },
	{ "dport", required_argument, NULL, FO_DPORT },
	{ "sport", required_argument, NULL, FO_SPORT },
	{ "sources", required_argument, NULL, FO_SOURCES },
	{ "nsrc", required_argument, NULL, FO_NSRC },
	{ "random", no_argument, NULL, FO_RANDOM },
	{ "random-dport", no_argument, NULL, FO_RAND_DPORT },
	{ "udp", no_argument, NULL, FO_UDP },
	{ "ipv6", no_argument, NULL, FO_IPV6 },
	{ "vlan", required_argument, NULL, FO_VLAN },
	{ "size", required_argument, NULL, FO_SIZE },
	{ "payload", required_argument, NULL, FO_PAYLOAD },
	{ "rate", required_argument, NULL, FO_RATE },
	{ "duration", required_argument, NULL, FO_DURATION },
	{ "count", required_argument, NULL, FO_COUNT },
	{ "threads", required_argument, NULL, FO_THREADS },
	{ "cpus", required_argument, NULL, FO_CPUS },
	{ "batch", required_argument, NULL, FO_BATCH },
	{ "allow-physical", no_argument, NULL, FO_ALLOW_PHYS },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* A number in min..max, read the tool's way. */
static inline uint64_t flood_num(const struct flood_limits *l, const char *opt, const char *s,
				 uint64_t min, uint64_t max)
{
	uint64_t v = l->num(opt, s, max);

	if (v < min)
		die_usage("%s: must be at least %" PRIu64, opt, min);
	return v;
}

/* The bounds of a number option o (FO_DPORT...), in the tool's limits l. */
static inline uint64_t flood_opt_num(int o, const char *opt, const struct flood_limits *l)
{
	switch (o) {
	case FO_DPORT:
		return flood_num(l, opt, optarg, l->dport_min, 65535);
	case FO_SPORT:
		return flood_num(l, opt, optarg, 0, 65535);
	case FO_NSRC:
		return flood_num(l, opt, optarg, 1, UINT32_MAX);
	case FO_VLAN:
		return flood_num(l, opt, optarg, 0, 4095);
	case FO_SIZE:
		return flood_num(l, opt, optarg, 1, l->size_max);
	case FO_PAYLOAD:
		return flood_num(l, opt, optarg, 0, l->payload_max);
	case FO_RATE:
		return flood_num(l, opt, optarg, 0, l->rate_max);
	case FO_COUNT:
		return flood_num(l, opt, optarg, 1, UINT64_MAX / 2);
	case FO_THREADS:
		return flood_num(l, opt, optarg, 1, MAX_THREADS);
	default:
		return flood_num(l, opt, optarg, 1, l->batch_max);
	}
}

/* How an option's value is read and where it goes in struct flood_args. */
enum flood_kind { FK_STR, FK_FLAG, FK_MAC, FK_NUM, FK_DURATION, FK_CPUS };
#define FA(f) offsetof(struct flood_args, f), sizeof(((struct flood_args *)0)->f)

static const struct {
	enum flood_kind kind;
	size_t off, size; /* the field (FK_NUM: an integer of 1 to 8 bytes) */
	size_t has;	  /* FK_MAC: the bool that says it was given */
} flood_fields[] = {
	[FO_DEV - FO_DEV] = { FK_STR, FA(dev) },
	[FO_SRC_MAC - FO_DEV] = { FK_MAC, FA(src_mac), offsetof(struct flood_args, has_src_mac) },
	[FO_DST_MAC - FO_DEV] = { FK_MAC, FA(dst_mac), offsetof(struct flood_args, has_dst_mac) },
	[FO_DST - FO_DEV] = { FK_STR, FA(dst_arg) },
	[FO_DPORT - FO_DEV] = { FK_NUM, FA(dport) },
	[FO_SPORT - FO_DEV] = { FK_NUM, FA(sport) },
	[FO_SOURCES - FO_DEV] = { FK_STR, FA(sources) },
	[FO_NSRC - FO_DEV] = { FK_NUM, FA(nsrc) },
	[FO_RANDOM - FO_DEV] = { FK_FLAG, FA(random) },
	[FO_RAND_DPORT - FO_DEV] = { FK_FLAG, FA(rand_dport) },
	[FO_UDP - FO_DEV] = { FK_FLAG, FA(udp) },
	[FO_IPV6 - FO_DEV] = { FK_FLAG, FA(ipv6) },
	[FO_VLAN - FO_DEV] = { FK_NUM, FA(vlan) },
	[FO_SIZE - FO_DEV] = { FK_NUM, FA(size) },
	[FO_PAYLOAD - FO_DEV] = { FK_NUM, FA(payload) },
	[FO_RATE - FO_DEV] = { FK_NUM, FA(rate) },
	[FO_DURATION - FO_DEV] = { FK_DURATION, FA(duration) },
	[FO_COUNT - FO_DEV] = { FK_NUM, FA(count) },
	[FO_THREADS - FO_DEV] = { FK_NUM, FA(threads) },
	[FO_CPUS - FO_DEV] = { FK_CPUS, FA(cpus) },
	[FO_BATCH - FO_DEV] = { FK_NUM, FA(batch) },
	[FO_ALLOW_PHYS - FO_DEV] = { FK_FLAG, FA(allow_physical) },
};

/* getopt_long's answer o, the option named opt, into a. */
static inline void flood_opt(int o, const char *opt, struct flood_args *a,
			     const struct flood_limits *l)
{
	char *p = (char *)a + flood_fields[o - FO_DEV].off;
	uint64_t v;

	switch (flood_fields[o - FO_DEV].kind) {
	case FK_STR:
		*(const char **)p = optarg;
		break;
	case FK_FLAG:
		*(bool *)p = true;
		break;
	case FK_MAC:
		parse_mac(opt, optarg, (uint8_t *)p);
		*(bool *)((char *)a + flood_fields[o - FO_DEV].has) = true;
		break;
	case FK_NUM:
		/* the low bytes of v: every bound fits its field */
		v = flood_opt_num(o, opt, l);
		if (flood_fields[o - FO_DEV].size == sizeof(uint16_t))
			*(uint16_t *)p = (uint16_t)v;
		else if (flood_fields[o - FO_DEV].size == sizeof(uint32_t))
			*(uint32_t *)p = (uint32_t)v;
		else
			*(uint64_t *)p = v;
		break;
	case FK_DURATION:
		a->duration = parse_duration(optarg);
		break;
	case FK_CPUS:
		a->n_cpus = parse_cpus(optarg, a->cpus, l->num);
		if (a->n_cpus < 0)
			die("couldn't parse --cpus: out of memory");
		break;
	}
}

/*
 * The command line into a: the options the tool takes (another is unknown
 * to it), no operand, and what every run needs (--dev, --dst-mac, --dst, a
 * bound); --dst read into a->dst and a->family. --help prints the usage.
 */
static inline void flood_parse(int argc, char **argv, struct flood_args *a,
			       const struct flood_limits *l)
{
	char opt[32];
	int o, i = -1;

	opterr = 0;
	while ((o = getopt_long(argc, argv, ":vh", flood_options, &i)) != -1) {
		if (o == 'h') {
			l->usage(stdout);
			exit(0);
		}
		if (o == ':' || o == '?')
			bad_option(o, argv);
		if (o == 'v') {
			a->verbose = true;
			continue;
		}
		snprintf(opt, sizeof(opt), "--%s", flood_options[i].name);
		if ((FO_BIT(o) & FO_OWN_BITS) && !(FO_BIT(o) & l->takes))
			die_usage("unknown option '%s'", opt);
		flood_opt(o, opt, a, l);
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	if (!a->dev)
		die_usage("--dev IFACE is required");
	if (!a->has_dst_mac)
		die_usage("--dst-mac MAC is required (the receiving end's MAC: "
			  "ip -n NS link show dev IFACE)");
	if (!a->dst_arg)
		die_usage("--dst IP is required");
	if (!a->duration && !a->count)
		die_usage("give --duration SEC and/or --count N: every run must be bounded");
	a->family = parse_ip(a->dst_arg, a->dst);
	if (!a->family)
		die_usage("--dst: '%s' is not an IPv4 or IPv6 address", a->dst_arg);
}

#endif /* XRL_FLOOD_H */
