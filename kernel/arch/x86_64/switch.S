/*
 * A new thread's first code.  The switch itself is in line in the scheduler
 * (switch.h); a new thread's stack is prepared (thread_prepare_stack) to look
 * as if the thread had switched out there: the address it resumes at,
 * arch_thread_trampoline, then its entry function and argument.
 */

	.text

/*
 * "Returned to" by the switch, with RSP at the entry function; after the two
 * pops RSP is 16-byte aligned for the call, as the ABI wants.  RBP is zeroed:
 * the end of every backtrace.  entry never returns.
 */
	.global arch_thread_trampoline
	.type arch_thread_trampoline, @function
arch_thread_trampoline:
	xor %ebp, %ebp
	pop %rax
	pop %rdi
	call *%rax
1:	ud2
	jmp 1b
	.size arch_thread_trampoline, . - arch_thread_trampoline
