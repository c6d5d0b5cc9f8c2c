// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fuzz_peaks.c - libFuzzer harness for the callers' peaks as xrld reads
 * them back from STATE_DIR/peaks.json (user/lib/peaks.c,
 * xrl_peaks_from_json): a file on disk, which a crash may cut and anyone
 * who can write the state directory may forge.
 *
 * Input: JSON text, parsed by jansson; an object is read as a histogram.
 *
 * Invariants checked (abort on violation):
 *  - a document that is refused leaves the histogram empty;
 *  - one that is taken writes back to a document that reads to the same
 *    histogram (callers, requests, maxima, cells), and its sums hold;
 *  - its quantiles are non-decreasing in q and at most the maximum, and a
 *    recommendation at share 0 refuses no caller-epoch.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "peaks.h"

#define FUZZ_NAME "fuzz_peaks"
#include "fuzz_check.h"

static void same(const struct xrl_peaks *a, const struct xrl_peaks *b)
{
	CHECK(a->n == b->n && a->callers == b->callers && a->requests == b->requests &&
		      a->max_rate == b->max_rate && a->max_burst == b->max_burst &&
		      a->refused_callers == b->refused_callers &&
		      a->refused_requests == b->refused_requests,
	      "a round trip changed the histogram");
	CHECK(!a->n || !memcmp(a->cells, b->cells, a->n * sizeof(a->cells[0])),
	      "a round trip changed the cells");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xrl_peaks h = { 0 }, h2 = { 0 };
	struct xrl_peaks_advice adv;
	json_error_t je;
	json_t *j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je), *w;
	uint64_t sum = 0, last = 0;
	int rc;

	if (!j)
		return 0;
	rc = xrl_peaks_from_json(j, &h);
	json_decref(j);
	if (rc) {
		CHECK(h.n == 0 && h.callers == 0, "a refused document left cells");
		xrl_peaks_free(&h);
		return 0;
	}
	for (size_t i = 0; i < h.n; i++)
		sum += h.cells[i].callers;
	CHECK(sum == h.callers, "cells' callers %llu, total %llu", (unsigned long long)sum,
	      (unsigned long long)h.callers);
	w = xrl_peaks_to_json(&h);
	CHECK(w != NULL, "no JSON for a histogram read");
	CHECK(xrl_peaks_from_json(w, &h2) == 0, "a written histogram does not read back");
	json_decref(w);
	same(&h, &h2);
	for (int k = 0; k <= 10; k++) {
		uint64_t q = xrl_peaks_quantile(&h, XRL_PEAKS_RATE, k / 10.0);

		CHECK(q >= last && q <= h.max_rate, "quantile %d: %llu after %llu, max %llu", k,
		      (unsigned long long)q, (unsigned long long)last,
		      (unsigned long long)h.max_rate);
		last = q;
	}
	rc = xrl_peaks_recommend(&h, 0, 1, &adv);
	CHECK(rc == 0 || (rc == -ENODATA && !h.callers), "recommend: %d", rc);
	CHECK(rc || adv.proposal.refused.callers == 0, "share 0 refused %llu",
	      (unsigned long long)adv.proposal.refused.callers);
	xrl_peaks_free(&h);
	xrl_peaks_free(&h2);
	return 0;
}
