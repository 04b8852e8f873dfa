/*
 * The functions jp_bench calls, in their own file so that the compiler cannot
 * inline them into the measuring loops: a plain function that does nothing
 * (the baseline) and a join point that does nothing.  Compiled alike, they
 * differ by exactly the join point's NOP.  The join point never sleeps, so it
 * is declared _NOSLEEP and, enabled, takes the fast path (trampoline.c); its
 * twin declared the default way takes the dispatcher, for comparison.
 */
#include "joinpoint/internal.h"

__attribute__((noinline)) void jp_bench_plain(void)
{
	__asm__ volatile("");
}

JOINPOINT_DEFINE_VOID_NOSLEEP(jp, bench_nop)
{
	__asm__ volatile("");
}

JOINPOINT_DEFINE_VOID(jp, bench_nop_sleeps)
{
	__asm__ volatile("");
}
