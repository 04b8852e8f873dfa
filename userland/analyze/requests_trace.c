/*
 * Requests out of a trace (requests.h).  A request is a connection: it
 * starts at the first net.recv or net.send on a socket (the join point's
 * first argument) and ends when net.close of that socket returns, or when
 * the system call close of the descriptor the socket was received or sent
 * through (the first argument of the system call around that net.recv or
 * net.send) returns in the same process, or, sooner, when the server calls
 * net.shutdown on it: it has answered, and what follows (httpd reads on
 * until the client closes its side, then closes) is the connection's end,
 * not the request's.  The socket's later calls belong to no request.  A thread
 * works for the connection it last received from or sent to, as an event
 * loop does, so each call that returns on it is charged to that request:
 * its exclusive time (its duration less the calls nested in it) goes to its
 * subsystem, the module before the join point's dot, or "syscall" for the
 * system call's own part.  The exclusive times of a request thus add up to
 * the time its thread spent in system calls and recorded join points while
 * serving it, and nothing is counted twice.  Bytes are what net.send
 * returned.  Threads are followed as in latency.c (sched_switch).
 */
#include "requests.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syscall_names.h"
#include "uapi/trace.h"

#define OPEN_MAX    16
#define THREADS_MAX 256

struct open_call {
	char name[32];
	unsigned subsystem;
	uint64_t start, nested; /* ticks */
	uint64_t arg0;
};

struct thread_state {
	int32_t tid, pid;
	long request; /* index in the set, -1: none */
	unsigned depth;
	struct open_call open[OPEN_MAX];
};

struct connection {
	uint64_t socket;
	long request;
	int32_t pid;
	int64_t fd;   /* -1: not known */
	int answered; /* shut down by the server: the request is over, the close to come */
};

struct collector {
	struct request_set *set;
	struct trace_dir *trace;
	const struct latency_filter *filter;
	struct thread_state threads[THREADS_MAX];
	unsigned thread_count;
	int32_t current[TRACE_READ_STREAMS];
	struct connection *connections; /* open ones: as many as the server has at once */
	unsigned connection_count, connection_capacity;
	uint64_t first_ticks;
	int failed;
};

static uint64_t to_ns(const struct collector *c, uint64_t ticks)
{
	double ns = (double)ticks * 1e9 / (double)c->trace->clock_hz;
	return ns < 18446744073709551616.0 ? (uint64_t)ns : UINT64_MAX; /* a clock of a few Hz */
}

static struct thread_state *thread_of(struct collector *c, int32_t tid)
{
	for (unsigned i = 0; i < c->thread_count; i++)
		if (c->threads[i].tid == tid)
			return &c->threads[i];
	if (c->thread_count == THREADS_MAX) {
		trace_note_threads_shared(THREADS_MAX);
		return &c->threads[THREADS_MAX - 1]; /* the rest share it: their calls mix */
	}
	c->threads[c->thread_count] = (struct thread_state){.tid = tid, .request = -1};
	return &c->threads[c->thread_count++];
}

static struct thread_state *running(struct collector *c, unsigned cpu)
{
	if (c->current[cpu] < 0)
		c->current[cpu] = (int32_t)(thread_of(c, -(int32_t)cpu - 1) - c->threads);
	return &c->threads[c->current[cpu]];
}

static struct connection *connection_of(struct collector *c, uint64_t socket)
{
	for (unsigned i = 0; i < c->connection_count; i++)
		if (c->connections[i].socket == socket)
			return &c->connections[i];
	return NULL;
}

/* Room for one more open connection (the table grows: a server may hold
 * thousands at once, and none may be left out).  Returns 0, or -1 with
 * c->failed set. */
static int connection_room(struct collector *c)
{
	if (c->connection_count < c->connection_capacity)
		return 0;
	unsigned capacity = c->connection_capacity ? c->connection_capacity * 2 : 256;
	struct connection *grown = realloc(c->connections, capacity * sizeof *grown);
	if (!grown) {
		c->failed = 1;
		return -1;
	}
	c->connections = grown;
	c->connection_capacity = capacity;
	return 0;
}

/* The request of socket, begun now on thread when it is new. */
static long request_for_socket(struct collector *c, struct thread_state *thread, uint64_t socket,
			       uint64_t time)
{
	struct connection *known = connection_of(c, socket);
	if (known)
		return known->answered ? -1 : known->request;
	if (connection_room(c))
		return -1;
	struct request *r = request_add(c->set);
	if (!r) {
		c->failed = 1;
		return -1;
	}
	r->id = c->set->count;
	r->pid = thread->pid;
	r->start_ns = to_ns(c, time - c->first_ticks);
	c->connections[c->connection_count++] =
	    (struct connection){socket, (long)c->set->count - 1, thread->pid, -1, 0};
	return (long)c->set->count - 1;
}

