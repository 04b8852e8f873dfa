/*
 * Telemetry rings: compact records (an 8-byte header with type, length and
 * the low bits of a TSC timestamp; the payload after it: uapi/telemetry.h)
 * in byte rings with one producer each.  A
 * channel is one ring per CPU, so producers never share a ring and never
 * block.  Two modes: stream (a full ring drops the new record and counts it;
 * a consumer takes records out in order) and flight recorder (the oldest
 * records are overwritten; a snapshot copies out what is there now).  Every
 * record produced is either delivered, still in the ring, or counted as
 * dropped (overwritten ones too).  Consumers outside the kernel read through
 * ms_tel_read, which copies whole records out and advances the ring, or map a
 * shared stream channel (ms_tel_map): its rings and headers read-only, and a
 * writable page per ring where the consumer publishes its position, which
 * the producer reads, checks, and ignores when bogus (the ring counts as full).
 *
 *     struct tel_channel *ch = tel_channel_create("scope", 64 * 1024, TEL_STREAM);
 *     tel_channel_emit(ch, MY_TYPE, &value, sizeof value);     // 0 or -ENOBUFS
 *     int64_t n = tel_channel_read(ch, cpu, buffer, sizeof buffer);
 *
 * The ring logic (ring.c) has no kernel dependencies and is host-tested.
 * What user space shares (the record layout, the system call contract) is in
 * uapi/telemetry.h.
 */
#ifndef KERNEL_TELEMETRY_TELEMETRY_H
#define KERNEL_TELEMETRY_TELEMETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uapi/telemetry.h"

/* One ring.  head and tail count bytes since creation (they never wrap), so
 * head - tail is what the ring holds.  The producer writes head, the
 * consumer tail (the producer too, in flight-recorder mode). */
struct tel_ring {
	uint64_t head;
	uint64_t tail;
	uint64_t size;         /* data bytes, a power of two */
	uint64_t mask;         /* size - 1: a position's offset in data */
	uint64_t commits;      /* twice the records written (tel_ring_produced), odd while
				* a commit publishes head: a seqcount for the reader that
				* does not walk (ring.c) */
	uint64_t dropped;      /* records refused (stream) or overwritten (flight recorder) */
	uint64_t consumed;     /* records read out */
	uint64_t record_max;   /* largest record: TEL_RECORD_MAX's, at most half the ring */
	uint64_t reserved_end; /* head after the record reserved last (commit publishes it) */
	uint64_t last_time;    /* of the record reserved last */
	uint64_t next_sync;    /* head from which the next record is extended */
	uint64_t fast_limit;   /* reserve's fast path writes below this (ring.c) */
	uint64_t pad_at;       /* where the last pad starts */
	uint64_t short_end;    /* where the payload of the last record whose payload does not
				* fill its last word ends: published with head, so a reader
				* that finds it less than TEL_ALIGN before head knows how much
				* of the last record is padding (ring.c) */
	enum tel_mode mode;
	uint8_t *data;
	struct tel_ring_header *shared;     /* mirrored for a mapped consumer, or NULL */
	struct tel_ring_position *position; /* the consumer's tail when shared, or NULL */
};

/* ---- Rings (ring.c) -------------------------------------------------------- */

/* Sets ring up over data (size bytes, a power of two, at least 64).
 * Returns 0 or -EINVAL. */
int tel_ring_init(struct tel_ring *ring, void *data, uint64_t size, enum tel_mode mode);
/* Reserves room for a record of length payload bytes stamped time (TSC
 * ticks; never before the ring's last record: an older time is raised to
 * it) and fills its header.
 * Returns the payload to fill in (then tel_ring_commit), or NULL when the
 * record was dropped (stream and full, or longer than TEL_RECORD_MAX or half
 * the ring: counted).  One producer at a time per ring.  The common case (room
 * before the end of the data area, a sound tail) takes no call. */
static inline void *tel_ring_reserve(struct tel_ring *ring, uint16_t type, uint64_t time,
				     uint32_t length);
/* Publishes the record reserved last (its size as reserve left it).  A
 * record whose payload does not fill its last word is better committed with
 * tel_ring_commit_length, which notes where the payload ends. */
static inline void tel_ring_commit(struct tel_ring *ring);
/* tel_ring_commit for a ring that is never shared (a kernel-only channel's:
 * tel_channel_share refuses those), without the mirror's test. */
