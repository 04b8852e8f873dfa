/*
 * The user clock: the kernel maps one read-only page with its clock's scale
 * into every process, and the C library's clock_gettime and gettimeofday
 * compute the time from it and the TSC without a system call.  These tests
 * hold the library's answers against the system call's (raw, through
 * ms_syscall), so a page the kernel stopped updating, a wrong scale or a
 * library that lost the page fails them.  On a kernel without the page
 * (Linux) there is nothing to test: they skip.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "uapi/time.h"
#include "usertests.h"

#define LINUX_CLOCK_REALTIME  0
#define LINUX_CLOCK_MONOTONIC 1
#define READS                 2000
#define MONOTONIC_READS       200000

unsigned long getauxval(unsigned long type);

static const volatile struct clock_user_page *page_or_skip(void)
{
	const volatile struct clock_user_page *page =
	    (const volatile struct clock_user_page *)getauxval(CLOCK_USER_AT);
	if (!page) {
		t_note("no user clock page in the auxiliary vector: not microScope");
		exit(T_SKIPPED);
	}
	return page;
}

/* The kernel's clock (Linux id), by the system call; 0 when it failed. */
static uint64_t kernel_ns(int clock)
{
	struct timespec t;
	if (ms_syscall3(__NR_clock_gettime, clock, (long)&t, 0) < 0)
		return 0;
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static uint64_t library_ns(clockid_t clock)
{
	struct timespec t;
	if (clock_gettime(clock, &t) < 0)
		return 0;
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* How many of READS library readings of clock fell outside the two system
 * call readings around them. */
static int readings_outside(clockid_t clock, int linux_clock)
{
	int outside = 0;
	for (int i = 0; i < READS; i++) {
		uint64_t before = kernel_ns(linux_clock);
		uint64_t user = library_ns(clock);
		uint64_t after = kernel_ns(linux_clock);
		if (!before || user < before || user > after) {
			if (!outside)
				t_note("kernel %llu, library %llu, kernel %llu",
				       (unsigned long long)before, (unsigned long long)user,
				       (unsigned long long)after);
			outside++;
		}
	}
	return outside;
}

/* Does the library read the same clock as the kernel: every reading between
 * the system call's readings just before and after it, for CLOCK_MONOTONIC,
 * CLOCK_REALTIME and gettimeofday's microseconds? */
void user_clock_agrees_with_the_kernel(void)
{
	const volatile struct clock_user_page *page = page_or_skip();
	if (!(page->flags & CLOCK_USER_USABLE))
		t_fail("the page says the clock is not usable (flags %#x)", page->flags);
	int outside = readings_outside(CLOCK_MONOTONIC, LINUX_CLOCK_MONOTONIC);
	if (outside)
		t_fail("%d of %d CLOCK_MONOTONIC readings outside the kernel's", outside, READS);
	outside = readings_outside(CLOCK_REALTIME, LINUX_CLOCK_REALTIME);
	if (outside)
		t_fail("%d of %d CLOCK_REALTIME readings outside the kernel's", outside, READS);
	uint64_t before = kernel_ns(LINUX_CLOCK_REALTIME);
	struct timeval wall;
	if (gettimeofday(&wall, NULL) < 0)
		t_fail("gettimeofday: %s", strerror(errno));
	uint64_t after = kernel_ns(LINUX_CLOCK_REALTIME);
	uint64_t us = (uint64_t)wall.tv_sec * 1000000 + (uint64_t)wall.tv_usec;
	if (us < before / 1000 || us > after / 1000)
		t_fail("gettimeofday %llu us, kernel %llu..%llu ns", (unsigned long long)us,
		       (unsigned long long)before, (unsigned long long)after);
}

/* Does the library's clock never go back over many reads in a row? */
void user_clock_is_monotonic(void)
{
	page_or_skip();
	uint64_t previous = library_ns(CLOCK_MONOTONIC);
	int backwards = 0;
	for (int i = 0; i < MONOTONIC_READS; i++) {
		uint64_t now = library_ns(CLOCK_MONOTONIC);
		backwards += now < previous;
		previous = now;
	}
	if (backwards)
		t_fail("the clock went back %d times in %d reads", backwards, MONOTONIC_READS);
	if (previous == 0)
		t_fail("clock_gettime failed");
}

static void write_to_page(void *page)
{
	*(volatile uint32_t *)page = 0;
	_exit(0); /* not reached when the page is read-only */
}

/* Is the page read-only for the process: does a write to it kill the
 * writer with SIGSEGV, and does the clock still agree afterwards? */
void user_clock_page_is_read_only(void)
{
	const volatile struct clock_user_page *page = page_or_skip();
	uint32_t sequence = page->sequence;
	t_expect_signal("a write to the clock page", write_to_page, (void *)page, SIGSEGV);
	if (page->sequence != sequence || readings_outside(CLOCK_MONOTONIC, LINUX_CLOCK_MONOTONIC))
		t_fail("the page changed, or the clock disagrees, after the write attempt");
}

/* In a child: 0 when the page is where the auxiliary vector says and the
 * clock agrees with the kernel, 1 otherwise. */
static int check_in_child(void)
{
	const volatile struct clock_user_page *page =
	    (const volatile struct clock_user_page *)getauxval(CLOCK_USER_AT);
	if (!page || !(page->flags & CLOCK_USER_USABLE))
		return 1;
	return readings_outside(CLOCK_MONOTONIC, LINUX_CLOCK_MONOTONIC) ? 1 : 0;
}

int user_clock_child_main(void)
{
	int failed = check_in_child();
	printf("%s\n", failed ? "clock bad" : "clock ok");
	return failed;
}

static void fork_child(void *unused)
{
	(void)unused;
	_exit(check_in_child());
}

/* Does a forked child keep the page, and does a program started by exec get
 * it (and read the same clock) too? */
void user_clock_survives_fork_and_exec(void)
{
	page_or_skip();
	int status = t_run_child(fork_child, NULL);
	if (status != 0)
		t_fail("forked child: status %#x", status);
	int fds[2];
	if (pipe(fds) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		char *argv[] = {"/bin/usertests", "--clock-check", NULL}, *envp[] = {NULL};
		execve(argv[0], argv, envp);
		_exit(127);
	}
	close(fds[1]);
	char output[64] = "";
	int length = (int)read(fds[0], output, sizeof output - 1);
	output[length > 0 ? length : 0] = '\0';
	close(fds[0]);
	waitpid(pid, &status, 0);
	if (status != 0 || strcmp(output, "clock ok\n") != 0)
		t_fail("exec'd program: printed \"%s\", status %#x", output, status);
}
