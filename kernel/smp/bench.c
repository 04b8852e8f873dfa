/*
 * smp_bench (command line): measures what SMP costs and gives, prints
 * "smp_bench: ..." lines for tests/bench.py, and stops the machine.
 *
 *   - IPI round trip: CPU 0 calls an empty function on CPU 1 and waits for
 *     it, IPI_ROUNDS times; the figure is TSC ticks per round trip (guest
 *     instructions, summed over both CPUs, under QEMU -icount shift=0).
 *   - Parallel speed-up: PARALLEL_THREADS kernel threads each run the same
 *     CPU-bound loop (no memory traffic, no locks) and the wall time until
 *     all are joined is printed; runs with 1, 2 and 4 CPUs compare.
 */
#include "smp/smp.h"

#include "arch/x86_64/cpu.h"
#include "boot/cmdline.h"
#include "console/console.h"
#include "power/power.h"
#include "sched/sched.h"
#include "time/time.h"

#define IPI_ROUNDS       2000
#define PARALLEL_THREADS 4
#define PARALLEL_ROUNDS  (160u * 1000 * 1000)

static bool requested;

static int set_smp_bench(const char *value)
{
	requested = true;
	return 0;
}
KERNEL_PARAM(smp_bench, set_smp_bench, "measure IPI round trips and parallel speed-up, then stop");

static void empty_call(void *arg)
{
}

static void bench_ipi(void)
{
	uint64_t others = smp_online_mask() & ~SMP_CPU_BIT(0);
	if (!others) {
		console_print("smp_bench: ipi skipped (one CPU)\n");
		return;
	}
	uint64_t target = SMP_CPU_BIT(__builtin_ctzll(others));
	smp_call(target, empty_call, NULL, SMP_CALL_WAIT); /* warm-up */
	uint64_t start = rdtsc();
	for (unsigned i = 0; i < IPI_ROUNDS; i++)
		smp_call(target, empty_call, NULL, SMP_CALL_WAIT);
	uint64_t ticks = rdtsc() - start;
	console_print("smp_bench: ipi round trips %u ticks %lu\n", IPI_ROUNDS, ticks);
}

/* An xorshift loop: registers only, so CPUs do not slow each other down. */
static int spin_work(void *arg)
{
	uint64_t x = 88172645463325252ULL + (uintptr_t)arg;
	for (unsigned i = 0; i < PARALLEL_ROUNDS; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return (int)(x & 1);
}

static void bench_parallel(void)
{
	struct thread *threads[PARALLEL_THREADS];
	uint64_t start = clock_ns();
	for (unsigned i = 0; i < PARALLEL_THREADS; i++)
		threads[i] =
		    thread_create(spin_work, (void *)(uintptr_t)i, "bench", SCHED_PRIORITY_NORMAL);
	for (unsigned i = 0; i < PARALLEL_THREADS; i++)
		if (threads[i])
			thread_join(threads[i], NULL);
	uint64_t elapsed = clock_ns() - start;
	console_print("smp_bench: parallel cpus %u threads %u rounds %u ns %lu\n",
		      smp_online_count(), PARALLEL_THREADS, PARALLEL_ROUNDS, elapsed);
}

void smp_bench_run_if_requested(void)
{
	if (!requested)
		return;
	struct thread *self = thread_current();
	uint64_t affinity = thread_affinity(self);
	thread_set_affinity(self, SMP_CPU_BIT(0));
	bench_ipi();
	thread_set_affinity(self, affinity);
	bench_parallel();
	sched_print_cpu_stats();
	power_stop(POWER_REQUESTED);
}
