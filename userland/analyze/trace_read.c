/*
 * The trace directory reader (trace_read.h).  The metadata is TSDL text; of
 * it only the clock's `freq = N;` and each event's `name = "...";` followed
 * by its `id = N;` are needed.  Streams are read whole; each is walked packet
 * by packet (content_size says where its records end), and the streams are
 * merged by time, one record ahead in each.
 */
#include "trace_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uapi/telemetry.h"

#define PACKET_HEADER_BYTES 72
#define PACKET_CONTEXT_END  68 /* where the metadata's context ends: an empty packet's content */
#define PACKET_BEGIN        24 /* offset of timestamp_begin: the clock's full value there */
#define PACKET_CONTENT_BITS 40 /* offset of content_size in the packet header */
#define PACKET_SIZE_BITS    48 /* offset of packet_size: content and padding */
#define PACKET_DISCARDED    56 /* offset of events_discarded */

static uint8_t *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t capacity = 65536, length = 0;
	uint8_t *data = malloc(capacity + 1);
	size_t n;
	while (data && (n = fread(data + length, 1, capacity - length, f)) > 0) {
		length += n;
		if (length == capacity) {
			uint8_t *bigger = realloc(data, capacity * 2 + 1);
			if (!bigger) {
				free(data);
				data = NULL;
				break;
			}
			data = bigger;
			capacity *= 2;
		}
	}
	fclose(f);
	if (data)
		data[length] = 0;
	*size = length;
	return data;
}

static int set_name(struct trace_dir *t, unsigned id, const char *name, size_t length)
{
	if (id > 65535)
		return 0;
	if (id >= t->name_count) {
		unsigned count = id + 1;
		char **names = realloc(t->names, count * sizeof *names);
		if (!names)
			return -1;
		memset(names + t->name_count, 0, (count - t->name_count) * sizeof *names);
		t->names = names;
		t->name_count = count;
	}
	free(t->names[id]);
	t->names[id] = malloc(length + 1);
	if (!t->names[id])
		return -1;
	memcpy(t->names[id], name, length);
	t->names[id][length] = 0;
	return 0;
}

/* Each event block's `name = "X";` and the `id = N;` on its next line (the
 * layout the kernel writes: other blocks have names too, with no id). */
static int read_names(struct trace_dir *t, const char *text)
{
	static const char opening[] = "event {\n\tname = \"", id[] = "\";\n\tid = ";
	for (const char *at = text; (at = strstr(at, opening)) != NULL;) {
		const char *name = at + sizeof opening - 1, *end = strchr(name, '"');
		if (!end)
			break;
		if (!strncmp(end, id, sizeof id - 1) &&
		    set_name(t, (unsigned)strtoul(end + sizeof id - 1, NULL, 10), name,
			     (size_t)(end - name)))
			return -1;
		at = end;
	}
	return 0;
}

static int read_metadata(struct trace_dir *t, const char *dir)
{
	char path[512];
	snprintf(path, sizeof path, "%s/metadata", dir);
	size_t size;
	char *text = (char *)read_file(path, &size);
	if (!text) {
		fprintf(stderr, "analyze: no %s\n", path);
		return -1;
	}
	const char *freq = strstr(text, "freq = ");
	t->clock_hz = freq ? strtoull(freq + 7, NULL, 10) : 0;
	int error = read_names(t, text);
	free(text);
	if (!t->clock_hz)
		fprintf(stderr, "analyze: %s names no clock frequency\n", path);
	return error || !t->clock_hz ? -1 : 0;
}

static uint64_t load64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/* Notes the first thing in s that does not add up, at byte at, and ends
 * the stream there: the caller says so (trace_problems) instead of taking a
 * cut or corrupt capture for a whole one.  Returns 0. */
static int stream_problem(struct trace_stream *s, const char *what, size_t at)
{
	s->problem = what;
	s->problem_at = at;
	return 0;
}

/* The packet at s->next_packet: its content (records) and its whole size
 * (content and padding, which the next packet follows).  Returns 1, or 0 at
 * the stream's end or a problem. */
static int enter_packet(struct trace_stream *s)
{
	size_t packet = s->next_packet;
	if (packet == s->size)
		return 0; /* the end */
	if (packet + PACKET_HEADER_BYTES > s->size)
		return stream_problem(s, "a packet header cut short", packet);
	uint64_t content = load64(s->data + packet + PACKET_CONTENT_BITS) / 8;
	uint64_t whole = load64(s->data + packet + PACKET_SIZE_BITS) / 8;
	if (content < PACKET_CONTEXT_END || whole < content || whole < PACKET_HEADER_BYTES)
		return stream_problem(s, "a packet whose sizes do not add up", packet);
	if (content < PACKET_HEADER_BYTES)
		content = PACKET_HEADER_BYTES; /* no record */
	if (whole > s->size - packet)
		return stream_problem(s, "a packet longer than the file (cut short?)", packet);
	s->at = packet + PACKET_HEADER_BYTES;
	s->packet_end = packet + content;
	s->next_packet = packet + whole;
	s->discarded = load64(s->data + packet + PACKET_DISCARDED);
	/* A compact record's time is the low bits of the clock, whose full value
	 * each packet's timestamp_begin gives (CTF's rule, and babeltrace2's): a
	 * packet missing from the file (one the sink refused) then costs no
	 * more than its own records' times. */
	s->clock = load64(s->data + packet + PACKET_BEGIN);
	return 1;
}

