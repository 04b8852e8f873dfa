/*
 * The lattrack suite: what each callback flag means (thresholds, timeouts
 * and late outs, unique keys, garbage collection), that an empty freelist
 * drops and counts without blocking, that threads on every CPU doing random
 * ins and outs on shared keys lose and double no event (each event's private
 * data carries a serial, and every accepted serial must reach the callback
 * exactly once), that the hot path and callbacks work from an interrupt,
 * that snapshots are rate-limited and land in the file system, and that the
 * wake-up tracker on join points sees wake-ups.
 */
#include "lattrack/internal.h"

#include "arch/x86_64/cpu.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/format.h"
#include "lib/string.h"
#include "net/net.h"
#include "sched/sched.h"
#include "smp/smp.h"
#include "trace/trace.h"
#include "vfs/vfs.h"

#define MS             (1000ULL * 1000)
#define WAIT_GUARD_MS  5000 /* only against hangs */
#define STRESS_THREADS 4
#define STRESS_ROUNDS  3000
#define STRESS_KEYS    48
#define STRESS_SERIALS (STRESS_THREADS * STRESS_ROUNDS)

/* What the callbacks saw. */
static struct {
	uint64_t calls[LATTRACK_LATE + 1];
	uint64_t last_key;
	unsigned last_out_id;
	uint64_t last_delay;
	uint64_t in_interrupt;
} seen;

static void record(const struct lattrack_report *report, void *context)
{
	__atomic_fetch_add(&seen.calls[report->flag], 1, __ATOMIC_RELAXED);
	uint64_t key = 0;
	memcpy(&key, report->key, report->key_length < 8 ? report->key_length : 8);
	seen.last_key = key;
	seen.last_out_id = report->out_id;
	seen.last_delay = report->end_ns - report->start_ns;
	if (this_cpu()->irq_depth > 0)
		__atomic_fetch_add(&seen.in_interrupt, 1, __ATOMIC_RELAXED);
}

static struct lattrack *make(struct ktest *t, const char *name, uint64_t threshold_ns)
{
	memset(&seen, 0, sizeof seen);
	struct lattrack *tracker = NULL;
	EXPECT_EQ(t, lattrack_create(name, &tracker), 0);
	if (!tracker)
		return NULL;
	lattrack_set_threshold_ns(tracker, threshold_ns);
	lattrack_set_callback(tracker, record, NULL);
	return tracker;
}

static bool wait_for(const uint64_t *counter, uint64_t value)
{
	for (unsigned i = 0; i < WAIT_GUARD_MS; i++) {
		if (__atomic_load_n(counter, __ATOMIC_ACQUIRE) >= value)
			return true;
		sched_sleep_ns(MS);
	}
	return false;
}

/* A span the caller timed: counted in and out at once; over the threshold
 * it is reported NORMAL with its id and times; a tracker with private data
 * refuses spans. */
