/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xrl_abi.h - everything the XDP program and userspace share.
 *
 * Map keys and values, the rule layout, counter indices, limits and map
 * names live here and nowhere else: bpf/, user/ and tests/ all include this
 * file, so a change cannot leave a mirrored copy behind.
 *
 * Conventions: fixed-width types, explicit padding (the verifier and
 * bpf_map_update_elem compare whole keys, so holes must be zeroed and are
 * better not there at all), byte order and unit named on every field.
 * Every type is prefixed xrl_ because vmlinux.h already defines names such
 * as struct bucket and struct rule.
 */
#ifndef XRL_ABI_H
#define XRL_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* ---- limits ---------------------------------------------------------- */

#define XRL_MAX_RULES        64     /* rules per policy, evaluated in order */
#define XRL_MAX_PORT_RANGES  8      /* destination port ranges per rule */
#define XRL_RULE_NAME_LEN    32     /* userspace only; not in the BPF rule */
/* Framing walked; deeper framing is "unwalkable": dropped when an enforcing
 * rule could cover it, else passed (docs/design.md, "What the parser walks").
 * Linux itself has no bound on either: it unwraps any number of priority
 * (VID 0) tags and walks any number of extension headers. */
#define XRL_MAX_VLAN_DEPTH   8      /* 802.1Q / 802.1ad tags; QinQ is 2 */
#define XRL_MAX_V6_EXT_HDRS  16     /* IPv6 extension headers */

/* Default table sizes; overridable at load time (bpf_map__set_max_entries). */
#define XRL_BUCKETS_DEFAULT      (1u << 20) /* shared GCRA states */
#define XRL_REFUSED_DEFAULT      (1u << 15) /* per-CPU refusal cache slots, power of 2 */
#define XRL_ALLOW_SMALL          8          /* allowlists this short are checked inline */
#define XRL_LIST_DEFAULT         (1u << 16) /* allow/deny entries per family */
#define XRL_EVENTS_BYTES         (1u << 20) /* ring buffer size, power of 2 */
#define XRL_VOUCH_DEFAULT        (1u << 16) /* automatic vouched prefixes (LRU) */
#define XRL_VOUCH_OP_MAX         4096       /* operators' vouched prefixes (HASH) */

/* ---- map names (pinned under <pin-dir>/<ifname>/<name>) ----------------- */

#define XRL_MAP_CONFIG       "xrl_config"
#define XRL_MAP_RULESETS     "xrl_rulesets"
#define XRL_MAP_BUCKETS      "xrl_buckets"
#define XRL_MAP_REFUSED      "xrl_refused"
#define XRL_MAP_ALLOW_V4     "xrl_allow_v4"
#define XRL_MAP_ALLOW_V6     "xrl_allow_v6"
#define XRL_MAP_DENY_V4      "xrl_deny_v4"
#define XRL_MAP_DENY_V6      "xrl_deny_v6"
#define XRL_MAP_RULE_STATS   "xrl_rule_stats"
#define XRL_MAP_GLOBAL_STATS "xrl_global_stats"
#define XRL_MAP_EVENTS       "xrl_events"
#define XRL_MAP_META         "xrl_meta"
#define XRL_MAP_ALLOW_SMALL  "xrl_allow_small"
#define XRL_MAP_SYSCTL       "xrl_sysctl"
#define XRL_MAP_VOUCH        "xrl_vouch"
#define XRL_MAP_VOUCH_OP     "xrl_vouch_op"
#define XRL_MAP_COOKIE       "xrl_cookie"

/* ---- enums ------------------------------------------------------------ */

enum xrl_family {
	XRL_AF_INET  = 4,
	XRL_AF_INET6 = 6,
};

/* L4 protocol a rule matches; IANA numbers so the program compares directly. */
enum xrl_proto {
	XRL_PROTO_ANY = 0,
	XRL_PROTO_TCP = 6,
	XRL_PROTO_UDP = 17,
};

/* TCP flag class a rule matches. Ignored for UDP. */
enum xrl_tcp_class {
	XRL_TCP_ANY = 0, /* every TCP segment */
	XRL_TCP_SYN = 1, /* SYN without ACK: a new connection */
};

