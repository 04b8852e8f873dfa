/*
 * The lattrack_kinds suite: each tracker on join points counts what this
 * test makes happen, and nothing is timed.  Every tracker runs with a
 * threshold of 0, so every event that goes out reaches the callback; the
 * callback counts only the reports whose key is the test's own (a thread,
 * a fake NIC, a fake disk's request), so other activity on the machine
 * does not change the counts.  The fake NIC and disk are not registered:
 * the test calls their join points (nic.irq, nic.poll, block.submit) itself.
 */
#include "lattrack/internal.h"

#include "block/block.h"
#include "console/console.h"
#include "joinpoint/joinpoint.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "net/nic.h"
#include "panic/ksyms.h"
#include "sched/sched.h"
#include "syscall/syscall.h"
#include "uapi/syscall_numbers.h"

#define MS     (1000ULL * 1000)
#define ROUNDS 5

long sys_sched_yield(void); /* kernel/syscall/sys_time.c: a kernel thread may make it */

static struct {
	uint64_t key; /* the key counted (0: every report) */
	uint64_t matched;
	uint64_t in_interrupt;
	unsigned last_out_id;
} kind_seen;

static void count_report(const struct lattrack_report *report, void *context)
{
	uint64_t key = 0;
	memcpy(&key, report->key, report->key_length < 8 ? report->key_length : 8);
	if (kind_seen.key && key != __atomic_load_n(&kind_seen.key, __ATOMIC_RELAXED))
		return;
	__atomic_fetch_add(&kind_seen.matched, 1, __ATOMIC_RELAXED);
	kind_seen.last_out_id = report->out_id;
	if (this_cpu()->irq_depth > 0)
		__atomic_fetch_add(&kind_seen.in_interrupt, 1, __ATOMIC_RELAXED);
}

static int attach(struct ktest *t, const char *name, const char *kind, uint64_t key)
{
	memset(&kind_seen, 0, sizeof kind_seen);
	__atomic_store_n(&kind_seen.key, key, __ATOMIC_RELEASE);
	int error = lattrack_attach_kind_callback(name, kind, 0, 0, count_report, NULL);
	EXPECT_EQ(t, error, 0);
	return error;
}

static void counts_of(const char *name, struct lattrack_counts *counts)
{
	struct lattrack *tracker = lattrack_get(name);
	memset(counts, 0, sizeof *counts);
	if (tracker) {
		lattrack_get_counts(tracker, counts);
		lattrack_put(tracker);
	}
}

/* syscall:sched_yield without a timeout times each call of this thread on
 * the system-call path (syscall_dispatch), with the join point's index as
 * the out id; with a timeout, on the join points (the call itself, as the
 * kernel makes it, is seen too); "syscall:" alone and a call that does not
 * exist name nothing. */
static void syscall_tracker_counts_each_call(struct ktest *t)
{
	uint64_t self = (uint64_t)(uintptr_t)thread_current();
	unsigned index = jp_index(jp_find("sys.sched_yield"));
	const uint64_t args[6] = {0};
	if (attach(t, "t-sys", "syscall:sched_yield", self))
		return;
	for (int i = 0; i < ROUNDS; i++)
		EXPECT_EQ(t, syscall_dispatch(__NR_sched_yield, args), 0);
	struct lattrack_counts c;
	counts_of("t-sys", &c);
	EXPECT_EQ(t, kind_seen.matched, ROUNDS);
	EXPECT_EQ(t, kind_seen.last_out_id, index);
	EXPECT_TRUE(t, c.in >= ROUNDS); /* a process may yield too */
	EXPECT_EQ(t, c.in, c.out);
	EXPECT_EQ(t, c.in_flight, 0);
	EXPECT_EQ(t, lattrack_detach("t-sys"), 0);
	memset(&kind_seen, 0, sizeof kind_seen);
	__atomic_store_n(&kind_seen.key, self, __ATOMIC_RELEASE);
	EXPECT_EQ(t,
		  lattrack_attach_kind_callback("t-sys", "syscall:sched_yield", 0, 1000 * MS,
						count_report, NULL),
		  0);
	for (int i = 0; i < ROUNDS; i++) {
		sys_sched_yield();
		EXPECT_EQ(t, syscall_dispatch(__NR_sched_yield, args), 0);
	}
	EXPECT_EQ(t, kind_seen.matched, 2 * ROUNDS);
	EXPECT_EQ(t, kind_seen.last_out_id, index);
	EXPECT_EQ(t, lattrack_detach("t-sys"), 0);
	EXPECT_EQ(t, lattrack_attach_kind("t-sys", "syscall:", 0, 0), -ENOENT);
	EXPECT_EQ(t, lattrack_attach_kind("t-sys", "syscall:nosuchcall", 0, 0), -ENOENT);
	EXPECT_EQ(t, lattrack_attach_kind("t-sys", "wakeup:x", 0, 0), -ENOENT);
	EXPECT_TRUE(t, lattrack_get("t-sys") == NULL);
}

