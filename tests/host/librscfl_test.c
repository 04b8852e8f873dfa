// host-test-sources: userland/librscfl/aggregate.c
/*
 * librscfl's aggregation helpers on made-up results whose answers were worked
 * out by hand: map, filter (also in place), fold, the nearest-rank
 * percentile, the top subsystems, and the question "net time summed
 * over the requests at or above p99".  The field tables must cover every
 * number of the kernel's layout, so a field added there without a row fails
 * here.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "hosttest.h"
#include "userland/librscfl/librscfl.h"

#define REQUESTS 10

static struct rscfl_acct results[REQUESTS];

static void add_subsystem(struct rscfl_acct *a, const char *name, uint64_t inclusive,
			  uint64_t exclusive)
{
	struct acct_subsystem *s = &a->kernel.subsystems[a->kernel.subsystem_count++];
	strncpy(s->name, name, ACCT_NAME_MAX - 1);
	s->calls = 1;
	s->inclusive_ns = inclusive;
	s->exclusive_ns = exclusive;
}

/* Request i: wall (i + 1) * 100 ns, cpu (i + 1) * 10, syscalls i; "net" of
 * inclusive (i + 1) * 7 in the odd ones, "vfs" of 5 in all. */
static void make_results(void)
{
	memset(results, 0, sizeof results);
	for (int i = 0; i < REQUESTS; i++) {
		struct rscfl_acct *a = &results[i];
		a->kernel.wall_ns = (uint64_t)(i + 1) * 100;
		a->kernel.cpu_ns = (uint64_t)(i + 1) * 10;
		a->kernel.syscalls = (uint64_t)i;
		add_subsystem(a, "vfs", 5, 4);
		if (i % 2)
			add_subsystem(a, "net", (uint64_t)(i + 1) * 7, (uint64_t)(i + 1) * 3);
	}
}

/* Does every uint64_t of the layout have a row (and only those)? */
static void tables_cover_the_layout(void)
{
	size_t result_rest = 2 * sizeof(uint32_t) /* sequence, state */ +
			     2 * sizeof(uint32_t) /* subsystem_count, reserved */ +
			     sizeof(((struct acct_result *)0)->subsystems);
	CHECK_EQ(rscfl_result_field_count * sizeof(uint64_t) + result_rest,
		 sizeof(struct acct_result));
	CHECK_EQ(rscfl_subsystem_field_count * sizeof(uint64_t) + ACCT_NAME_MAX,
		 sizeof(struct acct_subsystem));
	for (unsigned i = 1; i < rscfl_result_field_count; i++)
		CHECK(rscfl_result_fields[i].offset > rscfl_result_fields[i - 1].offset);
	CHECK(rscfl_find_field("wall_ns") == &rscfl_result_fields[0]);
	CHECK(rscfl_find_field("tcp_retransmits") != NULL);
	CHECK(rscfl_find_field("nonsense") == NULL);
	CHECK(rscfl_find_field(NULL) == NULL);
	CHECK(rscfl_find_subsystem_field("exclusive_ns") != NULL);
}

static void field_reads_the_named_number(void)
{
	make_results();
	results[3].kernel.tcp_bytes_received = 1234;
	CHECK_EQ(rscfl_field_value(&results[3], rscfl_find_field("tcp_bytes_received")), 1234);
	CHECK_EQ(rscfl_field_value(&results[3], rscfl_find_field("cpu_ns")), 40);
	const struct rscfl_field *calls = rscfl_find_subsystem_field("calls");
	CHECK_EQ(rscfl_field_get(&results[3].kernel.subsystems[1], calls), 1);
}

static void map_extracts_in_order(void)
{
	make_results();
	uint64_t values[REQUESTS];
	CHECK_EQ(rscfl_map(results, REQUESTS, rscfl_subsystem_inclusive_ns, "net", values),
		 REQUESTS);
	const uint64_t expected[REQUESTS] = {0, 14, 0, 28, 0, 42, 0, 56, 0, 70};
	for (int i = 0; i < REQUESTS; i++)
		CHECK_EQ(values[i], expected[i]);
	rscfl_map(results, REQUESTS, rscfl_subsystem_exclusive_ns, "net", values);
	CHECK_EQ(values[9], 30);
	CHECK_EQ(rscfl_subsystem_inclusive_ns(&results[1], "missing"), 0);
}

