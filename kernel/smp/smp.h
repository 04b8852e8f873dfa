/*
 * Working across CPUs: which CPUs are online, running a function on other
 * CPUs (smp_call, by IPI), asking a CPU to reschedule, and grace periods
 * that span every CPU (grace_synchronize, for freeing what lock-free readers
 * may still hold).
 *
 *     smp_call(smp_online_mask(), flush_one_page, &virt, SMP_CALL_WAIT);
 *     __atomic_store_n(&table, new_table, __ATOMIC_RELEASE);
 *     grace_synchronize(); kfree(old_table);  // no CPU still reads old_table
 */
#ifndef KERNEL_SMP_SMP_H
#define KERNEL_SMP_SMP_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu/percpu.h"

/* A CPU set: bit i is the CPU of dense index i (cpus[i]). */
#define SMP_CPU_BIT(index) (1ULL << (index))

/* Runs on the target CPU in interrupt context (interrupts off): short, no
 * sleeping, no smp_call of its own. */
typedef void (*smp_call_fn)(void *arg);

enum smp_call_wait {
	SMP_CALL_NOWAIT, /* return once every target has been asked */
	SMP_CALL_WAIT,   /* return once fn has returned on every target */
};

/* Sets up the IPI vectors and marks the boot CPU online.  Boot CPU, once,
 * after apic_init and sched_init. */
void smp_init(void);
/* Marks the calling CPU online: from now on it receives calls and threads.
 * For the bring-up code, on each new CPU with interrupts still off. */
void smp_set_online(void);
/* The online CPUs (smp.c sets them; read it through smp_online_mask), and
 * how many there are.  In line: the scheduler and IPC ask at every receive
 * and wake-up. */
extern uint64_t smp_online_cpus;
static inline uint64_t smp_online_mask(void)
{
	return __atomic_load_n(&smp_online_cpus, __ATOMIC_ACQUIRE);
}
unsigned smp_online_count(void);
/* True when CPU index is online. */
bool smp_cpu_online(unsigned index);

/* Runs fn(arg) on every online CPU in cpu_mask (the caller's own CPU too, if
 * in the mask, directly).  With SMP_CALL_NOWAIT, arg must stay valid until
 * fn has run everywhere.  While it waits, the caller runs calls other CPUs
 * send it, so two CPUs calling each other do not deadlock; the caller must
 * not hold a lock another CPU may spin on with interrupts off.  Not from
 * interrupt context.  Returns 0, or -EINVAL (fn NULL; called from an
 * interrupt handler). */
int smp_call(uint64_t cpu_mask, smp_call_fn fn, void *arg, enum smp_call_wait wait);
/* smp_call on every online CPU, waiting.  Returns as smp_call. */
int smp_call_all(smp_call_fn fn, void *arg);
/* Makes CPU index act on its need_resched flag now (a reschedule IPI, or
 * nothing when index is the calling CPU). */
void smp_send_reschedule(unsigned index);
/* Calls received per CPU, and IPIs sent, since boot (for statistics). */
uint64_t smp_calls_received(unsigned index);
/* Calls whose IPI had to be sent again (a target did not answer within 5 ms). */
uint64_t smp_calls_resent(void);
/* For the smp suite: the next smp_call publishes its request but sends no
 * IPI, as if it were lost; the resend must still bring the call through. */
void smp_drop_next_call_ipi(void);

/* Runs the smp_bench measurements and stops the machine, if smp_bench was
 * on the command line.  Boot thread, once every CPU is up. */
#ifdef KERNEL_TESTS
void smp_bench_run_if_requested(void);
#else
static inline void smp_bench_run_if_requested(void)
{
} /* benchmarks: test kernel only */
#endif

/* Grace periods.  A reader section is any stretch with preemption off
 * (spinlock held, preempt_disable, interrupts off, interrupt handler).  A
 * CPU passes a quiescent point at a context switch, in the idle loop, and at
 * a tick that interrupts preemptible code (thread or user mode). */
/* Waits until every online CPU has passed a quiescent point since the call
 * began: anything unpublished before it is unreachable to every reader
 * after.  May sleep: thread context, no spinlock held. */
void grace_synchronize(void);
/* Records a quiescent point of the calling CPU (scheduler and tick), in
 * line: every switch passes one.  A full barrier (a locked add): the reader
 * section that may follow (an interrupt's trace point) must not load before
 * the new count is visible, or a grace period could end with it inside. */
static inline void grace_note_quiescent(void)
{
	__asm__ volatile("lock addq $1, %%gs:%c0"
			 :
			 : "i"(offsetof(struct cpu, quiescent_generation))
			 : "memory", "cc");
}

#endif
