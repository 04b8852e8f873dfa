/*
 * The interrupt descriptor table, shared by every CPU: 256 interrupt gates,
 * each to its own entry stub in isr.S, which saves a struct trap_frame and
 * calls the C dispatcher (traps.c: exceptions; kernel/irq: everything else).
 * Double fault, NMI and machine check run on their own IST stacks; #BP and #OF
 * may be raised from user mode.
 *
 *     idt_init();   // once, on the boot CPU (arch_cpu_tables_init does it)
 *     idt_load();   // on every CPU
 */
#ifndef ARCH_X86_64_IDT_H
#define ARCH_X86_64_IDT_H

#define IDT_VECTORS        256
#define IDT_SYSCALL_VECTOR 0x80 /* "int $0x80" from user mode: a system call */

/* Fills the table; safe to call again (it rewrites the same gates). */
void idt_init(void);
/* Loads the table on the calling CPU (LIDT). */
void idt_load(void);

#endif
