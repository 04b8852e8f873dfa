/*
 * newlib's <sched.h> plus what Linux programs expect from it and newlib
 * declares only for some targets: sched_yield, and the CPU sets and affinity
 * calls of <sys/cpuset.h>.
 *
 *     #include <sched.h>
 *     cpu_set_t set; CPU_ZERO(&set); CPU_SET(0, &set);
 *     sched_setaffinity(0, sizeof set, &set);
 */
#ifndef MICROSCOPE_SCHED_H_WRAPPER
#define MICROSCOPE_SCHED_H_WRAPPER

#include <sys/cpuset.h>

#include_next <sched.h>

/* Gives the CPU to another ready process, if any.  Returns 0. */
int sched_yield(void);

#endif
