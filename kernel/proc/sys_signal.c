/*
 * The system calls of signals, with Linux's arguments: rt_sigaction,
 * rt_sigprocmask, rt_sigpending, rt_sigsuspend, rt_sigreturn and
 * sigaltstack.  Each reads what user space passes once, checks it (the
 * set's size is 8 bytes, as Linux's sigset_t; rt_sigpending, as Linux,
 * takes up to 8) and acts through signal.c and altstack.c.
 */
#include "lib/errno.h"
#include "proc/internal.h"
#include "syscall/syscall.h"
#include "uaccess/uaccess.h"

#define SIGSET_SIZE 8

/* Linux's stack_t for x86_64. */
struct stack_user {
	uint64_t sp;
	int32_t flags;
	int32_t pad;
	uint64_t size;
};

/* Linux's struct sigaction for x86_64 (the kernel's, not glibc's). */
struct sigaction_user {
	uint64_t handler;
	uint64_t flags;
	uint64_t restorer;
	uint64_t mask;
};

SYSCALL_DEFINE4(rt_sigaction, int, signal, const struct sigaction_user *, action,
		struct sigaction_user *, old_action, uint64_t, mask_size)
{
	struct sigaction_user in = {0};
	struct proc_sigaction new_action, previous;
	if (mask_size != SIGSET_SIZE || signal <= 0 || signal >= PROC_SIGNALS)
		return -EINVAL;
	if (action && copy_from_user(&in, action, sizeof in) < 0)
		return -EFAULT;
	new_action = (struct proc_sigaction){.handler = in.handler,
					     .flags = in.flags,
					     .restorer = in.restorer,
					     .mask = proc_unpack_mask(in.mask)};
	int error = proc_set_signal_action(signal, action ? &new_action : NULL, &previous);
	if (error)
		return error;
	struct sigaction_user out = {.handler = previous.handler,
				     .flags = previous.flags,
				     .restorer = previous.restorer,
				     .mask = proc_pack_mask(previous.mask)};
	if (old_action && copy_to_user(old_action, &out, sizeof out) < 0)
		return -EFAULT;
	return 0;
}

SYSCALL_DEFINE4(rt_sigprocmask, int, how, const uint64_t *, set, uint64_t *, old_set, uint64_t,
		set_size)
{
	uint64_t in = 0;
	uint32_t mask, old;
	if (set_size != SIGSET_SIZE)
		return -EINVAL;
	if (set && copy_from_user(&in, set, sizeof in) < 0)
		return -EFAULT;
	if (set && how != PROC_SIG_BLOCK && how != PROC_SIG_UNBLOCK && how != PROC_SIG_SETMASK)
		return -EINVAL;
	mask = proc_unpack_mask(set ? in : 0);
	int error = proc_change_mask(how, set ? &mask : NULL, &old);
	if (error)
		return error;
	uint64_t out = proc_pack_mask(old);
	if (old_set && copy_to_user(old_set, &out, sizeof out) < 0)
		return -EFAULT;
	return 0;
}

/* As Linux, a shorter set gets the first set_size bytes. */
SYSCALL_DEFINE2(rt_sigpending, uint64_t *, set, uint64_t, set_size)
{
	if (set_size > SIGSET_SIZE)
		return -EINVAL;
	uint64_t out = proc_pack_mask(proc_held_signals());
	return copy_to_user(set, &out, set_size) < 0 ? -EFAULT : 0;
}

SYSCALL_DEFINE2(rt_sigsuspend, const uint64_t *, set, uint64_t, set_size)
{
	uint64_t in = 0;
	if (set_size != SIGSET_SIZE)
		return -EINVAL;
	if (copy_from_user(&in, set, sizeof in) < 0)
		return -EFAULT;
	return proc_suspend_with_mask(proc_unpack_mask(in));
}

SYSCALL_DEFINE0(rt_sigreturn)
{
	return proc_sigreturn(syscall_user_frame());
}

/* As Linux, except that an old_stack that cannot be written leaves the
 * stack as it was (Linux sets the new one and still returns -EFAULT): it is
 * written after every check and before the change, which cannot fail.
 * Returns 0, -EFAULT (stack unreadable, old_stack unwritable), or -EPERM,
 * -EINVAL, -ENOMEM (proc_altstack_prepare); nothing changes unless 0. */
SYSCALL_DEFINE2(sigaltstack, const struct stack_user *, stack, struct stack_user *, old_stack)
{
	struct stack_user in = {0};
	if (stack && copy_from_user(&in, stack, sizeof in) < 0)
		return -EFAULT;
	struct proc_altstack wanted = {.sp = in.sp, .size = in.size, .flags = (uint32_t)in.flags};
	struct proc_altstack old;
	int error = proc_altstack_prepare(syscall_user_frame()->rsp, stack ? &wanted : NULL, &old);
	if (error)
		return error;
	struct stack_user out = {.sp = old.sp, .flags = (int32_t)old.flags, .size = old.size};
	if (old_stack && copy_to_user(old_stack, &out, sizeof out) < 0)
		return -EFAULT;
	if (stack)
		proc_altstack_set(&wanted);
	return 0;
}
