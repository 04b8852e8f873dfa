/*
 * sleep: waits the given seconds (a decimal fraction is allowed), e.g. as a
 * long-running job to stop, continue and kill from the shell.
 *
 *     sleep 2.5
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	char *end = NULL;
	double seconds = argc == 2 ? strtod(argv[1], &end) : -1;
	if (argc != 2 || *end || seconds < 0) {
		fprintf(stderr, "usage: sleep seconds\n");
		return 2;
	}
	struct timespec t = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
	while (nanosleep(&t, &t) < 0)
		;
	return 0;
}
