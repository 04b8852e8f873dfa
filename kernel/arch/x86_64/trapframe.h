/*
 * The register state every interrupt and exception entry saves, in one layout
 * for all 256 vectors (isr.S builds it, C reads and may change it: the values
 * are restored on return).  General registers first, then the vector and error
 * code the entry stub pushes (0 when the CPU pushes none), then what the CPU
 * pushes itself.  The TRAP_FRAME_* offsets are for the assembly.
 *
 *     void handler(struct trap_frame *frame, void *ctx)
 *     {
 *             if (trap_frame_from_user(frame)) frame->rax = -EFAULT;
 *     }
 */
#ifndef ARCH_X86_64_TRAPFRAME_H
#define ARCH_X86_64_TRAPFRAME_H

#define TRAP_FRAME_VECTOR     120
#define TRAP_FRAME_ERROR_CODE 128
#define TRAP_FRAME_RIP        136
#define TRAP_FRAME_CS         144
#define TRAP_FRAME_RFLAGS     152
#define TRAP_FRAME_RSP        160
#define TRAP_FRAME_SS         168
#define TRAP_FRAME_SIZE       176

#ifndef __ASSEMBLY__
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct trap_frame {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector;
	uint64_t error_code;
	/* pushed by the CPU */
	uint64_t rip, cs, rflags, rsp, ss;
};

_Static_assert(offsetof(struct trap_frame, vector) == TRAP_FRAME_VECTOR, "isr.S layout");
_Static_assert(offsetof(struct trap_frame, error_code) == TRAP_FRAME_ERROR_CODE, "isr.S layout");
_Static_assert(offsetof(struct trap_frame, rip) == TRAP_FRAME_RIP, "isr.S layout");
_Static_assert(offsetof(struct trap_frame, cs) == TRAP_FRAME_CS, "isr.S layout");
_Static_assert(offsetof(struct trap_frame, rflags) == TRAP_FRAME_RFLAGS, "isr.S layout");
_Static_assert(offsetof(struct trap_frame, rsp) == TRAP_FRAME_RSP, "isr.S layout");
_Static_assert(offsetof(struct trap_frame, ss) == TRAP_FRAME_SS, "isr.S layout");
_Static_assert(sizeof(struct trap_frame) == TRAP_FRAME_SIZE, "isr.S layout");
_Static_assert(TRAP_FRAME_SIZE % 16 == 0, "the entry keeps the stack 16-byte aligned");

/* Returns true when the trap interrupted user mode (CPL 3 in the saved CS). */
static inline bool trap_frame_from_user(const struct trap_frame *frame)
{
	return (frame->cs & 3) == 3;
}
#endif

#ifdef __ASSEMBLY__
/* The general-purpose registers in struct trap_frame's order (r15 at the lowest
 * address), shared by the interrupt and the system-call entry paths.  (Assembly:
 * clang-format would join it into C-looking lines.) */
// clang-format off
.macro PUSH_GPRS
	push %rax
	push %rbx
	push %rcx
	push %rdx
	push %rsi
	push %rdi
	push %rbp
	push %r8
	push %r9
	push %r10
	push %r11
	push %r12
	push %r13
	push %r14
	push %r15
.endm

.macro POP_GPRS
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %r11
	pop %r10
	pop %r9
	pop %r8
	pop %rbp
	pop %rdi
	pop %rsi
	pop %rdx
	pop %rcx
	pop %rbx
	pop %rax
.endm
// clang-format on
#endif

#endif
