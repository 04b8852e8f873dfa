/*
 * The alternate signal stack (sigaltstack), kept as Linux keeps it, so that
 * a handler can run when the program's own stack is gone (an overflow's
 * SIGSEGV).  Linux holds it per thread; a process here has one user thread,
 * so it lives in struct process, and only that thread reads or changes it:
 * the system call, a handler's frame (signal.c) and rt_sigreturn.  fork
 * copies it; exec leaves none but keeps the flags, as Linux does (a later
 * handler's uc_stack shows them).  The first process starts with none.
 *
 * The kernel never checks where the stack lies: the program may name any
 * address, as on Linux.  What keeps the kernel safe is that a frame is
 * written through copy_to_user only (a kernel address, an unmapped page or
 * a range that wraps is -EFAULT, and the process ends with SIGSEGV) and that
 * a frame must end inside the stack it starts in (signal.c).
 *
 * What "on the stack" means follows Linux: sp above the lowest address and
 * at most size above it; never while SS_AUTODISARM is set, since a handler
 * entering the stack disarms it.  A call that would change the stack while
 * the caller runs on it is -EPERM, and a refused change leaves everything
 * as it was.
 */
#include "lib/errno.h"
#include "panic/panic.h"
#include "proc/internal.h"

#define MINSIGSTKSZ 2048 /* Linux's x86_64 value */

void proc_altstack_reset(struct proc_altstack *stack)
{
	*stack = (struct proc_altstack){.flags = PROC_SS_DISABLE};
}

void proc_altstack_forget(struct proc_altstack *stack)
{
	stack->sp = 0;
	stack->size = 0;
}

bool proc_altstack_within(const struct proc_altstack *stack, uint64_t sp)
{
	return sp > stack->sp && sp - stack->sp <= stack->size;
}

bool proc_altstack_holds(const struct proc_altstack *stack, uint64_t sp)
{
	if (stack->flags & PROC_SS_AUTODISARM)
		return false;
	return proc_altstack_within(stack, sp);
}

uint32_t proc_altstack_state(const struct proc_altstack *stack, uint64_t sp)
{
	if (!stack->size)
		return PROC_SS_DISABLE;
	return proc_altstack_holds(stack, sp) ? PROC_SS_ONSTACK : 0;
}

int proc_altstack_check(const struct proc_altstack *current, struct proc_altstack *wanted,
			uint64_t sp)
{
	if (proc_altstack_holds(current, sp))
		return -EPERM;
	uint32_t mode = wanted->flags & ~PROC_SS_AUTODISARM;
	if (mode != 0 && mode != PROC_SS_ONSTACK && mode != PROC_SS_DISABLE)
		return -EINVAL;
	if (mode == PROC_SS_DISABLE) {
		wanted->sp = 0;
		wanted->size = 0;
		return 0;
	}
	return wanted->size < MINSIGSTKSZ ? -ENOMEM : 0;
}

int proc_altstack_prepare(uint64_t sp, struct proc_altstack *wanted, struct proc_altstack *old)
{
	struct process *p = proc_current();
	if (!p)
		return -EINVAL;
	*old = p->altstack;
	old->flags =
	    proc_altstack_state(&p->altstack, sp) | (p->altstack.flags & PROC_SS_AUTODISARM);
	return wanted ? proc_altstack_check(&p->altstack, wanted, sp) : 0;
}

void proc_altstack_set(const struct proc_altstack *wanted)
{
	struct process *p = proc_current();
	ASSERT(p);
	p->altstack = *wanted;
}
