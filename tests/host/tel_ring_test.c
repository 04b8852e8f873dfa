// host-test-sources: kernel/telemetry/ring.c
/*
 * Telemetry rings: records come out whole and in order across the wrap, a
 * full stream ring drops and counts, a flight recorder keeps the newest, and
 * every record written is delivered, still held, or counted as dropped.
 * Timestamps: compact records rebuild to the time written across 32-bit
 * wraps, a gap that does not fit makes an extended record, time never goes
 * back, and a full time comes at least once per 1/TEL_SYNC_FRACTION ring.
 * Small rings (64-256 bytes) force the wrap and pad cases; a shared ring
 * refuses and counts what a bogus consumer position would let it write.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hosttest.h"
#include "lib/errno.h"
#include "telemetry/telemetry.h"

static uint8_t data[4096] __attribute__((aligned(16)));

/* Walks a buffer of records; returns how many, storing each payload's first
 * 8 bytes (a sequence number) in seqs. */
static int decode(const uint8_t *buffer, uint64_t bytes, uint64_t *seqs, int max)
{
	int n = 0;
	for (uint64_t at = 0; at < bytes;) {
		const struct tel_record *r = (const void *)(buffer + at);
		if (n < max && tel_record_payload_bytes(r) >= 8)
			memcpy(&seqs[n], tel_record_payload(r), 8);
		n++;
		at += tel_record_bytes(r);
	}
	return n;
}

static void bad_sizes_are_refused(void)
{
	struct tel_ring ring;
	CHECK_EQ(tel_ring_init(&ring, data, 100, TEL_STREAM), -EINVAL);
	CHECK_EQ(tel_ring_init(&ring, data, 32, TEL_STREAM), -EINVAL);
	CHECK_EQ(tel_ring_init(&ring, NULL, 64, TEL_STREAM), -EINVAL);
	CHECK_EQ(tel_ring_init(&ring, data, 64, (enum tel_mode)7), -EINVAL);
	REQUIRE_EQ(tel_ring_init(&ring, data, 64, TEL_STREAM), 0);
	uint8_t big[64] = {0};
	CHECK_EQ(tel_ring_write(&ring, 1, 0, big, 40), -ENOBUFS); /* more than half */
	CHECK_EQ(tel_ring_write(&ring, TEL_TYPE_PAD, 0, big, 0), -ENOBUFS);
	CHECK_EQ(ring.dropped, 2);
}

/* Do records keep their header and payload, in order, across many wraps? */
static void records_survive_the_wrap(void)
{
	struct tel_ring ring;
	REQUIRE_EQ(tel_ring_init(&ring, data, 256, TEL_STREAM), 0);
	uint64_t next = 0, expect = 0, last = 0;
	for (int round = 0; round < 200; round++) {
		uint8_t payload[40];
		uint32_t length = 8 + (round * 7) % 33;
		memset(payload, round, sizeof payload);
		memcpy(payload, &next, 8);
		if (tel_ring_write(&ring, 3, 1000 + next, payload, length) == 0)
			next++;
		if (round % 3 == 2) {
			uint8_t out[512];
			uint64_t bytes = tel_ring_read(&ring, out, sizeof out);
			for (uint64_t at = 0; at < bytes;) {
				const struct tel_record *r = (const void *)(out + at);
				uint64_t seq;
				memcpy(&seq, tel_record_payload(r), 8);
				CHECK_EQ(seq, expect);
				CHECK_EQ(tel_record_time(r, &last), 1000 + expect);
				CHECK_EQ(r->type, 3);
				expect++;
				at += tel_record_bytes(r);
			}
		}
	}
	CHECK(expect > 100);
	CHECK_EQ(tel_ring_produced(&ring), next);
	CHECK_EQ(tel_ring_produced(&ring), ring.consumed + (next - expect));
}

/* A full stream ring refuses new records and counts them; old ones stay. */
static void full_stream_ring_drops_new_records(void)
{
	struct tel_ring ring;
	REQUIRE_EQ(tel_ring_init(&ring, data, 256, TEL_STREAM), 0);
	int written = 0, refused = 0;
	for (uint64_t i = 0; i < 40; i++)
		*(tel_ring_write(&ring, 1, 0, &i, 8) == 0 ? &written : &refused) += 1;
	/* 16 bytes each, 24 for the extended ones (the first, then the first at
	 * or past each 32 bytes: every other record): 6 * 24 + 6 * 16 = 240, and
	 * the next, extended, does not fit in the 16 left. */
	CHECK_EQ(written, 12);
	CHECK_EQ(refused, 40 - 12);
	CHECK_EQ(ring.dropped, refused);
	uint8_t out[512];
	uint64_t seqs[16];
	CHECK_EQ(decode(out, tel_ring_read(&ring, out, sizeof out), seqs, 16), written);
	CHECK_EQ(seqs[0], 0);
}

