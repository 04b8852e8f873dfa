/*
 * Time: a monotonic nanosecond clock from the TSC, calibrated at boot against
 * the PIT (or HPET), and the per-CPU tick and one-shot deadlines from the LAPIC
 * timer.
 *
 *     uint64_t start = clock_ns();
 *     ...
 *     pr_info("took %lu ns\n", clock_ns() - start);
 */
#ifndef KERNEL_TIME_TIME_H
#define KERNEL_TIME_TIME_H

#include <stdint.h>

#define NSEC_PER_SEC 1000000000ULL
#define NSEC_PER_MSEC 1000000ULL
#define NSEC_PER_USEC 1000ULL

/* Nanoseconds since the TSC was calibrated; 0 before that. */
uint64_t clock_ns(void);
/* Calibrated TSC frequency in Hz, 0 before calibration. */
uint64_t clock_tsc_hz(void);
/* Converts a TSC delta to nanoseconds. */
uint64_t clock_tsc_to_ns(uint64_t cycles);
/* Measures the TSC against a reference timer and starts clock_ns(). */
void clock_init(void);
/* Busy-waits for at least ns nanoseconds (works before the scheduler). */
void clock_delay_ns(uint64_t ns);

#endif
