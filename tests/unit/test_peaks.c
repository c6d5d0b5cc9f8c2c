// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_peaks.c - the histogram of callers' peaks and the limit it
 * recommends (issue 25): the bins' edges and widths, add and merge (the
 * same cells either way, the cell limit refused whole), quantiles of a
 * known population within a bin's width, what a candidate refuses, the
 * least limit within a share and its candidates (and the same limit a
 * brute-force search finds over random populations), the headroom, and the
 * JSON form: a round trip, and documents a corrupt or hostile file could
 * hold, each refused with the histogram left empty.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "peaks.h"

/* Every field of two histograms, cell by cell. */
static void same(const struct xrl_peaks *got, const struct xrl_peaks *want)
{
	EQ(got->n, want->n);
	EQ(got->callers, want->callers);
	EQ(got->requests, want->requests);
	EQ(got->max_rate, want->max_rate);
	EQ(got->max_burst, want->max_burst);
	EQ(got->refused_callers, want->refused_callers);
	EQ(got->refused_requests, want->refused_requests);
	for (size_t i = 0; i < want->n; i++) {
		EQ(got->cells[i].rate_bin, want->cells[i].rate_bin);
		EQ(got->cells[i].burst_bin, want->cells[i].burst_bin);
		EQ(got->cells[i].callers, want->cells[i].callers);
		EQ(got->cells[i].requests, want->cells[i].requests);
	}
}

/* What a refused document must leave: nothing, no buffer either. */
static void empty(const struct xrl_peaks *h)
{
	EQ(h->n, 0);
	EQ(h->cells == NULL, true);
	EQ(h->callers, 0);
	EQ(h->requests, 0);
	EQ(h->max_rate, 0);
	EQ(h->max_burst, 0);
	EQ(h->refused_callers, 0);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Callers at values spread over many octaves (and some past the max). */
static void add_spread(struct xrl_peaks *h, uint64_t seed, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t r = rnd(&seed) % (2ULL << (rnd(&seed) % 42));
		uint64_t b = rnd(&seed) % (2ULL << (rnd(&seed) % 20));

		assert_int_equal(xrl_peaks_add(h, r, b, 1 + rnd(&seed) % 3, r * 60), 0);
	}
	xrl_peaks_add_refused(h, 2, 77);
}

static void bin_edges(void **state)
{
	(void)state;
	CTX("values below 16 are their own bin");
	for (uint64_t v = 0; v < 16; v++) {
		EQ(xrl_peaks_bin(v), v);
		EQ(xrl_peaks_bin_low((uint32_t)v), v);
		EQ(xrl_peaks_bin_high((uint32_t)v), v);
	}
	CTX("16 and 17 open the first octave, exact up to 31");
	EQ(xrl_peaks_bin(16), 16);
	EQ(xrl_peaks_bin(17), 17);
	EQ(xrl_peaks_bin(31), 31);
	CTX("from 32 a bin is 2 wide: 32 and 33 share one");
	EQ(xrl_peaks_bin(32), 32);
	EQ(xrl_peaks_bin(33), 32);
	EQ(xrl_peaks_bin(34), 33);
	EQ(xrl_peaks_bin_high(32), 33);
	for (unsigned int e = 4; e <= 40; e++) {
		uint64_t p = 1ULL << e;

		CTX("the power of two 2^%u opens its octave's first bin", e);
		EQ(xrl_peaks_bin(p), 16 + (e - 4) * 16);
		EQ(xrl_peaks_bin_low(xrl_peaks_bin(p)), p);
		EQ(xrl_peaks_bin(p - 1), 16 + (e - 4) * 16 - 1);
		EQ(xrl_peaks_bin_high(xrl_peaks_bin(p - 1)), p - 1);
	}
	CTX("the max is the last bin, which holds it alone");
	EQ(xrl_peaks_bin(XRL_PEAKS_VALUE_MAX), XRL_PEAKS_BINS - 1);
	EQ(xrl_peaks_bin_low(XRL_PEAKS_BINS - 1), XRL_PEAKS_VALUE_MAX);
	EQ(xrl_peaks_bin_high(XRL_PEAKS_BINS - 1), XRL_PEAKS_VALUE_MAX);
	EQ(xrl_peaks_bin(XRL_PEAKS_VALUE_MAX - 1), XRL_PEAKS_BINS - 2);
	CTX("values above the max count as it");
	EQ(xrl_peaks_bin(XRL_PEAKS_VALUE_MAX + 1), XRL_PEAKS_BINS - 1);
	EQ(xrl_peaks_bin(UINT64_MAX), XRL_PEAKS_BINS - 1);
	CTX("a bin past the last is taken as the last");
	EQ(xrl_peaks_bin_low(XRL_PEAKS_BINS), XRL_PEAKS_VALUE_MAX);
	EQ(xrl_peaks_bin_high(UINT32_MAX), XRL_PEAKS_VALUE_MAX);
}

