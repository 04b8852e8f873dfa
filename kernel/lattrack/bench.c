/*
 * lattrack_bench: what a tracker costs (tests/bench.py boots "lattrack_bench
 * exit=qemu" twice).  Under -icount, where a tick is an instruction: one
 * event_in + event_out pair against one plain lookup of the same table (the
 * hash and the chain walk, no lock) and one locked lookup
 * (lattrack_contains), with 256 other keys in, interrupts off, after a
 * warm-up; and a system call's join point plain, with an empty native
 * advice (what the dispatcher costs) and with the syscall tracker (what it
 * adds to that: the advice and the pair), and a send refused at once with
 * and without the ttfb tracker (its advice and a lookup that finds nothing,
 * as every send after a connection's first).  Without -icount, on every CPU at once: threads pinned one per
 * CPU do pairs on keys of their own, timed from a common start; 1 CPU and 2
 * CPUs in the same run give the scaling.
 */
#include "lattrack/internal.h"

#include "arch/x86_64/cpu.h"
#include "boot/cmdline.h"
#include "console/console.h"
#include "joinpoint/joinpoint.h"
#include "net/net.h"
#include "panic/panic.h"
#include "power/power.h"
#include "sched/sched.h"
#include "smp/smp.h"
#include "syscall/syscall.h"
#include "uapi/syscall_numbers.h"

#define BENCH_CALLS    2000
#define BENCH_RESIDENT 256    /* other keys in while measuring */
#define PARALLEL_PAIRS 200000 /* per thread */

static bool bench_requested;

static int set_lattrack_bench(const char *value)
{
	bench_requested = true;
	return 0;
}
KERNEL_PARAM(lattrack_bench, set_lattrack_bench,
	     "measure the latency tracker's cost and scaling, print them and stop");

static struct lattrack *bench_tracker;
static volatile uint64_t sink;

static uint64_t time_lookup(void)
{
	uint64_t start = rdtsc();
	for (uint64_t i = 0; i < BENCH_CALLS; i++) {
		uint64_t key = i % BENCH_RESIDENT;
		sink += lattrack_contains_unlocked(bench_tracker, &key, sizeof key);
	}
	return rdtsc() - start;
}

static uint64_t time_locked_lookup(void)
{
	uint64_t start = rdtsc();
	for (uint64_t i = 0; i < BENCH_CALLS; i++) {
		uint64_t key = i % BENCH_RESIDENT;
		sink += lattrack_contains(bench_tracker, &key, sizeof key);
	}
	return rdtsc() - start;
}

static uint64_t time_pair(void)
{
	uint64_t start = rdtsc();
	for (uint64_t i = 0; i < BENCH_CALLS; i++) {
		uint64_t key = BENCH_RESIDENT + i % BENCH_RESIDENT;
		lattrack_event_in(bench_tracker, &key, sizeof key, LATTRACK_IN_SHARED, NULL);
		lattrack_event_out(bench_tracker, &key, sizeof key, 0);
	}
	return rdtsc() - start;
}

/* A system call through the dispatcher (getuid: works in a kernel thread,
 * changes nothing), its join point and body, as the syscall tracker sees it. */
static uint64_t time_syscall(void)
{
	static const uint64_t args[6];
	uint64_t start = rdtsc();
	for (uint64_t i = 0; i < BENCH_CALLS; i++)
		sink += (uint64_t)syscall_dispatch(__NR_getuid, args);
	return rdtsc() - start;
}

/* A send through net.send that its body refuses at once (no socket), as
 * the ttfb tracker's advice sees each send after a connection's first. */
