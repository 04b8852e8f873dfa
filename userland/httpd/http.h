/*
 * httpd's pieces: request parsing (request.c, pure: no system calls), the
 * response a request gets (response.c: docroot look-up, status lines,
 * headers), and the connection event loop (httpd.c).
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
/* An error response with no request behind it (400, 408, 413, 503): always
 * "Connection: close". */
void http_respond_error(int status, struct http_response *response);

#endif
