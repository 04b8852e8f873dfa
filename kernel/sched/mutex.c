/*
 * Sleeping mutexes.  A spinlock guards the owner and a list of waiters kept
 * in priority order (highest first, FIFO among equals).  Unlock hands the
 * mutex straight to the first waiter (owner = that thread) before waking it,
 * so a thread that arrives later can never overtake a waiter, and waiters get
 * the mutex in exactly the list's order.  A woken waiter checks that it is
 * the owner; a spurious wake-up (preemption while about to block) just sends
 * it back to sleep, still queued.
 *
 * No priority inheritance: a low-priority owner can hold up a high-priority
 * waiter while middle-priority threads run.
 */
#include "sched/internal.h"

void mutex_init(struct mutex *m, const char *name)
{
	spin_init(&m->lock, name);
	m->owner = NULL;
	link_init(&m->waiters);
	m->name = name;
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

void mutex_lock(struct mutex *m)
{
	struct waiter self = {.thread = thread_current()};

	ASSERT(self.thread);
	link_init(&self.link);
	uint64_t flags = spin_lock_irqsave(&m->lock);
	if (m->owner == self.thread)
		panic("mutex '%s' locked twice by thread '%s'", m->name, self.thread->name);
	if (!m->owner) {
		m->owner = self.thread;
		spin_unlock_irqrestore(&m->lock, flags);
		return;
	}
	mutex_enqueue(m, &self);
	const char *outer_channel = self.thread->wait_channel;
	__atomic_store_n(&self.thread->wait_channel, m->name, __ATOMIC_RELAXED);
	while (m->owner != self.thread) {
		sched_prepare_block();
		spin_unlock_irqrestore(&m->lock, flags);
		sched_block(0);
		flags = spin_lock_irqsave(&m->lock);
	}
	spin_unlock_irqrestore(&m->lock, flags);
	__atomic_store_n(&self.thread->wait_channel, outer_channel, __ATOMIC_RELAXED);
}

bool mutex_trylock(struct mutex *m)
{
	struct thread *self = thread_current();
	uint64_t flags = spin_lock_irqsave(&m->lock);
	bool taken = !m->owner;
	if (taken)
		m->owner = self;
	spin_unlock_irqrestore(&m->lock, flags);
	return taken;
}

void mutex_unlock(struct mutex *m)
{
	uint64_t flags = spin_lock_irqsave(&m->lock);
	if (m->owner != thread_current())
		panic("mutex '%s' unlocked by '%s', not its owner", m->name,
		      thread_current() ? thread_current()->name : "?");
	m->owner = NULL;
	if (!link_empty(&m->waiters)) {
		struct waiter *next = container_of(m->waiters.next, struct waiter, link);
		link_remove(&next->link);
		next->queued = false;
		m->owner = next->thread;
		sched_wakeup(next->thread);
	}
	spin_unlock_irqrestore(&m->lock, flags);
}

bool mutex_held_by_me(const struct mutex *m)
{
	return m->owner && m->owner == thread_current();
}
