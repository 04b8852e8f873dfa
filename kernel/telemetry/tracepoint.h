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

#include "uapi/trace.h"

struct tel_channel;

/* The channel trace points write into; NULL while the stream is off. */
extern struct tel_channel *tracepoint_channel;

/* Writes one event into this CPU's ring of the stream (any context:
 * interrupts are held off for the write).  A full ring counts a drop. */
void tracepoint_write(uint16_t type, const void *payload, uint32_t length);

static inline bool tracepoint_on(void)
{
	return __builtin_expect(__atomic_load_n(&tracepoint_channel, __ATOMIC_RELAXED) != 0, 0);
}

static inline void tracepoint(uint16_t type, const void *payload, uint32_t length)
{
	if (tracepoint_on())
		tracepoint_write(type, payload, length);
}

/* Points trace points at channel (NULL: off).  Writers that saw the old
 * value may still finish a record into it: the channel must outlive them
 * (kernel/trace keeps its channel for good). */
void tracepoint_set_channel(struct tel_channel *channel);

#endif
