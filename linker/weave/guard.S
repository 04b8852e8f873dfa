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

/*
 * The string functions of the aspect ABI (memcpy, memmove, memset, memcmp)
 * for `direct` advice: byte loops of their own, between linker_string_start
 * and linker_string_end, so that a fault inside one while an aspect runs on
 * the CPU is the aspect's (guard.c aborts the advice) and not a kernel panic
 * at a bad pointer the advice passed.  The C wrappers (abi_kernel.c) check
 * the destination first.  They leave the direction flag alone.
 */
	.text
	.global linker_string_start
linker_string_start:

/* void linker_string_copy(void *dst, const void *src, size_t n): forwards */
	.global linker_string_copy
	.type linker_string_copy, @function
linker_string_copy:
	mov %rdx, %rcx
	rep movsb
	ret
	.size linker_string_copy, . - linker_string_copy

/* void linker_string_copy_back(void *dst, const void *src, size_t n):
 * from the last byte down, for a destination above an overlapping source */
	.global linker_string_copy_back
	.type linker_string_copy_back, @function
linker_string_copy_back:
1:	sub $1, %rdx
	jb 2f
	movzbl (%rsi,%rdx), %eax
	mov %al, (%rdi,%rdx)
	jmp 1b
2:	ret
	.size linker_string_copy_back, . - linker_string_copy_back

/* void linker_string_fill(void *dst, int c, size_t n) */
	.global linker_string_fill
	.type linker_string_fill, @function
linker_string_fill:
	mov %esi, %eax
	mov %rdx, %rcx
	rep stosb
	ret
	.size linker_string_fill, . - linker_string_fill

/* int linker_string_compare(const void *a, const void *b, size_t n): the
 * difference of the first bytes that differ, as unsigned chars; 0 if none */
	.global linker_string_compare
	.type linker_string_compare, @function
linker_string_compare:
	xor %eax, %eax
	mov %rdx, %rcx
	test %rcx, %rcx
	jz 1f
	repe cmpsb
	je 1f
	movzbl -1(%rdi), %eax
	movzbl -1(%rsi), %ecx
	sub %ecx, %eax
1:	ret
	.size linker_string_compare, . - linker_string_compare

	.global linker_string_end
linker_string_end:
