/*
 * GET /metrics: what httpd and the system look like now, in the Prometheus
 * text exposition format 0.0.4, for a Prometheus server to scrape.  The
 * server's own figures (requests by status class, their duration as a
 * histogram with cumulative buckets ending at +Inf) are kept as requests
 * end; the processes' CPU time and memory come from the kernel's process
 * list (ms_getprocs) at each scrape.  Counters only go up.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microscope/syscall.h>

#include "http.h"
#include "uapi/proc.h"

#define E_NOMEM 12

/* The duration buckets' upper bounds, in microseconds: 100 us to 10 s. */
static const uint64_t bounds_us[] = {100,    250,    500,     1000,    2500,    5000,
				     10000,  25000,  50000,   100000,  250000,  500000,
				     1000000, 2500000, 5000000, 10000000};
#define BOUNDS (sizeof bounds_us / sizeof bounds_us[0])

static struct {
	uint64_t by_class[6]; /* 1xx .. 5xx by status / 100; [0] for anything else */
	uint64_t buckets[BOUNDS];
	uint64_t count;
	uint64_t sum_us;
} served;

void http_metrics_note(int status, uint64_t latency_us)
{
	served.by_class[status >= 100 && status < 600 ? status / 100 : 0]++;
	for (unsigned i = 0; i < BOUNDS; i++)
		served.buckets[i] += latency_us <= bounds_us[i];
	served.count++;
	served.sum_us += latency_us;
}

struct text {
	char *buffer;
	size_t length, size;
	int failed;
};

static void put(struct text *t, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *format, ...)
{
	va_list ap;
	for (int tries = 0; tries < 2 && !t->failed; tries++) {
		va_start(ap, format);
		int n = vsnprintf(t->buffer + t->length, t->size - t->length, format, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < t->size - t->length) {
			t->length += (size_t)n;
			return;
		}
		char *bigger = realloc(t->buffer, t->size * 2 + (size_t)(n > 0 ? n : 0));
		if (!bigger) {
			t->failed = 1;
			return;
		}
		t->buffer = bigger;
		t->size = t->size * 2 + (size_t)(n > 0 ? n : 0);
	}
}

static void put_requests(struct text *t)
{
	static const char *const classes[] = {"other", "1xx", "2xx", "3xx", "4xx", "5xx"};
	put(t, "# HELP httpd_requests_total Requests served, by status class.\n"
	       "# TYPE httpd_requests_total counter\n");
	for (unsigned i = 0; i < 6; i++)
		put(t, "httpd_requests_total{code=\"%s\"} %llu\n", classes[i],
		    (unsigned long long)served.by_class[i]);
	put(t, "# HELP httpd_request_duration_seconds From a request's first byte in to its last "
	       "byte out.\n# TYPE httpd_request_duration_seconds histogram\n");
	for (unsigned i = 0; i < BOUNDS; i++)
		put(t, "httpd_request_duration_seconds_bucket{le=\"%g\"} %llu\n",
		    (double)bounds_us[i] / 1e6, (unsigned long long)served.buckets[i]);
	put(t, "httpd_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
	       "httpd_request_duration_seconds_sum %.6f\n"
	       "httpd_request_duration_seconds_count %llu\n",
	    (unsigned long long)served.count, (double)served.sum_us / 1e6,
	    (unsigned long long)served.count);
}

/* A process name as a label value: only what needs no escaping is kept. */
static void label_safe(char *out, size_t size, const char *name)
{
	size_t n = 0;
	for (; *name && n + 1 < size; name++)
		out[n++] = (*name == '"' || *name == '\\' || *name < ' ') ? '_' : *name;
	out[n] = 0;
}

static void put_processes(struct text *t)
{
	static struct proc_info info[PROC_MAX];
	long count = ms_syscall3(__NR_ms_getprocs, (long)info, PROC_MAX, 0);
	if (count < 0)
		return;
	if (count > PROC_MAX)
		count = PROC_MAX;
	put(t, "# HELP microscope_process_cpu_seconds_total A process's time on a CPU.\n"
	       "# TYPE microscope_process_cpu_seconds_total counter\n");
	for (long i = 0; i < count; i++) {
		char name[PROC_NAME_MAX];
		label_safe(name, sizeof name, info[i].name);
		put(t, "microscope_process_cpu_seconds_total{pid=\"%d\",name=\"%s\"} %.6f\n",
		    info[i].pid, name, (double)info[i].cpu_ns / 1e9);
	}
	put(t, "# HELP microscope_process_memory_bytes A process's mapped user memory.\n"
	       "# TYPE microscope_process_memory_bytes gauge\n");
	for (long i = 0; i < count; i++) {
		char name[PROC_NAME_MAX];
		label_safe(name, sizeof name, info[i].name);
		put(t, "microscope_process_memory_bytes{pid=\"%d\",name=\"%s\"} %llu\n", info[i].pid,
		    name, (unsigned long long)info[i].pages * 4096);
	}
}

int http_metrics_text(char **text, size_t *length)
{
	struct text t = {.buffer = malloc(4096), .size = 4096};
	if (!t.buffer)
		return -E_NOMEM;
	t.buffer[0] = 0;
	put_requests(&t);
	put_processes(&t);
	if (t.failed) {
		free(t.buffer);
		return -E_NOMEM;
	}
	*text = t.buffer;
	*length = t.length;
	return 0;
}
