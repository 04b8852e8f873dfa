/*
 * The ms_kshell system call: a user program runs one kernel-shell line, as
 * if it had been typed at the kshell> prompt; the command's output goes to
 * the console.  This is how user space reaches the monitor's commands (mem,
 * threads, jp, and per-module ones such as the NIC's mode switch) once init
 * owns the serial console and the shell thread no longer reads it; the
 * kcmd program wraps it and the network tests drive it through the user
 * shell.  kshell_execute_line keeps no state outside its frame, so callers
 * may run at the same time as each other and as the shell thread.
 */
#include "syscall/syscall.h"
#include "kshell/internal.h"
#include "kshell/kshell.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "proc/proc.h"
#include "uaccess/uaccess.h"

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
 * reboot), -EFAULT for an unreadable line, -E2BIG for a line longer than
 * KSHELL_LINE_MAX - 1, and kshell_execute_line's errors. */
SYSCALL_DEFINE1(ms_kshell, const char *, line)
{
	char buffer[KSHELL_LINE_MAX];
	if (!proc_has_privilege(PRIV_KSHELL))
		return -EPERM;
	long length = strncpy_from_user(buffer, line, sizeof buffer);
	if (length == -ENAMETOOLONG)
		return -E2BIG;
	if (length < 0)
		return length;
	if (stops_the_machine(buffer) && !proc_has_privilege(PRIV_POWER))
		return -EPERM;
	int result = kshell_execute_line(buffer);
	return result == KSHELL_USAGE ? -EINVAL : result;
}
