/*
 * Host stand-in for the join-point dispatcher, so kernel sources whose API
 * functions are join points link into host tests.  No advice is ever attached
 * there, so it only calls the function.  Weak: a test that links the real
 * kernel/joinpoint/dispatch.c gets that one.  The fast path's code
 * (trampoline.c) is kernel-only: lists built on the host get no shape.
 */
#include "joinpoint/internal.h"

__attribute__((weak)) uint64_t jp_dispatch(const struct joinpoint *jp, uint64_t *args)
{
	return jp->call(args);
}

__attribute__((weak)) const void *jp_shape_select(const struct jp_list *list,
						  const struct joinpoint *jp)
{
	return NULL;
}
