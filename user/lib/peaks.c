// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * peaks.c - a rule's callers as a sparse 2-D histogram of peak rate and
 * peak burst, its quantiles, what a candidate limit would refuse, the
 * least limit within a share of refusals, and its JSON (issue 25).
 * peaks.h says what the numbers mean. Library code: nothing printed,
 * nothing exits.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "peaks.h"

#define SUB	  (1U << XRL_PEAKS_SUB_BITS)
#define COUNT_MAX ((uint64_t)INT64_MAX)

_Static_assert(XRL_PEAKS_BINS ==
		       SUB * (1 + __builtin_ctzll(XRL_PEAKS_VALUE_MAX) - XRL_PEAKS_SUB_BITS) + 1,
	       "XRL_PEAKS_BINS is the bin of XRL_PEAKS_VALUE_MAX, plus one");

/*
 * Below 2^SUB_BITS a value is its own bin; above, an octave [2^e, 2^(e+1))
 * is cut into SUB bins of width 2^(e - SUB_BITS), the bin being the value's
 * top SUB_BITS + 1 bits. O(1).
 */
uint32_t xrl_peaks_bin(uint64_t v)
{
	unsigned int e, shift;

	if (v > XRL_PEAKS_VALUE_MAX)
		v = XRL_PEAKS_VALUE_MAX;
	if (v < SUB)
		return (uint32_t)v;
	e = 63 - (unsigned int)__builtin_clzll(v);
	shift = e - XRL_PEAKS_SUB_BITS;
	return (uint32_t)(SUB + shift * SUB + ((v >> shift) & (SUB - 1)));
}

/* Bins past the last are clamped to it, so no caller gets a value the
 * histogram cannot hold. */
uint64_t xrl_peaks_bin_low(uint32_t bin)
{
	unsigned int shift;

	if (bin >= XRL_PEAKS_BINS)
		bin = XRL_PEAKS_BINS - 1;
	if (bin < SUB)
		return bin;
	shift = (bin - SUB) / SUB;
	return (uint64_t)(SUB + bin % SUB) << shift;
}

/* The last bin holds XRL_PEAKS_VALUE_MAX alone: larger values were counted
 * as it, so its upper value is it. */
uint64_t xrl_peaks_bin_high(uint32_t bin)
{
	unsigned int shift;

	if (bin >= XRL_PEAKS_BINS - 1)
		return XRL_PEAKS_VALUE_MAX;
	if (bin < SUB)
		return bin;
	shift = (bin - SUB) / SUB;
	return xrl_peaks_bin_low(bin) + (1ULL << shift) - 1;
}

static uint64_t cell_key(uint32_t rate_bin, uint32_t burst_bin)
{
	return (uint64_t)rate_bin << 32 | burst_bin;
}

/* The values a cell is judged by: its bins' upper values, clamped to the
 * largest seen (which lies in the top bin of each axis). */
static uint64_t cell_rate(const struct xrl_peaks *h, const struct xrl_peaks_cell *c)
{
	uint64_t v = xrl_peaks_bin_high(c->rate_bin);

	return v < h->max_rate ? v : h->max_rate;
}

static uint64_t cell_burst(const struct xrl_peaks *h, const struct xrl_peaks_cell *c)
{
	uint64_t v = xrl_peaks_bin_high(c->burst_bin);

	return v < h->max_burst ? v : h->max_burst;
}

