/*
 * The virtio console driver (virtio 1.0 console device, id 3: PCI 0x1043, or
 * 0x1003 transitional with the modern capabilities).  Features: VERSION_1
 * only.  MULTIPORT is never accepted, so the device has one port, port 0,
 * with its receiveq (queue 0) and transmitq (queue 1), and no control queues.
 *
 * Transmit is built for a stream of MB/s: a writer copies into the transmit
 * queue's fixed 4 KiB buffers (VCON_TX_BUFFERS of them), offers all it
 * filled and kicks once per call, and never waits for the device to finish
 * unless every buffer is with the device.  Finished buffers are reclaimed by
 * the next writer; transmit-used interrupts stay suppressed except while a
 * writer sleeps for a buffer.  write_lock serialises writers and is the only
 * guard of the transmit queue, so one call's bytes are contiguous.  QEMU
 * works through a kick in its own thread, after the kick returns: a flush
 * (all buffers back) is what makes sure bytes left before the machine stops.
 *
 * Receive: VCON_RX_BUFFERS 4 KiB buffers, offered only once a receiver is
 * first set (until then the host's bytes wait in the host).  The interrupt
 * only wakes the receive worker, the one thread that touches the receive
 * queue; it delivers each used buffer to the receiver under receiver_lock,
 * in the device's order, and gives the buffer back.
 *
 * The device is not trusted: used entries naming a buffer it does not own are
 * skipped (virtio/queue.c), a length beyond the buffer is dropped and counted.
 * A device that reports NEEDS_RESET or FAILED makes writes fail with -EIO.
 *
 * No join points here: the trace stream itself leaves through vcon_write, and
 * recording it would record the recorder.
 */
#include "virtio/console_internal.h"

#include "console/console.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "time/time.h"

/* How often a writer waiting for a buffer re-reads the device status, in
 * case the device breaks without a configuration interrupt. */
#define VCON_STATUS_RECHECK_NS (1000 * NSEC_PER_MSEC)

static struct vcon *vcon_device; /* published once started, never removed */

static void vcon_add(uint64_t *counter, uint64_t amount)
{
	__atomic_fetch_add(counter, amount, __ATOMIC_RELAXED);
}

void vcon_init_state(struct vcon *vc)
{
	mutex_init(&vc->write_lock, "vcon.write");
	mutex_init(&vc->receiver_lock, "vcon.receiver");
	waitq_init(&vc->tx_waiters, "vcon.tx");
	waitq_init(&vc->worker_queue, "vcon.worker");
}

static bool vcon_check_device(struct vcon *vc)
{
	uint8_t status = virtio_read_status(&vc->vdev);
	if (status & (VIRTIO_STATUS_NEEDS_RESET | VIRTIO_STATUS_FAILED))
		vc->failed = true;
	return !vc->failed;
}

/* ---- Transmit ------------------------------------------------------------ */

static bool vcon_tx_ready(void *arg)
{
	struct vcon *vc = arg;
	return virtio_has_used(&vc->tx) || vc->failed;
}

/* Every buffer is with the device: sleep until it returns one or fails.
 * Returns 0 or -EIO. */
static int vcon_wait_tx(struct vcon *vc)
{
	vcon_add(&vc->counters.tx_waits, 1);
	virtio_allow_interrupts(&vc->tx);
	while (vcon_check_device(vc) &&
	       waitq_wait_timeout(&vc->tx_waiters, vcon_tx_ready, vc, VCON_STATUS_RECHECK_NS))
		;
	virtio_suppress_interrupts(&vc->tx);
	return vc->failed ? -EIO : 0;
}

static void vcon_reclaim_tx(struct vcon *vc)
{
	mutex_assert_held(&vc->write_lock);
	unsigned id;
	uint32_t length;
	while (virtio_take_used(&vc->tx, &id, &length))
		;
}

/* Copies up to one buffer of data into a free transmit buffer and offers it.
 * Returns the bytes taken, or 0 when every buffer is with the device. */
static size_t vcon_offer_chunk(struct vcon *vc, const uint8_t *data, size_t length)
{
	vcon_reclaim_tx(vc);
	int id = virtio_find_free_buffer(&vc->tx);
	if (id < 0)
		return 0;
	size_t chunk = length < VCON_BUFFER ? length : VCON_BUFFER;
	memcpy(virtio_queue_buffer(&vc->tx, (unsigned)id), data, chunk);
	virtio_offer_buffer(&vc->tx, (unsigned)id, (uint32_t)chunk, false);
	return chunk;
}

