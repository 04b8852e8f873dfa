/*
 * Grace periods for advice lists.  Advice runs in short reader sections on
 * one CPU with preemption off, and a join point reached inside advice runs
 * none, so a CPU is inside at most one section at a time.  Each CPU counts
 * its sections in its struct cpu's jp_sections: odd while inside one.  A
 * reader enters with a locked increment (a full barrier on x86, so the list
 * load after it cannot be satisfied before the counter is visible) and
 * leaves with a plain increment after its last use of the list (a store,
 * ordered after the section's loads and stores).
 *
 * jp_synchronize, after a writer unpublished a list: for every CPU, read the
 * counter; an even value means the CPU is outside any section, an odd one
 * that it is inside one, which ends when the counter moves on.  A reader
 * whose entering increment the writer did not see was ordered after the
 * writer's publication (a locked add on one side, a full fence on the other),
 * so it can only have seen the new list.  Nothing else is needed: no hook in
 * the scheduler, idle loop or tick, no cross-CPU interrupt, and waiting is
 * bounded by the advice running at the moment.  Every slot of cpus[] is
 * read, online or not (an absent CPU's counter is 0), so a CPU coming up
 * during a grace period needs no special case.  The caller must not be
 * inside advice or an interrupt handler, where it could wait for itself
 * (jp_may_wait).
 */
#include "joinpoint/internal.h"

#include "arch/x86_64/cpu.h"
#include "panic/panic.h"

bool jp_may_wait(void)
{
	struct cpu *cpu = this_cpu();
	return !(cpu->jp_sections & 1) && cpu->irq_depth == 0;
}

static void wait_for_cpu(const struct cpu *cpu)
{
	unsigned seen = __atomic_load_n(&cpu->jp_sections, __ATOMIC_ACQUIRE);
	if (!(seen & 1))
		return;
	while (__atomic_load_n(&cpu->jp_sections, __ATOMIC_ACQUIRE) == seen)
		cpu_relax();
}

void jp_synchronize(void)
{
	ASSERT(jp_may_wait());
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < MAX_CPUS; i++)
		wait_for_cpu(&cpus[i]);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
