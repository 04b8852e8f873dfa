/*
 * What httpd tells about the kernel's share of its requests: the access log's
 * breakdown of one request, and /rscfl, the JSON of the last HTTP_ACCT_RING
 * requests (every field of the kernel's result and of each subsystem, walked
 * from librscfl's field tables so that a field added to the layout shows up
 * here unasked) plus what the process spent outside any request.  Strings are escaped for
 * JSON, bytes outside ASCII as \u00XX (a path is bytes, not UTF-8).  The JSON
 * grows in one malloc'd buffer; running out of memory gives -ENOMEM and no
 * half document.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

#define E_NOMEM      12
#define TOP_IN_LOG   3
#define TEXT_INITIAL 16384

/* ---- the access log's breakdown --------------------------------------- */

/* Appends to line at *at (bounded by size). */
static void line_add(char *line, size_t size, size_t *at, const char *format, ...)
    __attribute__((format(printf, 4, 5)));
static void line_add(char *line, size_t size, size_t *at, const char *format, ...)
{
	if (*at >= size)
		return;
	va_list ap;
	va_start(ap, format);
	int n = vsnprintf(line + *at, size - *at, format, ap);
	va_end(ap);
	if (n > 0)
		*at += (size_t)n;
}

/* The subsystem field to rank by: exclusive time when the kernel reports it. */
static const struct rscfl_field *rank_field(const struct rscfl_acct *a)
{
	const struct rscfl_field *exclusive = rscfl_find_subsystem_field("exclusive_ns");
	for (unsigned i = 0; i < a->kernel.subsystem_count && i < ACCT_MAX_SUBSYSTEMS; i++)
		if (a->kernel.subsystems[i].exclusive_ns)
			return exclusive;
	return rscfl_find_subsystem_field("inclusive_ns");
}

void http_report_line(const struct http_served *s, char *line, size_t size)
{
	if (!s->accounted)
		return;
	const struct acct_result *k = &s->acct.kernel;
	size_t at = strlen(line);
	line_add(line, size, &at, " wall=%lluus cpu=%lluus sched_out=%lluus syscalls=%llu",
		 (unsigned long long)k->wall_ns / 1000, (unsigned long long)k->cpu_ns / 1000,
		 (unsigned long long)k->sched_out_ns / 1000, (unsigned long long)k->syscalls);
	const struct rscfl_field *by = rank_field(&s->acct);
	const struct acct_subsystem *top[TOP_IN_LOG];
	size_t n = rscfl_top_subsystems(&s->acct, by, top, TOP_IN_LOG);
	line_add(line, size, &at,
		 " %s=", strcmp(by->name, "exclusive_ns") ? "top_inclusive" : "top");
	for (size_t i = 0; i < n; i++)
		line_add(line, size, &at, "%s%s:%lluus", i ? "," : "", top[i]->name,
			 (unsigned long long)rscfl_field_get(top[i], by) / 1000);
	line_add(line, size, &at, " tcp_in=%lluB tcp_out=%lluB",
		 (unsigned long long)k->tcp_bytes_received, (unsigned long long)k->tcp_bytes_sent);
}

/* ---- JSON --------------------------------------------------------------- */

struct text {
	char *data;
	size_t length, capacity;
	int failed;
};

/* Makes room for more bytes (and a NUL).  Returns 0 or -1 (no memory). */
static int text_reserve(struct text *t, size_t more)
{
	if (t->failed)
		return -1;
	if (t->length + more + 1 <= t->capacity)
		return 0;
	size_t capacity = t->capacity ? t->capacity : TEXT_INITIAL;
	while (capacity < t->length + more + 1)
		capacity *= 2;
	char *data = realloc(t->data, capacity);
	if (!data) {
		t->failed = 1;
		return -1;
	}
	t->data = data;
	t->capacity = capacity;
	return 0;
}

