/*
 * httpd: serves files under a docroot over HTTP/1.1 with keep-alive, many
 * clients at once from one process and one poll() loop.
 *
 * Every socket is non-blocking; a connection is a slot in a fixed pool
 * (lowest free slot first, so the pages a load touches are the same from run
 * to run) that alternates between READING a request and WRITING its
 * response.  A response goes out from one buffer: the header, then as much of
 * the file as fits, refilled from the file as the socket drains, so a small
 * file leaves in one send; a file larger than the buffer goes from the file
 * to the socket by sendfile once the header is out, without passing
 * through the server's memory.  Pipelined requests are served in order from what
 * is already buffered.  Nothing blocks the loop: a slow, silent or half-open
 * client only holds its own slot until its deadline (header: 408 and close;
 * idle keep-alive: close; stalled write: close), and when the pool is full a
 * new client gets 503.  Deadlines count from the clock read once per loop
 * turn (turn_ms), not per step: a request reads the clock twice, for its
 * latency, which keeps the system calls it costs (and their accounting) few.  Writes use MSG_NOSIGNAL: a client that resets costs
 * its connection, never the server.  One access-log line per request
 * (peer, method, path, status, body bytes, microseconds from the request's
 * first byte to its last byte sent) goes to standard output, or appended to
 * the file -l names (rotated to FILE.1 past 256 KiB), buffered per loop
 * turn; -q turns it off.
 *
 * With -a (off by default, so that a server nobody asked about adds nothing
 * to the kernel) every request is an accounted activity (accounting.c): the
 * log line gains the kernel's breakdown of it, and GET /rscfl returns the
 * last requests' figures as JSON (report.c).
 *
 * -b serves in the background as a daemon: a child in a session of its own
 * (setsid), so that nothing typed at the console (^C) reaches it.  With -u
 * user the server gives up root once its port and log are open: it takes
 * that user's ids from /etc/passwd (and with them loses every privilege), as
 * nginx's workers do; a flaw in it then reaches no more than that user may.
 *
 *     httpd [-p port] [-r docroot] [-c connections] [-q] [-b] [-a] [-l logfile] [-u user]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "http.h"

#define MAX_CONNECTIONS   128
#define OUT_BUFFER_BYTES  16384
#define HEADER_TIMEOUT_MS 10000 /* from a request's first byte to its blank line */
#define IDLE_TIMEOUT_MS   15000 /* keep-alive connection with no request */
#define WRITE_TIMEOUT_MS  30000 /* no progress sending a response */
#define LOG_BUFFER_BYTES  8192
#define LOG_ROTATE_BYTES  (256 * 1024) /* -l file: rotated to FILE.1 past this */

enum connection_state { SLOT_FREE, READING, WRITING };

struct connection {
	enum connection_state state;
	int fd;
	char peer[INET_ADDRSTRLEN];
	char in[HTTP_HEADER_MAX];
	size_t in_length;
	size_t discard; /* request body bytes still to drop */
	struct http_request request;
	struct http_response response;
	char out[OUT_BUFFER_BYTES];
	size_t out_length, out_sent;
	size_t header_left; /* of the response header, not yet sent */
	off_t body_left;    /* of the file, not yet read into out (or sent by sendfile) */
	int by_sendfile;    /* the body goes from the file by sendfile, not through out */
	long long body_sent;
	int keep_alive;
	uint64_t deadline_ms;
	uint64_t started_us; /* the current request's first byte */
	int in_request;      /* a request's first byte is in, its response not all out */
	int token;           /* the current request's accounting token, 0: none */
};

struct options {
	int port;
	const char *docroot;
	int max_connections;
	int connections_asked; /* -c given */
	int quiet;
	int background;
	int accounting;
	const char *log_path;
	const char *user; /* -u: run as this user of /etc/passwd */
};

static struct connection pool[MAX_CONNECTIONS];
static struct options options = {.port = 80, .docroot = "/www", .max_connections = 64};
static int log_fd = 1;
static uint64_t turn_ms; /* the clock when poll() last returned */
static char log_buffer[LOG_BUFFER_BYTES];
static size_t log_length;
static uint64_t log_file_bytes; /* in the -l file now */

static uint64_t now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

