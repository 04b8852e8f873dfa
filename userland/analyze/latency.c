/*
 * Pairing (latency.h).  Each CPU's current thread comes from sched_switch
 * (next_tid, next_pid); until the first switch on a CPU its thread is not
 * known and gets a key of its own for that CPU.  A thread keeps a short stack
 * of open calls (system calls and join points that may sleep): an exit
 * closes the innermost open call of the same kind, and what cannot be paired
 * is counted, never guessed.
 */
#include "latency.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syscall_names.h"
#include "uapi/trace.h"

const uint64_t latency_bounds_ns[LATENCY_BOUNDS] = {
    1000,      2000,      5000,       10000,      20000,      50000,      100000,   200000,
    500000,    1000000,   2000000,    5000000,    10000000,   20000000,   50000000, 100000000,
    200000000, 500000000, 1000000000, 2000000000, 5000000000, 10000000000};

struct open_call {
	int32_t kind; /* index in the table */
	uint64_t start;
};

struct thread_state {
	int32_t tid, pid;
	unsigned depth;
	struct open_call open[LATENCY_OPEN_MAX];
};

struct collector {
	struct latency_table *table;
	struct trace_dir *trace;
	const struct latency_filter *filter;
	struct thread_state threads[LATENCY_THREADS];
	unsigned thread_count;
	int32_t current[TRACE_READ_STREAMS]; /* index in threads, -1: unknown */
};

static int kind_of(struct latency_table *table, const char *name)
{
	for (unsigned i = 0; i < table->kind_count; i++)
		if (!strcmp(table->kinds[i].name, name))
			return (int)i;
	if (table->kind_count == LATENCY_MAX_KINDS)
		return -1;
	struct latency_kind *k = &table->kinds[table->kind_count];
	k->hist = calloc(1, sizeof *k->hist);
	if (!k->hist)
		return -1;
	snprintf(k->name, sizeof k->name, "%s", name);
	return (int)table->kind_count++;
}

static struct thread_state *thread_of(struct collector *c, int32_t tid)
{
	for (unsigned i = 0; i < c->thread_count; i++)
		if (c->threads[i].tid == tid)
			return &c->threads[i];
	if (c->thread_count == LATENCY_THREADS) {
		trace_note_threads_shared(LATENCY_THREADS);
		return &c->threads[LATENCY_THREADS - 1];
	}
	c->threads[c->thread_count] = (struct thread_state){.tid = tid};
	return &c->threads[c->thread_count++];
}

/* The thread running on cpu (the one the event belongs to), or NULL. */
static struct thread_state *running(struct collector *c, unsigned cpu)
{
	if (c->current[cpu] < 0) /* not known yet: a key of the CPU's own */
		c->current[cpu] = (int32_t)(thread_of(c, -(int32_t)cpu - 1) - c->threads);
	return &c->threads[c->current[cpu]];
}

static uint64_t to_ns(const struct trace_dir *t, uint64_t ticks)
{
	double ns = (double)ticks * 1e9 / (double)t->clock_hz;
	return ns < 18446744073709551616.0 ? (uint64_t)ns : UINT64_MAX; /* a clock of a few Hz */
}

static int wanted(const struct collector *c, const struct thread_state *thread, const char *name)
{
	const struct latency_filter *f = c->filter;
	if (f && f->pid && thread->pid != f->pid)
		return 0;
	return !f || !f->match || !*f->match || strstr(name, f->match);
}

static void record(struct collector *c, const struct thread_state *thread, const char *name,
		   uint64_t ticks)
{
	if (!wanted(c, thread, name))
		return;
	int kind = kind_of(c->table, name);
	if (kind >= 0)
		latency_add(&c->table->kinds[kind], to_ns(c->trace, ticks));
}

void latency_add(struct latency_kind *kind, uint64_t ns)
{
	hist_add(kind->hist, ns);
	for (unsigned b = LATENCY_BOUNDS; b-- > 0 && ns <= latency_bounds_ns[b];)
		kind->at_most[b]++;
}

static void open_call(struct collector *c, struct thread_state *thread, const char *name,
		      uint64_t time)
{
	int kind = kind_of(c->table, name);
	if (kind < 0 || thread->depth == LATENCY_OPEN_MAX) {
		c->table->unpaired++;
		return;
	}
	thread->open[thread->depth++] = (struct open_call){.kind = kind, .start = time};
}

