/*
 * The virtio-net driver (virtio 1.0, -device virtio-net-pci, transitional or
 * disable-legacy=on).  Features: VERSION_1 (required); MAC and STATUS when
 * offered; CSUM, and HOST_TSO4 with it, when offered (a host TAP backend
 * offers them, QEMU's user network does not).
 *
 * Receive: one receive and one transmit queue, VIRTIO_QUEUE_MAX descriptors
 * each, fixed 2 KiB buffers; every receive buffer holds one whole frame
 * behind a 12-byte header (no mergeable buffers, no receive offloads).
 *
 * Transmit: with CSUM the device completes every TCP frame's checksum
 * (nic.tx_tcp_checksum), so the stack leaves them out.  A large TCP frame
 * from the stack (transmit_segmented) goes to the device whole where
 * HOST_TSO4 was negotiated: one descriptor, a run of pages of the large-frame
 * area (large.c), a header asking for TCPv4 segmentation and the checksum.
 * Else the driver cuts it into segments itself (net/segment.c), one 2 KiB
 * buffer each, behind one kick.
 *
 * Interrupts: one MSI-X vector for both queues and configuration changes
 * (INTx with the ISR register when MSI-X is unavailable).  The NIC module
 * masks and unmasks through used-buffer notification suppression on the
 * receive queue (VIRTQ_AVAIL_F_NO_INTERRUPT); transmit completions never
 * interrupt: transmit reclaims finished buffers itself, and so does poll.
 * Suppression is only a hint, so the handler may still run while masked: it
 * then counts the interrupt and does nothing else.
 *
 * The device is not trusted: a used entry for a descriptor it does not own is
 * skipped (virtio/queue.c), a length below the header or beyond the buffer is
 * dropped and counted, and the buffer goes back to the device either way; a
 * used index ahead of the buffers the device holds breaks the queue, and the
 * worker resets the device.  Receive runs only in the NIC's worker; transmit
 * takes tx_lock.
 */
#include "virtio/internal.h"

#include "console/console.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"

static void virtio_net_add(uint64_t *counter, uint64_t amount)
{
	__atomic_fetch_add(counter, amount, __ATOMIC_RELAXED);
}

/* ---- Receive ------------------------------------------------------------- */

unsigned virtio_net_fill_rx(struct virtio_net *vn)
{
	unsigned offered = 0;
	int id;
	while ((id = virtio_find_free_buffer(&vn->rx)) >= 0)
		if (virtio_offer_buffer(&vn->rx, (unsigned)id, VIRTIO_NET_BUFFER, true) == 0)
			offered++;
	return offered;
}

static bool virtio_net_length_valid(uint32_t length)
{
	return length >= VIRTIO_NET_HEADER + NIC_FRAME_MIN && length <= VIRTIO_NET_BUFFER &&
	       length - VIRTIO_NET_HEADER <= NIC_FRAME_MAX;
}

unsigned virtio_net_receive(struct virtio_net *vn, unsigned budget)
{
	unsigned delivered = 0, returned = 0, id;
	uint32_t length;
	while (delivered < budget && virtio_take_used(&vn->rx, &id, &length)) {
		if (virtio_net_length_valid(length)) {
			uint8_t *buffer = virtio_queue_buffer(&vn->rx, id);
			nic_rx(&vn->nic, buffer + VIRTIO_NET_HEADER, length - VIRTIO_NET_HEADER);
			virtio_net_add(&vn->counters.rx_packets, 1);
			virtio_net_add(&vn->counters.rx_bytes, length - VIRTIO_NET_HEADER);
			delivered++;
		} else {
			virtio_net_add(&vn->counters.rx_bad_length, 1);
		}
		if (virtio_offer_buffer(&vn->rx, id, VIRTIO_NET_BUFFER, true) == 0)
			returned++;
	}
	if (returned)
		virtio_kick_queue(&vn->rx);
	return delivered;
}

/* ---- Transmit ------------------------------------------------------------ */

void virtio_net_reclaim_tx(struct virtio_net *vn)
{
	unsigned id;
	uint32_t length;
	while (virtio_take_used(&vn->tx, &id, &length)) {
		unsigned first = vn->large.first[id];
		if (first) {
			virtio_net_large_give(&vn->large, first - 1, vn->large.pages[id]);
			vn->large.first[id] = 0;
		}
		nic_tx_done(&vn->nic, id);
	}
}

