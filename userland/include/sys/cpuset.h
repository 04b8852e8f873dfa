/*
 * CPU sets for sched_setaffinity and sched_getaffinity, as Linux and glibc
 * spell them (newlib has the functions' names in <sched.h> but no
 * cpu_set_t): a bit per CPU, CPU_SETSIZE bits, of which the kernel reads the
 * first 64.  <sched.h> includes this header.
 *
 *     cpu_set_t set; CPU_ZERO(&set); CPU_SET(1, &set);
 *     if (sched_setaffinity(0, sizeof set, &set) < 0) perror("pin");
 *     int here = sched_getcpu();   // 1 from now on
 */
#ifndef _SYS_CPUSET_H_
#define _SYS_CPUSET_H_

#include <stddef.h>
#include <sys/types.h>

#define CPU_SETSIZE 1024
#define __CPU_BITS  (8 * sizeof(unsigned long))

typedef struct {
	unsigned long __bits[CPU_SETSIZE / (8 * sizeof(unsigned long))];
} cpu_set_t;

#define CPU_ZERO(set) __builtin_memset((set), 0, sizeof(cpu_set_t))
#define CPU_SET(cpu, set)                                                                   \
	((void)((size_t)(cpu) < CPU_SETSIZE ? ((set)->__bits[(size_t)(cpu) / __CPU_BITS] |= \
					       1UL << ((size_t)(cpu) % __CPU_BITS))         \
					    : 0))
#define CPU_CLR(cpu, set)                                                                   \
	((void)((size_t)(cpu) < CPU_SETSIZE ? ((set)->__bits[(size_t)(cpu) / __CPU_BITS] &= \
					       ~(1UL << ((size_t)(cpu) % __CPU_BITS)))      \
					    : 0))
#define CPU_ISSET(cpu, set)             \
	((size_t)(cpu) < CPU_SETSIZE && \
	 ((set)->__bits[(size_t)(cpu) / __CPU_BITS] >> ((size_t)(cpu) % __CPU_BITS)) & 1)
#define CPU_COUNT(set)  __cpuset_count(set)
#define CPU_EQUAL(a, b) (__builtin_memcmp((a), (b), sizeof(cpu_set_t)) == 0)

static inline int __cpuset_count(const cpu_set_t *set)
{
	int n = 0;
	for (size_t i = 0; i < sizeof set->__bits / sizeof set->__bits[0]; i++)
		n += __builtin_popcountl(set->__bits[i]);
	return n;
}

/* Return 0, or -1 with errno (ESRCH, EINVAL, EFAULT). */
int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set);
int sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set);
/* The CPU the caller runs on, or -1 with errno. */
int sched_getcpu(void);

#endif
