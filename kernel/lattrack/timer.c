/*
 * The tracker's timer: every timer period (a one-shot re-armed from its own
 * callback, in interrupt context) it walks the table bucket by bucket and
 * finds the events in past the timeout (reported TIMEOUT once, kept in, so
 * that a late event_out is seen as LATE) and past the GC age (removed,
 * reported GC).  The walk costs the buckets plus the events in, once a
 * period, and nothing on the hot path.  A callback never runs under a bucket
 * lock: a timeout's key and private data are copied out first (the event may
 * end on another CPU meanwhile), a collected event is owned once unlinked.
 * A tracker without a timeout or a GC age arms no timer.
 * Stopping: the flag first, then a grace period (a callback running has
 * ended, later ones do not re-arm), the cancel, another grace period.
 */
#include "lattrack/internal.h"

#include "arch/x86_64/cpu.h"
#include "lib/string.h"
#include "smp/smp.h"

/* Room for a timed-out event's copy: its header, key and private data. */
struct timeout_copy {
	unsigned char bytes[sizeof(struct lattrack_event) + LATTRACK_KEY_MAX + LATTRACK_PRIV_MAX];
} __attribute__((aligned(8)));

/* How long event has been in at now: 0 for one that went in after now was
 * read (on another CPU while this scan ran, or by a TSC a little ahead),
 * never the wrapped difference, which would look older than any limit. */
static uint64_t age_of(const struct lattrack_event *event, uint64_t now)
{
	return (int64_t)(now - event->start_tsc) > 0 ? now - event->start_tsc : 0;
}

static bool is_garbage(const struct lattrack *tracker, const struct lattrack_event *event,
		       uint64_t now)
{
	return tracker->gc_age_tsc && age_of(event, now) >= tracker->gc_age_tsc;
}

static bool is_timeout(const struct lattrack *tracker, const struct lattrack_event *event,
		       uint64_t now)
{
	return tracker->timeout_tsc && !event->timed_out &&
	       age_of(event, now) >= tracker->timeout_tsc;
}

/* Takes one collectable event out of bucket, or NULL (interrupts off). */
static struct lattrack_event *take_garbage(struct lattrack *tracker, struct lattrack_bucket *bucket,
					   uint64_t now)
{
	lattrack_bucket_lock(bucket);
	struct lattrack_event **link = &bucket->head;
	while (*link && !is_garbage(tracker, *link, now))
		link = &(*link)->next;
	struct lattrack_event *event = *link;
	if (event)
		*link = event->next;
	lattrack_bucket_unlock(bucket);
	return event;
}

/* Marks one event of bucket timed out and copies it, or returns false. */
static bool mark_timeout(struct lattrack *tracker, struct lattrack_bucket *bucket, uint64_t now,
			 struct timeout_copy *copy)
{
	lattrack_bucket_lock(bucket);
	struct lattrack_event *event = bucket->head;
	while (event && !is_timeout(tracker, event, now))
		event = event->next;
	if (event) {
		event->timed_out = 1;
		memcpy(copy, event, tracker->event_size); /* at most sizeof *copy */
	}
	lattrack_bucket_unlock(bucket);
	return event != NULL;
}

static void scan_bucket(struct lattrack *tracker, struct lattrack_bucket *bucket, uint64_t now)
{
	struct lattrack_cpu *cpu = lattrack_this_cpu(tracker);
	struct lattrack_event *garbage;
	while ((garbage = take_garbage(tracker, bucket, now))) {
		cpu->counts.gc++;
		lattrack_note_max(tracker, now - garbage->start_tsc);
		lattrack_report_event(tracker, garbage, LATTRACK_GC, now, 0);
		lattrack_free_event(tracker, garbage);
	}
	struct timeout_copy copy;
	while (mark_timeout(tracker, bucket, now, &copy)) {
		cpu->counts.timeout++;
		struct lattrack_event *event = (struct lattrack_event *)copy.bytes;
		lattrack_note_max(tracker, now - event->start_tsc);
		lattrack_report_event(tracker, event, LATTRACK_TIMEOUT, now, 0);
	}
}

void lattrack_scan_at(struct lattrack *tracker, uint64_t now)
{
	if (!tracker->timeout_tsc && !tracker->gc_age_tsc)
		return;
	for (uint32_t i = 0; i <= tracker->bucket_mask; i++)
		if (__atomic_load_n(&tracker->buckets[i].head, __ATOMIC_RELAXED))
			scan_bucket(tracker, &tracker->buckets[i], now);
}

static void on_timer(struct timer_oneshot *timer, void *context)
{
	struct lattrack *tracker = context;
	if (__atomic_load_n(&tracker->stopping, __ATOMIC_ACQUIRE))
		return;
	lattrack_scan_at(tracker, rdtsc());
	timer_arm_oneshot_ns(timer, clock_ns() + tracker->timer_period_ns, on_timer, tracker);
}

/* A tracker without a timeout or a GC age (neither changes once it is
 * enabled) has nothing for its timer to find: none is armed. */
void lattrack_timer_start(struct lattrack *tracker)
{
	if (!tracker->timeout_tsc && !tracker->gc_age_tsc)
		return;
	timer_arm_oneshot_ns(&tracker->timer, clock_ns() + tracker->timer_period_ns, on_timer,
			     tracker);
}

void lattrack_timer_stop(struct lattrack *tracker)
{
	__atomic_store_n(&tracker->stopping, true, __ATOMIC_RELEASE);
	grace_synchronize();
	timer_cancel_oneshot(&tracker->timer);
	grace_synchronize();
}