/* A TCP frame in buffer (behind its header) left to the device's checksum
 * (CSUM): the header asks for it and the field holds the pseudo-header sum.
 * Returns the bytes to offer: the frame up to its IP length, since the
 * device sums to the end of what it is given. */
static size_t ask_for_tcp_checksum(uint8_t *buffer, size_t length)
{
	uint8_t *frame = buffer + VIRTIO_NET_HEADER;
	size_t tcp_bytes, start = nic_tcp_checksum_start(frame, length, &tcp_bytes);
	if (!start)
		return length;
	struct virtio_net_header *header = (struct virtio_net_header *)buffer;
	header->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	header->csum_start = (uint16_t)start;
	header->csum_offset = 16; /* the TCP header's checksum field */
	nic_seed_tcp_checksum(frame, start, tcp_bytes);
	return start + tcp_bytes;
}

static int virtio_net_transmit(struct nic *nic, const void *frame, size_t length)
{
	struct virtio_net *vn = nic->driver;
	if (length < NIC_FRAME_MIN || length > VIRTIO_NET_BUFFER - VIRTIO_NET_HEADER)
		return -EINVAL;
	uint64_t flags = spin_lock_irqsave(&vn->tx_lock);
	if (vn->failed) {
		spin_unlock_irqrestore(&vn->tx_lock, flags);
		return -EIO; /* reset for a broken queue: nothing may be offered */
	}
	virtio_net_reclaim_tx(vn);
	int id = virtio_find_free_buffer(&vn->tx);
	if (id < 0) {
		spin_unlock_irqrestore(&vn->tx_lock, flags);
		virtio_net_add(&vn->counters.tx_ring_full, 1);
		return -EAGAIN;
	}
	uint8_t *buffer = virtio_queue_buffer(&vn->tx, (unsigned)id);
	memset(buffer, 0, VIRTIO_NET_HEADER);
	memcpy(buffer + VIRTIO_NET_HEADER, frame, length);
	size_t offered = nic->tx_tcp_checksum ? ask_for_tcp_checksum(buffer, length) : length;
	virtio_offer_buffer(&vn->tx, (unsigned)id, (uint32_t)(VIRTIO_NET_HEADER + offered), false);
	nic_tx_queued(&vn->nic, (unsigned)id);
	virtio_kick_queue(&vn->tx);
	spin_unlock_irqrestore(&vn->tx_lock, flags);
	virtio_net_add(&vn->counters.tx_packets, 1);
	virtio_net_add(&vn->counters.tx_bytes, length);
	return 0;
}

/* ---- Large frames: the device's segmentation, or the driver's ----------- */

bool virtio_net_setup_offload(struct virtio_net *vn)
{
	const uint64_t both = VIRTIO_NET_F_CSUM | VIRTIO_NET_F_HOST_TSO4;
	if ((vn->vdev.features & both) != both)
		return false;
	_Static_assert(VIRTIO_NET_PAGE == PAGE_SIZE, "the area's pages are the kernel's");
	vn->large.memory = mm_alloc_pages(VIRTIO_NET_LARGE_PAGES, PAGE_SIZE);
	if (!vn->large.memory)
		return false; /* the driver segments, as without the features */
	vn->large.phys = virt_to_phys(vn->large.memory);
	vn->large.free_pages = VIRTIO_NET_LARGE_PAGES;
	return true;
}

/* The header asking the device to cut the frame into segments of mss payload
 * bytes and to complete each one's TCP checksum from the pseudo-header sum
 * left in its checksum field (virtio 1.0, 5.1.6.2). */
static void offload_header(struct virtio_net_header *header, size_t header_length, size_t ip_length,
			   unsigned mss)
{
	*header = (struct virtio_net_header){
	    .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
	    .gso_type = VIRTIO_NET_HDR_GSO_TCPV4,
	    .hdr_len = (uint16_t)header_length,
	    .gso_size = (uint16_t)mss,
	    .csum_start = (uint16_t)(NIC_FRAME_MIN + ip_length),
	    .csum_offset = 16, /* the TCP header's checksum field */
	};
}

