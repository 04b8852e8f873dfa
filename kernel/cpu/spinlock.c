/*
 * Ticket locks.  A CPU takes a ticket with one atomic add and spins until
 * "serving" reaches it, so CPUs get the lock in arrival order.  The lock holds
 * off preemption (preempt_count) so a thread never sleeps with a spinlock held;
 * the irqsave variants also keep this CPU's interrupt handlers out.
 */
#include "cpu/spinlock.h"

#include <stddef.h>

#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "panic/panic.h"
#include "sched/sched.h"

void spin_init(struct spinlock *lock, const char *name)
{
	lock->next_ticket = 0;
	lock->serving = 0;
	lock->owner_cpu = -1;
	lock->name = name;
}

void preempt_disable(void)
{
	preempt_count_raise();
}

/* Dropping the last reason not to preempt acts on a pending reschedule, but
 * only where a switch is allowed: outside interrupt handlers, interrupts on
 * (irqs_on: what the caller knows of the flag).  In line in the unlocks. */
static inline __attribute__((always_inline)) void enable_preemption(bool irqs_on)
{
	if (preempt_count_drop_leaves_resched() && irqs_on)
		sched_preempt();
}

void preempt_enable(void)
{
	enable_preemption(irq_enabled());
}

/* Waits for a ticket's turn: spin_wait_turn's loop, out of line and cold. */
void spin_wait_for_ticket(struct spinlock *lock, uint32_t ticket)
{
	do
		__asm__ volatile("pause" : : : "memory");
	while (__atomic_load_n(&lock->serving, __ATOMIC_ACQUIRE) != ticket);
}

static inline __attribute__((always_inline)) void acquire(struct spinlock *lock)
{
	preempt_disable();
	int cpu = (int)this_cpu_id();
	if (lock->owner_cpu == cpu)
		panic("spinlock '%s' taken twice on cpu %d", lock->name, cpu);
	spin_wait_turn(lock);
	lock->owner_cpu = cpu;
}

void spin_lock(struct spinlock *lock)
{
	acquire(lock);
}

bool spin_trylock(struct spinlock *lock)
{
	preempt_disable();
	uint32_t serving = __atomic_load_n(&lock->serving, __ATOMIC_RELAXED);
	uint32_t expected = serving;
	if (__atomic_compare_exchange_n(&lock->next_ticket, &expected, serving + 1, false,
					__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		lock->owner_cpu = (int)this_cpu_id();
		return true;
	}
	preempt_enable();
	return false;
}

/* Gives the lock to the next ticket; preemption stays off (the caller's). */
static inline void release(struct spinlock *lock)
{
	int cpu = (int)this_cpu_id();
	if (lock->owner_cpu != cpu)
		panic("spinlock '%s' released on cpu %d, which does not hold it", lock->name, cpu);
	lock->owner_cpu = -1;
	spin_serve_next(lock);
}

void spin_unlock(struct spinlock *lock)
{
	release(lock);
	enable_preemption(irq_enabled());
}

uint64_t spin_lock_irqsave(struct spinlock *lock)
{
	uint64_t flags = irq_save();
	acquire(lock);
	return flags;
}

/* Preemption stays off until the interrupt flag is back, so a reschedule
 * that became due under the lock happens here rather than at the next tick. */
void spin_unlock_irqrestore(struct spinlock *lock, uint64_t flags)
{
	release(lock);
	irq_restore(flags);
	enable_preemption(flags & RFLAGS_IF);
}

void spin_misuse(const struct spinlock *lock, const char *what)
{
	panic("spinlock '%s' %s on cpu %u", lock->name, what, this_cpu_id());
}

bool spin_held_by_me(const struct spinlock *lock)
{
	return lock->owner_cpu == (int)this_cpu_id();
}
