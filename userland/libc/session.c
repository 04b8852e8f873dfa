/*
 * Process groups, sessions and the controlling terminal: setpgid, getpgid,
 * getpgrp, setsid, getsid, tcsetpgrp, tcgetpgrp and killpg.
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
