/*
 * The e1000's descriptor rings.  Receive: E1000_RX_RING descriptors, each
 * owning one E1000_BUFFER_SIZE buffer for its whole life; the device fills a
 * descriptor and sets DD, the driver hands the frame to nic_rx, clears the
 * status and returns the descriptor by advancing RDT, E1000_RX_RETURN_BATCH
 * descriptors at a time.  Only one thread polls
 * at a time (drivers/net serialises passes), so the receive side has no lock.
 * Everything the device wrote is checked before use: a length beyond the
 * buffer or below an Ethernet header, error bits, or a frame spread over
 * several descriptors (never configured, so garbage) is dropped and counted.
 * Transmit: frames are copied into the descriptor's own buffer under tx_lock;
 * descriptors between tx_clean and tx_tail belong to the device until DD,
 * and one slot always stays empty so that tail == clean means empty.
 */
#include "e1000/internal.h"

#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"

static void *e1000_dma_alloc(size_t bytes, uint64_t *phys)
{
	size_t pages = (bytes + PAGE_SIZE - 1) / PAGE_SIZE;
	void *memory = mm_alloc_pages(pages, PAGE_SIZE);
	if (!memory)
		return NULL;
	memset(memory, 0, pages * PAGE_SIZE);
	*phys = virt_to_phys(memory);
	return memory;
}

int e1000_rings_alloc(struct e1000 *e)
{
	e->rx_ring =
	    e1000_dma_alloc(E1000_RX_RING * sizeof(struct e1000_rx_desc), &e->rx_ring_phys);
	e->tx_ring =
	    e1000_dma_alloc(E1000_TX_RING * sizeof(struct e1000_tx_desc), &e->tx_ring_phys);
	e->rx_buffers = e1000_dma_alloc(E1000_RX_RING * E1000_BUFFER_SIZE, &e->rx_buffers_phys);
	e->tx_buffers = e1000_dma_alloc(E1000_TX_RING * E1000_BUFFER_SIZE, &e->tx_buffers_phys);
	if (!e->rx_ring || !e->tx_ring || !e->rx_buffers || !e->tx_buffers)
		return -ENOMEM; /* boot-time only: what was allocated stays */
	for (unsigned i = 0; i < E1000_RX_RING; i++)
		e->rx_ring[i].address = e->rx_buffers_phys + (uint64_t)i * E1000_BUFFER_SIZE;
	for (unsigned i = 0; i < E1000_TX_RING; i++) {
		e->tx_ring[i].address = e->tx_buffers_phys + (uint64_t)i * E1000_BUFFER_SIZE;
		e->tx_ring[i].status = E1000_TX_DD; /* free */
	}
	return 0;
}

static void e1000_dma_free(void *memory, size_t bytes)
{
	if (memory)
		mm_free_pages(memory, (bytes + PAGE_SIZE - 1) / PAGE_SIZE);
}

void e1000_rings_free(struct e1000 *e)
{
	e1000_dma_free(e->rx_ring, E1000_RX_RING * sizeof(struct e1000_rx_desc));
	e1000_dma_free(e->tx_ring, E1000_TX_RING * sizeof(struct e1000_tx_desc));
	e1000_dma_free(e->rx_buffers, E1000_RX_RING * E1000_BUFFER_SIZE);
	e1000_dma_free(e->tx_buffers, E1000_TX_RING * E1000_BUFFER_SIZE);
}

void e1000_rings_program(struct e1000 *e)
{
	e1000_write(e, E1000_RDBAL, (uint32_t)e->rx_ring_phys);
	e1000_write(e, E1000_RDBAH, (uint32_t)(e->rx_ring_phys >> 32));
	e1000_write(e, E1000_RDLEN, E1000_RX_RING * sizeof(struct e1000_rx_desc));
	e1000_write(e, E1000_RDH, 0);
	e1000_write(e, E1000_RDT, E1000_RX_RING - 1);
	e1000_write(e, E1000_RDTR, 0);
	e1000_write(e, E1000_RCTL, E1000_RCTL_EN | E1000_RCTL_BAM | E1000_RCTL_SECRC);
	e->rx_next = e->rx_held = 0;

	e1000_write(e, E1000_TDBAL, (uint32_t)e->tx_ring_phys);
	e1000_write(e, E1000_TDBAH, (uint32_t)(e->tx_ring_phys >> 32));
	e1000_write(e, E1000_TDLEN, E1000_TX_RING * sizeof(struct e1000_tx_desc));
	e1000_write(e, E1000_TDH, 0);
	e1000_write(e, E1000_TDT, 0);
	e1000_write(e, E1000_TIPG, E1000_TIPG_VALUE);
	e1000_write(e, E1000_TCTL,
		    E1000_TCTL_EN | E1000_TCTL_PSP | E1000_TCTL_CT | E1000_TCTL_COLD);
	e->tx_tail = e->tx_clean = 0;
	e->tx_checksum_context = 0; /* the device holds no context after a reset */
	memset(e->tx_ends_frame, 0, sizeof e->tx_ends_frame);
}

