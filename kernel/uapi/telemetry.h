/*
 * Telemetry as user space sees it: the record layout, the ring header and
 * position pages of a shared channel, the mapping layout and ring statistics,
 * and the ms_tel_* system-call contract (kernel/telemetry/telemetry.h is the
 * kernel side).  Plain declarations; user space includes this header.
 */
#ifndef UAPI_TELEMETRY_H
#define UAPI_TELEMETRY_H

#include <stdint.h>

/* One record: the header, then length bytes of payload, padded to 8 bytes. */
struct tel_record {
	uint64_t timestamp_ns;
	uint16_t type; /* TEL_TYPE_PAD is the ring's own filler, never delivered */
	uint16_t cpu;
	uint32_t length; /* payload bytes */
};
#define TEL_TYPE_PAD   0
#define TEL_RECORD_MAX 1024 /* largest payload */
#define TEL_ALIGN      16   /* a pad record (a bare header) always fits */
#define TEL_RECORD_SIZE(length) \
	((sizeof(struct tel_record) + (length) + TEL_ALIGN - 1) & ~(uint64_t)(TEL_ALIGN - 1))

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
