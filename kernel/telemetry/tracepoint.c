/*
 * The write side of trace points (tracepoint.h): the stream's channel, and one
 * record into this CPU's ring, stamped with the TSC, with interrupts held off
 * from picking the ring to the commit (the ring's one producer).
 */
#include "telemetry/tracepoint.h"

#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "lib/string.h"
#include "telemetry/telemetry.h"

struct tel_channel *tracepoint_channel;

void tracepoint_write(uint16_t type, const void *payload, uint32_t length)
{
	if (this_cpu()->untraced)
		return;
	uint64_t flags = irq_save();
	struct tel_channel *channel = __atomic_load_n(&tracepoint_channel, __ATOMIC_ACQUIRE);
	struct tel_ring *ring = channel ? tel_channel_this_ring(channel) : NULL;
	void *record = ring ? tel_ring_reserve(ring, type, rdtsc(), length) : NULL;
	if (record) {
		memcpy(record, payload, length);
		tel_ring_commit(ring);
	}
	irq_restore(flags);
}

void tracepoint_set_channel(struct tel_channel *channel)
{
	__atomic_store_n(&tracepoint_channel, channel, __ATOMIC_RELEASE);
}