static void span_counts_and_reports(struct ktest *t)
{
	struct lattrack *tracker = make(t, "t-span", 10 * MS);
	ASSERT_TRUE(t, tracker != NULL);
	ASSERT_EQ(t, lattrack_enable(tracker), 0);
	uint64_t key = 11, now = rdtsc(), long_ago = now - lattrack_ns_to_tsc(20 * MS);
	EXPECT_EQ(t, lattrack_event_span(tracker, &key, sizeof key, now, now, 3), 0);
	EXPECT_EQ(t, seen.calls[LATTRACK_NORMAL], 0);
	EXPECT_EQ(t, lattrack_event_span(tracker, &key, sizeof key, long_ago, now, 4), 0);
	EXPECT_EQ(t, seen.calls[LATTRACK_NORMAL], 1);
	EXPECT_EQ(t, seen.last_key, 11);
	EXPECT_EQ(t, seen.last_out_id, 4);
	EXPECT_TRUE(t, seen.last_delay >= 19 * MS && seen.last_delay <= 21 * MS);
	EXPECT_EQ(t, lattrack_event_span(tracker, &key, 0, now, now, 0), -EINVAL);
	struct lattrack_counts c;
	lattrack_get_counts(tracker, &c);
	EXPECT_EQ(t, c.in, 2);
	EXPECT_EQ(t, c.out, 2);
	EXPECT_EQ(t, c.over, 1);
	EXPECT_EQ(t, c.in_flight, 0);
	EXPECT_TRUE(t, lattrack_max_ns(tracker) >= 19 * MS);
	EXPECT_EQ(t, lattrack_destroy(tracker), 0);
	struct lattrack *with_priv = make(t, "t-span-priv", 0);
	ASSERT_TRUE(t, with_priv != NULL);
	EXPECT_EQ(t, lattrack_set_priv_size(with_priv, 8), 0);
	ASSERT_EQ(t, lattrack_enable(with_priv), 0);
	EXPECT_EQ(t, lattrack_event_span(with_priv, &key, sizeof key, now, now, 0), -EINVAL);
	EXPECT_EQ(t, lattrack_destroy(with_priv), 0);
}

/* Delays under the threshold run no callback; over it, NORMAL with the id. */
static void threshold_decides_the_callback(struct ktest *t)
{
	struct lattrack *tracker = make(t, "t-threshold", 10000 * MS);
	ASSERT_TRUE(t, tracker != NULL);
	ASSERT_EQ(t, lattrack_enable(tracker), 0);
	uint64_t key = 7;
	EXPECT_EQ(t, lattrack_event_in(tracker, &key, sizeof key, LATTRACK_IN_SHARED, NULL), 0);
	EXPECT_EQ(t, lattrack_event_out(tracker, &key, sizeof key, 3), 0);
	EXPECT_EQ(t, seen.calls[LATTRACK_NORMAL], 0);
	lattrack_set_threshold_ns(tracker, 2 * MS);
	EXPECT_EQ(t, lattrack_event_in(tracker, &key, sizeof key, LATTRACK_IN_SHARED, NULL), 0);
	sched_sleep_ns(3 * MS);
	EXPECT_EQ(t, lattrack_event_out(tracker, &key, sizeof key, 5), 0);
	EXPECT_EQ(t, seen.calls[LATTRACK_NORMAL], 1);
	EXPECT_EQ(t, seen.last_key, 7);
	EXPECT_EQ(t, seen.last_out_id, 5);
	EXPECT_TRUE(t, seen.last_delay >= 2 * MS);
	struct lattrack_counts c;
	lattrack_get_counts(tracker, &c);
	EXPECT_EQ(t, c.in, 2);
	EXPECT_EQ(t, c.out, 2);
	EXPECT_EQ(t, c.over, 1);
	EXPECT_EQ(t, c.in_flight, 0);
	EXPECT_EQ(t, lattrack_event_out(tracker, &key, sizeof key, 0), -ENOENT);
	lattrack_get_counts(tracker, &c);
	EXPECT_EQ(t, c.unmatched, 1);
	EXPECT_EQ(t, lattrack_destroy(tracker), 0);
}

