// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * http_path.c - request paths normalised as a backend would route them.
 * The policy parser normalises rule prefixes with it and the identity tier
 * normalises each request's path, so both compare the same strings.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "http_cfg.h"

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/*
 * Escapes kept as they are (hex upper-cased): bytes that would mean
 * something else once decoded ('%', the query and fragment marks, the
 * ";params" mark) or that no server takes raw (controls). Everything else
 * is decoded, as nginx decodes the whole path before it matches locations.
 */
static bool keep_escaped(unsigned char b)
{
	return b < 0x20 || b == 0x7f || b == '%' || b == '?' || b == '#' || b == ';';
}

/*
 * The segment out[seg..*o) is complete (a '/' or the end follows): drop it
 * when it is "." and drop it with the one before when it is "..", never
 * above the root. Returns the start of the next segment.
 */
static size_t seg_done(char *out, size_t seg, size_t *o)
{
	size_t len = *o - seg;

	if (len == 1 && out[seg] == '.') {
		*o = seg;
		return seg;
	}
	if (len == 2 && out[seg] == '.' && out[seg + 1] == '.') {
		*o = seg;
		if (seg > 1) {
			size_t k = seg - 2; /* out[seg - 1] is the '/' before ".." */

			while (out[k] != '/')
				k--;
			*o = k + 1;
		}
		return *o;
	}
	return seg;
}

/* Skip "scheme://authority" of an absolute-form target; p at the path. */
static const char *skip_authority(const char *in, const char *end)
{
	size_t n = (size_t)(end - in);
	const char *p;

	if (n >= 7 && !strncasecmp(in, "http://", 7))
		p = in + 7;
	else if (n >= 8 && !strncasecmp(in, "https://", 8))
		p = in + 8;
	else
		return in;
	while (p < end && *p != '/' && *p != '?' && *p != '#')
		p++;
	return p;
}

int xrl_http_path_norm(const char *in, size_t n, char *out, size_t outlen)
{
	const char *end = in + n, *p = skip_authority(in, end), *q;
	bool absolute = p != in, params = false;
	size_t o = 1, seg = 1;

	for (q = p; q < end && *q != '?' && *q != '#'; q++)
		;
	end = q;
	if (p == end && absolute) {
		if (outlen < 2)
			return -ENAMETOOLONG;
		memcpy(out, "/", 2);
		return 1;
	}
	if (p == end || *p != '/')
		return -EINVAL;
	/* never longer than the input: the whole path fits if its input does */
	if ((size_t)(end - p) >= outlen)
		return -ENAMETOOLONG;
	out[0] = '/';
	for (p++; p < end; p++) {
		unsigned char b = (unsigned char)*p;
		bool escaped = false;

		if (b < 0x20 || b == 0x7f)
			return -EINVAL;
		if (b == '%') {
			int hi = end - p > 2 ? hexval(p[1]) : -1,
			    lo = end - p > 2 ? hexval(p[2]) : -1;

			if (hi < 0 || lo < 0)
				return -EINVAL;
			b = (unsigned char)(hi << 4 | lo);
			if (!b)
				return -EINVAL; /* %00: nginx refuses it, C strings end there */
			p += 2;
			escaped = keep_escaped(b);
		} else if (b == ';') {
			params = true; /* to the end of the segment */
			continue;
		}
		if (b == '/' && !escaped) {
			params = false;
			seg = seg_done(out, seg, &o);
			if (o > seg) { /* not empty: "//" merges */
				out[o++] = '/';
				seg = o;
			}
			continue;
		}
		if (params)
			continue;
		if (escaped) {
			static const char hx[] = "0123456789ABCDEF";

			out[o++] = '%';
			out[o++] = hx[b >> 4];
			out[o++] = hx[b & 15];
		} else {
			out[o++] = (char)b;
		}
	}
	seg_done(out, seg, &o);
	out[o] = '\0';
	return (int)o;
}

/* ---- addresses -------------------------------------------------------------------- */
