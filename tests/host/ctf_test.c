// host-test-sources: kernel/trace/ctf.c kernel/telemetry/ring.c
/*
 * The kernel's CTF: the metadata's built-in events describe exactly the
 * structs of uapi/trace.h, a measuring pass gives the length the writing
 * pass needs, and a trace made of the metadata and packets sealed from real
 * ring records (compact and extended, across a 32-bit wrap, with drops) is
 * read by Debian's babeltrace2 with no error: every event, in order, with
 * the times written, and the discarded records reported.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hosttest.h"
#include "telemetry/telemetry.h"
#include "trace/ctf.h"
#include "uapi/trace.h"

static const char *names[] = {"vfs.read", "net.accept"};

static const char *joinpoint_name(unsigned index, void *arg)
{
	return names[index];
}

static const struct ctf_trace trace = {
    .uuid = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
    .clock_hz = 1000000000,
    .joinpoints = 2,
    .joinpoint_name = joinpoint_name,
};

static char *metadata(size_t *length)
{
	struct ctf_text measure = {0};
	ctf_write_metadata(&measure, &trace);
	char *text = malloc(measure.length + 1);
	struct ctf_text out = {text, measure.length + 1, 0};
	ctf_write_metadata(&out, &trace);
	CHECK_EQ(out.length, measure.length);
	*length = out.length;
	return text;
}

static void builtin_events_match_their_structs(void)
{
	CHECK(ctf_builtin_layouts_match());
}

static void metadata_names_every_event(void)
{
	size_t length;
	char *text = metadata(&length);
	CHECK(strncmp(text, "/* CTF 1.8 */", 13) == 0);
	CHECK(strstr(text, "name = \"vfs.read:entry\";\n\tid = 1024;") != NULL);
	CHECK(strstr(text, "name = \"net.accept:call\";\n\tid = 1029;") != NULL);
	CHECK(strstr(text, "name = \"sched_switch\";\n\tid = 1;") != NULL);
	CHECK(strstr(text, "freq = 1000000000;") != NULL);
	CHECK_EQ(strlen(text), length);
	free(text);
}

static void write_file(const char *path, const void *data, size_t length, const char *mode)
{
	FILE *f = fopen(path, mode);
	REQUIRE(f != NULL);
	REQUIRE_EQ(fwrite(data, 1, length, f), length);
	fclose(f);
}

/* Reads what ring holds into one sealed packet appended to stream_0. */
static void seal_into(const char *dir, struct tel_ring *ring, struct ctf_stream *stream)
{
	static uint8_t packet[65536] __attribute__((aligned(8)));
	uint64_t bytes = tel_ring_read(ring, packet + sizeof(struct ctf_packet_header),
				       sizeof packet - sizeof(struct ctf_packet_header));
	uint64_t size = ctf_seal_packet(packet, bytes, stream);
	char path[256];
	snprintf(path, sizeof path, "%s/stream_0", dir);
	write_file(path, packet, size, "ab");
}

/* What babeltrace2 says about dir beyond the events: its CLI's lines other
 * than the events and the two warnings it always gives (the event header's
 * unused fields, a tracer's discarded events).  Returns how many lines. */
static int babeltrace2_complaints(const char *dir)
{
	char command[512];
	snprintf(command, sizeof command, "babeltrace2 %s 2>&1 >/dev/null", dir);
	FILE *pipe = popen(command, "r");
	if (!CHECK(pipe != NULL))
		return -1;
	char line[1024];
	int complaints = 0;
	while (fgets(line, sizeof line, pipe))
		if (!strstr(line, "WARN-MEANINGLESS-HEADER-FIELDS") &&
		    !strstr(line, "Tracer discarded")) {
			fprintf(stderr, "# babeltrace2: %s", line);
			complaints++;
		}
	CHECK_EQ(pclose(pipe), 0);
	return complaints;
}

/* The events babeltrace2's Python bindings read from dir (Debian's
 * python3-bt2, which mscope record counts with), or -1 when they fail. */
static long python_bt2_events(const char *dir)
{
	char command[768];
	snprintf(command, sizeof command,
		 "/usr/bin/python3 -c 'import bt2, sys\n"
		 "n = sum(type(m) is bt2._EventMessageConst\n"
		 "        for m in bt2.TraceCollectionMessageIterator(sys.argv[1]))\n"
		 "print(n)' %s 2>/dev/null",
		 dir);
	FILE *pipe = popen(command, "r");
	if (!CHECK(pipe != NULL))
		return -1;
	long events = -1;
	if (fscanf(pipe, "%ld", &events) != 1)
		events = -1;
	return pclose(pipe) == 0 ? events : -1;
}

