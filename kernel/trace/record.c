/*
 * The built-in recorder: advice that writes a join point's events into the
 * trace stream without an aspect.  A join point that may sleep gets an
 * entry record (its first argument) and an exit record (its return value),
 * 16 bytes each; one that cannot sleep gets a single call record at its exit
 * (first argument, low 32 bits of the result, duration: 24 bytes, where two
 * records would take 32), stamped at the exit so the ring's times never go
 * back.  The recorder writes in place: reserve, fill, commit, with
 * interrupts held off (the advice already runs with preemption off).
 */
#include "trace/internal.h"

#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "joinpoint/joinpoint.h"
#include "telemetry/telemetry.h"
#include "telemetry/tracepoint.h"

static inline __attribute__((always_inline)) void record(uint16_t type, uint64_t time,
							 const void *payload, uint32_t length)
{
	struct tel_channel *channel = __atomic_load_n(&tracepoint_channel, __ATOMIC_RELAXED);
	if (!channel || this_cpu()->untraced)
		return;
	uint64_t flags = irq_save();
	struct tel_ring *ring = tel_channel_this_ring(channel);
	uint64_t *words = ring ? tel_ring_reserve(ring, type, time, length) : NULL;
	if (words) {
		const uint64_t *from = payload;
		for (uint32_t i = 0; i < length / 8; i++)
			words[i] = from[i];
		tel_ring_commit(ring);
	}
	irq_restore(flags);
}

static uint64_t first_argument(const struct jp_context *context)
{
	return context->joinpoint->argc ? context->args[0] : 0;
}

static void record_entry(struct jp_context *context, void *cookie)
{
	const struct joinpoint *jp = context->joinpoint;
	if (!jp->may_sleep)
		return; /* one call record at the exit */
	uint64_t argument = first_argument(context);
	record(TRACE_JP_EVENT(jp_index(jp), TRACE_JP_ENTRY), context->entry_tsc, &argument,
	       sizeof argument);
}

static void record_exit(struct jp_context *context, void *cookie)
{
	const struct joinpoint *jp = context->joinpoint;
	if (jp->may_sleep) {
		uint64_t result = context->ret;
		record(TRACE_JP_EVENT(jp_index(jp), TRACE_JP_EXIT), context->exit_tsc, &result,
		       sizeof result);
		return;
	}
	uint64_t duration = context->exit_tsc - context->entry_tsc;
	struct trace_jp_call call = {.arg0 = first_argument(context),
				     .result = (int32_t)context->ret,
				     .duration = duration > UINT32_MAX ? UINT32_MAX
								       : (uint32_t)duration};
	record(TRACE_JP_EVENT(jp_index(jp), TRACE_JP_CALL), context->exit_tsc, &call, sizeof call);
}

/* One advice for both kinds (jp_attach takes a pattern, and a pattern mixes
 * them); it runs before everything else and after everything else. */
const struct jp_advice trace_recorder = {.name = "trace",
					 .before = record_entry,
					 .after = record_exit,
					 .priority = -100,
					 .flags = JP_ADVICE_TIMESTAMPS};