static void fold_sums_and_bounds(void)
{
	make_results();
	const struct rscfl_field *wall = rscfl_find_field("wall_ns");
	/* 100 + 200 + ... + 1000 */
	CHECK_EQ(rscfl_fold(results, REQUESTS, rscfl_field_value, wall, rscfl_sum, 0), 5500);
	CHECK_EQ(rscfl_fold(results, REQUESTS, rscfl_field_value, wall, rscfl_max, 0), 1000);
	CHECK_EQ(rscfl_fold(results, REQUESTS, rscfl_field_value, wall, rscfl_min, UINT64_MAX),
		 100);
	CHECK_EQ(rscfl_fold(results, 0, rscfl_field_value, wall, rscfl_sum, 17), 17);
	/* net inclusive: 14 + 28 + 42 + 56 + 70 */
	CHECK_EQ(rscfl_fold(results, REQUESTS, rscfl_subsystem_inclusive_ns, "net", rscfl_sum, 0),
		 210);
}

static void filter_keeps_order_and_works_in_place(void)
{
	make_results();
	struct rscfl_threshold slow = {rscfl_field_value, rscfl_find_field("wall_ns"), 700};
	static struct rscfl_acct out[REQUESTS];
	CHECK_EQ(rscfl_filter(results, REQUESTS, rscfl_at_least, &slow, out), 4);
	CHECK_EQ(out[0].kernel.wall_ns, 700);
	CHECK_EQ(out[3].kernel.wall_ns, 1000);
	CHECK_EQ(rscfl_filter(results, REQUESTS, rscfl_below, &slow, out), 6);
	CHECK_EQ(out[5].kernel.wall_ns, 600);
	/* In place: the kept ones move to the front, in order. */
	CHECK_EQ(rscfl_filter(results, REQUESTS, rscfl_at_least, &slow, results), 4);
	CHECK_EQ(results[0].kernel.wall_ns, 700);
	CHECK_EQ(results[1].kernel.wall_ns, 800);
	CHECK_EQ(results[1].kernel.subsystem_count, 2);
	slow.limit = 5000;
	CHECK_EQ(rscfl_filter(results, 4, rscfl_at_least, &slow, out), 0);
}

static void percentile_is_nearest_rank(void)
{
	uint64_t values[] = {50, 10, 40, 20, 30};
	CHECK_EQ(rscfl_percentile(values, 5, 50), 30); /* rank ceil(2.5) = 3 */
	CHECK_EQ(values[0], 10);                       /* sorted in place */
	CHECK_EQ(rscfl_percentile(values, 5, 20), 10); /* rank 1 exactly */
	CHECK_EQ(rscfl_percentile(values, 5, 21), 20); /* rank ceil(1.05) = 2 */
	CHECK_EQ(rscfl_percentile(values, 5, 99), 50);
	CHECK_EQ(rscfl_percentile(values, 5, 100), 50);
	CHECK_EQ(rscfl_percentile(values, 5, 0), 10);
	CHECK_EQ(rscfl_percentile(values, 0, 50), 0);
	uint64_t hundred[100];
	for (int i = 0; i < 100; i++)
		hundred[i] = (uint64_t)(100 - i); /* 100 .. 1 */
	CHECK_EQ(rscfl_percentile(hundred, 100, 99), 99);
	CHECK_EQ(rscfl_percentile(hundred, 100, 99.5), 100);
	/* A percent that is not a number (a ratio of two zeros) is no rank past
	 * the array: the smallest, as 0 is. */
	CHECK_EQ(rscfl_percentile(values, 5, NAN), 10);
	CHECK_EQ(rscfl_percentile(values, 5, -NAN), 10);
}

