/*
 * User-mode entry and exit: the SYSCALL entry (MSR_LSTAR), the "int $0x80"
 * entry (a DPL 3 gate), and the first entry of a thread into user mode.
 *
 * SYSCALL leaves the user RSP in place and RIP/RFLAGS in RCX/R11, with
 * interrupts masked (MSR_FMASK).  The entry swaps GS, parks the user RSP in
 * the per-CPU area (%gs:16), loads the thread's kernel stack top (%gs:8, set
 * on every switch) and builds the same struct trap_frame an interrupt from
 * user mode would, at the same place (the top of the stack), so C code sees
 * one layout.  Interrupts are enabled only once the frame and GS are in
 * place.  The way out is SYSRETQ when the saved CS is user code and the saved
 * RIP a user address (a non-canonical RCX would fault in ring 0 on Intel),
 * else IRETQ.  Every exit restores the registers from the frame, so a
 * handler's changes (execve's RIP and RSP, the result in RAX) take effect.
 */
#include "arch/x86_64/gdt.h"
#include "arch/x86_64/trapframe.h"

#define CPU_SYSCALL_STACK 8
#define CPU_USER_STACK    16
#define SYSRET_RIP_END    0x00007ffffffff000 /* USER_SPACE_END (syscall.c checks) */
#define TRAP_FRAME_RAX    112                /* syscall.c checks */

/* Calls fn(frame at RSP) with interrupts on and a frame record {RBP, user
 * RIP} on top, so backtraces continue into user code; returns with
 * interrupts off and RSP back at the frame. */
.macro CALL_WITH_FRAME fn
	mov %rsp, %rdi
	pushq TRAP_FRAME_RIP(%rdi)
	push %rbp
	mov %rsp, %rbp
	sti
	call \fn
	cli
	add $16, %rsp
.endm

	.text

	.global syscall_entry
	.type syscall_entry, @function
	.balign 16
syscall_entry:
	swapgs
	mov %rsp, %gs:CPU_USER_STACK
	mov %gs:CPU_SYSCALL_STACK, %rsp
	pushq $GDT_USER_DATA       /* ss */
	pushq %gs:CPU_USER_STACK   /* rsp */
	pushq %r11                 /* rflags */
	pushq $GDT_USER_CODE       /* cs */
	pushq %rcx                 /* rip */
	pushq $0                   /* error code */
	pushq $0x100               /* "vector": 256 marks a SYSCALL frame */
	PUSH_GPRS                  /* no cld: MSR_FMASK cleared DF */
	CALL_WITH_FRAME syscall_from_user
	/* RAX holds the result: SYSRET leaves with it, IRETQ stores it in the
	 * frame first.  SYSRET only to user code at a user address: a
	 * non-canonical RCX would fault in ring 0 on Intel.  RCX is free:
	 * loaded below. */
	cmpq $GDT_USER_CODE, TRAP_FRAME_CS(%rsp)
	jne 1f
	movabs $SYSRET_RIP_END, %rcx
	cmp %rcx, TRAP_FRAME_RIP(%rsp)
	jae 1f
	/* Loads, not POP_GPRS: RCX and R11 are the frame's RIP and RFLAGS
	 * for SYSRET, so their own slots are skipped. */
	mov 0(%rsp), %r15
	mov 8(%rsp), %r14
	mov 16(%rsp), %r13
	mov 24(%rsp), %r12
	mov 40(%rsp), %r10
	mov 48(%rsp), %r9
	mov 56(%rsp), %r8
	mov 64(%rsp), %rbp
	mov 72(%rsp), %rdi
	mov 80(%rsp), %rsi
	mov 88(%rsp), %rdx
	mov 104(%rsp), %rbx
	mov TRAP_FRAME_RIP(%rsp), %rcx
	mov TRAP_FRAME_RFLAGS(%rsp), %r11
	mov TRAP_FRAME_RSP(%rsp), %rsp /* user rsp: nothing may interrupt from here */
	swapgs
	sysretq
1:	mov %rax, TRAP_FRAME_RAX(%rsp)
	POP_GPRS
	add $16, %rsp
	swapgs
	iretq
	.size syscall_entry, . - syscall_entry

	.global syscall_int80_entry
	.type syscall_int80_entry, @function
	.balign 16
syscall_int80_entry:
	pushq $0                   /* error code */
	pushq $0x80
	testb $3, TRAP_FRAME_CS - TRAP_FRAME_VECTOR(%rsp)
	jz 1f
	swapgs
1:	PUSH_GPRS
	cld
	CALL_WITH_FRAME syscall_from_int80
	POP_GPRS
	testb $3, TRAP_FRAME_CS - TRAP_FRAME_VECTOR(%rsp)
	jz 2f
	swapgs
2:	add $16, %rsp
	iretq
	.size syscall_int80_entry, . - syscall_int80_entry

/*
 * void arch_enter_user(const struct trap_frame *frame): leaves the kernel for
 * user mode with every register from frame (a kernel copy).  The current
 * kernel stack is abandoned: the next entry from user mode starts again at
 * the top (TSS.RSP0 and %gs:8).
 */
	.global arch_enter_user
	.type arch_enter_user, @function
arch_enter_user:
	cli
	pushq TRAP_FRAME_SS(%rdi)
	pushq TRAP_FRAME_RSP(%rdi)
	pushq TRAP_FRAME_RFLAGS(%rdi)
	pushq TRAP_FRAME_CS(%rdi)
	pushq TRAP_FRAME_RIP(%rdi)
	mov 0(%rdi), %r15
	mov 8(%rdi), %r14
	mov 16(%rdi), %r13
	mov 24(%rdi), %r12
	mov 32(%rdi), %r11
	mov 40(%rdi), %r10
	mov 48(%rdi), %r9
	mov 56(%rdi), %r8
	mov 64(%rdi), %rbp
	mov 80(%rdi), %rsi
	mov 88(%rdi), %rdx
	mov 96(%rdi), %rcx
	mov 104(%rdi), %rbx
	mov 112(%rdi), %rax
	mov 72(%rdi), %rdi
	swapgs
	iretq
	.size arch_enter_user, . - arch_enter_user