/* A rule's SYN cookies (docs/design.md, "SYN cookies"). */
enum xrl_syn_cookies {
	XRL_COOKIES_OFF = 0,      /* SYNs meet the bucket */
	XRL_COOKIES_ON  = 1,      /* SYNs are answered with a cookie SYN-ACK at
	                           * the NIC; the bucket is charged by the ACK
	                           * that returns a valid cookie */
	XRL_COOKIES_AUTO = 2,     /* auto, idle: as off until xrld engages it */
	XRL_COOKIES_AUTO_ON = 3,  /* auto, engaged by xrld: as on */
};
/* The one bit of xrl_rule.syn_cookies the program reads: cookies answer
 * now. xrld flips it in the ruleset in force for an auto rule (one byte
 * of the rule changes, so a packet sees it set or not, nothing else). */
#define XRL_COOKIES_LIVE 1

enum xrl_action {
	XRL_ACT_DROP   = 0, /* refuse with XDP_DROP */
	XRL_ACT_SHADOW = 1, /* count what would be refused, pass it */
};

/* Per-rule verdicts, the index into xrl_rule_ctr arrays. */
enum xrl_verdict {
	XRL_V_PASSED        = 0, /* matched, bucket admitted */
	XRL_V_DROPPED       = 1, /* matched, bucket refused, dropped */
	XRL_V_SHADOW_DROPPED = 2, /* matched, bucket refused, passed (shadow) */
	XRL_V_MAX,
};

/* Global counters, the index into xrl_global_ctr.c[]. Packets unless noted. */
enum xrl_global {
	XRL_G_SEEN = 0,          /* every packet the program ran on */
	XRL_G_NON_IP,            /* not IPv4/IPv6 after VLAN tags: passed */
	XRL_G_MALFORMED,         /* truncated or invalid headers, source not
	                          * listed: passed (a listed source is counted
	                          * allowlisted or denylisted) */
	XRL_G_FRAGMENTS,         /* IPv4/IPv6 non-first fragments: passed */
	XRL_G_ALLOWLISTED,       /* source on the allowlist: passed */
	XRL_G_DENYLISTED,        /* source on the denylist, not expired: dropped */
	XRL_G_DENY_EXPIRED,      /* denylist hit whose entry had expired: ignored */
	XRL_G_NO_RULE,           /* parsed fine, no rule matched: passed */
	XRL_G_BUCKET_NEW,        /* new source buckets created (evictions are
	                          * new - occupancy - userspace deletes) */
	XRL_G_BUCKET_INSERT_FAIL,/* bucket could not be created: passed */
	XRL_G_CAS_RETRY,         /* lost a compare-and-swap race, retried */
	XRL_G_CAS_GIVEUP,        /* lost every retry: passed (never refuse by accident) */
	XRL_G_REFUSED_CACHED,    /* refusals answered from the per-CPU cache */
	XRL_G_EVENTS_SENT,       /* refusal samples written to the ring buffer */
	XRL_G_EVENTS_LOST,       /* refusal samples dropped: ring buffer full */
	XRL_G_NO_POLICY,         /* no ruleset installed: passed */
	XRL_G_TINY_FRAGMENT,     /* first fragment cut inside its L4 header
	                          * (RFC 1858, RFC 7112): dropped */
	XRL_G_LEASED,            /* admits spent from a per-CPU lease */
	XRL_G_UNWALKABLE_DROPPED,/* more VLAN tags or IPv6 extension headers
	                          * than walked, and an enforcing rule could
	                          * cover the destination: dropped */
	XRL_G_UNWALKABLE_PASSED, /* the same, no enforcing rule could: passed */
	XRL_G_COOKIES_SENT,      /* SYNs answered with a cookie SYN-ACK (XDP_TX) */
	XRL_G_COOKIES_VALID,     /* ACKs whose cookie checked out: sent on to
	                          * the bucket, then the kernel */
	XRL_G_COOKIES_BAD,       /* ACKs of no connection, cookie invalid: dropped */
	XRL_G_COOKIE_PRIMERS,    /* SYNs passed to the kernel so that it keeps
	                          * accepting cookies on that port (one per
	                          * port per XRL_COOKIE_PRIME_S) */
	XRL_G_COOKIE_FALLBACK,   /* SYNs a cookie rule matched but the program
	                          * cannot answer (IPv4 options, IPv6 extension
	                          * headers, fragments): they meet the bucket */
	XRL_G_AGG_REFUSED,       /* new connections an aggregate cap refused
	                          * (a rule's `aggregate`): dropped */
	XRL_G_VOUCHED_ADMITS,    /* new connections of vouched sources an
	                          * aggregate cap admitted */
	XRL_G_COOKIE_REQSK,      /* xrl-cookie ACKs the TC program made a
	                          * request socket for (the kernel's handshake
	                          * completes from it) */
	XRL_G_COOKIE_REQSK_FAIL, /* xrl-cookie ACKs it could not: no listener
	                          * (gone since the SYN), or the kernel refused
	                          * the options; passed, and the kernel resets */
	XRL_G_COOKIE_NO_META,    /* xrl-cookie ACKs the driver would not carry
	                          * to the TC program (no XDP metadata) */
	XRL_G_MAX,
};

