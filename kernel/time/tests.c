/*
 * The clock and the tick on the running machine.  Waits are bounded loops on
 * clock_ns() (a wall-clock limit only ends a wait that failed); no test
 * asserts how long anything took, since an emulator's time is not the host's.
 */
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/hpet.h"
#include "cpu/percpu.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "sched/sched.h"
#include "time/time.h"

static volatile unsigned fired;
static volatile unsigned ticks_seen;
static struct timer_oneshot *order[3];
static volatile unsigned order_count;

/* No time limit: a timer that never fires is a hang, which the harness's
 * timeout catches; a limit would decide the result on a busy host. */
static unsigned wait_for(volatile unsigned *counter, unsigned target)
{
	while (*counter < target)
		cpu_relax();
	return *counter;
}

static void clock_is_monotonic(struct ktest *t)
{
	uint64_t previous = clock_ns();
	unsigned backwards = 0;
	for (int i = 0; i < 100000; i++) {
		uint64_t now = clock_ns();
		backwards += now < previous;
		previous = now;
	}
	EXPECT_EQ(t, backwards, 0);
}

static void clock_advances(struct ktest *t)
{
	uint64_t start = clock_ns();
	ASSERT_NE(t, start, 0);
	uint64_t now = start;
	for (int i = 0; i < 10000000 && now == start; i++)
		now = clock_ns();
	EXPECT_TRUE(t, now > start);
	EXPECT_NE(t, clock_tsc_hz(), 0);
}

static uint64_t tick_periods_ns(unsigned periods)
{
	return periods * (NSEC_PER_SEC / timer_hz());
}

/* Does the tick go on while the thread sleeps (the CPU idle), not only while
 * it spins?  Its wake-up comes after several tick times: the interrupt that
 * wakes it counts the tick due by then, however late the host runs it.
 * Pinned, since the count is this CPU's. */
static void tick_advances_with_interrupts_on(struct ktest *t)
{
	ASSERT_TRUE(t, irq_enabled());
	uint64_t saved = thread_pin_here();
	uint64_t start = timer_tick_count();
	sched_sleep_ns(tick_periods_ns(5));
	uint64_t after = timer_tick_count();
	thread_set_affinity(thread_current(), saved);
	EXPECT_TRUE(t, after > start);
}

static unsigned counting_cpu; /* count_tick counts this CPU's ticks only */

static void count_tick(void)
{
	if (this_cpu_id() == counting_cpu)
		ticks_seen++;
}

/* Spins until this CPU has taken count more ticks.  No time limit, as
 * wait_for. */
static void spin_for_ticks(uint64_t count)
{
	uint64_t start = timer_tick_count();
	while (timer_tick_count() < start + count)
		cpu_relax();
}

/* Does the callback run at the tick, and stop running once the previous one
 * is back?  Pinned, and counting its own CPU's calls only: a call runs in
 * this CPU's interrupt, so none is half done when the test looks, and the
 * ticks spun through after the restore would call it again. */
static void tick_callback_runs(struct ktest *t)
{
	uint64_t saved = thread_pin_here();
	counting_cpu = this_cpu_id();
	ticks_seen = 0;
	timer_tick_fn previous = timer_set_tick_callback(count_tick);
	wait_for(&ticks_seen, 3); /* a callback never called hangs here */
	EXPECT_TRUE(t, timer_set_tick_callback(previous) == count_tick);
	unsigned after_restoring = ticks_seen;
	spin_for_ticks(5);
	thread_set_affinity(thread_current(), saved);
	EXPECT_EQ(t, ticks_seen, after_restoring);
}

static void count_firing(struct timer_oneshot *timer, void *ctx)
{
	fired++;
}

static void oneshot_fires_once(struct ktest *t)
{
	static struct timer_oneshot timer;
	fired = 0;
	ASSERT_EQ(t, timer_arm_oneshot_ns(&timer, clock_ns() + 2 * NSEC_PER_MSEC, count_firing, 0),
		  0);
	EXPECT_EQ(t, wait_for(&fired, 1), 1);
	uint64_t ticks = timer_tick_count();
	while (timer_tick_count() < ticks + 10)
		cpu_relax();
	EXPECT_EQ(t, fired, 1);
	EXPECT_EQ(t, timer_cancel_oneshot(&timer), -ENOENT);
}

