/*
 * Reports as records, for readers outside the callback (a user's file
 * descriptor, a test).  A subscriber is a fixed queue of struct
 * lattrack_record; every report of its tracker is copied into every
 * subscriber's queue under the tracker's subscribers lock (irqsave: reports
 * come from interrupts and with other locks held), and a full queue loses the
 * record and counts it (the next record queued says how many went before it).
 * The reader is told through a one-shot timer armed at once: its callback, a
 * tick later and in interrupt context, calls the subscriber's notify, which
 * may wake threads; the report itself never does (it may run inside
 * sched.switch with a run-queue lock held).  Every report is also kept
 * among the tracker's last LATTRACK_RECENT, which `lattrack show` prints.
 */
#include "lattrack/internal.h"

#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "proc/proc.h"
#include "sched/sched.h"
#include "smp/smp.h"

_Static_assert(sizeof(struct lattrack_record) == 200, "uapi/lattrack.h says 200 bytes");

static void fill_record(struct lattrack_record *record, const struct lattrack_report *report)
{
	memset(record, 0, sizeof *record);
	record->start_ns = report->start_ns;
	record->end_ns = report->end_ns;
	record->delay_ns = report->end_ns - report->start_ns;
	record->flag = (uint32_t)report->flag;
	record->out_id = report->out_id;
	record->cpu = this_cpu_id();
	struct thread *thread = thread_current();
	struct process *process = thread ? thread_process(thread) : NULL;
	record->tid = process ? (uint32_t)proc_pid(process) : 0; /* gettid()'s number */
	record->key_length = report->key_length;
	unsigned copy =
	    report->key_length < LATTRACK_RECORD_KEY ? report->key_length : LATTRACK_RECORD_KEY;
	memcpy(record->key, report->key, copy);
	unsigned frames = report->stack_count < LATTRACK_RECORD_STACK ? report->stack_count
								      : LATTRACK_RECORD_STACK;
	record->stack_count = (uint16_t)frames;
	record->stack_flags = report->stack_flags;
	memcpy(record->stack, report->stack, frames * sizeof record->stack[0]);
	record->waker_tid = report->waker_tid;
	record->waker_cpu = report->waker_cpu;
	record->waker_flags = report->waker_flags;
	memcpy(record->waker_name, report->waker_name, sizeof record->waker_name);
	record->waker_name[sizeof record->waker_name - 1] = '\0';
	record->thread_tid = report->thread_tid;
	memcpy(record->thread_name, report->thread_name, sizeof record->thread_name);
	record->thread_name[sizeof record->thread_name - 1] = '\0';
}

/* The name of the process running the report, or "". */
static void reporter_program(char program[16])
{
	struct thread *thread = thread_current();
	struct process *process = thread ? thread_process(thread) : NULL;
	program[0] = '\0';
	if (process)
		strlcpy(program, proc_name(process), 16);
}

/* Lock held. */
static void keep_recent(struct lattrack *tracker, const struct lattrack_record *record,
			const char program[16])
{
	unsigned slot = tracker->recent_next++ % LATTRACK_RECENT;
	tracker->recent[slot] = *record;
	memcpy(tracker->recent_programs[slot], program, 16);
}

unsigned lattrack_recent(struct lattrack *tracker, struct lattrack_record *records,
			 char (*programs)[16], unsigned max)
{
	uint64_t flags = spin_lock_irqsave(&tracker->subscribers_lock);
	uint32_t kept = tracker->recent_next;
	unsigned count = kept < LATTRACK_RECENT ? kept : LATTRACK_RECENT;
	count = count < max ? count : max;
	for (unsigned i = 0; i < count; i++) {
		unsigned slot = (kept - count + i) % LATTRACK_RECENT;
		records[i] = tracker->recent[slot];
		memcpy(programs[i], tracker->recent_programs[slot], 16);
	}
	spin_unlock_irqrestore(&tracker->subscribers_lock, flags);
	return count;
}

/* Lock held.  Returns true when the record was queued. */
static bool queue_record(struct lattrack_subscriber *subscriber,
			 const struct lattrack_record *record)
{
	if (subscriber->head - subscriber->tail >= LATTRACK_RECORDS_QUEUED) {
		subscriber->lost_pending++;
		subscriber->lost++;
		return false;
	}
	struct lattrack_record *slot =
	    &subscriber->queue[subscriber->head % LATTRACK_RECORDS_QUEUED];
	*slot = *record;
	slot->lost = subscriber->lost_pending;
	subscriber->lost_pending = 0;
	subscriber->head++;
	return true;
}

