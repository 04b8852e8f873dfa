/*
 * The ms_kshell system call: a user program runs one kernel-shell line, as
 * if it had been typed at the kshell> prompt; the command's output goes to
 * the console, or (given a buffer) back to the caller, so that kcmd's output
 * can be redirected and piped like any program's.  A capture takes what the
 * calling thread writes to the console while the command runs (one capture
 * at a time); output of other threads and of interrupt handlers is printed
 * as usual.  This is how user space reaches the monitor's commands (mem,
 * threads, jp, and per-module ones such as the NIC's mode switch) once init
 * owns the serial console and the shell thread no longer reads it; the
 * kcmd program wraps it and the network tests drive it through the user
 * shell.  kshell_execute_line keeps no state outside its frame, so callers
 * may run at the same time as each other and as the shell thread.
 */
#include "syscall/syscall.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "kshell/internal.h"
#include "kshell/kshell.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "proc/proc.h"
#include "sched/sched.h"
#include "uaccess/uaccess.h"

#define CAPTURE_MAX (64 * 1024) /* bytes of a command's output kept for the caller */

/* The one capture in progress: the thread whose console output it takes. */
static struct {
	struct thread *thread;
	char *buffer;
	size_t size, length;
	bool truncated;
} capture;
static struct mutex capture_lock = MUTEX_INIT(capture_lock, "kshell.capture");

/* console_set_capture's filter: the capturing thread's own output (not an
 * interrupt handler's on its CPU) goes to the buffer. */
static bool take_output(const char *text, size_t length)
{
	if (thread_current() != capture.thread || this_cpu()->irq_depth)
		return false;
	size_t room = capture.size - capture.length;
	size_t n = length < room ? length : room;
	memcpy(capture.buffer + capture.length, text, n);
	capture.length += n;
	capture.truncated |= n < length;
	return true;
}

int kshell_capture(int (*fn)(void *arg), void *arg, char *buffer, size_t size, size_t *length)
{
	mutex_lock(&capture_lock);
	capture.thread = thread_current();
	capture.buffer = buffer;
	capture.size = size;
	capture.length = 0;
	capture.truncated = false;
	console_set_capture(take_output);
	int result = fn(arg);
	console_set_capture(NULL);
	*length = capture.length;
	capture.thread = NULL;
	mutex_unlock(&capture_lock);
	return result;
}

static int execute_line(void *line)
{
	return kshell_execute_line(line);
}

/* The commands that stop the machine need PRIV_POWER as well.  The line is
 * split as kshell_execute_line splits it, so a quoted name is seen too. */
static bool stops_the_machine(const char *line)
{
	static const char *const commands[] = {"poweroff", "exit", "reboot"};
	char copy[KSHELL_LINE_MAX];
	char *argv[KSHELL_ARGS_MAX + 1];
	strlcpy(copy, line, sizeof copy);
	if (kshell_split_words(copy, argv, KSHELL_ARGS_MAX) <= 0)
		return false;
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(commands[i], argv[0]) == 0)
			return true;
	return false;
}

/* Returns the command's result (0 or a negative error, KSHELL_USAGE as
 * -EINVAL), -EPERM without PRIV_KSHELL (or PRIV_POWER for poweroff, exit and
 * reboot), -EFAULT for an unreadable line or output buffer, -E2BIG for a
 * line longer than KSHELL_LINE_MAX - 1, and kshell_execute_line's errors.
 * With output (size bytes, at most CAPTURE_MAX are used) the command's
 * console output is copied there instead of printed, and its length stored
 * in *length (which must then be given). */
SYSCALL_DEFINE4(ms_kshell, const char *, line, char *, output, uint64_t, size, uint64_t *, length)
{
	char buffer[KSHELL_LINE_MAX];
	if (!proc_has_privilege(PRIV_KSHELL))
		return -EPERM;
	long line_length = strncpy_from_user(buffer, line, sizeof buffer);
	if (line_length == -ENAMETOOLONG)
		return -E2BIG;
	if (line_length < 0)
		return line_length;
	if (stops_the_machine(buffer) && !proc_has_privilege(PRIV_POWER))
		return -EPERM;
	if (!output) {
		int result = kshell_execute_line(buffer);
		return result == KSHELL_USAGE ? -EINVAL : result;
	}
	if (!length || size == 0)
		return -EINVAL;
	size_t room = size < CAPTURE_MAX ? size : CAPTURE_MAX;
	uint64_t zero = 0;
	if (copy_to_user(length, &zero, sizeof zero) < 0)
		return -EFAULT;
	char *captured = kmalloc(room);
	if (!captured)
		return -ENOMEM;
	size_t captured_length = 0;
	int result = kshell_capture(execute_line, buffer, captured, room, &captured_length);
	uint64_t reported = captured_length;
	if (copy_to_user(output, captured, captured_length) < 0 ||
	    copy_to_user(length, &reported, sizeof reported) < 0)
		result = -EFAULT;
	kfree(captured);
	return result == KSHELL_USAGE ? -EINVAL : result;
}
