/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xrld.h - the daemon's state and its parts. main.c owns one struct xrld
 * and hands it to each part: interfaces (iface.c), the `top` table
 * (top.c), penalties (penalties.c), control verbs (verbs.c) and their
 * socket (control_sock.c), metrics (metrics.c). Each part registers its
 * own fds and timers in d->loop (events.h). No part keeps a global of its
 * own except the control socket's (its clients' slots, its timer).
 */
#ifndef XRLD_H
#define XRLD_H

#include <net/if.h>
#include <pthread.h>
#include <stdbool.h>

#include "config.h"
#include "control_wire.h"
#include "events.h"
#include "report.h"
#include "verbs.h"
#include "xrl.h"

#define MAX_IFACES XRL_CFG_MAX_IFACES
#define TOP_SLOTS  (1u << 16) /* refused-source table; bounded under floods */
#define PEN_SLOTS  (1u << 16)

struct xrld;
struct xrl_http_server;
struct xrld_idp;
struct MHD_Daemon;

struct xrld_iface {
	char name[IF_NAMESIZE];
	enum xrl_attach_mode mode;
	struct xrl_handle *h;
	struct ring_buffer *rb;
	struct xrld *d;	   /* for the ring buffer's callback */
	bool from_config;
	/* a veth drops XDP_TX frames its peer cannot take: the cookie
	 * SYN-ACKs it sent against its TX drops, once a second */
	bool veth;
	__u64 tx_dropped, synacks; /* at the last tick */
	__u64 synacks_lost;	   /* TX drops while SYN-ACKs were sent */
	bool veth_read;		   /* tx_dropped and synacks hold a reading */
	/* the kernel's cookie path: the listeners on live cookie ports (their
	 * socket inodes) at the last tick */
	__u32 listen_ino[64];
	__u32 n_listen;
	bool listen_read; /* listen_ino holds a reading */
	__u64 warned_ns;
};

/* One refused source prefix of one rule on one interface, for `top`. */
struct xrld_top_ent {
	bool used;
	__u8 iface;
	__u8 family;
	__u8 plen;
	__u32 rule_id;
	__u32 addr[4];
	__u64 count; /* refusals, summed from samples */
	__u64 first_ns, last_ns;
};

/* Why a refusal sample earned no strike, or a due penalty was not made. */
enum xrld_pen_skip {
	PEN_SKIP_RULE_OFF,
	PEN_SKIP_UNVERIFIED,
	PEN_SKIP_FLOOR,
	PEN_SKIP_ALLOWLIST,
	PEN_SKIP_VOUCHED,
	PEN_SKIP_FULL,
	PEN_SKIP_FAILED,
	PEN_SKIP_MAX
};
extern const char *const pen_skip_name[PEN_SKIP_MAX];

/* Penalty state of one source prefix on one interface. */
struct xrld_pen_ent {
	bool used;
	__u8 iface;
	__u8 family;
	__u8 plen;
	__u32 addr[4];
	__u64 last_strike_ns; /* sample time of the last strike; 0 = none */
	__u32 strikes;	      /* separate windows with refusals */
	__u32 offenses;	      /* deny entries earned so far */
	__u64 last_offense_ns;
	/* penalty: verified: the window being watched, decided when it ends */
	__u64 win_start_ns; /* 0 = none open */
	bool win_proven;    /* a sample in it proved its source */
	bool win_unproven;  /* a sample in it did not: the window is void */
};

/* syn_cookies: auto, per interface and rule (cookies.c) */
struct xrld_auto {
	char rule[XRL_RULE_NAME_LEN]; /* "": unused */
	__u64 syns;		      /* the rule's SYN counter at the last tick */
	__u64 seen_ns;		      /* when it was read; 0: not yet */
	__u64 below_ns;		      /* since when under both off thresholds; 0: not */
	__u64 on_ns;		      /* since when engaged (this xrld saw it); 0: off */
	__u64 rate;		      /* SYNs a second over the last tick */
	unsigned queue_pct;	      /* the fullest accept queue on its ports */
	__u64 engaged, released;      /* transitions, for metrics */
};

/* The daemon's counters: written by the main thread, read by the metrics
 * thread without d->lock (relaxed atomics: a count, not a synchronisation). */
#define COUNT(c) __atomic_fetch_add(&(c), 1, __ATOMIC_RELAXED)
#define READ(c)	 __atomic_load_n(&(c), __ATOMIC_RELAXED)

