/*
 * Stopping the kernel when something is wrong, with enough said to find out
 * why: the message, the CPU, the current thread, and a symbolized backtrace.
 * Reports with more to say (the exception handler's registers) use the
 * begin/end pair around their own lines.
 *
 *     ASSERT(spin_held_by_me(&lock));
 *     if (frame > max) panic("pmm: frame %lx past the end", frame);
 */
#ifndef KERNEL_PANIC_PANIC_H
#define KERNEL_PANIC_PANIC_H

#include <stdbool.h>
#include <stdint.h>

__attribute__((noreturn, format(printf, 1, 2))) void panic(const char *format, ...);

#define ASSERT(cond)                                                                        \
	do {                                                                                \
		if (!(cond))                                                                \
			panic("assertion '%s' failed at %s:%d", #cond, __FILE__, __LINE__); \
	} while (0)

/* Starts a panic report: interrupts off, console lock bypassed, then the
 * "*** KERNEL PANIC on cpu N: message" line and the current thread.  Returns
 * true for the first panic; false for a panic while reporting another, when
 * the caller should go straight to panic_end (the state it would print may be
 * what broke the first report). */
__attribute__((format(printf, 1, 2))) bool panic_begin(const char *format, ...);
/* Ends the report and stops the machine (power_stop(POWER_PANIC)). */
__attribute__((noreturn)) void panic_end(void);

/* Prints "  [<address>] function+0xoffset" lines walking RBP from rbp. */
void panic_print_backtrace(uint64_t rbp, int max_frames);
/* The same for a trap frame: first the line for rip itself, then its caller
 * found through rsp when the faulting function had no frame record yet (a
 * leaf, or a fault in its prologue), then the RBP chain. */
void panic_print_backtrace_from(uint64_t rip, uint64_t rsp, uint64_t rbp, int max_frames);

#endif
