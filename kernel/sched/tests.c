/*
 * ktest suite "sched": threads, priorities, preemption, wait queues, mutexes,
 * reclamation and FPU isolation.  Orderings are observed with counters and
 * sequence numbers, never with durations; where a test must wait for a
 * thread to get somewhere, it waits on a condition, and busy threads give up
 * after a generous clock bound so a broken scheduler fails instead of hanging.
 * The suite runs in the ktest thread (priority normal), on every CPU; the
 * cases about one CPU's policy pin themselves (ONE_CPU_CASE).
 */
#include "sched/internal.h"

#include "arch/x86_64/cpu.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "sched/one_cpu_case.h"
#include "smp/smp.h"
#include "time/time.h"

/* No case here bounds a wait by time: on a busy host QEMU can stall for
 * seconds, and a bound would then decide the result.  A wait that never ends
 * is a hang, which the harness's timeout catches and names (tests/run.py's
 * hang symbols). */

/* Spawns count threads of fn(&args[i]) and joins them all; returns the sum of
 * their exit statuses, or -1 if one could not be created or joined. */
static int run_threads(thread_fn fn, void **args, const int *priorities, int count)
{
	struct thread *threads[64];
	int sum = 0, failed = 0;

	ASSERT(count <= 64);
	for (int i = 0; i < count; i++) {
		threads[i] = thread_create(fn, args[i], "test", priorities[i]);
		failed |= !threads[i];
	}
	for (int i = 0; i < count; i++) {
		int status = 0;
		if (threads[i] && thread_join(threads[i], &status) == 0)
			sum += status;
		else
			failed = 1;
	}
	return failed ? -1 : sum;
}

/* ---- Many threads of every priority run and finish ---------------------- */

static volatile uint64_t shared_total;

static int count_and_yield(void *arg)
{
	int index = (int)(uintptr_t)arg;
	for (int i = 0; i < 100; i++) {
		__atomic_fetch_add(&shared_total, 1, __ATOMIC_RELAXED);
		if ((i + index) % 3 == 0)
			sched_yield();
	}
	return 1;
}

static void threads_of_every_priority_run_and_finish(struct ktest *t)
{
	void *args[40];
	int priorities[40];
	unsigned threads_before = thread_count();

	shared_total = 0;
	for (int i = 0; i < 40; i++) {
		args[i] = (void *)(uintptr_t)i;
		priorities[i] = i % SCHED_PRIORITY_LEVELS;
	}
	EXPECT_EQ(t, run_threads(count_and_yield, args, priorities, 40), 40);
	EXPECT_EQ(t, shared_total, 40 * 100);
	/* Its own 40 are gone; a thread of an earlier suite may have ended
	 * meanwhile, so the count may only have gone down. */
	EXPECT_TRUE(t, thread_count() <= threads_before);
}

/* ---- Priorities decide who runs first ----------------------------------- */

static volatile int sequence;

static int record_sequence(void *arg)
{
	*(volatile int *)arg = __atomic_add_fetch(&sequence, 1, __ATOMIC_RELAXED);
	return 0;
}

static void higher_priority_runs_before_create_returns_body(struct ktest *t)
{
	volatile int high_seen = 0, low_seen = 0;

	sequence = 0;
	struct thread *high =
	    thread_create(record_sequence, (void *)&high_seen, "high", SCHED_PRIORITY_HIGH);
	struct thread *low =
	    thread_create(record_sequence, (void *)&low_seen, "low", SCHED_PRIORITY_LOW);
	int mine = __atomic_add_fetch(&sequence, 1, __ATOMIC_RELAXED);
	ASSERT_TRUE(t, high && low);
	EXPECT_EQ(t, thread_join(high, NULL), 0);
	EXPECT_EQ(t, thread_join(low, NULL), 0);
	EXPECT_EQ(t, high_seen, 1); /* ran inside thread_create */
	EXPECT_EQ(t, mine, 2);
	EXPECT_EQ(t, low_seen, 3); /* ran only once this thread blocked */
}
ONE_CPU_CASE(higher_priority_runs_before_create_returns)

/* ---- A woken high-priority thread preempts a busy low one --------------- */

static volatile int stop_busy;
static volatile uint64_t busy_count;
static volatile int busy_finished;
static volatile uint64_t count_seen_by_high;
static volatile int finished_seen_by_high = -1;

static int busy_until_stopped(void *arg)
{
	while (!stop_busy)
		busy_count++;
	busy_finished = 1;
	return 0;
}

/* Sleeps until the busy thread has started (a slow host may take longer than
 * one sleep to get it going), then stops it. */
static int sleep_then_stop_busy(void *arg)
{
	do
		sched_sleep_ns(2 * NSEC_PER_MSEC);
	while (busy_count == 0);
	count_seen_by_high = busy_count;
	finished_seen_by_high = busy_finished;
	stop_busy = 1;
	return 0;
}

static void woken_high_priority_preempts_busy_low_body(struct ktest *t)
{
	stop_busy = 0;
	busy_count = 0;
	busy_finished = 0;
	struct thread *low = thread_create(busy_until_stopped, NULL, "busy", SCHED_PRIORITY_LOW);
	struct thread *high =
	    thread_create(sleep_then_stop_busy, NULL, "sleeper", SCHED_PRIORITY_HIGH);
	ASSERT_TRUE(t, low && high);
	EXPECT_EQ(t, thread_join(high, NULL), 0);
	EXPECT_EQ(t, thread_join(low, NULL), 0);
	/* The busy thread never yields: the sleeper can only have run while it
	 * was still spinning by preempting it. */
	EXPECT_TRUE(t, count_seen_by_high > 0);
	EXPECT_EQ(t, finished_seen_by_high, 0);
}
ONE_CPU_CASE(woken_high_priority_preempts_busy_low)

/* ---- Round-robin within one priority ------------------------------------ */

static volatile uint64_t spin_counts[3];

static int spin_until_all_progressed(void *arg)
{
	int me = (int)(uintptr_t)arg;
	while (!(spin_counts[0] && spin_counts[1] && spin_counts[2]))
		spin_counts[me]++;
	return 0;
}

