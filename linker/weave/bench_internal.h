/*
 * The functions the bindings benchmark (bench.c) calls, defined apart
 * (bench_target.c) so that the compiler cannot inline them.  Private to
 * linker/.
 */
#ifndef LINKER_BENCH_INTERNAL_H
#define LINKER_BENCH_INTERNAL_H

#include "uapi/scope.h"

/* Does nothing: the plain function call every figure is compared with. */
void linker_bench_plain(void);
/* The join point "linker.bench_event" (_NOSLEEP): does nothing. */
void linker_bench_event(void);
/* The join point "linker.bench_call", which may sleep: does nothing. */
void linker_bench_call(void);
/* Writes a record of the shape shm writes into slot of a plain per-CPU array. */
void linker_bench_floor(struct scope_event *slot);

#endif