static void write_metadata(const char *dir)
{
	size_t length;
	char *text = metadata(&length);
	char path[256];
	snprintf(path, sizeof path, "%s/metadata", dir);
	write_file(path, text, length, "wb");
	free(text);
}

static void remove_dir(const char *dir)
{
	char command[512];
	if (getenv("CTF_TEST_KEEP"))
		return;
	snprintf(command, sizeof command, "rm -rf %s", dir);
	CHECK_EQ(system(command), 0);
}

struct mark_event {
	struct trace_mark mark;
	char data[TRACE_MARK_MAX];
};

/* A user mark (or an aspect's emit) of length bytes of text: its payload
 * ends inside its last word unless length is a multiple of 8. */
static void write_mark(struct tel_ring *ring, uint16_t type, uint64_t time, uint32_t length)
{
	struct mark_event event = {.mark = {.type = 1, .length = length}};
	for (uint32_t i = 0; i < length; i++)
		event.data[i] = (char)('a' + i % 26);
	REQUIRE_EQ(tel_ring_write(ring, type, time, &event, sizeof event.mark + length), 0);
}

static void write_switch(struct tel_ring *ring, uint64_t time)
{
	struct trace_sched_switch sw = {.prev_tid = 1, .next_tid = 2, .next_pid = 7};
	REQUIRE_EQ(tel_ring_write(ring, TRACE_SCHED_SWITCH, time, &sw, sizeof sw), 0);
}

/* Packets walked by their seal (a flight recorder's snapshot: tel_ring_read,
 * then ctf_seal_packet), each ending in a mark whose payload stops short of
 * its last word, compact or extended: babeltrace2 reads every event and says
 * nothing more, and its Python bindings read them all. */
static void marks_ending_walked_packets_read_cleanly(void)
{
	static uint8_t area[8192] __attribute__((aligned(8)));
	struct tel_ring ring;
	REQUIRE_EQ(tel_ring_init(&ring, area, sizeof area, TEL_STREAM), 0);
	char dir[] = "/tmp/ctf_test.XXXXXX";
	REQUIRE(mkdtemp(dir) != NULL);
	write_metadata(dir);
	struct ctf_stream stream = {.cpu = 0};
	memcpy(stream.uuid, trace.uuid, 16);
	uint64_t time = 1000;
	for (uint32_t length = 1; length <= 9; length++) {
		write_switch(&ring, time += 100);
		write_mark(&ring, length & 1 ? TRACE_USER_MARK : TRACE_ASPECT_EMIT,
			   time += length == 4 ? 0x100000000ULL : 100, length); /* 4: extended */
		seal_into(dir, &ring, &stream);
	}
	CHECK_EQ(stream.events, 18);
	CHECK_EQ(babeltrace2_complaints(dir), 0);
	CHECK_EQ(python_bt2_events(dir), 18);
	remove_dir(dir);
}

/* Appends a packet of the records a ring reader gave (bytes of them in
 * records, or lent from the ring) to dir's stream_0, sealed as the drain
 * seals them; returns its content size in bits. */
static uint64_t append_packet(const char *dir, const void *records, uint64_t bytes,
			      const struct tel_read_summary *read, struct ctf_stream *stream)
{
	static uint8_t packet[65536] __attribute__((aligned(8)));
	struct ctf_packet_header *header = (void *)packet;
	if (records != header + 1)
		memcpy(header + 1, records, bytes);
	uint64_t size =
	    ctf_seal_packet_counted(packet, bytes, ctf_read_slack(header + 1, bytes, read), stream,
				    read->records, read->first_time, read->last_time);
	char path[256];
	snprintf(path, sizeof path, "%s/stream_0", dir);
	write_file(path, packet, size, "ab");
	return header->content_size;
}

/* Everything ring holds as the drain takes it (tel_ring_take_all: the lent
 * stretches copied, or a walk when more than length bytes). */
static uint64_t take_packet(const char *dir, struct tel_ring *ring, uint64_t length,
			    struct ctf_stream *stream)
{
	static uint8_t records[65536] __attribute__((aligned(8)));
	struct tel_read_summary read = {.last_time = stream->last_time};
	uint64_t bytes = tel_ring_take_all(ring, records, length, &read);
	return append_packet(dir, records, bytes, &read, stream);
}

