/*
 * The virtio-blk driver (virtio 1.x, -device virtio-blk-pci, transitional or
 * disable-legacy=on), behind the block boundary (block/block.h).  Features:
 * VERSION_1 (required), RO, BLK_SIZE and FLUSH when offered.
 *
 * One request queue split into fixed slots of four descriptors: a slot's
 * chain is the 16-byte request header (device reads), the caller's buffer
 * (no copy: the device reads or writes it), and the status byte (device
 * writes).  Up to VIRTIO_BLK_SLOTS requests are in flight; a submitter waits
 * for a free slot on a semaphore.  Completion is interrupt-driven (MSI-X, or
 * INTx with the ISR register); the handler reads each used slot's status and
 * ends its request through block_complete: anything but OK is -EIO, and so is
 * a read whose used length is not its bytes and the status byte.  A device
 * offering BLK_SIZE other than 512 is refused.  A used
 * entry naming a descriptor the driver did not offer is skipped and counted
 * (virtio/queue.c), so a lying device cannot complete someone else's request.
 *
 * A device that stops answering: while requests are in flight a watchdog
 * timer looks every second; a request older than VIRTIO_BLK_TIMEOUT_NS makes
 * the device dead: later requests are refused with -EIO at once.  The driver
 * resets it without waiting (this is timer or interrupt context): it writes
 * status 0, and the watchdog looks every millisecond, 10 ms at most, for the
 * status to read 0 (from then on the device touches no buffer and raises no
 * interrupt); then every request in flight ends with -ETIMEDOUT: nothing
 * waits forever on a silent disk.  A device that does not read back reset
 * loses bus mastering, and its requests are never ended: their buffers are
 * not handed back while it might still write them.  A device whose used
 * index runs ahead of the requests it holds (virtio/queue.c breaks the
 * queue) is reset the same way, its requests ending with -EIO.
 */
#include "virtio/internal.h"

#include "block/block.h"
#include "console/console.h"
#include "lib/errno.h"
#include "lib/format.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "sched/sched.h"
#include "time/time.h"

/* Feature bits and request layout (virtio 1.x, 5.2). */
#define VIRTIO_BLK_F_RO            (1ull << 5)
#define VIRTIO_BLK_F_FLUSH         (1ull << 9)
#define VIRTIO_BLK_T_IN            0
#define VIRTIO_BLK_T_OUT           1
#define VIRTIO_BLK_T_FLUSH         4
#define VIRTIO_BLK_S_OK            0
#define VIRTIO_BLK_CONFIG_CAPACITY 0
#define VIRTIO_BLK_CONFIG_BLK_SIZE 20

#define VIRTIO_BLK_SLOT_DESCRIPTORS 4
#define VIRTIO_BLK_SLOTS            32
#define VIRTIO_BLK_MAX_SECTORS      256 /* 128 KiB per request */
#define VIRTIO_BLK_TIMEOUT_NS       (5 * NSEC_PER_SEC)
#define VIRTIO_BLK_WATCH_NS         NSEC_PER_SEC

#define VIRTIO_BLK_RESET_NS      (10 * NSEC_PER_MSEC) /* as virtio_reset_device waits */
#define VIRTIO_BLK_RESET_POLL_NS NSEC_PER_MSEC        /* a reset in progress looked at */

/* Lock held: arms the watchdog delay_ns from now unless it is armed. */
static void virtio_blk_arm(struct virtio_blk *vb, uint64_t delay_ns)
{
	if (!vb->watching)
		vb->watching = timer_arm_oneshot_ns(&vb->watchdog, clock_ns() + delay_ns,
						    virtio_blk_watchdog, vb) == 0;
}

/* Lock held: arms the watchdog unless it is armed or the device is dead. */
static void virtio_blk_watch(struct virtio_blk *vb)
{
	if (!vb->dead)
		virtio_blk_arm(vb, VIRTIO_BLK_WATCH_NS);
}

/* Lock held: whether a request in flight is older than the timeout (then
 * true), and whether any is in flight at all (*busy). */
static bool virtio_blk_stuck(struct virtio_blk *vb, bool *busy)
{
	uint64_t now = clock_ns();
	bool stuck = false;
	*busy = false;
	for (unsigned i = 0; i < vb->slot_count; i++) {
		struct block_request *request = vb->slots[i].request;
		if (request) {
			*busy = true;
			stuck |= now - request->queued_ns > VIRTIO_BLK_TIMEOUT_NS;
		}
	}
	return stuck;
}

