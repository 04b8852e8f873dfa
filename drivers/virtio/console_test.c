/*
 * The vcon suite: the virtio console driver against a device the test plays
 * (queues built in memory, used entries written by hand, a status byte the
 * test sets) and, when the host takes part, against QEMU's device.
 *
 * vcon_test=send: the suite writes VCON_TEST_SEND_BYTES of the pattern in
 * writes of varied sizes, then VCON_TEST_WRITERS threads write
 * VCON_TEST_RECORDS records each at once; the host (tests/run.py) checks
 * the port's output file byte for byte and every record whole and in order.
 * vcon_test=receive: once the suite has written VCON_TEST_READY, the host
 * writes VCON_TEST_RECEIVE_BYTES of the pattern into the port and the suite
 * checks it arrived whole and in order.  Without
 * vcon_test= those two cases are skipped; without a device, the write must
 * fail with -ENODEV.  vcon_test=bench prints the write throughput for
 * several write sizes (docs/PERFORMANCE.md).  The pattern and the sizes are tests/run.py's too.
 */
#include "boot/cmdline.h"
#include "console/console.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "time/time.h"
#include "virtio/console_internal.h"

#define VCON_TEST_SEND_BYTES    (1u << 20)
#define VCON_TEST_RECEIVE_BYTES (512u << 10)
#define VCON_TEST_READY         "vcon receiver ready\n" /* vcon_test=receive: the host may send */
#define VCON_TEST_WRITERS       3
#define VCON_TEST_RECORDS       50
#define VCON_TEST_RECORD_BYTES  1000
#define VCON_TEST_GUARD_NS      (120ull * 1000 * NSEC_PER_MSEC) /* only against a hang */
#define COMMON_DEVICE_STATUS    0x14                            /* virtio 1.0, 4.1.4.3 */
#define COMMON_SIZE             0x38

enum vcon_test_mode { VCON_TEST_NONE, VCON_TEST_SEND, VCON_TEST_RECEIVE, VCON_TEST_BENCH };
static enum vcon_test_mode vcon_test_mode;

static int set_vcon_test(const char *value)
{
	if (value && !strcmp(value, "send"))
		vcon_test_mode = VCON_TEST_SEND;
	else if (value && !strcmp(value, "receive"))
		vcon_test_mode = VCON_TEST_RECEIVE;
	else if (value && !strcmp(value, "bench"))
		vcon_test_mode = VCON_TEST_BENCH;
	else
		return -1;
	return 0;
}
KERNEL_PARAM(vcon_test, set_vcon_test,
	     "send|receive|bench: the vcon suite's host-checked cases, or its throughput");

/* Byte offset of the pattern: a multiplicative hash, so no period short of 4 GiB. */
static uint8_t pattern_byte(uint64_t offset)
{
	return (uint8_t)(((uint32_t)offset * 2654435761u) >> 24);
}

static void fill_pattern(uint8_t *buffer, uint64_t offset, size_t length)
{
	for (size_t i = 0; i < length; i++)
		buffer[i] = pattern_byte(offset + i);
}

/* ---- A device played by the test ------------------------------------------ */

static volatile uint16_t fake_notify;

struct fake_console {
	struct vcon vc;
	uint8_t common[COMMON_SIZE];
	unsigned control_sent; /* control messages the test sent as the device */
};

static struct fake_console *fake_console_create(unsigned tx_buffers, unsigned rx_buffers)
{
	struct fake_console *fake = kzalloc(sizeof(*fake));
	if (!fake)
		return NULL;
	vcon_init_state(&fake->vc);
	fake->vc.vdev.common = fake->common;
	if (virtio_alloc_queue(&fake->vc.tx, tx_buffers, VCON_BUFFER) ||
	    virtio_alloc_queue(&fake->vc.rx, rx_buffers, VCON_BUFFER))
		return NULL;
	fake->vc.tx.notify = fake->vc.rx.notify = &fake_notify;
	fake->vc.host_open = true; /* port 0 alone, as without MULTIPORT */
	return fake;
}

/* A device with MULTIPORT: control queues of 4 buffers, VCON_PORT not yet
 * announced, the host's end closed. */
static struct fake_console *fake_multiport_create(unsigned tx_buffers)
{
	struct fake_console *fake = fake_console_create(tx_buffers, 4);
	if (!fake || virtio_alloc_queue(&fake->vc.control_rx, 4, VCON_CONTROL_BUFFER) ||
	    virtio_alloc_queue(&fake->vc.control_tx, 4, VCON_CONTROL_BUFFER))
		return NULL;
	fake->vc.control_rx.notify = fake->vc.control_tx.notify = &fake_notify;
	fake->vc.multiport = true;
	fake->vc.host_open = false;
	return fake;
}

static void fake_console_free(struct fake_console *fake)
{
	virtio_free_queue(&fake->vc.tx);
	virtio_free_queue(&fake->vc.rx);
	if (fake->vc.multiport) {
		virtio_free_queue(&fake->vc.control_rx);
		virtio_free_queue(&fake->vc.control_tx);
	}
	kfree(fake);
}

