/*
 * sendfile: a file's bytes to a TCP socket and to another file, from the
 * file's position (which moves) or from an offset the caller gives (which
 * moves instead, the position staying), and its refusals of bad descriptors,
 * directories, pipes, bad offset pointers and negative offsets, checked
 * against the raw kernel result (and of a file sent into itself).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "usertests.h"

#define SOURCE      "/tmp/sendfile.src"
#define COPY        "/tmp/sendfile.dst"
#define FILE_BYTES  200000
#define PART_OFFSET 1000
#define PART_BYTES  5000
#define BAD_POINTER ((long)0xffff800000001000L)
#define L_ESPIPE    29

static unsigned char pattern_byte(size_t i)
{
	return (unsigned char)(i * 7 + i / 251);
}

static int make_source(void)
{
	static unsigned char data[FILE_BYTES];
	for (size_t i = 0; i < FILE_BYTES; i++)
		data[i] = pattern_byte(i);
	int fd = open(SOURCE, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, data, FILE_BYTES) != FILE_BYTES) {
		t_fail("cannot write %s", SOURCE);
		return -1;
	}
	close(fd);
	return open(SOURCE, O_RDONLY);
}

/* A listening TCP socket on 127.0.0.1; *port gets its port. */
static int listen_on_loopback(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t length = sizeof a;
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 1) ||
	    getsockname(fd, (struct sockaddr *)&a, &length))
		return -1;
	*port = ntohs(a.sin_port);
	return fd;
}

/* The child: connects, reads to the end, and exits 0 when it got the whole
 * file and then bytes PART_OFFSET.. of it, PART_BYTES of them. */
static void receive_and_check(int port)
{
	static unsigned char got[FILE_BYTES + PART_BYTES + 1];
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a))
		_exit(2);
	size_t total = 0;
	ssize_t n;
	while (total < sizeof got && (n = read(fd, got + total, sizeof got - total)) > 0)
		total += (size_t)n;
	if (total != FILE_BYTES + PART_BYTES)
		_exit(3);
	for (size_t i = 0; i < total; i++) {
		size_t at = i < FILE_BYTES ? i : PART_OFFSET + (i - FILE_BYTES);
		if (got[i] != pattern_byte(at))
			_exit(4);
	}
	_exit(0);
}

static void send_to_socket(int file, int connection)
{
	size_t sent = 0;
	while (sent < FILE_BYTES) {
		ssize_t n = sendfile(connection, file, NULL, FILE_BYTES - sent);
		if (n <= 0) {
			t_fail("sendfile from the position: %zd after %zu bytes", n, sent);
			return;
		}
		sent += (size_t)n;
	}
	if (lseek(file, 0, SEEK_CUR) != FILE_BYTES)
		t_fail("the position did not move with what was sent");
	off_t at = PART_OFFSET;
	ssize_t n = sendfile(connection, file, &at, PART_BYTES);
	if (n != PART_BYTES || at != PART_OFFSET + PART_BYTES)
		t_fail("sendfile from an offset: %zd, offset now %ld", n, (long)at);
	if (lseek(file, 0, SEEK_CUR) != FILE_BYTES)
		t_fail("sendfile from an offset moved the position");
	if (sendfile(connection, file, NULL, 100) != 0)
		t_fail("sendfile at the end of the file did not give 0");
}

