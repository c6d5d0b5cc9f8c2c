// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * loader.c - open, pin, attach, feed and read the XDP program.
 *
 * Fail static: the maps are pinned under <pin_root>/<ifname>/, and a later
 * xrl_open() for the same interface reuses them (libbpf's pin reuse), so
 * buckets, deny entries and counters survive a daemon restart. If an xrl
 * program that uses those very maps is already attached, it is kept as is:
 * at no moment is the interface without enforcement.
 */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <xdp/libxdp.h>

#include "privs.h"
#include "log.h"
#include "xrl.h"
#include "xrl.skel.h"

#define XRL_PROG_NAME "xrl_xdp"

static const char *const pinned_maps[] = {
	XRL_MAP_CONFIG,	     XRL_MAP_RULESETS,	 XRL_MAP_META,	       XRL_MAP_BUCKETS,
	XRL_MAP_REFUSED,     XRL_MAP_ALLOW_V4,	 XRL_MAP_ALLOW_V6,     XRL_MAP_DENY_V4,
	XRL_MAP_DENY_V6,     XRL_MAP_RULE_STATS, XRL_MAP_GLOBAL_STATS, XRL_MAP_EVENTS,
	XRL_MAP_ALLOW_SMALL, XRL_MAP_SYSCTL,	 XRL_MAP_VOUCH,	       XRL_MAP_COOKIE,
	XRL_MAP_VOUCH_OP,
};
#define N_PINNED (sizeof(pinned_maps) / sizeof(pinned_maps[0]))

/* Where the deny sweep stopped in one trie (see gc_step). */
struct xrl_gc_cursor {
	bool valid;
	char key[sizeof(struct xrl_lpm_v6)];
};

/* Keys the expiry sweep looks at per call and trie. */
#define XRL_GC_BUDGET 4096

struct xrl_handle {
	struct xrl_gc_cursor gc[2];   /* deny sweep: [0] IPv4, [1] IPv6 */
	struct xrl *skel;	      /* NULL when opened from pins only */
	int fds[N_PINNED];	      /* map fds, in pinned_maps order */
	struct xdp_program *xdp_prog; /* ours, when we attached it */
	char pin_dir[PATH_MAX];	      /* "" when not pinned */
	struct xrl_attach_info info;
	int ncpus;
	__u64 tick_ns;	 /* CLOCK_MONOTONIC_COARSE resolution */
	bool fine_clock; /* every rule on bpf_ktime_get_ns */
	bool own;	 /* xrl's own SYN cookies (xrl_cookie.own) */
	int last_mtu;	 /* as xrl_cookie_refresh last saw it */
	bool veth_warned;
	__u64 tc_warned_ns; /* the TC program's absence, said once a minute */
	bool vouch_op_new;  /* xrl_vouch_op was made by this open (see vouch_upgrade) */
};

/* The program's tick: the resolution of CLOCK_MONOTONIC_COARSE (1/HZ). */
static __u64 coarse_tick_ns(void)
{
	struct timespec r;

	if (clock_getres(CLOCK_MONOTONIC_COARSE, &r) || (!r.tv_sec && !r.tv_nsec))
		return 4000000; /* HZ=250 */
	return (__u64)r.tv_sec * XRL_NSEC_PER_SEC + (__u64)r.tv_nsec;
}

static int mkdir_p(const char *path)
{
	char tmp[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

static __u32 find_attached(int ifindex, bool *foreign, bool *multiprog, enum xdp_attach_mode *mode);
static bool prog_uses_our_maps(struct xrl_handle *h, __u32 prog_id);
static void vouch_upgrade(struct xrl_handle *h, const char *ifname);

/*
 * Without CAP_SYS_ADMIN a process cannot turn a program id into a
 * descriptor, which libxdp needs to inspect what is attached (and libxdp
 * 1.3.1 crashes trying). xrld drops CAP_SYS_ADMIN once started, and the unit
 * never grants it, so without it xrl attaches, finds and detaches its
 * program through libbpf's netlink calls alone, and recognises its program
 * by the id it wrote into its own xrl_config at attach.
 */
static bool has_sysadmin(void)
{
	__u64 eff, prm;

	return !xrl_caps_get(&eff, &prm) && (eff & XRL_CAP(CAP_SYS_ADMIN));
}

/* The id of the program xrl attached with these maps (0: none recorded). */
static __u32 recorded_prog_id(struct xrl_handle *h)
{
	struct xrl_config cfg;
	__u32 zero = 0;

	return bpf_map_lookup_elem(xrl_map_fd(h, XRL_MAP_CONFIG), &zero, &cfg) ? 0 : cfg.prog_id;
}

static void record_prog_id(struct xrl_handle *h, __u32 id)
{
	struct xrl_config cfg;
	__u32 zero = 0;

	if (!bpf_map_lookup_elem(xrl_map_fd(h, XRL_MAP_CONFIG), &zero, &cfg)) {
		cfg.prog_id = id;
		bpf_map_update_elem(xrl_map_fd(h, XRL_MAP_CONFIG), &zero, &cfg, BPF_ANY);
	}
}

/* What netlink says is attached to ifindex: id (0: nothing), mode. */
static __u32 query_attached(int ifindex, enum xdp_attach_mode *mode)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	if (bpf_xdp_query(ifindex, 0, &q))
		return 0;
	switch (q.attach_mode) {
	case XDP_ATTACHED_DRV:
		*mode = XDP_MODE_NATIVE;
		return q.drv_prog_id;
	case XDP_ATTACHED_SKB:
		*mode = XDP_MODE_SKB;
		return q.skb_prog_id;
	case XDP_ATTACHED_NONE:
		return 0;
	default:
		*mode = XDP_MODE_NATIVE;
		return q.prog_id;
	}
}

int xrl_map_fd(const struct xrl_handle *h, const char *name)
{
	for (size_t i = 0; i < N_PINNED; i++)
		if (!strcmp(pinned_maps[i], name))
			return h->fds[i];
	return -ENOENT;
}

int xrl_prog_fd(const struct xrl_handle *h)
{
	return h->skel ? bpf_program__fd(h->skel->progs.xrl_xdp) : -ENOENT;
}

/* A handle with no map open yet. */
static struct xrl_handle *handle_new(void)
{
	struct xrl_handle *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	for (size_t i = 0; i < N_PINNED; i++)
		h->fds[i] = -1;
	h->ncpus = libbpf_num_possible_cpus();
	return h;
}

int xrl_open_pinned(const char *pin_root, const char *ifname, struct xrl_handle **out)
{
	struct xrl_handle *h;
	char path[PATH_MAX + 64];
	int err;

	*out = NULL;
	h = handle_new();
	if (!h)
		return -ENOMEM;
	h->tick_ns = coarse_tick_ns();
	snprintf(h->pin_dir, sizeof(h->pin_dir), "%s/%s", pin_root, ifname);
	for (size_t i = 0; i < N_PINNED; i++) {
		snprintf(path, sizeof(path), "%s/%s", h->pin_dir, pinned_maps[i]);
		h->fds[i] = bpf_obj_get(path);
		/* pins of a version before xrl_vouch_op: its operator vouches are
		 * in xrl_vouch, which is all such a program reads */
		if (h->fds[i] < 0 && errno == ENOENT && !strcmp(pinned_maps[i], XRL_MAP_VOUCH_OP))
			continue;
		if (h->fds[i] < 0) {
			err = -errno;
			xrl_close(h);
			return err;
		}
	}
	h->info.ifindex = (int)if_nametoindex(ifname);
	if (h->info.ifindex) {
		enum xdp_attach_mode mode;
		bool foreign, multi = false;
		__u32 id = find_attached(h->info.ifindex, &foreign, &multi, &mode);

		if (id && prog_uses_our_maps(h, id)) {
			h->info.attached = true;
			h->info.prog_id = id;
			h->info.multiprog = multi;
			h->info.mode = mode == XDP_MODE_SKB ? XRL_MODE_SKB : XRL_MODE_NATIVE;
		}
	}
	h->info.reused_pins = true;
	{
		struct xrl_cookie_cfg c;
		__u32 zero = 0;

		if (!bpf_map_lookup_elem(xrl_map_fd(h, XRL_MAP_COOKIE), &zero, &c))
			h->info.own_cookies = h->own = c.own;
	}
	*out = h;
	return 0;
}

const struct xrl_attach_info *xrl_info(const struct xrl_handle *h)
{
	return &h->info;
}

static __u32 map_id(int fd)
{
	struct bpf_map_info mi = {};
	__u32 len = sizeof(mi);

	return bpf_obj_get_info_by_fd(fd, &mi, &len) ? 0 : mi.id;
}

/* Is prog_id an xrl program whose maps include our bucket table? */
static bool prog_uses_our_maps(struct xrl_handle *h, __u32 prog_id)
{
	__u32 ids[32], want = map_id(xrl_map_fd(h, XRL_MAP_BUCKETS));
	struct bpf_prog_info pi = {};
	__u32 len = sizeof(pi);
	bool hit = false;
	int fd;

	if (!has_sysadmin())
		return prog_id == recorded_prog_id(h);
	fd = bpf_prog_get_fd_by_id(prog_id);
	if (fd < 0)
		return false;
	pi.nr_map_ids = 32;
	pi.map_ids = (__u64)(unsigned long)ids;
	if (!bpf_obj_get_info_by_fd(fd, &pi, &len) && !strcmp(pi.name, XRL_PROG_NAME)) {
		for (__u32 i = 0; i < pi.nr_map_ids && i < 32; i++)
			hit |= ids[i] == want;
	}
	close(fd);
	return hit;
}

/*
 * Find an attached xrl program on ifindex. Returns its id (0 if none), and
 * sets *foreign when some other XDP program is attached.
 */
static __u32 find_attached(int ifindex, bool *foreign, bool *multiprog, enum xdp_attach_mode *mode)
{
	struct xdp_multiprog *mp;
	struct xdp_program *p = NULL;
	__u32 id = 0;

	*foreign = false;
	if (!has_sysadmin()) {
		/* whatever is attached; prog_uses_our_maps tells ours from another */
		*multiprog = false;
		return query_attached(ifindex, mode);
	}
	mp = xdp_multiprog__get_from_ifindex(ifindex);
	if (libxdp_get_error(mp) || !mp)
		return 0;
	*multiprog = !xdp_multiprog__is_legacy(mp);
	*mode = xdp_multiprog__attach_mode(mp);
	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		if (p && !strcmp(xdp_program__name(p), XRL_PROG_NAME))
			id = xdp_program__id(p);
		else if (p)
			*foreign = true;
	} else {
		while ((p = xdp_multiprog__next_prog(p, mp))) {
			if (!strcmp(xdp_program__name(p), XRL_PROG_NAME))
				id = xdp_program__id(p);
		}
	}
	xdp_multiprog__close(mp);
	return id;
}

/* Attach in mode m: through libxdp, or through netlink without CAP_SYS_ADMIN. */
static int attach_mode(struct xrl_handle *h, int ifindex, enum xdp_attach_mode m)
{
	__u32 flags = XDP_FLAGS_UPDATE_IF_NOEXIST |
		      (m == XDP_MODE_SKB ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);

	if (has_sysadmin())
		return xdp_program__attach(h->xdp_prog, ifindex, m, 0);
	if (bpf_xdp_attach(ifindex, xrl_prog_fd(h), flags, NULL))
		return -errno;
	return 0;
}

static int attach(struct xrl_handle *h, int ifindex, enum xrl_attach_mode want)
{
	enum xdp_attach_mode m = want == XRL_MODE_SKB ? XDP_MODE_SKB : XDP_MODE_NATIVE;
	enum xdp_attach_mode got_mode;
	bool foreign, multi = false;
	int err;

	h->xdp_prog = xdp_program__from_fd(xrl_prog_fd(h));
	err = libxdp_get_error(h->xdp_prog);
	if (err) {
		h->xdp_prog = NULL;
		log_warnx("couldn't wrap the program for libxdp: %s", strerror(-err));
		return err;
	}
	err = attach_mode(h, ifindex, m);
	if (err && want == XRL_MODE_AUTO) {
		log_warnx("couldn't attach in native mode (%s); falling back to skb (generic) mode, "
			  "which costs far more per packet",
			  strerror(-err));
		m = XDP_MODE_SKB;
		err = attach_mode(h, ifindex, m);
	}
	if (err) {
		log_warnx("couldn't attach to ifindex %d in %s mode: %s", ifindex,
			  m == XDP_MODE_SKB ? "skb" : "native", strerror(-err));
		xdp_program__close(h->xdp_prog);
		h->xdp_prog = NULL;
		return err;
	}
	h->info.attached = true;
	h->info.mode = m == XDP_MODE_SKB ? XRL_MODE_SKB : XRL_MODE_NATIVE;
	if (has_sysadmin())
		h->info.prog_id = find_attached(ifindex, &foreign, &multi, &got_mode);
	h->info.multiprog = multi;
	if (!h->info.prog_id) {
		struct bpf_prog_info pi = {};
		__u32 len = sizeof(pi);

		if (!bpf_obj_get_info_by_fd(xrl_prog_fd(h), &pi, &len))
			h->info.prog_id = pi.id;
	}
	record_prog_id(h, h->info.prog_id);
	return 0;
}

/* Load-time knobs into the skeleton, between open and load. */
static void set_rodata(struct xrl_handle *h, const struct xrl_open_opts *o)
{
	h->tick_ns = coarse_tick_ns();
	h->fine_clock = o->fine_clock;
	h->skel->rodata->xrl_tick_ns = h->tick_ns;
	h->skel->rodata->xrl_lease_on = o->no_lease ? 0 : 1;
	h->skel->rodata->xrl_syn_wscale = xrl_syn_wscale();
	/* xrl's own cookies where the kernel can take them: the TC program
	 * is loaded only then (its kfunc is weak, so the object loads on an
	 * older kernel too) */
	h->own = !o->kernel_cookies && xrl_own_cookies_supported();
	if (!h->own)
		bpf_program__set_autoload(h->skel->progs.xrl_tc, false);
	if (o->buckets_max)
		bpf_map__set_max_entries(h->skel->maps.xrl_buckets, o->buckets_max);
	if (o->refused_max) {
		__u32 n = 1;

		while (n < o->refused_max && n < (1u << 24))
			n <<= 1;
		bpf_map__set_max_entries(h->skel->maps.xrl_refused, n);
		h->skel->rodata->xrl_refused_mask = n - 1;
		/* a slot is the top log2(n) bits of a 64-bit hash (at least one) */
		h->skel->rodata->xrl_refused_shift = 64 - (n > 1 ? __builtin_ctz(n) : 1);
	}
}

/* Pin the maps under PIN_ROOT/IFNAME (reusing what is pinned there). */
static int set_pins(struct xrl_handle *h, const char *pin_root, const char *ifname)
{
	char path[PATH_MAX + 64];
	struct stat st;
	int err;

	if (snprintf(h->pin_dir, sizeof(h->pin_dir), "%s/%s", pin_root, ifname) >=
	    (int)sizeof(h->pin_dir))
		return -ENAMETOOLONG;
	err = mkdir_p(h->pin_dir);
	if (err) {
		log_warnx("couldn't create pin directory %s: %s (is bpffs mounted?)", h->pin_dir,
			  strerror(-err));
		return err;
	}
	snprintf(path, sizeof(path), "%s/%s", h->pin_dir, XRL_MAP_BUCKETS);
	h->info.reused_pins = stat(path, &st) == 0;
	snprintf(path, sizeof(path), "%s/%s", h->pin_dir, XRL_MAP_VOUCH_OP);
	h->vouch_op_new = stat(path, &st) != 0;
	for (size_t i = 0; i < N_PINNED; i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(h->skel->obj, pinned_maps[i]);

		snprintf(path, sizeof(path), "%s/%s", h->pin_dir, pinned_maps[i]);
		if (!m || bpf_map__set_pin_path(m, path))
			return -EINVAL;
	}
	return 0;
}

/* Keep the program already attached to ifindex if it is ours, else attach. */
static int attach_or_reuse(struct xrl_handle *h, int ifindex, const struct xrl_open_opts *o)
{
	enum xdp_attach_mode mode;
	bool foreign, multi = false;
	__u32 id = find_attached(ifindex, &foreign, &multi, &mode);
	int err;

	if (id && prog_uses_our_maps(h, id)) {
		h->info.attached = true;
		h->info.reused_prog = true;
		h->info.prog_id = id;
		record_prog_id(h, id);
		h->info.multiprog = multi;
		h->info.mode = mode == XDP_MODE_SKB ? XRL_MODE_SKB : XRL_MODE_NATIVE;
	} else if (id || foreign) {
		log_warnx("%s already has an XDP program (%s) that is not this xrl instance's; "
			  "detach it first",
			  o->ifname, id ? "xrl with other maps" : "foreign");
		return -EBUSY;
	} else {
		err = attach(h, ifindex, o->mode);
		if (err)
			return err;
	}
	log_info("%s: %s program %u in %s mode%s%s", o->ifname,
		 h->info.reused_prog ? "kept attached" : "attached", h->info.prog_id,
		 h->info.mode == XRL_MODE_SKB ? "skb" : "native",
		 h->info.multiprog ? " via the libxdp dispatcher" : " as a single program",
		 h->info.reused_pins ? ", pinned state reused" : "");
	return 0;
}

/*
 * The TC ingress program of xrl's own cookies (bpf/xrl_tc.h), as one filter
 * of the interface's clsact qdisc, made if missing. Our handle and priority
 * name it, so a new xrld replaces what an old one attached (the same pinned
 * maps), and detach removes only it. Like the XDP program it stays when
 * xrld stops: the handshakes it completes do not depend on the daemon.
 */
#define XRL_TC_HANDLE 0x78726c /* "xrl" */
#define XRL_TC_PRIO   0xc000

static int tc_attach(struct xrl_handle *h)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = h->info.ifindex,
			    .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = XRL_TC_HANDLE, .priority = XRL_TC_PRIO,
			    .flags = BPF_TC_F_REPLACE);
	int err;

	if (!h->skel)
		return -ENOENT;
	opts.prog_fd = bpf_program__fd(h->skel->progs.xrl_tc);
	if (opts.prog_fd < 0)
		return -ENOENT;
	err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST)
		return err;
	err = bpf_tc_attach(&hook, &opts);
	if (!err)
		h->info.tc_attached = true;
	return err;
}

