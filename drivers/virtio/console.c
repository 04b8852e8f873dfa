/*
 * The virtio console driver (virtio 1.0 console device, id 3: PCI 0x1043, or
 * 0x1003 transitional with the modern capabilities).  Features: VERSION_1 and
 * MULTIPORT when offered.
 *
 * With MULTIPORT the driver uses one named port, VCON_PORT (1), and its
 * queues 4 and 5: a port that is not a console, which QEMU throttles (it
 * holds the guest's buffers while the host's side does not take the bytes)
 * where it drops what a console port's host side does not take at once.  At
 * probe the driver offers the control receive buffers, sends DEVICE_READY,
 * answers the device's DEVICE_ADD of VCON_PORT with PORT_READY and its
 * PORT_NAME with PORT_OPEN (the guest's end open); without a port of that
 * number and name the device is not used.  PORT_OPEN from the device says
 * whether the host's end is connected: writers wait while it is not, since
 * QEMU discards what reaches a port nobody is connected to.  Without
 * MULTIPORT there is port 0 with queues 0 and 1 and no control queues.
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
 * in the device's order, and gives the buffer back.  Control messages are
 * taken by the worker and by a writer waiting for the host (under
 * control_lock), so a receiver that answers while the host is away cannot
 * keep the news of its return from arriving.
 *
 * The device is not trusted: used entries naming a buffer it does not own are
 * skipped (virtio/queue.c), a length beyond the buffer is dropped and counted,
 * a control message of the wrong size is ignored and counted.  A device that
 * reports NEEDS_RESET or FAILED, breaks a queue (a used index ahead of the
 * buffers it holds) or removes the port makes writes fail with -EIO.
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
/* The probe's wait for the device to announce and name VCON_PORT: it gives
 * up once the device has taken every message sent and said nothing for
 * VCON_HANDSHAKE_QUIET_POLLS polls a millisecond apart, or at the latest
 * after VCON_HANDSHAKE_NS (QEMU answers within the kick). */
#define VCON_HANDSHAKE_NS          (2000 * NSEC_PER_MSEC)
#define VCON_HANDSHAKE_QUIET_POLLS 10

static struct vcon *vcon_device; /* published once started, never removed */

static void vcon_add(uint64_t *counter, uint64_t amount)
{
	__atomic_fetch_add(counter, amount, __ATOMIC_RELAXED);
}

void vcon_init_state(struct vcon *vc)
{
	mutex_init(&vc->write_lock, "vcon.write");
	mutex_init(&vc->receiver_lock, "vcon.receiver");
	mutex_init(&vc->control_lock, "vcon.control");
	waitq_init(&vc->tx_waiters, "vcon.tx");
	waitq_init(&vc->worker_queue, "vcon.worker");
}

