/*
 * librscfl's aggregation helpers: map, filter, fold and percentile over
 * arrays of results, in the shape of Resourceful's reducers.  Everything here
 * is pure computation on copies the caller already holds (rscfl_read_acct
 * made them), with no system call and no allocation, so the same source is
 * compiled for the host and tested there (tests/host/librscfl_test.c).
 *
 * The field tables name every uint64_t of struct acct_result and struct
 * acct_subsystem with its unit, in layout order; the host test checks that
 * they cover the whole layout, so a field added to acct/acct.h without a row
 * here is caught.  Programs print all fields by walking the tables (httpd's
 * /rscfl) instead of naming each one.
 */
#include <stdlib.h>
#include <string.h>

#include "librscfl.h"

#define RESULT_FIELD(name, unit)                                \
	{                                                       \
#name, offsetof(struct acct_result, name), unit \
	}
#define SUBSYSTEM_FIELD(name, unit)                                \
	{                                                          \
#name, offsetof(struct acct_subsystem, name), unit \
	}

const struct rscfl_field rscfl_result_fields[] = {
    RESULT_FIELD(wall_ns, "ns"),
    RESULT_FIELD(cpu_ns, "ns"),
    RESULT_FIELD(sched_out_ns, "ns"),
    RESULT_FIELD(preempted_ns, "ns"),
    RESULT_FIELD(blocked_ns, "ns"),
    RESULT_FIELD(context_switches, "count"),
    RESULT_FIELD(syscalls, "count"),
    RESULT_FIELD(interrupts, "count"),
    RESULT_FIELD(irq_ns, "ns"),
    RESULT_FIELD(page_faults, "count"),
    RESULT_FIELD(alloc_bytes, "bytes"),
    RESULT_FIELD(free_bytes, "bytes"),
    RESULT_FIELD(tcp_bytes_sent, "bytes"),
    RESULT_FIELD(tcp_bytes_received, "bytes"),
    RESULT_FIELD(tcp_segments_sent, "count"),
    RESULT_FIELD(tcp_segments_received, "count"),
    RESULT_FIELD(tcp_retransmits, "count"),
    RESULT_FIELD(nic_packets_sent, "count"),
    RESULT_FIELD(nic_packets_received, "count"),
    RESULT_FIELD(async_ns, "ns"),
    RESULT_FIELD(async_items, "count"),
    RESULT_FIELD(page_cache_hits, "count"),
    RESULT_FIELD(page_cache_misses, "count"),
    RESULT_FIELD(page_cache_evictions, "count"),
    RESULT_FIELD(page_cache_read_bytes, "bytes"),
    RESULT_FIELD(page_cache_read_ahead, "count"),
};
const unsigned rscfl_result_field_count =
    sizeof rscfl_result_fields / sizeof rscfl_result_fields[0];

const struct rscfl_field rscfl_subsystem_fields[] = {
    SUBSYSTEM_FIELD(calls, "count"),       SUBSYSTEM_FIELD(inclusive_ns, "ns"),
    SUBSYSTEM_FIELD(exclusive_ns, "ns"),   SUBSYSTEM_FIELD(sched_out_ns, "ns"),
    SUBSYSTEM_FIELD(preempted_ns, "ns"),   SUBSYSTEM_FIELD(blocked_ns, "ns"),
    SUBSYSTEM_FIELD(interrupts, "count"),  SUBSYSTEM_FIELD(allocs, "count"),
    SUBSYSTEM_FIELD(alloc_bytes, "bytes"), SUBSYSTEM_FIELD(frees, "count"),
    SUBSYSTEM_FIELD(free_bytes, "bytes"),
};
const unsigned rscfl_subsystem_field_count =
    sizeof rscfl_subsystem_fields / sizeof rscfl_subsystem_fields[0];

/* The field named name in table[0..count), or NULL. */
static const struct rscfl_field *find_in(const struct rscfl_field *table, unsigned count,
					 const char *name)
{
	for (unsigned i = 0; name && i < count; i++)
		if (strcmp(table[i].name, name) == 0)
			return &table[i];
	return NULL;
}

const struct rscfl_field *rscfl_find_field(const char *name)
{
	return find_in(rscfl_result_fields, rscfl_result_field_count, name);
}

const struct rscfl_field *rscfl_find_subsystem_field(const char *name)
{
	return find_in(rscfl_subsystem_fields, rscfl_subsystem_field_count, name);
}

const struct acct_subsystem *rscfl_find_subsystem(const struct rscfl_acct *acct, const char *name)
{
	for (unsigned i = 0; i < acct->kernel.subsystem_count && i < ACCT_MAX_SUBSYSTEMS; i++)
		if (strcmp(acct->kernel.subsystems[i].name, name) == 0)
			return &acct->kernel.subsystems[i];
	return NULL;
}

uint64_t rscfl_field_get(const void *record, const struct rscfl_field *field)
{
	uint64_t value;
	memcpy(&value, (const char *)record + field->offset, sizeof value);
	return value;
}

