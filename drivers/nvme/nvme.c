/*
 * The NVMe driver (NVM Express 1.x over PCI: QEMU's -device nvme, what real
 * machines boot from), behind the block boundary (block/block.h).  Each
 * namespace with 512-byte logical blocks becomes a block device "nvme0n1".
 *
 * Bring-up follows the specification's order: check that BAR0 holds the
 * doorbells at CAP's stride, disable (CC.EN = 0, wait for
 * CSTS.RDY = 0), admin queues (AQA, ASQ, ACQ), enable (wait for RDY, bounded
 * by CAP.TO), then admin commands, polled: Identify Controller, Identify
 * Namespace 1, Create I/O Completion Queue (interrupting through MSI-X entry
 * 0, or INTx), Create I/O Submission Queue.  I/O is interrupt-driven: up to
 * NVME_SLOTS commands in flight, the command id naming the slot; a request
 * moves up to 64 KiB of a physically contiguous buffer (PRP1, then PRP2: the
 * next page, or the slot's PRP list naming the following pages).  A completion with a non-zero status is -EIO; one
 * naming a slot with no request is counted and skipped.
 *
 * A controller that stops answering: while commands are in flight a watchdog
 * timer looks every second; a command older than NVME_IO_TIMEOUT_NS makes
 * the driver reset the controller (CC.EN = 0; once CSTS.RDY reads 0 the
 * controller has dropped every queue and command, touches no buffer and
 * posts no completion), end every request in flight with -ETIMEDOUT and
 * refuse later ones with -EIO, as the virtio-blk driver does: nothing waits
 * forever on a silent disk.  The watchdog looks for RDY = 0 every 10 ms up
 * to CAP.TO (an interrupt may not wait that long); a controller that never
 * gets there loses bus mastering and its requests never end, their buffers
 * not handed back while it might still write them.  The same holds for the
 * Identify page of an admin command that timed out at probe.
 */
#include "nvme/internal.h"

#include "block/block.h"
#include "console/console.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "pci/pci.h"
#include "sched/sched.h"
#include "time/time.h"

#define NVME_REG_CAP 0x00
#define NVME_REG_AQA 0x24
#define NVME_REG_ASQ 0x28
#define NVME_REG_ACQ 0x30

#define NVME_CC_EN     1u
#define NVME_CC_IOSQES (6u << 16) /* 64-byte submission entries */
#define NVME_CC_IOCQES (4u << 20) /* 16-byte completion entries */
#define NVME_CSTS_CFS  2u

#define NVME_ADMIN_CREATE_SQ 0x01
#define NVME_ADMIN_CREATE_CQ 0x05
#define NVME_ADMIN_IDENTIFY  0x06
#define NVME_CMD_FLUSH       0x00
#define NVME_CMD_WRITE       0x01
#define NVME_CMD_READ        0x02

#define NVME_ADMIN_TIMEOUT (10 * NSEC_PER_SEC) /* an emulator on a busy host can take seconds */
#define NVME_MAX_BYTES     (64u << 10)         /* per request: 17 pages at most, a short PRP list */
#define NVME_IO_TIMEOUT_NS (5 * NSEC_PER_SEC)
#define NVME_WATCH_NS      NSEC_PER_SEC
#define NVME_RESET_POLL_NS (10 * NSEC_PER_MSEC) /* how often a reset in progress is looked at */

static unsigned nvme_controllers;

static uint32_t reg_read32(struct nvme *nv, unsigned offset)
{
	return *(volatile uint32_t *)(nv->regs + offset);
}

static void reg_write32(struct nvme *nv, unsigned offset, uint32_t value)
{
	*(volatile uint32_t *)(nv->regs + offset) = value;
}

static uint64_t reg_read64(struct nvme *nv, unsigned offset)
{
	return reg_read32(nv, offset) | (uint64_t)reg_read32(nv, offset + 4) << 32;
}

static void reg_write64(struct nvme *nv, unsigned offset, uint64_t value)
{
	reg_write32(nv, offset, (uint32_t)value);
	reg_write32(nv, offset + 4, (uint32_t)(value >> 32));
}

static void ring_sq(struct nvme *nv, struct nvme_queue *queue)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	reg_write32(nv, NVME_DOORBELL + (2 * queue->id) * nv->doorbell_stride, queue->sq_tail);
}

static void ring_cq(struct nvme *nv, struct nvme_queue *queue)
{
	reg_write32(nv, NVME_DOORBELL + (2 * queue->id + 1) * nv->doorbell_stride, queue->cq_head);
}