int vcon_send(struct vcon *vc, const void *data, size_t length)
{
	const uint8_t *bytes = data;
	size_t sent = 0;
	int error = 0;
	mutex_lock(&vc->write_lock);
	if (vc->failed)
		error = -EIO;
	while (!error && sent < length) {
		size_t chunk = vcon_offer_chunk(vc, bytes + sent, length - sent);
		if (chunk) {
			sent += chunk;
			continue;
		}
		virtio_kick_queue(&vc->tx); /* what was offered so far goes now */
		error = vcon_wait_tx(vc);
	}
	if (sent) {
		virtio_kick_queue(&vc->tx);
		vcon_add(&vc->counters.bytes_out, sent);
		vcon_add(&vc->counters.writes, 1);
	}
	mutex_unlock(&vc->write_lock);
	return error;
}

int vcon_drain(struct vcon *vc)
{
	int error = 0;
	mutex_lock(&vc->write_lock);
	for (;;) {
		vcon_reclaim_tx(vc);
		if (vc->failed)
			error = -EIO;
		if (error || vc->tx.free_count == vc->tx.size)
			break;
		error = vcon_wait_tx(vc);
	}
	mutex_unlock(&vc->write_lock);
	return error;
}

/* ---- Receive ------------------------------------------------------------- */

unsigned vcon_fill_rx(struct vcon *vc)
{
	unsigned offered = 0;
	int id;
	while ((id = virtio_find_free_buffer(&vc->rx)) >= 0)
		if (virtio_offer_buffer(&vc->rx, (unsigned)id, VCON_BUFFER, true) == 0)
			offered++;
	return offered;
}

static void vcon_deliver(struct vcon *vc, unsigned id, uint32_t length)
{
	mutex_assert_held(&vc->receiver_lock);
	if (length > VCON_BUFFER) {
		vcon_add(&vc->counters.rx_bad_length, 1);
		vcon_add(&vc->counters.rx_buffers_dropped, 1);
	} else if (!vc->receive) {
		vcon_add(&vc->counters.rx_buffers_dropped, 1);
	} else if (length) {
		vc->receive(virtio_queue_buffer(&vc->rx, id), length, vc->receive_arg);
		vcon_add(&vc->counters.bytes_in, length);
	}
}

unsigned vcon_receive(struct vcon *vc, unsigned budget)
{
	unsigned taken = 0, id;
	uint32_t length;
	mutex_lock(&vc->receiver_lock);
	while (taken < budget && virtio_take_used(&vc->rx, &id, &length)) {
		vcon_deliver(vc, id, length);
		virtio_offer_buffer(&vc->rx, id, VCON_BUFFER, true);
		taken++;
	}
	mutex_unlock(&vc->receiver_lock);
	if (taken)
		virtio_kick_queue(&vc->rx);
	return taken;
}

static bool vcon_worker_has_work(void *arg)
{
	struct vcon *vc = arg;
	return vc->rx_pending || (vc->fill_requested && !vc->rx_filled);
}

static int vcon_worker(void *arg)
{
	struct vcon *vc = arg;
	for (;;) {
		waitq_wait(&vc->worker_queue, vcon_worker_has_work, vc);
		__atomic_store_n(&vc->rx_pending, false, __ATOMIC_SEQ_CST);
		if (vc->fill_requested && !vc->rx_filled) {
			vcon_fill_rx(vc);
			vc->rx_filled = true;
			virtio_kick_queue(&vc->rx);
		}
		while (vcon_receive(vc, VCON_RX_BUDGET) == VCON_RX_BUDGET)
			sched_yield();
	}
	return 0;
}

static void vcon_set_receiver_of(struct vcon *vc, vcon_receive_fn receive, void *arg)
{
	bool from_receiver = thread_current() == vc->worker;
	if (!from_receiver)
		mutex_lock(&vc->receiver_lock);
	vc->receive = receive;
	vc->receive_arg = arg;
	if (!from_receiver)
		mutex_unlock(&vc->receiver_lock);
	if (receive && !vc->fill_requested) {
		vc->fill_requested = true;
		waitq_wake_all(&vc->worker_queue);
	}
}

/* ---- Interrupts ---------------------------------------------------------- */

void vcon_notify(struct vcon *vc)
{
	vcon_check_device(vc);
	__atomic_store_n(&vc->rx_pending, true, __ATOMIC_SEQ_CST);
	waitq_wake_all(&vc->worker_queue);
	waitq_wake_all(&vc->tx_waiters);
}

