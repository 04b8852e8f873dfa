/*
 * The monotonic clock: clock_ns() is one RDTSC and a multiply,
 * base_ns + ((tsc - base_tsc) * mult >> 32).
 *
 * clock_init calibrates early against PIT channel 2 (2 ms windows, repeated,
 * smallest kept, so an emulator or SMI stealing time in one window does not
 * skew it), so the boot log has timestamps before ACPI is read.  Once ACPI is
 * up, clock_calibrate_hpet measures again against the HPET, a counter with a
 * stated period, which is more precise (the median of three 2 ms windows);
 * without one it measures again against the PIT in 10 ms windows.  Every
 * window is bounded (in TSC cycles and in reads): a reference that does not
 * get there counts as stuck, and the clock falls back, with a warning, to
 * the other reference, else keeps the rate it has (at first: CPUID's base
 * frequency or 2 GHz).  The clock
 * then continues from the value it had at the switch with the new rate, so
 * it never jumps back.  Short windows because every boot waits for them: the
 * first HTTP answer after launch is a figure of merit.
 * Both run on the boot CPU with interrupts off before other CPUs start: the
 * parameters are written only then, and read without a lock afterwards.
 *
 * The TSC is assumed invariant (constant rate, synchronised across CPUs), as
 * on every x86_64 CPU of the last decade; that is what makes clock_ns()
 * monotonic across CPUs.  clock_init reports when CPUID says otherwise.
 *
 * The user clock page mirrors the scale for user space (time.h).  It is a
 * page-aligned page of the kernel image, so it exists before memory
 * management does, and every rate change rewrites it inside its sequence
 * count: odd, the fields, even again.  Its usable flag says the clock is
 * calibrated and user_clock= did not turn it off; user space then computes
 * exactly what clock_ns() returns, with the same clock_scale_ns.
 */
#include "time/time.h"

#include <stdbool.h>

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/hpet.h"
#include "boot/cmdline.h"
#include "console/console.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"

#define PIT_HZ             1193182ULL
#define PIT_CHANNEL2       0x42
#define PIT_COMMAND        0x43
#define PIT_GATE           0x61
#define EARLY_WINDOW_MS    2  /* clock_init's PIT windows */
#define PIT_WINDOW_MS      10 /* the PIT's, when there is no HPET */
#define HPET_WINDOW_MS     2
#define CALIBRATION_ROUNDS 3
#define FS_PER_NS          1000000ULL
/* Bounds on a calibration window: a reference that has not got there after
 * WAIT_BUDGET_WINDOWS windows at the fastest TSC rate, or after
 * MAX_REFERENCE_POLLS reads (should the TSC stand still), is stuck. */
#define MAX_TSC_HZ          20000000000ULL
#define WAIT_BUDGET_WINDOWS 8
#define MAX_REFERENCE_POLLS (1ULL << 24)
#define ASSUMED_TSC_HZ      2000000000ULL

static uint64_t tsc_hz;
struct clock_scale clock_kernel_scale;
static const char *reference = "none";

static union {
	struct clock_user_page page;
	uint8_t bytes[PAGE_SIZE]; /* the whole page: nothing else shares it with user space */
} user_page __attribute__((aligned(PAGE_SIZE)));
static bool user_clock_off;

static int set_user_clock(const char *value)
{
	return cmdline_on_off(value, &user_clock_off);
}
KERNEL_PARAM(user_clock, set_user_clock,
	     "on|off: processes read the time from the user clock page (default on)");

/* Rewrites the user clock page inside its sequence count.  Boot CPU, with
 * interrupts off or before other CPUs run: the only writer. */
static void publish_user_page(void)
{
	struct clock_user_page *page = &user_page.page;
	__atomic_store_n(&page->sequence, page->sequence + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE); /* odd before the fields */
	page->scale = clock_kernel_scale;
	page->flags = tsc_hz && !user_clock_off ? CLOCK_USER_USABLE : 0;
	__atomic_store_n(&page->sequence, page->sequence + 1, __ATOMIC_RELEASE);
}

uint64_t clock_user_page_phys(void)
{
	return virt_to_phys(&user_page);
}

uint64_t clock_tsc_hz(void)
{
	return tsc_hz;
}

const char *clock_reference(void)
{
	return reference;
}

