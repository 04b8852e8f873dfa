/*
 * The write side of trace points (tracepoint.h): the stream's channel, and one
 * record into this CPU's ring (struct cpu points at it while a trace runs),
 * stamped with the TSC, with interrupts held off from picking the ring to
 * the commit (the ring's one producer).  The reserve and the copy are in
 * line: a trace point on a hot path costs tens of instructions.
 */
#include "telemetry/tracepoint.h"

#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "lib/string.h"
#include "smp/smp.h"
#include "telemetry/telemetry.h"

struct tel_channel *tracepoint_channel;
struct tel_channel *tracepoint_stacks_channel;

void tracepoint_write(uint16_t type, const void *payload, uint32_t length)
{
	tracepoint_record(type, rdtsc(), payload, length);
}

/* On each CPU, with interrupts off: its running thread's ring from the new
 * stream ring (a switch at the same moment reads the new one as well). */
static void refresh_trace_ring(void *unused)
{
	struct cpu *cpu = this_cpu();
	cpu_set_untraced(cpu, cpu->untraced);
}

void tracepoint_set_channel(struct tel_channel *channel, enum tracepoint_scope scope)
{
	for (unsigned i = 0; i < cpu_count; i++)
		__atomic_store_n(&cpus[i].stream_ring,
				 channel ? tel_channel_ring(channel, i) : NULL, __ATOMIC_RELEASE);
	uint64_t flags = irq_save(); /* this CPU first: before smp_init no call reaches it */
	refresh_trace_ring(NULL);
	irq_restore(flags);
	smp_call_all(refresh_trace_ring, NULL);
	__atomic_store_n(&tracepoint_stacks_channel,
			 scope == TRACEPOINT_STACKS_ONLY ? channel : NULL, __ATOMIC_RELEASE);
	__atomic_store_n(&tracepoint_channel, scope == TRACEPOINT_ALL_EVENTS ? channel : NULL,
			 __ATOMIC_RELEASE);
}
