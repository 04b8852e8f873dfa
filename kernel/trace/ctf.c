/*
 * The TSDL metadata and packet headers of the kernel's CTF traces (ctf.h).
 * The built-in events' fields are listed here beside the structs of
 * uapi/trace.h they describe (the sizes are checked at compile time); the
 * join points' events come from the registry through a callback, so the
 * metadata names every join point the kernel has.
 *
 * The event header is uapi/telemetry.h's record header: a 16-bit id (every
 * event starts 8-aligned), the record's size in words, and a kind that
 * selects the timestamp: the low 32 bits at offset 4 (compact; readers add
 * the wraps, as CTF says for a clock field narrower than 64 bits), or the
 * full 64 bits at offset 8 (extended).
 *
 * A packet's content ends where its last event's fields do, which is before
 * the end of its last record when that is a mark whose data stops short of
 * a word: the record's padding is no event.
 */
#include "trace/ctf.h"

#include <stdarg.h>
#include <stdbool.h>

#include "lib/format.h"
#include "uapi/telemetry.h"
#include "uapi/trace.h"

struct field {
	const char *type;
	const char *name;
};

struct builtin_event {
	uint16_t id;
	const char *name;
	struct field fields[6];
	size_t size; /* of the payload struct, checked against the fields */
};

#define NAME_FIELD          "char_t", "name[" TRACE_NAME_MAX_TEXT "]"
#define TRACE_NAME_MAX_TEXT "16"
_Static_assert(TRACE_NAME_MAX == 16, "the metadata spells the name length out");

static const struct builtin_event builtin_events[] = {
    {TRACE_SCHED_SWITCH,
     "sched_switch",
     {{"int32_t", "prev_tid"},
      {"int32_t", "next_tid"},
      {"int32_t", "prev_state"},
      {"int32_t", "next_pid"}},
     sizeof(struct trace_sched_switch)},
    {TRACE_SCHED_WAKEUP,
     "sched_wakeup",
     {{"int32_t", "tid"}, {"int32_t", "target_cpu"}},
     sizeof(struct trace_sched_wakeup)},
    {TRACE_SCHED_MIGRATE,
     "sched_migrate",
     {{"int32_t", "tid"}, {"int32_t", "from_cpu"}, {"int32_t", "to_cpu"}, {"int32_t", "reserved"}},
     sizeof(struct trace_sched_migrate)},
    {TRACE_IRQ_ENTRY,
     "irq_entry",
     {{"uint32_t", "vector"}, {"uint32_t", "reserved"}},
     sizeof(struct trace_irq)},
    {TRACE_IRQ_EXIT,
     "irq_exit",
     {{"uint32_t", "vector"}, {"uint32_t", "reserved"}},
     sizeof(struct trace_irq)},
    {TRACE_SYSCALL_ENTRY,
     "syscall_entry",
     {{"int64_t", "number"}, {"uint64_hex_t", "arg0"}},
     sizeof(struct trace_syscall_entry)},
    {TRACE_SYSCALL_EXIT,
     "syscall_exit",
     {{"int64_t", "number"}, {"int64_t", "result"}},
     sizeof(struct trace_syscall_exit)},
    {TRACE_PAGE_FAULT,
     "page_fault",
     {{"uint64_hex_t", "address"},
      {"uint64_hex_t", "ip"},
      {"uint32_t", "error_code"},
      {"int32_t", "tid"}},
     sizeof(struct trace_page_fault)},
    {TRACE_PROCESS_FORK,
     "process_fork",
     {{"int32_t", "parent_pid"},
      {"int32_t", "child_pid"},
      {"int32_t", "child_tid"},
      {"int32_t", "reserved"}},
     sizeof(struct trace_process_fork)},
    {TRACE_PROCESS_EXEC,
     "process_exec",
     {{"int32_t", "pid"}, {"int32_t", "tid"}, {NAME_FIELD}},
     sizeof(struct trace_thread_name)},
    {TRACE_PROCESS_EXIT,
     "process_exit",
     {{"int32_t", "pid"}, {"int32_t", "status"}},
     sizeof(struct trace_process_exit)},
    {TRACE_THREAD_NAME,
     "thread_name",
     {{"int32_t", "pid"}, {"int32_t", "tid"}, {NAME_FIELD}},
     sizeof(struct trace_thread_name)},
    {TRACE_USER_MARK,
     "user_mark",
     {{"uint32_t", "type"}, {"uint32_t", "length"}, {"uint8_t", "data[length]"}},
     sizeof(struct trace_mark)},
    {TRACE_ASPECT_EMIT,
     "aspect_emit",
     {{"uint32_t", "type"}, {"uint32_t", "length"}, {"uint8_t", "data[length]"}},
     sizeof(struct trace_mark)},
    {TRACE_USER_STACK,
     "user_stack",
     {{"int32_t", "tid"},
      {"uint16_t", "count"},
      {"uint16_t", "flags"},
      {"uint64_hex_t", "frames[count]"}},
     sizeof(struct trace_user_stack)},
    {TRACE_USER_STACK_DEF,
     "user_stack_def",
     {{"int32_t", "tid"},
      {"uint16_t", "count"},
      {"uint16_t", "flags"},
      {"uint32_t", "id"},
      {"uint32_t", "reserved"},
      {"uint64_hex_t", "frames[count]"}},
     sizeof(struct trace_user_stack_def)},
    {TRACE_USER_STACK_REF,
     "user_stack_ref",
     {{"int32_t", "tid"}, {"uint32_t", "id"}},
     sizeof(struct trace_user_stack_ref)},
    {TRACE_SYSCALL_STACK,
     "syscall_stack",
     {{"int64_t", "number"}, {"uint64_hex_t", "arg0"}, {"int32_t", "tid"}, {"uint32_t", "id"}},
     sizeof(struct trace_syscall_stack)},
};