/* A key in past the timeout is reported once by the timer; its out is LATE. */
static void timeout_then_late_out(struct ktest *t)
{
	struct lattrack *tracker = make(t, "t-timeout", 10000 * MS);
	ASSERT_TRUE(t, tracker != NULL);
	lattrack_set_timeout_ns(tracker, 2 * MS);
	lattrack_set_timer_period_ns(tracker, 1 * MS);
	ASSERT_EQ(t, lattrack_enable(tracker), 0);
	uint64_t key = 11;
	EXPECT_EQ(t, lattrack_event_in(tracker, &key, sizeof key, LATTRACK_IN_SHARED, NULL), 0);
	EXPECT_TRUE(t, wait_for(&seen.calls[LATTRACK_TIMEOUT], 1));
	sched_sleep_ns(5 * MS); /* more periods: still reported once */
	EXPECT_EQ(t, seen.calls[LATTRACK_TIMEOUT], 1);
	EXPECT_TRUE(t, seen.in_interrupt >= 1); /* the timer's callback */
	EXPECT_EQ(t, seen.last_key, 11);
	EXPECT_EQ(t, lattrack_event_out(tracker, &key, sizeof key, 9), 0);
	EXPECT_EQ(t, seen.calls[LATTRACK_LATE], 1);
	EXPECT_EQ(t, seen.calls[LATTRACK_NORMAL], 0);
	EXPECT_EQ(t, seen.last_out_id, 9);
	struct lattrack_counts c;
	lattrack_get_counts(tracker, &c);
	EXPECT_EQ(t, c.timeout, 1);
	EXPECT_EQ(t, c.late, 1);
	EXPECT_EQ(t, c.out, 1);
	EXPECT_EQ(t, c.in_flight, 0);
	EXPECT_EQ(t, lattrack_destroy(tracker), 0);
}

/* A unique in replaces the key (UNIQUE); shared ins stack, outs end the newest. */
static void unique_replaces_shared_stacks(struct ktest *t)
{
	struct lattrack *tracker = make(t, "t-unique", 0);
	ASSERT_TRUE(t, tracker != NULL);
	lattrack_set_priv_size(tracker, 8);
	ASSERT_EQ(t, lattrack_enable(tracker), 0);
	uint64_t key = 21;
	EXPECT_EQ(t, lattrack_event_in(tracker, &key, sizeof key, LATTRACK_IN_UNIQUE, NULL), 0);
	EXPECT_EQ(t, lattrack_event_in(tracker, &key, sizeof key, LATTRACK_IN_UNIQUE, NULL), 0);
	EXPECT_EQ(t, seen.calls[LATTRACK_UNIQUE], 1);
	struct lattrack_counts c;
	lattrack_get_counts(tracker, &c);
	EXPECT_EQ(t, c.unique, 1);
	EXPECT_EQ(t, c.in_flight, 1);
	EXPECT_EQ(t, lattrack_event_in(tracker, &key, sizeof key, LATTRACK_IN_SHARED, NULL), 0);
	EXPECT_EQ(t, lattrack_event_out(tracker, &key, sizeof key, 0), 0);
	EXPECT_EQ(t, lattrack_event_out(tracker, &key, sizeof key, 0), 0);
	EXPECT_EQ(t, lattrack_event_out(tracker, &key, sizeof key, 0), -ENOENT);
	EXPECT_EQ(t, seen.calls[LATTRACK_NORMAL], 2);
	/* keys of other lengths are other keys */
	uint32_t short_key = 21;
	EXPECT_EQ(
	    t, lattrack_event_in(tracker, &short_key, sizeof short_key, LATTRACK_IN_UNIQUE, NULL),
	    0);
	EXPECT_EQ(t, lattrack_event_out(tracker, &key, sizeof key, 0), -ENOENT);
	EXPECT_EQ(t, lattrack_event_out(tracker, &short_key, sizeof short_key, 0), 0);
	EXPECT_EQ(t, lattrack_destroy(tracker), 0);
}

/* Past the GC age the timer removes the key and reports GC. */
static void garbage_is_collected(struct ktest *t)
{
	struct lattrack *tracker = make(t, "t-gc", 10000 * MS);
	ASSERT_TRUE(t, tracker != NULL);
	lattrack_set_gc_age_ns(tracker, 2 * MS);
	lattrack_set_timer_period_ns(tracker, 1 * MS);
	ASSERT_EQ(t, lattrack_enable(tracker), 0);
	uint64_t key = 31;
	EXPECT_EQ(t, lattrack_event_in(tracker, &key, sizeof key, LATTRACK_IN_SHARED, NULL), 0);
	EXPECT_TRUE(t, wait_for(&seen.calls[LATTRACK_GC], 1));
	EXPECT_EQ(t, lattrack_event_out(tracker, &key, sizeof key, 0), -ENOENT);
	struct lattrack_counts c;
	lattrack_get_counts(tracker, &c);
	EXPECT_EQ(t, c.gc, 1);
	EXPECT_EQ(t, c.in_flight, 0);
	EXPECT_EQ(t, lattrack_destroy(tracker), 0);
}

