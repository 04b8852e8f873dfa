/*
 * GET /metrics: what httpd and the system look like now, in the Prometheus
 * text exposition format 0.0.4, for a Prometheus server to scrape.  The
 * server's own figures (requests by status class, their duration as a
 * histogram with cumulative buckets ending at +Inf, the kernel time of the
 * accounted requests by subsystem) are kept as requests end; the rest is
 * read from the kernel at each scrape, through calls any process may make:
 * processes' CPU time and memory (ms_getprocs), telemetry records per
 * channel (ms_tel_stats, summed over CPUs), the calls the built-in count and
 * time advice counted per join point, the NICs' counters and the aspects'
 * states (ms_scope_ctl's text answers).  Counters only go up (a join point's
 * count restarts at `jp reset`, which Prometheus takes as a reset).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microscope/syscall.h>

#include "http.h"
#include "uapi/proc.h"
#include "uapi/scope.h"
#include "uapi/telemetry.h"

#define E_NOMEM          12
#define TEL_CHANNELS     8  /* the kernel's TEL_CHANNEL_MAX */
#define TEL_CPUS         64 /* the kernel's MAX_CPUS */
#define SCOPE_TEXT_MAX   (32 * 1024)
#define SUBSYSTEM_TOTALS 16

/* The duration buckets' upper bounds, in microseconds: 100 us to 10 s. */
static const uint64_t bounds_us[] = {100,     250,     500,     1000,    2500,   5000,
				     10000,   25000,   50000,   100000,  250000, 500000,
				     1000000, 2500000, 5000000, 10000000};
#define BOUNDS (sizeof bounds_us / sizeof bounds_us[0])

static struct {
	uint64_t by_class[6]; /* 1xx .. 5xx by status / 100; [0] for anything else */
	uint64_t buckets[BOUNDS];
	uint64_t count;
	uint64_t sum_us;
} served;

static struct {
	unsigned count;
	char names[SUBSYSTEM_TOTALS][ACCT_NAME_MAX];
	uint64_t ns[SUBSYSTEM_TOTALS];
} kernel_time;

/* Whether two subsystem names are the same: both are whole ACCT_NAME_MAX
 * arrays, zero-padded (the kernel's, and copies of them), so two words each. */
static int same_subsystem_name(const char *a, const char *b)
{
	uint64_t x[2], y[2];
	memcpy(x, a, sizeof x);
	memcpy(y, b, sizeof y);
	return x[0] == y[0] && x[1] == y[1];
}

/* Where subsystem slot i's name was found last time: a request's subsystems
 * come in the order they were first used, nearly always the same. */
static unsigned total_hint[ACCT_MAX_SUBSYSTEMS];

_Static_assert(ACCT_NAME_MAX == 2 * sizeof(uint64_t), "a subsystem name is two words");

void http_metrics_note_kernel(const struct http_served *s)
{
	if (!s->accounted)
		return;
	const struct acct_result *k = &s->acct.kernel;
	for (unsigned i = 0; i < k->subsystem_count && i < ACCT_MAX_SUBSYSTEMS; i++) {
		const struct acct_subsystem *sub = &k->subsystems[i];
		unsigned j = total_hint[i];
		if (j >= kernel_time.count || !same_subsystem_name(kernel_time.names[j], sub->name))
			for (j = 0; j < kernel_time.count &&
				    !same_subsystem_name(kernel_time.names[j], sub->name);
			     j++)
				;
		total_hint[i] = j;
		if (j == kernel_time.count && kernel_time.count == SUBSYSTEM_TOTALS)
			continue;
		if (j == kernel_time.count)
			memcpy(kernel_time.names[kernel_time.count++], sub->name, ACCT_NAME_MAX);
		kernel_time.ns[j] += sub->exclusive_ns;
	}
}

void http_metrics_note(int status, uint64_t latency_us)
{
	served.by_class[status >= 100 && status < 600 ? status / 100 : 0]++;
	for (unsigned i = 0; i < BOUNDS; i++)
		served.buckets[i] += latency_us <= bounds_us[i];
	served.count++;
	served.sum_us += latency_us;
}

static struct {
	uint64_t count[HTTP_CLOSE_REASONS];
	int last_errno[HTTP_CLOSE_REASONS];
} closed;

void http_metrics_note_close(enum http_close_reason reason, int err)
{
	closed.count[reason]++;
	if (err)
		closed.last_errno[reason] = err;
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
	put(t,
	    "httpd_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
	    "httpd_request_duration_seconds_sum %.6f\n"
	    "httpd_request_duration_seconds_count %llu\n",
	    (unsigned long long)served.count, (double)served.sum_us / 1e6,
	    (unsigned long long)served.count);
}

