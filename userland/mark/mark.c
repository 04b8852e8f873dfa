/*
 * mark: writes user marks into the trace stream (ms_trace_mark), e.g.
 * `mark request-start` or `mark hello 1000`: TEXT as the mark's data, COUNT
 * times (1 by default), of type 1.  A way to show in a trace where something
 * a user did starts, and to feed the stream marks of any length.  Exits 0,
 * or 1 when the kernel refused a mark (TEXT longer than 256 bytes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microscope/syscall.h>

#define MARK_TYPE 1

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: mark TEXT [COUNT]\n");
		return 2;
	}
	long count = argc == 3 ? strtol(argv[2], NULL, 10) : 1;
	size_t length = strlen(argv[1]);
	for (long i = 0; i < count; i++) {
		long result =
		    ms_syscall3(__NR_ms_trace_mark, MARK_TYPE, (long)argv[1], (long)length);
		if (result < 0) {
			fprintf(stderr, "mark: refused: error %ld\n", -result);
			return 1;
		}
	}
	return 0;
}
