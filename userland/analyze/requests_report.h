/*
 * What analyze --requests prints (requests.h's set, after query.h's filter):
 * text for the console (latency percentiles, kernel time by subsystem, the
 * slowest requests with their breakdown), CSV (one row per request, one
 * column per subsystem) and JSON (the Latency Explorer's data).  Numbers are
 * formatted with integer arithmetic only, so that the OS's and the host's
 * builds print the same bytes.
 *
 *     requests_text(stdout, &set, 10);   // the 10 slowest with their breakdown
 */
#ifndef ANALYZE_REQUESTS_REPORT_H
#define ANALYZE_REQUESTS_REPORT_H

#include <stdio.h>

#include "query.h"
#include "requests.h"

/* top: how many of the slowest to list (0: 10). */
void requests_text(FILE *out, const struct request_set *set, unsigned top);
/* top > 0: only the top slowest, slowest first; else every request in order. */
void requests_csv(FILE *out, const struct request_set *set, unsigned top);
void requests_json(FILE *out, const struct request_set *set, unsigned top);
/* "sum(net) where latency>=p99 = 12.34ms (123400000)". */
void requests_fold_line(FILE *out, const struct request_set *set, const char *text,
			const struct query_fold *fold, uint64_t value);

#endif