/* ---- config (ARRAY, 1 entry) ------------------------------------------ */

/*
 * Runtime knobs. The ruleset is double-buffered: userspace writes the
 * inactive slot of xrl_rulesets, then flips active_ruleset with one 32-bit
 * store, so a packet sees either the old policy or the new one, never a mix.
 */
struct xrl_config {
	__u32 active_ruleset;     /* 0 or 1: slot of xrl_rulesets in force */
	__u32 allow_v4_n;         /* entries in each list; 0 skips the lookup */
	__u32 allow_v6_n;
	__u32 deny_v4_n;
	__u32 deny_v6_n;
	__u32 epoch;              /* bumped on every change of rules or lists:
	                           * per-CPU refusal cache entries of an older
	                           * epoch are ignored */
	__u64 event_interval_ns;  /* min gap between samples per source per CPU */
	__u32 event_interval_j;   /* the same in jiffies (set by userspace) */
	__u32 prog_id;            /* the attached xrl program, written at attach:
	                           * how a process without CAP_SYS_ADMIN (which
	                           * cannot look programs up by id) knows its own */
};
_Static_assert(sizeof(struct xrl_config) == 40, "xrl_config layout");

/* ---- rules (ARRAY, 2 entries of struct xrl_ruleset) -------------------- */

struct xrl_port_range {
	__u16 lo;                 /* host byte order, inclusive */
	__u16 hi;                 /* host byte order, inclusive */
};

struct xrl_rule {
	/* Token bucket as GCRA (include/xrl_gcra.h): one token every emit_ns,
	 * at most burst tokens ahead. */
	__u64 emit_ns;            /* ns per token, >= 1 */
	__u64 tau_ns;             /* emit_ns * burst */
	__u32 id;                 /* stable id, part of the bucket key, != 0 */
	__u8  proto;              /* enum xrl_proto */
	__u8  tcp_class;          /* enum xrl_tcp_class */
	__u8  action;             /* enum xrl_action */
	__u8  n_ports;            /* used entries of ports[]; 0 = any port */
	__u8  key_plen4;          /* source prefix length of the key, 0..32 */
	__u8  key_plen6;          /* source prefix length of the key, 0..128 */
	__u8  dst_family;         /* 0 = any destination, else enum xrl_family */
	__u8  dst_plen;           /* destination prefix length */
	__u32 key_mask4;          /* network byte order, from key_plen4 */
	__u32 key_mask6[4];       /* network byte order, from key_plen6 */
	__u32 dst_mask[4];        /* network byte order, from dst_plen */
	__u32 dst[4];             /* network byte order, host bits zero; v4 in [0] */
	struct xrl_port_range ports[XRL_MAX_PORT_RANGES];
	__u32 lease_max;          /* most tokens one CPU may lease per jiffy:
	                           * min(31, burst / (2 x CPUs), tokens a jiffy
	                           * earns / 32); 0 = never */
	__u8  clock_fine;         /* 1: this rule's buckets run on
	                           * bpf_ktime_get_ns (its burst is shorter than
	                           * two jiffies of tokens); 0: on jiffies */
	__u8  syn_cookies;        /* enum xrl_syn_cookies; the program reads
	                           * only XRL_COOKIES_LIVE */
	__u8  pad[2];
	/* Aggregate cap (docs/design.md, "Aggregate caps"): what reaches the
	 * rule's buckets and is admitted there is also charged to one of two
	 * rule-wide GCRA buckets. Any source draws on the open one; vouched
	 * sources (xrl_vouch) first on the reserved one. Together at most the
	 * aggregate rate and burst. */
	__u64 agg_emit_ns;        /* open share: ns per token; 0 = no cap */
	__u64 agg_tau_ns;         /* agg_emit_ns * its burst */
	__u64 agg_vemit_ns;       /* reserved share: ns per token; 0 = none */
	__u64 agg_vtau_ns;        /* agg_vemit_ns * its burst */
};
_Static_assert(sizeof(struct xrl_rule) == 152, "xrl_rule layout");