/* A scan whose time was read before an event went in (another CPU's in
 * while the timer walks the buckets) neither times it out nor collects it:
 * its age is 0, not the wrapped difference. */
static void events_newer_than_the_scan_are_left_alone(struct ktest *t)
{
	struct lattrack *tracker = make(t, "t-newer", 0);
	ASSERT_TRUE(t, tracker != NULL);
	lattrack_set_timeout_ns(tracker, 2 * MS);
	lattrack_set_gc_age_ns(tracker, 4 * MS);
	lattrack_set_timer_period_ns(tracker, 1000 * MS); /* the test scans by hand */
	ASSERT_EQ(t, lattrack_enable(tracker), 0);
	uint64_t before = rdtsc(), key = 41;
	EXPECT_EQ(t, lattrack_event_in(tracker, &key, sizeof key, LATTRACK_IN_SHARED, NULL), 0);
	lattrack_scan_at(tracker, before - 1);
	struct lattrack_counts c;
	lattrack_get_counts(tracker, &c);
	EXPECT_EQ(t, c.timeout, 0);
	EXPECT_EQ(t, c.gc, 0);
	EXPECT_EQ(t, c.in_flight, 1);
	EXPECT_EQ(t, lattrack_event_out(tracker, &key, sizeof key, 0), 0);
	lattrack_get_counts(tracker, &c);
	EXPECT_EQ(t, c.out, 1);
	EXPECT_EQ(t, c.late, 0);
	EXPECT_EQ(t, c.unmatched, 0);
	EXPECT_EQ(t, lattrack_destroy(tracker), 0);
}

/* An empty freelist drops at once (with interrupts off: nothing can block). */
static void exhausted_freelist_drops_and_counts(struct ktest *t)
{
	struct lattrack *tracker = make(t, "t-exhaust", 10000 * MS);
	ASSERT_TRUE(t, tracker != NULL);
	lattrack_set_max_events(tracker, 4 * cpu_count); /* 4 per CPU */
	ASSERT_EQ(t, lattrack_enable(tracker), 0);
	unsigned accepted = 0, refused = 0;
	uint64_t flags = irq_save();
	for (uint64_t key = 0; key < 20; key++) {
		int error = lattrack_event_in(tracker, &key, sizeof key, LATTRACK_IN_SHARED, NULL);
		accepted += error == 0;
		refused += error == -ENOSPC;
	}
	irq_restore(flags);
	EXPECT_EQ(t, accepted, 4);
	EXPECT_EQ(t, refused, 16);
	struct lattrack_counts c;
	lattrack_get_counts(tracker, &c);
	EXPECT_EQ(t, c.dropped, 16);
	EXPECT_EQ(t, c.in_flight, 4);
	for (uint64_t key = 0; key < 4; key++)
		EXPECT_EQ(t, lattrack_event_out(tracker, &key, sizeof key, 0), 0);
	uint64_t key = 99;
	EXPECT_EQ(t, lattrack_event_in(tracker, &key, sizeof key, LATTRACK_IN_SHARED, NULL), 0);
	EXPECT_EQ(t, lattrack_destroy(tracker), 0);
}

/* ---- the concurrent stress ----------------------------------------------- */

static uint64_t accepted_serials[STRESS_SERIALS / 64 + 1];
static uint64_t reported_serials[STRESS_SERIALS / 64 + 1];
static uint64_t doubled, outs_ok, ins_ok;

static bool set_bit(uint64_t *bits, uint64_t serial)
{
	uint64_t mask = 1ULL << (serial % 64);
	return __atomic_fetch_or(&bits[serial / 64], mask, __ATOMIC_RELAXED) & mask;
}

