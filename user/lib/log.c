// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * log.c - the log (log.h): levels, stderr or syslog, journald's priority
 * prefixes, libbpf's and libxdp's output demoted to debug, and the
 * aggregated lines that say a repeated event once an interval.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "log.h"

static int cur_level = XRL_LOG_WARN;
static int to_syslog;
static bool to_journal; /* stderr is journald's stream: "<N>" prefixes */
static const char *log_ident = "xrl";

/*
 * Is stderr the stream journald gave this process? sd-daemon(3): systemd
 * sets JOURNAL_STREAM=DEV:INO for the stream it connected to stdout and
 * stderr; stderr is still that stream only if its device and inode match
 * (a shell between may have redirected it, and then a "<3>" would be
 * noise in a file).
 */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st))
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_init(const char *ident, int level, int use_syslog)
{
	log_ident = ident;
	cur_level = level;
	to_syslog = use_syslog;
	to_journal = !use_syslog && stderr_is_journal();
	if (use_syslog)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void log_set_level(int level)
{
	cur_level = level;
}
int log_get_level(void)
{
	return cur_level;
}

static void vlog(int level, const char *suffix, const char *fmt, va_list ap)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	static const char *tag[] = { "error", "warning", "info", "debug" };
	/* sd-daemon(3)'s SD_ERR, SD_WARNING, SD_INFO, SD_DEBUG */
	static const char *sd[] = { "<3>", "<4>", "<6>", "<7>" };
	char buf[1024], *line, *next;
	size_t n;

	if (level > cur_level)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	/* messages quote what clients send (a control request's arguments, a
	 * header): no control byte reaches the log but the newline, and the
	 * lines after a message's first are indented, so that no text can
	 * pass for a line of its own */
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)buf[i] < 0x20 && buf[i] != '\n' && buf[i] != '\t') ||
		    buf[i] == 0x7f)
			buf[i] = '?';
	if (to_syslog) {
		syslog(prio[level], "%s%s%s", buf, suffix ? ": " : "", suffix ? suffix : "");
		return;
	}
	/* journald reads a prefix per line: every line of the message carries it */
	for (line = buf; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		fprintf(stderr, "%s%s: %s: %s%s%s%s\n", to_journal ? sd[level] : "", log_ident,
			tag[level], line == buf ? "" : "  ", line, next || !suffix ? "" : ": ",
			next || !suffix ? "" : suffix);
	}
}

