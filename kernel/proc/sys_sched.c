/*
 * The CPU system calls: sched_setaffinity and sched_getaffinity with Linux's
 * semantics (pid 0 is the caller; the mask is cpu_set_t bytes, bit i = CPU
 * i; the kernel's own mask is 8 bytes, MAX_CPUS bits), getcpu, and
 * microScope's ms_setmonitor (a process may use the CPUs reserved for
 * monitors) and ms_getcpus (per-CPU statistics for top).  Each checks its
 * arguments and copies user memory, then acts through proc/affinity.c.
 */
#include "cpu/percpu.h"
#include "lib/errno.h"
#include "proc/internal.h"
#include "syscall/syscall.h"
#include "uaccess/uaccess.h"

#define KERNEL_MASK_BYTES sizeof(uint64_t)

/* Reads the first length bytes of a user cpu_set_t; bits past MAX_CPUS are
 * ignored, as Linux ignores bits past its CPUs. */
SYSCALL_DEFINE3(sched_setaffinity, int, pid, uint64_t, length, const uint8_t *, user_mask)
{
	uint64_t mask = 0;
	uint64_t bytes = length < KERNEL_MASK_BYTES ? length : KERNEL_MASK_BYTES;
	if (copy_from_user(&mask, user_mask, bytes) < 0)
		return -EFAULT;
	/* Another user's process only with PRIV_SIGNAL, checked on the process
	 * pinned (proc/affinity.c). */
	return proc_set_affinity_checked(pid, mask);
}

/* Returns the bytes written (8), or -EINVAL when length is not a multiple of
 * 8 or is too short for every CPU, -ESRCH, -EFAULT. */
SYSCALL_DEFINE3(sched_getaffinity, int, pid, uint64_t, length, uint8_t *, user_mask)
{
	if (length < KERNEL_MASK_BYTES || length % sizeof(uint64_t))
		return -EINVAL;
	uint64_t mask;
	int error = proc_get_affinity(pid, &mask);
	if (error)
		return error;
	if (copy_to_user(user_mask, &mask, sizeof mask) < 0)
		return -EFAULT;
	return (long)KERNEL_MASK_BYTES;
}

/* The CPU the caller runs on (it may move right after), node 0. */
SYSCALL_DEFINE3(getcpu, unsigned *, cpu, unsigned *, node, void *, cache)
{
	(void)cache;
	unsigned index = this_cpu_id(), zero = 0;
	if (cpu && copy_to_user(cpu, &index, sizeof index) < 0)
		return -EFAULT;
	if (node && copy_to_user(node, &zero, sizeof zero) < 0)
		return -EFAULT;
	return 0;
}

/* monitor: 1 makes pid a monitor process, 0 an ordinary one. */
SYSCALL_DEFINE2(ms_setmonitor, int, pid, int, monitor)
{
	if (monitor != 0 && monitor != 1)
		return -EINVAL;
	if (!proc_has_privilege(PRIV_MONITOR))
		return -EPERM; /* the monitor CPUs are a reservation for the system's monitors */
	return proc_set_monitor(pid, monitor == 1);
}

/* Fills up to count struct proc_cpu_info; returns how many CPUs are online. */
SYSCALL_DEFINE2(ms_getcpus, struct proc_cpu_info *, buffer, int, count)
{
	if (count < 0)
		return -EINVAL;
	if (count > MAX_CPUS)
		count = MAX_CPUS;
	struct proc_cpu_info *info = kmalloc(MAX_CPUS * sizeof *info);
	if (!info)
		return -ENOMEM;
	int total = proc_list_cpus(info, count);
	int copied = total < count ? total : count;
	long error = copy_to_user(buffer, info, (size_t)copied * sizeof *info);
	kfree(info);
	return error ? error : total;
}
