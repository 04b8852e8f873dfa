/*
 * Grace periods across CPUs, in the style of RCU-sched: a reader section is
 * any stretch of code that cannot be preempted, and a CPU that is seen
 * preemptible, switching threads or idle is outside every section.  Each CPU
 * counts its quiescent points in cpus[i].quiescent_generation (written only
 * by that CPU, with release stores): at every context switch, on every pass
 * of the idle loop, and at every interrupt that interrupted preemptible code
 * (irq_dispatch, before irq.entry's advice, which may hold preemption off).
 *
 * grace_synchronize snapshots the counters of the other online CPUs after a
 * full fence (ordering it after the writer's unpublication) and waits until
 * each has moved.  The caller's own CPU needs no wait: the caller runs there
 * preemptible, so it is outside any section.  Every CPU takes a tick at
 * least every 1/hz seconds, so a grace period lasts about one tick unless a
 * CPU stays in a section that long.
 */
#include "smp/smp.h"

#include "arch/x86_64/cpu.h"
#include "joinpoint/joinpoint.h"
#include "panic/panic.h"
#include "sched/sched.h"
#include "time/time.h"

static uint64_t quiescent_count(unsigned index)
{
	return __atomic_load_n(&cpus[index].quiescent_generation, __ATOMIC_ACQUIRE);
}

JOINPOINT_DEFINE_VOID_AS(grace, synchronize, grace_synchronize)
{
	uint64_t seen[MAX_CPUS];

	ASSERT(this_cpu()->irq_depth == 0 && this_cpu()->preempt_count == 0);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	preempt_disable();
	uint64_t others = smp_online_mask() & ~SMP_CPU_BIT(this_cpu_id());
	for (uint64_t m = others; m; m &= m - 1)
		seen[__builtin_ctzll(m)] = quiescent_count((unsigned)__builtin_ctzll(m));
	preempt_enable();
	for (uint64_t m = others; m; m &= m - 1) {
		unsigned index = (unsigned)__builtin_ctzll(m);
		while (quiescent_count(index) == seen[index])
			sched_sleep_ns(NSEC_PER_SEC / timer_hz());
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
