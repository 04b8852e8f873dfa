/* Private to kernel/syscall: the .syscalls section as the linker lays it out
 * (kernel.ld), one struct syscall_entry per SYSCALL_DEFINEn in any order.
 * syscall.c builds the number-indexed table from it; the suite checks it. */
#ifndef KERNEL_SYSCALL_INTERNAL_H
#define KERNEL_SYSCALL_INTERNAL_H

#include "syscall/syscall.h"

extern const struct syscall_entry __syscalls_start[], __syscalls_end[];

#endif
