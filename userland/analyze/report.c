/*
 * The analyzer's outputs (report.h).  Kinds are listed by total time, the
 * largest first.  Latencies are shown in the unit that keeps them readable
 * (ns, us, ms, s); JSON and Prometheus carry nanoseconds and seconds.
 */
#include "report.h"

#include <stdlib.h>
#include <string.h>

/* Largest total first; equal totals by name, so that the order is the same
 * whichever C library's qsort (newlib's in the OS, glibc's on the host) ran. */
static int by_total(const void *a, const void *b)
{
	const struct latency_kind *x = *(const struct latency_kind *const *)a;
	const struct latency_kind *y = *(const struct latency_kind *const *)b;
	if (x->hist->sum != y->hist->sum)
		return x->hist->sum < y->hist->sum ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* The table's kinds that have values, largest total first; returns how many. */
static unsigned sorted_kinds(const struct latency_table *table, const struct latency_kind **sorted)
{
	unsigned n = 0;
	for (unsigned i = 0; i < table->kind_count; i++)
		if (table->kinds[i].hist->count)
			sorted[n++] = &table->kinds[i];
	qsort(sorted, n, sizeof *sorted, by_total);
	return n;
}

static void print_ns(FILE *out, uint64_t ns)
{
	if (ns < 10000)
		fprintf(out, " %8lluns", (unsigned long long)ns);
	else if (ns < 10000000)
		fprintf(out, " %8.1fus", (double)ns / 1e3);
	else if (ns < 10000000000ULL)
		fprintf(out, " %8.2fms", (double)ns / 1e6);
	else
		fprintf(out, " %8.2fs ", (double)ns / 1e9);
}

void report_text(FILE *out, const struct latency_table *table, unsigned top)
{
	const struct latency_kind *sorted[LATENCY_MAX_KINDS];
	unsigned n = sorted_kinds(table, sorted);
	fprintf(out, "%llu events over %.3f s, %llu discarded by the OS, %llu calls unpaired\n",
		(unsigned long long)table->events, (double)(table->last_ns - table->first_ns) / 1e9,
		(unsigned long long)table->discarded, (unsigned long long)table->unpaired);
	fprintf(out, "%-28s %8s %10s %10s %10s %10s %10s\n", "latency of", "count", "p50", "p90",
		"p99", "max", "total");
	for (unsigned i = 0; i < n && (!top || i < top); i++) {
		const struct histogram *h = sorted[i]->hist;
		fprintf(out, "%-28s %8llu", sorted[i]->name, (unsigned long long)h->count);
		print_ns(out, hist_percentile(h, 50));
		print_ns(out, hist_percentile(h, 90));
		print_ns(out, hist_percentile(h, 99));
		print_ns(out, h->max);
		print_ns(out, h->sum);
		fputc('\n', out);
	}
}

/* name as a JSON string or a Prometheus label value (both escape \ and "). */
static void print_quoted(FILE *out, const char *name)
{
	fputc('"', out);
	for (const char *c = name; *c; c++) {
		if (*c == '"' || *c == '\\')
			fputc('\\', out);
		if ((unsigned char)*c >= 0x20)
			fputc(*c, out);
	}
	fputc('"', out);
}

void report_json(FILE *out, const struct latency_table *table)
{
	const struct latency_kind *sorted[LATENCY_MAX_KINDS];
	unsigned n = sorted_kinds(table, sorted);
	fprintf(out,
		"{\"events\": %llu, \"discarded\": %llu, \"unpaired\": %llu, \"latency_ns\": [",
		(unsigned long long)table->events, (unsigned long long)table->discarded,
		(unsigned long long)table->unpaired);
	for (unsigned i = 0; i < n; i++) {
		const struct histogram *h = sorted[i]->hist;
		fprintf(out, "%s\n  {\"name\": ", i ? "," : "");
		print_quoted(out, sorted[i]->name);
		fprintf(out,
			", \"count\": %llu, \"min\": %llu, \"p50\": %llu, \"p90\": %llu, "
			"\"p99\": %llu, \"max\": %llu, \"sum\": %llu}",
			(unsigned long long)h->count, (unsigned long long)h->min,
			(unsigned long long)hist_percentile(h, 50),
			(unsigned long long)hist_percentile(h, 90),
			(unsigned long long)hist_percentile(h, 99), (unsigned long long)h->max,
			(unsigned long long)h->sum);
	}
	fprintf(out, "\n]}\n");
}

static void print_bucket(FILE *out, const char *name, const char *le, uint64_t count)
{
	fprintf(out, "microscope_latency_seconds_bucket{event=");
	print_quoted(out, name);
	fprintf(out, ",le=\"%s\"} %llu\n", le, (unsigned long long)count);
}

/* Calls per join point and per system call (the histograms' counts). */
static void report_prometheus_calls(FILE *out, const struct latency_kind *const *sorted, unsigned n)
{
	fprintf(out, "# HELP microscope_joinpoint_calls_total Calls of a join point.\n"
		     "# TYPE microscope_joinpoint_calls_total counter\n");
	for (unsigned i = 0; i < n; i++) {
		if (!strncmp(sorted[i]->name, "syscall ", 8))
			continue;
		fprintf(out, "microscope_joinpoint_calls_total{joinpoint=");
		print_quoted(out, sorted[i]->name);
		fprintf(out, "} %llu\n", (unsigned long long)sorted[i]->hist->count);
	}
	fprintf(out, "# HELP microscope_syscalls_total Calls of a system call.\n"
		     "# TYPE microscope_syscalls_total counter\n");
	for (unsigned i = 0; i < n; i++) {
		if (strncmp(sorted[i]->name, "syscall ", 8))
			continue;
		fprintf(out, "microscope_syscalls_total{syscall=");
		print_quoted(out, sorted[i]->name + 8);
		fprintf(out, "} %llu\n", (unsigned long long)sorted[i]->hist->count);
	}
}

/* The trace channel's records: produced = delivered + dropped, as the OS
 * counts them (httpd's /metrics has the same for every channel). */
static void report_prometheus_telemetry(FILE *out, const struct latency_table *table)
{
	static const char *const states[] = {"produced", "delivered", "dropped"};
	uint64_t values[] = {table->events + table->discarded, table->events, table->discarded};
	for (unsigned i = 0; i < 3; i++)
		fprintf(out,
			"# HELP microscope_telemetry_%s_total Telemetry records %s, by channel.\n"
			"# TYPE microscope_telemetry_%s_total counter\n"
			"microscope_telemetry_%s_total{channel=\"trace\"} %llu\n",
			states[i], states[i], states[i], states[i], (unsigned long long)values[i]);
}

void report_prometheus_subsystems(FILE *out, const char (*names)[REQUEST_NAME_MAX],
				  const uint64_t *ns, unsigned count)
{
	fprintf(out, "# HELP microscope_request_kernel_seconds_total Kernel time of requests, by "
		     "subsystem (exclusive).\n"
		     "# TYPE microscope_request_kernel_seconds_total counter\n");
	for (unsigned i = 0; i < count; i++) {
		fprintf(out, "microscope_request_kernel_seconds_total{subsystem=");
		print_quoted(out, names[i]);
		fprintf(out, "} %llu.%09llu\n", (unsigned long long)(ns[i] / 1000000000),
			(unsigned long long)(ns[i] % 1000000000));
	}
}

void report_prometheus(FILE *out, const struct latency_table *table)
{
	const struct latency_kind *sorted[LATENCY_MAX_KINDS];
	unsigned n = sorted_kinds(table, sorted);
	fprintf(out, "# HELP microscope_latency_seconds Latency of system calls and join points, "
		     "from a microScope trace.\n# TYPE microscope_latency_seconds histogram\n");
	for (unsigned i = 0; i < n; i++) {
		const struct histogram *h = sorted[i]->hist;
		for (unsigned b = 0; b < LATENCY_BOUNDS; b++) {
			char le[32];
			snprintf(le, sizeof le, "%g", (double)latency_bounds_ns[b] / 1e9);
			print_bucket(out, sorted[i]->name, le, sorted[i]->at_most[b]);
		}
		print_bucket(out, sorted[i]->name, "+Inf", h->count);
		fprintf(out, "microscope_latency_seconds_sum{event=");
		print_quoted(out, sorted[i]->name);
		fprintf(out,
			"} %.9f\nmicroscope_latency_seconds_count{event=", (double)h->sum / 1e9);
		print_quoted(out, sorted[i]->name);
		fprintf(out, "} %llu\n", (unsigned long long)h->count);
	}
	report_prometheus_calls(out, sorted, n);
	report_prometheus_telemetry(out, table);
	fprintf(out,
		"# HELP microscope_trace_events_total Events read from the trace.\n"
		"# TYPE microscope_trace_events_total counter\n"
		"microscope_trace_events_total %llu\n"
		"# HELP microscope_trace_discarded_total Records the OS counted as dropped.\n"
		"# TYPE microscope_trace_discarded_total counter\n"
		"microscope_trace_discarded_total %llu\n",
		(unsigned long long)table->events, (unsigned long long)table->discarded);
}