/* The request of known is over at time (its connection stays, answered). */
static void request_answered(struct collector *c, struct thread_state *thread,
			     struct connection *known, uint64_t time)
{
	struct request *r = &c->set->requests[known->request];
	r->latency_ns = to_ns(c, time - c->first_ticks) - r->start_ns;
	if (thread->request == known->request)
		thread->request = -1;
	known->answered = 1;
}

/* known's socket is closed: its request ends now unless it was answered. */
static void request_end(struct collector *c, struct thread_state *thread, struct connection *known,
			uint64_t time)
{
	if (!known->answered)
		request_answered(c, thread, known, time);
	*known = c->connections[--c->connection_count];
}

static void keep_event(struct collector *c, struct request *r, const char *name, uint64_t start,
		       uint64_t duration)
{
	if (!c->set->keep_events || r->event_count == REQUEST_EVENTS_MAX)
		return;
	if (!r->events && !(r->events = calloc(REQUEST_EVENTS_MAX, sizeof *r->events))) {
		c->failed = 1;
		return;
	}
	struct request_event *e = &r->events[r->event_count++];
	uint64_t at = to_ns(c, start - c->first_ticks);
	e->start_ns = at > r->start_ns ? at - r->start_ns : 0;
	e->duration_ns = to_ns(c, duration);
	snprintf(e->name, sizeof e->name, "%s", name);
}

/* A call of thread that took duration ticks (nested: of it in inner calls)
 * ends: its exclusive time goes to the thread's request. */
static void charge(struct collector *c, struct thread_state *thread, const char *name,
		   unsigned subsystem, uint64_t end, uint64_t duration, uint64_t nested)
{
	if (thread->depth)
		thread->open[thread->depth - 1].nested += duration;
	if (thread->request < 0)
		return;
	struct request *r = &c->set->requests[thread->request];
	r->subsystem_ns[subsystem] += to_ns(c, duration > nested ? duration - nested : 0);
	const char *match = c->filter ? c->filter->match : NULL;
	if (match && *match && strstr(name, match))
		r->matched = 1;
	keep_event(c, r, name, end - duration, duration);
}

static unsigned subsystem_of(struct collector *c, const char *name)
{
	char module[REQUEST_NAME_MAX];
	const char *dot = strchr(name, '.');
	size_t length = dot ? (size_t)(dot - name) : strlen(name);
	if (length >= sizeof module)
		length = sizeof module - 1;
	memcpy(module, name, length);
	module[length] = 0;
	return request_subsystem(c->set, module);
}

static void open_call(struct thread_state *thread, const char *name, unsigned subsystem,
		      uint64_t time, uint64_t arg0)
{
	if (thread->depth == OPEN_MAX)
		return;
	struct open_call *o = &thread->open[thread->depth++];
	*o = (struct open_call){.subsystem = subsystem, .start = time, .arg0 = arg0};
	snprintf(o->name, sizeof o->name, "%s", name);
}

/* Closes the innermost open call called name; returns its arg0 via *arg0,
 * 0 when none was open (the event is ignored). */
static int close_call(struct collector *c, struct thread_state *thread, const char *name,
		      uint64_t time, uint64_t *arg0)
{
	for (unsigned d = thread->depth; d-- > 0;) {
		struct open_call o = thread->open[d];
		if (strcmp(o.name, name))
			continue;
		thread->depth = d;
		*arg0 = o.arg0;
		charge(c, thread, name, o.subsystem, time, time - o.start, o.nested);
		return 1;
	}
	return 0;
}

static int is_connection_call(const char *name)
{
	return !strcmp(name, "net.recv") || !strcmp(name, "net.send");
}

/* The descriptor of the system call thread is in (its first argument), for
 * the connection of socket. */
static void note_descriptor(struct collector *c, struct thread_state *thread, uint64_t socket)
{
	struct connection *known = connection_of(c, socket);
	if (known && thread->depth && !strncmp(thread->open[thread->depth - 1].name, "syscall ", 8))
		known->fd = (int64_t)thread->open[thread->depth - 1].arg0;
}

static void on_entry(struct collector *c, struct thread_state *thread, const char *name,
		     uint64_t time, uint64_t arg0)
{
	if (is_connection_call(name) &&
	    (!c->filter || !c->filter->pid || c->filter->pid == thread->pid)) {
		thread->request = request_for_socket(c, thread, arg0, time);
		note_descriptor(c, thread, arg0);
	} else if (!strcmp(name, "net.close") && connection_of(c, arg0)) {
		struct connection *known = connection_of(c, arg0);
		thread->request = known->answered ? -1 : known->request;
	} else if (!strcmp(name, "net.shutdown") && connection_of(c, arg0) &&
		   !connection_of(c, arg0)->answered) {
		request_answered(c, thread, connection_of(c, arg0), time);
	}
	open_call(thread, name, subsystem_of(c, name), time, arg0);
}