struct xrl_ruleset {
	__u32 n_rules;            /* used entries of rules[] */
	__u32 generation;         /* bumped by userspace on every apply */
	struct xrl_rule rules[XRL_MAX_RULES];
};

/*
 * xrl_meta (ARRAY, 2 entries, parallel to xrl_rulesets): what the program
 * does not need but a reader of the pinned maps does when the daemon is
 * down: the rule names. Never read by the program.
 */
struct xrl_ruleset_meta {
	char names[XRL_MAX_RULES][XRL_RULE_NAME_LEN]; /* NUL-terminated */
};

/* ---- buckets ---------------------------------------------------------- */

/*
 * Key of both the shared GCRA state and the per-CPU refusal cache: the rule
 * and the source masked to the rule's key prefix (host bits zeroed).
 */
struct xrl_bucket_key {
	__u32 rule_id;            /* xrl_rule.id */
	__u8  family;             /* enum xrl_family */
	__u8  plen;               /* prefix length the address was masked to */
	__u16 clock;              /* xrl_rule.clock_fine: the clock the TAT is
	                           * on, so a rule that changes clocks on reload
	                           * starts fresh buckets instead of misreading */
	__u32 addr[4];            /* network byte order, v4 in [0], rest zero */
};
_Static_assert(sizeof(struct xrl_bucket_key) == 24, "xrl_bucket_key layout");

/*
 * xrl_buckets (LRU_HASH, shared by all CPUs) holds one __u64 per key: the
 * GCRA theoretical arrival time on the program's clock (jiffies x tick ns,
 * or CLOCK_MONOTONIC ns with the fine clock), advanced only by
 * compare-and-swap so concurrent CPUs never admit more than the rule allows.
 *
 * xrl_refused (PERCPU_ARRAY, direct-mapped by a hash of the packet's
 * signature) holds the hot refusal state, so that a flood's refusals touch
 * only this CPU's memory and no helper: "packets like this one are refused
 * until jiffy J". A slot holds the signature it was written for; another
 * signature hashing there simply replaces it (the cost is one slow path).
 *
 * The signature is what the verdict depends on: sig[0] the addresses of an
 * IPv4 packet (source | destination << 32) or the first half of an IPv6
 * source; sig[1] the rest (XRL_SIG_* below) with the policy epoch in its
 * high half; sig[2..4] the rest of an IPv6 source and its destination,
 * zero for IPv4. An IPv4 refusal compares two words, an IPv6 one five.
 * What a refusal or a lease admit reads is in the first 64 bytes.
 */
#define XRL_SIG_SYN    (1ULL << 24)  /* a SYN without ACK */
#define XRL_SIG_V6     (1ULL << 25)
#define XRL_SIG_PORTS  (1ULL << 26)  /* the ports were read */
#define XRL_SIG_LAYOUT (1ULL << 30)  /* this layout (bits 30-31 tell it; the
				      * one before set bit 31, and its slots
				      * had no ctr_idx): a slot of another
				      * (pinned maps outlive a program) never
				      * matches */
