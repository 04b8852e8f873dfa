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

#define DELAY_NS (50 * NSEC_PER_MSEC)

struct delayed_run {
	unsigned runs;
	uint64_t ran_at; /* clock_ns() when it last ran */
};

static void note_run(struct work *work)
{
	struct delayed_run *run = work->arg;
	run->runs++;
	run->ran_at = clock_ns();
}

static void wait_at_gate(struct work *work)
{
	completion_wait(work->arg);
}

/* A delayed item runs no earlier than its delay after it was queued (later
 * is only a slow host), once however often it is queued meanwhile, and by
 * the flush.  An item ahead of it holds the worker until the test has
 * queued twice, so a stalled CPU cannot let the delay pass in between. */
static void delayed_item_runs_later(struct ktest *t)
{
	static struct workqueue queue;
	if (!queue.worker)
		ASSERT_EQ(t, workqueue_start(&queue, "wq.test.delay"), 0);
	struct completion gate;
	completion_init(&gate, "wq.test.delay.gate");
	struct work ahead, item;
	struct delayed_run run = {0};
	work_init(&ahead, wait_at_gate, &gate);
	work_init(&item, note_run, &run);
	EXPECT_TRUE(t, work_queue(&queue, &ahead));
	uint64_t queued_at = clock_ns();
	EXPECT_TRUE(t, work_queue_after(&queue, &item, DELAY_NS));
	EXPECT_FALSE(t, work_queue_after(&queue, &item, DELAY_NS)); /* still queued: not twice */
	completion_signal(&gate);
	workqueue_flush(&queue);
	EXPECT_EQ(t, run.runs, 1);
	EXPECT_TRUE(t, run.ran_at >= queued_at + DELAY_NS);
}

KTEST_SUITE(workqueue_delay, KTEST_CASE(delayed_item_runs_later));
