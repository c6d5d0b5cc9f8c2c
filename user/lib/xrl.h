/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xrl.h - the loader library: policy in a C struct, the XDP program loaded,
 * pinned, attached, fed and read. The daemon, the CLI, the tests and the
 * benchmarks are all built on it.
 *
 * Conventions: functions return 0 or -errno; where an `err` buffer is taken
 * it receives a sentence a person can act on. Nothing here exits or prints
 * to stdout; diagnostics go through log.h.
 */
#ifndef XRL_H
#define XRL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "xrl_abi.h"
#include "xrl_gcra.h"
#include "util.h"

#define XRL_PIN_ROOT_DEFAULT "/sys/fs/bpf/xrl"
#define XRL_POLICY_MAX_ALLOW 1024
#define XRL_ERRLEN	     256

/* An address prefix; host bits are always zero. */
struct xrl_prefix {
	__u8 family; /* XRL_AF_INET or XRL_AF_INET6 */
	__u8 plen;
	__u8 pad[2];
	__u32 addr[4]; /* network byte order, v4 in [0] */
};

/* "tokens per period": 100/s is {100, 1e9}, 10/min is {10, 60e9}. */
struct xrl_rate {
	__u64 tokens;
	__u64 period_ns;
};

/* One rule as an operator writes it; xrl_rule_compile makes the ABI form. */
struct xrl_rule_spec {
	char name[XRL_RULE_NAME_LEN];
	__u8 proto;	/* enum xrl_proto */
	__u8 tcp_class; /* enum xrl_tcp_class */
	__u8 action;	/* enum xrl_action */
	__u8 n_ports;
	struct xrl_port_range ports[XRL_MAX_PORT_RANGES];
	bool has_dst;
	struct xrl_prefix dst;
	__u8 key_plen4; /* default 32 */
	__u8 key_plen6; /* default 64 */
	struct xrl_rate rate;
	__u32 burst;
	__u32 id;          /* 0: derived from the name (stable across reloads) */
	__u8 penalty;      /* enum xrl_penalty_mode; userspace only */
	__u8 syn_cookies;  /* enum xrl_syn_cookies */
	/* aggregate cap (docs/policy.md): at most agg_rate new connections for
	 * the rule as a whole, agg_vouched_pm per mille of it (rate and burst)
	 * reserved for vouched sources; agg_rate.tokens 0 = no cap */
	struct xrl_rate agg_rate;
	__u32 agg_burst;
	__u16 agg_vouched_pm; /* 0..XRL_AGG_VOUCHED_MAX_PM */
	/* syn_cookies: auto (xrld's; docs/policy.md `syn_cookies_auto`):
	 * cookies are engaged once the rule matches auto_on_rate SYNs a second
	 * or a listener on its ports has auto_queue_pct % of its accept queue
	 * in use, and let go once it has been under auto_off_rate and under
	 * that queue share for auto_hold_ns. Userspace only. */
	__u64 auto_on_rate;   /* SYNs per second, > auto_off_rate */
	__u64 auto_off_rate;  /* SYNs per second */
	__u64 auto_hold_ns;   /* > 0 */
	__u64 auto_min_on_ns; /* once engaged, on at least this long: a pulsing
			       * flood cannot toggle the rule every few seconds */
	__u8 auto_queue_pct;  /* 1..100; 0: the queue is not watched */
};

/* Defaults of syn_cookies_auto: a flood well above what one listener's
 * SYN queue of a few thousand absorbs, and an end that is the flood's. */
#define XRL_AUTO_ON_RATE   5000
#define XRL_AUTO_OFF_RATE  1000
#define XRL_AUTO_HOLD_NS   (10ull * 1000000000ull)
#define XRL_AUTO_MIN_ON_NS (300ull * 1000000000ull)
#define XRL_AUTO_QUEUE_PCT 50

/* At most this share (per mille) of an aggregate cap is reserved for
 * vouched sources: the rest stays open to new ones, which is how a new
 * client earns its vouch at all. */
#define XRL_AGG_VOUCHED_MAX_PM 900

/*
 * What a rule's refusals may earn towards a penalty (xrld's escalation).
 * Default VERIFIED: only refusals whose source is proven (XRL_EVF_VERIFIED),
 * so forged packets never get an address denied. UNVERIFIED trusts that the
 * rule's sources cannot be forged (the operator says so per rule).
 */
enum xrl_penalty_mode {
	XRL_PEN_VERIFIED = 0,
	XRL_PEN_UNVERIFIED = 1,
	XRL_PEN_OFF = 2,
};

