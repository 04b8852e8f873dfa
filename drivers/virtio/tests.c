/*
 * The virtio suite: virtqueues and the virtio-net receive path against a
 * device that lies.  Queues are built in memory without a device; the test
 * plays the device by writing used entries naming descriptors that do not
 * exist or that the device does not own, and lengths beyond the buffer or
 * below the header.  Only good frames may reach nic_rx, every bad entry is
 * counted, and every buffer goes back to the device; a used index further
 * ahead than the buffers in flight breaks the queue, and the reset that
 * follows counts the transmit frames the device held; virtio-blk ignores an
 * interrupt that comes before its queue exists, fails a read whose used
 * length is short and refuses a block size other than 512.  An absurd queue size
 * offered by a device is cut to a power of two the driver can hold.  A large
 * TCP frame goes to a device that segments (CSUM, HOST_TSO4) whole, behind a
 * header that asks for it, in a run of pages of its area that comes back
 * with the descriptor; the area counts bytes, reuses runs given back out of
 * order, and the driver segments itself when it is short.
 */
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "lib/unaligned.h"
#include "mm/mm.h"
#include "net/test_frames.h"
#include "virtio/internal.h"

static volatile uint16_t fake_notify;

struct capture {
	unsigned frames;
	size_t last_length;
};

static void capture_frame(struct nic *nic, const void *frame, size_t length, void *context)
{
	struct capture *capture = context;
	capture->frames++;
	capture->last_length = length;
}

static void device_uses(struct virtqueue *queue, uint32_t id, uint32_t length)
{
	struct virtq_used_elem *elem = &queue->used->ring[queue->used->index % queue->size];
	elem->id = id;
	elem->length = length;
	queue->used->index++;
}

static void bad_used_entries_are_dropped_and_counted(struct ktest *t)
{
	struct capture capture = {0};
	struct virtio_net *vn = kzalloc(sizeof(*vn));
	ASSERT_TRUE(t, vn != NULL);
	vn->nic.driver = vn;
	vn->nic.rx_handler = capture_frame;
	vn->nic.rx_context = &capture;
	ASSERT_EQ(t, virtio_alloc_queue(&vn->rx, 8, VIRTIO_NET_BUFFER), 0);
	vn->rx.notify = &fake_notify;
	EXPECT_EQ(t, virtio_net_fill_rx(vn), 8);
	EXPECT_EQ(t, virtio_find_free_buffer(&vn->rx), -EAGAIN);
	device_uses(&vn->rx, 1, VIRTIO_NET_HEADER + 60);
	device_uses(&vn->rx, 99, VIRTIO_NET_HEADER + 60); /* no such descriptor */
	device_uses(&vn->rx, 2, 5000);                    /* beyond the buffer */
	device_uses(&vn->rx, 3, 5);                       /* below the header */
	device_uses(&vn->rx, 4, VIRTIO_NET_HEADER + NIC_FRAME_MAX);
	EXPECT_EQ(t, virtio_net_receive(vn, 64), 2);
	EXPECT_EQ(t, capture.frames, 2);
	EXPECT_EQ(t, capture.last_length, NIC_FRAME_MAX);
	EXPECT_EQ(t, vn->rx.bad_used, 1);
	EXPECT_EQ(t, vn->counters.rx_bad_length, 2);
	EXPECT_EQ(t, vn->rx.free_count, 0); /* all back with the device */
	EXPECT_EQ(t, vn->rx.avail->index, 8 + 4);
	virtio_free_queue(&vn->rx);
	kfree(vn);
}

static void entries_for_buffers_the_device_does_not_own_are_skipped(struct ktest *t)
{
	struct virtqueue queue = {0};
	ASSERT_EQ(t, virtio_alloc_queue(&queue, 4, 64), 0);
	queue.notify = &fake_notify;
	ASSERT_EQ(t, virtio_offer_buffer(&queue, 0, 64, false), 0);
	ASSERT_EQ(t, virtio_offer_buffer(&queue, 1, 64, false), 0);
	ASSERT_EQ(t, virtio_offer_buffer(&queue, 3, 64, false), 0);
	EXPECT_EQ(t, virtio_offer_buffer(&queue, 1, 64, false), -EINVAL); /* twice */
	EXPECT_EQ(t, virtio_offer_buffer(&queue, 4, 64, false), -EINVAL); /* out of range */
	device_uses(&queue, 2, 10);                                       /* never offered */
	device_uses(&queue, 1, 10);
	device_uses(&queue, 1, 10); /* already returned */
	unsigned id = 0;
	uint32_t length = 0;
	EXPECT_TRUE(t, virtio_take_used(&queue, &id, &length));
	EXPECT_EQ(t, id, 1);
	EXPECT_FALSE(t, virtio_take_used(&queue, &id, &length));
	EXPECT_EQ(t, queue.bad_used, 2);
	EXPECT_EQ(t, queue.free_count, 2);
	EXPECT_FALSE(t, queue.broken);
	virtio_free_queue(&queue);
}