static void device_uses(struct virtqueue *queue, uint32_t id, uint32_t length)
{
	struct virtq_used_elem *elem = &queue->used->ring[queue->used->index % queue->size];
	elem->id = id;
	elem->length = length;
	__atomic_store_n(&queue->used->index, (uint16_t)(queue->used->index + 1), __ATOMIC_RELEASE);
}

/* The descriptor the driver offered n-th (0 first). */
static struct virtq_desc *offered(struct virtqueue *queue, unsigned n)
{
	return &queue->desc[queue->avail->ring[n % queue->size]];
}

/* The device sends a control message (name: PORT_NAME's, with its NUL; or
 * NULL) in the next receive buffer the driver offered. */
static void device_says(struct fake_console *fake, uint32_t port, uint16_t event, uint16_t value,
			const char *name)
{
	struct virtqueue *queue = &fake->vc.control_rx;
	unsigned id = queue->avail->ring[fake->control_sent++ % queue->size];
	struct vcon_control message = {.id = port, .event = event, .value = value};
	uint8_t *buffer = virtio_queue_buffer(queue, id);
	memcpy(buffer, &message, sizeof(message));
	uint32_t length = sizeof(message);
	if (name) {
		memcpy(buffer + length, name, strlen(name) + 1);
		length += (uint32_t)strlen(name) + 1;
	}
	device_uses(queue, id, length);
}

/* The n-th control message the driver sent (0 first). */
static struct vcon_control driver_said(struct vcon *vc, unsigned n)
{
	struct vcon_control message;
	struct virtq_desc *desc = offered(&vc->control_tx, n);
	memcpy(&message, vc->control_tx.buffers + (desc->address - vc->control_tx.buffers_phys),
	       sizeof(message));
	return message;
}

/* Announces VCON_PORT with its name, as QEMU does, and the driver answers. */
static void device_announces_port(struct fake_console *fake, const char *name)
{
	vcon_fill_control(&fake->vc);
	device_says(fake, VCON_PORT, VCON_MSG_DEVICE_ADD, 1, NULL);
	vcon_poll_control(&fake->vc);
	device_says(fake, VCON_PORT, VCON_MSG_PORT_NAME, 1, name);
	vcon_poll_control(&fake->vc);
}

static bool buffer_holds_pattern(struct virtqueue *queue, struct virtq_desc *desc, uint64_t offset)
{
	const uint8_t *bytes = queue->buffers + (desc->address - queue->buffers_phys);
	for (uint32_t i = 0; i < desc->length; i++)
		if (bytes[i] != pattern_byte(offset + i))
			return false;
	return true;
}

/* ---- Without a device ------------------------------------------------------- */

static void write_without_device_is_enodev(struct ktest *t)
{
	if (vcon_present()) {
		ktest_skip(t, "a console device is present");
		return;
	}
	uint8_t bytes[8] = {0};
	EXPECT_EQ(t, vcon_write(bytes, sizeof(bytes)), -ENODEV);
	EXPECT_EQ(t, vcon_write(bytes, 0), -ENODEV);
	vcon_set_receiver(NULL, NULL);
	struct vcon_stats stats = {.writes = 99};
	vcon_get_stats(&stats);
	EXPECT_EQ(t, stats.writes, 0);
	EXPECT_EQ(t, stats.bytes_out, 0);
}

/* ---- Transmit ----------------------------------------------------------------- */

/* Does a write fill whole buffers in order and kick once? */
static void a_write_fills_buffers_in_order_and_kicks_once(struct ktest *t)
{
	struct fake_console *fake = fake_console_create(8, 4);
	ASSERT_TRUE(t, fake != NULL);
	struct vcon *vc = &fake->vc;
	size_t length = 2 * VCON_BUFFER + 1808;
	uint8_t *data = kmalloc(length);
	ASSERT_TRUE(t, data != NULL);
	fill_pattern(data, 0, length);
	EXPECT_EQ(t, vcon_send(vc, data, length), 0);
	EXPECT_EQ(t, vc->tx.avail->index, 3);
	EXPECT_EQ(t, vc->tx.kicks, 1);
	EXPECT_EQ(t, offered(&vc->tx, 0)->length, VCON_BUFFER);
	EXPECT_EQ(t, offered(&vc->tx, 2)->length, 1808);
	for (unsigned n = 0; n < 3; n++) {
		EXPECT_TRUE(t, buffer_holds_pattern(&vc->tx, offered(&vc->tx, n),
						    (uint64_t)n * VCON_BUFFER));
		EXPECT_EQ(t, offered(&vc->tx, n)->flags, 0); /* the device reads it */
	}
	EXPECT_EQ(t, vcon_send(vc, data, 0), 0);
	EXPECT_EQ(t, vc->tx.kicks, 1);
	EXPECT_EQ(t, vc->counters.bytes_out, length);
	EXPECT_EQ(t, vc->counters.writes, 1);
	EXPECT_EQ(t, vc->counters.tx_waits, 0);
	kfree(data);
	fake_console_free(fake);
}