static void bin_round_trip(void **state)
{
	(void)state;
	for (uint32_t b = 0; b < XRL_PEAKS_BINS; b++) {
		uint64_t lo = xrl_peaks_bin_low(b), hi = xrl_peaks_bin_high(b);

		CTX("bin %u [%llu, %llu]: both ends in it", b, (ull)lo, (ull)hi);
		EQ(xrl_peaks_bin(lo), b);
		EQ(xrl_peaks_bin(hi), b);
		LE(lo, hi);
		CTX("bin %u: at most 1/16 of its value wide", b);
		if (lo >= 16)
			LE((hi - lo + 1) * 16, lo);
		else
			EQ(hi, lo);
		if (b) {
			CTX("bin %u starts where bin %u ends", b, b - 1);
			EQ(lo, xrl_peaks_bin_high(b - 1) + 1);
		}
	}
}

static void add_counts(void **state)
{
	struct xrl_peaks h = { 0 }, before;

	(void)state;
	CTX("three adds, two in one cell: cells sorted, sums and maxima");
	EQ(xrl_peaks_add(&h, 100, 3, 2, 500), 0);
	EQ(xrl_peaks_add(&h, 5, 40, 1, 5), 0);
	EQ(xrl_peaks_add(&h, 101, 3, 1, 60), 0); /* 100's bin: [100, 103] */
	EQ(h.n, 2);
	EQ(h.cells[0].rate_bin, xrl_peaks_bin(5));
	EQ(h.cells[1].rate_bin, xrl_peaks_bin(100));
	EQ(h.cells[1].callers, 3);
	EQ(h.cells[1].requests, 560);
	EQ(h.callers, 4);
	EQ(h.requests, 565);
	EQ(h.max_rate, 101);
	EQ(h.max_burst, 40);
	CTX("no callers counts nothing; requests without callers are refused");
	EQ(xrl_peaks_add(&h, 7, 7, 0, 0), 0);
	EQ(xrl_peaks_add(&h, 7, 7, 0, 9), (ull)-EINVAL);
	EQ(h.n, 2);
	CTX("a rate above the max counts as the max");
	EQ(xrl_peaks_add(&h, UINT64_MAX, 1, 1, 1), 0);
	EQ(h.max_rate, XRL_PEAKS_VALUE_MAX);
	EQ(h.cells[h.n - 1].rate_bin, XRL_PEAKS_BINS - 1);
	CTX("callers or requests past INT64_MAX: -EOVERFLOW, nothing changed");
	before = h;
	EQ(xrl_peaks_add(&h, 9, 9, INT64_MAX, 1), (ull)-EOVERFLOW);
	EQ(xrl_peaks_add(&h, 5, 40, 1, INT64_MAX), (ull)-EOVERFLOW);
	same(&h, &before);
	CTX("the refusals the rule's own limit made saturate");
	xrl_peaks_add_refused(&h, 3, 30);
	xrl_peaks_add_refused(&h, UINT64_MAX, 1);
	EQ(h.refused_callers, INT64_MAX);
	EQ(h.refused_requests, 31);
	CTX("reset empties and keeps the buffer");
	xrl_peaks_reset(&h);
	EQ(h.n, 0);
	EQ(h.callers, 0);
	EQ(h.refused_callers, 0);
	EQ(h.cells != NULL, true);
	EQ(xrl_peaks_add(&h, 1, 1, 1, 1), 0);
	EQ(h.n, 1);
	xrl_peaks_free(&h);
	empty(&h);
}

