/*
 * usertests for what happens to processes whose parent or session leader
 * ends: orphans go to init (pid 1, which reaps them), a process group left
 * orphaned with a stopped member hears SIGHUP and SIGCONT (POSIX), and the
 * console's foreground group hears SIGHUP when the console's session leader
 * ends, while a daemon in a session of its own and a background group do not;
 * the console is cooked again for the next session even when the last one
 * left it raw.  Each process reports what it lived through as one byte into a pipe the
 * test reads until every writer has ended.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "usertests.h"

#define L_SIGHUP  1
#define L_SIGSTOP 19
#define L_SIGKILL 9
#define TIOCSCTTY 0x540e

/* A hang guard: when the system works every writer ends, and collect returns
 * then; only a member left stopped for ever (a failure anyway) waits it out. */
#define COLLECT_LIMIT_MS 60000

struct kernel_sigaction {
	unsigned long handler, flags, restorer, mask;
};

static void ignore_hangups(void)
{
	struct kernel_sigaction ignore = {1, 0, 0, 0}; /* SIG_IGN */
	ms_syscall6(__NR_rt_sigaction, L_SIGHUP, (long)&ignore, 0, 8, 0, 0);
}

static void report(int fd, char what)
{
	if (write(fd, &what, 1) != 1)
		_exit(3);
}

/* Reads fd until every writer has closed it, or limit_ms passed (a hang
 * guard); returns the bytes read (a string in out[size]). */
static size_t collect(int fd, char *out, size_t size, long limit_ms)
{
	size_t length = 0;
	long start = t_now_ms();
	while (length + 1 < size && t_now_ms() - start < limit_ms) {
		struct pollfd ready = {fd, POLLIN, 0};
		if (poll(&ready, 1, 200) <= 0)
			continue;
		ssize_t got = read(fd, out + length, size - 1 - length);
		if (got <= 0)
			break;
		length += (size_t)got;
	}
	out[length] = '\0';
	return length;
}

/* Reads a pid written as an int into fd, or 0. */
static pid_t read_pid(int fd)
{
	pid_t pid = 0;
	return read(fd, &pid, sizeof pid) == sizeof pid ? pid : 0;
}

/* The parent of the orphaned group: it leads a session of its own, starts a
 * group of two stopped members (one ignoring SIGHUP) and a running member of
 * another group, tells the test their pids and ends. */
static void orphaning_parent(int out, int pids)
{
	ms_syscall3(__NR_setsid, 0, 0, 0);
	pid_t ignoring = fork();
	if (ignoring == 0) {
		setpgid(0, 0);
		ignore_hangups();
		ms_syscall3(__NR_kill, getpid(), L_SIGSTOP, 0);
		report(out, getppid() == 1 ? 'c' : 'p'); /* continued, adopted by init */
		_exit(0);
	}
	setpgid(ignoring, ignoring);
	pid_t hearing = fork();
	if (hearing == 0) {
		setpgid(0, ignoring);
		ms_syscall3(__NR_kill, getpid(), L_SIGSTOP, 0);
		report(out, 'x'); /* SIGHUP should have ended it */
		_exit(0);
	}
	setpgid(hearing, ignoring);
	pid_t running = fork();
	if (running == 0) {
		setpgid(0, 0);
		t_sleep_ms(500);
		report(out, 'r'); /* an orphaned group without a stopped member */
		_exit(0);
	}
	int status;
	waitpid(ignoring, &status, WUNTRACED);
	waitpid(hearing, &status, WUNTRACED);
	pid_t all[3] = {ignoring, hearing, running};
	if (write(pids, all, sizeof all) != sizeof all)
		_exit(3);
	_exit(0);
}

/* When its parent ends, is a stopped group that nobody in its session can
 * continue any more sent SIGHUP and SIGCONT (a member ignoring SIGHUP goes
 * on, under init; one that does not ends), and is a running orphaned group
 * left alone? */
void orphaned_group_hears_sighup(void)
{
	int out[2], pids[2];
	if (pipe(out) < 0 || pipe(pids) < 0)
		t_fail("pipe: %s", strerror(errno));
	pid_t parent = fork();
	if (parent == 0) {
		close(out[0]);
		close(pids[0]);
		orphaning_parent(out[1], pids[1]);
	}
	close(out[1]);
	close(pids[1]);
	int status = 0;
	waitpid(parent, &status, 0);
	pid_t children[3] = {read_pid(pids[0]), read_pid(pids[0]), read_pid(pids[0])};
	char seen[16];
	collect(out[0], seen, sizeof seen, COLLECT_LIMIT_MS);
	if (!strchr(seen, 'c'))
		t_fail("the member ignoring SIGHUP was not continued under init (saw '%s')", seen);
	if (strchr(seen, 'x'))
		t_fail("the member not ignoring SIGHUP went on (saw '%s')", seen);
	if (!strchr(seen, 'r'))
		t_fail("a running orphaned group was disturbed (saw '%s')", seen);
	for (int i = 0; i < 3; i++)
		if (children[i] > 0)
			kill(children[i], SIGKILL); /* none should be left; if one is, end it */
	close(out[0]);
	close(pids[0]);
}

/* Does a process whose parent ended have init (pid 1) as its parent? */
void orphans_go_to_init(void)
{
	int out[2];
	if (pipe(out) < 0)
		t_fail("pipe: %s", strerror(errno));
	pid_t parent = fork();
	if (parent == 0) {
		pid_t first = getpid(); /* before the fork: it may end before the child runs */
		pid_t child = fork();
		if (child == 0) {
			/* never adopted: the case's hang guard ends it */
			while (getppid() == first)
				t_sleep_ms(10);
			pid_t adopted = getppid();
			if (write(out[1], &adopted, sizeof adopted) != sizeof adopted)
				_exit(3);
			_exit(0);
		}
		_exit(0);
	}
	close(out[1]);
	waitpid(parent, NULL, 0);
	pid_t adopted = read_pid(out[0]);
	if (adopted != 1)
		t_fail("an orphan's parent is %d, expected init (1)", (int)adopted);
	close(out[0]);
}

