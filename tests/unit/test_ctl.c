// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_ctl.c - unit tests of the control socket's wire format
 * (user/lib/control_wire.c): encode/decode round trips, and that truncated
 * or hostile frames are refused without reading a byte past the frame. Each
 * frame is decoded from the very end of a page whose next page is PROT_NONE,
 * so a read past `len` is a SIGSEGV here (issue 11, finding 13a: strtol
 * read past len). Also the verbs a frame carries: a flag option.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"

#include "control_wire.h"
#include "verbs.h"

static char *guard; /* two pages: read-write, then PROT_NONE */
static size_t page;

static int setup(void **state)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	guard = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (guard == MAP_FAILED || mprotect(guard + page, page, PROT_NONE))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	munmap(guard, 2 * page);
	return 0;
}

/* Decode len bytes of frame placed so that its last byte is the page's last. */
static int decode_at_end(const char *frame, size_t len, int *argc, char **argv)
{
	char *p = guard + page - len;

	memcpy(p, frame, len);
	return xrl_ctl_decode(p, len, argc, argv);
}

static void test_roundtrip(void **state)
{
	const char *args[] = { "policy", "apply", "", "a\nb c\0d", "XRL1 2\n" };
	char *req, *argv[XRL_CTL_MAXARGS + 1];
	int argc = -1;
	long n;

	CTX("encode 5 arguments");
	n = xrl_ctl_encode(5, args, &req);
	GE(n, 1);
	EQ(decode_at_end(req, (size_t)n, &argc, argv), 0);
	EQ(argc, 5);
	for (int i = 0; i < 5; i++) {
		CTX("argument %d", i);
		assert_string_equal(argv[i], args[i]);
	}
	assert_null(argv[5]);
	free(req);

	CTX("no arguments");
	EQ(decode_at_end("XRL1 0\n", 7, &argc, argv), 0);
	EQ(argc, 0);
	assert_null(argv[0]);

	CTX("leading zeros are still digits");
	EQ(decode_at_end("XRL1 01\n002\nhi", 14, &argc, argv), 0);
	EQ(argc, 1);
	assert_string_equal(argv[0], "hi");
}

/* Every proper prefix of a good frame is refused, and nothing past it read. */
static void test_truncated(void **state)
{
	const char *args[] = { "status", "1234567890", "x" };
	char *req, *argv[XRL_CTL_MAXARGS + 1];
	int argc;
	long n;

	n = xrl_ctl_encode(3, args, &req);
	GE(n, 1);
	for (long l = 0; l < n; l++) {
		CTX("first %ld of %ld bytes", l, n);
		EQ(decode_at_end(req, (size_t)l, &argc, argv), -EPROTO);
	}
	free(req);
}

/* A frame the decoder must refuse, and what is wrong with it. */
struct hostile_frame {
	const char *what, *frame;
};

static void test_hostile(void **state)
{
	static const struct hostile_frame bad[] = {
		{ "count without its newline", "XRL1 12" },
		{ "count of digits only, long", "XRL1 99999999999999999999999999" },
		{ "count over the maximum", "XRL1 65\n" },
		{ "count that overflows a long", "XRL1 99999999999999999999\n" },
		{ "negative count", "XRL1 -1\n" },
		{ "signed count", "XRL1 +1\n1\nx" },
		{ "space before the count", "XRL1  1\n1\nx" },
		{ "no count", "XRL1 \n" },
		{ "wrong magic", "XRL2 0\n" },
		{ "length without its newline", "XRL1 1\n12" },
		{ "length past the end", "XRL1 1\n5\nabc" },
		{ "huge length", "XRL1 1\n18446744073709551617\nx" },
		{ "negative length", "XRL1 1\n-1\nx" },
		{ "length with a space", "XRL1 1\n 1\nx" },
		{ "missing argument", "XRL1 2\n1\nx" },
		{ "trailing bytes", "XRL1 1\n1\nxy" },
		{ "NUL in the count", "XRL1 1\0\n1\nx" },
	};
	char *argv[XRL_CTL_MAXARGS + 1];
	int argc;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CTX("%s", bad[i].what);
		EQ(decode_at_end(bad[i].frame, strlen(bad[i].frame), &argc, argv), -EPROTO);
	}
	CTX("NUL in the count (length given)");
	EQ(decode_at_end("XRL1 1\0\n1\nx", 11, &argc, argv), -EPROTO);
}

/* A flag option (deny add --force) takes no value and may stand anywhere
 * after the verb; a verb without it refuses it; left out, its text is NULL. */
static void test_verb_flag(void **state)
{
	char d[] = "deny", add[] = "add", del[] = "del", all[] = "0.0.0.0/0", force[] = "--force",
	     ttl[] = "--ttl", m[] = "1m";
	char *const a1[] = { d, add, force, all, ttl, m };
	char *const a2[] = { d, del, all, force };
	char *const a3[] = { d, add, all };
	struct xrl_verb_call c;
	const char *w;
	char err[256];

	assert_int_equal(xrl_verb_parse(6, a1, true, &c, &w, err, sizeof(err)), 0);
	assert_string_equal(c.a.deny.force.text, "--force");
	assert_string_equal(c.a.deny.ttl.text, "1m");
	assert_string_equal(c.a.deny.prefix.text, all);
	assert_int_equal(xrl_verb_parse(4, a2, true, &c, &w, err, sizeof(err)), 2);
	assert_non_null(strstr(err, "--force"));
	assert_int_equal(xrl_verb_parse(3, a3, true, &c, &w, err, sizeof(err)), 0);
	assert_null(c.a.deny.force.text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile, setup, teardown),
		cmocka_unit_test(test_verb_flag),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
