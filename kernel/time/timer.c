/*
 * The tick and one-shot deadlines, both driven by each CPU's LAPIC timer in
 * one-shot mode, armed for whichever comes first: the CPU's next tick (every
 * 1 / timer_hz(), hz= on the command line) or its soonest one-shot.
 *
 * The LAPIC timer's rate is measured once against the (already calibrated)
 * TSC on the boot CPU; every CPU's timer runs at the same bus clock.  Each
 * interrupt runs the one-shots of that CPU whose deadline has passed; when
 * the tick is due (within TICK_SLACK_DIVISOR of a period: the LAPIC's clock
 * and the TSC's may disagree by a little), it bumps the CPU's tick count and
 * runs the registered tick callback (the scheduler's); then it arms the
 * timer again.  Ticks keep their cadence (the next is one period after the
 * last one due, or one period from now after a stall), so a CPU takes hz
 * ticks a second whatever else its timer does.
 *
 * One-shots wait in a per-CPU list sorted by deadline, under that CPU's lock
 * (taken with interrupts off: the interrupt takes it too).  A timer's queue
 * field says which list holds it and changes only under that list's lock, so
 * cancelling from another CPU finds it or learns it already fired.  Callbacks
 * run with the lock released, so they may arm timers again.  A one-shot that
 * comes due before the CPU's next tick arms the LAPIC timer for itself: a
 * deadline is met to within the interrupt's latency, not to a tick (a
 * sleeping thread's deadline too: the scheduler arms one for its soonest
 * sleeper when that comes before the tick).
 */
#include "time/time.h"

#include "arch/x86_64/apic.h"
#include "arch/x86_64/cpu.h"
#include "boot/cmdline.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "cpu/spinlock.h"
#include "irq/irq.h"
#include "lib/errno.h"
#include "panic/panic.h"

#define DEFAULT_HZ     1000
#define MIN_HZ         10
#define MAX_HZ         10000
#define CALIBRATION_NS (2 * NSEC_PER_MSEC)
/* An interrupt this close to the tick's time (a period over this) is the
 * tick: the LAPIC's clock may run a little ahead of the TSC's. */
#define TICK_SLACK_DIVISOR 32

struct timer_queue {
	struct spinlock lock;
	struct timer_oneshot *head; /* soonest first */
	uint64_t ticks;             /* written only by its CPU's tick */
	uint64_t armed_ns;          /* when its LAPIC timer fires next (under lock) */
} __attribute__((aligned(64)));

static struct timer_queue queues[MAX_CPUS] = {
    [0 ... MAX_CPUS - 1] = {.lock = SPINLOCK_INIT("timer")},
};
static unsigned tick_hz = DEFAULT_HZ;
static uint64_t lapic_timer_hz;
static uint64_t tick_period_ns;
static timer_tick_fn tick_callback;

static int set_hz(const char *value)
{
	unsigned hz = 0;
	for (const char *p = value; p && *p; p++) {
		if (*p < '0' || *p > '9' || hz > MAX_HZ)
			return -1;
		hz = hz * 10 + (unsigned)(*p - '0');
	}
	if (hz < MIN_HZ || hz > MAX_HZ)
		return -1;
	tick_hz = hz;
	return 0;
}
KERNEL_PARAM(hz, set_hz, "10-10000: timer ticks per second (default 1000)");

unsigned timer_hz(void)
{
	return tick_hz;
}

uint64_t timer_tick_count(void)
{
	return __atomic_load_n(&queues[this_cpu_id()].ticks, __ATOMIC_RELAXED);
}

uint64_t timer_armed_ns(void)
{
	return __atomic_load_n(&queues[this_cpu_id()].armed_ns, __ATOMIC_RELAXED);
}

/* LAPIC timer counts for delta_ns, rounded up, at least 1 (0 would stop it). */
static uint32_t counts_for(uint64_t delta_ns)
{
	uint64_t counts = (delta_ns * lapic_timer_hz + NSEC_PER_SEC - 1) / NSEC_PER_SEC;
	return counts ? (uint32_t)(counts > UINT32_MAX ? UINT32_MAX : counts) : 1;
}

/* Arms this CPU's timer for its next event, the tick or the soonest
 * one-shot, unless it is armed for then already; queue locked, interrupts
 * off.  (delta stays below a period, which keeps the product in range.) */
static void arm_next(struct timer_queue *queue, uint64_t now)
{
	uint64_t at = this_cpu()->next_tick_ns;
	if (queue->head && queue->head->deadline_ns < at)
		at = queue->head->deadline_ns;
	if (at == queue->armed_ns)
		return;
	queue->armed_ns = at;
	lapic_timer_rearm(counts_for(at > now ? at - now : 0));
}

timer_tick_fn timer_set_tick_callback(timer_tick_fn callback)
{
	return __atomic_exchange_n(&tick_callback, callback, __ATOMIC_ACQ_REL);
}

static void insert_sorted(struct timer_queue *queue, struct timer_oneshot *timer)
{
	struct timer_oneshot **link = &queue->head;
	while (*link && (*link)->deadline_ns <= timer->deadline_ns)
		link = &(*link)->next;
	timer->next = *link;
	*link = timer;
}