/* Four buffers offered; the device returns descriptor 1, then moves its
 * used index four further without writing entries: what the ring holds
 * there is stale, and descriptor 0 (still the device's) must not come back. */
static void a_used_index_ahead_of_the_buffers_in_flight_breaks_the_queue(struct ktest *t)
{
	struct virtqueue queue = {0};
	ASSERT_EQ(t, virtio_alloc_queue(&queue, 4, 64), 0);
	queue.notify = &fake_notify;
	for (unsigned i = 0; i < 4; i++)
		ASSERT_EQ(t, virtio_offer_buffer(&queue, i, 64, true), 0);
	device_uses(&queue, 1, 10);
	queue.used->index += 4;
	unsigned id = 0, taken = 0;
	uint32_t length = 0;
	while (virtio_take_used(&queue, &id, &length))
		taken++;
	EXPECT_EQ(t, taken, 0);
	EXPECT_TRUE(t, queue.broken);
	EXPECT_FALSE(t, virtio_has_used(&queue));
	for (unsigned i = 0; i < 4; i++)
		EXPECT_TRUE(t, virtio_buffer_in_flight(&queue, i)); /* none handed back */
	virtio_free_queue(&queue);
}

#define COMMON_STATUS_OFFSET 0x14 /* device_status in the common configuration */

/* The receive queue breaks while the device holds three transmit frames
 * (one large frame the driver cut): the check after the poll fails the NIC,
 * counts the three in tx_lost (they are never confirmed sent) and resets the
 * device (status 0 written, read back at once: the device is memory here);
 * nothing is offered afterwards. */
static void a_reset_for_a_broken_queue_counts_the_frames_it_held(struct ktest *t)
{
	struct capture capture = {0};
	const size_t length = 4000; /* three segments of 1,460 payload bytes */
	struct virtio_net *vn = kzalloc(sizeof(*vn));
	uint8_t *common = kzalloc(64), *frame = kmalloc(length);
	ASSERT_TRUE(t, vn && common && frame);
	spin_init(&vn->tx_lock, "virtio-net.test");
	vn->nic.driver = vn;
	vn->nic.mtu = 1500;
	vn->nic.rx_handler = capture_frame;
	vn->nic.rx_context = &capture;
	vn->vdev.common = common;
	ASSERT_EQ(t, virtio_alloc_queue(&vn->rx, 8, VIRTIO_NET_BUFFER), 0);
	ASSERT_EQ(t, virtio_alloc_queue(&vn->tx, 8, VIRTIO_NET_BUFFER), 0);
	vn->rx.notify = vn->tx.notify = &fake_notify;
	test_tcp_frame(frame, length);
	ASSERT_EQ(t, virtio_net_transmit_large(vn, frame, length, TEST_TCP_HEADERS), 0);
	EXPECT_EQ(t, vn->tx.avail->index, 3);
	virtio_net_fill_rx(vn);
	vn->rx.used->index += 9; /* one more than the device holds */
	EXPECT_EQ(t, virtio_net_receive(vn, 64), 0);
	EXPECT_TRUE(t, vn->rx.broken);
	common[COMMON_STATUS_OFFSET] = 0x0f; /* DRIVER_OK and the rest */
	virtio_net_check_queues(vn);
	EXPECT_TRUE(t, vn->failed);
	EXPECT_EQ(t, common[COMMON_STATUS_OFFSET], 0);
	EXPECT_EQ(t, vn->counters.tx_lost, 3);
	virtio_net_check_queues(vn); /* once */
	EXPECT_EQ(t, vn->counters.tx_lost, 3);
	EXPECT_EQ(t, virtio_net_transmit_large(vn, frame, length, TEST_TCP_HEADERS), -EIO);
	EXPECT_EQ(t, vn->tx.avail->index, 3);
	EXPECT_EQ(t, capture.frames, 0);
	virtio_free_queue(&vn->rx);
	virtio_free_queue(&vn->tx);
	kfree(frame);
	kfree(common);
	kfree(vn);
}

