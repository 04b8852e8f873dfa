/*
 * The dispatcher: the one out-of-line path every enabled join point jumps to.
 * It builds the context on the stack, runs `before` advice in priority order,
 * the real function, then `after` advice in reverse order.
 *
 * Advice runs in two short reader sections (grace.c), one per side, with
 * preemption off, never across the call itself: a call may sleep or block for
 * long, and detaching advice must not wait for it.  Entering a section is
 * two instructions on this CPU's struct cpu through %gs (preemption count,
 * then a locked increment of jp_sections, which makes it odd: the recursion
 * guard and the grace-period marker in one word); leaving is two more and a
 * test of need_resched.
 *
 * The list may change during the call, so `after` runs only for entries
 * attached no later than the list `before` used: when `after` finds the same
 * list generation (the usual case) it runs every after call; otherwise it
 * checks each entry's since.  Advice attached mid-call never sees an `after`
 * without its `before`; advice detached mid-call misses that call's `after`.
 * A `before` list with no after calls skips the second section: anything
 * attached since cannot run after anyway.  Timestamps are taken only when an
 * advice asked for them (JP_ADVICE_TIMESTAMPS).
 *
 * A join point reached while this CPU runs advice (the advice called a module
 * API, or an interrupt came in during advice) calls the function directly and
 * is counted in its state's skipped.
 */
#include "joinpoint/internal.h"

#include <stddef.h>

#include "arch/x86_64/cpu.h"
#include "cpu/spinlock.h"

#define CPU_FIELD(field) offsetof(struct cpu, field)

static inline __attribute__((always_inline)) bool in_advice(void)
{
	unsigned sections;
	__asm__ volatile("movl %%gs:%c1, %0" : "=r"(sections) : "i"(CPU_FIELD(jp_sections)));
	return sections & 1;
}

static inline __attribute__((always_inline)) void section_enter(void)
{
	__asm__ volatile("incl %%gs:%c0\n\t"
			 "lock incl %%gs:%c1"
			 :
			 : "i"(CPU_FIELD(preempt_count)), "i"(CPU_FIELD(jp_sections))
			 : "memory", "cc");
}

/* A reschedule asked for while advice ran: let preempt_enable act on it. */
static __attribute__((noinline, cold)) void resched_after_advice(void)
{
	if (this_cpu()->preempt_count == 0) {
		preempt_disable();
		preempt_enable();
	}
}

static inline __attribute__((always_inline)) void section_leave(void)
{
	__asm__ goto("incl %%gs:%c0\n\t"
		     "decl %%gs:%c1\n\t"
		     "cmpl $0, %%gs:%c2\n\t"
		     "jne %l[resched]"
		     :
		     : "i"(CPU_FIELD(jp_sections)), "i"(CPU_FIELD(preempt_count)),
		       "i"(CPU_FIELD(need_resched))
		     : "memory", "cc"
		     : resched);
	return;
resched:
	resched_after_advice();
}

static inline const struct jp_list *load_list(const struct joinpoint *jp)
{
	return __atomic_load_n(&jp->state->list, __ATOMIC_ACQUIRE);
}

static __attribute__((noinline, cold)) uint64_t call_skipped(const struct joinpoint *jp,
							     uint64_t *args)
{
	__atomic_fetch_add(&jp->state->skipped, 1, __ATOMIC_RELAXED);
	return jp->call(args);
}

/* Runs before calls 1..before_count (the first one is inline). */
static __attribute__((noinline)) void run_more_before(const struct jp_list *list,
						      struct jp_context *context)
{
	for (unsigned i = 1; i < list->before_count; i++)
		list->before[i].fn(context, list->before[i].cookie);
}

/* Runs after calls 1..after_count of the list before used. */
static __attribute__((noinline)) void run_more_after(const struct jp_list *list,
						     struct jp_context *context)
{
	for (unsigned i = 1; i < list->after_count; i++)
		list->after[i].fn(context, list->after[i].cookie);
}

/* The list changed during the call: run the after calls of entries that
 * were attached when before ran. */
static __attribute__((noinline)) void
run_after_checked(const struct jp_list *list, struct jp_context *context, uint64_t generation)
{
	for (unsigned i = 0; list && i < list->after_count; i++) {
		if (list->after[i].since <= generation)
			list->after[i].fn(context, list->after[i].cookie);
	}
}

static __attribute__((noinline, cold)) void stamp(uint64_t *tsc)
{
	*tsc = rdtsc();
}

/* Fills in where the call runs and runs the before calls; returns the
 * generation of the list used, or 0 when there is no after call to make. */
static inline __attribute__((always_inline)) uint64_t run_before(struct jp_context *context)
{
	section_enter();
	struct cpu *cpu = this_cpu();
	context->cpu = cpu->id;
	context->thread = cpu->current;
	const struct jp_list *list = load_list(context->joinpoint);
	uint64_t generation = 0;
	if (__builtin_expect(list != NULL, 1)) { /* NULL: detached since the site jumped */
		if (__builtin_expect(list->flags & JP_ADVICE_TIMESTAMPS, 0))
			stamp(&context->entry_tsc);
		if (list->before_count) {
			list->before[0].fn(context, list->before[0].cookie);
			if (__builtin_expect(list->before_count > 1, 0))
				run_more_before(list, context);
		}
		if (list->after_count)
			generation = list->generation;
	}
	section_leave();
	return generation;
}

static inline __attribute__((always_inline)) void run_after(struct jp_context *context,
							    uint64_t generation)
{
	section_enter();
	const struct jp_list *list = load_list(context->joinpoint);
	if (__builtin_expect(list && list->generation == generation, 1)) {
		list->after[0].fn(context, list->after[0].cookie);
		if (__builtin_expect(list->after_count > 1, 0))
			run_more_after(list, context);
	} else {
		run_after_checked(list, context, generation);
	}
	section_leave();
}

uint64_t jp_dispatch(const struct joinpoint *jp, uint64_t *args)
{
	if (__builtin_expect(in_advice(), 0))
		return call_skipped(jp, args);

	/* Field by field, ret only once known: an initializer would zero the
	 * whole struct first, on every call. */
	struct jp_context context;
	context.joinpoint = jp;
	context.args = args;
	context.activity = 0;
	context.entry_tsc = 0;
	context.exit_tsc = 0;
	uint64_t generation = run_before(&context);
	context.ret = jp->call(context.args);
	if (generation) {
		if (__builtin_expect(context.entry_tsc != 0, 0))
			stamp(&context.exit_tsc);
		run_after(&context, generation);
	}
	return context.ret;
}
