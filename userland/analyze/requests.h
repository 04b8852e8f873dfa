/*
 * Requests and what the kernel spent on each, by subsystem: the rows of the
 * per-request breakdown, the top-N slowest, the map-fold-filter queries
 * (query.h) and the Latency Explorer's data.  Two sources fill the same set:
 * a trace (requests_trace.c: one request per connection, from the first
 * net.recv or net.send on a socket to its net.close) and httpd's accounting
 * results (requests_rscfl.c: the JSON of GET /rscfl).
 *
 *     struct request_set set = {0};
 *     requests_from_rscfl(&set, "rscfl.json");       // or requests_from_trace
 *     int net = request_field_of(&set, "net");       // a column, by name
 *     uint64_t ns = request_value(&set, &set.requests[0], net);
 */
#ifndef ANALYZE_REQUESTS_H
#define ANALYZE_REQUESTS_H

#include <stddef.h>
#include <stdint.h>

#include "latency.h"
#include "trace_read.h"

#define REQUEST_SUBSYSTEMS 16 /* columns of subsystem time; the last one is "other" */
#define REQUEST_NAME_MAX   16
#define REQUEST_PATH_MAX   64
#define REQUEST_EVENTS_MAX 48 /* calls kept per request for --events */

/* A call made while serving a request (trace source, --events only). */
struct request_event {
	uint64_t start_ns; /* from the request's start */
	uint64_t duration_ns;
	char name[32];
};

struct request {
	uint64_t id;
	int32_t pid;
	int32_t status;    /* HTTP status; 0 when the source does not know it */
	uint64_t start_ns; /* from the trace's first event; 0 for accounting results */
	uint64_t latency_ns;
	uint64_t bytes;                            /* bytes sent */
	uint64_t subsystem_ns[REQUEST_SUBSYSTEMS]; /* exclusive time, by the set's subsystems */
	char path[REQUEST_PATH_MAX];
	int matched; /* made a call --match names (trace source) */
	unsigned event_count;
	struct request_event *events; /* NULL unless events were asked for */
};

struct request_set {
	const char *source; /* "trace" or "rscfl" */
	unsigned subsystem_count;
	char subsystems[REQUEST_SUBSYSTEMS][REQUEST_NAME_MAX];
	struct request *requests;
	size_t count, capacity;
	int keep_events; /* collect request_event lists (trace source) */
};

/* The columns a query or a report names: the request's own numbers, then
 * one per subsystem (REQUEST_FIELD_SUBSYSTEM + its index). */
enum request_field {
	REQUEST_FIELD_ID,
	REQUEST_FIELD_PID,
	REQUEST_FIELD_START,
	REQUEST_FIELD_LATENCY,
	REQUEST_FIELD_BYTES,
	REQUEST_FIELD_STATUS,
	REQUEST_FIELD_KERNEL, /* the sum of the subsystems */
	REQUEST_FIELD_SUBSYSTEM,
};

/* The index of subsystem name, added when new (past the last slot: "other").
 * Returns the index. */
unsigned request_subsystem(struct request_set *set, const char *name);
/* A new zeroed request at the end of set.  Returns it, or NULL (no memory). */
struct request *request_add(struct request_set *set);
/* The column called name ("latency", "bytes", "net", ...): a request_field,
 * or -1 when there is none. */
int request_field_of(const struct request_set *set, const char *name);
/* The column's name (static or the set's), for headers. */
const char *request_field_name(const struct request_set *set, int field);
/* Whether the column is a time in ns (shown with a unit). */
int request_field_is_time(int field);
uint64_t request_value(const struct request_set *set, const struct request *r, int field);
void request_set_free(struct request_set *set);

/* Requests of a trace: see requests_trace.c.  filter's pid keeps one
 * process's requests, its match marks the requests that called a matching
 * join point.  Returns 0, or -1 (no memory). */
int requests_from_trace(struct request_set *set, struct trace_dir *trace,
			const struct latency_filter *filter);
/* Requests of httpd's /rscfl JSON in the file at path.  Returns 0, or -1
 * with a message on stderr (unreadable, not that JSON, no memory). */
int requests_from_rscfl(struct request_set *set, const char *path);

#endif
