/*
 * Trace points: the kernel's own events (scheduling, interrupts, system
 * calls, page faults, process lifecycle, user marks) written into the trace
 * stream, one telemetry channel of per-CPU rings whose records are the events
 * of uapi/trace.h.  Off, a trace point costs one load and a branch not taken;
 * on, one compact record in the ring of the CPU it runs on.  kernel/trace
 * turns the stream on and off (with the join points it records) and carries
 * it out of the OS; this part sits low so that every layer may emit.
 *
 *     struct trace_irq event = {.vector = vector};
 *     tracepoint(TRACE_IRQ_ENTRY, &event, sizeof event);
 */
#ifndef KERNEL_TELEMETRY_TRACEPOINT_H
#define KERNEL_TELEMETRY_TRACEPOINT_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "telemetry/telemetry.h"
#include "uapi/trace.h"

/* The channel trace points write into; NULL while the stream is off. */
extern struct tel_channel *tracepoint_channel;
/* The channel of a stacks-only trace (the trace map's user stacks, the
 * system calls they belong to and the names of the programs they are in,
 * nothing else), NULL otherwise; tracepoint_channel is then NULL, so the
 * kernel's other events cost what they cost with no trace. */
extern struct tel_channel *tracepoint_stacks_channel;

/* Writes one event stamped time into this CPU's ring of the stream, unless
 * no trace runs or the running thread is left out (false then, or when the
 * ring was full); interrupts must be off
 * (they make the writer the ring's one producer), as they are where the
 * scheduler switches and wakes threads.  A full ring counts a drop.  In line,
 * so that a constant type and length fold the checks and unroll the copy. */
static inline __attribute__((always_inline)) bool
tracepoint_record_irqs_off(uint16_t type, uint64_t time, const void *payload, uint32_t length)
{
	struct tel_ring *ring = this_cpu_trace_ring();
	uint64_t end;
	uint64_t *out = ring ? tel_ring_reserve_end(ring, type, time, length, &end) : 0;
	if (out) {
		const uint8_t *from = payload;
		for (uint32_t i = 0; i < length / 8; i++)
			out[i] = ((const uint64_t *)from)[i];
		/* The stream's channel is kernel-only: no mirror.  A payload that
		 * stops short of its last word (a user mark's text) is noted, so
		 * that the packet it ends says where its content ends; the test
		 * is the copy's own, and folds away for a constant length. */
		if (__builtin_expect(length & 7, 0)) {
			uint64_t last = 0;
			__builtin_memcpy(&last, from + (length & ~7u), length & 7);
			out[length / 8] = last;
			tel_ring_publish_short_unshared(ring, end, tel_payload_end(end, length));
		} else {
			tel_ring_publish_unshared(ring, end);
		}
	}
	return out != 0;
}

/* tracepoint_record_irqs_off in any context: interrupts are held off from
 * picking the ring to the commit. */
static inline __attribute__((always_inline)) void
tracepoint_record(uint16_t type, uint64_t time, const void *payload, uint32_t length)
{
	uint64_t flags = irq_save();
	tracepoint_record_irqs_off(type, time, payload, length);
	irq_restore(flags);
}

/* tracepoint_record where interrupts are known to be on (a system call,
 * which may sleep): held off for the write without saving the flag. */
static inline __attribute__((always_inline)) void
tracepoint_record_irqs_on(uint16_t type, uint64_t time, const void *payload, uint32_t length)
{
	irq_disable();
	tracepoint_record_irqs_off(type, time, payload, length);
	irq_enable();
}

/* tracepoint_record now, out of line (for rare events and long payloads). */
void tracepoint_write(uint16_t type, const void *payload, uint32_t length);

/* Does a trace run?  One compare with the channel's word (mem_eq): the
 * system-call entry asks it with the other watchers' at every call. */
static inline bool tracepoint_on(void)
{
	return __builtin_expect(!mem_eq(&tracepoint_channel, NULL), 0);
}

/* Does a stacks-only trace run? */
static inline bool tracepoint_stacks_on(void)
{
	return __builtin_expect(!mem_eq(&tracepoint_stacks_channel, NULL), 0);
}

/* An event now, if a trace runs: one load and a branch when none does. */
static inline __attribute__((always_inline)) void tracepoint(uint16_t type, const void *payload,
							     uint32_t length)
{
	if (tracepoint_on())
		tracepoint_record(type, rdtsc(), payload, length);
}

enum tracepoint_scope {
	TRACEPOINT_ALL_EVENTS, /* every trace point (tracepoint_on) */
	TRACEPOINT_STACKS_ONLY, /* the trace map's stacks and their system calls (tracepoint_stacks_on) */
};

/* Points trace points at channel (NULL: off) for scope, and each CPU at its
 * ring.  Writers that saw the old value may still finish a record into it:
 * the channel must outlive them (kernel/trace keeps its channel for good,
 * and waits a grace period after turning it off). */
void tracepoint_set_channel(struct tel_channel *channel, enum tracepoint_scope scope);

#endif