static void absurd_queue_sizes_are_cut(struct ktest *t)
{
	bool clamped = false;
	EXPECT_EQ(t, virtio_choose_queue_size(256, VIRTIO_QUEUE_MAX, &clamped), 256);
	EXPECT_FALSE(t, clamped);
	EXPECT_EQ(t, virtio_choose_queue_size(65535, VIRTIO_QUEUE_MAX, &clamped), 256);
	EXPECT_TRUE(t, clamped);
	EXPECT_EQ(t, virtio_choose_queue_size(100, VIRTIO_QUEUE_MAX, &clamped), 64);
	EXPECT_TRUE(t, clamped);
	EXPECT_EQ(t, virtio_choose_queue_size(1, VIRTIO_QUEUE_MAX, &clamped), 1);
	EXPECT_EQ(t, virtio_choose_queue_size(0, VIRTIO_QUEUE_MAX, &clamped), 0);
	struct virtqueue queue = {0};
	EXPECT_EQ(t, virtio_alloc_queue(&queue, 100, 64), -EINVAL);
	EXPECT_EQ(t, virtio_alloc_queue(&queue, 512, 64), -EINVAL);
	EXPECT_EQ(t, virtio_alloc_queue(&queue, 0, 64), -EINVAL);
}

static void interrupt_suppression_is_a_flag_in_the_ring(struct ktest *t)
{
	struct virtqueue queue = {0};
	ASSERT_EQ(t, virtio_alloc_queue(&queue, 4, 64), 0);
	queue.notify = &fake_notify;
	virtio_suppress_interrupts(&queue);
	EXPECT_EQ(t, queue.avail->flags, VIRTQ_AVAIL_F_NO_INTERRUPT);
	virtio_allow_interrupts(&queue);
	EXPECT_EQ(t, queue.avail->flags, 0);
	queue.used->flags = VIRTQ_USED_F_NO_NOTIFY; /* the device asks for no kicks */
	virtio_kick_queue(&queue);
	EXPECT_EQ(t, queue.kicks, 0);
	queue.used->flags = 0;
	virtio_kick_queue(&queue);
	EXPECT_EQ(t, queue.kicks, 1);
	virtio_free_queue(&queue);
}

static struct virtio_net *offloading_device(struct ktest *t, unsigned queue_size)
{
	struct virtio_net *vn = kzalloc(sizeof(*vn));
	if (!vn)
		return NULL;
	spin_init(&vn->tx_lock, "virtio-net.tx");
	vn->nic.driver = vn;
	vn->nic.mtu = 1500;
	vn->vdev.features = VIRTIO_NET_F_CSUM | VIRTIO_NET_F_HOST_TSO4;
	if (virtio_alloc_queue(&vn->tx, queue_size, VIRTIO_NET_BUFFER) ||
	    !virtio_net_setup_offload(vn)) {
		kfree(vn);
		return NULL;
	}
	vn->tx.notify = &fake_notify;
	EXPECT_EQ(t, vn->large.free_pages, VIRTIO_NET_LARGE_PAGES);
	return vn;
}

static void free_offloading_device(struct virtio_net *vn)
{
	mm_free_pages(vn->large.memory, VIRTIO_NET_LARGE_PAGES);
	virtio_free_queue(&vn->tx);
	kfree(vn);
}