/* Copies the frame behind its header to the area's page first, the TCP
 * checksum field seeded with the pseudo header over the whole TCP length. */
static void fill_large_buffer(struct virtio_net *vn, unsigned first, const uint8_t *frame,
			      size_t length, size_t header_length, size_t ip_length, unsigned mss)
{
	uint8_t *buffer = vn->large.memory + (size_t)first * VIRTIO_NET_PAGE;
	offload_header((struct virtio_net_header *)buffer, header_length, ip_length, mss);
	uint8_t *copy = buffer + VIRTIO_NET_HEADER;
	memcpy(copy, frame, length);
	size_t start = NIC_FRAME_MIN + ip_length;
	nic_seed_tcp_checksum(copy, start, length - start);
}

int virtio_net_transmit_offloaded(struct virtio_net *vn, const void *frame, size_t length,
				  size_t header_length)
{
	size_t ip_length = nic_tcp_ip_length(frame, length, header_length);
	if (!ip_length || length > NIC_SEGMENTED_MAX || !vn->large.memory ||
	    header_length >= NIC_FRAME_MIN + vn->nic.mtu)
		return -EINVAL;
	uint64_t flags = spin_lock_irqsave(&vn->tx_lock);
	if (vn->failed) {
		spin_unlock_irqrestore(&vn->tx_lock, flags);
		return -EIO;
	}
	virtio_net_reclaim_tx(vn);
	unsigned pages =
	    (unsigned)((VIRTIO_NET_HEADER + length + VIRTIO_NET_PAGE - 1) / VIRTIO_NET_PAGE);
	int id = vn->tx.free_count ? virtio_find_free_buffer(&vn->tx) : -EAGAIN;
	int first = id >= 0 ? virtio_net_large_take(&vn->large, pages) : -1;
	if (first < 0) {
		spin_unlock_irqrestore(&vn->tx_lock, flags);
		virtio_net_add(&vn->counters.tx_ring_full, 1);
		return -EAGAIN;
	}
	vn->large.first[id] = (uint16_t)(first + 1);
	vn->large.pages[id] = (uint8_t)pages;
	unsigned mss = (unsigned)(vn->nic.mtu + NIC_FRAME_MIN - header_length);
	fill_large_buffer(vn, (unsigned)first, frame, length, header_length, ip_length, mss);
	virtio_offer_external(&vn->tx, (unsigned)id,
			      vn->large.phys + (uint64_t)first * VIRTIO_NET_PAGE,
			      (uint32_t)(VIRTIO_NET_HEADER + length));
	nic_tx_queued(&vn->nic, (unsigned)id);
	virtio_kick_queue(&vn->tx);
	spin_unlock_irqrestore(&vn->tx_lock, flags);
	virtio_net_add(&vn->counters.tx_offloaded, 1);
	virtio_net_add(&vn->counters.tx_packets, (length - header_length + mss - 1) / mss);
	virtio_net_add(&vn->counters.tx_bytes, length);
	return 0;
}

/* A large TCP frame cut into segments here (the device offers no offload, or
 * its area for whole frames is full): each segment written straight into a
 * transmit buffer, one kick for all.  All or none: a ring without room for
 * every segment refuses the frame (-EAGAIN; TCP sends it again) before any is
 * offered. */
