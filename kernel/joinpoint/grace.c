/*
 * Grace periods for advice lists.  Advice runs in reader sections on one CPU
 * with preemption off, and a join point reached inside advice runs none.
 * Each CPU marks its sections in its struct cpu's jp_sections (internal.h
 * gives the bits): JP_SECTION_INSIDE while inside one, and a count of the
 * sections ended above it.  A section is short, except that of a _NOSLEEP
 * join point, which also spans its call (which does not sleep); a section
 * entered inside that call is nested and changes neither the bit nor the
 * count, the outer one covering it.  A reader enters with a locked bit set
 * (a full barrier on x86, so the list load after it cannot be satisfied
 * before the bit is visible) and leaves with a plain add after its last use
 * of the list (a store, ordered after the section's loads and stores), which
 * clears the bit and counts the section in one step.
 *
 * jp_synchronize, after a writer unpublished a list: for every CPU, read the
 * word; without the bit the CPU is outside any section, with it the CPU is
 * inside one, which has ended once the bit is clear or the count has moved
 * (only an outermost section's end moves it).  A reader whose entering bit
 * set the writer did not see was ordered after the writer's publication (a
 * locked operation on one side, a full fence on the other), so it can only
 * have seen the new list.  Nothing else is needed: no hook in the scheduler,
 * idle loop or tick, no cross-CPU interrupt, and waiting is bounded by the
 * section running at the moment.  (A count that wraps exactly between two
 * reads only makes the writer wait for the next section's end.)  Every slot
 * of cpus[] is read, online or not (an absent CPU's word is 0), so a CPU
 * coming up during a grace period needs no special case.  The caller must not
 * be inside a section or an interrupt handler, where it could wait for itself
 * (jp_may_wait).
 */
#include "joinpoint/internal.h"

#include "arch/x86_64/cpu.h"
#include "panic/panic.h"

bool jp_may_wait(void)
{
	struct cpu *cpu = this_cpu();
	return !(cpu->jp_sections & JP_SECTION_INSIDE) && cpu->irq_depth == 0;
}

static bool same_section(unsigned now, unsigned seen)
{
	unsigned count_mask = ~(JP_SECTION_ENDED - 1);
	return (now & JP_SECTION_INSIDE) && (now & count_mask) == (seen & count_mask);
}

static void wait_for_cpu(const struct cpu *cpu)
{
	unsigned seen = __atomic_load_n(&cpu->jp_sections, __ATOMIC_ACQUIRE);
	if (!(seen & JP_SECTION_INSIDE))
		return;
	while (same_section(__atomic_load_n(&cpu->jp_sections, __ATOMIC_ACQUIRE), seen))
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