struct xrld {
	const char *config_path;
	const char *sock_path;
	const char *pin_root;
	int pin_lock_fd; /* pin_root's flock, held while xrld runs (main.c) */
	bool foreground;
	struct xrld_config *cfg;
	struct xrld_iface ifs[MAX_IFACES];
	int n_ifs;
	char shadow_override[XRL_MAX_RULES][XRL_RULE_NAME_LEN]; /* "name" */
	int shadow_val[XRL_MAX_RULES];
	int n_override;
	struct xrld_loop *loop; /* every part registers its fds and timers (events.h) */
	struct xrld_top_ent *top;
	struct xrld_pen_ent *pen;
	__u64 top_dropped, events_seen, penalties, reloads, reload_failures;
	/* the last reload or apply (the start counts as one): 1 installed, 0
	 * refused; and the wall-clock time of the last one installed, seconds
	 * since the epoch (xrl_config_last_reload_*, as Prometheus's own) */
	__u64 last_reload_ok, last_reload_time_s;
	/* the last reload's fields that wait for a restart ("xdp.buckets
	 * 4096, metrics 127.0.0.1:9200"); "": none (iface.c) */
	char reload_note[256];
	__u64 pen_skipped[PEN_SKIP_MAX]; /* escalations not made, by reason */
	struct MHD_Daemon *mhd;
	/* the identity process (idproc.c) when an http: or fleet: section
	 * runs one; http is the same when the identity tier is configured */
	struct xrld_idp *idp;
	struct xrld_idp *http;
	struct xrld_fleet *fleet; /* the fleet, when configured (fleet.c) */
	struct xrld_auto autos[MAX_IFACES][XRL_MAX_RULES];
	struct xrld_vouchq *vq; /* the identity tier's vouches (vouch.c) */
	__u64 vouched_identity, vouch_skipped, vouch_dropped;
	const char *state_dir;	   /* --state-dir: what outlives a restart (evidence.c) */
	struct xrld_evidence *ev; /* the callers' peaks (evidence.c) */
	pthread_mutex_t lock; /* ifs[] and counters vs the metrics thread */
	volatile int stop;
};

/* ---- top.c: the `top` table of refused source prefixes ------------------ */
/* Count refusal sample e of interface ifidx in d->top. */
void xrld_top_note(struct xrld *d, int ifidx, const struct xrl_event *e);
const char *xrld_rule_name(struct xrld *d, __u32 id, char *buf, size_t len);

/* ---- penalties.c: penalty escalation onto the denylist -------------------- */
/* Refusal sample e of interface f (index ifidx): a strike, perhaps a deny. */
void xrld_penalty_note(struct xrld *d, int ifidx, struct xrld_iface *f, const struct xrl_event *e);

/* ---- iface.c: interfaces and policy ------------------------------------- */
/* Before the first attach: the 1 s timer that takes expired deny entries
 * out of every interface's maps. 0 or -errno. */
int xrld_iface_start(struct xrld *d);
struct xrld_iface *xrld_iface(struct xrld *d, const char *name);
/*
 * The pin directory, this xrld's alone while it has interfaces: two on the
 * same pins (each with its own socket) would fight over one set of maps,
 * so the second is refused before anything is touched. flock(2) on the
 * directory, taken by the first attach and held for xrld's life (the
 * identity process closes its copy: close_range at its start); made when
 * missing. 0, or -errno with err saying why.
 */
int xrld_pins_claim(struct xrld *d, char *err, size_t errlen);
/* bpffs at /sys/fs/bpf where the pins are under it and it is missing (`ip
 * netns exec` mounts a /sys of its own), as bpftool does; said. */
void xrld_bpffs_ensure(struct xrld *d);
int xrld_iface_attach(struct xrld *d, const char *name, enum xrl_attach_mode mode, bool from_config,
		      char *err, size_t errlen);
void xrld_iface_remove(struct xrld *d, int i, bool detach);
/* Push the current config's policy (with overrides) to every interface. */
int xrld_push_policy(struct xrld *d, char *err, size_t errlen);
/* Parse text (NULL: read the file name) and install it. */
int xrld_reload(struct xrld *d, const char *text, size_t len, const char *name, char *err,
		size_t errlen);

/* ---- allowlist.c: an interface's allowlist ------------------------------- */
/* Does p overlap f's allowlist, either way round (covered or covering)? */
bool xrld_allow_overlaps(struct xrld_iface *f, const struct xrl_prefix *p);

