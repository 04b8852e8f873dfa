/*
 * A traced process's system call in a trace of stacks alone, the usual case
 * in line in the system call's path (syscall.c): the stack is one this CPU
 * sent before (stack_memo.h: the same registers, every word its walk read
 * unchanged), and the call's whole record is one syscall_stack naming it.
 * In line because the call into uscope and the frames around it cost as much
 * as the memo's key; uscope.c owns the state read here and does everything
 * else (uscope_record_syscall).
 */
#ifndef KERNEL_TRACE_USCOPE_SYSCALL_H
#define KERNEL_TRACE_USCOPE_SYSCALL_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/trapframe.h"
#include "cpu/percpu.h"
#include "mm/mm.h"
#include "telemetry/telemetry.h"
#include "telemetry/tracepoint.h"
#include "trace/stack_memo.h"
#include "trace/trace.h"
#include "uapi/trace.h"

/* Per slot of the trace map, indexed by the CPU's byte (no bound test): the
 * memo's key config (stack_memo_config) for its entry's stacks when the entry
 * wants every system call's ("*"), the stream takes references and every
 * CPU has its memo (cpu->stack_memo); 0 when not (unused, a pattern to
 * match by name, no stream, or a flight recorder). */
extern uint64_t uscope_call_config[UINT8_MAX + 1];

/* One record into this CPU's ring of the stream (interrupts are off):
 * false when none runs or the ring is full (a drop, counted). */
static inline __attribute__((always_inline)) bool
uscope_put_record(uint16_t type, const void *payload, uint32_t length)
{
	return tracepoint_record_irqs_off(type, rdtsc(), payload, length);
}

/* A system call's entry and the reference to its stack, as one record. */
static inline __attribute__((always_inline)) void
uscope_put_syscall_stack(struct trace_user_stack_ref ref, int64_t number, uint64_t arg0)
{
	struct trace_syscall_stack both = {
	    .number = number, .arg0 = arg0, .tid = ref.tid, .id = ref.id};
	uscope_put_record(TRACE_SYSCALL_STACK, &both, sizeof both);
}

/* The usual case of uscope_record_syscall, first: when slot's entry (the
 * caller's slot in the trace map, this_cpu_user_stacks: a byte) wants every system
 * call's stack and this CPU sent this one before (the memo has it, from the
 * registers the call entered with), writes its syscall_stack record and
 * returns true; false: uscope_record_syscall is to do it.  Interrupts on (a
 * system call), held off meanwhile: the memo is the CPU's alone. */
static inline __attribute__((always_inline)) bool uscope_syscall_sent(int64_t number, uint64_t arg0,
								      unsigned slot)
{
	_Static_assert(sizeof(((struct cpu *)0)->user_stacks) == 1, "slot: a byte");
	if (!__atomic_load_n(&uscope_call_config[slot], __ATOMIC_RELAXED))
		return false;
	irq_disable();
	/* Read again with interrupts off: a trace that restarted while this
	 * thread was preempted above has a new epoch in the config, and the
	 * memo's entries of the old stream must not match. */
	uint64_t config = __atomic_load_n(&uscope_call_config[slot], __ATOMIC_ACQUIRE);
	if (!config) {
		irq_enable();
		return false;
	}
	struct cpu *cpu = this_cpu();
	const struct trap_frame *user = (const struct trap_frame *)cpu->syscall_stack - 1;
	struct stack_memo_key key = {.rip = user->rip,
				     .rsp = user->rsp,
				     .rbp = user->rbp,
				     .space = vm_process_space_stamp(cpu),
				     .config = config,
				     .thread = cpu->current};
	const struct stack_memo_entry *sent = stack_memo_find(cpu->stack_memo, &key);
	if (sent)
		uscope_put_syscall_stack(sent->ref, number, arg0);
	irq_enable();
	return sent != NULL;
}

#endif
