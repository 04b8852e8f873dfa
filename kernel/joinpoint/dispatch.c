/*
 * The dispatcher: the out-of-line path of join points that may sleep
 * (JOINPOINT_DEFINE), and of any join point reached while this CPU is
 * already inside a reader section (the fast path of _NOSLEEP join points,
 * trampoline.c, sends those here).  It builds the context on the stack, runs
 * `before` advice in priority order, the real function, then `after` advice
 * in reverse order.  The context names the CPU each side's advice runs on:
 * the call may sleep and end on another CPU than it began on.
 *
 * Advice runs in two short reader sections (grace.c), one per side, with
 * preemption off, never across the call itself: a call may sleep or block for
 * long, and detaching advice must not wait for it.  Entering a section is
 * three instructions on this CPU's struct cpu through %gs (preemption count,
 * a locked bit set of jp_sections' JP_SECTION_INSIDE, which is the recursion
 * guard and the grace-period marker, and a branch for the nested case);
 * leaving is an add that clears the bit and counts the section, the
 * preemption count and a test of need_resched.  Nested (inside the call of a
 * _NOSLEEP join point, whose section is still held): entering clears
 * JP_SECTION_CALLING so that the CPU reads as in advice, leaving sets it
 * again, and the outer section is what grace periods wait for.
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
 * A list whose one entry is native advice (JP_ADVICE_NATIVE: the
 * accounting's) takes a shorter path with the same sections: nothing
 * deferred, the list's generation read once.  When the one entry of a join
 * point that may sleep has an around (joinpoint.h: native advice, the
 * built-in counting and timing, the msg binding's before advice), that
 * function runs the whole call, leaving the section itself before the
 * call.
 *
 * A join point reached while this CPU runs advice (the advice called a module
 * API, or an interrupt came in during advice) calls the function directly and
 * is counted in its state's skipped.
 *
 * jp_defer (defer.h): an outermost call names its context in this CPU's
 * struct cpu (jp_deferring) while its advice runs, when the list has advice
 * that may defer (JP_ADVICE_DEFERS: the msg binding's); an advice of that
 * call (and only of that call: the trampoline's and nested sections never
 * name theirs) may leave work beside the context, in the dispatcher's frame
 * (struct jp_deferrable_call), which the dispatcher takes before leaving the
 * section and runs after it, on its own stack, where the thread may sleep.
 */
#include "joinpoint/defer.h"
#include "joinpoint/internal.h"
#include "joinpoint/section.h"

#include <stddef.h>

#include "arch/x86_64/cpu.h"
#include "cpu/spinlock.h"
#include "lib/errno.h"

#define CPU_FIELD(field) offsetof(struct cpu, field)

/* Whether an outermost call's advice from list may defer: only a list with
 * advice that may (JP_ADVICE_DEFERS) names its call. */
static inline __attribute__((always_inline)) bool deferral_wanted(const struct jp_list *list,
								  bool nested)
{
	return !nested && list && (list->flags & JP_ADVICE_DEFERS);
}

/* No memory clobber: the advice reads what it names through a call, which
 * the compiler orders anyway.  The address is taken in the asm, from the
 * frame: given as a register, it is kept in a saved one for the whole call. */
static inline __attribute__((always_inline)) void name_deferring(struct jp_context *context)
{
	__asm__ volatile("leaq %0, %%rax\n\t"
			 "movq %%rax, %%gs:%c1"
			 :
			 : "m"(*context), "i"(CPU_FIELD(jp_deferring))
			 : "rax");
}

static inline __attribute__((always_inline)) void name_no_deferring(void)
{
	__asm__ volatile("movq $0, %%gs:%c0" : : "i"(CPU_FIELD(jp_deferring)));
}

/* Names call as the one whose advice may defer (nothing when not wanted). */
static inline __attribute__((always_inline)) void deferral_open(struct jp_deferrable_call *call,
								bool wanted)
{
	if (!wanted)
		return;
	call->fn = NULL;
	name_deferring(&call->context);
}

/* Whether an outermost call named its own: only that call names one on
 * this CPU (nested calls never do, and it is cleared before its section
 * ends), so the CPU's field says it, and no register is kept across the
 * advice to remember it. */
static inline __attribute__((always_inline)) bool deferring_named(void)
{
	return !this_cpu_eq(jp_deferring, NULL);
}

/* Ends what deferral_open began, for a call that may have opened it (an
 * outermost one with a list); returns what was deferred (NULL: nothing),
 * with its cookie in *cookie. */
static inline __attribute__((always_inline)) jp_advice_fn
deferral_close(struct jp_deferrable_call *call, bool may_have_opened, void **cookie)
{
	if (!may_have_opened || __builtin_expect(!deferring_named(), 1))
		return NULL;
	name_no_deferring();
	jp_advice_fn fn = call->fn;
	if (__builtin_expect(fn != NULL, 0))
		*cookie = call->cookie;
	return fn;
}