static inline void tel_ring_commit_unshared(struct tel_ring *ring);
/* Records written into ring so far. */
static inline uint64_t tel_ring_produced(const struct tel_ring *ring)
{
	return __atomic_load_n(&ring->commits, __ATOMIC_ACQUIRE) / 2;
}
/* Every case of reserve that is not the common one (ring.c). */
void *tel_ring_reserve_slow(struct tel_ring *ring, uint16_t type, uint64_t time, uint32_t length);
/* reserve + copy + commit.  Returns 0 or -ENOBUFS (dropped, counted). */
int tel_ring_write(struct tel_ring *ring, uint16_t type, uint64_t time, const void *payload,
		   uint32_t length);
/* Consumer: moves whole records, oldest first, into buffer (length bytes)
 * and frees their room.  Returns the bytes copied (records as laid out:
 * header, payload, padding), 0 when empty or the next record does not fit. */
uint64_t tel_ring_read(struct tel_ring *ring, void *buffer, uint64_t length);
/* What a read moved: how many records, the full time of the first and of the
 * last.  last_time goes in as the full time of the record before the first
 * (the last one read before; 0 when none): compact times count from it. */
struct tel_read_summary {
	uint64_t records;
	uint64_t first_time, last_time;
	/* The last record's padding, the bytes after its payload (0 to 7), as
	 * the ring noted it: filled by the readers that do not walk (lend and
	 * take), 0 after a walk. */
	uint64_t slack;
	/* After a walk: the size of the last record read (it ends the bytes
	 * read), for a reader that knows its payload; 0 when nothing was walked. */
	uint64_t last_bytes;
};
/* tel_ring_read, and fills *summary on the way (one walk). */
/* A kernel ring's reader that does not walk: takes every record up to head
 * and fills *summary from what the producer published with them (records:
 * how many; last_time: at least the last one's, at most the next one's;
 * first_time: last_time as it came in; slack: the last record's padding,
 * when its producer committed it with tel_ring_commit_length or
 * tel_ring_publish_short_unshared).  When they hold more than length
 * bytes, or the ring is shared or a flight recorder, it reads as
 * tel_ring_read_summed does (a walk, as many whole records as fit).
 * Returns the bytes copied, or 0 when empty. */
uint64_t tel_ring_take_all(struct tel_ring *ring, void *buffer, uint64_t length,
			   struct tel_read_summary *summary);
uint64_t tel_ring_read_summed(struct tel_ring *ring, void *buffer, uint64_t length,
			      struct tel_read_summary *summary);
/* Where tel_ring_take_all's records lie in the ring: at most two stretches
 * (the end of the data area splits them), and what tel_ring_release needs. */
struct tel_ring_lent {
	const void *data[2];
	uint64_t bytes[2];
	unsigned stretches;
	uint64_t produced, head;
};
/* tel_ring_take_all without the copy, for a reader that hands the records
 * on where they lie: fills *lent and *summary and leaves the records in the
 * ring, where the producer cannot overwrite them, until tel_ring_release.
 * Returns their bytes (0: none; nothing to release), or -1 when they are more
 * than length bytes or the ring is shared or a flight recorder (nothing
 * lent: take them with tel_ring_take_all).  The reader lends one batch at a
 * time and reads nothing else from the ring until it releases it. */
int64_t tel_ring_lend_all(struct tel_ring *ring, uint64_t length, struct tel_read_summary *summary,
			  struct tel_ring_lent *lent);
/* Frees the room of the records tel_ring_lend_all lent. */
void tel_ring_release(struct tel_ring *ring, const struct tel_ring_lent *lent);
/* Copies the newest whole records that fit into buffer, oldest first,
 * without consuming them.  Returns the bytes copied.  The producer must not
 * run meanwhile (the channel holds it off).  The first records may be
 * compact ones whose full time is unknown: a reader starts timing at the
 * first extended record. */
uint64_t tel_ring_snapshot(const struct tel_ring *ring, void *buffer, uint64_t length);
void tel_ring_get_stats(const struct tel_ring *ring, struct tel_ring_stats *stats);
/* Makes a stream ring shared: from now on the producer mirrors its side into
 * header and takes the consumer's tail from position (ignored when it is not
 * a multiple of TEL_ALIGN within the ring's size behind head: the ring is
 * then full, records are dropped and counted, never written outside the
 * ring).  Returns 0, or -EINVAL (a flight recorder).  No producer may run. */
int tel_ring_share(struct tel_ring *ring, struct tel_ring_header *header,
		   struct tel_ring_position *position);

