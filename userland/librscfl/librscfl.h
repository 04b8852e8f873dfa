/*
 * librscfl: per-activity accounting for applications, in the shape of
 * Resourceful's API.  A thread gets a handle, allocates tokens (one per
 * activity: a request, a query), marks where each starts and stops, and reads
 * what the kernel spent on it per subsystem straight from a page the kernel
 * maps read-only into the process (no system call; see acct/acct.h for every
 * field and its unit).  Application metrics are kept beside the kernel's.
 *
 *     rscfl_handle h = rscfl_init();  int token = rscfl_get_token(h);
 *     rscfl_acct(h, token, ACCT_START); serve(request); rscfl_acct(h, token, ACCT_STOP);
 *     struct rscfl_acct a; rscfl_read_acct(h, token, &a);   // a.kernel.cpu_ns ...
 *
 * Errors are negative Linux errno values (the kernel's: -22 EINVAL, -28
 * ENOSPC, -114 EALREADY, -2 ENOENT), not newlib's errno.
 */
#ifndef USERLAND_LIBRSCFL_LIBRSCFL_H
#define USERLAND_LIBRSCFL_LIBRSCFL_H

#include <stddef.h>
#include <stdint.h>

#include "uapi/acct.h"

#define RSCFL_MAX_METRICS 4 /* application metrics per token */
#define RSCFL_METRIC_NAME 16

struct rscfl_metric {
	char name[RSCFL_METRIC_NAME];
	int64_t value;
};

/* One activity's results: the kernel's, then the application's own. */
struct rscfl_acct {
	struct acct_result kernel;
	unsigned metric_count;
	struct rscfl_metric metrics[RSCFL_MAX_METRICS];
};

struct rscfl_state {
	const struct acct_page *page; /* the kernel's results, read-only */
	unsigned fork_depth;          /* ms_fork_depth when made: whose process's */
	struct rscfl_acct_metrics {
		unsigned count;
		struct rscfl_metric metrics[RSCFL_MAX_METRICS];
	} metrics[ACCT_MAX_TOKENS];
};
typedef struct rscfl_state *rscfl_handle;

/* The calling thread's handle (the same one on every call), or NULL when the
 * kernel refuses (no memory, every accounting state in use).  In a child
 * after fork the parent's handle is not the child's (its results page is not
 * mapped there): every call on it gives -ENOENT, and rscfl_init makes it the
 * child's own, with no token and no metrics. */
rscfl_handle rscfl_init(void);
/* Returns a new token (> 0), or -ENOSPC (all ACCT_MAX_TOKENS in use),
 * -EINVAL (h is NULL), -ENOENT (h is not this thread's). */
int rscfl_get_token(rscfl_handle h);
/* Frees token, stopping it.  Returns 0, -EINVAL (unknown token), -ENOENT. */
int rscfl_free_token(rscfl_handle h, int token);
/* ACCT_START, ACCT_STOP, ACCT_NEXT, optionally | ACCT_TK_RESET (or alone).
 * Returns 0, -EINVAL (unknown token, bad flags, STOP without START),
 * -EALREADY (START of a started token), -ENOENT. */
int rscfl_acct(rscfl_handle h, int token, unsigned flags);
/* Makes the started token current (event loops serving requests in stages);
 * the current one is suspended.  Returns 0, -EINVAL, -ENOENT. */
int rscfl_switch_token(rscfl_handle h, int token);
/* Copies token's results into *acct, consistently, without a system call.
 * Returns 0, -EINVAL (h or acct NULL, unknown token), -EAGAIN (the kernel
 * kept writing). */
int rscfl_read_acct(rscfl_handle h, int token, struct rscfl_acct *acct);
/* The same, copying only what is in use: the subsystems below
 * acct->kernel.subsystem_count and the metrics below acct->metric_count;
 * the slots past those are left as they were in *acct (for a program that
 * reads only the used ones, as librscfl's aggregation does). */
int rscfl_read_acct_used(rscfl_handle h, int token, struct rscfl_acct *acct);
/* Copies what the thread spent while accounting was on but none of its
 * tokens was current (acct_page.unattributed: the sum over tokens plus it is
 * the thread's total over that time) into *acct, without metrics.  Returns
 * 0, -EINVAL (h or acct NULL), -EAGAIN. */
int rscfl_read_unattributed(rscfl_handle h, struct rscfl_acct *acct);
/* Stores an application metric beside token's results (same name: replaced).
 * Returns 0, -EINVAL (unknown token, name NULL), -ENOSPC (RSCFL_MAX_METRICS). */
int rscfl_store_metric(rscfl_handle h, int token, const char *name, int64_t value);
/* Stores metrics[0..count) beside token's results in place of the metrics it
 * has, by position: no name is compared or measured, for a program that
 * stores the same names for every activity (a name's last byte is taken as
 * 0; the names should differ).  Returns 0, -EINVAL (unknown token, metrics
 * NULL), -ENOSPC (count over RSCFL_MAX_METRICS: nothing stored). */
int rscfl_store_metrics(rscfl_handle h, int token, const struct rscfl_metric *metrics,
			unsigned count);

/* The subsystem named name in acct, or NULL. */
const struct acct_subsystem *rscfl_find_subsystem(const struct rscfl_acct *acct, const char *name);

