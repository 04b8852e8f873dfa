/*
 * empty: one `before` advice that does nothing, on the bindings benchmark's
 * join point; what an event costs in each binding with no work of its own.
 *
 *     aspect load /aspects/empty.o
 *     aspect link empty shm
 *     kcmd bindbench                 (or init=/bin/bindbench bind_bench)
 */
#include <microscope/aspect.h>

MS_ASPECT("empty", "an empty advice on linker.bench_event");

static void nothing(struct ms_ctx *ctx)
{
	(void)ctx;
}

MS_BEFORE("linker.bench_event", nothing, 0);
