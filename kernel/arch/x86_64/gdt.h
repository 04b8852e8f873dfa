/*
 * Per-CPU descriptor tables: each CPU gets its own GDT and TSS (the TSS holds
 * the per-CPU kernel stack for traps from user mode and the IST stacks), and
 * all CPUs share one IDT.  The selector order is fixed by SYSCALL/SYSRET:
 * kernel code, kernel data, then user data, then 64-bit user code.
 *
 *     percpu_install(index, apic_id);        // GS first: the tables live in struct cpu
 *     arch_cpu_tables_init(index);           // GDT, TSS, IDT loaded on this CPU
 *     tss_set_kernel_stack(thread_stack_top); // on every switch to a user thread
 */
#ifndef ARCH_X86_64_GDT_H
#define ARCH_X86_64_GDT_H

#define GDT_KERNEL_CODE 0x08
#define GDT_KERNEL_DATA 0x10
#define GDT_USER_DATA   0x1b /* 0x18 | RPL 3 */
#define GDT_USER_CODE   0x23 /* 0x20 | RPL 3, 64-bit */
#define GDT_TSS         0x28 /* 16-byte descriptor: two slots */

/* For MSR_STAR: SYSCALL loads CS = bits 47:32 and SS = that + 8; SYSRET to
 * 64-bit mode loads CS = bits 63:48 + 16 and SS = bits 63:48 + 8, RPL 3. */
#define GDT_STAR_SYSCALL_BASE GDT_KERNEL_CODE
#define GDT_STAR_SYSRET_BASE  0x13

/* Interrupt stack table slots (1-based, as the IDT gate names them). */
#define TSS_IST_DOUBLE_FAULT  1
#define TSS_IST_NMI           2
#define TSS_IST_MACHINE_CHECK 3
#define TSS_IST_COUNT         3
#define TSS_IST_STACK_SIZE    8192

#ifndef __ASSEMBLY__
#include <stdint.h>

/* Builds and loads the GDT and TSS of CPU cpu_index on the calling CPU and
 * loads the IDT (building it on the first call, which must be CPU 0's).  The
 * caller must have run percpu_install(cpu_index, ...) on this CPU.  Returns
 * nothing; bad use (wrong CPU, index out of range) panics. */
void arch_cpu_tables_init(unsigned cpu_index);

/* Sets the stack the CPU switches to on a trap from user mode (TSS.RSP0) on
 * the calling CPU.  Call with preemption off. */
void tss_set_kernel_stack(uint64_t rsp0);

/* Where TSS.RSP0 lies in a CPU's arch area (cpu->arch; gdt.c checks it). */
#define ARCH_CPU_TSS_RSP0_OFFSET (7 * 8 + 4)

/* tss_set_kernel_stack for arch, the calling CPU's cpu->arch, in line: the
 * scheduler sets it at every switch, and a call costs more than the store. */
static inline void tss_set_kernel_stack_of(void *arch, uint64_t rsp0)
{
	__builtin_memcpy((char *)arch + ARCH_CPU_TSS_RSP0_OFFSET, &rsp0, sizeof rsp0);
}

/* Returns the IST slot (TSS_IST_*) whose stack on the calling CPU contains
 * address, or 0 when none does. */
int tss_ist_stack_of(uint64_t address);
#endif

#endif
