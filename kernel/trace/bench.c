/*
 * trace_bench: what recording costs, per call, against a plain call in the
 * same run (tests/bench.py boots "trace_bench exit=qemu" under -icount, where
 * a tick is an instruction).  Cases: the plain call; the join point
 * disabled; recorded as one call record (a join point that cannot sleep);
 * recorded as entry and exit records (one that may sleep); a kernel trace
 * point on and off.  Loops run with interrupts off, after a warm-up pass; the
 * session drains into a sink that drops everything between cases.
 */
#include "trace/internal.h"

#include "arch/x86_64/cpu.h"
#include "boot/cmdline.h"
#include "console/console.h"
#include "panic/panic.h"
#include "power/power.h"
#include "telemetry/tracepoint.h"

#define BENCH_CALLS 2000 /* fits one ring: no drop while measuring */

void jp_bench_plain(void);
void jp_bench_nop(void);
void jp_bench_nop_sleeps(void);

static bool bench_requested;

static int set_trace_bench(const char *value)
{
	bench_requested = true;
	return 0;
}
KERNEL_PARAM(trace_bench, set_trace_bench, "measure the trace recorder's cost, print it and stop");

static uint64_t time_plain(void)
{
	uint64_t start = rdtsc();
	for (unsigned i = 0; i < BENCH_CALLS; i++)
		jp_bench_plain();
	return rdtsc() - start;
}

static uint64_t time_nosleep(void)
{
	uint64_t start = rdtsc();
	for (unsigned i = 0; i < BENCH_CALLS; i++)
		jp_bench_nop();
	return rdtsc() - start;
}

static uint64_t time_sleeping(void)
{
	uint64_t start = rdtsc();
	for (unsigned i = 0; i < BENCH_CALLS; i++)
		jp_bench_nop_sleeps();
	return rdtsc() - start;
}

/* A trace point in a loop beside the plain call (the same loop shape). */
static uint64_t time_tracepoint(void)
{
	struct trace_irq event = {.vector = 1};
	uint64_t start = rdtsc();
	for (unsigned i = 0; i < BENCH_CALLS; i++) {
		jp_bench_plain();
		tracepoint(TRACE_IRQ_ENTRY, &event, sizeof event);
	}
	return rdtsc() - start;
}

static uint64_t with_irqs_off(uint64_t (*measure)(void))
{
	uint64_t flags = irq_save();
	measure(); /* warm up */
	uint64_t ticks = measure();
	irq_restore(flags);
	return ticks;
}

static void report(const char *name, uint64_t ticks, uint64_t baseline)
{
	uint64_t hundredths = ticks * 100 / BENCH_CALLS;
	int64_t over = (int64_t)ticks - (int64_t)baseline;
	console_print("trace_bench: case %-18s calls %u ticks %8lu  per call %4lu.%02lu  over "
		      "baseline %ld\n",
		      name, BENCH_CALLS, ticks, hundredths / 100, hundredths % 100,
		      over / (int64_t)BENCH_CALLS);
}

static int discard(void *context, uint16_t kind, uint16_t stream, const void *data, uint32_t length)
{
	return 0;
}

static const struct trace_sink discard_sink = {.name = "bench-discard", .frame = discard};

/* One case inside a session of its own (the rings start empty: nothing is
 * dropped while measuring). */
static void report_recorded(const char *name, uint64_t (*measure)(void), uint64_t baseline,
			    struct trace_end *total)
{
	const char *patterns[] = {"jp.bench_nop", "jp.bench_nop_sleeps"};
	if (trace_start(&discard_sink, "", patterns, 2))
		panic("trace_bench: cannot start a trace");
	report(name, with_irqs_off(measure), baseline);
	struct trace_end end;
	trace_stop(&end);
	total->recorded += end.recorded;
	total->delivered += end.delivered;
	total->dropped += end.dropped;
}

/* The drain's share per record delivered: BENCH_CALLS call records written,
 * then one drain of them into the discarding sink (the reader's walk and
 * copy, the packet's seal; a sink's own copy is not in it). */
static void report_drain(void)
{
	const char *patterns[] = {"jp.bench_nop"};
	if (trace_start(&discard_sink, "", patterns, 1))
		panic("trace_bench: cannot start a trace");
	uint64_t flags = irq_save();
	trace_drain_now(); /* what came before */
	time_nosleep();
	uint64_t start = rdtsc();
	uint64_t records = trace_drain_now();
	uint64_t ticks = rdtsc() - start;
	irq_restore(flags);
	trace_stop(NULL);
	uint64_t hundredths = records ? ticks * 100 / records : 0;
	console_print("trace_bench: drain of %lu records took %lu ticks, per record %lu.%02lu\n",
		      records, ticks, hundredths / 100, hundredths % 100);
}

static void run_bench(void)
{
	uint64_t baseline = with_irqs_off(time_plain);
	report("baseline", baseline, baseline);
	report("disabled", with_irqs_off(time_nosleep), baseline);
	report("tracepoint-off", with_irqs_off(time_tracepoint), baseline);
	struct trace_end total = {0};
	report_recorded("recorded-call", time_nosleep, baseline, &total);
	report_recorded("recorded-entry-exit", time_sleeping, baseline, &total);
	report_recorded("tracepoint-on", time_tracepoint, baseline, &total);
	console_print("trace_bench: %lu recorded, %lu delivered, %lu dropped\n", total.recorded,
		      total.delivered, total.dropped);
	report_drain();
}

void trace_bench_run_if_requested(void)
{
	if (!bench_requested)
		return;
	run_bench();
	power_stop(POWER_REQUESTED);
}
