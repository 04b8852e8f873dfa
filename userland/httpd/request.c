/*
 * Request parsing: the request line and the few headers httpd acts on
 * (Connection, Content-Length, Transfer-Encoding).  Pure: a buffer in, a
 * struct http_request out, no system calls, so every input the network can
 * send is just a string here.  The request line is judged as soon as its
 * newline arrives, so garbage is answered at once instead of after the
 * header timeout.  Bare "\n" line ends are accepted as well as "\r\n".
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "http.h"

/* Returns the length through the first "\n\n" or "\n\r\n" (the header's end), or 0. */
static size_t header_end(const char *buffer, size_t length)
{
	for (size_t i = 0; i + 1 < length; i++) {
		if (buffer[i] != '\n')
			continue;
		if (buffer[i + 1] == '\n')
			return i + 2;
		if (buffer[i + 1] == '\r' && i + 2 < length && buffer[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}

/* Decodes target[0..length) (up to '?' or '#') into path.  Returns 0 or -400/-414. */
static int decode_path(const char *target, size_t length, char *path)
{
	size_t out = 0;
	if (length == 0 || target[0] != '/')
		return -400;
	for (size_t i = 0; i < length && target[i] != '?' && target[i] != '#'; i++) {
		int c = (unsigned char)target[i];
		if (c == '%') {
			int high = i + 2 < length ? hex_value(target[i + 1]) : -1;
			int low = i + 2 < length ? hex_value(target[i + 2]) : -1;
			if (high < 0 || low < 0)
				return -400;
			c = high * 16 + low;
			i += 2;
		}
		if (c < 0x20 || c == 0x7f)
			return -400;
		if (out + 1 >= HTTP_PATH_MAX)
			return -414;
		path[out++] = (char)c;
	}
	path[out] = '\0';
	return 0;
}

/* True when path has a ".." segment (it would climb out of the docroot). */
static int climbs(const char *path)
{
	for (const char *p = path; (p = strstr(p, "..")); p += 2)
		if (p[-1] == '/' && (p[2] == '/' || p[2] == '\0'))
			return 1;
	return 0;
}

/* Parses "METHOD SP target SP HTTP/1.x" (line has no line end).  Returns 0 or -status. */
static int parse_request_line(const char *line, size_t length, struct http_request *request)
{
	size_t i = 0;
	while (i < length && i + 1 < HTTP_METHOD_MAX && isupper((unsigned char)line[i]))
		i++;
	if (i == 0 || i >= length || line[i] != ' ')
		return -400;
	memcpy(request->method_name, line, i);
	request->method_name[i] = '\0';
	request->method = strcmp(request->method_name, "GET") == 0    ? HTTP_GET
			  : strcmp(request->method_name, "HEAD") == 0 ? HTTP_HEAD
								      : HTTP_OTHER;
	const char *target = line + i + 1;
	const char *space = memchr(target, ' ', length - i - 1);
	if (!space)
		return -400;
	size_t rest = length - (size_t)(space + 1 - line);
	if (rest != 8 || memcmp(space + 1, "HTTP/1.", 7) != 0 ||
	    (space[8] != '0' && space[8] != '1'))
		return -400;
	request->minor_version = space[8] - '0';
	int status = decode_path(target, (size_t)(space - target), request->path);
	if (status == 0 && climbs(request->path))
		status = -400;
	return status;
}

/* True when the comma-separated value holds token (case-insensitive). */
static int has_token(const char *value, size_t length, const char *token)
{
	size_t token_length = strlen(token);
	for (size_t i = 0; i + token_length <= length; i++)
		if (strncasecmp(value + i, token, token_length) == 0)
			return 1;
	return 0;
}

/* Acts on one "Name: value" line.  Returns 0 or -status. */
static int parse_header_line(const char *line, size_t length, struct http_request *request)
{
	const char *colon = memchr(line, ':', length);
	if (!colon || colon == line)
		return -400;
	size_t name_length = (size_t)(colon - line);
	const char *value = colon + 1;
	size_t value_length = length - name_length - 1;
	while (value_length && (*value == ' ' || *value == '\t'))
		value++, value_length--;
	if (name_length == 10 && strncasecmp(line, "Connection", 10) == 0) {
		if (has_token(value, value_length, "close"))
			request->keep_alive = 0;
		else if (has_token(value, value_length, "keep-alive"))
			request->keep_alive = 1;
	} else if (name_length == 14 && strncasecmp(line, "Content-Length", 14) == 0) {
		size_t n = 0, digits = 0;
		for (; digits < value_length && isdigit((unsigned char)value[digits]); digits++)
			n = n > HTTP_BODY_MAX ? n : n * 10 + (size_t)(value[digits] - '0');
		if (digits == 0)
			return -400;
		if (n > HTTP_BODY_MAX)
			return -413;
		request->content_length = n;
	} else if (name_length == 17 && strncasecmp(line, "Transfer-Encoding", 17) == 0) {
		return -400; /* chunked request bodies are not supported */
	}
	return 0;
}

/* Returns the length of the line at buffer without its "\r\n" or "\n". */
static size_t line_length(const char *buffer, const char *newline)
{
	size_t length = (size_t)(newline - buffer);
	return (length && buffer[length - 1] == '\r') ? length - 1 : length;
}

static void clear_request(struct http_request *request)
{
	memset(request, 0, sizeof(*request));
	strcpy(request->method_name, "?");
	strcpy(request->path, "?");
}

int http_parse_request(const char *buffer, size_t length, struct http_request *request)
{
	clear_request(request);
	size_t scan = length < HTTP_HEADER_MAX ? length : HTTP_HEADER_MAX;
	const char *newline = memchr(buffer, '\n', scan);
	if (!newline)
		return length >= HTTP_HEADER_MAX ? -413 : 0;
	int status = parse_request_line(buffer, line_length(buffer, newline), request);
	if (status < 0)
		return status;
	request->keep_alive = request->minor_version == 1;
	size_t end = header_end(newline, scan - (size_t)(newline - buffer));
	if (!end)
		return length >= HTTP_HEADER_MAX ? -413 : 0;
	const char *stop = newline + end - 1; /* the final '\n' */
	for (const char *line = newline + 1; line < stop;) {
		const char *next = memchr(line, '\n', (size_t)(stop - line) + 1);
		if (line_length(line, next) == 0)
			break; /* the blank line that ends the header */
		status = parse_header_line(line, line_length(line, next), request);
		if (status < 0)
			return status;
		line = next + 1;
	}
	return (int)(stop + 1 - buffer);
}
