/*
 * The syscall tracker without a timeout, on the system-call path itself:
 * syscall_dispatch reads the TSC before and after the call, in its own frame.
 * Why not the join points: their dispatcher for calls that may sleep and the
 * event_in + event_out pair cost about 300 instructions a call against about
 * 30 here (docs/PERFORMANCE.md), and a call's entry and exit meet in one
 * frame anyway.  A tracker with a timeout keeps the join points, since only
 * an event in the table can time out.
 *
 * Two paths.  The quiet one, in line in the dispatcher (lattrack.h), takes a
 * call that no slot names by number and that is shorter than every "every
 * call" slot's threshold: it only adds one to this CPU's
 * cpus[].syscall_quiet_spans.  An "every call" slot's in and out are its
 * tracker's own counts plus what those counters gained since the slot was
 * filled (quiet_base), folded into the tracker when the slot is emptied.
 * Everything else (a named call, one over a threshold, a slot that has not
 * learned its number) comes to lattrack_syscall_span, which counts the call
 * in each slot that wants it (lattrack_event_span's way: no table, no event
 * held during the call) and reports, out of line, where it is over.
 * publish_path keeps the dispatcher's view (lattrack_syscall_path) in step
 * with the slots and their thresholds.
 *
 * The slots are read without a lock with interrupts off; removing one
 * clears it and waits for a grace period before the tracker may go.  A
 * "syscall:NAME" slot learns its call's number at its first match by name.
 */
#include "lattrack/internal.h"

#include "arch/x86_64/cpu.h"
#include "cpu/spinlock.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "sched/sched.h"
#include "smp/smp.h"

#define SPAN_SLOTS     4
#define SPAN_NUMBERS   1024 /* join-point indices cached for numbers below this */
#define NUMBER_UNKNOWN (-1) /* "syscall:NAME" before its first call */
#define NUMBER_EVERY   (-2) /* "syscall": every call */

struct span_slot {
	struct lattrack *tracker; /* NULL: free */
	int number;
	char name[LATTRACK_NAME_MAX]; /* the call, for NUMBER_UNKNOWN */
	uint64_t quiet_base;          /* NUMBER_EVERY: the quiet calls before the slot was filled */
};

static struct span_slot slots[SPAN_SLOTS];
static unsigned used_slots; /* bit i: slots[i] holds a tracker */
static struct spinlock slots_lock = SPINLOCK_INIT("lattrack.spans");

struct lattrack_syscall_path lattrack_syscall_path = {.quiet_below_tsc = UINT64_MAX};

/* The join point's index of a call, + 1 (0: not looked up yet), which
 * reports give as their out id as on the join-point path. */
static uint16_t jp_index_plus_1[SPAN_NUMBERS];

static unsigned out_id_of(uint64_t number, const char *name)
{
	if (number >= SPAN_NUMBERS)
		return 0;
	uint16_t cached = __atomic_load_n(&jp_index_plus_1[number], __ATOMIC_RELAXED);
	if (cached)
		return cached - 1u;
	char jp_name[LATTRACK_NAME_MAX + 4] = "sys.";
	strlcpy(jp_name + 4, name, sizeof jp_name - 4);
	const struct joinpoint *jp = jp_find(jp_name);
	unsigned index = jp ? jp_index(jp) : 0;
	__atomic_store_n(&jp_index_plus_1[number], (uint16_t)(index + 1), __ATOMIC_RELAXED);
	return index;
}

/* The quiet calls of every CPU so far: each CPU's counter is exact, the sum
 * a moment's view. */
static uint64_t quiet_spans_now(void)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < cpu_count; i++)
		sum += __atomic_load_n(&cpus[i].syscall_quiet_spans, __ATOMIC_RELAXED);
	return sum;
}

/* Tells the dispatcher what the slots now want (slots_lock held): a call of
 * a number no slot names, under the least threshold of the "every call"
 * slots, is quiet. */