/* Is our TC filter still there? (a `tc qdisc del dev X clsact` removes it) */
static bool tc_present(struct xrl_handle *h)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = h->info.ifindex,
			    .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = XRL_TC_HANDLE, .priority = XRL_TC_PRIO);

	return !bpf_tc_query(&hook, &opts) && opts.prog_id;
}

static void tc_detach(struct xrl_handle *h)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = h->info.ifindex,
			    .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = XRL_TC_HANDLE, .priority = XRL_TC_PRIO);
	int err = bpf_tc_detach(&hook, &opts);

	if (err && err != -ENOENT && err != -EINVAL)
		log_warnx("couldn't detach the TC program: %s", strerror(-err));
	h->info.tc_attached = false;
}

int xrl_cookie_refresh(struct xrl_handle *h)
{
	struct xrl_cookie_cfg c, was;
	int fd = xrl_map_fd(h, XRL_MAP_COOKIE), mtu = 1500;
	char name[IF_NAMESIZE] = "?";
	__u32 zero = 0;
	bool rotated;
	int err;

	if (fd < 0)
		return -ENOENT;
	if (bpf_map_lookup_elem(fd, &zero, &c))
		return -errno;
	was = c;
	if (h->info.ifindex) {
		if_indextoname((unsigned)h->info.ifindex, name);
		if (h->skel && h->own && !tc_present(h)) {
			__u64 now = xrl_now_ns();

			h->info.tc_attached = false;
			err = tc_attach(h);
			if (now - h->tc_warned_ns >= 60 * XRL_NSEC_PER_SEC) {
				if (err)
					log_warnx("%s: the TC program of xrl's SYN cookies was removed "
						  "and couldn't be attached again (%s): cookie handshakes "
						  "fail until it is (xrlctl status)",
						  name, strerror(-err));
				else
					log_warnx("%s: the TC program of xrl's SYN cookies was removed; "
						  "attached it again",
						  name);
				h->tc_warned_ns = now;
			}
		}
		mtu = xrl_iface_mtu(h->info.ifindex);
		if (mtu > 0 && mtu != h->last_mtu) {
			__u16 m4, m6;

			xrl_cookie_mss(mtu, &m4, &m6);
			log_info("%s: MTU %d: cookie SYN-ACKs offer MSS %u (IPv4), %u (IPv6)", name,
				 mtu, m4, m6);
			h->last_mtu = mtu;
		}
	}
	/* a pins-only handle (xrlctl) keeps the path the daemon chose */
	err = xrl_cookie_cfg_next(&c, h->skel ? h->own : c.own, mtu, xrl_syn_wscale(),
				  xrl_now_ns(), &rotated);
	if (err)
		return err;
	h->info.own_cookies = c.own;
	if (rotated)
		log_info("%s: SYN-cookie key rotated (key %u now)", name, c.key_id);
	if (memcmp(&c, &was, sizeof(c)) && bpf_map_update_elem(fd, &zero, &c, BPF_ANY))
		return -errno;
	return 0;
}