static void kick(struct timer_oneshot *timer, void *context)
{
	struct lattrack_subscriber *subscriber = context;
	if (subscriber->notify)
		subscriber->notify(subscriber->notify_context);
}

void lattrack_publish(struct lattrack *tracker, const struct lattrack_report *report)
{
	struct lattrack_record record;
	char program[16];
	fill_record(&record, report);
	reporter_program(program);
	struct lattrack_subscriber *queued[LATTRACK_SUBSCRIBERS_MAX];
	unsigned count = 0;
	uint64_t flags = spin_lock_irqsave(&tracker->subscribers_lock);
	keep_recent(tracker, &record, program);
	for (unsigned i = 0; i < LATTRACK_SUBSCRIBERS_MAX; i++)
		if (tracker->subscribers[i] && queue_record(tracker->subscribers[i], &record) &&
		    tracker->subscribers[i]->notify)
			queued[count++] = tracker->subscribers[i];
	/* armed under the lock: unsubscribe cancels after taking it */
	for (unsigned i = 0; i < count; i++)
		timer_arm_oneshot_ns(&queued[i]->kick, clock_ns(), kick,
				     queued[i]); /* -EBUSY: on its way */
	spin_unlock_irqrestore(&tracker->subscribers_lock, flags);
}

int lattrack_subscribe(struct lattrack *tracker, void (*notify)(void *context), void *context,
		       struct lattrack_subscriber **out)
{
	if (!tracker || !out)
		return -EINVAL;
	struct lattrack_subscriber *subscriber = kzalloc(sizeof *subscriber);
	if (!subscriber)
		return -ENOMEM;
	subscriber->notify = notify;
	subscriber->notify_context = context;
	uint64_t flags = spin_lock_irqsave(&tracker->subscribers_lock);
	int error = -ENOSPC;
	for (unsigned i = 0; i < LATTRACK_SUBSCRIBERS_MAX && error; i++) {
		if (!tracker->subscribers[i]) {
			tracker->subscribers[i] = subscriber;
			__atomic_add_fetch(&tracker->subscriber_count, 1, __ATOMIC_RELEASE);
			error = 0;
		}
	}
	spin_unlock_irqrestore(&tracker->subscribers_lock, flags);
	if (error) {
		kfree(subscriber);
		return error;
	}
	subscriber->tracker = tracker;
	lattrack_get_reference(tracker);
	*out = subscriber;
	return 0;
}

void lattrack_unsubscribe(struct lattrack_subscriber *subscriber)
{
	if (!subscriber)
		return;
	struct lattrack *tracker = subscriber->tracker;
	uint64_t flags = spin_lock_irqsave(&tracker->subscribers_lock);
	for (unsigned i = 0; i < LATTRACK_SUBSCRIBERS_MAX; i++) {
		if (tracker->subscribers[i] == subscriber) {
			tracker->subscribers[i] = NULL;
			__atomic_sub_fetch(&tracker->subscriber_count, 1, __ATOMIC_RELEASE);
		}
	}
	spin_unlock_irqrestore(&tracker->subscribers_lock, flags);
	timer_cancel_oneshot(&subscriber->kick);
	grace_synchronize(); /* a kick that had fired has returned */
	kfree(subscriber);
	lattrack_put(tracker);
}

unsigned lattrack_records_take(struct lattrack_subscriber *subscriber,
			       struct lattrack_record *records, unsigned max)
{
	struct lattrack *tracker = subscriber->tracker;
	unsigned taken = 0;
	uint64_t flags = spin_lock_irqsave(&tracker->subscribers_lock);
	while (taken < max && subscriber->tail != subscriber->head) {
		records[taken++] = subscriber->queue[subscriber->tail % LATTRACK_RECORDS_QUEUED];
		subscriber->tail++;
	}
	spin_unlock_irqrestore(&tracker->subscribers_lock, flags);
	return taken;
}

bool lattrack_records_waiting(const struct lattrack_subscriber *subscriber)
{
	return __atomic_load_n(&subscriber->head, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&subscriber->tail, __ATOMIC_ACQUIRE);
}

uint64_t lattrack_records_lost(const struct lattrack_subscriber *subscriber)
{
	return __atomic_load_n(&subscriber->lost, __ATOMIC_RELAXED);
}

struct lattrack *lattrack_subscriber_tracker(const struct lattrack_subscriber *subscriber)
{
	return subscriber->tracker;
}
