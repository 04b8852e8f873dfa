/*
 * The built-in recorder: advice that writes a join point's events into the
 * trace stream without an aspect.  A join point that may sleep gets an
 * entry record (its first argument) and an exit record (its return value),
 * 16 bytes each; one that cannot sleep gets a single call record at its exit
 * (first argument, low 32 bits of the result, duration: 24 bytes, where two
 * records would take 32), stamped at the exit so the ring's times never go
 * back.  The recorder writes in place with tracepoint_record: reserve, fill,
 * commit, with interrupts held off.  Where it is the only advice on a
 * _NOSLEEP join point, the trampoline runs record_fast.c's code instead,
 * which writes the same call record without a context or an advice call;
 * alone on a join point that may sleep, the dispatcher runs record_fast.c's
 * whole-call path (the same entry and exit records, in line).
 */
#include "trace/internal.h"

#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "joinpoint/joinpoint.h"
#include "telemetry/telemetry.h"
#include "telemetry/tracepoint.h"

extern const struct joinpoint __joinpoints_start[];

/* The join point's events, by its place in the registry (jp_index in line:
 * the recorder runs on every recorded call). */
static inline uint16_t event_of(const struct joinpoint *jp, enum trace_jp_kind kind)
{
	return (uint16_t)TRACE_JP_EVENT(jp - __joinpoints_start, kind);
}

static uint64_t first_argument(const struct jp_context *context)
{
	return context->joinpoint->argc ? context->args[0] : 0;
}

/* One record of one word (in line: the around path writes two per call). */
static inline __attribute__((always_inline)) void write_word(uint16_t type, uint64_t word)
{
	tracepoint_record(type, rdtsc(), &word, 8);
}

static inline __attribute__((always_inline)) void write_entry(const struct joinpoint *jp,
							      uint16_t type, uint64_t argument)
{
	write_word(type, argument);
	if (this_cpu_user_stacks()) /* a traced process's stack follows its entry record */
		uscope_record_joinpoint_stack(jp->name);
}

static void write_exit(const struct joinpoint *jp, uint64_t result)
{
	write_word(event_of(jp, TRACE_JP_EXIT), result);
}

static void record_entry(struct jp_context *context, void *cookie)
{
	write_entry(context->joinpoint, event_of(context->joinpoint, TRACE_JP_ENTRY),
		    first_argument(context));
}

static void record_exit(struct jp_context *context, void *cookie)
{
	write_exit(context->joinpoint, context->ret);
}

/* trace_record_whole_call's (record_fast.c) ways out to C: the entry record
 * in the dispatcher's section, and the exit record after the call, which
 * hands back the call's result. */
void trace_record_entry_slow(const struct joinpoint *jp, uint64_t argument)
{
	write_entry(jp, event_of(jp, TRACE_JP_ENTRY), argument);
}

uint64_t trace_record_exit_slow(unsigned type, uint64_t result)
{
	write_word((uint16_t)type, result);
	return result;
}

/* The call's start, in the context (not JP_ADVICE_TIMESTAMPS: the fast
 * path has no shape with timestamps, and this is one instruction). */
static void stamp_entry(struct jp_context *context, void *cookie)
{
	context->entry_tsc = rdtsc();
}

void trace_record_call_slow(unsigned index, uint64_t entry_tsc, uint64_t argument, uint64_t result)
{
	uint64_t now = rdtsc(), duration = now - entry_tsc;
	uint64_t words[2] = {argument, (uint32_t)result |
					   (duration > UINT32_MAX ? UINT32_MAX : duration) << 32};
	tracepoint_record((uint16_t)TRACE_JP_EVENT(index, TRACE_JP_CALL), now, words, sizeof words);
	if (this_cpu()->user_stacks) /* a traced process's stack follows its call record */
		uscope_record_joinpoint_stack(__joinpoints_start[index].name);
}

static void record_call(struct jp_context *context, void *cookie)
{
	trace_record_call_slow((unsigned)(context->joinpoint - __joinpoints_start),
			       context->entry_tsc, first_argument(context), context->ret);
}
_Static_assert(sizeof(struct trace_jp_call) == 16, "a call record is two words: argument, "
						   "then result and duration");

bool trace_may_sleep(const struct joinpoint *jp)
{
	return jp->may_sleep;
}

bool trace_cannot_sleep(const struct joinpoint *jp)
{
	return !jp->may_sleep;
}

/* Native advice (joinpoint.h): kernel code for good, no sleep, no deferral,
 * its own timestamps, so a join point that may sleep and has only it skips
 * the dispatcher's deferral slot. */
const struct jp_advice trace_record_sleeping = {.name = "trace",
						.before = record_entry,
						.after = record_exit,
						.around = trace_record_whole_call,
						.fast_word = trace_entry_header,
						.priority = -100,
						.flags = JP_ADVICE_NATIVE};
/* record_fast.c: the same call record, written by the trampoline's own code
 * where the recorder is alone on its join point. */
extern const char trace_record_fast0[], trace_record_fast1[];

const struct jp_advice trace_record_nosleep = {
    .name = "trace",
    .before = stamp_entry,
    .after = record_call,
    .priority = -100,
    .fast_path = {trace_record_fast0, trace_record_fast1},
    .fast_word = trace_call_header};
