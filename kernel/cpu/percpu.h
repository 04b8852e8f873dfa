/*
 * Per-CPU data.  Each CPU has one struct cpu, reached through the GS base in
 * one instruction (this_cpu()).  The first field points to the struct itself
 * so "mov %gs:0" yields its address.  Fields that assembly reads (syscall entry)
 * have fixed offsets, checked by static assertions in percpu.c.
 *
 *     struct cpu *c = this_cpu();
 *     c->stats.context_switches++;
 */
#ifndef KERNEL_CPU_PERCPU_H
#define KERNEL_CPU_PERCPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86_64/cpu.h"

#define MAX_CPUS 64

struct thread;

struct cpu_stats {
	uint64_t busy_ns;
	uint64_t idle_ns;
	uint64_t irq_ns;
	uint64_t context_switches;
	uint64_t interrupts;
	uint64_t direct_switches; /* of context_switches: the hand-off's fast path (sched) */
	uint64_t sleeps_ended_between_ticks; /* by the run queue's one-shot (sched) */
};

struct tel_ring;
struct process;
struct address_space;
struct stack_memo;
struct jp_context;

struct cpu {
	struct cpu *self;          /* offset 0: this_cpu() reads it */
	uint64_t syscall_stack;    /* offset 8: kernel stack top for SYSCALL */
	uint64_t user_stack_saved; /* offset 16: user RSP across SYSCALL entry */
	uint32_t id;               /* dense index, 0 = boot CPU */
	uint32_t apic_id;
	struct thread *current;
	struct thread *idle_thread;
	int preempt_count;            /* > 0: no involuntary switch */
	int irq_depth;                /* nesting of interrupt handlers */
	int need_resched;             /* set by the tick or a wake-up, acted on at exit */
	bool untraced;                /* the running thread's events stay out of the trace stream */
	uint8_t user_stacks;          /* the running thread's process's slot in the trace map (its
			      * user stacks go with its events), 0: not in it */
	struct tel_ring *stream_ring; /* this CPU's ring of the trace stream while a trace runs */
	struct tel_ring *trace_ring;  /* where its events go now: stream_ring, NULL if untraced */
	struct tel_ring *fast_ring;   /* trace_ring, but NULL for a thread with user stacks: the
				       * recorder's fast path writes here, else goes to C */
	struct stack_memo *stack_memo; /* the user stacks this CPU sent (kernel/trace), or NULL */
	unsigned jp_sections;          /* join points: odd while running advice (guard, grace) */
	/* join points: the context of the outermost call whose advice runs
	 * now and may defer (joinpoint/defer.h), NULL: none */
	struct jp_context *jp_deferring;
	void *acct; /* the running thread's kernel/acct state (thread_acct_state), for the
		     * accounting's advice to test with one load */
	struct process *process; /* the running thread's process, NULL: a kernel thread (set
				  * by sched at every switch; proc_current reads it) */
	struct address_space *loaded_space; /* what CR3 holds (mm's vm_space_activate sets it): a
					     * kernel thread runs in whatever is loaded */
	uint64_t quiescent_generation; /* grace periods: quiescent points passed (smp/grace.c) */
	void *arch;                    /* GDT/TSS and stacks, owned by arch code */
	void *sched;                   /* run queue, owned by sched */
	struct cpu_stats stats;
	/* system calls the latency tracker's quiet path counted on this CPU
	 * (lattrack/lattrack.h): one instruction, %gs-relative, no lock */
	uint64_t syscall_quiet_spans;
	/* when this CPU's next tick is due (time/timer.c writes it in the timer
	 * interrupt; the scheduler reads it to tell a sleep shorter than that) */
	uint64_t next_tick_ns;
};

extern struct cpu cpus[MAX_CPUS];

