/*
 * Flight-recorder snapshots for slow events.  lattrack_flight_start runs a
 * flight-recorder trace session (trace/trace.h) and a thread; a callback,
 * in whatever context it runs (an interrupt, a scheduler lock held), only
 * asks: the request passes the rate limit (a compare-and-swap on the next
 * time allowed), sets a flag and arms a one-shot timer, whose tick wakes the
 * thread (a direct wake-up could need the run-queue locks the caller holds).
 * The thread calls trace_snapshot; into the file sink it then stops the
 * session and starts the next one in a new directory, so snapshot N is the
 * CTF trace DIRECTORY-N.  Into the console sink the session goes on and the
 * host receives each snapshot as packets.
 */
#include "lattrack/internal.h"

#include "console/console.h"
#include "lib/errno.h"
#include "lib/format.h"
#include "lib/string.h"
#include "sched/sched.h"
#include "trace/trace.h"

#define DEFAULT_INTERVAL_NS (1000ULL * 1000 * 1000)
#define DIRECTORY_MAX       96

static struct {
	uint64_t interval_ns;
	uint64_t next_allowed_ns;
	bool running;
	bool stop;
	int pending;
	bool busy; /* a start or stop is in progress */
	struct lattrack_snapshot_counts counts;
	const struct trace_sink *sink;
	char directory[DIRECTORY_MAX];
	char pattern_text[TRACE_PATTERNS_MAX][48];
	const char *patterns[TRACE_PATTERNS_MAX];
	unsigned pattern_count;
	struct thread *thread;
	struct timer_oneshot kick;
} flight = {.interval_ns = DEFAULT_INTERVAL_NS};

static struct waitq flight_queue = WAITQ_INIT(flight_queue, "lattrack-snapshot");

