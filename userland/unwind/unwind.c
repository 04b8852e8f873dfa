/*
 * A program built without frame pointers (-fomit-frame-pointer, see
 * userland.mk) whose stacks the trace map must still get right, by the
 * program's DWARF CFI: main -> unwind_outer -> unwind_middle -> unwind_inner,
 * which makes a system call (getppid) from its own code with rbp holding a
 * value that is no frame pointer, so a frame-pointer walk would stop there.
 * With the argument "corrupt", unwind_corrupt makes the same call with rsp
 * and rbp pointing at nothing mapped: the stack must come out marked
 * unreadable, and the program must go on and exit 0.  usertests'
 * uscope_unwinds_code_without_frame_pointers checks both against this
 * program's symbols.
 */
#include <string.h>

#include "uapi/syscall_numbers.h"

#define NOT_A_FRAME 0x10             /* rbp at the call: below every stack */
#define NOWHERE     0x7fff00000000UL /* rsp at the corrupt call: unmapped */

static __attribute__((noipa)) long unwind_inner(long depth)
{
	long result;
	asm volatile("mov %[junk], %%rbp\n\tsyscall"
		     : "=a"(result)
		     : "a"((long)__NR_getppid), [junk] "i"(NOT_A_FRAME)
		     : "rbp", "rcx", "r11", "memory");
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

static __attribute__((noipa)) long unwind_corrupt(void)
{
	long result;
	asm volatile("mov %%rsp, %%rbx\n\t"
		     "mov %[nowhere], %%rsp\n\t"
		     "mov %[nowhere], %%rbp\n\t"
		     "syscall\n\t"
		     "mov %%rbx, %%rsp"
		     : "=a"(result)
		     : "a"((long)__NR_getppid), [nowhere] "r"(NOWHERE)
		     : "rbx", "rbp", "rcx", "r11", "memory");
	return result;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "corrupt"))
		return unwind_corrupt() < 0;
	return unwind_outer(1) < 0;
}
