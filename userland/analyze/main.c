/*
 * analyze: latency histograms of system calls and join points, and
 * per-request breakdowns by subsystem, from a microScope trace directory or
 * httpd's accounting results (docs/ANALYSIS.md).  The same source builds for
 * the OS (/bin/analyze, on a trace the file sink wrote) and for the host
 * (build/host/analyze, on a trace mscope recorded), and both print the same.
 *
 *     analyze [--json | --prometheus] [--top N] [--match TEXT] [--pid PID] DIR
 *     analyze --requests [--json | --csv] [--events] [--top N] [--where COND]...
 *             [--from TIME] [--to TIME] [--fold EXPR]... (DIR | --rscfl FILE)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latency.h"
#include "query.h"
#include "report.h"
#include "requests.h"
#include "requests_report.h"
#include "trace_read.h"

#define FOLDS_MAX 8
#define WHERE_MAX QUERY_CONDITIONS_MAX

enum format { TEXT, JSON, CSV, PROMETHEUS };

struct options {
	enum format format;
	int requests, events;
	unsigned top;
	struct latency_filter filter;
	const char *dir, *rscfl;
	const char *where[WHERE_MAX], *folds[FOLDS_MAX];
	unsigned where_count, fold_count;
	const char *from, *to;
};

static int usage(void)
{
	fprintf(stderr,
		"usage: analyze [--json | --prometheus] [--top N] [--match TEXT] [--pid PID] DIR\n"
		"       analyze --requests [--json | --csv] [--events] [--top N] [--pid PID]\n"
		"               [--match TEXT] [--where COND]... [--from TIME] [--to TIME]\n"
		"               [--fold EXPR]... (DIR | --rscfl FILE)\n"
		"  latency histograms of system calls and join points in a trace directory;\n"
		"  --requests: each request's kernel time by subsystem, the slowest, and folds\n"
		"  such as 'sum(net) where latency>=p99'\n");
	return 2;
}

static int add_to(const char **list, unsigned *count, unsigned max, const char *value)
{
	if (*count == max)
		return -1;
	list[(*count)++] = value;
	return 0;
}

/* text as a whole decimal number in [low, high] into *value.  Returns 0, or
 * -1 with a line on stderr (no number, trailing text, out of range): an
 * option such as --top abc is refused, not taken for 0. */
static int parse_number(const char *option, const char *text, long low, long high, long *value)
{
	char *end;
	long number = strtol(text, &end, 10);
	if (end == text || *end || number < low || number > high) {
		fprintf(stderr, "analyze: %s takes a number from %ld to %ld, not '%s'\n", option,
			low, high, text);
		return -1;
	}
	*value = number;
	return 0;
}

/* One option with its value; returns 1 when a was one, -1 on a bad one. */
static int parse_valued(struct options *o, const char *a, const char *value)
{
	long number;
	if (!value)
		return 0;
	if (!strcmp(a, "--top")) {
		if (parse_number(a, value, 1, 1000000000, &number))
			return -1;
		o->top = (unsigned)number;
	} else if (!strcmp(a, "--match")) {
		o->filter.match = value;
	} else if (!strcmp(a, "--pid")) {
		if (parse_number(a, value, 1, INT32_MAX, &number))
			return -1;
		o->filter.pid = (int)number;
	} else if (!strcmp(a, "--rscfl"))
		o->rscfl = value, o->requests = 1;
	else if (!strcmp(a, "--where"))
		return add_to(o->where, &o->where_count, WHERE_MAX, value) ? -1 : 1;
	else if (!strcmp(a, "--fold"))
		return add_to(o->folds, &o->fold_count, FOLDS_MAX, value) ? -1 : 1;
	else if (!strcmp(a, "--from"))
		o->from = value;
	else if (!strcmp(a, "--to"))
		o->to = value;
	else
		return 0;
	return 1;
}

/* The output format option a; returns 1 when a was one, -1 when a format
 * was given already (--json --csv: which one was meant is not known). */
static int parse_format(struct options *o, const char *a)
{
	static const struct {
		const char *option;
		enum format format;
	} formats[] = {{"--json", JSON}, {"--csv", CSV}, {"--prometheus", PROMETHEUS}};
	for (unsigned i = 0; i < sizeof formats / sizeof formats[0]; i++) {
		if (strcmp(a, formats[i].option))
			continue;
		if (o->format != TEXT)
			return -1;
		o->format = formats[i].format;
		return 1;
	}
	return 0;
}

