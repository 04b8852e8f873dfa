// host-test-sources: kernel/telemetry/ring.c
/*
 * Telemetry rings: records come out whole and in order across the wrap, a
 * full stream ring drops and counts, a flight recorder keeps the newest, and
 * every record written is delivered, still held, or counted as dropped.
 * Small rings (64-256 bytes) force the wrap and pad cases.
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
		if (n < max && r->length >= 8)
			memcpy(&seqs[n], r + 1, 8);
		n++;
		at += TEL_RECORD_SIZE(r->length);
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
	CHECK_EQ(tel_ring_write(&ring, 1, 0, 0, big, 40), -ENOBUFS); /* more than half */
	CHECK_EQ(tel_ring_write(&ring, TEL_TYPE_PAD, 0, 0, big, 0), -ENOBUFS);
	CHECK_EQ(ring.dropped, 2);
}

/* Do records keep their header and payload, in order, across many wraps? */
static void records_survive_the_wrap(void)
{
	struct tel_ring ring;
	REQUIRE_EQ(tel_ring_init(&ring, data, 256, TEL_STREAM), 0);
	uint64_t next = 0, expect = 0;
	for (int round = 0; round < 200; round++) {
		uint8_t payload[40];
		uint32_t length = 8 + (round * 7) % 33;
		memset(payload, round, sizeof payload);
		memcpy(payload, &next, 8);
		if (tel_ring_write(&ring, 3, 1, 1000 + next, payload, length) == 0)
			next++;
		if (round % 3 == 2) {
			uint8_t out[512];
			uint64_t bytes = tel_ring_read(&ring, out, sizeof out);
			for (uint64_t at = 0; at < bytes;) {
				const struct tel_record *r = (const void *)(out + at);
				uint64_t seq;
				memcpy(&seq, r + 1, 8);
				CHECK_EQ(seq, expect);
				CHECK_EQ(r->timestamp_ns, 1000 + expect);
				CHECK_EQ(r->type, 3);
				CHECK_EQ(r->cpu, 1);
				expect++;
				at += TEL_RECORD_SIZE(r->length);
			}
		}
	}
	CHECK(expect > 100);
	CHECK_EQ(ring.produced, next);
	CHECK_EQ(ring.produced, ring.consumed + (next - expect));
}

/* A full stream ring refuses new records and counts them; old ones stay. */
static void full_stream_ring_drops_new_records(void)
{
	struct tel_ring ring;
	REQUIRE_EQ(tel_ring_init(&ring, data, 256, TEL_STREAM), 0);
	int written = 0, refused = 0;
	for (uint64_t i = 0; i < 40; i++)
		*(tel_ring_write(&ring, 1, 0, 0, &i, 8) == 0 ? &written : &refused) += 1;
	CHECK_EQ(written, 256 / 32);
	CHECK_EQ(refused, 40 - 256 / 32);
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
		CHECK_EQ(tel_ring_write(&ring, 1, 0, i, payload, 8 + (i % 3) * 8), 0);
	}
	uint8_t out[512];
	uint64_t seqs[32];
	int n = decode(out, tel_ring_snapshot(&ring, out, sizeof out), seqs, 32);
	REQUIRE(n > 0 && n <= 32);
	CHECK_EQ(seqs[n - 1], 99);
	for (int i = 1; i < n; i++)
		CHECK_EQ(seqs[i], seqs[i - 1] + 1);
	CHECK_EQ(ring.produced, 100);
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
		tel_ring_write(&r->ring, 2, 0, i, payload, sizeof payload);
		i++;
	}
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void producer_and_consumer_race(void)
{
	static uint8_t race_data[1024] __attribute__((aligned(16)));
	struct race r = {.total = 200000};
	REQUIRE_EQ(tel_ring_init(&r.ring, race_data, sizeof race_data, TEL_STREAM), 0);
	pthread_t producer;
	REQUIRE_EQ(pthread_create(&producer, NULL, produce, &r), 0);
	uint64_t delivered = 0, last = 0, torn = 0, out_of_order = 0;
	uint8_t out[512];
	for (;;) {
		int finished = __atomic_load_n(&r.done, __ATOMIC_ACQUIRE);
		uint64_t bytes = tel_ring_read(&r.ring, out, sizeof out);
		for (uint64_t at = 0; at < bytes;) {
			const struct tel_record *rec = (const void *)(out + at);
			uint64_t p[3];
			memcpy(p, rec + 1, sizeof p);
			torn += p[1] != ~p[0] || p[2] != p[0] * 3 || rec->timestamp_ns != p[0];
			out_of_order += delivered && p[0] <= last;
			last = p[0];
			delivered++;
			at += TEL_RECORD_SIZE(rec->length);
		}
		if (finished && bytes == 0)
			break;
	}
	pthread_join(producer, NULL);
	CHECK_EQ(torn, 0);
	CHECK_EQ(out_of_order, 0);
	CHECK_EQ(delivered + r.ring.dropped, r.total);
	CHECK_EQ(r.ring.consumed, delivered);
}

HOSTTEST_MAIN(HOSTTEST_CASE(bad_sizes_are_refused), HOSTTEST_CASE(records_survive_the_wrap),
	      HOSTTEST_CASE(full_stream_ring_drops_new_records),
	      HOSTTEST_CASE(flight_recorder_keeps_the_newest),
	      HOSTTEST_CASE(producer_and_consumer_race))