/* A user mark's or an aspect's emit: its payload is a struct trace_mark
 * and length bytes of data, the only built-in events whose payload may stop
 * short of the record's last word (ctf_builtin_layouts_match checks that
 * every other one is whole words). */
static bool has_mark_payload(uint16_t id)
{
	return id == TRACE_USER_MARK || id == TRACE_ASPECT_EMIT;
}

static int strcmp_prefix(const char *text, const char *prefix)
{
	while (*prefix && *text == *prefix)
		text++, prefix++;
	return *prefix;
}

/* Bytes a field takes in the payload struct: a sequence ("data[length]")
 * adds none (its bytes follow the struct), the name array TRACE_NAME_MAX. */
static size_t field_bytes(const struct field *field)
{
	const char *type = field->type, *name = field->name;
	if (type[0] == 'c')
		return TRACE_NAME_MAX;
	for (const char *c = name; *c; c++)
		if (*c == '[')
			return 0;
	if (!strcmp_prefix(type, "uint16") || !strcmp_prefix(type, "int16"))
		return 2;
	return type[0] == 'u' && type[4] == '3' ? 4 : type[0] == 'i' && type[3] == '3' ? 4 : 8;
}

static size_t declared_size(const struct builtin_event *event)
{
	size_t size = 0;
	for (unsigned i = 0; i < 6 && event->fields[i].type; i++)
		size += field_bytes(&event->fields[i]);
	return size;
}

static void put(struct ctf_text *out, const char *format, ...)
{
	va_list args;
	va_start(args, format);
	size_t room = out->length < out->size ? out->size - out->length : 0;
	int n = vsnprintf(room ? out->buffer + out->length : NULL, room, format, args);
	va_end(args);
	if (n > 0)
		out->length += (size_t)n;
}

static void put_uuid(struct ctf_text *out, const uint8_t uuid[16])
{
	for (unsigned i = 0; i < 16; i++)
		put(out, "%s%02x", (i == 4 || i == 6 || i == 8 || i == 10) ? "-" : "", uuid[i]);
}