/* The console's session leader: takes the console, starts a foreground
 * member (it should hear SIGHUP), a background group and a daemon in a
 * session of its own (neither should), then ends. */
static void console_leader(int out)
{
	ms_syscall3(__NR_setsid, 0, 0, 0);
	long taken = ms_syscall3(__NR_ioctl, 0, TIOCSCTTY, 0);
	if (taken < 0) {
		report(out, 'n'); /* the console belongs to another session */
		_exit(0);
	}
	pid_t member = fork();
	if (member == 0) {
		t_sleep_ms(3000);
		report(out, 'f'); /* the foreground group should have heard SIGHUP */
		_exit(0);
	}
	pid_t background = fork();
	if (background == 0) {
		setpgid(0, 0);
		t_sleep_ms(800);
		report(out, 'b');
		_exit(0);
	}
	setpgid(background, background);
	pid_t daemon = fork();
	if (daemon == 0) {
		ms_syscall3(__NR_setsid, 0, 0, 0);
		t_sleep_ms(800);
		report(out, 'd');
		_exit(0);
	}
	while (ms_syscall3(__NR_getsid, daemon, 0, 0) != daemon) /* out of the session first */
		t_sleep_ms(5);
	t_sleep_ms(100);
	_exit(0);
}

/* When the console's session leader ends, does its foreground group hear
 * SIGHUP, while a background group of the session and a daemon of another
 * session go on, and is the console free again? */
void console_hangup_reaches_foreground(void)
{
	if (!isatty(0))
		exit(T_SKIPPED);
	int out[2];
	if (pipe(out) < 0)
		t_fail("pipe: %s", strerror(errno));
	pid_t leader = fork();
	if (leader == 0) {
		close(out[0]);
		console_leader(out[1]);
	}
	close(out[1]);
	waitpid(leader, NULL, 0);
	char seen[16];
	collect(out[0], seen, sizeof seen, COLLECT_LIMIT_MS);
	close(out[0]);
	if (strchr(seen, 'n')) {
		t_note("the console belongs to another session: not checked");
		exit(T_SKIPPED);
	}
	if (strchr(seen, 'f'))
		t_fail("the foreground group went on after its session leader ended (saw '%s')",
		       seen);
	if (!strchr(seen, 'b') || !strchr(seen, 'd'))
		t_fail("a background group or a daemon was hung up (saw '%s')", seen);
	pid_t next = fork();
	if (next == 0) {
		ms_syscall3(__NR_setsid, 0, 0, 0);
		long taken = ms_syscall3(__NR_ioctl, 0, TIOCSCTTY, 0);
		_exit(taken == 0 ? 0 : 1);
	}
	int status = 0;
	waitpid(next, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		t_fail("the console was not free after its session leader ended");
}

#define TCGETS       0x5401
#define TCSETS       0x5402
#define LFLAG_COOKED 0000013 /* ISIG | ICANON | ECHO */

/* The console's c_lflag, or -1. */
static long console_lflag(void)
{
	uint8_t termios[36];
	if (ms_syscall3(__NR_ioctl, 0, TCGETS, (long)termios) < 0)
		return -1;
	uint32_t lflag;
	memcpy(&lflag, termios + 12, sizeof lflag);
	return lflag;
}

static void set_console_lflag(uint32_t lflag)
{
	uint8_t termios[36];
	if (ms_syscall3(__NR_ioctl, 0, TCGETS, (long)termios) < 0)
		return;
	memcpy(termios + 12, &lflag, sizeof lflag);
	ms_syscall3(__NR_ioctl, 0, TCSETS, (long)termios);
}

/* A session leader that takes the console, leaves it raw and ends (as a
 * shell killed while editing a line does); 2: the console was not free. */
static void leave_console_raw(void *unused)
{
	(void)unused;
	ms_syscall3(__NR_setsid, 0, 0, 0);
	if (ms_syscall3(__NR_ioctl, 0, TIOCSCTTY, 0) < 0)
		_exit(2);
	set_console_lflag((uint32_t)console_lflag() & ~(uint32_t)LFLAG_COOKED);
	_exit(0);
}

/* A new session taking the console: 0 when it finds it cooked. */
static void take_console_cooked(void *unused)
{
	(void)unused;
	ms_syscall3(__NR_setsid, 0, 0, 0);
	if (ms_syscall3(__NR_ioctl, 0, TIOCSCTTY, 0) < 0)
		_exit(2);
	_exit((console_lflag() & LFLAG_COOKED) == LFLAG_COOKED ? 0 : 1);
}

/* Is the console cooked again when the session that left it raw hangs up,
 * and when a new session takes a console left raw? */
void console_cooked_after_hangup(void)
{
	if (!isatty(0) || console_lflag() < 0)
		exit(T_SKIPPED);
	uint32_t before = (uint32_t)console_lflag();
	int status = t_run_child(leave_console_raw, NULL);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
		t_note("the console belongs to another session: not checked");
		exit(T_SKIPPED);
	}
	if ((console_lflag() & LFLAG_COOKED) != LFLAG_COOKED)
		t_fail("the console stayed raw (lflag %#lo) after its session hung up",
		       console_lflag());
	set_console_lflag(before & ~(uint32_t)LFLAG_COOKED);
	status = t_run_child(take_console_cooked, NULL);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		t_fail("a session taking a raw console found it raw (status %#x)", status);
	set_console_lflag(before | LFLAG_COOKED);
}