static void large_frames_go_whole_to_a_device_that_segments(struct ktest *t)
{
	struct virtio_net plain = {.vdev.features = VIRTIO_NET_F_CSUM}; /* no HOST_TSO4 */
	EXPECT_FALSE(t, virtio_net_setup_offload(&plain));
	EXPECT_TRUE(t, plain.large.memory == NULL);

	const size_t length = 20000;
	uint8_t *frame = kmalloc(length);
	struct virtio_net *vn = offloading_device(t, 8);
	ASSERT_TRUE(t, frame != NULL && vn != NULL);
	test_tcp_frame(frame, length);
	ASSERT_EQ(t, virtio_net_transmit_offloaded(vn, frame, length, 54), 0);
	EXPECT_EQ(t, vn->tx.avail->index, 1);
	unsigned id = vn->tx.avail->ring[0];
	struct virtq_desc *desc = &vn->tx.desc[id];
	EXPECT_EQ(t, desc->length, VIRTIO_NET_HEADER + length);
	EXPECT_EQ(t, desc->flags, 0); /* one descriptor, the device reads it */
	unsigned first = vn->large.first[id] - 1u;
	ASSERT_TRUE(t, first < VIRTIO_NET_LARGE_PAGES);
	EXPECT_EQ(t, vn->large.pages[id], 5); /* 12 + 20,000 bytes */
	EXPECT_EQ(t, vn->large.free_pages, VIRTIO_NET_LARGE_PAGES - 5);
	EXPECT_EQ(t, desc->address, vn->large.phys + (uint64_t)first * VIRTIO_NET_PAGE);
	const uint8_t *buffer = vn->large.memory + (size_t)first * VIRTIO_NET_PAGE;
	const struct virtio_net_header *header = (const void *)buffer;
	EXPECT_EQ(t, header->flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
	EXPECT_EQ(t, header->gso_type, VIRTIO_NET_HDR_GSO_TCPV4);
	EXPECT_EQ(t, header->hdr_len, 54);
	EXPECT_EQ(t, header->gso_size, 1460);
	EXPECT_EQ(t, header->csum_start, 34);
	EXPECT_EQ(t, header->csum_offset, 16);
	EXPECT_EQ(t, header->num_buffers, 0);
	const uint8_t *copy = buffer + VIRTIO_NET_HEADER;
	uint16_t pseudo = nic_tcp_pseudo_sum(frame + 14, length - 34);
	EXPECT_EQ(t, memcmp(copy + 50, &pseudo, 2), 0); /* the checksum field */
	EXPECT_EQ(t, memcmp(copy, frame, 50), 0);
	EXPECT_EQ(t, memcmp(copy + 52, frame + 52, length - 52), 0);
	EXPECT_EQ(t, vn->counters.tx_offloaded, 1);
	EXPECT_EQ(t, vn->counters.tx_packets, (length - 54 + 1459) / 1460);

	/* Not a TCP/IPv4 frame, or longer than a device segments: refused. */
	frame[23] = 17; /* UDP */
	EXPECT_EQ(t, virtio_net_transmit_offloaded(vn, frame, length, 54), -EINVAL);
	frame[23] = 6;
	EXPECT_EQ(t, virtio_net_transmit_offloaded(vn, frame, NIC_SEGMENTED_MAX + 1, 54), -EINVAL);

	/* The pages come back with the descriptor. */
	device_uses(&vn->tx, id, 0);
	virtio_net_reclaim_tx(vn);
	EXPECT_EQ(t, vn->large.first[id], 0);
	EXPECT_EQ(t, vn->large.free_pages, VIRTIO_NET_LARGE_PAGES);
	EXPECT_EQ(t, vn->tx.free_count, 8);
	free_offloading_device(vn);
	kfree(frame);
}

/* Frames of 15 pages each until the area is full: the next is refused with
 * nothing offered, and one that comes back makes room for it. */
static void a_full_area_refuses_large_frames_and_keeps_its_pages(struct ktest *t)
{
	const size_t length = 60000, per_frame = 15;
	uint8_t *frame = kmalloc(length);
	struct virtio_net *vn = offloading_device(t, 128); /* more descriptors than room */
	ASSERT_TRUE(t, frame != NULL && vn != NULL);
	test_tcp_frame(frame, length);
	unsigned fit = VIRTIO_NET_LARGE_PAGES / per_frame;
	for (unsigned i = 0; i < fit; i++)
		ASSERT_EQ(t, virtio_net_transmit_offloaded(vn, frame, length, 54), 0);
	EXPECT_EQ(t, vn->large.free_pages, VIRTIO_NET_LARGE_PAGES - fit * per_frame);
	EXPECT_EQ(t, virtio_net_transmit_offloaded(vn, frame, length, 54), -EAGAIN);
	EXPECT_EQ(t, vn->counters.tx_ring_full, 1);
	EXPECT_EQ(t, vn->tx.avail->index, fit); /* nothing more offered */
	device_uses(&vn->tx, vn->tx.avail->ring[5], 0);
	EXPECT_EQ(t, virtio_net_transmit_offloaded(vn, frame, length, 54), 0); /* reclaimed first */
	EXPECT_EQ(t, vn->large.free_pages, VIRTIO_NET_LARGE_PAGES - fit * per_frame);
	/* With the area short of the frame, the driver cuts it itself. */
	EXPECT_EQ(t, virtio_net_transmit_large(vn, frame, length, 54), 0);
	EXPECT_EQ(t, vn->counters.tx_segmented, 1);
	EXPECT_EQ(t, vn->tx.avail->index, fit + 1 + (length - 54 + 1459) / 1460);
	/* Small frames fit where a large one does not: the area counts bytes. */
	const size_t small = 4000; /* one page */
	unsigned more = 0;
	while (virtio_net_transmit_offloaded(vn, frame, small, 54) == 0)
		more++;
	EXPECT_EQ(t, more, VIRTIO_NET_LARGE_PAGES - fit * per_frame);
	EXPECT_EQ(t, vn->large.free_pages, 0);
	free_offloading_device(vn);
	kfree(frame);
}

/* Runs taken and given back out of order: next fit wraps round and finds
 * the free run wherever it is. */
static void the_area_reuses_runs_given_back_out_of_order(struct ktest *t)
{
	struct virtio_net_large large = {.free_pages = VIRTIO_NET_LARGE_PAGES};
	int a = virtio_net_large_take(&large, 512), b = virtio_net_large_take(&large, 500);
	EXPECT_EQ(t, a, 0);
	EXPECT_EQ(t, b, 512);
	EXPECT_EQ(t, virtio_net_large_take(&large, 13), -1); /* 12 left at the end */
	virtio_net_large_give(&large, 0, 512);
	EXPECT_EQ(t, virtio_net_large_take(&large, 13), 0);  /* wrapped to the start */
	EXPECT_EQ(t, virtio_net_large_take(&large, 12), 13); /* on from there */
	EXPECT_EQ(t, virtio_net_large_take(&large, 0), -1);
	EXPECT_EQ(t, large.free_pages, 1024 - 500 - 25);
	virtio_net_large_give(&large, 512, 500);
	EXPECT_EQ(t, virtio_net_large_take(&large, 999), 25); /* all the rest, one run */
	EXPECT_EQ(t, large.free_pages, 0);
}

/* An interrupt that arrives before the queue exists (attached first, for
 * its MSI-X entry) is ignored: the queue's rings are not there to read. */
static void an_interrupt_before_the_blk_queue_exists_is_ignored(struct ktest *t)
{
	struct virtio_blk *vb = kzalloc(sizeof(*vb));
	ASSERT_TRUE(t, vb != NULL);
	spin_init(&vb->lock, "virtio-blk.test");
	vb->irq_kind = PCI_IRQ_MSIX;
	virtio_blk_irq(NULL, vb); /* queue.used is NULL */
	EXPECT_EQ(t, vb->interrupts, 0);
	kfree(vb);
}

static int blk_test_ended = 1; /* the status the request ended with; 1: not ended */

static void blk_test_done(struct block_request *request)
{
	blk_test_ended = request->status;
}

/* Runs the watchdog as its timer would, the timer disarmed first so that
 * only the test steps it (interrupts are off meanwhile). */
static void step_blk_watchdog(struct virtio_blk *vb)
{
	if (vb->watching && timer_cancel_oneshot(&vb->watchdog) == 0)
		vb->watching = false;
	virtio_blk_watchdog(&vb->watchdog, vb);
}

/* A device declared dead is reset without waiting in timer context: the
 * watchdog that gives up on it writes status 0 and returns, its request
 * still held (the device may still write the buffer); a step while the
 * status does not read 0 keeps it held; the step that sees 0 ends it with
 * -ETIMEDOUT and frees its slot.  The device is memory here, standing still
 * between steps; the deadline is pushed out so no step depends on time. */
static void a_dead_blk_device_is_reset_in_timer_steps(struct ktest *t)
{
	struct virtio_blk *vb = kzalloc(sizeof(*vb));
	uint8_t *common = kzalloc(64);
	struct block_device disk = {.name = "vdt"};
	struct block_request request = {.device = &disk, .op = BLOCK_READ, .done = blk_test_done};
	ASSERT_TRUE(t, vb && common);
	spin_init(&vb->lock, "virtio-blk.test");
	semaphore_init(&vb->free_slots, 0, "virtio-blk.test");
	vb->vdev.common = common;
	vb->slots = kzalloc(sizeof(*vb->slots));
	ASSERT_TRUE(t, vb->slots != NULL);
	vb->slot_count = 1;
	vb->slots[0].request = &request;
	request.queued_ns = clock_ns() - 6 * NSEC_PER_SEC; /* past the 5 s timeout */
	disk.counters.in_flight = 1;
	common[COMMON_STATUS_OFFSET] = 0x0f;
	uint64_t irq = irq_save();
	step_blk_watchdog(vb);
	EXPECT_TRUE(t, vb->dead && vb->resetting && vb->watching);
	EXPECT_EQ(t, common[COMMON_STATUS_OFFSET], 0);
	EXPECT_EQ(t, blk_test_ended, 1);
	vb->reset_deadline_ns = UINT64_MAX;
	common[COMMON_STATUS_OFFSET] = 0x01; /* the reset is not over */
	step_blk_watchdog(vb);
	EXPECT_TRUE(t, vb->resetting && vb->watching);
	EXPECT_EQ(t, blk_test_ended, 1);
	EXPECT_TRUE(t, vb->slots[0].request == &request);
	common[COMMON_STATUS_OFFSET] = 0;
	step_blk_watchdog(vb);
	EXPECT_FALSE(t, vb->resetting);
	EXPECT_EQ(t, blk_test_ended, -ETIMEDOUT);
	EXPECT_TRUE(t, vb->slots[0].request == NULL);
	EXPECT_EQ(t, vb->free_slots.count, 1);
	EXPECT_EQ(t, disk.counters.in_flight, 0);
	if (vb->watching)
		timer_cancel_oneshot(&vb->watchdog);
	irq_restore(irq);
	kfree(vb->slots);
	kfree(common);
	kfree(vb);
}

/* A read the device says it wrote fewer (or more) bytes into than asked
 * fails, even with status OK; writes and flushes go by the status alone. */
static void a_blk_read_short_of_its_length_fails(struct ktest *t)
{
	struct block_request read = {.op = BLOCK_READ, .count = 2};
	EXPECT_EQ(t, virtio_blk_request_status(&read, 0, 1025), 0);
	EXPECT_EQ(t, virtio_blk_request_status(&read, 0, 513), -EIO);
	EXPECT_EQ(t, virtio_blk_request_status(&read, 0, 1), -EIO);
	EXPECT_EQ(t, virtio_blk_request_status(&read, 0, 2048), -EIO);
	EXPECT_EQ(t, virtio_blk_request_status(&read, 1, 1025), -EIO);
	struct block_request write = {.op = BLOCK_WRITE, .count = 2};
	EXPECT_EQ(t, virtio_blk_request_status(&write, 0, 1), 0);
	EXPECT_EQ(t, virtio_blk_request_status(&write, 0xff, 1), -EIO);
	EXPECT_TRUE(t, virtio_blk_block_size_usable(0, 4096)); /* not offered: 512 */
	EXPECT_TRUE(t, virtio_blk_block_size_usable(VIRTIO_BLK_F_BLK_SIZE, 512));
	EXPECT_FALSE(t, virtio_blk_block_size_usable(VIRTIO_BLK_F_BLK_SIZE, 4096));
}

KTEST_SUITE(virtio, KTEST_CASE(bad_used_entries_are_dropped_and_counted),
	    KTEST_CASE(entries_for_buffers_the_device_does_not_own_are_skipped),
	    KTEST_CASE(a_used_index_ahead_of_the_buffers_in_flight_breaks_the_queue),
	    KTEST_CASE(a_reset_for_a_broken_queue_counts_the_frames_it_held),
	    KTEST_CASE(an_interrupt_before_the_blk_queue_exists_is_ignored),
	    KTEST_CASE(a_blk_read_short_of_its_length_fails),
	    KTEST_CASE(a_dead_blk_device_is_reset_in_timer_steps),
	    KTEST_CASE(absurd_queue_sizes_are_cut),
	    KTEST_CASE(interrupt_suppression_is_a_flag_in_the_ring),
	    KTEST_CASE(large_frames_go_whole_to_a_device_that_segments),
	    KTEST_CASE(a_full_area_refuses_large_frames_and_keeps_its_pages),
	    KTEST_CASE(the_area_reuses_runs_given_back_out_of_order));