struct xrl_policy {
	__u32 n_rules;
	struct xrl_rule_spec rules[XRL_MAX_RULES];
	__u32 n_allow;
	struct xrl_prefix allow[XRL_POLICY_MAX_ALLOW];
	/* The ABI form of rules[0 .. n_compiled), each rule compiled once a
	 * reload (by the config parser or xrl_policy_compile) and read from
	 * here by whoever needs an id or the ruleset. Whoever edits a rule
	 * that is compiled sets n_compiled below it (or uses the setter). */
	__u32 n_compiled;
	struct xrl_rule compiled[XRL_MAX_RULES];
};

/* ---- parsing and compiling (pure, no root) ---------------------------- */

/* "10.0.0.0/8", "2001:db8::/48", "192.0.2.1" (= /32), "::1" (= /128).
 * Host bits set is an error (-EINVAL): "10.0.0.1/8" is almost always a typo. */
int xrl_prefix_parse(const char *s, struct xrl_prefix *out, char *err, size_t errlen);
/* Inverse of xrl_prefix_parse; buf needs 64 bytes. */
const char *xrl_prefix_str(const struct xrl_prefix *p, char *buf, size_t len);
/* Network-order mask words for plen bits of the family. */
void xrl_prefix_mask(__u8 family, __u8 plen, __u32 mask[4]);

/* "100/s", "10/min", "1/6s", "20/h", "2.5/s", "3/500ms". */
int xrl_rate_parse(const char *s, struct xrl_rate *out, char *err, size_t errlen);
/* "2s", "500ms", "1h", "90m", "1d" -> ns. */
int xrl_duration_parse(const char *s, __u64 *ns, char *err, size_t errlen);

/* Fill defaults (key /32 and /64, action drop, tcp_class any). */
void xrl_rule_spec_init(struct xrl_rule_spec *r, const char *name);
/* Stable, non-zero rule id from a name (FNV-1a). */
__u32 xrl_rule_id(const char *name);
/* The ABI form of one rule. */
int xrl_rule_compile(const struct xrl_rule_spec *in, struct xrl_rule *out, char *err,
		     size_t errlen);
/*
 * The one check of a rule's SYN-cookie settings (xrl_rule_compile makes it,
 * and the config parser too, to place it at its line): 0, or what is wrong,
 * with text saying it without the rule's name. xrl_rule_auto_check: the
 * syn_cookies_auto numbers (the compile checks them in auto mode, the parser
 * wherever they are written); xrl_rule_cookies_check: cookies on a rule of
 * another proto than tcp.
 */
enum xrl_cookies_problem {
	XRL_CK_PROTO = 1, /* cookies on a rule that is not proto tcp */
	XRL_CK_RATES,	  /* auto's off_rate not below its on_rate */
	XRL_CK_AUTO,	  /* auto's hold zero or queue_pct above 100 */
};
int xrl_rule_auto_check(const struct xrl_rule_spec *r, char *text, size_t len);
int xrl_rule_cookies_check(const struct xrl_rule_spec *r, char *text, size_t len);
/* Calls of xrl_rule_compile so far (for tests: once per rule a reload). */
unsigned long xrl_rule_compile_count(void);
/*
 * Whole-policy checks: counts, every rule compiles, unique names and ids.
 * The rules not compiled yet are compiled into p->compiled (and counted in
 * p->n_compiled), each once; names and ids are checked against an index of
 * the earlier rules, O(n).
 */
int xrl_policy_compile(struct xrl_policy *p, char *err, size_t errlen);
/* Set rule i's action (enum xrl_action) in its spec and compiled form. */
void xrl_policy_set_action(struct xrl_policy *p, __u32 i, __u8 action);

/* ---- the loaded program --------------------------------------------- */

enum xrl_attach_mode {
	XRL_MODE_AUTO = 0, /* native, falling back to skb with a warning */
	XRL_MODE_NATIVE,
	XRL_MODE_SKB,
};

struct xrl_open_opts {
	const char *ifname;   /* NULL: load only (tests, benchmarks) */
	const char *pin_root; /* NULL: no pinning; else <pin_root>/<ifname>/ */
	enum xrl_attach_mode mode;
	__u32 buckets_max;   /* 0: XRL_BUCKETS_DEFAULT */
	__u32 refused_max;   /* 0: XRL_REFUSED_DEFAULT */
	bool fine_clock;     /* bpf_ktime_get_ns instead of jiffies */
	bool no_lease;	     /* every admit asks the shared bucket */
	bool kernel_cookies; /* the kernel's SYN cookies (sysctls, primers)
			      * even where xrl's own would work */
	const char *bpf_obj; /* unused: the object is embedded (skeleton) */
};

