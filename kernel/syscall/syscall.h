/*
 * System calls: the table from numbers (uapi/syscall_numbers.h, Linux x86_64's) to
 * handlers, and the macro that defines a handler.  SYSCALL_DEFINEn(name, type1,
 * arg1, ...) defines `long sys_<name>(type1 arg1, ...)` as the join point
 * "sys.<name>" and lists it for __NR_<name> in the .syscalls section (the
 * table is the section: nothing registers at run time).  A handler returns its
 * result or a negative errno, which user space sees in rax.  Pointer arguments
 * are user addresses: touch them only through uaccess/uaccess.h.
 *
 *     SYSCALL_DEFINE3(read, int, fd, void *, buffer, size_t, count)
 *     {
 *             return vfs_read_fd(fd, buffer, count);   // or -EBADF, -EFAULT, ...
 *     }
 *
 * A handler must return to its caller (exit and execve do: the process code
 * finishes the exit, or enters the new program, on the way back to user mode).
 *
 * The whole table, number by number, is docs/SYSCALLS.md (tools/mksyscalls.py
 * writes it from the sources) and, in the running kernel, the console command
 * `syscalls`.
 */
#ifndef KERNEL_SYSCALL_SYSCALL_H
#define KERNEL_SYSCALL_SYSCALL_H

#include <stdint.h>

#include "arch/x86_64/trapframe.h"
#include "joinpoint/joinpoint.h"
#include "uapi/syscall_numbers.h"

/* One handler, as SYSCALL_DEFINEn lays it out in .syscalls.  call reads the
 * arguments where the entry saved them (rdi, rsi, rdx, r10, r8, r9 of the
 * frame): no copy of them on the way in. */
struct syscall_entry {
	unsigned number;
	const char *name;
	long (*call)(const struct trap_frame *frame); /* calls sys_<name> (the join point) */
	const char *file;                             /* its source: "kernel/acct/syscalls.c" */
};

/* Builds the number → handler table from .syscalls and sets up SYSCALL/SYSRET
 * (MSR_STAR, LSTAR, FMASK, EFER.SCE) on the calling CPU.  Once per CPU; the
 * first call, on the boot CPU, builds the table and panics on a duplicate or
 * out-of-range number. */
void syscall_init_cpu(void);

/* Runs system call number with args[0..5], in a thread with interrupts on
 * (a system call may sleep; its trace records count on it).  Returns the
 * handler's result, or -ENOSYS for a number with no handler. */
long syscall_dispatch(uint64_t number, const uint64_t *args);

/* Returns the handler entry for number, or NULL. */
const struct syscall_entry *syscall_find(uint64_t number);

/* The user registers saved on entry to the system call (or interrupt) the
 * calling thread is in: a handler may change them (execve sets rip and rsp;
 * the value returned goes to rax afterwards).  Only valid in a thread that
 * entered the kernel from user mode. */
struct trap_frame *syscall_user_frame(void);

/* ---- Defining a handler -------------------------------------------------- */

#define SYSCALL_DEFINE0(sysname)      SYSCALL__DEFINE(0, sysname)
#define SYSCALL_DEFINE1(sysname, ...) SYSCALL__DEFINE(1, sysname, __VA_ARGS__)
#define SYSCALL_DEFINE2(sysname, ...) SYSCALL__DEFINE(2, sysname, __VA_ARGS__)
#define SYSCALL_DEFINE3(sysname, ...) SYSCALL__DEFINE(3, sysname, __VA_ARGS__)
#define SYSCALL_DEFINE4(sysname, ...) SYSCALL__DEFINE(4, sysname, __VA_ARGS__)
#define SYSCALL_DEFINE5(sysname, ...) SYSCALL__DEFINE(5, sysname, __VA_ARGS__)
#define SYSCALL_DEFINE6(sysname, ...) SYSCALL__DEFINE(6, sysname, __VA_ARGS__)

/* The declaration, the unpacking thunk, the table entry, then the join point
 * whose body the macro's user writes.  The thunk ends in a jump to the
 * handler, not a call (the kernel is built without sibling calls): the
 * handler returns straight to the dispatcher, and the thunk needs no frame
 * of its own. */
#define SYSCALL__THUNK_ATTRIBUTES static __attribute__((optimize("optimize-sibling-calls")))
// clang-format off
#define SYSCALL__DEFINE(n, sysname, ...)                                                \
	long sys_##sysname(SYSCALL__PARAMS_##n(__VA_ARGS__));                           \
	SYSCALL__THUNK_ATTRIBUTES long                                                  \
	syscall_call_##sysname(const struct trap_frame *syscall_frame)                  \
	{                                                                               \
		(void)syscall_frame;                                                    \
		return sys_##sysname(SYSCALL__UNPACK_##n(__VA_ARGS__));                 \
	}                                                                               \
	const struct syscall_entry syscall_entry_##sysname                              \
		__attribute__((section(".syscalls"), used, aligned(8))) = {             \
			.number = __NR_##sysname,                                       \
			.name = #sysname,                                               \
			.call = syscall_call_##sysname,                                 \
			.file = __FILE__,                                               \
	};                                                                              \
	JOINPOINT_DEFINE_AS(sys, sysname, sys_##sysname, long, ##__VA_ARGS__)
// clang-format on

#define SYSCALL__PARAMS_0()                                       void
#define SYSCALL__PARAMS_1(t0, a0)                                 t0 a0
#define SYSCALL__PARAMS_2(t0, a0, t1, a1)                         t0 a0, t1 a1
#define SYSCALL__PARAMS_3(t0, a0, t1, a1, t2, a2)                 t0 a0, t1 a1, t2 a2
#define SYSCALL__PARAMS_4(t0, a0, t1, a1, t2, a2, t3, a3)         t0 a0, t1 a1, t2 a2, t3 a3
#define SYSCALL__PARAMS_5(t0, a0, t1, a1, t2, a2, t3, a3, t4, a4) t0 a0, t1 a1, t2 a2, t3 a3, t4 a4
#define SYSCALL__PARAMS_6(t0, a0, t1, a1, t2, a2, t3, a3, t4, a4, t5, a5) \
	t0 a0, t1 a1, t2 a2, t3 a3, t4 a4, t5 a5

#define SYSCALL__UNPACK_0()
#define SYSCALL__UNPACK_1(t0, a0)         (t0) syscall_frame->rdi
#define SYSCALL__UNPACK_2(t0, a0, t1, a1) (t0) syscall_frame->rdi, (t1)syscall_frame->rsi
#define SYSCALL__UNPACK_3(t0, a0, t1, a1, t2, a2) \
	SYSCALL__UNPACK_2(t0, a0, t1, a1), (t2)syscall_frame->rdx
#define SYSCALL__UNPACK_4(t0, a0, t1, a1, t2, a2, t3, a3) \
	SYSCALL__UNPACK_3(t0, a0, t1, a1, t2, a2), (t3)syscall_frame->r10
#define SYSCALL__UNPACK_5(t0, a0, t1, a1, t2, a2, t3, a3, t4, a4) \
	SYSCALL__UNPACK_4(t0, a0, t1, a1, t2, a2, t3, a3), (t4)syscall_frame->r8
#define SYSCALL__UNPACK_6(t0, a0, t1, a1, t2, a2, t3, a3, t4, a4, t5, a5) \
	SYSCALL__UNPACK_5(t0, a0, t1, a1, t2, a2, t3, a3, t4, a4), (t5)syscall_frame->r9

#endif
