/*
 * Latencies out of a trace: a histogram (histogram.h) per system call and
 * per recorded join point, from syscall_entry/syscall_exit and J:entry/J:exit
 * pairs of one thread (the thread on each CPU is known from sched_switch) and
 * from J:call records (their duration).  Times are kept in nanoseconds.
 *
 *     struct latency_table table;
 *     latency_collect(&table, &trace, &filter);   // then report.h
 */
#ifndef ANALYZE_LATENCY_H
#define ANALYZE_LATENCY_H

#include <stdint.h>

#include "histogram.h"
#include "trace_read.h"

#define LATENCY_MAX_KINDS 512
#define LATENCY_OPEN_MAX  16 /* nested open calls kept per thread */
#define LATENCY_THREADS   256

/* The upper bounds of Prometheus' le buckets, in ns: 1 us to 10 s, 1-2-5
 * steps.  Values are counted against them exactly as they are added: the
 * histogram's buckets straddle most of these bounds (1000 ns is in
 * [1000, 1003]), and counting a bucket whole would put a 1002 ns call under
 * le="1e-06". */
#define LATENCY_BOUNDS 22
extern const uint64_t latency_bounds_ns[LATENCY_BOUNDS];

struct latency_kind {
	char name[64]; /* "syscall read", "vfs.read" */
	struct histogram *hist;
	uint64_t at_most[LATENCY_BOUNDS]; /* values <= latency_bounds_ns[i] */
};

struct latency_filter {
	const char *match; /* keep kinds whose name contains this ("" or NULL: all) */
	int pid;           /* keep one process's threads (0: all) */
};

struct latency_table {
	unsigned kind_count;
	struct latency_kind kinds[LATENCY_MAX_KINDS];
	uint64_t events, unpaired;
	uint64_t discarded; /* records the OS counted as dropped */
	uint64_t first_ns, last_ns;
};

/* Reads every event of trace into table.  Returns 0, or -1 (no memory). */
int latency_collect(struct latency_table *table, struct trace_dir *trace,
		    const struct latency_filter *filter);
/* Adds a latency of ns to kind: its histogram and its le counts. */
void latency_add(struct latency_kind *kind, uint64_t ns);
void latency_free(struct latency_table *table);

#endif