int xrl_cookie_prime_bump(struct xrl_handle *h)
{
	int fd = xrl_map_fd(h, XRL_MAP_COOKIE);
	struct xrl_cookie_cfg c;
	__u32 zero = 0;

	if (fd < 0)
		return -ENOENT;
	if (bpf_map_lookup_elem(fd, &zero, &c))
		return -errno;
	c.prime_gen++;
	return bpf_map_update_elem(fd, &zero, &c, BPF_ANY) ? -errno : 0;
}

/* Open the skeleton, configure, pin and load it. */
static int load(struct xrl_handle *h, const struct xrl_open_opts *o)
{
	int err;

	h->skel = xrl__open();
	if (!h->skel) {
		err = -errno;
		log_warnx("couldn't open the BPF object: %s", strerror(-err));
		return err;
	}
	set_rodata(h, o);
	if (o->pin_root && o->ifname && (err = set_pins(h, o->pin_root, o->ifname)))
		return err;
	err = xrl__load(h->skel);
	if (err) {
		log_warnx("couldn't load the XDP program: %s%s", strerror(-err),
			  h->info.reused_pins ? " (pinned maps from an incompatible version? "
						"detach to remove them)"
					      : "");
		return err;
	}
	for (size_t i = 0; i < N_PINNED; i++)
		h->fds[i] = bpf_map__fd(bpf_object__find_map_by_name(h->skel->obj, pinned_maps[i]));
	if (!h->info.reused_pins) {
		struct xrl_config cfg = { .event_interval_ns = XRL_NSEC_PER_SEC,
					  .event_interval_j =
						  (__u32)(XRL_NSEC_PER_SEC / h->tick_ns) };
		__u32 zero = 0;

		bpf_map_update_elem(xrl_map_fd(h, XRL_MAP_CONFIG), &zero, &cfg, BPF_ANY);
	}
	return 0;
}

int xrl_open(const struct xrl_open_opts *o, struct xrl_handle **out)
{
	struct xrl_handle *h;
	int err, ifindex = 0;

	*out = NULL;
	if (o->ifname) {
		ifindex = (int)if_nametoindex(o->ifname);
		if (!ifindex) {
			err = -errno;
			log_warnx("couldn't find interface %s: %s", o->ifname, strerror(-err));
			return err;
		}
	}
	h = handle_new();
	if (!h)
		return -ENOMEM;
	h->info.ifindex = ifindex;
	if (h->ncpus < 1)
		err = h->ncpus < 0 ? h->ncpus : -EINVAL;
	else
		err = load(h, o);
	if (!err && ifindex)
		err = attach_or_reuse(h, ifindex, o);
	if (!err && ifindex && h->own && (err = tc_attach(h))) {
		log_warnx("%s: couldn't attach the TC program that completes xrl's SYN cookies: %s; "
			  "using the kernel's cookies (they need net.ipv4.tcp_syncookies=2 and "
			  "tcp_timestamps=2)",
			  o->ifname, strerror(-err));
		h->own = false;
		err = 0;
	}
	if (!err && !ifindex)
		h->own = false; /* loaded alone (tests): no TC program to finish */
	if (!err)
		vouch_upgrade(h, o->ifname);
	if (!err)
		err = xrl_cookie_refresh(h);
	if (err) {
		xrl_close(h);
		return err;
	}
	*out = h;
	return 0;
}

void xrl_close(struct xrl_handle *h)
{
	if (!h)
		return;
	if (h->xdp_prog)
		xdp_program__close(h->xdp_prog); /* closes the fd, not the attachment */
	if (h->skel)
		xrl__destroy(h->skel);
	else
		for (size_t i = 0; i < N_PINNED; i++)
			if (h->fds[i] >= 0)
				close(h->fds[i]);
	free(h);
}

/* Detach our program through netlink (no CAP_SYS_ADMIN): only if the id
 * attached is still ours. */
static int detach_plain(struct xrl_handle *h)
{
	enum xdp_attach_mode mode = XDP_MODE_NATIVE;
	__u32 id = query_attached(h->info.ifindex, &mode);

	if (id != h->info.prog_id)
		return id ? -EBUSY : 0;
	if (bpf_xdp_detach(h->info.ifindex,
			   mode == XDP_MODE_SKB ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE, NULL))
		return -errno;
	return 0;
}

/*
 * Hold or let go of the sysctls SYN cookies need in this namespace
 * (xrl_cookie_sysctls). Only for a handle on an interface: a test or a
 * benchmark that loads the program alone leaves the host's sysctls be.
 */
static int cookie_sysctls(struct xrl_handle *h, bool want)
{
	char name[IF_NAMESIZE] = "?";

	if (!h->info.ifindex)
		return 0;
	if_indextoname((unsigned)h->info.ifindex, name);
	if (h->info.own_cookies) {
		/* xrl's own cookies change no sysctl; they still need the
		 * kernel to look at cookie ACKs at all (cookie_v4_check) */
		FILE *f = fopen("/proc/sys/net/ipv4/tcp_syncookies", "r");
		int v = 1;

		if (f) {
			if (fscanf(f, "%d", &v) != 1)
				v = 1;
			fclose(f);
		}
		if (want && !v)
			log_warnx("%s: net.ipv4.tcp_syncookies is 0: the kernel takes no cookie "
				  "ACK, xrl's included; set it to 1",
				  name);
		/* and what an older xrl took is given back */
		return xrl_cookie_sysctls(xrl_map_fd(h, XRL_MAP_SYSCTL), h->pin_dir, name, false);
	}
	return xrl_cookie_sysctls(xrl_map_fd(h, XRL_MAP_SYSCTL), h->pin_dir, name, want);
}