static void add_merge_same(void **state)
{
	struct xrl_peaks one = { 0 }, a = { 0 }, b = { 0 }, none = { 0 }, twice = { 0 };

	(void)state;
	add_spread(&one, 1, 3000);
	add_spread(&one, 2, 2000);
	add_spread(&a, 1, 3000);
	add_spread(&b, 2, 2000);
	CTX("adding A then B into one histogram equals A merged with B");
	EQ(xrl_peaks_merge(&a, &b), 0);
	same(&a, &one);
	for (size_t i = 1; i < a.n; i++) {
		CTX("merged cells %zu and %zu in strictly increasing order", i - 1, i);
		CHECK_(a.cells[i - 1].rate_bin < a.cells[i].rate_bin ||
			       (a.cells[i - 1].rate_bin == a.cells[i].rate_bin &&
				a.cells[i - 1].burst_bin < a.cells[i].burst_bin),
		       "cells out of order\n");
	}
	CTX("merged into an empty histogram: a copy");
	EQ(xrl_peaks_merge(&none, &one), 0);
	same(&none, &one);
	CTX("an empty histogram merged in: nothing changes");
	xrl_peaks_reset(&b);
	EQ(xrl_peaks_merge(&a, &b), 0);
	same(&a, &one);
	CTX("a histogram merged into itself doubles each cell");
	EQ(xrl_peaks_merge(&twice, &one), 0);
	EQ(xrl_peaks_merge(&twice, &one), 0);
	EQ(xrl_peaks_merge(&one, &one), 0);
	same(&one, &twice);
	CTX("a merge whose sums would pass INT64_MAX: -EOVERFLOW, dst as it was");
	xrl_peaks_reset(&b);
	EQ(xrl_peaks_add(&b, 3, 3, INT64_MAX - 10, 0), 0);
	EQ(xrl_peaks_merge(&one, &b), (ull)-EOVERFLOW);
	same(&one, &twice);
	xrl_peaks_free(&one);
	xrl_peaks_free(&a);
	xrl_peaks_free(&b);
	xrl_peaks_free(&none);
	xrl_peaks_free(&twice);
}

/* XRL_PEAKS_CELLS_MAX cells: 256 rate bins by 256 burst bins, in order. */
static void fill(struct xrl_peaks *h)
{
	for (uint32_t r = 0; r < 256; r++)
		for (uint32_t b = 0; b < 256; b++)
			assert_int_equal(xrl_peaks_add(h, xrl_peaks_bin_low(r),
						       xrl_peaks_bin_low(b), 1, 1),
					 0);
}

static void cell_limit(void **state)
{
	struct xrl_peaks h = { 0 }, before = { 0 }, other = { 0 };
	uint64_t top = xrl_peaks_bin_low(300);

	(void)state;
	fill(&h);
	fill(&before);
	CTX("a full histogram");
	EQ(h.n, XRL_PEAKS_CELLS_MAX);
	CTX("a new cell past the limit: -E2BIG, nothing lost");
	EQ(xrl_peaks_add(&h, top, 1, 1, 1), (ull)-E2BIG);
	same(&h, &before);
	CTX("a cell already there still counts");
	EQ(xrl_peaks_add(&h, 1, 1, 1, 1), 0);
	EQ(h.callers, before.callers + 1);
	EQ(h.n, XRL_PEAKS_CELLS_MAX);
	CTX("a merge bringing a new cell: -E2BIG, dst as it was");
	xrl_peaks_reset(&h);
	fill(&h);
	EQ(xrl_peaks_add(&other, 2, 2, 5, 5), 0);
	EQ(xrl_peaks_add(&other, top, top, 1, 1), 0);
	EQ(xrl_peaks_merge(&h, &other), (ull)-E2BIG);
	same(&h, &before);
	CTX("a merge of cells already there is fine at the limit");
	xrl_peaks_reset(&other);
	EQ(xrl_peaks_add(&other, 2, 2, 5, 5), 0);
	EQ(xrl_peaks_merge(&h, &other), 0);
	EQ(h.n, XRL_PEAKS_CELLS_MAX);
	EQ(h.callers, before.callers + 5);
	xrl_peaks_free(&h);
	xrl_peaks_free(&before);
	xrl_peaks_free(&other);
}

/* 1,000 callers at the rates 1 .. 1000, burst a quarter of the rate. */
static void thousand(struct xrl_peaks *h)
{
	for (uint64_t r = 1; r <= 1000; r++)
		assert_int_equal(xrl_peaks_add(h, r, r / 4, 1, r * 60), 0);
}