struct writer_job {
	struct vcon *vc;
	const uint8_t *data;
	size_t length;
};

static int writer(void *arg)
{
	struct writer_job *job = arg;
	return vcon_send(job->vc, job->data, job->length);
}

/* What if every buffer is with the device?  The writer sleeps, with
 * used-buffer interrupts allowed, until the device returns some, then goes
 * on where it stopped, and suppresses them again. */
static void a_writer_waits_for_the_device_then_goes_on(struct ktest *t)
{
	struct fake_console *fake = fake_console_create(4, 4);
	ASSERT_TRUE(t, fake != NULL);
	struct vcon *vc = &fake->vc;
	virtio_suppress_interrupts(&vc->tx);
	size_t length = 6 * VCON_BUFFER;
	uint8_t *data = kmalloc(length);
	ASSERT_TRUE(t, data != NULL);
	fill_pattern(data, 0, length);
	struct writer_job job = {vc, data, length};
	struct thread *thread =
	    thread_create(writer, &job, "vcon-test-writer", thread_priority(thread_current()));
	ASSERT_TRUE(t, thread != NULL);
	uint64_t guard = clock_ns() + VCON_TEST_GUARD_NS;
	while (__atomic_load_n(&vc->counters.tx_waits, __ATOMIC_ACQUIRE) == 0 && clock_ns() < guard)
		sched_sleep_ns(NSEC_PER_MSEC);
	EXPECT_EQ(t, vc->tx.avail->index, 4);
	EXPECT_EQ(t, vc->tx.avail->flags, 0); /* interrupts allowed while it waits */
	for (unsigned n = 0; n < 4; n++) {
		EXPECT_TRUE(t, buffer_holds_pattern(&vc->tx, offered(&vc->tx, n),
						    (uint64_t)n * VCON_BUFFER));
		device_uses(&vc->tx, vc->tx.avail->ring[n], offered(&vc->tx, n)->length);
	}
	vcon_notify(vc); /* the interrupt */
	int status = -1;
	ASSERT_EQ(t, thread_join(thread, &status), 0);
	EXPECT_EQ(t, status, 0);
	EXPECT_EQ(t, vc->tx.avail->index, 6);
	EXPECT_EQ(t, vc->tx.avail->flags, VIRTQ_AVAIL_F_NO_INTERRUPT);
	for (unsigned n = 4; n < 6; n++) /* in the available ring's slots 0 and 1 again */
		EXPECT_TRUE(t, buffer_holds_pattern(&vc->tx, offered(&vc->tx, n),
						    (uint64_t)n * VCON_BUFFER));
	EXPECT_EQ(t, vc->counters.tx_waits, 1);
	EXPECT_EQ(t, vc->counters.bytes_out, length);
	kfree(data);
	fake_console_free(fake);
}

/* What if the device breaks while holding every buffer?  The write fails with
 * -EIO instead of waiting for ever, and so does every later one. */
static void a_device_that_needs_reset_fails_the_write(struct ktest *t)
{
	struct fake_console *fake = fake_console_create(2, 4);
	ASSERT_TRUE(t, fake != NULL);
	struct vcon *vc = &fake->vc;
	static uint8_t data[2 * VCON_BUFFER];
	EXPECT_EQ(t, vcon_send(vc, data, sizeof(data)), 0);
	fake->common[COMMON_DEVICE_STATUS] = VIRTIO_STATUS_DRIVER_OK | VIRTIO_STATUS_NEEDS_RESET;
	EXPECT_EQ(t, vcon_send(vc, data, 1), -EIO);
	device_uses(&vc->tx, 0, VCON_BUFFER);
	EXPECT_EQ(t, vcon_send(vc, data, 1), -EIO);
	EXPECT_EQ(t, vc->tx.avail->index, 2);
	fake_console_free(fake);
}

struct flush_job {
	struct vcon *vc;
	volatile bool returned;
};

static int flusher(void *arg)
{
	struct flush_job *job = arg;
	int error = vcon_drain(job->vc);
	job->returned = true;
	return error;
}

/* Does a flush wait until the device has returned every buffer, and fail
 * when the device breaks instead? */