static inline __attribute__((always_inline)) unsigned sections_word(void)
{
	unsigned sections;
	__asm__ volatile("movl %%gs:%c1, %0" : "=r"(sections) : "i"(CPU_FIELD(jp_sections)));
	return sections;
}

/* Enters a section; nested: inside the call of a _NOSLEEP join point, whose
 * section (and its barrier) already covers this one. */
static inline __attribute__((always_inline)) void section_enter(bool nested)
{
	if (nested)
		__asm__ volatile("incl %%gs:%c0\n\t"
				 "subl %2, %%gs:%c1"
				 :
				 : "i"(CPU_FIELD(preempt_count)), "i"(CPU_FIELD(jp_sections)),
				   "i"(JP_SECTION_CALLING)
				 : "memory", "cc");
	else
		__asm__ volatile("incl %%gs:%c0\n\t"
				 "lock btsl $0, %%gs:%c1"
				 :
				 : "i"(CPU_FIELD(preempt_count)), "i"(CPU_FIELD(jp_sections))
				 : "memory", "cc");
}

/* A reschedule asked for inside a section: let preempt_enable act on it. */
__attribute__((cold)) void jp_resched_after_section(void)
{
	if (this_cpu()->preempt_count == 0) {
		preempt_disable();
		preempt_enable();
	}
}

/* Outermost: INSIDE (01) + 3 clears both bits and carries into the count;
 * nested: + CALLING gives the outer call its bit back. */
