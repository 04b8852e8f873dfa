/*
 * The work-queue suite: items run in the worker in the order queued, each
 * carrying the activity of the thread that queued it; an item queued twice
 * before it runs runs once; a flush returns only after earlier items ran.
 */
#include "ktest/ktest.h"
#include "lib/string.h"
#include "time/time.h"
#include "workqueue/workqueue.h"

struct record {
	unsigned order[8];
	unsigned count;
	struct thread *threads[8];
	struct completion gate;
};

static void record_item(struct work *work)
{
	struct record *record = work->arg;
	if (record->count == 0)
		completion_wait(&record->gate); /* hold the queue until the test says */
	record->threads[record->count] = thread_current();
	record->order[record->count++] = (unsigned)work->ref;
}

static void items_run_in_order_once(struct ktest *t)
{
	static struct workqueue queue;
	if (!queue.worker)
		ASSERT_EQ(t, workqueue_start(&queue, "wq.test"), 0);
	struct record record = {0};
	completion_init(&record.gate, "wq.test.gate");
	struct work items[3];
	for (unsigned i = 0; i < 3; i++) {
		work_init(&items[i], record_item, &record);
		EXPECT_TRUE(t, work_queue(&queue, &items[i]));
		items[i].ref = i + 100; /* mark the order (a kernel thread has no activity) */
	}
	EXPECT_FALSE(t, work_queue(&queue, &items[2])); /* still queued: not twice */
	completion_signal(&record.gate);
	workqueue_flush(&queue);
	EXPECT_EQ(t, record.count, 3);
	for (unsigned i = 0; i < 3; i++) {
		EXPECT_EQ(t, record.order[i], 100 + i);
		EXPECT_TRUE(t, record.threads[i] == queue.worker);
	}
	EXPECT_TRUE(t, work_queue(&queue, &items[0])); /* finished: may be queued again */
	EXPECT_EQ(t, items[0].ref, acct_current_ref());
	workqueue_flush(&queue);
	EXPECT_EQ(t, record.count, 4);
	EXPECT_EQ(t, queue.done, queue.queued);
}

KTEST_SUITE(workqueue, KTEST_CASE(items_run_in_order_once));

static void count_item(struct work *work)
{
	(*(unsigned *)work->arg)++;
}

/* A delayed item has not run right after queuing, and runs by the flush. */
static void delayed_item_runs_later(struct ktest *t)
{
	static struct workqueue queue;
	if (!queue.worker)
		ASSERT_EQ(t, workqueue_start(&queue, "wq.test.delay"), 0);
	unsigned runs = 0;
	struct work item;
	work_init(&item, count_item, &runs);
	EXPECT_TRUE(t, work_queue_after(&queue, &item, 50 * NSEC_PER_MSEC));
	EXPECT_EQ(t, runs, 0);
	EXPECT_FALSE(t, work_queue_after(&queue, &item, 50 * NSEC_PER_MSEC));
	workqueue_flush(&queue);
	EXPECT_EQ(t, runs, 1);
}

KTEST_SUITE(workqueue_delay, KTEST_CASE(delayed_item_runs_later));