int xrl_detach(struct xrl_handle *h)
{
	struct xdp_multiprog *mp;
	struct xdp_program *p = NULL;
	int err = 0;

	if (!h->skel && h->pin_dir[0] && !h->info.ifindex) {
		/* opened from pins, interface not here (another netns?): leave
		 * both the attachment and the pins alone rather than orphan it */
		log_warnx("couldn't find the interface of %s in this network namespace; not detaching",
			  h->pin_dir);
		xrl_close(h);
		return -ENODEV;
	}
	if (h->info.ifindex && h->info.prog_id && !has_sysadmin()) {
		err = detach_plain(h);
	} else if (h->info.ifindex && h->info.prog_id) {
		mp = xdp_multiprog__get_from_ifindex(h->info.ifindex);
		if (!libxdp_get_error(mp) && mp) {
			enum xdp_attach_mode mode = xdp_multiprog__attach_mode(mp);

			if (xdp_multiprog__is_legacy(mp)) {
				p = xdp_multiprog__main_prog(mp);
			} else {
				while ((p = xdp_multiprog__next_prog(p, mp)))
					if (xdp_program__id(p) == h->info.prog_id)
						break;
			}
			if (p && xdp_program__id(p) == h->info.prog_id)
				err = xdp_program__detach(p, h->info.ifindex, mode, 0);
			xdp_multiprog__close(mp);
		}
		if (err)
			log_warnx("couldn't detach program %u: %s", h->info.prog_id,
				  strerror(-err));
	}
	if (!err && h->info.ifindex) {
		tc_detach(h);
		cookie_sysctls(h, false);
	}
	if (!err && h->pin_dir[0]) {
		char path[PATH_MAX + 64];

		for (size_t i = 0; i < N_PINNED; i++) {
			snprintf(path, sizeof(path), "%s/%s", h->pin_dir, pinned_maps[i]);
			if (unlink(path) && errno != ENOENT)
				log_warn("couldn't remove %s", path);
		}
		if (rmdir(h->pin_dir) && errno != ENOENT)
			log_warn("couldn't remove %s", h->pin_dir);
	}
	if (!err)
		h->info.attached = false;
	xrl_close(h);
	return err;
}

static int list_count(int fd, size_t keysz)
{
	char key[sizeof(struct xrl_lpm_v6)], next[sizeof(struct xrl_lpm_v6)];
	void *prev = NULL;
	int n = 0;

	if (keysz > sizeof(key))
		return -EINVAL;
	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, keysz);
		prev = key;
		n++;
	}
	return n;
}

/*
 * Recount the four lists into xrl_config (0 entries skips the lookup),
 * mirror short allowlists into xrl_allow_small (checked inline), and bump
 * the epoch so that no per-CPU refusal decided under the old lists stands.
 * The inline copy is written before the counts that select it.
 */
static int sync_list_counts(struct xrl_handle *h)
{
	int cfd = xrl_map_fd(h, XRL_MAP_CONFIG), a4 = xrl_map_fd(h, XRL_MAP_ALLOW_V4);
	int a6 = xrl_map_fd(h, XRL_MAP_ALLOW_V6);
	struct xrl_allow_small sm = {};
	struct xrl_lpm_v4 k4, n4;
	struct xrl_lpm_v6 k6, n6;
	struct xrl_config cfg;
	int err;
	__u32 zero = 0;

	XRL_FOR_EACH_MAP_KEY (err, a4, n4, k4) {
		__u32 m[4];

		if (sm.n4 >= XRL_ALLOW_SMALL)
			break;
		xrl_prefix_mask(XRL_AF_INET, (__u8)n4.prefixlen, m);
		sm.v4[sm.n4].mask = m[0];
		sm.v4[sm.n4].addr = n4.addr & m[0];
		sm.n4++;
	}
	XRL_FOR_EACH_MAP_KEY (err, a6, n6, k6) {
		__u32 m[4];

		if (sm.n6 >= XRL_ALLOW_SMALL)
			break;
		xrl_prefix_mask(XRL_AF_INET6, (__u8)n6.prefixlen, m);
		for (int w = 0; w < 4; w++) {
			sm.v6[sm.n6].mask[w] = m[w];
			sm.v6[sm.n6].addr[w] = n6.addr[w] & m[w];
		}
		sm.n6++;
	}
	if (bpf_map_update_elem(xrl_map_fd(h, XRL_MAP_ALLOW_SMALL), &zero, &sm, BPF_ANY))
		return -errno;
	if (bpf_map_lookup_elem(cfd, &zero, &cfg))
		return -errno;
	cfg.allow_v4_n = list_count(a4, sizeof(struct xrl_lpm_v4));
	cfg.allow_v6_n = list_count(a6, sizeof(struct xrl_lpm_v6));
	cfg.deny_v4_n = list_count(xrl_map_fd(h, XRL_MAP_DENY_V4), sizeof(struct xrl_lpm_v4));
	cfg.deny_v6_n = list_count(xrl_map_fd(h, XRL_MAP_DENY_V6), sizeof(struct xrl_lpm_v6));
	cfg.epoch++;
	if (bpf_map_update_elem(cfd, &zero, &cfg, BPF_ANY))
		return -errno;
	return 0;
}

static void lpm_key(const struct xrl_prefix *p, struct xrl_lpm_v4 *k4, struct xrl_lpm_v6 *k6)
{
	memset(k4, 0, sizeof(*k4));
	memset(k6, 0, sizeof(*k6));
	k4->prefixlen = p->plen;
	k4->addr = p->addr[0];
	k6->prefixlen = p->plen;
	memcpy(k6->addr, p->addr, 16);
}

static int list_update(struct xrl_handle *h, const char *m4, const char *m6,
		       const struct xrl_prefix *p, const void *val, bool del)
{
	struct xrl_lpm_v4 k4;
	struct xrl_lpm_v6 k6;
	int fd, err;

	if (p->family != XRL_AF_INET && p->family != XRL_AF_INET6)
		return -EAFNOSUPPORT;
	lpm_key(p, &k4, &k6);
	fd = xrl_map_fd(h, p->family == XRL_AF_INET ? m4 : m6);
	if (del)
		err = bpf_map_delete_elem(fd, p->family == XRL_AF_INET ? (void *)&k4 : (void *)&k6);
	else
		err = bpf_map_update_elem(fd, p->family == XRL_AF_INET ? (void *)&k4 : (void *)&k6,
					  val, BPF_ANY);
	if (err)
		return -errno;
	return sync_list_counts(h);
}

int xrl_allow_add(struct xrl_handle *h, const struct xrl_prefix *p)
{
	struct xrl_allow_val v = { .added_ns = xrl_now_ns(), .origin = XRL_ORIGIN_RUNTIME };

	return list_update(h, XRL_MAP_ALLOW_V4, XRL_MAP_ALLOW_V6, p, &v, false);
}

int xrl_allow_del(struct xrl_handle *h, const struct xrl_prefix *p)
{
	return list_update(h, XRL_MAP_ALLOW_V4, XRL_MAP_ALLOW_V6, p, NULL, true);
}

/*
 * Adjust the count of one family's denylist in xrl_config by delta and bump
 * the epoch (no per-CPU refusal decided under the old list stands). O(1):
 * the program only asks whether a list is empty, so a count is kept, not
 * recounted. Should the count claim empty while the trie is not (another
 * writer raced us, e.g. xrl-load beside xrld), one get_next_key shows it and
 * the count is put right by a recount; that is the only walk, and it cannot
 * be forced from outside.
 */
static int deny_count_add(struct xrl_handle *h, __u8 family, int delta)
{
	int cfd = xrl_map_fd(h, XRL_MAP_CONFIG);
	int fd = xrl_map_fd(h, family == XRL_AF_INET ? XRL_MAP_DENY_V4 : XRL_MAP_DENY_V6);
	size_t ksz = family == XRL_AF_INET ? sizeof(struct xrl_lpm_v4) : sizeof(struct xrl_lpm_v6);
	char first[sizeof(struct xrl_lpm_v6)];
	struct xrl_config cfg;
	__u32 zero = 0, *n;
	long v;

	if (bpf_map_lookup_elem(cfd, &zero, &cfg))
		return -errno;
	n = family == XRL_AF_INET ? &cfg.deny_v4_n : &cfg.deny_v6_n;
	v = (long)*n + delta;
	if (v <= 0)
		v = bpf_map_get_next_key(fd, NULL, first) ? 0 : list_count(fd, ksz);
	*n = (__u32)v;
	cfg.epoch++;
	if (bpf_map_update_elem(cfd, &zero, &cfg, BPF_ANY))
		return -errno;
	return 0;
}

/* The deny trie of p's family and p's key in it. */
/* A deny map's key for p, in one of the two trie key layouts. */
struct deny_key {
	struct xrl_lpm_v4 k4;
	struct xrl_lpm_v6 k6;
	void *key; /* &k4 or &k6 */
};

/* k filled for p; the map's fd, or -errno. */
static int deny_key(struct xrl_handle *h, const struct xrl_prefix *p, struct deny_key *k)
{
	if (p->family != XRL_AF_INET && p->family != XRL_AF_INET6)
		return -EAFNOSUPPORT;
	lpm_key(p, &k->k4, &k->k6);
	k->key = p->family == XRL_AF_INET ? (void *)&k->k4 : (void *)&k->k6;
	return xrl_map_fd(h, p->family == XRL_AF_INET ? XRL_MAP_DENY_V4 : XRL_MAP_DENY_V6);
}

/*
 * Add or refresh (v) or delete (v NULL) a deny entry. O(1) whatever the
 * list's size: one or two updates (NOEXIST says whether it is new), one
 * config write. A full trie answers -ENOSPC.
 */