static inline __attribute__((always_inline)) void section_leave(bool nested)
{
	if (jp_section_leave_by(nested ? JP_SECTION_CALLING
				       : JP_SECTION_INSIDE + JP_SECTION_CALLING))
		jp_resched_after_section();
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

/* Fills in where the call runs and runs the before calls of list; returns
 * the generation of the list, or 0 when there is no after call to make.  An
 * outermost call's section is already entered (jp_dispatch), and list was
 * loaded in it; a nested call's list, loaded before its section, is held by
 * the section of the call around it (see run_after). */
static inline __attribute__((always_inline)) uint64_t
run_before(struct jp_deferrable_call *call, bool nested, const struct jp_list *list)
{
	struct jp_context *context = &call->context;
	if (nested)
		section_enter(true);
	context->cpu = this_cpu_read(id);
	context->thread = this_cpu_read(current);
	deferral_open(call, deferral_wanted(list, nested));
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
	void *cookie = NULL;
	jp_advice_fn deferred = deferral_close(call, !nested && list, &cookie);
	section_leave(nested);
	if (__builtin_expect(deferred != NULL, 0))
		deferred(context, cookie);
	return generation;
}

/* A nested call runs inside the section of the _NOSLEEP call around it, which
 * spans this whole call: the list its before calls came from cannot be freed
 * until that section ends, so its after calls come from the same list, and an
 * advice detached meanwhile still gets the after call of a before it had.
 * (An outermost call has left its section during the call and must reload.) */
static inline __attribute__((always_inline)) void run_after(struct jp_deferrable_call *call,
							    uint64_t generation, bool nested,
							    const struct jp_list *before_list)
{
	struct jp_context *context = &call->context;
	section_enter(nested);
	context->cpu = this_cpu_read(id); /* the call may have slept and moved */
	const struct jp_list *list = nested ? before_list : load_list(context->joinpoint);
	deferral_open(call, deferral_wanted(list, nested));
	if (__builtin_expect(list && list->generation == generation, 1)) {
		list->after[0].fn(context, list->after[0].cookie);
		if (__builtin_expect(list->after_count > 1, 0))
			run_more_after(list, context);
	} else {
		run_after_checked(list, context, generation);
	}
	void *cookie = NULL;
	jp_advice_fn deferred = deferral_close(call, !nested && list, &cookie);
	section_leave(nested);
	if (__builtin_expect(deferred != NULL, 0))
		deferred(context, cookie);
}

/* The dispatcher's body, for an outermost or a nested call (a constant once
 * inlined), with the list its caller loaded (once a call). */
static inline __attribute__((always_inline)) uint64_t
dispatch(const struct joinpoint *jp, uint64_t *args, bool nested, const struct jp_list *list)
{
	/* Field by field, ret only once known: an initializer would zero the
	 * whole struct first, on every call. */
	struct jp_deferrable_call call;
	struct jp_context *context = &call.context;
	context->joinpoint = jp;
	context->args = args;
	context->activity = 0;
	context->entry_tsc = 0;
	context->exit_tsc = 0;
	uint64_t generation = run_before(&call, nested, list);
	context->ret = jp->call(context->args);
	if (generation) {
		if (__builtin_expect(context->entry_tsc != 0, 0))
			stamp(&context->exit_tsc);
		run_after(&call, generation, nested, list);
	}
	return context->ret;
}

/* This CPU is inside a section: in advice (skip) or in the call of a
 * _NOSLEEP join point (nest). */
static __attribute__((noinline, cold)) uint64_t dispatch_inside(const struct joinpoint *jp,
								uint64_t *args)
{
	unsigned bits = sections_word() & (JP_SECTION_INSIDE | JP_SECTION_CALLING);
	if (bits == JP_SECTION_INSIDE)
		return call_skipped(jp, args);
	/* The outer call's section holds the list (see run_after). */
	const struct jp_list *list = load_list(jp);
	if (list && list->nested_call) {
		section_enter(true);
		uint64_t ret = list->nested_call(&list->fast, args);
		section_leave(true);
		return ret;
	}
	return dispatch(jp, args, true, list);
}

/* A list whose one entry is native advice (JP_ADVICE_NATIVE): its before,
 * the call and its after, in the same two sections as dispatch() (the first
 * one entered by the caller), without naming its call for deferral (a native advice
 * never defers: jp_defer finds its call not named and says -EWOULDBLOCK) and
 * without timestamps. */
static __attribute__((noinline)) uint64_t
dispatch_native(const struct joinpoint *jp, uint64_t *args, const struct jp_list *list)
{
	struct jp_context context;
	struct cpu *cpu = this_cpu();
	context.joinpoint = jp;
	context.args = args;
	context.activity = 0;
	context.entry_tsc = 0;
	context.exit_tsc = 0;
	context.cpu = cpu->id;
	context.thread = cpu->current;
	uint64_t generation = list->generation;
	list->before[0].fn(&context, list->before[0].cookie);
	section_leave(false);
	context.ret = jp->call(args);
	section_enter(false);
	context.cpu = this_cpu_read(id);
	list = load_list(jp);
	if (__builtin_expect(list && list->generation == generation, 1))
		list->after[0].fn(&context, list->after[0].cookie);
	else
		run_after_checked(list, &context, generation);
	section_leave(false);
	return context.ret;
}

/* The flag first, on its own: the count is read only for a list that has
 * native advice. */
static inline bool only_native(const struct jp_list *list)
{
	return __builtin_expect(list->flags & JP_ADVICE_NATIVE, 0) && list->count == 1;
}

/* No list: detached since the site jumped.  Apart, so that the outermost
 * dispatch (dispatch_list) knows it has a list. */
static __attribute__((noinline, cold)) uint64_t dispatch_detached(const struct joinpoint *jp,
								  uint64_t *args)
{
	return dispatch(jp, args, false, NULL);
}

/* Every list but one with an around (list not NULL), in the section
 * jp_dispatch entered: out of line, so that the around's path saves no
 * registers. */
static __attribute__((noinline)) uint64_t dispatch_list(const struct joinpoint *jp, uint64_t *args,
							const struct jp_list *list)
{
	if (only_native(list))
		return dispatch_native(jp, args, list);
	return dispatch(jp, args, false, list);
}

/* Enters an outermost section, or, when this CPU is inside one already,
 * changes nothing and says so: the locked bit set is the test (the
 * trampoline's jp_enterN does the same). */
static inline __attribute__((always_inline)) bool section_enter_unless_inside(void)
{
	__asm__ goto("incl %%gs:%c0\n\t"
		     "lock btsl $0, %%gs:%c1\n\t"
		     "jc %l[inside]"
		     :
		     : "i"(CPU_FIELD(preempt_count)), "i"(CPU_FIELD(jp_sections))
		     : "memory", "cc"
		     : inside);
	return false;
inside: /* the section held keeps preemption off: no need_resched test */
	__asm__ volatile("decl %%gs:%c0" ::"i"(CPU_FIELD(preempt_count)) : "memory", "cc");
	return true;
}

/* Sibling calls on (the kernel is built without them): the around, or the
 * rest, is jumped to.  The section is entered first and the list loaded
 * once in it: an around (set only for an advice alone on a join point that
 * may sleep, advice.c) gets it as its third argument and leaves the
 * section itself. */
__attribute__((optimize("optimize-sibling-calls"))) uint64_t jp_dispatch(const struct joinpoint *jp,
									 uint64_t *args)
{
	if (__builtin_expect(section_enter_unless_inside(), 0))
		return dispatch_inside(jp, args);
	const struct jp_list *list = load_list(jp);
	if (__builtin_expect(!list, 0))
		return dispatch_detached(jp, args);
	if (list->around)
		return list->around(jp, args, &list->fast);
	return dispatch_list(jp, args, list);
}