/* ---- notify.c: systemd's readiness protocol -------------------------------- */
/* One sd_notify(3) message ("READY=1", ...) to $NOTIFY_SOCKET, if set. */
int xrld_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* xrld_reload between RELOADING=1 and READY=1. */
int xrld_reload_notified(struct xrld *d, const char *text, size_t len, const char *name, char *err,
			 size_t errlen);

/* ---- verbs.c: the control verbs ------------------------------------------ */
/* Handle one decoded request into b; returns the exit code for xrlctl.
 * A request that changes what is enforced is logged with who (the
 * caller's credentials; NULL: unknown) and how it ended. */
struct ucred;
int xrld_handle(struct xrld *d, const struct ucred *who, int argc, char **argv, struct xrl_buf *b);

/* ---- verbs_http.c: the verbs' identity-tier parts -------------------------- */
/* null without an http: section */
json_t *xrld_http_status_json(struct xrld *d);
void xrld_http_status_text(struct xrld *d, struct xrl_buf *b);
json_t *xrld_http_stats_json(struct xrld *d);
int xrld_http_top(struct xrld *d, const char *rule, long n, bool json, struct xrl_buf *b, char *err,
		  size_t errlen);
/* recommend RULE: the callers' peaks over the window and the limit they
 * recommend (xrl_peaks_recommend), as a table or JSON. */
int xrld_http_recommend(struct xrld *d, const char *rule, double refuse, double headroom, bool json,
			struct xrl_buf *b, char *err, size_t errlen);
int xrld_http_override_list(struct xrld *d, bool json, struct xrl_buf *b, char *err, size_t errlen);
/* override RULE KEY ... and override del RULE KEY; -errno with err. */
int xrld_http_override(struct xrld *d, const struct xrl_verb_call *c, char *err, size_t errlen);

/* ---- control_sock.c: the control socket, xrlctl's way in ---------------- */
/* Listen on d->sock_path and serve xrlctl from d's loop (clients past
 * their deadline dropped by a timer of its own). 0 or -errno. */
int xrld_control_listen(struct xrld *d);
/* At exit: the listener closed, the socket file removed. */
void xrld_control_close(struct xrld *d);

/* ---- fleet.c: the fleet's denials and the fleet's thread ------------------- */
struct xrld_fleet;
/* After the identity tier started: the fleet's thread, its entries applied
 * on this loop (never blocking it on Redis). 0, or -errno. */
int xrld_fleet_start(struct xrld *d);
void xrld_fleet_stop(struct xrld *d);
/* A deny made here (an operator's, or a verified penalty's): to the fleet.
 * 0, or -ERANGE for an add wider than the penalty floor (stays here). */
/*
 * Would a deny of p cut off what no denial should, unless the operator
 * insists (deny add --force)? Wider than the penalty floor, this host's
 * own addresses, fleet.protect, the fleet's Redis, an allowlist entry or a
 * vouched source, either way round: 1 with why said, else 0. The fleet's
 * entries meet the same bounds, each counted (fleet.c).
 */
int xrld_deny_guard(struct xrld *d, const struct xrl_prefix *p, char *why, size_t len);
int xrld_fleet_deny_out(struct xrld *d, const struct xrl_prefix *p, __u64 ttl_ns, bool add);
/* `status` lines or fields ({} when there is no fleet). */
void xrld_fleet_status(struct xrld *d, struct xrl_buf *b, json_t *o);
/* The fleet's counters from the identity process (false: none, or it
 * does not answer); called without d->lock. */
struct xrl_fleet_stats;
bool xrld_fleet_stats_get(struct xrld *d, struct xrl_fleet_stats *st);
/* Its families, st as read (NULL: zeros). */
void xrld_fleet_metrics(struct xrld *d, struct xrl_buf *b, const struct xrl_fleet_stats *st);
struct xrl_fleet_entry;
/* ---- cookies.c: syn_cookies auto and run-time modes ---------------------- */
/* Its 1 s timer: measure each auto rule, engage or let go of its cookies.
 * 0 or -errno. */
int xrld_cookies_start(struct xrld *d);
const char *xrld_cookies_word(__u8 mode);
/* `xrlctl status`: interface i's rules and their SYN-cookie modes, as a
 * text line into b, or as {rule: mode} into o (one of them NULL). */
