/*
 * The nvme suite: the driver's pure decisions, without a controller.  The
 * doorbells must fit BAR0 at the stride CAP names, and an I/O completion
 * queue always interrupts (IEN), on INTx through vector 0.  The block suites
 * (ktest-block-nvme, ktest-block-nvme-intx) drive a real controller.
 */
#include "ktest/ktest.h"
#include "nvme/internal.h"

#define CAP_DSTRD(n) ((uint64_t)(n) << 32)

static void doorbells_must_fit_bar0(struct ktest *t)
{
	EXPECT_TRUE(t, nvme_doorbells_fit(CAP_DSTRD(0), 0x2000, NVME_QUEUE_PAIRS));
	EXPECT_TRUE(t, nvme_doorbells_fit(CAP_DSTRD(0), 0x1010, NVME_QUEUE_PAIRS));
	EXPECT_FALSE(t, nvme_doorbells_fit(CAP_DSTRD(0), 0x100c, NVME_QUEUE_PAIRS));
	EXPECT_EQ(t, nvme_doorbell_stride(CAP_DSTRD(15)), 128 * 1024);
	EXPECT_FALSE(t, nvme_doorbells_fit(CAP_DSTRD(15), 0x4000, NVME_QUEUE_PAIRS));
	EXPECT_TRUE(t, nvme_doorbells_fit(CAP_DSTRD(15), 0x1000 + 4 * 0x20000, NVME_QUEUE_PAIRS));
	EXPECT_FALSE(t,
		     nvme_doorbells_fit(CAP_DSTRD(15), 0x1000 + 4 * 0x20000 - 1, NVME_QUEUE_PAIRS));
}

static void completion_queues_always_interrupt(struct ktest *t)
{
	EXPECT_EQ(t, nvme_cq_interrupt_flags(NVME_INTX), 2u); /* IV 0, IEN */
	EXPECT_EQ(t, nvme_cq_interrupt_flags(0), 2u);
	EXPECT_EQ(t, nvme_cq_interrupt_flags(3), 3u << 16 | 2u);
}

KTEST_SUITE(nvme, KTEST_CASE(doorbells_must_fit_bar0),
	    KTEST_CASE(completion_queues_always_interrupt));
