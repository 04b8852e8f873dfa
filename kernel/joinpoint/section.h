/*
 * The reader sections of join points, in line, for code that runs a join
 * point's whole call itself (a native advice's around, joinpoint.h): leaving
 * the dispatcher's section before the call and entering one of its own after
 * it, and marking the real function of a _NOSLEEP join point as running.
 * The same instructions as the dispatcher's (dispatch.c) and the
 * trampoline's (trampoline.c); grace.c says what the bits mean.
 */
#ifndef KERNEL_JOINPOINT_SECTION_H
#define KERNEL_JOINPOINT_SECTION_H

#include <stddef.h>

#include "cpu/percpu.h"
#include "joinpoint/joinpoint.h"

/* Called when a section ended with need_resched set (dispatch.c). */
void jp_resched_after_section(void);

/* Enters an outermost section: this CPU is not inside one. */
static inline __attribute__((always_inline)) void jp_section_enter(void)
{
	__asm__ volatile("incl %%gs:%c0\n\t"
			 "lock btsl $0, %%gs:%c1"
			 :
			 : "i"(offsetof(struct cpu, preempt_count)),
			   "i"(offsetof(struct cpu, jp_sections))
			 : "memory", "cc");
}

/* Leaves a section by adding step to this CPU's jp_sections (the bits it
 * clears carry into the count of sections ended) and ending its preemption;
 * true when a reschedule was asked for meanwhile, which the caller lets
 * happen (jp_resched_after_section).  The one way out of a section: the
 * dispatcher's and the two below. */
static inline __attribute__((always_inline)) bool jp_section_leave_by(unsigned step)
{
	__asm__ goto("addl %3, %%gs:%c0\n\t"
		     "decl %%gs:%c1\n\t"
		     "cmpl $0, %%gs:%c2\n\t"
		     "jne %l[resched]"
		     :
		     : "i"(offsetof(struct cpu, jp_sections)),
		       "i"(offsetof(struct cpu, preempt_count)),
		       "i"(offsetof(struct cpu, need_resched)), "ri"(step)
		     : "memory", "cc"
		     : resched);
	return false;
resched:
	return true;
}

/* Leaves an outermost section (+3 is INSIDE + CALLING, carrying into the
 * count) and lets a reschedule asked for meanwhile happen. */
static inline __attribute__((always_inline)) void jp_section_leave(void)
{
	if (jp_section_leave_by(3))
		jp_resched_after_section();
}

/* jp_section_leave, except that a reschedule asked for meanwhile is the
 * caller's to make: returns whether one was.  So that a caller whose next
 * step is a tail call keeps nothing across a call. */
static inline __attribute__((always_inline)) bool jp_section_leave_unless_resched(void)
{
	return jp_section_leave_by(3);
}

/* Around the real function of a _NOSLEEP join point, inside its section:
 * join points reached from it run their advice. */
static inline __attribute__((always_inline)) void jp_section_calling(bool on)
{
	if (on)
		__asm__ volatile("addl %1, %%gs:%c0" ::"i"(offsetof(struct cpu, jp_sections)),
				 "i"(JP_SECTION_CALLING)
				 : "memory", "cc");
	else
		__asm__ volatile("subl %1, %%gs:%c0" ::"i"(offsetof(struct cpu, jp_sections)),
				 "i"(JP_SECTION_CALLING)
				 : "memory", "cc");
}

#endif
