/*
 * The telemetry suite: a channel's records land in the ring of the CPU that
 * emitted them, in order, with timestamps that never go back (compact ones
 * reconstructed from the extended ones), a full stream channel
 * drops and counts, a flight recorder snapshot shows the newest, and with
 * producers on every CPU each record is read or counted as dropped.  A
 * shared channel maps read-only except its position pages, and a bogus
 * position from its consumer drops records but never moves a write out of
 * the ring.  A producer writing this CPU's ring in place fills it, then
 * drops and counts.
 */
#include "telemetry/internal.h"

#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "sched/sched.h"
#include "time/time.h"

static uint8_t buffer[8192] __attribute__((aligned(16)));

/* Counts the records in data and how many go back in time (from *last, the
 * time of the record before them; updated). */
static int count_records(const uint8_t *data, int64_t bytes, uint64_t *last, int *backwards)
{
	int n = 0;
	for (int64_t at = 0; at < bytes; n++) {
		const struct tel_record *r = (const void *)(data + at);
		uint64_t before = *last;
		*backwards += tel_record_time(r, last) < before;
		at += (int64_t)tel_record_bytes(r);
	}
	return n;
}

/* The index'th record in data. */
static const struct tel_record *record_number(const uint8_t *data, int64_t bytes, int index)
{
	for (int64_t at = 0; at < bytes; index--) {
		const struct tel_record *r = (const void *)(data + at);
		if (!index)
			return r;
		at += (int64_t)tel_record_bytes(r);
	}
	return NULL;
}

static void records_land_on_this_cpu(struct ktest *t)
{
	struct tel_channel *ch = tel_channel_create("test", 4096, TEL_STREAM);
	ASSERT_TRUE(t, ch != NULL);
	EXPECT_TRUE(t, tel_channel_by_id(tel_channel_id(ch)) == ch);
	preempt_disable(); /* stay on one CPU */
	unsigned cpu = this_cpu_id();
	uint64_t before = rdtsc();
	for (uint64_t i = 0; i < 5; i++)
		EXPECT_EQ(t, tel_channel_emit(ch, 7, &i, sizeof i), 0);
	preempt_enable();
	int64_t bytes = tel_channel_read(ch, cpu, buffer, sizeof buffer);
	/* The ring's first record carries the full time; the others are compact. */
	EXPECT_EQ(t, bytes, TEL_RECORD_SIZE(8, TEL_EXTENDED) + 4 * TEL_RECORD_SIZE(8, TEL_COMPACT));
	uint64_t last = 0;
	int backwards = 0;
	EXPECT_EQ(t, count_records(buffer, bytes, &last, &backwards), 5);
	EXPECT_EQ(t, backwards, 0);
	const struct tel_record *r = (const void *)buffer;
	EXPECT_EQ(t, r->type, 7);
	EXPECT_EQ(t, r->kind, TEL_EXTENDED);
	EXPECT_TRUE(t, *(const uint64_t *)(r + 1) >= before);
	for (int i = 0; i < 5; i++)
		EXPECT_EQ(t, *(const uint64_t *)tel_record_payload(record_number(buffer, bytes, i)),
			  (uint64_t)i);
	EXPECT_EQ(t, tel_channel_read(ch, cpu, buffer, sizeof buffer), 0);
	EXPECT_EQ(t, tel_channel_read(ch, MAX_CPUS, buffer, sizeof buffer), -EINVAL);
	uint8_t big[TEL_RECORD_MAX + 1];
	EXPECT_EQ(t, tel_channel_emit(ch, 7, big, sizeof big), -EINVAL);
	tel_channel_destroy(ch);
}