struct xrl_refused {
	__u64 sig[5];             /* see above */
	__u64 until_j;            /* refuse from this slot until this jiffy */
	__u64 last_event_j;       /* last sample sent for it on this CPU */
	__u32 suppressed;         /* refusals since that sample */
	__u32 rule_slot;          /* the rule's slot, for counters */
	/* admission lease (see docs/design.md): tokens this CPU took from the
	 * shared bucket ahead of demand, spendable during jiffy seen_j only */
	__u64 seen_j;             /* the jiffy the counts below are for */
	__u32 seen_n;             /* admits of this signature in seen_j */
	__u32 prev_n;             /* admits in the jiffy before seen_j */
	__u32 lease;              /* leased tokens left for seen_j */
	__u32 ctr_idx;            /* the rule's xrl_rule_stats index (the
				   * epoch in sig fixes its ruleset) */
	struct xrl_bucket_key key;/* the rule's bucket, for samples */
	__u64 pad2;
};
_Static_assert(sizeof(struct xrl_refused) == 120, "xrl_refused layout");

/* Allowlists of up to XRL_ALLOW_SMALL prefixes per family, mirrored from
 * the LPM tries and checked inline (an LPM lookup costs a helper call). */
struct xrl_allow_small {
	__u32 n4, n6;
	struct { __u32 addr, mask; } v4[XRL_ALLOW_SMALL];       /* network order */
	struct { __u32 addr[4], mask[4]; } v6[XRL_ALLOW_SMALL]; /* network order */
};

/* ---- SYN cookies ------------------------------------------------------ */

/*
 * The kernel accepts a cookie ACK on a listener only if that listener sent a
 * cookie itself in the last two minutes (tcp_synq_no_recent_overflow). So
 * one SYN per destination port every XRL_COOKIE_PRIME_S seconds is passed to
 * the kernel, which (net.ipv4.tcp_syncookies = 2) answers it with a cookie of
 * its own. xrl_cookie_prime (ARRAY, 2 x 65536 entries, key = destination
 * port in host order, + 0x10000 for IPv6) holds, per port, the jiffy of the
 * last primer (low 32 bits) and the xrl_cookie.prime_gen it was sent in
 * (high 32): a new listener (a restarted application) makes xrld bump the
 * generation, and the port's next SYN with a good checksum primes it.
 */
#define XRL_COOKIE_PRIME_S   30

/*
 * xrl_cookie (ARRAY, 1 entry, pinned): xrl's own SYN cookie
 * (include/xrl_syncookie.h) and what the SYN-ACK offers, written by
 * userspace, read by the program on every SYN and ACK a cookie rule sees.
 * own = 0 is the kernel's cookie path (bpf_tcp_raw_*_syncookie, the sysctls
 * and the primer below): kernels without bpf_sk_assign_tcp_reqsk.
 */
struct xrl_cookie_key {
	__u64 k[2];               /* SipHash key, from getrandom */
	__u64 made_ns;            /* CLOCK_MONOTONIC when made; 0: never */
};

struct xrl_cookie_cfg {
	struct xrl_cookie_key key[2];
	__u8  key_id;             /* the key new cookies use */
	__u8  own;                /* 1: xrl's cookies, the TC program completes */
	__u8  opts;               /* XRL_CKO_*: what the kernel lets a
	                           * connection have (its sysctls) */
	__u8  wscale;             /* the window scale the SYN-ACK offers */
	__u16 mss4;               /* the MSS it offers: the interface's MTU - 40 */
	__u16 mss6;               /* MTU - 60, at least 1220 */
	__u32 prime_gen;          /* the kernel's path: bumped by xrld when a
	                           * listener on a cookie port is new, so that
	                           * every port's next good SYN primes it */
	__u32 pad;
};
_Static_assert(sizeof(struct xrl_cookie_cfg) == 64, "xrl_cookie_cfg layout");

enum {
	XRL_CKO_SACK   = 1,       /* net.ipv4.tcp_sack */
	XRL_CKO_WSCALE = 2,       /* net.ipv4.tcp_window_scaling */
	XRL_CKO_TS     = 4,       /* net.ipv4.tcp_timestamps */
	XRL_CKO_ECN    = 8,       /* net.ipv4.tcp_ecn (1 or 2: accept a peer's) */
};

