/*
 * Deferral: work an advice cannot do in its section because it sleeps (a
 * message to a monitor waiting for the reply) runs on the calling thread
 * right after that section.  In line, since the advice that defers does so
 * at every event and a call would cost more than the checks:
 *
 *     if (jp_defer(context, send_and_wait, cookie) != 0)
 *             send_without_sleeping(context, cookie);
 *
 * The dispatcher (dispatch.c) names the outermost call whose advice runs in
 * this CPU's struct cpu (jp_deferring) and keeps what was deferred beside
 * that call's context in its own frame, so jp_defer finds both from the
 * context it is given.
 */
#ifndef KERNEL_JOINPOINT_DEFER_H
#define KERNEL_JOINPOINT_DEFER_H

#include <stddef.h>

#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"

/* A dispatcher's call whose advice may defer: the context its advice sees
 * and the work one of them deferred (fn NULL: none). */
struct jp_deferrable_call {
	struct jp_context context;
	jp_advice_fn fn;
	void *cookie;
};

/* Whether the running thread may sleep once the outermost section it is in
 * (preemption's only hold) ends: no other hold on preemption, not in an
 * interrupt, interrupts on, a thread. */
static inline __attribute__((always_inline)) bool jp_may_sleep_after_section(const struct cpu *cpu)
{
	return cpu->preempt_count == 1 && !cpu->irq_depth && irq_enabled() && cpu->current;
}

/* fn(context, cookie) runs on the calling thread right after the advice's
 * section, with preemption on, before the call (from a before advice) or
 * before the join point returns (from an after advice).  Only an outermost
 * call of a join point that may sleep (JOINPOINT_DEFINE, not _NOSLEEP, not
 * nested in one), outside interrupts, with no lock held and preemption
 * otherwise on, can defer, and only an advice whose flags say
 * JP_ADVICE_DEFERS; one deferral per section.  fn runs outside every
 * section: it must keep what cookie points at alive itself (a grace period
 * does not wait for it).  Returns 0 or -EWOULDBLOCK (this call may not
 * sleep: do the work without sleeping). */
static inline __attribute__((always_inline)) int jp_defer(struct jp_context *context,
							  jp_advice_fn fn, void *cookie)
{
	struct cpu *cpu = this_cpu();
	if (!context || cpu->jp_deferring != context || !jp_may_sleep_after_section(cpu))
		return -EWOULDBLOCK;
	struct jp_deferrable_call *call =
	    (struct jp_deferrable_call *)((char *)context -
					  offsetof(struct jp_deferrable_call, context));
	if (call->fn)
		return -EWOULDBLOCK;
	call->fn = fn;
	call->cookie = cookie;
	return 0;
}

#endif