static void count(uint64_t *counter)
{
	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

static bool pass_rate_limit(uint64_t now)
{
	uint64_t next = __atomic_load_n(&flight.next_allowed_ns, __ATOMIC_RELAXED);
	if (now < next)
		return false;
	uint64_t interval = __atomic_load_n(&flight.interval_ns, __ATOMIC_RELAXED);
	return __atomic_compare_exchange_n(&flight.next_allowed_ns, &next, now + interval, false,
					   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

static void kick_thread(struct timer_oneshot *timer, void *context)
{
	waitq_wake_one(&flight_queue);
}

int lattrack_snapshot_request(void)
{
	if (!__atomic_load_n(&flight.running, __ATOMIC_ACQUIRE)) {
		count(&flight.counts.refused);
		return -ENOENT;
	}
	if (!pass_rate_limit(clock_ns())) {
		count(&flight.counts.refused);
		return -EAGAIN;
	}
	count(&flight.counts.requested);
	__atomic_store_n(&flight.pending, 1, __ATOMIC_RELEASE);
	timer_arm_oneshot_ns(&flight.kick, clock_ns(), kick_thread, NULL); /* -EBUSY: on its way */
	return 0;
}

void lattrack_snapshot_set_interval_ns(uint64_t ns)
{
	__atomic_store_n(&flight.interval_ns, ns, __ATOMIC_RELAXED);
	__atomic_store_n(&flight.next_allowed_ns, 0, __ATOMIC_RELAXED);
}

void lattrack_snapshot_get_counts(struct lattrack_snapshot_counts *counts)
{
	counts->requested = __atomic_load_n(&flight.counts.requested, __ATOMIC_RELAXED);
	counts->refused = __atomic_load_n(&flight.counts.refused, __ATOMIC_RELAXED);
	counts->taken = __atomic_load_n(&flight.counts.taken, __ATOMIC_RELAXED);
	counts->failed = __atomic_load_n(&flight.counts.failed, __ATOMIC_RELAXED);
	counts->sequence = __atomic_load_n(&flight.counts.sequence, __ATOMIC_RELAXED);
}

bool lattrack_flight_running(void)
{
	return __atomic_load_n(&flight.running, __ATOMIC_ACQUIRE);
}

/* The session's argument: DIRECTORY-N for the file sink, "" otherwise. */
static const char *session_argument(char *buffer, size_t size, unsigned sequence)
{
	if (strcmp(flight.sink->name, "file"))
		return "";
	snprintf(buffer, size, "%s-%u", flight.directory, sequence);
	return buffer;
}

static int start_session(unsigned sequence)
{
	char argument[DIRECTORY_MAX + 16];
	return trace_start_flight(flight.sink,
				  session_argument(argument, sizeof argument, sequence),
				  flight.patterns, flight.pattern_count);
}

static void take_snapshot(void)
{
	unsigned sequence = flight.counts.sequence + 1;
	if (trace_snapshot()) {
		count(&flight.counts.failed);
		return;
	}
	__atomic_store_n(&flight.counts.sequence, sequence, __ATOMIC_RELAXED);
	count(&flight.counts.taken);
	pr_info("lattrack: snapshot %u taken\n", sequence);
	if (strcmp(flight.sink->name, "file"))
		return;
	trace_stop(NULL);
	if (start_session(sequence + 1)) {
		count(&flight.counts.failed);
		__atomic_store_n(&flight.running, false, __ATOMIC_RELEASE);
	}
}

static bool work_or_stop(void *arg)
{
	return __atomic_load_n(&flight.pending, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&flight.stop, __ATOMIC_ACQUIRE);
}

static int snapshot_thread(void *arg)
{
	for (;;) {
		waitq_wait(&flight_queue, work_or_stop, NULL);
		if (__atomic_load_n(&flight.stop, __ATOMIC_ACQUIRE))
			return 0;
		__atomic_store_n(&flight.pending, 0, __ATOMIC_RELEASE);
		if (__atomic_load_n(&flight.running, __ATOMIC_ACQUIRE))
			take_snapshot();
	}
}

static int copy_patterns(const char *const *patterns, unsigned count)
{
	if (count > TRACE_PATTERNS_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < count; i++) {
		if (strlcpy(flight.pattern_text[i], patterns[i], sizeof flight.pattern_text[i]) >=
		    sizeof flight.pattern_text[i])
			return -EINVAL;
		flight.patterns[i] = flight.pattern_text[i];
	}
	flight.pattern_count = count;
	return 0;
}

static int configure(const char *sink_name, const char *directory, const char *const *patterns,
		     unsigned count)
{
	flight.sink = sink_name ? trace_find_sink(sink_name) : NULL;
	if (!flight.sink)
		return -ENOENT;
	if (!directory || strlcpy(flight.directory, directory, sizeof flight.directory) >=
			      sizeof flight.directory)
		return -EINVAL;
	return copy_patterns(patterns, count);
}

static int start_locked(const char *sink_name, const char *directory, const char *const *patterns,
			unsigned count)
{
	if (flight.running || trace_running())
		return -EBUSY;
	int error = configure(sink_name, directory, patterns, count);
	if (error)
		return error;
	flight.stop = false;
	flight.pending = 0;
	flight.thread =
	    thread_create(snapshot_thread, NULL, "lattrack-snap", SCHED_PRIORITY_NORMAL);
	if (!flight.thread)
		return -ENOMEM;
	error = start_session(flight.counts.sequence + 1);
	if (error) {
		__atomic_store_n(&flight.stop, true, __ATOMIC_RELEASE);
		waitq_wake_all(&flight_queue);
		thread_join(flight.thread, NULL);
		return error;
	}
	__atomic_store_n(&flight.running, true, __ATOMIC_RELEASE);
	return 0;
}

static bool enter(void)
{
	bool idle = false;
	return __atomic_compare_exchange_n(&flight.busy, &idle, true, false, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

static void leave(void)
{
	__atomic_store_n(&flight.busy, false, __ATOMIC_RELEASE);
}

int lattrack_flight_start(const char *sink_name, const char *directory, const char *const *patterns,
			  unsigned count)
{
	if (!enter())
		return -EBUSY;
	int error = start_locked(sink_name, directory, patterns, count);
	leave();
	return error;
}

int lattrack_flight_stop(void)
{
	if (!enter())
		return -EBUSY;
	int error = flight.thread ? 0 : -ENOENT;
	if (!error) {
		bool session = __atomic_exchange_n(&flight.running, false, __ATOMIC_ACQ_REL);
		__atomic_store_n(&flight.stop, true, __ATOMIC_RELEASE);
		waitq_wake_all(&flight_queue);
		thread_join(flight.thread, NULL);
		flight.thread = NULL;
		timer_cancel_oneshot(&flight.kick);
		if (session)
			trace_stop(NULL);
	}
	leave();
	return error;
}
