/*
 * parallel: a CPU-bound parallel user workload, the user-space half of the
 * SMP speed-up figure (docs/PERFORMANCE.md).  It forks a number of workers
 * that each run the same fixed hash chain (a multiply-xorshift mix, in
 * registers, no system calls) and measures the wall time from the first
 * fork to the last wait with CLOCK_MONOTONIC.  Every worker must reach the
 * same value (its low byte is the exit status), so a lost or corrupted worker
 * shows.  With -p worker i pins itself to CPU i modulo the CPUs it may use.
 * Without arguments (as init for tests/bench.py) it runs the defaults and
 * the last line is machine-readable:
 *
 *     parallel: workers 4 rounds 100000000 cpus 2 pinned 0 ns 1012345678 result 0x5c ok
 *
 *     parallel -w 8 -r 10000000 -p
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_WORKERS 4
#define DEFAULT_ROUNDS  100000000L
#define MAX_WORKERS     32

static uint64_t hash_chain(uint64_t x, long rounds)
{
	for (long i = 0; i < rounds; i++) {
		x ^= x >> 31;
		x *= 0x9e3779b97f4a7c15ULL;
		x ^= x >> 29;
	}
	return x;
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* The n-th CPU of set (wrapping), or -1 when the set is empty. */
static int nth_cpu(const cpu_set_t *set, int n)
{
	int count = CPU_COUNT(set);
	if (count == 0)
		return -1;
	n %= count;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, set) && n-- == 0)
			return cpu;
	return -1;
}

static void pin_to(int cpu)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (cpu < 0 || sched_setaffinity(0, sizeof one, &one) < 0)
		fprintf(stderr, "parallel: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
}

static __attribute__((noreturn)) void worker(int index, const cpu_set_t *pin_set, long rounds)
{
	if (pin_set)
		pin_to(nth_cpu(pin_set, index));
	_exit((int)(hash_chain(1, rounds) & 0xff));
}

/* Runs the workers; returns 0 when every one ended with the same value. */
static int run(int workers, long rounds, const cpu_set_t *pin_set, int *result)
{
	pid_t pids[MAX_WORKERS];
	int started = 0, failed = 0;
	for (; started < workers; started++) {
		pids[started] = fork();
		if (pids[started] == 0)
			worker(started, pin_set, rounds);
		if (pids[started] < 0) {
			fprintf(stderr, "parallel: fork: %s\n", strerror(errno));
			failed = 1;
			break;
		}
	}
	*result = -1;
	for (int i = 0; i < started; i++) {
		int status;
		if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status)) {
			failed = 1;
			continue;
		}
		if (*result >= 0 && WEXITSTATUS(status) != *result)
			failed = 1;
		*result = WEXITSTATUS(status);
	}
	return failed ? -1 : 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: parallel [-w workers (1..%d)] [-r rounds] [-p]\n", MAX_WORKERS);
	return 2;
}

int main(int argc, char **argv)
{
	int workers = DEFAULT_WORKERS, pinned = 0, option;
	long rounds = DEFAULT_ROUNDS;
	while ((option = getopt(argc, argv, "w:r:p")) != -1) {
		if (option == 'w')
			workers = atoi(optarg);
		else if (option == 'r')
			rounds = atol(optarg);
		else if (option == 'p')
			pinned = 1;
		else
			return usage();
	}
	if (workers < 1 || workers > MAX_WORKERS || rounds < 1 || optind != argc)
		return usage();
	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof allowed, &allowed) < 0) {
		fprintf(stderr, "parallel: sched_getaffinity: %s\n", strerror(errno));
		return 1;
	}
	printf("parallel: %d workers x %ld rounds, %s, %d CPUs\n", workers, rounds,
	       pinned ? "each pinned to a CPU" : "placed by the scheduler", CPU_COUNT(&allowed));
	fflush(stdout);
	int result;
	uint64_t start = now_ns();
	int error = run(workers, rounds, pinned ? &allowed : NULL, &result);
	uint64_t elapsed = now_ns() - start;
	printf("parallel: workers %d rounds %ld cpus %d pinned %d ns %llu result %#x %s\n", workers,
	       rounds, CPU_COUNT(&allowed), pinned, (unsigned long long)elapsed, result,
	       error ? "FAILED" : "ok");
	return error ? 1 : 0;
}