static int deny_write(struct xrl_handle *h, const struct xrl_prefix *p,
		      const struct xrl_deny_val *v)
{
	struct deny_key k;
	int fd = deny_key(h, p, &k);
	void *key = k.key;

	if (fd < 0)
		return fd;
	if (!v) {
		if (bpf_map_delete_elem(fd, key))
			return -errno;
		return deny_count_add(h, p->family, -1);
	}
	/* exact: a lookup would answer the longest match, a covering entry */
	if (!bpf_map_update_elem(fd, key, v, BPF_NOEXIST))
		return deny_count_add(h, p->family, 1);
	if (errno != EEXIST)
		return -errno;
	if (bpf_map_update_elem(fd, key, v, BPF_EXIST))
		return -errno;
	return deny_count_add(h, p->family, 0);
}

int xrl_deny_add(struct xrl_handle *h, const struct xrl_prefix *p, __u64 ttl_ns, __u32 origin)
{
	struct xrl_deny_val v = { .expires_ns = ttl_ns ? xrl_now_ns() + ttl_ns : 0,
				  .origin = origin,
				  .plen = p->plen };

	return deny_write(h, p, &v);
}

int xrl_deny_del(struct xrl_handle *h, const struct xrl_prefix *p)
{
	return deny_write(h, p, NULL);
}

int xrl_deny_origin(struct xrl_handle *h, const struct xrl_prefix *p, __u32 *origin)
{
	struct xrl_deny_val v;
	struct deny_key k;
	int fd = deny_key(h, p, &k);

	if (fd < 0)
		return fd;
	if (bpf_map_lookup_elem(fd, k.key, &v))
		return -errno;
	/* an LPM lookup answers the longest entry covering the key: only an
	 * entry of the same length is p's own */
	if (v.plen != p->plen)
		return -ENOENT;
	*origin = v.origin;
	return 0;
}

/* The vouch key of a prefix: its /24 or /48 (a longer prefix is widened:
 * vouches are per network); a shorter one is refused. */
static int vouch_key(const struct xrl_prefix *p, struct xrl_vouch_key *k)
{
	__u32 m[4];
	__u8 plen = p->family == XRL_AF_INET ? XRL_VOUCH_PLEN4 : XRL_VOUCH_PLEN6;

	if ((p->family != XRL_AF_INET && p->family != XRL_AF_INET6) || p->plen < plen)
		return -EINVAL;
	memset(k, 0, sizeof(*k));
	k->family = p->family;
	xrl_prefix_mask(p->family, plen, m);
	for (int i = 0; i < 4; i++)
		k->addr[i] = p->addr[i] & m[i];
	return 0;
}

/* An unexpired vouch of key k in map fd? */
static bool vouch_live(int fd, const struct xrl_vouch_key *k, __u64 now)
{
	struct xrl_vouch_val v;

	return fd >= 0 && !bpf_map_lookup_elem(fd, k, &v) && (!v.expires_ns || v.expires_ns > now);
}

static const struct xrl_vouch_key vouch_mark = { .family = XRL_VOUCH_OP_MARK };

/*
 * An operator's vouch goes to its own space, xrl_vouch_op: a HASH that no
 * automatic vouch writes, so neither an identity-tier write for the same
 * prefix nor a flood of them can shorten or push it out. Its bound is the
 * map's: a full one answers E2BIG, said as ENOSPC (the one marker entry
 * takes the +1 of max_entries). Under a program from before that map
 * (vouch_mirror) the vouch is written into xrl_vouch too, the only one
 * that program reads, where it is as weak as it was.
 */
int xrl_vouch_add(struct xrl_handle *h, const struct xrl_prefix *p, __u64 ttl_ns)
{
	struct xrl_vouch_val v = { .origin = XRL_ORIGIN_RUNTIME };
	int fd = xrl_map_fd(h, XRL_MAP_VOUCH_OP);
	struct xrl_vouch_key k;
	int err = vouch_key(p, &k);

	if (err)
		return err;
	if (fd < 0)
		return -EOPNOTSUPP; /* pins from before xrl_vouch_op, read only */
	/* bpf_ktime_get_coarse_ns is CLOCK_MONOTONIC, as xrl_now_ns */
	v.expires_ns = ttl_ns ? xrl_now_ns() + ttl_ns : 0;
	if (bpf_map_update_elem(fd, &k, &v, BPF_ANY)) {
		err = -errno;
		return err == -E2BIG ? -ENOSPC : err;
	}
	if (h->info.vouch_mirror &&
	    bpf_map_update_elem(xrl_map_fd(h, XRL_MAP_VOUCH), &k, &v, BPF_ANY))
		return -errno;
	return 0;
}

/*
 * The automatic space alone: this never opens xrl_vouch_op, so the
 * identity tier's path has no way to an operator's entry. BPF_ANY, as the
 * program's own cookie vouches: the newest automatic word wins. Only with
 * vouch_mirror can xrl_vouch hold an operator's entry; that is looked up
 * first and left alone (userspace alone writes RUNTIME entries, from
 * xrld's main loop, as this runs there: no race between the two).
 */
int xrl_vouch_auto(struct xrl_handle *h, const struct xrl_prefix *p, __u64 ttl_ns, __u32 origin)
{
	struct xrl_vouch_val v = { .origin = origin }, old;
	int fd = xrl_map_fd(h, XRL_MAP_VOUCH);
	struct xrl_vouch_key k;
	int err = vouch_key(p, &k);

	if (err || (origin != XRL_ORIGIN_IDENTITY && origin != XRL_ORIGIN_COOKIE))
		return err ? err : -EINVAL;
	if (h->info.vouch_mirror && !bpf_map_lookup_elem(fd, &k, &old) &&
	    old.origin == XRL_ORIGIN_RUNTIME)
		return -EEXIST;
	v.expires_ns = ttl_ns ? xrl_now_ns() + ttl_ns : 0;
	if (bpf_map_update_elem(fd, &k, &v, BPF_ANY))
		return -errno;
	return 0;
}

/* The operator's word removes every vouch of the prefix, automatic ones
 * too (a source vouched by mistake is taken off at once). */
int xrl_vouch_del(struct xrl_handle *h, const struct xrl_prefix *p)
{
	int fds[2] = { xrl_map_fd(h, XRL_MAP_VOUCH_OP), xrl_map_fd(h, XRL_MAP_VOUCH) };
	struct xrl_vouch_key k;
	int err = vouch_key(p, &k), gone = 0;

	if (err)
		return err;
	for (int i = 0; i < 2; i++) {
		if (fds[i] < 0)
			continue;
		if (!bpf_map_delete_elem(fds[i], &k))
			gone++;
		else if (errno != ENOENT)
			return -errno;
	}
	return gone ? 0 : -ENOENT;
}

/* Does an unexpired vouch of map fd lie inside p (family, masks m)? */
static bool vouch_inside(int fd, const struct xrl_prefix *p, const __u32 *m, __u64 now)
{
	struct xrl_vouch_key k, next, *prev = NULL;
	struct xrl_vouch_val v;

	while (fd >= 0 && !bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		if (k.family != p->family || bpf_map_lookup_elem(fd, &k, &v) ||
		    (v.expires_ns && v.expires_ns <= now))
			continue;
		if ((k.addr[0] & m[0]) == p->addr[0] && (k.addr[1] & m[1]) == p->addr[1] &&
		    (k.addr[2] & m[2]) == p->addr[2] && (k.addr[3] & m[3]) == p->addr[3])
			return true;
	}
	return false;
}

/*
 * Is any part of p vouched for, and not expired, in either space? A prefix
 * at least as long as a vouch's (/24, /48) is two lookups at most; a
 * shorter one (a penalty floor set below /24) walks the maps, which only a
 * due penalty does.
 */
bool xrl_vouched(struct xrl_handle *h, const struct xrl_prefix *p)
{
	int op = xrl_map_fd(h, XRL_MAP_VOUCH_OP), au = xrl_map_fd(h, XRL_MAP_VOUCH);
	struct xrl_vouch_key k;
	__u64 now = xrl_now_ns();
	__u32 m[4];

	if (!vouch_key(p, &k))
		return vouch_live(op, &k, now) || vouch_live(au, &k, now);
	xrl_prefix_mask(p->family, p->plen, m);
	return vouch_inside(op, p, m, now) || vouch_inside(au, p, m, now);
}

/* Append map fd's entries to out; skip_runtime: leave out operator
 * entries (in xrl_vouch only mirrors of xrl_vouch_op's). */
static void vouch_list_one(int fd, bool skip_runtime, struct xrl_vouch *out, size_t max, size_t *n)
{
	struct xrl_vouch_key key, next;
	struct xrl_vouch_val v;
	void *prev = NULL;

	while (fd >= 0 && *n < max && !bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (key.family == XRL_VOUCH_OP_MARK || bpf_map_lookup_elem(fd, &key, &v) ||
		    (skip_runtime && v.origin == XRL_ORIGIN_RUNTIME))
			continue;
		memset(&out[*n], 0, sizeof(out[*n]));
		out[*n].prefix.family = (__u8)key.family;
		out[*n].prefix.plen = key.family == XRL_AF_INET ? XRL_VOUCH_PLEN4 : XRL_VOUCH_PLEN6;
		memcpy(out[*n].prefix.addr, key.addr, sizeof(key.addr));
		out[*n].expires_ns = v.expires_ns;
		out[*n].origin = v.origin;
		(*n)++;
	}
}

