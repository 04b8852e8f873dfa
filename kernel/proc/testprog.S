/*
 * A complete static ELF64 executable, assembled into the kernel's read-only
 * data, for the proc and uaccess test suites: they run it as a process with
 * proc_spawn_image without any file system, and corrupt copies of it to test
 * the ELF checks.  The ELF and program headers are written out by hand; the
 * code refers to its data by absolute addresses computed from label
 * differences, since text (0x400000) and data (0x600000) keep their file
 * distance only modulo the page size.
 *
 * argv[1]'s first character picks what the program does; the exit status
 * carries the answer (see kernel/proc/tests.c for the meaning of each).
 */
#include "uapi/syscall_numbers.h"

#define TEXT_VA 0x400000
#define DATA_VA 0x600000
#define BSS_SIZE 0x2000
#define EFAULT 14
#define EAGAIN 11
#define ENOMEM 12
#define ENOENT 2

/* The address a data label has in the running program. */
#define DATA(label) (DATA_VA + ((label) - data_start))
#define TEXT(label) (TEXT_VA + ((label) - image))

.macro SYS number
	mov $\number, %eax
	syscall
.endm

.macro EXIT code
	mov $\code, %edi
	SYS __NR_exit
.endm

/* Fails the check numbered \n (exit status \n) unless %rax == \value. */
.macro EXPECT_RAX value, n
	cmp $\value, %rax
	je 1f
	EXIT \n
1:
.endm

	.section .rodata.proc_test_image, "a"
	.balign 4096
	.global proc_test_image
image:
proc_test_image:
	/* ELF header */
	.byte 0x7f, 'E', 'L', 'F', 2, 1, 1, 0
	.quad 0
	.word 2, 62             /* ET_EXEC, EM_X86_64 */
	.long 1
	.quad TEXT(entry)
	.quad phdrs - image     /* phoff */
	.quad 0                 /* shoff */
	.long 0
	.word 64, 56, 2, 64, 0, 0
phdrs:
	/* text: R X, the headers and the code */
	.long 1, 5
	.quad 0, TEXT_VA, TEXT_VA, text_end - image, text_end - image, 0x1000
	/* data: R W, the data page and a zeroed part after it */
	.long 1, 6
	.quad data_start - image, DATA_VA, DATA_VA, data_end - data_start
	.quad data_end - data_start + BSS_SIZE, 0x1000

entry:
	cmpq $2, (%rsp)
	jb mode_none
	mov 16(%rsp), %rsi      /* argv[1] */
	movzbl (%rsi), %eax
	cmp $'e', %al
	je mode_exit
	cmp $'p', %al
	je mode_pid
	cmp $'i', %al
	je mode_int80
	cmp $'f', %al
	je mode_fork
	cmp $'s', %al
	je mode_null_write
	cmp $'k', %al
	je mode_kernel_read
	cmp $'w', %al
	je mode_text_write
	cmp $'r', %al
	je mode_recurse
	cmp $'u', %al
	je mode_bad_pointers
	cmp $'b', %al
	je mode_memory
	cmp $'l', %al
	je mode_spin
	cmp $'z', %al
	je mode_sleep
	cmp $'x', %al
	je mode_fork_bomb
	cmp $'m', %al
	je mode_exhaust
	cmp $'a', %al
	je mode_args
	cmp $'E', %al
	je mode_exec_missing
	cmp $'X', %al
	je mode_exec_as_user
	cmp $'B', %al
	je mode_bench
	EXIT 99

mode_none:
	EXIT 0

/* e: exit(42) */
mode_exit:
	EXIT 42

/* p: exit(getpid() & 0xff) */
mode_pid:
	SYS __NR_getpid
	mov %eax, %edi
	and $0xff, %edi
	SYS __NR_exit

/* i: getpid through "int $0x80" agrees with SYSCALL: exit(7) */
mode_int80:
	SYS __NR_getpid
	mov %rax, %rbx
	mov $__NR_getpid, %eax
	int $0x80
	cmp %rax, %rbx
	jne 1f
	EXIT 7
1:	EXIT 8

/* f: fork; the child changes a data word and a stack word and exits 12; the
 * parent waits, checks the status and that its copies are unchanged: 50. */
mode_fork:
	movq $1, DATA(value)
	pushq $5
	SYS __NR_fork
	test %rax, %rax
	js 9f
	jnz 1f
	movq $2, DATA(value)
	movq $6, (%rsp)
	mov DATA(value), %rdi
	add $10, %rdi
	SYS __NR_exit