/* The index of the first cell whose key is not below key. O(log cells). */
static size_t lower_bound(const struct xrl_peaks *h, uint64_t key)
{
	size_t lo = 0, hi = h->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cell_key(h->cells[mid].rate_bin, h->cells[mid].burst_bin) < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Room for one more cell: doubling, never past XRL_PEAKS_CELLS_MAX. */
static int reserve_one(struct xrl_peaks *h)
{
	struct xrl_peaks_cell *c;
	size_t cap;

	if (h->n < h->cap)
		return 0;
	if (h->n >= XRL_PEAKS_CELLS_MAX)
		return -E2BIG;
	cap = h->cap ? h->cap * 2 : 16;
	if (cap > XRL_PEAKS_CELLS_MAX)
		cap = XRL_PEAKS_CELLS_MAX;
	c = realloc(h->cells, cap * sizeof(*c));
	if (!c)
		return -ENOMEM;
	h->cells = c;
	h->cap = cap;
	return 0;
}

/*
 * The sums are kept at most INT64_MAX so that any histogram has a JSON
 * form (jansson's integers are signed 64-bit); what would pass it is
 * refused whole (-EOVERFLOW), as is anything that cannot be stored, so a
 * failed add changes nothing.
 */
int xrl_peaks_add(struct xrl_peaks *h, uint64_t rate, uint64_t burst, uint64_t callers,
		  uint64_t requests)
{
	uint32_t rb, bb;
	size_t i;
	int err;

	if (!callers)
		return requests ? -EINVAL : 0;
	if (callers > COUNT_MAX - h->callers || requests > COUNT_MAX - h->requests)
		return -EOVERFLOW;
	if (rate > XRL_PEAKS_VALUE_MAX)
		rate = XRL_PEAKS_VALUE_MAX;
	if (burst > XRL_PEAKS_VALUE_MAX)
		burst = XRL_PEAKS_VALUE_MAX;
	rb = xrl_peaks_bin(rate);
	bb = xrl_peaks_bin(burst);
	i = lower_bound(h, cell_key(rb, bb));
	if (i == h->n || h->cells[i].rate_bin != rb || h->cells[i].burst_bin != bb) {
		err = reserve_one(h);
		if (err)
			return err;
		memmove(&h->cells[i + 1], &h->cells[i], (h->n - i) * sizeof(h->cells[0]));
		h->cells[i] = (struct xrl_peaks_cell){ .rate_bin = rb, .burst_bin = bb };
		h->n++;
	}
	h->cells[i].callers += callers;
	h->cells[i].requests += requests;
	h->callers += callers;
	h->requests += requests;
	if (rate > h->max_rate)
		h->max_rate = rate;
	if (burst > h->max_burst)
		h->max_burst = burst;
	return 0;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return b > COUNT_MAX - a ? COUNT_MAX : a + b;
}

/* Saturates at INT64_MAX: these are reported, never summed against the
 * cells, so a saturated count loses nothing the histogram relies on. */
void xrl_peaks_add_refused(struct xrl_peaks *h, uint64_t callers, uint64_t requests)
{
	if (callers > COUNT_MAX)
		callers = COUNT_MAX;
	if (requests > COUNT_MAX)
		requests = COUNT_MAX;
	h->refused_callers = add_sat(h->refused_callers, callers);
	h->refused_requests = add_sat(h->refused_requests, requests);
}

/* The union of two sorted cell arrays into out (room for na + nb), cells
 * in both summed; returns the union's size. */
static size_t merge_walk(const struct xrl_peaks_cell *a, size_t na, const struct xrl_peaks_cell *b,
			 size_t nb, struct xrl_peaks_cell *out)
{
	size_t i = 0, j = 0, n = 0;

	while (i < na || j < nb) {
		uint64_t ka = i < na ? cell_key(a[i].rate_bin, a[i].burst_bin) : UINT64_MAX;
		uint64_t kb = j < nb ? cell_key(b[j].rate_bin, b[j].burst_bin) : UINT64_MAX;

		if (ka < kb) {
			out[n++] = a[i++];
		} else if (kb < ka) {
			out[n++] = b[j++];
		} else {
			out[n] = a[i++];
			out[n].callers += b[j].callers;
			out[n++].requests += b[j++].requests;
		}
	}
	return n;
}

/*
 * Walks both into a new array, so a failure leaves dst as it was and
 * merging a histogram into itself doubles it. O(cells of both) time and
 * that much memory for the moment the two arrays live together. The sums
 * bound every cell's, so checking them for INT64_MAX checks the cells'.
 */
int xrl_peaks_merge(struct xrl_peaks *dst, const struct xrl_peaks *src)
{
	struct xrl_peaks_cell *out;
	size_t n, room = dst->n + src->n;

	if (src->callers > COUNT_MAX - dst->callers || src->requests > COUNT_MAX - dst->requests)
		return -EOVERFLOW;
	if (src->n) {
		out = malloc(room * sizeof(*out));
		if (!out)
			return -ENOMEM;
		n = merge_walk(dst->cells, dst->n, src->cells, src->n, out);
		if (n > XRL_PEAKS_CELLS_MAX) {
			free(out);
			return -E2BIG;
		}
		free(dst->cells);
		dst->cells = out;
		dst->n = n;
		dst->cap = room;
	}
	dst->callers += src->callers;
	dst->requests += src->requests;
	if (src->max_rate > dst->max_rate)
		dst->max_rate = src->max_rate;
	if (src->max_burst > dst->max_burst)
		dst->max_burst = src->max_burst;
	xrl_peaks_add_refused(dst, src->refused_callers, src->refused_requests);
	return 0;
}

/* Keeps the buffer for the next epoch's cells. */
void xrl_peaks_reset(struct xrl_peaks *h)
{
	struct xrl_peaks_cell *cells = h->cells;
	size_t cap = h->cap;

	memset(h, 0, sizeof(*h));
	h->cells = cells;
	h->cap = cap;
}

void xrl_peaks_free(struct xrl_peaks *h)
{
	free(h->cells);
	memset(h, 0, sizeof(*h));
}

/*
 * x rounded up (down), a product that is off an integer by its rounding
 * alone (400 * 1.1 is 440.00000000000006 in doubles) taken as that
 * integer: the tolerance is 1e-12 of x, at most a half. Saturates at
 * UINT64_MAX; 0 for x not above 0 (NaN included). No libm.
 */
static uint64_t ceil_near(double x)
{
	double tol = x * 1e-12 < 0.5 ? x * 1e-12 : 0.5;
	uint64_t t;

	x -= tol;
	if (!(x > 0))
		return 0;
	if (x >= 18446744073709551616.0)
		return UINT64_MAX;
	t = (uint64_t)x;
	return (double)t < x ? t + 1 : t;
}

static uint64_t floor_near(double x)
{
	double tol = x * 1e-12 < 0.5 ? x * 1e-12 : 0.5;

	x += tol;
	if (!(x > 0))
		return 0;
	if (x >= 18446744073709551616.0)
		return UINT64_MAX;
	return (uint64_t)x;
}

/*
 * Walks the one axis's marginal, built in an array of a counter a bin
 * (4.7 KB of stack), so either axis costs O(cells + bins) whatever the
 * cells' order. q outside [0, 1] is taken as the nearer end, NaN as 0.
 */
uint64_t xrl_peaks_quantile(const struct xrl_peaks *h, enum xrl_peaks_axis axis, double q)
{
	uint64_t cnt[XRL_PEAKS_BINS] = { 0 };
	uint64_t rank, acc = 0, v, max = axis == XRL_PEAKS_RATE ? h->max_rate : h->max_burst;
	uint32_t k;

	if (!h->callers)
		return 0;
	if (!(q > 0))
		q = 0;
	if (q > 1)
		q = 1;
	rank = ceil_near(q * (double)h->callers);
	if (rank < 1)
		rank = 1;
	if (rank > h->callers)
		rank = h->callers;
	for (size_t i = 0; i < h->n; i++) {
		const struct xrl_peaks_cell *c = &h->cells[i];

		cnt[axis == XRL_PEAKS_RATE ? c->rate_bin : c->burst_bin] += c->callers;
	}
	for (k = 0; k < XRL_PEAKS_BINS - 1; k++) {
		acc += cnt[k];
		if (acc >= rank)
			break;
	}
	v = xrl_peaks_bin_high(k);
	return v < max ? v : max;
}

/*
 * O(cells). The requests a cell over the rate loses are its requests
 * times (r - R) / r, in 128 bits; a cell only over the burst loses B's
 * excess a caller-epoch, at most its requests. Both bounded by the
 * cell's requests, so the sums cannot pass h's.
 */
void xrl_peaks_refused(const struct xrl_peaks *h, uint64_t rate, uint64_t burst,
		       struct xrl_peaks_refusal *out)
{
	out->callers = 0;
	out->requests = 0;
	for (size_t i = 0; i < h->n; i++) {
		const struct xrl_peaks_cell *c = &h->cells[i];
		uint64_t r = cell_rate(h, c), b = cell_burst(h, c);
		unsigned __int128 lost;

		if (r > rate) {
			lost = (unsigned __int128)c->requests * (r - rate) / r;
		} else if (b > burst) {
			lost = (unsigned __int128)c->callers * (b - burst);
			if (lost > c->requests)
				lost = c->requests;
		} else {
			continue;
		}
		out->callers += c->callers;
		out->requests += (uint64_t)lost;
	}
}

/* The most caller-epochs share may refuse: floor(share * callers). */
static uint64_t allowed_of(const struct xrl_peaks *h, double share)
{
	uint64_t a = floor_near(share * (double)h->callers);

	return a < h->callers ? a : h->callers;
}

/* The least burst that refuses at most budget of the caller-epochs in
 * below[] (a count a burst bin): walked down from the top bin until the
 * next bin's would pass it. O(bins). */
static uint64_t least_burst(const struct xrl_peaks *h, const uint64_t *below, uint64_t budget)
{
	uint64_t acc = 0, v;

	for (int k = (int)xrl_peaks_bin(h->max_burst); k >= 0; k--) {
		if (below[k] > budget - acc) {
			v = xrl_peaks_bin_high((uint32_t)k);
			return v < h->max_burst ? v : h->max_burst;
		}
		acc += below[k];
	}
	return 0;
}

/*
 * The least (R, B) refusing at most `allowed`. Refusals change only at
 * the cells' values, so R runs over 0 and the cells' rate values,
 * ascending (the cells' order); the cells at or below R are counted by
 * burst bin as R passes them, those above are refused whatever B, and
 * least_burst spends the rest of the budget. Stops once R alone reaches
 * the best sum. O(cells + rate values * bins): at most 593 * 593 steps.
 */
static void least_pair(const struct xrl_peaks *h, uint64_t allowed, uint64_t *rate, uint64_t *burst)
{
	uint64_t below[XRL_PEAKS_BINS] = { 0 };
	uint64_t over = h->callers, r = 0, b;
	bool found = false;
	size_t i = 0;

	for (;;) {
		for (; i < h->n && cell_rate(h, &h->cells[i]) <= r; i++) {
			below[h->cells[i].burst_bin] += h->cells[i].callers;
			over -= h->cells[i].callers;
		}
		if (over <= allowed) {
			b = least_burst(h, below, allowed - over);
			if (!found || r + b < *rate + *burst) {
				*rate = r;
				*burst = b;
				found = true;
			}
		}
		if (i == h->n)
			break;
		r = cell_rate(h, &h->cells[i]);
		if (found && r >= *rate + *burst)
			break;
	}
}

/* v * headroom rounded up; v itself at a headroom of 1, so a limit is
 * never below the pair it scales. */
static uint64_t scale(uint64_t v, double headroom)
{
	uint64_t s;

	if (headroom == 1)
		return v;
	s = ceil_near((double)v * headroom);
	return s > v ? s : v;
}

static void limit_at(const struct xrl_peaks *h, double share, double headroom,
		     struct xrl_peaks_limit *l)
{
	uint64_t r = 0, b = 0;

	least_pair(h, allowed_of(h, share), &r, &b);
	l->share = share;
	l->rate = scale(r, headroom);
	l->burst = scale(b, headroom);
	xrl_peaks_refused(h, l->rate, l->burst, &l->refused);
}

/*
 * Five searches at most (the proposal is the candidate at its share), each
 * least_pair's cost; no allocation. The limits' refusals are counted at
 * the scaled limits, so they are what the proposed numbers would refuse.
 */
int xrl_peaks_recommend(const struct xrl_peaks *h, double refuse, double headroom,
			struct xrl_peaks_advice *out)
{
	static const double fixed[] = { 0, 0.001, 0.01, 0.05 };
	double shares[XRL_PEAKS_CANDIDATES];
	size_t n = 0;
	bool asked = false;

	if (!(refuse >= 0 && refuse <= 1) || !isfinite(headroom) || headroom < 1)
		return -EINVAL;
	if (!h->callers)
		return -ENODATA;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		if (!asked && refuse <= fixed[i]) {
			shares[n++] = refuse;
			asked = true;
			if (refuse == fixed[i])
				continue;
		}
		shares[n++] = fixed[i];
	}
	if (!asked)
		shares[n++] = refuse;
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		limit_at(h, shares[i], headroom, &out->cand[i]);
		if (shares[i] == refuse)
			out->proposal = out->cand[i];
	}
	out->ncand = n;
	return 0;
}