/* A stream channel that nobody reads fills up, then drops and counts. */
static void full_stream_channel_counts_drops(struct ktest *t)
{
	struct tel_channel *ch = tel_channel_create("test", 4096, TEL_STREAM);
	ASSERT_TRUE(t, ch != NULL);
	uint8_t payload[48] = {0};
	int ok = 0, dropped = 0;
	preempt_disable();
	unsigned cpu = this_cpu_id();
	for (int i = 0; i < 200; i++)
		*(tel_channel_emit(ch, 1, payload, sizeof payload) == 0 ? &ok : &dropped) += 1;
	preempt_enable();
	struct tel_ring_stats stats;
	EXPECT_EQ(t, tel_channel_get_stats(ch, cpu, &stats), 0);
	EXPECT_TRUE(t, ok >= (int)(4096 / TEL_RECORD_SIZE(48, TEL_EXTENDED)) - 1);
	EXPECT_TRUE(t, stats.size - stats.bytes_used < 2 * TEL_RECORD_SIZE(48, TEL_EXTENDED));
	EXPECT_EQ(t, stats.dropped, dropped);
	EXPECT_EQ(t, stats.produced, ok);
	tel_channel_destroy(ch);
}

static void flight_recorder_snapshot_has_the_newest(struct ktest *t)
{
	struct tel_channel *ch = tel_channel_create("test", 4096, TEL_FLIGHT_RECORDER);
	ASSERT_TRUE(t, ch != NULL);
	preempt_disable();
	unsigned cpu = this_cpu_id();
	for (uint64_t i = 0; i < 1000; i++)
		tel_channel_emit(ch, 2, &i, sizeof i);
	preempt_enable();
	int64_t bytes = tel_channel_snapshot(ch, cpu, buffer, sizeof buffer);
	ASSERT_TRUE(t, bytes > 0);
	uint64_t last_time = 0;
	int backwards = 0, held = count_records(buffer, bytes, &last_time, &backwards);
	const struct tel_record *last = record_number(buffer, bytes, held - 1);
	EXPECT_EQ(t, *(const uint64_t *)tel_record_payload(last), 999);
	/* An extended record within every eighth of the ring: a reader of the
	 * snapshot finds a full time early. */
	const struct tel_record *first_extended = (const void *)buffer;
	while (first_extended->kind != TEL_EXTENDED)
		first_extended = (const void *)((const uint8_t *)first_extended +
						tel_record_bytes(first_extended));
	EXPECT_TRUE(t, (const uint8_t *)first_extended - buffer <= 4096 / TEL_SYNC_FRACTION);
	struct tel_ring_stats stats;
	tel_channel_get_stats(ch, cpu, &stats);
	EXPECT_EQ(t, stats.produced, 1000);
	EXPECT_EQ(t, stats.dropped + (uint64_t)held, 1000);
	tel_channel_destroy(ch);
}

struct producer {
	struct tel_channel *channel;
	unsigned cpu;
	int count;
};

static int produce_on_cpu(void *arg)
{
	struct producer *p = arg;
	thread_set_affinity(thread_current(), 1ull << p->cpu);
	for (int i = 0; i < p->count; i++) {
		uint32_t value = (uint32_t)i;
		tel_channel_emit(p->channel, 3, &value, sizeof value);
		if (i % 64 == 0)
			sched_yield();
	}
	return 0;
}

/* Producers on every CPU at once: each record is read back from its own
 * CPU's ring or counted as dropped, none lost silently. */
static void every_record_is_read_or_counted(struct ktest *t)
{
	struct tel_channel *ch = tel_channel_create("test", 4096, TEL_STREAM);
	ASSERT_TRUE(t, ch != NULL);
	static struct producer producers[MAX_CPUS];
	struct thread *threads[MAX_CPUS];
	unsigned n = cpu_count;
	for (unsigned i = 0; i < n; i++) {
		producers[i] = (struct producer){ch, i, 500};
		threads[i] = thread_create(produce_on_cpu, &producers[i], "tel-producer",
					   SCHED_PRIORITY_NORMAL);
	}
	int read = 0, backwards = 0;
	uint64_t last[MAX_CPUS] = {0};
	bool running = true;
	while (running) {
		running = false;
		for (unsigned i = 0; i < n; i++) {
			running |= threads[i] && thread_state(threads[i]) != THREAD_DEAD;
			int64_t bytes = tel_channel_read(ch, i, buffer, sizeof buffer);
			read += count_records(buffer, bytes, &last[i], &backwards);
		}
		sched_yield();
	}
	for (unsigned i = 0; i < n; i++) {
		if (threads[i])
			thread_join(threads[i], NULL);
		int64_t bytes = tel_channel_read(ch, i, buffer, sizeof buffer);
		read += count_records(buffer, bytes, &last[i], &backwards);
	}
	struct tel_ring_stats totals;
	tel_channel_get_totals(ch, &totals);
	EXPECT_EQ(t, backwards, 0);
	EXPECT_EQ(t, read + totals.dropped, 500 * n);
	EXPECT_EQ(t, totals.consumed, read);
	tel_channel_destroy(ch);
}

