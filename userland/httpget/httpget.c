/*
 * httpget: a tiny HTTP/1.1 client.  GETs one URL (numeric IPv4 host or
 * localhost; no DNS) and writes the body to standard output or a file; the
 * status line and headers go to standard error with -v.  The body is read to
 * its Content-Length, or to the end of the connection when there is none.
 * It asks for "Connection: close"; a chunked body is refused (exit 1).  With
 * -n COUNT it makes COUNT requests over one kept-alive connection and says
 * on standard error how long they took (under QEMU -icount, a microsecond is
 * a thousand guest instructions: what a request costs client and server on
 * one CPU).  Exits 0 for a 2xx status, 1 otherwise or on an error, 2 on bad
 * usage.
 *
 *     httpget [-v] [-o file] [-t timeout_s] [-n count] http://10.0.2.2:8000/index.html
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define HEADER_MAX 8192

struct url {
	char host[64];
	char port[8];
	const char *path;
};

/* Splits "http://host[:port][/path]".  Returns 0 or -1. */
static int parse_url(const char *text, struct url *url)
{
	if (strncmp(text, "http://", 7) != 0)
		return -1;
	text += 7;
	size_t host_length = strcspn(text, ":/");
	if (host_length == 0 || host_length >= sizeof(url->host))
		return -1;
	memcpy(url->host, text, host_length);
	url->host[host_length] = '\0';
	text += host_length;
	strcpy(url->port, "80");
	if (*text == ':') {
		size_t port_length = strcspn(++text, "/");
		if (port_length == 0 || port_length >= sizeof(url->port))
			return -1;
		memcpy(url->port, text, port_length);
		url->port[port_length] = '\0';
		text += port_length;
	}
	url->path = *text ? text : "/";
	return 0;
}

