// host-test-sources: userland/httpd/response.c
/*
 * httpd's responses (userland/httpd/response.c) on a docroot made for the
 * test in a temporary directory: the 200 header of a file, of a directory's
 * index.html and of a body in memory, byte for byte against the same header
 * printed by the host's snprintf; HEAD with no body; lengths from 0 to the
 * largest; a path that with the docroot would not fit refused with 404; and a
 * Content-Type too long for the buffer cut at the buffer's end, not past it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hosttest.h"
#include "userland/httpd/http.h"

static char docroot[64];

static void write_file(const char *name, size_t bytes)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", docroot, name);
	FILE *f = fopen(path, "w");
	for (size_t i = 0; f && i < bytes; i++)
		fputc('x', f);
	if (f)
		fclose(f);
}

static void remove_docroot(void)
{
	const char *names[] = {"small.txt", "empty.html", "sub/index.html", "sub", ""};
	char path[256];
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", docroot, names[i]);
		remove(path);
	}
}

static void make_docroot(void)
{
	if (docroot[0])
		return;
	strcpy(docroot, "/tmp/httpd-response-XXXXXX");
	if (!mkdtemp(docroot))
		abort();
	atexit(remove_docroot);
	write_file("small.txt", 22);
	write_file("empty.html", 0);
	char dir[128];
	snprintf(dir, sizeof dir, "%s/sub", docroot);
	mkdir(dir, 0755);
	write_file("sub/index.html", 1234);
}

static struct http_request get(const char *path, enum http_method method)
{
	struct http_request request = {.method = method};
	strcpy(request.path, path);
	return request;
}

static void expect_ok_header(const struct http_response *r, const char *type, long long length,
			     const char *extra, int keep_alive)
{
	char expected[512];
	int n = snprintf(expected, sizeof expected,
			 "HTTP/1.1 200 OK\r\nServer: microScope-httpd\r\nContent-Type: %s\r\n"
			 "Content-Length: %lld\r\n%sConnection: %s\r\n\r\n",
			 type, length, extra, keep_alive ? "keep-alive" : "close");
	CHECK_EQ(r->status, 200);
	CHECK_EQ(r->header_length, (size_t)n);
	CHECK_STR_EQ(r->header, expected);
}

static void a_file_gets_its_header(void)
{
	make_docroot();
	struct http_request request = get("/small.txt", HTTP_GET);
	struct http_response r;
	http_respond(docroot, &request, 1, &r);
	expect_ok_header(&r, "text/plain", 22, "", 1);
	CHECK(r.file_fd >= 0);
	CHECK_EQ(r.body_length, 22);
	close(r.file_fd);
	request = get("/empty.html", HTTP_GET);
	http_respond(docroot, &request, 0, &r);
	expect_ok_header(&r, "text/html", 0, "", 0);
	close(r.file_fd);
}

static void a_directory_serves_its_index_and_head_has_no_body(void)
{
	make_docroot();
	struct http_request request = get("/sub", HTTP_HEAD);
	struct http_response r;
	http_respond(docroot, &request, 1, &r);
	expect_ok_header(&r, "text/html", 1234, "", 1);
	CHECK_EQ(r.file_fd, -1);
	CHECK_EQ(r.body_length, 0);
}

static void a_body_in_memory_gets_its_header(void)
{
	struct http_request request = get("/rscfl", HTTP_GET);
	struct http_response r;
	char *body = strdup("{}");
	http_respond_memory(&request, 0, "application/json", body, 2, &r);
	expect_ok_header(&r, "application/json", 2, "Cache-Control: no-store\r\n", 0);
	CHECK(r.memory == body);
	free(body);
	body = malloc(1);
	http_respond_memory(&request, 1, "text/plain", body, (size_t)9223372036854775807LL, &r);
	expect_ok_header(&r, "text/plain", 9223372036854775807LL, "Cache-Control: no-store\r\n", 1);
	free(body);
}

static void a_path_too_long_for_the_docroot_is_404(void)
{
	make_docroot();
	struct http_request request = {.method = HTTP_GET};
	memset(request.path, 'a', sizeof(request.path) - 1);
	request.path[0] = '/';
	char long_root[300];
	memset(long_root, 'r', sizeof long_root - 1);
	long_root[sizeof long_root - 1] = '\0';
	struct http_response r;
	http_respond(long_root, &request, 1, &r);
	CHECK_EQ(r.status, 404);
	CHECK(strstr(r.header, "HTTP/1.1 404 Not Found\r\n") == r.header);
}

static void a_type_too_long_is_cut_at_the_buffer(void)
{
	struct http_request request = get("/x", HTTP_GET);
	struct http_response r;
	char type[1000];
	memset(type, 't', sizeof type - 1);
	type[sizeof type - 1] = '\0';
	memset(&r, 0x55, sizeof r);
	http_respond_memory(&request, 1, type, malloc(1), 0, &r);
	CHECK_EQ(r.header_length, sizeof(r.header) - 1);
	CHECK_EQ(strlen(r.header), sizeof(r.header) - 1);
	CHECK(r.header_length < sizeof(r.header));
	free(r.memory);
}

HOSTTEST_MAIN(HOSTTEST_CASE(a_file_gets_its_header),
	      HOSTTEST_CASE(a_directory_serves_its_index_and_head_has_no_body),
	      HOSTTEST_CASE(a_body_in_memory_gets_its_header),
	      HOSTTEST_CASE(a_path_too_long_for_the_docroot_is_404),
	      HOSTTEST_CASE(a_type_too_long_is_cut_at_the_buffer))