/* ---- Receive ------------------------------------------------------------- */

static void e1000_add(struct e1000 *e, uint64_t *counter, uint64_t amount)
{
	(void)e;
	__atomic_fetch_add(counter, amount, __ATOMIC_RELAXED);
}

/* Checks one completed descriptor; returns the frame length to deliver, or
 * 0 after counting why it is dropped. */
static size_t e1000_rx_check(struct e1000 *e, uint8_t status, uint8_t errors, uint16_t length)
{
	if (!(status & E1000_RX_EOP)) {
		e->rx_discarding = true; /* the rest of this frame is dropped too */
		e1000_add(e, &e->soft.rx_fragments, 1);
		return 0;
	}
	if (e->rx_discarding) {
		e->rx_discarding = false;
		e1000_add(e, &e->soft.rx_fragments, 1);
		return 0;
	}
	if (errors) {
		e1000_add(e, &e->soft.rx_errors, 1);
		return 0;
	}
	if (length > E1000_BUFFER_SIZE || length > NIC_FRAME_MAX || length < NIC_FRAME_MIN) {
		e1000_add(e, &e->soft.rx_bad_length, 1);
		return 0;
	}
	return length;
}

unsigned e1000_rx_poll(struct e1000 *e, unsigned budget)
{
	unsigned delivered = 0, consumed = 0;
	while (delivered < budget && consumed < E1000_RX_RING) {
		volatile struct e1000_rx_desc *desc = &e->rx_ring[e->rx_next];
		uint8_t status = desc->status;
		if (!(status & E1000_RX_DD))
			break;
		__atomic_thread_fence(__ATOMIC_ACQUIRE); /* the rest after DD */
		size_t length = e1000_rx_check(e, status, desc->errors, desc->length);
		if (length) {
			nic_rx(&e->nic, e->rx_buffers + (size_t)e->rx_next * E1000_BUFFER_SIZE,
			       length);
			e1000_add(e, &e->soft.rx_packets, 1);
			e1000_add(e, &e->soft.rx_bytes, length);
			delivered++;
		}
		desc->status = 0;
		desc->address = e->rx_buffers_phys + (uint64_t)e->rx_next * E1000_BUFFER_SIZE;
		e->rx_next = (e->rx_next + 1) % E1000_RX_RING;
		consumed++;
	}
	e->rx_held += consumed;
	if (e->rx_held >= E1000_RX_RETURN_BATCH) {
		__atomic_thread_fence(__ATOMIC_RELEASE);
		e1000_write(e, E1000_RDT, (e->rx_next + E1000_RX_RING - 1) % E1000_RX_RING);
		e->rx_held = 0;
	}
	return delivered;
}

/* ---- Transmit ------------------------------------------------------------ */

/* Called with tx_lock held. */
static void e1000_tx_reclaim_locked(struct e1000 *e)
{
	while (e->tx_clean != e->tx_tail) {
		volatile struct e1000_tx_desc *desc = &e->tx_ring[e->tx_clean];
		if (!(desc->status & E1000_TX_DD))
			break;
		if (e->tx_ends_frame[e->tx_clean]) {
			e->tx_ends_frame[e->tx_clean] = false;
			nic_tx_done(&e->nic, e->tx_clean);
		}
		e->tx_clean = (e->tx_clean + 1) % E1000_TX_RING;
	}
}

void e1000_tx_reclaim(struct e1000 *e)
{
	uint64_t flags = spin_lock_irqsave(&e->tx_lock);
	e1000_tx_reclaim_locked(e);
	spin_unlock_irqrestore(&e->tx_lock, flags);
}

