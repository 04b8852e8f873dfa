/*
 * httpd's per-request accounting over librscfl.  Tokens are few (the kernel
 * gives ACCT_MAX_TOKENS per process) and connections many, so a token belongs
 * to a request in flight, not to a connection: taken from a free list when the
 * request's first byte is read, given back when its response is out.  The
 * event loop serves requests in stages, so each stage makes its request's
 * token current again, and between stages the server token is current: what
 * the loop does for no request in particular (poll, accept, reading the end
 * of a closed connection) is the server's.  The kernel weaves its advice only
 * while some token is current or pending, so the server token is stopped
 * after HTTP_ACCT_LINGER_MS without requests: an idle httpd costs nothing,
 * and a busy one does not weave and unweave at every request.
 *
 * `current` mirrors which token the kernel has current (0: none), so that a
 * switch the kernel would make anyway costs no system call.  Finished
 * requests go to a ring of the last HTTP_ACCT_RING for /rscfl, with the
 * status and body bytes stored as application metrics beside the kernel's.
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

/* Makes the server token current, starting it when it is stopped. */
static void server_current(void)
{
	if (current == server_token)
		return;
	if (!server_started) {
		if (rscfl_acct(handle, server_token, ACCT_START) == 0)
			server_started = 1;
	} else if (rscfl_switch_token(handle, server_token) < 0) {
		return;
	}
	if (server_started)
		current = server_token;
}

int http_acct_begin(void)
{
	if (!http_acct_enabled() || free_count == 0)
		return 0;
	if (!server_started)
		server_current(); /* started, so that the end of this request returns to it */
	int token = free_tokens[--free_count];
	if (rscfl_acct(handle, token, ACCT_START | ACCT_TK_RESET) < 0) {
		free_tokens[free_count++] = token;
		return 0;
	}
	current = token;
	in_flight++;
	last_begin_ms = 0; /* http_acct_idle takes the time: no clock read here */
	return token;
}

void http_acct_resume(int token)
{
	if (!token)
		http_acct_pause(); /* work for a connection with no request is the server's */
	else if (current != token && rscfl_switch_token(handle, token) == 0)
		current = token;
}

void http_acct_pause(void)
{
	if (http_acct_enabled() && server_started)
		server_current();
}

/* Stops token with the server token current: stopping the current token
 * would leave none current, and the kernel would unweave its advice only to
 * weave it again at the next request.  Then puts the token back. */
static void finish(int token)
{
	server_current();
	rscfl_acct(handle, token, ACCT_STOP);
	if (current == token)
		current = 0;
	free_tokens[free_count++] = token;
	in_flight--;
}

void http_acct_abandon(int token)
{
	if (token)
		finish(token);
}

const struct http_served *http_acct_end(int token, const struct http_served *done)
{
	if (!http_acct_enabled())
		return done; /* nothing kept: accounting off costs no copy */
	struct http_served *kept = &ring[ring_next];
	memcpy(kept, done, offsetof(struct http_served, acct));
	kept->id = ++served_count;
	kept->accounted = 0;
	if (token) {
		finish(token);
		rscfl_store_metric(handle, token, "status", done->status);
		rscfl_store_metric(handle, token, "body_bytes", done->bytes);
		kept->accounted = rscfl_read_acct(handle, token, &kept->acct) == 0;
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
	if (rscfl_acct(handle, server_token, ACCT_STOP) == 0) {
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

int http_acct_server(struct rscfl_acct *acct)
{
	if (!http_acct_enabled())
		return -E_NOSYS;
	return rscfl_read_acct(handle, server_token, acct);
}