static uint64_t now_ms(void)
{
	return now_us() / 1000u;
}

/* ---- access log ------------------------------------------------------- */

/* -l FILE: past LOG_ROTATE_BYTES the file moves to FILE.1 (the one before
 * is dropped) and a new FILE starts, so the log never holds more than twice
 * that. */
static void rotate_log(void)
{
	char old_path[256];
	snprintf(old_path, sizeof old_path, "%s.1", options.log_path);
	/* A FILE.1 that is not ours in a sticky directory (/tmp) cannot be
	 * replaced: then this log (the file opened and checked at start)
	 * starts afresh in place, and the bound still holds. */
	if (rename(options.log_path, old_path) < 0) {
		if (ftruncate(log_fd, 0) == 0)
			log_file_bytes = 0;
		return;
	}
	int fresh = open(options.log_path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND, 0644);
	if (fresh < 0)
		return; /* keep writing to the old one */
	close(log_fd);
	log_fd = fresh;
	log_file_bytes = 0;
}

static void log_flush(void)
{
	size_t done = 0;
	while (done < log_length) {
		ssize_t n = write(log_fd, log_buffer + done, log_length - done);
		if (n <= 0 && errno != EINTR)
			break;
		if (n > 0)
			done += (size_t)n;
	}
	log_length = 0;
	log_file_bytes += done;
	if (options.log_path && log_file_bytes >= LOG_ROTATE_BYTES)
		rotate_log();
}