static void stress_callback(const struct lattrack_report *report, void *context)
{
	uint64_t serial;
	memcpy(&serial, report->priv, sizeof serial);
	if (serial >= STRESS_SERIALS || set_bit(reported_serials, serial))
		__atomic_fetch_add(&doubled, 1, __ATOMIC_RELAXED);
}

struct stress_arg {
	struct lattrack *tracker;
	unsigned index;
};

static int stress_thread(void *argument)
{
	struct stress_arg *arg = argument;
	uint64_t random = 0x9e3779b97f4a7c15ULL * (arg->index + 1);
	for (unsigned round = 0; round < STRESS_ROUNDS; round++) {
		random ^= random << 13, random ^= random >> 7, random ^= random << 17;
		uint64_t key = random % STRESS_KEYS;
		uint64_t serial = (uint64_t)arg->index * STRESS_ROUNDS + round;
		if ((random >> 32) & 1) {
			/* mark accepted before the in: its out may come at once on another CPU */
			set_bit(accepted_serials, serial);
			if (lattrack_event_in(arg->tracker, &key, sizeof key, LATTRACK_IN_SHARED,
					      &serial) == 0)
				__atomic_fetch_add(&ins_ok, 1, __ATOMIC_RELAXED);
			else
				__atomic_fetch_and(&accepted_serials[serial / 64],
						   ~(1ULL << (serial % 64)), __ATOMIC_RELAXED);
		} else if (lattrack_event_out(arg->tracker, &key, sizeof key, 0) == 0) {
			__atomic_fetch_add(&outs_ok, 1, __ATOMIC_RELAXED);
		}
		if (round % 256 == 0)
			sched_yield();
	}
	return 0;
}

static void run_stress_threads(struct lattrack *tracker)
{
	struct stress_arg args[STRESS_THREADS];
	struct thread *threads[STRESS_THREADS];
	for (unsigned i = 0; i < STRESS_THREADS; i++) {
		args[i] = (struct stress_arg){tracker, i};
		threads[i] = thread_create(stress_thread, &args[i], "lattrack-stress",
					   SCHED_PRIORITY_NORMAL);
		if (threads[i])
			thread_set_affinity(threads[i], SMP_CPU_BIT(i % cpu_count));
	}
	for (unsigned i = 0; i < STRESS_THREADS; i++)
		if (threads[i])
			thread_join(threads[i], NULL);
}

/* Threads on every CPU, random ins and outs on shared keys: every accepted
 * event is reported exactly once (threshold 0), and the counts add up. */
static void concurrent_random_in_out_loses_nothing(struct ktest *t)
{
	memset(accepted_serials, 0, sizeof accepted_serials);
	memset(reported_serials, 0, sizeof reported_serials);
	doubled = outs_ok = ins_ok = 0;
	struct lattrack *tracker = NULL;
	ASSERT_EQ(t, lattrack_create("t-stress", &tracker), 0);
	lattrack_set_threshold_ns(tracker, 0);
	lattrack_set_priv_size(tracker, sizeof(uint64_t));
	lattrack_set_max_events(tracker, 64 * cpu_count);
	lattrack_set_callback(tracker, stress_callback, NULL);
	ASSERT_EQ(t, lattrack_enable(tracker), 0);
	run_stress_threads(tracker);
	for (uint64_t key = 0; key < STRESS_KEYS; key++)
		while (lattrack_event_out(tracker, &key, sizeof key, 0) == 0)
			outs_ok++;
	struct lattrack_counts c;
	lattrack_get_counts(tracker, &c);
	EXPECT_EQ(t, c.in, ins_ok);
	EXPECT_EQ(t, c.out, outs_ok);
	EXPECT_EQ(t, c.over, outs_ok);
	EXPECT_EQ(t, c.in_flight, 0);
	EXPECT_EQ(t, doubled, 0);
	EXPECT_TRUE(t, ins_ok > 0);
	EXPECT_TRUE(t, !memcmp(accepted_serials, reported_serials, sizeof accepted_serials));
	EXPECT_EQ(t, lattrack_destroy(tracker), 0);
}

