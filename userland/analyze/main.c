/*
 * analyze: latency histograms of system calls and join points from a
 * microScope trace directory (docs/ANALYSIS.md).  The same source builds for
 * the OS (/bin/analyze, on a trace the file sink wrote) and for the host
 * (build/host/analyze, on a trace mscope recorded), and both print the same.
 *
 *     analyze [--json | --prometheus] [--top N] [--match TEXT] [--pid PID] DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latency.h"
#include "report.h"
#include "trace_read.h"

enum format { TEXT, JSON, PROMETHEUS };

struct options {
	enum format format;
	unsigned top;
	struct latency_filter filter;
	const char *dir;
};

static int usage(void)
{
	fprintf(stderr, "usage: analyze [--json | --prometheus] [--top N] [--match TEXT] "
			"[--pid PID] DIR\n"
			"  latency histograms of system calls and join points in a trace directory\n");
	return 2;
}

/* Returns 0 with *o filled, or -1 (usage). */
static int parse(int argc, char **argv, struct options *o)
{
	*o = (struct options){.format = TEXT};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--json"))
			o->format = JSON;
		else if (!strcmp(a, "--prometheus"))
			o->format = PROMETHEUS;
		else if (!strcmp(a, "--top") && value && (i++, 1))
			o->top = (unsigned)strtoul(value, NULL, 10);
		else if (!strcmp(a, "--match") && value && (i++, 1))
			o->filter.match = value;
		else if (!strcmp(a, "--pid") && value && (i++, 1))
			o->filter.pid = atoi(value);
		else if (a[0] != '-' && !o->dir)
			o->dir = a;
		else
			return -1;
	}
	return o->dir ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct options o;
	if (parse(argc, argv, &o))
		return usage();
	struct trace_dir trace;
	if (trace_open(&trace, o.dir))
		return 1;
	static struct latency_table table;
	int error = latency_collect(&table, &trace, &o.filter);
	trace_close(&trace);
	if (error) {
		fprintf(stderr, "analyze: out of memory\n");
		return 1;
	}
	if (o.format == JSON)
		report_json(stdout, &table);
	else if (o.format == PROMETHEUS)
		report_prometheus(stdout, &table);
	else
		report_text(stdout, &table, o.top);
	latency_free(&table);
	return 0;
}