static uint64_t quiet_calls(void)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < cpu_count; i++)
		sum += __atomic_load_n(&cpus[i].syscall_quiet_spans, __ATOMIC_RELAXED);
	return sum;
}

/* An "every call" syscall tracker without a timeout counts the calls under
 * its threshold in line in the dispatcher (the quiet path): in and out grow
 * by each, nothing is reported.  A "syscall:NAME" tracker beside it still
 * sees each of its calls (they leave the quiet path), which the first
 * counts too; and once the first's threshold is 0, each call is reported. */
static void syscall_quiet_calls_follow_the_thresholds(struct ktest *t)
{
	uint64_t self = (uint64_t)(uintptr_t)thread_current();
	const uint64_t args[6] = {0};
	struct lattrack_counts before, after;
	memset(&kind_seen, 0, sizeof kind_seen);
	__atomic_store_n(&kind_seen.key, self, __ATOMIC_RELEASE);
	ASSERT_EQ(t,
		  lattrack_attach_kind_callback("t-quiet", "syscall", 3600 * 1000 * MS, 0,
						count_report, NULL),
		  0);
	counts_of("t-quiet", &before);
	uint64_t quiet_before = quiet_calls();
	for (int i = 0; i < ROUNDS; i++)
		(void)syscall_dispatch(__NR_getuid, args);
	EXPECT_TRUE(t, quiet_calls() - quiet_before >= ROUNDS);
	counts_of("t-quiet", &after);
	EXPECT_TRUE(t, after.in - before.in >= ROUNDS);
	EXPECT_EQ(t, after.in, after.out);
	EXPECT_EQ(t, after.in_flight, 0);
	EXPECT_EQ(t, after.over, 0);
	EXPECT_EQ(t, kind_seen.matched, 0);

	EXPECT_EQ(t,
		  lattrack_attach_kind_callback("t-named", "syscall:sched_yield", 0, 0,
						count_report, NULL),
		  0);
	counts_of("t-quiet", &before);
	for (int i = 0; i < ROUNDS; i++)
		EXPECT_EQ(t, syscall_dispatch(__NR_sched_yield, args), 0);
	EXPECT_EQ(t, kind_seen.matched, ROUNDS);
	counts_of("t-quiet", &after);
	EXPECT_TRUE(t, after.in - before.in >= ROUNDS);
	EXPECT_EQ(t, after.over, 0);
	EXPECT_EQ(t, lattrack_detach("t-named"), 0);

	struct lattrack *tracker = lattrack_get("t-quiet");
	ASSERT_TRUE(t, tracker != NULL);
	EXPECT_EQ(t, lattrack_set_threshold_ns(tracker, 0), 0);
	kind_seen.matched = 0;
	for (int i = 0; i < ROUNDS; i++)
		(void)syscall_dispatch(__NR_getuid, args);
	EXPECT_EQ(t, kind_seen.matched, ROUNDS);
	lattrack_put(tracker);
	EXPECT_EQ(t, lattrack_detach("t-quiet"), 0);
}

/* Sleeps ROUNDS times once *go is set (after the test has named it the
 * key: a sleep that ended before would not count). */
static int sleeper(void *arg)
{
	volatile bool *go = arg;
	while (!__atomic_load_n(go, __ATOMIC_ACQUIRE))
		sched_yield();
	for (int i = 0; i < ROUNDS; i++)
		sched_sleep_ns(MS);
	return 0;
}

/* offcpu: each sleep takes the thread off its CPU and the switch back ends
 * it; preemption may add more, never fewer. */