static int queue_alloc(struct nvme_queue *queue, unsigned id)
{
	*queue = (struct nvme_queue){.id = id, .phase = 1};
	queue->sq = mm_alloc_pages(1, PAGE_SIZE);
	queue->cq = mm_alloc_pages(1, PAGE_SIZE);
	if (!queue->sq || !queue->cq)
		return -ENOMEM; /* boot-time only: what was allocated stays */
	memset(queue->sq, 0, PAGE_SIZE);
	memset(queue->cq, 0, PAGE_SIZE);
	return 0;
}

static void submit(struct nvme *nv, struct nvme_queue *queue, const struct nvme_command *command)
{
	queue->sq[queue->sq_tail] = *command;
	queue->sq_tail = (uint16_t)((queue->sq_tail + 1) % NVME_QUEUE_ENTRIES);
	ring_sq(nv, queue);
}

/* Takes the next completion of queue if the device posted one. */
static bool take_completion(struct nvme_queue *queue, struct nvme_completion *out)
{
	volatile struct nvme_completion *entry = &queue->cq[queue->cq_head];
	if ((__atomic_load_n(&entry->status, __ATOMIC_ACQUIRE) & 1) != queue->phase)
		return false;
	*out = *(struct nvme_completion *)entry;
	queue->cq_head = (uint16_t)((queue->cq_head + 1) % NVME_QUEUE_ENTRIES);
	if (queue->cq_head == 0)
		queue->phase ^= 1;
	return true;
}

/* An admin command, polled.  Returns 0, -EIO (error status) or -ETIMEDOUT. */
static int admin_command(struct nvme *nv, struct nvme_command *command)
{
	static uint16_t next_id;
	uint16_t id = ++next_id;
	command->dword0 |= (uint32_t)id << 16;
	submit(nv, &nv->admin, command);
	uint64_t deadline = clock_ns() + NVME_ADMIN_TIMEOUT;
	struct nvme_completion completion;
	for (;;) {
		/* Read the clock before looking: a CPU held off past the
		 * deadline (a busy host) still looks once more. */
		bool late = clock_ns() >= deadline;
		if (take_completion(&nv->admin, &completion)) {
			ring_cq(nv, &nv->admin);
			if (completion.command_id != id)
				continue;
			return completion.status >> 1 ? -EIO : 0;
		}
		if (late)
			return -ETIMEDOUT;
		clock_delay_ns(10 * NSEC_PER_USEC);
	}
}

/* ---- Bring-up -------------------------------------------------------------- */

static int wait_ready(struct nvme *nv, bool ready)
{
	uint64_t deadline = clock_ns() + nv->timeout_ns;
	for (;;) {
		bool late = clock_ns() >= deadline; /* then one more look, as above */
		uint32_t status = reg_read32(nv, NVME_REG_CSTS);
		if (status & NVME_CSTS_CFS)
			return -EIO;
		if (((status & NVME_CSTS_RDY) != 0) == ready)
			return 0;
		if (late)
			return -ETIMEDOUT;
		clock_delay_ns(100 * NSEC_PER_USEC);
	}
}

/* CSTS says RDY = 0: the controller has dropped its queues and commands.
 * All ones is a controller that no longer answers, not one that stopped. */
static bool nvme_is_disabled(struct nvme *nv)
{
	uint32_t status = reg_read32(nv, NVME_REG_CSTS);
	return status != 0xffffffffu && !(status & NVME_CSTS_RDY);
}

/* Thread context: CC.EN = 0, then waits up to CAP.TO for RDY = 0.  Returns
 * true when the controller stopped; false when it did not, and then it has
 * lost bus mastering and no buffer it was given may be reused. */
bool nvme_disable_controller(struct nvme *nv)
{
	reg_write32(nv, NVME_REG_CC, 0);
	uint64_t deadline = clock_ns() + nv->timeout_ns;
	while (!nvme_is_disabled(nv)) {
		if (clock_ns() >= deadline) {
			pci_disable_device(nv->pci, PCI_ENABLE_BUS_MASTER);
			return false;
		}
		clock_delay_ns(100 * NSEC_PER_USEC);
	}
	return true;
}