static void a_flush_waits_until_the_device_has_taken_everything(struct ktest *t)
{
	struct fake_console *fake = fake_console_create(4, 4);
	ASSERT_TRUE(t, fake != NULL);
	struct vcon *vc = &fake->vc;
	static uint8_t data[2 * VCON_BUFFER];
	EXPECT_EQ(t, vcon_drain(vc), 0); /* nothing in flight */
	EXPECT_EQ(t, vcon_send(vc, data, sizeof(data)), 0);
	struct flush_job job = {vc, false};
	struct thread *thread =
	    thread_create(flusher, &job, "vcon-test-flush", thread_priority(thread_current()));
	ASSERT_TRUE(t, thread != NULL);
	uint64_t guard = clock_ns() + VCON_TEST_GUARD_NS;
	while (__atomic_load_n(&vc->counters.tx_waits, __ATOMIC_ACQUIRE) == 0 && clock_ns() < guard)
		sched_sleep_ns(NSEC_PER_MSEC);
	device_uses(&vc->tx, vc->tx.avail->ring[0], VCON_BUFFER);
	vcon_notify(vc);
	sched_sleep_ns(NSEC_PER_MSEC);
	EXPECT_FALSE(t, job.returned); /* one buffer is still with the device */
	device_uses(&vc->tx, vc->tx.avail->ring[1], VCON_BUFFER);
	vcon_notify(vc);
	int status = -1;
	ASSERT_EQ(t, thread_join(thread, &status), 0);
	EXPECT_EQ(t, status, 0);
	EXPECT_EQ(t, vc->tx.free_count, 4);
	EXPECT_EQ(t, vcon_send(vc, data, 1), 0);
	fake->common[COMMON_DEVICE_STATUS] = VIRTIO_STATUS_FAILED;
	EXPECT_EQ(t, vcon_drain(vc), -EIO);
	fake_console_free(fake);
}

/* A lent write is descriptors at the caller's own memory (physical address
 * and length, read by the device), no longer than the queue's own buffers,
 * ordered after a copied write and before the next, with nothing copied
 * into the queue's buffers. */
static void a_lent_write_points_at_the_callers_memory(struct ktest *t)
{
	struct fake_console *fake = fake_console_create(8, 4);
	ASSERT_TRUE(t, fake != NULL);
	struct vcon *vc = &fake->vc;
	size_t length = 2 * VCON_BUFFER + 100; /* more than one of the queue's buffers */
	uint8_t *pages = mm_alloc_pages(3, PAGE_SIZE);
	ASSERT_TRUE(t, pages != NULL);
	fill_pattern(pages, 0, length);
	uint8_t header[16] = {1};
	EXPECT_EQ(t, vcon_send(vc, header, sizeof header), 0);
	EXPECT_EQ(t, vcon_send_lent(vc, pages + 8, length - 8), 0);
	EXPECT_EQ(t, vcon_send(vc, header, 1), 0);
	EXPECT_EQ(t, vc->tx.avail->index, 5);
	EXPECT_EQ(t, offered(&vc->tx, 0)->length, sizeof header);
	for (unsigned n = 1; n <= 3; n++) {
		size_t at = 8 + (n - 1) * VCON_BUFFER;
		EXPECT_EQ(t, offered(&vc->tx, n)->address, virt_to_phys(pages + at));
		EXPECT_EQ(t, offered(&vc->tx, n)->length, n < 3 ? VCON_BUFFER : length - at);
		EXPECT_EQ(t, offered(&vc->tx, n)->flags, 0); /* the device reads it */
	}
	EXPECT_EQ(t, offered(&vc->tx, 4)->length, 1);
	EXPECT_EQ(t, vc->counters.bytes_out, sizeof header + length - 8 + 1);
	/* A descriptor goes back to its own buffer once the device returns it. */
	device_uses(&vc->tx, vc->tx.avail->ring[1], 0);
	EXPECT_EQ(t, vcon_send(vc, header, sizeof header), 0);
	EXPECT_EQ(t, offered(&vc->tx, 5)->address,
		  vc->tx.buffers_phys + (uint64_t)vc->tx.avail->ring[5] * VCON_BUFFER);
	mm_free_pages(pages, 3);
	fake_console_free(fake);
}

/* ---- MULTIPORT: the control queues -------------------------------------------- */

/* Does the driver answer the device's announcement of VCON_PORT with
 * PORT_READY, its name with PORT_OPEN, follow the host's PORT_OPEN, and
 * leave other ports and broken messages alone? */
