/*
 * jp_bench: what a join point costs, per call, for a module API function that
 * does nothing, measured in one run: a plain direct call (the baseline), the
 * join point disabled (its NOP), enabled with one empty before and one empty
 * after advice, and enabled with the built-in counting advice; the last two
 * again on a join point declared without _NOSLEEP (the dispatcher's path).
 *
 * Each case is BENCH_CALLS calls in a loop with interrupts off, timed with
 * RDTSC.  Under QEMU with -icount shift=0 the TSC advances one tick per
 * guest instruction, so the figures are instructions, identical from run to
 * run; a calibration loop of a known instruction count is timed first so the
 * report shows that this holds.  Without -icount they are TSC cycles of the
 * emulated machine (host time under TCG).  tests/bench.py boots with
 * "jp_bench exit=qemu" and reads the "jp_bench: case" lines.
 */
#include "joinpoint/internal.h"

#include "arch/x86_64/cpu.h"
#include "boot/cmdline.h"
#include "console/console.h"
#include "panic/panic.h"
#include "power/power.h"

#define BENCH_CALLS        10000
#define CALIBRATION_ROUNDS 10000 /* of 10 instructions each */

static bool bench_requested;

static int set_jp_bench(const char *value)
{
	bench_requested = true;
	return value ? -1 : 0;
}
KERNEL_PARAM(jp_bench, set_jp_bench, "measure join-point overhead, print it and stop");

/* Ticks for CALIBRATION_ROUNDS * 10 + 1 instructions. */
static uint64_t calibration_ticks(void)
{
	uint64_t start = rdtsc();
	__asm__ volatile("mov %0, %%ecx\n"
			 "1: nop; nop; nop; nop; nop; nop; nop; nop\n"
			 "dec %%ecx\n"
			 "jnz 1b\n"
			 :
			 : "i"(CALIBRATION_ROUNDS)
			 : "rcx", "cc");
	return rdtsc() - start;
}

static uint64_t time_empty_loop(void)
{
	uint64_t start = rdtsc();
	for (unsigned i = 0; i < BENCH_CALLS; i++)
		__asm__ volatile("");
	return rdtsc() - start;
}

static uint64_t time_plain(void)
{
	uint64_t start = rdtsc();
	for (unsigned i = 0; i < BENCH_CALLS; i++)
		jp_bench_plain();
	return rdtsc() - start;
}

static uint64_t time_joinpoint(void)
{
	uint64_t start = rdtsc();
	for (unsigned i = 0; i < BENCH_CALLS; i++)
		jp_bench_nop();
	return rdtsc() - start;
}

static uint64_t time_sleeping_joinpoint(void)
{
	uint64_t start = rdtsc();
	for (unsigned i = 0; i < BENCH_CALLS; i++)
		jp_bench_nop_sleeps();
	return rdtsc() - start;
}

static void empty_before(struct jp_context *context, void *cookie)
{
	__asm__ volatile("");
}

static void empty_after(struct jp_context *context, void *cookie)
{
	__asm__ volatile("");
}

static const struct jp_advice empty_before_advice = {.name = "empty-before",
						     .before = empty_before};
static const struct jp_advice empty_after_advice = {.name = "empty-after", .after = empty_after};

static void report(const char *name, uint64_t ticks, uint64_t baseline)
{
	uint64_t hundredths = ticks * 100 / BENCH_CALLS;
	uint64_t ratio = baseline ? ticks * 100 / baseline : 0;
	console_print("jp_bench: case %-16s calls %u ticks %8lu  per call %4lu.%02lu  x%lu.%02lu\n",
		      name, BENCH_CALLS, ticks, hundredths / 100, hundredths % 100, ratio / 100,
		      ratio % 100);
}

static uint64_t with_irqs_off(uint64_t (*measure)(void))
{
	uint64_t flags = irq_save();
	measure(); /* warm up: caches under TCG, translation blocks */
	uint64_t ticks = measure();
	irq_restore(flags);
	return ticks;
}

static int attach_or_panic(const char *pattern, const struct jp_advice *advice)
{
	int handle = jp_attach(pattern, advice);
	if (handle < 0)
		panic("jp_bench: attaching %s failed (%d)", advice->name, handle);
	return handle;
}

static void run_bench(void)
{
	uint64_t flags = irq_save();
	calibration_ticks();
	uint64_t calibration = calibration_ticks();
	irq_restore(flags);
	console_print("jp_bench: calibration %u instructions took %lu ticks\n",
		      CALIBRATION_ROUNDS * 10 + 1, calibration);

	uint64_t loop = with_irqs_off(time_empty_loop);
	uint64_t plain = with_irqs_off(time_plain);
	uint64_t disabled = with_irqs_off(time_joinpoint);

	int before = attach_or_panic("jp.bench_nop", &empty_before_advice);
	int after = attach_or_panic("jp.bench_nop", &empty_after_advice);
	uint64_t empty = with_irqs_off(time_joinpoint);
	jp_detach(after);
	jp_detach(before);

	int count = attach_or_panic("jp.bench_nop", &jp_advice_count);
	uint64_t counted = with_irqs_off(time_joinpoint);
	jp_detach(count);

	/* The same on a join point that may sleep (the dispatcher's path). */
	before = attach_or_panic("jp.bench_nop_sleeps", &empty_before_advice);
	after = attach_or_panic("jp.bench_nop_sleeps", &empty_after_advice);
	uint64_t sleeping_empty = with_irqs_off(time_sleeping_joinpoint);
	jp_detach(after);
	jp_detach(before);
	count = attach_or_panic("jp.bench_nop_sleeps", &jp_advice_count);
	uint64_t sleeping_counted = with_irqs_off(time_sleeping_joinpoint);
	jp_detach(count);
	int timing = attach_or_panic("jp.bench_nop_sleeps", &jp_advice_time);
	uint64_t sleeping_timed = with_irqs_off(time_sleeping_joinpoint);
	jp_detach(timing);

	report("loop", loop, plain);
	report("baseline", plain, plain);
	report("disabled", disabled, plain);
	report("enabled-empty", empty, plain);
	report("enabled-count", counted, plain);
	report("sleeping-empty", sleeping_empty, plain);
	report("sleeping-count", sleeping_counted, plain);
	report("sleeping-time", sleeping_timed, plain);
}

void jp_bench_run_if_requested(void)
{
	if (!bench_requested)
		return;
	run_bench();
	power_stop(POWER_REQUESTED);
}