static void equal_priorities_share_the_cpu_body(struct ktest *t)
{
	void *args[3] = {(void *)0, (void *)1, (void *)2};
	int priorities[3] = {SCHED_PRIORITY_LOW, SCHED_PRIORITY_LOW, SCHED_PRIORITY_LOW};
	uint64_t switches_before = this_cpu()->stats.context_switches;

	spin_counts[0] = spin_counts[1] = spin_counts[2] = 0;
	/* None of them yields: all three only progress if the tick rotates them. */
	EXPECT_EQ(t, run_threads(spin_until_all_progressed, args, priorities, 3), 0);
	EXPECT_TRUE(t, this_cpu()->stats.context_switches > switches_before + 3);
}
ONE_CPU_CASE(equal_priorities_share_the_cpu)

/* ---- Sleep and wake-up -------------------------------------------------- */

static void sleep_lasts_at_least_its_time(struct ktest *t)
{
	uint64_t start = clock_ns();
	sched_sleep_ns(3 * NSEC_PER_MSEC);
	EXPECT_TRUE(t, clock_ns() - start >= 3 * NSEC_PER_MSEC);
}

/* A sleep of half the time to the next tick is ended by the run queue's
 * own one-shot at its deadline, not left to the tick (which would end it up
 * to a period late): the CPU counts the sleeps its one-shot ended, and the
 * count goes up across the sleep (that the timer is then set for the
 * one-shot is ktest=time's oneshot_between_ticks_sets_the_timer_for_itself).
 * Counted, not timed: a stalled host that lets the tick come too changes
 * nothing, as the timer interrupt runs the
 * one-shots before the tick; a try whose deadline a stall put past the tick
 * before it blocked shows nothing, and the next try goes again. */
static void a_sleep_shorter_than_a_tick_ends_at_its_deadline_body(struct ktest *t)
{
	uint64_t period = NSEC_PER_SEC / timer_hz();
	bool ended_by_its_oneshot = false;
	for (int tries = 0; tries < 50 && !ended_by_its_oneshot; tries++) {
		struct cpu_stats before, after;
		ASSERT_EQ(t, sched_get_cpu_stats(thread_cpu(thread_current()), &before), 0);
		uint64_t flags = irq_save();
		uint64_t now = clock_ns(), next = timer_next_tick_ns();
		irq_restore(flags);
		if (!(next > now && next - now > period / 2)) { /* no room before the tick */
			sched_sleep_ns(period);
			continue;
		}
		sched_sleep_ns((next - now) / 2);
		EXPECT_TRUE(t, clock_ns() >= now + (next - now) / 2);
		ASSERT_EQ(t, sched_get_cpu_stats(thread_cpu(thread_current()), &after), 0);
		ended_by_its_oneshot =
		    after.sleeps_ended_between_ticks > before.sleeps_ended_between_ticks;
	}
	EXPECT_TRUE(t, ended_by_its_oneshot);
}
ONE_CPU_CASE(a_sleep_shorter_than_a_tick_ends_at_its_deadline)

static bool never(void *arg)
{
	return false;
}

static bool always(void *arg)
{
	return true;
}

static void wait_timeout_reports_which_came_first(struct ktest *t)
{
	struct waitq queue;
	waitq_init(&queue, "test");
	EXPECT_EQ(t, waitq_wait_timeout(&queue, never, NULL, 2 * NSEC_PER_MSEC), -ETIMEDOUT);
	EXPECT_EQ(t, waitq_wait_timeout(&queue, always, NULL, 2 * NSEC_PER_MSEC), 0);
	EXPECT_EQ(t, waitq_wake_all(&queue), 0);
	EXPECT_TRUE(t, link_empty(&queue.waiters));
}

/* Two threads wait on one queue for different flags: waitq_wake_ready wakes
 * the one whose flag was set and leaves the other asleep.  A waiter may wake
 * without cause (a stale wake-up of a thread that had the same structure)
 * and must then sleep on; one that so wakes after its flag was set leaves
 * the queue by itself, so waitq_wake_ready finds it gone: at most one. */
struct flag_waiter {
	struct waitq *queue;
	volatile bool flag, done;
};

static bool flag_set(void *arg)
{
	return ((struct flag_waiter *)arg)->flag;
}

static int wait_for_flag(void *arg)
{
	struct flag_waiter *w = arg;
	waitq_wait(w->queue, flag_set, w);
	__atomic_store_n(&w->done, true, __ATOMIC_RELEASE);
	return 0;
}

static void wake_ready_wakes_only_the_waiters_whose_condition_holds(struct ktest *t)
{
	struct waitq queue;
	waitq_init(&queue, "test.ready");
	struct flag_waiter a = {.queue = &queue}, b = {.queue = &queue};
	struct thread *ta = thread_create(wait_for_flag, &a, "wait-a", SCHED_PRIORITY_NORMAL);
	struct thread *tb = thread_create(wait_for_flag, &b, "wait-b", SCHED_PRIORITY_NORMAL);
	ASSERT_TRUE(t, ta && tb);
	while (waitq_waiters(&queue) < 2)
		sched_yield();
	EXPECT_EQ(t, waitq_wake_ready(&queue), 0); /* nobody's flag is set */
	a.flag = true;
	EXPECT_TRUE(t, waitq_wake_ready(&queue) <= 1);
	EXPECT_EQ(t, thread_join(ta, NULL), 0);
	EXPECT_TRUE(t, a.done);
	EXPECT_FALSE(t, b.done);
	EXPECT_EQ(t, waitq_waiters(&queue), 1); /* b sleeps on */
	b.flag = true;
	EXPECT_TRUE(t, waitq_wake_ready(&queue) <= 1);
	EXPECT_EQ(t, thread_join(tb, NULL), 0);
	EXPECT_TRUE(t, b.done);
}

/* A timeout past the clock's range (UINT64_MAX: as long as it takes) waits
 * for the condition: the deadline it adds up to must not wrap into the past
 * and end the wait at once with -ETIMEDOUT.  The flag's setter is below the
 * case's priority on its CPU: it runs only once the case has blocked. */