/* Free descriptors (one always stays empty).  Called with tx_lock held. */
static unsigned e1000_tx_free_locked(struct e1000 *e)
{
	return (e->tx_clean + E1000_TX_RING - e->tx_tail - 1) % E1000_TX_RING;
}

/* Writes a context descriptor at slot for TCP/IPv4 frames whose IP header
 * takes ip_length bytes: for segmentation when mss is not 0 (the headers'
 * length, the payload's, the MSS), else for the TCP checksum alone.  The
 * device keeps one context, so the checksum one is remembered until another
 * replaces it.  Returns the slot after it. */
static unsigned e1000_tx_context(struct e1000 *e, unsigned slot, size_t ip_length,
				 size_t header_length, size_t payload, unsigned mss)
{
	volatile struct e1000_context_desc *c =
	    (volatile struct e1000_context_desc *)&e->tx_ring[slot];
	c->ipcss = 14;
	c->ipcso = 14 + 10;
	c->ipcse = (uint16_t)(14 + ip_length - 1);
	c->tucss = (uint8_t)(14 + ip_length);
	c->tucso = (uint8_t)(14 + ip_length + 16);
	c->tucse = 0;
	uint32_t command = E1000_TUCMD_TCP | E1000_TUCMD_IP | E1000_TX_RS | E1000_TX_DEXT |
			   (mss ? E1000_TX_TSE : 0);
	c->payload_and_command = (uint32_t)payload | command << 24;
	c->status = 0;
	c->header_length = (uint8_t)header_length;
	c->mss = (uint16_t)mss;
	e->tx_checksum_context = mss ? 0 : (unsigned)(14 + ip_length);
	return (slot + 1) % E1000_TX_RING;
}

/* Copies a frame into slot's buffer, its TCP checksum field seeded with the
 * pseudo header when the device is to make the checksum (start: where the
 * TCP header starts, 0 for none).  Returns the bytes the device sends: the
 * IP length's, since it sums to the end. */
static size_t e1000_tx_copy(struct e1000 *e, unsigned slot, const void *frame, size_t length,
			    size_t start, size_t tcp_bytes)
{
	uint8_t *buffer = e->tx_buffers + (size_t)slot * E1000_BUFFER_SIZE;
	memcpy(buffer, frame, length);
	if (!start)
		return length;
	nic_seed_tcp_checksum(buffer, start, tcp_bytes);
	return start + tcp_bytes;
}

/* One frame's data descriptor: a plain one, or an extended one asking for
 * the TCP checksum under the context before it. */
static void e1000_tx_data_descriptor(struct e1000 *e, unsigned slot, size_t length, bool checksum)
{
	volatile struct e1000_tx_desc *desc = &e->tx_ring[slot];
	desc->address = e->tx_buffers_phys + (uint64_t)slot * E1000_BUFFER_SIZE;
	desc->length = (uint16_t)length;
	desc->cso = checksum ? E1000_TX_DTYP_D : 0;
	desc->command = E1000_TX_EOP | E1000_TX_IFCS | E1000_TX_RS | (checksum ? E1000_TX_DEXT : 0);
	desc->css = checksum ? E1000_POPTS_TXSM : 0;
	desc->special = 0;
	desc->status = 0;
}

int e1000_tx_frame(struct e1000 *e, const void *frame, size_t length)
{
	if (length < NIC_FRAME_MIN || length > E1000_BUFFER_SIZE || length > NIC_FRAME_MAX)
		return -EINVAL;
	/* A TCP/IPv4 frame's checksum is the device's where the NIC makes them:
	 * behind a checksum context, unless the last context written fits. */
	size_t tcp_bytes = 0, start = e->nic.tx_tcp_checksum
					  ? nic_tcp_checksum_start(frame, length, &tcp_bytes)
					  : 0;
	uint64_t flags = spin_lock_irqsave(&e->tx_lock);
	bool context = start && start != e->tx_checksum_context;
	e1000_tx_reclaim_locked(e);
	if (e1000_tx_free_locked(e) < 1u + context) {
		spin_unlock_irqrestore(&e->tx_lock, flags);
		e1000_add(e, &e->soft.tx_ring_full, 1);
		return -EAGAIN;
	}
	unsigned slot = context ? e1000_tx_context(e, e->tx_tail, start - 14, 0, 0, 0) : e->tx_tail;
	unsigned next = (slot + 1) % E1000_TX_RING;
	length = e1000_tx_copy(e, slot, frame, length, start, tcp_bytes);
	e1000_tx_data_descriptor(e, slot, length, start != 0);
	e->tx_tail = next;
	if (start)
		e1000_add(e, &e->soft.tx_checksummed, 1);
	e->tx_ends_frame[slot] = true;
	nic_tx_queued(&e->nic, slot);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	e1000_write(e, E1000_TDT, next);
	spin_unlock_irqrestore(&e->tx_lock, flags);
	e1000_add(e, &e->soft.tx_packets, 1);
	e1000_add(e, &e->soft.tx_bytes, length);
	return 0;
}

