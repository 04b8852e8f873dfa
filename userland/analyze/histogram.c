/*
 * Log-linear buckets (histogram.h): values below HIST_SUB have a bucket each;
 * above, the power of two p holding the value (its top bit) picks a group of
 * HIST_SUB buckets and the next HIST_SUB_BITS bits pick the bucket in it, so a
 * bucket spans at most 1/HIST_SUB of its values.
 */
#include "histogram.h"

static unsigned top_bit(uint64_t value)
{
	return 63u - (unsigned)__builtin_clzll(value);
}

unsigned hist_bucket_of(uint64_t value)
{
	if (value < HIST_SUB)
		return (unsigned)value;
	unsigned shift = top_bit(value) - HIST_SUB_BITS;
	unsigned group = shift + 1;
	return group * HIST_SUB + (unsigned)((value >> shift) - HIST_SUB);
}

uint64_t hist_bucket_low(unsigned bucket)
{
	if (bucket < HIST_SUB)
		return bucket;
	unsigned group = bucket / HIST_SUB, shift = group - 1;
	return (uint64_t)(HIST_SUB + bucket % HIST_SUB) << shift;
}

uint64_t hist_bucket_high(unsigned bucket)
{
	if (bucket < HIST_SUB)
		return bucket;
	unsigned shift = bucket / HIST_SUB - 1;
	return hist_bucket_low(bucket) + ((uint64_t)1 << shift) - 1;
}

void hist_add(struct histogram *h, uint64_t value)
{
	if (!h->count || value < h->min)
		h->min = value;
	if (value > h->max)
		h->max = value;
	h->count++;
	h->sum = h->sum + value < h->sum ? UINT64_MAX : h->sum + value;
	h->buckets[hist_bucket_of(value)]++;
}

void hist_merge(struct histogram *into, const struct histogram *from)
{
	if (!from->count)
		return;
	if (!into->count || from->min < into->min)
		into->min = from->min;
	if (from->max > into->max)
		into->max = from->max;
	into->count += from->count;
	into->sum = into->sum + from->sum < into->sum ? UINT64_MAX : into->sum + from->sum;
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		into->buckets[i] += from->buckets[i];
}

/* The middle of bucket i: the representative of its values. */
static uint64_t bucket_middle(unsigned i)
{
	uint64_t low = hist_bucket_low(i), high = hist_bucket_high(i);
	return low + (high - low) / 2;
}

uint64_t hist_percentile(const struct histogram *h, double percentile)
{
	if (!h->count)
		return 0;
	/* Multiplied first and less a hair, so that a rank the percentage gives
	 * exactly is not rounded up past it by the decimal's binary error (99.9 %
	 * of 1,000 is 999, not 999.0000000000001: rank 1,000). */
	double wanted = percentile * (double)h->count / 100.0 - 1e-9;
	uint64_t rank = wanted < 1 ? 1 : (uint64_t)wanted + (wanted > (double)(uint64_t)wanted);
	uint64_t seen = 0;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= rank) {
			uint64_t value = bucket_middle(i);
			return value < h->min ? h->min : value > h->max ? h->max : value;
		}
	}
	return h->max;
}

uint64_t hist_count_at_most(const struct histogram *h, uint64_t bound)
{
	uint64_t count = 0;
	for (unsigned i = 0; i < HIST_BUCKETS && hist_bucket_low(i) <= bound; i++)
		count += h->buckets[i];
	return count;
}