int xrl_vouch_list(struct xrl_handle *h, struct xrl_vouch *out, size_t max, size_t *n)
{
	int op = xrl_map_fd(h, XRL_MAP_VOUCH_OP);

	*n = 0;
	vouch_list_one(op, false, out, max, n);
	/* without xrl_vouch_op (old pins read from xrlctl) xrl_vouch is all */
	vouch_list_one(xrl_map_fd(h, XRL_MAP_VOUCH), op >= 0, out, max, n);
	return 0;
}

int xrl_vouch_op_room(struct xrl_handle *h, __u32 *used, __u32 *cap)
{
	int fd = xrl_map_fd(h, XRL_MAP_VOUCH_OP);
	struct xrl_vouch_key key, next;
	void *prev = NULL;

	*used = 0;
	*cap = XRL_VOUCH_OP_MAX;
	if (fd < 0)
		return -EOPNOTSUPP;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		*used += key.family != XRL_VOUCH_OP_MARK;
	}
	return 0;
}

/*
 * After load and attach: which program reads xrl_vouch_op? A program
 * attached by this open does, and its id goes into the marker. One kept
 * attached whose id is not the marker's was attached by a version before
 * the map (an upgrade keeps the program: fail static) and reads xrl_vouch
 * alone; then operator vouches are mirrored there (vouch_mirror) until a
 * detach and attach, and the marker is written with id 0 so a restart
 * still knows. When this open made xrl_vouch_op on reused pins, the
 * operator vouches the old version kept in xrl_vouch are copied over, so
 * they are out of the LRU's reach from now on; the copies in xrl_vouch
 * stay only while an old program still reads them. The walk is of
 * xrl_vouch (XRL_VOUCH_DEFAULT entries), once per upgrade.
 */
static void vouch_upgrade(struct xrl_handle *h, const char *ifname)
{
	int op = xrl_map_fd(h, XRL_MAP_VOUCH_OP), au = xrl_map_fd(h, XRL_MAP_VOUCH);
	struct xrl_vouch_val mark = {}, v;
	struct xrl_vouch_key key, next;
	void *prev = NULL;
	unsigned moved = 0, lost = 0;

	if (op < 0 || au < 0)
		return;
	if (h->info.reused_prog) {
		h->info.vouch_mirror = bpf_map_lookup_elem(op, &vouch_mark, &mark) ||
				       mark.expires_ns != h->info.prog_id;
		mark.expires_ns = h->info.vouch_mirror ? 0 : mark.expires_ns;
	} else {
		mark.expires_ns = h->info.prog_id;
	}
	bpf_map_update_elem(op, &vouch_mark, &mark, BPF_ANY);
	if (h->vouch_op_new && h->info.reused_pins) {
		struct xrl_vouch_key *done = calloc(XRL_VOUCH_OP_MAX, sizeof(*done));

		while (!bpf_map_get_next_key(au, prev, &next)) {
			key = next;
			prev = &key;
			if (bpf_map_lookup_elem(au, &key, &v) || v.origin != XRL_ORIGIN_RUNTIME)
				continue;
			if (bpf_map_update_elem(op, &key, &v, BPF_NOEXIST)) {
				lost++;
				continue;
			}
			if (done && moved < XRL_VOUCH_OP_MAX)
				done[moved] = key;
			moved++;
		}
		/* no old program reads xrl_vouch: the copies are only in the
		 * way (deleted after the walk, which a delete would restart) */
		for (unsigned i = 0; done && !h->info.vouch_mirror && i < moved; i++)
			bpf_map_delete_elem(au, &done[i]);
		free(done);
		log_info("%s: operator vouches moved to their own map %s: %u%s",
			 ifname ? ifname : "-", XRL_MAP_VOUCH_OP, moved,
			 lost ? " (some did not fit: left in " XRL_MAP_VOUCH ")" : "");
	}
	if (h->info.vouch_mirror)
		log_warnx("%s: the program kept attached (%u) is from before %s: operator vouches "
			  "are mirrored into %s, where identity-tier vouches can push them out, "
			  "until `xrlctl detach` and a new attach load the current program",
			  ifname ? ifname : "-", h->info.prog_id, XRL_MAP_VOUCH_OP, XRL_MAP_VOUCH);
}

int xrl_deny_room(struct xrl_handle *h, __u8 family, __u32 *used, __u32 *cap)
{
	int fd = xrl_map_fd(h, family == XRL_AF_INET ? XRL_MAP_DENY_V4 : XRL_MAP_DENY_V6);
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info), zero = 0;
	struct xrl_config cfg;

	if (family != XRL_AF_INET && family != XRL_AF_INET6)
		return -EAFNOSUPPORT;
	if (bpf_obj_get_info_by_fd(fd, &info, &ilen))
		return -errno;
	if (bpf_map_lookup_elem(xrl_map_fd(h, XRL_MAP_CONFIG), &zero, &cfg))
		return -errno;
	*cap = info.max_entries;
	*used = family == XRL_AF_INET ? cfg.deny_v4_n : cfg.deny_v6_n;
	return 0;
}

/*
 * One step of the expiry sweep over one trie: visit at most `budget` keys
 * after the cursor, delete the expired ones, and leave the cursor on the
 * last key kept (a walk restarts from the first key when its cursor is
 * gone). The work per call is bounded whatever the list holds; a full
 * 65,536-entry list is swept in 16 calls of 4,096.
 */
static int gc_step(int fd, size_t keysz, __u64 now, struct xrl_gc_cursor *cur, int budget)
{
	static char dead[XRL_GC_BUDGET][sizeof(struct xrl_lpm_v6)];
	char key[sizeof(struct xrl_lpm_v6)], next[sizeof(struct xrl_lpm_v6)];
	struct xrl_deny_val v;
	int n = 0, removed = 0, seen = 0;
	void *prev = cur->valid ? cur->key : NULL;

	if (budget > XRL_GC_BUDGET)
		budget = XRL_GC_BUDGET;
	while (seen < budget && !bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, keysz);
		prev = key;
		seen++;
		if (!bpf_map_lookup_elem(fd, key, &v) && v.expires_ns && v.expires_ns <= now)
			memcpy(dead[n++], key, keysz);
		else
			memcpy(cur->key, key, keysz);
	}
	/* the walk reached the end: start again from the first key next time */
	if (seen < budget)
		cur->valid = false;
	else if (seen > n)
		cur->valid = true;
	for (int i = 0; i < n; i++)
		removed += !bpf_map_delete_elem(fd, dead[i]);
	return removed;
}

int xrl_deny_gc(struct xrl_handle *h)
{
	static const __u8 fam[2] = { XRL_AF_INET, XRL_AF_INET6 };
	static const char *const maps[2] = { XRL_MAP_DENY_V4, XRL_MAP_DENY_V6 };
	static const size_t ksz[2] = { sizeof(struct xrl_lpm_v4), sizeof(struct xrl_lpm_v6) };
	__u64 now = xrl_now_ns();
	int total = 0;

	for (int i = 0; i < 2; i++) {
		int n = gc_step(xrl_map_fd(h, maps[i]), ksz[i], now, &h->gc[i], XRL_GC_BUDGET);

		if (n && deny_count_add(h, fam[i], -n) == 0)
			total += n;
	}
	return total;
}

int xrl_set_event_interval(struct xrl_handle *h, __u64 ns)
{
	int cfd = xrl_map_fd(h, XRL_MAP_CONFIG);
	struct xrl_config cfg;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(cfd, &zero, &cfg))
		return -errno;
	cfg.event_interval_ns = ns;
	cfg.event_interval_j = (__u32)(ns / h->tick_ns ? ns / h->tick_ns : 1);
	if (bpf_map_update_elem(cfd, &zero, &cfg, BPF_ANY))
		return -errno;
	return 0;
}

/* Per-CPU values of one PERCPU_ARRAY slot, summed into out (u64 words). */
static int percpu_sum(struct xrl_handle *h, int fd, __u32 key, __u64 *out, size_t words)
{
	size_t stride = (words * 8 + 7) / 8 * 8;
	__u64 *vals = calloc((size_t)h->ncpus, stride);

	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &key, vals)) {
		int err = -errno;

		free(vals);
		return err;
	}
	memset(out, 0, words * 8);
	for (int c = 0; c < h->ncpus; c++)
		for (size_t w = 0; w < words; w++)
			out[w] += vals[(size_t)c * (stride / 8) + w];
	free(vals);
	return 0;
}

static int read_config(struct xrl_handle *h, struct xrl_config *cfg)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(xrl_map_fd(h, XRL_MAP_CONFIG), &zero, cfg) ? -errno : 0;
}

int xrl_read_stats(struct xrl_handle *h, struct xrl_stats *out)
{
	int sfd = xrl_map_fd(h, XRL_MAP_RULE_STATS);
	struct xrl_ruleset *rs;
	struct xrl_config cfg;
	int err;

	memset(out, 0, sizeof(*out));
	err = read_config(h, &cfg);
	if (err)
		return err;
	rs = malloc(sizeof(*rs));
	if (!rs)
		return -ENOMEM;
	if (bpf_map_lookup_elem(xrl_map_fd(h, XRL_MAP_RULESETS), &cfg.active_ruleset, rs)) {
		err = -errno;
		free(rs);
		return err;
	}
	out->n_rules = rs->n_rules > XRL_MAX_RULES ? XRL_MAX_RULES : rs->n_rules;
	for (__u32 i = 0; i < out->n_rules; i++)
		out->cookies[i] = rs->rules[i].syn_cookies;
	free(rs);
	for (__u32 i = 0; i < out->n_rules; i++) {
		err = percpu_sum(h, sfd, cfg.active_ruleset * XRL_MAX_RULES + i,
				 (__u64 *)&out->rules[i], sizeof(out->rules[i]) / 8);
		if (err)
			return err;
	}
	return percpu_sum(h, xrl_map_fd(h, XRL_MAP_GLOBAL_STATS), 0, (__u64 *)&out->global,
			  sizeof(out->global) / 8);
}

