/*
 * The process list as ps reads it (ms_getprocs), for tests that measure
 * their own memory, and the wait channels ps shows.  Apart from the other tests: uapi/proc.h's signal
 * numbers clash with newlib's <signal.h>.
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "uapi/proc.h"
#include "usertests.h"

long t_own_pages(void)
{
	static struct proc_info info[PROC_MAX];
	long count = ms_syscall3(__NR_ms_getprocs, (long)info, PROC_MAX, 0);
	for (long i = 0; i < count && i < PROC_MAX; i++)
		if (info[i].pid == getpid())
			return (long)info[i].pages;
	return -1;
}

/* The process named by name's last component ends in exec'd name, or has
 * ended, or is gone.  No time limit: one that never comes is the case's
 * hang guard. */
bool t_wait_until_named(int pid, const char *name)
{
	static struct proc_info info[PROC_MAX];
	for (;;) {
		long count = ms_syscall3(__NR_ms_getprocs, (long)info, PROC_MAX, 0);
		const struct proc_info *found = NULL;
		for (long i = 0; i < count && i < PROC_MAX; i++)
			if (info[i].pid == pid)
				found = &info[i];
		if (!found || found->state == PROC_ZOMBIE)
			return false;
		if (strcmp(found->name, name) == 0)
			return true;
		t_sleep_ms(20);
	}
}

/* The entry of pid in the wait-channel layout, or NULL. */
static const struct proc_info_wait *find_waiting(const struct proc_info_wait *info, long count,
						 int pid)
{
	for (long i = 0; i < count && i < PROC_MAX; i++)
		if (info[i].info.pid == pid)
			return &info[i];
	return NULL;
}

bool t_wait_until_waiting_on(int pid, const char *channel)
{
	static struct proc_info_wait info[PROC_MAX];
	/* It may not have reached its wait yet: asked again until it has, or
	 * until it is gone.  No time limit (a busy host can take seconds to run
	 * it); one that never comes is the test's timeout, a hang. */
	for (;;) {
		long count = ms_syscall3(__NR_ms_getprocs, (long)info, PROC_MAX, sizeof info[0]);
		const struct proc_info_wait *found = find_waiting(info, count, pid);
		if (!found)
			return false;
		if (strcmp(found->wait_channel, channel) == 0)
			return true;
		t_sleep_ms(20);
	}
}

static void expect_channel(const char *what, int pid, const char *channel)
{
	if (!t_wait_until_waiting_on(pid, channel))
		t_fail("%s: no such process (wanted wait channel '%s')", what, channel);
}

static void expect_result(const char *what, long got, long expected)
{
	if (got != expected)
		t_fail("%s: got %ld, expected %ld", what, got, expected);
}

/* The list goes to anyone: past a name's NUL there must be nothing but
 * zeros (no kernel memory, no earlier name). */
static void expect_zero_after_the_name(const char *what, int pid, const char *field, size_t size)
{
	size_t at = strnlen(field, size);
	for (size_t i = at; i < size; i++)
		if (field[i]) {
			t_fail("%s of pid %d: byte %zu past its end is %#x", what, pid, i,
			       (unsigned char)field[i]);
			return;
		}
}

/* Does ms_getprocs name what a sleeping process waits on (nanosleep, a pipe,
 * wait4), keep its first layout for size 0, and refuse bad sizes, counts and
 * pointers? */
void ps_shows_wait_channels(void)
{
	int fds[2];
	if (pipe(fds) < 0)
		t_fail("pipe");
	pid_t sleeper = fork();
	if (sleeper == 0) {
		t_sleep_ms(5000);
		_exit(0);
	}
	pid_t reader = fork();
	if (reader == 0) {
		char byte;
		_exit(read(fds[0], &byte, 1) == 1 ? 0 : 1);
	}
	pid_t waiter = fork();
	if (waiter == 0) {
		pid_t child = fork();
		if (child == 0) {
			t_sleep_ms(5000);
			_exit(0);
		}
		_exit(waitpid(child, NULL, 0) == child ? 0 : 1);
	}
	pid_t named = fork();
	if (named == 0) {
		execl("/bin/sleep", "sleep", "5", (char *)NULL);
		_exit(127);
	}
	expect_channel("a sleeping process", sleeper, "nanosleep");
	expect_channel("sleep 5 after its exec", named, "nanosleep");
	static struct proc_info_wait listed[PROC_MAX];
	long listed_count = ms_syscall3(__NR_ms_getprocs, (long)listed, PROC_MAX, sizeof listed[0]);
	const struct proc_info_wait *entry = find_waiting(listed, listed_count, named);
	if (!entry || strcmp(entry->args, "sleep 5") != 0)
		t_fail("the command line of 'sleep 5' reads '%s'",
		       entry ? entry->args : "(not listed)");
	for (long i = 0; i < listed_count && i < PROC_MAX; i++) {
		expect_zero_after_the_name("a wait channel", listed[i].info.pid,
					   listed[i].wait_channel, sizeof listed[i].wait_channel);
		expect_zero_after_the_name("a command line", listed[i].info.pid, listed[i].args,
					   sizeof listed[i].args);
	}
	ms_syscall3(__NR_kill, named, 9, 0);
	waitpid(named, NULL, 0);
	expect_channel("a reader of an empty pipe", reader, "pipe");
	expect_channel("a parent in wait4", waiter, "wait4");

	static struct proc_info old[PROC_MAX];
	static struct proc_info_wait with[PROC_MAX];
	long old_count = ms_syscall3(__NR_ms_getprocs, (long)old, PROC_MAX, 0);
	long sized = ms_syscall3(__NR_ms_getprocs, (long)old, PROC_MAX, sizeof old[0]);
	if (old_count < 4 || sized < 4)
		t_fail("the first layout: %ld and %ld processes", old_count, sized);
	int found_sleeper = 0;
	for (long i = 0; i < old_count && i < PROC_MAX; i++)
		found_sleeper |= old[i].pid == sleeper;
	if (!found_sleeper)
		t_fail("the first layout does not list the sleeper");
	expect_result("entry size 5", ms_syscall3(__NR_ms_getprocs, (long)with, PROC_MAX, 5),
		      -L_EINVAL);
	expect_result("entry size -1", ms_syscall3(__NR_ms_getprocs, (long)with, PROC_MAX, -1),
		      -L_EINVAL);
	expect_result("entry size one past",
		      ms_syscall3(__NR_ms_getprocs, (long)with, PROC_MAX, sizeof with[0] + 1),
		      -L_EINVAL);
	expect_result("count -1", ms_syscall3(__NR_ms_getprocs, (long)with, -1, sizeof with[0]),
		      -L_EINVAL);
	expect_result(
	    "a kernel pointer",
	    ms_syscall3(__NR_ms_getprocs, (long)0xffff800000001000L, PROC_MAX, sizeof with[0]),
	    -L_EFAULT);
	expect_result(
	    "a buffer ending too soon",
	    ms_syscall3(__NR_ms_getprocs, (long)0x00007ffffffff000L, PROC_MAX, sizeof with[0]),
	    -L_EFAULT);
	if (write(fds[1], "x", 1) != 1)
		t_fail("write");
	ms_syscall3(__NR_kill, sleeper, 9, 0);
	ms_syscall3(__NR_kill, waiter, 9, 0);
	waitpid(sleeper, NULL, 0);
	waitpid(reader, NULL, 0);
	waitpid(waiter, NULL, 0);
}