/* How the program ended up attached, for status lines. */
struct xrl_attach_info {
	bool attached;
	bool reused_pins;	   /* maps came from existing pins: state kept */
	bool reused_prog;	   /* an xrl program was already attached: kept */
	bool multiprog;		   /* libxdp dispatcher (false: single program) */
	enum xrl_attach_mode mode; /* NATIVE or SKB, as attached */
	int ifindex;
	__u32 prog_id;
	bool own_cookies;	   /* xrl's SYN cookies, the TC program attached */
	bool tc_attached;	   /* the TC ingress program is on the interface */
	bool vouch_mirror;	   /* the program attached predates xrl_vouch_op
				    * (an upgrade kept it): operator vouches are
				    * mirrored into xrl_vouch, which it reads */
};

struct xrl_handle;

/*
 * Load the program, reusing pinned maps under <pin_root>/<ifname>/ when
 * they exist (buckets, lists and counters keep their state), and attach it
 * to ifname unless an xrl program is attached already, in which case that
 * one is kept: there is no moment without enforcement.
 */
int xrl_open(const struct xrl_open_opts *o, struct xrl_handle **out);
/*
 * Open the pinned maps of <pin_root>/<ifname>/ without loading anything:
 * for readers (xrlctl stats/status) when the daemon is down. Map access
 * works; xrl_prog_fd returns -ENOENT.
 */
int xrl_open_pinned(const char *pin_root, const char *ifname, struct xrl_handle **out);
/* Release userspace resources; the program stays attached and enforcing. */
void xrl_close(struct xrl_handle *h);
/* Detach from the interface and remove the pins; then xrl_close. */
int xrl_detach(struct xrl_handle *h);
const struct xrl_attach_info *xrl_info(const struct xrl_handle *h);
int xrl_prog_fd(const struct xrl_handle *h);
/* fd of one of the program's maps by its XRL_MAP_* name, or -ENOENT. */
int xrl_map_fd(const struct xrl_handle *h, const char *name);

/*
 * Apply rules and allowlist atomically (double-buffered ruleset). Allowlist
 * entries added with xrl_allow_add (runtime origin) are kept; entries of an
 * earlier policy that this one no longer lists are removed. p is checked by
 * xrl_policy_compile (which compiles only the rules not compiled yet) and
 * its ruleset is p->compiled.
 */
int xrl_apply_policy(struct xrl_handle *h, struct xrl_policy *p, char *err, size_t errlen);

/* Runtime allowlist entry (origin XRL_ORIGIN_RUNTIME). */
int xrl_allow_add(struct xrl_handle *h, const struct xrl_prefix *p);
int xrl_allow_del(struct xrl_handle *h, const struct xrl_prefix *p);
/* ttl_ns 0 = no expiry; origin is an enum xrl_origin. */
int xrl_deny_add(struct xrl_handle *h, const struct xrl_prefix *p, __u64 ttl_ns, __u32 origin);
int xrl_deny_del(struct xrl_handle *h, const struct xrl_prefix *p);
/* The origin (enum xrl_origin) of the denylist entry for exactly p: 0, or
 * -ENOENT when there is none (an entry that only covers p is not p's). */
int xrl_deny_origin(struct xrl_handle *h, const struct xrl_prefix *p, __u32 *origin);
/* Entries in use and the capacity of one family's denylist. */
int xrl_deny_room(struct xrl_handle *h, __u8 family, __u32 *used, __u32 *cap);
/* One bounded step of the expiry sweep (XRL_GC_BUDGET keys per family, so
 * a full list is swept over several calls); returns how many expired
 * entries it removed. */
int xrl_deny_gc(struct xrl_handle *h);
/* Vouched sources (xrl_abi.h, XRL_VOUCH_PLEN4/6): a prefix is widened to
 * its /24 or /48 (shorter: -EINVAL); ttl_ns 0 = no expiry. Two spaces: an
 * operator's (xrl_vouch_op, bounded, never evicted) and the automatic one
 * (xrl_vouch, LRU: cookie-verified admits and the identity tier). */
struct xrl_vouch {
	struct xrl_prefix prefix;
	__u64 expires_ns; /* CLOCK_MONOTONIC ns; 0 = never */
	__u32 origin;	  /* enum xrl_origin: RUNTIME is the operator's space */
};
/* An operator's vouch (origin RUNTIME), replacing the operator's own for
 * the prefix; -ENOSPC when XRL_VOUCH_OP_MAX prefixes are held. */
int xrl_vouch_add(struct xrl_handle *h, const struct xrl_prefix *p, __u64 ttl_ns);
/* An automatic vouch (origin XRL_ORIGIN_IDENTITY or XRL_ORIGIN_COOKIE, else
 * -EINVAL) into xrl_vouch alone: it can never shorten, replace or push out
 * an operator's. -EEXIST: the prefix holds an operator's vouch mirrored
 * there (vouch_mirror), left as it is. */
int xrl_vouch_auto(struct xrl_handle *h, const struct xrl_prefix *p, __u64 ttl_ns, __u32 origin);
/* Every vouch of the prefix, in both spaces; -ENOENT if there was none. */
int xrl_vouch_del(struct xrl_handle *h, const struct xrl_prefix *p);
/* Is any part of p vouched for, unexpired, in either space? (A penalty
 * never denies it.) */