1:	mov %rax, %rdi          /* the child's pid */
	mov $DATA(status), %rsi
	xor %edx, %edx
	xor %r10d, %r10d
	SYS __NR_wait4
	cmpl $(12 << 8), DATA(status)
	jne 8f
	cmpq $1, DATA(value)
	jne 8f
	cmpq $5, (%rsp)
	jne 8f
	EXIT 50
8:	EXIT 51
9:	EXIT 52

/* s: write to an unmapped low address: killed by SIGSEGV */
mode_null_write:
	movq $1, 0x10
	EXIT 1

/* k: read kernel memory: killed by SIGSEGV */
mode_kernel_read:
	movabs $0xffffffff80100000, %rax
	mov (%rax), %rax
	EXIT 1

/* w: write to the program's own text: killed by SIGSEGV */
mode_text_write:
	movq $1, TEXT(entry)
	EXIT 1

/* r: recursion without end: the stack guard stops it with SIGSEGV */
mode_recurse:
	call mode_recurse
	EXIT 1

/* u: every bad pointer gives -EFAULT and nothing else: exit(0), or the
 * number of the check that failed. */
mode_bad_pointers:
	mov $1, %edi            /* CLOCK_MONOTONIC */
	movabs $0xffff800000000000, %rsi
	SYS __NR_clock_gettime
	EXPECT_RAX -EFAULT, 1
	mov $1, %edi
	xor %esi, %esi          /* NULL */
	SYS __NR_clock_gettime
	EXPECT_RAX -EFAULT, 2
	mov $1, %edi
	movabs $0x00007ffffffffff8, %rsi /* runs off the end of user space */
	SYS __NR_clock_gettime
	EXPECT_RAX -EFAULT, 3
	mov $1, %edi
	mov $TEXT(entry), %esi  /* read-only */
	SYS __NR_clock_gettime
	EXPECT_RAX -EFAULT, 4
	mov $1, %edi
	movabs $0x0000800000000000, %rsi /* non-canonical */
	SYS __NR_clock_gettime
	EXPECT_RAX -EFAULT, 5
	movabs $0x00000dead0000000, %rdi /* unmapped */
	xor %esi, %esi
	SYS __NR_nanosleep
	EXPECT_RAX -EFAULT, 6
	mov $-1, %rdi
	movabs $0xffffffff80100000, %rsi
	xor %edx, %edx
	xor %r10d, %r10d
	SYS __NR_wait4
	EXPECT_RAX -EFAULT, 7
	movabs $0xffffffff80100000, %rdi
	xor %esi, %esi
	xor %edx, %edx
	SYS __NR_execve
	EXPECT_RAX -EFAULT, 8
	mov $DATA(path_missing), %edi
	movabs $0x00000dead0000000, %rsi /* argv unreadable */
	xor %edx, %edx
	SYS __NR_execve
	EXPECT_RAX -EFAULT, 9
	mov $DATA(bad_argv), %esi /* argv[0] unreadable */
	mov $DATA(path_missing), %edi
	xor %edx, %edx
	SYS __NR_execve
	EXPECT_RAX -EFAULT, 10
	mov $1, %edi            /* a stack page not touched yet is fine */
	mov %rsp, %rsi
	sub $0x40000, %rsi
	SYS __NR_clock_gettime
	EXPECT_RAX 0, 11
	mov $9999, %eax         /* no such system call */
	syscall
	EXPECT_RAX -38, 12
	EXIT 0

/* b: brk grows and shrinks, mmap gives zeroed writable memory, munmap takes
 * it away: exit(0), or the failing check's number. */
mode_memory:
	xor %edi, %edi
	SYS __NR_brk
	mov %rax, %rbx          /* the initial break */
	lea 8192(%rbx), %rdi
	SYS __NR_brk
	lea 8192(%rbx), %rcx
	cmp %rcx, %rax
	je 1f
	EXIT 21
1:	movq $7, (%rbx)
	movq $7, 8184(%rbx)
	mov %rbx, %rdi
	SYS __NR_brk
	cmp %rbx, %rax
	je 1f
	EXIT 22
1:	xor %edi, %edi          /* mmap(NULL, 3 pages, RW, PRIVATE|ANON, -1, 0) */
	mov $3 * 4096, %esi
	mov $3, %edx
	mov $0x22, %r10d
	mov $-1, %r8
	xor %r9d, %r9d
	SYS __NR_mmap
	cmp $-4096, %rax
	jb 1f
	EXIT 23
1:	mov %rax, %r12
	cmpq $0, 8192(%r12)
	je 1f
	EXIT 24
1:	movq $9, 8192(%r12)
	mov %r12, %rdi
	mov $3 * 4096, %esi
	SYS __NR_munmap
	EXPECT_RAX 0, 25
	mov $1, %edi            /* the unmapped range is gone for system calls */
	mov %r12, %rsi
	SYS __NR_clock_gettime
	EXPECT_RAX -EFAULT, 26
	EXIT 0

