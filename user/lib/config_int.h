// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * config_int.h - what the policy file parser's files share (config.c,
 * config_yaml.c and one file a section): the parse state, the YAML helpers,
 * each section's entry.
 */
#ifndef XRL_CONFIG_INT_H
#define XRL_CONFIG_INT_H

#include <stdbool.h>
#include <yaml.h>

#include "config.h"
#include "http_cfg.h"
#include "xrl.h"

#define PATHLEN 96
#define DETAIL	160

/* Parse state: the file name for messages, the tree, the result. */
struct cfg_parse {
	const char *name;
	yaml_document_t *doc;
	char *err;
	size_t errlen;
	struct xrld_config *c;
	int rule_line[XRL_MAX_RULES]; /* where each rule's name was given */
	int iface_line[XRL_CFG_MAX_IFACES];
};

/*
 * A mapping's keys are one table, KEYS(X) with an X(ID, "key") a key, from
 * which both the enum of indices and the struct field array are made:
 *   #define KEYS(X) X(F_NAME, "name") X(F_RATE, "rate")
 *   CFG_KEYS(KEYS, F_COUNT, f);
 *   #undef KEYS
 * declares enum { F_NAME, F_RATE, F_COUNT } and struct field f[F_COUNT].
 */
#define CFG_KEY_ENUM(id, k)  id,
#define CFG_KEY_FIELD(id, k) [id] = { .key = k },
#define CFG_KEYS(KEYS, count, f) \
	enum { KEYS(CFG_KEY_ENUM) count }; \
	struct field f[count] = { KEYS(CFG_KEY_FIELD) }

/* A key a mapping may have; filled with the key and value nodes if present. */
struct field {
	const char *key;
	yaml_node_t *k, *v;
};

/* config.c */
int cfg_parse_penalty(struct cfg_parse *x, yaml_node_t *n, bool packet);

/* config_fleet.c */
int cfg_fleet_name(struct cfg_parse *x, yaml_node_t *n, const char *path, char out[64]);
int cfg_parse_fleet(struct cfg_parse *x, yaml_node_t *n);
int cfg_fleet_resolve(struct cfg_parse *x, yaml_node_t *root);

/* config_http.c */
int cfg_parse_http(struct cfg_parse *x, yaml_node_t *n);

/* config_xdp.c */
int cfg_parse_ifaces(struct cfg_parse *x, yaml_node_t *n);
bool cfg_rule_name_ok(const char *s);
/* PATH.name of a rule of either tier, n its value: *s the name if
 * cfg_rule_name_ok takes it; p2 (PATHLEN) is made "PATH.name". */
int cfg_rule_name(struct cfg_parse *x, const yaml_node_t *n, const char *path, char *p2,
		  const char **s);
int cfg_parse_xdp(struct cfg_parse *x, yaml_node_t *n);