static void the_named_port_is_made_ready_and_opened(struct ktest *t)
{
	struct fake_console *fake = fake_multiport_create(4);
	ASSERT_TRUE(t, fake != NULL);
	struct vcon *vc = &fake->vc;
	vcon_fill_control(vc);
	EXPECT_EQ(t, vc->control_rx.avail->index, 4);
	EXPECT_EQ(t, vc->control_rx.desc[0].flags, VIRTQ_DESC_F_WRITE);
	device_says(fake, 2, VCON_MSG_DEVICE_ADD, 1, NULL); /* another port: not ours */
	device_says(fake, VCON_PORT, VCON_MSG_DEVICE_ADD, 1, NULL);
	EXPECT_EQ(t, vcon_poll_control(vc), 2);
	EXPECT_EQ(t, vc->control_tx.avail->index, 1);
	struct vcon_control said = driver_said(vc, 0);
	EXPECT_EQ(t, said.id, VCON_PORT);
	EXPECT_EQ(t, said.event, VCON_MSG_PORT_READY);
	EXPECT_EQ(t, said.value, 1);
	EXPECT_EQ(t, offered(&vc->control_tx, 0)->length, sizeof(struct vcon_control));
	EXPECT_TRUE(t, vc->port_added);
	EXPECT_FALSE(t, vc->port_named);
	device_says(fake, VCON_PORT, VCON_MSG_PORT_NAME, 1, VCON_PORT_NAME);
	device_says(fake, VCON_PORT, VCON_MSG_PORT_OPEN, 1, NULL);
	EXPECT_EQ(t, vcon_poll_control(vc), 2);
	EXPECT_TRUE(t, vc->port_named);
	EXPECT_TRUE(t, vc->host_open);
	EXPECT_EQ(t, vc->control_tx.avail->index, 2);
	said = driver_said(vc, 1);
	EXPECT_EQ(t, said.id, VCON_PORT);
	EXPECT_EQ(t, said.event, VCON_MSG_PORT_OPEN);
	EXPECT_EQ(t, said.value, 1);
	device_says(fake, VCON_PORT, VCON_MSG_PORT_OPEN, 0, NULL); /* the host went */
	device_uses(&vc->control_rx, vc->control_rx.avail->ring[fake->control_sent++ % 4], 3);
	EXPECT_EQ(t, vcon_poll_control(vc), 2);
	EXPECT_FALSE(t, vc->host_open);
	EXPECT_EQ(t, vc->counters.control_bad, 1);
	EXPECT_EQ(t, vc->counters.control_in, 6);
	EXPECT_EQ(t, vc->control_rx.free_count, 0); /* every buffer back with the device */
	EXPECT_EQ(t, vc->control_tx.avail->index, 2);
	fake_console_free(fake);
}

/* A port of the right number with another name is not the stream's: no
 * PORT_OPEN for it, and the host's PORT_OPEN does not open it. */
static void a_port_with_another_name_is_not_used(struct ktest *t)
{
	static const char *const names[] = {"org.microscope.trace2", "org.microscope", ""};
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct fake_console *fake = fake_multiport_create(4);
		ASSERT_TRUE(t, fake != NULL);
		device_announces_port(fake, names[i]);
		device_says(fake, VCON_PORT, VCON_MSG_PORT_OPEN, 1, NULL);
		vcon_poll_control(&fake->vc);
		EXPECT_FALSE(t, fake->vc.port_named);
		EXPECT_FALSE(t, fake->vc.host_open);
		EXPECT_EQ(t, fake->vc.control_tx.avail->index, 1); /* PORT_READY only */
		fake_console_free(fake);
	}
}

/* Does a writer wait while the host's end is closed, offering nothing (QEMU
 * would discard it), take the device's PORT_OPEN itself (nobody else reads
 * the control queue here), and then send everything? */
static void a_writer_waits_for_the_host_then_goes_on(struct ktest *t)
{
	struct fake_console *fake = fake_multiport_create(4);
	ASSERT_TRUE(t, fake != NULL);
	struct vcon *vc = &fake->vc;
	device_announces_port(fake, VCON_PORT_NAME);
	ASSERT_TRUE(t, vc->port_named);
	size_t length = 2 * VCON_BUFFER + 5;
	uint8_t *data = kmalloc(length);
	ASSERT_TRUE(t, data != NULL);
	fill_pattern(data, 0, length);
	struct writer_job job = {vc, data, length};
	struct thread *thread =
	    thread_create(writer, &job, "vcon-test-writer", thread_priority(thread_current()));
	ASSERT_TRUE(t, thread != NULL);
	uint64_t guard = clock_ns() + VCON_TEST_GUARD_NS;
	while (__atomic_load_n(&vc->counters.host_waits, __ATOMIC_ACQUIRE) == 0 &&
	       clock_ns() < guard)
		sched_sleep_ns(NSEC_PER_MSEC);
	sched_sleep_ns(NSEC_PER_MSEC);
	EXPECT_EQ(t, vc->counters.host_waits, 1);
	EXPECT_EQ(t, vc->tx.avail->index, 0); /* nothing offered while nobody listens */
	device_says(fake, VCON_PORT, VCON_MSG_PORT_OPEN, 1, NULL);
	vcon_notify(vc); /* the interrupt */
	int status = -1;
	ASSERT_EQ(t, thread_join(thread, &status), 0);
	EXPECT_EQ(t, status, 0);
	EXPECT_EQ(t, vc->tx.avail->index, 3);
	for (unsigned n = 0; n < 3; n++)
		EXPECT_TRUE(t, buffer_holds_pattern(&vc->tx, offered(&vc->tx, n),
						    (uint64_t)n * VCON_BUFFER));
	EXPECT_EQ(t, vc->counters.bytes_out, length);
	fake_console_free(fake);
}