/* ---- interrupts, instances, configuration -------------------------------- */

static struct timer_oneshot irq_timer;
static uint64_t irq_done;

static void in_and_out_from_interrupt(struct timer_oneshot *timer, void *context)
{
	uint64_t key = 41;
	lattrack_event_in(context, &key, sizeof key, LATTRACK_IN_SHARED, NULL);
	lattrack_event_out(context, &key, sizeof key, 2);
	__atomic_store_n(&irq_done, 1, __ATOMIC_RELEASE);
}

/* event_in, event_out and the callback run in a timer interrupt. */
static void callback_from_interrupt(struct ktest *t)
{
	struct lattrack *tracker = make(t, "t-irq", 0);
	ASSERT_TRUE(t, tracker != NULL);
	ASSERT_EQ(t, lattrack_enable(tracker), 0);
	irq_done = 0;
	ASSERT_EQ(
	    t, timer_arm_oneshot_ns(&irq_timer, clock_ns(), in_and_out_from_interrupt, tracker), 0);
	EXPECT_TRUE(t, wait_for(&irq_done, 1));
	EXPECT_EQ(t, seen.calls[LATTRACK_NORMAL], 1);
	EXPECT_EQ(t, seen.in_interrupt, 1);
	EXPECT_EQ(t, seen.last_out_id, 2);
	EXPECT_EQ(t, lattrack_destroy(tracker), 0);
}

/* Two trackers keep the same key apart; names are unique; setters check. */
static void instances_and_setters(struct ktest *t)
{
	struct lattrack *a = make(t, "t-a", 0), *b = NULL, *dup = NULL;
	ASSERT_TRUE(t, a != NULL);
	EXPECT_EQ(t, lattrack_create("t-a", &dup), -EEXIST);
	EXPECT_EQ(t, lattrack_create("", &dup), -EINVAL);
	ASSERT_EQ(t, lattrack_create("t-b", &b), 0);
	EXPECT_EQ(t, lattrack_set_key_size(a, 0), -EINVAL);
	EXPECT_EQ(t, lattrack_set_key_size(a, LATTRACK_KEY_MAX + 1), -EINVAL);
	EXPECT_EQ(t, lattrack_set_key_size(a, LATTRACK_KEY_MAX), 0);
	EXPECT_EQ(t, lattrack_set_max_events(a, 0), -EINVAL);
	EXPECT_EQ(t, lattrack_set_timer_period_ns(a, 1000), -EINVAL);
	uint64_t key = 51;
	EXPECT_EQ(t, lattrack_event_in(a, &key, sizeof key, LATTRACK_IN_SHARED, NULL), -EINVAL);
	ASSERT_EQ(t, lattrack_enable(a), 0);
	ASSERT_EQ(t, lattrack_enable(b), 0);
	EXPECT_EQ(t, lattrack_enable(a), -EBUSY);
	EXPECT_EQ(t, lattrack_set_timeout_ns(a, MS), -EBUSY);
	unsigned char big[LATTRACK_KEY_MAX + 1] = {1};
	EXPECT_EQ(t, lattrack_event_in(a, big, LATTRACK_KEY_MAX, LATTRACK_IN_SHARED, NULL), 0);
	EXPECT_EQ(t, lattrack_event_in(b, big, LATTRACK_KEY_MAX, LATTRACK_IN_SHARED, NULL),
		  -EINVAL);
	EXPECT_EQ(t, lattrack_event_in(a, big, sizeof big, LATTRACK_IN_SHARED, NULL), -EINVAL);
	EXPECT_EQ(t, lattrack_event_in(b, &key, sizeof key, LATTRACK_IN_SHARED, NULL), 0);
	EXPECT_TRUE(t, lattrack_contains(b, &key, sizeof key));
	EXPECT_FALSE(t, lattrack_contains(a, &key, sizeof key));
	EXPECT_EQ(t, lattrack_event_out(a, &key, sizeof key, 0), -ENOENT);
	EXPECT_EQ(t, lattrack_event_out(a, big, LATTRACK_KEY_MAX, 0), 0);
	struct lattrack *found = lattrack_get("t-b");
	EXPECT_TRUE(t, found == b);
	lattrack_put(found);
	EXPECT_EQ(t, lattrack_destroy(a), 0);
	EXPECT_EQ(t, lattrack_destroy(b), 0);
	EXPECT_TRUE(t, lattrack_get("t-a") == NULL);
}

