/*
 * Time as user space sees it: nanosecond units, how a TSC reading becomes
 * clock time (clock_scale_ns: the kernel and user space compute the time with
 * this one function) and the user clock page mapped read-only into every
 * process (kernel/time/time.h is the kernel side).  Plain declarations.
 */
#ifndef UAPI_TIME_H
#define UAPI_TIME_H

#include <stdint.h>

#define NSEC_PER_SEC  1000000000ULL
#define NSEC_PER_MSEC 1000000ULL
#define NSEC_PER_USEC 1000ULL

/* How a TSC reading becomes clock_ns() time: base_ns + (tsc - base_tsc) *
 * ns_mult / 2^32.  The kernel and user space (the user clock page) compute
 * the time with this one function, so both get the same nanosecond. */
struct clock_scale {
	uint64_t base_tsc;
	uint64_t base_ns;
	uint64_t ns_mult; /* nanoseconds per cycle, 32.32 fixed point; 0 before calibration */
};

/* The time at TSC reading tsc.  A reading below base_tsc (a CPU whose TSC
 * lags, just after the base moved) is base_ns, so the clock never goes back. */
static inline uint64_t clock_scale_ns(const struct clock_scale *scale, uint64_t tsc)
{
	if (tsc < scale->base_tsc)
		return scale->base_ns;
	return scale->base_ns +
	       (uint64_t)(((unsigned __int128)(tsc - scale->base_tsc) * scale->ns_mult) >> 32);
}

/* ---- The user clock page ----------------------------------------------------- */

/* A page of its own, mapped read-only into every process (kernel/proc, at
 * exec; fork keeps it), whose address the auxiliary vector gives under
 * CLOCK_USER_AT.  The kernel writes it only when the clock's rate changes,
 * inside a sequence count: a reader copies the scale and reads the TSC while
 * the count is even and the same before and after, then calls clock_scale_ns.
 * CLOCK_REALTIME is CLOCK_MONOTONIC (no wall-clock source yet), as in the
 * system calls.  Without CLOCK_USER_USABLE (not calibrated yet, or
 * user_clock=off) user space asks the kernel instead. */
#define CLOCK_USER_AT     0x6d73636cUL /* an auxv key of microScope's own ("mscl") */
#define CLOCK_USER_USABLE 1u

struct clock_user_page {
	uint32_t sequence; /* odd while the kernel writes */
	uint32_t flags;    /* CLOCK_USER_* */
	struct clock_scale scale;
};

#endif