static void quantiles(void **state)
{
	static const double qs[] = { 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999 };
	struct xrl_peaks h = { 0 };

	(void)state;
	CTX("an empty histogram's quantiles are 0");
	EQ(xrl_peaks_quantile(&h, XRL_PEAKS_RATE, 0.5), 0);
	EQ(xrl_peaks_quantile(&h, XRL_PEAKS_BURST, 1), 0);
	thousand(&h);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		uint64_t want = (uint64_t)(qs[i] * 1000 + 0.5);
		uint64_t got = xrl_peaks_quantile(&h, XRL_PEAKS_RATE, qs[i]);

		CTX("rates 1..1000: p%g is %llu, or above it within a bin's width", qs[i] * 100,
		    (ull)want);
		GE(got, want);
		LE(got, want + (want < 16 ? 0 : want / 16));
		CTX("bursts r/4: p%g is %llu, or above it within a bin's width", qs[i] * 100,
		    (ull)(want / 4));
		got = xrl_peaks_quantile(&h, XRL_PEAKS_BURST, qs[i]);
		GE(got, want / 4);
		LE(got, want / 4 + (want / 4 < 16 ? 0 : want / 4 / 16));
	}
	CTX("q = 1 is the exact maximum, not its bin's upper value");
	EQ(xrl_peaks_quantile(&h, XRL_PEAKS_RATE, 1), 1000);
	EQ(xrl_peaks_quantile(&h, XRL_PEAKS_BURST, 1), 250);
	CTX("q = 0 (and below, and NaN) is the least value's bin; above 1 is the maximum");
	EQ(xrl_peaks_quantile(&h, XRL_PEAKS_RATE, 0), 1);
	EQ(xrl_peaks_quantile(&h, XRL_PEAKS_RATE, -3), 1);
	EQ(xrl_peaks_quantile(&h, XRL_PEAKS_RATE, NAN), 1);
	EQ(xrl_peaks_quantile(&h, XRL_PEAKS_BURST, 0), 0);
	EQ(xrl_peaks_quantile(&h, XRL_PEAKS_RATE, 7), 1000);
	CTX("p7 of 100 callers is the 7th, though 0.07 * 100 is 7.000000000000001");
	xrl_peaks_reset(&h);
	for (uint64_t r = 1; r <= 100; r++)
		EQ(xrl_peaks_add(&h, r, 1, 1, 1), 0);
	EQ(xrl_peaks_quantile(&h, XRL_PEAKS_RATE, 0.07), 7);
	xrl_peaks_free(&h);
}

static void refused_estimate(void **state)
{
	struct xrl_peaks h = { 0 };
	struct xrl_peaks_refusal out;

	(void)state;
	EQ(xrl_peaks_add(&h, 10, 2, 5, 500), 0); /* 5 callers, 100 requests each */
	EQ(xrl_peaks_add(&h, 8, 12, 2, 160), 0); /* under the rate, over the burst */
	EQ(xrl_peaks_add(&h, 4, 30, 1, 10), 0);	 /* over the burst by more than it sent */
	CTX("a limit above every peak refuses nothing");
	xrl_peaks_refused(&h, 10, 30, &out);
	EQ(out.callers, 0);
	EQ(out.requests, 0);
	CTX("rate 4: the rate-10 callers lose 6/10 of their requests, the 8s half");
	xrl_peaks_refused(&h, 4, 30, &out);
	EQ(out.callers, 7);
	EQ(out.requests, 500 * 6 / 10 + 160 / 2);
	CTX("burst 10: the burst-12 callers lose 2 each, the burst-30 one all it sent");
	xrl_peaks_refused(&h, 10, 10, &out);
	EQ(out.callers, 3);
	EQ(out.requests, 2 * 2 + 10);
	CTX("over both: counted once, as over the rate");
	xrl_peaks_refused(&h, 5, 1, &out);
	EQ(out.callers, 8);
	EQ(out.requests, 500 / 2 + 160 * 3 / 8 + 10 * 1);
	CTX("an empty histogram refuses nothing");
	xrl_peaks_free(&h);
	xrl_peaks_refused(&h, 0, 0, &out);
	EQ(out.callers, 0);
	EQ(out.requests, 0);
}

static void recommend_errors(void **state)
{
	struct xrl_peaks h = { 0 };
	struct xrl_peaks_advice adv;

	(void)state;
	CTX("an empty histogram: -ENODATA");
	EQ(xrl_peaks_recommend(&h, 0.01, 1, &adv), (ull)-ENODATA);
	EQ(xrl_peaks_add(&h, 5, 5, 1, 1), 0);
	CTX("a share outside [0, 1] or NaN: -EINVAL");
	EQ(xrl_peaks_recommend(&h, -0.01, 1, &adv), (ull)-EINVAL);
	EQ(xrl_peaks_recommend(&h, 1.01, 1, &adv), (ull)-EINVAL);
	EQ(xrl_peaks_recommend(&h, NAN, 1, &adv), (ull)-EINVAL);
	CTX("a headroom below 1, NaN or infinite: -EINVAL");
	EQ(xrl_peaks_recommend(&h, 0.01, 0.99, &adv), (ull)-EINVAL);
	EQ(xrl_peaks_recommend(&h, 0.01, NAN, &adv), (ull)-EINVAL);
	EQ(xrl_peaks_recommend(&h, 0.01, INFINITY, &adv), (ull)-EINVAL);
	CTX("the share 0 and 1 are in range; 1 refuses all at (0, 0)");
	EQ(xrl_peaks_recommend(&h, 0, 1, &adv), 0);
	EQ(adv.proposal.rate, 5);
	EQ(xrl_peaks_recommend(&h, 1, 1, &adv), 0);
	EQ(adv.proposal.rate, 0);
	EQ(adv.proposal.burst, 0);
	EQ(adv.proposal.refused.callers, 1);
	xrl_peaks_free(&h);
}

/* 100 callers at 5/s, 10 at 50/s, one at 400/s with a burst of 200; the
 * big one alone into big, the rest into small. */
static void mixed(struct xrl_peaks *all, struct xrl_peaks *small, struct xrl_peaks *big)
{
	assert_int_equal(xrl_peaks_add(small, 5, 3, 100, 100 * 5 * 60), 0);
	assert_int_equal(xrl_peaks_add(small, 50, 20, 10, 10 * 50 * 60), 0);
	assert_int_equal(xrl_peaks_add(big, 400, 200, 1, 400 * 60), 0);
	assert_int_equal(xrl_peaks_merge(all, small), 0);
	assert_int_equal(xrl_peaks_merge(all, big), 0);
}

static void recommend_mixed(void **state)
{
	struct xrl_peaks all = { 0 }, small = { 0 }, big = { 0 };
	struct xrl_peaks_advice adv, twice;
	struct xrl_peaks_refusal r;

	(void)state;
	mixed(&all, &small, &big);
	CTX("at 0 %% every caller is admitted: rate 400 and burst 200 exactly");
	EQ(xrl_peaks_recommend(&all, 0, 1, &adv), 0);
	EQ(adv.proposal.rate, 400);
	EQ(adv.proposal.burst, 200);
	EQ(adv.proposal.refused.callers, 0);
	EQ(adv.proposal.refused.requests, 0);
	CTX("at 1 %% (1 of 111) only the big one is refused");
	EQ(xrl_peaks_recommend(&all, 0.01, 1, &adv), 0);
	EQ(adv.proposal.refused.callers, 1);
	xrl_peaks_refused(&small, adv.proposal.rate, adv.proposal.burst, &r);
	EQ(r.callers, 0);
	xrl_peaks_refused(&big, adv.proposal.rate, adv.proposal.burst, &r);
	EQ(r.callers, 1);
	CTX("at 1 %%: the 50s' bin's upper value and their burst");
	EQ(adv.proposal.rate, 51);
	EQ(adv.proposal.burst, 20);
	EQ(adv.proposal.refused.requests, 400 * 60 * (400 - 51) / 400);
	CTX("at 1 %%: candidates 0, 0.1 %%, 1 %% (once), 5 %%, shares increasing");
	EQ(adv.ncand, 4);
	EQ(adv.cand[0].share == 0, true);
	EQ(adv.cand[1].share == 0.001, true);
	EQ(adv.cand[2].share == 0.01, true);
	EQ(adv.cand[3].share == 0.05, true);
	EQ(adv.cand[0].rate, 400);
	EQ(adv.cand[2].rate, adv.proposal.rate);
	CTX("at 5 %% (5 of 111): still only the big one (the 50s are 10)");
	EQ(adv.cand[3].rate, 51);
	EQ(adv.cand[3].refused.callers, 1);
	CTX("headroom 2 doubles both");
	EQ(xrl_peaks_recommend(&all, 0.01, 2, &twice), 0);
	EQ(twice.proposal.rate, 2 * adv.proposal.rate);
	EQ(twice.proposal.burst, 2 * adv.proposal.burst);
	EQ(twice.cand[0].rate, 800);
	EQ(twice.cand[0].burst, 400);
	CTX("headroom 1.1 of 400 is 440, though 400 * 1.1 is 440.00000000000006");
	EQ(xrl_peaks_recommend(&all, 0, 1.1, &twice), 0);
	EQ(twice.proposal.rate, 440);
	EQ(twice.proposal.burst, 220);
	CTX("an asked share between the fixed ones: five candidates, in order");
	EQ(xrl_peaks_recommend(&all, 0.02, 1, &adv), 0);
	EQ(adv.ncand, 5);
	EQ(adv.cand[3].share == 0.02, true);
	EQ(adv.proposal.share == 0.02, true);
	CTX("an asked share above 5 %%: last");
	EQ(xrl_peaks_recommend(&all, 0.5, 1, &adv), 0);
	EQ(adv.ncand, 5);
	EQ(adv.cand[4].share == 0.5, true);
	xrl_peaks_free(&all);
	xrl_peaks_free(&small);
	xrl_peaks_free(&big);
}

/* The recommendation over 1,000 callers refuses the callers whose real
 * rates are above it, at most the share, and sits within a bin of the
 * population's quantile. */