/* ---- TCP segmentation ---------------------------------------------------- */

/* Copies the frame into consecutive descriptors' buffers, 2 KiB each, as TSO
 * data descriptors; fixes the copied headers as the device wants them (IP
 * checksum 0, the TCP checksum seeded with the pseudo header).  Returns the
 * slot after the last. */
static unsigned e1000_tx_data(struct e1000 *e, unsigned slot, const uint8_t *frame, size_t length,
			      size_t ip_length)
{
	for (size_t done = 0; done < length;) {
		size_t chunk =
		    length - done < E1000_BUFFER_SIZE ? length - done : E1000_BUFFER_SIZE;
		uint8_t *buffer = e->tx_buffers + (size_t)slot * E1000_BUFFER_SIZE;
		memcpy(buffer, frame + done, chunk);
		if (done == 0) {
			/* The device adds each segment's length itself. */
			nic_seed_tcp_checksum(buffer, 14 + ip_length, 0);
			buffer[14 + 10] = buffer[14 + 11] = 0;
		}
		volatile struct e1000_tx_desc *desc = &e->tx_ring[slot];
		desc->address = e->tx_buffers_phys + (uint64_t)slot * E1000_BUFFER_SIZE;
		desc->length = (uint16_t)chunk;
		desc->cso = E1000_TX_DTYP_D;
		desc->command = E1000_TX_DEXT | E1000_TX_TSE | E1000_TX_IFCS | E1000_TX_RS |
				(done + chunk == length ? E1000_TX_EOP : 0);
		desc->status = 0;
		desc->css = E1000_POPTS_IXSM | E1000_POPTS_TXSM;
		desc->special = 0;
		done += chunk;
		slot = (slot + 1) % E1000_TX_RING;
	}
	return slot;
}

int e1000_tx_segmented(struct e1000 *e, const void *frame, size_t length, size_t header_length)
{
	size_t ip_length = nic_tcp_ip_length(frame, length, header_length);
	if (!ip_length || length > NIC_SEGMENTED_MAX || header_length >= NIC_FRAME_MAX)
		return -EINVAL;
	unsigned mss = (unsigned)(e->nic.mtu + 14 - header_length);
	unsigned needed = 1 + (unsigned)((length + E1000_BUFFER_SIZE - 1) / E1000_BUFFER_SIZE);
	uint64_t flags = spin_lock_irqsave(&e->tx_lock);
	e1000_tx_reclaim_locked(e);
	if (e1000_tx_free_locked(e) < needed) {
		spin_unlock_irqrestore(&e->tx_lock, flags);
		e1000_add(e, &e->soft.tx_ring_full, 1);
		return -EAGAIN;
	}
	unsigned slot = e->tx_tail;
	e1000_tx_context(e, slot, ip_length, header_length, length - header_length, mss);
	unsigned next = e1000_tx_data(e, (slot + 1) % E1000_TX_RING, frame, length, ip_length);
	e->tx_tail = next;
	unsigned last = (next + E1000_TX_RING - 1) % E1000_TX_RING; /* its EOP descriptor */
	e->tx_ends_frame[last] = true;
	nic_tx_queued(&e->nic, last);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	e1000_write(e, E1000_TDT, next);
	spin_unlock_irqrestore(&e->tx_lock, flags);
	e1000_add(e, &e->soft.tx_segmented, 1);
	e1000_add(e, &e->soft.tx_packets, (length - header_length + mss - 1) / mss);
	e1000_add(e, &e->soft.tx_bytes, length);
	return 0;
}
