/*
 * The monotonic clock: clock_ns() is one RDTSC and a multiply,
 * base_ns + ((tsc - base_tsc) * mult >> 32).
 *
 * clock_init calibrates early against PIT channel 2 (2 ms windows, repeated,
 * smallest kept, so an emulator or SMI stealing time in one window does not
 * skew it), so the boot log has timestamps before ACPI is read.  Once ACPI is
 * up, clock_calibrate_hpet measures again against the HPET, a counter with a
 * stated period, which is more precise (the median of three 2 ms windows);
 * without one it measures again against the PIT in 10 ms windows.  The clock
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

static uint64_t tsc_hz;
static struct clock_scale scale;
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
	page->scale = scale;
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
	return (uint64_t)(((unsigned __int128)cycles * scale.ns_mult) >> 32);
}

/* Before calibration the scale is all zero, so this is 0. */
uint64_t clock_ns_at_tsc(uint64_t tsc)
{
	return clock_scale_ns(&scale, tsc);
}

uint64_t clock_ns(void)
{
	return clock_ns_at_tsc(rdtsc());
}

/* Switches to a new rate, continuing from the current reading. */
static void clock_set_rate(uint64_t hz, const char *source)
{
	uint64_t now_tsc = rdtsc();
	uint64_t now_ns = clock_scale_ns(&scale, now_tsc);
	scale.base_tsc = now_tsc;
	scale.base_ns = now_ns;
	scale.ns_mult = (NSEC_PER_SEC << 32) / hz;
	tsc_hz = hz;
	reference = source;
	publish_user_page();
}

/* Counts TSC cycles during one PIT one-shot of window_ms. */
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
	while (!(inb(PIT_GATE) & 0x20))
		;
	return rdtsc() - start;
}

/* TSC frequency over one window of about HPET_WINDOW_MS of HPET ticks. */
static uint64_t tsc_hz_in_hpet_window(void)
{
	uint64_t mask = hpet_counter_mask();
	uint64_t ticks = HPET_WINDOW_MS * NSEC_PER_MSEC * FS_PER_NS / hpet_period_fs();
	uint64_t hpet_start = hpet_read_counter();
	uint64_t tsc_start = rdtsc();
	uint64_t elapsed;
	do {
		elapsed = (hpet_read_counter() - hpet_start) & mask;
	} while (elapsed < ticks);
	uint64_t cycles = rdtsc() - tsc_start;
	uint64_t window_ns = elapsed * hpet_period_fs() / FS_PER_NS;
	return cycles * NSEC_PER_SEC / window_ns;
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
 * smallest count kept. */
static void calibrate_against_pit(uint64_t window_ms)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < CALIBRATION_ROUNDS; i++) {
		uint64_t cycles = tsc_cycles_in_pit_window(window_ms);
		if (cycles < best)
			best = cycles;
	}
	clock_set_rate(best * 1000 / window_ms, "PIT");
}

void clock_init(void)
{
	calibrate_against_pit(EARLY_WINDOW_MS);
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

int clock_calibrate_hpet(void)
{
	int error = hpet_init();
	if (error) {
		pr_info("time: no usable HPET (%d), calibrating against the PIT again\n", error);
		uint64_t flags = irq_save();
		calibrate_against_pit(PIT_WINDOW_MS);
		irq_restore(flags);
		report();
		return error;
	}
	uint64_t flags = irq_save();
	uint64_t a = tsc_hz_in_hpet_window();
	uint64_t b = tsc_hz_in_hpet_window();
	uint64_t c = tsc_hz_in_hpet_window();
	clock_set_rate(median3(a, b, c), "HPET");
	irq_restore(flags);
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
