/*
 * cat: copies each named file (or standard input, for none or "-") to
 * standard output.  A file that cannot be read is reported and skipped; the
 * exit status is 1 when any was.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int copy(int fd, const char *name)
{
	char buffer[4096];
	ssize_t got;
	while ((got = read(fd, buffer, sizeof(buffer))) > 0) {
		for (ssize_t done = 0; done < got;) {
			ssize_t put = write(1, buffer + done, (size_t)(got - done));
			if (put < 0) {
				fprintf(stderr, "cat: write: %s\n", strerror(errno));
				return -1;
			}
			done += put;
		}
	}
	if (got < 0) {
		fprintf(stderr, "cat: %s: %s\n", name, strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int status = 0;
	if (argc < 2)
		return copy(0, "-") < 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-") == 0) {
			status |= copy(0, "-") < 0;
			continue;
		}
		int fd = open(argv[i], O_RDONLY);
		if (fd < 0) {
			fprintf(stderr, "cat: %s: %s\n", argv[i], strerror(errno));
			status = 1;
			continue;
		}
		status |= copy(fd, argv[i]) < 0;
		close(fd);
	}
	return status;
}