static int connect_to(const struct url *url, int timeout_s)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *address;
	int error = getaddrinfo(url->host, url->port, &hints, &address);
	if (error) {
		fprintf(stderr, "httpget: %s: %s\n", url->host, gai_strerror(error));
		return -1;
	}
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct timeval timeout = {.tv_sec = timeout_s};
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
	}
	if (fd < 0 || connect(fd, address->ai_addr, address->ai_addrlen) < 0) {
		fprintf(stderr, "httpget: connect to %s:%s: %s\n", url->host, url->port,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(address);
	return fd;
}

static int send_all(int fd, const char *data, size_t length)
{
	while (length) {
		ssize_t n = send(fd, data, length, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		data += n;
		length -= (size_t)n;
	}
	return 0;
}

static int write_all(int fd, const char *data, size_t length)
{
	while (length) {
		ssize_t n = write(fd, data, length);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		data += n;
		length -= (size_t)n;
	}
	return 0;
}

/* Reads until the blank line.  Returns the header's length (the rest of
 * *filled bytes in buffer is body), or -1. */
static int read_header(int fd, char *buffer, size_t *filled)
{
	for (;;) {
		buffer[*filled] = '\0';
		char *end = strstr(buffer, "\r\n\r\n");
		if (end)
			return (int)(end + 4 - buffer);
		if (*filled >= HEADER_MAX - 1)
			return -1;
		ssize_t n = recv(fd, buffer + *filled, HEADER_MAX - 1 - *filled, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		*filled += (size_t)n;
	}
}

/* Returns the value of header name (a pointer into header), or NULL. */
static const char *find_header(const char *header, const char *name)
{
	size_t length = strlen(name);
	for (const char *line = strstr(header, "\r\n"); line; line = strstr(line + 2, "\r\n"))
		if (strncasecmp(line + 2, name, length) == 0 && line[2 + length] == ':')
			return line + 3 + length + strspn(line + 3 + length, " \t");
	return NULL;
}

/* Copies the body to out: `expected` bytes, or to the end when it is -1.
 * Returns 0 or -1. */
static int copy_body(int fd, int out, const char *start, size_t have, long long expected)
{
	long long done = (long long)have;
	if (write_all(out, start, have) < 0)
		return -1;
	char buffer[16384];
	while (expected < 0 || done < expected) {
		ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "httpget: recv: %s\n", strerror(errno));
			return -1;
		}
		if (n == 0)
			break;
		if (write_all(out, buffer, (size_t)n) < 0)
			return -1;
		done += n;
	}
	if (expected >= 0 && done != expected) {
		fprintf(stderr, "httpget: body has %lld of %lld bytes\n", done, expected);
		return -1;
	}
	return 0;
}

/* One request and its response on fd; keep_alive asks the server to keep
 * the connection (the body must then have a Content-Length).  Returns 0 for
 * a 2xx status, 1 otherwise. */
static int exchange(int fd, const struct url *url, int out, int verbose, int keep_alive)
{
	char request[512], header[HEADER_MAX];
	int length = snprintf(request, sizeof(request),
			      "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: httpget\r\n"
			      "Connection: %s\r\n\r\n",
			      url->path, url->host, keep_alive ? "keep-alive" : "close");
	size_t filled = 0;
	int header_length = -1;
	if (length > 0 && (size_t)length < sizeof(request) &&
	    send_all(fd, request, (size_t)length) == 0)
		header_length = read_header(fd, header, &filled);
	if (header_length < 0) {
		fprintf(stderr, "httpget: no response header: %s\n", strerror(errno));
		return 1;
	}
	int status = 0;
	sscanf(header, "HTTP/1.%*d %d", &status);
	if (verbose)
		fprintf(stderr, "%.*s", header_length, header);
	const char *chunked = find_header(header, "Transfer-Encoding");
	const char *content_length = find_header(header, "Content-Length");
	int result = 1;
	if (chunked && strncasecmp(chunked, "chunked", 7) == 0)
		fprintf(stderr, "httpget: chunked bodies are not supported\n");
	else if (keep_alive && !content_length)
		fprintf(stderr, "httpget: a kept connection needs a Content-Length\n");
	else if (copy_body(fd, out, header + header_length, filled - (size_t)header_length,
			   content_length ? atoll(content_length) : -1) == 0)
		result = status >= 200 && status < 300 ? 0 : 1;
	if (result && status && !verbose)
		fprintf(stderr, "httpget: status %d\n", status);
	return result;
}

static long long now_us(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000;
}

/* count requests over one connection (kept alive between them); with
 * count > 1 the time they took goes to standard error. */
static int get(const struct url *url, int out, int verbose, int timeout_s, int count)
{
	int fd = connect_to(url, timeout_s);
	if (fd < 0)
		return 1;
	long long start = now_us();
	int result = 0, done = 0;
	while (done < count && result == 0) {
		result = exchange(fd, url, out, verbose, done + 1 < count);
		done += result == 0;
	}
	long long elapsed = now_us() - start;
	close(fd);
	if (count > 1)
		fprintf(stderr, "httpget: %d requests in %lld us, %lld us each\n", done, elapsed,
			done ? elapsed / done : 0);
	return result;
}

int main(int argc, char **argv)
{
	int verbose = 0, timeout_s = 10, count = 1, c;
	const char *output = NULL;
	while ((c = getopt(argc, argv, "vo:t:n:")) != -1) {
		switch (c) {
		case 'v': verbose = 1; break;
		case 'o': output = optarg; break;
		case 't': timeout_s = atoi(optarg); break;
		case 'n': count = atoi(optarg); break;
		default: optind = argc + 1;
		}
	}
	struct url url;
	if (optind != argc - 1 || timeout_s <= 0 || count <= 0 ||
	    parse_url(argv[optind], &url) < 0) {
		fprintf(stderr, "usage: httpget [-v] [-o file] [-t timeout_s] [-n count] "
				"http://host[:port]/path\n");
		return 2;
	}
	int out = output ? open(output, O_WRONLY | O_CREAT | O_TRUNC, 0644) : 1;
	if (out < 0) {
		fprintf(stderr, "httpget: %s: %s\n", output, strerror(errno));
		return 1;
	}
	int result = get(&url, out, verbose, timeout_s, count);
	if (output)
		close(out);
	return result;
}
