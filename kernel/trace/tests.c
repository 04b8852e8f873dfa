/*
 * The trace suite: a session into a sink that keeps its frames in memory.
 * The metadata comes first and names the recorded join points; calls of a
 * join point that cannot sleep come out as call records, of one that may
 * sleep as entry and exit pairs, in packets whose records time forward; a
 * flooded ring (the drainer held off) refuses and counts, and then recorded
 * = delivered + dropped exactly; END comes last with those counts.  A sink
 * that reads packets in place gets records that stay in the ring, untouched,
 * until it settles.
 */
#include "trace/internal.h"

#include "cpu/percpu.h"
#include "joinpoint/joinpoint.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/format.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "sched/sched.h"
#include "telemetry/tracepoint.h"
#include "time/time.h"
#include "trace/ctf.h"
#include "trace/uscope_syscall.h"
#include "uapi/telemetry.h"
#include "vfs/vfs.h"

/* The join points jp_bench measures (kernel/joinpoint/bench_target.c): one
 * that cannot sleep and one declared the default way, both doing nothing. */
void jp_bench_nop(void);
void jp_bench_nop_sleeps(void);

/* Join points of the joinpoint suite (kernel/joinpoint/tests.c), all
 * _NOSLEEP: a + b; fast_add(value, 1) * 2 + add(0, 0); a + 2b + ... + 6f. */
long jptest_fast_add(long a, long b);
long jptest_fast_outer(long value);
long jptest_fast_six(long a, long b, long c, long d, long e, long f);
/* ... and two that may sleep: a + b; add(value, 1) * 2. */
long jptest_add(long a, long b);
long jptest_outer(long value);

/* A call record of a join point other than jp.bench_nop. */
struct logged_call {
	unsigned index;
	struct trace_jp_call call;
};
#define CALL_LOG_MAX 16

/* An entry or exit record of a watched join point (watched, below). */
struct logged_word {
	uint16_t type;
	int64_t word;
};
#define WORD_LOG_MAX 16

struct captured {
	unsigned metadata, packets, ends, texts, order_errors;
	struct logged_call call_log[CALL_LOG_MAX];
	unsigned logged;
	struct logged_word word_log[WORD_LOG_MAX];
	uint64_t word_time[WORD_LOG_MAX]; /* each one's time, as the reader finds it */
	unsigned words_logged;
	/* watched entries and exits, and exits whose result is not twice the
	 * argument of their own call or a later one (add(i, i) in a loop: a
	 * dropped record may come between an entry and the next exit) */
	uint64_t watched_entries, watched_exits, wrong_exits;
	struct logged_word last_word[MAX_CPUS];
	bool metadata_names_bench;
	uint64_t calls, entries, exits, records, backwards;
	uint64_t last_time[MAX_CPUS];
	uint64_t call_time; /* of the last call record of jp.bench_nop */
	struct trace_end end;
	volatile bool hold; /* the drainer waits in the sink: nothing leaves the rings */
};

static struct captured captured;

static unsigned bench_index, sleeps_index;
/* The join points whose entry and exit records are logged (0: none). */
static const struct joinpoint *watched[2];

static bool is_watched_word(uint16_t type)
{
	for (unsigned i = 0; i < 2; i++) {
		uint16_t entry =
		    watched[i] ? TRACE_JP_EVENT(jp_index(watched[i]), TRACE_JP_ENTRY) : 0;
		if (entry && (type == entry || type == entry + 1))
			return true;
	}
	return false;
}

static void log_word(const struct tel_record *r, unsigned cpu)
{
	if (!is_watched_word(r->type))
		return;
	struct logged_word word = {.type = r->type};
	memcpy(&word.word, tel_record_payload(r), sizeof word.word);
	bool exit = (r->type - TRACE_JP_BASE) % 3 == TRACE_JP_EXIT;
	captured.watched_entries += !exit;
	captured.watched_exits += exit;
	const struct logged_word *last = &captured.last_word[cpu];
	captured.wrong_exits +=
	    exit && last->type == r->type - 1 && (word.word % 2 || word.word / 2 < last->word);
	if (!exit)
		captured.last_word[cpu] = word;
	if (captured.words_logged < WORD_LOG_MAX) {
		captured.word_time[captured.words_logged] = captured.last_time[cpu];
		captured.word_log[captured.words_logged++] = word;
	}
}