int timer_arm_oneshot_ns(struct timer_oneshot *timer, uint64_t deadline_ns, timer_callback callback,
			 void *ctx)
{
	if (!timer || !callback)
		return -EINVAL;
	uint64_t flags = irq_save();
	unsigned cpu = this_cpu_id();
	struct timer_queue *queue = &queues[cpu];
	spin_lock(&queue->lock);
	unsigned idle = 0;
	int error = -EBUSY;
	if (__atomic_compare_exchange_n(&timer->queue, &idle, cpu + 1, false, __ATOMIC_ACQ_REL,
					__ATOMIC_RELAXED)) {
		timer->deadline_ns = deadline_ns;
		timer->callback = callback;
		timer->ctx = ctx;
		insert_sorted(queue, timer);
		if (deadline_ns < queue->armed_ns) /* before what the timer waits for */
			arm_next(queue, clock_ns());
		error = 0;
	}
	spin_unlock(&queue->lock);
	irq_restore(flags);
	return error;
}

static void unlink(struct timer_queue *queue, struct timer_oneshot *timer)
{
	struct timer_oneshot **link = &queue->head;
	while (*link != timer)
		link = &(*link)->next;
	*link = timer->next;
	timer->next = NULL;
	__atomic_store_n(&timer->queue, 0, __ATOMIC_RELEASE);
}

int timer_cancel_oneshot(struct timer_oneshot *timer)
{
	for (;;) {
		unsigned owner = __atomic_load_n(&timer->queue, __ATOMIC_ACQUIRE);
		if (!owner)
			return -ENOENT;
		struct timer_queue *queue = &queues[owner - 1];
		uint64_t flags = spin_lock_irqsave(&queue->lock);
		bool here = __atomic_load_n(&timer->queue, __ATOMIC_RELAXED) == owner;
		if (here)
			unlink(queue, timer);
		spin_unlock_irqrestore(&queue->lock, flags);
		if (here)
			return 0;
	}
}

/* Takes the soonest timer off queue if its deadline is at or before now. */
static struct timer_oneshot *pop_expired(struct timer_queue *queue, uint64_t now)
{
	spin_lock(&queue->lock);
	struct timer_oneshot *timer = queue->head;
	if (timer && timer->deadline_ns <= now)
		unlink(queue, timer);
	else
		timer = NULL;
	spin_unlock(&queue->lock);
	return timer;
}

/* The tick, if it is due at now: counted, its time moved on a period (from
 * now, after a stall), the callback run. */
static void tick_if_due(struct timer_queue *queue, uint64_t now)
{
	struct cpu *cpu = this_cpu();
	if (now + tick_period_ns / TICK_SLACK_DIVISOR < cpu->next_tick_ns)
		return;
	__atomic_store_n(&queue->ticks, queue->ticks + 1, __ATOMIC_RELAXED);
	uint64_t next = cpu->next_tick_ns + tick_period_ns;
	__atomic_store_n(&cpu->next_tick_ns, next > now ? next : now + tick_period_ns,
			 __ATOMIC_RELAXED);
	timer_tick_fn callback = __atomic_load_n(&tick_callback, __ATOMIC_ACQUIRE);
	if (callback)
		callback();
}

/* One-shots first, so that a one-shot due before a tick sees the tick count
 * it was armed in even when a late interrupt serves both. */
static void timer_interrupt(struct trap_frame *frame, void *ctx)
{
	struct timer_queue *queue = &queues[this_cpu_id()];
	uint64_t now = clock_ns();
	struct timer_oneshot *timer;
	while ((timer = pop_expired(queue, now)))
		timer->callback(timer, timer->ctx);
	tick_if_due(queue, now);
	spin_lock(&queue->lock);
	queue->armed_ns = 0; /* it fired: arm_next arms it, whatever it was */
	arm_next(queue, clock_ns());
	spin_unlock(&queue->lock);
}

/* LAPIC timer counts per second, measured against the TSC. */
static uint64_t measure_lapic_timer_hz(void)
{
	lapic_timer_start(UINT32_MAX, APIC_VECTOR_TIMER, LAPIC_TIMER_ONESHOT);
	/* Each end reads the count, then the TSC: the two windows are shifted by
	 * the same read, which a short window would otherwise feel. */
	uint32_t count_start = lapic_timer_current();
	uint64_t tsc_start = rdtsc();
	clock_delay_ns(CALIBRATION_NS);
	uint32_t count_end = lapic_timer_current();
	uint64_t elapsed_ns = clock_tsc_to_ns(rdtsc() - tsc_start);
	lapic_timer_stop();
	return (uint64_t)(count_start - count_end) * NSEC_PER_SEC / elapsed_ns;
}

void timer_init_cpu(void)
{
	ASSERT(tick_period_ns);
	struct timer_queue *queue = &queues[this_cpu_id()];
	uint64_t flags = spin_lock_irqsave(&queue->lock);
	this_cpu()->next_tick_ns = clock_ns() + tick_period_ns;
	queue->armed_ns = this_cpu()->next_tick_ns;
	lapic_timer_start(counts_for(tick_period_ns), APIC_VECTOR_TIMER, LAPIC_TIMER_ONESHOT);
	spin_unlock_irqrestore(&queue->lock, flags);
}

void timer_init(void)
{
	ASSERT(!irq_enabled());
	clock_calibrate_hpet();
	lapic_timer_hz = measure_lapic_timer_hz();
	if (lapic_timer_hz < tick_hz)
		panic("time: LAPIC timer does not count (%lu Hz)", lapic_timer_hz);
	tick_period_ns = NSEC_PER_SEC / tick_hz;
	int error = irq_register(APIC_VECTOR_TIMER, timer_interrupt, NULL, "timer");
	if (error)
		panic("time: cannot take vector %#x for the tick (%d)", APIC_VECTOR_TIMER, error);
	timer_init_cpu();
	pr_info("time: LAPIC timer %lu.%03lu MHz (bus clock / %u), tick %u Hz\n",
		lapic_timer_hz / 1000000, lapic_timer_hz / 1000 % 1000, LAPIC_TIMER_DIVIDER,
		tick_hz);
}
