/*
 * Targets of the bindings benchmark (bench.c), in their own file so that
 * they are real calls: a plain function, the join point "linker.bench_event"
 * (declared _NOSLEEP like the fast-path join points: its advice runs with
 * preemption off, as every advice does), the join point "linker.bench_call"
 * (one that may sleep: a synchronous msg event there blocks for its reply
 * instead of spinning), and the floor of the shm binding,
 * which fills the same struct scope_event the shm producer fills, through the
 * same function, from a context built on the stack.
 */
#include "linker/weave/bench_internal.h"

#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "linker/weave/monitor_internal.h"
#include "sched/sched.h"

JOINPOINT_DEFINE_VOID_NOSLEEP(linker, bench_event)
{
	__asm__ volatile("");
}

JOINPOINT_DEFINE_VOID(linker, bench_call)
{
	__asm__ volatile("");
}

__attribute__((noinline)) void linker_bench_plain(void)
{
	__asm__ volatile("");
}

__attribute__((noinline)) void linker_bench_floor(struct scope_event *slot)
{
	struct jp_context context = {
	    .joinpoint = &jp_desc_linker_bench_event,
	    .thread = thread_current(),
	    .cpu = this_cpu_id(),
	};
	/* The fill is in line: hidden from the compiler, the context is read
	 * as a producer reads its join point's, not folded into constants. */
	const struct jp_context *fill_from = &context;
	__asm__("" : "+r"(fill_from));
	monitor_fill_event(slot, monitor_event_head(1, 0, 0), fill_from, false);
}