/* Lock held: the device is dead (submit refuses, the interrupt takes
 * nothing more) and its reset begins.  Nothing waits for it here (this runs
 * in interrupt or timer context): the watchdog looks at it a poll later,
 * and the requests in flight end with status once it is over. */
static void virtio_blk_give_up(struct virtio_blk *vb, int status)
{
	vb->dead = true;
	vb->resetting = true;
	vb->ending_status = status;
	vb->reset_deadline_ns = clock_ns() + VIRTIO_BLK_RESET_NS;
	virtio_begin_reset(&vb->vdev);
	if (vb->watching && timer_cancel_oneshot(&vb->watchdog) == 0)
		vb->watching = false; /* armed a second ahead: sooner */
	virtio_blk_arm(vb, VIRTIO_BLK_RESET_POLL_NS);
}

/* What a reset that is over leaves: the requests that were in flight, and
 * whether the device read back reset.  If it did not, it may still use
 * their buffers: they stay in their slots and are never ended. */
struct virtio_blk_ending {
	struct block_request *requests[VIRTIO_BLK_SLOTS];
	unsigned count;
	bool reset;
};

/* Lock held: one step of a dead device's reset.  False while it is not
 * over; otherwise true with ending filled: the slots are emptied only when
 * the device read back reset, and past the deadline without that it loses
 * bus mastering. */
static bool virtio_blk_reset_step(struct virtio_blk *vb, struct virtio_blk_ending *ending)
{
	ending->reset = virtio_reset_done(&vb->vdev);
	if (!ending->reset && clock_ns() < vb->reset_deadline_ns)
		return false;
	if (!ending->reset)
		virtio_reset_failed(&vb->vdev);
	vb->resetting = false;
	ending->count = 0;
	for (unsigned i = 0; i < vb->slot_count; i++) {
		if (!vb->slots[i].request)
			continue;
		ending->requests[ending->count++] = vb->slots[i].request;
		if (ending->reset)
			vb->slots[i].request = NULL;
	}
	return true;
}

/* Why the device was given up on, for the warning. */
static void virtio_blk_why(int status, char *why, size_t size)
{
	if (status == -ETIMEDOUT)
		snprintf(why, size, "did not answer for %lu s",
			 (unsigned long)(VIRTIO_BLK_TIMEOUT_NS / NSEC_PER_SEC));
	else
		snprintf(why, size, "returned more requests than it held");
}

/* Frees the slots of the requests the reset took (a dead device's slots are
 * never used again, so a submitter waiting for one gets -EIO) and ends
 * them with the status give_up was given, unless the device never reset. */
static void virtio_blk_end_all(struct virtio_blk *vb, const struct virtio_blk_ending *ending)
{
	int status = vb->ending_status;
	char why[48];
	virtio_blk_why(status, why, sizeof why);
	if (ending->reset && ending->count)
		pr_warn("virtio-blk: %s %s: reset, %u requests %s\n", vb->block.name, why,
			ending->count, status == -ETIMEDOUT ? "timed out" : "failed");
	else if (!ending->reset)
		pr_warn("virtio-blk: %s %s and did not reset: bus mastering off, %u requests "
			"never end (the device may still use their buffers)\n",
			vb->block.name, why, ending->count);
	for (unsigned i = 0; i < ending->count; i++) {
		semaphore_up(&vb->free_slots);
		if (ending->reset)
			block_complete(ending->requests[i], status);
	}
}

/* The queue broke (the device claimed more requests done than it held): the
 * device is reset, every request in flight fails with -EIO and later ones
 * are refused. */
static void virtio_blk_fail_broken(struct virtio_blk *vb)
{
	uint64_t flags = spin_lock_irqsave(&vb->lock);
	if (!vb->dead)
		virtio_blk_give_up(vb, -EIO);
	spin_unlock_irqrestore(&vb->lock, flags);
}

void virtio_blk_watchdog(struct timer_oneshot *timer, void *ctx)
{
	(void)timer;
	struct virtio_blk *vb = ctx;
	struct virtio_blk_ending ending;
	bool busy = false, over = false;
	uint64_t flags = spin_lock_irqsave(&vb->lock);
	vb->watching = false;
	if (vb->resetting) {
		over = virtio_blk_reset_step(vb, &ending);
		if (!over)
			virtio_blk_arm(vb, VIRTIO_BLK_RESET_POLL_NS);
	} else if (!vb->dead && virtio_blk_stuck(vb, &busy)) {
		virtio_blk_give_up(vb, -ETIMEDOUT);
	} else if (busy) {
		virtio_blk_watch(vb);
	}
	spin_unlock_irqrestore(&vb->lock, flags);
	if (over)
		virtio_blk_end_all(vb, &ending);
}

