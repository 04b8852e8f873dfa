/*
 * httpd's pieces: request parsing (request.c, pure: no system calls), the
 * response a request gets (response.c: docroot look-up, status lines,
 * headers), per-request accounting (accounting.c: librscfl tokens, the ring
 * of the last requests; report.c: the access log's breakdown and /rscfl's
 * JSON), and the connection event loop (httpd.c).
 *
 *     struct http_request r;
 *     int n = http_parse_request(buffer, length, &r);  // 0: need more bytes
 *     if (n < 0) reply with status -n; else serve r.path, then drop n + r.content_length bytes
 */
#ifndef USERLAND_HTTPD_HTTP_H
#define USERLAND_HTTPD_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "librscfl/librscfl.h"

#define HTTP_HEADER_MAX 8192  /* request line + headers; more is 413 */
#define HTTP_BODY_MAX   65536 /* a request body is read and discarded; more is 413 */
#define HTTP_PATH_MAX   256   /* decoded path; longer is 414 */
#define HTTP_METHOD_MAX 16

enum http_method { HTTP_GET, HTTP_HEAD, HTTP_OTHER };

struct http_request {
	enum http_method method;
	char method_name[HTTP_METHOD_MAX]; /* as sent, for the log ("?" when unreadable) */
	char path[HTTP_PATH_MAX];          /* percent-decoded, no query, starts with '/' */
	int minor_version;                 /* HTTP/1.<minor> */
	int keep_alive;                    /* the connection may carry another request */
	size_t content_length;             /* body bytes that follow the header */
};

/* Parses the request at the start of buffer.  Returns the header's length
 * (through the blank line) when it is complete and valid; 0 when more bytes
 * are needed; or minus an HTTP status: -400 (malformed, bad path, "..",
 * unsupported version), -413 (header over HTTP_HEADER_MAX or body over
 * HTTP_BODY_MAX), -414 (path over HTTP_PATH_MAX).  *request is filled as far
 * as it could be read, even on an error (for the log). */
int http_parse_request(const char *buffer, size_t length, struct http_request *request);

/* The reason phrase for status ("Not Found"), "Unknown" for others. */
const char *http_status_text(int status);
/* The Content-Type for a path, by its extension. */
const char *http_content_type(const char *path);

/* A response being produced: the open file (or -1) and the header. */
struct http_response {
	int status;
	int file_fd;       /* body source, -1 when the body is in the header buffer or empty */
	char *memory;      /* or body source: a malloc'd buffer the response owns (/rscfl) */
	off_t body_length; /* bytes of body the client will get */
	char header[512];  /* status line, headers, blank line, and a short error body */
	size_t header_length;
};

/* Decides the response to request under docroot: 200 with the file open, or
 * 404/403/405/500 with a short HTML body in the header buffer.  HEAD gets the
 * headers only.  keep_alive says which Connection header to send.  Never
 * fails: an error becomes an error response. */
void http_respond(const char *docroot, const struct http_request *request, int keep_alive,
		  struct http_response *response);
/* A 200 response whose body is in memory (HEAD: headers only; the memory is
 * freed).  Takes ownership of body. */
void http_respond_memory(const struct http_request *request, int keep_alive, const char *type,
			 char *body, size_t length, struct http_response *response);
/* An error response with no request behind it (400, 408, 413, 503): always
 * "Connection: close". */
void http_respond_error(int status, struct http_response *response);

/* ---- per-request accounting (accounting.c) ------------------------------
 * One librscfl token per request: started (reset) when the request's first
 * byte is read, stopped when its response is out, and for a request served
 * in stages stopped at the end of each stage and started again (no reset) at
 * the next, so that poll() and the other connections are not charged to it:
 * they go to the process's unattributed result.  A server token stays
 * started while httpd is busy so that the kernel keeps its accounting aspect
 * linked between requests; it is stopped after HTTP_ACCT_LINGER_MS without
 * requests.  Requests beyond the free tokens are served unaccounted.
 *
 *     http_acct_setup();  int token = http_acct_begin();   // before the first recv
 *     http_acct_pause(); ... http_acct_resume(token);        // between stages
 *     const struct http_served *s = http_acct_end(token, &done);  // response out
 */
#define HTTP_ACCT_RING      64   /* requests kept for /rscfl */
#define HTTP_ACCT_LINGER_MS 1000 /* idle time before the server token stops */

