/*
 * Time: a monotonic nanosecond clock from the TSC, calibrated at boot against
 * the PIT and then the HPET; the per-CPU tick from the LAPIC timer (hz= on the
 * command line, 1000 by default); and one-shot deadlines met between ticks.
 * The clock's parameters are also published in one read-only page that every
 * process maps (the user clock), so user space reads the time without a
 * system call, with the same arithmetic (clock_scale_ns, in uapi/time.h).
 *
 *     static struct timer_oneshot wake;
 *     timer_arm_oneshot_ns(&wake, clock_ns() + 5 * NSEC_PER_MSEC, on_wake, thread);
 *     timer_set_tick_callback(sched_tick);
 */
#ifndef KERNEL_TIME_TIME_H
#define KERNEL_TIME_TIME_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "uapi/time.h"

/* ---- Clock ----------------------------------------------------------------- */

/* Nanoseconds since the TSC was first calibrated; 0 before that.  Monotonic on
 * every CPU and across CPUs (the TSC is invariant and synchronised). */
uint64_t clock_ns(void);
/* The clock's scale (clock.c), written only on the boot CPU before the
 * others start: read without a lock. */
extern struct clock_scale clock_kernel_scale;
/* clock_ns in line, for the IPC round trip, which reads the clock once on
 * each side: the call, its return and the registers it clobbers cost a
 * third of the reading. */
static inline __attribute__((always_inline)) uint64_t clock_ns_inline(void)
{
	return clock_scale_ns(&clock_kernel_scale, rdtsc());
}
/* The clock_ns() time at which the TSC read tsc (a timestamp taken earlier with
 * RDTSC, as join-point contexts hold), so two such stamps convert consistently. */
uint64_t clock_ns_at_tsc(uint64_t tsc);
/* The clock_ns() time timeout_ns after now, or UINT64_MAX (never) when
 * that is past the clock's range: the sum would wrap into the past and end
 * the wait at once. */
static inline uint64_t clock_deadline_after(uint64_t now, uint64_t timeout_ns)
{
	return timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;
}
/* Calibrated TSC frequency in Hz, 0 before calibration. */
uint64_t clock_tsc_hz(void);
/* The reference the TSC was calibrated against: "PIT", "HPET", "assumed" (none
 * answered) or "none". */
const char *clock_reference(void);
/* Converts a TSC delta to nanoseconds. */
uint64_t clock_tsc_to_ns(uint64_t cycles);
/* Measures the TSC against the PIT and starts clock_ns().  Boot CPU, first. */
void clock_init(void);
/* Measures the TSC again against the HPET when ACPI lists one; clock_ns()
 * continues from its current value at the new rate.  Returns 0, or the error
 * of hpet_init (-ENODEV: no HPET), or -ETIMEDOUT when the HPET did not
 * advance, with the PIT measured again (or, stuck too, the rate kept).  Boot
 * CPU, after acpi_init, before other CPUs start. */
int clock_calibrate_hpet(void);
/* Calls done(ctx) until it returns true (then returns true), or until a
 * call begun after budget_cycles of TSC had passed, or the max_polls-th
 * call, returned false (then false): how a calibration waits for its
 * reference without hanging on a stuck one, and without calling a working
 * one stuck because its CPU was not run for the whole budget. */
bool clock_poll_until(bool (*done)(void *ctx), void *ctx, uint64_t budget_cycles,
		      uint64_t max_polls);
/* Busy-waits for at least ns nanoseconds (works before the scheduler). */
void clock_delay_ns(uint64_t ns);

/* ---- Steal time (steal.c) ---------------------------------------------------- */

/* Whether the hypervisor reports steal time (KVM's CPUID signature and
 * KVM_FEATURE_STEAL_TIME); false on bare metal and under an emulator such as
 * QEMU's TCG, which report none: then there is no figure, not a zero. */
bool clock_steal_reported(void);
/* Nanoseconds this CPU's vCPU was runnable but not running (the hypervisor
 * ran something else), since this CPU first asked; 0 when not reported.
 * Preemption off. */
uint64_t clock_steal_ns(void);

/* The physical address of the user clock page (a page of the kernel image,
 * never freed), for mapping it read-only into a process. */
uint64_t clock_user_page_phys(void);

/* ---- Tick and one-shot timers ---------------------------------------------- */

struct timer_oneshot;
/* Runs in interrupt context on the CPU that armed the timer. */
typedef void (*timer_callback)(struct timer_oneshot *timer, void *ctx);

/* Owned by the caller (embed it in what it wakes), zeroed before first use;
 * the fields are private to the timer code. */
struct timer_oneshot {
	uint64_t deadline_ns;
	timer_callback callback;
	void *ctx;
	struct timer_oneshot *next;
	unsigned queue; /* 1 + index of the CPU whose queue holds it; 0: not armed */
};

typedef void (*timer_tick_fn)(void);

/* Calibrates the LAPIC timer against the TSC (after clock_calibrate_hpet),
 * takes its interrupt vector and starts the tick on the boot CPU.  Panics
 * when the LAPIC timer does not count. */
void timer_init(void);
/* Starts the tick on another CPU, as it comes up (after apic_init_cpu). */
void timer_init_cpu(void);
/* Sets the function every CPU's tick calls, in interrupt context, after
 * expired one-shots ran (NULL: none).  Returns the previous one. */
timer_tick_fn timer_set_tick_callback(timer_tick_fn callback);
/* Ticks this CPU has taken since its timer started. */
uint64_t timer_tick_count(void);
/* When this CPU's timer is set to fire next (clock_ns() time): its tick or
 * a sooner one-shot.  Interrupts off for a reading that stays true. */
uint64_t timer_armed_ns(void);
/* When this CPU's next tick is due (clock_ns() time): one load, for the
 * scheduler's test of every timed block. */
static inline uint64_t timer_next_tick_ns(void)
{
	return this_cpu_read(next_tick_ns);
}
/* The tick rate in Hz (hz= on the command line). */
unsigned timer_hz(void);
/* Arms timer to call callback(timer, ctx) once, on the calling CPU, in the
 * timer interrupt at deadline_ns (clock_ns() time; the LAPIC timer is armed
 * for it when it comes before the next tick; a past deadline fires at once).
 * Returns 0, -EINVAL (NULL timer or callback) or -EBUSY (already armed). */
int timer_arm_oneshot_ns(struct timer_oneshot *timer, uint64_t deadline_ns, timer_callback callback,
			 void *ctx);
/* Disarms timer.  Returns 0, or -ENOENT when it was not armed (it may have
 * fired: its callback may still be running on another CPU). */
int timer_cancel_oneshot(struct timer_oneshot *timer);

#endif
