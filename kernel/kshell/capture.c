/*
 * A shell line run for someone who is not at the console (a host over the
 * trace stream's control channel): what the command prints goes into a
 * buffer for the answer instead of the console, through the same capture
 * as ms_kshell's (kshell_capture: only the calling thread's output).
 */
#include "kshell/kshell.h"

#include "lib/errno.h"

static int run_line(void *line)
{
	return kshell_execute_line(line);
}

int kshell_execute_captured(const char *line, char *output, size_t size)
{
	if (!output || !size)
		return -EINVAL;
	size_t length = 0;
	int result = kshell_capture(run_line, (void *)line, output, size - 1, &length);
	output[length] = 0;
	return result;
}
