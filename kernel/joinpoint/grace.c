/*
 * Grace periods for advice lists.  Advice runs in short reader sections on
 * one CPU with preemption off, and a join point reached inside advice runs
 * none, so a CPU is inside at most one section at a time.  Each CPU counts
 * its sections in jp_cpus[cpu].sections: odd while inside one.  A reader
 * enters with a locked increment (a full barrier) before it loads the list
 * and leaves with a plain increment after its last use of it.
 *
 * jp_synchronize, after a writer unpublished a list: for every CPU, read the
 * counter; an even value means the CPU is outside any section, an odd one
 * that it is inside one, which ends when the counter moves on.  A reader
 * whose entering increment the writer did not see was ordered after the
 * writer's publication (a locked add on one side, a full fence on the other),
 * so it can only have seen the new list.  Nothing else is needed: no hook in
 * the scheduler, idle loop or tick, and waiting is bounded by the advice that
 * is running at the moment.  The caller must not be inside advice or an
 * interrupt handler, where it could wait for itself (jp_may_wait).
 */
#include "joinpoint/internal.h"

#include "arch/x86_64/cpu.h"
#include "panic/panic.h"

struct jp_cpu_state jp_cpus[MAX_CPUS];

bool jp_may_wait(void)
{
	struct cpu *cpu = this_cpu();
	return cpu->jp_nesting == 0 && cpu->irq_depth == 0;
}

static void wait_for_cpu(unsigned index)
{
	uint64_t seen = __atomic_load_n(&jp_cpus[index].sections, __ATOMIC_ACQUIRE);
	if (!(seen & 1))
		return;
	while (__atomic_load_n(&jp_cpus[index].sections, __ATOMIC_ACQUIRE) == seen)
		cpu_relax();
}

void jp_synchronize(void)
{
	ASSERT(jp_may_wait());
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < MAX_CPUS; i++)
		wait_for_cpu(i);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