static int set_flag_and_wake(void *arg)
{
	struct flag_waiter *w = arg;
	w->flag = true;
	waitq_wake_all(w->queue);
	return 0;
}

static void a_timeout_past_the_clock_waits_for_the_condition_body(struct ktest *t)
{
	struct waitq queue;
	waitq_init(&queue, "test.long");
	struct flag_waiter w = {.queue = &queue};
	struct thread *setter =
	    thread_create(set_flag_and_wake, &w, "set-flag", SCHED_PRIORITY_LOW);
	ASSERT_TRUE(t, setter != NULL);
	EXPECT_EQ(t, waitq_wait_timeout(&queue, flag_set, &w, UINT64_MAX), 0);
	EXPECT_EQ(t, thread_join(setter, NULL), 0);
}
ONE_CPU_CASE(a_timeout_past_the_clock_waits_for_the_condition)

/* Producer/consumer through a 4-slot ring: every item arrives exactly once. */
#define RING_SLOTS         4
#define ITEMS_PER_PRODUCER 500

struct ring {
	struct spinlock lock;
	struct waitq not_empty, not_full;
	uint64_t slots[RING_SLOTS];
	volatile unsigned head, count;
	uint64_t consumed_sum, consumed_items;
};

static bool ring_has_item(void *arg)
{
	return ((struct ring *)arg)->count > 0;
}

static bool ring_has_space(void *arg)
{
	return ((struct ring *)arg)->count < RING_SLOTS;
}

static struct ring ring;

static int produce(void *arg)
{
	uint64_t base = (uintptr_t)arg;
	for (uint64_t i = 1; i <= ITEMS_PER_PRODUCER;) {
		waitq_wait(&ring.not_full, ring_has_space, &ring);
		uint64_t flags = spin_lock_irqsave(&ring.lock);
		bool put = ring.count < RING_SLOTS;
		if (put) {
			ring.slots[(ring.head + ring.count) % RING_SLOTS] = base + i++;
			ring.count++;
		}
		spin_unlock_irqrestore(&ring.lock, flags);
		if (put)
			waitq_wake_one(&ring.not_empty);
	}
	return 0;
}

static int consume(void *arg)
{
	for (int taken = 0; taken < ITEMS_PER_PRODUCER;) {
		waitq_wait(&ring.not_empty, ring_has_item, &ring);
		uint64_t flags = spin_lock_irqsave(&ring.lock);
		bool got = ring.count > 0;
		if (got) {
			ring.consumed_sum += ring.slots[ring.head];
			ring.consumed_items++;
			ring.head = (ring.head + 1) % RING_SLOTS;
			ring.count--;
			taken++;
		}
		spin_unlock_irqrestore(&ring.lock, flags);
		if (got)
			waitq_wake_one(&ring.not_full);
	}
	return 0;
}

static void producers_and_consumers_lose_nothing(struct ktest *t)
{
	struct thread *threads[4];
	spin_init(&ring.lock, "ring");
	waitq_init(&ring.not_empty, "ring-not-empty");
	waitq_init(&ring.not_full, "ring-not-full");
	ring.head = ring.count = 0;
	ring.consumed_sum = ring.consumed_items = 0;

	threads[0] = thread_create(consume, NULL, "consumer", SCHED_PRIORITY_NORMAL);
	threads[1] = thread_create(consume, NULL, "consumer", SCHED_PRIORITY_LOW);
	threads[2] = thread_create(produce, (void *)0, "producer", SCHED_PRIORITY_LOW);
	threads[3] = thread_create(produce, (void *)1000000, "producer", SCHED_PRIORITY_NORMAL);
	for (int i = 0; i < 4; i++) {
		ASSERT_TRUE(t, threads[i]);
		EXPECT_EQ(t, thread_join(threads[i], NULL), 0);
	}
	uint64_t n = ITEMS_PER_PRODUCER;
	EXPECT_EQ(t, ring.consumed_items, 2 * n);
	EXPECT_EQ(t, ring.consumed_sum, n * (n + 1) + 1000000 * n);
	EXPECT_EQ(t, ring.count, 0);
}

static struct completion started;
static struct semaphore tokens;

static int signal_and_give_tokens(void *arg)
{
	completion_signal(&started);
	for (int i = 0; i < 50; i++) {
		semaphore_up(&tokens);
		if (i % 4 == 0)
			sched_yield();
	}
	return 0;
}

static void completions_and_semaphores_wake_waiters(struct ktest *t)
{
	completion_init(&started, "started");
	semaphore_init(&tokens, 0, "tokens");
	EXPECT_EQ(t, semaphore_trydown(&tokens), -EAGAIN);
	struct thread *giver =
	    thread_create(signal_and_give_tokens, NULL, "giver", SCHED_PRIORITY_LOW);
	ASSERT_TRUE(t, giver);
	EXPECT_EQ(t, completion_wait(&started), 0);
	EXPECT_TRUE(t, completion_is_done(&started));
	for (int i = 0; i < 50; i++)
		EXPECT_EQ(t, semaphore_down(&tokens), 0);
	EXPECT_EQ(t, thread_join(giver, NULL), 0);
	EXPECT_EQ(t, tokens.count, 0);
	EXPECT_EQ(t, completion_wait_timeout(&started, NSEC_PER_MSEC), 0);
}

/* ---- Mutexes ------------------------------------------------------------ */

static struct mutex counter_mutex;
static volatile uint64_t mutex_counter;

static int increment_under_mutex(void *arg)
{
	for (int i = 0; i < 300; i++) {
		mutex_lock(&counter_mutex);
		uint64_t value = mutex_counter;
		if (i % 5 == 0)
			sched_yield(); /* let the others pile up on the mutex */
		mutex_counter = value + 1;
		mutex_assert_held(&counter_mutex);
		mutex_unlock(&counter_mutex);
	}
	return 0;
}

/* Runs count threads of fn (at two priorities) on a fresh counter_mutex;
 * the mutex must end free with nobody queued.  Returns the counter. */
