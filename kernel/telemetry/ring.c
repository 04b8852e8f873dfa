/*
 * One telemetry ring: single producer, single consumer, bytes counted since
 * creation.  A record never wraps: when it does not fit before the end of the
 * data area the producer fills the rest with a pad record (header only, type
 * TEL_TYPE_PAD) and starts at offset 0.  Every record, pad included, is a
 * multiple of 8 bytes and the size is a power of two at least 64, so a
 * header (8 bytes) always fits where a record may start.
 *
 * Timestamps are compact (uapi/telemetry.h): a record keeps the low 32 bits
 * of its time, and the producer writes an extended record (the full 64 bits
 * after the header) when the time since its last record does not fit, or
 * when the head has passed ring->next_sync (every 1/TEL_SYNC_FRACTION of the
 * ring, and the first record), so readers that start anywhere, a snapshot of
 * a flight recorder among them, find full times soon.  Time never goes back
 * inside a ring: a timestamp older than the last record's is written as
 * that one's.
 *
 * Ordering: the producer fills the record, then publishes head with a release
 * store; the consumer reads head with acquire, copies, then publishes tail
 * with release, and the producer reads tail with acquire before reusing the
 * room.  In flight-recorder mode the producer itself advances tail past the
 * oldest records (counting them as dropped); such rings are read by snapshot,
 * with the producer held off.
 *
 * A shared ring (tel_ring_share) mirrors head and its counts into a header a
 * consumer outside the kernel maps read-only, and takes the tail from a
 * position the consumer writes.  That value is never trusted: unless it is
 * aligned and at most size bytes behind head, the producer treats the ring
 * as full (drops and counts), and since records are placed from head alone,
 * a bogus position can cost records but never move a write outside the ring.
 * Readers in the kernel check every record header they walk in that mode.
 *
 * Reserve has a fast path for the common case, in line and without a call
 * (telemetry.h): a compact record that ends by ring->fast_limit, which the
 * slow path sets to the first of the next sync point, the end of the data
 * area and the room behind the tail it saw (tails only move forward, so the
 * limit stays safe until the slow path looks again).  Before that limit the
 * ring held a record that fits before the end of the data area (no pad) and a tail,
 * shared or not, that is aligned and leaves room for it.  One unsigned test,
 * head - tail <= size - record, says both "not ahead of head" and "room"
 * (size - record cannot wrap: a record is at most half the ring).  Anything
 * else (an extended record, a pad, a full ring, a bogus position, a refused length or type) goes
 * to the out-of-line path, which decides as described above.  Reserve notes
 * where the record ends, so commit publishes it without reading the record
 * back.  The producer does not copy a shared position into tail: stats,
 * snapshots and reads take the consumer's tail where it is, checked.
 */
#include <stdbool.h>

#include "telemetry/telemetry.h"

#include "lib/errno.h"

static uint64_t load_acquire(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void store_release(uint64_t *p, uint64_t value)
{
	__atomic_store_n(p, value, __ATOMIC_RELEASE);
}

static void copy_bytes(void *dst, const void *src, uint64_t length)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	for (uint64_t i = 0; i < length; i++)
		d[i] = s[i];
}

/* A whole record (length a multiple of TEL_ALIGN), a word at a time: the
 * consumer's copy runs once per record delivered. */
static void copy_record(void *dst, const void *src, uint64_t length)
{
	for (uint64_t i = 0; i < length; i += TEL_ALIGN) {
		uint64_t word;
		__builtin_memcpy(&word, (const uint8_t *)src + i, sizeof word);
		__builtin_memcpy((uint8_t *)dst + i, &word, sizeof word);
	}
}
_Static_assert(TEL_ALIGN == sizeof(uint64_t), "records are whole words");