/* ---- Aggregation over many results (aggregate.c: no system calls) --------
 * map turns results into numbers, filter keeps the results a predicate
 * accepts, fold reduces them to one number, percentile ranks numbers.  Fields
 * are named by a table (rscfl_result_fields: every number of struct
 * acct_result with its unit), so a program can also print all of them.  Sum of
 * the net subsystem's time over the requests at or above the 99th percentile
 * of wall time:
 *
 *     const struct rscfl_field *wall = rscfl_find_field("wall_ns");
 *     uint64_t walls[N];  struct rscfl_acct slow[N];
 *     rscfl_map(results, n, rscfl_field_value, wall, walls);
 *     struct rscfl_threshold p99 = {rscfl_field_value, wall, rscfl_percentile(walls, n, 99)};
 *     size_t k = rscfl_filter(results, n, rscfl_at_least, &p99, slow);
 *     uint64_t net_ns = rscfl_fold(slow, k, rscfl_subsystem_inclusive_ns, "net", rscfl_sum, 0);
 */

/* One number in a record (struct acct_result or struct acct_subsystem). */
struct rscfl_field {
	const char *name; /* as in acct/acct.h ("wall_ns") */
	unsigned offset;  /* of its uint64_t in the record */
	const char *unit; /* "ns", "bytes", "count" */
};

/* Every uint64_t of struct acct_result, and of struct acct_subsystem, in
 * layout order. */
extern const struct rscfl_field rscfl_result_fields[];
extern const unsigned rscfl_result_field_count;
extern const struct rscfl_field rscfl_subsystem_fields[];
extern const unsigned rscfl_subsystem_field_count;

/* The result field named name, or NULL. */
const struct rscfl_field *rscfl_find_field(const char *name);
/* The subsystem field named name, or NULL. */
const struct rscfl_field *rscfl_find_subsystem_field(const char *name);
/* The value of field in record (a struct acct_result or acct_subsystem, as
 * the field's table says). */
uint64_t rscfl_field_get(const void *record, const struct rscfl_field *field);

/* Extracts one number from a result; arg is the extractor's own. */
typedef uint64_t (*rscfl_extract_fn)(const struct rscfl_acct *acct, const void *arg);
/* Says whether to keep a result: non-zero keeps it. */
typedef int (*rscfl_keep_fn)(const struct rscfl_acct *acct, const void *arg);
/* Combines the accumulator with one value; returns the new accumulator. */
typedef uint64_t (*rscfl_fold_fn)(uint64_t accumulator, uint64_t value);

/* Extractors.  rscfl_field_value: arg is a const struct rscfl_field * from
 * rscfl_result_fields.  rscfl_subsystem_inclusive_ns / _exclusive_ns: arg is
 * the subsystem's name; 0 when the result has no such subsystem.
 * rscfl_metric_value: arg is an application metric's name; 0 when absent
 * (negative values also read 0). */
uint64_t rscfl_field_value(const struct rscfl_acct *acct, const void *field);
uint64_t rscfl_subsystem_inclusive_ns(const struct rscfl_acct *acct, const void *name);
uint64_t rscfl_subsystem_exclusive_ns(const struct rscfl_acct *acct, const void *name);
uint64_t rscfl_metric_value(const struct rscfl_acct *acct, const void *name);

/* A predicate's argument: extract(acct, extract_arg) compared with limit. */
struct rscfl_threshold {
	rscfl_extract_fn extract;
	const void *extract_arg;
	uint64_t limit;
};
/* Predicates over a struct rscfl_threshold: value >= limit, value < limit. */
int rscfl_at_least(const struct rscfl_acct *acct, const void *threshold);
int rscfl_below(const struct rscfl_acct *acct, const void *threshold);

/* Folds: sum (wraps at 2^64), maximum, minimum (start it at UINT64_MAX). */
uint64_t rscfl_sum(uint64_t accumulator, uint64_t value);
uint64_t rscfl_max(uint64_t accumulator, uint64_t value);
uint64_t rscfl_min(uint64_t accumulator, uint64_t value);

/* values[i] = extract(&accts[i], arg) for i < count.  Returns count. */
size_t rscfl_map(const struct rscfl_acct *accts, size_t count, rscfl_extract_fn extract,
		 const void *arg, uint64_t *values);
/* Copies the results keep accepts, in order, to out (which may be accts
 * itself: filtering in place).  Returns how many were kept. */
size_t rscfl_filter(const struct rscfl_acct *accts, size_t count, rscfl_keep_fn keep,
		    const void *arg, struct rscfl_acct *out);
/* Returns fold(...fold(fold(initial, v0), v1)..., vn-1) with vi =
 * extract(&accts[i], arg): initial when count is 0. */
uint64_t rscfl_fold(const struct rscfl_acct *accts, size_t count, rscfl_extract_fn extract,
		    const void *arg, rscfl_fold_fn fold, uint64_t initial);
/* The nearest-rank percentile (0 < percent <= 100; 0 or less, or NaN, gives the smallest) of
 * values, which it sorts in place.  Returns 0 when count is 0. */
uint64_t rscfl_percentile(uint64_t *values, size_t count, double percent);
/* Fills top with up to max of acct's subsystems, largest value of by (a
 * subsystem field) first.  Returns how many. */
size_t rscfl_top_subsystems(const struct rscfl_acct *acct, const struct rscfl_field *by,
			    const struct acct_subsystem **top, size_t max);

#endif
