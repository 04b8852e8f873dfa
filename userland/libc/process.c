/*
 * Process system calls: exit, fork, execve and the exec* family, wait and
 * waitpid, kill, getpid.  Wait statuses keep Linux's encoding (the
 * <sys/wait.h> macros read it as it is); only a killing signal's number is
 * turned into newlib's.  execvp searches PATH, or /bin:/sbin without one.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

#define EXEC_MAX_ARGS 64

extern char **environ;

void _exit(int code)
{
	ms_syscall3(__NR_exit_group, code, 0, 0);
	for (;;)
		ms_syscall3(__NR_exit, code, 0, 0);
}

pid_t getpid(void)
{
	return (pid_t)ms_syscall3(__NR_getpid, 0, 0, 0);
}
ALSO_NAMED(getpid, _getpid);

pid_t getppid(void)
{
	return (pid_t)ms_syscall3(__NR_getppid, 0, 0, 0);
}

/* A signal Linux does not have (SIGEMT, SIGLOST) is EINVAL, as an unknown
 * number is. */
int kill(pid_t pid, int sig)
{
	int linux_sig = signal_to_linux(sig);
	if (linux_sig < 0) {
		errno = EINVAL;
		return -1;
	}
	return (int)sys_result(ms_syscall3(__NR_kill, pid, linux_sig, 0));
}
ALSO_NAMED(kill, _kill);

unsigned ms_fork_depth; /* microscope/process.h */

pid_t fork(void)
{
	pid_t pid = (pid_t)sys_result(ms_syscall3(__NR_fork, 0, 0, 0));
	if (pid == 0)
		ms_fork_depth++;
	return pid;
}
ALSO_NAMED(fork, _fork);

int execve(const char *path, char *const argv[], char *const envp[])
{
	return (int)sys_result(ms_syscall3(__NR_execve, (long)path, (long)argv, (long)envp));
}
ALSO_NAMED(execve, _execve);

int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

/* A name with a '/' is a path; otherwise each PATH directory in turn.  The
 * error is the last directory's, except that ENOENT gives way to any other. */
int execvp(const char *file, char *const argv[])
{
	if (strchr(file, '/'))
		return execve(file, argv, environ);
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/bin:/sbin";
	int saved = ENOENT;
	char candidate[256];
	while (*path) {
		size_t length = strcspn(path, ":");
		if (length + strlen(file) + 2 <= sizeof(candidate)) {
			memcpy(candidate, path, length);
			candidate[length] = '/';
			strcpy(candidate + length + 1, file);
			execve(candidate, argv, environ);
			if (errno != ENOENT)
				saved = errno;
		}
		path += length + (path[length] == ':');
	}
	errno = saved;
	return -1;
}

/* execl(path, arg0, ..., NULL): at most EXEC_MAX_ARGS arguments (E2BIG). */
int execl(const char *path, const char *arg0, ...)
{
	char *argv[EXEC_MAX_ARGS + 1];
	va_list ap;
	int count = 0;
	va_start(ap, arg0);
	for (const char *arg = arg0; arg; arg = va_arg(ap, const char *)) {
		if (count == EXEC_MAX_ARGS) {
			va_end(ap);
			errno = E2BIG;
			return -1;
		}
		argv[count++] = (char *)arg;
	}
	va_end(ap);
	argv[count] = NULL;
	return execve(path, argv, environ);
}

pid_t waitpid(pid_t pid, int *status, int options)
{
	int linux_status = 0;
	long result =
	    sys_result(ms_syscall6(__NR_wait4, pid, (long)&linux_status, options, 0, 0, 0));
	if (result > 0 && status)
		*status = wait_status_from_linux(linux_status);
	return (pid_t)result;
}

pid_t wait(int *status)
{
	return waitpid(-1, status, 0);
}
ALSO_NAMED(wait, _wait);

int sched_yield(void);
int sched_yield(void)
{
	return (int)sys_result(ms_syscall3(__NR_sched_yield, 0, 0, 0));
}