/* Returns 0 with *o filled, or -1 (usage). */
static int parse(int argc, char **argv, struct options *o)
{
	*o = (struct options){.format = TEXT};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int valued = parse_valued(o, a, i + 1 < argc ? argv[i + 1] : NULL);
		if (valued < 0)
			return -1;
		if (valued) {
			i++;
			continue;
		}
		int format = parse_format(o, a);
		if (format < 0)
			return -1;
		if (format)
			continue;
		if (!strcmp(a, "--requests"))
			o->requests = 1;
		else if (!strcmp(a, "--events"))
			o->events = 1;
		else if (a[0] != '-' && !o->dir)
			o->dir = a;
		else
			return -1;
	}
	if (o->requests && o->format == PROMETHEUS)
		return -1;
	if (!o->requests &&
	    (o->format == CSV || o->where_count || o->fold_count || o->from || o->to || o->events))
		return -1;
	return (o->dir != NULL) != (o->rscfl != NULL) ? 0 : -1;
}

/* The requests of the options' source into set.  Returns 0 or -1. */
static int collect_requests(const struct options *o, struct request_set *set)
{
	set->keep_events = o->events;
	if (o->rscfl)
		return requests_from_rscfl(set, o->rscfl);
	struct trace_dir trace;
	if (trace_open(&trace, o->dir))
		return -1;
	int error = requests_from_trace(set, &trace, &o->filter);
	if (error)
		fprintf(stderr, "analyze: out of memory\n");
	else if (trace_problems(&trace, o->dir))
		error = -1; /* what was read is no whole capture */
	trace_close(&trace);
	return error;
}

/* TIME ("1.5s", "200ms", "0") into ns of the filter.  Returns 0 or -1. */
static int parse_time(const struct request_set *set, const char *text, uint64_t *ns)
{
	struct query_filter probe = {0};
	char condition[64];
	snprintf(condition, sizeof condition, "start>=%s", text);
	if (query_parse_condition(set, condition, &probe) < 0 ||
	    probe.where[0].percentile_per_mille)
		return -1;
	*ns = probe.where[0].value;
	return 0;
}

static int build_filter(const struct options *o, const struct request_set *set,
			struct query_filter *filter)
{
	*filter = (struct query_filter){
	    .pid = o->filter.pid, .matched_only = o->filter.match && *o->filter.match && !o->rscfl};
	for (unsigned i = 0; i < o->where_count; i++)
		if (query_parse_condition(set, o->where[i], filter) < 0)
			return -1;
	if (o->from && parse_time(set, o->from, &filter->from_ns) < 0)
		return -1;
	if (o->to && parse_time(set, o->to, &filter->to_ns) < 0)
		return -1;
	return 0;
}

static int run_requests(const struct options *o)
{
	static struct request_set set;
	struct query_filter filter;
	if (collect_requests(o, &set) < 0 || build_filter(o, &set, &filter) < 0)
		return 1;
	query_apply(&set, &filter);
	struct query_fold folds[FOLDS_MAX];
	for (unsigned i = 0; i < o->fold_count; i++)
		if (query_parse_fold(&set, o->folds[i], &folds[i]) < 0)
			return 1;
	if (o->format == JSON)
		requests_json(stdout, &set, o->top);
	else if (o->format == CSV)
		requests_csv(stdout, &set, o->top);
	else if (!o->fold_count || o->top)
		requests_text(stdout, &set, o->top);
	for (unsigned i = 0; i < o->fold_count; i++)
		requests_fold_line(o->format == TEXT ? stdout : stderr, &set, o->folds[i],
				   &folds[i], query_fold(&set, &folds[i]));
	request_set_free(&set);
	return 0;
}

/* The Prometheus text of a trace: latencies, call counts, the stream's
 * counts, and the requests' kernel time by subsystem. */
static int run_prometheus(const struct options *o, const struct latency_table *table)
{
	static struct request_set set;
	if (collect_requests(o, &set) < 0)
		return 1;
	report_prometheus(stdout, table);
	uint64_t totals[REQUEST_SUBSYSTEMS] = {0};
	for (size_t i = 0; i < set.count; i++)
		for (unsigned s = 0; s < set.subsystem_count; s++)
			totals[s] += set.requests[i].subsystem_ns[s];
	report_prometheus_subsystems(stdout, set.subsystems, totals, set.subsystem_count);
	request_set_free(&set);
	return 0;
}

int main(int argc, char **argv)
{
	struct options o;
	if (parse(argc, argv, &o))
		return usage();
	if (o.requests)
		return run_requests(&o);
	struct trace_dir trace;
	if (trace_open(&trace, o.dir))
		return 1;
	static struct latency_table table;
	int error = latency_collect(&table, &trace, &o.filter);
	int cut = error ? 0 : trace_problems(&trace, o.dir);
	trace_close(&trace);
	if (error) {
		fprintf(stderr, "analyze: out of memory\n");
		return 1;
	}
	if (o.format == JSON)
		report_json(stdout, &table);
	else if (o.format == PROMETHEUS)
		error = run_prometheus(&o, &table);
	else
		report_text(stdout, &table, o.top);
	latency_free(&table);
	return error || cut ? 1
			    : 0; /* a cut capture's figures are printed, and the status says so */
}
