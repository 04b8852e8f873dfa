/*
 * The dispatcher: the one out-of-line path every enabled join point jumps to.
 * It builds the context on the stack, runs `before` advice in list order, the
 * real function, then `after` advice in reverse order.
 *
 * Advice runs in two short reader sections (grace.c), one per side, with
 * preemption off and this CPU's recursion guard raised, never across the
 * call itself: a call may sleep or block for long, and detaching advice must
 * not wait for it.  The list may change during the call, so `after` runs only
 * for entries attached no later than the list `before` used (entry->since <=
 * that list's generation): advice attached mid-call never sees an `after`
 * without its `before`.  Advice detached mid-call misses that call's `after`.
 *
 * A join point reached while this CPU runs advice (the advice called a module
 * API, or an interrupt came in during advice) calls the function directly and
 * is counted in its state's skipped.
 */
#include "joinpoint/internal.h"

#include "arch/x86_64/cpu.h"
#include "cpu/spinlock.h"

/* Enters a reader section on cpu (grace.c): the locked add orders the
 * list load after it. */
static inline struct jp_cpu_state *reader_enter(struct cpu *cpu)
{
	struct jp_cpu_state *state = &jp_cpus[cpu->id];
	cpu->preempt_count++;
	cpu->jp_nesting++;
	__atomic_fetch_add(&state->sections, 1, __ATOMIC_SEQ_CST);
	return state;
}

static inline void reader_leave(struct cpu *cpu, struct jp_cpu_state *state)
{
	__atomic_store_n(&state->sections, state->sections + 1, __ATOMIC_RELEASE);
	cpu->jp_nesting--;
	cpu->preempt_count--;
	__asm__ volatile("" : : : "memory");
	/* A reschedule asked for while advice ran: let preempt_enable act on it. */
	if (__builtin_expect(cpu->need_resched && cpu->preempt_count == 0, 0)) {
		preempt_disable();
		preempt_enable();
	}
}

/* Runs before advice; returns the generation of the list used, 0 if none. */
static inline uint64_t run_before(struct jp_context *context, struct cpu *cpu)
{
	struct jp_cpu_state *state = reader_enter(cpu);
	const struct jp_list *list =
	    __atomic_load_n(&context->joinpoint->state->list, __ATOMIC_ACQUIRE);
	uint64_t generation = 0;
	if (list) {
		generation = list->generation;
		for (unsigned i = 0; i < list->count; i++) {
			const struct jp_entry *entry = &list->entries[i];
			if (entry->before)
				entry->before(context, entry->cookie);
		}
	}
	reader_leave(cpu, state);
	return generation;
}

static inline void run_after(struct jp_context *context, struct cpu *cpu, uint64_t generation)
{
	struct jp_cpu_state *state = reader_enter(cpu);
	const struct jp_list *list =
	    __atomic_load_n(&context->joinpoint->state->list, __ATOMIC_ACQUIRE);
	for (unsigned i = jp_list_length(list); i-- > 0;) {
		const struct jp_entry *entry = &list->entries[i];
		if (entry->after && entry->since <= generation)
			entry->after(context, entry->cookie);
	}
	reader_leave(cpu, state);
}

uint64_t jp_dispatch(const struct joinpoint *jp, uint64_t *args)
{
	struct cpu *cpu = this_cpu();
	if (cpu->jp_nesting) {
		__atomic_fetch_add(&jp->state->skipped, 1, __ATOMIC_RELAXED);
		return jp->call(args);
	}

	/* Field by field, ret and exit_tsc only once known: an initializer
	 * would zero the whole struct first, on every call. */
	struct jp_context context;
	context.joinpoint = jp;
	context.args = args;
	context.entry_tsc = rdtsc();
	context.cpu = cpu->id;
	context.thread = cpu->current;
	context.activity = 0;
	uint64_t generation = run_before(&context, cpu);
	context.ret = jp->call(context.args);
	context.exit_tsc = rdtsc();
	if (generation)
		run_after(&context, this_cpu(), generation);
	return context.ret;
}
