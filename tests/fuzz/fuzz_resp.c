// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fuzz_resp.c - libFuzzer harness for the RESP replies the identity tier
 * reads from Redis: hiredis's redisReader fed the input in pieces (as
 * reads arrive), and every reply it yields walked by xrl_script_reply
 * (user/http/limiter/limiter.c), the code of ours that reads a script call's answer;
 * the reader guarded as the pipe guards it (xrl_reader_guard_new).
 *
 * Input: byte 0 sets the shape the walk expects: n = 1 + (b0 & 3)
 * decisions, decision d of 1 + ((b0 >> (2 + d)) & 1) keys; byte 1 the size
 * of the pieces fed (1 + b1 % 64; 0: all at once). The rest is the stream.
 * A reply of the right shape is checked for what the walk promises: a
 * status per decision, and TATs parsed from digits only.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <hiredis/hiredis.h>

#include "http/http.h"

static void walk(const redisReply *r, const int *nk, int n)
{
	struct xrl_script_key keys[8];
	int st[4] = { -1, -1, -1, -1 };
	int rc = xrl_script_reply(r, nk, n, st, keys);

	if (rc == 0)
		for (int d = 0; d < n; d++)
			if (st[d] != XRL_SCRIPT_OK && st[d] != XRL_SCRIPT_BADKEY)
				abort();
	/* the pipe reads a reply of one element per call too */
	if (rc == 0 && n > 1) {
		int one = 1;

		(void)xrl_script_reply(r, &one, 1, st, keys);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xrl_reader_guard *g;
	redisReader *rd;
	int nk[4], n;
	size_t piece, off;

	if (size < 2)
		return 0;
	n = 1 + (data[0] & 3);
	for (int d = 0; d < n; d++)
		nk[d] = 1 + ((data[0] >> (2 + d)) & 1);
	piece = data[1] ? 1 + data[1] % 64 : size;
	data += 2;
	size -= 2;
	rd = redisReaderCreate();
	if (!rd)
		return 0;
	g = xrl_reader_guard_new(rd); /* as the pipe's reader: "*N" bounded */
	if (!g) {
		redisReaderFree(rd);
		return 0;
	}
	for (off = 0; off < size;) {
		size_t len = size - off < piece ? size - off : piece;
		void *reply = NULL;

		if (redisReaderFeed(rd, (const char *)data + off, len) != REDIS_OK)
			break;
		off += len;
		for (;;) {
			if (redisReaderGetReply(rd, &reply) != REDIS_OK) {
				off = size; /* a protocol error: the pipe drops the connection */
				break;
			}
			if (!reply)
				break;
			xrl_reader_guard_reset(g);
			walk(reply, nk, n);
			freeReplyObject(reply);
		}
	}
	redisReaderFree(rd);
	free(g);
	return 0;
}
