/*
 * Wait queues, and the completions and semaphores built on them.
 *
 * A waiter checks its condition with the queue's lock held; if it is false it
 * queues itself, marks itself about to block (sched_prepare_block), drops the
 * lock and blocks.  A waker changes the state the condition reads, then takes
 * the lock to pick waiters, so it either runs before the check (which then
 * sees the new state) or after the waiter is queued and marked (which then
 * gets the wake-up, even if it has not switched away yet).  Nothing is lost.
 *
 * A waiter record lives on the waiting thread's stack.  A waker unlinks it
 * before waking the thread (queued = false), so the thread only touches its
 * record under the lock, and waitq_wake_one never picks the same thread twice.
 * Wake-ups may be spurious (preemption, a racing waker): the loop re-checks.
 */
#include "sched/internal.h"

#include "lib/errno.h"
#include "time/time.h"

void waitq_init(struct waitq *queue, const char *name)
{
	spin_init(&queue->lock, name);
	link_init(&queue->waiters);
	queue->name = name;
}

int waitq_wake_locked(struct waitq *queue, enum wake_count count)
{
	int woken = 0;

	spin_assert_held(&queue->lock);
	while (!link_empty(&queue->waiters)) {
		struct waiter *w = container_of(queue->waiters.next, struct waiter, link);
		link_remove(&w->link);
		w->queued = false;
		sched_wakeup(w->thread);
		woken++;
		if (count == WAKE_ONE)
			break;
	}
	return woken;
}

static int waitq_wake(struct waitq *queue, enum wake_count count)
{
	uint64_t flags = spin_lock_irqsave(&queue->lock);
	int woken = waitq_wake_locked(queue, count);
	spin_unlock_irqrestore(&queue->lock, flags);
	return woken;
}

int waitq_wake_ready(struct waitq *queue)
{
	int woken = 0;
	uint64_t flags = spin_lock_irqsave(&queue->lock);
	struct sched_link *link = queue->waiters.next;
	while (link != &queue->waiters) {
		struct waiter *w = container_of(link, struct waiter, link);
		link = link->next;
		if (w->cond && !w->cond(w->arg)) /* no condition: always woken */
			continue;
		link_remove(&w->link);
		w->queued = false;
		sched_wakeup(w->thread);
		woken++;
	}
	spin_unlock_irqrestore(&queue->lock, flags);
	return woken;
}

int waitq_wake_one(struct waitq *queue)
{
	return waitq_wake(queue, WAKE_ONE);
}

int waitq_wake_all(struct waitq *queue)
{
	return waitq_wake(queue, WAKE_ALL);
}

/* The loop behind both waits; deadline_ns 0 means none.  Returns 0 or
 * -ETIMEDOUT. */
static int waitq_wait_until(struct waitq *queue, waitq_cond_fn cond, void *arg,
			    uint64_t deadline_ns)
{
	struct waiter self = {.thread = thread_current(), .cond = cond, .arg = arg};
	int timed_out = 0;

	ASSERT(self.thread);
	link_init(&self.link);
	const char *outer_channel = self.thread->wait_channel;
	__atomic_store_n(&self.thread->wait_channel, queue->name, __ATOMIC_RELAXED);
	for (;;) {
		uint64_t flags = spin_lock_irqsave(&queue->lock);
		bool done = cond(arg);
		if (done || timed_out) {
			if (self.queued)
				link_remove(&self.link);
			spin_unlock_irqrestore(&queue->lock, flags);
			__atomic_store_n(&self.thread->wait_channel, outer_channel,
					 __ATOMIC_RELAXED);
			return done ? 0 : -ETIMEDOUT;
		}
		if (!self.queued) {
			link_insert_before(&queue->waiters, &self.link);
			self.queued = true;
		}
		sched_prepare_block();
		spin_unlock_irqrestore(&queue->lock, flags);
		timed_out = sched_block(deadline_ns);
	}
}

int waitq_wait(struct waitq *queue, waitq_cond_fn cond, void *arg)
{
	return waitq_wait_until(queue, cond, arg, 0);
}

int waitq_wait_timeout(struct waitq *queue, waitq_cond_fn cond, void *arg, uint64_t timeout_ns)
{
	uint64_t deadline = clock_deadline_after(clock_ns(), timeout_ns);
	return waitq_wait_until(queue, cond, arg, deadline ? deadline : 1);
}

/* ---- Completions --------------------------------------------------------- */

void completion_init(struct completion *c, const char *name)
{
	waitq_init(&c->queue, name);
	c->done = false;
}

static bool completion_done_cond(void *arg)
{
	return ((struct completion *)arg)->done;
}

int completion_wait(struct completion *c)
{
	return waitq_wait(&c->queue, completion_done_cond, c);
}

int completion_wait_timeout(struct completion *c, uint64_t timeout_ns)
{
	return waitq_wait_timeout(&c->queue, completion_done_cond, c, timeout_ns);
}

void completion_signal(struct completion *c)
{
	uint64_t flags = spin_lock_irqsave(&c->queue.lock);
	c->done = true;
	waitq_wake_locked(&c->queue, WAKE_ALL);
	spin_unlock_irqrestore(&c->queue.lock, flags);
}

bool completion_is_done(struct completion *c)
{
	return c->done;
}

/* ---- Semaphores ---------------------------------------------------------- */

void semaphore_init(struct semaphore *s, int64_t count, const char *name)
{
	waitq_init(&s->queue, name);
	s->count = count;
}

/* The condition takes the unit it finds: it runs under the queue's lock, the
 * same lock semaphore_up changes the count under. */
static bool semaphore_take(void *arg)
{
	struct semaphore *s = arg;
	if (s->count <= 0)
		return false;
	s->count--;
	return true;
}

int semaphore_down(struct semaphore *s)
{
	return waitq_wait(&s->queue, semaphore_take, s);
}

int semaphore_trydown(struct semaphore *s)
{
	uint64_t flags = spin_lock_irqsave(&s->queue.lock);
	bool taken = semaphore_take(s);
	spin_unlock_irqrestore(&s->queue.lock, flags);
	return taken ? 0 : -EAGAIN;
}

void semaphore_up(struct semaphore *s)
{
	uint64_t flags = spin_lock_irqsave(&s->queue.lock);
	s->count++;
	waitq_wake_locked(&s->queue, WAKE_ONE);
	spin_unlock_irqrestore(&s->queue.lock, flags);
}

unsigned waitq_waiters(struct waitq *queue)
{
	return link_count_locked(&queue->lock, &queue->waiters);
}