static void put_closes(struct text *t)
{
	static const char *const reasons[HTTP_CLOSE_REASONS] = {
	    "peer", "recv_error", "send_error", "body_error", "done", "deadline"};
	put(t, "# HELP httpd_connections_closed_total Connections httpd closed, by why.\n"
	       "# TYPE httpd_connections_closed_total counter\n");
	for (unsigned i = 0; i < HTTP_CLOSE_REASONS; i++)
		put(t, "httpd_connections_closed_total{reason=\"%s\"} %llu\n", reasons[i],
		    (unsigned long long)closed.count[i]);
	put(t, "# HELP httpd_connection_last_errno The errno of the last failed call that closed a "
	       "connection, by why (0: none yet).\n# TYPE httpd_connection_last_errno gauge\n");
	for (unsigned i = 0; i < HTTP_CLOSE_REASONS; i++)
		put(t, "httpd_connection_last_errno{reason=\"%s\"} %d\n", reasons[i],
		    closed.last_errno[i]);
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
		put(t, "microscope_process_memory_bytes{pid=\"%d\",name=\"%s\"} %llu\n",
		    info[i].pid, name, (unsigned long long)info[i].pages * 4096);
	}
}

static void put_kernel_time(struct text *t)
{
	put(t, "# HELP microscope_request_kernel_seconds_total Kernel time of requests, by "
	       "subsystem (exclusive).\n# TYPE microscope_request_kernel_seconds_total counter\n");
	for (unsigned i = 0; i < kernel_time.count; i++) {
		char name[ACCT_NAME_MAX + 1] = {0};
		memcpy(name, kernel_time.names[i], ACCT_NAME_MAX);
		label_safe(name, sizeof name, name);
		put(t, "microscope_request_kernel_seconds_total{subsystem=\"%s\"} %llu.%09llu\n",
		    name, (unsigned long long)(kernel_time.ns[i] / 1000000000),
		    (unsigned long long)(kernel_time.ns[i] % 1000000000));
	}
}

static void put_telemetry(struct text *t)
{
	static const char *const states[] = {"produced", "delivered", "dropped"};
	struct tel_ring_stats totals[TEL_CHANNELS] = {0};
	int exists[TEL_CHANNELS] = {0};
	for (int channel = 0; channel < TEL_CHANNELS; channel++) {
		for (int cpu = 0; cpu < TEL_CPUS; cpu++) { /* CPUs are numbered from 0 up */
			struct tel_ring_stats one;
			if (ms_syscall3(__NR_ms_tel_stats, channel, cpu, (long)&one) < 0)
				break;
			exists[channel] = 1;
			totals[channel].produced += one.produced;
			totals[channel].consumed += one.consumed;
			totals[channel].dropped += one.dropped;
		}
	}
	for (unsigned s = 0; s < 3; s++) {
		put(t,
		    "# HELP microscope_telemetry_%s_total Telemetry records %s, by channel.\n"
		    "# TYPE microscope_telemetry_%s_total counter\n",
		    states[s], states[s], states[s]);
		for (int channel = 0; channel < TEL_CHANNELS; channel++) {
			const struct tel_ring_stats *c = &totals[channel];
			uint64_t value = s == 0 ? c->produced : s == 1 ? c->consumed : c->dropped;
			if (exists[channel])
				put(t, "microscope_telemetry_%s_total{channel=\"%d\"} %llu\n",
				    states[s], channel, (unsigned long long)value);
		}
	}
}

/* ms_scope_ctl's text answer to op into buffer (NUL-ended); its length, or
 * -1 when the kernel refused. */
static long scope_text(uint32_t op, char *buffer, size_t size)
{
	struct scope_ctl c = {.op = op, .buffer = buffer, .length = size - 1};
	long n = ms_syscall3(__NR_ms_scope_ctl, (long)&c, 0, 0);
	if (n < 0)
		return -1;
	buffer[n] = 0;
	return n;
}

static void put_joinpoints(struct text *t, char *buffer)
{
	put(t, "# HELP microscope_joinpoint_calls_total Calls of a join point (counted while the "
	       "built-in count or time advice is attached).\n"
	       "# TYPE microscope_joinpoint_calls_total counter\n");
	if (scope_text(SCOPE_JOINPOINT_STATS, buffer, SCOPE_TEXT_MAX) < 0)
		return;
	for (char *line = strtok(buffer, "\n"); line; line = strtok(NULL, "\n")) {
		char name[64];
		unsigned long long calls, timed;
		if (sscanf(line, "%63s %llu %llu", name, &calls, &timed) == 3)
			put(t, "microscope_joinpoint_calls_total{joinpoint=\"%s\"} %llu\n", name,
			    calls > timed ? calls : timed);
	}
}

