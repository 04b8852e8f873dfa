/*
 * stackbench: what a user stack costs at a system call, per scope mode, run
 * as init (init=/bin/stackbench exit=qemu) and timed with RDTSC, which under
 * QEMU -icount shift=0 counts guest instructions, so the figures repeat from
 * run to run; tests/bench.py (make bench) boots it that way and reads the
 * "uscope_bench: case <name> calls <n> ticks <t>" lines.
 *
 * Each case times getppid made deep down (main, run_case, one_batch, descend
 * x 7 in this program, then the libc wrapper), BATCHES batches of CALLS,
 * the median batch kept (a timer interrupt lands in some, not the median):
 *   off           no trace
 *   untraced      a trace of every kernel event (flight recorder: no drain
 *                 thread; one trace per case), this program not in the map
 *   mode1..mode4  the same trace, this program traced, budget 8: the stack's
 *                 cost is the difference to untraced
 *   stacks-off    a stacks-only trace (trace start --stacks, into /trace),
 *                 the program not traced
 *   stacks-mode2  the same, traced in mode 2 with budget 5 (bench-trace's):
 *                 the same stack every call, sent once and then as a
 *                 reference (kernel/trace/stack_memo.c)
 *   stacks-walked the same, each call from a stack depth the last 250 calls
 *                 did not use (alloca): every stack is walked and sent
 * Exits 0 when every control line was taken.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <microscope/syscall.h>

#define BATCHES            15
#define CALLS              100
#define DEPTH              6
#define CALIBRATION_ROUNDS 10000

static int failures;

static inline uint64_t ticks_now(void)
{
	uint32_t low, high;
	__asm__ volatile("rdtsc" : "=a"(low), "=d"(high));
	return (uint64_t)high << 32 | low;
}

static void shell(const char *line)
{
	if (ms_syscall3(__NR_ms_kshell, (long)line, 0, 0) != 0) {
		printf("uscope_bench: '%s' failed\n", line);
		failures++;
	}
}

static __attribute__((noipa)) long descend(int depth)
{
	if (!depth)
		return getppid();
	return descend(depth - 1) + 1;
}

static int shift_by_case; /* stacks-walked: each call from another depth */

/* descend, from a stack moved down by 16 bytes times the call's number
 * modulo 251 (a memo of stacks by their registers finds none of them). */
static __attribute__((noipa)) long descend_shifted(void)
{
	static unsigned call;
	volatile char *room = __builtin_alloca(16 * (call++ % 251 + 1));
	room[0] = 0;
	return descend(DEPTH);
}

static __attribute__((noipa)) uint64_t one_batch(void)
{
	uint64_t start = ticks_now();
	for (int i = 0; i < CALLS; i++)
		shift_by_case ? descend_shifted() : descend(DEPTH);
	return ticks_now() - start;
}

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static __attribute__((noipa)) void run_case(const char *name)
{
	uint64_t batches[BATCHES];
	one_batch(); /* warm up: the pages and the caches */
	for (int i = 0; i < BATCHES; i++)
		batches[i] = one_batch();
	qsort(batches, BATCHES, sizeof batches[0], by_value);
	printf("uscope_bench: case %s calls %d ticks %llu\n", name, CALLS,
	       (unsigned long long)batches[BATCHES / 2]);
}

/* One case in a trace of its own (the rings start empty: a flight
 * recorder that wraps costs more per record than one that does not). */
static void traced_case(const char *name, const char *trace, int mode, int budget)
{
	char line[80];
	snprintf(line, sizeof line, "trace start %s", trace);
	shell(line);
	if (mode) {
		snprintf(line, sizeof line, "uscope trace stackbench --mode %d --budget %d", mode,
			 budget);
		shell(line);
	}
	run_case(name);
	if (mode)
		shell("uscope untrace stackbench");
	shell("trace stop");
}

/* Ticks of a loop of CALIBRATION_ROUNDS * 10 + 1 instructions. */
static void calibrate(void)
{
	uint64_t start = ticks_now();
	__asm__ volatile("mov %0, %%ecx\n"
			 "1: nop; nop; nop; nop; nop; nop; nop; nop\n"
			 "dec %%ecx\n"
			 "jnz 1b\n"
			 :
			 : "i"(CALIBRATION_ROUNDS)
			 : "rcx", "cc");
	printf("uscope_bench: calibration %d instructions took %llu ticks\n",
	       CALIBRATION_ROUNDS * 10 + 1, (unsigned long long)(ticks_now() - start));
}

int main(void)
{
	calibrate();
	run_case("off");
	traced_case("untraced", "--flight", 0, 0);
	static const char *names[] = {"", "mode1", "mode2", "mode3", "mode4"};
	for (int mode = 1; mode <= 4; mode++)
		traced_case(names[mode], "--flight", mode, 8);
	traced_case("stacks-off", "--stacks", 0, 0);
	traced_case("stacks-mode2", "--stacks", 2, 5);
	shift_by_case = 1;
	traced_case("stacks-walked", "--stacks", 2, 5);
	return failures != 0;
}