static int enable_controller(struct nvme *nv)
{
	uint64_t cap = reg_read64(nv, NVME_REG_CAP);
	nv->timeout_ns = (((cap >> 24) & 0xff) + 1) * 500 * NSEC_PER_MSEC;
	if ((cap & 0xffff) + 1 < NVME_QUEUE_ENTRIES || ((cap >> 48) & 0xf) != 0)
		return -ENODEV; /* queues too short, or no 4 KiB pages */
	if (!nvme_doorbells_fit(cap, nv->pci->bars[0].size, NVME_QUEUE_PAIRS))
		return -ENODEV; /* a stride that puts doorbells past the BAR */
	nv->doorbell_stride = (unsigned)nvme_doorbell_stride(cap);
	reg_write32(nv, NVME_REG_CC, 0);
	int error = wait_ready(nv, false);
	if (!error)
		error = queue_alloc(&nv->admin, 0);
	if (error)
		return error;
	reg_write32(nv, NVME_REG_AQA, (NVME_QUEUE_ENTRIES - 1) << 16 | (NVME_QUEUE_ENTRIES - 1));
	reg_write64(nv, NVME_REG_ASQ, virt_to_phys(nv->admin.sq));
	reg_write64(nv, NVME_REG_ACQ, virt_to_phys(nv->admin.cq));
	reg_write32(nv, NVME_REG_CC, NVME_CC_EN | NVME_CC_IOSQES | NVME_CC_IOCQES);
	return wait_ready(nv, true);
}

/* Identify Namespace 1: its size, which must use 512-byte blocks. */
static int identify_namespace(struct nvme *nv)
{
	uint8_t *data = mm_alloc_pages(1, PAGE_SIZE);
	if (!data)
		return -ENOMEM;
	memset(data, 0, PAGE_SIZE);
	struct nvme_command command = {
	    .dword0 = NVME_ADMIN_IDENTIFY, .nsid = 1, .prp1 = virt_to_phys(data), .cdw10 = 0};
	int error = admin_command(nv, &command);
	if (!error) {
		uint64_t blocks;
		memcpy(&blocks, data, sizeof(blocks));
		unsigned format = data[26] & 0xf;
		unsigned shift = data[128 + 4 * format + 2];
		if (blocks == 0 || shift != 9)
			error = -ENODEV; /* no namespace, or not 512-byte blocks */
		nv->block.sectors = blocks;
	}
	/* an unanswered command may still write the page: stop the controller first */
	if (error != -ETIMEDOUT || nvme_disable_controller(nv))
		mm_free_pages(data, 1);
	return error;
}

static int create_io_queues(struct nvme *nv, uint16_t vector)
{
	int error = queue_alloc(&nv->io, 1);
	if (error)
		return error;
	struct nvme_command cq = {.dword0 = NVME_ADMIN_CREATE_CQ,
				  .prp1 = virt_to_phys(nv->io.cq),
				  .cdw10 = (NVME_QUEUE_ENTRIES - 1) << 16 | 1,
				  .cdw11 = nvme_cq_interrupt_flags(vector) | 1};
	error = admin_command(nv, &cq);
	if (error)
		return error;
	struct nvme_command sq = {.dword0 = NVME_ADMIN_CREATE_SQ,
				  .prp1 = virt_to_phys(nv->io.sq),
				  .cdw10 = (NVME_QUEUE_ENTRIES - 1) << 16 | 1,
				  .cdw11 = 1u << 16 | 1};
	return admin_command(nv, &sq);
}

/* ---- A controller that stops answering ------------------------------------- */

/* Lock held: arms the watchdog delay_ns from now unless it is armed. */
static void nvme_arm_watchdog(struct nvme *nv, uint64_t delay_ns)
{
	if (!nv->watching)
		nv->watching = timer_arm_oneshot_ns(&nv->watchdog, clock_ns() + delay_ns,
						    nvme_watchdog, nv) == 0;
}

/* Lock held: arms the watchdog unless it is armed or the controller is dead. */
static void nvme_watch(struct nvme *nv)
{
	if (!nv->dead)
		nvme_arm_watchdog(nv, NVME_WATCH_NS);
}

/* Lock held: whether a command in flight is older than the timeout, and
 * whether any is in flight at all (*busy). */
static bool nvme_stuck(struct nvme *nv, bool *busy)
{
	uint64_t now = clock_ns();
	bool stuck = false;
	*busy = false;
	for (unsigned i = 0; i < NVME_SLOTS; i++) {
		struct block_request *request = nv->slots[i];
		if (request) {
			*busy = true;
			stuck |= now - request->queued_ns > NVME_IO_TIMEOUT_NS;
		}
	}
	return stuck;
}

/* Lock held: refuses every later request and resets the controller (CC.EN =
 * 0: once RDY reads 0 it has dropped its queues and commands). */
