/*
 * The trace suite: a session into a sink that keeps its frames in memory.
 * The metadata comes first and names the recorded join points; calls of a
 * join point that cannot sleep come out as call records, of one that may
 * sleep as entry and exit pairs, in packets whose records time forward; a
 * flooded ring (the drainer held off) refuses and counts, and then recorded
 * = delivered + dropped exactly; END comes last with those counts.
 */
#include "trace/internal.h"

#include "cpu/percpu.h"
#include "joinpoint/joinpoint.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "sched/sched.h"
#include "trace/ctf.h"
#include "vfs/vfs.h"
#include "lib/format.h"
#include "uapi/telemetry.h"

/* The join points jp_bench measures (kernel/joinpoint/bench_target.c): one
 * that cannot sleep and one declared the default way, both doing nothing. */
void jp_bench_nop(void);
void jp_bench_nop_sleeps(void);

struct captured {
	unsigned metadata, packets, ends, texts, order_errors;
	bool metadata_names_bench;
	uint64_t calls, entries, exits, records, backwards;
	uint64_t last_time[MAX_CPUS];
	struct trace_end end;
	volatile bool hold; /* the drainer waits in the sink: nothing leaves the rings */
};

static struct captured captured;

static unsigned bench_index, sleeps_index;

static void count_records(const uint8_t *records, uint64_t bytes, unsigned cpu)
{
	for (uint64_t at = 0; at < bytes;) {
		const struct tel_record *r = (const void *)(records + at);
		uint64_t before = captured.last_time[cpu];
		captured.backwards += tel_record_time(r, &captured.last_time[cpu]) < before;
		captured.records++;
		captured.calls += r->type == TRACE_JP_EVENT(bench_index, TRACE_JP_CALL);
		captured.entries += r->type == TRACE_JP_EVENT(sleeps_index, TRACE_JP_ENTRY);
		captured.exits += r->type == TRACE_JP_EVENT(sleeps_index, TRACE_JP_EXIT);
		at += tel_record_bytes(r);
	}
}

static bool contains(const char *text, uint32_t length, const char *word)
{
	size_t n = strlen(word);
	for (uint32_t i = 0; i + n <= length; i++)
		if (!memcmp(text + i, word, n))
			return true;
	return false;
}

static int keep_frame(void *context, uint16_t kind, uint16_t stream, const void *data,
		      uint32_t length)
{
	while (captured.hold)
		sched_yield();
	captured.order_errors += kind != TRACE_FRAME_METADATA && !captured.metadata;
	captured.order_errors += captured.ends != 0;
	if (kind == TRACE_FRAME_METADATA) {
		captured.metadata++;
		captured.metadata_names_bench =
		    contains(data, length, "name = \"jp.bench_nop:call\"") &&
		    contains(data, length, "name = \"jp.bench_nop_sleeps:entry\"");
	} else if (kind == TRACE_FRAME_PACKET) {
		const struct ctf_packet_header *header = data;
		captured.packets++;
		captured.order_errors += header->magic != CTF_MAGIC || header->cpu_id != stream ||
					 header->packet_size != (uint64_t)length * 8;
		count_records((const uint8_t *)(header + 1), length - sizeof *header, stream);
	} else if (kind == TRACE_FRAME_END) {
		captured.ends++;
		memcpy(&captured.end, data, sizeof captured.end);
	} else {
		captured.texts++;
	}
	return 0;
}

static const struct trace_sink memory_sink = {.name = "test-memory", .frame = keep_frame};

static void start_recording(struct ktest *t, const char *const *patterns, unsigned count)
{
	memset(&captured, 0, sizeof captured);
	bench_index = jp_index(jp_find("jp.bench_nop"));
	sleeps_index = jp_index(jp_find("jp.bench_nop_sleeps"));
	ASSERT_EQ(t, trace_start(&memory_sink, "", patterns, count), 0);
}

