/*
 * A program built without frame pointers (-fomit-frame-pointer, see
 * userland.mk) whose stacks the trace map must still get right, by the
 * program's DWARF CFI: main -> unwind_outer -> unwind_middle -> unwind_inner,
 * which makes a system call (getppid) from its own code with rbp holding a
 * value that is no frame pointer, so a frame-pointer walk would stop there.
 * With the argument "corrupt", unwind_corrupt makes the same call with rsp
 * and rbp pointing at nothing mapped: the stack must come out marked
 * unreadable, and the program must go on and exit 0.  With "pipe" the call
 * is pipe instead (it allocates: the join point mm.kmalloc, which may not
 * sleep, is reached from the process), and "corrupt-pipe" makes that call
 * with rsp in anonymous memory mapped but never touched (its pages are not
 * present: a walk that may not fault must mark the stack unreadable rather
 * than fault them in).  With "callers" it makes the call six times, from
 * unwind_outer twice, from unwind_other (the same code: the same frames,
 * the same registers at the call) twice, then from unwind_outer twice: the
 * stacks differ only in one return address, so a stack remembered by its
 * registers must be told apart by the words it read (the program checks
 * that rsp was the same at every call, and exits 2 when it was not).
 * With "unmapped" it makes the corrupt call three times with rsp in the
 * middle of anonymous memory it filled with a return address into main (a
 * stack that unwinds through main again and again), the third time after
 * unmapping that memory: a stack remembered from the first two calls must
 * not come back for the third, which can read nothing.
 * usertests' uscope_unwinds_code_without_frame_pointers,
 * uscope_stacks_at_joinpoints_that_cannot_sleep and
 * uscope_same_registers_other_caller check them against its symbols.
 */
#include <string.h>

#include "uapi/syscall_numbers.h"

#define NOT_A_FRAME 0x10             /* rbp at the call: below every stack */
#define NOWHERE     0x7fff00000000UL /* rsp at the corrupt call: unmapped */
#define UNTOUCHED   (64 * 1024)      /* bytes of anonymous memory never touched */

static long call_number = __NR_getppid; /* the call the inner functions make */
static int pipe_fds[2];                 /* pipe's answer (rdi; getppid ignores it) */

static unsigned long call_rsp[8]; /* rsp at each call of "callers" */
static int calls;

static __attribute__((noipa)) long unwind_inner(long depth)
{
	long result;
	unsigned long rsp;
	asm volatile("mov %[junk], %%rbp\n\tmov %%rsp, %[rsp]\n\tsyscall"
		     : "=a"(result), [rsp] "=&r"(rsp)
		     : "a"(call_number), "D"(pipe_fds), [junk] "i"(NOT_A_FRAME)
		     : "rbp", "rcx", "r11", "memory");
	if (calls < 8)
		call_rsp[calls++] = rsp;
	return result + depth;
}

static __attribute__((noipa)) long unwind_middle(long depth)
{
	volatile long scratch[6] = {depth}; /* a frame of its own on the stack */
	return unwind_inner(scratch[0] + 1) + scratch[0];
}

static __attribute__((noipa)) long unwind_outer(long depth)
{
	return unwind_middle(depth + 1) * 2;
}

static __attribute__((noipa)) long unwind_other(long depth)
{
	return unwind_middle(depth + 1) * 2;
}

/* Six calls, from outer, outer, other, other, outer, outer; 0 when rsp was
 * the same at each (the registers at the call do not tell them apart). */
static __attribute__((noipa)) int from_two_callers(void)
{
	for (int i = 0; i < 6; i++)
		(i / 2 == 1 ? unwind_other : unwind_outer)(1);
	for (int i = 1; i < calls; i++)
		if (call_rsp[i] != call_rsp[0])
			return 2;
	return calls == 6 ? 0 : 2;
}

static __attribute__((noipa)) long unwind_corrupt(unsigned long nowhere)
{
	long result;
	asm volatile("mov %%rsp, %%rbx\n\t"
		     "mov %[nowhere], %%rsp\n\t"
		     "mov %[nowhere], %%rbp\n\t"
		     "syscall\n\t"
		     "mov %%rbx, %%rsp"
		     : "=a"(result)
		     : "a"(call_number), "D"(pipe_fds), [nowhere] "r"(nowhere)
		     : "rbx", "rbp", "rcx", "r11", "memory");
	return result;
}

/* Anonymous memory mapped and never touched: the middle of it, or 0. */
static unsigned long untouched_memory(void)
{
	long at;
	register long flags asm("r10") = 0x22; /* MAP_PRIVATE | MAP_ANONYMOUS */
	register long fd asm("r8") = -1;
	register long offset asm("r9") = 0;
	asm volatile("syscall"
		     : "=a"(at)
		     : "a"((long)__NR_mmap), "D"(0L), "S"((long)UNTOUCHED), "d"(3L), "r"(flags),
		       "r"(fd), "r"(offset)
		     : "rcx", "r11", "memory");
	return at < 0 ? 0 : (unsigned long)at + UNTOUCHED / 2;
}

static long raw_munmap(unsigned long at, unsigned long length)
{
	long result;
	asm volatile("syscall"
		     : "=a"(result)
		     : "a"((long)__NR_munmap), "D"(at), "S"(length)
		     : "rcx", "r11", "memory");
	return result;
}

/* An address in main (where the call below returns to). */
static __attribute__((noipa)) unsigned long address_in_caller(void)
{
	return (unsigned long)__builtin_return_address(0);
}

/* Three corrupt calls from the middle of memory filled with an address in
 * main, the last after it is unmapped; 0 when each call was made. */
static __attribute__((noipa)) int from_memory_then_unmapped(void)
{
	unsigned long in_main = address_in_caller();
	unsigned long middle = untouched_memory();
	if (!middle)
		return 2;
	unsigned long *words = (unsigned long *)(middle - UNTOUCHED / 2);
	for (unsigned i = 0; i < UNTOUCHED / sizeof *words; i++)
		words[i] = in_main;
	long first = unwind_corrupt(middle), second = unwind_corrupt(middle);
	if (raw_munmap(middle - UNTOUCHED / 2, UNTOUCHED) != 0)
		return 3;
	long third = unwind_corrupt(middle);
	return first < 0 || second < 0 || third < 0;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "";
	if (!strcmp(how, "pipe") || !strcmp(how, "corrupt-pipe"))
		call_number = __NR_pipe;
	if (!strcmp(how, "corrupt"))
		return unwind_corrupt(NOWHERE) < 0;
	if (!strcmp(how, "callers"))
		return from_two_callers();
	if (!strcmp(how, "unmapped"))
		return from_memory_then_unmapped();
	if (!strcmp(how, "corrupt-pipe")) {
		unsigned long untouched = untouched_memory();
		return !untouched || unwind_corrupt(untouched) < 0;
	}
	return unwind_outer(1) < 0;
}
