/*
 * slowpoke: takes 20 ms to answer each vfs.stat (for the tests).  Linked
 * `msg` synchronous with a shorter deadline, its monitor misses the deadline
 * while the join point waits, so the aspect is reported and unlinked; the
 * monitor itself recovers once the advice returns.  (Linked `direct` it runs
 * past its time budget.)
 */
#include <microscope/aspect.h>

MS_ASPECT("slowpoke", "answers each vfs.stat after 20 ms (for the tests)");

#define SLOW_NS (20 * 1000 * 1000)

static void dawdle(struct ms_ctx *ctx)
{
	uint64_t start = ms_now_ns();
	ms_counter_add("entered", 1);
	while (ms_now_ns() - start < SLOW_NS)
		;
}

MS_BEFORE("vfs.stat", dawdle, 0);
