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
	      HOSTTEST_CASE(babeltrace2_reads_a_sealed_trace))