static void offcpu_tracker_sees_each_sleep(struct ktest *t)
{
	if (attach(t, "t-off", "offcpu", 0))
		return;
	static volatile bool go;
	go = false;
	struct thread *thread =
	    thread_create(sleeper, (void *)&go, "offcpu-sleeper", SCHED_PRIORITY_NORMAL);
	ASSERT_TRUE(t, thread != NULL);
	memset(&kind_seen, 0, sizeof kind_seen); /* reports of other threads so far: not counted */
	__atomic_store_n(&kind_seen.key, (uint64_t)(uintptr_t)thread, __ATOMIC_RELEASE);
	__atomic_store_n(&go, true, __ATOMIC_RELEASE);
	thread_join(thread, NULL);
	EXPECT_TRUE(t, kind_seen.matched >= ROUNDS);
	/* its last switch off the CPU put nothing in for a thread made at its
	 * address later to end */
	struct lattrack *tracker = lattrack_get("t-off");
	uint64_t gone = (uint64_t)(uintptr_t)thread;
	ASSERT_TRUE(t, tracker != NULL);
	EXPECT_EQ(t, lattrack_event_out(tracker, &gone, sizeof gone, 0), -ENOENT);
	lattrack_put(tracker);
	struct lattrack_counts c;
	counts_of("t-off", &c);
	EXPECT_EQ(t, c.in, c.out + c.unique + c.gc + c.in_flight);
	EXPECT_EQ(t, lattrack_detach("t-off"), 0);
}

/* ---- offcpu's waker ------------------------------------------------------- */

static struct {
	struct waitq queue;
	int round;   /* the waker's: the sleeper waits for it to pass its own */
	int waiting; /* the sleeper's: the round it waits for now */
	char waker_name[16];
	uint64_t named;       /* reports naming the waker thread */
	uint64_t where;       /* ... whose kernel frames hold wake_the_sleeper */
	uint64_t wrong_waker; /* reports naming another waker */
} woken;

static bool round_passed(void *arg)
{
	return __atomic_load_n(&woken.round, __ATOMIC_ACQUIRE) >= (int)(uintptr_t)arg;
}

static int waited_sleeper(void *arg)
{
	for (int i = 1; i <= ROUNDS; i++) {
		__atomic_store_n(&woken.waiting, i, __ATOMIC_RELEASE);
		waitq_wait(&woken.queue, round_passed, (void *)(uintptr_t)i);
	}
	return 0;
}

/* The wake-up the reports must name: its frame is looked for by name. */
__attribute__((noinline)) static void wake_the_sleeper(void)
{
	__atomic_add_fetch(&woken.round, 1, __ATOMIC_RELEASE);
	waitq_wake_all(&woken.queue);
	__asm__ volatile("" ::: "memory");
}

static bool frames_hold(const struct lattrack_report *report, const char *function)
{
	for (unsigned i = 0; i < report->stack_count; i++) {
		uint64_t offset;
		const char *name = ksym_lookup(report->stack[i] - 1, &offset);
		if (name && !strcmp(name, function))
			return true;
	}
	return false;
}