int tel_ring_init(struct tel_ring *ring, void *data, uint64_t size, enum tel_mode mode)
{
	if (!ring || !data || size < 64 || (size & (size - 1)) ||
	    (mode != TEL_STREAM && mode != TEL_FLIGHT_RECORDER))
		return -EINVAL;
	uint64_t half = size / 2, largest = TEL_RECORD_SIZE(TEL_RECORD_MAX, TEL_EXTENDED);
	*ring = (struct tel_ring){.size = size,
				  .mask = size - 1,
				  .mode = mode,
				  .data = data,
				  .pad_at = UINT64_MAX, /* no pad yet */
				  .record_max = half < largest ? half : largest};
	return 0;
}

static struct tel_record *record_at(const struct tel_ring *ring, uint64_t position)
{
	return (struct tel_record *)(ring->data + (position & ring->mask));
}

static void count_drop(struct tel_ring *ring)
{
	ring->dropped++;
	if (ring->shared)
		__atomic_store_n(&ring->shared->dropped, ring->dropped, __ATOMIC_RELAXED);
}

/* A consumer position may be used when it is aligned and no more than size
 * bytes behind head (a position ahead of head wraps to a huge distance). */
static bool position_ok(const struct tel_ring *ring, uint64_t head, uint64_t tail)
{
	return !(tail & (TEL_ALIGN - 1)) && head - tail <= ring->size;
}

/* The tail as the producer sees it; a bogus shared position reads as a full ring. */
static uint64_t producer_tail(struct tel_ring *ring)
{
	if (!ring->position)
		return load_acquire(&ring->tail);
	uint64_t tail = load_acquire(&ring->position->tail);
	return position_ok(ring, ring->head, tail) ? tail : ring->head - ring->size;
}

/* Flight recorder: frees room by dropping the oldest records. */
static void overwrite_oldest(struct tel_ring *ring, uint64_t needed)
{
	uint64_t tail = ring->tail;
	while (ring->size - (ring->head - tail) < needed) {
		const struct tel_record *r = record_at(ring, tail);
		if (r->type != TEL_TYPE_PAD)
			ring->dropped++;
		tail += tel_record_bytes(r);
	}
	store_release(&ring->tail, tail);
}

/* Bytes to the end of the data area from head. */
static uint64_t room_to_end(const struct tel_ring *ring)
{
	return ring->size - (ring->head & (ring->size - 1));
}

static void write_header(struct tel_record *r, uint16_t type, uint64_t bytes, uint8_t kind,
			 uint64_t time)
{
	*r = (struct tel_record){
	    .type = type, .words = (uint8_t)(bytes / 8), .kind = kind, .time = (uint32_t)time};
	if (kind == TEL_EXTENDED)
		*(uint64_t *)(r + 1) = time;
}

/* Compact when the time since the ring's last record fits in 32 bits and
 * the head has not reached the next sync point. */
static uint8_t kind_for(const struct tel_ring *ring, uint64_t time)
{
	return time - ring->last_time <= UINT32_MAX && ring->head < ring->next_sync ? TEL_COMPACT
										    : TEL_EXTENDED;
}

/* Where the fast path must stop, from end (the head after this record): the
 * next sync point, the room the consumer's tail leaves now, and the end of
 * the data area, whichever comes first.  The tail only moves forward, so a
 * limit computed now stays safe (at worst too low: the slow path then looks
 * again). */
static void set_fast_limit(struct tel_ring *ring, uint64_t end)
{
	uint64_t limit = ring->next_sync, room = producer_tail(ring) + ring->size;
	uint64_t area_end = (end & ~(ring->size - 1)) + ring->size;
	if (room < limit)
		limit = room;
	if (area_end < limit)
		limit = area_end;
	ring->fast_limit = limit;
}

/* Every case of reserve: refused lengths and types, an extended record, a
 * pad before the record, a full ring (dropped, or the oldest overwritten), a
 * bogus shared position.  Returns the payload or NULL (counted). */