static void oneshot_cancel_and_busy(struct ktest *t)
{
	static struct timer_oneshot timer;
	fired = 0;
	uint64_t far = clock_ns() + 1000 * NSEC_PER_SEC;
	ASSERT_EQ(t, timer_arm_oneshot_ns(&timer, far, count_firing, 0), 0);
	EXPECT_EQ(t, timer_arm_oneshot_ns(&timer, far, count_firing, 0), -EBUSY);
	EXPECT_EQ(t, timer_cancel_oneshot(&timer), 0);
	EXPECT_EQ(t, timer_cancel_oneshot(&timer), -ENOENT);
	EXPECT_EQ(t, timer_arm_oneshot_ns(NULL, far, count_firing, 0), -EINVAL);
	EXPECT_EQ(t, timer_arm_oneshot_ns(&timer, far, NULL, 0), -EINVAL);
	EXPECT_EQ(t, fired, 0);
}

/* Arms timer halfway to the next tick, with room before it, once; its
 * deadline in *deadline.  Returns whether the CPU's timer was then set to
 * fire by that deadline, or -1 when there was no room before the tick. */
static int arm_between_ticks(struct timer_oneshot *timer, uint64_t *deadline)
{
	uint64_t period = NSEC_PER_SEC / timer_hz();
	int armed_for_it = -1;
	uint64_t flags = irq_save();
	uint64_t now = clock_ns(), next = timer_next_tick_ns();
	if (next > now && next - now > period / 2) {
		*deadline = now + (next - now) / 2;
		armed_for_it = timer_arm_oneshot_ns(timer, *deadline, count_firing, 0) == 0 &&
			       timer_armed_ns() <= *deadline; /* or for a sooner one-shot */
	}
	irq_restore(flags);
	return armed_for_it;
}

/* A one-shot due halfway to the next tick sets the CPU's timer for its own
 * deadline (it fires in an interrupt of its own, not left to the tick), and
 * fires.  Read off what the timer was set for, with interrupts off, not off
 * the clock when it fires, which a stalled host moves past the tick. */
static void oneshot_between_ticks_sets_the_timer_for_itself(struct ktest *t)
{
	static struct timer_oneshot timer;
	uint64_t deadline = 0;
	int armed_for_it = -1;
	fired = 0;
	for (unsigned tries = 0; tries < 50 && armed_for_it < 0; tries++) {
		armed_for_it = arm_between_ticks(&timer, &deadline);
		if (armed_for_it < 0) { /* too close to the tick: wait for it */
			uint64_t ticks = timer_tick_count();
			while (timer_tick_count() == ticks)
				cpu_relax();
		}
	}
	ASSERT_TRUE(t, armed_for_it >= 0);
	EXPECT_TRUE(t, armed_for_it);
	wait_for(&fired, 1);
	EXPECT_TRUE(t, clock_ns() >= deadline);
}

static void record_order(struct timer_oneshot *timer, void *ctx)
{
	if (order_count < 3)
		order[order_count] = timer;
	order_count++;
}

static void oneshots_fire_in_deadline_order(struct ktest *t)
{
	static struct timer_oneshot first, second, third;
	order_count = 0;
	uint64_t now = clock_ns();
	/* Armed with interrupts off, so that none can fire before all three are
	 * armed however long a busy host stalls this CPU between the calls. */
	uint64_t flags = irq_save();
	int armed[3] = {timer_arm_oneshot_ns(&third, now + 6 * NSEC_PER_MSEC, record_order, 0),
			timer_arm_oneshot_ns(&first, now + 2 * NSEC_PER_MSEC, record_order, 0),
			timer_arm_oneshot_ns(&second, now + 4 * NSEC_PER_MSEC, record_order, 0)};
	irq_restore(flags);
	ASSERT_TRUE(t, armed[0] == 0 && armed[1] == 0 && armed[2] == 0);
	ASSERT_EQ(t, wait_for(&order_count, 3), 3);
	EXPECT_TRUE(t, order[0] == &first);
	EXPECT_TRUE(t, order[1] == &second);
	EXPECT_TRUE(t, order[2] == &third);
}

/* Does the user clock page, read as user space reads it, give what
 * clock_ns() gives for the same TSC value: now, far ahead, and below its
 * base (where both hold at the base)?  And is it a page of its own? */