static void nvme_begin_reset(struct nvme *nv)
{
	nv->dead = true;
	nv->resetting = true;
	nv->reset_deadline_ns = clock_ns() + nv->timeout_ns;
	reg_write32(nv, NVME_REG_CC, 0);
}

enum nvme_reset_state { NVME_RESET_PENDING, NVME_RESET_DONE, NVME_RESET_FAILED };

/* Lock held: where the reset stands.  Past CAP.TO without RDY = 0 it has
 * failed, and the controller loses bus mastering. */
static enum nvme_reset_state nvme_reset_state(struct nvme *nv)
{
	if (nvme_is_disabled(nv))
		return NVME_RESET_DONE;
	if (clock_ns() < nv->reset_deadline_ns)
		return NVME_RESET_PENDING;
	pci_disable_device(nv->pci, PCI_ENABLE_BUS_MASTER);
	return NVME_RESET_FAILED;
}

/* Lock held: the requests in flight into ended[]; their slots are emptied
 * only when the reset is done (otherwise the controller may still use
 * their buffers, and they are kept for ever). */
static unsigned nvme_take_slots(struct nvme *nv, struct block_request **ended, bool empty)
{
	unsigned count = 0;
	for (unsigned i = 0; i < NVME_SLOTS; i++) {
		if (!nv->slots[i])
			continue;
		ended[count++] = nv->slots[i];
		if (empty)
			nv->slots[i] = NULL;
	}
	return count;
}

/* After the reset: frees the slots (a dead controller's are never used
 * again, so a submitter waiting for one gets -EIO) and ends the requests
 * with -ETIMEDOUT, unless the reset failed. */
static void nvme_end_all(struct nvme *nv, struct block_request **ended, unsigned count,
			 enum nvme_reset_state state)
{
	if (state == NVME_RESET_DONE)
		pr_warn(
		    "nvme: %s did not answer for %lu s: controller reset, %u requests timed out\n",
		    nv->block.name, (unsigned long)(NVME_IO_TIMEOUT_NS / NSEC_PER_SEC), count);
	else
		pr_warn("nvme: %s did not answer and did not reset: bus mastering off, %u requests "
			"never end (the controller may still use their buffers)\n",
			nv->block.name, count);
	for (unsigned i = 0; i < count; i++) {
		semaphore_up(&nv->free_slots);
		if (state == NVME_RESET_DONE)
			block_complete(ended[i], -ETIMEDOUT);
	}
}

void nvme_watchdog(struct timer_oneshot *timer, void *ctx)
{
	(void)timer;
	struct nvme *nv = ctx;
	struct block_request *ended[NVME_SLOTS];
	unsigned count = 0;
	enum nvme_reset_state state = NVME_RESET_PENDING;
	bool busy = false;
	uint64_t flags = spin_lock_irqsave(&nv->lock);
	nv->watching = false;
	if (!nv->dead && nvme_stuck(nv, &busy))
		nvme_begin_reset(nv);
	if (nv->resetting) {
		state = nvme_reset_state(nv);
		nv->resetting = state == NVME_RESET_PENDING;
		if (nv->resetting)
			nvme_arm_watchdog(nv, NVME_RESET_POLL_NS);
		else
			count = nvme_take_slots(nv, ended, state == NVME_RESET_DONE);
	} else if (busy) {
		nvme_watch(nv);
	}
	spin_unlock_irqrestore(&nv->lock, flags);
	if (state != NVME_RESET_PENDING)
		nvme_end_all(nv, ended, count, state);
}

/* ---- I/O ------------------------------------------------------------------- */

static uint8_t opcode_of(enum block_op op)
{
	return op == BLOCK_READ    ? NVME_CMD_READ
	       : op == BLOCK_WRITE ? NVME_CMD_WRITE
				   : NVME_CMD_FLUSH;
}

