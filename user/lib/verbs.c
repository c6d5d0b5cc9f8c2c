// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * verbs.c - the control protocol's verb table and the one walker that
 * parses a command line (xrlctl) or a request (xrld) against it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs.h"
#include "xrl.h"

/* The value struct each type of argument fills (verbs.h). */
#define VAL_NAME     struct xrl_val_text
#define VAL_FILE     struct xrl_val_text
#define VAL_CIDR     struct xrl_val_prefix
#define VAL_VOUCH    struct xrl_val_prefix
#define VAL_DURATION struct xrl_val_duration
#define VAL_COUNT    struct xrl_val_count
#define VAL_SECONDS  struct xrl_val_seconds
#define VAL_MODE     struct xrl_val_mode
#define VAL_ONOFF    struct xrl_val_onoff
#define VAL_COOKIES  struct xrl_val_cookies
#define VAL_RATE     struct xrl_val_rate
#define VAL_FLAG     struct xrl_val_text
#define VAL_SHARE    struct xrl_val_number
#define VAL_FACTOR   struct xrl_val_number

/*
 * Where an argument of type T lands: field f of the verb's struct S in
 * union xrl_verb_args. The _Generic has one association, so a row whose
 * field is not of the value struct T fills does not build.
 */
#define AT(S, f, T) \
	(offsetof(union xrl_verb_args, S.f) + \
	 0 * sizeof(char[_Generic(((union xrl_verb_args *)0)->S.f, VAL_##T : 1)]))
#define POS(n, T, S, f) \
	{ \
		.name = (n), .type = XRL_ARG_##T, .off = AT(S, f, T) \
	}
/* an option the verb needs: shown without brackets, a usage error when left out */
#define OPT_REQ(n, T, m, S, f) \
	{ \
		.name = (n), .type = XRL_ARG_##T, .meta = (m), .off = AT(S, f, T), .required = true \
	}
#define OPT(n, T, m, S, f) \
	{ \
		.name = (n), .type = XRL_ARG_##T, .meta = (m), .off = AT(S, f, T) \
	}

/*
 * The rows of a set of sources xrld keeps (allow, deny, vouch): NOUN add ARG
 * [the options after the helps], NOUN del ARG, NOUN list. S is the set's
 * struct in union xrl_verb_args.
 */
/* clang-format off */
#define SET_VERBS(ID, S, noun, arg, T, add_help, del_help, list_help, ...) \
	[XRL_VERB_##ID##_ADD] = { XRL_VERB_##ID##_ADD, noun, "add", { POS(arg, T, S, prefix) }, \
				  __VA_ARGS__, XRL_VERB_CHANGES, add_help }, \
	[XRL_VERB_##ID##_DEL] = { XRL_VERB_##ID##_DEL, noun, "del", { POS(arg, T, S, prefix) }, \
				  {}, XRL_VERB_CHANGES, del_help }, \
	[XRL_VERB_##ID##_LIST] = { XRL_VERB_##ID##_LIST, noun, "list", {}, {}, 0, list_help }
/* clang-format on */

/* One row a verb; kept as a table by the formatter. */
/* clang-format off */
const struct xrl_verb xrl_verbs[XRL_VERB_MAX] = {
	[XRL_VERB_STATUS] = { XRL_VERB_STATUS, "status", NULL, {}, {}, 0,
		"daemon, interfaces and the identity tier (from the pins if xrld is down)" },
	[XRL_VERB_ATTACH] = { XRL_VERB_ATTACH, "attach", NULL, { POS("IFACE", NAME, attach, iface) },
		{ OPT("--mode", MODE, "native|skb|auto", attach, mode) }, XRL_VERB_CHANGES,
		"attach the program to IFACE (native by default)" },
	[XRL_VERB_DETACH] = { XRL_VERB_DETACH, "detach", NULL,
		{ POS("IFACE", NAME, detach, iface) }, {},
		XRL_VERB_CHANGES, "remove the program and its pinned state" },
	[XRL_VERB_POLICY_CHECK] = { XRL_VERB_POLICY_CHECK, "policy", "check",
		{ POS("FILE", FILE, policy, file) }, {}, XRL_VERB_LOCAL,
		"validate a policy file and summarise it" },
	[XRL_VERB_POLICY_APPLY] = { XRL_VERB_POLICY_APPLY, "policy", "apply",
		{ POS("FILE", FILE, policy, file) }, {}, XRL_VERB_SENDS_FILE | XRL_VERB_CHANGES,
		"atomically replace the running policy" },
	[XRL_VERB_POLICY_SHOW] = { XRL_VERB_POLICY_SHOW, "policy", "show", {}, {}, 0,
		"the running policy and the shadow overrides" },
	[XRL_VERB_STATS] = { XRL_VERB_STATS, "stats", NULL, {},
		{ OPT("--iface", NAME, "IF", stats, iface),
		  OPT("--watch", SECONDS, "SECONDS", stats, watch) },
		XRL_VERB_LOCAL,
		"counters per rule: packet tier from the pins, HTTP rules from xrld (--watch: live)" },
	[XRL_VERB_TOP] = { XRL_VERB_TOP, "top", NULL, {},
		{ OPT("--rule", NAME, "NAME", top, rule), OPT("-n", COUNT, "N", top, n),
		  OPT("--watch", SECONDS, "SECONDS", top, watch),
		  OPT("--http", NAME, "RULE", top, http) }, 0,
		"top refused source prefixes (--http RULE: an HTTP rule's most refused keys)" },
	SET_VERBS(ALLOW, allow, "allow", "CIDR", CIDR, "never limit CIDR",
		"take CIDR off the allowlist", "the allowlist (from the pins if xrld is down)", {}),
	SET_VERBS(DENY, deny, "deny", "CIDR", CIDR,
		"drop everything from CIDR (for DURATION; without it, until removed)",
		"take CIDR off the denylist",
		"the denylist with origins and expiry (from the pins if xrld is down)",
		{ OPT("--ttl", DURATION, "DURATION", deny, ttl),
		  OPT("--force", FLAG, NULL, deny, force) }),
	[XRL_VERB_SHADOW] = { XRL_VERB_SHADOW, "shadow", NULL,
		{ POS("RULE", NAME, shadow, rule), POS("on|off", ONOFF, shadow, on) }, {},
		XRL_VERB_CHANGES,
		"count a packet or HTTP rule's refusals without enforcing them (until xrld restarts)" },
	[XRL_VERB_PENALTY_LIST] = { XRL_VERB_PENALTY_LIST, "penalty", "list", {}, {}, 0,
		"identity-tier key penalties: rule, key hash, level, time left" },
	[XRL_VERB_PENALTY_DEL] = { XRL_VERB_PENALTY_DEL, "penalty", "del",
		{ POS("KEY|HASH", NAME, penalty, key) }, {}, XRL_VERB_CHANGES,
		"lift a key's penalties (in a fleet: on every instance); xrlctl sends the key's hash" },
	[XRL_VERB_COOKIES] = { XRL_VERB_COOKIES, "cookies", NULL,
		{ POS("RULE", NAME, cookies, rule), POS("on|auto|off", COOKIES, cookies, mode) }, {},
		XRL_VERB_CHANGES,
		"a rule's SYN cookies now, without a reload (until the next policy apply or reload)" },
	SET_VERBS(VOUCH, vouch, "vouch", "PREFIX", VOUCH,
		"vouch for PREFIX's /24 or /48 (for DURATION; without it, until removed)",
		"take PREFIX's /24 or /48 off the vouched sources",
		"vouched sources with origin and time left (from the pins if xrld is down)",
		{ OPT("--ttl", DURATION, "DURATION", vouch, ttl) }),
	[XRL_VERB_OVERRIDE_LIST] = { XRL_VERB_OVERRIDE_LIST, "override", "list", {}, {}, XRL_VERB_KEYS,
		"the per-key overrides of HTTP rules in force" },
	[XRL_VERB_OVERRIDE_DEL] = { XRL_VERB_OVERRIDE_DEL, "override", "del",
		{ POS("RULE", NAME, override, rule), POS("KEY", NAME, override, key) }, {},
		XRL_VERB_CHANGES, "remove KEY's override of HTTP rule RULE" },
	[XRL_VERB_OVERRIDE] = { XRL_VERB_OVERRIDE, "override", NULL,
		{ POS("RULE", NAME, override, rule), POS("KEY", NAME, override, key) },
		{ OPT_REQ("--rate", RATE, "RATE", override, rate),
		  OPT_REQ("--burst", COUNT, "N", override, burst),
		  OPT_REQ("--ttl", DURATION, "DURATION", override, ttl) }, XRL_VERB_CHANGES,
		"KEY's own rate and burst on HTTP rule RULE for DURATION" },
	[XRL_VERB_RECOMMEND] = { XRL_VERB_RECOMMEND, "recommend", NULL,
		{ POS("RULE", NAME, recommend, rule) },
		{ OPT("--refuse-at-most", SHARE, "P%", recommend, refuse),
		  OPT("--headroom", FACTOR, "X", recommend, headroom) }, 0,
		"callers' peak rate and burst on RULE, and the limit that evidence recommends" },
};
/* clang-format on */

const char *xrl_verb_text(const struct xrl_verb_call *c, const struct xrl_verb_arg *a)
{
	/* every value struct starts with its text */
	return *(const char *const *)((const char *)&c->a + a->off);
}

void xrl_verb_synopsis(const struct xrl_verb *v, char *buf, size_t len)
{
	size_t o = 0;

#define PUT(...) \
	do { \
		int w_ = snprintf(buf + o, o < len ? len - o : 0, __VA_ARGS__); \
		if (w_ > 0) \
			o += (size_t)w_; \
	} while (0)
	PUT("%s", v->word);
	if (v->sub)
		PUT(" %s", v->sub);
	for (int i = 0; i < XRL_VERB_POS && v->pos[i].name; i++)
		PUT(" %s", v->pos[i].name);
	for (int i = 0; i < XRL_VERB_OPTS && v->opt[i].name; i++)
		if (v->opt[i].required)
			PUT(" %s %s", v->opt[i].name, v->opt[i].meta);
		else if (v->opt[i].meta)
			PUT(" [%s %s]", v->opt[i].name, v->opt[i].meta);
		else
			PUT(" [%s]", v->opt[i].name);
#undef PUT
}

void xrl_verb_usage(FILE *f, const char *word)
{
	for (int i = 0; i < XRL_VERB_MAX; i++) {
		const struct xrl_verb *v = &xrl_verbs[i];
		char syn[128];

		if (word && strcmp(word, v->word))
			continue;
		xrl_verb_synopsis(v, syn, sizeof(syn));
		fprintf(f, "  %-40s %s\n", syn, v->help);
	}
}

/* "usage: a | b" for every verb of word (or just v). */
static int usage_err(const char *word, const struct xrl_verb *v, char *err, size_t errlen)
{
	size_t o = (size_t)snprintf(err, errlen, "usage:");

	for (int i = 0; i < XRL_VERB_MAX && o < errlen; i++) {
		char syn[128];

		if (v ? &xrl_verbs[i] != v : strcmp(word, xrl_verbs[i].word))
			continue;
		xrl_verb_synopsis(&xrl_verbs[i], syn, sizeof(syn));
		o += (size_t)snprintf(err + o, errlen - o, "%s %s", o > 6 ? " |" : "", syn);
	}
	return 2;
}

/* A value of one of the types that are a word out of a few. */
static int take_word(const struct xrl_verb_arg *a, const char *s, void *v, char *err, size_t errlen)
{
	switch (a->type) {
	case XRL_ARG_MODE: {
		enum xrl_attach_mode *m = &((struct xrl_val_mode *)v)->mode;

		if (!strcmp(s, "native"))
			*m = XRL_MODE_NATIVE;
		else if (!strcmp(s, "skb"))
			*m = XRL_MODE_SKB;
		else if (!strcmp(s, "auto"))
			*m = XRL_MODE_AUTO;
		else
			return snprintf(err, errlen, "%s: want native, skb or auto", a->name), 2;
		return 0;
	}
	case XRL_ARG_ONOFF:
		if (strcmp(s, "on") && strcmp(s, "off"))
			return snprintf(err, errlen, "%s: want on or off, got '%s'", a->name, s), 2;
		((struct xrl_val_onoff *)v)->on = !strcmp(s, "on");
		return 0;
	case XRL_ARG_COOKIES: {
		__u8 *m = &((struct xrl_val_cookies *)v)->mode;

		if (!strcmp(s, "on"))
			*m = XRL_COOKIES_ON;
		else if (!strcmp(s, "auto"))
			*m = XRL_COOKIES_AUTO;
		else if (!strcmp(s, "off"))
			*m = XRL_COOKIES_OFF;
		else
			return snprintf(err, errlen, "%s: want on, auto or off, got '%s'", a->name,
					s),
			       2;
		return 0;
	}
	default:
		return 0;
	}
}

/*
 * Is s what argument a must be? 0 with s and what it means in a's field of
 * args, or 2 with err set.
 */
static int take_value(const struct xrl_verb_arg *a, const char *s, union xrl_verb_args *args,
		      char *err, size_t errlen)
{
	void *v = (char *)args + a->off;
	char why[XRL_ERRLEN];
	char *end;

	switch (a->type) {
	case XRL_ARG_CIDR:
		if (xrl_prefix_parse(s, &((struct xrl_val_prefix *)v)->p, why, sizeof(why)))
			return snprintf(err, errlen, "%s", why), 2;
		break;
	case XRL_ARG_DURATION: {
		__u64 *ns = &((struct xrl_val_duration *)v)->ns;

		if (xrl_duration_parse(s, ns, why, sizeof(why)))
			return snprintf(err, errlen, "%s: %s", a->name, why), 2;
		/* 0 would store a permanent entry; leave the option out for that */
		if (!*ns)
			return snprintf(err, errlen, "%s: '%s' must be above zero", a->name, s), 2;
		break;
	}
	case XRL_ARG_COUNT: {
		long n = strtol(s, &end, 10);

		if (!*s || *end || n < 1)
			return snprintf(err, errlen, "%s wants a positive number", a->name), 2;
		((struct xrl_val_count *)v)->n = n;
		break;
	}
	case XRL_ARG_SECONDS: {
		double d = strtod(s, &end);

		if (!*s || *end || !(d > 0))
			return snprintf(err, errlen, "%s wants a positive number of seconds",
					a->name),
			       2;
		((struct xrl_val_seconds *)v)->s = d;
		break;
	}
	case XRL_ARG_SHARE: {
		double d = strtod(s, &end);

		if (end != s && *end == '%')
			end++;
		if (!*s || *end || !(d >= 0 && d <= 100))
			return snprintf(err, errlen, "%s wants a percentage from 0 to 100 (\"0.1%%\")",
					a->name),
			       2;
		((struct xrl_val_number *)v)->x = d / 100;
		break;
	}
	case XRL_ARG_FACTOR: {
		double d = strtod(s, &end);

		if (!*s || *end || !(d >= 1 && d <= 1e6))
			return snprintf(err, errlen, "%s wants a factor from 1 to 1e6 (\"2\")",
					a->name),
			       2;
		((struct xrl_val_number *)v)->x = d;
		break;
	}
	case XRL_ARG_RATE:
		if (xrl_rate_parse(s, &((struct xrl_val_rate *)v)->rate, why, sizeof(why)))
			return snprintf(err, errlen, "%s: %s", a->name, why), 2;
		break;
	case XRL_ARG_MODE:
	case XRL_ARG_ONOFF:
	case XRL_ARG_COOKIES:
		if (take_word(a, s, v, err, errlen))
			return 2;
		break;
	case XRL_ARG_VOUCH: {
		struct xrl_prefix *p = &((struct xrl_val_prefix *)v)->p;

		if (xrl_prefix_parse(s, p, why, sizeof(why)))
			return snprintf(err, errlen, "%s", why), 2;
		if (p->plen < (p->family == XRL_AF_INET ? XRL_VOUCH_PLEN4 : XRL_VOUCH_PLEN6))
			return snprintf(err, errlen,
					"%s: a vouch covers one /%d (IPv4) or /%d (IPv6); '%s' is "
					"wider",
					a->name, XRL_VOUCH_PLEN4, XRL_VOUCH_PLEN6, s),
			       2;
		break;
	}
	default:
		break;
	}
	/* the struct's first member, where every value struct keeps its text */
	*(const char **)v = s;
	return 0;
}

/* The verb named by argv's first one or two words; *used is how many. */
static const struct xrl_verb *find_verb(int argc, char *const *argv, int *used, bool *known)
{
	*known = false;
	for (int i = 0; i < XRL_VERB_MAX; i++) {
		const struct xrl_verb *v = &xrl_verbs[i];

		if (strcmp(argv[0], v->word))
			continue;
		*known = true;
		if (!v->sub) {
			*used = 1;
			return v;
		}
		if (argc > 1 && !strcmp(argv[1], v->sub)) {
			*used = 2;
			return v;
		}
	}
	return NULL;
}

/* Positionals and options after the verb's words. */
static int parse_args(const struct xrl_verb *v, int argc, char *const *argv, bool wire,
		      struct xrl_verb_call *c, char *err, size_t errlen)
{
	int npos = 0;

	for (int i = 0; i < argc; i++) {
		const struct xrl_verb_arg *a = NULL;
		int k;

		for (k = 0; k < XRL_VERB_OPTS && v->opt[k].name; k++)
			if (!strcmp(argv[i], v->opt[k].name)) {
				a = &v->opt[k];
				break;
			}
		if (a && a->type == XRL_ARG_FLAG) {
			take_value(a, a->name, &c->a, err, errlen);
		} else if (a) {
			if (i + 1 >= argc)
				return usage_err(NULL, v, err, errlen);
			if (take_value(a, argv[++i], &c->a, err, errlen))
				return 2;
		} else if (npos < XRL_VERB_POS && v->pos[npos].name) {
			if (take_value(&v->pos[npos++], argv[i], &c->a, err, errlen))
				return 2;
		} else if (wire && (v->flags & XRL_VERB_SENDS_FILE) && !c->text) {
			c->text = argv[i];
		} else {
			snprintf(err, errlen, "unexpected argument '%s'", argv[i]);
			return 2;
		}
	}
	if ((npos < XRL_VERB_POS && v->pos[npos].name) ||
	    (wire && (v->flags & XRL_VERB_SENDS_FILE) && !c->text))
		return usage_err(NULL, v, err, errlen);
	for (int k = 0; k < XRL_VERB_OPTS && v->opt[k].name; k++)
		if (v->opt[k].required && !xrl_verb_text(c, &v->opt[k])) {
			char syn[128];

			xrl_verb_synopsis(v, syn, sizeof(syn));
			snprintf(err, errlen, "%s%s%s needs %s %s (usage: %s)", v->word,
				 v->sub ? " " : "", v->sub ? v->sub : "", v->opt[k].name,
				 v->opt[k].meta, syn);
			return 2;
		}
	return 0;
}

int xrl_verb_parse(int argc, char *const *argv, bool wire, struct xrl_verb_call *c,
		   const char **word, char *err, size_t errlen)
{
	char *args[argc > 0 ? argc : 1];
	int n = 0, used = 0;
	bool known;

	*c = (struct xrl_verb_call){};
	*word = NULL;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			c->json = true;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			c->help = true;
		else
			args[n++] = argv[i];
	}
	if (n < 1) {
		snprintf(err, errlen, "empty request");
		return 2;
	}
	c->v = find_verb(n, args, &used, &known);
	if (!known) {
		snprintf(err, errlen, "unknown verb '%s'", args[0]);
		return 2;
	}
	*word = c->v ? c->v->word : args[0];
	if (!c->v)
		return c->help ? 0 : usage_err(args[0], NULL, err, errlen);
	if (c->help)
		return 0;
	return parse_args(c->v, n - used, args + used, wire, c, err, errlen);
}