/* The example: net time over the requests at or above p99 of wall time. */
static void net_time_of_the_slowest_requests(void)
{
	make_results();
	const struct rscfl_field *wall = rscfl_find_field("wall_ns");
	uint64_t walls[REQUESTS];
	static struct rscfl_acct slow[REQUESTS];
	rscfl_map(results, REQUESTS, rscfl_field_value, wall, walls);
	/* p80 of 100..1000 is rank 8: 800; requests 800, 900, 1000 have net 56, 0, 70. */
	struct rscfl_threshold p80 = {rscfl_field_value, wall,
				      rscfl_percentile(walls, REQUESTS, 80)};
	CHECK_EQ(p80.limit, 800);
	size_t k = rscfl_filter(results, REQUESTS, rscfl_at_least, &p80, slow);
	CHECK_EQ(k, 3);
	CHECK_EQ(rscfl_fold(slow, k, rscfl_subsystem_inclusive_ns, "net", rscfl_sum, 0), 126);
	struct rscfl_threshold p99 = {rscfl_field_value, wall,
				      rscfl_percentile(walls, REQUESTS, 99)};
	k = rscfl_filter(results, REQUESTS, rscfl_at_least, &p99, slow);
	CHECK_EQ(k, 1);
	CHECK_EQ(rscfl_fold(slow, k, rscfl_subsystem_inclusive_ns, "net", rscfl_sum, 0), 70);
}

static void metrics_extract_by_name(void)
{
	make_results();
	results[0].metric_count = 2;
	strcpy(results[0].metrics[0].name, "bytes");
	results[0].metrics[0].value = 99;
	strcpy(results[0].metrics[1].name, "negative");
	results[0].metrics[1].value = -5;
	CHECK_EQ(rscfl_metric_value(&results[0], "bytes"), 99);
	CHECK_EQ(rscfl_metric_value(&results[0], "negative"), 0);
	CHECK_EQ(rscfl_metric_value(&results[0], "absent"), 0);
	CHECK_EQ(rscfl_metric_value(&results[1], "bytes"), 0);
}

static void top_subsystems_largest_first(void)
{
	struct rscfl_acct a;
	memset(&a, 0, sizeof a);
	add_subsystem(&a, "sys", 30, 1);
	add_subsystem(&a, "vfs", 10, 9);
	add_subsystem(&a, "net", 50, 2);
	add_subsystem(&a, "mm", 20, 20);
	const struct acct_subsystem *top[4];
	const struct rscfl_field *inclusive = rscfl_find_subsystem_field("inclusive_ns");
	REQUIRE_EQ(rscfl_top_subsystems(&a, inclusive, top, 3), 3);
	CHECK_STR_EQ(top[0]->name, "net");
	CHECK_STR_EQ(top[1]->name, "sys");
	CHECK_STR_EQ(top[2]->name, "mm");
	const struct rscfl_field *exclusive = rscfl_find_subsystem_field("exclusive_ns");
	REQUIRE_EQ(rscfl_top_subsystems(&a, exclusive, top, 4), 4);
	CHECK_STR_EQ(top[0]->name, "mm");
	CHECK_STR_EQ(top[1]->name, "vfs");
	CHECK_STR_EQ(top[3]->name, "sys");
	CHECK_EQ(rscfl_top_subsystems(&a, exclusive, top, 0), 0);
	a.kernel.subsystem_count = 0;
	CHECK_EQ(rscfl_top_subsystems(&a, exclusive, top, 4), 0);
}

HOSTTEST_MAIN(HOSTTEST_CASE(tables_cover_the_layout), HOSTTEST_CASE(field_reads_the_named_number),
	      HOSTTEST_CASE(map_extracts_in_order), HOSTTEST_CASE(fold_sums_and_bounds),
	      HOSTTEST_CASE(filter_keeps_order_and_works_in_place),
	      HOSTTEST_CASE(percentile_is_nearest_rank),
	      HOSTTEST_CASE(net_time_of_the_slowest_requests),
	      HOSTTEST_CASE(metrics_extract_by_name), HOSTTEST_CASE(top_subsystems_largest_first))
