/*
 * System calls about time and the CPU that belong to no process state:
 * clock_gettime, gettimeofday, times and sched_yield.  Both clocks count from boot
 * (the machine has no wall-clock source yet): CLOCK_REALTIME is the same as
 * CLOCK_MONOTONIC, nanoseconds since the kernel started its clock.
 */
#include "lib/errno.h"
#include "sched/sched.h"
#include "syscall/syscall.h"
#include "time/time.h"
#include "uaccess/uaccess.h"

#define CLOCK_REALTIME           0
#define CLOCK_MONOTONIC          1
#define CLOCK_PROCESS_CPUTIME_ID 2
#define CLOCK_THREAD_CPUTIME_ID  3
#define CLOCK_MONOTONIC_RAW      4
#define CLOCK_BOOTTIME           7
#define NSEC_PER_SEC             1000000000ULL
#define NSEC_PER_CLOCK_TICK      10000000ULL /* times() counts in 1/100 s, as Linux's USER_HZ */

struct timespec_user {
	int64_t seconds;
	int64_t nanoseconds;
};

struct timeval_user {
	int64_t seconds;
	int64_t microseconds;
};

static bool clock_known(int clock)
{
	return clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC ||
	       clock == CLOCK_PROCESS_CPUTIME_ID || clock == CLOCK_THREAD_CPUTIME_ID ||
	       clock == CLOCK_MONOTONIC_RAW || clock == CLOCK_BOOTTIME;
}

SYSCALL_DEFINE2(clock_gettime, int, clock, struct timespec_user *, time)
{
	if (!clock_known(clock))
		return -EINVAL;
	/* A process is one thread today: both CPU-time clocks are the
	 * scheduler's count of the caller's time on a CPU. */
	bool cpu_time = clock == CLOCK_PROCESS_CPUTIME_ID || clock == CLOCK_THREAD_CPUTIME_ID;
	uint64_t now = cpu_time ? thread_cpu_time_ns(thread_current()) : clock_ns();
	struct timespec_user t = {(int64_t)(now / NSEC_PER_SEC), (int64_t)(now % NSEC_PER_SEC)};
	return copy_to_user(time, &t, sizeof t);
}

SYSCALL_DEFINE2(clock_getres, int, clock, struct timespec_user *, resolution)
{
	if (!clock_known(clock))
		return -EINVAL;
	struct timespec_user t = {0, 1};
	return resolution ? copy_to_user(resolution, &t, sizeof t) : 0;
}

SYSCALL_DEFINE2(gettimeofday, struct timeval_user *, time, void *, zone)
{
	(void)zone;
	uint64_t now = clock_ns();
	struct timeval_user t = {(int64_t)(now / NSEC_PER_SEC),
				 (int64_t)(now % NSEC_PER_SEC / 1000)};
	return time ? copy_to_user(time, &t, sizeof t) : 0;
}

struct tms_user {
	int64_t user_time;
	int64_t system_time;
	int64_t children_user_time;
	int64_t children_system_time;
};

/* The calling thread's CPU time counts as user time (the scheduler does not
 * split it); returns the clock ticks since boot. */
SYSCALL_DEFINE1(times, struct tms_user *, buffer)
{
	struct thread_stats stats;
	thread_get_stats(thread_current(), &stats);
	struct tms_user t = {(int64_t)(stats.run_ns / NSEC_PER_CLOCK_TICK), 0, 0, 0};
	if (buffer && copy_to_user(buffer, &t, sizeof t) < 0)
		return -EFAULT;
	return (long)(clock_ns() / NSEC_PER_CLOCK_TICK);
}

SYSCALL_DEFINE0(sched_yield)
{
	sched_yield();
	return 0;
}