uint64_t clock_tsc_to_ns(uint64_t cycles)
{
	return (uint64_t)(((unsigned __int128)cycles * clock_kernel_scale.ns_mult) >> 32);
}

/* Before calibration the scale is all zero, so this is 0. */
uint64_t clock_ns_at_tsc(uint64_t tsc)
{
	return clock_scale_ns(&clock_kernel_scale, tsc);
}

uint64_t clock_ns(void)
{
	return clock_ns_inline();
}

/* Switches to a new rate, continuing from the current reading. */
static void clock_set_rate(uint64_t hz, const char *source)
{
	uint64_t now_tsc = rdtsc();
	uint64_t now_ns = clock_scale_ns(&clock_kernel_scale, now_tsc);
	clock_kernel_scale.base_tsc = now_tsc;
	clock_kernel_scale.base_ns = now_ns;
	clock_kernel_scale.ns_mult = (NSEC_PER_SEC << 32) / hz;
	tsc_hz = hz;
	reference = source;
	publish_user_page();
}

bool clock_poll_until(bool (*done)(void *ctx), void *ctx, uint64_t budget_cycles,
		      uint64_t max_polls)
{
	uint64_t start = rdtsc();
	for (uint64_t polls = 0; polls < max_polls; polls++) {
		/* The clock is read before the reference, so a wait ends as stuck
		 * only on a look taken after the budget ran out: a CPU the host did
		 * not run for that long still finds its reference there. */
		bool out_of_budget = rdtsc() - start > budget_cycles;
		if (done(ctx))
			return true;
		if (out_of_budget)
			return false;
	}
	return false;
}

/* The TSC cycles a reference may take for a window of window_ms before it
 * counts as stuck: WAIT_BUDGET_WINDOWS windows at the fastest TSC rate. */
static uint64_t wait_budget_cycles(uint64_t window_ms)
{
	return window_ms * (MAX_TSC_HZ / 1000) * WAIT_BUDGET_WINDOWS;
}

static bool pit_counted_down(void *ctx)
{
	return inb(PIT_GATE) & 0x20;
}

/* Counts TSC cycles during one PIT one-shot of window_ms; 0 when the PIT
 * did not count down within its budget. */
static uint64_t tsc_cycles_in_pit_window(uint64_t window_ms)
{
	uint16_t count = (uint16_t)(PIT_HZ * window_ms / 1000);

	outb(PIT_GATE, (inb(PIT_GATE) & ~0x02) | 0x01); /* gate on, speaker off */
	outb(PIT_COMMAND, 0xb0);                        /* ch2, lo/hi, mode 0 */
	outb(PIT_CHANNEL2, count & 0xff);
	outb(PIT_CHANNEL2, count >> 8);
	outb(PIT_GATE, inb(PIT_GATE) & ~0x01); /* restart the count */
	outb(PIT_GATE, inb(PIT_GATE) | 0x01);

	uint64_t start = rdtsc();
	if (!clock_poll_until(pit_counted_down, NULL, wait_budget_cycles(window_ms),
			      MAX_REFERENCE_POLLS))
		return 0;
	return rdtsc() - start;
}

struct hpet_window {
	uint64_t start, ticks, mask;
	uint64_t elapsed;
};

static bool hpet_window_passed(void *ctx)
{
	struct hpet_window *w = ctx;
	w->elapsed = (hpet_read_counter() - w->start) & w->mask;
	return w->elapsed >= w->ticks;
}

/* TSC frequency over one window of about HPET_WINDOW_MS of HPET ticks; 0
 * when the counter did not get there within its budget. */
static uint64_t tsc_hz_in_hpet_window(void)
{
	struct hpet_window w = {
	    .mask = hpet_counter_mask(),
	    .ticks = HPET_WINDOW_MS * NSEC_PER_MSEC * FS_PER_NS / hpet_period_fs(),
	    .start = hpet_read_counter(),
	};
	uint64_t tsc_start = rdtsc();
	if (!clock_poll_until(hpet_window_passed, &w, wait_budget_cycles(HPET_WINDOW_MS),
			      MAX_REFERENCE_POLLS))
		return 0;
	uint64_t cycles = rdtsc() - tsc_start;
	uint64_t window_ns = w.elapsed * hpet_period_fs() / FS_PER_NS;
	return window_ns ? cycles * NSEC_PER_SEC / window_ns : 0;
}

