/*
 * The hot path: event_in and event_out.  Both run with interrupts off from
 * start to end (so nothing on this CPU interleaves with its freelist or
 * counters) and take one bucket lock, a test-and-set word: the table is
 * sized at twice the events, chains are short, and two CPUs on different
 * keys meet only when their keys share a bucket.  An event goes back to the
 * freelist of the CPU it came from: directly on that CPU, else by a
 * lock-free push onto that CPU's remote stack, which the owner takes whole
 * (an exchange: no ABA) when its freelist runs dry.  Callbacks run after the
 * bucket lock is released, with the caller's interrupt state.
 *
 * The usual call (an 8-byte key: a pointer, a thread; no private data) takes
 * the word path: the key travels in a register, is hashed with one multiply
 * and compared as one word, the CPU is looked up once, and the slow cases
 * (an empty freelist, a callback to run, a unique key to replace, a remote
 * free) leave it through functions of their own, so that it keeps few
 * registers live.  Every other key takes the general path.
 */
#include "lattrack/internal.h"

#include "arch/x86_64/cpu.h"
#include "lib/errno.h"
#include "lib/string.h"

struct lattrack_event *lattrack_event_at(const struct lattrack *tracker, unsigned index)
{
	return (struct lattrack_event *)((char *)tracker->events +
					 (size_t)index * tracker->event_size);
}

void lattrack_bucket_lock(struct lattrack_bucket *bucket)
{
	while (__atomic_exchange_n(&bucket->lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&bucket->lock, __ATOMIC_RELAXED))
			cpu_relax();
}

void lattrack_bucket_unlock(struct lattrack_bucket *bucket)
{
	__atomic_store_n(&bucket->lock, 0, __ATOMIC_RELEASE);
}

/* Multiply-xorshift over 8-byte words: one multiply for the usual 8-byte key. */
static inline __attribute__((always_inline)) uint32_t hash_key(const void *key, unsigned length)
{
	const unsigned char *bytes = key;
	if (length == 8) {
		uint64_t word;
		__builtin_memcpy(&word, bytes, 8);
		return (uint32_t)(((8 ^ word) * 0x9e3779b97f4a7c15ULL) >> 32);
	}
	uint64_t h = length;
	while (length >= 8) {
		uint64_t word;
		__builtin_memcpy(&word, bytes, 8); /* inlined: -ffreestanding calls memcpy */
		h = (h ^ word) * 0x9e3779b97f4a7c15ULL;
		bytes += 8;
		length -= 8;
	}
	if (length) {
		uint64_t word = 0;
		memcpy(&word, bytes, length);
		h = (h ^ word) * 0x9e3779b97f4a7c15ULL;
	}
	return (uint32_t)(h >> 32);
}

/* 8-byte keys (pointers, ids: the usual case) compare and copy as one word. */
static inline __attribute__((always_inline)) bool
key_equal(const struct lattrack_event *event, uint32_t hash, const void *key, unsigned length)
{
	if (event->hash != hash || event->key_length != length)
		return false;
	if (length == 8) {
		uint64_t a, b;
		__builtin_memcpy(&a, event->data, 8);
		__builtin_memcpy(&b, key, 8);
		return a == b;
	}
	return !memcmp(event->data, key, length);
}

static void copy_key(unsigned char *slot, const void *key, unsigned length)
{
	if (length == 8)
		__builtin_memcpy(slot, key, 8);
	else
		memcpy(slot, key, length);
}

static struct lattrack_bucket *bucket_of(struct lattrack *tracker, uint32_t hash)
{
	return &tracker->buckets[hash & tracker->bucket_mask];
}

/* Unlinks and returns the first event of key in bucket (lock held), or NULL. */
static inline __attribute__((always_inline)) struct lattrack_event *
unlink_key(struct lattrack_bucket *bucket, uint32_t hash, const void *key, unsigned length)
{
	for (struct lattrack_event **link = &bucket->head; *link; link = &(*link)->next) {
		struct lattrack_event *event = *link;
		if (key_equal(event, hash, key, length)) {
			*link = event->next;
			return event;
		}
	}
	return NULL;
}

/* Interrupts off. */
static struct lattrack_event *alloc_event(struct lattrack_cpu *cpu)
{
	struct lattrack_event *event = cpu->free;
	if (!event) {
		if (!__atomic_load_n(&cpu->remote, __ATOMIC_RELAXED))
			return NULL;
		event = __atomic_exchange_n(&cpu->remote, NULL, __ATOMIC_ACQUIRE);
	}
	cpu->free = event->next;
	return event;
}

