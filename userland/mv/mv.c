/*
 * mv: renames a file or directory (mv OLD NEW), within one file system.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: mv OLD NEW\n");
		return 2;
	}
	if (rename(argv[1], argv[2]) < 0) {
		fprintf(stderr, "mv: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	return 0;
}