static uint64_t time_send(void)
{
	uint64_t start = rdtsc();
	for (uint64_t i = 0; i < BENCH_CALLS; i++)
		sink += (uint64_t)net_send(NULL, NULL, 0, 0, NULL);
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

static void report(const char *name, uint64_t ticks)
{
	uint64_t hundredths = ticks * 100 / BENCH_CALLS;
	console_print("lattrack_bench: case %-14s calls %u ticks %8lu  per call %4lu.%02lu\n", name,
		      BENCH_CALLS, ticks, hundredths / 100, hundredths % 100);
}

static struct lattrack *make_tracker(const char *name)
{
	struct lattrack *tracker;
	if (lattrack_create(name, &tracker) || lattrack_set_threshold_ns(tracker, UINT64_MAX) ||
	    lattrack_set_max_events(tracker, 1024 * cpu_count) || lattrack_enable(tracker))
		panic("lattrack_bench: cannot make a tracker");
	return tracker;
}

static void empty_advice(struct jp_context *context, void *cookie)
{
}

/* The syscall tracker's dispatch with nothing to do: the join point's
 * short path for native advice, both advice calls. */
static void report_empty_advice(void)
{
	static const struct jp_advice empty = {.name = "bench-empty",
					       .before = empty_advice,
					       .after = empty_advice,
					       .flags = JP_ADVICE_NATIVE};
	int handle = jp_attach("sys.getuid", &empty);
	if (handle < 0)
		panic("lattrack_bench: cannot attach the empty advice");
	report("syscall-empty", (time_syscall(), time_syscall()));
	jp_detach(handle);
}

static void bench_cost(void)
{
	bench_tracker = make_tracker("bench");
	for (uint64_t key = 0; key < BENCH_RESIDENT; key++)
		lattrack_event_in(bench_tracker, &key, sizeof key, LATTRACK_IN_SHARED, NULL);
	report("lookup", with_irqs_off(time_lookup));
	report("locked-lookup", with_irqs_off(time_locked_lookup));
	report("pair", with_irqs_off(time_pair));
	lattrack_destroy(bench_tracker);
	/* with interrupts on: attaching waits for a grace period, the advice runs as usual */
	report("syscall", (time_syscall(), time_syscall()));
	report_empty_advice();
	if (lattrack_attach_kind("bench-sys", "syscall", UINT64_MAX, 0))
		panic("lattrack_bench: cannot attach the syscall tracker");
	report("syscall-tracked", (time_syscall(), time_syscall()));
	lattrack_detach("bench-sys");
	/* with a timeout: on the join points, the events in the table */
	if (lattrack_attach_kind("bench-sys", "syscall", UINT64_MAX, 3600ULL * 1000000000))
		panic("lattrack_bench: cannot attach the syscall tracker with a timeout");
	report("syscall-joinpoints", (time_syscall(), time_syscall()));
	lattrack_detach("bench-sys");
	report("send", (time_send(), time_send()));
	if (lattrack_attach_kind("bench-ttfb", "ttfb", UINT64_MAX, 0))
		panic("lattrack_bench: cannot attach the ttfb tracker");
	report("send-ttfb", (time_send(), time_send()));
	lattrack_detach("bench-ttfb");
}

/* ---- scaling --------------------------------------------------------------- */

static volatile unsigned ready, go, done;

static int pair_worker(void *arg)
{
	uint64_t base = (uint64_t)(uintptr_t)arg << 32;
	__atomic_fetch_add(&ready, 1, __ATOMIC_ACQ_REL);
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		cpu_relax();
	for (uint64_t i = 0; i < PARALLEL_PAIRS; i++) {
		uint64_t key = base + i % 64;
		lattrack_event_in(bench_tracker, &key, sizeof key, LATTRACK_IN_SHARED, NULL);
		lattrack_event_out(bench_tracker, &key, sizeof key, 0);
	}
	__atomic_fetch_add(&done, 1, __ATOMIC_ACQ_REL);
	return 0;
}

/* The control: the same threads doing plain arithmetic, which scales with
 * the host's free cores and nothing else. */
static int control_worker(void *arg)
{
	uint64_t random = (uint64_t)(uintptr_t)arg;
	__atomic_fetch_add(&ready, 1, __ATOMIC_ACQ_REL);
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		cpu_relax();
	for (uint64_t i = 0; i < 80 * PARALLEL_PAIRS; i++) /* about as long as the pairs */
		random ^= random << 13, random ^= random >> 7, random ^= random << 17;
	sink += random;
	return 0;
}

static void bench_parallel(const char *what, thread_fn worker, unsigned cpus)
{
	struct thread *threads[MAX_CPUS];
	ready = go = done = 0;
	for (unsigned i = 0; i < cpus; i++) {
		threads[i] = thread_create(worker, (void *)(uintptr_t)(i + 1), "lattrack-bench",
					   SCHED_PRIORITY_NORMAL);
		if (!threads[i])
			panic("lattrack_bench: no thread");
		thread_set_affinity(threads[i], SMP_CPU_BIT(i));
	}
	while (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) < cpus)
		sched_sleep_ns(1000 * 1000);
	uint64_t start = clock_ns();
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < cpus; i++)
		thread_join(threads[i], NULL);
	uint64_t elapsed = clock_ns() - start;
	console_print("lattrack_bench: parallel %s cpus %u rounds %u ns %lu\n", what, cpus,
		      cpus * PARALLEL_PAIRS, elapsed);
}

void lattrack_bench_run_if_requested(void)
{
	if (!bench_requested)
		return;
	bench_cost();
	bench_tracker = make_tracker("bench-parallel");
	/* the boot thread stays off the measured CPUs' way: it only sleeps and joins */
	for (unsigned cpus = 1; cpus <= 2 && cpus <= smp_online_count(); cpus++) {
		bench_parallel("pairs", pair_worker, cpus);
		bench_parallel("control", control_worker, cpus);
	}
	struct lattrack_counts c;
	lattrack_get_counts(bench_tracker, &c);
	console_print("lattrack_bench: %lu in, %lu out, %lu dropped, %lu in flight\n", c.in, c.out,
		      c.dropped, c.in_flight);
	lattrack_destroy(bench_tracker);
	power_stop(POWER_REQUESTED);
}
