/*
 * Reading a microScope CTF trace directory (docs/TRACING.md): the metadata's
 * clock frequency and event names, and every stream's records merged into
 * one sequence in time order, times rebuilt from the compact records and
 * each packet's timestamp_begin.  Not a
 * general CTF reader: it reads the layout the kernel writes (72-byte packet
 * headers, uapi/telemetry.h records), and checks every size it reads.
 *
 *     struct trace_dir t;
 *     if (trace_open(&t, "/trace") == 0)
 *             for (struct trace_item e; trace_next(&t, &e) > 0;) use(&e);
 *     trace_close(&t);
 */
#ifndef ANALYZE_TRACE_READ_H
#define ANALYZE_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>

#define TRACE_READ_STREAMS 64

struct trace_item {
	uint64_t time; /* clock ticks */
	unsigned cpu;
	uint16_t type;
	const void *payload;
	uint32_t payload_bytes; /* rounded up to 8 */
};

struct trace_stream {
	uint8_t *data;
	size_t size;
	size_t at;          /* the next record */
	size_t packet_end;  /* the end of the current packet's content */
	size_t next_packet; /* where the packet after it starts */
	uint64_t clock;     /* the clock's full value: the packet's begin, then each record's */
	uint64_t time;      /* of the record read last */
	int started;        /* a record was read: time is one */
	uint64_t discarded; /* the latest packet's events_discarded */
	int has_next;
	struct trace_item next;
	const char *problem; /* what ended the stream early, or NULL */
	size_t problem_at;
};

struct trace_dir {
	uint64_t clock_hz;
	char **names; /* by event id, NULL where the metadata names none */
	unsigned name_count;
	unsigned stream_count;
	struct trace_stream streams[TRACE_READ_STREAMS];
};

/* Reads DIR/metadata and DIR/stream_<n>.  Returns 0, or -1 with a message on
 * stderr (no metadata, no clock, no stream, out of memory). */
int trace_open(struct trace_dir *t, const char *dir);
/* The next event in time order: 1, or 0 at the end. */
int trace_next(struct trace_dir *t, struct trace_item *event);
/* Says on stderr what ended a stream early (a cut or corrupt capture), one
 * line each; returns how many did. */
int trace_problems(const struct trace_dir *t, const char *dir);
/* Says once, on stderr, that threads past the kept ones share a slot (their
 * calls may pair across threads), so that no figure is trusted blindly. */
void trace_note_threads_shared(unsigned kept);
/* What the OS discarded: each stream's latest packet's count, summed (the
 * packets read so far: at the end, all of them). */
uint64_t trace_discarded(const struct trace_dir *t);
/* The event's name from the metadata, or "event <id>". */
const char *trace_event_name(const struct trace_dir *t, uint16_t type);
void trace_close(struct trace_dir *t);

#endif