/* The flight recorder keeps the newest records; the overwritten count. */
static void flight_recorder_keeps_the_newest(void)
{
	struct tel_ring ring;
	REQUIRE_EQ(tel_ring_init(&ring, data, 256, TEL_FLIGHT_RECORDER), 0);
	for (uint64_t i = 0; i < 100; i++) {
		uint64_t payload[3] = {i, i, i};
		CHECK_EQ(tel_ring_write(&ring, 1, i, payload, 8 + (i % 3) * 8), 0);
	}
	uint8_t out[512];
	uint64_t seqs[32];
	int n = decode(out, tel_ring_snapshot(&ring, out, sizeof out), seqs, 32);
	REQUIRE(n > 0 && n <= 32);
	CHECK_EQ(seqs[n - 1], 99);
	for (int i = 1; i < n; i++)
		CHECK_EQ(seqs[i], seqs[i - 1] + 1);
	CHECK_EQ(tel_ring_produced(&ring), 100);
	CHECK_EQ(ring.dropped + (uint64_t)n, 100);
	/* A snapshot into a small buffer gives the newest that fit. */
	n = decode(out, tel_ring_snapshot(&ring, out, 64), seqs, 32);
	REQUIRE(n >= 1);
	CHECK_EQ(seqs[n - 1], 99);
}

/* One producer thread and one consumer thread: every record is delivered
 * in order or counted as dropped, none torn. */
struct race {
	struct tel_ring ring;
	volatile int done;
	uint64_t total;
};

static void *produce(void *arg)
{
	struct race *r = arg;
	for (uint64_t i = 0; i < r->total;) {
		uint64_t payload[3] = {i, ~i, i * 3};
		tel_ring_write(&r->ring, 2, i << 20, payload, sizeof payload);
		i++;
	}
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The producer on one thread, a reader on this one: every record comes out
 * whole, in order, once, or is counted as dropped.  take_all: the reader
 * that does not walk (tel_ring_take_all), whose counts and last time come
 * from what the producer published; they must agree with the records it
 * copied, however the two threads interleave. */
static void race_with_reader(bool take_all)
{
	static uint8_t race_data[1024] __attribute__((aligned(16)));
	struct race r = {.total = 200000};
	REQUIRE_EQ(tel_ring_init(&r.ring, race_data, sizeof race_data, TEL_STREAM), 0);
	pthread_t producer;
	REQUIRE_EQ(pthread_create(&producer, NULL, produce, &r), 0);
	uint64_t delivered = 0, last = 0, torn = 0, out_of_order = 0, time = 0, miscounted = 0;
	uint64_t summary_time = 0;
	uint8_t out[2048];
	for (;;) {
		int finished = __atomic_load_n(&r.done, __ATOMIC_ACQUIRE);
		struct tel_read_summary summary = {.last_time = summary_time};
		uint64_t bytes = take_all ? tel_ring_take_all(&r.ring, out, sizeof out, &summary)
					  : tel_ring_read(&r.ring, out, 512);
		uint64_t records = 0;
		for (uint64_t at = 0; at < bytes; records++) {
			const struct tel_record *rec = (const void *)(out + at);
			uint64_t p[3];
			memcpy(p, tel_record_payload(rec), sizeof p);
			/* Drops in between are counted, not written: the next record
			 * still times against the last one written, so the time of
			 * each delivered record rebuilds exactly. */
			torn += rec->type != 2 || p[1] != ~p[0] || p[2] != p[0] * 3 ||
				tel_record_time(rec, &time) != p[0] << 20;
			out_of_order += delivered && p[0] <= last;
			last = p[0];
			delivered++;
			at += tel_record_bytes(rec);
		}
		if (take_all && records) {
			/* The last time is the last record's, or a later one's
			 * (reserved while the reader looked), never earlier. */
			miscounted += summary.records != records || summary.last_time < time ||
				      summary.last_time % (1 << 20);
			summary_time = summary.last_time;
		}
		if (finished && bytes == 0)
			break;
	}
	pthread_join(producer, NULL);
	CHECK_EQ(torn, 0);
	CHECK_EQ(out_of_order, 0);
	CHECK_EQ(miscounted, 0);
	CHECK_EQ(delivered + r.ring.dropped, r.total);
	CHECK_EQ(r.ring.consumed, delivered);
}

static void producer_and_consumer_race(void)
{
	race_with_reader(false);
}

static void producer_and_a_reader_that_takes_all_race(void)
{
	race_with_reader(true);
}

/* The length of record i's payload in the short-record race: every third
 * stops short of its last word. */
static uint32_t race_length(uint64_t i)
{
	return i % 3 ? 24 : 8 + (uint32_t)(i % 7) + 1;
}

static void *produce_short(void *arg)
{
	struct race *r = arg;
	for (uint64_t i = 0; i < r->total; i++) {
		uint64_t payload[3] = {i, ~i, i * 3};
		tel_ring_write(&r->ring, 2, i << 20, payload, race_length(i));
	}
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Records whose payload stops short of a word, among whole ones, taken by
 * the reader that does not walk while the producer runs: the padding it
 * reports after the last record (the ring's note, published with head) is
 * that record's own, however the two threads interleave. */
static void short_records_report_their_padding_in_a_race(void)
{
	static uint8_t race_data[1024] __attribute__((aligned(16)));
	struct race r = {.total = 200000};
	REQUIRE_EQ(tel_ring_init(&r.ring, race_data, sizeof race_data, TEL_STREAM), 0);
	pthread_t producer;
	REQUIRE_EQ(pthread_create(&producer, NULL, produce_short, &r), 0);
	uint64_t batches = 0, wrong = 0;
	uint8_t out[2048];
	for (;;) {
		int finished = __atomic_load_n(&r.done, __ATOMIC_ACQUIRE);
		struct tel_read_summary summary = {0};
		uint64_t bytes = tel_ring_take_all(&r.ring, out, sizeof out, &summary);
		const struct tel_record *last = NULL;
		for (uint64_t at = 0; at < bytes; at += tel_record_bytes(last))
			last = (const void *)(out + at);
		if (last) {
			uint64_t i;
			memcpy(&i, tel_record_payload(last), sizeof i);
			uint64_t header = (uint64_t)((const uint8_t *)tel_record_payload(last) -
						     (const uint8_t *)last);
			uint64_t padding = tel_record_bytes(last) - header - race_length(i);
			wrong += summary.last_bytes != 0 || summary.slack != padding;
			batches++;
		}
		if (finished && bytes == 0)
			break;
	}
	pthread_join(producer, NULL);
	CHECK_EQ(wrong, 0);
	CHECK(batches > 0);
}

/* A record that does not fit before the end of the data area: a pad fills
 * the rest, the record starts at offset 0, commit publishes both, the reader
 * skips the pad, and the next record goes in right after it. */
static void pad_before_a_record_at_the_end(void)
{
	struct tel_ring ring;
	REQUIRE_EQ(tel_ring_init(&ring, data, 256, TEL_STREAM), 0);
	uint8_t out[512];
	uint64_t seqs[8], seq[5] = {0};
	/* 40-byte payloads: the ring's sync points are 32 bytes apart, closer
	 * than a record, so every record is extended (56 bytes): four fill 224
	 * bytes and leave 32 before the end. */
	uint64_t at = 0;
	for (; seq[0] < 4; seq[0]++) {
		REQUIRE_EQ(tel_ring_write(&ring, 1, 0, seq, 40), 0);
		at = ring.head;
	}
	CHECK_EQ(decode(out, tel_ring_read(&ring, out, sizeof out), seqs, 8), 4);
	uint64_t left = 256 - at;
	REQUIRE(left < 56 && left > 0); /* the next record does not fit: a pad */
	uint8_t *payload = tel_ring_reserve(&ring, 1, 0, 40);
	REQUIRE(payload != NULL);
	CHECK(payload == data + sizeof(struct tel_record) + 8); /* after the wrap, extended */
	const struct tel_record *pad = (const void *)(data + at);
	CHECK_EQ(pad->type, TEL_TYPE_PAD);
	CHECK_EQ(tel_record_bytes(pad), left);
	memcpy(payload, seq, 40);
	tel_ring_commit(&ring);
	CHECK_EQ(ring.head, 256 + 56);
	seq[0]++;
	REQUIRE_EQ(tel_ring_write(&ring, 1, 0, seq, 40), 0);
	CHECK_EQ(ring.head, 256 + 56 + 56); /* still past the sync point: extended */
	uint64_t bytes = tel_ring_read(&ring, out, sizeof out);
	CHECK_EQ(bytes, 2 * 56); /* the pad is not delivered */
	CHECK_EQ(decode(out, bytes, seqs, 8), 2);
	CHECK_EQ(seqs[0], 4);
	CHECK_EQ(seqs[1], 5);
	CHECK_EQ(tel_ring_produced(&ring), 6);
	CHECK_EQ(ring.consumed, 6);
	CHECK_EQ(ring.dropped, 0);
}

/* Times as written come back from compact records across wraps of the low
 * 32 bits; a gap of 2^32 ticks or more is written extended; an older time
 * than the last record's is raised to it. */
static void compact_times_rebuild_exactly(void)
{
	static uint8_t big[65536] __attribute__((aligned(16)));
	struct tel_ring ring;
	REQUIRE_EQ(tel_ring_init(&ring, big, sizeof big, TEL_STREAM), 0);
	uint64_t times[] = {5,           0xfffffff0,  0x100000010, 0x1fffffff0,
			    0x200000001, 0x300000001, /* exactly 2^32 after: extended */
			    0x300000000,              /* older: raised */
			    0x300000002};
	unsigned n = sizeof times / sizeof times[0];
	for (unsigned i = 0; i < n; i++)
		REQUIRE_EQ(tel_ring_write(&ring, 1, times[i], &i, sizeof i), 0);
	uint8_t out[1024];
	uint64_t bytes = tel_ring_read(&ring, out, sizeof out), last = 0;
	unsigned i = 0, extended = 0;
	for (uint64_t at = 0; at < bytes; i++) {
		const struct tel_record *r = (const void *)(out + at);
		uint64_t expect = times[i] < last ? last : times[i];
		CHECK_EQ(tel_record_time(r, &last), expect);
		extended += r->kind == TEL_EXTENDED;
		at += tel_record_bytes(r);
	}
	CHECK_EQ(i, n);
	CHECK_EQ(extended, 2); /* the first record, and the gap of 2^32 */
}

/* A flight recorder read from anywhere: an extended record within every
 * 1/TEL_SYNC_FRACTION of the ring, so a snapshot's reader finds a full time
 * early and times everything after it exactly. */
static void snapshots_find_a_full_time_early(void)
{
	static uint8_t area[4096] __attribute__((aligned(16)));
	struct tel_ring ring;
	REQUIRE_EQ(tel_ring_init(&ring, area, sizeof area, TEL_FLIGHT_RECORDER), 0);
	for (uint64_t i = 0; i < 5000; i++) {
		uint64_t time = i * 1000003;
		REQUIRE_EQ(tel_ring_write(&ring, 1, time, &time, sizeof time), 0);
	}
	static uint8_t out[8192];
	uint64_t bytes = tel_ring_snapshot(&ring, out, sizeof out), at = 0, last = 0;
	while (at < bytes && ((const struct tel_record *)(out + at))->kind != TEL_EXTENDED)
		at += tel_record_bytes((const void *)(out + at));
	CHECK(at <= sizeof area / TEL_SYNC_FRACTION);
	int wrong = 0, timed = 0;
	for (; at < bytes; at += tel_record_bytes((const void *)(out + at)), timed++) {
		const struct tel_record *r = (const void *)(out + at);
		uint64_t written;
		memcpy(&written, tel_record_payload(r), 8);
		wrong += tel_record_time(r, &last) != written;
	}
	CHECK_EQ(wrong, 0);
	CHECK(timed > 100);
}

/* A shared ring whose consumer position is ahead of head, unaligned, or more
 * than the ring behind: every write is refused and counted (in the header
 * too), nothing is written outside the data area; a sound position gives
 * the room back. */
static void shared_ring_with_a_bogus_position(void)
{
	static uint8_t area[3 * 256] __attribute__((aligned(16)));
	struct tel_ring ring;
	struct tel_ring_header header;
	struct tel_ring_position position;
	memset(area, 0xee, sizeof area);
	REQUIRE_EQ(tel_ring_init(&ring, area + 256, 256, TEL_STREAM), 0);
	REQUIRE_EQ(tel_ring_share(&ring, &header, &position), 0);
	uint64_t seq = 0, payload[2] = {0};
	for (; seq < 40; seq++) { /* several times round, each record consumed */
		REQUIRE_EQ(tel_ring_write(&ring, 1, seq, payload, 16), 0);
		__atomic_store_n(&position.tail, header.head, __ATOMIC_RELEASE);
	}
	uint64_t head = header.head;
	REQUIRE(head > 3 * 256);
	uint64_t bogus[] = {head + 16, head - 4, head - 256 - 16, 1ull << 62, 4};
	for (unsigned b = 0; b < sizeof bogus / sizeof bogus[0]; b++) {
		__atomic_store_n(&position.tail, bogus[b], __ATOMIC_RELEASE);
		CHECK_EQ(tel_ring_write(&ring, 1, 0, payload, 16), -ENOBUFS);
		CHECK(tel_ring_reserve(&ring, 1, 0, 16) == NULL);
	}
	CHECK_EQ(ring.dropped, 10);
	CHECK_EQ(header.dropped, 10);
	CHECK_EQ(header.produced, seq);
	CHECK_EQ(header.head, head);
	int outside = 0;
	for (unsigned i = 0; i < 256; i++)
		outside += (area[i] != 0xee) + (area[2 * 256 + i] != 0xee);
	CHECK_EQ(outside, 0);
	/* The ring is full when the consumer is exactly one ring behind. */
	__atomic_store_n(&position.tail, head - 256, __ATOMIC_RELEASE);
	CHECK_EQ(tel_ring_write(&ring, 1, 0, payload, 16), -ENOBUFS);
	CHECK_EQ(header.dropped, 11);
	/* Sound again: room (64 bytes: a pad and the largest such record). */
	__atomic_store_n(&position.tail, head - 256 + 64, __ATOMIC_RELEASE);
	CHECK_EQ(tel_ring_write(&ring, 1, seq, payload, 16), 0);
	CHECK(header.head > head);
	CHECK_EQ(header.produced, seq + 1);
	struct tel_ring_stats stats;
	tel_ring_get_stats(&ring, &stats);
	/* measured from the consumer's position */
	CHECK_EQ(stats.bytes_used, header.head - (head - 256 + 64));
}

/* Fills a shared ring of size bytes (heap, exactly that size, so AddressSanitizer
 * sees any read past it) with count records whose payloads are forged
 * headers; returns the first consumer position whose forged header claims a
 * record that would run past the end of the data area, or UINT64_MAX. */
static uint64_t forge_crossing_position(struct tel_ring *ring, struct tel_ring_position *position,
					unsigned payload_length, int count)
{
	uint8_t payload[512];
	struct tel_record forged = {.type = 1, .words = 14};
	for (unsigned i = 0; i < sizeof payload; i += 8)
		memcpy(payload + i, &forged, sizeof forged);
	for (int i = 0; i < count; i++) {
		tel_ring_write(ring, 1, 0, payload, payload_length);
		if (i < count - 1)
			position->tail = ring->head;
	}
	for (uint64_t t = ring->head - ring->size; t < ring->head; t += 8) {
		const struct tel_record *r = (const void *)(ring->data + (t & (ring->size - 1)));
		uint64_t size = tel_record_bytes(r);
		if (size >= 8 && size <= ring->record_max && size <= ring->head - t &&
		    (t & (ring->size - 1)) + size > ring->size)
			return t;
	}
	return UINT64_MAX;
}

/* A consumer position inside a record, on a forged header that claims a
 * record running past the end of the data area: the readers stop there (read
 * skips to head) and never touch a byte outside the ring. */
static void readers_stop_at_a_forged_record(void)
{
	int forged = 0;
	static uint8_t out[4096];
	for (unsigned length = 16; length <= 240; length += 16) {
		for (int count = 1; count < 12; count++) {
			uint8_t *area = aligned_alloc(16, 512);
			REQUIRE(area != NULL);
			memset(area, 0, 512);
			struct tel_ring ring;
			struct tel_ring_header header;
			struct tel_ring_position position;
			REQUIRE_EQ(tel_ring_init(&ring, area, 512, TEL_STREAM), 0);
			REQUIRE_EQ(tel_ring_share(&ring, &header, &position), 0);
			uint64_t t = forge_crossing_position(&ring, &position, length, count);
			if (t != UINT64_MAX) {
				forged++;
				position.tail = t;
				CHECK_EQ(tel_ring_snapshot(&ring, out, sizeof out), 0);
				CHECK_EQ(tel_ring_read(&ring, out, sizeof out), 0);
				CHECK_EQ(position.tail, ring.head);
			}
			free(area);
		}
	}
	CHECK(forged > 0); /* the case was built, not missed */
}

/* Lengths and types reserve refuses whatever the room: counted drops. */
static void refused_records_are_counted(void)
{
	static uint8_t big[8192] __attribute__((aligned(16)));
	struct tel_ring ring;
	REQUIRE_EQ(tel_ring_init(&ring, big, sizeof big, TEL_STREAM), 0);
	CHECK(tel_ring_reserve(&ring, 1, 0, TEL_RECORD_MAX + 1) == NULL);
	CHECK(tel_ring_reserve(&ring, TEL_TYPE_PAD, 0, 8) == NULL);
	CHECK(tel_ring_reserve(&ring, 1, 0, UINT32_MAX) == NULL);
	CHECK_EQ(ring.dropped, 3);
	CHECK_EQ(ring.head, 0);
	CHECK_EQ(tel_ring_write(&ring, 1, 0, big, TEL_RECORD_MAX), 0);
	CHECK_EQ(ring.head, TEL_RECORD_SIZE(TEL_RECORD_MAX, TEL_EXTENDED));
}

/* The summed read and take_all against a model: random payload sizes and
 * times through a 256-byte ring (pads, records ending exactly at the end of
 * the area), read with random buffer lengths or all at once.  Every read gives whole records in the
 * order written, the summary counts them and times the first and the last
 * as a walk over what came out does, and nothing is lost or repeated. */
static void summed_reads_match_a_walk_of_what_they_copied(void)
{
	static uint8_t area[256] __attribute__((aligned(16)));
	struct tel_ring ring;
	REQUIRE_EQ(tel_ring_init(&ring, area, sizeof area, TEL_STREAM), 0);
	srand(7);
	uint64_t written = 0, read_seq = 0, time = 100, last_time = 0, reads = 0, pads_seen = 0;
	uint8_t out[512];
	for (unsigned round = 0; round < 20000; round++) {
		uint64_t payload[6] = {written};
		uint32_t length = 8 * (1 + (unsigned)rand() % 5);
		time += (uint64_t)rand() % 5000;
		uint64_t room_before = ring.head;
		if (tel_ring_write(&ring, 1, time, payload, length) == 0) {
			written++;
			pads_seen +=
			    (ring.head & ~(uint64_t)255) != (room_before & ~(uint64_t)255) &&
			    (ring.head & 255);
		}
		if (rand() % 3)
			continue;
		struct tel_read_summary summary = {.last_time = last_time};
		bool take_all = rand() % 2;
		uint64_t bytes =
		    take_all
			? tel_ring_take_all(&ring, out, sizeof out, &summary)
			: tel_ring_read_summed(&ring, out, 16 + (unsigned)rand() % 200, &summary);
		uint64_t walk_time = last_time, first = 0, count = 0;
		for (uint64_t at = 0; at < bytes; count++) {
			const struct tel_record *r = (const void *)(out + at);
			REQUIRE(r->type == 1);
			uint64_t seq;
			memcpy(&seq, tel_record_payload(r), 8);
			CHECK_EQ(seq, read_seq);
			read_seq++;
			tel_record_time(r, &walk_time);
			if (!count)
				first = walk_time;
			at += tel_record_bytes(r);
		}
		CHECK_EQ(summary.records, count);
		if (count && !take_all) /* take_all: the packet begins where the last ended */
			CHECK_EQ(summary.first_time, first);
		reads += count != 0;
		CHECK_EQ(summary.last_time, walk_time); /* no record is being reserved here */
		last_time = summary.last_time;
	}
	CHECK(reads > 1000 && pads_seen > 100); /* the cases were built */
	CHECK_EQ(ring.consumed, read_seq);
	CHECK_EQ(tel_ring_produced(&ring), written);
	CHECK_EQ(tel_ring_produced(&ring) + ring.dropped, 20000);
}

/* Records lent where they lie (tel_ring_lend_all) are the records take_all
 * would copy, in one or two stretches across the end of the area; the
 * producer cannot write over them until they are released (a full ring
 * drops and counts instead), and release frees their room. */
static void lent_records_keep_their_room_until_released(void)
{
	static uint8_t area[256] __attribute__((aligned(16)));
	struct tel_ring ring;
	REQUIRE_EQ(tel_ring_init(&ring, area, sizeof area, TEL_STREAM), 0);
	srand(11);
	uint64_t written = 0, read_seq = 0, time = 100, lends = 0, split = 0, held_drops = 0;
	for (unsigned round = 0; round < 5000; round++) {
		for (unsigned i = (unsigned)rand() % 6; i > 0; i--) {
			uint64_t payload[4] = {written};
			time += (uint64_t)rand() % 3000;
			written += tel_ring_write(&ring, 1, time, payload,
						  8 * (1 + (unsigned)rand() % 4)) == 0;
		}
		struct tel_read_summary summary = {0};
		struct tel_ring_lent lent;
		int64_t bytes = tel_ring_lend_all(&ring, sizeof area, &summary, &lent);
		REQUIRE(bytes >= 0);
		if (!bytes)
			continue;
		uint8_t held[256];
		uint64_t at = 0;
		for (unsigned i = 0; i < lent.stretches; i++) {
			memcpy(held + at, lent.data[i], lent.bytes[i]);
			at += lent.bytes[i];
		}
		CHECK_EQ(at, (uint64_t)bytes);
		split += lent.stretches == 2;
		/* Writing on while they are lent: the full ring drops, the lent bytes stay. */
		uint64_t dropped = ring.dropped;
		for (int i = 0; i < 40; i++) {
			uint64_t payload[4] = {written};
			written += tel_ring_write(&ring, 1, ++time, payload, 32) == 0;
		}
		held_drops += ring.dropped - dropped;
		uint64_t seqs[64];
		int n = decode(held, at, seqs, 64);
		CHECK_EQ((uint64_t)n, summary.records);
		for (int i = 0; i < n && i < 64; i++)
			CHECK_EQ(seqs[i], read_seq + (uint64_t)i);
		at = 0;
		for (unsigned i = 0; i < lent.stretches; i++) {
			CHECK(memcmp(held + at, lent.data[i], lent.bytes[i]) == 0);
			at += lent.bytes[i];
		}
		read_seq += (uint64_t)n;
		tel_ring_release(&ring, &lent);
		lends++;
	}
	CHECK(lends > 1000 && split > 50 && held_drops > 1000); /* the cases were built */
	/* What is left comes out after the released records, in order. */
	uint8_t out[512];
	struct tel_read_summary summary = {0};
	uint64_t seqs[64];
	int n = decode(out, tel_ring_take_all(&ring, out, sizeof out, &summary), seqs, 64);
	for (int i = 0; i < n; i++)
		CHECK_EQ(seqs[i], read_seq + (uint64_t)i);
	CHECK_EQ(read_seq + (uint64_t)n, written);
	CHECK_EQ(ring.consumed, written);
}

HOSTTEST_MAIN(HOSTTEST_CASE(bad_sizes_are_refused), HOSTTEST_CASE(records_survive_the_wrap),
	      HOSTTEST_CASE(full_stream_ring_drops_new_records),
	      HOSTTEST_CASE(flight_recorder_keeps_the_newest),
	      HOSTTEST_CASE(producer_and_consumer_race),
	      HOSTTEST_CASE(producer_and_a_reader_that_takes_all_race),
	      HOSTTEST_CASE(short_records_report_their_padding_in_a_race),
	      HOSTTEST_CASE(pad_before_a_record_at_the_end),
	      HOSTTEST_CASE(compact_times_rebuild_exactly),
	      HOSTTEST_CASE(snapshots_find_a_full_time_early),
	      HOSTTEST_CASE(shared_ring_with_a_bogus_position),
	      HOSTTEST_CASE(refused_records_are_counted),
	      HOSTTEST_CASE(readers_stop_at_a_forged_record),
	      HOSTTEST_CASE(summed_reads_match_a_walk_of_what_they_copied),
	      HOSTTEST_CASE(lent_records_keep_their_room_until_released))
