// SPDX-License-Identifier: GPL-2.0-only
/*
 * xdp_cost.c - per-packet cost of xrl's XDP program, by BPF_PROG_TEST_RUN.
 *
 * Loads a bare XDP_DROP program (the floor, scripts/bench/floor.bpf.c) and
 * xrl through the loader library (load only: no interface, no pins), applies
 * a realistic policy and times, with bpf_prog_test_run_opts and `repeat`
 * runs each, the paths a packet can take:
 *
 *   floor      the bare XDP_DROP program
 *   refuse4    IPv4 TCP SYN whose source bucket is exhausted (dropped)
 *   admit4     IPv4 TCP SYN that every repeat admits (passed): a busy
 *              source, whose admits come from this CPU's lease
 *   allow4     IPv4 TCP SYN from an allowlisted source (passed)
 *   refuse6    IPv6 TCP SYN whose source bucket is exhausted (dropped)
 *   admit4s    admit4 with leases off: every admit asks the shared bucket
 *              (a source sending a few packets a jiffy)
 *   admit4sf   admit4s on a program loaded with the fine clock
 *              (bpf_ktime_get_ns), to justify the jiffies default
 *
 * The paths are measured in interleaved rounds (the order rotates every
 * round) and the median of each is reported with its ratio to the floor.
 * After every timed run the program's own counters are checked: a run that
 * did not take the path it claims to measure is an error, not a number.
 *
 * The last line printed is `refuse_vs_ref=X allow_vs_ref=Y admit_vs_ref=Z floor_ns=F`;
 * scripts/bench/xdp-cost.sh checks it against the targets.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xrl.h"

#define DEF_FLOOR_OBJ "build/bench/floor.bpf.o"
#define DEF_REF_OBJ   "build/bench/ref.bpf.o"
#define DEF_REPEAT    1000000u
#define DEF_ROUNDS    9u
#define MAX_ROUNDS    101u

#define XDP_DROP_RET 1
#define XDP_PASS_RET 2

/* ---- frames ----------------------------------------------------------- */

struct frame {
	unsigned char b[128];
	size_t len;
};