int virtio_net_transmit_large(struct virtio_net *vn, const void *frame, size_t length,
			      size_t header_length)
{
	struct nic *nic = &vn->nic;
	if (__atomic_load_n(&vn->failed, __ATOMIC_RELAXED))
		return -EIO; /* reset for a broken queue: nothing may be offered */
	if (vn->large.memory) {
		int error = virtio_net_transmit_offloaded(vn, frame, length, header_length);
		if (error != -EAGAIN || vn->large.free_pages * VIRTIO_NET_PAGE > length)
			return error; /* sent, refused, or the ring is what is full */
	}
	unsigned count = nic_segment_count(frame, length, header_length, nic->mtu);
	if (!count || NIC_FRAME_MIN + nic->mtu > VIRTIO_NET_BUFFER - VIRTIO_NET_HEADER)
		return -EINVAL;
	uint64_t flags = spin_lock_irqsave(&vn->tx_lock);
	if (vn->failed) {
		spin_unlock_irqrestore(&vn->tx_lock, flags);
		return -EIO;
	}
	virtio_net_reclaim_tx(vn);
	if (vn->tx.free_count < count) {
		spin_unlock_irqrestore(&vn->tx_lock, flags);
		virtio_net_add(&vn->counters.tx_ring_full, 1);
		return -EAGAIN;
	}
	size_t bytes = 0;
	for (unsigned i = 0; i < count; i++) {
		int id = virtio_find_free_buffer(&vn->tx); /* free_count says there is one */
		uint8_t *buffer = virtio_queue_buffer(&vn->tx, (unsigned)id);
		memset(buffer, 0, VIRTIO_NET_HEADER);
		size_t written = nic_segment_write(frame, length, header_length, nic->mtu, i,
						   buffer + VIRTIO_NET_HEADER);
		virtio_offer_buffer(&vn->tx, (unsigned)id, (uint32_t)(VIRTIO_NET_HEADER + written),
				    false);
		nic_tx_queued(&vn->nic, (unsigned)id);
		bytes += written;
	}
	virtio_kick_queue(&vn->tx);
	spin_unlock_irqrestore(&vn->tx_lock, flags);
	virtio_net_add(&vn->counters.tx_segmented, 1);
	virtio_net_add(&vn->counters.tx_packets, count);
	virtio_net_add(&vn->counters.tx_bytes, bytes);
	return 0;
}

static int virtio_net_transmit_segmented(struct nic *nic, const void *frame, size_t length,
					 size_t header_length)
{
	return virtio_net_transmit_large(nic->driver, frame, length, header_length);
}

/* A queue broke (the device claimed more buffers back than it held): the
 * device is reset once and the NIC stays silent; the buffers it held are
 * never reused.  failed is set under tx_lock, where transmit checks it, so
 * no frame is offered to the device once it is being reset; the frames it
 * held then are counted, not lost silently. */
void virtio_net_check_queues(struct virtio_net *vn)
{
	if (vn->failed || !(vn->rx.broken || vn->tx.broken))
		return;
	uint64_t flags = spin_lock_irqsave(&vn->tx_lock);
	__atomic_store_n(&vn->failed, true, __ATOMIC_RELAXED);
	unsigned held = vn->tx.size - vn->tx.free_count;
	spin_unlock_irqrestore(&vn->tx_lock, flags);
	virtio_net_add(&vn->counters.tx_lost, held);
	virtio_reset_device(&vn->vdev);
	pr_warn("virtio-net: the device returned more buffers than it held: reset, no more "
		"frames\n");
}

static unsigned virtio_net_poll(struct nic *nic, unsigned budget)
{
	struct virtio_net *vn = nic->driver;
	uint64_t flags = spin_lock_irqsave(&vn->tx_lock);
	virtio_net_reclaim_tx(vn);
	spin_unlock_irqrestore(&vn->tx_lock, flags);
	unsigned delivered = virtio_net_receive(vn, budget);
	virtio_net_check_queues(vn);
	return delivered;
}

/* ---- Interrupts, link, counters ------------------------------------------ */

static void virtio_net_update_link(struct nic *nic)
{
	struct virtio_net *vn = nic->driver;
	if (!(vn->vdev.features & VIRTIO_NET_F_STATUS)) {
		nic->link = NIC_LINK_UP;
		return;
	}
	uint16_t status = virtio_read_config16(&vn->vdev, 6);
	nic->link = (status & VIRTIO_NET_S_LINK_UP) ? NIC_LINK_UP : NIC_LINK_DOWN;
}

static void virtio_net_irq(struct trap_frame *frame, void *ctx)
{
	struct virtio_net *vn = ctx;
	if (vn->irq_kind == PCI_IRQ_INTX) {
		uint8_t isr = virtio_read_isr(&vn->vdev);
		if (!isr)
			return; /* another device on a shared line */
		if (isr & 2) {
			virtio_net_add(&vn->counters.config_changes, 1);
			virtio_net_update_link(&vn->nic);
		}
	}
	virtio_net_add(&vn->counters.interrupts, 1);
	if (vn->interrupts_on)
		nic_irq(&vn->nic);
}

