/*
 * dmesg: prints the kernel's log: the lines the kernel printed (those with
 * its "[seconds]" stamp) among the last 64 KiB the console showed
 * (/dev/kmsg); with -a, everything the console showed, programs' output and
 * the echo of what was typed included.
 *
 *     dmesg > /tmp/boot.log        dmesg -a
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define KMSG_MAX (64 * 1024)

int main(int argc, char **argv)
{
	int everything = argc == 2 && strcmp(argv[1], "-a") == 0;
	if (argc > 2 || (argc == 2 && !everything)) {
		fprintf(stderr, "usage: dmesg [-a]\n");
		return 2;
	}
	int fd = open("/dev/kmsg", O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "dmesg: /dev/kmsg: %s\n", strerror(errno));
		return 1;
	}
	static char log[KMSG_MAX + 1];
	size_t length = 0;
	ssize_t n;
	while (length < KMSG_MAX && (n = read(fd, log + length, KMSG_MAX - length)) > 0)
		length += (size_t)n;
	log[length] = '\0';
	for (char *line = log; line < log + length;) {
		char *end = strchr(line, '\n');
		end = end ? end + 1 : log + length;
		if (everything || line[0] == '[')
			fwrite(line, 1, (size_t)(end - line), stdout);
		line = end;
	}
	return 0;
}