static uint64_t count_under_mutex(struct ktest *t, thread_fn fn, void **args, int count)
{
	int priorities[8];
	for (int i = 0; i < count && i < 8; i++)
		priorities[i] = SCHED_PRIORITY_LOW + i % 2;
	mutex_init(&counter_mutex, "counter");
	mutex_counter = 0;
	EXPECT_EQ(t, run_threads(fn, args, priorities, count), 0);
	EXPECT_TRUE(t, mutex_is_free(&counter_mutex) && link_empty(&counter_mutex.waiters));
	return mutex_counter;
}

static void mutex_contention_gives_exact_total(struct ktest *t)
{
	void *args[8] = {0};
	EXPECT_EQ(t, count_under_mutex(t, increment_under_mutex, args, 8), 8 * 300);
}

/* Short holds with no yield, from threads on every CPU: releases on the
 * fast path (nobody marked) race with waiters marking the word and queueing,
 * and releases that find the mark hand over.  Every increment must count,
 * and the mutex must end free with nobody queued. */
static int increment_briefly_under_mutex(void *arg)
{
	for (int i = 0; i < 20000; i++) {
		mutex_lock(&counter_mutex);
		mutex_counter = mutex_counter + 1;
		mutex_unlock(&counter_mutex);
		if (i % 64 == 0 && mutex_trylock(&counter_mutex)) {
			mutex_counter = mutex_counter + 1;
			mutex_unlock(&counter_mutex);
			__atomic_fetch_add((uint64_t *)arg, 1, __ATOMIC_RELAXED);
		}
	}
	return 0;
}

static void mutex_fast_and_contended_paths_race(struct ktest *t)
{
	uint64_t tried = 0;
	void *args[6] = {&tried, &tried, &tried, &tried, &tried, &tried};
	uint64_t total = count_under_mutex(t, increment_briefly_under_mutex, args, 6);
	EXPECT_EQ(t, total, 6 * 20000 + tried);
}

static struct mutex order_mutex;
static volatile int order_log[3];
static volatile int order_next;

static int lock_and_log(void *arg)
{
	mutex_lock(&order_mutex);
	order_log[order_next++] = (int)(uintptr_t)arg;
	mutex_unlock(&order_mutex);
	return 0;
}

static unsigned mutex_waiter_count(struct mutex *m)
{
	unsigned n = 0;
	uint64_t flags = spin_lock_irqsave(&m->lock);
	for (struct sched_link *l = m->waiters.next; l != &m->waiters; l = l->next)
		n++;
	spin_unlock_irqrestore(&m->lock, flags);
	return n;
}

static void mutex_waiters_get_it_by_priority_body(struct ktest *t)
{
	struct thread *threads[3];
	static const int priorities[3] = {SCHED_PRIORITY_LOW, SCHED_PRIORITY_HIGH,
					  SCHED_PRIORITY_LOW};
	mutex_init(&order_mutex, "order");
	order_next = 0;
	mutex_lock(&order_mutex);
	EXPECT_FALSE(t, mutex_trylock(&order_mutex)); /* not even for its owner */
	for (int i = 0; i < 3; i++)
		threads[i] = thread_create(lock_and_log, (void *)(uintptr_t)(i + 1), "locker",
					   priorities[i]);
	for (int i = 0; i < 1000 && mutex_waiter_count(&order_mutex) < 3; i++)
		sched_sleep_ns(NSEC_PER_MSEC);
	EXPECT_EQ(t, mutex_waiter_count(&order_mutex), 3);
	mutex_unlock(&order_mutex);
	for (int i = 0; i < 3; i++) {
		ASSERT_TRUE(t, threads[i]);
		EXPECT_EQ(t, thread_join(threads[i], NULL), 0);
	}
	EXPECT_EQ(t, order_log[0], 2); /* high first, then the two lows in arrival order */
	EXPECT_EQ(t, order_log[1], 1);
	EXPECT_EQ(t, order_log[2], 3);
	EXPECT_TRUE(t, mutex_trylock(&order_mutex));
	EXPECT_TRUE(t, mutex_held_by_me(&order_mutex));
	mutex_unlock(&order_mutex);
	EXPECT_FALSE(t, mutex_held_by_me(&order_mutex));
}
ONE_CPU_CASE(mutex_waiters_get_it_by_priority)

/* ---- Reclamation -------------------------------------------------------- */

static int return_argument(void *arg)
{
	return (int)(uintptr_t)arg;
}

static int create_and_join_round(int count)
{
	void *args[16];
	int priorities[16];
	for (int i = 0; i < count; i++) {
		args[i] = (void *)(uintptr_t)i;
		priorities[i] = SCHED_PRIORITY_NORMAL;
	}
	return run_threads(return_argument, args, priorities, count);
}

static void join_reclaims_threads_and_stacks(struct ktest *t)
{
	/* A first round lets caches and page tables grow to what a round needs;
	 * the second must then give back exactly what it took. */
	EXPECT_EQ(t, create_and_join_round(16), 120);
	unsigned threads_before = thread_count();
	uint64_t frames_before = pmm_count_free();
	EXPECT_EQ(t, create_and_join_round(16), 120);
	EXPECT_EQ(t, thread_count(), threads_before);
	EXPECT_EQ(t, pmm_count_free(), frames_before);
}

static void detached_threads_reclaim_themselves(struct ktest *t)
{
	unsigned threads_before = thread_count();
	struct thread *threads[8];
	for (int i = 0; i < 8; i++) {
		threads[i] = thread_create(return_argument, NULL, "detached", SCHED_PRIORITY_LOW);
		ASSERT_TRUE(t, threads[i]);
		EXPECT_EQ(t, thread_detach(threads[i]), 0);
		EXPECT_EQ(t, thread_join(threads[i], NULL), -EINVAL);
	}
	for (int i = 0; i < 1000 && thread_count() != threads_before; i++)
		sched_sleep_ns(NSEC_PER_MSEC);
	EXPECT_EQ(t, thread_count(), threads_before);
}