static void virtio_net_enable_interrupts(struct nic *nic)
{
	struct virtio_net *vn = nic->driver;
	vn->interrupts_on = true;
	virtio_allow_interrupts(&vn->rx);
}

static void virtio_net_disable_interrupts(struct nic *nic)
{
	struct virtio_net *vn = nic->driver;
	vn->interrupts_on = false;
	virtio_suppress_interrupts(&vn->rx);
}

struct virtio_net_counter_name {
	const char *name;
	size_t offset;
};

#define VN_COUNTER(field)                                           \
	{                                                           \
#field, offsetof(struct virtio_net_counters, field) \
	}
static const struct virtio_net_counter_name virtio_net_counter_names[] = {
    VN_COUNTER(rx_packets),   VN_COUNTER(rx_bytes),       VN_COUNTER(tx_packets),
    VN_COUNTER(tx_bytes),     VN_COUNTER(rx_bad_length),  VN_COUNTER(tx_ring_full),
    VN_COUNTER(interrupts),   VN_COUNTER(config_changes), VN_COUNTER(tx_segmented),
    VN_COUNTER(tx_offloaded), VN_COUNTER(tx_lost),
};
#define VN_COUNTER_COUNT (sizeof(virtio_net_counter_names) / sizeof(virtio_net_counter_names[0]))

/* The queues' own counters, after the table's; occupancy: buffers the
 * device holds (in flight) and used entries it returned that no poll has
 * taken yet (pending). */
static const char *const virtio_net_queue_counters[] = {
    "rx_bad_id",     "tx_bad_id",    "rx_kicks",     "tx_kicks",        "rx_queue_size",
    "tx_queue_size", "rx_in_flight", "tx_in_flight", "rx_used_pending", "tx_used_pending",
};
#define VN_QUEUE_COUNTER_COUNT \
	(sizeof(virtio_net_queue_counters) / sizeof(virtio_net_queue_counters[0]))

static uint64_t virtio_net_queue_counter(struct virtio_net *vn, unsigned i)
{
	uint64_t values[] = {vn->rx.bad_used,
			     vn->tx.bad_used,
			     vn->rx.kicks,
			     vn->tx.kicks,
			     vn->rx.size,
			     vn->tx.size,
			     vn->rx.size - vn->rx.free_count,
			     vn->tx.size - vn->tx.free_count,
			     virtio_used_pending(&vn->rx),
			     virtio_used_pending(&vn->tx)};
	return values[i];
}

static int virtio_net_read_counter(struct nic *nic, const char *name, uint64_t *value)
{
	struct virtio_net *vn = nic->driver;
	for (unsigned i = 0; i < VN_COUNTER_COUNT; i++) {
		if (strcmp(virtio_net_counter_names[i].name, name) == 0) {
			const char *base = (const char *)&vn->counters;
			*value = __atomic_load_n(
			    (const uint64_t *)(base + virtio_net_counter_names[i].offset),
			    __ATOMIC_RELAXED);
			return 0;
		}
	}
	for (unsigned i = 0; i < VN_QUEUE_COUNTER_COUNT; i++) {
		if (strcmp(virtio_net_queue_counters[i], name) == 0) {
			*value = virtio_net_queue_counter(vn, i);
			return 0;
		}
	}
	return -ENOENT;
}

static void virtio_net_list_counters(struct nic *nic, nic_counter_fn fn, void *arg)
{
	struct virtio_net *vn = nic->driver;
	uint64_t value = 0;
	for (unsigned i = 0; i < VN_COUNTER_COUNT; i++) {
		virtio_net_read_counter(nic, virtio_net_counter_names[i].name, &value);
		fn(virtio_net_counter_names[i].name, value, arg);
	}
	for (unsigned i = 0; i < VN_QUEUE_COUNTER_COUNT; i++)
		fn(virtio_net_queue_counters[i], virtio_net_queue_counter(vn, i), arg);
}

static const struct nic_ops virtio_net_ops = {
    .transmit = virtio_net_transmit,
    .poll = virtio_net_poll,
    .enable_interrupts = virtio_net_enable_interrupts,
    .disable_interrupts = virtio_net_disable_interrupts,
    .read_counter = virtio_net_read_counter,
    .list_counters = virtio_net_list_counters,
    .update_link = virtio_net_update_link,
    .transmit_segmented = virtio_net_transmit_segmented,
};

