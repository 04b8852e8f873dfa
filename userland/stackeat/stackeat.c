/*
 * stackeat: says it is ready (a byte 'r' on its standard output), waits for
 * its standard input to end, touches its stack from here down to the given
 * KiB below, as a recursion to the bottom of the stack would, says so (a
 * byte 'x', then its standard output closed), and holds the pages until
 * descriptor 3 ends.  The start is the end of a pipe, not a byte on it, and
 * the hold another pipe: one process that has touched its stack and waits
 * must not read what starts the others.  A small program, so that the
 * processes usertests' a_users_stacks_take_no_promised_memory runs promise
 * little besides their stacks (a fork of usertests promises its 3 MiB of
 * static arrays).  A stack page that cannot be promised ends it with
 * SIGSEGV.
 *
 *     stackeat 1984 < start > done 3< hold
 */
#include <stdlib.h>
#include <unistd.h>

#define PAGE_BYTES 4096L
#define HOLD_FD    3

/* Reads fd until it ends. */
static void wait_for_end(int fd)
{
	char c;
	while (read(fd, &c, 1) > 0)
		;
}

int main(int argc, char **argv)
{
	long kib = argc == 2 ? strtol(argv[1], NULL, 10) : 0;
	if (kib <= 0 || kib >= 2048) {
		write(2, "usage: stackeat kib (below 2048)\n", 33);
		return 2;
	}
	char c = 'r';
	if (write(1, &c, 1) != 1)
		return 1;
	wait_for_end(0);
	volatile char *frame = __builtin_frame_address(0);
	for (long below = PAGE_BYTES; below < kib * 1024; below += PAGE_BYTES)
		frame[-below] = 1;
	c = 'x';
	write(1, &c, 1);
	close(1);
	wait_for_end(HOLD_FD);
	return 0;
}
