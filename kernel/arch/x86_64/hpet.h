/*
 * The HPET's main counter, as a reference clock: a fixed-rate counter whose
 * period the hardware states in femtoseconds.  The clock calibrates the TSC
 * against it; its comparators are not used.
 *
 *     if (!hpet_init())
 *             start = hpet_read_counter();
 *     ... elapsed_fs = (hpet_read_counter() - start) * hpet_period_fs();
 */
#ifndef ARCH_X86_64_HPET_H
#define ARCH_X86_64_HPET_H

#include <stdint.h>

/* Maps the HPET the ACPI table describes and starts its main counter.
 * Returns 0, -ENODEV (no usable HPET table), -ENOMEM (cannot map it) or -EIO
 * (the registers state an impossible period).  Boot CPU, after acpi_init. */
int hpet_init(void);
/* The main counter (0 before hpet_init succeeded).  A 32-bit counter wraps;
 * hpet_counter_mask says how wide it is. */
uint64_t hpet_read_counter(void);
/* All ones over the counter's width (32 or 64 bits). */
uint64_t hpet_counter_mask(void);
/* Femtoseconds per counter tick, 0 when there is no HPET. */
uint64_t hpet_period_fs(void);

#endif
