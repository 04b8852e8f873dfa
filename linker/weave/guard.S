/*
 * The recovery point around a `direct` advice: a minimal setjmp/longjmp.
 * linker_guard_call saves what the System V ABI says a callee keeps (RBX,
 * R12-R15; RBP is pushed as the frame record, so backtraces walk through the
 * advice into the join point) and RSP, then calls the advice.  When the fault
 * handler or the tick decides to abort the advice, it makes the interrupted
 * context resume at linker_guard_abort with RDI = the saved state; that
 * restores the registers and returns 1 from linker_guard_call, as if the
 * advice had returned.  Nothing the advice left on its stack is used again.
 */

	.text

/* int linker_guard_call(struct linker_jmpbuf *jmp, void (*fn)(void *), void *arg) */
	.global linker_guard_call
	.type linker_guard_call, @function
linker_guard_call:
	push %rbp
	mov %rsp, %rbp
	mov %rbx, 0(%rdi)
	mov %r12, 8(%rdi)
	mov %r13, 16(%rdi)
	mov %r14, 24(%rdi)
	mov %r15, 32(%rdi)
	mov %rsp, 40(%rdi)
	mov %rdx, %rdi
	call *%rsi
	xor %eax, %eax
	pop %rbp
	ret
	.size linker_guard_call, . - linker_guard_call

/* void linker_guard_abort(struct linker_jmpbuf *jmp): never returns */
	.global linker_guard_abort
	.type linker_guard_abort, @function
linker_guard_abort:
	cld
	mov 0(%rdi), %rbx
	mov 8(%rdi), %r12
	mov 16(%rdi), %r13
	mov 24(%rdi), %r14
	mov 32(%rdi), %r15
	mov 40(%rdi), %rsp
	mov $1, %eax
	pop %rbp
	ret
	.size linker_guard_abort, . - linker_guard_abort