/* The common case of reserve, in line: a compact record that ends by the
 * fast limit (ring.c); anything else goes to tel_ring_reserve_slow.  With a
 * constant type and length the first two tests fold away.  *end is where
 * the record ends, for tel_ring_publish_unshared: a producer that keeps it
 * in a register does not store and load ring->reserved_end. */
static inline void *tel_ring_reserve_end(struct tel_ring *ring, uint16_t type, uint64_t time,
					 uint32_t length, uint64_t *end)
{
	uint64_t record = TEL_RECORD_SIZE(length, TEL_COMPACT), head = ring->head;
	if (__builtin_expect(length > TEL_RECORD_MAX || type == TEL_TYPE_PAD ||
				 head + record > ring->fast_limit ||
				 time - ring->last_time > UINT32_MAX,
			     0)) {
		void *payload = tel_ring_reserve_slow(ring, type, time, length);
		*end = ring->reserved_end;
		return payload;
	}
	struct tel_record *r = (struct tel_record *)(ring->data + (head & ring->mask));
	*r = (struct tel_record){
	    .type = type, .words = (uint8_t)(record / 8), .time = (uint32_t)time};
	ring->last_time = time;
	*end = head + record;
	return r + 1;
}

static inline void *tel_ring_reserve(struct tel_ring *ring, uint16_t type, uint64_t time,
				     uint32_t length)
{
	uint64_t end;
	void *payload = tel_ring_reserve_end(ring, type, time, length, &end);
	ring->reserved_end = end;
	return payload;
}

/* Publishes the record reserved last, which ends at end, in a ring that is
 * never shared (tel_ring_commit_unshared). */
static inline void tel_ring_publish_unshared(struct tel_ring *ring, uint64_t end)
{
	/* One producer (interrupts off), so the count goes odd and even again
	 * with a plain increment in memory, not a locked one; x86 keeps the
	 * stores in order, and "memory" keeps the compiler from moving the
	 * record's stores past them. */
	__asm__ volatile("incq %0" : "+m"(ring->commits) : : "memory");
	__atomic_store_n(&ring->head, end, __ATOMIC_RELEASE);
	__asm__ volatile("incq %0" : "+m"(ring->commits) : : "memory");
}

/* tel_ring_publish_unshared for a record whose payload ends at payload_end,
 * inside its last word: the ring notes where, in the same commit as head,
 * so that a reader that does not walk (tel_ring_lend_all) can leave the
 * padding out.  Only such records pay for the note: a producer with a
 * constant length that is a multiple of TEL_ALIGN never calls this. */
static inline void tel_ring_publish_short_unshared(struct tel_ring *ring, uint64_t end,
						   uint64_t payload_end)
{
	__asm__ volatile("incq %0" : "+m"(ring->commits) : : "memory");
	__atomic_store_n(&ring->short_end, payload_end, __ATOMIC_RELAXED);
	__atomic_store_n(&ring->head, end, __ATOMIC_RELEASE);
	__asm__ volatile("incq %0" : "+m"(ring->commits) : : "memory");
}

/* Where the payload of a record of length bytes that ends at end stops. */
static inline uint64_t tel_payload_end(uint64_t end, uint32_t length)
{
	return end - (-(uint64_t)length & (TEL_ALIGN - 1));
}

static inline void tel_ring_commit_unshared(struct tel_ring *ring)
{
	tel_ring_publish_unshared(ring, ring->reserved_end);
}

/* What a shared ring's consumer sees of a commit (nothing when unshared). */
static inline void tel_ring_mirror(struct tel_ring *ring)
{
	if (__builtin_expect(ring->shared != 0, 0)) {
		__atomic_store_n(&ring->shared->produced, ring->commits / 2, __ATOMIC_RELAXED);
		__atomic_store_n(&ring->shared->head, ring->head, __ATOMIC_RELEASE);
	}
}

static inline void tel_ring_commit(struct tel_ring *ring)
{
	tel_ring_commit_unshared(ring);
	tel_ring_mirror(ring);
}

/* tel_ring_commit for a record reserved with length payload bytes: one
 * whose payload stops short of its last word is noted
 * (tel_ring_publish_short_unshared). */
static inline void tel_ring_commit_length(struct tel_ring *ring, uint32_t length)
{
	if (length & (TEL_ALIGN - 1))
		tel_ring_publish_short_unshared(ring, ring->reserved_end,
						tel_payload_end(ring->reserved_end, length));
	else
		tel_ring_commit_unshared(ring);
	tel_ring_mirror(ring);
}

/* ---- Channels: one ring per CPU (channel.c) --------------------------------- */

struct tel_channel;
struct address_space;

