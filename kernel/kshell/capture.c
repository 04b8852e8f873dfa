/*
 * A shell line run for someone who is not at the console (a host over the
 * trace stream's control channel): what the command prints with
 * kshell_print goes into a buffer for the answer instead of the console.
 * One capture at a time; only the thread that runs the line is captured, so
 * the console shell printing meanwhile still reaches the console.
 */
#include "kshell/internal.h"

#include "lib/errno.h"
#include "sched/sched.h"

static struct mutex capture_lock = MUTEX_INIT(capture_lock, "kshell.capture");
static struct {
	struct thread *owner; /* the thread whose prints are captured, or NULL */
	char *buffer;
	size_t size, length;
} capture;

bool kshell_capture_print(const char *text, size_t length)
{
	if (__atomic_load_n(&capture.owner, __ATOMIC_ACQUIRE) != thread_current())
		return false;
	size_t room = capture.size - 1 - capture.length;
	size_t take = length < room ? length : room;
	for (size_t i = 0; i < take; i++)
		capture.buffer[capture.length + i] = text[i];
	capture.length += take;
	capture.buffer[capture.length] = 0;
	return true;
}

int kshell_execute_captured(const char *line, char *output, size_t size)
{
	if (!output || !size)
		return -EINVAL;
	mutex_lock(&capture_lock);
	output[0] = 0;
	capture.buffer = output;
	capture.size = size;
	capture.length = 0;
	__atomic_store_n(&capture.owner, thread_current(), __ATOMIC_RELEASE);
	int result = kshell_execute_line(line);
	__atomic_store_n(&capture.owner, NULL, __ATOMIC_RELEASE);
	mutex_unlock(&capture_lock);
	return result;
}