static unsigned virtio_blk_devices;

static uint32_t virtio_blk_type(enum block_op op)
{
	return op == BLOCK_READ    ? VIRTIO_BLK_T_IN
	       : op == BLOCK_WRITE ? VIRTIO_BLK_T_OUT
				   : VIRTIO_BLK_T_FLUSH;
}

/* Called with the lock held: a free slot (the semaphore promised one). */
static unsigned virtio_blk_take_slot(struct virtio_blk *vb, struct block_request *request)
{
	unsigned slot = 0;
	while (vb->slots[slot].request)
		slot++;
	vb->slots[slot].request = request;
	/* not before: waiting for a slot is no sign of a stuck device */
	request->queued_ns = clock_ns();
	return slot;
}

static int virtio_blk_submit(struct block_device *device, struct block_request *request)
{
	struct virtio_blk *vb = device->driver;
	semaphore_down(&vb->free_slots);
	uint64_t flags = spin_lock_irqsave(&vb->lock);
	if (vb->dead) {
		spin_unlock_irqrestore(&vb->lock, flags);
		semaphore_up(&vb->free_slots);
		return -EIO;
	}
	unsigned index = virtio_blk_take_slot(vb, request);
	struct virtio_blk_slot *slot = &vb->slots[index];
	slot->header = (struct virtio_blk_header){.type = virtio_blk_type(request->op),
						  .sector = request->sector};
	slot->status = 0xff; /* a device that writes nothing does not look like OK */
	struct virtio_segment segments[3];
	unsigned count = 0;
	segments[count++] =
	    (struct virtio_segment){virt_to_phys(&slot->header), sizeof(slot->header), false};
	if (request->op != BLOCK_FLUSH)
		segments[count++] = (struct virtio_segment){virt_to_phys(request->buffer),
							    request->count * BLOCK_SECTOR_SIZE,
							    request->op == BLOCK_READ};
	segments[count++] =
	    (struct virtio_segment){virt_to_phys((const void *)&slot->status), 1, true};
	int error =
	    virtio_offer_chain(&vb->queue, index * VIRTIO_BLK_SLOT_DESCRIPTORS, segments, count);
	if (error) {
		slot->request = NULL;
	} else {
		virtio_kick_queue(&vb->queue);
		virtio_blk_watch(vb);
	}
	spin_unlock_irqrestore(&vb->lock, flags);
	if (error)
		semaphore_up(&vb->free_slots);
	return error;
}

int virtio_blk_request_status(const struct block_request *request, uint8_t status,
			      uint32_t used_length)
{
	if (status != VIRTIO_BLK_S_OK)
		return -EIO;
	if (request->op == BLOCK_READ &&
	    used_length != (uint64_t)request->count * BLOCK_SECTOR_SIZE + 1)
		return -EIO; /* the device wrote less (or claims more) than was asked */
	return 0;
}

bool virtio_blk_block_size_usable(uint64_t features, uint32_t block_size)
{
	return !(features & VIRTIO_BLK_F_BLK_SIZE) || block_size == BLOCK_SECTOR_SIZE;
}

/* Takes one finished request off the queue: true with *request and *status. */
static bool virtio_blk_take_finished(struct virtio_blk *vb, struct block_request **request,
				     int *status)
{
	unsigned id;
	uint32_t length;
	bool found = false;
	uint64_t flags = spin_lock_irqsave(&vb->lock);
	while (!found && !vb->dead && virtio_take_used(&vb->queue, &id, &length)) {
		struct virtio_blk_slot *slot = &vb->slots[id / VIRTIO_BLK_SLOT_DESCRIPTORS];
		if (id % VIRTIO_BLK_SLOT_DESCRIPTORS || !slot->request) {
			vb->queue.bad_used++;
			continue;
		}
		*request = slot->request;
		*status = virtio_blk_request_status(slot->request, slot->status, length);
		slot->request = NULL;
		found = true;
	}
	spin_unlock_irqrestore(&vb->lock, flags);
	return found;
}

void virtio_blk_irq(struct trap_frame *frame, void *ctx)
{
	(void)frame;
	struct virtio_blk *vb = ctx;
	if (vb->irq_kind == PCI_IRQ_INTX && !virtio_read_isr(&vb->vdev))
		return; /* another device on a shared line */
	if (!vb->io_ready)
		return; /* before the queue exists: nothing can have finished */
	__atomic_fetch_add(&vb->interrupts, 1, __ATOMIC_RELAXED);
	struct block_request *request;
	int status;
	while (virtio_blk_take_finished(vb, &request, &status)) {
		semaphore_up(&vb->free_slots);
		block_complete(request, status);
	}
	if (vb->queue.broken)
		virtio_blk_fail_broken(vb);
}