/*
 * xrl_read_stats with the names of the same ruleset slot. Two separate
 * reads can straddle a reload's flip and pair one slot's counts with the
 * other slot's names: a reload that reorders rules would show each rule
 * another's count for one scrape (a counter reset and a jump, to
 * Prometheus). The config is read before and after; when a flip came
 * between (its epoch moved), it is read again, up to three times.
 */
int xrl_read_stats_named(struct xrl_handle *h, struct xrl_stats *out, struct xrl_ruleset_meta *meta)
{
	for (int tries = 0;; tries++) {
		struct xrl_config c0, c1;
		int err = read_config(h, &c0);

		memset(meta, 0, sizeof(*meta));
		if (!err &&
		    bpf_map_lookup_elem(xrl_map_fd(h, XRL_MAP_META), &c0.active_ruleset, meta))
			err = -errno;
		if (!err)
			err = xrl_read_stats(h, out);
		if (!err)
			err = read_config(h, &c1);
		if (err || tries == 2 ||
		    (c1.epoch == c0.epoch && c1.active_ruleset == c0.active_ruleset))
			return err;
	}
}

/* p's compiled rules, with the clock and lease each needs on h. */
static void ruleset_fill(struct xrl_handle *h, const struct xrl_policy *p, struct xrl_ruleset *rs,
			 struct xrl_ruleset_meta *meta)
{
	rs->n_rules = p->n_rules;
	for (__u32 i = 0; i < p->n_rules; i++) {
		struct xrl_rule *r = &rs->rules[i];
		__u64 per_tick;
		__u32 lm;

		*r = p->compiled[i];
		/* a bucket that cannot hold two ticks of tokens needs a finer
		 * clock than jiffies, or the tick would cap it below its rate */
		r->clock_fine = h->fine_clock || r->tau_ns < 2 * h->tick_ns;
		/* a lease is at most a CPU's share of half the burst and 1/32
		 * of what a tick earns: what a lease can waste stays < 3 % */
		per_tick = h->tick_ns / r->emit_ns;
		lm = p->rules[i].burst / (2u * (__u32)h->ncpus);
		if (lm > per_tick / 32)
			lm = (__u32)(per_tick / 32);
		r->lease_max = lm > 31 ? 31 : lm;
		snprintf(meta->names[i], sizeof(meta->names[i]), "%s", p->rules[i].name);
	}
}

/* For each rule i of rs, the index of the rule of the same name in old, or
 * UINT32_MAX: a new rule. */
static void kept_rules(const struct xrl_ruleset *rs, const struct xrl_ruleset_meta *meta,
		       const struct xrl_ruleset *old, const struct xrl_ruleset_meta *old_meta,
		       __u32 src_of[XRL_MAX_RULES])
{
	for (__u32 i = 0; i < XRL_MAX_RULES; i++) {
		src_of[i] = UINT32_MAX;
		for (__u32 j = 0; i < rs->n_rules && j < old->n_rules && j < XRL_MAX_RULES; j++)
			if (!strncmp(meta->names[i], old_meta->names[j], XRL_RULE_NAME_LEN))
				src_of[i] = j;
	}
}

/*
 * The counters of slot `next`: a rule keeps its totals across reloads when
 * its name does (copied from the active slot), the others start at zero
 * (all), or are left as they are (!all: the second pass, right before the
 * flip, which copies again what the kept rules counted meanwhile, so what
 * is lost is what they count between that copy and the flip, a few
 * syscalls). next is not in force: nothing else writes it.
 */
static int carry_counters(struct xrl_handle *h, __u32 active, __u32 next,
			  const __u32 src_of[XRL_MAX_RULES], bool all)
{
	int sfd = xrl_map_fd(h, XRL_MAP_RULE_STATS), rc = 0;
	size_t ctr_sz = sizeof(struct xrl_rule_ctr);
	void *ctrs = calloc((size_t)h->ncpus, ctr_sz), *zeros = calloc((size_t)h->ncpus, ctr_sz);

	for (__u32 i = 0; ctrs && zeros && !rc && i < XRL_MAX_RULES; i++) {
		__u32 dst = next * XRL_MAX_RULES + i, src = active * XRL_MAX_RULES + src_of[i];

		if (src_of[i] != UINT32_MAX && !bpf_map_lookup_elem(sfd, &src, ctrs))
			rc = bpf_map_update_elem(sfd, &dst, ctrs, BPF_ANY);
		else if (all)
			rc = bpf_map_update_elem(sfd, &dst, zeros, BPF_ANY);
		if (rc)
			rc = -errno;
	}
	if (!ctrs || !zeros)
		rc = -ENOMEM;
	free(ctrs);
	free(zeros);
	return rc;
}

/* Is key (an LPM key of family fam) one of p's allowlist entries? */
static bool policy_allows(const struct xrl_policy *p, int fam, const void *key, size_t ksz)
{
	__u8 want_family = fam ? XRL_AF_INET6 : XRL_AF_INET;
	struct xrl_lpm_v4 k4;
	struct xrl_lpm_v6 k6;

	for (__u32 i = 0; i < p->n_allow; i++) {
		if (p->allow[i].family != want_family)
			continue;
		lpm_key(&p->allow[i], &k4, &k6);
		if (!memcmp(key, fam ? (void *)&k6 : (void *)&k4, ksz))
			return true;
	}
	return false;
}

/*
 * One family's allowlist made equal to p's: add the policy's entries, then
 * remove entries that came from an earlier policy and are no longer in this
 * one. Entries an operator added at runtime are left alone. Deleting while
 * walking may restart the walk, so stale keys are gathered 256 at a time.
 */
static int sync_allowlist(struct xrl_handle *h, const struct xrl_policy *p, int fam)
{
	int fd = xrl_map_fd(h, fam ? XRL_MAP_ALLOW_V6 : XRL_MAP_ALLOW_V4);
	size_t ksz = fam ? sizeof(struct xrl_lpm_v6) : sizeof(struct xrl_lpm_v4);
	__u8 want_family = fam ? XRL_AF_INET6 : XRL_AF_INET;
	char key[sizeof(struct xrl_lpm_v6)], nk[sizeof(struct xrl_lpm_v6)];
	char stale[256][sizeof(struct xrl_lpm_v6)];
	struct xrl_allow_val v = { .added_ns = xrl_now_ns() }, cur;
	struct xrl_lpm_v4 k4;
	struct xrl_lpm_v6 k6;
	int n_stale;

	for (__u32 i = 0; i < p->n_allow; i++) {
		if (p->allow[i].family != want_family)
			continue;
		lpm_key(&p->allow[i], &k4, &k6);
		if (bpf_map_update_elem(fd, fam ? (void *)&k6 : (void *)&k4, &v, BPF_NOEXIST) &&
		    errno != EEXIST)
			return -errno;
	}
	do {
		void *prev = NULL;

		n_stale = 0;
		while (!bpf_map_get_next_key(fd, prev, nk)) {
			memcpy(key, nk, ksz);
			prev = key;
			if (!bpf_map_lookup_elem(fd, key, &cur) && cur.origin != XRL_ORIGIN_POLICY)
				continue;
			if (!policy_allows(p, fam, key, ksz) && n_stale < 256)
				memcpy(stale[n_stale++], key, ksz);
		}
		for (int i = 0; i < n_stale; i++)
			bpf_map_delete_elem(fd, stale[i]);
	} while (n_stale == 256);
	return 0;
}

/* Make slot `next` the one in force: one update of xrl_config. */
static int flip_ruleset(struct xrl_handle *h, __u32 next)
{
	struct xrl_config cfg;
	__u32 zero = 0;
	int rc = read_config(h, &cfg);

	if (rc)
		return rc;
	cfg.active_ruleset = next;
	cfg.epoch++; /* refusals decided under the old rules no longer stand */
	if (bpf_map_update_elem(xrl_map_fd(h, XRL_MAP_CONFIG), &zero, &cfg, BPF_ANY))
		return -errno;
	return 0;
}

/*
 * An auto rule keeps its engaged state across an apply when its name stays
 * (a reload during a flood must not hand the flood to the kernel until
 * xrld's next tick). Returns whether any rule of rs has cookies live.
 */
static bool carry_auto(struct xrl_ruleset *rs, const struct xrl_ruleset_meta *meta,
		       const struct xrl_ruleset *old, const struct xrl_ruleset_meta *old_meta)
{
	bool live = false;

	for (__u32 i = 0; i < rs->n_rules && i < XRL_MAX_RULES; i++) {
		for (__u32 j = 0; rs->rules[i].syn_cookies == XRL_COOKIES_AUTO &&
				  j < old->n_rules && j < XRL_MAX_RULES;
		     j++)
			if (old->rules[j].syn_cookies == XRL_COOKIES_AUTO_ON &&
			    !strncmp(meta->names[i], old_meta->names[j], XRL_RULE_NAME_LEN))
				rs->rules[i].syn_cookies = XRL_COOKIES_AUTO_ON;
		live |= rs->rules[i].syn_cookies & XRL_COOKIES_LIVE;
	}
	return live;
}