static bool vcon_check_device(struct vcon *vc)
{
	uint8_t status = virtio_read_status(&vc->vdev);
	if (status & (VIRTIO_STATUS_NEEDS_RESET | VIRTIO_STATUS_FAILED) || vc->rx.broken ||
	    vc->tx.broken || vc->control_rx.broken || vc->control_tx.broken)
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
 * Returns 0 or -EIO.  A wait is counted once used-buffer interrupts are
 * allowed (the fence orders the two), so whoever sees the count sees them
 * allowed. */
static int vcon_wait_tx(struct vcon *vc)
{
	virtio_allow_interrupts(&vc->tx);
	vcon_add(&vc->counters.tx_waits, 1);
	while (vcon_check_device(vc) &&
	       waitq_wait_timeout(&vc->tx_waiters, vcon_tx_ready, vc, VCON_STATUS_RECHECK_NS))
		;
	virtio_suppress_interrupts(&vc->tx);
	return vc->failed ? -EIO : 0;
}

/* The host came, the device broke, or the device said something that may
 * be about the host (to be taken by whoever comes first). */
static bool vcon_host_news(void *arg)
{
	struct vcon *vc = arg;
	return vc->host_open || vc->failed || (vc->multiport && virtio_has_used(&vc->control_rx));
}

/* The host's end is not connected (MULTIPORT only): sleep until it is, taking
 * the control messages that say so (the worker may be busy in a receiver
 * that writes).  Returns 0 or -EIO. */
static int vcon_wait_host(struct vcon *vc)
{
	vcon_add(&vc->counters.host_waits, 1);
	for (;;) {
		vcon_poll_control(vc);
		if (!vcon_check_device(vc) || vc->host_open)
			break;
		waitq_wait_timeout(&vc->tx_waiters, vcon_host_news, vc, VCON_STATUS_RECHECK_NS);
	}
	return vc->failed ? -EIO : 0;
}

/* Descriptors a departed host's connection left with the device, which has
 * since returned a newer one: it works in order, so it dropped them. */
static void vcon_forget_departed(struct vcon *vc, uint32_t epoch)
{
	for (unsigned id = 0; id < vc->tx.size; id++)
		if (virtio_buffer_in_flight(&vc->tx, id) && vc->tx_epoch[id] != epoch) {
			virtio_forget_buffer(&vc->tx, id);
			vcon_add(&vc->counters.tx_lost, 1);
		}
}

static void vcon_reclaim_tx(struct vcon *vc)
{
	mutex_assert_held(&vc->write_lock);
	unsigned id;
	uint32_t length;
	bool returned_this_hosts = false;
	uint32_t epoch = __atomic_load_n(&vc->host_epoch, __ATOMIC_ACQUIRE);
	while (virtio_take_used(&vc->tx, &id, &length))
		returned_this_hosts |= vc->tx_epoch[id] == epoch;
	if (returned_this_hosts && vc->clean_epoch != epoch) {
		vcon_forget_departed(vc,
				     epoch); /* the device went past what a departed host's left */
		vc->clean_epoch = epoch;
	}
}

/* Is a descriptor offered for the host connected now still with the device? */
static bool vcon_this_hosts_in_flight(struct vcon *vc)
{
	if (vc->tx.free_count == vc->tx.size) /* the usual answers, without the walk */
		return false;
	uint32_t epoch = __atomic_load_n(&vc->host_epoch, __ATOMIC_ACQUIRE);
	if (vc->clean_epoch == epoch)
		return true;
	for (unsigned id = 0; id < vc->tx.size; id++)
		if (virtio_buffer_in_flight(&vc->tx, id) && vc->tx_epoch[id] == epoch)
			return true;
	return false;
}

/* Notes the host's epoch on descriptor id, just offered. */
static void vcon_note_offer(struct vcon *vc, int id)
{
	vc->tx_epoch[id] = __atomic_load_n(&vc->host_epoch, __ATOMIC_ACQUIRE);
}

/* Offers up to one buffer's worth of data in a free transmit descriptor:
 * copied into the queue's own buffer, or lent (vcon_send_lent: the
 * descriptor points at the caller's memory, no longer than a buffer, so the
 * device sees what a copy would have given it).  Returns the bytes taken, or
 * 0 when every descriptor is with the device. */
static size_t vcon_offer(struct vcon *vc, const uint8_t *data, size_t length, bool lent)
{
	vcon_reclaim_tx(vc);
	int id = virtio_find_free_buffer(&vc->tx);
	if (id < 0)
		return 0;
	size_t chunk = length < VCON_BUFFER ? length : VCON_BUFFER;
	if (lent) {
		virtio_offer_external(&vc->tx, (unsigned)id, virt_to_phys(data), (uint32_t)chunk);
	} else {
		memcpy(virtio_queue_buffer(&vc->tx, (unsigned)id), data, chunk);
		virtio_offer_buffer(&vc->tx, (unsigned)id, (uint32_t)chunk, false);
	}
	vcon_note_offer(vc, id);
	return chunk;
}

static int vcon_send_as(struct vcon *vc, const void *data, size_t length, bool lent)
{
	const uint8_t *bytes = data;
	size_t sent = 0;
	int error = 0;
	mutex_lock(&vc->write_lock);
	if (vc->failed)
		error = -EIO;
	while (!error && sent < length) {
		if (!vc->host_open) {
			virtio_kick_queue(&vc->tx); /* what was offered so far goes now */
			error = vcon_wait_host(vc);
			continue;
		}
		size_t chunk = vcon_offer(vc, bytes + sent, length - sent, lent);
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

int vcon_send(struct vcon *vc, const void *data, size_t length)
{
	return vcon_send_as(vc, data, length, false);
}

int vcon_send_lent(struct vcon *vc, const void *data, size_t length)
{
	return vcon_send_as(vc, data, length, true);
}

bool vcon_taken(struct vcon *vc)
{
	mutex_lock(&vc->write_lock);
	vcon_reclaim_tx(vc);
	bool taken = vc->failed || !vcon_this_hosts_in_flight(vc);
	mutex_unlock(&vc->write_lock);
	return taken;
}

int vcon_drain(struct vcon *vc)
{
	int error = 0;
	mutex_lock(&vc->write_lock);
	for (;;) {
		vcon_reclaim_tx(vc);
		if (vc->failed)
			error = -EIO;
		if (error || !vcon_this_hosts_in_flight(vc))
			break;
		error = vcon_wait_tx(vc);
	}
	mutex_unlock(&vc->write_lock);
	return error;
}

/* ---- Control (MULTIPORT) -------------------------------------------------- */

void vcon_fill_control(struct vcon *vc)
{
	int id;
	mutex_lock(&vc->control_lock);
	while ((id = virtio_find_free_buffer(&vc->control_rx)) >= 0)
		virtio_offer_buffer(&vc->control_rx, (unsigned)id, VCON_CONTROL_BUFFER, true);
	virtio_kick_queue(&vc->control_rx);
	mutex_unlock(&vc->control_lock);
}

static int vcon_send_control_locked(struct vcon *vc, uint32_t id, uint16_t event, uint16_t value)
{
	mutex_assert_held(&vc->control_lock);
	unsigned used;
	uint32_t length;
	while (virtio_take_used(&vc->control_tx, &used, &length))
		;
	int buffer = virtio_find_free_buffer(&vc->control_tx);
	if (buffer < 0) {
		vcon_add(&vc->counters.control_unsent, 1);
		return -EAGAIN;
	}
	struct vcon_control message = {.id = id, .event = event, .value = value};
	memcpy(virtio_queue_buffer(&vc->control_tx, (unsigned)buffer), &message, sizeof(message));
	virtio_offer_buffer(&vc->control_tx, (unsigned)buffer, sizeof(message), false);
	virtio_kick_queue(&vc->control_tx);
	return 0;
}

int vcon_send_control(struct vcon *vc, uint32_t id, uint16_t event, uint16_t value)
{
	mutex_lock(&vc->control_lock);
	int error = vcon_send_control_locked(vc, id, event, value);
	mutex_unlock(&vc->control_lock);
	return error;
}

/* PORT_NAME's name: the bytes after the message, up to a NUL or the end. */
static bool vcon_name_is_ours(const uint8_t *name, size_t length)
{
	size_t ours = sizeof(VCON_PORT_NAME) - 1;
	if (length > ours && name[ours] == 0)
		length = ours;
	return length == ours && memcmp(name, VCON_PORT_NAME, ours) == 0;
}

static void vcon_set_host_open(struct vcon *vc, bool open)
{
	if (!open && vc->host_open) /* a new epoch: what the host left may be dropped */
		__atomic_fetch_add(&vc->host_epoch, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&vc->host_open, open, __ATOMIC_SEQ_CST);
	waitq_wake_all(&vc->tx_waiters);
}

static void vcon_control_message(struct vcon *vc, const uint8_t *bytes, uint32_t length)
{
	struct vcon_control message;
	if (length < sizeof(message) || length > VCON_CONTROL_BUFFER) {
		vcon_add(&vc->counters.control_bad, 1);
		return;
	}
	memcpy(&message, bytes, sizeof(message));
	if (message.id != VCON_PORT)
		return; /* another port: not ours to drive */
	switch (message.event) {
	case VCON_MSG_DEVICE_ADD:
		vc->port_added = true;
		vcon_send_control_locked(vc, VCON_PORT, VCON_MSG_PORT_READY, 1);
		break;
	case VCON_MSG_PORT_NAME:
		if (vc->port_added && !vc->port_named &&
		    vcon_name_is_ours(bytes + sizeof(message), length - sizeof(message))) {
			vc->port_named = true;
			vcon_send_control_locked(vc, VCON_PORT, VCON_MSG_PORT_OPEN, 1);
		}
		break;
	case VCON_MSG_PORT_OPEN: vcon_set_host_open(vc, vc->port_named && message.value); break;
	case VCON_MSG_DEVICE_REMOVE:
		if (vc->port_named)
			vc->failed = true; /* the stream's port is gone for good */
		vcon_set_host_open(vc, false);
		break;
	default: break; /* CONSOLE_PORT, RESIZE: nothing to do */
	}
}

unsigned vcon_poll_control(struct vcon *vc)
{
	if (!vc->multiport)
		return 0;
	unsigned taken = 0, id;
	uint32_t length;
	mutex_lock(&vc->control_lock);
	while (virtio_take_used(&vc->control_rx, &id, &length)) {
		vcon_add(&vc->counters.control_in, 1);
		vcon_control_message(vc, virtio_queue_buffer(&vc->control_rx, id), length);
		virtio_offer_buffer(&vc->control_rx, id, VCON_CONTROL_BUFFER, true);
		taken++;
	}
	if (taken)
		virtio_kick_queue(&vc->control_rx);
	mutex_unlock(&vc->control_lock);
	return taken;
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
		vcon_poll_control(vc);
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

int vcon_write_lent(const void *data, size_t length)
{
	struct vcon *vc = vcon_current();
	return vc ? vcon_send_lent(vc, data, length) : -ENODEV;
}

bool vcon_flushed(void)
{
	struct vcon *vc = vcon_current();
	return !vc || vcon_taken(vc);
}

int vcon_flush(void)
{
	struct vcon *vc = vcon_current();
	return vc ? vcon_drain(vc) : -ENODEV;
}

uint32_t vcon_host_epoch(void)
{
	struct vcon *vc = vcon_current();
	return vc ? __atomic_load_n(&vc->host_epoch, __ATOMIC_ACQUIRE) : 0;
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
	stats->host_waits = __atomic_load_n(&vc->counters.host_waits, __ATOMIC_RELAXED);
	stats->tx_waits = __atomic_load_n(&vc->counters.tx_waits, __ATOMIC_RELAXED);
}

/* ---- Probe --------------------------------------------------------------- */

/* The data queues (port 0's, or VCON_PORT's) and with MULTIPORT the control
 * queues.  Returns 0 or an error. */
static int vcon_setup_queues(struct vcon *vc, uint16_t entry)
{
	unsigned rx = vc->multiport ? VCON_PORT_RX_QUEUE : VCON_RX_QUEUE;
	unsigned tx = vc->multiport ? VCON_PORT_TX_QUEUE : VCON_TX_QUEUE;
	int error = virtio_setup_queue(&vc->vdev, &vc->rx, rx, VCON_RX_BUFFERS, VCON_BUFFER, entry);
	if (!error)
		error =
		    virtio_setup_queue(&vc->vdev, &vc->tx, tx, VCON_TX_BUFFERS, VCON_BUFFER, entry);
	if (!error && vc->multiport)
		error = virtio_setup_queue(&vc->vdev, &vc->control_rx, VCON_CONTROL_RX_QUEUE,
					   VCON_CONTROL_RX_BUFFERS, VCON_CONTROL_BUFFER, entry);
	if (!error && vc->multiport)
		error = virtio_setup_queue(&vc->vdev, &vc->control_tx, VCON_CONTROL_TX_QUEUE,
					   VCON_CONTROL_TX_BUFFERS, VCON_CONTROL_BUFFER, entry);
	return error;
}

/* MULTIPORT, VCON_PORT within the device's ports, or neither.  Returns 0 or
 * -ENODEV (MULTIPORT with too few ports). */
static int vcon_negotiate(struct vcon *vc)
{
	int error =
	    virtio_negotiate_features(&vc->vdev, VIRTIO_CONSOLE_F_MULTIPORT, VIRTIO_F_VERSION_1);
	if (error)
		return error;
	vc->multiport = (vc->vdev.features & VIRTIO_CONSOLE_F_MULTIPORT) != 0;
	vc->host_open = !vc->multiport; /* port 0 alone: nothing says otherwise */
	if (!vc->multiport)
		return 0;
	uint32_t max_ports = virtio_read_config16(&vc->vdev, VCON_CONFIG_MAX_NR_PORTS) |
			     (uint32_t)virtio_read_config16(&vc->vdev, VCON_CONFIG_MAX_NR_PORTS + 2)
				 << 16;
	return max_ports > VCON_PORT ? 0 : -ENODEV;
}

/* True when the device has taken every control message sent. */
static bool vcon_control_tx_idle(struct vcon *vc)
{
	unsigned id;
	uint32_t length;
	mutex_lock(&vc->control_lock);
	while (virtio_take_used(&vc->control_tx, &id, &length))
		;
	bool idle = vc->control_tx.free_count == vc->control_tx.size;
	mutex_unlock(&vc->control_lock);
	return idle;
}

/* After DRIVER_OK with MULTIPORT: DEVICE_READY, then the device's answers
 * until VCON_PORT is announced and named, or the device has gone quiet
 * without.  Returns 0 or -ENODEV (no such port). */
static int vcon_find_port(struct vcon *vc)
{
	vcon_fill_control(vc);
	if (vcon_send_control(vc, VCON_NO_PORT, VCON_MSG_DEVICE_READY, 1))
		return -ENODEV;
	uint64_t deadline = clock_ns() + VCON_HANDSHAKE_NS;
	unsigned quiet = 0;
	while (!vc->port_named && vcon_check_device(vc) && quiet < VCON_HANDSHAKE_QUIET_POLLS &&
	       clock_ns() < deadline) {
		bool answered = vcon_poll_control(vc) > 0;
		quiet = answered || !vcon_control_tx_idle(vc) ? 0 : quiet + 1;
		if (!vc->port_named)
			sched_sleep_ns(NSEC_PER_MSEC);
	}
	return vc->port_named ? 0 : -ENODEV;
}

/* Features, interrupt, queues, DRIVER_OK, the port (MULTIPORT), the receive
 * worker.  Returns 0 or an error. */
static int vcon_start(struct vcon *vc, struct pci_device *pci)
{
	int error = vcon_negotiate(vc);
	if (error)
		return error;
	int kind = pci_attach_irq(pci, PCI_IRQ_MSIX, vcon_irq, vc, "virtio-console");
	if (kind < 0)
		return kind;
	vc->irq_kind = (enum pci_irq_kind)kind;
	uint16_t entry = kind == PCI_IRQ_MSIX ? 0 : VIRTIO_NO_VECTOR;
	error = vcon_setup_queues(vc, entry);
	if (!error)
		error = virtio_set_config_vector(&vc->vdev, entry);
	if (error)
		return error;
	virtio_suppress_interrupts(&vc->tx);
	virtio_start_device(&vc->vdev);
	if (vc->multiport) {
		error = vcon_find_port(vc);
		if (error) {
			pr_warn("vcon: virtio-serial without port %u named %s: not used\n",
				VCON_PORT, VCON_PORT_NAME);
			return error;
		}
	}
	vc->worker = thread_create(vcon_worker, vc, "vcon-rx", SCHED_PRIORITY_NORMAL);
	return vc->worker ? 0 : -ENOMEM;
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
	if (vc->multiport)
		pr_info(
		    "vcon: virtio console, port %u (%s, host %s), %u+%u buffers of %u bytes, %s\n",
		    VCON_PORT, VCON_PORT_NAME, vc->host_open ? "connected" : "not connected",
		    vc->rx.size, vc->tx.size, VCON_BUFFER, irq_names[vc->irq_kind]);
	else
		pr_info("vcon: virtio console, port 0, %u+%u buffers of %u bytes, %s\n",
			vc->rx.size, vc->tx.size, VCON_BUFFER, irq_names[vc->irq_kind]);
	return 0;
}

PCI_DRIVER(virtio_console, 0x1af4, 0x1003, vcon_probe); /* transitional */
PCI_DRIVER(virtio_console, 0x1af4, 0x1043, vcon_probe); /* modern only */
