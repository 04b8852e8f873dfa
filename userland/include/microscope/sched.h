/*
 * microScope's own CPU calls: making a process a monitor (allowed on the
 * CPUs reserved for monitors, `monitor_cpus=` or the console's `cpus monitor
 * N`) and reading the per-CPU statistics (struct proc_cpu_info of
 * proc/proc.h, which spells signals the Linux way: do not include it beside
 * <signal.h>).  Affinity itself is <sched.h>'s sched_setaffinity.
 *
 *     #include <microscope/sched.h>
 *     if (ms_set_monitor(0, 1) < 0) perror("monitor");
 *     struct proc_cpu_info cpus[64]; int n = ms_get_cpus(cpus, 64);
 */
#ifndef MICROSCOPE_SCHED_H
#define MICROSCOPE_SCHED_H

#include <sys/types.h>

struct proc_cpu_info; /* proc/proc.h */

/* monitor 1: pid (0 = the caller) becomes a monitor process; 0: ordinary
 * again.  Returns 0, or -1 with errno ESRCH or EINVAL. */
int ms_set_monitor(pid_t pid, int monitor);
/* Fills up to count entries, one per online CPU.  Returns how many CPUs are
 * online (may exceed count), or -1 with errno. */
int ms_get_cpus(struct proc_cpu_info *info, int count);

#endif
