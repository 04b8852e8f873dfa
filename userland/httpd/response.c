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
	int length = snprintf(full, sizeof(full), "%s%s", docroot, path);
	if (length < 0 || (size_t)length >= sizeof(full) - sizeof("/index.html"))
		return -404;
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
	    (size_t)snprintf(response->header, sizeof(response->header),
			     "HTTP/1.1 200 OK\r\nServer: " SERVER_NAME "\r\nContent-Type: %s\r\n"
			     "Content-Length: %lld\r\nConnection: %s\r\n\r\n",
			     type, (long long)size, keep_alive ? "keep-alive" : "close");
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
	    (size_t)snprintf(response->header, sizeof(response->header),
			     "HTTP/1.1 200 OK\r\nServer: " SERVER_NAME "\r\nContent-Type: %s\r\n"
			     "Content-Length: %zu\r\nCache-Control: no-store\r\n"
			     "Connection: %s\r\n\r\n",
			     type, length, keep_alive ? "keep-alive" : "close");
	response->file_fd = -1;
	response->memory = head_only ? NULL : body;
	response->body_length = head_only ? 0 : (off_t)length;
	if (head_only)
		free(body);
}