static void recommend_thousand(void **state)
{
	static const double shares[] = { 0, 0.001, 0.01, 0.05, 0.2 };
	struct xrl_peaks h = { 0 };
	struct xrl_peaks_advice adv;

	(void)state;
	for (uint64_t r = 1; r <= 1000; r++)
		EQ(xrl_peaks_add(&h, r, 10, 1, r * 60), 0);
	for (size_t i = 0; i < sizeof(shares) / sizeof(shares[0]); i++) {
		uint64_t allowed = (uint64_t)(shares[i] * 1000 + 0.5), real = 0;

		CTX("1,000 callers at 1..1000/s, burst 10, share %g", shares[i]);
		EQ(xrl_peaks_recommend(&h, shares[i], 1, &adv), 0);
		EQ(adv.proposal.burst, 10);
		for (uint64_t r = 1; r <= 1000; r++)
			real += r > adv.proposal.rate;
		EQ(adv.proposal.refused.callers, real);
		LE(real, allowed);
		CTX("share %g: the rate within a bin of the %llu-th caller's", shares[i],
		    (ull)(1000 - allowed));
		GE(adv.proposal.rate, 1000 - allowed);
		LE(adv.proposal.rate, 1000 - allowed + (1000 - allowed) / 16);
	}
	CTX("at 1 %%: 991 (the top bin [992, 1023] holds 9, the next 32)");
	EQ(xrl_peaks_recommend(&h, 0.01, 1, &adv), 0);
	EQ(adv.proposal.rate, 991);
	EQ(adv.proposal.refused.callers, 9);
	xrl_peaks_free(&h);
}

/* The least rate + burst, then the smaller rate. */
static void recommend_trade(void **state)
{
	struct xrl_peaks h = { 0 };
	struct xrl_peaks_advice adv;

	(void)state;
	CTX("one caller at rate 100, one at burst 50, 98 at (1, 1): refusing 1, the"
	    " rate one goes (1 + 50 < 100 + 1)");
	EQ(xrl_peaks_add(&h, 1, 1, 98, 98), 0);
	EQ(xrl_peaks_add(&h, 100, 1, 1, 6000), 0);
	EQ(xrl_peaks_add(&h, 1, 50, 1, 50), 0);
	EQ(xrl_peaks_recommend(&h, 0.01, 1, &adv), 0);
	EQ(adv.proposal.rate, 1);
	EQ(adv.proposal.burst, 50);
	EQ(adv.proposal.refused.callers, 1);
	CTX("refusing 2 of them: (1, 1)");
	EQ(xrl_peaks_recommend(&h, 0.02, 1, &adv), 0);
	EQ(adv.proposal.rate, 1);
	EQ(adv.proposal.burst, 1);
	CTX("(10, 2) and (2, 10) among 98 at (2, 2): a tie, the smaller rate wins");
	xrl_peaks_reset(&h);
	EQ(xrl_peaks_add(&h, 2, 2, 98, 98), 0);
	EQ(xrl_peaks_add(&h, 10, 2, 1, 10), 0);
	EQ(xrl_peaks_add(&h, 2, 10, 1, 10), 0);
	EQ(xrl_peaks_recommend(&h, 0.01, 1, &adv), 0);
	EQ(adv.proposal.rate, 2);
	EQ(adv.proposal.burst, 10);
	xrl_peaks_free(&h);
}

/* The least pair by brute force: every rate and burst a cell is judged by
 * (and 0), each pair's refusals counted by xrl_peaks_refused. */
static void least_by_hand(const struct xrl_peaks *h, uint64_t allowed, uint64_t *rate,
			  uint64_t *burst)
{
	bool found = false;

	for (size_t i = 0; i <= h->n; i++) {
		for (size_t j = 0; j <= h->n; j++) {
			uint64_t r = i ? xrl_peaks_bin_high(h->cells[i - 1].rate_bin) : 0;
			uint64_t b = j ? xrl_peaks_bin_high(h->cells[j - 1].burst_bin) : 0;
			struct xrl_peaks_refusal out;

			r = r < h->max_rate ? r : h->max_rate;
			b = b < h->max_burst ? b : h->max_burst;
			xrl_peaks_refused(h, r, b, &out);
			if (out.callers > allowed)
				continue;
			if (!found || r + b < *rate + *burst ||
			    (r + b == *rate + *burst && r < *rate)) {
				*rate = r;
				*burst = b;
				found = true;
			}
		}
	}
}