/* Marks the thread running on cpu (the calling CPU, interrupts off) as left
 * out of the trace stream or not; trace points and the join-point recorder
 * then test one pointer.  Both setters keep trace_ring = (untraced ? NULL :
 * stream_ring) and fast_ring = (user_stacks ? NULL : trace_ring), and only
 * this CPU writes the two: while no trace runs here and none is left to
 * clear (stream_ring and trace_ring NULL), both stay NULL whatever the
 * flags, and a switch (which calls both) stores the flags alone.  Another
 * CPU that sets stream_ring meanwhile refreshes this one's rings after it
 * (tracepoint_set_channel). */
static inline void cpu_set_untraced(struct cpu *cpu, bool untraced)
{
	cpu->untraced = untraced;
	/* one OR and one branch for the two pointers */
	if (__builtin_expect(!((uintptr_t)cpu->stream_ring | (uintptr_t)cpu->trace_ring), 1))
		return;
	/* the rare path reads the rings again: kept for it, the test's operand
	 * cost a register copy at every switch */
	__asm__ volatile("" : : : "memory");
	cpu->trace_ring = untraced ? NULL : cpu->stream_ring;
	cpu->fast_ring = cpu->user_stacks ? NULL : cpu->trace_ring;
}

/* Marks the thread running on cpu (the calling CPU, interrupts off) as one
 * whose user stacks the trace map wants (slot: its process's entry) or not
 * (0).  fast_ring is NULL already when trace_ring is (cpu_set_untraced). */
static inline void cpu_set_user_stacks(struct cpu *cpu, unsigned slot)
{
	cpu->user_stacks = (uint8_t)slot;
	if (__builtin_expect(!cpu->trace_ring, 1))
		return;
	/* read again on the rare path: the common one is a compare with
	 * memory, not a load and a test */
	__asm__ volatile("" : : : "memory");
	cpu->fast_ring = slot ? NULL : cpu->trace_ring;
}
extern unsigned cpu_count;

static inline struct cpu *this_cpu(void)
{
	struct cpu *cpu;
	__asm__ volatile("mov %%gs:0, %0" : "=r"(cpu));
	return cpu;
}

/* cpu->field of the CPU this runs on, in one %gs-relative load: a thread
 * preempted and moved between a this_cpu() and the field's load would read
 * another CPU's; this cannot.  (The mov takes its size from the field's.) */
#define this_cpu_read(field)                                                    \
	({                                                                      \
		__typeof__(((struct cpu *)0)->field) value_;                    \
		__asm__ volatile("mov %%gs:%c1, %0"                             \
				 : "=r"(value_)                                 \
				 : "i"(__builtin_offsetof(struct cpu, field))); \
		value_;                                                         \
	})

/* cpu->field == value for the CPU this runs on, in one %gs-relative compare
 * (mem_eq on the field in the GS segment; this_cpu_read and a test is a load
 * and a compare). */
#define this_cpu_eq(field, value) mem_eq(&((__seg_gs struct cpu *)0)->field, value)

/* The running thread's process's slot in the trace map (cpu->user_stacks; 0:
 * not in it); the thread's own is set again at every switch.  this_cpu_read,
 * widened in the load itself (the system-call path uses the slot as an
 * index). */
static inline unsigned this_cpu_user_stacks(void)
{
	unsigned slot;
	__asm__ volatile("movzbl %%gs:%c1, %0"
			 : "=r"(slot)
			 : "i"(__builtin_offsetof(struct cpu, user_stacks)));
	return slot;
}

/* This CPU's cpu->trace_ring (the caller holds interrupts off, so the CPU
 * cannot change under it). */
static inline struct tel_ring *this_cpu_trace_ring(void)
{
	return this_cpu_read(trace_ring);
}

/* This CPU's dense index, in one load (this_cpu_read). */
static inline unsigned this_cpu_id(void)
{
	return this_cpu_read(id);
}

/* Points GS at cpus[index] on the calling CPU; used once per CPU at start-up. */
void percpu_install(unsigned index, uint32_t apic_id);

#endif