/* l: spin until killed */
mode_spin:
	jmp mode_spin

/* z: sleep 100 s, until killed in the middle of the call */
mode_sleep:
	mov $DATA(long_sleep), %edi
	xor %esi, %esi
	SYS __NR_nanosleep
	jmp mode_sleep

/* x: fork until the table is full: -EAGAIN must come, then every child is
 * killed and reaped: exit(60), 61 (another error), 62 (a wait failed). */
mode_fork_bomb:
	xor %r12d, %r12d        /* children */
1:	SYS __NR_fork
	test %rax, %rax
	jz mode_sleep           /* child: sleep until killed */
	js 2f
	mov %rax, DATA(pids)(, %r12, 8)
	inc %r12
	cmp $256, %r12
	jb 1b
	mov $-EAGAIN, %rax      /* 256 children is not a full table: fail below */
	mov $63, %r13
	jmp 3f
2:	mov $61, %r13
	cmp $-EAGAIN, %rax
	jne 3f
	mov $60, %r13
3:	xor %ebx, %ebx          /* kill and reap them all */
4:	cmp %r12, %rbx
	jae 5f
	mov DATA(pids)(, %rbx, 8), %rdi
	mov $9, %esi
	SYS __NR_kill
	mov DATA(pids)(, %rbx, 8), %rdi
	xor %esi, %esi
	xor %edx, %edx
	xor %r10d, %r10d
	SYS __NR_wait4
	cmp DATA(pids)(, %rbx, 8), %rax
	je 6f
	mov $62, %r13
6:	inc %rbx
	jmp 4b
5:	mov %r13, %rdi
	SYS __NR_exit

/* m: map 4 MiB at a time until memory runs out (-ENOMEM, not a crash):
 * exit(70), or 71 when another error came. */
mode_exhaust:
	xor %edi, %edi
	mov $4 << 20, %esi
	mov $3, %edx
	mov $0x22, %r10d
	mov $-1, %r8
	xor %r9d, %r9d
	SYS __NR_mmap
	cmp $-4096, %rax
	jb mode_exhaust
	cmp $-ENOMEM, %rax
	jne 1f
	EXIT 70
1:	EXIT 71

/* a: argc, argv and the auxiliary vector are in place: exit(argc * 10 +
 * (AT_PAGESZ found ? 1 : 0) + (AT_RANDOM found ? 2 : 0)) */
mode_args:
	mov (%rsp), %rbx        /* argc */
	lea 8(%rsp, %rbx, 8), %rsi
	add $8, %rsi            /* past argv's NULL: envp */
1:	cmpq $0, (%rsi)
	lea 8(%rsi), %rsi
	jne 1b                  /* past envp's NULL: auxv */
	imul $10, %rbx, %rdi
2:	mov (%rsi), %rax
	test %rax, %rax
	jz 4f
	cmp $6, %rax            /* AT_PAGESZ */
	jne 3f
	cmpq $4096, 8(%rsi)
	jne 3f
	add $1, %rdi
3:	cmp $25, %rax           /* AT_RANDOM */
	jne 5f
	add $2, %rdi
5:	add $16, %rsi
	jmp 2b
4:	SYS __NR_exit

/* E: execve of a missing program fails with -ENOENT and the caller goes on:
 * exit(80) */
mode_exec_missing:
	mov $DATA(path_missing), %edi
	mov $DATA(good_argv), %esi
	xor %edx, %edx
	SYS __NR_execve
	EXPECT_RAX -ENOENT, 81
	EXIT 80

/* X: as uid 1000 (real, effective and saved), execve of argv[2] with argv
 * {argv[2], NULL}: exit(the errno it fails with), or 90 when the ids do
 * not change. */
mode_exec_as_user:
	mov $1000, %edi
	mov $1000, %esi
	mov $1000, %edx
	SYS __NR_setresuid
	EXPECT_RAX 0, 90
	mov 24(%rsp), %rdi      /* argv[2] */
	mov %rdi, DATA(exec_argv)
	mov $DATA(exec_argv), %esi
	xor %edx, %edx
	SYS __NR_execve
	neg %rax
	mov %rax, %rdi
	SYS __NR_exit

/* B: the proc_bench figures, printed on fd 1 as
 * "proc_bench: case <name> calls <n> ticks <t>" (RDTSC: instructions under
 * -icount shift=0).  The fork+exec case runs /tmp/testprog, which the kernel
 * wrote there (kernel/proc/bench.c). */
#define BENCH_GETPID_CALLS 10000
#define BENCH_FORK_CALLS   50

.macro TSC_INTO reg
	rdtsc
	shl $32, %rdx
	or %rdx, %rax
	mov %rax, \reg