/* NULL too for counts past INT64_MAX, which only a histogram written to
 * by hand can hold (add and merge keep the sums within it). */
json_t *xrl_peaks_to_json(const struct xrl_peaks *h)
{
	json_t *cells, *c;

	if (h->callers > COUNT_MAX || h->requests > COUNT_MAX || h->refused_callers > COUNT_MAX ||
	    h->refused_requests > COUNT_MAX)
		return NULL;
	cells = json_array();
	if (!cells)
		return NULL;
	for (size_t i = 0; i < h->n; i++) {
		const struct xrl_peaks_cell *p = &h->cells[i];

		c = json_pack("[IIII]", (json_int_t)p->rate_bin, (json_int_t)p->burst_bin,
			      (json_int_t)p->callers, (json_int_t)p->requests);
		if (!c || json_array_append_new(cells, c)) {
			json_decref(cells);
			return NULL;
		}
	}
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "callers", (json_int_t)h->callers,
			 "requests", (json_int_t)h->requests, "max_rate", (json_int_t)h->max_rate,
			 "max_burst", (json_int_t)h->max_burst, "refused_callers",
			 (json_int_t)h->refused_callers, "refused_requests",
			 (json_int_t)h->refused_requests, "cells", cells);
}

/* One cell [rate_bin, burst_bin, callers, requests]: bins in range, at
 * least one caller, no negative count. */
