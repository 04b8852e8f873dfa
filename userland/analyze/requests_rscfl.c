/*
 * Requests out of httpd's accounting results: the JSON of GET /rscfl
 * (userland/httpd/report.c), saved to a file.  Of it only "requests" is read:
 * each request's id, path, status, bytes, latency_us, and its kernel
 * result's subsystems, whose exclusive_ns become the breakdown (they add up
 * to the time in the request's outermost kernel calls, nothing twice).  The
 * parser is a small recursive descent over the whole of JSON that skips what
 * it does not need; every read is bounded by the text's end, and nesting by
 * JSON_DEPTH_MAX.
 */
#include "requests.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_DEPTH_MAX 32
#define FILE_MAX       (64u << 20)

struct json {
	const char *at, *end;
	int depth;
	int failed;
};

static void skip_space(struct json *j)
{
	while (j->at < j->end &&
	       (*j->at == ' ' || *j->at == '\n' || *j->at == '\r' || *j->at == '\t'))
		j->at++;
}

/* Consumes c (after spaces); returns 1, or 0 when the next byte is not c. */
static int take(struct json *j, char c)
{
	skip_space(j);
	if (j->at < j->end && *j->at == c) {
		j->at++;
		return 1;
	}
	return 0;
}

/* Reads a string into out (truncated to size, NUL-ended; escapes kept as
 * their letter, \u00XX as its byte). */
static void read_string(struct json *j, char *out, size_t size)
{
	size_t n = 0;
	if (!take(j, '"')) {
		j->failed = 1;
		return;
	}
	while (j->at < j->end && *j->at != '"') {
		char c = *j->at++;
		if (c == '\\' && j->at < j->end) {
			c = *j->at++;
			if (c == 'u' && j->end - j->at >= 4) {
				c = (char)strtol((char[]){j->at[2], j->at[3], 0}, NULL, 16);
				j->at += 4;
			}
		}
		if (n + 1 < size)
			out[n++] = c;
	}
	if (size)
		out[n] = 0;
	if (!take(j, '"'))
		j->failed = 1;
}

static uint64_t read_number(struct json *j)
{
	skip_space(j);
	uint64_t value = 0;
	int negative = j->at < j->end && *j->at == '-';
	j->at += negative;
	while (j->at < j->end && *j->at >= '0' && *j->at <= '9')
		value = value * 10 + (uint64_t)(*j->at++ - '0');
	while (j->at < j->end && strchr(".eE+-0123456789", *j->at)) /* fractions: dropped */
		j->at++;
	return negative ? 0 : value;
}

static void skip_value(struct json *j);

/* Calls member(j, key, arg) for each member of an object; the callback must
 * consume the value (skip_value when it does not want it). */
static void read_object(struct json *j, void (*member)(struct json *, const char *, void *),
			void *arg)
{
	if (!take(j, '{') || ++j->depth > JSON_DEPTH_MAX) {
		j->failed = 1;
		return;
	}
	if (!take(j, '}')) {
		do {
			char key[64];
			read_string(j, key, sizeof key);
			if (j->failed || !take(j, ':')) {
				j->failed = 1;
				return;
			}
			member(j, key, arg);
		} while (!j->failed && take(j, ','));
		if (!take(j, '}'))
			j->failed = 1;
	}
	j->depth--;
}

/* Calls element(j, arg) for each element of an array. */
static void read_array(struct json *j, void (*element)(struct json *, void *), void *arg)
{
	if (!take(j, '[') || ++j->depth > JSON_DEPTH_MAX) {
		j->failed = 1;
		return;
	}
	if (!take(j, ']')) {
		do
			element(j, arg);
		while (!j->failed && take(j, ','));
		if (!take(j, ']'))
			j->failed = 1;
	}
	j->depth--;
}

static void skip_member(struct json *j, const char *key, void *arg)
{
	(void)key, (void)arg;
	skip_value(j);
}

static void skip_element(struct json *j, void *arg)
{
	(void)arg;
	skip_value(j);
}

static void skip_value(struct json *j)
{
	skip_space(j);
	if (j->at >= j->end) {
		j->failed = 1;
	} else if (*j->at == '{') {
		read_object(j, skip_member, NULL);
	} else if (*j->at == '[') {
		read_array(j, skip_element, NULL);
	} else if (*j->at == '"') {
		char ignored[1];
		read_string(j, ignored, sizeof ignored);
	} else if (strchr("-0123456789", *j->at)) {
		read_number(j);
	} else {
		static const char *const words[] = {"true", "false", "null"};
		for (unsigned i = 0; i < 3; i++) {
			size_t n = strlen(words[i]);
			if ((size_t)(j->end - j->at) >= n && !memcmp(j->at, words[i], n)) {
				j->at += n;
				return;
			}
		}
		j->failed = 1;
	}
}

