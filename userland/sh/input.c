/*
 * Where the shell's lines come from.  A script's own descriptor is read a
 * buffer at a time.  Standard input is shared with the commands the shell
 * runs (`cat f | sh`, f holding `exec cat` then `hello`, must leave "hello"
 * to cat), so POSIX forbids reading past the line about to run: a file the
 * shell can seek in is read ahead and the unused bytes are given back
 * (lseek) before the line runs; a pipe or a terminal is read a byte at a
 * time.  Standard input may change under the shell (`exec 0< f`, `exec
 * 0>&3`), so whether it can seek is asked again before each line, and bytes
 * that cannot be given back are kept and run by the shell.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sh.h"

#define SHARED_READ_BYTES 128

struct input {
	int fd;
	int shared;   /* the commands read this descriptor too */
	int seekable; /* lseek can give unused bytes back */
	size_t start, end;
	char buffer[4096];
};

struct input *input_open(int fd, int shared)
{
	static struct input input;
	input = (struct input){.fd = fd, .shared = shared};
	return &input;
}

/* Before a line of a shared input, with nothing kept from the last one:
 * whether what the descriptor is now can seek. */
static void check_seekable(struct input *in)
{
	if (in->shared && in->start == in->end)
		in->seekable = lseek(in->fd, 0, SEEK_CUR) >= 0;
}

/* How many bytes one read takes: a whole buffer of a private input; of a
 * shared one, what a line is likely to fit in (the rest is read again after
 * it is given back); from a pipe, one byte, as nothing can be given back. */
static size_t read_size(const struct input *in)
{
	if (!in->shared)
		return sizeof in->buffer;
	return in->seekable ? SHARED_READ_BYTES : 1;
}

/* Reads more when everything read is used.  Returns 0 at the end of input
 * (or on an error, which it reports), else 1. */
static int fill(struct input *in)
{
	while (in->start == in->end) {
		ssize_t n = read(in->fd, in->buffer, read_size(in));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fprintf(stderr, "sh: reading commands: %s\n", strerror(errno));
		if (n <= 0)
			return 0;
		in->start = 0;
		in->end = (size_t)n;
	}
	return 1;
}

/* The next byte, or EOF at the end of input. */
int input_next_byte(struct input *in)
{
	return fill(in) ? (unsigned char)in->buffer[in->start++] : EOF;
}

/* Hands the bytes read past the current line back to a shared input (a
 * command run next reads them itself); a private input keeps them, and so
 * does one that can no longer seek (it became a pipe): they are read from
 * the buffer, and from then on the input a byte at a time. */
void input_give_back(struct input *in)
{
	if (!in->shared || in->start == in->end)
		return;
	if (lseek(in->fd, -(off_t)(in->end - in->start), SEEK_CUR) < 0) {
		in->seekable = 0;
		return;
	}
	in->start = in->end = 0;
}

/* Moves what is read of the current line, up to its newline and at most
 * room bytes, into to.  Returns how many bytes it moved. */
static size_t take_line_part(struct input *in, char *to, size_t room)
{
	const char *from = in->buffer + in->start;
	size_t count = in->end - in->start < room ? in->end - in->start : room;
	const char *newline = memchr(from, '\n', count);
	if (newline)
		count = (size_t)(newline - from) + 1;
	memcpy(to, from, count);
	in->start += count;
	return count;
}

/* Reads a line, its newline included, as fgets does (at most size - 1
 * bytes, then a '\0').  Returns its length (a NUL byte in it does not end
 * it), or -1 at the end of input with nothing read. */
int input_read_line(struct input *in, char *line, size_t size)
{
	size_t length = 0;
	check_seekable(in);
	while (length + 1 < size && (length == 0 || line[length - 1] != '\n') && fill(in))
		length += take_line_part(in, line + length, size - 1 - length);
	line[length] = '\0';
	input_give_back(in);
	return length > 0 ? (int)length : -1;
}
