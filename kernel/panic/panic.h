/*
 * Stopping the kernel when something is wrong, with enough said to find out
 * why: the message, the CPU, the current thread, and a symbolized backtrace.
 *
 *     ASSERT(spin_held_by_me(&lock));
 *     if (frame > max) panic("pmm: frame %lx past the end", frame);
 */
#ifndef KERNEL_PANIC_PANIC_H
#define KERNEL_PANIC_PANIC_H

#include <stdint.h>

__attribute__((noreturn, format(printf, 1, 2))) void panic(const char *format, ...);

#define ASSERT(cond)                                                                      \
	do {                                                                              \
		if (!(cond))                                                              \
			panic("assertion '%s' failed at %s:%d", #cond, __FILE__, __LINE__); \
	} while (0)

/* Prints "  [<address>] function+0xoffset" lines walking RBP from rbp. */
void panic_print_backtrace(uint64_t rbp, int max_frames);

#endif