static int cell_from_json(json_t *j, struct xrl_peaks_cell *c)
{
	json_int_t rb, bb, callers, requests;

	if (json_unpack(j, "[IIII!]", &rb, &bb, &callers, &requests))
		return -EINVAL;
	if (rb < 0 || rb >= XRL_PEAKS_BINS || bb < 0 || bb >= XRL_PEAKS_BINS || callers < 1 ||
	    requests < 0)
		return -EINVAL;
	*c = (struct xrl_peaks_cell){ .rate_bin = (uint32_t)rb,
				      .burst_bin = (uint32_t)bb,
				      .callers = (uint64_t)callers,
				      .requests = (uint64_t)requests };
	return 0;
}

/*
 * The cells into t, each checked, in strictly increasing (rate_bin,
 * burst_bin) order, their sums within INT64_MAX and equal to t's, the
 * maxima in the top bins the cells fill (or 0 with no cells). O(cells).
 */
static int cells_from_json(json_t *cells, struct xrl_peaks *t)
{
	size_t n = json_array_size(cells);
	uint64_t callers = 0, requests = 0, prev = 0;
	uint32_t top_burst = 0;

	if (n > XRL_PEAKS_CELLS_MAX)
		return -EINVAL;
	if (!n)
		return t->callers || t->requests || t->max_rate || t->max_burst ? -EINVAL : 0;
	t->cells = malloc(n * sizeof(*t->cells));
	if (!t->cells)
		return -ENOMEM;
	t->cap = n;
	for (size_t i = 0; i < n; i++) {
		struct xrl_peaks_cell *c = &t->cells[i];
		uint64_t key;

		if (cell_from_json(json_array_get(cells, i), c))
			return -EINVAL;
		key = cell_key(c->rate_bin, c->burst_bin);
		if ((i && key <= prev) || c->callers > COUNT_MAX - callers ||
		    c->requests > COUNT_MAX - requests)
			return -EINVAL;
		prev = key;
		callers += c->callers;
		requests += c->requests;
		if (c->burst_bin > top_burst)
			top_burst = c->burst_bin;
	}
	t->n = n;
	if (callers != t->callers || requests != t->requests || t->max_rate > XRL_PEAKS_VALUE_MAX ||
	    t->max_burst > XRL_PEAKS_VALUE_MAX ||
	    xrl_peaks_bin(t->max_rate) != t->cells[n - 1].rate_bin ||
	    xrl_peaks_bin(t->max_burst) != top_burst)
		return -EINVAL;
	return 0;
}

