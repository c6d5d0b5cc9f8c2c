// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * verbs.c - the control protocol's verb table and the one walker that
 * parses a command line (xrlctl) or a request (xrld) against it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs.h"
#include "xrl.h"

#define POS(n, t) \
	{ \
		.name = (n), .type = (t) \
	}
#define OPT(n, t, m) \
	{ \
		.name = (n), .type = (t), .meta = (m) \
	}

/*
 * The rows of a set of sources xrld keeps (allow, deny, vouch): NOUN add ARG
 * [the options after the helps], NOUN del ARG, NOUN list.
 */
/* clang-format off */
#define SET_VERBS(ID, noun, arg, type, add_help, del_help, list_help, ...) \
	[XRL_VERB_##ID##_ADD] = { XRL_VERB_##ID##_ADD, noun, "add", { POS(arg, type) }, \
				  __VA_ARGS__, XRL_VERB_CHANGES, add_help }, \
	[XRL_VERB_##ID##_DEL] = { XRL_VERB_##ID##_DEL, noun, "del", { POS(arg, type) }, {}, \
				  XRL_VERB_CHANGES, del_help }, \
	[XRL_VERB_##ID##_LIST] = { XRL_VERB_##ID##_LIST, noun, "list", {}, {}, 0, list_help }
/* clang-format on */

/* One row a verb; kept as a table by the formatter. */
/* clang-format off */
const struct xrl_verb xrl_verbs[XRL_VERB_MAX] = {
	[XRL_VERB_STATUS] = { XRL_VERB_STATUS, "status", NULL, {}, {}, 0,
		"daemon, interfaces and the identity tier (from the pins if xrld is down)" },
	[XRL_VERB_ATTACH] = { XRL_VERB_ATTACH, "attach", NULL, { POS("IFACE", XRL_ARG_NAME) },
		{ OPT("--mode", XRL_ARG_MODE, "native|skb|auto") }, XRL_VERB_CHANGES,
		"attach the program to IFACE (native by default)" },
	[XRL_VERB_DETACH] = { XRL_VERB_DETACH, "detach", NULL, { POS("IFACE", XRL_ARG_NAME) }, {},
		XRL_VERB_CHANGES, "remove the program and its pinned state" },
	[XRL_VERB_POLICY_CHECK] = { XRL_VERB_POLICY_CHECK, "policy", "check",
		{ POS("FILE", XRL_ARG_FILE) }, {}, XRL_VERB_LOCAL,
		"validate a policy file and summarise it" },
	[XRL_VERB_POLICY_APPLY] = { XRL_VERB_POLICY_APPLY, "policy", "apply",
		{ POS("FILE", XRL_ARG_FILE) }, {}, XRL_VERB_SENDS_FILE | XRL_VERB_CHANGES,
		"atomically replace the running policy" },
	[XRL_VERB_POLICY_SHOW] = { XRL_VERB_POLICY_SHOW, "policy", "show", {}, {}, 0,
		"the running policy and the shadow overrides" },
	[XRL_VERB_STATS] = { XRL_VERB_STATS, "stats", NULL, {},
		{ OPT("--iface", XRL_ARG_NAME, "IF"), OPT("--watch", XRL_ARG_SECONDS, "SECONDS") },
		XRL_VERB_LOCAL,
		"counters per rule: packet tier from the pins, HTTP rules from xrld (--watch: live)" },
	[XRL_VERB_TOP] = { XRL_VERB_TOP, "top", NULL, {},
		{ OPT("--rule", XRL_ARG_NAME, "NAME"), OPT("-n", XRL_ARG_COUNT, "N"),
		  OPT("--watch", XRL_ARG_SECONDS, "SECONDS"), OPT("--http", XRL_ARG_NAME, "RULE") }, 0,
		"top refused source prefixes (--http RULE: an HTTP rule's most refused keys)" },
	SET_VERBS(ALLOW, "allow", "CIDR", XRL_ARG_CIDR, "never limit CIDR",
		"take CIDR off the allowlist", "the allowlist (from the pins if xrld is down)", {}),
	SET_VERBS(DENY, "deny", "CIDR", XRL_ARG_CIDR,
		"drop everything from CIDR (for DURATION; without it, until removed)",
		"take CIDR off the denylist",
		"the denylist with origins and expiry (from the pins if xrld is down)",
		{ OPT("--ttl", XRL_ARG_DURATION, "DURATION") }),
	[XRL_VERB_SHADOW] = { XRL_VERB_SHADOW, "shadow", NULL,
		{ POS("RULE", XRL_ARG_NAME), POS("on|off", XRL_ARG_ONOFF) }, {}, XRL_VERB_CHANGES,
		"count a packet or HTTP rule's refusals without enforcing them (until xrld restarts)" },
	[XRL_VERB_PENALTY_LIST] = { XRL_VERB_PENALTY_LIST, "penalty", "list", {}, {}, 0,
		"identity-tier key penalties: rule, key hash, level, time left" },
	[XRL_VERB_PENALTY_DEL] = { XRL_VERB_PENALTY_DEL, "penalty", "del",
		{ POS("KEY|HASH", XRL_ARG_NAME) }, {}, XRL_VERB_CHANGES,
		"lift a key's penalties (in a fleet: on every instance); xrlctl sends the key's hash" },
	[XRL_VERB_COOKIES] = { XRL_VERB_COOKIES, "cookies", NULL,
		{ POS("RULE", XRL_ARG_NAME), POS("on|auto|off", XRL_ARG_COOKIES) }, {},
		XRL_VERB_CHANGES,
		"a rule's SYN cookies now, without a reload (until the next policy apply or reload)" },
	SET_VERBS(VOUCH, "vouch", "PREFIX", XRL_ARG_VOUCH,
		"vouch for PREFIX's /24 or /48 (for DURATION; without it, until removed)",
		"take PREFIX's /24 or /48 off the vouched sources",
		"vouched sources with origin and time left (from the pins if xrld is down)",
		{ OPT("--ttl", XRL_ARG_DURATION, "DURATION") }),
	[XRL_VERB_OVERRIDE_LIST] = { XRL_VERB_OVERRIDE_LIST, "override", "list", {}, {}, 0,
		"the per-key overrides of HTTP rules in force" },
	[XRL_VERB_OVERRIDE_DEL] = { XRL_VERB_OVERRIDE_DEL, "override", "del",
		{ POS("RULE", XRL_ARG_NAME), POS("KEY", XRL_ARG_NAME) }, {}, XRL_VERB_CHANGES,
		"remove KEY's override of HTTP rule RULE" },
	[XRL_VERB_OVERRIDE] = { XRL_VERB_OVERRIDE, "override", NULL,
		{ POS("RULE", XRL_ARG_NAME), POS("KEY", XRL_ARG_NAME) },
		{ OPT("--rate", XRL_ARG_RATE, "RATE"), OPT("--burst", XRL_ARG_COUNT, "N"),
		  OPT("--ttl", XRL_ARG_DURATION, "DURATION") }, XRL_VERB_CHANGES,
		"KEY's own rate and burst on HTTP rule RULE for DURATION (all three required)" },
};
/* clang-format on */

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
		PUT(" [%s %s]", v->opt[i].name, v->opt[i].meta);
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

/* Is s what an argument of type t must be? 0, or 2 with err set. */
static int check_value(const struct xrl_verb_arg *a, const char *s, char *err, size_t errlen)
{
	char why[XRL_ERRLEN];
	struct xrl_prefix p;
	__u64 ns;
	char *end;

	switch (a->type) {
	case XRL_ARG_CIDR:
		if (xrl_prefix_parse(s, &p, why, sizeof(why)))
			return snprintf(err, errlen, "%s", why), 2;
		return 0;
	case XRL_ARG_DURATION:
		if (xrl_duration_parse(s, &ns, why, sizeof(why)))
			return snprintf(err, errlen, "%s: %s", a->name, why), 2;
		/* 0 would store a permanent entry; leave the option out for that */
		if (!ns)
			return snprintf(err, errlen, "%s: '%s' must be above zero", a->name, s), 2;
		return 0;
	case XRL_ARG_COUNT: {
		long n = strtol(s, &end, 10);

		if (!*s || *end || n < 1)
			return snprintf(err, errlen, "%s wants a positive number", a->name), 2;
		return 0;
	}
	case XRL_ARG_SECONDS: {
		double d = strtod(s, &end);

		if (!*s || *end || !(d > 0))
			return snprintf(err, errlen, "%s wants a positive number of seconds",
					a->name),
			       2;
		return 0;
	}
	case XRL_ARG_MODE:
		if (strcmp(s, "native") && strcmp(s, "skb") && strcmp(s, "auto"))
			return snprintf(err, errlen, "%s: want native, skb or auto", a->name), 2;
		return 0;
	case XRL_ARG_RATE: {
		struct xrl_rate rt;

		if (xrl_rate_parse(s, &rt, why, sizeof(why)))
			return snprintf(err, errlen, "%s: %s", a->name, why), 2;
		return 0;
	}
	case XRL_ARG_ONOFF:
		if (strcmp(s, "on") && strcmp(s, "off"))
			return snprintf(err, errlen, "%s: want on or off, got '%s'", a->name, s), 2;
		return 0;
	case XRL_ARG_COOKIES:
		if (strcmp(s, "on") && strcmp(s, "auto") && strcmp(s, "off"))
			return snprintf(err, errlen, "%s: want on, auto or off, got '%s'", a->name,
					s),
			       2;
		return 0;
	case XRL_ARG_VOUCH:
		if (xrl_prefix_parse(s, &p, why, sizeof(why)))
			return snprintf(err, errlen, "%s", why), 2;
		if (p.plen < (p.family == XRL_AF_INET ? XRL_VOUCH_PLEN4 : XRL_VOUCH_PLEN6))
			return snprintf(err, errlen,
					"%s: a vouch covers one /%d (IPv4) or /%d (IPv6); '%s' is "
					"wider",
					a->name, XRL_VOUCH_PLEN4, XRL_VOUCH_PLEN6, s),
			       2;
		return 0;
	default:
		return 0;
	}
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
		if (a) {
			if (i + 1 >= argc)
				return usage_err(NULL, v, err, errlen);
			if (check_value(a, argv[++i], err, errlen))
				return 2;
			c->opt[k] = argv[i];
		} else if (npos < XRL_VERB_POS && v->pos[npos].name) {
			if (check_value(&v->pos[npos], argv[i], err, errlen))
				return 2;
			c->pos[npos++] = argv[i];
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