/* The NIC module's own counters (every NIC has them; all only go up). */
static int nic_counter_is_kept(const char *name)
{
	static const char *const kept[] = {"rx_frames",  "rx_bytes", "rx_dropped",
					   "tx_frames",  "tx_bytes", "tx_errors",
					   "interrupts", "polls",    "empty_polls"};
	for (unsigned i = 0; i < sizeof kept / sizeof kept[0]; i++)
		if (!strcmp(kept[i], name))
			return 1;
	return 0;
}

static void put_nics(struct text *t, char *buffer)
{
	put(t, "# HELP microscope_nic_events_total A NIC's frames, bytes, drops, errors, "
	       "interrupts and polls.\n# TYPE microscope_nic_events_total counter\n");
	if (scope_text(SCOPE_DEVICE_COUNTERS, buffer, SCOPE_TEXT_MAX) < 0)
		return;
	for (char *line = strtok(buffer, "\n"); line; line = strtok(NULL, "\n")) {
		char nic[32], counter[48];
		unsigned long long value;
		if (sscanf(line, "%31s %47s %llu", nic, counter, &value) == 3 &&
		    nic_counter_is_kept(counter))
			put(t, "microscope_nic_events_total{nic=\"%s\",counter=\"%s\"} %llu\n", nic,
			    counter, value);
	}
}

#define ASPECTS_SHOWN 32

struct aspect_line {
	char name[64], state[24], binding[24];
	unsigned long long events, drops;
};

static void put_aspect_counter(struct text *t, const char *family, const char *help,
			       const struct aspect_line *a, unsigned n, int drops)
{
	put(t, "# HELP %s %s\n# TYPE %s counter\n", family, help, family);
	for (unsigned i = 0; i < n; i++)
		put(t, "%s{aspect=\"%s\"} %llu\n", family, a[i].name,
		    drops ? a[i].drops : a[i].events);
}

/* Lines "callcount state=LIVE binding=direct events=12 drops=0 ...". */
static void put_aspects(struct text *t, char *buffer)
{
	static struct aspect_line aspects[ASPECTS_SHOWN];
	unsigned n = 0;
	if (scope_text(SCOPE_STATS, buffer, SCOPE_TEXT_MAX) >= 0) {
		for (char *line = strtok(buffer, "\n"); line && n < ASPECTS_SHOWN;
		     line = strtok(NULL, "\n")) {
			struct aspect_line *a = &aspects[n];
			if (sscanf(line, "%63s state=%23s binding=%23s events=%llu drops=%llu",
				   a->name, a->state, a->binding, &a->events, &a->drops) != 5)
				continue;
			label_safe(a->name, sizeof a->name, a->name);
			n++;
		}
	}
	put(t, "# HELP microscope_aspect_info An aspect's state and binding (the value is 1).\n"
	       "# TYPE microscope_aspect_info gauge\n");
	for (unsigned i = 0; i < n; i++)
		put(t, "microscope_aspect_info{aspect=\"%s\",state=\"%s\",binding=\"%s\"} 1\n",
		    aspects[i].name, aspects[i].state, aspects[i].binding);
	put_aspect_counter(t, "microscope_aspect_events_total", "Advice runs of an aspect.",
			   aspects, n, 0);
	put_aspect_counter(t, "microscope_aspect_drops_total",
			   "Events an aspect's binding dropped.", aspects, n, 1);
}

int http_metrics_text(char **text, size_t *length)
{
	struct text t = {.buffer = malloc(4096), .size = 4096};
	if (!t.buffer)
		return -E_NOMEM;
	t.buffer[0] = 0;
	char *scratch = malloc(SCOPE_TEXT_MAX);
	put_requests(&t);
	put_closes(&t);
	put_kernel_time(&t);
	put_processes(&t);
	put_telemetry(&t);
	if (scratch) {
		put_joinpoints(&t, scratch);
		put_nics(&t, scratch);
		put_aspects(&t, scratch);
	}
	t.failed |= !scratch;
	free(scratch);
	if (t.failed) {
		free(t.buffer);
		return -E_NOMEM;
	}
	*text = t.buffer;
	*length = t.length;
	return 0;
}
