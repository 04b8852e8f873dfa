/*
 * Telemetry as user space sees it: the record layout, the ring header and
 * position pages of a shared channel, the mapping layout and ring statistics,
 * and the ms_tel_* system-call contract (kernel/telemetry/telemetry.h is the
 * kernel side).  Plain declarations; user space includes this header.
 */
#ifndef UAPI_TELEMETRY_H
#define UAPI_TELEMETRY_H

#include <stdint.h>

/* One record: an 8-byte header, then (extended records only) the full
 * 64-bit timestamp, then the payload, padded to 8 bytes.  A compact record
 * carries the low 32 bits of its timestamp: the full value is the one of the
 * record before it in the same ring, advanced until its low bits match
 * (tel_record_time).  The producer writes an extended record whenever that
 * would be ambiguous (2^32 ticks or more since the record before), as the
 * ring's first record, and at least once per TEL_SYNC_FRACTION of the ring,
 * so that a reader starting anywhere finds a full timestamp soon.
 * Timestamps are TSC ticks (uapi/time.h converts them).  This is the event
 * layout of the CTF traces the kernel writes (uapi/trace.h). */
struct tel_record {
	uint16_t type; /* TEL_TYPE_PAD is the ring's own filler, never delivered */
	uint8_t words; /* the whole record, header included, in 8-byte words */
	uint8_t kind;  /* TEL_COMPACT or TEL_EXTENDED */
	uint32_t time; /* the timestamp's low 32 bits */
};
#define TEL_TYPE_PAD      0
#define TEL_COMPACT       0
#define TEL_EXTENDED      1
#define TEL_RECORD_MAX    1024 /* largest payload */
#define TEL_ALIGN         8
#define TEL_SYNC_FRACTION 8
#define TEL_CHANNEL_MAX   8 /* channel ids are 0 .. TEL_CHANNEL_MAX - 1 */
/* Bytes of a record with a payload of length bytes. */
#define TEL_RECORD_SIZE(length, kind) \
	(sizeof(struct tel_record) + ((kind) == TEL_EXTENDED ? 8 : 0) + (((length) + 7) & ~7ULL))

static inline uint64_t tel_record_bytes(const struct tel_record *record)
{
	return (uint64_t)record->words * 8;
}

/* The payload (its length rounded up to 8: tel_record_payload_bytes). */
static inline const void *tel_record_payload(const struct tel_record *record)
{
	return (const uint8_t *)(record + 1) + (record->kind == TEL_EXTENDED ? 8 : 0);
}

static inline uint64_t tel_record_payload_bytes(const struct tel_record *record)
{
	return tel_record_bytes(record) - sizeof *record - (record->kind == TEL_EXTENDED ? 8 : 0);
}

/* The record's full timestamp, given *last, the full timestamp of the record
 * before it in its ring (0 before any); updates *last. */
static inline uint64_t tel_record_time(const struct tel_record *record, uint64_t *last)
{
	uint64_t time;
	if (record->kind == TEL_EXTENDED)
		time = *(const uint64_t *)(record + 1);
	else
		time = *last + (uint32_t)(record->time - (uint32_t)*last);
	*last = time;
	return time;
}

enum tel_mode {
	TEL_STREAM,          /* full: drop the new record, count it */
	TEL_FLIGHT_RECORDER, /* full: overwrite the oldest, count those */
};

/* A shared ring's producer side as the consumer sees it (a read-only page):
 * head with release after the record; the consumer reads it with acquire,
 * consumes, then stores its position (a struct tel_ring_position, on its own
 * writable page) with release. */
struct tel_ring_header {
	uint64_t head;
	uint64_t size;
	uint64_t produced;
	uint64_t dropped;
};
struct tel_ring_position {
	uint64_t tail; /* bytes consumed since creation, a multiple of TEL_ALIGN */
};

/* What ms_tel_map reports: CPU i's ring is at base + i * stride, its header
 * first, its position page at +position_offset, its data (size bytes) at
 * +data_offset.  Rings 0..cpus-1 are all mapped. */
struct tel_map {
	uint64_t base;
	uint64_t stride;
	uint64_t position_offset;
	uint64_t data_offset;
	uint64_t size;
	uint32_t cpus;
	uint32_t reserved;
};
#define TEL_MAP_BASE 0x0000780000000000UL /* above the mmap area, below the stack */
#define TEL_MAP_SPAN 0x0000000100000000UL /* per channel id */

struct tel_ring_stats {
	uint64_t produced, dropped, consumed;
	uint64_t bytes_used, size;
};

/* ---- System calls (uapi/syscall_numbers.h) -------------------------------------
 * ms_tel_read(channel, cpu, buffer, length) → bytes of whole records copied
 *     (0: none), -EINVAL (no such channel or CPU), -EFAULT
 * ms_tel_stats(channel, cpu, struct tel_ring_stats *) → 0, -EINVAL, -EFAULT
 * ms_tel_map(channel, struct tel_map *) → 0 and the layout of the channel
 *     mapped into the caller, -EINVAL (no such channel), -EPERM (the caller is
 *     not the process the channel is shared with), -ENOMEM, -EFAULT */

#endif