void *tel_ring_reserve_slow(struct tel_ring *ring, uint16_t type, uint64_t time, uint32_t length)
{
	if (!ring->data)
		return NULL; /* never set up: nothing to count in */
	if (time < ring->last_time)
		time = ring->last_time; /* never back in time */
	uint8_t kind = kind_for(ring, time);
	uint64_t record = TEL_RECORD_SIZE(length, kind);
	if (record > ring->record_max || type == TEL_TYPE_PAD || length > TEL_RECORD_MAX) {
		count_drop(ring);
		return NULL;
	}
	uint64_t pad = room_to_end(ring) < record ? room_to_end(ring) : 0;
	uint64_t free_bytes = ring->size - (ring->head - producer_tail(ring));
	if (free_bytes < pad + record) {
		if (ring->mode == TEL_STREAM) {
			count_drop(ring);
			return NULL;
		}
		overwrite_oldest(ring, pad + record);
	}
	uint64_t at = ring->head; /* head moves at the commit, past the pad and the record */
	if (pad) {
		write_header(record_at(ring, at), TEL_TYPE_PAD, pad, TEL_COMPACT, 0);
		ring->pad_at = at;
		at += pad;
	}
	struct tel_record *r = record_at(ring, at);
	write_header(r, type, record, kind, time);
	if (kind == TEL_EXTENDED)
		ring->next_sync = at + ring->size / TEL_SYNC_FRACTION;
	ring->last_time = time;
	ring->reserved_end = at + record;
	set_fast_limit(ring, ring->reserved_end);
	return (uint8_t *)r + record - ((length + 7) & ~7ULL);
}

int tel_ring_write(struct tel_ring *ring, uint16_t type, uint64_t time, const void *payload,
		   uint32_t length)
{
	void *p = tel_ring_reserve(ring, type, time, length);
	if (!p)
		return -ENOBUFS;
	copy_bytes(p, payload, length);
	tel_ring_commit_length(ring, length);
	return 0;
}

/* Where the consumer is: the shared position (a bogus one skips to head:
 * what was unread there is lost) or the ring's own tail. */
static uint64_t consumer_tail(const struct tel_ring *ring, uint64_t head)
{
	if (!ring->position)
		return load_acquire(&ring->tail);
	uint64_t tail = load_acquire(&ring->position->tail);
	return position_ok(ring, head, tail) ? tail : head;
}

/* Is there a whole record at position, before head?  A shared consumer may
 * have put position anywhere aligned, even inside a record, so the header
 * found there is checked: a sane length, ending by head and inside the data
 * area (a record never wraps).  Returns the record's size, or 0. */
static uint64_t record_size_at(const struct tel_ring *ring, uint64_t position, uint64_t head)
{
	const struct tel_record *r = record_at(ring, position);
	uint64_t size = tel_record_bytes(r);
	if (size < sizeof *r || size > ring->record_max || size > head - position ||
	    (position & (ring->size - 1)) + size > ring->size)
		return 0;
	return size;
}

/* One walk over the records, one copy per stretch of them that lies
 * contiguous in the data area (a pad or the end of the area ends a
 * stretch): the consumer's cost per record is its header's few loads. */
struct read_walk {
	const struct tel_ring *ring;
	uint8_t *out;
	uint64_t copied, stretch; /* stretch: where the records not yet copied start */
};

static void copy_stretch(struct read_walk *w, uint64_t end)
{
	uint64_t bytes = end - w->stretch;
	if (bytes)
		__builtin_memcpy(w->out + w->copied, record_at(w->ring, w->stretch), bytes);
	w->copied += bytes;
	w->stretch = end;
}