.endm

mode_bench:
	mov $BENCH_GETPID_CALLS, %r13d     /* the loop alone, to subtract */
	TSC_INTO %r12
1:	dec %r13d
	jnz 1b
	TSC_INTO %r14
	sub %r12, %r14
	mov $BENCH_GETPID_CALLS, %r13d
	TSC_INTO %r12
1:	mov $__NR_getpid, %eax
	syscall
	dec %r13d
	jnz 1b
	TSC_INTO %rax
	sub %r12, %rax
	sub %r14, %rax
	mov $DATA(name_getpid), %esi
	mov $BENCH_GETPID_CALLS, %ecx
	call print_case

	mov $BENCH_FORK_CALLS, %r13d
	TSC_INTO %r12
1:	SYS __NR_fork
	test %rax, %rax
	jnz 2f
	EXIT 0                  /* child */
2:	mov %rax, %rdi
	xor %esi, %esi
	xor %edx, %edx
	xor %r10d, %r10d
	SYS __NR_wait4
	dec %r13d
	jnz 1b
	TSC_INTO %rax
	sub %r12, %rax
	mov $DATA(name_fork), %esi
	mov $BENCH_FORK_CALLS, %ecx
	call print_case

	mov $BENCH_FORK_CALLS, %r13d
	TSC_INTO %r12
1:	SYS __NR_fork
	test %rax, %rax
	jnz 2f
	mov $DATA(path_bench), %edi  /* child: exec the test program, mode e */
	mov $DATA(bench_argv), %esi
	xor %edx, %edx
	SYS __NR_execve
	EXIT 1
2:	mov %rax, %rdi
	mov $DATA(status), %esi
	xor %edx, %edx
	xor %r10d, %r10d
	SYS __NR_wait4
	cmpl $(42 << 8), DATA(status)
	jne 9f
	dec %r13d
	jnz 1b
	TSC_INTO %rax
	sub %r12, %rax
	mov $DATA(name_exec), %esi
	mov $BENCH_FORK_CALLS, %ecx
	call print_case
	EXIT 0
9:	EXIT 90

/* Writes "proc_bench: case <name at rsi> calls <rcx> ticks <rax>\n" to fd 1. */
print_case:
	push %rax
	push %rcx
	push %rsi
	mov $DATA(line), %edi
	mov $DATA(text_case), %esi
	call put_string
	pop %rsi
	call put_string
	mov $DATA(text_calls), %esi
	call put_string
	pop %rax
	call put_decimal
	mov $DATA(text_ticks), %esi
	call put_string
	pop %rax
	call put_decimal
	movb $'\n', (%rdi)
	inc %rdi
	mov %rdi, %rdx
	sub $DATA(line), %rdx
	mov $1, %edi
	mov $DATA(line), %esi
	SYS __NR_write
	ret

/* Copies the string at rsi (without its NUL) to rdi; rdi ends past it. */
put_string:
	movb (%rsi), %al
	test %al, %al
	jz 1f
	movb %al, (%rdi)
	inc %rsi
	inc %rdi
	jmp put_string
1:	ret

/* Writes rax in decimal at rdi; rdi ends past it. */
put_decimal:
	mov $DATA(digits_end), %r8
	mov $10, %r9
1:	xor %edx, %edx
	div %r9
	add $'0', %dl
	dec %r8
	movb %dl, (%r8)
	test %rax, %rax
	jnz 1b
2:	movb (%r8), %al
	movb %al, (%rdi)
	inc %rdi
	inc %r8
	cmp $DATA(digits_end), %r8
	jb 2b
	ret

text_end:

	.balign 4096
data_start:
value:
	.quad 0
status:
	.quad 0
long_sleep:
	.quad 100, 0
path_missing:
	.asciz "/no/such/program"
	.balign 8
good_argv:
	.quad DATA(path_missing), 0
bad_argv:
	.quad 0x00000dead0000000, 0
exec_argv:
	.quad 0, 0
	.balign 8
pids:
	.fill 256, 8, 0
name_getpid:
	.asciz "getpid"
name_fork:
	.asciz "fork+exit+wait"
name_exec:
	.asciz "fork+exec+exit+wait"
text_case:
	.asciz "proc_bench: case "
text_calls:
	.asciz " calls "
text_ticks:
	.asciz " ticks "
path_bench:
	.asciz "/tmp/testprog"
	.balign 8
bench_argv:
	.quad DATA(path_bench), DATA(mode_e), 0
mode_e:
	.asciz "e"
digits:
	.fill 24, 1, 0
digits_end:
line:
	.fill 128, 1, 0
data_end:
	.global proc_test_image_end
proc_test_image_end:
