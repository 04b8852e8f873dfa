/*
 * CTF 1.8, the kernel's side: the TSDL metadata that describes the trace
 * stream (its clock, packet layout, event header and every event type: the
 * built-in ones of uapi/trace.h and three per join point), and the packet
 * header that turns a run of ring records into a CTF packet.  The records
 * are the CTF events as they are (uapi/telemetry.h's header is the event
 * header), so a packet is the header below followed by what the ring held,
 * with no copy.  Pure code, host-tested (tests/host/ctf_test.c).
 *
 *     struct ctf_text text = {buffer, size};
 *     ctf_write_metadata(&text, &trace);      // text.length: bytes needed
 *     uint64_t bytes = ctf_seal_packet(packet, records_bytes, &stream);
 */
#ifndef KERNEL_TRACE_CTF_H
#define KERNEL_TRACE_CTF_H

#include <stddef.h>
#include <stdint.h>

#include "telemetry/telemetry.h"

#define CTF_MAGIC 0xc1fc1fc1U

/* Text written into a fixed buffer; length counts everything written, also
 * past size (so a first pass with size 0 measures). */
struct ctf_text {
	char *buffer;
	size_t size;
	size_t length;
};

/* What the metadata describes. */
struct ctf_trace {
	uint8_t uuid[16];
	uint64_t clock_hz;   /* the timestamps' ticks per second */
	unsigned joinpoints; /* events TRACE_JP_EVENT(0 .. joinpoints-1, *) */
	/* The name of join point index ("vfs.read"). */
	const char *(*joinpoint_name)(unsigned index, void *arg);
	void *arg;
};

void ctf_write_metadata(struct ctf_text *out, const struct ctf_trace *trace);
/* 1 when every built-in event's fields add up to its struct in uapi/trace.h
 * (tests/host/ctf_test.c checks it; the kernel trusts it), else 0. */
int ctf_builtin_layouts_match(void);

/* The packet header and context, as the metadata declares them. */
struct ctf_packet_header {
	uint32_t magic;
	uint8_t uuid[16];
	uint32_t stream_id;
	uint64_t timestamp_begin;
	uint64_t timestamp_end;
	uint64_t content_size; /* bits */
	uint64_t packet_size;  /* bits */
	uint64_t events_discarded;
	uint32_t cpu_id;
	uint32_t reserved;
};

/* One CPU's stream as the packets go out. */
struct ctf_stream {
	uint8_t uuid[16];
	unsigned cpu;
	uint64_t last_time;        /* of the last record sealed (0: none yet) */
	uint64_t events_discarded; /* so far, as the next packet reports it */
	uint64_t events;           /* records sealed into packets */
};

/* Seals packet: a struct ctf_packet_header followed by records_bytes of
 * whole ring records.  Fills the header from stream (times rebuilt from the
 * records: the first record of a stream must be extended, as a ring's first
 * is) and advances stream; the content ends where the last record's event
 * does (ctf_record_slack).  Returns the packet's size in bytes. */
uint64_t ctf_seal_packet(void *packet, uint64_t records_bytes, struct ctf_stream *stream);
/* The same when the reader already knows what the records hold (count of
 * them, the full time of the first and the last, timed from
 * stream->last_time, and slack, the padding after the last one's payload:
 * tel_ring_take_all, or ctf_record_slack of the last record a walk read):
 * no second walk. */
uint64_t ctf_seal_packet_counted(void *packet, uint64_t records_bytes, uint64_t slack,
				 struct ctf_stream *stream, uint64_t count, uint64_t first_time,
				 uint64_t last_time);
/* The padding after the last payload of records_bytes of records a ring
 * reader gave as read says: the ring's note when it did not walk (the
 * records may lie in the ring, lent), else the last record's own
 * (ctf_record_slack: a walk may stop before the record the note is about). */
uint64_t ctf_read_slack(const void *records, uint64_t records_bytes,
			const struct tel_read_summary *read);
/* The bytes at the end of record that its event's fields leave out: the
 * padding after a mark's data (a user mark, an aspect's emit), 0 for every
 * other event (their payloads fill whole words). */
uint64_t ctf_record_slack(const struct tel_record *record);

#endif