/* Everything ring holds lent where it lies (tel_ring_lend_all), as the
 * console is given it, then released. */
static uint64_t lend_packet(const char *dir, struct tel_ring *ring, struct ctf_stream *stream)
{
	static uint8_t records[65536] __attribute__((aligned(8)));
	struct tel_read_summary read = {.last_time = stream->last_time};
	struct tel_ring_lent lent;
	int64_t bytes = tel_ring_lend_all(ring, sizeof records, &read, &lent);
	if (!CHECK(bytes > 0))
		return 0;
	uint64_t at = 0;
	for (unsigned i = 0; i < lent.stretches; i++, at += lent.bytes[i - 1])
		memcpy(records + at, lent.data[i], lent.bytes[i]);
	uint64_t content = append_packet(dir, records, (uint64_t)bytes, &read, stream);
	tel_ring_release(ring, &lent);
	return content;
}

/* The drain's packets, lent, copied and walked, each ending in a mark
 * whose payload stops short of its last word (or in a record after one):
 * the content ends where the mark's data does, babeltrace2 reads every
 * event and says nothing more, and its Python bindings read them all. */
static void marks_ending_taken_lent_and_walked_packets_read_cleanly(void)
{
	static uint8_t area[4096] __attribute__((aligned(8)));
	struct tel_ring ring;
	REQUIRE_EQ(tel_ring_init(&ring, area, sizeof area, TEL_STREAM), 0);
	char dir[] = "/tmp/ctf_test.XXXXXX";
	REQUIRE(mkdtemp(dir) != NULL);
	write_metadata(dir);
	struct ctf_stream stream = {.cpu = 0};
	memcpy(stream.uuid, trace.uuid, 16);
	const uint64_t header_bits = sizeof(struct ctf_packet_header) * 8;

	write_switch(&ring, 1000); /* extended: a ring's first record */
	write_mark(&ring, TRACE_USER_MARK, 1100, 5);
	CHECK_EQ(take_packet(dir, &ring, 65536, &stream), header_bits + (16 + 40 - 3) * 8);

	write_mark(&ring, TRACE_ASPECT_EMIT, 1200, 3);
	CHECK_EQ(lend_packet(dir, &ring, &stream), header_bits + (8 + 8 + 3) * 8);

	/* A mark, then a whole-word record: the note is an older record's. */
	write_mark(&ring, TRACE_USER_MARK, 1300, 1);
	write_switch(&ring, 1400);
	CHECK_EQ(lend_packet(dir, &ring, &stream), header_bits + (24 + 24) * 8);

	/* Walked: only the first mark fits, the note is about the second. */
	write_mark(&ring, TRACE_USER_MARK, 1500, 6);
	write_mark(&ring, TRACE_USER_MARK, 1600, 7);
	CHECK_EQ(take_packet(dir, &ring, 24, &stream), header_bits + (8 + 8 + 6) * 8);
	CHECK_EQ(take_packet(dir, &ring, 65536, &stream), header_bits + (8 + 8 + 7) * 8);

	/* Lent in two stretches, the end of the data area between them, the
	 * last a mark with a full time (after a gap of 2^32 ticks or more). */
	uint64_t time = 1700;
	while (ring.head % sizeof area < sizeof area - 64) {
		write_switch(&ring, time += 10);
		if (ring.head - ring.tail > sizeof area / 2)
			take_packet(dir, &ring, 65536, &stream);
	}
	write_switch(&ring, time += 10);
	write_mark(&ring, TRACE_USER_MARK, time + 0x100000000ULL, 250);
	write_mark(&ring, TRACE_ASPECT_EMIT, time + 0x100000100ULL, 250);
	CHECK(ring.head % sizeof area < ring.tail % sizeof area); /* it wrapped */
	uint64_t content = lend_packet(dir, &ring, &stream);
	CHECK_EQ(content % 64, 16); /* 250 bytes of data: 6 of padding left out */

	CHECK_EQ(babeltrace2_complaints(dir), 0);
	CHECK_EQ(python_bt2_events(dir), (long)stream.events);
	remove_dir(dir);
}