/* A host that leaves while the device holds a buffer (QEMU drops a
 * throttled element when the host's end closes, without returning it): a
 * flush waits only for what the next host's writes offered, and once the
 * device returns one of those, the dropped buffer is counted lost and free
 * again. */
static void a_buffer_kept_when_the_host_left_holds_no_flush(struct ktest *t)
{
	struct fake_console *fake = fake_multiport_create(4);
	ASSERT_TRUE(t, fake != NULL);
	struct vcon *vc = &fake->vc;
	device_announces_port(fake, VCON_PORT_NAME);
	device_says(fake, VCON_PORT, VCON_MSG_PORT_OPEN, 1, NULL);
	vcon_poll_control(vc);
	ASSERT_TRUE(t, vc->host_open);
	uint8_t data[64] = {7};
	EXPECT_EQ(t, vcon_send(vc, data, sizeof data), 0); /* the device keeps it */
	unsigned kept = vc->tx.avail->ring[0];
	device_says(fake, VCON_PORT, VCON_MSG_PORT_OPEN, 0, NULL); /* the host leaves */
	vcon_poll_control(vc);
	device_says(fake, VCON_PORT, VCON_MSG_PORT_OPEN, 1, NULL); /* another comes */
	vcon_poll_control(vc);
	EXPECT_EQ(t, vcon_drain(vc), 0); /* nothing of this host's is out */
	EXPECT_EQ(t, vcon_send(vc, data, sizeof data), 0);
	EXPECT_FALSE(t, vcon_taken(vc)); /* this host's write is out */
	EXPECT_EQ(t, vc->tx.free_count, 2);
	device_uses(&vc->tx, vc->tx.avail->ring[1], sizeof data);
	EXPECT_TRUE(t, vcon_taken(vc));
	EXPECT_EQ(t, vc->tx.free_count, 4); /* the kept one counted lost */
	EXPECT_EQ(t, vc->counters.tx_lost, 1);
	/* Should the device return the lost one after all, it is skipped. */
	device_uses(&vc->tx, kept, sizeof data);
	EXPECT_TRUE(t, vcon_taken(vc));
	EXPECT_EQ(t, vc->tx.free_count, 4);
	EXPECT_EQ(t, vc->tx.bad_used, 1);
	fake_console_free(fake);
}

/* The device removes the port while a writer waits for the host: the write
 * fails with -EIO, and so does every later one. */
static void a_removed_port_fails_the_write(struct ktest *t)
{
	struct fake_console *fake = fake_multiport_create(4);
	ASSERT_TRUE(t, fake != NULL);
	struct vcon *vc = &fake->vc;
	device_announces_port(fake, VCON_PORT_NAME);
	static uint8_t data[16];
	struct writer_job job = {vc, data, sizeof(data)};
	struct thread *thread =
	    thread_create(writer, &job, "vcon-test-writer", thread_priority(thread_current()));
	ASSERT_TRUE(t, thread != NULL);
	uint64_t guard = clock_ns() + VCON_TEST_GUARD_NS;
	while (__atomic_load_n(&vc->counters.host_waits, __ATOMIC_ACQUIRE) == 0 &&
	       clock_ns() < guard)
		sched_sleep_ns(NSEC_PER_MSEC);
	device_says(fake, VCON_PORT, VCON_MSG_DEVICE_REMOVE, 1, NULL);
	vcon_notify(vc);
	int status = 0;
	ASSERT_EQ(t, thread_join(thread, &status), 0);
	EXPECT_EQ(t, status, -EIO);
	EXPECT_EQ(t, vcon_send(vc, data, 1), -EIO);
	EXPECT_EQ(t, vc->tx.avail->index, 0);
	fake_console_free(fake);
}

/* ---- Receive ------------------------------------------------------------------ */

struct capture {
	uint64_t bytes, mismatches, calls;
	uint64_t expected; /* receive_pattern: when to signal done */
	struct completion done;
};

static void capture_pattern(const uint8_t *data, size_t length, void *arg)
{
	struct capture *capture = arg;
	for (size_t i = 0; i < length; i++)
		if (data[i] != pattern_byte(capture->bytes + i))
			capture->mismatches++;
	capture->bytes += length;
	capture->calls++;
	if (capture->expected && capture->bytes >= capture->expected)
		completion_signal(&capture->done);
}

/* The device writes length bytes of the pattern at offset into the buffer
 * of descriptor id and uses it. */
static void device_receives(struct vcon *vc, unsigned id, uint64_t offset, uint32_t length)
{
	fill_pattern(virtio_queue_buffer(&vc->rx, id), offset, length);
	device_uses(&vc->rx, id, length);
}

/* Do good buffers reach the receiver in the device's order, and are lying
 * ones dropped and counted, with every buffer going back to the device? */
