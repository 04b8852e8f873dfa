/*
 * Between the `direct` binding (bind_direct.c) and the guard (guard.c): the
 * cookie of a woven direct advice, and the functions the join point calls
 * with it.  They check that `direct` is still the aspect's active binding and
 * run the aspect's advice through the guard, all in one function per side,
 * since they run on every event of every direct aspect.  Nothing outside
 * linker/ includes this file.
 */
#ifndef LINKER_GUARD_INTERNAL_H
#define LINKER_GUARD_INTERNAL_H

#include "joinpoint/joinpoint.h"
#include "linker/weave/internal.h"

/* One advice of a direct aspect: its before, its after, or both (folded). */
struct linker_direct_call {
	struct aspect *aspect;
	ms_advice_fn before, after;
};

/* jp_advice_fn for a direct advice: cookie is its struct linker_direct_call.
 * They run the before (after) advice guarded, nothing when the aspect's
 * active binding is no longer `direct`. */
void linker_direct_before(struct jp_context *context, void *cookie);
void linker_direct_after(struct jp_context *context, void *cookie);

#endif