static void calls_come_out_as_records(struct ktest *t)
{
	const char *patterns[] = {"jp.bench_nop", "jp.bench_nop_sleeps"};
	start_recording(t, patterns, 2);
	EXPECT_EQ(t, trace_start(&memory_sink, "", patterns, 2), -EBUSY);
	for (int i = 0; i < 1000; i++) {
		jp_bench_nop();
		jp_bench_nop_sleeps();
	}
	struct trace_end end;
	ASSERT_EQ(t, trace_stop(&end), 0);
	EXPECT_EQ(t, trace_stop(NULL), -ENOENT);
	EXPECT_EQ(t, captured.metadata, 1);
	EXPECT_TRUE(t, captured.metadata_names_bench);
	EXPECT_EQ(t, captured.order_errors, 0);
	EXPECT_EQ(t, captured.ends, 1);
	EXPECT_EQ(t, captured.calls, 1000);
	EXPECT_EQ(t, captured.entries, 1000);
	EXPECT_EQ(t, captured.exits, 1000);
	EXPECT_EQ(t, captured.backwards, 0);
	EXPECT_EQ(t, end.dropped, 0);
	EXPECT_EQ(t, end.delivered, captured.records);
	EXPECT_EQ(t, end.recorded, end.delivered + end.dropped);
	EXPECT_EQ(t, captured.end.recorded, end.recorded);
}

/* Far more records than a ring holds, written while the drainer waits in
 * the sink: the ring refuses and counts. */
static void a_flooded_ring_counts_every_record(struct ktest *t)
{
	const char *patterns[] = {"jp.bench_nop"};
	start_recording(t, patterns, 1);
	captured.hold = true;
	for (int i = 0; i < 40000; i++)
		jp_bench_nop();
	captured.hold = false;
	struct trace_end end;
	ASSERT_EQ(t, trace_stop(&end), 0);
	EXPECT_TRUE(t, end.dropped > 0);
	EXPECT_EQ(t, end.recorded, end.delivered + end.dropped);
	EXPECT_EQ(t, end.delivered, captured.records);
	EXPECT_TRUE(t, captured.calls + end.dropped >= 40000);
	EXPECT_EQ(t, captured.backwards, 0);
	EXPECT_EQ(t, captured.order_errors, 0);
}

/* A flight recorder overwrites its oldest records; a snapshot sends what it
 * holds, each CPU starting at a full time, and a second snapshot right after
 * sends only what came since (each record at most once). */
static void flight_recorder_snapshots(struct ktest *t)
{
	const char *patterns[] = {"jp.bench_nop"};
	memset(&captured, 0, sizeof captured);
	bench_index = jp_index(jp_find("jp.bench_nop"));
	ASSERT_EQ(t, trace_start_flight(&memory_sink, "", patterns, 1), 0);
	EXPECT_EQ(t, trace_snapshot(), 0);
	uint64_t empty_snapshot = captured.records;
	unsigned packets = captured.packets;
	for (int i = 0; i < 40000; i++)
		jp_bench_nop(); /* far more than a ring holds */
	EXPECT_EQ(t, captured.packets, packets); /* nothing leaves without a snapshot */
	ASSERT_EQ(t, trace_snapshot(), 0);
	uint64_t first = captured.records - empty_snapshot;
	EXPECT_TRUE(t, first > 1000 && first < 40000);
	EXPECT_TRUE(t, captured.calls > 1000);
	ASSERT_EQ(t, trace_snapshot(), 0);
	EXPECT_TRUE(t, captured.records - empty_snapshot - first < 1000);
	struct trace_end end;
	ASSERT_EQ(t, trace_stop(&end), 0);
	EXPECT_EQ(t, end.delivered, captured.records);
	EXPECT_EQ(t, end.recorded, end.delivered + end.dropped);
	EXPECT_TRUE(t, end.dropped > 0);
	EXPECT_EQ(t, captured.backwards, 0);
	EXPECT_EQ(t, captured.order_errors, 0);
	EXPECT_EQ(t, trace_snapshot(), -ENOENT);
	ASSERT_EQ(t, trace_start(&memory_sink, "", patterns, 1), 0);
	EXPECT_EQ(t, trace_snapshot(), -EINVAL); /* a stream trace has no snapshots */
	trace_stop(NULL);
}