/* ---- snapshots and trackers on join points ------------------------------- */

/* One snapshot per interval: the second request within it is refused and
 * counted; the first lands as a CTF directory. */
static void snapshots_are_rate_limited(struct ktest *t)
{
	struct lattrack_snapshot_counts before, after;
	lattrack_snapshot_get_counts(&before);
	EXPECT_EQ(t, lattrack_snapshot_request(), -ENOENT);
	if (trace_running()) {
		ktest_skip(t, "a trace session runs");
		return;
	}
	lattrack_snapshot_set_interval_ns(3600ULL * 1000 * MS);
	ASSERT_EQ(t, lattrack_flight_start("file", "/lattrack-test", NULL, 0), 0);
	EXPECT_EQ(t, lattrack_snapshot_request(), 0);
	EXPECT_EQ(t, lattrack_snapshot_request(), -EAGAIN);
	EXPECT_EQ(t, lattrack_snapshot_request(), -EAGAIN);
	struct lattrack_snapshot_counts *progress = &after;
	lattrack_snapshot_get_counts(progress);
	for (unsigned i = 0; i < WAIT_GUARD_MS && progress->taken == before.taken; i++) {
		sched_sleep_ns(MS);
		lattrack_snapshot_get_counts(progress);
	}
	EXPECT_EQ(t, after.taken, before.taken + 1);
	EXPECT_EQ(t, after.requested, before.requested + 1);
	EXPECT_EQ(t, after.refused, before.refused + 3);
	char path[64];
	snprintf(path, sizeof path, "/lattrack-test-%u/metadata", after.sequence);
	struct vfs_stat stat;
	EXPECT_EQ(t, vfs_stat(path, &stat), 0);
	EXPECT_EQ(t, lattrack_flight_stop(), 0);
	EXPECT_FALSE(t, trace_running());
	lattrack_snapshot_set_interval_ns(1000 * MS);
}

/* The wakeup tracker sees this thread's own sleeps end. */
static void wakeup_tracker_sees_wakeups(struct ktest *t)
{
	ASSERT_EQ(t, lattrack_attach_kind("t-wakeup", "wakeup", 0, 0), 0);
	EXPECT_EQ(t, lattrack_attach_kind("t-wakeup", "wakeup", 0, 0), -EEXIST);
	EXPECT_EQ(t, lattrack_attach_kind("t-none", "nosuchkind", 0, 0), -ENOENT);
	for (int i = 0; i < 5; i++)
		sched_sleep_ns(MS);
	struct lattrack *tracker = lattrack_get("t-wakeup");
	ASSERT_TRUE(t, tracker != NULL);
	struct lattrack_counts c;
	lattrack_get_counts(tracker, &c);
	EXPECT_TRUE(t, c.in >= 5);
	EXPECT_TRUE(t, c.over >= 5);
	EXPECT_EQ(t, strcmp(lattrack_kind(tracker), "wakeup"), 0);
	lattrack_put(tracker);
	EXPECT_EQ(t, lattrack_detach("t-wakeup"), 0);
	EXPECT_EQ(t, lattrack_detach("t-wakeup"), -ENOENT);
}