/* ---- extractors, predicates, folds ------------------------------------ */

uint64_t rscfl_field_value(const struct rscfl_acct *acct, const void *field)
{
	return rscfl_field_get(&acct->kernel, field);
}

uint64_t rscfl_subsystem_inclusive_ns(const struct rscfl_acct *acct, const void *name)
{
	const struct acct_subsystem *s = rscfl_find_subsystem(acct, name);
	return s ? s->inclusive_ns : 0;
}

uint64_t rscfl_subsystem_exclusive_ns(const struct rscfl_acct *acct, const void *name)
{
	const struct acct_subsystem *s = rscfl_find_subsystem(acct, name);
	return s ? s->exclusive_ns : 0;
}

uint64_t rscfl_metric_value(const struct rscfl_acct *acct, const void *name)
{
	unsigned count =
	    acct->metric_count < RSCFL_MAX_METRICS ? acct->metric_count : RSCFL_MAX_METRICS;
	for (unsigned i = 0; i < count; i++)
		if (strncmp(acct->metrics[i].name, name, RSCFL_METRIC_NAME) == 0)
			return acct->metrics[i].value > 0 ? (uint64_t)acct->metrics[i].value : 0;
	return 0;
}

static uint64_t threshold_value(const struct rscfl_acct *acct, const void *threshold)
{
	const struct rscfl_threshold *t = threshold;
	return t->extract(acct, t->extract_arg);
}

int rscfl_at_least(const struct rscfl_acct *acct, const void *threshold)
{
	return threshold_value(acct, threshold) >=
	       ((const struct rscfl_threshold *)threshold)->limit;
}

int rscfl_below(const struct rscfl_acct *acct, const void *threshold)
{
	return threshold_value(acct, threshold) <
	       ((const struct rscfl_threshold *)threshold)->limit;
}

uint64_t rscfl_sum(uint64_t accumulator, uint64_t value)
{
	return accumulator + value;
}

uint64_t rscfl_max(uint64_t accumulator, uint64_t value)
{
	return value > accumulator ? value : accumulator;
}

uint64_t rscfl_min(uint64_t accumulator, uint64_t value)
{
	return value < accumulator ? value : accumulator;
}

/* ---- map, filter, fold, percentile ------------------------------------ */

size_t rscfl_map(const struct rscfl_acct *accts, size_t count, rscfl_extract_fn extract,
		 const void *arg, uint64_t *values)
{
	for (size_t i = 0; i < count; i++)
		values[i] = extract(&accts[i], arg);
	return count;
}

size_t rscfl_filter(const struct rscfl_acct *accts, size_t count, rscfl_keep_fn keep,
		    const void *arg, struct rscfl_acct *out)
{
	size_t kept = 0;
	for (size_t i = 0; i < count; i++) {
		if (!keep(&accts[i], arg))
			continue;
		if (&out[kept] != &accts[i]) /* in place, the kept ones only move down */
			memmove(&out[kept], &accts[i], sizeof out[kept]);
		kept++;
	}
	return kept;
}

uint64_t rscfl_fold(const struct rscfl_acct *accts, size_t count, rscfl_extract_fn extract,
		    const void *arg, rscfl_fold_fn fold, uint64_t initial)
{
	uint64_t accumulator = initial;
	for (size_t i = 0; i < count; i++)
		accumulator = fold(accumulator, extract(&accts[i], arg));
	return accumulator;
}

static int compare_values(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

uint64_t rscfl_percentile(uint64_t *values, size_t count, double percent)
{
	if (count == 0)
		return 0;
	qsort(values, count, sizeof values[0], compare_values);
	if (!(percent > 0)) /* NaN too: no rank to convert */
		return values[0];
	if (percent >= 100)
		return values[count - 1];
	/* Nearest rank: the smallest value with at least percent % of values at or below it. */
	double exact = percent * (double)count / 100.0;
	size_t rank = (size_t)exact;
	if ((double)rank < exact)
		rank++;
	return values[rank - 1];
}

size_t rscfl_top_subsystems(const struct rscfl_acct *acct, const struct rscfl_field *by,
			    const struct acct_subsystem **top, size_t max)
{
	size_t found = 0;
	unsigned used = acct->kernel.subsystem_count < ACCT_MAX_SUBSYSTEMS
			    ? acct->kernel.subsystem_count
			    : ACCT_MAX_SUBSYSTEMS;
	for (unsigned i = 0; i < used && max > 0; i++) {
		const struct acct_subsystem *s = &acct->kernel.subsystems[i];
		uint64_t value = rscfl_field_get(s, by);
		size_t at = found < max ? found : max;
		while (at > 0 && rscfl_field_get(top[at - 1], by) < value)
			at--;
		if (at == max)
			continue; /* smaller than all max kept */
		size_t last = found < max ? found : max - 1;
		memmove(&top[at + 1], &top[at], (last - at) * sizeof top[0]);
		top[at] = s;
		if (found < max)
			found++;
	}
	return found;
}