static void note_waker(const struct lattrack_report *report, void *context)
{
	uint64_t key = 0;
	memcpy(&key, report->key, report->key_length < 8 ? report->key_length : 8);
	if (key != __atomic_load_n(&kind_seen.key, __ATOMIC_ACQUIRE) ||
	    !(report->waker_flags & LATTRACK_WAKER_KNOWN))
		return;
	if (strcmp(report->waker_name, woken.waker_name) || report->waker_tid != 0 ||
	    strcmp(report->thread_name, "offcpu-waited") || report->thread_tid != 0 ||
	    (report->waker_flags & LATTRACK_WAKER_INTERRUPT) ||
	    !(report->stack_flags & LATTRACK_STACK_KERNEL)) {
		__atomic_add_fetch(&woken.wrong_waker, 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_add_fetch(&woken.named, 1, __ATOMIC_RELAXED);
	if (frames_hold(report, "wake_the_sleeper"))
		__atomic_add_fetch(&woken.where, 1, __ATOMIC_RELAXED);
}

/* offcpu: a thread this test wakes ROUNDS times is reported off its CPU
 * (named: offcpu-waited, a kernel thread) with the waker named (this kernel thread: tid 0, its name, not from an
 * interrupt) and where it woke it (wake_the_sleeper among the kernel frames).
 * The waker lets the sleeper block before each wake-up; a round where it had
 * not blocked yet is a round with no wake-up to name, so at least one. */
static void offcpu_report_names_the_waker(struct ktest *t)
{
	memset(&woken, 0, sizeof woken);
	waitq_init(&woken.queue, "t-offwake");
	strlcpy(woken.waker_name, thread_name(thread_current()), sizeof woken.waker_name);
	memset(&kind_seen, 0, sizeof kind_seen);
	ASSERT_EQ(t, lattrack_attach_kind_callback("t-offw", "offcpu", 0, 0, note_waker, NULL), 0);
	struct thread *thread =
	    thread_create(waited_sleeper, NULL, "offcpu-waited", SCHED_PRIORITY_NORMAL);
	ASSERT_TRUE(t, thread != NULL);
	__atomic_store_n(&kind_seen.key, (uint64_t)(uintptr_t)thread, __ATOMIC_RELEASE);
	for (int i = 1; i <= ROUNDS; i++) {
		while (__atomic_load_n(&woken.waiting, __ATOMIC_ACQUIRE) < i)
			sched_sleep_ns(MS);
		sched_sleep_ns(2 * MS); /* time to block */
		wake_the_sleeper();
	}
	thread_join(thread, NULL);
	EXPECT_EQ(t, lattrack_detach("t-offw"), 0);
	pr_info("offcpu waker: %lu named, %lu with wake_the_sleeper, %lu wrong\n", woken.named,
		woken.where, woken.wrong_waker);
	EXPECT_TRUE(t, woken.named >= 1);
	EXPECT_EQ(t, woken.where, woken.named);
	EXPECT_EQ(t, woken.wrong_waker, 0);
}

static volatile int timer_fired;

static void on_timer(struct timer_oneshot *timer, void *context)
{
	__atomic_store_n(&timer_fired, 1, __ATOMIC_RELEASE);
}

/* irq: a timer interrupt this thread arms is one handler run, reported from
 * the interrupt itself. */
static void irq_tracker_sees_timer_interrupts(struct ktest *t)
{
	if (attach(t, "t-irq", "irq", 0))
		return;
	static struct timer_oneshot timer;
	for (int i = 0; i < ROUNDS; i++) {
		uint64_t before = __atomic_load_n(&kind_seen.in_interrupt, __ATOMIC_ACQUIRE);
		timer_fired = 0;
		ASSERT_EQ(t, timer_arm_oneshot_ns(&timer, clock_ns() + MS, on_timer, NULL), 0);
		for (int spin = 0; spin < 5000 && !__atomic_load_n(&timer_fired, __ATOMIC_ACQUIRE);
		     spin++)
			sched_sleep_ns(MS);
		EXPECT_TRUE(t, timer_fired);
		EXPECT_TRUE(t, __atomic_load_n(&kind_seen.in_interrupt, __ATOMIC_ACQUIRE) > before);
	}
	EXPECT_EQ(t, lattrack_detach("t-irq"), 0);
}

/* ---- a NIC that is not registered ------------------------------------------ */

static unsigned fake_poll(struct nic *nic, unsigned budget)
{
	return (unsigned)(uintptr_t)nic->driver; /* frames "delivered" */
}

static void fake_mask(struct nic *nic)
{
}

static const struct nic_ops fake_nic_ops = {
    .poll = fake_poll, .enable_interrupts = fake_mask, .disable_interrupts = fake_mask};

/* nic: the interrupt starts it, the poll after it ends it (id 1 when the
 * poll found nothing); a poll with no interrupt before finds no key. */
static void nic_tracker_times_interrupt_to_poll(struct ktest *t)
{
	static struct nic fake;
	memset(&fake, 0, sizeof fake);
	fake.ops = &fake_nic_ops;
	fake.driver = (void *)1;
	waitq_init(&fake.worker_queue, "fake-nic");
	spin_init(&fake.lock, "fake-nic");
	mutex_init(&fake.poll_lock, "fake-nic.poll");
	if (attach(t, "t-nic", "nic", (uint64_t)(uintptr_t)&fake))
		return;
	for (int i = 0; i < ROUNDS; i++) {
		nic_irq(&fake);
		EXPECT_EQ(t, nic_poll(&fake, 8), 1);
	}
	EXPECT_EQ(t, kind_seen.matched, ROUNDS);
	EXPECT_EQ(t, kind_seen.last_out_id, 0);
	fake.driver = (void *)0;
	nic_irq(&fake);
	EXPECT_EQ(t, nic_poll(&fake, 8), 0);
	EXPECT_EQ(t, kind_seen.matched, ROUNDS + 1);
	EXPECT_EQ(t, kind_seen.last_out_id, 1);
	EXPECT_EQ(t, lattrack_detach("t-nic"), 0);
}

/* nictx: a slot queued and then found done is one report; the same slot of
 * another NIC is another key; a done slot never queued finds nothing. */
static void nictx_tracker_times_queued_to_done(struct ktest *t)
{
	static struct nic fake, other;
	memset(&fake, 0, sizeof fake);
	memset(&other, 0, sizeof other);
	uint64_t key_of_slot_3 = (uint64_t)(uintptr_t)&fake ^ (3ull << 48);
	if (attach(t, "t-nictx", "nictx", key_of_slot_3))
		return;
	for (int i = 0; i < ROUNDS; i++) {
		nic_tx_queued(&fake, 3);
		nic_tx_queued(&other, 3);
		nic_tx_done(&fake, 3);
	}
	EXPECT_EQ(t, kind_seen.matched, ROUNDS);
	nic_tx_done(&fake, 4);
	struct lattrack_counts c;
	counts_of("t-nictx", &c);
	EXPECT_EQ(t, kind_seen.matched, ROUNDS);
	EXPECT_TRUE(t, c.unmatched >= 1);
	EXPECT_TRUE(t, c.unique >= ROUNDS - 1); /* other's slot 3 queued again, never done */
	EXPECT_EQ(t, fake.tx_completions, ROUNDS + 1);
	EXPECT_EQ(t, lattrack_detach("t-nictx"), 0);
}

/* ---- a disk that is not registered ------------------------------------------ */

static int fake_submit(struct block_device *device, struct block_request *request)
{
	if (request->sector == 7)
		return -EIO; /* refused */
	block_complete(request, 0);
	return 0;
}

static const struct block_ops fake_block_ops = {.submit = fake_submit};

static void fake_done(struct block_request *request)
{
}

/* block: submit to complete, per request; a refused submit ends at once
 * (id 1). */
static void block_tracker_times_submit_to_complete(struct ktest *t)
{
	static struct block_device disk;
	static struct block_request request;
	memset(&disk, 0, sizeof disk);
	strlcpy(disk.name, "fake", sizeof disk.name);
	disk.sectors = 64;
	disk.max_sectors = 8;
	disk.ops = &fake_block_ops;
	void *buffer = mm_alloc_pages(1, PAGE_SIZE);
	ASSERT_TRUE(t, buffer != NULL);
	if (attach(t, "t-blk", "block", (uint64_t)(uintptr_t)&request))
		goto out;
	for (int i = 0; i < ROUNDS + 1; i++) {
		request = (struct block_request){.device = &disk,
						 .op = BLOCK_READ,
						 .sector = i == ROUNDS ? 7 : (uint64_t)i,
						 .count = 1,
						 .buffer = buffer,
						 .done = fake_done};
		EXPECT_EQ(t, block_submit(&request), i == ROUNDS ? -EIO : 0);
		EXPECT_EQ(t, kind_seen.matched, (uint64_t)i + 1);
	}
	EXPECT_EQ(t, kind_seen.last_out_id, 1);
	struct lattrack_counts c;
	counts_of("t-blk", &c);
	EXPECT_TRUE(t, c.in >= ROUNDS + 1); /* a real disk may add its own */
	EXPECT_TRUE(t, c.out >= ROUNDS + 1);
	EXPECT_EQ(t, lattrack_detach("t-blk"), 0);
out:
	mm_free_pages(buffer, 1);
}

KTEST_SUITE(lattrack_kinds, KTEST_CASE(syscall_tracker_counts_each_call),
	    KTEST_CASE(syscall_quiet_calls_follow_the_thresholds),
	    KTEST_CASE(offcpu_tracker_sees_each_sleep), KTEST_CASE(offcpu_report_names_the_waker),
	    KTEST_CASE(irq_tracker_sees_timer_interrupts),
	    KTEST_CASE(nic_tracker_times_interrupt_to_poll),
	    KTEST_CASE(nictx_tracker_times_queued_to_done),
	    KTEST_CASE(block_tracker_times_submit_to_complete));
