/*
 * Latency histograms in the HDR style: log-linear buckets (each power of two
 * split into HIST_SUB linear sub-buckets), so any value is kept with a
 * relative error under 1/HIST_SUB (< 1 %) from 1 to 2^63, in a fixed array
 * that two histograms add up bucket by bucket (mergeable).  Pure C, built for
 * microScope's user space and for the host alike.
 *
 *     struct histogram h = {0};
 *     hist_add(&h, 1234);                       // a value, in any unit
 *     uint64_t p99 = hist_percentile(&h, 99.0); // within 1 % of the exact one
 */
#ifndef ANALYZE_HISTOGRAM_H
#define ANALYZE_HISTOGRAM_H

#include <stdint.h>

#define HIST_SUB_BITS 7
#define HIST_SUB      (1u << HIST_SUB_BITS) /* sub-buckets per power of two: error < 1/128 */
#define HIST_BUCKETS  ((64 - HIST_SUB_BITS + 1) * HIST_SUB)

struct histogram {
	uint64_t count;
	uint64_t sum; /* of the values as added (saturating) */
	uint64_t min, max;
	uint64_t buckets[HIST_BUCKETS];
};

void hist_add(struct histogram *h, uint64_t value);
/* Adds every value of from into into. */
void hist_merge(struct histogram *into, const struct histogram *from);
/* The value at percentile (0..100): the lowest bucket's representative value
 * at or above that rank, clamped to [min, max]; 0 when empty. */
uint64_t hist_percentile(const struct histogram *h, double percentile);
/* Values added that are <= bound; exact when bound is a bucket's upper
 * edge, within one bucket otherwise (Prometheus' le buckets are therefore
 * counted apart, exactly: latency.h). */
uint64_t hist_count_at_most(const struct histogram *h, uint64_t bound);
/* Bucket index of value, and the lowest and highest value of bucket i. */
unsigned hist_bucket_of(uint64_t value);
uint64_t hist_bucket_low(unsigned bucket);
uint64_t hist_bucket_high(unsigned bucket);

#endif