/* config_yaml.c */
/* "FILE:LINE:COL: <message>" at node n; returns -EINVAL. */
int cfg_error_at(struct cfg_parse *x, const yaml_node_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
const char *cfg_sval(const yaml_node_t *n);
bool cfg_is_null(const yaml_node_t *n);
const char *cfg_desc(const yaml_node_t *n, char *buf, size_t len);
const char *cfg_detail(const char *msg, const char *v, char *buf, size_t len);
/* out = base + printf(fmt, ...): "xdp.rules[0]" + ".rate" (PATHLEN bytes). */
void cfg_subpath(char *out, const char *base, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int cfg_scalar(struct cfg_parse *x, const yaml_node_t *n, const char *path, const char *what,
	       const char **out);
int cfg_uint_val(struct cfg_parse *x, const yaml_node_t *n, const char *path, const char *what,
		 __u64 min, __u64 max, __u64 *out);
int cfg_enum_val(struct cfg_parse *x, const yaml_node_t *n, const char *path,
		 const char *const *words, const int *vals, size_t nw, int *out);
/* An optional field of a mapping: path + sub names it; *out stays when n is NULL. */
int cfg_opt_enum_val(struct cfg_parse *x, yaml_node_t *n, const char *path, const char *sub,
		     const char *const *words, const int *vals, size_t nw, int *out);
#define ENUM(x, n, path, words, vals, out) \
	cfg_enum_val(x, n, path, words, vals, sizeof(words) / sizeof(words[0]), out)
#define OPT_ENUM(x, n, path, sub, words, vals, out) \
	cfg_opt_enum_val(x, n, path, sub, words, vals, sizeof(words) / sizeof(words[0]), out)
/*
 * A scalar turned into a value by one of the library's parsers, whose own
 * message is appended as detail: prefixes, rates, durations.
 */
typedef int (*cfg_parse_fn)(const char *s, void *out, char *err, size_t errlen);
int cfg_parsed_val(struct cfg_parse *x, const yaml_node_t *n, const char *path, const char *what,
		   cfg_parse_fn parse, void *out);
/* xrl_rate_parse as a cfg_parse_fn. */
int cfg_rate_parse(const char *s, void *out, char *err, size_t errlen);
int cfg_dur_val(struct cfg_parse *x, const yaml_node_t *n, const char *path, __u64 *out);
int cfg_prefix_val(struct cfg_parse *x, const yaml_node_t *n, const char *path,
		   struct xrl_prefix *out);
int cfg_rate_val(struct cfg_parse *x, const yaml_node_t *n, const char *path, struct xrl_rate *r);
/* Address prefixes at path into out[0 .. max), none twice; *n_out: how many. */
int cfg_prefix_list(struct cfg_parse *x, yaml_node_t *n, const char *path, const char *many,
		    size_t max, struct xrl_prefix *out, __u32 *n_out);
int cfg_mapping(struct cfg_parse *x, yaml_node_t *n, const char *path, const char *what,
		struct field *f, size_t nf);
/* The mapping under key of parent: path is made "PARENT.KEY" (PATHLEN), then as
 * cfg_mapping with key as what. */
int cfg_submapping(struct cfg_parse *x, yaml_node_t *n, char *path, const char *parent,
		   const char *key, struct field *f, size_t nf);
int cfg_sequence(struct cfg_parse *x, yaml_node_t *n, const char *path, const char *what,
		 yaml_node_item_t **items, size_t *count);
/*
 * A mapping of numbers said once, as a table: each key, its kind, what it
 * may be and where in dst it goes, so the parser has no code of its own.
 * CFG_UINT: a whole number min..max ("what" names it in the message);
 * CFG_DUR: a duration in ns; CFG_PER_SEC: a rate as events a second (>= 1);
 * CFG_BOOL: true or false, into a bool.
 */
enum cfg_num_kind { CFG_UINT, CFG_DUR, CFG_PER_SEC, CFG_BOOL };
struct cfg_num {
	const char *key;
	enum cfg_num_kind kind;
	size_t off, size; /* dst's member: CFG_AT(type, member) */
	const char *what;
	__u64 min, max;
};
#define CFG_AT(type, m) offsetof(type, m), sizeof(((type *)0)->m)
#define CFG_NUMS_MAX	8
/* The mapping under key of parent (path made "PARENT.KEY", as
 * cfg_submapping), its numbers t[0..nt) into dst; a key not given leaves
 * its member as it was. */
int cfg_numbers(struct cfg_parse *x, yaml_node_t *n, char *path, const char *parent,
		const char *key, const struct cfg_num *t, size_t nt, void *dst);
#define CFG_COUNT_OF(t) (sizeof(t) / sizeof((t)[0]))
/* t's length, which must fit CFG_NUMS_MAX: checked at build time. */
#define CFG_NUMS_OF(t) \
	(CFG_COUNT_OF(t) + 0 * sizeof(struct { \
				   _Static_assert(CFG_COUNT_OF(t) <= CFG_NUMS_MAX, \
						  "more than CFG_NUMS_MAX"); \
				   int i; \
			   }))
#define NUMBERS(x, n, path, parent, key, t, dst) \
	cfg_numbers(x, n, path, parent, key, t, CFG_NUMS_OF(t), dst)
/* One such number, the value n of PARENT.KEY, into dst. */
int cfg_number(struct cfg_parse *x, const yaml_node_t *n, const char *parent,
	       const struct cfg_num *t, void *dst);
/* A rate as events a second (>= 1): "5000/s", "300000/min". */
int cfg_per_sec_val(struct cfg_parse *x, const yaml_node_t *n, const char *path, __u64 *out);

yaml_node_t *cfg_item(struct cfg_parse *x, yaml_node_item_t *items, size_t i);
/*
 * A list at path (of what) whose items go one by one to one(x, item, ITEMPATH,
 * i, ctx), ITEMPATH "PATH[i]",
 * at most max of them: the item past max is "PATH[i]: at most MAX NOUN"
 * ("PATH: at most MAX NOUN" when bare_limit). Stops at the first error.
 */
struct cfg_list {
	const char *path, *what, *noun;
	size_t max;
	bool bare_limit;
	int (*one)(struct cfg_parse *x, yaml_node_t *item, const char *path, size_t i, void *ctx);
	void *ctx;
};
int cfg_each(struct cfg_parse *x, yaml_node_t *n, const struct cfg_list *l);
int cfg_bool_val(struct cfg_parse *x, const yaml_node_t *n, const char *path, bool *out);

#endif /* XRL_CONFIG_INT_H */