/*
 * What the XDP program tells the TC program about an ACK whose xrl cookie
 * it checked (XDP metadata, in front of the frame): the options that the
 * handshake agreed, for bpf_sk_assign_tcp_reqsk, and where the headers
 * are. Host order unless said.
 */
struct xrl_ck_meta {
	__u32 tsval;              /* the ACK's TSval (the client's clock) */
	__u32 tsecr;              /* its echo of our TSval */
	__u16 mss;                /* the client's MSS, from the cookie */
	__u16 l4_off;             /* of the TCP header, from the frame start */
	__u16 l3_off;             /* of the IP header */
	__u8  family;             /* enum xrl_family */
	__u8  snd_wscale;         /* the client's; XRL_CK_WSCALE_MASK: none */
	__u8  rcv_wscale;         /* ours, as the SYN-ACK offered it */
	__u8  flags;              /* XRL_CKO_SACK | _TS | _ECN agreed */
	__u16 magic;              /* XRL_CK_META_MAGIC */
};
_Static_assert(sizeof(struct xrl_ck_meta) == 20, "xrl_ck_meta layout");
#define XRL_CK_META_MAGIC 0x78c4

/*
 * xrl_sysctl (ARRAY, 1 entry, pinned; userspace only): the sysctls that
 * cookies need (net.ipv4.tcp_syncookies = 2, tcp_timestamps = 2), as they
 * were before xrl changed them in the interface's network namespace, so
 * that a restarted daemon or `detach` restores them (user/lib/syncookie.c).
 */
struct xrl_sysctl_saved {
	__u64 netns_dev;          /* st_dev, st_ino of /proc/self/ns/net where */
	__u64 netns_ino;          /* they were changed */
	__s32 syncookies;         /* the value before xrl set 2 */
	__s32 timestamps;         /* the value before xrl set 2 */
	__u32 held;               /* 1: xrl set them and owes the restore */
	__u32 pad;
};
_Static_assert(sizeof(struct xrl_sysctl_saved) == 32, "xrl_sysctl_saved layout");

/*
 * Vouched sources: prefixes that proved themselves. An aggregate cap
 * reserves a share for them. The key is the source masked to
 * XRL_VOUCH_PLEN4 / XRL_VOUCH_PLEN6: one entry per /24 or /48, so the
 * vouches of a network's clients share it. Each origin has its own space,
 * so that one cannot shorten or push out another's:
 *
 *   xrl_vouch     LRU_HASH, XRL_VOUCH_DEFAULT: the automatic vouches (a
 *                 cookie-verified admit, origin COOKIE; the identity tier,
 *                 origin IDENTITY). Anyone who can get admitted can fill it,
 *                 so it is LRU: a flood pushes out the least recent.
 *   xrl_vouch_op  HASH, XRL_VOUCH_OP_MAX (+1, the marker below): an
 *                 operator's word (origin RUNTIME). Never evicted; a full
 *                 table refuses the add (ENOSPC to the operator). Nothing
 *                 but an operator verb writes it.
 *
 * The program treats a prefix as vouched when either space holds an
 * unexpired entry for it.
 *
 * xrl_vouch_op also holds one entry that is not a vouch: the key with
 * family 0 (XRL_VOUCH_OP_MARK) records in expires_ns the id of the program
 * last attached that reads xrl_vouch_op. A program kept attached across an
 * upgrade that predates the map reads only xrl_vouch, and userspace then
 * mirrors operator vouches there (user/lib/loader.c) until one is attached
 * that reads both. The program never looks that key up (family is 4 or 6).
 */
#define XRL_VOUCH_OP_MARK    0
#define XRL_VOUCH_PLEN4      24
#define XRL_VOUCH_PLEN6      48
#define XRL_VOUCH_TTL_S      600    /* a cookie-verified admit vouches this long */

struct xrl_vouch_key {
	__u32 family;             /* enum xrl_family */
	__u32 addr[4];            /* network byte order, masked; v4 in [0] */
};
_Static_assert(sizeof(struct xrl_vouch_key) == 20, "xrl_vouch_key layout");

struct xrl_vouch_val {
	__u64 expires_ns;         /* CLOCK_MONOTONIC ns (bpf_ktime_get_ns) */
	__u32 origin;             /* enum xrl_origin: COOKIE or IDENTITY in
	                           * xrl_vouch, RUNTIME in xrl_vouch_op */
	__u32 pad;
};
_Static_assert(sizeof(struct xrl_vouch_val) == 16, "xrl_vouch_val layout");

