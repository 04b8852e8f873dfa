// host-test-sources: userland/analyze/histogram.c
/*
 * The analyzer's histograms: every value lands in a bucket that holds it and
 * spans less than 1 % of it; percentiles are within 1 % of the exact ones on
 * generated data; merging two histograms equals adding every value to one;
 * counts at bucket edges are exact.
 */
#include <stdlib.h>
#include <string.h>

#include "../../userland/analyze/histogram.h"
#include "hosttest.h"

static int compare(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t random64(void)
{
	return ((uint64_t)rand() << 40) ^ ((uint64_t)rand() << 20) ^ (uint64_t)rand();
}

static void every_value_has_a_tight_bucket(void)
{
	srand(1);
	for (int i = 0; i < 200000; i++) {
		uint64_t value = random64() >> (rand() % 64);
		unsigned b = hist_bucket_of(value);
		CHECK(b < HIST_BUCKETS);
		CHECK(hist_bucket_low(b) <= value && value <= hist_bucket_high(b));
		CHECK((hist_bucket_high(b) - hist_bucket_low(b)) * HIST_SUB <= hist_bucket_low(b) ||
		      value < HIST_SUB);
	}
	CHECK_EQ(hist_bucket_of(UINT64_MAX), HIST_BUCKETS - 1);
}

/* The exact percentile of sorted values as hist_percentile defines it: the
 * value at rank ceil(p/100 * n). */
static uint64_t exact(const uint64_t *sorted, size_t n, double p)
{
	double wanted = p * (double)n / 100.0 - 1e-9;
	size_t rank = wanted < 1 ? 1 : (size_t)wanted + (wanted > (double)(size_t)wanted);
	return sorted[rank - 1];
}

static void percentiles_within_one_percent(void)
{
	static uint64_t values[100000];
	const double ps[] = {1, 50, 90, 99, 99.9, 100};
	for (int shape = 0; shape < 3; shape++) {
		struct histogram *h = calloc(1, sizeof *h);
		srand(10 + shape);
		for (size_t i = 0; i < 100000; i++) {
			uint64_t v = shape == 0   ? 1000 + (uint64_t)(rand() % 1000000)
				     : shape == 1 ? (uint64_t)1 << (rand() % 40)
						  : 12345;
			values[i] = v + (shape == 1 ? (uint64_t)rand() % 1000 : 0);
			hist_add(h, values[i]);
		}
		qsort(values, 100000, sizeof values[0], compare);
		for (unsigned i = 0; i < sizeof ps / sizeof ps[0]; i++) {
			double want = (double)exact(values, 100000, ps[i]);
			double got = (double)hist_percentile(h, ps[i]);
			CHECK(got >= want * 0.99 && got <= want * 1.01);
		}
		CHECK_EQ(h->count, 100000);
		CHECK_EQ(h->min, values[0]);
		CHECK_EQ(h->max, values[99999]);
		free(h);
	}
}

static void merging_is_adding(void)
{
	struct histogram *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
	struct histogram *all = calloc(1, sizeof *all);
	srand(3);
	for (int i = 0; i < 50000; i++) {
		uint64_t v = random64() >> (rand() % 50);
		hist_add(i % 3 ? a : b, v);
		hist_add(all, v);
	}
	hist_merge(a, b);
	CHECK(memcmp(a, all, sizeof *a) == 0);
	free(a);
	free(b);
	free(all);
}

static void counts_at_bucket_edges_are_exact(void)
{
	struct histogram *h = calloc(1, sizeof *h);
	for (uint64_t v = 1; v <= 100000; v++)
		hist_add(h, v);
	for (unsigned b = 0; b < HIST_BUCKETS && hist_bucket_high(b) <= 100000; b += 37)
		CHECK_EQ(hist_count_at_most(h, hist_bucket_high(b)), hist_bucket_high(b));
	CHECK_EQ(hist_count_at_most(h, UINT64_MAX), 100000);
	CHECK_EQ(hist_percentile(&(struct histogram){0}, 50), 0);
	free(h);
}

/* 99.9 % of 1,000 values is the 999th: one outlier above 999 equal values is
 * not the p99.9. */
static void an_exact_rank_is_not_rounded_up(void)
{
	struct histogram *h = calloc(1, sizeof *h);
	for (int i = 0; i < 999; i++)
		hist_add(h, 100);
	hist_add(h, 1000000);
	CHECK_EQ(hist_percentile(h, 99.9), 100);
	CHECK_EQ(hist_percentile(h, 100), 1000000);
	free(h);
}

HOSTTEST_MAIN(HOSTTEST_CASE(every_value_has_a_tight_bucket),
	      HOSTTEST_CASE(percentiles_within_one_percent), HOSTTEST_CASE(merging_is_adding),
	      HOSTTEST_CASE(counts_at_bucket_edges_are_exact),
	      HOSTTEST_CASE(an_exact_rank_is_not_rounded_up))
