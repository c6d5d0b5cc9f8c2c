/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * verbs.h - the control protocol's verbs as one table, read by xrlctl (which
 * parses and validates a command line with it, and prints each verb's
 * usage) and by xrld (which parses what arrives on its socket with the same
 * walker, then calls its handler for the verb's id). A verb is a row: its
 * words, its arguments, its options and its help, so usage cannot drift
 * from what is accepted (bpftool's cmd_select, xdp-tools' cmds[]).
 *
 * Each argument of a row names the field of its verb's struct (union
 * xrl_verb_args) the walker fills, as xdp-tools' DEFINE_OPTION does: a
 * handler reads c->a.top.n.n, never an index.
 */
#ifndef XRL_VERBS_H
#define XRL_VERBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "xrl.h"

enum xrl_verb_id {
	XRL_VERB_STATUS = 0,
	XRL_VERB_ATTACH,
	XRL_VERB_DETACH,
	XRL_VERB_POLICY_CHECK,
	XRL_VERB_POLICY_APPLY,
	XRL_VERB_POLICY_SHOW,
	XRL_VERB_STATS,
	XRL_VERB_TOP,
	XRL_VERB_ALLOW_ADD,
	XRL_VERB_ALLOW_DEL,
	XRL_VERB_ALLOW_LIST,
	XRL_VERB_DENY_ADD,
	XRL_VERB_DENY_DEL,
	XRL_VERB_DENY_LIST,
	XRL_VERB_SHADOW,
	XRL_VERB_PENALTY_LIST,
	XRL_VERB_PENALTY_DEL,
	XRL_VERB_COOKIES,
	XRL_VERB_VOUCH_ADD,
	XRL_VERB_VOUCH_DEL,
	XRL_VERB_VOUCH_LIST,
	/* "override list|del" before "override RULE KEY": the walker takes
	 * the first row whose words match */
	XRL_VERB_OVERRIDE_LIST,
	XRL_VERB_OVERRIDE_DEL,
	XRL_VERB_OVERRIDE,
	XRL_VERB_RECOMMEND,
	XRL_VERB_MAX
};

/* What a value must be; each is checked by the parser, not by the handlers. */
enum xrl_arg_type {
	XRL_ARG_NAME = 0, /* any word: an interface, a rule */
	XRL_ARG_FILE,	  /* a path, read by xrlctl */
	XRL_ARG_CIDR,	  /* xrl_prefix_parse */
	XRL_ARG_DURATION, /* xrl_duration_parse, above zero */
	XRL_ARG_COUNT,	  /* a whole number >= 1 */
	XRL_ARG_SECONDS,  /* a number > 0 (fractions allowed) */
	XRL_ARG_MODE,	  /* native | skb | auto */
	XRL_ARG_ONOFF,	  /* on | off */
	XRL_ARG_COOKIES,  /* on | auto | off */
	XRL_ARG_VOUCH,	  /* a CIDR at least /24 (IPv4) or /48 (IPv6) long */
	XRL_ARG_RATE,	  /* xrl_rate_parse: "10/s", "100/min" */
	XRL_ARG_FLAG,	  /* an option without a value: given or not */
	XRL_ARG_SHARE,	  /* a percentage, 0 to 100, with or without '%': "0.1%" */
	XRL_ARG_FACTOR,	  /* a finite number >= 1: "2", "1.5" */
};

#define XRL_VERB_POS  2 /* positional arguments of a verb at most */
#define XRL_VERB_OPTS 4 /* options (--name VALUE) of a verb at most */

/*
 * An argument's value as the walker leaves it: the text as given (NULL: an
 * option left out) and, for the types that mean more than a word, what it
 * means, parsed once. Every kind starts with its text (the log of changes
 * reads it through xrl_verb_text).
 */
/* NAME, FILE, FLAG (a flag's text: its name, when given) */
struct xrl_val_text {
	const char *text;
};
/* CIDR, VOUCH */
struct xrl_val_prefix {
	const char *text;
	struct xrl_prefix p;
};
struct xrl_val_duration {
	const char *text;
	__u64 ns;
};
struct xrl_val_count {
	const char *text;
	long n;
};
struct xrl_val_seconds {
	const char *text;
	double s;
};
struct xrl_val_mode {
	const char *text;
	enum xrl_attach_mode mode;
};
struct xrl_val_onoff {
	const char *text;
	bool on;
};
struct xrl_val_cookies {
	const char *text;
	__u8 mode; /* XRL_COOKIES_* */
};
/* SHARE (x: 0..1, "0.1%" is 0.001), FACTOR (x >= 1) */
struct xrl_val_number {
	const char *text;
	double x;
};
struct xrl_val_rate {
	const char *text;
	struct xrl_rate rate;
};

/* Each verb's arguments by name, options as their --name; a verb with
 * none has no struct. */
