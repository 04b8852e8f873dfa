/*
 * Process groups, sessions, the controlling terminal and ignored signals:
 * setpgid, getpgid, getpgrp, setsid, getsid, tcsetpgrp, tcgetpgrp, killpg
 * and sigaction.  The kernel has no signal handlers, so sigaction accepts
 * SIG_DFL and SIG_IGN only (EINVAL for a function); newlib's own signal()
 * stays a user-space emulation and does not reach the kernel.
 */
#include <errno.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include "internal.h"

#define TIOCGPGRP 0x540f
#define TIOCSPGRP 0x5410

int setpgid(pid_t pid, pid_t pgid)
{
	return (int)sys_result(ms_syscall3(__NR_setpgid, pid, pgid, 0));
}

pid_t getpgid(pid_t pid)
{
	return (pid_t)sys_result(ms_syscall3(__NR_getpgid, pid, 0, 0));
}

pid_t getpgrp(void)
{
	return (pid_t)sys_result(ms_syscall3(__NR_getpgrp, 0, 0, 0));
}

pid_t setsid(void)
{
	return (pid_t)sys_result(ms_syscall3(__NR_setsid, 0, 0, 0));
}

pid_t getsid(pid_t pid)
{
	return (pid_t)sys_result(ms_syscall3(__NR_getsid, pid, 0, 0));
}

int tcsetpgrp(int fd, pid_t pgid)
{
	int value = pgid;
	return (int)sys_result(ms_syscall3(__NR_ioctl, fd, TIOCSPGRP, (long)&value));
}

pid_t tcgetpgrp(int fd)
{
	int value = 0;
	long result = sys_result(ms_syscall3(__NR_ioctl, fd, TIOCGPGRP, (long)&value));
	return result < 0 ? -1 : value;
}

int killpg(pid_t pgid, int sig)
{
	if (pgid <= 1) {
		errno = EINVAL;
		return -1;
	}
	return kill(-pgid, sig);
}

/* The kernel's struct sigaction (Linux x86_64). */
struct kernel_sigaction {
	unsigned long handler;
	unsigned long flags;
	unsigned long restorer;
	unsigned long mask;
};

int sigaction(int sig, const struct sigaction *action, struct sigaction *old)
{
	struct kernel_sigaction in = {0}, out = {0};
	int linux_sig = signal_to_linux(sig);
	if (linux_sig < 0) {
		errno = EINVAL;
		return -1;
	}
	if (action) {
		if (action->sa_handler != SIG_DFL && action->sa_handler != SIG_IGN) {
			errno = EINVAL; /* no signal handlers */
			return -1;
		}
		in.handler = action->sa_handler == SIG_IGN ? 1 : 0;
	}
	long result = sys_result(ms_syscall6(__NR_rt_sigaction, linux_sig, action ? (long)&in : 0,
					     (long)&out, sizeof in.mask, 0, 0));
	if (result < 0)
		return -1;
	if (old) {
		*old = (struct sigaction){0};
		old->sa_handler = out.handler == 1 ? SIG_IGN : SIG_DFL;
	}
	return 0;
}
