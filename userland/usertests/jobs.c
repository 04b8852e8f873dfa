/*
 * usertests for job control: process groups and sessions, stopping and
 * continuing, signals to a group, ignored signals, and the console's
 * controlling-terminal ioctls, kcmd's output capture, each with the hostile inputs the system calls
 * must refuse.  Raw system calls (ms_syscall) where the Linux errno matters.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "usertests.h"

#define L_ESRCH     3
#define L_EPERM     1
#define L_ENOTTY    25
#define L_SIGINT    2
#define L_SIGKILL   9
#define L_SIGTERM   15
#define L_SIGCONT   18
#define L_SIGSTOP   19
#define TIOCSCTTY   0x540e
#define TIOCGPGRP   0x540f
#define TIOCSPGRP   0x5410
#define TIOCNOTTY   0x5422
#define BAD_POINTER 0xffff800000001000L

static void expect(const char *what, long got, long expected)
{
	if (got != expected)
		t_fail("%s: got %ld, expected %ld", what, got, expected);
}

static pid_t sleeper(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		for (;;)
			t_sleep_ms(1000);
	}
	if (pid < 0)
		t_fail("fork: %s", strerror(errno));
	return pid;
}

static void sessions_body(void *unused)
{
	pid_t self = getpid();
	expect("setsid in a fresh child", ms_syscall3(__NR_setsid, 0, 0, 0), self);
	expect("getsid(0)", ms_syscall3(__NR_getsid, 0, 0, 0), self);
	expect("getpgid(0) after setsid", ms_syscall3(__NR_getpgid, 0, 0, 0), self);
	expect("setsid by a group leader", ms_syscall3(__NR_setsid, 0, 0, 0), -L_EPERM);
	expect("setpgid of a session leader", ms_syscall3(__NR_setpgid, 0, 0, 0), -L_EPERM);
	pid_t child = sleeper();
	expect("a child starts in our group", ms_syscall3(__NR_getpgid, child, 0, 0), self);
	expect("setpgid(child, child)", ms_syscall3(__NR_setpgid, child, child, 0), 0);
	expect("the child leads its group", ms_syscall3(__NR_getpgid, child, 0, 0), child);
	expect("setpgid to a group of nobody", ms_syscall3(__NR_setpgid, child, 99999, 0),
	       -L_EPERM);
	expect("setpgid of a stranger (init)", ms_syscall3(__NR_setpgid, 1, 0, 0), -L_ESRCH);
	expect("setpgid with a negative pgid", ms_syscall3(__NR_setpgid, 0, -5, 0), -L_EINVAL);
	expect("setpgid with a negative pid", ms_syscall3(__NR_setpgid, -5, 0, 0), -L_EINVAL);
	expect("getpgid of no process", ms_syscall3(__NR_getpgid, 99999, 0, 0), -L_ESRCH);
	expect("getsid with a negative pid", ms_syscall3(__NR_getsid, -5, 0, 0), -L_EINVAL);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	_exit(t_failed() ? 1 : 0);
}

/* Do setsid, setpgid, getpgid and getsid follow POSIX's rules, and refuse
 * what they must? */