static void text_add(struct text *t, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void text_add(struct text *t, const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	int n = vsnprintf(NULL, 0, format, ap);
	va_end(ap);
	if (n < 0 || text_reserve(t, (size_t)n) < 0)
		return;
	va_start(ap, format);
	vsnprintf(t->data + t->length, (size_t)n + 1, format, ap);
	va_end(ap);
	t->length += (size_t)n;
}

/* Adds s as a JSON string, quotes included. */
static void text_add_string(struct text *t, const char *s)
{
	text_add(t, "\"");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			text_add(t, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			text_add(t, "\\u%04x", *p);
		else
			text_add(t, "%c", *p);
	}
	text_add(t, "\"");
}

/* Adds "name": value for every field of table in record. */
static void add_fields(struct text *t, const void *record, const struct rscfl_field *table,
		       unsigned count)
{
	for (unsigned i = 0; i < count; i++)
		text_add(t, "%s\"%s\": %llu", i ? ", " : "", table[i].name,
			 (unsigned long long)rscfl_field_get(record, &table[i]));
}

/* Adds the kernel's result: its fields, then "subsystems": [...]. */
static void add_result(struct text *t, const struct acct_result *r)
{
	text_add(t, "{");
	add_fields(t, r, rscfl_result_fields, rscfl_result_field_count);
	text_add(t, ", \"subsystems\": [");
	for (unsigned i = 0; i < r->subsystem_count && i < ACCT_MAX_SUBSYSTEMS; i++) {
		text_add(t, "%s{\"name\": ", i ? ", " : "");
		text_add_string(t, r->subsystems[i].name);
		text_add(t, ", ");
		add_fields(t, &r->subsystems[i], rscfl_subsystem_fields,
			   rscfl_subsystem_field_count);
		text_add(t, "}");
	}
	text_add(t, "]}");
}

static void add_metrics(struct text *t, const struct rscfl_acct *a)
{
	text_add(t, "{");
	for (unsigned i = 0; i < a->metric_count && i < RSCFL_MAX_METRICS; i++) {
		char name[RSCFL_METRIC_NAME + 1] = {0};
		memcpy(name, a->metrics[i].name, RSCFL_METRIC_NAME);
		text_add(t, "%s", i ? ", " : "");
		text_add_string(t, name);
		text_add(t, ": %lld", (long long)a->metrics[i].value);
	}
	text_add(t, "}");
}

static void add_request(struct text *t, const struct http_served *s)
{
	text_add(t, "{\"id\": %llu, \"peer\": ", (unsigned long long)s->id);
	text_add_string(t, s->peer);
	text_add(t, ", \"method\": ");
	text_add_string(t, s->method);
	text_add(t, ", \"path\": ");
	text_add_string(t, s->path);
	text_add(t,
		 ", \"status\": %d, \"bytes\": %lld, \"latency_us\": %llu, \"note\": ", s->status,
		 s->bytes, (unsigned long long)s->latency_us);
	text_add_string(t, s->note);
	text_add(t, ", \"accounted\": %s", s->accounted ? "true" : "false");
	if (s->accounted) {
		text_add(t, ", \"kernel\": ");
		add_result(t, &s->acct.kernel);
		text_add(t, ", \"metrics\": ");
		add_metrics(t, &s->acct);
	}
	text_add(t, "}");
}

/* Adds "name": {"field": "unit", ...}. */
static void add_units(struct text *t, const char *name, const struct rscfl_field *table,
		      unsigned count)
{
	text_add(t, "\"%s\": {", name);
	for (unsigned i = 0; i < count; i++)
		text_add(t, "%s\"%s\": \"%s\"", i ? ", " : "", table[i].name, table[i].unit);
	text_add(t, "}");
}

int http_report_json(char **json, size_t *length)
{
	struct text t = {0};
	unsigned flags = http_acct_page_flags();
	const char *steal = (flags & ACCT_PAGE_STEAL_MEASURED)       ? "measured"
			    : (flags & ACCT_PAGE_STEAL_NOT_REPORTED) ? "not reported"
								     : "unknown";
	text_add(&t, "{\"accounting\": %s, \"capacity\": %d, \"steal_time\": \"%s\", ",
		 http_acct_enabled() ? "true" : "false", HTTP_ACCT_RING, steal);
	add_units(&t, "units", rscfl_result_fields, rscfl_result_field_count);
	text_add(&t, ", ");
	add_units(&t, "subsystem_units", rscfl_subsystem_fields, rscfl_subsystem_field_count);
	struct rscfl_acct unattributed;
	if (http_acct_unattributed(&unattributed) == 0) {
		text_add(&t, ",\n\"unattributed\": ");
		add_result(&t, &unattributed.kernel);
	}
	text_add(&t, ",\n\"requests\": [");
	for (unsigned i = 0; i < http_acct_count(); i++) {
		text_add(&t, "%s\n", i ? "," : "");
		add_request(&t, http_acct_get(i));
	}
	text_add(&t, "]}\n");
	if (t.failed) {
		free(t.data);
		return -E_NOMEM;
	}
	*json = t.data;
	*length = t.length;
	return 0;
}
