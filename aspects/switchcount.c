/*
 * switchcount: counts the context switches (sched.switch).  Its advice runs
 * inside the scheduler, under the run queue's lock: linked direct or shm it
 * counts every switch; linked msg its events are dropped and counted, since a
 * message wakes the monitor and a wake-up needs that lock (docs/LINKER.md).
 *
 *     aspect load /aspects/switchcount.o
 *     aspect link switchcount direct
 *     aspect counters switchcount
 */
#include <microscope/aspect.h>

MS_ASPECT("switchcount", "counts context switches (sched.switch)");

static void count_switch(struct ms_ctx *ctx)
{
	(void)ctx;
	ms_counter_add("switches", 1);
}

MS_BEFORE("sched.switch", count_switch, 0);
