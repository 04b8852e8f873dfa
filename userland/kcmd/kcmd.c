/*
 * kcmd: runs one kernel-shell command from user space (the ms_kshell system
 * call), e.g. `kcmd mem` or `kcmd nic mode e1000.0 poll`; the output appears
 * on the console.  The words are joined with spaces, each quoted, so one
 * argument stays one word.  Exits 0 when the command succeeded, 1 otherwise.
 */
#include <stdio.h>
#include <string.h>

#include <microscope/syscall.h>

#define LINE_MAX_BYTES 256

int main(int argc, char **argv)
{
	char line[LINE_MAX_BYTES] = "";
	size_t length = 0;
	for (int i = 1; i < argc; i++) {
		int n = snprintf(line + length, sizeof(line) - length, "%s\"%s\"", i > 1 ? " " : "",
				 argv[i]);
		if (n < 0 || (size_t)n >= sizeof(line) - length || strchr(argv[i], '"')) {
			fprintf(stderr, "kcmd: line too long or has a double quote\n");
			return 1;
		}
		length += (size_t)n;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: kcmd command [word...]   (kcmd help lists them)\n");
		return 2;
	}
	long result = ms_syscall3(__NR_ms_kshell, (long)line, 0, 0);
	if (result < 0)
		fprintf(stderr, "kcmd: %s: error %ld\n", argv[1], -result);
	return result < 0;
}
