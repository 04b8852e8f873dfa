/*
 * Work queues (workqueue.h): a FIFO of items under a spinlock and one worker
 * thread per queue.  The worker charges each item's run time to the activity
 * recorded when the item was queued (acct_async_begin/end; a stale or absent
 * activity charges nothing).  A flush waits for the finished count to reach
 * the queued count seen at the call, so it never waits for later items.  A
 * delayed item (work_queue_after) keeps its place; the worker sleeps until
 * it is due, outside the item's accounting.
 */
#include "workqueue/workqueue.h"

#include "lib/errno.h"
#include "time/time.h"

void work_init(struct work *work, work_fn fn, void *arg)
{
	*work = (struct work){.fn = fn, .arg = arg};
}

static bool has_work(void *arg)
{
	return ((struct workqueue *)arg)->head != NULL;
}

/* The first item once it is due, or NULL when the queue is empty; sleeps
 * while the first item is not due yet. */
static struct work *take(struct workqueue *queue)
{
	for (;;) {
		uint64_t flags = spin_lock_irqsave(&queue->lock);
		struct work *work = queue->head;
		uint64_t now = clock_ns();
		if (work && work->not_before > now) {
			uint64_t wait = work->not_before - now;
			spin_unlock_irqrestore(&queue->lock, flags);
			sched_sleep_ns(wait);
			continue;
		}
		if (work) {
			queue->head = work->next;
			if (!queue->head)
				queue->tail = NULL;
			work->queued = false; /* from here it may be queued again */
		}
		spin_unlock_irqrestore(&queue->lock, flags);
		return work;
	}
}

static int worker_main(void *arg)
{
	struct workqueue *queue = arg;
	for (;;) {
		waitq_wait(&queue->wake, has_work, queue);
		struct work *work;
		while ((work = take(queue))) {
			acct_ref_t ref = work->ref;
			uint64_t begin = acct_async_begin(ref);
			work->fn(work);
			acct_async_end(ref, begin);
			__atomic_fetch_add(&queue->done, 1, __ATOMIC_RELEASE);
			waitq_wake_all(&queue->finished);
		}
	}
	return 0;
}

int workqueue_start(struct workqueue *queue, const char *name)
{
	queue->name = name;
	spin_init(&queue->lock, name);
	waitq_init(&queue->wake, name);
	waitq_init(&queue->finished, name);
	queue->head = queue->tail = NULL;
	queue->worker = thread_create(worker_main, queue, name, SCHED_PRIORITY_NORMAL);
	if (!queue->worker)
		return -ENOMEM;
	thread_detach(queue->worker);
	return 0;
}

bool work_queue_after(struct workqueue *queue, struct work *work, uint64_t delay_ns)
{
	acct_ref_t ref = acct_current_ref();
	uint64_t not_before = delay_ns ? clock_ns() + delay_ns : 0;
	uint64_t flags = spin_lock_irqsave(&queue->lock);
	bool fresh = !work->queued;
	if (fresh) {
		work->queued = true;
		work->ref = ref;
		work->not_before = not_before;
		work->next = NULL;
		if (queue->tail)
			queue->tail->next = work;
		else
			queue->head = work;
		queue->tail = work;
		queue->queued++;
	}
	spin_unlock_irqrestore(&queue->lock, flags);
	if (fresh)
		waitq_wake_one(&queue->wake);
	return fresh;
}

bool work_queue(struct workqueue *queue, struct work *work)
{
	return work_queue_after(queue, work, 0);
}

struct flush_point {
	struct workqueue *queue;
	uint64_t target;
};

static bool reached(void *arg)
{
	struct flush_point *point = arg;
	return __atomic_load_n(&point->queue->done, __ATOMIC_ACQUIRE) >= point->target;
}

void workqueue_flush(struct workqueue *queue)
{
	uint64_t flags = spin_lock_irqsave(&queue->lock);
	struct flush_point point = {queue, queue->queued};
	spin_unlock_irqrestore(&queue->lock, flags);
	waitq_wait(&queue->finished, reached, &point);
}