static bool tsc_is_invariant(void)
{
	uint32_t regs[4];
	cpuid(0x80000000, 0, regs);
	if (regs[0] < 0x80000007)
		return false;
	cpuid(0x80000007, 0, regs);
	return regs[3] & (1u << 8);
}

static void report(void)
{
	pr_info("time: TSC %lu.%03lu MHz (%s), %s\n", tsc_hz / 1000000, tsc_hz / 1000 % 1000,
		reference, tsc_is_invariant() ? "invariant" : "not marked invariant");
}

/* The TSC's rate from CALIBRATION_ROUNDS PIT windows of window_ms, the
 * smallest count kept.  Returns false, the rate unchanged, when a window
 * timed out (the PIT is missing or stuck). */
static bool calibrate_against_pit(uint64_t window_ms)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < CALIBRATION_ROUNDS; i++) {
		uint64_t cycles = tsc_cycles_in_pit_window(window_ms);
		if (!cycles)
			return false;
		if (cycles < best)
			best = cycles;
	}
	clock_set_rate(best * 1000 / window_ms, "PIT");
	return true;
}

/* A rate to run on when no reference answers: CPUID's base frequency (leaf
 * 0x16), else ASSUMED_TSC_HZ. */
static uint64_t assumed_tsc_hz(void)
{
	uint32_t regs[4];
	cpuid(0, 0, regs);
	if (regs[0] >= 0x16) {
		cpuid(0x16, 0, regs);
		if (regs[0] & 0xffff)
			return (uint64_t)(regs[0] & 0xffff) * 1000000;
	}
	return ASSUMED_TSC_HZ;
}

void clock_init(void)
{
	if (!calibrate_against_pit(EARLY_WINDOW_MS)) {
		clock_set_rate(assumed_tsc_hz(), "assumed");
		pr_warn("time: the PIT did not count down in time: running on an assumed "
			"TSC rate until the HPET measures it\n");
	}
	report();
}

/* The middle of three: one disturbed window cannot move it. */
static uint64_t median3(uint64_t a, uint64_t b, uint64_t c)
{
	if ((a <= b && b <= c) || (c <= b && b <= a))
		return b;
	if ((b <= a && a <= c) || (c <= a && a <= b))
		return a;
	return c;
}

/* The PIT in PIT_WINDOW_MS windows, or, when it is stuck too, the rate the
 * clock already has. */
static void calibrate_against_pit_again(void)
{
	uint64_t flags = irq_save();
	bool measured = calibrate_against_pit(PIT_WINDOW_MS);
	irq_restore(flags);
	if (!measured)
		pr_warn("time: the PIT did not count down in time: keeping the %s rate\n",
			reference);
}

/* The median of three HPET windows; 0 when one timed out. */
static uint64_t tsc_hz_against_hpet(void)
{
	uint64_t rates[3];
	for (int i = 0; i < 3; i++) {
		rates[i] = tsc_hz_in_hpet_window();
		if (!rates[i])
			return 0;
	}
	return median3(rates[0], rates[1], rates[2]);
}

int clock_calibrate_hpet(void)
{
	int error = hpet_init();
	if (error) {
		pr_info("time: no usable HPET (%d), calibrating against the PIT again\n", error);
		calibrate_against_pit_again();
		report();
		return error;
	}
	uint64_t flags = irq_save();
	uint64_t hz = tsc_hz_against_hpet();
	if (hz)
		clock_set_rate(hz, "HPET");
	irq_restore(flags);
	if (!hz) {
		pr_warn("time: the HPET counter did not advance in time: calibrating against "
			"the PIT again\n");
		calibrate_against_pit_again();
		report();
		return -ETIMEDOUT;
	}
	report();
	return 0;
}

/* A join point, "clock.delay_ns".  clock_ns() is deliberately not one: it is
 * the time source of advice and of every printk line, so a join point there
 * would run the dispatcher inside every timestamp, and timing advice on it
 * would time itself. */
JOINPOINT_DEFINE_VOID(clock, delay_ns, uint64_t, ns)
{
	uint64_t end = clock_ns() + ns;
	while (clock_ns() < end)
		cpu_relax();
}
