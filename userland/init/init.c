/*
 * init: the first process.  Runs /etc/rc with the shell (when it exists),
 * then starts an interactive shell on the console and starts another each
 * time one exits.  Each child starts a session of its own: /etc/rc's (so
 * what it starts is not in the console's session), and the console shell's,
 * which takes the console as its controlling terminal (TIOCSCTTY) so that
 * ^C and ^Z reach its foreground job only.  Every orphan is re-parented to init, so the same wait
 * loop reaps them all.  `init program args...` runs that program once
 * instead of the shell.  init never exits: the kernel has no one to hand its
 * children to.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <microscope/syscall.h>

#define SHELL     "/bin/sh"
#define RC_FILE   "/etc/rc"
#define TIOCSCTTY 0x540e

enum terminal { NO_TERMINAL, CONSOLE_TERMINAL };

static pid_t start(char *const argv[], enum terminal terminal)
{
	pid_t pid = fork();
	if (pid == 0) {
		setsid();
		long error =
		    terminal == CONSOLE_TERMINAL ? ms_syscall3(__NR_ioctl, 0, TIOCSCTTY, 0) : 0;
		if (error < 0)
			fprintf(stderr, "init: no controlling terminal (error %ld)\n", -error);
		execv(argv[0], argv);
		fprintf(stderr, "init: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (pid < 0)
		fprintf(stderr, "init: fork: %s\n", strerror(errno));
	return pid;
}

/* Reaps children until pid ends (or, for pid -1, until there are none).
 * Returns pid's status, or -1. */
static int reap_until(pid_t pid)
{
	for (;;) {
		int status;
		pid_t ended = wait(&status);
		if (ended < 0 && errno == EINTR)
			continue;
		if (ended < 0)
			return -1;
		if (ended == pid)
			return status;
	}
}

static void run_rc(void)
{
	if (access(RC_FILE, R_OK) < 0)
		return;
	char *argv[] = {SHELL, RC_FILE, NULL};
	pid_t pid = start(argv, NO_TERMINAL);
	if (pid > 0)
		reap_until(pid);
}

int main(int argc, char **argv)
{
	if (getpid() != 1)
		fprintf(stderr, "init: running as pid %d, not 1\n", (int)getpid());
	run_rc();
	if (argc > 1) {
		reap_until(start(argv + 1, CONSOLE_TERMINAL));
	} else {
		for (;;) {
			char *shell[] = {SHELL, NULL};
			pid_t pid = start(shell, CONSOLE_TERMINAL);
			if (pid < 0 || reap_until(pid) < 0)
				sleep(1); /* do not spin when the shell cannot start */
		}
	}
	for (;;)
		if (reap_until(-1) < 0)
			sleep(1); /* no children now; orphans may come later */
}