void xrld_cookies_status(struct xrld *d, int i, struct xrl_buf *b, json_t *o);
/* {path: xrl|kernel, tc_attached, veth, veth_synacks_lost} of interface i. */
json_t *xrld_cookie_path_json(struct xrld *d, int i);
/* Prometheus families of cookies and auto (called with d->lock held). */
void xrld_cookies_metrics(struct xrld *d, struct xrl_buf *b);

/* ---- idproc.c: the identity process --------------------------------------- */
/* After the privileges are dropped: the child for cfg's http: and fleet:
 * sections (none: nothing), given text, the policy as read; and the 1 s
 * timer that restarts it (a child a later reload brings too). */
/* Is the caller the identity process (its pid, or the user xrld gave it;
 * never root)? It may be in the group that reads the control socket, yet
 * is refused every verb. */
struct ucred;
bool xrld_idp_user(const struct xrld *d, const struct ucred *who);
int xrld_idp_start(struct xrld *d, const char *text, size_t len, char *err, size_t errlen);
void xrld_idp_stop(struct xrld *d);
/* Can the identity tier take next (its text)? 0 or -errno with err. */
int xrld_idp_reload_check(struct xrld *d, const struct xrld_config *next, const char *text,
			  size_t len, char *err, size_t errlen);
/* d->cfg was old, and is now the one parsed from text. */
void xrld_idp_reload(struct xrld *d, const struct xrld_config *old, const char *text, size_t len);
/* A call {"op": ...} (q is taken): its result, or NULL with *rc (if
 * given; -ESRCH: restarting, -ENOENT: none) and err. */
json_t *xrld_idp_call(struct xrld *d, json_t *q, const char *payload, size_t plen, int *rc,
		      char *err, size_t errlen);
/* This host's deny entry for the fleet, never waited for: 0 or -errno. */
int xrld_idp_publish(struct xrld *d, const struct xrl_fleet_entry *e);
json_t *xrld_idp_status_json(struct xrld *d);
void xrld_idp_metrics(struct xrld *d, struct xrl_buf *b);
/* The running identity process's /proc/PID, open (O_DIRECTORY), or -1:
 * none runs, or it was reaped meanwhile (never another process's). */
int xrld_idp_proc_dir(struct xrld *d);

/* ---- vouch.c: the identity tier's vouches into the packet tier -------------- */
/* After the identity tier started: its admits by vouch: true rules queued
 * for the main loop, which writes them (0 without an identity tier). */
int xrld_vouch_start(struct xrld *d);
void xrld_vouch_metrics(struct xrld *d, struct xrl_buf *b);
/* Interface i's vouch spaces: a text line into b, or fields into o. */
void xrld_vouch_status(struct xrld *d, int i, struct xrl_buf *b, json_t *o);

/* ---- metrics.c: Prometheus text ----------------------------------------- */
int xrld_metrics_start(struct xrld *d, const char *host, int port);

/* ---- evidence.c: callers' peaks for recommend -------------------------- */
#define XRLD_EV_EPOCH_S	  10		    /* an epoch of the callers' peaks */
#define XRLD_EV_WINDOW_S  (7 * 24 * 3600ULL) /* kept this long by default */
#define XRLD_STATE_DIR_DEFAULT "/var/lib/xrl"
struct xrl_peaks;
/* Read STATE_DIR/peaks.json (moved aside when it does not read) and fold
 * the identity tier's callers every epoch. 0 or -ENOMEM. */
int xrld_evidence_start(struct xrld *d, const char *state_dir, __u64 window_s);
/* The last epoch folded and the file written. */
void xrld_evidence_stop(struct xrld *d);
/* The epoch up to now, folded (main loop). 0 or -errno. */
int xrld_evidence_fold(struct xrld *d);
int xrld_evidence_rule(struct xrld *d, const char *rule, struct xrl_peaks *out, __u64 *window_s,
		       __u64 *untracked);
void xrld_evidence_metrics(struct xrld *d, struct xrl_buf *b);
/* `xrlctl shadow RULE off`: rule armed again, with a fresh window. */
void xrld_evidence_rearm(struct xrld *d, const char *rule);
/* A new identity process: the disarmed rules in shadow again. */
void xrld_evidence_replay(struct xrld *d);
/* [{"rule","reason","since"}]: the rules disarmed now. */
json_t *xrld_evidence_disarmed_json(struct xrld *d);

#endif /* XRLD_H */