/* ---- allow / deny (LPM_TRIE, one per family) ---------------------------- */

struct xrl_lpm_v4 {
	__u32 prefixlen;          /* bits */
	__u32 addr;               /* network byte order */
};

struct xrl_lpm_v6 {
	__u32 prefixlen;          /* bits */
	__u32 addr[4];            /* network byte order */
};

enum xrl_origin {
	XRL_ORIGIN_POLICY  = 0,   /* from the policy file: replaced on apply */
	XRL_ORIGIN_RUNTIME = 1,   /* added by an operator: kept across applies */
	XRL_ORIGIN_PENALTY = 2,   /* deny entries earned by escalation */
	XRL_ORIGIN_COOKIE  = 3,   /* vouches earned by a cookie-verified admit */
	XRL_ORIGIN_FLEET   = 4,   /* deny entries of another instance of the fleet */
	XRL_ORIGIN_IDENTITY = 5,  /* vouches the identity tier wrote (an admit
	                           * by an http rule with vouch: true) */
};

/* Allowlist value; the program only tests for presence. */
struct xrl_allow_val {
	__u64 added_ns;           /* CLOCK_MONOTONIC ns */
	__u32 origin;             /* enum xrl_origin */
	__u32 pad;
};

/* Denylist value. */
struct xrl_deny_val {
	__u64 expires_ns;         /* CLOCK_MONOTONIC ns; 0 = never */
	__u32 origin;             /* enum xrl_origin; informational */
	__u32 plen;               /* the entry's own prefix length: an expired
	                           * entry sends the program on to the shorter
	                           * ones that may cover it */
};

/* ---- counters (PERCPU_ARRAY) ------------------------------------------- */

/* xrl_rule_stats: 2 * XRL_MAX_RULES entries, [ruleset slot][rule slot]. */
struct xrl_rule_ctr {
	__u64 pkts[XRL_V_MAX];
	__u64 bytes[XRL_V_MAX];
	__u64 syns;               /* SYNs (no ACK) the rule matched, whatever
	                           * became of them (cookie SYN-ACKs included):
	                           * the rate `syn_cookies: auto` watches */
};

/* xrl_global_stats: 1 entry. */
struct xrl_global_ctr {
	__u64 c[XRL_G_MAX];
};

/* ---- refusal samples (RINGBUF) ----------------------------------------- */

struct xrl_event {
	__u64 ts_ns;              /* the program's clock, ns: compare only with
	                           * other samples' ts_ns */
	__u32 rule_id;
	__u32 count;              /* refusals this sample stands for (>= 1) */
	__u8  family;
	__u8  plen;
	__u8  action;             /* enum xrl_action of the rule */
	__u8  tcp_flags;          /* byte 13 of the sampled packet's TCP header */
	__u32 rule_slot;          /* index into the ruleset */
	__u32 addr[4];            /* source prefix, network byte order */
	/* The sampled packet itself: xrld asks the kernel whether it belongs
	 * to a connection the host has established, which proves its source
	 * (penalty: verified). */
	__u32 src[4];             /* network byte order, v4 in [0] */
	__u32 dst[4];             /* network byte order, v4 in [0] */
	__u16 sport;              /* network byte order, valid if has_ports */
	__u16 dport;              /* network byte order, valid if has_ports */
	__u8  proto;              /* IANA L4 protocol */
	__u8  has_ports;
	__u8  proof;              /* XRL_EV_PROOF_*: what the program knows */
	__u8  pad2;
};
_Static_assert(sizeof(struct xrl_event) == 80, "xrl_event layout");

/* The sampled packet is an ACK whose xrl cookie checked out with its
 * timestamp echo (54 bits): its source got our SYN-ACK, so it exists. Not
 * without timestamps, nor on the kernel's path: a 22- or 24-bit cookie is a
 * guess a fast forger lands every few seconds, in anyone's name. */
#define XRL_EV_PROOF_COOKIE 1

#endif /* XRL_ABI_H */
