/*
 * Private to kernel/lattrack: the tracker, its events, buckets and per-CPU
 * state.  An event lives on exactly one of: its CPU's freelist, a CPU's
 * remote-free stack, or one bucket's chain (in flight); whoever unlinks it
 * from a chain under the bucket lock owns it until it frees it.
 */
#ifndef KERNEL_LATTRACK_INTERNAL_H
#define KERNEL_LATTRACK_INTERNAL_H

#include "lattrack/lattrack.h"

#include "cpu/percpu.h"
#include "cpu/spinlock.h"
#include "time/time.h"
#include "uapi/lattrack.h"

#define LATTRACK_SUBSCRIBERS_MAX 8

struct lattrack_event {
	struct lattrack_event *next; /* chain, freelist or remote stack */
	uint64_t start_tsc;          /* TSC at event_in: the hot path never converts */
	uint32_t hash;
	uint16_t key_length;
	uint8_t timed_out;    /* TIMEOUT reported; written under the bucket lock */
	uint8_t home_cpu;     /* whose freelist it returns to */
	unsigned char data[]; /* key (key_size), then priv (priv_size), 8-aligned */
};

/* A bucket: a test-and-set lock taken with interrupts off, and a chain. */
struct lattrack_bucket {
	uint32_t lock;
	struct lattrack_event *head;
};

/* Counters and freelist of one CPU: written only by that CPU with
 * interrupts off (remote frees go through the remote stack with atomics). */
struct lattrack_cpu {
	struct lattrack_event *free;
	struct lattrack_event *remote; /* pushed by other CPUs, taken whole by this one */
	struct lattrack_counts counts; /* in_flight unused here */
	uint64_t max_tsc;
} __attribute__((aligned(64)));

struct lattrack {
	char name[LATTRACK_NAME_MAX];
	uint64_t threshold_ns;  /* set any time */
	uint64_t threshold_tsc; /* the same in TSC cycles: what the hot path compares */
	uint64_t timeout_ns, timeout_tsc;
	uint64_t gc_age_ns, gc_age_tsc;
	uint64_t timer_period_ns;
	lattrack_callback callback;
	void *callback_context;
	lattrack_annotate_fn annotate;
	void *annotate_context;
	unsigned key_size, priv_size, max_events;
	unsigned event_size; /* header + key + priv, rounded to 8 */
	uint32_t bucket_mask;
	bool enabled;
	/* enabled, keys of 8 bytes or more, no private data: event_in/out of an
	 * 8-byte key take the word path (event.c) */
	bool word_path;
	int references;
	struct lattrack_bucket *buckets;
	void *events;              /* max_events * event_size */
	struct lattrack_cpu *cpus; /* cpu_count of them, 64-byte aligned in cpus_block */
	void *cpus_block;
	struct timer_oneshot timer;
	bool stopping;
	/* set by lattrack_attach_kind */
	const char *kind;
	/* who reads the reports as records (records.c); the count is read
	 * without the lock on the report path */
	struct spinlock subscribers_lock;
	struct lattrack_subscriber *subscribers[LATTRACK_SUBSCRIBERS_MAX];
	unsigned subscriber_count;
	/* the last reports (subscribers_lock), for `lattrack show` */
	struct lattrack_record recent[LATTRACK_RECENT];
	char recent_programs[LATTRACK_RECENT][16];
	uint32_t
	    recent_next; /* reports kept in all: the next goes to recent_next % LATTRACK_RECENT */
	/* owned trackers (user.c): made from user space or by aspects, shared
	 * by their owners (registry lock), destroyed by the last release */
	bool owned;
	uint32_t owner_uid;
	int owners;
	/* quiet system calls of the slots this tracker left (spans.c, its lock) */
	uint64_t span_quiet_folded;
};

/* A reader of a tracker's reports: a queue of records (subscribers_lock)
 * and a notification, made from a one-shot timer so that reporting never
 * wakes a thread itself (it may run under the run-queue lock). */
struct lattrack_subscriber {
	struct lattrack *tracker; /* referenced */
	uint32_t head, tail;      /* written, read: head - tail records queued */
	uint32_t lost_pending;    /* lost since the last queued record */
	uint64_t lost;            /* lost in all */
	void (*notify)(void *context);
	void *notify_context;
	struct timer_oneshot kick;
	struct lattrack_record queue[LATTRACK_RECORDS_QUEUED];
};

/* event.c */
struct lattrack_event *lattrack_event_at(const struct lattrack *tracker, unsigned index);
void lattrack_free_event(struct lattrack *tracker, struct lattrack_event *event);
void lattrack_bucket_lock(struct lattrack_bucket *bucket);
void lattrack_bucket_unlock(struct lattrack_bucket *bucket);
void lattrack_report_event(struct lattrack *tracker, struct lattrack_event *event,
			   enum lattrack_flag flag, uint64_t end_tsc, unsigned out_id);
void lattrack_note_max(struct lattrack *tracker, uint64_t delay_tsc);
bool lattrack_contains_unlocked(struct lattrack *tracker, const void *key, unsigned length);

/* Keys older than ten timeouts are collected; a timeout too large to
 * multiply keeps them for ever rather than wrapping to a few ns. */
static inline uint64_t lattrack_gc_age_for(uint64_t timeout_ns)
{
	return timeout_ns > UINT64_MAX / 10 ? UINT64_MAX : 10 * timeout_ns;
}

static inline void *lattrack_event_priv(const struct lattrack *tracker,
					struct lattrack_event *event)
{
	return event->data + ((tracker->key_size + 7) & ~7u);
}

static inline struct lattrack_cpu *lattrack_this_cpu(struct lattrack *tracker)
{
	return &tracker->cpus[this_cpu_id()];
}

/* records.c: keeps the report among the recent and hands it to every
 * subscriber (any context). */
void lattrack_publish(struct lattrack *tracker, const struct lattrack_report *report);

/* tracker.c: ns to TSC cycles (saturating). */
uint64_t lattrack_ns_to_tsc(uint64_t ns);

/* event.c: reports a span (NORMAL) without an event in the table. */
void lattrack_report_span(struct lattrack *tracker, const void *key, unsigned length,
			  uint64_t start_tsc, uint64_t end_tsc, unsigned id);

/* spans.c: syscall trackers on the system-call path; call NULL: every call.
 * attach returns 0, -EINVAL or -ENOSPC; detach waits for a grace period
 * (thread context). */
int lattrack_span_attach(struct lattrack *tracker, const char *call);
void lattrack_span_detach(struct lattrack *tracker);
/* The quiet calls (counted in and out) of tracker's "every call" slot, now
 * and before.  Any context but spans.c's own. */
uint64_t lattrack_span_quiet_count(const struct lattrack *tracker);
/* A tracker's threshold changed: the quiet calls' bound follows. */
void lattrack_span_threshold_changed(void);

/* timer.c */
void lattrack_timer_start(struct lattrack *tracker);
void lattrack_timer_stop(struct lattrack *tracker);
/* The timer's scan as of TSC now: collects what is past the GC age and
 * reports what is past the timeout; an event that went in after now is
 * neither.  (The timer calls it with rdtsc(); tests with other times.) */
void lattrack_scan_at(struct lattrack *tracker, uint64_t now);

/* tracker.c: the registry's lock, which also guards owners. */
extern struct spinlock lattrack_registry_lock;

#endif
