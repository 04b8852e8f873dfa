/*
 * CPU exceptions (vectors 0-31): what the kernel does when one happens.  A
 * fault from user mode goes to the handler the process code registers; a #PF
 * or #GP in the kernel at an instruction listed in the exception table resumes
 * at its fix-up (how copy_from_user survives bad pointers); anything else is
 * a panic report naming the exception, the registers and a symbolized
 * backtrace that starts at the faulting instruction.  An NMI is counted and
 * resumed; a #DF or #MC is always a panic report.
 *
 *     long err = -EFAULT;
 *     __asm__("1: movq (%2), %0\n xor %k1, %k1\n 2:\n" EX_TABLE_ENTRY(1b, 2b)
 *             : "=r"(value), "+r"(err) : "r"(user_pointer));
 */
#ifndef ARCH_X86_64_TRAPS_H
#define ARCH_X86_64_TRAPS_H

#define TRAP_DIVIDE_ERROR         0
#define TRAP_DEBUG                1
#define TRAP_NMI                  2
#define TRAP_BREAKPOINT           3
#define TRAP_OVERFLOW             4
#define TRAP_BOUND_RANGE          5
#define TRAP_INVALID_OPCODE       6
#define TRAP_DEVICE_NOT_AVAILABLE 7
#define TRAP_DOUBLE_FAULT         8
#define TRAP_INVALID_TSS          10
#define TRAP_SEGMENT_NOT_PRESENT  11
#define TRAP_STACK_FAULT          12
#define TRAP_GENERAL_PROTECTION   13
#define TRAP_PAGE_FAULT           14
#define TRAP_X87_FLOATING_POINT   16
#define TRAP_ALIGNMENT_CHECK      17
#define TRAP_MACHINE_CHECK        18
#define TRAP_SIMD_FLOATING_POINT  19
#define TRAP_VIRTUALIZATION       20
#define TRAP_CONTROL_PROTECTION   21
#define TRAP_EXCEPTION_COUNT      32

/* Page-fault error code bits. */
#define PF_ERROR_PRESENT        (1u << 0) /* protection violation (else: page not present) */
#define PF_ERROR_WRITE          (1u << 1)
#define PF_ERROR_USER           (1u << 2)
#define PF_ERROR_RESERVED       (1u << 3) /* a reserved bit set in a paging entry */
#define PF_ERROR_FETCH          (1u << 4) /* instruction fetch */
#define PF_ERROR_PROTECTION_KEY (1u << 5)
#define PF_ERROR_SHADOW_STACK   (1u << 6)

#ifdef __ASSEMBLY__
/* Lists fault as an instruction that may fault, resuming at fixup. */
.macro EX_TABLE fault, fixup.pushsection.ex_table, "a".balign 8.quad \fault, \fixup,
    0.popsection.endm
#else
#include <stdbool.h>
#include <stdint.h>

#include "arch/x86_64/trapframe.h"

/* Which faults an exception-table entry covers. */
#define EX_TABLE_ANY  0 /* any #PF or #GP (a probe of kernel memory) */
#define EX_TABLE_USER 1 /* a #PF only on a user address (a user-memory copy) */

/* One exception-table entry: a #PF or #GP at fault_rip resumes at fixup_rip,
 * as kind allows. */
struct ex_table_entry {
	uint64_t fault_rip;
	uint64_t fixup_rip;
	uint64_t kind;
};

#define EX_TABLE_ENTRY_OF(fault, fixup, kind)                                                \
	".pushsection .ex_table, \"a\"\n\t.balign 8\n\t.quad " #fault ", " #fixup ", " #kind \
	"\n\t.popsection\n"
/* For inline assembly: "1: <insn>\n" ... "2:\n" EX_TABLE_ENTRY(1b, 2b). */
#define EX_TABLE_ENTRY(fault, fixup)      EX_TABLE_ENTRY_OF(fault, fixup, 0)
/* The same for an access to user memory: a #PF on a kernel address there
 * (below USER_SPACE_END is user) is a kernel fault, reported, not -EFAULT. */
#define EX_TABLE_USER_ENTRY(fault, fixup) EX_TABLE_ENTRY_OF(fault, fixup, 1)

/* Called for every exception from user mode with the faulting address (CR2)
 * for #PF, else 0.  Returns true when it handled the fault (the frame is then
 * resumed, possibly changed), false to let the kernel report it. */
typedef bool (*trap_user_fault_fn)(struct trap_frame *frame, uint64_t fault_address);

/* Installs the user fault handler (NULL removes it); returns the previous one. */
trap_user_fault_fn trap_set_user_fault_handler(trap_user_fault_fn handler);

/* Called for a breakpoint (int3) in kernel mode.  Returns true when it
 * handled it (the frame, maybe changed, is resumed), false to report it. */
typedef bool (*trap_kernel_breakpoint_fn)(struct trap_frame *frame);

/* Installs the kernel breakpoint handler (the join-point weaver's, while it
 * patches text); returns the previous one. */
trap_kernel_breakpoint_fn trap_set_kernel_breakpoint_handler(trap_kernel_breakpoint_fn handler);

/* Called for an exception in kernel mode that neither the exception table nor
 * the breakpoint handler took, before the panic report, with CR2 as read on
 * entry.  Returns true when it handled it (the frame, maybe changed, is
 * resumed), false to let the kernel report it.  The runtime linker's: a fault
 * in an aspect's code aborts the aspect instead of the kernel. */
typedef bool (*trap_kernel_fault_fn)(struct trap_frame *frame, uint64_t cr2);

/* Installs the kernel fault handler (NULL removes it); returns the previous one. */
trap_kernel_fault_fn trap_set_kernel_fault_handler(trap_kernel_fault_fn handler);

/* NMIs taken so far, on all CPUs.  An NMI is counted, reported at most once a
 * second ("NMI received (unknown reason)") and resumed, in either mode. */
uint64_t trap_nmi_count(void);

/* Returns the fix-up address listed for rip in the exception table, or 0. */
uint64_t trap_find_fixup(uint64_t rip);

/* Reads the 8 bytes at address without risking a fault.  Returns 0, or
 * -EFAULT when the address is not mapped or not canonical. */
int trap_read_kernel_word(uint64_t address, uint64_t *value);

/* Returns the exception's name ("page fault") and mnemonic ("#PF"), or
 * "interrupt" and "IRQ" for vectors from 32 on. */
const char *trap_name_of(unsigned vector);
const char *trap_mnemonic_of(unsigned vector);
#endif

#endif