bool xrl_vouched(struct xrl_handle *h, const struct xrl_prefix *p);
/* Up to max entries into out (*n of them), expired ones included: the
 * operator's space first, then the automatic one. */
int xrl_vouch_list(struct xrl_handle *h, struct xrl_vouch *out, size_t max, size_t *n);
/* Operator vouches held and the operator space's capacity. */
int xrl_vouch_op_room(struct xrl_handle *h, __u32 *used, __u32 *cap);
/* Gap between refusal samples per source per CPU (default 1 s). */
int xrl_set_event_interval(struct xrl_handle *h, __u64 ns);

/* Counters summed over CPUs. */
struct xrl_stats {
	__u32 n_rules; /* of the ruleset in force */
	struct xrl_rule_ctr rules[XRL_MAX_RULES];
	__u8 cookies[XRL_MAX_RULES]; /* each rule's enum xrl_syn_cookies, now */
	struct xrl_global_ctr global;
};
int xrl_read_stats(struct xrl_handle *h, struct xrl_stats *out);
/* The same with the rule names of the slot the counts are of (a reload's
 * flip between two reads cannot pair them wrong). */
struct xrl_ruleset_meta;
int xrl_read_stats_named(struct xrl_handle *h, struct xrl_stats *out,
			 struct xrl_ruleset_meta *meta);
/*
 * Set the SYN-cookie mode (enum xrl_syn_cookies) of the rule named name in
 * the ruleset in force, without a reload: the byte in the rule is
 * rewritten in place, the epoch bumped. The sysctls cookies need are held
 * before a rule goes live and let go once none is. Until the next apply,
 * which writes the policy's modes (an auto rule keeps its engaged state).
 * -ENOENT: no such rule; -EPROTONOSUPPORT: not a tcp rule. *was: the mode
 * before (may be NULL).
 */
int xrl_rule_cookies_set(struct xrl_handle *h, const char *name, __u8 mode, __u8 *was);
/* Entries in the shared bucket table (walks it: O(n)). */
long xrl_bucket_count(struct xrl_handle *h);

/* The window scale the kernel gives connections it creates from a cookie,
 * for buffer limits tcp_rmem[2] and rmem_max; and from this namespace's
 * sysctls (7 if unreadable). The XDP program's SYN-ACKs offer it. */
__u8 xrl_syn_wscale_of(__u64 tcp_rmem_max, __u64 rmem_max);
__u8 xrl_syn_wscale(void);
/* Hold (want) or let go of net.ipv4.tcp_syncookies = 2 and tcp_timestamps =
 * 2 in this network namespace, remembering in the pinned xrl_sysctl map
 * (fd) what they were, and restoring that when the last interface under
 * the same pin root lets go. who names the interface in logs. */
int xrl_cookie_sysctls(int fd, const char *pin_dir, const char *who, bool want);

/* ---- xrl's own SYN cookies (owncookie.c) --------------------------------- */

/* Does this kernel have bpf_sk_assign_tcp_reqsk (6.9+)? Read from its BTF. */
bool xrl_own_cookies_supported(void);
/* XRL_CKO_* that this namespace's TCP sysctls allow a connection. */
__u8 xrl_cookie_opts(void);
/* An interface's MTU, or -errno. */
int xrl_iface_mtu(int ifindex);
/* The MSS a SYN-ACK offers on an MTU (<= 0: 1500), for IPv4 and IPv6. */
void xrl_cookie_mss(int mtu, __u16 *mss4, __u16 *mss6);
/* The next value of xrl_cookie from c: keys made where missing and
 * rotated when a day old (*rotated), the offer from mtu and the sysctls. */
int xrl_cookie_cfg_next(struct xrl_cookie_cfg *c, bool own, int mtu, __u8 wscale, __u64 now,
			bool *rotated);
/* The driver of an interface, as ethtool names it. */
int xrl_iface_driver(const char *ifname, char *out, size_t n);
/* Bring xrl_cookie up to date on h's interface (see owncookie.c); and
 * check that the TC program is still attached, attaching it again if not.
 * xrld calls it once a second. */
int xrl_cookie_refresh(struct xrl_handle *h);
/* The kernel's cookie path: make every port's next good SYN a primer (a
 * listener is new, and the kernel takes no cookie ACK on it until it sent
 * a cookie itself). */
int xrl_cookie_prime_bump(struct xrl_handle *h);
const char *xrl_global_name(int idx);
const char *xrl_verdict_name(int v);
/* "off", "on", "auto" (either auto state) of an enum xrl_syn_cookies. */
const char *xrl_cookies_name(int mode);

#endif /* XRL_H */
