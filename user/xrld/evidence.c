// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * evidence.c - what callers really used, kept for `xrlctl recommend` and
 * the metrics (issue 25). Every XRLD_EV_EPOCH_S the identity process hands
 * over the epoch's callers as one histogram per rule (limiter/callers.c);
 * they are added to the histogram of their rule and hour, and hours older
 * than the window are dropped. The whole set is written to
 * STATE_DIR/peaks.json (a new file renamed over the old, so a crash leaves
 * one or the other whole) at most once a minute and at stop, and read back
 * at start: a restart keeps the evidence.
 *
 * A file that does not read back (not JSON, a histogram that fails
 * xrl_peaks_from_json's checks) is moved aside to peaks.json.bad, said in
 * the log, and xrld starts with no evidence: it never overwrites what it
 * could not read.
 *
 * The main loop writes; the metrics thread reads under ev->mu.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "log.h"
#include "peaks.h"
#include "report.h"
#include "xrld.h"

#define XRLD_EV_HOURS_MAX (24 * 400)		   /* a window of at most 400 days */
#define JUDGE_EPOCHS	  (3600 / XRLD_EV_EPOCH_S) /* a disarm window of 1 h at most */
#define JUDGE_MIN_CALLERS 10			   /* fewer callers in the window: no judgement */

/*
 * A rule's disarm: its last epochs' callers and how many of them it
 * refused while they were not far over its rate (callers.c), and whether
 * it is disarmed (turned to shadow by xrld) and why.
 */
struct ev_judge {
	char rule[XRL_RULE_NAME_LEN];
	__u64 t_s[JUDGE_EPOCHS]; /* CLOCK_MONOTONIC s of each epoch; a ring */
	__u64 seen[JUDGE_EPOCHS], near[JUDGE_EPOCHS];
	unsigned head;
	bool disarmed;
	bool skip_next;	   /* re-armed: the epoch under way held shadow's refusals */
	__u64 disarmed_at; /* CLOCK_REALTIME s */
	__u64 disarms;	   /* times, for the metric */
	char reason[192];
};

/* One rule's callers over one hour (CLOCK_REALTIME hours since the epoch). */
struct ev_hour {
	char rule[XRL_RULE_NAME_LEN];
	__u64 hour;
	struct xrl_peaks h;
};

struct xrld_evidence {
	pthread_mutex_t mu;
	struct ev_hour *e;
	size_t n, cap;
	__u64 window_s;
	__u64 untracked; /* requests the callers' table had no room for */
	char path[PATH_MAX];
	bool dirty;
	__u64 written_s; /* CLOCK_MONOTONIC s of the last write */
	__u64 epoch_s;	 /* of the last fold */
	struct ev_judge judge[XRL_HTTP_MAX_RULES];
	int n_judge;
};

static __u64 mono_s(void)
{
	return xrl_now_ns() / XRL_NSEC_PER_SEC;
}

/* The entry of (rule, hour), made when absent; NULL when out of memory. */
static struct ev_hour *ev_slot(struct xrld_evidence *ev, const char *rule, __u64 hour)
{
	for (size_t i = 0; i < ev->n; i++)
		if (ev->e[i].hour == hour && !strcmp(ev->e[i].rule, rule))
			return &ev->e[i];
	if (ev->n == ev->cap) {
		size_t cap = ev->cap ? ev->cap * 2 : 64;
		struct ev_hour *e = realloc(ev->e, cap * sizeof(*e));

		if (!e)
			return NULL;
		ev->e = e;
		ev->cap = cap;
	}
	memset(&ev->e[ev->n], 0, sizeof(ev->e[0]));
	snprintf(ev->e[ev->n].rule, sizeof(ev->e[0].rule), "%s", rule);
	ev->e[ev->n].hour = hour;
	return &ev->e[ev->n++];
}

/* Drop the hours that left the window (ev->mu held). */
static void ev_expire(struct xrld_evidence *ev, __u64 now_h)
{
	__u64 keep = (ev->window_s + 3599) / 3600;
	size_t j = 0;

	for (size_t i = 0; i < ev->n; i++) {
		if (ev->e[i].hour + keep <= now_h) {
			xrl_peaks_free(&ev->e[i].h);
			ev->dirty = true;
			continue;
		}
		ev->e[j++] = ev->e[i];
	}
	ev->n = j;
}

/* Add one epoch's answer {"rules": {RULE: histogram}, "untracked": N}. */
static int ev_add(struct xrld_evidence *ev, json_t *a, __u64 hour)
{
	json_t *rules = json_object_get(a, "rules"), *hj;
	const char *name;
	int rc = 0;

	if (!json_is_object(rules))
		return -EINVAL;
	ev->untracked += (__u64)json_integer_value(json_object_get(a, "untracked"));
	json_object_foreach (rules, name, hj) {
		struct xrl_peaks h = { 0 };
		struct ev_hour *e;

		if (strlen(name) >= XRL_RULE_NAME_LEN || xrl_peaks_from_json(hj, &h)) {
			rc = -EINVAL;
			continue;
		}
		e = ev_slot(ev, name, hour);
		if (!e || xrl_peaks_merge(&e->h, &h))
			rc = -ENOMEM;
		xrl_peaks_free(&h);
		ev->dirty = true;
	}
	return rc;
}

static __u64 real_hour(void)
{
	return (__u64)time(NULL) / 3600;
}

/* ---- the file ------------------------------------------------------------ */

static int ev_write(struct xrld_evidence *ev)
{
	char tmp[PATH_MAX + 8];
	json_t *hours = json_array(), *doc;
	int rc = 0;

	if (!ev->path[0])
		return 0;
	for (size_t i = 0; i < ev->n && hours; i++)
		if (json_array_append_new(hours,
					  json_pack("{s:s,s:I,s:o}", "rule", ev->e[i].rule, "hour",
						    (json_int_t)ev->e[i].hour, "callers",
						    xrl_peaks_to_json(&ev->e[i].h))))
			rc = -ENOMEM;
	doc = hours ? json_pack("{s:i,s:I,s:o}", "version", 1, "window_s", (json_int_t)ev->window_s,
				"hours", hours)
		    : NULL;
	if (!doc || rc) {
		json_decref(doc);
		return -ENOMEM;
	}
	snprintf(tmp, sizeof(tmp), "%s.new", ev->path);
	if (json_dump_file(doc, tmp, JSON_COMPACT))
		rc = -EIO;
	else if (rename(tmp, ev->path))
		rc = -errno;
	json_decref(doc);
	if (rc) {
		unlink(tmp);
		return rc;
	}
	ev->dirty = false;
	ev->written_s = mono_s();
	return 0;
}

/* Read ev->path; 0 also when there is none. -EINVAL when it is not one. */
static int ev_read(struct xrld_evidence *ev, char *why, size_t whylen)
{
	json_error_t je;
	json_t *doc = json_load_file(ev->path, JSON_REJECT_DUPLICATES, &je), *hours, *x;
	size_t i;

	if (!doc) {
		if (access(ev->path, F_OK) && errno == ENOENT)
			return 0;
		snprintf(why, whylen, "line %d: %s", je.line, je.text);
		return -EINVAL;
	}
	hours = json_object_get(doc, "hours");
	if (json_integer_value(json_object_get(doc, "version")) != 1 || !json_is_array(hours)) {
		snprintf(why, whylen, "not xrld's evidence (version 1, \"hours\")");
		json_decref(doc);
		return -EINVAL;
	}
	json_array_foreach (hours, i, x) {
		const char *rule = NULL;
		json_int_t hour = -1;
		json_t *h = NULL;
		struct xrl_peaks p = { 0 };
		struct ev_hour *e;

		if (json_unpack(x, "{s:s,s:I,s:o}", "rule", &rule, "hour", &hour, "callers", &h) ||
		    hour < 0 || !*rule || strlen(rule) >= XRL_RULE_NAME_LEN ||
		    xrl_peaks_from_json(h, &p)) {
			snprintf(why, whylen, "hour %zu is not a histogram", i);
			json_decref(doc);
			return -EINVAL;
		}
		e = ev_slot(ev, rule, (__u64)hour);
		if (!e || xrl_peaks_merge(&e->h, &p)) {
			xrl_peaks_free(&p);
			json_decref(doc);
			snprintf(why, whylen, "out of memory");
			return -ENOMEM;
		}
		xrl_peaks_free(&p);
	}
	json_decref(doc);
	return 0;
}

static void ev_clear(struct xrld_evidence *ev)
{
	for (size_t i = 0; i < ev->n; i++)
		xrl_peaks_free(&ev->e[i].h);
	ev->n = 0;
}

/* ---- disarm ---------------------------------------------------------------- */

static struct ev_judge *judge_of(struct xrld_evidence *ev, const char *rule, bool make)
{
	for (int i = 0; i < ev->n_judge; i++)
		if (!strcmp(ev->judge[i].rule, rule))
			return &ev->judge[i];
	if (!make || ev->n_judge == XRL_HTTP_MAX_RULES)
		return NULL;
	memset(&ev->judge[ev->n_judge], 0, sizeof(ev->judge[0]));
	snprintf(ev->judge[ev->n_judge].rule, sizeof(ev->judge[0].rule), "%s", rule);
	return &ev->judge[ev->n_judge++];
}

/* Is rule in shadow now (the policy's, or xrlctl shadow's)? */
static bool http_shadowed(struct xrld *d, const struct xrl_http_rule *r)
{
	for (int k = 0; k < d->n_override; k++)
		if (!strcmp(d->shadow_override[k], r->name))
			return d->shadow_val[k] != 0;
	return r->shadow;
}

static void judge_note(struct xrld_evidence *ev, json_t *a, __u64 now)
{
	json_t *j = json_object_get(a, "judge"), *v;
	const char *name;

	json_object_foreach (j, name, v) {
		struct ev_judge *g;

		if (strlen(name) >= XRL_RULE_NAME_LEN || !(g = judge_of(ev, name, true)))
			continue;
		if (g->skip_next) {
			g->skip_next = false;
			continue;
		}
		g->head = (g->head + 1) % JUDGE_EPOCHS;
		g->t_s[g->head] = now;
		g->seen[g->head] = (__u64)json_integer_value(json_array_get(v, 0));
		g->near[g->head] = (__u64)json_integer_value(json_array_get(v, 1));
	}
}

/* Turn rule to shadow in the identity tier; 0 or -errno with err. */
static int judge_disarm(struct xrld *d, const char *rule, char *err, size_t errlen)
{
	int rc = 0;
	json_t *r = xrld_idp_call(d,
				  json_pack("{s:s,s:s,s:b}", "op", "shadow", "rule", rule, "on", 1),
				  NULL, 0, &rc, err, errlen);

	json_decref(r);
	return rc;
}

/*
 * Each armed rule with a disarm: over its window, the callers it saw and
 * those it refused while they sent no more than XRL_DISARM_FAR times its
 * rate. More than its share of them refused (with JUDGE_MIN_CALLERS seen
 * at least): the rule refuses its own callers, not a flood's, and xrld
 * turns it to shadow. A flood's sources far over the rate never count, so
 * any number of them cannot disarm it; they count among those seen, so
 * they make it harder. (ev->mu held.)
 */
static void judge_all(struct xrld *d, struct xrld_evidence *ev, __u64 now)
{
	const struct xrl_http_cfg *c = &d->cfg->http;

	for (__u32 i = 0; d->cfg->has_http && i < c->n_rules; i++) {
		const struct xrl_http_rule *r = &c->rules[i];
		struct ev_judge *g = judge_of(ev, r->name, false);
		__u64 seen = 0, near = 0, win = r->disarm_window_ns / XRL_NSEC_PER_SEC;
		char err[XRL_ERRLEN];

		if (!r->disarm_pct || !g || g->disarmed || http_shadowed(d, r))
			continue;
		for (unsigned k = 0; k < JUDGE_EPOCHS; k++)
			if (g->t_s[k] && g->t_s[k] + win > now) {
				seen += g->seen[k];
				near += g->near[k];
			}
		if (seen < JUDGE_MIN_CALLERS || near * 100 <= (__u64)r->disarm_pct * seen)
			continue;
		snprintf(g->reason, sizeof(g->reason),
			 "refused %llu of the %llu callers it saw in %llus (more than %u%%), none "
			 "far over its rate",
			 (unsigned long long)near, (unsigned long long)seen,
			 (unsigned long long)win, r->disarm_pct);
		if (judge_disarm(d, r->name, err, sizeof(err))) {
			log_agg(XRL_LOG_WARN, "evidence: disarm", "disarms not made",
				"http rule %s should be disarmed (%s) but couldn't be: %s", r->name,
				g->reason, err);
			continue;
		}
		g->disarmed = true;
		g->disarmed_at = (__u64)time(NULL);
		g->disarms++;
		log_warnx("http rule %s disarmed (now shadow: it refuses nobody, counts what it "
			  "would): it %s; fix its limit and `xrlctl shadow %s off` re-arms it",
			  r->name, g->reason, r->name);
	}
}

void xrld_evidence_rearm(struct xrld *d, const char *rule)
{
	struct ev_judge *g;

	if (!d->ev)
		return;
	pthread_mutex_lock(&d->ev->mu);
	if ((g = judge_of(d->ev, rule, false))) {
		if (g->disarmed)
			log_info("http rule %s re-armed", rule);
		g->disarmed = false;
		/* a fresh window: what it refused before is not held against it,
		 * nor what it would have refused in shadow this epoch */
		memset(g->t_s, 0, sizeof(g->t_s));
		g->skip_next = true;
	}
	pthread_mutex_unlock(&d->ev->mu);
}

void xrld_evidence_replay(struct xrld *d)
{
	char err[XRL_ERRLEN];

	if (!d->ev)
		return;
	pthread_mutex_lock(&d->ev->mu);
	for (int i = 0; i < d->ev->n_judge; i++)
		if (d->ev->judge[i].disarmed)
			judge_disarm(d, d->ev->judge[i].rule, err, sizeof(err));
	pthread_mutex_unlock(&d->ev->mu);
}

json_t *xrld_evidence_disarmed_json(struct xrld *d)
{
	json_t *a = json_array();

	if (!d->ev)
		return a;
	pthread_mutex_lock(&d->ev->mu);
	for (int i = 0; i < d->ev->n_judge; i++) {
		const struct ev_judge *g = &d->ev->judge[i];

		if (g->disarmed)
			json_array_append_new(a, json_pack("{s:s,s:s,s:I}", "rule", g->rule,
							   "reason", g->reason, "since",
							   (json_int_t)g->disarmed_at));
	}
	pthread_mutex_unlock(&d->ev->mu);
	return a;
}

/* ---- the epoch ------------------------------------------------------------ */

static int ev_fold(struct xrld *d, bool judge);

/* Ask the identity process for the epoch's callers (main loop). */
int xrld_evidence_fold(struct xrld *d)
{
	return ev_fold(d, true);
}

/* The same; judge: the rules' disarms too (not while stopping). */
static int ev_fold(struct xrld *d, bool judge)
{
	struct xrld_evidence *ev = d->ev;
	char err[XRL_ERRLEN];
	json_t *a;
	int rc = 0;

	if (!ev || !d->http)
		return 0;
	a = xrld_idp_call(d, json_pack("{s:s}", "op", "peaks"), NULL, 0, &rc, err, sizeof(err));
	if (!a)
		return rc ? rc : -EIO;
	pthread_mutex_lock(&ev->mu);
	rc = ev_add(ev, a, real_hour());
	judge_note(ev, a, mono_s());
	if (judge)
		judge_all(d, ev, mono_s());
	ev_expire(ev, real_hour());
	ev->epoch_s = mono_s();
	if (ev->dirty && mono_s() >= ev->written_s + 60) {
		int w = ev_write(ev);

		if (w)
			log_agg(XRL_LOG_WARN, "evidence: write", "evidence writes failed",
				"couldn't write %s: %s", ev->path, strerror(-w));
	}
	pthread_mutex_unlock(&ev->mu);
	json_decref(a);
	if (rc)
		log_agg(XRL_LOG_WARN, "evidence: epoch", "epochs not kept",
			"couldn't keep the callers' peaks of an epoch: %s", strerror(-rc));
	return rc;
}

static void ev_tick(void *ctx)
{
	struct xrld *d = ctx;

	if (d->ev && mono_s() >= d->ev->epoch_s + XRLD_EV_EPOCH_S)
		xrld_evidence_fold(d);
}

int xrld_evidence_start(struct xrld *d, const char *state_dir, __u64 window_s)
{
	struct xrld_evidence *ev = calloc(1, sizeof(*ev));
	char why[256] = "";
	int rc;

	if (!ev)
		return -ENOMEM;
	pthread_mutex_init(&ev->mu, NULL);
	ev->window_s = window_s;
	ev->epoch_s = mono_s();
	ev->written_s = mono_s();
	if (state_dir && *state_dir) {
		if (mkdir(state_dir, 0700) && errno != EEXIST)
			log_warn("couldn't make the state directory %s (the callers' peaks "
				 "are kept in memory only)",
				 state_dir);
		else if ((size_t)snprintf(ev->path, sizeof(ev->path), "%s/peaks.json", state_dir) >=
			 sizeof(ev->path))
			ev->path[0] = 0;
	}
	if (ev->path[0] && (rc = ev_read(ev, why, sizeof(why)))) {
		char bad[PATH_MAX + 8];

		ev_clear(ev);
		snprintf(bad, sizeof(bad), "%s.bad", ev->path);
		if (rename(ev->path, bad))
			log_warn("couldn't read %s (%s), nor move it aside; the callers' peaks "
				 "are kept in memory only",
				 ev->path, why);
		else
			log_warnx("couldn't read %s (%s): moved to %s, starting with no evidence",
				  ev->path, why, bad);
		if (access(ev->path, F_OK) == 0)
			ev->path[0] = 0; /* still there: never written over */
	}
	ev_expire(ev, real_hour());
	d->ev = ev;
	return xrld_timer_add(d->loop, XRL_NSEC_PER_SEC, ev_tick, d) ? 0 : -ENOMEM;
}

void xrld_evidence_stop(struct xrld *d)
{
	struct xrld_evidence *ev = d->ev;
	int rc;

	if (!ev)
		return;
	ev_fold(d, false);
	pthread_mutex_lock(&ev->mu);
	if (ev->dirty && (rc = ev_write(ev)))
		log_warnx("couldn't write %s: %s", ev->path, strerror(-rc));
	pthread_mutex_unlock(&ev->mu);
}

/* ---- reading it ----------------------------------------------------------- */

/* rule's callers over the window, merged into a zeroed out. -ENOENT: none. */
int xrld_evidence_rule(struct xrld *d, const char *rule, struct xrl_peaks *out, __u64 *window_s,
		       __u64 *untracked)
{
	struct xrld_evidence *ev = d->ev;
	int rc = -ENOENT;

	if (!ev)
		return -ENOENT;
	pthread_mutex_lock(&ev->mu);
	ev_expire(ev, real_hour());
	for (size_t i = 0; i < ev->n; i++)
		if (!strcmp(ev->e[i].rule, rule)) {
			if (xrl_peaks_merge(out, &ev->e[i].h)) {
				rc = -ENOMEM;
				break;
			}
			rc = 0;
		}
	*window_s = ev->window_s;
	*untracked = ev->untracked;
	pthread_mutex_unlock(&ev->mu);
	return rc;
}

/* The Prometheus le bounds of the histograms: powers of two. */
#define EV_LE_MAX 24

/* One family: rule's marginal distribution along axis, cumulative. */
static void ev_metric_rule(struct xrl_buf *b, const char *fam, const char *rule,
			   const struct xrl_peaks *h, enum xrl_peaks_axis axis)
{
	__u64 le_n[EV_LE_MAX + 1] = { 0 }, sum = 0;

	for (size_t i = 0; i < h->n; i++) {
		const struct xrl_peaks_cell *c = &h->cells[i];
		__u32 bin = axis == XRL_PEAKS_RATE ? c->rate_bin : c->burst_bin;
		__u64 hi = xrl_peaks_bin_high(bin), lo = xrl_peaks_bin_low(bin);
		int k = 0;

		while (k < EV_LE_MAX && (1ULL << k) < hi)
			k++;
		le_n[(1ULL << k) >= hi ? k : EV_LE_MAX] += c->callers;
		sum += (lo + (hi - lo) / 2) * c->callers;
	}
	for (int k = 0; k < EV_LE_MAX; k++) {
		if (k)
			le_n[k] += le_n[k - 1];
		xrl_buf_printf(b, "%s_bucket{rule=\"%s\",le=\"%llu\"} %llu\n", fam, rule, 1ULL << k,
			       (unsigned long long)le_n[k]);
	}
	xrl_buf_printf(b, "%s_bucket{rule=\"%s\",le=\"+Inf\"} %llu\n", fam, rule,
		       (unsigned long long)h->callers);
	xrl_buf_printf(b, "%s_sum{rule=\"%s\"} %llu\n", fam, rule, (unsigned long long)sum);
	xrl_buf_printf(b, "%s_count{rule=\"%s\"} %llu\n", fam, rule,
		       (unsigned long long)h->callers);
}

/*
 * xrl_http_caller_peak_rate and _burst: per rule, the callers (caller-
 * epochs) of the window by their peak; _sum by each bin's middle, so
 * within a bin's width (6.25 %). Metrics thread.
 */
void xrld_evidence_metrics(struct xrld *d, struct xrl_buf *b)
{
	static const struct {
		const char *fam, *help;
		enum xrl_peaks_axis axis;
	} fams[] = {
		{ "xrl_http_caller_peak_rate",
		  "HTTP callers (caller-epochs) of the recommend window by the most requests they "
		  "sent in one second.",
		  XRL_PEAKS_RATE },
		{ "xrl_http_caller_peak_burst",
		  "HTTP callers (caller-epochs) of the recommend window by the deepest they went "
		  "into a bucket's burst (tokens).",
		  XRL_PEAKS_BURST },
	};
	struct xrld_evidence *ev = d->ev;
	char rules[XRL_HTTP_MAX_RULES][XRL_RULE_NAME_LEN];
	int nr = 0;

	if (!ev)
		return;
	pthread_mutex_lock(&ev->mu);
	xrl_prom_family(b, "xrl_http_rule_disarmed", "gauge",
			"1 while xrld holds the HTTP rule in shadow because it refused more than "
			"its disarm share of its callers.");
	for (int pass = 0; pass < 2; pass++) {
		if (pass)
			xrl_prom_family(b, "xrl_http_rule_disarms_total", "counter",
					"Times xrld disarmed the HTTP rule (turned it to shadow).");
		/* every rule with a disarm (d->lock held: d->cfg stays) */
		for (__u32 i = 0; d->cfg->has_http && i < d->cfg->http.n_rules; i++) {
			const struct xrl_http_rule *r = &d->cfg->http.rules[i];
			const struct ev_judge *g = judge_of(ev, r->name, false);

			if (!r->disarm_pct)
				continue;
			xrl_prom_u64(b,
				     pass ? "xrl_http_rule_disarms_total"
					  : "xrl_http_rule_disarmed",
				     "rule", r->name,
				     !g	    ? 0
				     : pass ? g->disarms
					    : (__u64)g->disarmed);
		}
	}
	for (size_t i = 0; i < ev->n; i++) {
		int k = 0;

		while (k < nr && strcmp(rules[k], ev->e[i].rule))
			k++;
		if (k == nr && nr < XRL_HTTP_MAX_RULES)
			snprintf(rules[nr++], sizeof(rules[0]), "%s", ev->e[i].rule);
	}
	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
		xrl_prom_family(b, fams[f].fam, "histogram", fams[f].help);
		for (int k = 0; k < nr; k++) {
			struct xrl_peaks h = { 0 };

			for (size_t i = 0; i < ev->n; i++)
				if (!strcmp(ev->e[i].rule, rules[k]) &&
				    xrl_peaks_merge(&h, &ev->e[i].h))
					break;
			ev_metric_rule(b, fams[f].fam, rules[k], &h, fams[f].axis);
			xrl_peaks_free(&h);
		}
	}
	pthread_mutex_unlock(&ev->mu);
}