static void close_call(struct collector *c, struct thread_state *thread, const char *name,
		       uint64_t time)
{
	int kind = kind_of(c->table, name);
	for (unsigned d = thread->depth; d-- > 0;) {
		if (thread->open[d].kind != kind)
			continue;
		if (time >= thread->open[d].start) /* else the trace's time went back: no latency */
			record(c, thread, name, time - thread->open[d].start);
		else
			c->table->unpaired++;
		c->table->unpaired += thread->depth - 1 - d; /* inner calls never closed */
		thread->depth = d;
		return;
	}
	c->table->unpaired++;
}

static void syscall_name(int64_t number, char *out, size_t size)
{
	if (number >= 0 && (size_t)number < sizeof syscall_names / sizeof syscall_names[0] &&
	    syscall_names[number])
		snprintf(out, size, "syscall %s", syscall_names[number]);
	else
		snprintf(out, size, "syscall %lld", (long long)number);
}

static void on_switch(struct collector *c, const struct trace_item *e)
{
	const struct trace_sched_switch *s = e->payload;
	struct thread_state *next = thread_of(c, s->next_tid);
	if (!next)
		return;
	next->pid = s->next_pid;
	c->current[e->cpu] = (int32_t)(next - c->threads);
}

/* "vfs.read:entry" -> "vfs.read" and the part after the colon. */
static const char *split_kind(const char *event, char *name, size_t size)
{
	const char *colon = strrchr(event, ':');
	size_t length = colon ? (size_t)(colon - event) : strlen(event);
	snprintf(name, size, "%.*s", (int)length, event);
	return colon ? colon + 1 : "";
}

static void on_joinpoint(struct collector *c, const struct trace_item *e, const char *event)
{
	char name[64];
	const char *what = split_kind(event, name, sizeof name);
	struct thread_state *thread = running(c, e->cpu);
	if (!strcmp(what, "entry"))
		open_call(c, thread, name, e->time);
	else if (!strcmp(what, "exit"))
		close_call(c, thread, name, e->time);
	else if (!strcmp(what, "call") && e->payload_bytes >= sizeof(struct trace_jp_call))
		record(c, thread, name, ((const struct trace_jp_call *)e->payload)->duration);
}

static void on_event(struct collector *c, const struct trace_item *e)
{
	char name[64];
	if (e->type == TRACE_SCHED_SWITCH &&
	    e->payload_bytes >= sizeof(struct trace_sched_switch)) {
		on_switch(c, e);
	} else if (e->type == TRACE_SYSCALL_ENTRY || e->type == TRACE_SYSCALL_EXIT) {
		if (e->payload_bytes < 8)
			return;
		syscall_name(*(const int64_t *)e->payload, name, sizeof name);
		if (e->type == TRACE_SYSCALL_ENTRY)
			open_call(c, running(c, e->cpu), name, e->time);
		else
			close_call(c, running(c, e->cpu), name, e->time);
	} else if (e->type >= TRACE_JP_BASE) {
		on_joinpoint(c, e, trace_event_name(c->trace, e->type));
	}
}

int latency_collect(struct latency_table *table, struct trace_dir *trace,
		    const struct latency_filter *filter)
{
	memset(table, 0, sizeof *table);
	struct collector *c = calloc(1, sizeof *c);
	if (!c)
		return -1;
	*c = (struct collector){.table = table, .trace = trace, .filter = filter};
	for (unsigned cpu = 0; cpu < TRACE_READ_STREAMS; cpu++)
		c->current[cpu] = -1;
	struct trace_item e;
	while (trace_next(trace, &e) > 0) {
		if (!table->events++)
			table->first_ns = to_ns(trace, e.time);
		table->last_ns = to_ns(trace, e.time);
		on_event(c, &e);
	}
	table->discarded = trace_discarded(trace);
	free(c);
	return 0;
}

void latency_free(struct latency_table *table)
{
	for (unsigned i = 0; i < table->kind_count; i++)
		free(table->kinds[i].hist);
	table->kind_count = 0;
}