static const struct block_ops virtio_blk_ops = {
    .submit = virtio_blk_submit,
};

static uint64_t virtio_blk_capacity(struct virtio_blk *vb)
{
	uint64_t low = virtio_read_config32(&vb->vdev, VIRTIO_BLK_CONFIG_CAPACITY);
	uint64_t high = virtio_read_config32(&vb->vdev, VIRTIO_BLK_CONFIG_CAPACITY + 4);
	return high << 32 | low;
}

/* Interrupt, queue (its MSI-X entry depends on the interrupt's kind), slots,
 * DRIVER_OK.  The handler serves nothing until io_ready: an interrupt that
 * comes before the queue and slots exist finds nothing to read.  Returns 0
 * or an error. */
static int virtio_blk_start(struct virtio_blk *vb, struct pci_device *pci)
{
	int error = virtio_negotiate_features(
	    &vb->vdev, VIRTIO_BLK_F_RO | VIRTIO_BLK_F_BLK_SIZE | VIRTIO_BLK_F_FLUSH,
	    VIRTIO_F_VERSION_1);
	if (error)
		return error;
	if (!virtio_blk_block_size_usable(
		vb->vdev.features, virtio_read_config32(&vb->vdev, VIRTIO_BLK_CONFIG_BLK_SIZE)))
		return -ENODEV; /* the block layer speaks 512-byte sectors only */
	int kind = pci_attach_irq(pci, PCI_IRQ_MSIX, virtio_blk_irq, vb, "virtio-blk");
	if (kind < 0)
		return kind;
	vb->irq_kind = (enum pci_irq_kind)kind;
	uint16_t entry = kind == PCI_IRQ_MSIX ? 0 : VIRTIO_NO_VECTOR;
	error = virtio_setup_queue(&vb->vdev, &vb->queue, 0, VIRTIO_QUEUE_MAX, 16, entry);
	if (!error)
		error = virtio_set_config_vector(&vb->vdev, entry);
	if (error)
		return error;
	vb->slot_count = vb->queue.size / VIRTIO_BLK_SLOT_DESCRIPTORS;
	if (vb->slot_count > VIRTIO_BLK_SLOTS)
		vb->slot_count = VIRTIO_BLK_SLOTS;
	if (vb->slot_count == 0)
		return -ENODEV;
	vb->slots = mm_alloc_pages(1, PAGE_SIZE);
	if (!vb->slots)
		return -ENOMEM;
	memset(vb->slots, 0, PAGE_SIZE);
	semaphore_init(&vb->free_slots, vb->slot_count, "virtio-blk.slots");
	__atomic_store_n(&vb->io_ready, true, __ATOMIC_RELEASE);
	virtio_start_device(&vb->vdev);
	return 0;
}

static int virtio_blk_probe(struct pci_device *pci)
{
	_Static_assert(sizeof(struct virtio_blk_slot) * VIRTIO_BLK_SLOTS <= PAGE_SIZE,
		       "slots fit a page");
	struct virtio_blk *vb = kzalloc(sizeof(*vb));
	if (!vb)
		return -ENOMEM;
	spin_init(&vb->lock, "virtio-blk");
	int error = virtio_open_device(&vb->vdev, pci);
	if (error) {
		kfree(vb);
		return error;
	}
	error = virtio_blk_start(vb, pci);
	if (!error) {
		unsigned number = virtio_blk_devices++;
		vb->block.name[0] = 'v';
		vb->block.name[1] = 'd';
		vb->block.name[2] = (char)('a' + number % 26);
		vb->block.sectors = virtio_blk_capacity(vb);
		vb->block.max_sectors = VIRTIO_BLK_MAX_SECTORS;
		vb->block.read_only = vb->vdev.features & VIRTIO_BLK_F_RO;
		vb->block.can_flush = vb->vdev.features & VIRTIO_BLK_F_FLUSH;
		vb->block.ops = &virtio_blk_ops;
		vb->block.driver = vb;
		error = block_register(&vb->block);
	}
	if (error) {
		virtio_reset_device(&vb->vdev);
		return error; /* vb stays: an interrupt handler may hold it */
	}
	pci->driver_data = vb;
	return 0;
}

PCI_DRIVER(virtio_blk, 0x1af4, 0x1001, virtio_blk_probe); /* transitional */
PCI_DRIVER(virtio_blk, 0x1af4, 0x1042, virtio_blk_probe); /* modern only */