/*
 * Strict, as a file may be corrupt or hostile: every key there and no
 * other, integers only (no reals, no negatives), and what
 * cells_from_json checks. h is freed first; on any failure it is left
 * empty. Duplicate keys are the parser's to refuse (JSON_REJECT_DUPLICATES).
 */
int xrl_peaks_from_json(const json_t *j, struct xrl_peaks *h)
{
	struct xrl_peaks t = { 0 };
	json_int_t v[6];
	json_t *cells;
	int err;

	xrl_peaks_free(h);
	if (json_unpack((json_t *)j, "{s:I,s:I,s:I,s:I,s:I,s:I,s:o!}", "callers", &v[0], "requests",
			&v[1], "max_rate", &v[2], "max_burst", &v[3], "refused_callers", &v[4],
			"refused_requests", &v[5], "cells", &cells))
		return -EINVAL;
	for (size_t i = 0; i < 6; i++)
		if (v[i] < 0)
			return -EINVAL;
	if (!json_is_array(cells))
		return -EINVAL;
	t.callers = (uint64_t)v[0];
	t.requests = (uint64_t)v[1];
	t.max_rate = (uint64_t)v[2];
	t.max_burst = (uint64_t)v[3];
	t.refused_callers = (uint64_t)v[4];
	t.refused_requests = (uint64_t)v[5];
	err = cells_from_json(cells, &t);
	if (err) {
		free(t.cells);
		return err;
	}
	*h = t;
	return 0;
}
