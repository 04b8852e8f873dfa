/*
 * The raw system call, for programs that must see exactly what the kernel
 * returns (tests, ps): Linux x86_64's convention, rax = number; rdi, rsi, rdx,
 * r10, r8, r9 = arguments; the result, or -errno (Linux's numbers, not
 * newlib's errno values), comes back in rax.  The numbers are the kernel's.
 *
 *     #include <microscope/syscall.h>
 *     long n = ms_syscall3(__NR_write, 1, (long)"hi\n", 3);
 *     if (n == -14) ... // EFAULT
 */
#ifndef MICROSCOPE_SYSCALL_H
#define MICROSCOPE_SYSCALL_H

#include "uapi/syscall_numbers.h"

/* Returns the kernel's result: >= 0, or -errno (Linux numbering). */
static inline long ms_syscall6(long number, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long result;
	__asm__ volatile("syscall"
			 : "=a"(result)
			 : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return result;
}

static inline long ms_syscall3(long number, long a, long b, long c)
{
	return ms_syscall6(number, a, b, c, 0, 0, 0);
}

#endif