static void log_at(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_at(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(level, NULL, fmt, ap);
	va_end(ap);
}

#define LOG_FN(fn, lvl, with_errno) \
	void fn(const char *fmt, ...) \
	{ \
		int saved = errno; \
		va_list ap; \
		va_start(ap, fmt); \
		vlog(lvl, with_errno ? strerror(saved) : NULL, fmt, ap); \
		va_end(ap); \
		errno = saved; \
	}

LOG_FN(log_err, XRL_LOG_ERR, 0)
LOG_FN(log_warn, XRL_LOG_WARN, 1)
LOG_FN(log_warnx, XRL_LOG_WARN, 0)
LOG_FN(log_info, XRL_LOG_INFO, 0)
LOG_FN(log_debug, XRL_LOG_DEBUG, 0)

/*
 * Library output is demoted to debug: libxdp probes its dispatcher on every
 * attach and libbpf then prints an alarming "permission error" that is
 * expected here (see docs/design.md); our own messages state every outcome
 * with its reason. -vv shows the libraries' words, verifier logs included.
 */
static int lib_print(enum libbpf_print_level level __attribute__((unused)), const char *fmt,
		     va_list ap)
{
	vlog(XRL_LOG_DEBUG, NULL, fmt, ap);
	return 0;
}

static int xdp_print(enum libxdp_print_level level __attribute__((unused)), const char *fmt,
		     va_list ap)
{
	vlog(XRL_LOG_DEBUG, NULL, fmt, ap);
	return 0;
}

void log_hook_libs(void)
{
	libbpf_set_print(lib_print);
	libxdp_set_print(xdp_print);
}

/* ---- aggregated lines ----------------------------------------------------- */

#define AGG_SLOTS    128 /* (what, key) pairs with a line pending or recent */
#define AGG_EXAMPLES 3	 /* example texts kept per pending line */
#define AGG_TEXT     160

struct agg_slot {
	bool used;
	int level;
	char what[32];			 /* "prefixes denied" */
	char key[96];			 /* "eth0: rule syn" */
	unsigned long long last_line_ns; /* the last line written; 0 = none */
	unsigned long long pending;	 /* events since then */
	unsigned long long first_ns;	 /* the first of them */
	char ex[AGG_EXAMPLES][AGG_TEXT];
};

static struct {
	pthread_mutex_t mu;
	unsigned long long interval_ns;
	unsigned long long lost; /* events that found no slot */
	struct agg_slot s[AGG_SLOTS];
} agg = { .mu = PTHREAD_MUTEX_INITIALIZER, .interval_ns = 10 * 1000000000ULL };

void log_agg_set_interval(unsigned long long ns)
{
	pthread_mutex_lock(&agg.mu);
	agg.interval_ns = ns;
	pthread_mutex_unlock(&agg.mu);
}

/* The line of s's pending events: one in full, several counted. */
static void agg_emit(struct agg_slot *s, unsigned long long now)
{
	char exs[AGG_EXAMPLES * (AGG_TEXT + 2)] = "";
	unsigned long long n = s->pending;

	if (n == 1) {
		log_at(s->level, "%s: %s", s->key, s->ex[0]);
	} else {
		for (unsigned long long i = 0; i < n && i < AGG_EXAMPLES; i++)
			snprintf(exs + strlen(exs), sizeof(exs) - strlen(exs), "%s%s",
				 i ? "; " : "", s->ex[i]);
		log_at(s->level, "%s: %llu %s in %.1f s, e.g. %s", s->key, n, s->what,
		       (double)(now - s->first_ns) / 1e9, exs);
	}
	s->pending = 0;
	s->last_line_ns = now;
}

/* The slot of (what, key): found, else a free one or one quiet for an
 * interval (reused); NULL when all are busy. Called with agg.mu held. */
static struct agg_slot *agg_slot(const char *what, const char *key, unsigned long long now)
{
	struct agg_slot *spare = NULL;

	for (int i = 0; i < AGG_SLOTS; i++) {
		struct agg_slot *s = &agg.s[i];

		if (s->used && !strcmp(s->key, key) && !strcmp(s->what, what))
			return s;
		if (!spare &&
		    (!s->used || (!s->pending && now - s->last_line_ns >= agg.interval_ns)))
			spare = s;
	}
	if (spare) {
		memset(spare, 0, sizeof(*spare));
		spare->used = true;
		snprintf(spare->what, sizeof(spare->what), "%s", what);
		snprintf(spare->key, sizeof(spare->key), "%s", key);
	}
	return spare;
}

void log_agg_at(unsigned long long now, int level, const char *key, const char *what,
		const char *example)
{
	struct agg_slot *s;

	if (level > cur_level)
		return;
	pthread_mutex_lock(&agg.mu);
	s = agg_slot(what, key, now);
	if (!s) {
		agg.lost++;
		pthread_mutex_unlock(&agg.mu);
		return;
	}
	if (!s->pending++)
		s->first_ns = now;
	if (s->pending <= AGG_EXAMPLES)
		snprintf(s->ex[s->pending - 1], AGG_TEXT, "%s", example);
	s->level = level < s->level || s->pending == 1 ? level : s->level;
	/* a quiet key's first event is written at once */
	if (!s->last_line_ns || now - s->last_line_ns >= agg.interval_ns)
		agg_emit(s, now);
	pthread_mutex_unlock(&agg.mu);
}

void log_agg(int level, const char *key, const char *what, const char *fmt, ...)
{
	struct timespec ts;
	char ex[AGG_TEXT];
	va_list ap;

	if (level > cur_level)
		return;
	va_start(ap, fmt);
	vsnprintf(ex, sizeof(ex), fmt, ap);
	va_end(ap);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	log_agg_at((unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec,
		   level, key, what, ex);
}

void log_agg_flush(unsigned long long now, bool all)
{
	unsigned long long lost;

	pthread_mutex_lock(&agg.mu);
	for (int i = 0; i < AGG_SLOTS; i++) {
		struct agg_slot *s = &agg.s[i];

		if (s->used && s->pending && (all || now - s->last_line_ns >= agg.interval_ns))
			agg_emit(s, now);
	}
	lost = agg.lost;
	agg.lost = 0;
	pthread_mutex_unlock(&agg.mu);
	if (lost)
		log_warnx("%llu log lines not written: more than %d kinds pending at once", lost,
			  AGG_SLOTS);
}