/* Only a process maps a channel, and only once it is shared (the consumer's
 * view, header and data read-only, the position writable, is tested from
 * user space: userland/usertests). */
static void shared_channel_maps_only_into_a_process(struct ktest *t)
{
	struct tel_channel *ch = tel_channel_create("test", 4096, TEL_STREAM);
	ASSERT_TRUE(t, ch != NULL);
	struct tel_map map;
	EXPECT_EQ(t, tel_channel_map(ch, &map), -EINVAL); /* not shared yet */
	EXPECT_EQ(t, tel_channel_share(ch, 4242), 0);
	EXPECT_EQ(t, tel_channel_consumer(ch), 4242);
	EXPECT_EQ(t, tel_channel_map(ch, &map), -EPERM); /* a kernel thread has no memory */
	tel_channel_destroy(ch);
}

/* A channel the kernel drains itself is never shared: its writers commit
 * without updating a mirror. */
static void kernel_only_channel_is_never_shared(struct ktest *t)
{
	struct tel_channel *ch = tel_channel_create("test", 4096, TEL_STREAM);
	ASSERT_TRUE(t, ch != NULL);
	tel_channel_keep_for_kernel(ch);
	EXPECT_EQ(t, tel_channel_share(ch, 4242), -EBUSY);
	EXPECT_EQ(t, tel_channel_consumer(ch), 0);
	struct tel_map map;
	EXPECT_EQ(t, tel_channel_map(ch, &map), -EINVAL);
	tel_channel_destroy(ch);
}

/* Emits n 48-byte records on this CPU; returns how many went in. */
static int emit_some(struct tel_channel *ch, int n)
{
	uint8_t payload[48];
	memset(payload, 0x5a, sizeof payload);
	int ok = 0;
	for (int i = 0; i < n; i++)
		ok += tel_channel_emit(ch, 1, payload, sizeof payload) == 0;
	return ok;
}

/* A hostile consumer position: ahead of head, unaligned, or far behind. */
static void bogus_position_is_clamped(struct ktest *t)
{
	static struct tel_ring ring;
	static uint8_t area[3 * 4096] __attribute__((aligned(16)));
	static struct tel_ring_header header;
	static struct tel_ring_position position;
	memset(area, 0xee, sizeof area);
	ASSERT_EQ(t, tel_ring_init(&ring, area + 4096, 4096, TEL_STREAM), 0);
	ASSERT_EQ(t, tel_ring_share(&ring, &header, &position), 0);
	uint64_t bogus[] = {1ull << 62, 4, (uint64_t)-4096, 3 * 4096};
	uint8_t payload[48] = {0};
	int written = 0, refused = 0;
	for (unsigned b = 0; b < sizeof bogus / sizeof bogus[0]; b++) {
		for (int i = 0; i < 200; i++) {
			__atomic_store_n(&position.tail, bogus[b] + (uint64_t)i * 16,
					 __ATOMIC_RELEASE);
			int error = tel_ring_write(&ring, 1, 0, payload, sizeof payload);
			*(error == 0 ? &written : &refused) += 1;
		}
	}
	EXPECT_EQ(t, written + refused, 800);
	EXPECT_EQ(t, header.produced, (uint64_t)written);
	EXPECT_EQ(t, header.dropped, (uint64_t)refused);
	EXPECT_TRUE(t, header.head - ring.tail <= 4096);
	int outside = 0;
	for (unsigned i = 0; i < 4096; i++)
		outside += (area[i] != 0xee) + (area[2 * 4096 + i] != 0xee);
	EXPECT_EQ(t, outside, 0);
	/* A kernel reader after a bogus position skips to head, never beyond. */
	position.tail = 4;
	EXPECT_EQ(t, tel_ring_read(&ring, buffer, sizeof buffer), 0);
	EXPECT_EQ(t, position.tail, header.head);

	/* A channel: a position ahead of head makes the ring full (drops,
	 * counted); a sound one gives the room back. */
	struct tel_channel *ch = tel_channel_create("test", 4096, TEL_STREAM);
	ASSERT_TRUE(t, ch != NULL);
	ASSERT_EQ(t, tel_channel_share(ch, 4242), 0);
	preempt_disable();
	unsigned cpu = this_cpu_id();
	int first = emit_some(ch, 200);
	struct tel_ring_stats stats;
	tel_channel_get_stats(ch, cpu, &stats);
	preempt_enable();
	EXPECT_TRUE(t, first >= (int)(4096 / TEL_RECORD_SIZE(48, TEL_EXTENDED)) - 1);
	EXPECT_EQ(t, stats.dropped, 200 - first);
	int64_t bytes = tel_channel_read(ch, cpu, buffer, sizeof buffer);
	uint64_t last = 0;
	int backwards = 0;
	EXPECT_EQ(t, count_records(buffer, bytes, &last, &backwards), first);
	preempt_disable();
	EXPECT_EQ(t, emit_some(ch, 10), 10);
	preempt_enable();
	tel_channel_destroy(ch);
}

