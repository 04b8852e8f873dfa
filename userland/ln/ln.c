/*
 * ln: a hard link (ln EXISTING NEW) or a symbolic one (ln -s TARGET NEW).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int symbolic = argc == 4 && strcmp(argv[1], "-s") == 0;
	if (argc != 3 && !symbolic) {
		fprintf(stderr, "usage: ln [-s] TARGET NEW\n");
		return 2;
	}
	const char *target = argv[argc - 2], *name = argv[argc - 1];
	if ((symbolic ? symlink(target, name) : link(target, name)) < 0) {
		fprintf(stderr, "ln: %s: %s\n", name, strerror(errno));
		return 1;
	}
	return 0;
}