static void publish_path(void)
{
	uint64_t quiet_below = UINT64_MAX, named = 0;
	for (unsigned used = used_slots; used; used &= used - 1) {
		const struct span_slot *slot = &slots[__builtin_ctz(used)];
		int number = __atomic_load_n(&slot->number, __ATOMIC_RELAXED);
		uint64_t threshold =
		    __atomic_load_n(&slot->tracker->threshold_tsc, __ATOMIC_RELAXED);
		if (number == NUMBER_EVERY)
			quiet_below = threshold < quiet_below ? threshold : quiet_below;
		else if (number == NUMBER_UNKNOWN)
			named = UINT64_MAX;
		else
			named |= 1ULL << ((unsigned)number & 63);
	}
	__atomic_store_n(&lattrack_syscall_path.quiet_below_tsc, quiet_below, __ATOMIC_RELAXED);
	__atomic_store_n(&lattrack_syscall_path.named_numbers, named, __ATOMIC_RELEASE);
}

static void republish_path(void)
{
	uint64_t flags = spin_lock_irqsave(&slots_lock);
	publish_path();
	spin_unlock_irqrestore(&slots_lock, flags);
}

/* Counts a span in this CPU's counts of tracker; true when it is over the
 * threshold.  Interrupts off. */
static inline bool count_span(struct lattrack *tracker, unsigned cpu, uint64_t delay)
{
	struct lattrack_counts *counts = &tracker->cpus[cpu].counts;
	counts->in++;
	counts->out++;
	if (__builtin_expect(delay < __atomic_load_n(&tracker->threshold_tsc, __ATOMIC_RELAXED), 1))
		return false;
	counts->over++;
	return true;
}

/* "syscall:NAME" slots before their first call (unknown): the one named
 * name keeps number and counts the span.  Returns the slots over their
 * thresholds.  Interrupts off. */
static __attribute__((noinline, cold)) unsigned learn_numbers(unsigned unknown, uint64_t number,
							      const char *name, unsigned cpu,
							      uint64_t delay,
							      struct lattrack **over_trackers)
{
	unsigned over = 0;
	for (; unknown; unknown &= unknown - 1) {
		unsigned i = (unsigned)__builtin_ctz(unknown);
		struct lattrack *tracker = __atomic_load_n(&slots[i].tracker, __ATOMIC_ACQUIRE);
		if (!tracker || strcmp(slots[i].name, name))
			continue;
		__atomic_store_n(&slots[i].number, (int)number, __ATOMIC_RELAXED);
		if (count_span(tracker, cpu, delay)) {
			over |= 1u << i;
			over_trackers[i] = tracker;
		}
		republish_path(); /* its other calls may be quiet now */
	}
	return over;
}

/* The spans over their thresholds (the trackers that counted them: a slot
 * cleared meanwhile may hold another already): their largest delay noted
 * (interrupts off), then reported with interrupts on (a report may walk the
 * user stack) and preemption off, the reader section going on. */
static __attribute__((noinline, cold)) void
report_spans(unsigned over, struct lattrack *const *over_trackers, uint64_t number,
	     const char *name, uint64_t start_tsc, uint64_t delay, uint64_t flags)
{
	for (unsigned i = 0; i < SPAN_SLOTS; i++)
		if (over & (1u << i))
			lattrack_note_max(over_trackers[i], delay);
	preempt_disable();
	irq_restore(flags);
	uint64_t thread = (uint64_t)(uintptr_t)thread_current();
	for (unsigned i = 0; i < SPAN_SLOTS; i++)
		if (over & (1u << i))
			lattrack_report_span(over_trackers[i], &thread, sizeof thread, start_tsc,
					     start_tsc + delay, out_id_of(number, name));
	preempt_enable();
}

void lattrack_span_threshold_changed(void)
{
	republish_path();
}

/* Counts the call in each slot that wants it, as lattrack_event_span does,
 * with interrupts off: that is the reader section the slots' removal waits
 * for, and this CPU's counts are written with interrupts off.  Everything
 * rare (a report, a slot learning its number) is out of line. */
