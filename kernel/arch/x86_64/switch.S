/*
 * The context switch proper.  Only what the System V ABI says a callee keeps
 * is saved (RBX, RBP, R12-R15) plus RSP itself: the switch is an ordinary
 * function call, so the caller has already spilled everything else.  RFLAGS
 * is not saved: every switch happens with interrupts off, and each thread
 * restores its own interrupt flag from the flags it saved on its own stack.
 *
 * A new thread's stack is prepared (by the scheduler) to look as if it had
 * called arch_context_switch itself: six zeroed registers, except R12 = entry
 * function and R13 = its argument, then the return address
 * arch_thread_trampoline.
 */

	.text

/* void arch_context_switch(uint64_t *save_rsp, uint64_t load_rsp) */
	.global arch_context_switch
	.type arch_context_switch, @function
arch_context_switch:
	push %rbp
	push %rbx
	push %r12
	push %r13
	push %r14
	push %r15
	mov %rsp, (%rdi)
	mov %rsi, %rsp
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbx
	pop %rbp
	ret
	.size arch_context_switch, . - arch_context_switch

/*
 * First code a new thread runs, "returned to" from arch_context_switch with
 * RSP 16-byte aligned and RBP zero (the end of every backtrace).  Calls
 * entry(argument) with entry in R12 and argument in R13; entry never returns.
 */
	.global arch_thread_trampoline
	.type arch_thread_trampoline, @function
arch_thread_trampoline:
	mov %r13, %rdi
	call *%r12
1:	ud2
	jmp 1b
	.size arch_thread_trampoline, . - arch_thread_trampoline
