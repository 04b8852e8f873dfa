/*
 * Program entry.  The kernel starts a program as Linux does: rsp points at
 * argc, then argv[] and NULL, envp[] and NULL, then the auxiliary vector;
 * every other register is unspecified.  _start ends the frame-pointer chain
 * (rbp = 0, so stack walks stop here), aligns the stack for the C ABI and
 * hands the block to start_program (start.c), which never returns.
 */
	.text
	.globl	_start
	.type	_start, @function
_start:
	xor	%ebp, %ebp
	mov	%rsp, %rdi
	and	$-16, %rsp
	call	start_program
	hlt
	.size	_start, . - _start

/* newlib's __libc_init_array and __libc_fini_array call these; the program's
 * constructors live in .init_array, so both are empty. */
	.globl	_init
	.type	_init, @function
_init:
	ret
	.size	_init, . - _init

	.globl	_fini
	.type	_fini, @function
_fini:
	ret
	.size	_fini, . - _fini

	.section .note.GNU-stack, "", @progbits
