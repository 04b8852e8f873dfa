/*
 * The accounting part of the aspect ABI (ms_acct_* in microscope/aspect.h),
 * as the kernel implements it for the `direct` binding: the rscfl aspect's
 * advice (aspects/rscfl.c) calls these, and they hand kernel/acct the join
 * point's context and the TSC reading the guard took as the advice began,
 * which times the call (so the accounting reads no clock of its own).  The
 * linker resolves the names through its ABI table; it does not include
 * kernel/acct, which sits above it.
 */
#include "acct/internal.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "linker/weave/weave.h"
#include "microscope/aspect.h"

/* The ABI's flags and events are kernel/acct's own, value for value, so they
 * pass through unchanged. */
_Static_assert(MS_ACCT_OUTERMOST == ACCT_OUTERMOST && MS_ACCT_SYSCALL == ACCT_SYSCALL,
	       "ms_acct flags");
#define SAME_EVENT(name) ((int)MS_ACCT_##name == (int)ACCT_##name)
_Static_assert(SAME_EVENT(INTERRUPT) && SAME_EVENT(PAGE_FAULT) && SAME_EVENT(ALLOC) &&
		   SAME_EVENT(FREE),
	       "ms_acct events");

static const struct jp_context *jp_of(const struct ms_ctx *ctx)
{
	const struct linker_advice_frame *frame = linker_advice_frame(ctx);
	return frame ? frame->context : NULL;
}

/* ms_acct_enter may set context->activity, which before advice is allowed
 * to. */
int ms_acct_enter(struct ms_ctx *ctx, unsigned flags)
{
	const struct jp_context *jp = jp_of(ctx);
	return jp ? acct_call_enter((struct jp_context *)jp, flags,
				    linker_advice_frame(ctx)->start_tsc)
		  : 0;
}

uint64_t ms_acct_exit(struct ms_ctx *ctx, unsigned flags)
{
	const struct jp_context *jp = jp_of(ctx);
	return jp ? acct_call_exit(jp, flags, linker_advice_frame(ctx)->start_tsc) : 0;
}

const char *ms_acct_innermost(const struct ms_ctx *ctx)
{
	const struct jp_context *jp = jp_of(ctx);
	return jp ? acct_innermost_subsystem(jp) : "";
}

int ms_acct_charge(const struct ms_ctx *ctx, enum ms_acct_event event, uint64_t amount)
{
	const struct jp_context *jp = jp_of(ctx);
	return jp ? acct_charge_event(jp, (unsigned)event, amount) : -ENOENT;
}

int ms_acct_switch(const struct ms_ctx *ctx)
{
	const struct jp_context *jp = jp_of(ctx);
	if (jp && jp->joinpoint->argc >= 2)
		acct_note_switch((struct thread *)jp->args[0], (struct thread *)jp->args[1]);
	return 0;
}