static void user_clock_page_converts_as_clock_ns(struct ktest *t)
{
	uint64_t phys = clock_user_page_phys();
	ASSERT_EQ(t, phys % PAGE_SIZE, 0);
	const volatile struct clock_user_page *page = phys_to_virt(phys);
	EXPECT_EQ(t, page->sequence % 2, 0);
	EXPECT_TRUE(t, page->flags & CLOCK_USER_USABLE);
	struct clock_scale scale = {page->scale.base_tsc, page->scale.base_ns, page->scale.ns_mult};
	ASSERT_NE(t, scale.ns_mult, 0);
	uint64_t tsc = rdtsc();
	EXPECT_EQ(t, clock_scale_ns(&scale, tsc), clock_ns_at_tsc(tsc));
	uint64_t ahead = tsc + 1000 * clock_tsc_hz(); /* 1000 s on */
	EXPECT_EQ(t, clock_scale_ns(&scale, ahead), clock_ns_at_tsc(ahead));
	if (scale.base_tsc > 0)
		EXPECT_EQ(t, clock_scale_ns(&scale, scale.base_tsc - 1), scale.base_ns);
	uint64_t before = clock_ns();
	uint64_t user = clock_scale_ns(&scale, rdtsc());
	uint64_t after = clock_ns();
	EXPECT_TRUE(t, before <= user && user <= after);
}

/* The TSC's rate comes from the HPET where the machine has one, from the PIT
 * again (10 ms windows) where it has none (tests/run.py's boot/kernel-no-hpet
 * boots a q35 without one); either way a rate some x86_64 CPU has. */
static void calibrated_against_what_the_machine_has(struct ktest *t)
{
	const char *expected = hpet_period_fs() ? "HPET" : "PIT";
	EXPECT_EQ(t, strcmp(clock_reference(), expected), 0);
	uint64_t hz = clock_tsc_hz();
	EXPECT_TRUE(t, hz >= 100000000ULL && hz <= 20000000000ULL);
}

struct poll_count {
	unsigned calls, done_at; /* done_at 0: never */
};

static bool counted_poll(void *ctx)
{
	struct poll_count *p = ctx;
	return ++p->calls == p->done_at;
}

/* A calibration's wait ends on its reference, or, when the reference is
 * stuck, on whichever budget runs out first. */
static void calibration_wait_is_bounded(struct ktest *t)
{
	struct poll_count reached = {0, 3};
	EXPECT_TRUE(t, clock_poll_until(counted_poll, &reached, UINT64_MAX, 100));
	EXPECT_EQ(t, reached.calls, 3);

	struct poll_count stuck = {0, 0};
	EXPECT_FALSE(t, clock_poll_until(counted_poll, &stuck, UINT64_MAX, 10));
	EXPECT_EQ(t, stuck.calls, 10);

	stuck.calls = 0;
	EXPECT_FALSE(t, clock_poll_until(counted_poll, &stuck, 1000, UINT64_MAX));
	EXPECT_TRUE(t, stuck.calls > 0);
}

#define AWAY_CYCLES 100000ULL

/* A reference that is there on the second look, the CPU having been away
 * (as a host stops a vCPU) for longer than the whole budget between the
 * first look and the second. */
static bool there_after_an_absence(void *ctx)
{
	struct poll_count *p = ctx;
	if (++p->calls == 1) {
		uint64_t away_from = rdtsc();
		while (rdtsc() - away_from <= AWAY_CYCLES)
			cpu_relax();
		return false;
	}
	return true;
}

/* A calibration that was not run while its window passed must not call its
 * reference stuck (a loaded host made the HPET look stuck at boot, and the
 * clock fell back to the PIT): the look after the absence decides. */
static void calibration_wait_survives_an_absent_cpu(struct ktest *t)
{
	struct poll_count late = {0, 0};
	EXPECT_TRUE(t, clock_poll_until(there_after_an_absence, &late, AWAY_CYCLES / 2, 100));
	EXPECT_EQ(t, late.calls, 2);
}

KTEST_SUITE(time, KTEST_CASE(clock_is_monotonic), KTEST_CASE(clock_advances),
	    KTEST_CASE(tick_advances_with_interrupts_on), KTEST_CASE(tick_callback_runs),
	    KTEST_CASE(oneshot_fires_once), KTEST_CASE(oneshot_cancel_and_busy),
	    KTEST_CASE(oneshots_fire_in_deadline_order),
	    KTEST_CASE(oneshot_between_ticks_sets_the_timer_for_itself),
	    KTEST_CASE(user_clock_page_converts_as_clock_ns),
	    KTEST_CASE(calibrated_against_what_the_machine_has),
	    KTEST_CASE(calibration_wait_is_bounded),
	    KTEST_CASE(calibration_wait_survives_an_absent_cpu));
