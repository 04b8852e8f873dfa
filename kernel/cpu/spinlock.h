/*
 * Ticket spinlocks: fair across CPUs, and interrupt-safe in the _irqsave form.
 * Holding any spinlock disables preemption on the holding CPU.  The owner is
 * recorded so that "must hold" preconditions are assertions, not comments.
 *
 *     static struct spinlock lock = SPINLOCK_INIT("frames");
 *     uint64_t flags = spin_lock_irqsave(&lock);
 *     ... spin_unlock_irqrestore(&lock, flags);
 */
#ifndef KERNEL_CPU_SPINLOCK_H
#define KERNEL_CPU_SPINLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"

struct spinlock {
	volatile uint32_t next_ticket;
	volatile uint32_t serving;
	int owner_cpu; /* -1 when free */
	const char *name;
};

#define SPINLOCK_INIT(lock_name)    \
	{                           \
		0, 0, -1, lock_name \
	}

void spin_init(struct spinlock *lock, const char *name);
void spin_lock(struct spinlock *lock);
void spin_unlock(struct spinlock *lock);
bool spin_trylock(struct spinlock *lock);
uint64_t spin_lock_irqsave(struct spinlock *lock);
void spin_unlock_irqrestore(struct spinlock *lock, uint64_t flags);
bool spin_held_by_me(const struct spinlock *lock);

#define spin_assert_held(lock) ASSERT(spin_held_by_me(lock))

/* ---- Tickets, shared by every way of taking and dropping a lock ----------- */

/* Waits until the lock serves ticket (spin_wait_turn's loop, out of line). */
__attribute__((cold)) void spin_wait_for_ticket(struct spinlock *lock, uint32_t ticket);

/* Takes the next ticket and waits for its turn.  The usual case, the lock
 * free, is one compare with serving in memory and a branch not taken (a
 * volatile load in C is a load and a compare, and the loop in line kept
 * serving's address in a register of its own): the wait loop runs only when
 * it is needed (mem_eq, a compiler barrier and an acquire). */
static inline __attribute__((always_inline)) void spin_wait_turn(struct spinlock *lock)
{
	uint32_t ticket = __atomic_fetch_add(&lock->next_ticket, 1, __ATOMIC_RELAXED);
	if (__builtin_expect(!mem_eq(&lock->serving, ticket), 0))
		spin_wait_for_ticket(lock, ticket);
}

/* Serves the next ticket.  Only the holder writes serving, so one add to it
 * in place does (x86 orders it after the holder's stores, as a release). */
static inline __attribute__((always_inline)) void spin_serve_next(struct spinlock *lock)
{
	__asm__ volatile("addl $1, %0" : "+m"(lock->serving) : : "memory");
}

/* ---- A lock's hold on preemption handed to another lock ------------------ */

/* The scheduler's direct switch holds one lock on entry (the waiter's) and
 * must hold exactly one at the switch (the run queue's): these take and drop
 * a lock without touching the preemption count, so that the count the first
 * lock took passes to the second, with no preempt_enable check between.
 * Interrupts off; the same ownership checks as spin_lock and spin_unlock
 * (spin_misuse panics, naming the lock). */
__attribute__((noreturn, cold)) void spin_misuse(const struct spinlock *lock, const char *what);

/* The _on forms take the calling CPU's index (this_cpu_id()) from a caller
 * that has it in hand already: the scheduler's hand-off takes and drops
 * three locks with it. */
static inline __attribute__((always_inline)) void spin_lock_handed_on(struct spinlock *lock,
								      unsigned cpu)
{
	if (lock->owner_cpu == (int)cpu)
		spin_misuse(lock, "taken twice");
	spin_wait_turn(lock);
	lock->owner_cpu = (int)cpu;
}

static inline __attribute__((always_inline)) void spin_unlock_handed_on(struct spinlock *lock,
									unsigned cpu)
{
	if (lock->owner_cpu != (int)cpu)
		spin_misuse(lock, "released by a CPU that does not hold it");
	lock->owner_cpu = -1;
	spin_serve_next(lock);
}

static inline __attribute__((always_inline)) void spin_lock_handed(struct spinlock *lock)
{
	spin_lock_handed_on(lock, this_cpu_id());
}

static inline __attribute__((always_inline)) void spin_unlock_handed(struct spinlock *lock)
{
	spin_unlock_handed_on(lock, this_cpu_id());
}

/* ---- Preemption, in line where its call counts --------------------------- */

/* One instruction on this CPU's own count: a thread preempted and moved to
 * another CPU between reading this_cpu() and the increment would bump the
 * first CPU's count. */
static inline __attribute__((always_inline)) void preempt_count_raise(void)
{
	__asm__ volatile("incl %%gs:%c0"
			 :
			 : "i"(__builtin_offsetof(struct cpu, preempt_count))
			 : "memory");
}

/* Takes one off this CPU's preempt_count, %gs-relative like every read here;
 * true when that leaves a reschedule due where one may happen: the count at
 * 0, one asked for, outside interrupt handlers.  Whether interrupts are on is
 * the caller's to add (it may know it without reading the flags), and so is
 * the call to sched_preempt, a layer above. */
static inline __attribute__((always_inline)) bool preempt_count_drop_leaves_resched(void)
{
	bool zero;
	__asm__ volatile("decl %%gs:%c1"
			 : "=@ccz"(zero)
			 : "i"(__builtin_offsetof(struct cpu, preempt_count))
			 : "memory");
	return zero && !this_cpu_eq(need_resched, 0) && this_cpu_read(irq_depth) == 0;
}

/* spin_lock_irqsave in line, for the paths where its call counts (IPC's
 * call and reply-receive): interrupts off, preemption off with one
 * instruction on this CPU's own count, then the ticket. */
static inline __attribute__((always_inline)) uint64_t
spin_lock_irqsave_inline_with(struct spinlock *lock, uint64_t flags);

static inline __attribute__((always_inline)) uint64_t
spin_lock_irqsave_inline(struct spinlock *lock)
{
	return spin_lock_irqsave_inline_with(lock, read_rflags());
}

/* The same for a caller that read its flags (read_rflags) already, to ask
 * whether it may sleep: they are what it returns, for spin_unlock_irqrestore
 * (an interrupt or a move to another CPU meanwhile leaves them as they were). */
static inline __attribute__((always_inline)) uint64_t
spin_lock_irqsave_inline_with(struct spinlock *lock, uint64_t flags)
{
	irq_disable();
	preempt_count_raise();
	spin_lock_handed(lock);
	return flags;
}

void preempt_disable(void);
void preempt_enable(void);

#endif