uint64_t tel_ring_read_summed(struct tel_ring *ring, void *buffer, uint64_t length,
			      struct tel_read_summary *summary)
{
	uint64_t head = load_acquire(&ring->head), tail = consumer_tail(ring, head);
	uint64_t taken = 0, records = 0, time = summary->last_time, last_bytes = 0;
	const uint64_t mask = ring->mask;
	const uint8_t *const data = ring->data;
	const bool shared = ring->position != NULL;
	struct read_walk w = {.ring = ring, .out = buffer, .stretch = tail};
	while (tail != head) {
		const struct tel_record *r = (const void *)(data + (tail & mask));
		uint64_t size = shared ? record_size_at(ring, tail, head) : tel_record_bytes(r);
		if (!size || size > head - tail) {
			copy_stretch(&w, tail);
			tail = w.stretch = head; /* not a record boundary (a shared position) */
			break;
		}
		if (r->type == TEL_TYPE_PAD) {
			copy_stretch(&w, tail);
			w.stretch = tail + size;
		} else {
			if (taken + size > length)
				break;
			tel_record_time(r, &time);
			if (!records++)
				summary->first_time = time;
			taken += size;
			last_bytes = size;
		}
		tail += size;
		if (!(tail & mask))
			copy_stretch(&w, tail); /* the data area ends here */
	}
	copy_stretch(&w, tail);
	ring->consumed += records;
	store_release(shared ? &ring->position->tail : &ring->tail, tail);
	summary->records = records;
	summary->last_time = time;
	summary->slack = 0;
	summary->last_bytes = last_bytes;
	return w.copied;
}

/* What the producer has published, read consistently: head, the count of
 * records up to it, and the times and pad it noted (those two may already
 * be the next record's, reserved and not yet committed), and where the
 * payload of the last short record ends (committed with head: it is the
 * last record's when it lies less than a word before head).  A commit is a
 * few instructions with interrupts off: a reader that finds one under way
 * asks again. */
struct published {
	uint64_t head, produced, last_time, pad_at, short_end;
};

static struct published read_published(const struct tel_ring *ring)
{
	for (;;) {
		uint64_t commits = load_acquire(&ring->commits);
		struct published p = {
		    .head = load_acquire(&ring->head),
		    .produced = commits / 2,
		    .last_time = __atomic_load_n(&ring->last_time, __ATOMIC_ACQUIRE),
		    .pad_at = __atomic_load_n(&ring->pad_at, __ATOMIC_ACQUIRE),
		    .short_end = __atomic_load_n(&ring->short_end, __ATOMIC_ACQUIRE)};
		if (!(commits & 1) && load_acquire(&ring->commits) == commits)
			return p;
		__builtin_ia32_pause();
	}
}

int64_t tel_ring_lend_all(struct tel_ring *ring, uint64_t length, struct tel_read_summary *summary,
			  struct tel_ring_lent *lent)
{
	if (ring->position || ring->mode != TEL_STREAM)
		return -1;
	struct published now = read_published(ring);
	uint64_t tail = ring->tail;
	if (now.head - tail > length) /* more than fits: the caller walks them */
		return -1;
	*lent = (struct tel_ring_lent){.produced = now.produced, .head = now.head};
	summary->first_time = summary->last_time;
	summary->records = now.produced - ring->consumed;
	summary->slack = 0;
	summary->last_bytes = 0;
	if (!summary->records)
		return 0;
	summary->last_time = now.last_time;
	/* An older short record's payload ends a whole record or more before
	 * head: only the last one's lies within a word of it. */
	if (now.head - now.short_end < TEL_ALIGN)
		summary->slack = now.head - now.short_end;
	/* Records never cross the end of the data area: one stretch before it
	 * (a pad at its end left out), one after. */
	uint64_t boundary = (tail | ring->mask) + 1;
	if (now.head > boundary) {
		uint64_t end = now.pad_at >= tail && now.pad_at < boundary ? now.pad_at : boundary;
		lent->data[lent->stretches] = record_at(ring, tail);
		lent->bytes[lent->stretches++] = end - tail;
		tail = boundary;
	}
	lent->data[lent->stretches] = record_at(ring, tail);
	lent->bytes[lent->stretches++] = now.head - tail;
	return (int64_t)(lent->bytes[0] + (lent->stretches > 1 ? lent->bytes[1] : 0));
}