/* Moves s to its next record (entering the next packet as needed); 0 at the
 * end or at the first thing that does not add up (s->problem). */
static int advance(struct trace_stream *s, unsigned cpu)
{
	while (s->at >= s->packet_end)
		if (!enter_packet(s))
			return 0;
	const struct tel_record *r = (const void *)(s->data + s->at);
	if (s->at + sizeof *r > s->packet_end)
		return stream_problem(s, "a record header past its packet's content", s->at);
	uint64_t size = tel_record_bytes(r);
	size_t header = sizeof *r + (r->kind == TEL_EXTENDED ? 8 : 0);
	/* (A last record's padding may lie past the content, inside the packet.) */
	if (size < header || size > s->next_packet - s->at)
		return stream_problem(s, "a record whose size does not fit its packet", s->at);
	uint64_t time = tel_record_time(r, &s->clock);
	if (s->started && time < s->time)
		return stream_problem(s, "a record earlier than the one before it", s->at);
	s->time = time;
	s->started = 1;
	s->next = (struct trace_item){.time = time,
				      .cpu = cpu,
				      .type = r->type,
				      .payload = tel_record_payload(r),
				      .payload_bytes = (uint32_t)(size - header)};
	s->at += size;
	return 1;
}

void trace_note_threads_shared(unsigned kept)
{
	static int said;
	if (!said)
		fprintf(stderr,
			"analyze: more than %u threads: the rest share one slot, and their "
			"calls may mix\n",
			kept);
	said = 1;
}

uint64_t trace_discarded(const struct trace_dir *t)
{
	uint64_t discarded = 0;
	for (unsigned cpu = 0; cpu < t->stream_count; cpu++)
		discarded += t->streams[cpu].discarded;
	return discarded;
}

int trace_problems(const struct trace_dir *t, const char *dir)
{
	int count = 0;
	for (unsigned cpu = 0; cpu < t->stream_count; cpu++) {
		const struct trace_stream *s = &t->streams[cpu];
		if (!s->problem)
			continue;
		fprintf(stderr,
			"analyze: %s/stream_%u: %s at byte %zu; the rest of it was not read\n", dir,
			cpu, s->problem, s->problem_at);
		count++;
	}
	return count;
}

static int read_streams(struct trace_dir *t, const char *dir)
{
	for (unsigned cpu = 0; cpu < TRACE_READ_STREAMS; cpu++) {
		char path[512];
		snprintf(path, sizeof path, "%s/stream_%u", dir, cpu);
		struct trace_stream *s = &t->streams[cpu];
		s->data = read_file(path, &s->size);
		if (!s->data)
			continue;
		t->stream_count = cpu + 1;
		s->has_next = advance(s, cpu);
	}
	if (!t->stream_count)
		fprintf(stderr, "analyze: no %s/stream_0 (or any stream)\n", dir);
	return t->stream_count ? 0 : -1;
}

int trace_open(struct trace_dir *t, const char *dir)
{
	memset(t, 0, sizeof *t);
	if (read_metadata(t, dir) || read_streams(t, dir)) {
		trace_close(t);
		return -1;
	}
	return 0;
}

int trace_next(struct trace_dir *t, struct trace_item *event)
{
	struct trace_stream *first = NULL;
	unsigned first_cpu = 0;
	for (unsigned cpu = 0; cpu < t->stream_count; cpu++) {
		struct trace_stream *s = &t->streams[cpu];
		if (s->has_next && (!first || s->next.time < first->next.time)) {
			first = s;
			first_cpu = cpu;
		}
	}
	if (!first)
		return 0;
	*event = first->next;
	first->has_next = advance(first, first_cpu);
	return 1;
}

const char *trace_event_name(const struct trace_dir *t, uint16_t type)
{
	static char unnamed[24];
	if (type < t->name_count && t->names[type])
		return t->names[type];
	snprintf(unnamed, sizeof unnamed, "event %u", type);
	return unnamed;
}

void trace_close(struct trace_dir *t)
{
	for (unsigned i = 0; i < t->name_count; i++)
		free(t->names[i]);
	free(t->names);
	for (unsigned cpu = 0; cpu < TRACE_READ_STREAMS; cpu++)
		free(t->streams[cpu].data);
	memset(t, 0, sizeof *t);
}
