/*
 * The `threads` command of the kernel shell: every thread with its state and
 * times (thread_print_all).
 *
 *     threads
 */
#include "sched/sched.h"

#include "kshell/kshell.h"

static int cmd_threads(int argc, char **argv)
{
	if (argc != 1)
		return KSHELL_USAGE;
	kshell_print("%u thread(s)\n", thread_count());
	thread_print_all();
	return 0;
}
KSHELL_COMMAND(threads, cmd_threads, "threads", "every thread with its state and times");
