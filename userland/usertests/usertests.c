/*
 * usertests: the system's behaviour as programs see it, in the spirit of
 * xv6's usertests.  Every test runs in a child process of its own (a test
 * that crashes or hangs takes only itself down; a hang is killed when its
 * hang guard, far beyond any case's need, runs out), and each sits under the
 * question it answers.  Output is KTAP, one line per test, then "ALL TESTS
 * PASSED" or "SOME TESTS FAILED"; the exit status is 0 only when all passed.
 * `usertests name ...` runs some of them.
 *
 * Results are checked against the raw kernel result where the exact error
 * matters (ms_syscall: -errno in Linux's numbering, below as L_E*).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "usertests.h"

static int failures_in_case;

void t_fail(const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	printf("    # ");
	vprintf(format, ap);
	printf("\n");
	va_end(ap);
	failures_in_case++;
}

void t_note(const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	printf("    # ");
	vprintf(format, ap);
	printf("\n");
	va_end(ap);
}

int t_failed(void)
{
	return failures_in_case;
}

int t_run_child(void (*body)(void *), void *argument)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		t_fail("fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		body(argument);
		fflush(stdout);
		_exit(0);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid) {
		t_fail("waitpid: %s", strerror(errno));
		return -1;
	}
	return status;
}

void t_expect_signal(const char *what, void (*body)(void *), void *argument, int sig)
{
	int status = t_run_child(body, argument);
	if (status == -1)
		return;
	if (!WIFSIGNALED(status))
		t_fail("%s: expected signal %d, exited with %d", what, sig, WEXITSTATUS(status));
	else if (WTERMSIG(status) != sig)
		t_fail("%s: expected signal %d, got %d", what, sig, WTERMSIG(status));
}

long t_now_ms(void)
{
	struct timespec now;
	if (clock_gettime(CLOCK_MONOTONIC, &now) < 0)
		return -1;
	return now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

int t_pin_to_one_cpu(void *previous, size_t size)
{
	cpu_set_t *all = previous, one;
	if (size < sizeof *all || sched_getaffinity(0, sizeof *all, all) < 0 || !CPU_COUNT(all)) {
		t_fail("sched_getaffinity failed");
		return -1;
	}
	int cpu = 0;
	while (!CPU_ISSET(cpu, all))
		cpu++;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof one, &one) < 0) {
		t_fail("sched_setaffinity to CPU %d failed", cpu);
		return -1;
	}
	return cpu;
}

void t_sleep_ms(long ms)
{
	struct timespec request = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&request, NULL);
}

/* ---- the runner -------------------------------------------------------- */

/* Waits for pid; kills it when it is still running after hang_guard_ms (a
 * hang guard: no case takes that long, however slow the host).  Returns its
 * status, or -1 when the guard ended it.  Any other child that ended is
 * reaped on the way: as init, usertests adopts the orphans of the tests. */
static int wait_unless_hung(pid_t pid, long hang_guard_ms)
{
	long start = t_now_ms();
	for (long waited = 0;; waited += 10) {
		int status;
		pid_t ended = waitpid(-1, &status, WNOHANG);
		if (ended == pid)
			return status;
		if (ended > 0)
			continue; /* an adopted orphan */
		if (ended < 0 && errno != EINTR)
			return -2;
		long now = t_now_ms();
		long elapsed = start >= 0 && now >= 0 ? now - start : waited;
		if (elapsed > hang_guard_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		t_sleep_ms(10);
	}
}

/* SIG_IGN or SIG_DFL for SIGHUP (sigaction: newlib's signal() does not
 * reach the kernel). */
static void set_hangup_action(void (*action)(int))
{
	struct sigaction hangup = {0};
	hangup.sa_handler = action;
	sigaction(SIGHUP, &hangup, NULL);
}

static int run_case(int number, const struct user_test *test)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		set_hangup_action(SIG_DFL); /* the runner's own ignoring is not the case's */
		failures_in_case = 0;
		test->run();
		fflush(stdout);
		_exit(failures_in_case ? 1 : 0);
	}
	const char *verdict = "ok";
	char reason[64] = "";
	if (pid < 0) {
		verdict = "not ok";
		snprintf(reason, sizeof(reason), " # fork: %s", strerror(errno));
	} else {
		int status = wait_unless_hung(pid, test->hang_guard_ms);
		if (status == -1)
			snprintf(reason, sizeof(reason), " # hung: still running after %ld s",
				 test->hang_guard_ms / 1000);
		else if (status == -2)
			snprintf(reason, sizeof(reason), " # lost the child");
		else if (WIFSIGNALED(status))
			snprintf(reason, sizeof(reason), " # killed by signal %d",
				 WTERMSIG(status));
		else if (WEXITSTATUS(status) == T_SKIPPED)
			verdict = "ok", snprintf(reason, sizeof(reason), " # SKIP");
		else if (WEXITSTATUS(status) != 0)
			snprintf(reason, sizeof(reason), " # exit status %d", WEXITSTATUS(status));
		if (reason[0] && strcmp(reason, " # SKIP") != 0)
			verdict = "not ok";
	}
	printf("%s %d %s%s\n", verdict, number, test->name, reason);
	fflush(stdout);
	return strcmp(verdict, "ok") != 0;
}

static int selected(const struct user_test *test, int argc, char **argv)
{
	if (argc < 2)
		return 1;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], test->name) == 0)
			return 1;
	return 0;
}

const char *t_program_path = "/bin/usertests";

int main(int argc, char **argv)
{
	if (argc > 0 && strchr(argv[0], '/'))
		t_program_path = argv[0];
	if (argc == 3 && strcmp(argv[1], "--print-env") == 0) {
		const char *value = getenv(argv[2]);
		printf("%s\n", value ? value : "(unset)");
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--signals-after-exec") == 0)
		return signals_exec_child_main();
	if (argc == 2 && strcmp(argv[1], "--altstack-after-exec") == 0)
		return altstack_exec_child_main();
	if (argc == 2 && strcmp(argv[1], "--clock-check") == 0)
		return user_clock_child_main();
	if (argc == 2 && strcmp(argv[1], "--reply-receive") == 0)
		return user_reply_receive_child_main();
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* A case killed by its hang guard may leave a stopped child in the
	 * runner's own process group, now orphaned: the SIGHUP POSIX sends that
	 * group must not end the runner (init) with the cases still to run. */
	set_hangup_action(SIG_IGN);
	int count = 0, failed = 0;
	for (const struct user_test *t = user_tests; t->name; t++)
		count += selected(t, argc, argv);
	printf("KTAP version 1\n1..%d\n", count);
	int number = 0;
	for (const struct user_test *t = user_tests; t->name; t++)
		if (selected(t, argc, argv))
			failed += run_case(++number, t);
	printf("%s (%d of %d failed)\n", failed ? "SOME TESTS FAILED" : "ALL TESTS PASSED", failed,
	       count);
	fflush(stdout);
	return failed ? 1 : 0;
}
