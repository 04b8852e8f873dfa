/*
 * callcount: counts the calls of every VFS join point, one counter per join
 * point ("vfs.open", "vfs.read", ...) and one for all of them ("calls").
 *
 *     aspect load /aspects/callcount.o
 *     aspect link callcount direct          (or shm, msg: the same object)
 *     aspect counters callcount
 */
#include <microscope/aspect.h>

MS_ASPECT("callcount", "counts calls of every vfs join point");

static void count_call(struct ms_ctx *ctx)
{
	ms_counter_add(ms_joinpoint_name(ctx), 1);
	ms_counter_add("calls", 1);
}

MS_BEFORE("vfs.*", count_call, 0);