static void bad_starts_are_refused(struct ktest *t)
{
	const char *none[] = {"no.such.joinpoint"};
	EXPECT_EQ(t, trace_start(&memory_sink, "", none, 1), -ENOENT);
	EXPECT_FALSE(t, trace_running());
	EXPECT_EQ(t, trace_start(NULL, "", none, 0), -EINVAL);
	const char *many[TRACE_PATTERNS_MAX + 1] = {0};
	EXPECT_EQ(t, trace_start(&memory_sink, "", many, TRACE_PATTERNS_MAX + 1), -EINVAL);
	/* The stream alone, no join point: the kernel's own events. */
	ASSERT_EQ(t, trace_start(&memory_sink, "", NULL, 0), 0);
	sched_yield();
	struct trace_end end;
	ASSERT_EQ(t, trace_stop(&end), 0);
	EXPECT_EQ(t, end.recorded, end.delivered + end.dropped);
	EXPECT_TRUE(t, captured.records > 0); /* at least the threads' names */
}

/* Control bytes from a host, in chunks that split lines and files anywhere:
 * a file comes whole into /tmp, a too-long line and a bad put are refused
 * with an answer, and the next line still runs. */
static char answers[512];
static size_t answers_length;

static int keep_answer(void *context, uint16_t kind, uint16_t stream, const void *data,
		       uint32_t length)
{
	if (kind == TRACE_FRAME_TEXT && answers_length + length < sizeof answers) {
		memcpy(answers + answers_length, data, length);
		answers_length += length;
		answers[answers_length] = 0;
	}
	return 0;
}

static const struct trace_sink answer_sink = {.name = "test-answers", .frame = keep_answer};

static void feed_in_chunks(struct trace_control *control, const char *text, size_t length,
			   size_t chunk)
{
	for (size_t at = 0; at < length; at += chunk)
		trace_control_bytes(control, (const uint8_t *)text + at,
				    length - at < chunk ? length - at : chunk);
}

static void control_bytes_split_anywhere(struct ktest *t)
{
	static char input[600];
	size_t length = 0;
	length += (size_t)snprintf(input, sizeof input, "put ktest-put.txt 11\nhello\nworld");
	length += (size_t)snprintf(input + length, sizeof input - length, "put ../x 1\n");
	memset(input + length, 'a', 300);
	length += 300;
	input[length++] = '\n';
	length += (size_t)snprintf(input + length, sizeof input - length, "trace stop\n");
	for (size_t chunk = 1; chunk <= 7; chunk += 3) {
		static struct trace_control control;
		memset(&control, 0, sizeof control);
		control.sink = &answer_sink;
		answers_length = 0;
		feed_in_chunks(&control, input, length, chunk);
		EXPECT_TRUE(t, contains(answers, (uint32_t)answers_length,
					"stored /tmp/ktest-put.txt (11 bytes)"));
		EXPECT_TRUE(t, contains(answers, (uint32_t)answers_length, "error -22 storing"));
		EXPECT_TRUE(t, contains(answers, (uint32_t)answers_length, "line too long"));
		EXPECT_TRUE(t, contains(answers, (uint32_t)answers_length, "no trace runs"));
		EXPECT_TRUE(t, control.put_data == NULL);
	}
	struct vfs_file *file;
	ASSERT_EQ(t, vfs_open("/tmp/ktest-put.txt", VFS_O_RDONLY, 0, &file), 0);
	char back[16] = {0};
	EXPECT_EQ(t, vfs_read(file, back, sizeof back), 11);
	EXPECT_EQ(t, memcmp(back, "hello\nworld", 11), 0);
	vfs_close(file);
	vfs_unlink("/tmp/ktest-put.txt", false);
}

KTEST_SUITE(trace, KTEST_CASE(calls_come_out_as_records),
	    KTEST_CASE(a_flooded_ring_counts_every_record), KTEST_CASE(flight_recorder_snapshots),
	    KTEST_CASE(bad_starts_are_refused),
	    KTEST_CASE(control_bytes_split_anywhere));