static void babeltrace2_reads_a_sealed_trace(void)
{
	static uint8_t area[8192] __attribute__((aligned(8)));
	struct tel_ring ring;
	REQUIRE_EQ(tel_ring_init(&ring, area, sizeof area, TEL_STREAM), 0);
	char dir[] = "/tmp/ctf_test.XXXXXX";
	REQUIRE(mkdtemp(dir) != NULL);
	size_t length;
	char *text = metadata(&length);
	char path[256];
	snprintf(path, sizeof path, "%s/metadata", dir);
	write_file(path, text, length, "wb");
	free(text);

	struct ctf_stream stream = {.cpu = 0};
	memcpy(stream.uuid, trace.uuid, 16);
	struct trace_sched_switch sw = {.prev_tid = 1, .next_tid = 2, .next_pid = 7};
	REQUIRE_EQ(tel_ring_write(&ring, TRACE_SCHED_SWITCH, 1000, &sw, sizeof sw), 0);
	uint64_t arg = 0x1234;
	REQUIRE_EQ(tel_ring_write(&ring, TRACE_JP_EVENT(0, TRACE_JP_ENTRY), 2000, &arg, 8), 0);
	struct trace_jp_call call = {.arg0 = 5, .result = -2, .duration = 300};
	REQUIRE_EQ(
	    tel_ring_write(&ring, TRACE_JP_EVENT(1, TRACE_JP_CALL), 0xffffff00, &call, sizeof call),
	    0);
	seal_into(dir, &ring, &stream);
	seal_into(dir, &ring, &stream); /* an empty packet: its context, no event */
	/* Across the 32-bit wrap (compact), then a gap of more than 2^32. */
	int64_t result = 42;
	REQUIRE_EQ(tel_ring_write(&ring, TRACE_JP_EVENT(0, TRACE_JP_EXIT), 0x100000100, &result, 8),
		   0);
	struct trace_thread_name name = {.pid = 7, .tid = 2};
	strcpy(name.name, "httpd");
	REQUIRE_EQ(tel_ring_write(&ring, TRACE_THREAD_NAME, 0x900000000, &name, sizeof name), 0);
	struct {
		struct trace_mark mark;
		char data[5];
	} mark = {{.type = 9, .length = 5}, "hello"};
	REQUIRE_EQ(tel_ring_write(&ring, TRACE_USER_MARK, 0x900000010, &mark, sizeof mark), 0);
	stream.events_discarded = 3; /* as if the ring had refused three */
	seal_into(dir, &ring, &stream);
	CHECK_EQ(stream.events, 6);

	char command[512];
	snprintf(command, sizeof command, "babeltrace2 --clock-cycles %s 2>&1", dir);
	FILE *pipe = popen(command, "r");
	REQUIRE(pipe != NULL);
	static char output[16384];
	size_t got = fread(output, 1, sizeof output - 1, pipe);
	output[got] = 0;
	int status = pclose(pipe);
	CHECK_EQ(status, 0);
	const char *expect[] = {"[00000000000000001000]",
				"sched_switch",
				"next_pid = 7",
				"[00000000000000002000]",
				"vfs.read:entry",
				"arg0 = 0x1234",
				"[00000000004294967040]",
				"net.accept:call",
				"result = -2",
				"duration = 300",
				"[00000000004294967552]",
				"vfs.read:exit",
				"result = 42",
				"[00000000038654705664]",
				"thread_name",
				"\"httpd\"",
				"user_mark",
				"length = 5"};
	const char *at = output;
	int missing = 0;
	for (unsigned i = 0; i < sizeof expect / sizeof expect[0]; i++) {
		const char *found = strstr(at, expect[i]);
		CHECK(found != NULL);
		if (!found) {
			fprintf(stderr, "# missing, in order: %s\n", expect[i]);
			missing = 1;
			break;
		}
		at = found;
	}
	if (status || missing)
		fprintf(stderr, "%s\n", output);
	CHECK(strstr(output, "Tracer discarded 3 events") != NULL);
	if (!getenv("CTF_TEST_KEEP")) {
		snprintf(command, sizeof command, "rm -rf %s", dir);
		CHECK_EQ(system(command), 0);
	}
}

HOSTTEST_MAIN(HOSTTEST_CASE(builtin_events_match_their_structs),
	      HOSTTEST_CASE(metadata_names_every_event),
	      HOSTTEST_CASE(babeltrace2_reads_a_sealed_trace),
	      HOSTTEST_CASE(marks_ending_walked_packets_read_cleanly),
	      HOSTTEST_CASE(marks_ending_taken_lent_and_walked_packets_read_cleanly))