static void put16(unsigned char *p, unsigned v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put32(unsigned char *p, unsigned long v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/* One's-complement sum of big-endian 16-bit words, not yet folded. */
static unsigned long csum_add(unsigned long sum, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (unsigned long)p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += (unsigned long)p[n - 1] << 8;
	return sum;
}

static unsigned csum_fold(unsigned long sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

static void eth_hdr(unsigned char *b, unsigned ethertype)
{
	static const unsigned char dmac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
	static const unsigned char smac[6] = { 0x02, 0, 0, 0, 0, 0x01 };

	memcpy(b, dmac, 6);
	memcpy(b + 6, smac, 6);
	put16(b + 12, ethertype);
}

/* A 20-byte TCP header with only SYN set; checksum filled by the caller. */
static void tcp_syn_hdr(unsigned char *t, unsigned dport)
{
	memset(t, 0, 20);
	put16(t, 40000);          /* source port */
	put16(t + 2, dport);
	put32(t + 4, 0x12345678); /* sequence */
	t[12] = 5 << 4;           /* data offset: 5 words */
	t[13] = 0x02;             /* SYN */
	put16(t + 14, 64240);     /* window */
}

/*
 * Ethernet + IP + TCP SYN, IPv6 if src has a ':': 60 bytes for IPv4 (54
 * of headers, zero padding to the Ethernet minimum), 74 for IPv6.
 */
static int frame_syn(struct frame *f, const char *src, const char *dst, unsigned dport)
{
	bool v6 = strchr(src, ':') != NULL;
	size_t alen = v6 ? 16 : 4, plen = 2 * alen;
	unsigned char *ip = f->b + 14, *t = ip + (v6 ? 40 : 20), *addr = ip + (v6 ? 8 : 12);
	unsigned char pseudo[40] = { 0 };

	memset(f, 0, sizeof(*f));
	eth_hdr(f->b, v6 ? 0x86DD : 0x0800);
	if (inet_pton(v6 ? AF_INET6 : AF_INET, src, addr) != 1 ||
	    inet_pton(v6 ? AF_INET6 : AF_INET, dst, addr + alen) != 1)
		return -EINVAL;
	if (v6) {
		ip[0] = 0x60;             /* version 6 */
		put16(ip + 4, 20);        /* payload length */
		ip[6] = 6;                /* next header: TCP */
		ip[7] = 64;               /* hop limit */
	} else {
		ip[0] = 0x45;             /* version 4, IHL 5 */
		put16(ip + 2, 40);        /* total length */
		put16(ip + 4, 1);         /* id */
		put16(ip + 6, 0x4000);    /* DF, offset 0 */
		ip[8] = 64;               /* TTL */
		ip[9] = 6;                /* TCP */
		put16(ip + 10, csum_fold(csum_add(0, ip, 20)));
	}

	/* the pseudo-header: both addresses, then IPv4's zero byte, protocol
	 * and 16-bit TCP length, or IPv6's 32-bit TCP length, three zero bytes
	 * and next header */
	memcpy(pseudo, addr, plen);
	if (v6) {
		put32(pseudo + plen, 20);
		pseudo[plen + 7] = 6;
		plen += 8;
	} else {
		pseudo[plen + 1] = 6;
		put16(pseudo + plen + 2, 20);
		plen += 4;
	}
	tcp_syn_hdr(t, dport);
	put16(t + 16, csum_fold(csum_add(csum_add(0, pseudo, plen), t, 20)));

	f->len = v6 ? 14 + 40 + 20 : 60;
	return 0;
}

/* ---- the policy --------------------------------------------------------- */

/* The next rule of p: name, TCP packets of tcp_class, dropped when refused. */
static struct xrl_rule_spec *tcp_rule(struct xrl_policy *p, const char *name, __u8 tcp_class)
{
	struct xrl_rule_spec *r = &p->rules[p->n_rules++];

	xrl_rule_spec_init(r, name);
	r->proto = XRL_PROTO_TCP;
	r->tcp_class = tcp_class;
	r->action = XRL_ACT_DROP;
	return r;
}

/*
 * What a web front end would run: a SYN rule on 80 and 443 and a login rule
 * for one address, and an allowlist with one prefix per family (so both LPM
 * lookups run on every packet). Rule order matters: "syn" is slot 0, the one
 * the measured packets match; "login" is evaluated and does not match.
 *
 * admit = false: the SYN rule allows 1 per hour with a burst of 1, so after
 * one packet the source is refused for an hour.
 * admit = true: 1e9 per second (one token per ns, the fastest rate GCRA
 * represents) with a burst of 1e8, so every repeat is admitted even if the
 * clock stood still (see docs/benchmarks.md).
 */
static int make_policy(struct xrl_policy *p, bool admit, char *err, size_t errlen)
{
	struct xrl_rule_spec *r;
	int ret;

	memset(p, 0, sizeof(*p));

	r = tcp_rule(p, "syn", XRL_TCP_SYN);
	r->n_ports = 2;
	r->ports[0] = (struct xrl_port_range){ 80, 80 };
	r->ports[1] = (struct xrl_port_range){ 443, 443 };
	if (admit) {
		r->rate = (struct xrl_rate){ 1000000000ULL, 1000000000ULL };
		r->burst = 100000000;
	} else {
		r->rate = (struct xrl_rate){ 1, 3600ULL * 1000000000ULL };
		r->burst = 1;
	}

	r = tcp_rule(p, "login", XRL_TCP_ANY);
	r->n_ports = 1;
	r->ports[0] = (struct xrl_port_range){ 443, 443 };
	r->has_dst = true;
	ret = xrl_prefix_parse("203.0.113.10/32", &r->dst, err, errlen);
	if (ret)
		return ret;
	r->rate = (struct xrl_rate){ 10, 60ULL * 1000000000ULL };
	r->burst = 5;
	return 0;
}

static const char *const allow_list[] = {
	"10.0.0.0/8",
	"192.168.0.0/16",
	"2001:db8:100::/48",
	"fd00::/8",
};

#define SLOT_SYN 0   /* rule slot the measured packets match */

/* ---- measurement ---------------------------------------------------------- */

enum check {
	CHK_NONE,      /* floor: nothing to count */
	CHK_DROPPED,   /* SLOT_SYN dropped every repeat */
	CHK_PASSED,    /* SLOT_SYN passed every repeat */
	CHK_ALLOWED,   /* the allowlisted counter, every repeat */
	CHK_REF,       /* a reference: its return value says it all */
};

struct path {
	const char *name;
	const char *what;
	struct xrl_handle *h;   /* NULL for the floor */
	int prog_fd;
	const struct frame *f;
	__u32 expect_ret;
	enum check check;
	int ref;                /* index of the path's reference, or -1 */
	double ns[MAX_ROUNDS];
	double median;
	double x_ref;           /* median of the per-round ratios to ref */
};

static struct xrl_stats stats_before, stats_after;

static void add_path(struct path *p, const char *name, const char *what,
		     struct xrl_handle *h, int prog_fd, const struct frame *f,
		     __u32 expect_ret, enum check check)
{
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->what = what;
	p->h = h;
	p->prog_fd = prog_fd;
	p->f = f;
	p->expect_ret = expect_ret;
	p->check = check;
	p->ref = -1;
}

/*
 * One BPF_PROG_TEST_RUN of repeat runs: *ns is the time per run, from the
 * wall clock around the call rather than the kernel's duration, which is
 * whole nanoseconds (a 1 ns step is a fifth of the floor on some machines).
 * The call's fixed cost, spread over a million runs, is below 0.01 ns.
 */
static int test_run(int prog_fd, const struct frame *f, __u32 repeat,
		    double *ns, __u32 *retval)
{
	LIBBPF_OPTS(bpf_test_run_opts, o,
		.data_in = f->b,
		.data_size_in = f->len,
		.repeat = repeat,
	);
	struct timespec t0, t1;
	int err;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = bpf_prog_test_run_opts(prog_fd, &o);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (err)
		return -errno;
	*ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / repeat;
	*retval = o.retval;
	return 0;
}

/* Did the last run take the path it names? 0 or -1 with a message. */
static int check_path(const struct path *p, __u32 repeat)
{
	const struct xrl_rule_ctr *b = &stats_before.rules[SLOT_SYN];
	const struct xrl_rule_ctr *a = &stats_after.rules[SLOT_SYN];
	__u64 got = 0;
	const char *what = "";

	switch (p->check) {
	case CHK_NONE:
	case CHK_REF:
		return 0;
	case CHK_DROPPED:
		got = a->pkts[XRL_V_DROPPED] - b->pkts[XRL_V_DROPPED];
		what = "dropped by rule syn";
		break;
	case CHK_PASSED:
		got = a->pkts[XRL_V_PASSED] - b->pkts[XRL_V_PASSED];
		what = "passed by rule syn";
		break;
	case CHK_ALLOWED:
		got = stats_after.global.c[XRL_G_ALLOWLISTED] -
		      stats_before.global.c[XRL_G_ALLOWLISTED];
		what = "allowlisted";
		break;
	}
	if (got != repeat) {
		fprintf(stderr, "xdp_cost: %s: %llu of %u repeats were %s: the run "
			"did not measure the path it names\n", p->name,
			(unsigned long long)got, repeat, what);
		return -1;
	}
	return 0;
}

static int measure(struct path *p, __u32 repeat, double *ns)
{
	__u32 ret = 0;
	int err;

	if (p->h && (err = xrl_read_stats(p->h, &stats_before))) {
		fprintf(stderr, "xdp_cost: reading counters: %s\n", strerror(-err));
		return -1;
	}
	err = test_run(p->prog_fd, p->f, repeat, ns, &ret);
	if (err) {
		fprintf(stderr, "xdp_cost: %s: BPF_PROG_TEST_RUN: %s\n", p->name,
			strerror(-err));
		return -1;
	}
	if (ret != p->expect_ret) {
		fprintf(stderr, "xdp_cost: %s: program returned %u, expected %u\n",
			p->name, ret, p->expect_ret);
		return -1;
	}
	if (p->h && (err = xrl_read_stats(p->h, &stats_after))) {
		fprintf(stderr, "xdp_cost: reading counters: %s\n", strerror(-err));
		return -1;
	}
	return p->h ? check_path(p, repeat) : 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(const double *v, unsigned n)
{
	double s[MAX_ROUNDS];

	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2.0;
}

static const struct path *find_path(const struct path *p, unsigned n, const char *name)
{
	for (unsigned i = 0; i < n; i++)
		if (!strcmp(p[i].name, name))
			return &p[i];
	abort(); /* every name asked for is added in main() */
}

/* ---- setup ------------------------------------------------------------------ */

/* Open and load the object at path, or NULL with a message. */
static struct bpf_object *open_obj(const char *path)
{
	struct bpf_object *obj;
	int err;

	obj = bpf_object__open_file(path, NULL);
	if (!obj) {
		fprintf(stderr, "xdp_cost: cannot open %s: %s\n", path, strerror(errno));
		return NULL;
	}
	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "xdp_cost: cannot load %s: %s\n", path, strerror(-err));
		bpf_object__close(obj);
		return NULL;
	}
	return obj;
}

static int load_floor(const char *path, struct bpf_object **objp)
{
	struct bpf_program *prog;
	struct bpf_object *obj = open_obj(path);

	if (!obj)
		return -1;
	prog = bpf_object__next_program(obj, NULL);
	if (!prog) {
		fprintf(stderr, "xdp_cost: %s has no program\n", path);
		bpf_object__close(obj);
		return -1;
	}
	*objp = obj;
	return bpf_program__fd(prog);
}

/*
 * The references (scripts/bench/ref.bpf.c): every slot refuses until the
 * end of time and holds a lease that never runs out, on every CPU, and the
 * allowlist holds the IPv4 prefixes xrl's does. fds[]: refuse, allow, lease.
 */
static int load_ref(const char *path, struct bpf_object **objp, int fds[3])
{
	static const char *const progs[3] = { "ref_refuse", "ref_allow", "ref_lease" };
	struct bpf_object *obj;
	struct bpf_map *slots, *allow;
	int ncpu = libbpf_num_possible_cpus();
	struct { __u64 deadline, lease; } *v = NULL;

	obj = open_obj(path);
	if (!obj)
		return -1;
	for (int i = 0; i < 3; i++) {
		struct bpf_program *prog = bpf_object__find_program_by_name(obj, progs[i]);

		fds[i] = prog ? bpf_program__fd(prog) : -1;
		if (fds[i] < 0) {
			fprintf(stderr, "xdp_cost: %s has no program %s\n", path, progs[i]);
			goto fail;
		}
	}
	slots = bpf_object__find_map_by_name(obj, "ref_slots");
	allow = bpf_object__find_map_by_name(obj, "ref_allow4");
	if (!slots || !allow || ncpu <= 0 || !(v = calloc(ncpu, sizeof(*v)))) {
		fprintf(stderr, "xdp_cost: %s: maps or CPUs not found\n", path);
		goto fail;
	}
	for (int c = 0; c < ncpu; c++)
		v[c].deadline = v[c].lease = UINT64_MAX;
	for (__u32 k = 0; k < bpf_map__max_entries(slots); k++) {
		if (bpf_map_update_elem(bpf_map__fd(slots), &k, v, BPF_ANY)) {
			fprintf(stderr, "xdp_cost: %s: filling slots: %s\n", path,
				strerror(errno));
			goto fail;
		}
	}
	for (size_t i = 0; i < sizeof(allow_list) / sizeof(allow_list[0]); i++) {
		struct xrl_prefix pfx;
		struct { __u32 len, addr; } key;
		char err_s[XRL_ERRLEN] = "";
		__u8 one = 1;

		if (xrl_prefix_parse(allow_list[i], &pfx, err_s, sizeof(err_s)) ||
		    pfx.family != XRL_AF_INET)
			continue;
		key.len = pfx.plen;
		key.addr = pfx.addr[0];
		if (bpf_map_update_elem(bpf_map__fd(allow), &key, &one, BPF_ANY)) {
			fprintf(stderr, "xdp_cost: %s: allowlist %s: %s\n", path,
				allow_list[i], strerror(errno));
			goto fail;
		}
	}
	free(v);
	*objp = obj;
	return 0;
fail:
	free(v);
	bpf_object__close(obj);
	return -1;
}

/* Load xrl (no interface, no pins), apply the policy and the allowlist. */
static struct xrl_handle *load_xrl(const char *label, bool admit, bool fine_clock,
				   bool no_lease)
{
	static struct xrl_policy pol;
	struct xrl_prefix pfx;
	struct xrl_handle *h = NULL;
	char err[XRL_ERRLEN] = "";
	int ret;

	ret = xrl_open(&(struct xrl_open_opts){ .ifname = NULL, .pin_root = NULL,
						  .fine_clock = fine_clock,
						  .no_lease = no_lease }, &h);
	if (ret) {
		fprintf(stderr, "xdp_cost: %s: xrl_open: %s\n", label, strerror(-ret));
		return NULL;
	}
	ret = make_policy(&pol, admit, err, sizeof(err));
	if (!ret)
		ret = xrl_apply_policy(h, &pol, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "xdp_cost: %s: policy: %s (%s)\n", label,
			err[0] ? err : "failed", strerror(-ret));
		goto fail;
	}
	for (size_t i = 0; i < sizeof(allow_list) / sizeof(allow_list[0]); i++) {
		ret = xrl_prefix_parse(allow_list[i], &pfx, err, sizeof(err));
		if (!ret)
			ret = xrl_allow_add(h, &pfx);
		if (ret) {
			fprintf(stderr, "xdp_cost: %s: allowlist %s: %s\n", label,
				allow_list[i], err[0] ? err : strerror(-ret));
			goto fail;
		}
	}
	/* The documented default, set so the figures do not depend on it:
	 * one refusal sample per source per CPU per second. */
	ret = xrl_set_event_interval(h, 1000000000ULL);
	if (ret) {
		fprintf(stderr, "xdp_cost: %s: event interval: %s\n", label,
			strerror(-ret));
		goto fail;
	}
	return h;
fail:
	xrl_close(h);
	return NULL;
}

/* Spend the source's single token so that what follows is refused. */
static int exhaust(struct path *p)
{
	__u32 ret;
	double ns;
	int err;

	for (int i = 0; i < 2; i++) {
		err = test_run(p->prog_fd, p->f, 1, &ns, &ret);
		if (err) {
			fprintf(stderr, "xdp_cost: %s: BPF_PROG_TEST_RUN: %s\n",
				p->name, strerror(-err));
			return -1;
		}
	}
	if (ret != XDP_DROP_RET) {
		fprintf(stderr, "xdp_cost: %s: still not refused after two packets "
			"(returned %u)\n", p->name, ret);
		return -1;
	}
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: xdp_cost [--floor-obj PATH] [--ref-obj PATH] [--repeat N] [--rounds N]\n"
		"                [--cpu N] [--no-fine-clock] [--quick]\n"
		"  --floor-obj PATH  the bare XDP_DROP program (default %s)\n"
		"  --ref-obj PATH    the reference programs (default %s)\n"
		"  --repeat N        BPF_PROG_TEST_RUN repeats per timed run (default %u,\n"
		"                    at least 1000000 unless --quick)\n"
		"  --rounds N        interleaved rounds; medians are reported (default %u)\n"
		"  --cpu N           pin to CPU N (default: the last CPU; -1: do not pin)\n"
		"  --no-fine-clock   skip the fine-clock comparison\n"
		"  --quick           allow any --repeat (a smoke test, not a benchmark)\n",
		DEF_FLOOR_OBJ, DEF_REF_OBJ, DEF_REPEAT, DEF_ROUNDS);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "floor-obj", required_argument, NULL, 'f' },
		{ "ref-obj", required_argument, NULL, 'R' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "rounds", required_argument, NULL, 'n' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "no-fine-clock", no_argument, NULL, 'F' },
		{ "quick", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *floor_obj = DEF_FLOOR_OBJ, *ref_obj = DEF_REF_OBJ;
	unsigned long repeat = DEF_REPEAT, rounds = DEF_ROUNDS;
	long cpu = -2;
	bool fine = true, quick = false;
	struct bpf_object *floor = NULL, *ref = NULL;
	int ref_fd[3];
	struct xrl_handle *h_refuse = NULL, *h_admit = NULL, *h_fine = NULL, *h_slow = NULL;
	struct frame f_v4, f_v4_allow, f_v6;
	struct path paths[16];
	unsigned n_paths = 0;
	struct utsname un;
	const struct path *p_refuse4, *p_refuse6, *p_allow4, *p_admit4, *p_slow;
	int c, floor_fd, rc = 1;

	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 'f': floor_obj = optarg; break;
		case 'R': ref_obj = optarg; break;
		case 'r': repeat = strtoul(optarg, NULL, 0); break;
		case 'n': rounds = strtoul(optarg, NULL, 0); break;
		case 'c': cpu = strtol(optarg, NULL, 0); break;
		case 'F': fine = false; break;
		case 'q': quick = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || !repeat || repeat > 1000000000UL ||
	    (!quick && repeat < 1000000) || !rounds || rounds > MAX_ROUNDS) {
		usage(stderr);
		return 2;
	}

	if (cpu == -2) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		cpu = n > 0 ? n - 1 : 0;
	}
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			fprintf(stderr, "xdp_cost: cannot pin to CPU %ld: %s\n", cpu,
				strerror(errno));
			return 1;
		}
	}
	libbpf_set_print(NULL);

	/* Sources: 198.51.100.7 and 2001:db8:200::7 are on no list; 10.1.2.3 is
	 * in 10.0.0.0/8. Destinations are not 203.0.113.10, so only "syn"
	 * matches; "login" is evaluated and misses on its destination. */
	if (frame_syn(&f_v4, "198.51.100.7", "192.0.2.80", 80) ||
	    frame_syn(&f_v4_allow, "10.1.2.3", "192.0.2.80", 80) ||
	    frame_syn(&f_v6, "2001:db8:200::7", "2001:db8:1::80", 80)) {
		fprintf(stderr, "xdp_cost: building frames failed\n");
		return 1;
	}

	floor_fd = load_floor(floor_obj, &floor);
	if (floor_fd < 0 || load_ref(ref_obj, &ref, ref_fd))
		goto out;
	h_refuse = load_xrl("refuse", false, false, false);
	h_admit = load_xrl("admit", true, false, false);
	h_slow = load_xrl("admit-no-lease", true, false, true);
	if (!h_refuse || !h_admit || !h_slow)
		goto out;
	if (fine && !(h_fine = load_xrl("fine-clock", true, true, true)))
		goto out;

	add_path(&paths[n_paths++], "floor", "bare XDP_DROP (floor.bpf.c)", NULL,
		 floor_fd, &f_v4, XDP_DROP_RET, CHK_NONE);
	/* each xrl path is followed by its reference (ref.bpf.c) */
	add_path(&paths[n_paths++], "refuse4", "xrl refusal, IPv4 SYN", h_refuse,
		 xrl_prog_fd(h_refuse), &f_v4, XDP_DROP_RET, CHK_DROPPED);
	add_path(&paths[n_paths++], "r_refuse4", "reference refusal, IPv4", NULL,
		 ref_fd[0], &f_v4, XDP_DROP_RET, CHK_REF);
	paths[n_paths - 2].ref = n_paths - 1;
	add_path(&paths[n_paths++], "admit4", "xrl admit from a lease, IPv4 SYN", h_admit,
		 xrl_prog_fd(h_admit), &f_v4, XDP_PASS_RET, CHK_PASSED);
	add_path(&paths[n_paths++], "r_lease4", "reference lease admit, IPv4", NULL,
		 ref_fd[2], &f_v4, XDP_PASS_RET, CHK_REF);
	paths[n_paths - 2].ref = n_paths - 1;
	add_path(&paths[n_paths++], "allow4", "xrl allowlisted, IPv4 SYN", h_refuse,
		 xrl_prog_fd(h_refuse), &f_v4_allow, XDP_PASS_RET, CHK_ALLOWED);
	add_path(&paths[n_paths++], "r_allow4", "reference allowlist hit, IPv4", NULL,
		 ref_fd[1], &f_v4_allow, XDP_PASS_RET, CHK_REF);
	paths[n_paths - 2].ref = n_paths - 1;
	add_path(&paths[n_paths++], "refuse6", "xrl refusal, IPv6 SYN", h_refuse,
		 xrl_prog_fd(h_refuse), &f_v6, XDP_DROP_RET, CHK_DROPPED);
	add_path(&paths[n_paths++], "r_refuse6", "reference refusal, IPv6", NULL,
		 ref_fd[0], &f_v6, XDP_DROP_RET, CHK_REF);
	paths[n_paths - 2].ref = n_paths - 1;
	add_path(&paths[n_paths++], "admit4s", "xrl admit, IPv4 SYN, no lease", h_slow,
		 xrl_prog_fd(h_slow), &f_v4, XDP_PASS_RET, CHK_PASSED);
	if (fine)
		add_path(&paths[n_paths++], "admit4sf",
			 "xrl admit, no lease, fine clock", h_fine,
			 xrl_prog_fd(h_fine), &f_v4, XDP_PASS_RET, CHK_PASSED);

	for (unsigned i = 0; i < n_paths; i++) {
		if (paths[i].prog_fd < 0) {
			fprintf(stderr, "xdp_cost: %s: no program fd\n", paths[i].name);
			goto out;
		}
		if (paths[i].check == CHK_DROPPED && exhaust(&paths[i]))
			goto out;
	}

	uname(&un);
	printf("xdp_cost: kernel %s, %ld CPUs, pinned to %s%ld, repeat %lu, %lu rounds\n",
	       un.release, sysconf(_SC_NPROCESSORS_ONLN), cpu >= 0 ? "CPU " : "",
	       cpu >= 0 ? cpu : -1L, repeat, rounds);

	/* Warm-up: one shorter untimed pass over every path. */
	for (unsigned i = 0; i < n_paths; i++) {
		double ns;

		if (measure(&paths[i], repeat / 10 ? repeat / 10 : 1, &ns))
			goto out;
	}

	printf("%-6s", "round");
	for (unsigned i = 0; i < n_paths; i++)
		printf(" %9s", paths[i].name);
	printf("   (ns per packet)\n");
	for (unsigned r = 0; r < rounds; r++) {
		/* rotate the order so no path always runs first or last */
		for (unsigned k = 0; k < n_paths; k++) {
			struct path *p = &paths[(r + k) % n_paths];

			if (measure(p, repeat, &p->ns[r]))
				goto out;
		}
		printf("%-6u", r + 1);
		for (unsigned i = 0; i < n_paths; i++)
			printf(" %9.2f", paths[i].ns[r]);
		printf("\n");
	}

	for (unsigned i = 0; i < n_paths; i++)
		paths[i].median = median(paths[i].ns, rounds);
	if (paths[0].median <= 0) {
		fprintf(stderr, "xdp_cost: the floor measured 0 ns\n");
		goto out;
	}

	for (unsigned i = 0; i < n_paths; i++) {
		double x[MAX_ROUNDS];
		const struct path *q;

		if (paths[i].ref < 0)
			continue;
		q = &paths[paths[i].ref];
		for (unsigned r = 0; r < rounds; r++)
			x[r] = q->ns[r] > 0 ? paths[i].ns[r] / q->ns[r] : 1e9;
		paths[i].x_ref = median(x, rounds);
	}

	printf("\n%-10s %-34s %9s %7s %11s\n", "path", "", "median_ns", "x_ref",
	       "above_floor");
	for (unsigned i = 0; i < n_paths; i++) {
		char xr[16] = "-";

		if (paths[i].ref >= 0)
			snprintf(xr, sizeof(xr), "%.2f", paths[i].x_ref);
		printf("%-10s %-34s %9.2f %7s %+11.2f\n", paths[i].name, paths[i].what,
		       paths[i].median, xr, paths[i].median - paths[0].median);
	}
	p_refuse4 = find_path(paths, n_paths, "refuse4");
	p_refuse6 = find_path(paths, n_paths, "refuse6");
	p_allow4 = find_path(paths, n_paths, "allow4");
	p_admit4 = find_path(paths, n_paths, "admit4");
	p_slow = find_path(paths, n_paths, "admit4s");
	if (fine) {
		/* paired by round: both ran within the same second */
		const struct path *p_fine = find_path(paths, n_paths, "admit4sf");
		double d[MAX_ROUNDS];

		for (unsigned r = 0; r < rounds; r++)
			d[r] = p_fine->ns[r] - p_slow->ns[r];
		printf("\nclock: an admit that asks the bucket costs %.1f ns with bpf_ktime_get_ns "
		       "(fine) and %.1f ns with bpf_jiffies64 (the default): the fine clock adds "
		       "%+.1f ns per packet (median of per-round differences); the refusal path "
		       "reads no clock\n", p_fine->median, p_slow->median, median(d, rounds));
	}
	printf("lease: a busy source's admit costs %+.1f ns above the floor from its lease and "
	       "%+.1f ns when every admit asks the shared bucket\n",
	       p_admit4->median - paths[0].median, p_slow->median - paths[0].median);
	printf("refuse_vs_ref=%.2f allow_vs_ref=%.2f admit_vs_ref=%.2f floor_ns=%.2f\n",
	       p_refuse4->x_ref > p_refuse6->x_ref ? p_refuse4->x_ref : p_refuse6->x_ref,
	       p_allow4->x_ref, p_admit4->x_ref, paths[0].median);
	rc = 0;
out:
	if (h_fine)
		xrl_close(h_fine);
	if (h_slow)
		xrl_close(h_slow);
	if (h_admit)
		xrl_close(h_admit);
	if (h_refuse)
		xrl_close(h_refuse);
	bpf_object__close(ref);
	bpf_object__close(floor);
	return rc;
}
