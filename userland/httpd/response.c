/*
 * Responses: a request's path under the docroot becomes an open file and a
 * header (200), or a short HTML error page held in the header buffer (403,
 * 404, 405, 500; and 400, 408, 413, 414, 503 without a request behind them).
 * A directory serves its index.html.  A generated body (/rscfl's JSON) is a
 * malloc'd buffer the response owns until httpd frees it.  Paths never climb out of the docroot:
 * the parser has refused ".." segments already.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http.h"

#define SERVER_NAME "microScope-httpd"

static const struct {
	int status;
	const char *text;
} statuses[] = {
    {200, "OK"},
    {400, "Bad Request"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {408, "Request Timeout"},
    {413, "Payload Too Large"},
    {414, "URI Too Long"},
    {500, "Internal Server Error"},
    {503, "Service Unavailable"},
};

static const struct {
	const char *extension;
	const char *type;
} content_types[] = {
    {".html", "text/html"},    {".htm", "text/html"},      {".txt", "text/plain"},
    {".css", "text/css"},      {".js", "text/javascript"}, {".json", "application/json"},
    {".png", "image/png"},     {".jpg", "image/jpeg"},     {".gif", "image/gif"},
    {".svg", "image/svg+xml"}, {".ico", "image/x-icon"},
};

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

const char *http_status_text(int status)
{
	for (unsigned i = 0; i < COUNT(statuses); i++)
		if (statuses[i].status == status)
			return statuses[i].text;
	return "Unknown";
}

const char *http_content_type(const char *path)
{
	const char *dot = strrchr(path, '.');
	if (dot && !strchr(dot, '/'))
		for (unsigned i = 0; i < COUNT(content_types); i++)
			if (strcmp(dot, content_types[i].extension) == 0)
				return content_types[i].type;
	return "application/octet-stream";
}

/* A 200 header built in place, text and decimal appended, no printf: the
 * header of every small response, where snprintf was about a third of
 * httpd's own instructions.  Too long for the buffer (a Content-Type
 * nobody sends) gives a header cut at the buffer's end, never an overrun. */
struct header_text {
	char *buffer;
	size_t size, length;
};

static void header_put(struct header_text *h, const char *text, size_t n)
{
	size_t room = h->length < h->size - 1 ? h->size - 1 - h->length : 0;
	memcpy(h->buffer + h->length, text, n < room ? n : room);
	h->length += n < room ? n : room;
	h->buffer[h->length] = '\0';
}

static void header_put_text(struct header_text *h, const char *text)
{
	header_put(h, text, strlen(text));
}

static void header_put_decimal(struct header_text *h, unsigned long long value)
{
	char digits[20];
	size_t at = sizeof(digits);
	do {
		digits[--at] = (char)('0' + value % 10);
		value /= 10;
	} while (value);
	header_put(h, digits + at, sizeof(digits) - at);
}

/* "HTTP/1.1 200 OK" with the type, length, extra lines (may be "") and
 * the Connection header; returns the header's length. */
static size_t ok_header(struct http_response *response, const char *type, unsigned long long length,
			const char *extra, int keep_alive)
{
	struct header_text h = {response->header, sizeof(response->header), 0};
	header_put_text(&h, "HTTP/1.1 200 OK\r\nServer: " SERVER_NAME "\r\nContent-Type: ");
	header_put_text(&h, type);
	header_put_text(&h, "\r\nContent-Length: ");
	header_put_decimal(&h, length);
	header_put_text(&h, "\r\n");
	header_put_text(&h, extra);
	header_put_text(&h, keep_alive ? "Connection: keep-alive\r\n\r\n"
				       : "Connection: close\r\n\r\n");
	return h.length;
}

/* Fills the header buffer with an error page. */
static void error_page(int status, int keep_alive, int head_only, struct http_response *response)
{
	char body[128];
	int body_length = snprintf(body, sizeof(body), "<html><body><h1>%d %s</h1></body></html>\n",
				   status, http_status_text(status));
	int length = snprintf(response->header, sizeof(response->header),
			      "HTTP/1.1 %d %s\r\nServer: " SERVER_NAME
			      "\r\nContent-Type: text/html\r\nContent-Length: %d\r\n%s"
			      "Connection: %s\r\n\r\n%s",
			      status, http_status_text(status), body_length,
			      status == 405 ? "Allow: GET, HEAD\r\n" : "",
			      keep_alive ? "keep-alive" : "close", head_only ? "" : body);
	response->status = status;
	response->file_fd = -1;
	response->memory = NULL;
	response->body_length = head_only ? 0 : body_length;
	response->header_length = (size_t)length;
}

void http_respond_error(int status, struct http_response *response)
{
	error_page(status, 0, 0, response);
}

/* Opens full and stats it.  Returns the descriptor, 0 when full is a
 * directory that cannot be opened (EISDIR), or -status (403, 404, 500). */
static int open_stat(const char *full, struct stat *st)
{
	int fd = open(full, O_RDONLY);
	if (fd < 0 && errno == EISDIR)
		return 0;
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? -404 : errno == EACCES ? -403 : -500;
	if (fstat(fd, st) < 0) {
		close(fd);
		return -403;
	}
	return fd;
}

/* Opens docroot + path (a directory's index.html).  Returns the descriptor,
 * its size in *size and its Content-Type in *type, or -status (403, 404,
 * 500).  A file costs open and fstat, no stat before: a directory, the rare
 * case, is found after opening it. */
static int open_file(const char *docroot, const char *path, off_t *size, const char **type)
{
	char full[HTTP_PATH_MAX + 256];
	struct stat st;
	size_t root_length = strlen(docroot), path_length = strlen(path);
	size_t length = root_length + path_length;
	if (length >= sizeof(full) - sizeof("/index.html"))
		return -404;
	memcpy(full, docroot, root_length);
	memcpy(full + root_length, path, path_length + 1);
	int fd = open_stat(full, &st);
	if (fd == 0 || (fd > 0 && S_ISDIR(st.st_mode))) {
		if (fd > 0)
			close(fd);
		strcat(full, full[length - 1] == '/' ? "index.html" : "/index.html");
		fd = open_stat(full, &st);
		if (fd == 0)
			return -403;
	}
	if (fd < 0)
		return fd;
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -403;
	}
	*size = st.st_size;
	*type = http_content_type(full);
	return fd;
}

void http_respond(const char *docroot, const struct http_request *request, int keep_alive,
		  struct http_response *response)
{
	int head_only = request->method == HTTP_HEAD;
	if (request->method == HTTP_OTHER) {
		error_page(405, keep_alive, 0, response);
		return;
	}
	off_t size = 0;
	const char *type = NULL;
	int fd = open_file(docroot, request->path, &size, &type);
	if (fd < 0) {
		error_page(-fd, keep_alive, head_only, response);
		return;
	}
	response->status = 200;
	response->header_length =
	    ok_header(response, type, (unsigned long long)size, "", keep_alive);
	if (head_only) {
		close(fd);
		fd = -1;
		size = 0;
	}
	response->file_fd = fd;
	response->memory = NULL;
	response->body_length = size;
}

void http_respond_memory(const struct http_request *request, int keep_alive, const char *type,
			 char *body, size_t length, struct http_response *response)
{
	int head_only = request->method == HTTP_HEAD;
	response->status = 200;
	response->header_length =
	    ok_header(response, type, length, "Cache-Control: no-store\r\n", keep_alive);
	response->file_fd = -1;
	response->memory = head_only ? NULL : body;
	response->body_length = head_only ? 0 : (off_t)length;
	if (head_only)
		free(body);
}
