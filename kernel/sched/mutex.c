/*
 * Sleeping mutexes.  The owner word is the owning thread, with its low bit
 * set while waiters may be queued (threads are aligned, so the bit is free).
 * Taking a free mutex and releasing one nobody waits for are each one
 * compare-and-swap on that word, with no spinlock: most of the kernel's
 * mutexes (the network stack's core lock, file tables) are uncontended, and
 * each lock and unlock through the spinlock cost two lock round trips.
 *
 * Contention goes through the spinlock, which guards the waiters' list kept
 * in priority order (highest first, FIFO among equals).  A waiter sets the
 * bit and queues itself under the spinlock, so an owner whose release finds
 * the bit set finds the waiter too.  Unlock hands the mutex straight to the
 * first waiter (the word becomes that thread, with the bit if more wait)
 * before waking it, so a thread that arrives later can never overtake a
 * waiter, and waiters get the mutex in exactly the list's order.  The word
 * is therefore never 0 while anyone waits.  A woken waiter checks that it is
 * the owner; a spurious wake-up (preemption while about to block) just sends
 * it back to sleep, still queued.
 *
 * No priority inheritance: a low-priority owner can hold up a high-priority
 * waiter while middle-priority threads run.
 */
#include "sched/internal.h"

#define MUTEX_WAITERS ((uintptr_t)1)
_Static_assert(_Alignof(struct thread) > 1, "a thread's address leaves the low bit free");

void mutex_init(struct mutex *m, const char *name)
{
	spin_init(&m->lock, name);
	m->owner_word = 0;
	link_init(&m->waiters);
	m->name = name;
}

static struct thread *mutex_owner(const struct mutex *m)
{
	return (struct thread *)(__atomic_load_n(&m->owner_word, __ATOMIC_ACQUIRE) &
				 ~MUTEX_WAITERS);
}

static bool mutex_take_free(struct mutex *m, struct thread *self)
{
	uintptr_t free = 0;
	return __atomic_compare_exchange_n(&m->owner_word, &free, (uintptr_t)self, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* Queues w behind every waiter of the same or higher priority. */
static void mutex_enqueue(struct mutex *m, struct waiter *w)
{
	struct sched_link *position = m->waiters.next;
	while (position != &m->waiters &&
	       container_of(position, struct waiter, link)->thread->priority >= w->thread->priority)
		position = position->next;
	link_insert_before(position, &w->link);
	w->queued = true;
}

/* Spinlock held: takes the mutex if it came free meanwhile, or marks it as
 * waited for.  Returns true when the caller now owns it. */
static bool mutex_take_or_mark(struct mutex *m, struct thread *self)
{
	uintptr_t word = __atomic_load_n(&m->owner_word, __ATOMIC_RELAXED);
	for (;;) {
		if ((struct thread *)(word & ~MUTEX_WAITERS) == self)
			panic("mutex '%s' locked twice by thread '%s'", m->name, self->name);
		uintptr_t next = word ? word | MUTEX_WAITERS : (uintptr_t)self;
		if (__atomic_compare_exchange_n(&m->owner_word, &word, next, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return !word;
	}
}

/* Out of line, so that the fast paths keep a frame of their own size. */
static __attribute__((noinline)) void mutex_lock_contended(struct mutex *m, struct thread *self)
{
	struct waiter w = {.thread = self};
	link_init(&w.link);
	uint64_t flags = spin_lock_irqsave(&m->lock);
	if (mutex_take_or_mark(m, self)) {
		spin_unlock_irqrestore(&m->lock, flags);
		return;
	}
	mutex_enqueue(m, &w);
	const char *outer_channel = self->wait_channel;
	__atomic_store_n(&self->wait_channel, m->name, __ATOMIC_RELAXED);
	while (mutex_owner(m) != self) {
		sched_prepare_block();
		spin_unlock_irqrestore(&m->lock, flags);
		sched_block(0);
		flags = spin_lock_irqsave(&m->lock);
	}
	spin_unlock_irqrestore(&m->lock, flags);
	__atomic_store_n(&self->wait_channel, outer_channel, __ATOMIC_RELAXED);
}

void mutex_lock(struct mutex *m)
{
	struct thread *self = thread_current();
	ASSERT(self);
	if (!mutex_take_free(m, self))
		mutex_lock_contended(m, self);
}

bool mutex_trylock(struct mutex *m)
{
	return mutex_take_free(m, thread_current());
}

/* The owner's word has the waiters' bit: the first waiter gets the mutex. */
static __attribute__((noinline)) void mutex_hand_over(struct mutex *m)
{
	uint64_t flags = spin_lock_irqsave(&m->lock);
	uintptr_t word = 0;
	if (!link_empty(&m->waiters)) {
		struct waiter *next = container_of(m->waiters.next, struct waiter, link);
		link_remove(&next->link);
		next->queued = false;
		word = (uintptr_t)next->thread | (link_empty(&m->waiters) ? 0 : MUTEX_WAITERS);
		__atomic_store_n(&m->owner_word, word, __ATOMIC_RELEASE);
		sched_wakeup(next->thread);
	} else {
		__atomic_store_n(&m->owner_word, word, __ATOMIC_RELEASE);
	}
	spin_unlock_irqrestore(&m->lock, flags);
}

void mutex_unlock(struct mutex *m)
{
	struct thread *self = thread_current();
	uintptr_t held = (uintptr_t)self;
	if (__atomic_compare_exchange_n(&m->owner_word, &held, 0, false, __ATOMIC_RELEASE,
					__ATOMIC_RELAXED))
		return;
	if ((struct thread *)(held & ~MUTEX_WAITERS) != self)
		panic("mutex '%s' unlocked by '%s', not its owner", m->name,
		      self ? self->name : "?");
	mutex_hand_over(m);
}

bool mutex_held_by_me(const struct mutex *m)
{
	struct thread *owner = mutex_owner(m);
	return owner && owner == thread_current();
}

bool mutex_is_free(const struct mutex *m)
{
	return __atomic_load_n(&m->owner_word, __ATOMIC_ACQUIRE) == 0;
}

unsigned mutex_waiters(struct mutex *m)
{
	return link_count_locked(&m->lock, &m->waiters);
}
