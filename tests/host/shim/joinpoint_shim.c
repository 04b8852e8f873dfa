/*
 * Host stand-in for the join-point dispatcher, so kernel sources whose API
 * functions are join points link into host tests.  No advice is ever attached
 * there, so it only calls the function.  Weak: a test that links the real
 * kernel/joinpoint/dispatch.c gets that one.
 */
#include "joinpoint/joinpoint.h"

__attribute__((weak)) uint64_t jp_dispatch(const struct joinpoint *jp, uint64_t *args)
{
	return jp->call(args);
}