/* ---- the /rscfl layout ---------------------------------------------------- */

struct reading {
	struct request_set *set;
	struct request *request;
	char name[REQUEST_NAME_MAX];
	uint64_t exclusive_ns;
};

static void subsystem_member(struct json *j, const char *key, void *arg)
{
	struct reading *r = arg;
	if (!strcmp(key, "name"))
		read_string(j, r->name, sizeof r->name);
	else if (!strcmp(key, "exclusive_ns"))
		r->exclusive_ns = read_number(j);
	else
		skip_value(j);
}

static void subsystem_element(struct json *j, void *arg)
{
	struct reading *r = arg;
	r->name[0] = 0;
	r->exclusive_ns = 0;
	read_object(j, subsystem_member, r);
	if (!j->failed && r->name[0])
		r->request->subsystem_ns[request_subsystem(r->set, r->name)] += r->exclusive_ns;
}

static void kernel_member(struct json *j, const char *key, void *arg)
{
	if (!strcmp(key, "subsystems"))
		read_array(j, subsystem_element, arg);
	else
		skip_value(j);
}

static void request_member(struct json *j, const char *key, void *arg)
{
	struct reading *r = arg;
	struct request *q = r->request;
	if (!strcmp(key, "id"))
		q->id = read_number(j);
	else if (!strcmp(key, "path"))
		read_string(j, q->path, sizeof q->path);
	else if (!strcmp(key, "status"))
		q->status = (int32_t)read_number(j);
	else if (!strcmp(key, "bytes"))
		q->bytes = read_number(j);
	else if (!strcmp(key, "latency_us"))
		q->latency_ns = read_number(j) * 1000;
	else if (!strcmp(key, "kernel"))
		read_object(j, kernel_member, r);
	else
		skip_value(j);
}

static void request_element(struct json *j, void *arg)
{
	struct reading *r = arg;
	r->request = request_add(r->set);
	if (!r->request) {
		j->failed = 1;
		return;
	}
	read_object(j, request_member, r);
}

static void top_member(struct json *j, const char *key, void *arg)
{
	if (!strcmp(key, "requests"))
		read_array(j, request_element, arg);
	else
		skip_value(j);
}

/* The file's text (malloc'd, *length bytes), or NULL with *too_big set when
 * it holds more than FILE_MAX bytes (read up to there, it would be refused
 * as JSON cut short, which is not what is wrong with it). */
static char *read_whole(const char *path, size_t *length, int *too_big)
{
	FILE *f = fopen(path, "rb");
	*too_big = 0;
	if (!f)
		return NULL;
	size_t capacity = 65536, n = 0, got;
	char *text = malloc(capacity);
	while (text && (got = fread(text + n, 1, capacity - n, f)) > 0) {
		n += got;
		if (n == capacity && capacity < FILE_MAX) {
			char *grown = realloc(text, capacity * 2);
			if (!grown)
				free(text);
			text = grown;
			capacity *= 2;
		} else if (n == capacity) {
			*too_big = fgetc(f) != EOF;
			break;
		}
	}
	fclose(f);
	if (*too_big) {
		free(text);
		text = NULL;
	}
	*length = n;
	return text;
}

int requests_from_rscfl(struct request_set *set, const char *path)
{
	size_t length;
	int too_big;
	char *text = read_whole(path, &length, &too_big);
	if (!text && too_big) {
		fprintf(stderr, "analyze: %s is larger than %u MiB: not httpd's /rscfl\n", path,
			FILE_MAX >> 20);
		return -1;
	}
	if (!text) {
		fprintf(stderr, "analyze: cannot read %s\n", path);
		return -1;
	}
	set->source = "rscfl";
	struct json j = {.at = text, .end = text + length};
	struct reading reading = {.set = set};
	read_object(&j, top_member, &reading);
	long failed_at = j.failed ? (long)(j.at - text) : -1;
	free(text);
	if (failed_at >= 0) {
		fprintf(stderr, "analyze: %s is not /rscfl's JSON (at byte %ld)\n", path,
			failed_at);
		return -1;
	}
	return 0;
}