static void join_refuses_bad_targets(struct ktest *t)
{
	EXPECT_EQ(t, thread_join(thread_current(), NULL), -EDEADLK);
	EXPECT_EQ(t, thread_join(this_cpu()->idle_thread, NULL), -EINVAL);
	EXPECT_TRUE(t, thread_create(NULL, NULL, "bad", SCHED_PRIORITY_NORMAL) == NULL);
	EXPECT_TRUE(t, thread_create(return_argument, NULL, "bad", SCHED_PRIORITY_MAX + 1) == NULL);
	EXPECT_TRUE(t, thread_create(return_argument, NULL, "bad", -1) == NULL);
}

/* ---- FPU isolation ------------------------------------------------------ */

struct fpu_case {
	uint32_t start[4] __attribute__((aligned(16)));
	uint32_t step[4] __attribute__((aligned(16)));
	uint32_t expected[4] __attribute__((aligned(16)));
	uint32_t result[4] __attribute__((aligned(16)));
	uint32_t mxcsr_in;
	uint32_t mxcsr_seen;
};

/* Keeps a running sum in XMM0 across 100 yields; another thread does the same
 * with other numbers, so any leak between them shows in the result. */
static int add_vectors_across_switches(void *arg)
{
	struct fpu_case *c = arg;
	uint32_t mxcsr = 0;
	__asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
	c->mxcsr_seen = mxcsr;
	__asm__ volatile("ldmxcsr %0" : : "m"(c->mxcsr_in));
	__asm__ volatile("movaps %0, %%xmm0; movaps %1, %%xmm1" : : "m"(c->start), "m"(c->step));
	for (int i = 0; i < 100; i++) {
		__asm__ volatile("addps %%xmm1, %%xmm0" : : : "memory");
		sched_yield();
	}
	__asm__ volatile("movaps %%xmm0, %0" : "=m"(c->result));
	__asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
	return mxcsr == c->mxcsr_in ? 0 : 1;
}

static void fpu_state_stays_with_its_thread(struct ktest *t)
{
	static struct fpu_case cases[2] = {
	    {.start = {0x3f800000, 0x40000000, 0x40400000, 0x40800000},    /* 1 2 3 4 */
	     .step = {0x3f800000, 0x3f800000, 0x3f800000, 0x3f800000},     /* +1 */
	     .expected = {0x42ca0000, 0x42cc0000, 0x42ce0000, 0x42d00000}, /* 101..104 */
	     .mxcsr_in = 0x7f80},                                          /* round toward zero */
	    {.start = {0x41200000, 0x41a00000, 0x41f00000, 0x42200000},    /* 10 20 30 40 */
	     .step = {0x3f000000, 0x3f000000, 0x3f000000, 0x3f000000},     /* +0.5 */
	     .expected = {0x42700000, 0x428c0000, 0x42a00000, 0x42b40000}, /* 60..90 */
	     .mxcsr_in = FPU_MXCSR_DEFAULT},
	};
	void *args[2] = {&cases[0], &cases[1]};
	int priorities[2] = {SCHED_PRIORITY_NORMAL, SCHED_PRIORITY_NORMAL};

	EXPECT_EQ(t, run_threads(add_vectors_across_switches, args, priorities, 2), 0);
	for (int c = 0; c < 2; c++) {
		EXPECT_EQ(t, cases[c].mxcsr_seen, FPU_MXCSR_DEFAULT); /* clean start */
		for (int i = 0; i < 4; i++)
			EXPECT_EQ(t, cases[c].result[i], cases[c].expected[i]);
	}
}

/* ---- Accounting --------------------------------------------------------- */

static void switches_and_time_are_accounted_body(struct ktest *t)
{
	struct thread_stats before, after;
	uint64_t cpu_switches = this_cpu()->stats.context_switches;
	thread_get_stats(thread_current(), &before);
	struct thread *other = thread_create(return_argument, NULL, "other", SCHED_PRIORITY_NORMAL);
	ASSERT_TRUE(t, other);
	sched_yield(); /* other runs, ends, we come back */
	EXPECT_EQ(t, thread_join(other, NULL), 0);
	thread_get_stats(thread_current(), &after);
	EXPECT_TRUE(t, after.switches > before.switches);
	EXPECT_TRUE(t, this_cpu()->stats.context_switches >= cpu_switches + 2);
	EXPECT_TRUE(t, after.run_ns >= before.run_ns);
	EXPECT_TRUE(t, this_cpu()->stats.busy_ns > 0);
	EXPECT_EQ(t, thread_state(thread_current()), THREAD_RUNNING);
	EXPECT_EQ(t, thread_priority(thread_current()), SCHED_PRIORITY_NORMAL);
}
ONE_CPU_CASE(switches_and_time_are_accounted)

/* Two threads on one CPU that hand it to each other (sched_handoff), as a
 * caller and its receiver in IPC do: sequence numbers record who ran. */
struct handoff_pair {
	struct spinlock lock;
	struct thread *first;   /* the test's thread */
	struct thread *partner; /* blocked by hand, then handed the CPU */
	volatile bool partner_waiting;
	volatile bool first_woken;
	volatile int sequence;
	volatile int partner_ran;     /* sequence when the partner ran again */
	volatile int bystander_ran;   /* sequence when a thread queued before it ran */
	volatile bool partner_handed; /* its sched_resumed_by_handoff() then */
};

static int handoff_bystander(void *arg)
{
	struct handoff_pair *p = arg;
	uint64_t flags = spin_lock_irqsave(&p->lock);
	p->bystander_ran = ++p->sequence;
	spin_unlock_irqrestore(&p->lock, flags);
	return 0;
}

static int handoff_partner(void *arg)
{
	struct handoff_pair *p = arg;
	uint64_t flags = spin_lock_irqsave(&p->lock);
	p->partner_waiting = true;
	int seen = p->sequence;
	sched_prepare_block();
	spin_unlock_irqrestore(&p->lock, flags);
	for (;;) { /* until the first thread has moved the sequence: spurious wake-ups */
		sched_block(0);
		p->partner_handed = sched_resumed_by_handoff();
		flags = spin_lock_irqsave(&p->lock);
		if (p->sequence != seen)
			break;
		sched_prepare_block();
		spin_unlock_irqrestore(&p->lock, flags);
	}
	p->partner_ran = ++p->sequence;
	p->first_woken = true;
	sched_handoff(p->first, &p->lock, flags, 0); /* and back, the same way */
	return 0;
}