struct xrl_args_attach {
	struct xrl_val_text iface;
	struct xrl_val_mode mode;
};
/* detach */
struct xrl_args_iface {
	struct xrl_val_text iface;
};
/* policy check, policy apply */
struct xrl_args_file {
	struct xrl_val_text file;
};
struct xrl_args_stats {
	struct xrl_val_text iface;
	struct xrl_val_seconds watch;
};
struct xrl_args_top {
	struct xrl_val_text rule;
	struct xrl_val_count n;
	struct xrl_val_seconds watch;
	struct xrl_val_text http;
};
/* allow, deny and vouch: add and del (ttl: deny add and vouch add; force:
 * deny add) */
struct xrl_args_prefix {
	struct xrl_val_prefix prefix;
	struct xrl_val_duration ttl;
	struct xrl_val_text force;
};
struct xrl_args_shadow {
	struct xrl_val_text rule;
	struct xrl_val_onoff on;
};
/* penalty del: KEY|HASH */
struct xrl_args_key {
	struct xrl_val_text key;
};
struct xrl_args_cookies {
	struct xrl_val_text rule;
	struct xrl_val_cookies mode;
};
/* override and override del */
struct xrl_args_override {
	struct xrl_val_text rule;
	struct xrl_val_text key;
	struct xrl_val_rate rate;
	struct xrl_val_count burst;
	struct xrl_val_duration ttl;
};

/* recommend RULE */
struct xrl_args_recommend {
	struct xrl_val_text rule;
	struct xrl_val_number refuse;
	struct xrl_val_number headroom;
};

union xrl_verb_args {
	struct xrl_args_attach attach;
	struct xrl_args_iface detach;
	struct xrl_args_file policy;
	struct xrl_args_stats stats;
	struct xrl_args_top top;
	struct xrl_args_prefix allow, deny, vouch;
	struct xrl_args_shadow shadow;
	struct xrl_args_key penalty;
	struct xrl_args_cookies cookies;
	struct xrl_args_override override;
	struct xrl_args_recommend recommend;
};

struct xrl_verb_arg {
	const char *name; /* "IFACE" for a positional; "--mode" for an option */
	enum xrl_arg_type type;
	const char *meta; /* an option's value in usage: "native|skb|auto"; NULL: a flag */
	bool required;	  /* an option the verb cannot do without (override --rate) */
	size_t off;	  /* its value's place in union xrl_verb_args */
};

enum {
	XRL_VERB_LOCAL = 1 << 0,      /* xrlctl does it alone; never sent to xrld */
	XRL_VERB_SENDS_FILE = 1 << 1, /* the FILE's text travels as one more argument */
	XRL_VERB_CHANGES = 1 << 2,    /* changes what xrld enforces: xrld logs who asked */
	XRL_VERB_KEYS = 1 << 3,	      /* shows the keys callers send (API keys): root's */
};

struct xrl_verb {
	enum xrl_verb_id id;
	const char *word;			/* "deny" */
	const char *sub;			/* "add"; NULL: none */
	struct xrl_verb_arg pos[XRL_VERB_POS];	/* all required, in order */
	struct xrl_verb_arg opt[XRL_VERB_OPTS]; /* all optional */
	unsigned flags;
	const char *help;
};

/* A parsed command: the values are argv's strings, already validated, and
 * what they mean, in the verb's struct of a. */
struct xrl_verb_call {
	const struct xrl_verb *v;
	union xrl_verb_args a;
	const char *text; /* XRL_VERB_SENDS_FILE, on the wire */
	bool json;	  /* --json anywhere */
	bool help;	  /* --help anywhere */
};

extern const struct xrl_verb xrl_verbs[XRL_VERB_MAX];

/*
 * Parse argv (the verb's words first; --json and --help may stand anywhere)
 * into c. wire: argv came over xrld's socket (a SENDS_FILE verb carries the
 * file's text after its positionals). Returns 0, or 2 (a usage error) with
 * err saying what was wrong. With --help, c->v is the verb (NULL when only
 * the first word was known: every verb of that word applies) and 0 returns
 * whatever else was on the line.
 */
int xrl_verb_parse(int argc, char *const *argv, bool wire, struct xrl_verb_call *c,
		   const char **word, char *err, size_t errlen);

/* The text an argument of c's verb was given as; NULL: an option left out. */
const char *xrl_verb_text(const struct xrl_verb_call *c, const struct xrl_verb_arg *a);
/* "deny add CIDR [--ttl DURATION]" into buf. */
void xrl_verb_synopsis(const struct xrl_verb *v, char *buf, size_t len);
/* Usage lines of every verb whose first word is word (NULL: all) to f. */
void xrl_verb_usage(FILE *f, const char *word);

#endif /* XRL_VERBS_H */
