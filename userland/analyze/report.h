/*
 * What the analyzer prints (latency.h's table): a text table that reads on a
 * console (count, p50, p90, p99, max, with units), JSON for other tools, and
 * the Prometheus text exposition format 0.0.4 (a histogram per kind:
 * cumulative _bucket{le} lines ending with +Inf, _sum, _count, in seconds).
 */
#ifndef ANALYZE_REPORT_H
#define ANALYZE_REPORT_H

#include <stdio.h>

#include "latency.h"
#include "requests.h"

void report_text(FILE *out, const struct latency_table *table, unsigned top);
void report_json(FILE *out, const struct latency_table *table);
/* Latency histograms, calls per join point and system call, the trace
 * channel's produced/delivered/dropped records. */
void report_prometheus(FILE *out, const struct latency_table *table);
/* microscope_request_kernel_seconds_total{subsystem}: ns[i] of names[i]. */
void report_prometheus_subsystems(FILE *out, const char (*names)[REQUEST_NAME_MAX],
				  const uint64_t *ns, unsigned count);

#endif
