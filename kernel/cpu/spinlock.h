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

struct spinlock {
	volatile uint32_t next_ticket;
	volatile uint32_t serving;
	int owner_cpu; /* -1 when free */
	const char *name;
};

#define SPINLOCK_INIT(lock_name) {0, 0, -1, lock_name}

void spin_init(struct spinlock *lock, const char *name);
void spin_lock(struct spinlock *lock);
void spin_unlock(struct spinlock *lock);
bool spin_trylock(struct spinlock *lock);
uint64_t spin_lock_irqsave(struct spinlock *lock);
void spin_unlock_irqrestore(struct spinlock *lock, uint64_t flags);
bool spin_held_by_me(const struct spinlock *lock);

#define spin_assert_held(lock) ASSERT(spin_held_by_me(lock))

void preempt_disable(void);
void preempt_enable(void);

#endif
