/*
 * empty: one `before` advice that does nothing, on the bindings benchmark's
 * join points (linker.bench_event, which may not sleep, and
 * linker.bench_call, which may); what an event costs in each binding with no
 * work of its own.
 *
 *     aspect load /aspects/empty.o
 *     aspect link empty shm
 *     kcmd bindbench                 (or init=/bin/bindbench bind_bench)
 */
#include <microscope/aspect.h>

MS_ASPECT("empty", "an empty advice on linker.bench_event and linker.bench_call");

static void nothing(struct ms_ctx *ctx)
{
	(void)ctx;
}

MS_BEFORE("linker.bench_*", nothing, 0);