void groups_and_sessions(void)
{
	int status = t_run_child(sessions_body, NULL);
	if (status != -1 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
		t_fail("the session checks failed (status %#x)", status);
}

/* The child of stop_and_continue: says it is up on started, then sleeps
 * until its parent writes to go or is gone (a sleep the stop interrupts),
 * and exits 7.  It never ends by itself, so the stop always finds it alive. */
static void sleep_until_told(const int started[2], const int go[2])
{
	close(started[0]);
	close(go[1]);
	if (write(started[1], "s", 1) != 1)
		_exit(1);
	fcntl(go[0], F_SETFL, O_NONBLOCK);
	char byte;
	while (read(go[0], &byte, 1) < 0)
		t_sleep_ms(50);
	_exit(7);
}

/* Does SIGSTOP stop a child (wait4 with WUNTRACED says so), SIGCONT
 * continue it, and a sleep interrupted by the stop finish afterwards? */
void stop_and_continue(void)
{
	int started[2], go[2];
	if (pipe(started) < 0 || pipe(go) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	pid_t pid = fork();
	if (pid == 0)
		sleep_until_told(started, go);
	if (pid < 0) {
		t_fail("fork: %s", strerror(errno));
		return;
	}
	char byte;
	if (read(started[0], &byte, 1) != 1)
		t_fail("the child never said it started");
	expect("SIGSTOP", ms_syscall3(__NR_kill, pid, L_SIGSTOP, 0), 0);
	int status = 0;
	if (waitpid(pid, &status, WUNTRACED) != pid || !WIFSTOPPED(status) ||
	    WSTOPSIG(status) != SIGSTOP)
		t_fail("wait after SIGSTOP: status %#x", status);
	if (waitpid(pid, &status, WNOHANG | WUNTRACED) != 0)
		t_fail("a stop was reported twice");
	expect("SIGCONT", ms_syscall3(__NR_kill, pid, L_SIGCONT, 0), 0);
	if (write(go[1], "g", 1) != 1)
		t_fail("write to the child: %s", strerror(errno));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 7)
		t_fail("after SIGCONT: status %#x, expected exit 7", status);
	expect("wait4 with an unknown option", ms_syscall6(__NR_wait4, -1, 0, 0x100, 0, 0, 0),
	       -L_EINVAL);
	close(started[0]);
	close(started[1]);
	close(go[0]);
	close(go[1]);
}

/* Is a read that a stop interrupts while it waits made again once the
 * process is continued, so that it returns the byte written afterwards
 * instead of -EINTR?  Child exit 7: the byte; 8: -EINTR. */
void a_stopped_read_goes_on_after_continue(void)
{
	int fds[2];
	if (pipe(fds) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		char byte = 0;
		long got = ms_syscall3(__NR_read, fds[0], (long)&byte, 1);
		_exit(got == 1 && byte == 'g' ? 7 : got == -4 ? 8 : 9);
	}
	if (pid < 0) {
		t_fail("fork: %s", strerror(errno));
		return;
	}
	if (!t_wait_until_waiting_on(pid, "pipe"))
		t_fail("the child never waited in its read");
	expect("SIGSTOP", ms_syscall3(__NR_kill, pid, L_SIGSTOP, 0), 0);
	int status = 0;
	if (waitpid(pid, &status, WUNTRACED) != pid || !WIFSTOPPED(status))
		t_fail("wait after SIGSTOP: status %#x", status);
	expect("SIGCONT", ms_syscall3(__NR_kill, pid, L_SIGCONT, 0), 0);
	if (write(fds[1], "g", 1) != 1)
		t_fail("write to the child: %s", strerror(errno));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 7)
		t_fail("after SIGCONT: status %#x, expected exit 7 (8: the read gave -EINTR)",
		       status);
	close(fds[0]);
	close(fds[1]);
}

/* Does kill(-pgid) reach every process of the group and nobody else, and
 * kill(pid, 64) fail? */
void signal_to_a_group(void)
{
	pid_t first = sleeper(), second = sleeper(), outsider = sleeper();
	setpgid(first, first);
	setpgid(second, first);
	expect("kill(-pgid, SIGTERM)", ms_syscall3(__NR_kill, -first, L_SIGTERM, 0), 0);
	int status = 0;
	for (int i = 0; i < 2; i++) {
		pid_t pid = i ? second : first;
		if (waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status) ||
		    WTERMSIG(status) != SIGTERM)
			t_fail("group member %d: status %#x", (int)pid, status);
	}
	if (waitpid(outsider, &status, WNOHANG) != 0)
		t_fail("the signal reached a process outside the group");
	expect("kill of an empty group", ms_syscall3(__NR_kill, -99999, 0, 0), -L_ESRCH);
	expect("kill with signal 64", ms_syscall3(__NR_kill, outsider, 64, 0), -L_EINVAL);
	kill(outsider, SIGKILL);
	waitpid(outsider, NULL, 0);
}

struct kernel_sigaction {
	unsigned long handler, flags, restorer, mask;
};

static void ignore_body(void *unused)
{
	struct kernel_sigaction ignore = {1, 0, 0, 0}, handler = {0x1234, 0, 0, 0}, old;
	expect("ignore SIGINT", ms_syscall6(__NR_rt_sigaction, L_SIGINT, (long)&ignore, 0, 8, 0, 0),
	       0);
	ms_syscall3(__NR_kill, getpid(), L_SIGINT, 0);
	t_sleep_ms(20); /* still here: the signal was dropped */
	expect("read back", ms_syscall6(__NR_rt_sigaction, L_SIGINT, 0, (long)&old, 8, 0, 0), 0);
	expect("old handler", (long)old.handler, 1);
	expect("a handler function",
	       ms_syscall6(__NR_rt_sigaction, L_SIGTERM, (long)&handler, 0, 8, 0, 0), -L_EINVAL);
	expect("ignore SIGKILL",
	       ms_syscall6(__NR_rt_sigaction, L_SIGKILL, (long)&ignore, 0, 8, 0, 0), -L_EINVAL);
	expect("mask size 4", ms_syscall6(__NR_rt_sigaction, L_SIGINT, (long)&ignore, 0, 4, 0, 0),
	       -L_EINVAL);
	expect("signal 0", ms_syscall6(__NR_rt_sigaction, 0, (long)&ignore, 0, 8, 0, 0), -L_EINVAL);
	expect("signal 64", ms_syscall6(__NR_rt_sigaction, 64, (long)&ignore, 0, 8, 0, 0),
	       -L_EINVAL);
	expect("bad action pointer",
	       ms_syscall6(__NR_rt_sigaction, L_SIGINT, BAD_POINTER, 0, 8, 0, 0), -L_EFAULT);
	expect("bad old-action pointer",
	       ms_syscall6(__NR_rt_sigaction, L_SIGINT, 0, BAD_POINTER, 8, 0, 0), -L_EFAULT);
	pid_t child = fork(); /* the setting is inherited */
	if (child == 0) {
		ms_syscall3(__NR_kill, getpid(), L_SIGINT, 0);
		t_sleep_ms(20);
		_exit(5);
	}
	int status = 0;
	waitpid(child, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 5)
		t_fail("a forked child did not inherit the ignored SIGINT (status %#x)", status);
	_exit(t_failed() ? 1 : 0);
}

