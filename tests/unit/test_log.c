// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_log.c - what log.c writes: sd-daemon priority prefixes when stderr
 * is journald's stream (and only then), and aggregated lines: a flood of
 * events on one key is at most one line per interval, with every event
 * counted in some line. stderr is captured in a temporary file; the clock
 * of the aggregation is simulated. No root needed.
 */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "log.h"

static int saved_fd = -1;
static char cap_path[] = "/tmp/xrl-test-log-XXXXXX";

/* stderr into a fresh temporary file; journal: JOURNAL_STREAM names it. */
static void capture_begin(bool journal, const char *ident, int level)
{
	int fd = mkstemp(cap_path);
	struct stat st;
	char env[64];

	assert_true(fd >= 0);
	fflush(stderr);
	saved_fd = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	close(fd);
	fstat(STDERR_FILENO, &st);
	/* not journal: a stream that is not stderr (its inode + 1) */
	snprintf(env, sizeof(env), "%llu:%llu", (ull)st.st_dev, (ull)st.st_ino + !journal);
	setenv("JOURNAL_STREAM", env, 1);
	log_init(ident, level, 0);
}

/* stderr back; what was written in the capture, into out. */
static void capture_end(char *out, size_t len)
{
	FILE *f;
	size_t n;

	fflush(stderr);
	dup2(saved_fd, STDERR_FILENO);
	close(saved_fd);
	unsetenv("JOURNAL_STREAM");
	f = fopen(cap_path, "r");
	assert_non_null(f);
	n = fread(out, 1, len - 1, f);
	out[n] = '\0';
	fclose(f);
	unlink(cap_path);
	strcpy(cap_path, "/tmp/xrl-test-log-XXXXXX");
}

static void journal_priorities(void **state)
{
	char out[4096];

	(void)state;
	CTX("stderr is the journal: every line starts with <N>");
	capture_begin(true, "t", XRL_LOG_INFO);
	log_err("bad file");
	log_warnx("odd");
	log_info("fine");
	log_debug("hidden at info");
	log_err("two\nlines");
	capture_end(out, sizeof(out));
	STR_EQ(out, "<3>t: error: bad file\n"
		    "<4>t: warning: odd\n"
		    "<6>t: info: fine\n"
		    "<3>t: error: two\n"
		    "<3>t: error:   lines\n");
	CTX("JOURNAL_STREAM names another stream: no prefix");
	capture_begin(false, "t", XRL_LOG_INFO);
	log_err("bad file");
	capture_end(out, sizeof(out));
	STR_EQ(out, "t: error: bad file\n");
	/* what a client sends is quoted in messages (a control request's
	 * argument, refused): it cannot forge a line of its own, nor send the
	 * terminal or the journal a control byte */
	CTX("a forged line and control bytes in a quoted argument");
	capture_begin(true, "t", XRL_LOG_INFO);
	log_warnx("change refused: `deny add %s`", "1.2.3.4\n<3>t: error: forged\r\x1b[2J");
	capture_end(out, sizeof(out));
	STR_EQ(out, "<4>t: warning: change refused: `deny add 1.2.3.4\n"
		    "<4>t: warning:   <3>t: error: forged??[2J`\n");
	capture_begin(false, "t", XRL_LOG_INFO);
	log_warnx("x %s", "a\nt: error: forged");
	capture_end(out, sizeof(out));
	STR_EQ(out, "t: warning: x a\nt: warning:   t: error: forged\n");
}

/* What the flood's lines said, per key. */
struct flood_result {
	int lines[2];
	ull counted[2];
	ull min_gap[2]; /* least time between two lines of one key, shutdown's apart */
};

/*
 * Two keys, an event every 5 ms on each for 35 s, a flush every second.
 * Each time the captured file grows, the new lines are read and tagged
 * with the simulated time.
 */
static void flood_run(struct flood_result *r)
{
	static char out[1 << 16];
	const char *keys[2] = { "eth0: rule syn", "eth0: rule login" };
	ull last[2] = { 0, 0 };
	FILE *f;

	memset(r, 0, sizeof(*r));
	r->min_gap[0] = r->min_gap[1] = ~0ULL;
	capture_begin(false, "t", XRL_LOG_INFO);
	log_agg_set_interval(10 * SEC);
	f = fopen(cap_path, "r");
	for (ull t = 1 * SEC; t <= 36 * SEC; t += 5 * MS) {
		bool end = t + 5 * MS > 36 * SEC;

		for (int k = 0; k < 2 && !end; k++)
			log_agg_at(t, XRL_LOG_INFO, keys[k], "prefixes denied", "198.51.100.1/32");
		if (t % SEC == 0 || end)
			log_agg_flush(t, end);
		fflush(stderr);
		clearerr(f); /* glibc's EOF is sticky: read on past the last one */
		while (fgets(out, sizeof(out), f)) {
			int k = strstr(out, keys[0]) ? 0 : 1;
			const char *n = strstr(out, keys[k]) + strlen(keys[k]) + 2;

			r->counted[k] += strstr(out, " prefixes denied in ") ? strtoull(n, NULL, 10)
									     : 1;
			if (r->lines[k]++ && !end && t - last[k] < r->min_gap[k])
				r->min_gap[k] = t - last[k];
			last[k] = t;
		}
	}
	fclose(f);
	capture_end(out, sizeof(out));
}

static void aggregated_flood(void **state)
{
	struct flood_result r;
	const ull events = (35 * SEC - 5 * MS) / (5 * MS) + 1;

	(void)state;
	flood_run(&r);
	for (int k = 0; k < 2; k++) {
		CTX("key %d: %llu events over 35 s, one line per 10 s at most", k, events);
		LE(r.lines[k], 5);
		EQ(r.lines[k] >= 4, 1);
		EQ(r.counted[k], events);
		EQ(r.min_gap[k] >= 10 * SEC, 1);
	}
}

static void aggregated_line_shape(void **state)
{
	char out[4096];

	(void)state;
	CTX("a quiet key: at once, in full; then counted with 3 examples");
	capture_begin(false, "t", XRL_LOG_INFO);
	log_agg_set_interval(10 * SEC);
	log_agg_at(100 * SEC, XRL_LOG_INFO, "eth0: rule a", "prefixes denied", "10.0.0.1/32 x");
	for (int i = 2; i <= 6; i++) {
		char ex[32];

		snprintf(ex, sizeof(ex), "10.0.0.%d/32 x", i);
		log_agg_at(100 * SEC + (ull)i * SEC, XRL_LOG_INFO, "eth0: rule a",
			   "prefixes denied", ex);
	}
	log_agg_flush(105 * SEC, false); /* not yet: 5 s since the line */
	log_agg_flush(110 * SEC, false);
	log_agg_flush(200 * SEC, false); /* nothing pending */
	capture_end(out, sizeof(out));
	STR_EQ(out, "t: info: eth0: rule a: 10.0.0.1/32 x\n"
		    "t: info: eth0: rule a: 5 prefixes denied in 8.0 s, e.g. 10.0.0.2/32 x; "
		    "10.0.0.3/32 x; 10.0.0.4/32 x\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(journal_priorities),
		cmocka_unit_test(aggregated_flood),
		cmocka_unit_test(aggregated_line_shape),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