static void put_preamble(struct ctf_text *out, const struct ctf_trace *trace)
{
	put(out, "/* CTF 1.8 */\n\n"
		 "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
		 "typealias integer { size = 8; align = 8; signed = false; encoding = UTF8; } "
		 ":= char_t;\n"
		 "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
		 "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
		 "typealias integer { size = 32; align = 8; signed = true; } := int32_t;\n"
		 "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
		 "typealias integer { size = 64; align = 8; signed = false; base = 16; } "
		 ":= uint64_hex_t;\n"
		 "typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n\n");
	put(out, "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"");
	put_uuid(out, trace->uuid);
	put(out, "\";\n\tbyte_order = le;\n"
		 "\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n"
		 "\t\tuint32_t stream_id;\n\t};\n};\n\n");
	put(out, "env {\n\thostname = \"microscope\";\n\tdomain = \"kernel\";\n"
		 "\tsysname = \"microScope\";\n\ttracer_name = \"microscope\";\n};\n\n");
	put(out, "clock {\n\tname = \"monotonic\";\n\tuuid = \"");
	put_uuid(out, trace->uuid);
	put(out, "\";\n\tdescription = \"TSC ticks\";\n\tfreq = %llu;\n\toffset = 0;\n};\n\n",
	    (unsigned long long)trace->clock_hz);
	put(out, "typealias integer { size = 32; align = 8; signed = false; "
		 "map = clock.monotonic.value; } := uint32_clock_t;\n"
		 "typealias integer { size = 64; align = 8; signed = false; "
		 "map = clock.monotonic.value; } := uint64_clock_t;\n\n");
}

static void put_stream(struct ctf_text *out)
{
	put(out, "struct event_header {\n"
		 "\tinteger { size = 16; align = 64; signed = false; } id;\n"
		 "\tuint8_t words;\n"
		 "\tenum : uint8_t { compact = 0, extended = 1 } kind;\n"
		 "\tvariant <kind> {\n"
		 "\t\tstruct { integer { size = 32; align = 32; signed = false; "
		 "map = clock.monotonic.value; } timestamp; } compact;\n"
		 "\t\tstruct { integer { size = 64; align = 64; signed = false; "
		 "map = clock.monotonic.value; } timestamp; } extended;\n"
		 "\t} v;\n};\n\n");
	put(out, "stream {\n\tid = 0;\n\tevent.header := struct event_header;\n"
		 "\tpacket.context := struct {\n"
		 "\t\tuint64_clock_t timestamp_begin;\n\t\tuint64_clock_t timestamp_end;\n"
		 "\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n"
		 "\t\tuint64_t events_discarded;\n\t\tuint32_t cpu_id;\n\t};\n};\n\n");
}

static void put_event(struct ctf_text *out, unsigned id, const char *name, const char *suffix)
{
	put(out,
	    "event {\n\tname = \"%s%s\";\n\tid = %u;\n\tstream_id = 0;\n\tfields := struct {\n",
	    name, suffix, id);
}

static void put_builtin_events(struct ctf_text *out)
{
	for (unsigned e = 0; e < sizeof builtin_events / sizeof builtin_events[0]; e++) {
		const struct builtin_event *event = &builtin_events[e];
		put_event(out, event->id, event->name, "");
		for (unsigned i = 0; i < 6 && event->fields[i].type; i++)
			put(out, "\t\t%s %s;\n", event->fields[i].type, event->fields[i].name);
		put(out, "\t};\n};\n\n");
	}
}

static void put_joinpoint_events(struct ctf_text *out, const struct ctf_trace *trace)
{
	for (unsigned j = 0; j < trace->joinpoints; j++) {
		const char *name = trace->joinpoint_name(j, trace->arg);
		put_event(out, TRACE_JP_EVENT(j, TRACE_JP_ENTRY), name, ":entry");
		put(out, "\t\tuint64_hex_t arg0;\n\t};\n};\n\n");
		put_event(out, TRACE_JP_EVENT(j, TRACE_JP_EXIT), name, ":exit");
		put(out, "\t\tint64_t result;\n\t};\n};\n\n");
		put_event(out, TRACE_JP_EVENT(j, TRACE_JP_CALL), name, ":call");
		put(out, "\t\tuint64_hex_t arg0;\n\t\tint32_t result;\n\t\tuint32_t duration;\n"
			 "\t};\n};\n\n");
	}
}

void ctf_write_metadata(struct ctf_text *out, const struct ctf_trace *trace)
{
	put_preamble(out, trace);
	put_stream(out);
	put_builtin_events(out);
	put_joinpoint_events(out, trace);
}

/* Does every payload of event fill whole words?  Its fixed part must, and
 * a sequence after it must be of 64-bit elements: else only its length
 * says where it ends (ctf_record_slack knows the marks'). */
static bool whole_words(const struct builtin_event *event)
{
	for (unsigned i = 0; i < 6 && event->fields[i].type; i++)
		if (!field_bytes(&event->fields[i]) &&
		    strcmp_prefix(event->fields[i].type, "uint64"))
			return false;
	return event->size % 8 == 0;
}

int ctf_builtin_layouts_match(void)
{
	for (unsigned e = 0; e < sizeof builtin_events / sizeof builtin_events[0]; e++) {
		const struct builtin_event *event = &builtin_events[e];
		if (declared_size(event) != event->size)
			return 0;
		if (!whole_words(event) && !has_mark_payload(event->id))
			return 0;
	}
	return 1;
}

uint64_t ctf_record_slack(const struct tel_record *record)
{
	if (!has_mark_payload(record->type))
		return 0;
	uint64_t bytes = tel_record_bytes(record);
	uint64_t header = sizeof *record + (record->kind == TEL_EXTENDED ? 8 : 0);
	const struct trace_mark *mark = (const void *)((const uint8_t *)record + header);
	if (header + sizeof *mark > bytes || mark->length > bytes - header - sizeof *mark)
		return 0; /* not what the event declares: read no further */
	return bytes - header - sizeof *mark - mark->length;
}

uint64_t ctf_read_slack(const void *records, uint64_t records_bytes,
			const struct tel_read_summary *read)
{
	if (!read->last_bytes || read->last_bytes > records_bytes)
		return read->slack;
	return ctf_record_slack(
	    (const void *)((const uint8_t *)records + records_bytes - read->last_bytes));
}

/* Writes the header of a packet of records_bytes holding count records
 * timed first to last, the last slack bytes of them padding after the last
 * record's payload, and advances stream. */
static uint64_t write_packet_header(struct ctf_packet_header *header, uint64_t records_bytes,
				    uint64_t slack, struct ctf_stream *stream, uint64_t count,
				    uint64_t first, uint64_t last)
{
	uint64_t bits = (sizeof *header + records_bytes) * 8;
	/* The content ends where the last event's fields do: a reader
	 * (babeltrace2) takes any content left after an event for the start
	 * of another, and a last record's padding is not one.  The metadata's
	 * context ends before the header's reserved word: a packet with no
	 * record has its content end there, for the same reason. */
	uint64_t content_bits = records_bytes && slack < records_bytes
				    ? bits - slack * 8
				    : offsetof(struct ctf_packet_header, reserved) * 8;
	*header = (struct ctf_packet_header){.magic = CTF_MAGIC,
					     .timestamp_begin = count ? first : stream->last_time,
					     .timestamp_end = count ? last : stream->last_time,
					     .content_size = content_bits,
					     .packet_size = bits,
					     .events_discarded = stream->events_discarded,
					     .cpu_id = stream->cpu};
	for (unsigned i = 0; i < 16; i++)
		header->uuid[i] = stream->uuid[i];
	if (count)
		stream->last_time = last;
	stream->events += count;
	return sizeof *header + records_bytes;
}

uint64_t ctf_seal_packet(void *packet, uint64_t records_bytes, struct ctf_stream *stream)
{
	struct ctf_packet_header *header = packet;
	const uint8_t *records = (const uint8_t *)(header + 1);
	uint64_t first = 0, time = stream->last_time, count = 0, slack = 0;
	for (uint64_t at = 0; at < records_bytes; count++) {
		const struct tel_record *record = (const void *)(records + at);
		tel_record_time(record, &time);
		if (!count)
			first = time;
		at += tel_record_bytes(record);
		if (at == records_bytes)
			slack = ctf_record_slack(record);
	}
	return write_packet_header(header, records_bytes, slack, stream, count, first, time);
}

uint64_t ctf_seal_packet_counted(void *packet, uint64_t records_bytes, uint64_t slack,
				 struct ctf_stream *stream, uint64_t count, uint64_t first_time,
				 uint64_t last_time)
{
	return write_packet_header(packet, records_bytes, slack, stream, count, first_time,
				   last_time);
}
