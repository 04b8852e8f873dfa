/*
 * The virtio suite: virtqueues and the virtio-net receive path against a
 * device that lies.  Queues are built in memory without a device; the test
 * plays the device by writing used entries naming descriptors that do not
 * exist or that the device does not own, and lengths beyond the buffer or
 * below the header.  Only good frames may reach nic_rx, every bad entry is
 * counted, and every buffer goes back to the device.  An absurd queue size
 * offered by a device is cut to a power of two the driver can hold.
 */
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
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
	ASSERT_EQ(t, virtio_offer_buffer(&queue, 1, 64, false), 0);
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
	EXPECT_EQ(t, queue.free_count, 4);
	virtio_free_queue(&queue);
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

KTEST_SUITE(virtio, KTEST_CASE(bad_used_entries_are_dropped_and_counted),
	    KTEST_CASE(entries_for_buffers_the_device_does_not_own_are_skipped),
	    KTEST_CASE(absurd_queue_sizes_are_cut),
	    KTEST_CASE(interrupt_suppression_is_a_flag_in_the_ring));