void tel_ring_release(struct tel_ring *ring, const struct tel_ring_lent *lent)
{
	ring->consumed = lent->produced;
	store_release(&ring->tail, lent->head);
}

uint64_t tel_ring_take_all(struct tel_ring *ring, void *buffer, uint64_t length,
			   struct tel_read_summary *summary)
{
	struct tel_ring_lent lent;
	int64_t bytes = tel_ring_lend_all(ring, length, summary, &lent);
	if (bytes < 0) /* as many whole records as fit */
		return tel_ring_read_summed(ring, buffer, length, summary);
	uint64_t copied = 0;
	for (unsigned i = 0; i < lent.stretches; i++) {
		__builtin_memcpy((uint8_t *)buffer + copied, lent.data[i], lent.bytes[i]);
		copied += lent.bytes[i];
	}
	if (bytes)
		tel_ring_release(ring, &lent);
	return copied;
}

uint64_t tel_ring_read(struct tel_ring *ring, void *buffer, uint64_t length)
{
	struct tel_read_summary summary = {0};
	return tel_ring_read_summed(ring, buffer, length, &summary);
}

/* Where the whole records from start end (head, or the first position that
 * holds none: a bogus shared position), and in *bytes their size, pads left
 * out. */
static uint64_t records_end(const struct tel_ring *ring, uint64_t start, uint64_t head,
			    uint64_t *bytes)
{
	uint64_t p = start, size;
	*bytes = 0;
	while (p != head && (size = record_size_at(ring, p, head))) {
		if (record_at(ring, p)->type != TEL_TYPE_PAD)
			*bytes += size;
		p += size;
	}
	return p;
}

uint64_t tel_ring_snapshot(const struct tel_ring *ring, void *buffer, uint64_t length)
{
	uint64_t head = load_acquire(&ring->head), start = consumer_tail(ring, head), bytes;
	uint64_t end = records_end(ring, start, head, &bytes);
	uint64_t copied = 0, size;
	/* Skip the oldest records until the rest fits.  A producer may be
	 * writing over them (a flight recorder): each size is checked again, as
	 * records_end did, and the copy never passes length. */
	for (uint64_t p = start; p != end && (size = record_size_at(ring, p, end)); p += size) {
		const struct tel_record *r = record_at(ring, p);
		if (r->type == TEL_TYPE_PAD)
			continue;
		if (bytes > length) {
			bytes -= size < bytes ? size : bytes; /* too old to fit */
			continue;
		}
		if (size > length - copied)
			break;
		copy_record((uint8_t *)buffer + copied, r, size);
		copied += size;
	}
	return copied;
}

int tel_ring_share(struct tel_ring *ring, struct tel_ring_header *header,
		   struct tel_ring_position *position)
{
	if (ring->mode != TEL_STREAM)
		return -EINVAL;
	*header = (struct tel_ring_header){.head = ring->head,
					   .size = ring->size,
					   .produced = tel_ring_produced(ring),
					   .dropped = ring->dropped};
	store_release(&position->tail, ring->tail);
	ring->shared = header;
	ring->fast_limit = 0; /* the next reserve reads the position */
	__atomic_store_n(&ring->position, position, __ATOMIC_RELEASE);
	return 0;
}

void tel_ring_get_stats(const struct tel_ring *ring, struct tel_ring_stats *stats)
{
	stats->produced = tel_ring_produced(ring);
	stats->dropped = __atomic_load_n(&ring->dropped, __ATOMIC_RELAXED);
	stats->consumed = __atomic_load_n(&ring->consumed, __ATOMIC_RELAXED);
	uint64_t head = load_acquire(&ring->head);
	stats->bytes_used = head - consumer_tail(ring, head);
	stats->size = ring->size;
}