/* Returns a channel of one ring of bytes_per_cpu (rounded up to a power of
 * two, at least 4096) per possible CPU, or NULL (no memory, or
 * TEL_CHANNEL_MAX channels exist).  name is kept. */
struct tel_channel *tel_channel_create(const char *name, uint64_t bytes_per_cpu,
				       enum tel_mode mode);
/* Frees a channel; nobody may produce into it any more. */
void tel_channel_destroy(struct tel_channel *channel);
/* The channel's id for ms_tel_read. */
int tel_channel_id(const struct tel_channel *channel);
/* Writes a record into the calling CPU's ring (interrupts held off for the
 * write, so any context).  Returns 0, -EINVAL (too long) or -ENOBUFS. */
int tel_channel_emit(struct tel_channel *channel, uint16_t type, const void *payload,
		     uint32_t length);
/* The calling CPU's ring, for a producer that writes it in place with
 * tel_ring_reserve and tel_ring_commit; NULL when this CPU has none (it came
 * online after create).  The caller holds interrupts off from before this
 * call until after the commit: that makes it the ring's only producer. */
struct tel_ring *tel_channel_this_ring(struct tel_channel *channel);
/* CPU cpu's ring, or NULL (no such CPU).  For a producer-side change while
 * no producer runs (a trace session resetting its sync points). */
struct tel_ring *tel_channel_ring(struct tel_channel *channel, unsigned cpu);
/* Reads from CPU cpu's ring (tel_ring_read).  Returns bytes, or -EINVAL. */
int64_t tel_channel_read(struct tel_channel *channel, unsigned cpu, void *buffer, uint64_t length);
/* The same, with tel_ring_read_summed's summary. */
int64_t tel_channel_read_summed(struct tel_channel *channel, unsigned cpu, void *buffer,
				uint64_t length, struct tel_read_summary *summary);
/* Everything CPU cpu's ring holds (tel_ring_take_all).  Returns bytes, or -EINVAL. */
int64_t tel_channel_take_all(struct tel_channel *channel, unsigned cpu, void *buffer,
			     uint64_t length, struct tel_read_summary *summary);
/* tel_ring_lend_all and tel_ring_release on CPU cpu's ring.  lend returns
 * bytes, -1 (take them instead) or -EINVAL; release is harmless for a CPU
 * without a ring. */
int64_t tel_channel_lend_all(struct tel_channel *channel, unsigned cpu, uint64_t length,
			     struct tel_read_summary *summary, struct tel_ring_lent *lent);
void tel_channel_release(struct tel_channel *channel, unsigned cpu,
			 const struct tel_ring_lent *lent);
/* Snapshot of CPU cpu's ring.  Returns bytes, or -EINVAL. */
int64_t tel_channel_snapshot(struct tel_channel *channel, unsigned cpu, void *buffer,
			     uint64_t length);
int tel_channel_get_stats(struct tel_channel *channel, unsigned cpu, struct tel_ring_stats *stats);
/* The sums over every CPU. */
void tel_channel_get_totals(struct tel_channel *channel, struct tel_ring_stats *stats);
/* Shares a stream channel's rings (header and position pages, once) and
 * names pid the only process allowed to map it.  No producer may run.
 * Returns 0, -EINVAL (flight recorder), -EBUSY (a kernel-only channel, whose
 * producers commit without the mirror) or -ENOMEM. */
int tel_channel_share(struct tel_channel *channel, int pid);
/* The process the channel is shared with, or 0. */
int tel_channel_consumer(const struct tel_channel *channel);
/* Marks a channel that the kernel drains itself (the trace stream), before it
 * is ever shared: a second reader would take records that then count as
 * neither delivered nor dropped, so ms_tel_read refuses it (-EBUSY),
 * privileged or not, and it is never shared (its writers may commit with
 * tel_ring_commit_unshared). */
void tel_channel_keep_for_kernel(struct tel_channel *channel);
bool tel_channel_kernel_only(const struct tel_channel *channel);
/* Maps the shared channel into the calling process at TEL_MAP_BASE + id *
 * TEL_MAP_SPAN, one kernel region per ring (proc_add_kernel_region: the
 * process cannot unmap or map over it): headers and data read-only,
 * position pages writable, all user.  Mapping again is harmless.  Returns 0
 * with *map filled, or -EINVAL (not shared, or the range is taken), -EPERM
 * (a kernel thread), -ENOMEM.  The frames stay the channel's (an exiting
 * process only drops its page tables). */
int tel_channel_map(struct tel_channel *channel, struct tel_map *map);

#endif
