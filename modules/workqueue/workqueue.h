/*
 * Work queues: kernel work items run later by a queue's worker thread.  Each
 * item carries the accounting activity of the thread that queued it
 * (acct_current_ref), and the worker brackets the item with acct_async_begin
 * and acct_async_end, so deferred work (page-cache write-back) is charged to
 * the activity that caused it.
 *
 *     static struct workqueue writeback;  workqueue_start(&writeback, "writeback");
 *     work_init(&item, write_back_fn, fs);
 *     work_queue(&writeback, &item);       // runs write_back_fn(&item) in the worker
 *     workqueue_flush(&writeback);         // everything queued so far has run
 */
#ifndef MODULES_WORKQUEUE_WORKQUEUE_H
#define MODULES_WORKQUEUE_WORKQUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "acct/acct.h"
#include "sched/sched.h"

struct work;
typedef void (*work_fn)(struct work *work);

struct work {
	work_fn fn;
	void *arg;
	acct_ref_t ref;      /* the activity that queued it (0: none); set by work_queue */
	uint64_t not_before; /* clock_ns() before which it does not run (work_queue_after) */
	bool queued;         /* on a queue, not yet started */
	struct work *next;
};

struct workqueue {
	const char *name;
	struct spinlock lock;
	struct waitq wake;     /* the worker waits here for items */
	struct waitq finished; /* flushers wait here */
	struct work *head, *tail;
	uint64_t queued, done; /* items ever queued and ever finished */
	struct thread *worker;
};

void work_init(struct work *work, work_fn fn, void *arg);
/* Starts queue's worker thread.  Returns 0 or -ENOMEM. */
int workqueue_start(struct workqueue *queue, const char *name);
/* Queues work with the calling thread's activity.  Returns true, or false
 * when it is queued already (it runs once; the first activity keeps it). */
bool work_queue(struct workqueue *queue, struct work *work);
/* As work_queue, but the item runs no earlier than delay_ns from now (the
 * wait is not charged to the activity).  Items run in queue order, so a
 * queue should use one delay for all its items. */
bool work_queue_after(struct workqueue *queue, struct work *work, uint64_t delay_ns);
/* Sleeps until every item queued before the call has finished. */
void workqueue_flush(struct workqueue *queue);

#endif
