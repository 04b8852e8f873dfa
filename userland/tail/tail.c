/*
 * tail: the last lines of a file (10 unless -n says otherwise); with -f it
 * then follows the file, printing what is appended as it comes (checked
 * every 200 ms; ^C ends it).  A file that shrinks (rotated) is read again
 * from its start.
 *
 *     tail -n 20 /tmp/httpd.log       tail -f /tmp/httpd.log
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 4096

static void sleep_ms(long ms)
{
	struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&t, NULL);
}

/* The offset where the last `lines` lines of fd (size bytes) begin. */
static off_t start_of_last_lines(int fd, off_t size, long lines)
{
	char buffer[CHUNK];
	off_t end = size;
	long newlines = 0;
	while (end > 0) {
		off_t start = end > CHUNK ? end - CHUNK : 0;
		lseek(fd, start, SEEK_SET);
		ssize_t n = read(fd, buffer, (size_t)(end - start));
		if (n <= 0)
			return 0;
		for (ssize_t i = n - 1; i >= 0; i--) {
			/* the file's last newline ends the last line, it does not start one */
			if (buffer[i] == '\n' && start + i != size - 1 && ++newlines == lines)
				return start + i + 1;
		}
		end = start;
	}
	return 0;
}

/* Copies fd from offset to its end onto stdout; returns the new offset. */
static off_t copy_from(int fd, off_t offset)
{
	char buffer[CHUNK];
	lseek(fd, offset, SEEK_SET);
	ssize_t n;
	while ((n = read(fd, buffer, sizeof buffer)) > 0) {
		if (write(1, buffer, (size_t)n) != n)
			exit(1);
		offset += n;
	}
	return offset;
}

int main(int argc, char **argv)
{
	long lines = 10;
	int follow = 0, option;
	while ((option = getopt(argc, argv, "n:f")) != -1) {
		if (option == 'n')
			lines = strtol(optarg, NULL, 10);
		else if (option == 'f')
			follow = 1;
		else
			return 2;
	}
	if (optind + 1 != argc || lines < 0) {
		fprintf(stderr, "usage: tail [-n lines] [-f] file\n");
		return 2;
	}
	int fd = open(argv[optind], O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "tail: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	off_t offset =
	    copy_from(fd, lines ? start_of_last_lines(fd, st.st_size, lines) : st.st_size);
	while (follow) {
		sleep_ms(200);
		if (fstat(fd, &st) == 0 && st.st_size < offset)
			offset = 0; /* truncated or rotated: from the start */
		offset = copy_from(fd, offset);
	}
	return 0;
}
