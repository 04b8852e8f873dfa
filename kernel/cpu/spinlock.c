/*
 * Ticket locks.  A CPU takes a ticket with one atomic add and spins until
 * "serving" reaches it, so CPUs get the lock in arrival order.  The lock holds
 * off preemption (preempt_count) so a thread never sleeps with a spinlock held;
 * the irqsave variants also keep this CPU's interrupt handlers out.
 */
#include "cpu/spinlock.h"

#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "panic/panic.h"

void spin_init(struct spinlock *lock, const char *name)
{
	lock->next_ticket = 0;
	lock->serving = 0;
	lock->owner_cpu = -1;
	lock->name = name;
}

void preempt_disable(void)
{
	this_cpu()->preempt_count++;
	__asm__ volatile("" : : : "memory");
}

void preempt_enable(void)
{
	__asm__ volatile("" : : : "memory");
	this_cpu()->preempt_count--;
}

void spin_lock(struct spinlock *lock)
{
	preempt_disable();
	if (lock->owner_cpu == (int)this_cpu_id())
		panic("spinlock '%s' taken twice on cpu %u", lock->name, this_cpu_id());
	uint32_t ticket = __atomic_fetch_add(&lock->next_ticket, 1, __ATOMIC_RELAXED);
	while (__atomic_load_n(&lock->serving, __ATOMIC_ACQUIRE) != ticket)
		cpu_relax();
	lock->owner_cpu = (int)this_cpu_id();
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

void spin_unlock(struct spinlock *lock)
{
	spin_assert_held(lock);
	lock->owner_cpu = -1;
	__atomic_store_n(&lock->serving, lock->serving + 1, __ATOMIC_RELEASE);
	preempt_enable();
}

uint64_t spin_lock_irqsave(struct spinlock *lock)
{
	uint64_t flags = irq_save();
	spin_lock(lock);
	return flags;
}

void spin_unlock_irqrestore(struct spinlock *lock, uint64_t flags)
{
	spin_unlock(lock);
	irq_restore(flags);
}

bool spin_held_by_me(const struct spinlock *lock)
{
	return lock->owner_cpu == (int)this_cpu_id();
}