/* ---- time to first byte over loopback --------------------------------------- */

#define TTFB_PORT 7101

static int ttfb_client(void *arg)
{
	struct net_socket *s;
	struct net_sockaddr_in a = net_sockaddr(NET_IPV4(127, 0, 0, 1), TTFB_PORT);
	char buffer[8];
	if (net_socket_create(NET_AF_INET, NET_SOCK_STREAM, 0, &s))
		return -1;
	if (!net_connect(s, &a))
		while (net_recv(s, buffer, sizeof buffer, 0, NULL) > 0)
			;
	net_close(s);
	return 0;
}

static void expect_one_first_send(struct ktest *t, const char *name)
{
	struct lattrack *tracker = lattrack_get(name);
	ASSERT_TRUE(t, tracker != NULL);
	struct lattrack_counts c;
	lattrack_get_counts(tracker, &c);
	EXPECT_EQ(t, c.in, 1);
	EXPECT_EQ(t, c.out, 1);
	EXPECT_EQ(t, c.over, 1);
	EXPECT_TRUE(t, c.unmatched >= 2); /* the second send, the closes */
	EXPECT_EQ(t, c.in_flight, 0);
	lattrack_put(tracker);
}

/* The ttfb tracker times accept to the first send only: the second send
 * and the close find no key.  Two trackers at once share one net.send
 * advice: each sees the first send. */
static void ttfb_tracker_times_the_first_send(struct ktest *t)
{
	ASSERT_EQ(t, lattrack_attach_kind("t-ttfb", "ttfb", 0, 0), 0);
	ASSERT_EQ(t, lattrack_attach_kind("t-ttfb2", "ttfb", 0, 0), 0);
	struct net_socket *server = NULL, *peer = NULL;
	struct net_sockaddr_in any = net_sockaddr(NET_IPV4(127, 0, 0, 1), TTFB_PORT), from;
	int one = 1;
	EXPECT_EQ(t, net_socket_create(NET_AF_INET, NET_SOCK_STREAM, 0, &server), 0);
	if (server) {
		net_setsockopt(server, NET_SOL_SOCKET, NET_SO_REUSEADDR, &one, sizeof one);
		EXPECT_EQ(t, net_bind(server, &any), 0);
		EXPECT_EQ(t, net_listen(server, 2), 0);
	}
	struct thread *client =
	    thread_create(ttfb_client, NULL, "ttfb-client", SCHED_PRIORITY_NORMAL);
	if (server && client && net_accept(server, &peer, &from) == 0) {
		EXPECT_EQ(t, net_send(peer, "a", 1, 0, NULL), 1);
		EXPECT_EQ(t, net_send(peer, "b", 1, 0, NULL), 1);
		net_close(peer);
	}
	if (client)
		thread_join(client, NULL);
	if (server)
		net_close(server);
	expect_one_first_send(t, "t-ttfb");
	expect_one_first_send(t, "t-ttfb2");
	EXPECT_EQ(t, lattrack_detach("t-ttfb2"), 0);
	EXPECT_EQ(t, lattrack_detach("t-ttfb"), 0);
}

KTEST_SUITE(lattrack, KTEST_CASE(threshold_decides_the_callback), KTEST_CASE(timeout_then_late_out),
	    KTEST_CASE(unique_replaces_shared_stacks), KTEST_CASE(garbage_is_collected),
	    KTEST_CASE(events_newer_than_the_scan_are_left_alone),
	    KTEST_CASE(exhausted_freelist_drops_and_counts),
	    KTEST_CASE(concurrent_random_in_out_loses_nothing), KTEST_CASE(callback_from_interrupt),
	    KTEST_CASE(instances_and_setters), KTEST_CASE(snapshots_are_rate_limited),
	    KTEST_CASE(wakeup_tracker_sees_wakeups), KTEST_CASE(ttfb_tracker_times_the_first_send),
	    KTEST_CASE(span_counts_and_reports));