/* A request that was served, with what the kernel spent on it. */
struct http_served {
	uint64_t id;   /* 1, 2, ... in order of completion */
	char peer[16]; /* dotted IPv4 address */
	char method[HTTP_METHOD_MAX];
	char path[HTTP_PATH_MAX];
	int status;
	long long bytes;     /* body bytes sent */
	uint64_t latency_us; /* first byte in to last byte out, by the server's clock */
	const char *note;    /* "" or " (aborted)", " (timed out)" */
	int accounted;       /* acct holds the kernel's figures */
	struct rscfl_acct acct;
};

/* Turns accounting on: a handle, the server token, the request tokens.
 * Returns 0, or a negative errno (the kernel has no accounting: -38). */
int http_acct_setup(void);
/* Whether http_acct_setup succeeded. */
int http_acct_enabled(void);
/* Starts accounting a new request (reset, then current).  Returns its token,
 * or 0 when it goes unaccounted (accounting off, no free token, an error). */
int http_acct_begin(void);
/* Makes token the current activity again (0: none is current). */
void http_acct_resume(int token);
/* Stops the current request's token: a stage ends (before poll()). */
void http_acct_pause(void);
/* A begun request that never had a byte (the peer closed): its token goes
 * back, nothing is recorded. */
void http_acct_abandon(int token);
/* Where to describe the request that ends: with accounting on the ring's
 * next entry (kept as it is written, no copy), else *local. */
struct http_served *http_acct_entry(struct http_served *local);
/* Ends the request described by *done (all but its acct): with accounting
 * on, keeps it in the ring with token's results (token 0: unaccounted) and
 * returns the kept entry (done itself when http_acct_entry gave it); with
 * accounting off returns done. */
const struct http_served *http_acct_end(int token, const struct http_served *done);
/* Stops the server token once no request was in flight for
 * HTTP_ACCT_LINGER_MS (called once per loop turn). */
void http_acct_idle(uint64_t now_ms);
/* The served request i (0: oldest kept) of http_acct_count(), or NULL. */
const struct http_served *http_acct_get(unsigned i);
unsigned http_acct_count(void);
/* What the process spent with no request current (the loop's own work)
 * while accounting was on.  Returns 0 or a negative errno. */
int http_acct_unattributed(struct rscfl_acct *acct);
/* The results page's ACCT_PAGE_* flags (whether steal time is measured), 0
 * with accounting off. */
unsigned http_acct_page_flags(void);

/* ---- reports (report.c) -------------------------------------------------- */

/* Appends the breakdown of s to the access-log line at line[0..size):
 * " wall=..us cpu=..us sched_out=..us syscalls=.. top=net:..us,.. tcp_in=..B
 * tcp_out=..B"; nothing when s was not accounted. */
void http_report_line(const struct http_served *s, char *line, size_t size);
/* The JSON of /rscfl, malloc'd, in *json with its length in *length.
 * Returns 0 or -ENOMEM. */
int http_report_json(char **json, size_t *length);

/* ---- /metrics (metrics.c) ------------------------------------------------ */

/* Why httpd closed a connection (httpd_connections_closed_total{reason}). */
enum http_close_reason {
	HTTP_CLOSE_PEER,       /* recv saw the peer's end of stream */
	HTTP_CLOSE_RECV_ERROR, /* recv failed (not EAGAIN/EINTR) */
	HTTP_CLOSE_SEND_ERROR, /* send failed (not EAGAIN/EINTR) */
	HTTP_CLOSE_BODY_ERROR, /* the file could not be read */
	HTTP_CLOSE_DONE,       /* the response was the last (Connection: close, an error) */
	HTTP_CLOSE_DEADLINE,   /* header, idle or write deadline */
	HTTP_CLOSE_REASONS
};
/* Counts a close; err is the failed call's errno (0 when none). */
void http_metrics_note_close(enum http_close_reason reason, int err);

/* Counts a request that ended with status after latency_us. */
void http_metrics_note(int status, uint64_t latency_us);
/* Adds the kernel time of an accounted request to the per-subsystem totals
 * (nothing when s was not accounted). */
void http_metrics_note_kernel(const struct http_served *s);
/* The Prometheus text of /metrics, malloc'd, in *text with its length in
 * *length.  Returns 0 or -ENOMEM. */
int http_metrics_text(char **text, size_t *length);

#endif
