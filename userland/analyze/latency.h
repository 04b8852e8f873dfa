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

struct latency_kind {
	char name[64]; /* "syscall read", "vfs.read" */
	struct histogram *hist;
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
void latency_free(struct latency_table *table);

#endif
