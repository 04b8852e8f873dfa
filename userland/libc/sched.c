/*
 * CPU calls: affinity (Linux's sched_setaffinity/sched_getaffinity; the
 * kernel reads and writes 8 bytes of the set, the rest of a larger set is
 * cleared here as glibc does), sched_getcpu through getcpu, and microScope's
 * ms_set_monitor and ms_get_cpus.
 */
#include <microscope/sched.h>
#include <sched.h>
#include <string.h>

#include "internal.h"

int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set)
{
	return (int)sys_result(ms_syscall3(__NR_sched_setaffinity, pid, (long)size, (long)set));
}

int sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set)
{
	long written = sys_result(ms_syscall3(__NR_sched_getaffinity, pid, (long)size, (long)set));
	if (written < 0)
		return -1;
	if ((size_t)written < size)
		memset((char *)set + written, 0, size - (size_t)written);
	return 0;
}

int sched_getcpu(void)
{
	unsigned cpu = 0;
	if (sys_result(ms_syscall3(__NR_getcpu, (long)&cpu, 0, 0)) < 0)
		return -1;
	return (int)cpu;
}

int ms_set_monitor(pid_t pid, int monitor)
{
	return (int)sys_result(ms_syscall3(__NR_ms_setmonitor, pid, monitor, 0));
}

int ms_get_cpus(struct proc_cpu_info *info, int count)
{
	return (int)sys_result(ms_syscall3(__NR_ms_getcpus, (long)info, count, 0));
}