/* Is a thread handed the CPU the very next to run there, before a thread of
 * its priority that was ready first, and can it hand the CPU straight back?
 * (Run by a thread of SCHED_PRIORITY_MAX, see below.) */
static void handoff_scenario(struct ktest *t)
{
	struct handoff_pair p = {.lock = SPINLOCK_INIT("handoff"), .first = thread_current()};
	p.partner = thread_create(handoff_partner, &p, "handoff", SCHED_PRIORITY_MAX);
	ASSERT_TRUE(t, p.partner != NULL);
	while (!p.partner_waiting || thread_state(p.partner) != THREAD_BLOCKED)
		sched_yield();
	ASSERT_TRUE(t, p.partner_waiting);
	struct thread *bystander =
	    thread_create(handoff_bystander, &p, "bystander", SCHED_PRIORITY_MAX);
	ASSERT_TRUE(t, bystander != NULL); /* ready on this CPU, not running */
	uint64_t flags = spin_lock_irqsave(&p.lock);
	int before = ++p.sequence;
	sched_prepare_block();
	sched_handoff(p.partner, &p.lock, flags, 0);
	while (!p.first_woken) { /* spurious wake-ups */
		flags = spin_lock_irqsave(&p.lock);
		if (!p.first_woken)
			sched_prepare_block();
		spin_unlock_irqrestore(&p.lock, flags);
		sched_block(0);
	}
	EXPECT_TRUE(t, p.first_woken);
	EXPECT_EQ(t, p.partner_ran, before + 1);
	EXPECT_TRUE(t, p.partner_handed); /* it was switched to by the hand-off */
	thread_join(p.partner, NULL);
	thread_join(bystander, NULL);
	/* A tick may end this thread's slice between creating the bystander
	 * and the hand-off, and run the bystander first: then it was not
	 * waiting when the CPU was handed over, and there is nothing to see. */
	if (p.bystander_ran > before)
		EXPECT_TRUE(t, p.bystander_ran > p.partner_ran);
	/* A block ended any other way (here a wake-up before it switched away)
	 * is not a hand-off, whatever the last one was. */
	sched_prepare_block();
	sched_wakeup(thread_current());
	sched_block(0);
	EXPECT_FALSE(t, sched_resumed_by_handoff());
}

static int run_handoff_scenario(void *t)
{
	handoff_scenario(t);
	return 0;
}

/* A hand-off is direct only while nothing of higher priority is ready on
 * the CPU (else that runs first and the handed thread queues at its level,
 * behind the bystander); kernel threads woken meanwhile (a NIC's worker at
 * SCHED_PRIORITY_HIGH, a timer's) made this case fail on a loaded host.
 * No thread of the system runs at SCHED_PRIORITY_MAX: the scenario does,
 * pinned here like the threads it makes. */
static void handoff_runs_the_blocked_thread_next_body(struct ktest *t)
{
	struct thread *runner =
	    thread_create(run_handoff_scenario, t, "handoff-test", SCHED_PRIORITY_MAX);
	ASSERT_TRUE(t, runner != NULL);
	EXPECT_EQ(t, thread_join(runner, NULL), 0);
}
ONE_CPU_CASE(handoff_runs_the_blocked_thread_next)

/* A hand-off given a clock reading older than the CPU's last charge (the
 * IPC reads the clock before it takes its lock, and a tick may come
 * between) charges nothing backwards: neither thread's run time nor the
 * CPU's busy time grows by more than the time that passed, and the switch
 * still went the fast way.  (Run at SCHED_PRIORITY_MAX, as above.) */
static void stale_clock_scenario(struct ktest *t)
{
	struct handoff_pair p = {.lock = SPINLOCK_INIT("handoff"), .first = thread_current()};
	p.partner = thread_create(handoff_partner, &p, "handoff", SCHED_PRIORITY_MAX);
	ASSERT_TRUE(t, p.partner != NULL);
	while (!p.partner_waiting || thread_state(p.partner) != THREAD_BLOCKED)
		sched_yield();
	struct thread_stats before, after;
	struct cpu_stats cpu_before, cpu_after;
	unsigned cpu = this_cpu_id();
	/* Everything is charged up to the CPU's last charge: the counts grow
	 * from there, by at most the time that passes from there. */
	uint64_t irq = irq_save();
	uint64_t start = rq_of_cpu(cpu)->last_account_ns;
	thread_get_stats(thread_current(), &before);
	sched_get_cpu_stats(cpu, &cpu_before);
	irq_restore(irq);
	uint64_t flags = spin_lock_irqsave(&p.lock);
	++p.sequence;
	sched_prepare_block();
	sched_handoff_at(p.partner, &p.lock, flags, 0, 1); /* a reading from boot */
	while (!p.first_woken) {                           /* spurious wake-ups */
		flags = spin_lock_irqsave(&p.lock);
		if (!p.first_woken)
			sched_prepare_block();
		spin_unlock_irqrestore(&p.lock, flags);
		sched_block(0);
	}
	thread_get_stats(thread_current(), &after);
	sched_get_cpu_stats(cpu, &cpu_after);
	uint64_t elapsed = clock_ns() - start;
	EXPECT_TRUE(t, after.run_ns - before.run_ns <= elapsed);
	EXPECT_TRUE(t, cpu_after.busy_ns - cpu_before.busy_ns <= elapsed);
	EXPECT_TRUE(t, cpu_after.direct_switches > cpu_before.direct_switches);
	EXPECT_TRUE(t, p.partner_handed);
	thread_join(p.partner, NULL);
}

static int run_stale_clock_scenario(void *t)
{
	stale_clock_scenario(t);
	return 0;
}

