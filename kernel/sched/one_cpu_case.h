/*
 * ONE_CPU_CASE: a ktest case about what one CPU does (who runs first, who
 * preempts whom, what one CPU counts) runs with the ktest thread pinned to
 * the CPU it is on; the threads it creates inherit the pin.  For the test
 * kernel's suites only.
 *
 *     static void name_body(struct ktest *t) { ... }
 *     ONE_CPU_CASE(name)
 */
#ifndef KERNEL_SCHED_ONE_CPU_CASE_H
#define KERNEL_SCHED_ONE_CPU_CASE_H

#include "ktest/ktest.h"
#include "sched/sched.h"

#define ONE_CPU_CASE(name)                                       \
	static void name(struct ktest *t)                        \
	{                                                        \
		uint64_t affinity = thread_pin_here();           \
		name##_body(t);                                  \
		thread_set_affinity(thread_current(), affinity); \
	}

#endif