static void vcon_irq(struct trap_frame *frame, void *ctx)
{
	(void)frame;
	struct vcon *vc = ctx;
	if (vc->irq_kind == PCI_IRQ_INTX && !virtio_read_isr(&vc->vdev))
		return; /* another device on a shared line */
	vcon_add(&vc->counters.interrupts, 1);
	vcon_notify(vc);
}

/* ---- The API ------------------------------------------------------------- */

static struct vcon *vcon_current(void)
{
	return __atomic_load_n(&vcon_device, __ATOMIC_ACQUIRE);
}

bool vcon_present(void)
{
	return vcon_current() != NULL;
}

int vcon_write(const void *data, size_t length)
{
	struct vcon *vc = vcon_current();
	return vc ? vcon_send(vc, data, length) : -ENODEV;
}

int vcon_flush(void)
{
	struct vcon *vc = vcon_current();
	return vc ? vcon_drain(vc) : -ENODEV;
}

void vcon_set_receiver(vcon_receive_fn receive, void *arg)
{
	struct vcon *vc = vcon_current();
	if (vc)
		vcon_set_receiver_of(vc, receive, arg);
}

void vcon_get_stats(struct vcon_stats *stats)
{
	struct vcon *vc = vcon_current();
	*stats = (struct vcon_stats){0};
	if (!vc)
		return;
	stats->bytes_out = __atomic_load_n(&vc->counters.bytes_out, __ATOMIC_RELAXED);
	stats->bytes_in = __atomic_load_n(&vc->counters.bytes_in, __ATOMIC_RELAXED);
	stats->writes = __atomic_load_n(&vc->counters.writes, __ATOMIC_RELAXED);
	stats->rx_buffers_dropped =
	    __atomic_load_n(&vc->counters.rx_buffers_dropped, __ATOMIC_RELAXED);
}

/* ---- Probe --------------------------------------------------------------- */

/* Features, interrupt, queues, the receive worker, DRIVER_OK.  Returns 0 or
 * an error. */
static int vcon_start(struct vcon *vc, struct pci_device *pci)
{
	int error = virtio_negotiate_features(&vc->vdev, 0, VIRTIO_F_VERSION_1);
	if (error)
		return error;
	int kind = pci_attach_irq(pci, PCI_IRQ_MSIX, vcon_irq, vc, "virtio-console");
	if (kind < 0)
		return kind;
	vc->irq_kind = (enum pci_irq_kind)kind;
	uint16_t entry = kind == PCI_IRQ_MSIX ? 0 : VIRTIO_NO_VECTOR;
	error = virtio_setup_queue(&vc->vdev, &vc->rx, VCON_RX_QUEUE, VCON_RX_BUFFERS, VCON_BUFFER,
				   entry);
	if (!error)
		error = virtio_setup_queue(&vc->vdev, &vc->tx, VCON_TX_QUEUE, VCON_TX_BUFFERS,
					   VCON_BUFFER, entry);
	if (!error)
		error = virtio_set_config_vector(&vc->vdev, entry);
	if (error)
		return error;
	virtio_suppress_interrupts(&vc->tx);
	vc->worker = thread_create(vcon_worker, vc, "vcon-rx", SCHED_PRIORITY_NORMAL);
	if (!vc->worker)
		return -ENOMEM;
	virtio_start_device(&vc->vdev);
	return 0;
}

static int vcon_probe(struct pci_device *pci)
{
	if (vcon_current())
		return -EBUSY; /* one console: the first found */
	struct vcon *vc = kzalloc(sizeof(*vc));
	if (!vc)
		return -ENOMEM;
	vcon_init_state(vc);
	int error = virtio_open_device(&vc->vdev, pci);
	if (error) {
		kfree(vc);
		return error;
	}
	error = vcon_start(vc, pci);
	if (error) {
		virtio_reset_device(&vc->vdev);
		return error; /* vc stays: an interrupt handler or the worker may hold it */
	}
	pci->driver_data = vc;
	__atomic_store_n(&vcon_device, vc, __ATOMIC_RELEASE);
	static const char *const irq_names[] = {"none", "INTx", "MSI", "MSI-X"};
	pr_info("vcon: virtio console, port 0, %u+%u buffers of %u bytes, %s\n", vc->rx.size,
		vc->tx.size, VCON_BUFFER, irq_names[vc->irq_kind]);
	return 0;
}

PCI_DRIVER(virtio_console, 0x1af4, 0x1003, vcon_probe); /* transitional */
PCI_DRIVER(virtio_console, 0x1af4, 0x1043, vcon_probe); /* modern only */