/* The ruleset slot not in force, with p's rules and carried counters;
 * *live: a rule of it has cookies live; src_of: kept_rules's. */
static int write_next(struct xrl_handle *h, const struct xrl_policy *p, __u32 active, bool *live,
		      __u32 src_of[XRL_MAX_RULES])
{
	int rfd = xrl_map_fd(h, XRL_MAP_RULESETS), mfd = xrl_map_fd(h, XRL_MAP_META);
	struct xrl_ruleset_meta *old_meta = calloc(1, sizeof(*old_meta));
	struct xrl_ruleset_meta *meta = calloc(1, sizeof(*meta));
	struct xrl_ruleset *old = calloc(1, sizeof(*old)), *rs = calloc(1, sizeof(*rs));
	__u32 next = active ^ 1;
	int rc = -ENOMEM;

	if (!rs || !old || !meta || !old_meta)
		goto out;
	if (bpf_map_lookup_elem(rfd, &active, old) || bpf_map_lookup_elem(mfd, &active, old_meta)) {
		rc = -errno;
		goto out;
	}
	ruleset_fill(h, p, rs, meta);
	*live = carry_auto(rs, meta, old, old_meta);
	rs->generation = old->generation + 1;
	kept_rules(rs, meta, old, old_meta, src_of);
	rc = carry_counters(h, active, next, src_of, true);
	if (!rc && (bpf_map_update_elem(rfd, &next, rs, BPF_ANY) ||
		    bpf_map_update_elem(mfd, &next, meta, BPF_ANY)))
		rc = -errno;
out:
	free(rs);
	free(old);
	free(meta);
	free(old_meta);
	return rc;
}

/*
 * A veth drops the frames an XDP program sends back (XDP_TX, the cookie
 * SYN-ACKs) unless its peer runs an XDP program too: the SYN-ACKs are
 * counted as sent and vanish (the peer's RX drops). Containers and pods sit
 * on veths, so say it once, loudly, with the fix; xrld also watches the
 * interface's TX drops against the SYN-ACKs sent (xrlctl status).
 */
static void veth_warn(struct xrl_handle *h)
{
	char name[IF_NAMESIZE] = "?", drv[32];

	if (h->veth_warned || !h->info.ifindex)
		return;
	if_indextoname((unsigned)h->info.ifindex, name);
	if (xrl_iface_driver(name, drv, sizeof(drv)) || strcmp(drv, "veth"))
		return;
	h->veth_warned = true;
	log_warnx("%s is a veth: its cookie SYN-ACKs (XDP_TX) are dropped unless the peer runs an "
		  "XDP program; in the peer's namespace run `ip link set dev PEER xdpdrv obj "
		  "/usr/lib/xrl/xrl.bpf.o sec xdp` (it passes everything there), or cookies will not answer",
		  name);
}

/*
 * Apply a policy atomically: the rules go into the ruleset slot not in
 * force, their counters are carried over by rule name, the allowlist is made
 * equal to the policy's, then one update of xrl_config flips the slot.
 */
int xrl_apply_policy(struct xrl_handle *h, struct xrl_policy *p, char *err, size_t errlen)
{
	struct xrl_config cfg;
	bool cookies = false;
	__u32 src_of[XRL_MAX_RULES];
	int rc;

	if (err && errlen)
		err[0] = '\0';
	rc = xrl_policy_compile(p, err, errlen); /* compiles only what is not yet */
	if (!rc)
		rc = read_config(h, &cfg);
	if (!rc)
		rc = write_next(h, p, cfg.active_ruleset, &cookies, src_of);
	/* set before the cookie rules are in force, restored after they left */
	if (!rc && cookies) {
		rc = cookie_sysctls(h, true);
		if (rc && err && errlen)
			snprintf(err, errlen, "couldn't set the sysctls SYN cookies need: %s",
				 strerror(-rc));
	}
	for (int fam = 0; !rc && fam < 2; fam++)
		rc = sync_allowlist(h, p, fam);
	if (!rc)
		rc = sync_list_counts(h);
	if (!rc) /* what kept rules counted since write_next, just before the flip */
		rc = carry_counters(h, cfg.active_ruleset, cfg.active_ruleset ^ 1, src_of, false);
	if (!rc)
		rc = flip_ruleset(h, cfg.active_ruleset ^ 1);
	if (!rc && !cookies)
		cookie_sysctls(h, false); /* logged; the policy stands either way */
	for (__u32 i = 0; !rc && i < p->n_rules; i++)
		if (p->rules[i].syn_cookies != XRL_COOKIES_OFF) {
			veth_warn(h); /* auto too: said before the flood */
			break;
		}
	if (rc && err && errlen && !err[0])
		snprintf(err, errlen, "couldn't apply the policy: %s", strerror(-rc));
	return rc;
}

/* Rewrite one rule's cookie byte in the ruleset in force (see xrl.h). */
static int cookies_write(struct xrl_handle *h, struct xrl_ruleset *rs, __u32 active,
			 const char *name, __u8 mode, __u8 *was, bool *live)
{
	int rfd = xrl_map_fd(h, XRL_MAP_RULESETS);
	struct xrl_ruleset_meta *meta = calloc(1, sizeof(*meta));
	int slot = -1;

	if (!meta)
		return -ENOMEM;
	if (bpf_map_lookup_elem(rfd, &active, rs) ||
	    bpf_map_lookup_elem(xrl_map_fd(h, XRL_MAP_META), &active, meta)) {
		free(meta);
		return -errno;
	}
	for (__u32 i = 0; i < rs->n_rules && i < XRL_MAX_RULES; i++)
		if (!strncmp(meta->names[i], name, XRL_RULE_NAME_LEN))
			slot = (int)i;
	free(meta);
	if (slot < 0)
		return -ENOENT;
	if (rs->rules[slot].proto != XRL_PROTO_TCP)
		return -EPROTONOSUPPORT;
	if (was)
		*was = rs->rules[slot].syn_cookies;
	*live = false;
	for (__u32 i = 0; i < rs->n_rules && i < XRL_MAX_RULES; i++)
		*live |= ((int)i == slot ? mode : rs->rules[i].syn_cookies) & XRL_COOKIES_LIVE;
	if (rs->rules[slot].syn_cookies == mode)
		return 1; /* nothing to write */
	rs->rules[slot].syn_cookies = mode;
	return 0;
}

int xrl_rule_cookies_set(struct xrl_handle *h, const char *name, __u8 mode, __u8 *was)
{
	struct xrl_ruleset *rs = malloc(sizeof(*rs));
	struct xrl_config cfg;
	bool live = false;
	int rc;

	if (!rs)
		return -ENOMEM;
	rc = mode > XRL_COOKIES_AUTO_ON ? -EINVAL : read_config(h, &cfg);
	if (!rc)
		rc = cookies_write(h, rs, cfg.active_ruleset, name, mode, was, &live);
	if (!rc && live)
		rc = cookie_sysctls(h, true);
	/* one byte of the rule changes; every other byte is written with the
	 * value it has, so a packet sees the old mode or the new one */
	if (!rc && bpf_map_update_elem(xrl_map_fd(h, XRL_MAP_RULESETS), &cfg.active_ruleset, rs,
				       BPF_ANY))
		rc = -errno;
	if (!rc)
		rc = flip_ruleset(h, cfg.active_ruleset); /* the epoch: refusals cached
							   * without cookies go */
	if (rc >= 0 && !live)
		cookie_sysctls(h, false);
	free(rs);
	return rc > 0 ? 0 : rc;
}

/*
 * Buckets in the shared table. A table of a million buckets, full during a
 * flood of spoofed sources, is when an operator asks: one key a system call
 * took ~1.7 s for 2^20 buckets here, so the keys come BUCKET_BATCH at a time
 * (BPF_MAP_LOOKUP_BATCH); one at a time only where the kernel lacks it.
 */
#define BUCKET_BATCH 8192

long xrl_bucket_count(struct xrl_handle *h)
{
	int fd = xrl_map_fd(h, XRL_MAP_BUCKETS);
	struct xrl_bucket_key key, next, *keys;
	union {
		__u32 pos;
		struct xrl_bucket_key k;
	} in, out; /* the kernel's cursor */
	void *prev = NULL;
	__u64 *vals;
	long n = 0;
	int err = 0;

	keys = malloc(BUCKET_BATCH * sizeof(*keys));
	vals = malloc(BUCKET_BATCH * sizeof(*vals));
	if (keys && vals) {
		LIBBPF_OPTS(bpf_map_batch_opts, o);
		bool first = true;

		for (;;) {
			__u32 cnt = BUCKET_BATCH;

			err = bpf_map_lookup_batch(fd, first ? NULL : &in, &out, keys, vals, &cnt,
						   &o);
			if (err && errno != ENOENT)
				break;
			n += cnt;
			if (err) { /* ENOENT: the last batch */
				err = 0;
				break;
			}
			in = out;
			first = false;
		}
	}
	free(keys);
	free(vals);
	if (keys && vals && !err)
		return n;
	n = 0;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		n++;
	}
	return n;
}