static int nvme_submit(struct block_device *device, struct block_request *request)
{
	struct nvme *nv = device->driver;
	semaphore_down(&nv->free_slots);
	uint64_t flags = spin_lock_irqsave(&nv->lock);
	if (nv->dead) {
		spin_unlock_irqrestore(&nv->lock, flags);
		semaphore_up(&nv->free_slots);
		return -EIO;
	}
	unsigned slot = 0;
	while (nv->slots[slot])
		slot++;
	nv->slots[slot] = request;
	request->queued_ns = clock_ns(); /* waiting for a slot is no stuck device */
	struct nvme_command command = {.dword0 = opcode_of(request->op) | (uint32_t)slot << 16,
				       .nsid = 1};
	if (request->op != BLOCK_FLUSH) {
		uint64_t phys = virt_to_phys(request->buffer);
		uint64_t end = phys + (uint64_t)request->count * BLOCK_SECTOR_SIZE;
		command.prp1 = phys;
		uint64_t next_page = (phys & ~(uint64_t)(PAGE_SIZE - 1)) + PAGE_SIZE;
		if (end > next_page + PAGE_SIZE) { /* more than two pages: a list */
			uint64_t *list = nv->prp_lists + slot * (PAGE_SIZE / sizeof(uint64_t));
			for (unsigned i = 0; next_page + i * PAGE_SIZE < end; i++)
				list[i] = next_page + i * PAGE_SIZE;
			command.prp2 = virt_to_phys(list);
		} else if (end > next_page) {
			command.prp2 = next_page; /* contiguous: the rest starts there */
		}
		command.cdw10 = (uint32_t)request->sector;
		command.cdw11 = (uint32_t)(request->sector >> 32);
		command.cdw12 = request->count - 1;
	}
	submit(nv, &nv->io, &command);
	nvme_watch(nv);
	spin_unlock_irqrestore(&nv->lock, flags);
	return 0;
}

/* Takes one finished request off the completion queue. */
static bool take_finished(struct nvme *nv, struct block_request **request, int *status)
{
	struct nvme_completion completion;
	bool found = false;
	uint64_t flags = spin_lock_irqsave(&nv->lock);
	while (!found && !nv->dead && take_completion(&nv->io, &completion)) {
		unsigned slot = completion.command_id;
		if (slot >= NVME_SLOTS || !nv->slots[slot]) {
			nv->bad_completions++;
			continue;
		}
		*request = nv->slots[slot];
		*status = completion.status >> 1 ? -EIO : 0;
		nv->slots[slot] = NULL;
		found = true;
	}
	if (!nv->dead)
		ring_cq(nv, &nv->io);
	spin_unlock_irqrestore(&nv->lock, flags);
	return found;
}

static void nvme_irq(struct trap_frame *frame, void *ctx)
{
	(void)frame;
	struct nvme *nv = ctx;
	if (!nv->io_ready)
		return; /* the admin queue, polled at probe */
	__atomic_fetch_add(&nv->interrupts, 1, __ATOMIC_RELAXED);
	struct block_request *request;
	int status;
	while (take_finished(nv, &request, &status)) {
		semaphore_up(&nv->free_slots);
		block_complete(request, status);
	}
}

static const struct block_ops nvme_ops = {.submit = nvme_submit};

static int nvme_start(struct nvme *nv, struct pci_device *pci)
{
	pci_enable_device(pci, PCI_ENABLE_MEMORY | PCI_ENABLE_BUS_MASTER);
	nv->regs = pci_map_bar(pci, 0);
	if (!nv->regs)
		return -ENODEV;
	nv->prp_lists = mm_alloc_pages(NVME_SLOTS, PAGE_SIZE);
	if (!nv->prp_lists)
		return -ENOMEM;
	int error = enable_controller(nv);
	if (!error)
		error = identify_namespace(nv);
	if (error)
		return error;
	int kind = pci_attach_irq(pci, PCI_IRQ_MSIX, nvme_irq, nv, "nvme");
	if (kind < 0)
		return kind;
	nv->irq_kind = (enum pci_irq_kind)kind;
	return create_io_queues(nv, kind == PCI_IRQ_MSIX || kind == PCI_IRQ_MSI ? 0 : NVME_INTX);
}

static int nvme_probe(struct pci_device *pci)
{
	struct nvme *nv = kzalloc(sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	nv->pci = pci;
	spin_init(&nv->lock, "nvme");
	semaphore_init(&nv->free_slots, NVME_SLOTS, "nvme.slots");
	int error = nvme_start(nv, pci);
	if (!error) {
		unsigned number = nvme_controllers++;
		memcpy(nv->block.name, "nvme0n1", 8);
		nv->block.name[4] = (char)('0' + number % 10);
		nv->block.max_sectors = NVME_MAX_BYTES / BLOCK_SECTOR_SIZE;
		nv->block.can_flush = true;
		nv->block.ops = &nvme_ops;
		nv->block.driver = nv;
		nv->io_ready = true;
		error = block_register(&nv->block);
	}
	if (error) {
		if (nv->regs)
			nvme_disable_controller(nv); /* stop all DMA */
		return error; /* nv stays: an interrupt handler may hold it */
	}
	pci->driver_data = nv;
	return 0;
}

PCI_DRIVER(nvme, 0x1b36, 0x0010, nvme_probe); /* QEMU's NVMe controller */