/* Does an ignored signal stay ignored (also in a forked child), and does
 * rt_sigaction refuse handlers, SIGKILL, bad sizes and bad pointers? */
void ignored_signals(void)
{
	int status = t_run_child(ignore_body, NULL);
	if (status != -1 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
		t_fail("the ignore checks failed (status %#x)", status);
}

static void terminal_body(void *unused)
{
	int pgid = 0, bad = 99999, zero = 0;
	expect("TIOCSCTTY by a non-leader", ms_syscall3(__NR_ioctl, 0, TIOCSCTTY, 0), -L_EPERM);
	ms_syscall3(__NR_setsid, 0, 0, 0);
	long taken = ms_syscall3(__NR_ioctl, 0, TIOCSCTTY, 0);
	if (taken == -L_EPERM || taken == -L_ENOTTY) {
		t_note("the console belongs to another session (%ld): not checked", taken);
		_exit(0);
	}
	expect("TIOCSCTTY by a session leader", taken, 0);
	expect("TIOCGPGRP", ms_syscall3(__NR_ioctl, 0, TIOCGPGRP, (long)&pgid), 0);
	expect("the foreground group", pgid, getpid());
	expect("TIOCSPGRP to a group of nobody", ms_syscall3(__NR_ioctl, 0, TIOCSPGRP, (long)&bad),
	       -L_EPERM);
	expect("TIOCSPGRP to 0", ms_syscall3(__NR_ioctl, 0, TIOCSPGRP, (long)&zero), -L_EINVAL);
	expect("TIOCSPGRP from a bad pointer", ms_syscall3(__NR_ioctl, 0, TIOCSPGRP, BAD_POINTER),
	       -L_EFAULT);
	expect("TIOCGPGRP to a bad pointer", ms_syscall3(__NR_ioctl, 0, TIOCGPGRP, BAD_POINTER),
	       -L_EFAULT);
	expect("TIOCNOTTY", ms_syscall3(__NR_ioctl, 0, TIOCNOTTY, 0), 0);
	expect("TIOCGPGRP without the console", ms_syscall3(__NR_ioctl, 0, TIOCGPGRP, (long)&pgid),
	       -L_ENOTTY);
	_exit(t_failed() ? 1 : 0);
}

/* Do the controlling-terminal ioctls on the console check who asks and what
 * they pass? */
void terminal_ioctls(void)
{
	if (!isatty(0))
		exit(T_SKIPPED);
	int status = t_run_child(terminal_body, NULL);
	if (status != -1 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
		t_fail("the terminal checks failed (status %#x)", status);
}

/* Does kcmd's system call hand a command's output back (cut at the size
 * given), and refuse bad buffers? */
void kshell_output_captured(void)
{
	char output[64] = "";
	uint64_t length = 99;
	const char *line = "echo captured";
	expect("capture",
	       ms_syscall6(__NR_ms_kshell, (long)line, (long)output, sizeof output, (long)&length,
			   0, 0),
	       0);
	if (length != 9 || memcmp(output, "captured\n", 9) != 0)
		t_fail("captured %lu bytes: '%.*s'", (unsigned long)length, (int)length, output);
	expect("a 4-byte buffer",
	       ms_syscall6(__NR_ms_kshell, (long)line, (long)output, 4, (long)&length, 0, 0), 0);
	expect("length cut to the buffer", (long)length, 4);
	expect("bad output pointer",
	       ms_syscall6(__NR_ms_kshell, (long)line, BAD_POINTER, 64, (long)&length, 0, 0),
	       -L_EFAULT);
	expect("bad length pointer",
	       ms_syscall6(__NR_ms_kshell, (long)line, (long)output, 64, BAD_POINTER, 0, 0),
	       -L_EFAULT);
	expect("no length pointer",
	       ms_syscall6(__NR_ms_kshell, (long)line, (long)output, 64, 0, 0, 0), -L_EINVAL);
	expect("size 0",
	       ms_syscall6(__NR_ms_kshell, (long)line, (long)output, 0, (long)&length, 0, 0),
	       -L_EINVAL);
}