static void send_to_file(int file)
{
	static unsigned char back[FILE_BYTES];
	int copy = open(COPY, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	off_t at = 0;
	if (copy < 0 || sendfile(copy, file, &at, FILE_BYTES) != FILE_BYTES || at != FILE_BYTES) {
		t_fail("sendfile to a file");
		return;
	}
	close(copy);
	copy = open(COPY, O_RDONLY);
	size_t total = 0;
	ssize_t n;
	while (total < FILE_BYTES && (n = read(copy, back + total, FILE_BYTES - total)) > 0)
		total += (size_t)n;
	close(copy);
	for (size_t i = 0; i < total; i++)
		if (back[i] != pattern_byte(i)) {
			t_fail("the copy differs at byte %zu", i);
			return;
		}
	if (total != FILE_BYTES)
		t_fail("the copy has %zu bytes", total);
}

/* Does sendfile carry a file to a socket and to a file, byte-exact? */
void sendfile_sends_a_file_to_a_socket_and_a_file(void)
{
	int port, listener = listen_on_loopback(&port);
	if (listener < 0) {
		t_note("no TCP on the loopback interface");
		exit(T_SKIPPED);
	}
	int file = make_source();
	if (file < 0)
		return;
	pid_t child = fork();
	if (child == 0)
		receive_and_check(port);
	int connection = accept(listener, NULL, NULL);
	if (connection < 0) {
		t_fail("accept failed");
		return;
	}
	send_to_socket(file, connection);
	close(connection);
	int status;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
		t_fail("the receiver did not get the bytes sent (status %#x)", status);
	send_to_file(file);
	close(file);
	close(listener);
	unlink(SOURCE);
	unlink(COPY);
}

static long raw_sendfile(long out, long in, long offset, long count)
{
	return ms_syscall6(__NR_sendfile, out, in, offset, count, 0, 0);
}

static void expect(const char *what, long got, long want)
{
	if (got != want)
		t_fail("%s: %ld, expected %ld", what, got, want);
}

/* Are bad descriptors, files without positions and bad offsets refused,
 * with nothing sent? */
void sendfile_refuses_hostile_input(void)
{
	int file = make_source();
	int out = open(COPY, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int read_only = open(SOURCE, O_RDONLY), write_only = open(COPY, O_WRONLY);
	int directory = open("/", O_RDONLY), pipe_ends[2];
	if (file < 0 || out < 0 || read_only < 0 || write_only < 0 || directory < 0 ||
	    pipe(pipe_ends)) {
		t_fail("setup failed");
		return;
	}
	long at = 0, negative = -1, near_end = FILE_BYTES - 10;
	expect("no such input", raw_sendfile(out, 999, 0, 10), -L_EBADF);
	expect("no such output", raw_sendfile(999, file, 0, 10), -L_EBADF);
	expect("output read-only", raw_sendfile(read_only, file, (long)&at, 10), -L_EBADF);
	expect("input write-only", raw_sendfile(out, write_only, (long)&at, 10), -L_EBADF);
	expect("input a directory", raw_sendfile(out, directory, 0, 10), -L_EINVAL);
	expect("input a pipe", raw_sendfile(out, pipe_ends[0], 0, 10), -L_EINVAL);
	expect("input a pipe, an offset", raw_sendfile(out, pipe_ends[0], (long)&at, 10),
	       -L_ESPIPE);
	expect("negative count", raw_sendfile(out, file, (long)&at, -1L), -L_EINVAL);
	int both = open(SOURCE, O_RDWR);
	expect("a file into itself", raw_sendfile(both, both, (long)&at, 10), -L_EINVAL);
	close(both);
	expect("offset in the kernel", raw_sendfile(out, file, BAD_POINTER, 10), -L_EFAULT);
	expect("offset unmapped", raw_sendfile(out, file, 8, 10), -L_EFAULT);
	expect("negative offset", raw_sendfile(out, file, (long)&negative, 10), -L_EINVAL);
	expect("nothing asked", raw_sendfile(out, file, 0, 0), 0);
	expect("position after refusals", lseek(file, 0, SEEK_CUR), 0);
	expect("length past the end", raw_sendfile(out, file, (long)&near_end, 1L << 40), 10);
	expect("offset after it", near_end, FILE_BYTES);
	expect("bytes in the output", lseek(out, 0, SEEK_END), 10);
	close(file);
	close(out);
	close(read_only);
	close(write_only);
	close(directory);
	close(pipe_ends[0]);
	close(pipe_ends[1]);
	unlink(SOURCE);
	unlink(COPY);
}