/* ---- Probe --------------------------------------------------------------- */

static void virtio_net_read_mac(struct virtio_net *vn, struct pci_device *pci)
{
	if (vn->vdev.features & VIRTIO_NET_F_MAC) {
		for (unsigned i = 0; i < NIC_MAC_LENGTH; i++)
			vn->nic.mac[i] = virtio_read_config8(&vn->vdev, i);
		return;
	}
	/* No MAC offered: a locally administered one from the PCI address. */
	const uint8_t mac[NIC_MAC_LENGTH] = {0x02,     0x00,        0x00,
					     pci->bus, pci->device, pci->function};
	memcpy(vn->nic.mac, mac, NIC_MAC_LENGTH);
}

/* Queues, interrupt, MAC, receive buffers, DRIVER_OK.  Returns 0 or an error. */
static int virtio_net_start(struct virtio_net *vn, struct pci_device *pci)
{
	uint64_t wanted = VIRTIO_NET_F_MAC | VIRTIO_NET_F_STATUS | VIRTIO_NET_F_CSUM;
	if (virtio_device_features(&vn->vdev) & VIRTIO_NET_F_CSUM)
		wanted |= VIRTIO_NET_F_HOST_TSO4; /* which needs CSUM */
	int error = virtio_negotiate_features(&vn->vdev, wanted, VIRTIO_F_VERSION_1);
	if (error)
		return error;
	vn->nic.tx_tcp_checksum = (vn->vdev.features & VIRTIO_NET_F_CSUM) != 0;
	int kind = pci_attach_irq(pci, PCI_IRQ_MSIX, virtio_net_irq, vn, "virtio-net");
	if (kind < 0)
		return kind;
	vn->irq_kind = (enum pci_irq_kind)kind;
	uint16_t entry = kind == PCI_IRQ_MSIX ? 0 : VIRTIO_NO_VECTOR;
	error = virtio_setup_queue(&vn->vdev, &vn->rx, VIRTIO_NET_RX_QUEUE, VIRTIO_QUEUE_MAX,
				   VIRTIO_NET_BUFFER, entry);
	if (!error)
		error = virtio_setup_queue(&vn->vdev, &vn->tx, VIRTIO_NET_TX_QUEUE,
					   VIRTIO_QUEUE_MAX, VIRTIO_NET_BUFFER, entry);
	if (!error)
		error = virtio_set_config_vector(&vn->vdev, entry);
	if (error)
		return error;
	/* A frame the device does not segment is cut here and offered whole:
	 * never more segments than the ring has descriptors. */
	vn->nic.tx_segments_max = vn->tx.size;
	if (virtio_net_setup_offload(vn)) /* last: nothing after it can fail */
		pr_info("virtio-net: the device segments TCP frames (CSUM, HOST_TSO4)\n");
	virtio_suppress_interrupts(&vn->tx);
	virtio_net_disable_interrupts(&vn->nic);
	virtio_net_read_mac(vn, pci);
	virtio_net_fill_rx(vn);
	virtio_start_device(&vn->vdev);
	virtio_kick_queue(&vn->rx);
	virtio_net_update_link(&vn->nic);
	return 0;
}

static int virtio_net_probe(struct pci_device *pci)
{
	struct virtio_net *vn = kzalloc(sizeof(*vn));
	if (!vn)
		return -ENOMEM;
	spin_init(&vn->tx_lock, "virtio-net.tx");
	vn->nic.driver = vn;
	vn->nic.ops = &virtio_net_ops;
	vn->nic.mtu = 1500;
	int error = virtio_open_device(&vn->vdev, pci);
	if (error) {
		kfree(vn);
		return error;
	}
	error = virtio_net_start(vn, pci);
	if (!error)
		error = nic_register(&vn->nic, "virtio-net");
	if (error) {
		virtio_reset_device(&vn->vdev);
		return error; /* vn stays: an interrupt handler may hold it */
	}
	pci->driver_data = vn;
	return 0;
}

PCI_DRIVER(virtio_net, 0x1af4, 0x1000, virtio_net_probe); /* transitional */
PCI_DRIVER(virtio_net, 0x1af4, 0x1041, virtio_net_probe); /* modern only */