void lattrack_syscall_span(uint64_t number, const char *name, uint64_t start_tsc, uint64_t delay)
{
	unsigned over = 0, unknown = 0;
	struct lattrack *over_trackers[SPAN_SLOTS];
	uint64_t flags = irq_save();
	unsigned cpu = this_cpu_id();
	for (unsigned used = __atomic_load_n(&used_slots, __ATOMIC_ACQUIRE); used;
	     used &= used - 1) {
		unsigned i = (unsigned)__builtin_ctz(used);
		struct lattrack *tracker = __atomic_load_n(&slots[i].tracker, __ATOMIC_ACQUIRE);
		int wanted = __atomic_load_n(&slots[i].number, __ATOMIC_RELAXED);
		if (wanted == NUMBER_UNKNOWN)
			unknown |= 1u << i;
		else if (tracker && (wanted == NUMBER_EVERY || wanted == (int)number) &&
			 count_span(tracker, cpu, delay)) {
			over |= 1u << i;
			over_trackers[i] = tracker;
		}
	}
	if (__builtin_expect(unknown != 0, 0) && name)
		over |= learn_numbers(unknown, number, name, cpu, delay, over_trackers);
	if (__builtin_expect(over != 0, 0) && name)
		report_spans(over, over_trackers, number, name, start_tsc, delay, flags);
	else
		irq_restore(flags);
}

uint64_t lattrack_span_quiet_count(const struct lattrack *tracker)
{
	uint64_t flags = spin_lock_irqsave(&slots_lock);
	uint64_t count = tracker->span_quiet_folded;
	for (unsigned used = used_slots; used; used &= used - 1) {
		const struct span_slot *slot = &slots[__builtin_ctz(used)];
		if (slot->tracker == tracker && slot->number == NUMBER_EVERY)
			count += quiet_spans_now() - slot->quiet_base;
	}
	spin_unlock_irqrestore(&slots_lock, flags);
	return count;
}

int lattrack_span_attach(struct lattrack *tracker, const char *call)
{
	if (call && (!*call || strlen(call) >= LATTRACK_NAME_MAX))
		return -EINVAL;
	int error = -ENOSPC;
	uint64_t flags = spin_lock_irqsave(&slots_lock);
	for (unsigned i = 0; i < SPAN_SLOTS && error; i++) {
		if (slots[i].tracker)
			continue;
		slots[i].number = call ? NUMBER_UNKNOWN : NUMBER_EVERY;
		strlcpy(slots[i].name, call ? call : "", sizeof slots[i].name);
		slots[i].quiet_base = quiet_spans_now();
		__atomic_store_n(&slots[i].tracker, tracker, __ATOMIC_RELEASE);
		__atomic_or_fetch(&used_slots, 1u << i, __ATOMIC_RELEASE);
		publish_path();
		__atomic_add_fetch(&lattrack_syscall_path.slots, 1, __ATOMIC_RELEASE);
		error = 0;
	}
	spin_unlock_irqrestore(&slots_lock, flags);
	return error;
}

void lattrack_span_detach(struct lattrack *tracker)
{
	bool found = false;
	uint64_t flags = spin_lock_irqsave(&slots_lock);
	for (unsigned i = 0; i < SPAN_SLOTS; i++) {
		if (slots[i].tracker != tracker)
			continue;
		if (slots[i].number == NUMBER_EVERY)
			tracker->span_quiet_folded += quiet_spans_now() - slots[i].quiet_base;
		__atomic_and_fetch(&used_slots, ~(1u << i), __ATOMIC_RELEASE);
		__atomic_store_n(&slots[i].tracker, NULL, __ATOMIC_RELEASE);
		publish_path();
		__atomic_sub_fetch(&lattrack_syscall_path.slots, 1, __ATOMIC_RELEASE);
		found = true;
	}
	spin_unlock_irqrestore(&slots_lock, flags);
	if (found)
		grace_synchronize(); /* no span of it is being counted any more */
}