/* A producer that writes in place (the shm binding): this CPU's ring, then
 * reserve, fill and commit with interrupts off; the ring fills, then drops
 * and counts, and the reader gets each record whole. */
static void this_ring_takes_records_in_place(struct ktest *t)
{
	struct tel_channel *ch = tel_channel_create("test", 4096, TEL_STREAM);
	ASSERT_TRUE(t, ch != NULL);
	int written = 0, refused = 0;
	uint64_t flags = irq_save();
	unsigned cpu = this_cpu_id();
	struct tel_ring *ring = tel_channel_this_ring(ch);
	for (uint64_t i = 0; ring && i < 100; i++) {
		uint64_t *p = tel_ring_reserve(ring, 9, 1000 + i, 5 * sizeof *p);
		if (!p) {
			refused++;
			continue;
		}
		for (unsigned w = 0; w < 5; w++)
			p[w] = i + w;
		tel_ring_commit(ring);
		written++;
	}
	irq_restore(flags);
	ASSERT_TRUE(t, ring != NULL);
	EXPECT_TRUE(t, written >= (int)(4096 / TEL_RECORD_SIZE(40, TEL_EXTENDED)) - 1);
	EXPECT_EQ(t, refused, 100 - written);
	struct tel_ring_stats stats;
	EXPECT_EQ(t, tel_channel_get_stats(ch, cpu, &stats), 0);
	EXPECT_EQ(t, stats.produced, (uint64_t)written);
	EXPECT_EQ(t, stats.dropped, (uint64_t)refused);
	int64_t bytes = tel_channel_read(ch, cpu, buffer, sizeof buffer);
	int whole = 0;
	uint64_t last = 0;
	for (int64_t at = 0; at < bytes;
	     at += (int64_t)tel_record_bytes((const void *)(buffer + at))) {
		const struct tel_record *r = (const void *)(buffer + at);
		const uint64_t *p = tel_record_payload(r);
		whole += r->type == 9 && tel_record_payload_bytes(r) == 40 &&
			 p[0] == tel_record_time(r, &last) - 1000 && p[4] == p[0] + 4;
	}
	EXPECT_EQ(t, whole, written);
	tel_channel_destroy(ch);
}

KTEST_SUITE(telemetry, KTEST_CASE(records_land_on_this_cpu),
	    KTEST_CASE(full_stream_channel_counts_drops),
	    KTEST_CASE(flight_recorder_snapshot_has_the_newest),
	    KTEST_CASE(every_record_is_read_or_counted),
	    KTEST_CASE(shared_channel_maps_only_into_a_process),
	    KTEST_CASE(kernel_only_channel_is_never_shared), KTEST_CASE(bogus_position_is_clamped),
	    KTEST_CASE(this_ring_takes_records_in_place));