static void recommend_exhaustive(void **state)
{
	static const double shares[] = { 0, 0.01, 0.05, 0.1, 0.3, 1 };
	uint64_t seed = 99;

	(void)state;
	for (int pop = 0; pop < 200; pop++) {
		struct xrl_peaks h = { 0 };
		struct xrl_peaks_advice adv;
		int n = 1 + (int)(rnd(&seed) % 40);

		for (int i = 0; i < n; i++) {
			uint64_t r = rnd(&seed) % (1ULL << (rnd(&seed) % 12));
			uint64_t b = rnd(&seed) % (1ULL << (rnd(&seed) % 10));

			EQ(xrl_peaks_add(&h, r, b, 1 + rnd(&seed) % 5, 1 + r * 10), 0);
		}
		for (size_t k = 0; k < sizeof(shares) / sizeof(shares[0]); k++) {
			uint64_t allowed = (uint64_t)(shares[k] * (double)h.callers), r = 0, b = 0;

			CTX("population %d (%zu cells), share %g: the least pair by hand", pop, h.n,
			    shares[k]);
			least_by_hand(&h, allowed, &r, &b);
			EQ(xrl_peaks_recommend(&h, shares[k], 1, &adv), 0);
			EQ(adv.proposal.rate, r);
			EQ(adv.proposal.burst, b);
			LE(adv.proposal.refused.callers, allowed);
		}
		xrl_peaks_free(&h);
	}
}

static void json_round_trip(void **state)
{
	struct xrl_peaks h = { 0 }, back = { 0 };
	json_t *j, *k;
	char *text;

	(void)state;
	CTX("an empty histogram through JSON");
	j = xrl_peaks_to_json(&h);
	assert_non_null(j);
	EQ(xrl_peaks_from_json(j, &back), 0);
	same(&back, &h);
	json_decref(j);
	CTX("a spread population, through text and back, the same");
	add_spread(&h, 7, 4000);
	j = xrl_peaks_to_json(&h);
	assert_non_null(j);
	text = json_dumps(j, JSON_COMPACT);
	assert_non_null(text);
	k = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	assert_non_null(k);
	EQ(xrl_peaks_from_json(k, &back), 0);
	same(&back, &h);
	CTX("into a histogram that held cells: replaced, not added to");
	EQ(xrl_peaks_from_json(j, &back), 0);
	same(&back, &h);
	free(text);
	json_decref(j);
	json_decref(k);
	xrl_peaks_free(&h);
	xrl_peaks_free(&back);
}

#define BODY(callers, requests, max_rate, max_burst, cells) \
	"\"callers\":" callers ",\"requests\":" requests ",\"max_rate\":" max_rate \
	",\"max_burst\":" max_burst ",\"refused_callers\":0,\"refused_requests\":0," \
	"\"cells\":" cells
#define DOC(callers, requests, max_rate, max_burst, cells) \
	"{" BODY(callers, requests, max_rate, max_burst, cells) "}"
#define CELLS "[[5,5,1,10],[20,2,2,20]]"

static const struct {
	const char *name, *doc;
} hostile[] = {
	{ "an array, not an object", "[3,30,20,5,0,0,[]]" },
	{ "a number, not an object", "7" },
	{ "the cells missing", "{\"callers\":0,\"requests\":0,\"max_rate\":0,\"max_burst\":0,"
			       "\"refused_callers\":0,\"refused_requests\":0}" },
	{ "an unknown key", "{\"x\":1," BODY("3", "30", "20", "5", CELLS) "}" },
	{ "callers a string", DOC("\"3\"", "30", "20", "5", CELLS) },
	{ "callers a real", DOC("3.0", "30", "20", "5", CELLS) },
	{ "callers null", DOC("null", "30", "20", "5", CELLS) },
	{ "a negative refusal count",
	  "{\"callers\":3,\"requests\":30,\"max_rate\":20,\"max_burst\":5,\"refused_callers\":0,"
	  "\"refused_requests\":-1,\"cells\":" CELLS "}" },
	{ "cells an object", DOC("3", "30", "20", "5", "{}") },
	{ "a cell of three numbers", DOC("3", "30", "20", "5", "[[5,5,1],[20,2,2,20]]") },
	{ "a cell of five numbers", DOC("3", "30", "20", "5", "[[5,5,1,10,0],[20,2,2,20]]") },
	{ "a cell a number", DOC("3", "30", "20", "5", "[7,[20,2,2,20]]") },
	{ "a cell's bin a string", DOC("3", "30", "20", "5", "[[\"5\",5,1,10],[20,2,2,20]]") },
	{ "a rate bin past the last", DOC("3", "30", "20", "5", "[[5,5,1,10],[593,2,2,20]]") },
	{ "a burst bin past the last", DOC("3", "30", "20", "5", "[[5,5,1,10],[20,4096,2,20]]") },
	{ "a negative bin", DOC("3", "30", "20", "5", "[[-1,5,1,10],[20,2,2,20]]") },
	{ "a negative cell count", DOC("3", "30", "20", "5", "[[5,5,1,40],[20,2,2,-10]]") },
	{ "a cell of no callers", DOC("3", "30", "20", "5", "[[5,5,0,10],[20,2,3,20]]") },
	{ "cells out of order", DOC("3", "30", "20", "5", "[[20,2,2,20],[5,5,1,10]]") },
	{ "a cell repeated", DOC("3", "30", "20", "5", "[[5,5,1,5],[5,5,1,5],[20,2,1,20]]") },
	{ "callers not the cells' sum", DOC("4", "30", "20", "5", CELLS) },
	{ "requests not the cells' sum", DOC("3", "31", "20", "5", CELLS) },
	{ "cell sums past INT64_MAX",
	  DOC("3", "30", "20", "5",
	      "[[5,5,9223372036854775807,10],[20,2,9223372036854775807,20]]") },
	{ "cell sums wrapping past 2^64 to the callers given",
	  DOC("3", "30", "20", "5",
	      "[[5,5,9223372036854775807,10],[6,5,9223372036854775807,10],[20,2,5,10]]") },
	{ "max_rate above its top bin", DOC("3", "30", "21", "5", CELLS) },
	{ "max_rate below its top bin", DOC("3", "30", "19", "5", CELLS) },
	{ "max_burst not in the top burst bin", DOC("3", "30", "20", "2", CELLS) },
	{ "max_rate past XRL_PEAKS_VALUE_MAX (in the last bin, as values past it are)",
	  DOC("1", "1", "1099511627777", "1", "[[592,1,1,1]]") },
	{ "no cells, but callers", DOC("3", "30", "0", "0", "[]") },
	{ "no cells, but a max_rate", DOC("0", "0", "5", "0", "[]") },
};