/* Interrupts off.  In line on the hot path. */
static inline __attribute__((always_inline)) void free_event(struct lattrack *tracker,
							     struct lattrack_event *event)
{
	struct lattrack_cpu *home = &tracker->cpus[event->home_cpu];
	if (event->home_cpu == this_cpu_id()) {
		event->next = home->free;
		home->free = event;
		return;
	}
	struct lattrack_event *head = __atomic_load_n(&home->remote, __ATOMIC_RELAXED);
	do
		event->next = head;
	while (!__atomic_compare_exchange_n(&home->remote, &head, event, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
}

/* Interrupts off. */
void lattrack_free_event(struct lattrack *tracker, struct lattrack_event *event)
{
	free_event(tracker, event);
}

/* Interrupts off. */
void lattrack_note_max(struct lattrack *tracker, uint64_t delay_tsc)
{
	struct lattrack_cpu *cpu = lattrack_this_cpu(tracker);
	if (delay_tsc > cpu->max_tsc)
		cpu->max_tsc = delay_tsc;
}

/* Reports an event the caller owns: annotates it, keeps it among the recent,
 * hands it to the subscribers and calls the callback (interrupts as the
 * caller had them). */
void lattrack_report_event(struct lattrack *tracker, struct lattrack_event *event,
			   enum lattrack_flag flag, uint64_t end_tsc, unsigned out_id)
{
	struct lattrack_report report = {.tracker = tracker,
					 .key = event->data,
					 .key_length = event->key_length,
					 .priv = lattrack_event_priv(tracker, event),
					 .start_ns = clock_ns_at_tsc(event->start_tsc),
					 .end_ns = clock_ns_at_tsc(end_tsc),
					 .flag = flag,
					 .out_id = out_id};
	if (tracker->annotate)
		tracker->annotate(&report, tracker->annotate_context);
	lattrack_publish(tracker, &report);
	if (tracker->callback)
		tracker->callback(&report, tracker->callback_context);
}

static bool bad_key(const struct lattrack *tracker, const void *key, unsigned length)
{
	return !tracker || !__atomic_load_n(&tracker->enabled, __ATOMIC_ACQUIRE) || !key ||
	       !length || length > tracker->key_size;
}

static void fill_event(struct lattrack *tracker, struct lattrack_event *event, const void *key,
		       unsigned length, uint32_t hash, const void *priv)
{
	event->start_tsc = rdtsc();
	event->hash = hash;
	event->key_length = (uint16_t)length;
	event->timed_out = 0;
	copy_key(event->data, key, length);
	if (tracker->priv_size) {
		void *slot = lattrack_event_priv(tracker, event);
		if (priv)
			memcpy(slot, priv, tracker->priv_size);
		else
			memset(slot, 0, tracker->priv_size);
	}
}

/* A unique event_in ended the event it replaced (owned, interrupts off). */
static void end_replaced(struct lattrack *tracker, struct lattrack_event *old, uint64_t flags)
{
	uint64_t now = rdtsc();
	lattrack_this_cpu(tracker)->counts.unique++;
	bool report = now - old->start_tsc >= tracker->threshold_tsc;
	if (report) {
		lattrack_note_max(tracker, now - old->start_tsc);
		irq_restore(flags);
		lattrack_report_event(tracker, old, LATTRACK_UNIQUE, now, 0);
		flags = irq_save();
	}
	free_event(tracker, old);
	irq_restore(flags);
}

/* The callback for an event event_out ended, if any; frees it.  Interrupts
 * off on entry; restores flags. */
static inline __attribute__((always_inline)) void
end_out(struct lattrack *tracker, struct lattrack_event *event, unsigned id, uint64_t flags)
{
	uint64_t now = rdtsc();
	uint64_t delay = now - event->start_tsc;
	struct lattrack_cpu *cpu = lattrack_this_cpu(tracker);
	cpu->counts.out++;
	enum lattrack_flag flag = LATTRACK_LATE;
	if (event->timed_out)
		cpu->counts.late++;
	else if (delay >= __atomic_load_n(&tracker->threshold_tsc, __ATOMIC_RELAXED))
		flag = LATTRACK_NORMAL, cpu->counts.over++;
	else {
		free_event(tracker, event);
		irq_restore(flags);
		return;
	}
	lattrack_note_max(tracker, delay);
	irq_restore(flags);
	lattrack_report_event(tracker, event, flag, now, id);
	flags = irq_save();
	free_event(tracker, event);
	irq_restore(flags);
}

/* ---- The word path ----------------------------------------------------------- */

static inline __attribute__((always_inline)) uint32_t hash_word(uint64_t word)
{
	return (uint32_t)(((8 ^ word) * 0x9e3779b97f4a7c15ULL) >> 32); /* hash_key's for 8 bytes */
}

static inline __attribute__((always_inline)) bool word_path(const struct lattrack *tracker,
							    const void *key, unsigned length)
{
	return length == 8 && tracker && key &&
	       __atomic_load_n(&tracker->word_path, __ATOMIC_ACQUIRE);
}

/* The freelist was empty: the remote stack, or a drop.  Interrupts off;
 * restores flags on a drop. */
static __attribute__((noinline)) struct lattrack_event *word_refill(struct lattrack_cpu *cpu,
								    uint64_t flags)
{
	struct lattrack_event *event = alloc_event(cpu);
	if (!event) {
		cpu->counts.dropped++;
		irq_restore(flags);
	}
	return event;
}

/* A unique in: unlinks the key's event (bucket locked), or NULL. */
static __attribute__((noinline)) struct lattrack_event *word_unlink(struct lattrack_bucket *bucket,
								    uint32_t hash, uint64_t word)
{
	return unlink_key(bucket, hash, &word, 8);
}

static inline __attribute__((always_inline)) int
event_in_word(struct lattrack *tracker, uint64_t word, enum lattrack_in_mode mode)
{
	uint32_t hash = hash_word(word);
	uint64_t flags = irq_save();
	struct lattrack_cpu *cpu = lattrack_this_cpu(tracker);
	struct lattrack_event *event = cpu->free;
	if (__builtin_expect(!event, 0) && !(event = word_refill(cpu, flags)))
		return -ENOSPC;
	cpu->free = event->next;
	event->start_tsc = rdtsc();
	event->hash = hash;
	event->key_length = 8;
	event->timed_out = 0;
	__builtin_memcpy(event->data, &word, 8);
	struct lattrack_bucket *bucket = bucket_of(tracker, hash);
	lattrack_bucket_lock(bucket);
	struct lattrack_event *old =
	    mode == LATTRACK_IN_UNIQUE ? word_unlink(bucket, hash, word) : NULL;
	event->next = bucket->head;
	bucket->head = event;
	lattrack_bucket_unlock(bucket);
	cpu->counts.in++;
	if (__builtin_expect(old != NULL, 0))
		end_replaced(tracker, old, flags);
	else
		irq_restore(flags);
	return 0;
}

/* event_out found its event, which needs more than a local free: a
 * callback (NORMAL or LATE) or a remote free.  Interrupts off on entry;
 * restores flags. */
static __attribute__((noinline)) void
word_end_slow(struct lattrack *tracker, struct lattrack_event *event, unsigned id, uint64_t flags)
{
	end_out(tracker, event, id, flags);
}

static inline __attribute__((always_inline)) int event_out_word(struct lattrack *tracker,
								uint64_t word, unsigned id)
{
	uint32_t hash = hash_word(word);
	struct lattrack_bucket *bucket = bucket_of(tracker, hash);
	uint64_t flags = irq_save();
	lattrack_bucket_lock(bucket);
	struct lattrack_event **link = &bucket->head, *event;
	while ((event = *link)) {
		uint64_t other;
		__builtin_memcpy(&other, event->data, 8);
		if (event->hash == hash && event->key_length == 8 && other == word)
			break;
		link = &event->next;
	}
	if (event)
		*link = event->next;
	lattrack_bucket_unlock(bucket);
	unsigned cpu_id = this_cpu_id();
	struct lattrack_cpu *cpu = &tracker->cpus[cpu_id];
	if (__builtin_expect(!event, 0)) {
		cpu->counts.unmatched++;
		irq_restore(flags);
		return -ENOENT;
	}
	uint64_t delay = rdtsc() - event->start_tsc;
	if (__builtin_expect(event->timed_out || event->home_cpu != cpu_id ||
				 delay >=
				     __atomic_load_n(&tracker->threshold_tsc, __ATOMIC_RELAXED),
			     0)) {
		word_end_slow(tracker, event, id, flags);
		return 0;
	}
	cpu->counts.out++;
	event->next = cpu->free;
	cpu->free = event;
	irq_restore(flags);
	return 0;
}

/* ---- The general path --------------------------------------------------------- */

static __attribute__((noinline)) int event_in_general(struct lattrack *tracker, const void *key,
						      unsigned length, enum lattrack_in_mode mode,
						      const void *priv)
{
	if (bad_key(tracker, key, length) || mode > LATTRACK_IN_UNIQUE)
		return -EINVAL;
	uint64_t flags = irq_save();
	struct lattrack_cpu *cpu = lattrack_this_cpu(tracker);
	struct lattrack_event *event = alloc_event(cpu);
	if (!event) {
		cpu->counts.dropped++;
		irq_restore(flags);
		return -ENOSPC;
	}
	uint32_t hash = hash_key(key, length);
	fill_event(tracker, event, key, length, hash, priv);
	struct lattrack_bucket *bucket = bucket_of(tracker, hash);
	lattrack_bucket_lock(bucket);
	struct lattrack_event *old =
	    mode == LATTRACK_IN_UNIQUE ? unlink_key(bucket, hash, key, length) : NULL;
	event->next = bucket->head;
	bucket->head = event;
	lattrack_bucket_unlock(bucket);
	cpu->counts.in++;
	if (old)
		end_replaced(tracker, old, flags);
	else
		irq_restore(flags);
	return 0;
}

static __attribute__((noinline)) int event_out_general(struct lattrack *tracker, const void *key,
						       unsigned length, unsigned id)
{
	if (bad_key(tracker, key, length))
		return -EINVAL;
	uint32_t hash = hash_key(key, length);
	struct lattrack_bucket *bucket = bucket_of(tracker, hash);
	uint64_t flags = irq_save();
	lattrack_bucket_lock(bucket);
	struct lattrack_event *event = unlink_key(bucket, hash, key, length);
	lattrack_bucket_unlock(bucket);
	if (!event) {
		lattrack_this_cpu(tracker)->counts.unmatched++;
		irq_restore(flags);
		return -ENOENT;
	}
	end_out(tracker, event, id, flags);
	return 0;
}

int lattrack_event_in(struct lattrack *tracker, const void *key, unsigned length,
		      enum lattrack_in_mode mode, const void *priv)
{
	if (!word_path(tracker, key, length) || priv || mode > LATTRACK_IN_UNIQUE)
		return event_in_general(tracker, key, length, mode, priv);
	uint64_t word;
	__builtin_memcpy(&word, key, 8);
	return event_in_word(tracker, word, mode);
}

int lattrack_event_out(struct lattrack *tracker, const void *key, unsigned length, unsigned id)
{
	if (!word_path(tracker, key, length))
		return event_out_general(tracker, key, length, id);
	uint64_t word;
	__builtin_memcpy(&word, key, 8);
	return event_out_word(tracker, word, id);
}

bool lattrack_contains(struct lattrack *tracker, const void *key, unsigned length)
{
	if (bad_key(tracker, key, length))
		return false;
	uint32_t hash = hash_key(key, length);
	struct lattrack_bucket *bucket = bucket_of(tracker, hash);
	bool found = false;
	uint64_t flags = irq_save();
	lattrack_bucket_lock(bucket);
	for (struct lattrack_event *event = bucket->head; event && !found; event = event->next)
		found = key_equal(event, hash, key, length);
	lattrack_bucket_unlock(bucket);
	irq_restore(flags);
	return found;
}

/* The lookup without the lock or interrupts off: for the benchmark's
 * baseline only (one thread, nothing changes the table meanwhile). */
bool lattrack_contains_unlocked(struct lattrack *tracker, const void *key, unsigned length)
{
	uint32_t hash = hash_key(key, length);
	for (struct lattrack_event *event = bucket_of(tracker, hash)->head; event;
	     event = event->next)
		if (key_equal(event, hash, key, length))
			return true;
	return false;
}

/* A span: the caller timed it (both ends in its own frame), the tracker
 * counts it in and out at once and reports it when it took the threshold
 * or more.  No event is taken: a report's event is built on the stack. */
__attribute__((noinline, cold)) void lattrack_report_span(struct lattrack *tracker, const void *key,
							  unsigned length, uint64_t start_tsc,
							  uint64_t end_tsc, unsigned id)
{
	union {
		struct lattrack_event event;
		unsigned char bytes[sizeof(struct lattrack_event) + LATTRACK_KEY_MAX];
	} storage;
	struct lattrack_event *event = &storage.event;
	event->start_tsc = start_tsc;
	event->key_length = (uint16_t)length;
	memcpy(event->data, key, length);
	lattrack_report_event(tracker, event, LATTRACK_NORMAL, end_tsc, id);
}

int lattrack_event_span(struct lattrack *tracker, const void *key, unsigned length,
			uint64_t start_tsc, uint64_t end_tsc, unsigned id)
{
	if (bad_key(tracker, key, length) || tracker->priv_size)
		return -EINVAL;
	uint64_t delay = end_tsc - start_tsc;
	bool over = delay >= __atomic_load_n(&tracker->threshold_tsc, __ATOMIC_RELAXED);
	uint64_t flags = irq_save();
	struct lattrack_cpu *cpu = lattrack_this_cpu(tracker);
	cpu->counts.in++;
	cpu->counts.out++;
	if (over) {
		cpu->counts.over++;
		lattrack_note_max(tracker, delay);
	}
	irq_restore(flags);
	if (over)
		lattrack_report_span(tracker, key, length, start_tsc, end_tsc, id);
	return 0;
}