static void received_bytes_reach_the_receiver_in_order(struct ktest *t)
{
	struct fake_console *fake = fake_console_create(2, 4);
	ASSERT_TRUE(t, fake != NULL);
	struct vcon *vc = &fake->vc;
	struct capture capture = {0};
	vc->receive = capture_pattern;
	vc->receive_arg = &capture;
	EXPECT_EQ(t, vcon_fill_rx(vc), 4);
	device_receives(vc, 2, 0, 100);
	device_receives(vc, 0, 100, VCON_BUFFER);
	device_uses(&vc->rx, 9, 10);              /* no such descriptor */
	device_uses(&vc->rx, 1, VCON_BUFFER + 1); /* beyond the buffer */
	EXPECT_EQ(t, vcon_receive(vc, 64), 3);
	device_receives(vc, 3, 100 + VCON_BUFFER, 7);
	EXPECT_EQ(t, vcon_receive(vc, 64), 1);
	EXPECT_EQ(t, capture.bytes, 100 + VCON_BUFFER + 7);
	EXPECT_EQ(t, capture.calls, 3);
	EXPECT_EQ(t, capture.mismatches, 0);
	EXPECT_EQ(t, vc->rx.bad_used, 1);
	EXPECT_EQ(t, vc->counters.rx_bad_length, 1);
	EXPECT_EQ(t, vc->counters.rx_buffers_dropped, 1);
	EXPECT_EQ(t, vc->counters.bytes_in, capture.bytes);
	EXPECT_EQ(t, vc->rx.free_count, 0); /* all back with the device */
	EXPECT_EQ(t, vc->rx.avail->index, 4 + 4);
	vc->receive = NULL; /* delivery stopped: dropped and counted */
	device_receives(vc, 2, 0, 50);
	EXPECT_EQ(t, vcon_receive(vc, 64), 1);
	EXPECT_EQ(t, capture.calls, 3);
	EXPECT_EQ(t, vc->counters.rx_buffers_dropped, 2);
	fake_console_free(fake);
}

/* ---- With the host: vcon_test=send ---------------------------------------- */

static const size_t write_sizes[] = {1,    3,    64,    511,   4095,   4096,
				     4097, 8192, 10000, 65536, 100000, 7};

static int pattern_writer(uint8_t *chunk)
{
	uint64_t offset = 0;
	for (unsigned i = 0; offset < VCON_TEST_SEND_BYTES; i++) {
		size_t length = write_sizes[i % (sizeof(write_sizes) / sizeof(write_sizes[0]))];
		if (length > VCON_TEST_SEND_BYTES - offset)
			length = VCON_TEST_SEND_BYTES - offset;
		fill_pattern(chunk, offset, length);
		int error = vcon_write(chunk, length);
		if (error)
			return error;
		offset += length;
	}
	return 0;
}

/* Record n of writer w: byte 0 is 'A' + w, bytes 1-2 n (little-endian), the
 * rest w ^ n ^ i. */
static int record_writer(void *arg)
{
	unsigned w = (unsigned)(uintptr_t)arg;
	uint8_t record[VCON_TEST_RECORD_BYTES];
	for (unsigned n = 0; n < VCON_TEST_RECORDS; n++) {
		record[0] = (uint8_t)('A' + w);
		record[1] = (uint8_t)n;
		record[2] = (uint8_t)(n >> 8);
		for (unsigned i = 3; i < VCON_TEST_RECORD_BYTES; i++)
			record[i] = (uint8_t)(w ^ n ^ i);
		int error = vcon_write(record, sizeof(record));
		if (error)
			return error;
		if (n % 8 == w)
			sched_yield();
	}
	return 0;
}

static void concurrent_writers(struct ktest *t)
{
	struct thread *threads[VCON_TEST_WRITERS];
	for (unsigned w = 0; w < VCON_TEST_WRITERS; w++) {
		threads[w] = thread_create(record_writer, (void *)(uintptr_t)w, "vcon-test-records",
					   thread_priority(thread_current()));
		ASSERT_TRUE(t, threads[w] != NULL);
	}
	for (unsigned w = 0; w < VCON_TEST_WRITERS; w++) {
		int status = -1;
		EXPECT_EQ(t, thread_join(threads[w], &status), 0);
		EXPECT_EQ(t, status, 0);
	}
}

