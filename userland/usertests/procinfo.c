/*
 * The process list as ps reads it (ms_getprocs), for tests that measure
 * their own memory.  Apart from the other tests: uapi/proc.h's signal
 * numbers clash with newlib's <signal.h>.
 */
#include <unistd.h>

#include <microscope/syscall.h>

#include "uapi/proc.h"
#include "usertests.h"

long t_own_pages(void)
{
	static struct proc_info info[PROC_MAX];
	long count = ms_syscall3(__NR_ms_getprocs, (long)info, PROC_MAX, 0);
	for (long i = 0; i < count && i < PROC_MAX; i++)
		if (info[i].pid == getpid())
			return (long)info[i].pages;
	return -1;
}
