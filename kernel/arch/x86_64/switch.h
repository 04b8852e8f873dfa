/*
 * The context switch proper, in line in the scheduler's switch.  A thread
 * switched out leaves on its stack its RBP and, on top, the address it
 * resumes at; its RSP goes to *save_rsp.  Switching to a thread is loading
 * its RSP and returning to that address.  Every other register is the
 * compiler's to save (the asm clobbers them all): in the switch's caller only
 * the few values live across the switch are kept, where a called function
 * had to push and pop all six that the System V ABI says a callee keeps.
 * RFLAGS is not saved: every switch happens with interrupts off, and each
 * thread restores its own interrupt flag from the flags it saved on its own
 * stack.  RBP is saved by hand: the frame pointer cannot be clobbered, and
 * backtraces walk it.
 *
 * A new thread's stack (thread_prepare_stack) resumes at
 * arch_thread_trampoline (switch.S) with its entry function and argument on
 * the stack above.
 *
 *     arch_switch_stacks(&prev->saved_rsp, next->saved_rsp);
 */
#ifndef ARCH_X86_64_SWITCH_H
#define ARCH_X86_64_SWITCH_H

#include <stdint.h>

static inline __attribute__((always_inline)) void arch_switch_stacks(uint64_t *save_rsp,
								     uint64_t load_rsp)
{
	__asm__ volatile("push %%rbp\n\t"
			 "lea 1f(%%rip), %%rax\n\t"
			 "push %%rax\n\t"
			 "mov %%rsp, (%%rdi)\n\t"
			 "mov %%rsi, %%rsp\n\t"
			 "ret\n"
			 "1:\tpop %%rbp"
			 : "+D"(save_rsp), "+S"(load_rsp)
			 :
			 : "rax", "rbx", "rcx", "rdx", "r8", "r9", "r10", "r11", "r12", "r13",
			   "r14", "r15", "memory", "cc");
}

/* First code a new thread runs (switch.S): entry(argument), both taken from
 * the stack; entry never returns. */
void arch_thread_trampoline(void);

#endif
