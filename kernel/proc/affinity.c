/*
 * Processes and CPUs: pinning a process to a set of CPUs, marking it a
 * monitor (allowed on the CPUs reserved for monitors), and the per-CPU
 * statistics top shows.  A process has one thread, so its affinity and kind
 * are its thread's (the scheduler keeps them, kernel/sched/balance.c) and a
 * forked child inherits both because fork creates the child's thread from
 * the parent's.  Another process's thread is reached under proc_lock, which
 * keeps it from ending meanwhile; the caller's own is changed without locks,
 * since changing it may move the caller to another CPU.
 */
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "proc/internal.h"
#include "smp/smp.h"

/* An ordinary process is not let onto monitor CPUs alone: the scheduler
 * would run it there rather than nowhere. */
static int set_affinity(struct thread *t, void *arg)
{
	uint64_t mask = *(const uint64_t *)arg;
	if (thread_get_kind(t) != THREAD_KIND_MONITOR &&
	    !(mask & smp_online_mask() & ~sched_monitor_cpus()))
		return -EINVAL;
	return thread_set_affinity(t, mask);
}

JOINPOINT_DEFINE(proc, set_affinity, int, int, pid, uint64_t, mask)
{
	if (!(mask & smp_online_mask()))
		return -EINVAL;
	return proc_call_on_thread(pid, set_affinity, &mask);
}

/* As kill: another user's process only with PRIV_SIGNAL (Linux: EPERM
 * without CAP_SYS_NICE). */
int proc_set_affinity_checked(int pid, uint64_t mask)
{
	if (!(mask & smp_online_mask()))
		return -EINVAL;
	return proc_call_on_thread_checked(pid, PRIV_SIGNAL, set_affinity, &mask);
}

static int get_affinity(struct thread *t, void *arg)
{
	*(uint64_t *)arg = thread_affinity(t) & smp_online_mask();
	return 0;
}

int proc_get_affinity(int pid, uint64_t *mask)
{
	uint64_t found = 0;
	int error = proc_call_on_thread(pid, get_affinity, &found);
	if (!error)
		*mask = found ? found : smp_online_mask();
	return error;
}

static int set_kind(struct thread *t, void *arg)
{
	thread_set_kind(t, *(const bool *)arg ? THREAD_KIND_MONITOR : THREAD_KIND_ORDINARY);
	return 0;
}

JOINPOINT_DEFINE(proc, set_monitor, int, int, pid, bool, monitor)
{
	return proc_call_on_thread(pid, set_kind, &monitor);
}

int proc_list_cpus(struct proc_cpu_info *info, int count)
{
	uint64_t monitors = sched_monitor_cpus();
	int n = 0;
	for (uint64_t m = smp_online_mask(); m; m &= m - 1, n++) {
		unsigned index = (unsigned)__builtin_ctzll(m);
		struct cpu_stats stats = {0};
		if (n >= count)
			continue;
		/* A CPU whose figures cannot be read (gone offline meanwhile)
		 * keeps its place with zeros: every entry up to n is written. */
		if (sched_get_cpu_stats(index, &stats))
			stats = (struct cpu_stats){0};
		info[n] = (struct proc_cpu_info){
		    .index = index,
		    .flags = (monitors & SMP_CPU_BIT(index)) ? PROC_CPU_MONITORS : 0,
		    .busy_ns = stats.busy_ns,
		    .idle_ns = stats.idle_ns,
		    .irq_ns = stats.irq_ns,
		    .context_switches = stats.context_switches,
		    .interrupts = stats.interrupts,
		};
	}
	return n;
}
