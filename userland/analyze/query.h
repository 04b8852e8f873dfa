/*
 * Questions over many requests, rscfl-style map-fold-filter: keep the
 * requests whose columns pass conditions ("latency>p99", "net>=2ms",
 * "status=404"), then fold one column over them ("sum(net)").  A percentile
 * in a condition is the nearest-rank percentile of that column over the
 * requests the question starts from, so "sum(net) where latency>=p99" is
 * the network time of the slowest 1 %.
 *
 *     struct query_fold fold;
 *     if (query_parse_fold(&set, "sum(net) where latency>=p99", &fold) == 0)
 *             printf("%llu\n", (unsigned long long)query_fold(&set, &fold));
 */
#ifndef ANALYZE_QUERY_H
#define ANALYZE_QUERY_H

#include "requests.h"

#define QUERY_CONDITIONS_MAX 8

enum query_op { QUERY_LT, QUERY_LE, QUERY_GT, QUERY_GE, QUERY_EQ, QUERY_NE };

struct query_condition {
	int field; /* request_field_of */
	enum query_op op;
	unsigned percentile_per_mille; /* > 0: the value is this percentile of field */
	uint64_t value;                /* ns for times, else as is */
};

struct query_filter {
	struct query_condition where[QUERY_CONDITIONS_MAX];
	unsigned count;
	int pid;                 /* 0: every process */
	uint64_t from_ns, to_ns; /* start within [from, to); to 0: no end */
	int matched_only;        /* only requests that called --match's join points */
};

enum query_fold_op { FOLD_SUM, FOLD_MEAN, FOLD_MIN, FOLD_MAX, FOLD_COUNT, FOLD_PERCENTILE };

struct query_fold {
	enum query_fold_op op;
	unsigned percentile_per_mille; /* FOLD_PERCENTILE */
	int field;
	struct query_filter where;
};

/* Parses "FIELD OP VALUE" (OP one of < <= > >= = !=; VALUE a number with an
 * optional unit ns, us, ms, s for times, or pNN[.N]) and appends it to
 * filter.  Returns 0, or -1 with a message on stderr. */
int query_parse_condition(const struct request_set *set, const char *text,
			  struct query_filter *filter);
/* Parses "OP(FIELD) [where CONDITION [and CONDITION]...]", OP one of sum,
 * mean, min, max, count, pNN[.N].  Returns 0, or -1 with a message. */
int query_parse_fold(const struct request_set *set, const char *text, struct query_fold *fold);
/* Keeps the requests of set that pass filter (in place, order kept). */
void query_apply(struct request_set *set, const struct query_filter *filter);
/* The nearest-rank percentile (per mille: 990 is p99) of field over set;
 * 0 when set is empty. */
uint64_t query_percentile(const struct request_set *set, int field, unsigned per_mille);
/* The fold's value over the requests of set that pass its conditions
 * (set is not changed).  Returns it; 0 when none pass. */
uint64_t query_fold(const struct request_set *set, const struct query_fold *fold);

#endif