static void handoff_never_charges_time_backwards_body(struct ktest *t)
{
	struct thread *runner =
	    thread_create(run_stale_clock_scenario, t, "handoff-clock", SCHED_PRIORITY_MAX);
	ASSERT_TRUE(t, runner != NULL);
	EXPECT_EQ(t, thread_join(runner, NULL), 0);
}
ONE_CPU_CASE(handoff_never_charges_time_backwards)

/* ---- A hand-off's deadline ends the wait of a partner that never answers - */

/* A chain of hand-offs on one CPU: first hands to middle, middle to last,
 * both with deadlines, and last never answers.  A hand-off's deadline waits
 * in its queue's parking place, and the one parked before moves to the
 * sorted list: middle is parked, first is listed, and the tick must end
 * both waits, not handed (the wake-up is the deadline's), not before the
 * deadline. */
struct handoff_chain {
	struct spinlock lock;
	struct thread *middle, *last;
	volatile bool middle_waiting, last_waiting, handed_on, released;
	volatile bool middle_done, middle_handed;
	volatile uint64_t middle_deadline, middle_woke_at;
};

#define CHAIN_DEADLINE_NS (2 * NSEC_PER_MSEC)
#define CHAIN_GIVE_UP_NS  (10 * NSEC_PER_SEC) /* only against a hang */

/* Blocks under c->lock until flag is set (spurious wake-ups absorbed);
 * returns with the lock held. */
static uint64_t chain_block_until(struct handoff_chain *c, volatile bool *waiting,
				  volatile bool *flag)
{
	uint64_t flags = spin_lock_irqsave(&c->lock);
	*waiting = true;
	while (!*flag) {
		sched_prepare_block();
		spin_unlock_irqrestore(&c->lock, flags);
		sched_block(0);
		flags = spin_lock_irqsave(&c->lock);
	}
	return flags;
}

static int chain_last(void *arg)
{
	struct handoff_chain *c = arg;
	uint64_t flags = chain_block_until(c, &c->last_waiting, &c->released);
	spin_unlock_irqrestore(&c->lock, flags);
	return 0;
}

static int chain_middle(void *arg)
{
	struct handoff_chain *c = arg;
	uint64_t flags = chain_block_until(c, &c->middle_waiting, &c->handed_on);
	c->middle_deadline = clock_ns() + CHAIN_DEADLINE_NS;
	sched_prepare_block();
	c->middle_handed = sched_handoff(c->last, &c->lock, flags, c->middle_deadline);
	c->middle_woke_at = clock_ns();
	c->middle_done = true;
	return 0;
}

static void handoff_chain_scenario(struct ktest *t)
{
	struct handoff_chain c = {.lock = SPINLOCK_INIT("handoff-chain")};
	c.last = thread_create(chain_last, &c, "chain-last", SCHED_PRIORITY_MAX);
	c.middle = thread_create(chain_middle, &c, "chain-middle", SCHED_PRIORITY_MAX);
	ASSERT_TRUE(t, c.last != NULL && c.middle != NULL);
	while (!c.last_waiting || !c.middle_waiting || thread_state(c.last) != THREAD_BLOCKED ||
	       thread_state(c.middle) != THREAD_BLOCKED)
		sched_yield();
	uint64_t flags = spin_lock_irqsave(&c.lock);
	c.handed_on = true;
	uint64_t deadline = clock_ns() + CHAIN_DEADLINE_NS;
	sched_prepare_block();
	bool handed = sched_handoff(c.middle, &c.lock, flags, deadline);
	EXPECT_TRUE(t, clock_ns() >= deadline);
	EXPECT_FALSE(t, handed);
	uint64_t give_up = clock_ns() + CHAIN_GIVE_UP_NS;
	while (!c.middle_done && clock_ns() < give_up)
		sched_yield();
	EXPECT_TRUE(t, c.middle_done); /* the parked one was woken too */
	if (c.middle_done) {
		EXPECT_TRUE(t, c.middle_woke_at >= c.middle_deadline);
		EXPECT_FALSE(t, c.middle_handed);
	}
	flags = spin_lock_irqsave(&c.lock);
	c.released = true;
	spin_unlock_irqrestore(&c.lock, flags);
	sched_wakeup(c.last);
	sched_wakeup(c.middle); /* (only if its deadline was missed) */
	thread_join(c.last, NULL);
	thread_join(c.middle, NULL);
}

static int run_handoff_chain_scenario(void *t)
{
	handoff_chain_scenario(t);
	return 0;
}

static void handoff_deadlines_end_a_chain_nobody_answers_body(struct ktest *t)
{
	struct thread *runner =
	    thread_create(run_handoff_chain_scenario, t, "handoff-chain", SCHED_PRIORITY_MAX);
	ASSERT_TRUE(t, runner != NULL);
	EXPECT_EQ(t, thread_join(runner, NULL), 0);
}
ONE_CPU_CASE(handoff_deadlines_end_a_chain_nobody_answers)

/* ---- A move follows an affinity changed while it chose where to ---------- */

/* The thread whose move (sched_push_thread) gets its affinity set to
 * affinity_meanwhile, once, between choosing a CPU and locking it. */
static struct thread *volatile push_raced;
static uint64_t affinity_meanwhile;

void sched_test_push_chosen(struct thread *t, unsigned target)
{
	(void)target;
	if (t != push_raced)
		return;
	push_raced = NULL;
	thread_set_affinity(t, affinity_meanwhile);
}

static int note_cpu(void *arg)
{
	__atomic_store_n((unsigned *)arg, this_cpu_id(), __ATOMIC_RELAXED);
	return 0;
}

/* thread_set_affinity moves a queued thread off a CPU it may no longer use;
 * a second change that lands after that move chose its CPU and before it
 * took the locks wins: the thread runs where the last mask says, not on the
 * CPU the first one chose (it ran there until it next switched out). */
