/*
 * httpd's per-request accounting over librscfl.  Tokens are few (the kernel
 * gives ACCT_MAX_TOKENS per process) and connections many, so a token belongs
 * to a request in flight, not to a connection: taken from a free list when the
 * request's first byte is read, given back when its response is out.
 *
 * At most one request token is started at a time, the current one: the event
 * loop serves requests in stages, and a stage that leaves its request
 * unfinished (a partial header, a response the socket could not take at
 * once) stops its token, which the next stage starts again without a reset,
 * so the results add up over the stages.  What the loop does for no request
 * (poll, accept, reading the end of a closed connection) happens with no
 * token current, and the kernel charges it to the process's unattributed
 * result.  The kernel links its accounting aspect while some token is
 * started, and linking costs millions of instructions; so the server token
 * is started before the first request and stays started (suspended) while
 * httpd is busy, and a request costs two calls, START with TK_RESET and STOP.
 * After HTTP_ACCT_LINGER_MS without requests the server token is stopped: an
 * idle httpd costs nothing.
 *
 * `current` mirrors which token the kernel has current (0: none), so that
 * a call the kernel would not need is not made.  Finished requests go to a
 * ring of the last HTTP_ACCT_RING for /rscfl, with the status and body bytes
 * stored as application metrics beside the kernel's.
 */
#include <stddef.h>
#include <string.h>

#include "http.h"

#define E_NOSYS 38

static rscfl_handle handle;
static int server_token; /* > 0 once set up */
static int server_started;
static int current; /* the token the kernel has current, 0: none */
static int free_tokens[ACCT_MAX_TOKENS];
static unsigned free_count;
static unsigned in_flight;
static uint64_t last_begin_ms;

static struct http_served ring[HTTP_ACCT_RING];
static unsigned ring_next, ring_count;
static uint64_t served_count;

int http_acct_setup(void)
{
	handle = rscfl_init();
	if (!handle)
		return -E_NOSYS;
	int token = rscfl_get_token(handle);
	if (token < 0)
		return token;
	server_token = token;
	while (free_count < ACCT_MAX_TOKENS && (token = rscfl_get_token(handle)) > 0)
		free_tokens[free_count++] = token;
	return 0;
}

int http_acct_enabled(void)
{
	return server_token > 0;
}

#define ACCT_UNWOVEN (-67) /* -ENOLINK: the accounting aspect was unwoven under us */

/* rscfl_acct; when the kernel says its accounting aspect was unwoven (it
 * stopped every token of ours), our idea of what is started is reset and the
 * call made once more (which weaves the aspect again). */
static int acct(int token, unsigned flags)
{
	int result = rscfl_acct(handle, token, flags);
	if (result != ACCT_UNWOVEN)
		return result;
	server_started = 0;
	current = 0;
	return (flags & ACCT_STOP) ? -1 : rscfl_acct(handle, token, flags);
}

/* Starts the server token (it becomes current until a request starts). */
static void server_start(void)
{
	if (acct(server_token, ACCT_START) == 0) {
		server_started = 1;
		current = server_token;
	}
}

/* Starts token (flags: ACCT_START, with TK_RESET for a new request); the
 * started request token that was current, if any, is stopped first.
 * Returns 0, or -1 when the kernel refused (token left stopped). */
static int request_start(int token, unsigned flags)
{
	http_acct_pause();
	if (!server_started)
		server_start();
	if (acct(token, flags) < 0)
		return -1;
	current = token;
	return 0;
}

int http_acct_begin(void)
{
	if (!http_acct_enabled() || free_count == 0)
		return 0;
	int token = free_tokens[--free_count];
	if (request_start(token, ACCT_START | ACCT_TK_RESET) < 0) {
		free_tokens[free_count++] = token;
		return 0;
	}
	in_flight++;
	last_begin_ms = 0; /* http_acct_idle takes the time: no clock read here */
	return token;
}

void http_acct_resume(int token)
{
	if (!token)
		http_acct_pause(); /* work for a connection with no request is no request's */
	else if (current != token)
		request_start(token, ACCT_START);
}

void http_acct_pause(void)
{
	if (current && current != server_token && acct(current, ACCT_STOP) == 0)
		current = 0;
}

/* Stops token, if it is still started, and puts it back. */
static void finish(int token)
{
	if (current == token)
		http_acct_pause();
	free_tokens[free_count++] = token;
	in_flight--;
}

void http_acct_abandon(int token)
{
	if (token)
		finish(token);
}

struct http_served *http_acct_entry(struct http_served *local)
{
	return http_acct_enabled() ? &ring[ring_next] : local;
}

/* The request's status and body bytes, stored beside its results by
 * position (the same two names every time: none compared). */
static void store_metrics(int token, const struct http_served *done)
{
	struct rscfl_metric metrics[] = {{"status", done->status}, {"body_bytes", done->bytes}};
	rscfl_store_metrics(handle, token, metrics, sizeof metrics / sizeof metrics[0]);
}

const struct http_served *http_acct_end(int token, const struct http_served *done)
{
	if (!http_acct_enabled())
		return done; /* nothing kept: accounting off costs no copy */
	struct http_served *kept = &ring[ring_next];
	if (done != kept)
		memcpy(kept, done, offsetof(struct http_served, acct));
	kept->id = ++served_count;
	kept->accounted = 0;
	if (token) {
		finish(token);
		store_metrics(token, kept);
		kept->accounted = rscfl_read_acct_used(handle, token, &kept->acct) == 0;
	}
	ring_next = (ring_next + 1) % HTTP_ACCT_RING;
	if (ring_count < HTTP_ACCT_RING)
		ring_count++;
	return kept;
}

void http_acct_idle(uint64_t now_ms)
{
	if (!http_acct_enabled() || !server_started)
		return;
	if (in_flight || last_begin_ms == 0) {
		last_begin_ms = now_ms; /* a request was in flight since the last look */
		return;
	}
	if (now_ms - last_begin_ms < HTTP_ACCT_LINGER_MS)
		return;
	if (acct(server_token, ACCT_STOP) == 0) {
		server_started = 0;
		if (current == server_token)
			current = 0;
	}
}

const struct http_served *http_acct_get(unsigned i)
{
	if (i >= ring_count)
		return NULL;
	return &ring[(ring_next + HTTP_ACCT_RING - ring_count + i) % HTTP_ACCT_RING];
}

unsigned http_acct_count(void)
{
	return ring_count;
}

unsigned http_acct_page_flags(void)
{
	return http_acct_enabled() ? handle->page->flags : 0;
}

int http_acct_unattributed(struct rscfl_acct *acct)
{
	if (!http_acct_enabled())
		return -E_NOSYS;
	return rscfl_read_unattributed(handle, acct);
}
