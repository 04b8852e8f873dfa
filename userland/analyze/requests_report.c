/*
 * The request reports (requests_report.h).  Times are shown in the unit that
 * keeps them short, truncated (not rounded) to the digits shown; shares are
 * per mille.  The slowest requests are found by sorting indexes, so the set
 * keeps its order.
 */
#include "requests_report.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_TOP 10

/* ns as "950ns", "12.3us", "4.56ms", "1.234s". */
static const char *format_ns(char *out, size_t size, uint64_t ns)
{
	unsigned long long v = ns;
	if (v < 10000)
		snprintf(out, size, "%lluns", v);
	else if (v < 10000000)
		snprintf(out, size, "%llu.%lluus", v / 1000, v % 1000 / 100);
	else if (v < 10000000000ULL)
		snprintf(out, size, "%llu.%02llums", v / 1000000, v % 1000000 / 10000);
	else
		snprintf(out, size, "%llu.%03llus", v / 1000000000, v % 1000000000 / 1000000);
	return out;
}

static const struct request_set *sorting_set;

static int by_latency_descending(const void *a, const void *b)
{
	const struct request *x = &sorting_set->requests[*(const size_t *)a];
	const struct request *y = &sorting_set->requests[*(const size_t *)b];
	if (x->latency_ns != y->latency_ns)
		return x->latency_ns < y->latency_ns ? 1 : -1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Indexes of the requests to list: the top slowest, or all in order.
 * Returns how many (0 also when out of memory), *order malloc'd. */
static size_t listed(const struct request_set *set, unsigned top, size_t **order)
{
	*order = malloc((set->count ? set->count : 1) * sizeof **order);
	if (!*order)
		return 0;
	for (size_t i = 0; i < set->count; i++)
		(*order)[i] = i;
	if (!top)
		return set->count;
	sorting_set = set;
	qsort(*order, set->count, sizeof **order, by_latency_descending);
	return top < set->count ? top : set->count;
}

static void print_summary(FILE *out, const struct request_set *set)
{
	char a[24], b[24], c[24], d[24];
	fprintf(out, "%zu requests (%s): latency p50 %s p90 %s p99 %s max %s\n", set->count,
		set->source ? set->source : "?",
		format_ns(a, sizeof a, query_percentile(set, REQUEST_FIELD_LATENCY, 500)),
		format_ns(b, sizeof b, query_percentile(set, REQUEST_FIELD_LATENCY, 900)),
		format_ns(c, sizeof c, query_percentile(set, REQUEST_FIELD_LATENCY, 990)),
		format_ns(d, sizeof d, query_percentile(set, REQUEST_FIELD_LATENCY, 1000)));
}

static void print_subsystems(FILE *out, const struct request_set *set)
{
	uint64_t totals[REQUEST_SUBSYSTEMS] = {0}, all = 0;
	for (size_t i = 0; i < set->count; i++)
		for (unsigned s = 0; s < set->subsystem_count; s++)
			totals[s] += set->requests[i].subsystem_ns[s];
	for (unsigned s = 0; s < set->subsystem_count; s++)
		all += totals[s];
	fprintf(out, "%-12s %12s %7s %12s\n", "subsystem", "total", "share", "per request");
	for (unsigned s = 0; s < set->subsystem_count; s++) {
		char total[24], mean[24];
		unsigned long long share = all ? totals[s] * 1000 / all : 0;
		fprintf(out, "%-12s %12s %5llu.%llu%% %12s\n", set->subsystems[s],
			format_ns(total, sizeof total, totals[s]), share / 10, share % 10,
			format_ns(mean, sizeof mean, set->count ? totals[s] / set->count : 0));
	}
}

/* "net 8.10ms, vfs 2.00ms": the request's subsystems, largest first. */
static void print_breakdown(FILE *out, const struct request_set *set, const struct request *r)
{
	unsigned order[REQUEST_SUBSYSTEMS], n = 0;
	for (unsigned s = 0; s < set->subsystem_count; s++) {
		if (!r->subsystem_ns[s])
			continue;
		unsigned at = n++;
		while (at > 0 && r->subsystem_ns[order[at - 1]] < r->subsystem_ns[s]) {
			order[at] = order[at - 1];
			at--;
		}
		order[at] = s;
	}
	for (unsigned i = 0; i < n; i++) {
		char t[24];
		fprintf(out, "%s%s %s", i ? ", " : "", set->subsystems[order[i]],
			format_ns(t, sizeof t, r->subsystem_ns[order[i]]));
	}
	fputc('\n', out);
}

void requests_text(FILE *out, const struct request_set *set, unsigned top)
{
	print_summary(out, set);
	if (!set->count)
		return;
	print_subsystems(out, set);
	size_t *order;
	size_t n = listed(set, top ? top : DEFAULT_TOP, &order);
	fprintf(out, "slowest %zu:\n%8s %12s %10s %9s %6s  %-20s %s\n", n, "id", "start", "latency",
		"bytes", "status", "path", "kernel time by subsystem");
	for (size_t i = 0; i < n; i++) {
		const struct request *r = &set->requests[order[i]];
		char start[24], latency[24];
		int timed =
		    !set->source || strcmp(set->source, "rscfl"); /* results carry no start */
		fprintf(out, "%8llu %12s %10s %9llu %6d  %-20s ", (unsigned long long)r->id,
			timed ? format_ns(start, sizeof start, r->start_ns) : "-",
			format_ns(latency, sizeof latency, r->latency_ns),
			(unsigned long long)r->bytes, r->status, r->path[0] ? r->path : "-");
		print_breakdown(out, set, r);
	}
	free(order);
}

/* s as a quoted CSV field or JSON string (both double quotes; JSON escapes
 * with a backslash, CSV by doubling). */
static void print_quoted(FILE *out, const char *s, int json)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"')
			fputs(json ? "\\\"" : "\"\"", out);
		else if (json && *p == '\\')
			fputs("\\\\", out);
		else if (*p < 0x20 || *p >= 0x7f)
			fprintf(out, json ? "\\u%04x" : "%c", json ? *p : '?');
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

void requests_csv(FILE *out, const struct request_set *set, unsigned top)
{
	fprintf(out, "id,pid,start_ns,latency_ns,bytes,status,path");
	for (unsigned s = 0; s < set->subsystem_count; s++)
		fprintf(out, ",%s_ns", set->subsystems[s]);
	fputc('\n', out);
	size_t *order;
	size_t n = listed(set, top, &order);
	for (size_t i = 0; i < n; i++) {
		const struct request *r = &set->requests[order[i]];
		fprintf(out, "%llu,%d,%llu,%llu,%llu,%d,", (unsigned long long)r->id, r->pid,
			(unsigned long long)r->start_ns, (unsigned long long)r->latency_ns,
			(unsigned long long)r->bytes, r->status);
		print_quoted(out, r->path, 0);
		for (unsigned s = 0; s < set->subsystem_count; s++)
			fprintf(out, ",%llu", (unsigned long long)r->subsystem_ns[s]);
		fputc('\n', out);
	}
	free(order);
}

static void print_events(FILE *out, const struct request *r)
{
	fprintf(out, ", \"events\": [");
	for (unsigned e = 0; e < r->event_count; e++) {
		fprintf(out, "%s{\"name\": ", e ? ", " : "");
		print_quoted(out, r->events[e].name, 1);
		fprintf(out, ", \"start_ns\": %llu, \"duration_ns\": %llu}",
			(unsigned long long)r->events[e].start_ns,
			(unsigned long long)r->events[e].duration_ns);
	}
	fputc(']', out);
}

void requests_json(FILE *out, const struct request_set *set, unsigned top)
{
	fprintf(out, "{\"source\": \"%s\", \"subsystems\": [", set->source ? set->source : "");
	for (unsigned s = 0; s < set->subsystem_count; s++) {
		fputs(s ? ", " : "", out);
		print_quoted(out, set->subsystems[s], 1);
	}
	fprintf(out, "], \"requests\": [");
	size_t *order;
	size_t n = listed(set, top, &order);
	for (size_t i = 0; i < n; i++) {
		const struct request *r = &set->requests[order[i]];
		fprintf(out,
			"%s\n{\"id\": %llu, \"pid\": %d, \"start_ns\": %llu, \"latency_ns\": %llu, "
			"\"bytes\": %llu, \"status\": %d, \"path\": ",
			i ? "," : "", (unsigned long long)r->id, r->pid,
			(unsigned long long)r->start_ns, (unsigned long long)r->latency_ns,
			(unsigned long long)r->bytes, r->status);
		print_quoted(out, r->path, 1);
		fprintf(out, ", \"subsystem_ns\": [");
		for (unsigned s = 0; s < set->subsystem_count; s++)
			fprintf(out, "%s%llu", s ? ", " : "",
				(unsigned long long)r->subsystem_ns[s]);
		fputc(']', out);
		if (set->keep_events)
			print_events(out, r);
		fputc('}', out);
	}
	fprintf(out, "\n]}\n");
	free(order);
}

void requests_fold_line(FILE *out, const struct request_set *set, const char *text,
			const struct query_fold *fold, uint64_t value)
{
	char shown[24];
	if (fold->op != FOLD_COUNT && request_field_is_time(fold->field))
		fprintf(out, "%s = %s (%llu ns)\n", text, format_ns(shown, sizeof shown, value),
			(unsigned long long)value);
	else
		fprintf(out, "%s = %llu\n", text, (unsigned long long)value);
	(void)set;
}
