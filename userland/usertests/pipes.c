/*
 * Pipes and waiting for descriptors as a user program sees them: a read
 * into a bad buffer takes nothing out of the pipe, poll's POLLOUT promises a
 * write of PIPE_BUF bytes, a larger nonblocking write is partial, and
 * select's timeout is checked and never wraps into a short one.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "usertests.h"

#define LINUX_PIPE_BUF 4096

static void expect(const char *what, long got, long want)
{
	if (got != want)
		t_fail("%s: %ld, expected %ld", what, got, want);
}

static void close_both(int fds[2])
{
	close(fds[0]);
	close(fds[1]);
}

/* ---- select's timeout ------------------------------------------------------- */

static long raw_select(int nfds, unsigned long *read_set, const long *timeout)
{
	return ms_syscall6(__NR_select, nfds, (long)read_set, 0, 0, (long)timeout, 0);
}

static void write_one_byte_later(void *fd)
{
	t_sleep_ms(100);
	_exit(write((int)(long)fd, "x", 1) == 1 ? 0 : 1);
}

/* Is a timeout with microseconds outside 0..999999 or negative seconds
 * refused, and does one of 2^61 seconds (whose milliseconds would wrap to
 * 0) wait until the pipe is readable instead of returning at once? */
void select_timeout_is_checked_and_never_wraps(void)
{
	int fds[2];
	if (pipe(fds) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	unsigned long set = 1UL << fds[0];
	static const long bad[][2] = {{0, 1000000}, {0, -1}, {-1, 0}, {1, 0x7fffffffffffffffL}};
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++)
		expect("select, a bad timeout", raw_select(fds[0] + 1, &set, bad[i]), -L_EINVAL);
	long zero[2] = {0, 0};
	set = 1UL << fds[0];
	expect("select, an empty pipe, no wait", raw_select(fds[0] + 1, &set, zero), 0);
	pid_t writer = fork();
	if (writer == 0)
		write_one_byte_later((void *)(long)fds[1]);
	long huge[2] = {1L << 61, 0};
	set = 1UL << fds[0];
	expect("select, 2^61 seconds, a byte comes", raw_select(fds[0] + 1, &set, huge), 1);
	if (set != 1UL << fds[0])
		t_fail("select did not mark the pipe readable: set %#lx", set);
	int status;
	waitpid(writer, &status, 0);
	close_both(fds);
}

/* ---- a read into a bad buffer ------------------------------------------------- */

static void expect_pipe_holds(int fd, const char *text)
{
	char buffer[16] = {0};
	size_t length = strlen(text);
	long n = read(fd, buffer, sizeof buffer);
	if (n != (long)length || memcmp(buffer, text, length) != 0)
		t_fail("the pipe gave %ld bytes \"%.16s\", expected \"%s\"", n, buffer, text);
}

/* Does a read from a pipe into an unmapped or a read-only buffer fail with
 * EFAULT and leave the bytes in the pipe for the next read? */
void pipe_read_into_a_bad_buffer_keeps_the_bytes(void)
{
	int fds[2];
	if (pipe(fds) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	fcntl(fds[0], F_SETFL, O_NONBLOCK); /* an emptied pipe is EAGAIN, not a hang */
	expect("write", write(fds[1], "hello", 5), 5);
	expect("read into an unmapped page", ms_syscall3(__NR_read, fds[0], 0x1000, 5), -L_EFAULT);
	expect_pipe_holds(fds[0], "hello");
	void *readonly = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (readonly == MAP_FAILED) {
		t_fail("mmap: %s", strerror(errno));
	} else {
		expect("write", write(fds[1], "again", 5), 5);
		expect("read into a read-only page",
		       ms_syscall3(__NR_read, fds[0], (long)readonly, 5), -L_EFAULT);
		expect_pipe_holds(fds[0], "again");
		munmap(readonly, 4096);
	}
	close_both(fds);
}

/* ---- poll's POLLOUT and the writes it promises ---------------------------------- */

#define POLL_ROUNDS 100 /* far more PIPE_BUF writes than any pipe holds */

static bool poll_says_writable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	return poll(&p, 1, 0) == 1 && (p.revents & POLLOUT);
}

/* One round of the agreement: POLLOUT, and a write of PIPE_BUF goes in
 * whole (a larger one goes in at least that far); no POLLOUT, and a write
 * of PIPE_BUF is EAGAIN.  False once the pipe is full. */
static bool write_as_poll_promises(int fd, unsigned round)
{
	static char bytes[2 * LINUX_PIPE_BUF];
	size_t length = round % 2 ? sizeof bytes : LINUX_PIPE_BUF;
	bool writable = poll_says_writable(fd);
	long n = write(fd, bytes, length);
	if (writable && (n < LINUX_PIPE_BUF || n > (long)length))
		t_fail("POLLOUT, but a nonblocking write of %zu gave %ld (errno %d)", length, n,
		       errno);
	if (!writable && !(n < 0 && errno == EAGAIN))
		t_fail("no POLLOUT, but a nonblocking write of %zu gave %ld", length, n);
	return writable && n > 0;
}

/* A pipe whose write end does not block, one byte in it; false (a failure
 * said) when none can be made. */
static bool nonblocking_pipe_with_a_byte(int fds[2])
{
	if (pipe(fds) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return false;
	}
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	expect("write of one byte", write(fds[1], "x", 1), 1);
	return true;
}

/* Does a pipe with a byte in it poll as writable only while a nonblocking
 * write of PIPE_BUF bytes would go in, as poll-then-write loops expect? */
void pipe_pollout_means_a_pipe_buf_write_fits(void)
{
	int fds[2];
	if (!nonblocking_pipe_with_a_byte(fds))
		return;
	unsigned round = 0;
	while (round < POLL_ROUNDS && write_as_poll_promises(fds[1], round))
		round++;
	if (round == POLL_ROUNDS)
		t_fail("%d writes and the pipe never filled", POLL_ROUNDS);
	close_both(fds);
}

/* Does a nonblocking write of more than PIPE_BUF into a pipe with room for
 * part of it go in partially, filling the pipe exactly? */
void pipe_large_nonblocking_write_is_partial(void)
{
	static char bytes[2 * LINUX_PIPE_BUF];
	int fds[2];
	if (!nonblocking_pipe_with_a_byte(fds))
		return;
	long n = 0, last = 0;
	for (unsigned i = 0; i < POLL_ROUNDS && (n = write(fds[1], bytes, sizeof bytes)) > 0; i++)
		last = n;
	if (n >= 0 || errno != EAGAIN)
		t_fail("writes of %zu never came to EAGAIN: %ld", sizeof bytes, n);
	if (last <= 0 || last >= (long)sizeof bytes)
		t_fail("the write before EAGAIN went in %ld bytes, not a part of %zu", last,
		       sizeof bytes);
	expect("a byte more after the partial write", write(fds[1], "y", 1), -1);
	close_both(fds);
}
