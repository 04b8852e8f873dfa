/*
 * The nvme suite, without a controller: the doorbells must fit BAR0 at the
 * stride CAP names, an I/O completion queue always interrupts (IEN), on INTx
 * through vector 0, and the watchdog hands a stuck request back only once
 * the controller reads back reset (a "controller" of RAM whose CSTS.RDY the
 * test sets).  The block suites (ktest-block-nvme, ktest-block-nvme-intx,
 * ktest-blocktimeout-nvme) drive a real one.
 */
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
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

static void record_status(struct block_request *request)
{
	*(int *)request->private = request->status;
}

/* A controller of RAM with one request in flight for 6 s; csts is what its
 * status register reads whatever is written to CC. */
static struct nvme *stuck_controller(struct pci_device *pci, struct block_request *request,
				     int *ended, uint32_t csts)
{
	struct nvme *nv = kzalloc(sizeof(*nv));
	uint8_t *regs = mm_alloc_pages(1, PAGE_SIZE);
	if (!nv || !regs)
		return NULL;
	memset(regs, 0, PAGE_SIZE);
	*(uint32_t *)(regs + NVME_REG_CC) = 1;
	*(uint32_t *)(regs + NVME_REG_CSTS) = csts;
	nv->regs = regs;
	nv->pci = pci;
	memcpy(nv->block.name, "nvmeT", 6);
	spin_init(&nv->lock, "nvme.test");
	semaphore_init(&nv->free_slots, NVME_SLOTS - 1, "nvme.test");
	*ended = 1; /* no status yet */
	*request = (struct block_request){.device = &nv->block,
					  .op = BLOCK_READ,
					  .count = 1,
					  .done = record_status,
					  .private = ended,
					  .queued_ns = clock_ns() - 6 * NSEC_PER_SEC};
	nv->slots[0] = request;
	return nv;
}

static void free_controller(struct nvme *nv)
{
	mm_free_pages((void *)nv->regs, 1);
	kfree(nv);
}

static void a_stuck_request_ends_once_the_controller_is_reset(struct ktest *t)
{
	struct pci_device absent = {.bus = 0xff, .device = 31, .function = 7};
	struct block_request request;
	int ended;
	struct nvme *nv = stuck_controller(&absent, &request, &ended, 0);
	ASSERT_TRUE(t, nv != NULL);
	nv->timeout_ns = NSEC_PER_SEC;
	nvme_watchdog(&nv->watchdog, nv);
	EXPECT_EQ(t, *(volatile uint32_t *)(nv->regs + NVME_REG_CC), 0); /* CC.EN = 0 */
	EXPECT_EQ(t, ended, -ETIMEDOUT);
	EXPECT_TRUE(t, nv->slots[0] == NULL);
	EXPECT_TRUE(t, nv->dead);
	EXPECT_FALSE(t, nv->resetting);
	EXPECT_FALSE(t, nv->watching);
	free_controller(nv);
}

/* CSTS.RDY stays 1 past CAP.TO (0 here): the request is never ended, its
 * buffer never handed back while the controller might still write it. */
static void a_controller_that_never_resets_keeps_its_requests(struct ktest *t)
{
	struct pci_device absent = {.bus = 0xff, .device = 31, .function = 7};
	struct block_request request;
	int ended;
	struct nvme *nv = stuck_controller(&absent, &request, &ended, NVME_CSTS_RDY);
	ASSERT_TRUE(t, nv != NULL);
	nv->timeout_ns = 0;
	nvme_watchdog(&nv->watchdog, nv);
	EXPECT_EQ(t, ended, 1); /* done never ran */
	EXPECT_TRUE(t, nv->slots[0] == &request);
	EXPECT_TRUE(t, nv->dead);
	EXPECT_FALSE(t, nv->resetting);
	EXPECT_FALSE(t, nv->watching);
	free_controller(nv);
}

KTEST_SUITE(nvme, KTEST_CASE(doorbells_must_fit_bar0),
	    KTEST_CASE(completion_queues_always_interrupt),
	    KTEST_CASE(a_stuck_request_ends_once_the_controller_is_reset),
	    KTEST_CASE(a_controller_that_never_resets_keeps_its_requests));