static void log_line(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void log_line(const char *format, ...)
{
	if (log_length > sizeof(log_buffer) - 512)
		log_flush();
	va_list ap;
	va_start(ap, format);
	int n = vsnprintf(log_buffer + log_length, sizeof(log_buffer) - log_length, format, ap);
	va_end(ap);
	if (n > 0)
		log_length += (size_t)n < sizeof(log_buffer) - log_length
				  ? (size_t)n
				  : sizeof(log_buffer) - log_length - 1;
}

/* The request is over (answered, aborted or timed out): its accounting ends
 * and it is logged. */
static void end_request(struct connection *c, const char *note)
{
	struct http_served local, *done = http_acct_entry(&local);
	memcpy(done->peer, c->peer, sizeof done->peer);
	memcpy(done->method, c->request.method_name, sizeof done->method);
	memcpy(done->path, c->request.path, sizeof done->path);
	done->status = c->response.status;
	done->bytes = c->body_sent;
	done->latency_us = now_us() - c->started_us;
	done->note = note;
	done->accounted = 0;
	http_metrics_note(done->status, done->latency_us);
	const struct http_served *s = http_acct_end(c->token, done);
	http_metrics_note_kernel(s);
	c->token = 0;
	c->in_request = 0;
	if (options.quiet)
		return;
	char line[HTTP_PATH_MAX + 256];
	snprintf(line, sizeof line, "httpd: %s %s %s %d %lld %lluus", s->peer, s->method, s->path,
		 s->status, s->bytes, (unsigned long long)s->latency_us);
	http_report_line(s, line, sizeof line);
	log_line("%s%s\n", line, note);
}

/* ---- connections ------------------------------------------------------ */

/* Lets go of the response's body source (file or memory). */
static void response_release(struct http_response *r)
{
	if (r->file_fd >= 0)
		close(r->file_fd);
	r->file_fd = -1;
	free(r->memory);
	r->memory = NULL;
}

static void connection_close(struct connection *c, enum http_close_reason reason, int err)
{
	http_metrics_note_close(reason, err);
	response_release(&c->response);
	http_acct_abandon(c->token); /* a request cut short by the peer: not logged */
	c->token = 0;
	c->in_request = 0;
	close(c->fd);
	c->state = SLOT_FREE;
}

static struct connection *connection_open(int fd, const struct sockaddr_in *peer)
{
	for (int i = 0; i < options.max_connections; i++) {
		struct connection *c = &pool[i];
		if (c->state != SLOT_FREE)
			continue;
		c->state = READING;
		c->fd = fd;
		inet_ntop(AF_INET, &peer->sin_addr, c->peer, sizeof(c->peer));
		c->in_length = c->discard = 0;
		c->response.file_fd = -1;
		c->response.memory = NULL;
		c->token = 0;
		c->in_request = 0;
		c->deadline_ms = turn_ms + IDLE_TIMEOUT_MS;
		return c;
	}
	return NULL;
}

/* Drops n bytes from the front of the input buffer. */
static void consume_input(struct connection *c, size_t n)
{
	memmove(c->in, c->in + n, c->in_length - n);
	c->in_length -= n;
}

/* Whether a response's file body goes by sendfile: when it does not fit in
 * the output buffer beside the header (a small file still leaves with its
 * header in one send).  Never in httpd-slow, whose point is its reads. */
static int sends_file_directly(const struct http_response *r, size_t header_length, size_t room)
{
#ifdef HTTPD_BROKEN_REFILL
	(void)r, (void)header_length, (void)room;
	return 0;
#else
	return r->file_fd >= 0 && r->body_length > (off_t)(room - header_length);
#endif
}

/* Puts the header (and an error page's body) into the output buffer; the
 * file's first part follows in send_some. */
static void start_response(struct connection *c)
{
	struct http_response *r = &c->response;
	memcpy(c->out, r->header, r->header_length);
	c->out_length = r->header_length;
	c->out_sent = 0;
	c->body_sent = 0;
	/* An error page's body sits in the header buffer. */
	int separate_body = r->file_fd >= 0 || r->memory;
	c->header_left = r->header_length - (separate_body ? 0 : (size_t)r->body_length);
	c->body_left = separate_body ? r->body_length : 0;
	c->by_sendfile = sends_file_directly(r, c->out_length, sizeof c->out);
	c->state = WRITING;
	c->deadline_ms = turn_ms + WRITE_TIMEOUT_MS;
}

#ifdef HTTPD_BROKEN_REFILL
#define BROKEN_PIECE_BYTES 16
/* The deliberately broken build, /bin/httpd-slow (userland.mk): the file is
 * read BROKEN_PIECE_BYTES per system call, the kind of slip that costs a
 * server dearly and that a profile of user stacks at system calls shows at
 * once (docs/USCOPE.md's case study). */
static __attribute__((noinline)) ssize_t read_piecewise(int fd, char *to, size_t want)
{
	size_t done = 0;
	while (done < want) {
		size_t piece = want - done < BROKEN_PIECE_BYTES ? want - done : BROKEN_PIECE_BYTES;
		ssize_t n = read(fd, to + done, piece);
		if (n <= 0)
			return done ? (ssize_t)done : n;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static ssize_t read_body(int fd, char *to, size_t want)
{
	return read_piecewise(fd, to, want);
}
#else
static ssize_t read_body(int fd, char *to, size_t want)
{
	return read(fd, to, want);
}
#endif

/* Refills the output buffer from the file.  Returns 1 when there is data, 0
 * when the body is complete, -1 when the file cannot be read. */
static int refill(struct connection *c)
{
	if (c->body_left == 0)
		return 0;
	size_t want = sizeof(c->out) - c->out_length;
	if ((off_t)want > c->body_left)
		want = (size_t)c->body_left;
	ssize_t n = (ssize_t)want;
	if (c->response.memory)
		memcpy(c->out + c->out_length,
		       c->response.memory + (c->response.body_length - c->body_left), want);
	else
		n = read_body(c->response.file_fd, c->out + c->out_length, want);
	if (n <= 0)
		return -1;
	c->out_length += (size_t)n;
	c->body_left -= n;
	return 1;
}

enum send_result { SEND_DONE, SEND_PENDING, SEND_FAILED, SEND_BODY_FAILED };

/* Sends the rest of the file body by sendfile, as much as goes without
 * blocking. */
static enum send_result send_file_directly(struct connection *c)
{
	while (c->body_left > 0) {
		ssize_t n = sendfile(c->fd, c->response.file_fd, NULL, (size_t)c->body_left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? SEND_PENDING : SEND_FAILED;
		if (n == 0)
			return SEND_BODY_FAILED; /* the file is shorter than it was */
		c->body_left -= n;
		c->body_sent += n;
		c->deadline_ms = turn_ms + WRITE_TIMEOUT_MS;
	}
	return SEND_DONE;
}

/* Sends what it can without blocking. */
static enum send_result send_some(struct connection *c)
{
	for (;;) {
		if (c->out_sent == c->out_length) {
			c->out_length = c->out_sent = 0;
			if (c->by_sendfile)
				return send_file_directly(c);
			int more = refill(c);
			if (more <= 0)
				return more == 0 ? SEND_DONE : SEND_BODY_FAILED;
		} else if (c->out_length < sizeof(c->out) && c->body_left > 0 && !c->by_sendfile &&
			   refill(c) < 0) {
			return SEND_BODY_FAILED;
		}
		ssize_t n =
		    send(c->fd, c->out + c->out_sent, c->out_length - c->out_sent, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? SEND_PENDING : SEND_FAILED;
		size_t header_part = c->header_left < (size_t)n ? c->header_left : (size_t)n;
		c->header_left -= header_part;
		c->body_sent += (long long)((size_t)n - header_part);
		c->out_sent += (size_t)n;
		c->deadline_ms = turn_ms + WRITE_TIMEOUT_MS;
	}
}

/* The response is out: log it, then close or wait for the next request.
 * Returns 0 when the connection stays open. */
static int finish_response(struct connection *c)
{
	end_request(c, "");
	response_release(&c->response);
	if (!c->keep_alive) {
		shutdown(c->fd, SHUT_WR);
		connection_close(c, HTTP_CLOSE_DONE, 0);
		return -1;
	}
	c->state = READING;
	c->deadline_ms = turn_ms + IDLE_TIMEOUT_MS;
	return 0;
}

/* Sends, and finishes the response when all is out.  Returns 0 while the
 * connection lives, -1 once it is closed. */
static int pump_response(struct connection *c)
{
	enum send_result result = send_some(c);
	int err = errno;
	switch (result) {
	case SEND_PENDING: return 0;
	case SEND_DONE: return finish_response(c);
	default:
		end_request(c, " (aborted)");
		if (result == SEND_BODY_FAILED)
			connection_close(c, HTTP_CLOSE_BODY_ERROR, 0);
		else
			connection_close(c, HTTP_CLOSE_SEND_ERROR, err);
		return -1;
	}
}

/* Drops request body bytes that are buffered.  Returns 1 when some body is
 * still to come. */
static int discard_body(struct connection *c)
{
	size_t n = c->discard < c->in_length ? c->discard : c->in_length;
	consume_input(c, n);
	c->discard -= n;
	return c->discard > 0;
}

/* Answers a request that cannot be parsed, then closes. */
static int reject(struct connection *c, int status)
{
	http_respond_error(status, &c->response);
	c->keep_alive = 0;
	start_response(c);
	return pump_response(c);
}

/* Decides the response: /rscfl is the accounting report, /metrics the
 * Prometheus metrics, the rest files. */
static void respond(struct connection *c)
{
	const struct http_request *r = &c->request;
	char *json, *text;
	size_t length;
	if (strcmp(r->path, "/rscfl") == 0 && r->method != HTTP_OTHER &&
	    http_report_json(&json, &length) == 0)
		http_respond_memory(r, c->keep_alive, "application/json", json, length,
				    &c->response);
	else if (strcmp(r->path, "/metrics") == 0 && r->method != HTTP_OTHER &&
		 http_metrics_text(&text, &length) == 0)
		http_respond_memory(r, c->keep_alive, "text/plain; version=0.0.4", text, length,
				    &c->response);
	else
		http_respond(options.docroot, r, c->keep_alive, &c->response);
}

/* Serves every complete request in the input buffer, in order.  Returns 0
 * while the connection lives, -1 once it is closed. */
static int serve_input(struct connection *c)
{
	while (c->state == READING) {
		if (c->discard && discard_body(c))
			return 0;
		if (c->in_length == 0)
			return 0;
		if (!c->in_request) { /* pipelined: it was read with the one before */
			c->in_request = 1;
			c->started_us = now_us();
			c->token = http_acct_begin();
		}
		int header = http_parse_request(c->in, c->in_length, &c->request);
		if (header == 0)
			return 0;
		if (header < 0)
			return reject(c, -header);
		consume_input(c, (size_t)header);
		c->discard = c->request.content_length;
		c->keep_alive = c->request.keep_alive;
		respond(c);
		start_response(c);
		if (pump_response(c) < 0)
			return -1;
	}
	return 0;
}

/* The recv that may read a request's first byte is already the request's. */
static void on_readable(struct connection *c)
{
	size_t room = sizeof(c->in) - c->in_length;
	if (room == 0)
		return; /* cannot happen: a full buffer is a 413 already */
	int fresh = !c->in_request && c->in_length == 0 && c->discard == 0;
	if (fresh)
		c->token = http_acct_begin();
	else
		http_acct_resume(c->token);
	ssize_t n = recv(c->fd, c->in + c->in_length, room, 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		if (fresh) {
			http_acct_abandon(c->token);
			c->token = 0;
		}
		return;
	}
	if (n <= 0) { /* end of file or reset: nothing to answer */
		connection_close(c, n == 0 ? HTTP_CLOSE_PEER : HTTP_CLOSE_RECV_ERROR,
				 n ? errno : 0);
		return;
	}
	if (fresh) {
		c->in_request = 1;
		c->started_us = now_us();
		c->deadline_ms = turn_ms + HEADER_TIMEOUT_MS;
	}
	c->in_length += (size_t)n;
	serve_input(c);
}

static void on_writable(struct connection *c)
{
	http_acct_resume(c->token);
	if (pump_response(c) == 0)
		serve_input(c);
}

static void on_deadline(struct connection *c)
{
	http_acct_resume(c->token);
	if (c->state == READING && c->in_length > 0) {
		reject(c, 408);
		if (c->state != SLOT_FREE) { /* the 408 did not fit in one send: give up */
			connection_close(c, HTTP_CLOSE_DEADLINE, 0);
		}
		return;
	}
	if (c->state == WRITING)
		end_request(c, " (timed out)");
	connection_close(c, HTTP_CLOSE_DEADLINE, 0);
}

/* ---- the listener ----------------------------------------------------- */

static int set_nonblocking(int fd)
{
	int flags = fcntl(fd, F_GETFL);
	return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

static int open_listener(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) {
		fprintf(stderr, "httpd: no network (socket: %s), not started\n", strerror(errno));
		return -1;
	}
	int on = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	address.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(fd, (struct sockaddr *)&address, sizeof(address)) < 0 || listen(fd, 128) < 0 ||
	    set_nonblocking(fd) < 0) {
		fprintf(stderr, "httpd: port %d: %s\n", port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* A client beyond the pool gets 503 at once (best effort) and is closed. */
static void turn_away(int fd)
{
	struct http_response r;
	http_respond_error(503, &r);
	send(fd, r.header, r.header_length, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
}

static void accept_all(int listener)
{
	for (;;) {
		struct sockaddr_in peer;
		socklen_t length = sizeof(peer);
		int fd = accept(listener, (struct sockaddr *)&peer, &length);
		if (fd < 0)
			return; /* EAGAIN: all taken; anything else: try at the next turn */
		int on = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
		if (set_nonblocking(fd) < 0 || !connection_open(fd, &peer))
			turn_away(fd);
	}
}

/* ---- the loop --------------------------------------------------------- */

/* Milliseconds until the nearest deadline, at most one second. */
static int poll_timeout(uint64_t now)
{
	uint64_t nearest = now + 1000;
	for (int i = 0; i < options.max_connections; i++)
		if (pool[i].state != SLOT_FREE && pool[i].deadline_ms < nearest)
			nearest = pool[i].deadline_ms;
	return nearest > now ? (int)(nearest - now) : 0;
}

static void serve_forever(int listener)
{
	static struct pollfd fds[MAX_CONNECTIONS + 1];
	static int slot_of[MAX_CONNECTIONS + 1];
	turn_ms = now_ms();
	for (;;) {
		int count = 0;
		fds[count++] = (struct pollfd){.fd = listener, .events = POLLIN};
		for (int i = 0; i < options.max_connections; i++) {
			if (pool[i].state == SLOT_FREE)
				continue;
			slot_of[count] = i;
			fds[count++] =
			    (struct pollfd){.fd = pool[i].fd,
					    .events = pool[i].state == READING ? POLLIN : POLLOUT};
		}
		log_flush();
		http_acct_pause(); /* poll() and accept() are no request's */
		http_acct_idle(turn_ms);
		int ready = poll(fds, (nfds_t)count, poll_timeout(turn_ms));
		turn_ms = now_ms();
		if (ready < 0 && errno != EINTR) {
			fprintf(stderr, "httpd: poll: %s\n", strerror(errno));
			sleep(1);
			continue;
		}
		for (int i = 1; ready > 0 && i < count; i++) {
			struct connection *c = &pool[slot_of[i]];
			if (!fds[i].revents || c->state == SLOT_FREE || c->fd != fds[i].fd)
				continue;
			if (c->state == READING)
				on_readable(c);
			else
				on_writable(c);
		}
		http_acct_pause();
		if (ready > 0 && fds[0].revents)
			accept_all(listener);
		for (int i = 0; i < options.max_connections; i++)
			if (pool[i].state != SLOT_FREE && pool[i].deadline_ms <= turn_ms)
				on_deadline(&pool[i]);
	}
}

static int parse_options(int argc, char **argv)
{
	int c;
	while ((c = getopt(argc, argv, "p:r:c:qbal:u:")) != -1) {
		switch (c) {
		case 'p': options.port = atoi(optarg); break;
		case 'r': options.docroot = optarg; break;
		case 'c':
			options.max_connections = atoi(optarg);
			options.connections_asked = 1;
			break;
		case 'q': options.quiet = 1; break;
		case 'b': options.background = 1; break;
		case 'a': options.accounting = 1; break;
		case 'l': options.log_path = optarg; break;
		case 'u': options.user = optarg; break;
		default: return -1;
		}
	}
	if (options.port <= 0 || options.port > 65535 || options.max_connections <= 0 ||
	    options.max_connections > MAX_CONNECTIONS || optind != argc)
		return -1;
	return 0;
}

/* -a: accounting on, in the process that serves (a forked child has no
 * results page of its parent's).  Without it in the kernel, serves anyway. */
static void start_accounting(void)
{
	if (!options.accounting)
		return;
	int error = http_acct_setup();
	if (error < 0)
		fprintf(stderr, "httpd: no accounting (%d), requests are not accounted\n", error);
	else
		printf("httpd: accounting every request on port %d (GET /rscfl)\n", options.port);
	fflush(stdout);
}

int lstat(const char *path, struct stat *st); /* the OS's libc has it; newlib declares none */

/* The log that is there already: a regular file of one name, opened as the
 * very file lstat saw (not a link swapped in between).  Returns the
 * descriptor, or -1 with errno (ELOOP: a link, EPERM: not such a file). */
static int open_existing_log(const struct stat *seen)
{
	if (!S_ISREG(seen->st_mode) || seen->st_nlink != 1) {
		errno = S_ISLNK(seen->st_mode) ? ELOOP : EPERM;
		return -1;
	}
	int fd = open(options.log_path, O_WRONLY | O_APPEND);
	struct stat opened;
	if (fd >= 0 && (fstat(fd, &opened) < 0 || opened.st_ino != seen->st_ino ||
			opened.st_dev != seen->st_dev)) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/* -l: the access log goes to the end of that file.  httpd is root here and
 * gives the log to -u's user, so it never goes through a symbolic or hard
 * link someone planted in a shared directory (/tmp): that would hand the
 * link's target over.  A new log is made exclusively.  Returns 0 or -1. */
static int open_log(void)
{
	if (!options.log_path)
		return 0;
	struct stat st;
	if (lstat(options.log_path, &st) == 0)
		log_fd = open_existing_log(&st);
	else
		log_fd = open(options.log_path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND, 0644);
	if (log_fd >= 0) {
		log_file_bytes = fstat(log_fd, &st) == 0 ? (uint64_t)st.st_size : 0;
		return 0;
	}
	fprintf(stderr, "httpd: %s: %s\n", options.log_path,
		errno == ELOOP ? "a symbolic link: refused" : strerror(errno));
	return -1;
}

/* Finds name in /etc/passwd (name:password:uid:gid:...).  Returns 0 with
 * *uid and *gid, or -1. */
static int lookup_user(const char *name, long *uid, long *gid)
{
	FILE *passwd = fopen("/etc/passwd", "r");
	char line[256];
	size_t length = strlen(name);
	int found = -1;
	while (passwd && found < 0 && fgets(line, sizeof line, passwd)) {
		if (strncmp(line, name, length) != 0 || line[length] != ':')
			continue;
		char *password_end = strchr(line + length + 1, ':');
		char *end;
		if (!password_end)
			continue;
		*uid = strtol(password_end + 1, &end, 10);
		if (*end == ':' && end > password_end + 1) {
			char *gid_start = end + 1;
			*gid = strtol(gid_start, &end, 10);
			if (*end == ':' && end > gid_start)
				found = 0;
		}
	}
	if (passwd)
		fclose(passwd);
	return found;
}

/* -u: the group first, while still root.  Returns 0 or -1. */
static int become_user(void)
{
	long uid, gid;
	if (!options.user)
		return 0;
	if (lookup_user(options.user, &uid, &gid) < 0) {
		fprintf(stderr, "httpd: no user '%s' in /etc/passwd\n", options.user);
		return -1;
	}
	/* the log becomes the user's, so that it can rotate it (nginx's master
	 * hands its workers' logs over the same way) */
	if (options.log_path && fchown(log_fd, (uid_t)uid, (gid_t)gid) < 0) {
		fprintf(stderr, "httpd: %s: %s\n", options.log_path, strerror(errno));
		return -1;
	}
	if (setgid((gid_t)gid) < 0 || setuid((uid_t)uid) < 0 || getuid() != (uid_t)uid) {
		fprintf(stderr, "httpd: cannot become '%s': %s\n", options.user, strerror(errno));
		return -1;
	}
	return 0;
}

/* Descriptors this process can still open: taken one by one, then given
 * back (the OS's per-process limit is not asked of it otherwise). */
static int descriptors_left(int open_fd)
{
	int taken[MAX_CONNECTIONS * 2 + 8], count = 0;
	while (count < (int)(sizeof taken / sizeof taken[0]) && (taken[count] = dup(open_fd)) >= 0)
		count++;
	for (int i = 0; i < count; i++)
		close(taken[i]);
	return count;
}

/* Each connection holds its socket and, while it sends, a file: a pool
 * larger than half the descriptors left would let idle connections take
 * the last ones and every file open fail (500 for all).  So the pool stops
 * there, and the next client gets 503. */
static void fit_pool_to_descriptors(int listener)
{
	int fit = descriptors_left(listener) / 2;
	if (fit >= 1 && options.max_connections > fit) {
		if (options.connections_asked)
			fprintf(stderr, "httpd: -c %d: %d connections fit the descriptors\n",
				options.max_connections, fit);
		options.max_connections = fit;
	}
}

/* sendfile has no MSG_NOSIGNAL: a reset client must cost its connection
 * only, so SIGPIPE is ignored in the kernel (sigaction; newlib's signal()
 * only emulates handlers in user space and leaves the kernel's action). */
static void ignore_sigpipe(void)
{
	struct sigaction ignore = {.sa_handler = SIG_IGN};
	if (sigaction(SIGPIPE, &ignore, NULL) < 0)
		perror("httpd: SIGPIPE stays fatal");
}

int main(int argc, char **argv)
{
	if (parse_options(argc, argv) < 0) {
		fprintf(
		    stderr,
		    "usage: httpd [-p port] [-r docroot] [-c connections (1-%d)] [-q] [-b] [-a] "
		    "[-l logfile] [-u user]\n",
		    MAX_CONNECTIONS);
		return 2;
	}
	if (open_log() < 0)
		return 1;
	ignore_sigpipe();
	int listener = open_listener(options.port);
	if (listener < 0 || become_user() < 0)
		return 1;
	fit_pool_to_descriptors(listener);
	if (options.background) {
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "httpd: fork: %s\n", strerror(errno));
			return 1;
		}
		if (pid > 0) {
			printf("httpd: serving %s on port %d (pid %d)\n", options.docroot,
			       options.port, (int)pid);
			return 0;
		}
		setsid(); /* a daemon: out of the console's session, ^C never reaches it */
	} else {
		printf("httpd: serving %s on port %d\n", options.docroot, options.port);
		fflush(stdout);
	}
	start_accounting();
	serve_forever(listener);
}
