/*
 * Entry stubs for all 256 vectors and the common path to C.
 *
 * Each stub pushes a zero error code when the CPU pushes none (so every
 * vector has the same frame), then its vector number, and jumps to the
 * common path, which saves the general registers into a struct trap_frame
 * (trapframe.h), switches GS to the kernel's per-CPU area when the trap came
 * from user mode (CPL 3 in the saved CS), and calls trap_dispatch(frame).
 *
 * Double fault, NMI and machine check can arrive anywhere, including the
 * instructions of a kernel entry before its SWAPGS, so the saved CS does not
 * tell which GS is live.  Their "paranoid" path reads the GS base instead: a
 * kernel per-CPU area lives in the upper half, so a non-negative base means
 * the user's GS is loaded and must be swapped (and swapped back on exit).
 *
 * Before calling C both paths push the interrupted RIP and RBP as a frame
 * record, so backtraces taken inside a handler continue into the
 * interrupted code.  The frame is 176 bytes and the CPU aligned RSP to 16
 * before pushing its part, so the call is made with RSP 16-byte aligned.
 */
#include "arch/x86_64/trapframe.h"

#define MSR_GS_BASE 0xc0000101

/* Calls trap_dispatch with RDI = the frame at RSP and a frame record
 * {RBP, interrupted RIP} on top of it. */
.macro CALL_DISPATCH
	mov %rsp, %rdi
	pushq TRAP_FRAME_RIP(%rdi)
	push %rbp
	mov %rsp, %rbp
	call trap_dispatch
	add $16, %rsp
.endm

/* One vector's stub.  The CPU itself pushes an error code for 8, 10-14, 17,
 * 21, 29 and 30. */
.macro ISR_STUB vector
	.balign 16
	.type isr_stub_\vector, @function
isr_stub_\vector:
	.if (\vector == 8) + ((\vector >= 10) & (\vector <= 14)) + (\vector == 17) \
	    + (\vector == 21) + (\vector == 29) + (\vector == 30)
	.else
	pushq $0
	.endif
	pushq $\vector
	.if (\vector == 2) + (\vector == 8) + (\vector == 18)
	jmp isr_paranoid
	.else
	jmp isr_common
	.endif
	.size isr_stub_\vector, . - isr_stub_\vector
.endm

.macro ISR_ADDRESS vector
	.quad isr_stub_\vector
.endm

	.text
	.altmacro
	.set vector, 0
	.rept 256
	ISR_STUB %vector
	.set vector, vector + 1
	.endr

	.balign 16
	.type isr_common, @function
isr_common:
	/* RSP: vector, error code, then the CPU's RIP, CS, RFLAGS, RSP, SS */
	testb $3, TRAP_FRAME_CS - TRAP_FRAME_VECTOR(%rsp)
	jz 1f
	swapgs
1:	PUSH_GPRS
	cld
	CALL_DISPATCH
	testb $3, TRAP_FRAME_CS(%rsp)
	jz 3f
	mov %rsp, %rdi
	call proc_return_to_user /* a process told to end ends here */
	/* Off until IRETQ (which takes the flags from the frame): a handler
	 * that turned them on (a fault that read a file page, a stop waited
	 * out) would otherwise let an interrupt in after SWAPGS, where it
	 * would find the user's GS base and take it for the kernel's.  Back to
	 * kernel mode there is no SWAPGS: an interrupt then nests as any does. */
	cli
3:	POP_GPRS
	testb $3, TRAP_FRAME_CS - TRAP_FRAME_VECTOR(%rsp)
	jz 2f
	swapgs
2:	add $16, %rsp
	iretq
	.size isr_common, . - isr_common

	.balign 16
	.type isr_paranoid, @function
isr_paranoid:
	PUSH_GPRS
	cld
	xor %ebx, %ebx /* RBX (callee-saved): 1 when we swapped GS */
	mov $MSR_GS_BASE, %ecx
	rdmsr
	test %edx, %edx
	js 1f
	swapgs
	mov $1, %ebx
1:	CALL_DISPATCH
	test %ebx, %ebx
	jz 2f
	swapgs
2:	POP_GPRS
	add $16, %rsp
	iretq
	.size isr_paranoid, . - isr_paranoid

	.section .rodata
	.balign 8
	.global isr_stub_table
isr_stub_table:
	.set vector, 0
	.rept 256
	ISR_ADDRESS %vector
	.set vector, vector + 1
	.endr
	.noaltmacro