static void a_move_follows_an_affinity_changed_meanwhile_body(struct ktest *t)
{
	if (smp_online_count() < 2)
		return ktest_skip(t, "one CPU");
	unsigned here = this_cpu_id(), ran_on = ~0u;
	/* Pinned here (the case's pin) below this thread's priority: queued. */
	struct thread *moved = thread_create(note_cpu, &ran_on, "moved", SCHED_PRIORITY_LOW);
	ASSERT_TRUE(t, moved != NULL);
	affinity_meanwhile = SMP_CPU_BIT(here);
	push_raced = moved;
	EXPECT_EQ(t, thread_set_affinity(moved, smp_online_mask() & ~SMP_CPU_BIT(here)), 0);
	EXPECT_TRUE(t, push_raced == NULL); /* the change came in that window */
	EXPECT_EQ(t, thread_join(moved, NULL), 0);
	EXPECT_EQ(t, ran_on, here);
}
ONE_CPU_CASE(a_move_follows_an_affinity_changed_meanwhile)

/* ---- A thread ends elsewhere right after the switch away from it -------- */

/* The thread whose switch-out on here_cpu is raced (the sched suite's
 * sched_test_switch_finished): once it blocks at step 2, the thread that
 * runs after it there moves it to other_cpu, wakes it and waits until it has
 * ended; other_cpu's next thread holds back its reaping until the case has
 * looked at it (exit_looked). */
struct thread *volatile sched_test_watched;
static unsigned here_cpu, other_cpu;
static volatile int exit_step;
static volatile bool exit_raced, exit_looked;
static struct waitq exit_gate = WAITQ_INIT(exit_gate, "test.exit-gate");

static void wake_and_move_away(struct thread *prev)
{
	exit_raced = true;
	thread_set_affinity(prev, SMP_CPU_BIT(other_cpu));
	exit_step = 3;
	waitq_wake_all(&exit_gate);
	while (thread_state(prev) != THREAD_EXITING && thread_state(prev) != THREAD_DEAD)
		cpu_relax();
}

void sched_test_switch_finished(struct thread *prev)
{
	if (!prev || prev != sched_test_watched)
		return;
	unsigned cpu = this_cpu_id();
	if (cpu == here_cpu && !exit_raced && exit_step == 2 && prev->state == THREAD_BLOCKED)
		wake_and_move_away(prev);
	else if (cpu == other_cpu && prev->state == THREAD_EXITING)
		while (!exit_looked)
			cpu_relax();
}

static bool exit_step_reached(void *arg)
{
	return exit_step >= (int)(uintptr_t)arg;
}

/* Blocks twice on here_cpu, then ends wherever it was woken. */
static int block_twice_then_end(void *arg)
{
	(void)arg;
	waitq_wait(&exit_gate, exit_step_reached, (void *)1);
	exit_step = 2;
	waitq_wait(&exit_gate, exit_step_reached, (void *)3);
	return 0;
}

/* A thread switched out blocked may be woken, run on another CPU and end
 * there as soon as its run queue's lock is let go: the thread that runs
 * after it here has to know whether it was exiting from before then.  Read
 * after, it found the thread ending elsewhere exiting and reaped it too: two
 * CPUs freed one stack (kstack's 'phys >= 0' in the reaper), or one freed it
 * under a thread still on it.  Here the CPU it ended on holds its reaping
 * back, so the thread stays THREAD_EXITING until the case has looked unless
 * this CPU reaped it. */
static void a_thread_ending_elsewhere_is_reaped_there_only_body(struct ktest *t)
{
	if (smp_online_count() < 2)
		return ktest_skip(t, "one CPU");
	here_cpu = this_cpu_id();
	other_cpu = (unsigned)__builtin_ctzll(smp_online_mask() & ~SMP_CPU_BIT(here_cpu));
	exit_step = 0;
	exit_raced = exit_looked = false;
	/* Above this thread's priority and pinned here (the case's pin): it
	 * runs at once and blocks at step 1. */
	struct thread *ender =
	    thread_create(block_twice_then_end, NULL, "ender", SCHED_PRIORITY_HIGH);
	ASSERT_TRUE(t, ender != NULL);
	sched_test_watched = ender;
	exit_step = 1;
	waitq_wake_all(&exit_gate);
	while (!exit_raced)
		sched_yield();
	EXPECT_EQ(t, thread_state(ender), THREAD_EXITING);
	exit_looked = true;
	sched_test_watched = NULL;
	EXPECT_EQ(t, thread_join(ender, NULL), 0);
}
ONE_CPU_CASE(a_thread_ending_elsewhere_is_reaped_there_only)

KTEST_SUITE(sched, KTEST_CASE(threads_of_every_priority_run_and_finish),
	    KTEST_CASE(higher_priority_runs_before_create_returns),
	    KTEST_CASE(woken_high_priority_preempts_busy_low),
	    KTEST_CASE(equal_priorities_share_the_cpu), KTEST_CASE(sleep_lasts_at_least_its_time),
	    KTEST_CASE(a_sleep_shorter_than_a_tick_ends_at_its_deadline),
	    KTEST_CASE(wait_timeout_reports_which_came_first),
	    KTEST_CASE(wake_ready_wakes_only_the_waiters_whose_condition_holds),
	    KTEST_CASE(a_timeout_past_the_clock_waits_for_the_condition),
	    KTEST_CASE(producers_and_consumers_lose_nothing),
	    KTEST_CASE(completions_and_semaphores_wake_waiters),
	    KTEST_CASE(mutex_contention_gives_exact_total),
	    KTEST_CASE(mutex_fast_and_contended_paths_race),
	    KTEST_CASE(mutex_waiters_get_it_by_priority),
	    KTEST_CASE(handoff_runs_the_blocked_thread_next),
	    KTEST_CASE(handoff_never_charges_time_backwards),
	    KTEST_CASE(handoff_deadlines_end_a_chain_nobody_answers),
	    KTEST_CASE(join_reclaims_threads_and_stacks),
	    KTEST_CASE(detached_threads_reclaim_themselves), KTEST_CASE(join_refuses_bad_targets),
	    KTEST_CASE(fpu_state_stays_with_its_thread),
	    KTEST_CASE(switches_and_time_are_accounted),
	    KTEST_CASE(a_move_follows_an_affinity_changed_meanwhile),
	    KTEST_CASE(a_thread_ending_elsewhere_is_reaped_there_only));
