/*
 * The system calls of process groups, sessions and ignored signals:
 * setpgid, getpgid, getpgrp, setsid, getsid and rt_sigaction (which knows
 * only SIG_DFL and SIG_IGN: there are no signal handlers).  Each checks its
 * arguments and acts through session.c.
 */
#include "lib/errno.h"
#include "proc/internal.h"
#include "syscall/syscall.h"
#include "uaccess/uaccess.h"

#define SIG_DFL 0
#define SIG_IGN 1

SYSCALL_DEFINE2(setpgid, int, pid, int, pgid)
{
	return proc_set_pgid(pid, pgid);
}

SYSCALL_DEFINE1(getpgid, int, pid)
{
	return proc_get_pgid(pid);
}

SYSCALL_DEFINE0(getpgrp)
{
	return proc_get_pgid(0);
}

SYSCALL_DEFINE0(setsid)
{
	return proc_set_sid();
}

SYSCALL_DEFINE1(getsid, int, pid)
{
	return proc_get_sid(pid);
}

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
	struct sigaction_user new_action = {0}, previous = {0};
	if (mask_size != sizeof new_action.mask || signal <= 0 || signal >= PROC_SIGNALS)
		return -EINVAL;
	if (action && copy_from_user(&new_action, action, sizeof new_action) < 0)
		return -EFAULT;
	if (action && new_action.handler != SIG_DFL && new_action.handler != SIG_IGN)
		return -EINVAL; /* no handlers: only the default action or ignoring */
	bool was_ignored = proc_ignores_signal(signal);
	if (action) {
		int error = proc_set_ignored(signal, new_action.handler == SIG_IGN, &was_ignored);
		if (error)
			return error;
	}
	previous.handler = was_ignored ? SIG_IGN : SIG_DFL;
	if (old_action && copy_to_user(old_action, &previous, sizeof previous) < 0)
		return -EFAULT;
	return 0;
}