static void the_pattern_reaches_the_host(struct ktest *t)
{
	if (vcon_test_mode != VCON_TEST_SEND || !vcon_present()) {
		ktest_skip(t, "needs vcon_test=send and a console port");
		return;
	}
	uint8_t *chunk = kmalloc(100000);
	ASSERT_TRUE(t, chunk != NULL);
	struct vcon_stats before, after;
	vcon_get_stats(&before);
	console_print("    # vcon: writing the pattern\n"); /* the slow reader connects on this */
	uint64_t start = clock_ns();
	EXPECT_EQ(t, pattern_writer(chunk), 0);
	EXPECT_EQ(t, vcon_flush(), 0);
	uint64_t elapsed = clock_ns() - start; /* until the device has taken it all */
	vcon_get_stats(&after);
	EXPECT_EQ(t, after.bytes_out - before.bytes_out, VCON_TEST_SEND_BYTES);
	uint64_t bytes_per_ms =
	    elapsed ? (uint64_t)VCON_TEST_SEND_BYTES * NSEC_PER_MSEC / elapsed : 0;
	console_print("    # vcon: %u bytes written and flushed in %lu us: %lu kB/s, "
		      "tx waits %lu, host waits %lu\n",
		      VCON_TEST_SEND_BYTES, elapsed / 1000, bytes_per_ms,
		      after.tx_waits - before.tx_waits, after.host_waits - before.host_waits);
	concurrent_writers(t);
	EXPECT_EQ(t, vcon_flush(), 0); /* before the machine stops */
	vcon_get_stats(&after);
	EXPECT_EQ(t, after.bytes_out - before.bytes_out,
		  VCON_TEST_SEND_BYTES +
		      VCON_TEST_WRITERS * VCON_TEST_RECORDS * VCON_TEST_RECORD_BYTES);
	kfree(chunk);
}

/* ---- With the host: vcon_test=receive ------------------------------------- */

static void the_hosts_pattern_arrives_in_order(struct ktest *t)
{
	if (vcon_test_mode != VCON_TEST_RECEIVE || !vcon_present()) {
		ktest_skip(t, "needs vcon_test=receive and a console port");
		return;
	}
	static struct capture capture; /* stays valid: the receiver may still run after a failure */
	capture = (struct capture){.expected = VCON_TEST_RECEIVE_BYTES};
	completion_init(&capture.done, "vcon-test");
	vcon_set_receiver(capture_pattern, &capture);
	/* Only now may the host send: the trace stream's receiver had the port before. */
	EXPECT_EQ(t, vcon_write(VCON_TEST_READY, sizeof(VCON_TEST_READY) - 1), 0);
	EXPECT_EQ(t, completion_wait_timeout(&capture.done, VCON_TEST_GUARD_NS), 0);
	vcon_set_receiver(NULL, NULL);
	EXPECT_EQ(t, capture.bytes, VCON_TEST_RECEIVE_BYTES);
	EXPECT_EQ(t, capture.mismatches, 0);
	struct vcon_stats stats;
	vcon_get_stats(&stats);
	EXPECT_EQ(t, stats.bytes_in, VCON_TEST_RECEIVE_BYTES);
	EXPECT_EQ(t, stats.rx_buffers_dropped, 0);
}

/* ---- vcon_test=bench ------------------------------------------------------- */

#define VCON_BENCH_BYTES (4u << 20) /* per write size */

static void throughput_by_write_size(struct ktest *t)
{
	if (vcon_test_mode != VCON_TEST_BENCH || !vcon_present()) {
		ktest_skip(t, "needs vcon_test=bench and a console port");
		return;
	}
	static const size_t sizes[] = {64, 512, 4096, 65536};
	uint8_t *chunk = kmalloc(65536);
	ASSERT_TRUE(t, chunk != NULL);
	fill_pattern(chunk, 0, 65536);
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t start = clock_ns();
		for (size_t sent = 0; sent < VCON_BENCH_BYTES; sent += sizes[i])
			ASSERT_EQ(t, vcon_write(chunk, sizes[i]), 0);
		ASSERT_EQ(t, vcon_flush(), 0);
		uint64_t elapsed = clock_ns() - start;
		console_print(
		    "    # vcon bench: %u bytes in writes of %zu: %lu us, %lu kB/s\n",
		    VCON_BENCH_BYTES, sizes[i], elapsed / 1000,
		    (uint64_t)(VCON_BENCH_BYTES * NSEC_PER_MSEC / (elapsed ? elapsed : 1)));
	}
	kfree(chunk);
}

KTEST_SUITE(vcon, KTEST_CASE(write_without_device_is_enodev),
	    KTEST_CASE(a_write_fills_buffers_in_order_and_kicks_once),
	    KTEST_CASE(a_writer_waits_for_the_device_then_goes_on),
	    KTEST_CASE(a_device_that_needs_reset_fails_the_write),
	    KTEST_CASE(a_flush_waits_until_the_device_has_taken_everything),
	    KTEST_CASE(a_lent_write_points_at_the_callers_memory),
	    KTEST_CASE(the_named_port_is_made_ready_and_opened),
	    KTEST_CASE(a_port_with_another_name_is_not_used),
	    KTEST_CASE(a_writer_waits_for_the_host_then_goes_on),
	    KTEST_CASE(a_buffer_kept_when_the_host_left_holds_no_flush),
	    KTEST_CASE(a_removed_port_fails_the_write),
	    KTEST_CASE(received_bytes_reach_the_receiver_in_order),
	    KTEST_CASE(the_pattern_reaches_the_host),
	    KTEST_CASE(the_hosts_pattern_arrives_in_order), KTEST_CASE(throughput_by_write_size));