/* A histogram with cells, so a refusal must also empty it. */
static void held(struct xrl_peaks *h)
{
	assert_int_equal(xrl_peaks_add(h, 9, 9, 9, 9), 0);
	xrl_peaks_add_refused(h, 1, 1);
}

static void json_rejects(void **state)
{
	struct xrl_peaks h = { 0 };
	json_t *j, *cells;

	(void)state;
	CTX("the document the hostile ones are made from is fine");
	j = json_loads(DOC("3", "30", "20", "5", CELLS), 0, NULL);
	assert_non_null(j);
	EQ(xrl_peaks_from_json(j, &h), 0);
	EQ(h.n, 2);
	EQ(h.callers, 3);
	json_decref(j);
	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		CTX("refused, the histogram left empty: %s", hostile[i].name);
		j = json_loads(hostile[i].doc, JSON_DECODE_ANY, NULL);
		CHECK_(j != NULL, "not JSON: %s\n", hostile[i].doc);
		held(&h);
		EQ(xrl_peaks_from_json(j, &h), (ull)-EINVAL);
		empty(&h);
		json_decref(j);
	}
	CTX("refused, the histogram left empty: NULL");
	held(&h);
	EQ(xrl_peaks_from_json(NULL, &h), (ull)-EINVAL);
	empty(&h);
	CTX("refused, the histogram left empty: more cells than XRL_PEAKS_CELLS_MAX");
	cells = json_array();
	for (json_int_t i = 0; i <= XRL_PEAKS_CELLS_MAX; i++)
		json_array_append_new(cells, json_pack("[IIII]", i / 256, i % 256, (json_int_t)1,
						       (json_int_t)1));
	j = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "callers",
		      (json_int_t)XRL_PEAKS_CELLS_MAX + 1, "requests",
		      (json_int_t)XRL_PEAKS_CELLS_MAX + 1, "max_rate",
		      (json_int_t)xrl_peaks_bin_low(256), "max_burst",
		      (json_int_t)xrl_peaks_bin_low(255), "refused_callers", (json_int_t)0,
		      "refused_requests", (json_int_t)0, "cells", cells);
	assert_non_null(j);
	held(&h);
	EQ(xrl_peaks_from_json(j, &h), (ull)-EINVAL);
	empty(&h);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bin_edges),	    cmocka_unit_test(bin_round_trip),
		cmocka_unit_test(add_counts),	    cmocka_unit_test(add_merge_same),
		cmocka_unit_test(cell_limit),	    cmocka_unit_test(quantiles),
		cmocka_unit_test(refused_estimate), cmocka_unit_test(recommend_errors),
		cmocka_unit_test(recommend_mixed),  cmocka_unit_test(recommend_thousand),
		cmocka_unit_test(recommend_trade),  cmocka_unit_test(recommend_exhaustive),
		cmocka_unit_test(json_round_trip),  cmocka_unit_test(json_rejects),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
