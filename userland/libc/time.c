/*
 * Time: clock_gettime, gettimeofday, times, nanosleep, sleep and usleep.
 * newlib numbers its clocks its own way (CLOCK_REALTIME is 1, CLOCK_MONOTONIC
 * 4); the kernel takes Linux's (0 and 1).  Sleeps restart after an
 * interruption with the time that remains.
 *
 * Those two clocks are read without a system call when the kernel maps its user
 * clock page (kernel/time/time.h; the auxiliary vector's CLOCK_USER_AT gives
 * the address): copy the scale and read the TSC while the page's sequence
 * count is even and unchanged, then clock_scale_ns, the kernel's own
 * arithmetic.  Without the page (another kernel: the programs also run on
 * Linux) or when it says it is unusable, clock_gettime is the system call.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>
#include <sys/times.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "uapi/time.h"

/* newlib's clock ids (its <time.h>, which names 2 and 3 only under
 * _POSIX_CPUTIME and _POSIX_THREAD_CPUTIME, 0 and 5..9 only under
 * _GNU_SOURCE) and Linux's, indexed by newlib's.  The kernel refuses the
 * ones it does not keep (the coarse and alarm clocks) with EINVAL. */
static const long linux_clocks[] = {
    5, /* CLOCK_REALTIME_COARSE */
    0, /* CLOCK_REALTIME */
    2, /* CLOCK_PROCESS_CPUTIME_ID */
    3, /* CLOCK_THREAD_CPUTIME_ID */
    1, /* CLOCK_MONOTONIC */
    4, /* CLOCK_MONOTONIC_RAW */
    6, /* CLOCK_MONOTONIC_COARSE */
    7, /* CLOCK_BOOTTIME */
    8, /* CLOCK_REALTIME_ALARM */
    9, /* CLOCK_BOOTTIME_ALARM */
};

static long clock_to_linux(clockid_t clock)
{
	if ((unsigned long)clock >= sizeof linux_clocks / sizeof linux_clocks[0]) /* or negative */
		return -1;
	return linux_clocks[clock];
}

/* The clocks the user clock page keeps: CLOCK_REALTIME and CLOCK_MONOTONIC
 * (the same time, kernel/syscall/sys_time.c). */
static bool on_user_clock_page(clockid_t clock)
{
	return clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC;
}

/* The kernel's user clock page, or NULL when there is none.  Looked up once;
 * a second thread looking at the same time finds the same answer. */
static const volatile struct clock_user_page *user_clock_page(void)
{
	static const volatile struct clock_user_page *page;
	static volatile bool looked;
	if (!looked) {
		page = (const volatile struct clock_user_page *)getauxval(CLOCK_USER_AT);
		looked = true;
	}
	return page;
}

/* RDTSC after every earlier load (the page's fields) has completed. */
static inline uint64_t read_tsc_ordered(void)
{
	uint32_t low, high;
	__asm__ volatile("lfence\n\trdtsc" : "=a"(low), "=d"(high) : : "memory");
	return ((uint64_t)high << 32) | low;
}

/* The clock from the page: true with *ns, false when there is no usable page. */
static bool user_clock_ns(uint64_t *ns)
{
	const volatile struct clock_user_page *page = user_clock_page();
	if (!page)
		return false;
	uint32_t sequence, flags;
	struct clock_scale scale;
	uint64_t tsc;
	do {
		while ((sequence = page->sequence) & 1)
			__asm__ volatile("pause");
		__asm__ volatile("" ::: "memory"); /* x86 keeps loads in order */
		flags = page->flags;
		scale.base_tsc = page->scale.base_tsc;
		scale.base_ns = page->scale.base_ns;
		scale.ns_mult = page->scale.ns_mult;
		tsc = read_tsc_ordered();
	} while (page->sequence != sequence);
	if (!(flags & CLOCK_USER_USABLE))
		return false;
	*ns = clock_scale_ns(&scale, tsc);
	return true;
}

int clock_gettime(clockid_t clock, struct timespec *time)
{
	long id = clock_to_linux(clock);
	if (id < 0) {
		errno = EINVAL;
		return -1;
	}
	uint64_t ns;
	if (!on_user_clock_page(clock) || !user_clock_ns(&ns))
		return (int)sys_result(ms_syscall3(__NR_clock_gettime, id, (long)time, 0));
	time->tv_sec = (time_t)(ns / NSEC_PER_SEC);
	time->tv_nsec = (long)(ns % NSEC_PER_SEC);
	return 0;
}

int gettimeofday(struct timeval *__restrict time, void *__restrict zone)
{
	struct timespec now;
	if (clock_gettime(CLOCK_REALTIME, &now) < 0)
		return -1;
	if (time) {
		time->tv_sec = now.tv_sec;
		time->tv_usec = now.tv_nsec / 1000;
	}
	return 0;
}
ALSO_NAMED(gettimeofday, _gettimeofday);

/* The kernel counts in 1/100 s (Linux's USER_HZ); newlib's clock() divides
 * by CLOCKS_PER_SEC (1000 here), so every field is scaled on the way. */
#define KERNEL_TICKS_PER_SEC 100

clock_t times(struct tms *buffer)
{
	struct tms kernel;
	long result = sys_result(ms_syscall3(__NR_times, (long)&kernel, 0, 0));
	if (result < 0)
		return (clock_t)-1;
	const clock_t scale = CLOCKS_PER_SEC / KERNEL_TICKS_PER_SEC;
	buffer->tms_utime = kernel.tms_utime * scale;
	buffer->tms_stime = kernel.tms_stime * scale;
	buffer->tms_cutime = kernel.tms_cutime * scale;
	buffer->tms_cstime = kernel.tms_cstime * scale;
	return (clock_t)result * scale;
}
ALSO_NAMED(times, _times);

int nanosleep(const struct timespec *request, struct timespec *remaining)
{
	return (int)sys_result(ms_syscall3(__NR_nanosleep, (long)request, (long)remaining, 0));
}

static int sleep_for(time_t seconds, long nanoseconds)
{
	struct timespec request = {seconds, nanoseconds}, remaining;
	while (nanosleep(&request, &remaining) < 0) {
		if (errno != EINTR)
			return -1;
		request = remaining;
	}
	return 0;
}

unsigned sleep(unsigned seconds)
{
	return sleep_for(seconds, 0) < 0 ? seconds : 0;
}

int usleep(useconds_t microseconds)
{
	return sleep_for(microseconds / 1000000, (long)(microseconds % 1000000) * 1000);
}
