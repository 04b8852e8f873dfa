/*
 * kcmd: runs one kernel-shell command from user space (the ms_kshell system
 * call), e.g. `kcmd mem` or `kcmd nic mode e1000.0 poll`.  The command's
 * output comes back to kcmd (up to 64 KiB), which writes it to its standard
 * output, so it can be redirected and piped (`kcmd jp list | cat > f`).  The words are joined with spaces, each quoted, so one
 * argument stays one word.  Exits 0 when the command succeeded, 1 otherwise.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <microscope/syscall.h>

#define LINE_MAX_BYTES 256
#define OUTPUT_MAX     (64 * 1024)

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
	static char output[OUTPUT_MAX];
	uint64_t printed = 0;
	long result = ms_syscall6(__NR_ms_kshell, (long)line, (long)output, sizeof output,
				  (long)&printed, 0, 0);
	for (size_t done = 0; done < printed;) {
		ssize_t n = write(1, output + done, printed - done);
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	if (printed == sizeof output)
		fprintf(stderr, "kcmd: output cut at %d bytes\n", OUTPUT_MAX);
	if (result < 0)
		fprintf(stderr, "kcmd: %s: error %ld\n", argv[1], -result);
	return result < 0;
}