static void log_call(const struct tel_record *r)
{
	unsigned event = r->type - TRACE_JP_BASE;
	if (r->type < TRACE_JP_BASE || event % 3 != TRACE_JP_CALL || event / 3 == bench_index ||
	    captured.logged == CALL_LOG_MAX)
		return;
	struct logged_call *log = &captured.call_log[captured.logged++];
	log->index = event / 3;
	memcpy(&log->call, tel_record_payload(r), sizeof log->call);
}

static void count_records(const uint8_t *records, uint64_t bytes, unsigned cpu)
{
	for (uint64_t at = 0; at < bytes;) {
		const struct tel_record *r = (const void *)(records + at);
		uint64_t before = captured.last_time[cpu];
		captured.backwards += tel_record_time(r, &captured.last_time[cpu]) < before;
		captured.records++;
		captured.calls += r->type == TRACE_JP_EVENT(bench_index, TRACE_JP_CALL);
		if (r->type == TRACE_JP_EVENT(bench_index, TRACE_JP_CALL))
			captured.call_time = captured.last_time[cpu];
		captured.entries += r->type == TRACE_JP_EVENT(sleeps_index, TRACE_JP_ENTRY);
		captured.exits += r->type == TRACE_JP_EVENT(sleeps_index, TRACE_JP_EXIT);
		log_call(r);
		log_word(r, cpu);
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

static const struct logged_call *logged_with(unsigned index, uint64_t arg0)
{
	for (unsigned i = 0; i < captured.logged; i++)
		if (captured.call_log[i].index == index && captured.call_log[i].call.arg0 == arg0)
			return &captured.call_log[i];
	return NULL;
}

/* What a call record holds, whichever way it was written: the recorder's own
 * fast path (alone on a join point, with six arguments or none), or the C
 * recorder for a call nested in another recorded call.  An untraced thread's
 * calls leave no record. */
static void call_records_carry_argument_result_and_duration(struct ktest *t)
{
	const char *patterns[] = {"jptest.fast_add", "jptest.fast_outer", "jptest.fast_six"};
	start_recording(t, patterns, 3);
	EXPECT_EQ(t, jptest_fast_add(41, 1), 42);
	EXPECT_EQ(t, jptest_fast_six(7, 1, 0, 0, 0, 1), 15);
	EXPECT_EQ(t, jptest_fast_outer(5), 12);
	EXPECT_EQ(t, jptest_fast_add(-3, 1), -2);
	thread_set_untraced(true);
	EXPECT_EQ(t, jptest_fast_add(1000, 1), 1001);
	thread_set_untraced(false);
	ASSERT_EQ(t, trace_stop(NULL), 0);

	unsigned add = jp_index(jp_find("jptest.fast_add"));
	unsigned six = jp_index(jp_find("jptest.fast_six"));
	unsigned outer = jp_index(jp_find("jptest.fast_outer"));
	EXPECT_EQ(t, captured.logged, 5);
	const struct logged_call *plain = logged_with(add, 41), *sixfold = logged_with(six, 7);
	const struct logged_call *negative = logged_with(add, (uint64_t)-3);
	const struct logged_call *inner = logged_with(add, 5), *around = logged_with(outer, 5);
	ASSERT_TRUE(t, plain && sixfold && negative && inner && around);
	EXPECT_EQ(t, plain->call.result, 42);
	EXPECT_EQ(t, sixfold->call.result, 15);
	EXPECT_EQ(t, negative->call.result, -2);
	EXPECT_EQ(t, inner->call.result, 6);
	EXPECT_EQ(t, around->call.result, 12);
	EXPECT_TRUE(t, plain->call.duration > 0);
	EXPECT_TRUE(t, around->call.duration > inner->call.duration);
	EXPECT_TRUE(t, logged_with(add, 1000) == NULL);
	EXPECT_EQ(t, captured.backwards, 0);
}

/* The recorder alone on join points that may sleep (record_fast.c's whole
 * call): an entry record with the first argument and an exit record with
 * the result, each of its own join point's type, nested calls inside their
 * caller's pair; none for an untraced thread.  Pinned to one CPU, so the
 * records come in one stream, in order. */
static void whole_calls_record_entry_and_exit(struct ktest *t)
{
	uint64_t affinity = thread_pin_here();
	const struct joinpoint *add = jp_find("jptest.add"), *outer = jp_find("jptest.outer");
	const char *patterns[] = {"jptest.add", "jptest.outer"};
	watched[0] = add;
	watched[1] = outer;
	start_recording(t, patterns, 2);
	EXPECT_EQ(t, jptest_add(40, 2), 42);
	EXPECT_EQ(t, jptest_outer(5), 12);
	thread_set_untraced(true);
	EXPECT_EQ(t, jptest_add(1000, 1), 1001);
	thread_set_untraced(false);
	EXPECT_EQ(t, jptest_add(-5, 3), -2);
	ASSERT_EQ(t, trace_stop(NULL), 0);
	thread_set_affinity(thread_current(), affinity);
	watched[0] = watched[1] = NULL;

	uint16_t add_entry = TRACE_JP_EVENT(jp_index(add), TRACE_JP_ENTRY);
	uint16_t outer_entry = TRACE_JP_EVENT(jp_index(outer), TRACE_JP_ENTRY);
	const struct logged_word expected[] = {
	    {add_entry, 40},    {add_entry + 1, 42},   {outer_entry, 5}, {add_entry, 5},
	    {add_entry + 1, 6}, {outer_entry + 1, 12}, {add_entry, -5},  {add_entry + 1, -2}};
	ASSERT_EQ(t, captured.words_logged, sizeof expected / sizeof expected[0]);
	for (unsigned i = 0; i < captured.words_logged; i++) {
		EXPECT_EQ(t, captured.word_log[i].type, expected[i].type);
		EXPECT_EQ(t, captured.word_log[i].word, expected[i].word);
	}
	EXPECT_EQ(t, captured.backwards, 0);
}

/* The ring's last record written in C at a time of its own, later than
 * this CPU's clock (one another CPU's clock stamped: the ring keeps it, as
 * time never goes back there), then a whole call: its entry record must
 * read as that time (clamped) or later, and never past both that time and
 * the clock (a compact time read against the wrong high half is 2^32 ticks
 * off).  ahead(now) gives the time. */
static void whole_call_after_a_later_record(struct ktest *t, uint64_t (*ahead)(uint64_t now))
{
	const struct joinpoint *add = jp_find("jptest.add");
	const char *patterns[] = {"jptest.add"};
	watched[0] = add;
	start_recording(t, patterns, 1);
	uint64_t mark = 7, flags = irq_save(), later = ahead(rdtsc());
	tracepoint_record_irqs_off(TRACE_JP_EVENT(bench_index, TRACE_JP_CALL), later, &mark,
				   sizeof mark);
	irq_restore(flags);
	EXPECT_EQ(t, jptest_add(20, 1), 21);
	uint64_t clock = rdtsc();
	ASSERT_EQ(t, trace_stop(NULL), 0);
	watched[0] = NULL;
	EXPECT_EQ(t, captured.call_time, later);
	ASSERT_EQ(t, captured.words_logged, 2);
	EXPECT_EQ(t, captured.word_log[0].type, TRACE_JP_EVENT(jp_index(add), TRACE_JP_ENTRY));
	EXPECT_TRUE(t, captured.word_time[0] >= later);
	EXPECT_TRUE(t, captured.word_time[0] <= (later > clock ? later : clock));
	EXPECT_EQ(t, captured.backwards, 0);
}

/* Later in the same high half (when there is room for it). */
static uint64_t later_low_half(uint64_t now)
{
	return (uint32_t)now < 0xc0000000u ? now + (1u << 28) : now;
}

/* The start of the next high half. */
static uint64_t next_high_half(uint64_t now)
{
	return ((now >> 32) + 1) << 32;
}

/* The whole-call path compares the time's high half with the ring's last
 * record's, then the low half with it: a last record ahead of this CPU's
 * clock, in either half, sends the record to C.  Last in the suite: the
 * ring's time then runs ahead of the clock until the clock passes it. */
static void whole_calls_after_a_later_record_never_go_back(struct ktest *t)
{
	uint64_t affinity = thread_pin_here();
	whole_call_after_a_later_record(t, later_low_half);
	whole_call_after_a_later_record(t, next_high_half);
	thread_set_affinity(thread_current(), affinity);
}

/* Whole calls through a ring that wraps, or fills, whether the drainer keeps
 * up or not: records at the ring's end or in a full ring go through C, every
 * call's two records are delivered or counted as dropped, and every exit
 * carries its call's result. */
static void whole_calls_through_a_wrapping_ring(struct ktest *t)
{
	uint64_t affinity = thread_pin_here();
	const char *patterns[] = {"jptest.add"};
	watched[0] = jp_find("jptest.add");
	start_recording(t, patterns, 1);
	enum { CALLS = 60000 }; /* 1.9 MB of records through a ring of 512 KiB */
	long wrong = 0;
	for (long i = 0; i < CALLS; i++)
		wrong += jptest_add(i, i) != 2 * i;
	struct trace_end end;
	ASSERT_EQ(t, trace_stop(&end), 0);
	thread_set_affinity(thread_current(), affinity);
	watched[0] = NULL;
	EXPECT_EQ(t, wrong, 0);
	EXPECT_EQ(t, captured.wrong_exits, 0);
	EXPECT_TRUE(t, captured.watched_entries <= CALLS && captured.watched_exits <= CALLS);
	EXPECT_TRUE(t,
		    captured.watched_entries + captured.watched_exits + end.dropped >= 2 * CALLS);
	EXPECT_EQ(t, end.recorded, end.delivered + end.dropped);
	EXPECT_EQ(t, end.delivered, captured.records);
	EXPECT_EQ(t, captured.backwards, 0);
	EXPECT_EQ(t, captured.order_errors, 0);
}

/* Far more records than a ring holds, written while the drainer waits in
 * the sink: the ring refuses and counts. */
static void a_flooded_ring_counts_every_record(struct ktest *t)
{
	const char *patterns[] = {"jp.bench_nop"};
	start_recording(t, patterns, 1);
	captured.hold = true;
	for (int i = 0; i < 80000; i++)
		jp_bench_nop();
	captured.hold = false;
	struct trace_end end;
	ASSERT_EQ(t, trace_stop(&end), 0);
	EXPECT_TRUE(t, end.dropped > 0);
	EXPECT_EQ(t, end.recorded, end.delivered + end.dropped);
	EXPECT_EQ(t, end.delivered, captured.records);
	EXPECT_TRUE(t, captured.calls + end.dropped >= 80000);
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
		jp_bench_nop();                  /* far more than a ring holds */
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

/* ---- A sink that reads packets in place (frame_lent) ---------------------- */

/* What the last lent packet held, copied when it was lent: its parts must
 * still hold exactly that when the sink settles, however many records the
 * producers wrote meanwhile (the ring's room is freed only after). */
static struct {
	uint8_t *copy;
	struct trace_part parts[TRACE_LENT_PARTS];
	unsigned count, lent, settles, changed_while_lent;
} lending;

#define LENDING_COPY_BYTES (256 * 1024)

static int keep_lent(void *context, uint16_t kind, uint16_t stream, const struct trace_part *parts,
		     unsigned count)
{
	uint32_t length = 0;
	for (unsigned i = 0; i < count; i++) {
		if (length + parts[i].length > LENDING_COPY_BYTES)
			return -ENOSPC;
		memcpy(lending.copy + length, parts[i].data, parts[i].length);
		length += parts[i].length;
		lending.parts[i] = parts[i];
	}
	lending.count = count;
	lending.lent++;
	return keep_frame(context, kind, stream, lending.copy, length);
}

/* Like a device that reads slowly: never done when asked without waiting,
 * so the records stay lent until the drainer's next pass waits. */
static int settle_lent(void *context, bool wait)
{
	if (!wait)
		return -EAGAIN;
	uint32_t at = 0;
	for (unsigned i = 0; i < lending.count; i++) {
		lending.changed_while_lent +=
		    memcmp(lending.copy + at, lending.parts[i].data, lending.parts[i].length) != 0;
		at += lending.parts[i].length;
	}
	lending.count = 0;
	lending.settles++;
	return 0;
}

static const struct trace_sink lending_sink = {
    .name = "test-lending", .frame = keep_frame, .frame_lent = keep_lent, .settle = settle_lent};

/* Records lent to the sink stay in the ring until it settles: each round
 * the drainer lends a batch that fits a packet and is held in the sink
 * with it, while a flood of more than the ring holds comes (the ring fills
 * and refuses); the batch is still as lent when the sink settles, and every
 * record is delivered or counted as dropped. */
static void lent_packets_keep_their_records_until_the_sink_settles(struct ktest *t)
{
	const char *patterns[] = {"jp.bench_nop"};
	memset(&lending, 0, sizeof lending);
	lending.copy = mm_alloc_pages(LENDING_COPY_BYTES / PAGE_SIZE, PAGE_SIZE);
	ASSERT_TRUE(t, lending.copy != NULL);
	memset(&captured, 0, sizeof captured);
	bench_index = jp_index(jp_find("jp.bench_nop"));
	/* On one CPU, so that the floods go into the ring that was lent. */
	uint64_t affinity = thread_pin_here();
	ASSERT_EQ(t, trace_start(&lending_sink, "", patterns, 1), 0);
	for (int round = 0; round < 5; round++) {
		unsigned lent_before = __atomic_load_n(&lending.lent, __ATOMIC_ACQUIRE);
		captured.hold = true;          /* the drainer stays in the sink with what it lent */
		for (int i = 0; i < 2000; i++) /* well under a packet: lent */
			jp_bench_nop();
		uint64_t guard = clock_ns() + 10ull * 1000 * 1000 * 1000; /* only against a hang */
		while (__atomic_load_n(&lending.lent, __ATOMIC_ACQUIRE) == lent_before &&
		       clock_ns() < guard)
			sched_sleep_ns(1000 * 1000);
		for (int i = 0; i < 60000; i++) /* more than the whole ring, while it is lent */
			jp_bench_nop();
		captured.hold = false;
		sched_sleep_ns(3 * 1000 * 1000);
	}
	struct trace_end end;
	ASSERT_EQ(t, trace_stop(&end), 0);
	thread_set_affinity(thread_current(), affinity);
	EXPECT_TRUE(t, lending.lent >= 5);
	EXPECT_TRUE(t, lending.settles > 0);
	EXPECT_EQ(t, lending.changed_while_lent, 0);
	EXPECT_TRUE(t, end.dropped > 0); /* the floods filled the ring */
	EXPECT_EQ(t, end.recorded, end.delivered + end.dropped);
	EXPECT_EQ(t, end.delivered, captured.records);
	EXPECT_EQ(t, captured.backwards, 0);
	EXPECT_EQ(t, captured.order_errors, 0);
	mm_free_pages(lending.copy, LENDING_COPY_BYTES / PAGE_SIZE);
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

static int write_whole(const char *path, const char *text)
{
	struct vfs_file *file;
	int error = vfs_open(path, VFS_O_WRONLY | VFS_O_CREAT | VFS_O_TRUNC, 0644, &file);
	if (error)
		return error;
	int64_t written = vfs_write(file, text, strlen(text));
	vfs_close(file);
	return written == (int64_t)strlen(text) ? 0 : -EIO;
}

static bool holds(const char *path, const char *text)
{
	struct vfs_file *file;
	char back[16] = {0};
	if (vfs_open(path, VFS_O_RDONLY, 0, &file))
		return false;
	int64_t n = vfs_read(file, back, sizeof back - 1);
	vfs_close(file);
	return n == (int64_t)strlen(text) && memcmp(back, text, (size_t)n) == 0;
}

/* The kernel writes past every permission bit, so a put must not write
 * through a name another user planted in /tmp (a link to root's file, or the
 * user's own file that it could change before the object is linked), and a
 * trace directory that is not root's alone is refused. */
static void stores_follow_no_planted_name(struct ktest *t)
{
	vfs_unlink("/tmp/ktest-planted", false);
	ASSERT_EQ(t, write_whole("/tmp/ktest-victim", "keep"), 0);
	ASSERT_EQ(t, vfs_symlink("/tmp/ktest-victim", "/tmp/ktest-planted"), 0);
	static struct trace_control control;
	memset(&control, 0, sizeof control);
	control.sink = &answer_sink;
	answers_length = 0;
	static const char put[] = "put ktest-planted 4\nabcd";
	feed_in_chunks(&control, put, sizeof put - 1, 3);
	EXPECT_TRUE(t, contains(answers, (uint32_t)answers_length, "stored /tmp/ktest-planted"));
	EXPECT_TRUE(t, holds("/tmp/ktest-victim", "keep"));
	struct vfs_stat st;
	ASSERT_EQ(t, vfs_lstat("/tmp/ktest-planted", &st), 0);
	EXPECT_TRUE(t, VFS_IS_REG(st.mode) && st.uid == 0 && (st.mode & 0777) == 0600);
	EXPECT_TRUE(t, holds("/tmp/ktest-planted", "abcd"));
	vfs_unlink("/tmp/ktest-planted", false);
	vfs_unlink("/tmp/ktest-victim", false);

	ASSERT_EQ(t, vfs_mkdir("/tmp/ktest-users-dir", 0777), 0);
	ASSERT_EQ(t, vfs_chown("/tmp/ktest-users-dir", 1000, 1000, false), 0);
	const struct trace_sink *file_sink = trace_find_sink("file");
	ASSERT_TRUE(t, file_sink != NULL);
	EXPECT_EQ(t, trace_start(file_sink, "/tmp/ktest-users-dir", NULL, 0), -EPERM);
	EXPECT_FALSE(t, trace_running());
	vfs_unlink("/tmp/ktest-users-dir", true);
}

static unsigned count_of(const char *text, const char *word)
{
	size_t length = strlen(text), word_length = strlen(word);
	unsigned count = 0;
	for (size_t at = 0; at + word_length <= length; at++)
		count += !memcmp(text + at, word, word_length);
	return count;
}

static void fresh_control(struct trace_control *control)
{
	trace_control_end(control);
	memset(control, 0, sizeof *control);
	control->sink = &answer_sink;
	answers_length = 0;
	answers[0] = 0;
}

/* A refused put's bytes are skipped, never read as lines; a put without a
 * LENGTH stops the reading until the host reconnects; a host's half line does
 * not reach the next host. */
static void refused_puts_run_none_of_their_bytes(struct ktest *t)
{
	static char input[600];
	static char name[80];
	memset(name, 'a', 70);
	memcpy(name + 70, ".o", 3);
	size_t length = (size_t)snprintf(input, sizeof input, "put %s 44\n", name);
	for (int i = 0; i < 4; i++) /* the file's bytes: lines, if they were read as such */
		length += (size_t)snprintf(input + length, sizeof input - length, "trace stop\n");
	length += (size_t)snprintf(input + length, sizeof input - length, "trace stop\n");
	static struct trace_control control;
	for (size_t chunk = 1; chunk <= 7; chunk += 3) {
		fresh_control(&control);
		feed_in_chunks(&control, input, length, chunk);
		EXPECT_TRUE(t, count_of(answers, "its 44 bytes skipped") == 1);
		EXPECT_EQ(t, count_of(answers, "no trace runs"), 1);
	}
	fresh_control(&control);
	static const char no_length[] = "put a.o xyz\ntrace stop\n";
	feed_in_chunks(&control, no_length, sizeof no_length - 1, 3);
	EXPECT_TRUE(t, count_of(answers, "ignored until the host reconnects") == 1);
	EXPECT_EQ(t, count_of(answers, "no trace runs"), 0);
	trace_control_end(&control); /* the host reconnects */
	static const char half[] = "trace sta";
	feed_in_chunks(&control, half, sizeof half - 1, 4);
	trace_control_end(&control);
	static const char next[] = "trace stop\n";
	feed_in_chunks(&control, next, sizeof next - 1, 4);
	EXPECT_EQ(t, count_of(answers, "no trace runs"), 1);
	trace_control_end(&control);
}

/* The last TEXT frame, whole. */
static char last_answer[4096];
static uint32_t last_answer_length;

static int keep_last_answer(void *context, uint16_t kind, uint16_t stream, const void *data,
			    uint32_t length)
{
	if (kind == TRACE_FRAME_TEXT && length < sizeof last_answer) {
		memcpy(last_answer, data, length);
		last_answer[length] = 0;
		last_answer_length = length;
	}
	return 0;
}

static const struct trace_sink last_answer_sink = {.name = "test-last", .frame = keep_last_answer};

/* A shell line's answer longer than the frame is cut, says so, and still
 * ends with its status; a flight recorder takes as many patterns as a
 * stream. */
static void long_answers_and_full_pattern_lists(struct ktest *t)
{
	ASSERT_EQ(t, trace_control_line(&last_answer_sink, "jp list"), 0);
	EXPECT_TRUE(t, count_of(last_answer, "[answer cut at") == 1);
	EXPECT_TRUE(t, last_answer_length >= 3 &&
			   !strcmp(last_answer + last_answer_length - 3, "ok\n"));
	static char line[TRACE_CONTROL_LINE_MAX];
	size_t used = (size_t)snprintf(line, sizeof line, "trace start --flight");
	static const char *const patterns[] = {
	    "jp.bench_nop", "jp.bench_nop_sleeps", "ipc.send",    "ipc.call",   "ipc.receive",
	    "ipc.reply",    "sched.yield",         "sched.sleep", "sched.spawn"};
	_Static_assert(sizeof patterns / sizeof patterns[0] == TRACE_PATTERNS_MAX + 1,
		       "one pattern more than a start takes");
	for (int i = 0; i < TRACE_PATTERNS_MAX; i++)
		used += (size_t)snprintf(line + used, sizeof line - used, " %s", patterns[i]);
	EXPECT_EQ(t, trace_control_line(&last_answer_sink, line), 0);
	EXPECT_TRUE(t, count_of(last_answer, "trace started (flight recorder)") == 1);
	struct trace_end end;
	EXPECT_EQ(t, trace_stop(&end), 0);
	snprintf(line + used, sizeof line - used, " %s", patterns[TRACE_PATTERNS_MAX]);
	EXPECT_EQ(t, trace_control_line(&last_answer_sink, line), -EINVAL);
	EXPECT_FALSE(t, trace_running());
}

/* The system call's path reads one word per slot of the trace map
 * (uscope_syscall.h): the memo's key config, with the stream's epoch in its
 * upper half, exactly while the entry wants every call's stack and a stream
 * takes references; 0 otherwise, so the path asks nothing else. */
static void the_system_calls_word_says_when_its_fast_path_applies(struct ktest *t)
{
	int every = uscope_trace("ktest-every", 2, 5, "*");
	int named = uscope_trace("ktest-named", 2, 5, "sys.read");
	ASSERT_TRUE(t, every > 0 && named > 0);
	uscope_stream_ends();
	EXPECT_EQ(t, uscope_call_config[every], 0);
	uscope_stream_begins(true);
	uint64_t first = uscope_call_config[every];
	EXPECT_EQ(t, first & 0xffffffff, 2u | 5u << 8); /* the mode, the frames it keeps */
	EXPECT_TRUE(t, first >> 32 != 0);
	EXPECT_EQ(t, uscope_call_config[named], 0); /* a pattern: matched by name, slowly */
	uscope_stream_lost();                       /* a new epoch: no entry matches the new keys */
	EXPECT_EQ(t, uscope_call_config[every] & 0xffffffff, first & 0xffffffff);
	EXPECT_TRUE(t, uscope_call_config[every] >> 32 != 0);
	EXPECT_TRUE(t, uscope_call_config[every] >> 32 != first >> 32);
	uscope_stream_begins(false); /* a flight recorder: no references */
	EXPECT_EQ(t, uscope_call_config[every], 0);
	uscope_stream_begins(true);
	EXPECT_EQ(t, uscope_untrace("ktest-every"), 0);
	EXPECT_EQ(t, uscope_call_config[every], 0);
	EXPECT_EQ(t, uscope_untrace("ktest-named"), 0);
	uscope_stream_ends();
}

KTEST_SUITE(trace, KTEST_CASE(calls_come_out_as_records),
	    KTEST_CASE(call_records_carry_argument_result_and_duration),
	    KTEST_CASE(whole_calls_record_entry_and_exit),
	    KTEST_CASE(whole_calls_through_a_wrapping_ring),
	    KTEST_CASE(a_flooded_ring_counts_every_record), KTEST_CASE(flight_recorder_snapshots),
	    KTEST_CASE(lent_packets_keep_their_records_until_the_sink_settles),
	    KTEST_CASE(bad_starts_are_refused), KTEST_CASE(control_bytes_split_anywhere),
	    KTEST_CASE(refused_puts_run_none_of_their_bytes),
	    KTEST_CASE(stores_follow_no_planted_name),
	    KTEST_CASE(long_answers_and_full_pattern_lists),
	    KTEST_CASE(the_system_calls_word_says_when_its_fast_path_applies),
	    KTEST_CASE(whole_calls_after_a_later_record_never_go_back));