static void on_exit_event(struct collector *c, struct thread_state *thread, const char *name,
			  uint64_t time, int64_t result)
{
	uint64_t arg0;
	long request = thread->request;
	if (!close_call(c, thread, name, time, &arg0))
		return;
	if (!strcmp(name, "net.send") && result > 0 && request >= 0)
		c->set->requests[request].bytes += (uint64_t)result;
	if (!strcmp(name, "net.close") && connection_of(c, arg0))
		request_end(c, thread, connection_of(c, arg0), time);
}

static void on_joinpoint(struct collector *c, const struct trace_item *e)
{
	const char *event = trace_event_name(c->trace, e->type);
	const char *colon = strrchr(event, ':');
	char name[32];
	snprintf(name, sizeof name, "%.*s", colon ? (int)(colon - event) : (int)strlen(event),
		 event);
	struct thread_state *thread = running(c, e->cpu);
	const int64_t *words = e->payload;
	if (!colon || e->payload_bytes < 8)
		return;
	if (!strcmp(colon, ":entry"))
		on_entry(c, thread, name, e->time, (uint64_t)words[0]);
	else if (!strcmp(colon, ":exit"))
		on_exit_event(c, thread, name, e->time, words[0]);
	else if (!strcmp(colon, ":call") && e->payload_bytes >= sizeof(struct trace_jp_call)) {
		const struct trace_jp_call *call = e->payload;
		charge(c, thread, name, subsystem_of(c, name), e->time, call->duration, 0);
	}
}

/* close(fd) returned in thread's process: the connection received or sent
 * through fd there is over. */
static void end_by_descriptor(struct collector *c, struct thread_state *thread, int64_t fd,
			      uint64_t time)
{
	for (unsigned i = 0; i < c->connection_count; i++) {
		if (c->connections[i].fd == fd && c->connections[i].pid == thread->pid) {
			request_end(c, thread, &c->connections[i], time);
			return;
		}
	}
}

static void on_syscall(struct collector *c, const struct trace_item *e)
{
	if (e->payload_bytes < 16)
		return;
	int64_t number = *(const int64_t *)e->payload;
	char name[32];
	if (number >= 0 && (size_t)number < sizeof syscall_names / sizeof syscall_names[0] &&
	    syscall_names[number])
		snprintf(name, sizeof name, "syscall %s", syscall_names[number]);
	else
		snprintf(name, sizeof name, "syscall %lld", (long long)number);
	struct thread_state *thread = running(c, e->cpu);
	uint64_t arg0;
	const int64_t *words = e->payload;
	if (e->type == TRACE_SYSCALL_ENTRY)
		open_call(thread, name, request_subsystem(c->set, "syscall"), e->time,
			  (uint64_t)words[1]);
	else if (close_call(c, thread, name, e->time, &arg0) && !strcmp(name, "syscall close"))
		end_by_descriptor(c, thread, (int64_t)arg0, e->time);
}

static void on_event(struct collector *c, const struct trace_item *e)
{
	if (e->type == TRACE_SCHED_SWITCH &&
	    e->payload_bytes >= sizeof(struct trace_sched_switch)) {
		const struct trace_sched_switch *s = e->payload;
		struct thread_state *next = thread_of(c, s->next_tid);
		next->pid = s->next_pid;
		c->current[e->cpu] = (int32_t)(next - c->threads);
	} else if (e->type == TRACE_SYSCALL_ENTRY || e->type == TRACE_SYSCALL_EXIT) {
		on_syscall(c, e);
	} else if (e->type >= TRACE_JP_BASE) {
		on_joinpoint(c, e);
	}
}

/* Drops requests that never ended (no shutdown or close in the trace). */
static void drop_unfinished(struct request_set *set, const struct collector *c)
{
	for (unsigned i = 0; i < c->connection_count; i++)
		if (!c->connections[i].answered)
			set->requests[c->connections[i].request].latency_ns = UINT64_MAX;
	size_t kept = 0;
	for (size_t i = 0; i < set->count; i++) {
		if (set->requests[i].latency_ns == UINT64_MAX) {
			free(set->requests[i].events);
			continue;
		}
		set->requests[kept] = set->requests[i];
		set->requests[kept].id = kept + 1;
		kept++;
	}
	set->count = kept;
}

int requests_from_trace(struct request_set *set, struct trace_dir *trace,
			const struct latency_filter *filter)
{
	struct collector *c = calloc(1, sizeof *c);
	if (!c)
		return -1;
	c->set = set;
	c->trace = trace;
	c->filter = filter;
	set->source = "trace";
	for (unsigned cpu = 0; cpu < TRACE_READ_STREAMS; cpu++)
		c->current[cpu] = -1;
	struct trace_item e;
	int first = 1;
	while (!c->failed && trace_next(trace, &e) > 0) {
		if (first)
			c->first_ticks = e.time;
		first = 0;
		on_event(c, &e);
	}
	drop_unfinished(set, c);
	int failed = c->failed;
	free(c->connections);
	free(c);
	return failed ? -1 : 0;
}
