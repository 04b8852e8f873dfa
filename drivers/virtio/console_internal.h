/* The virtio console's state and the pieces its suite drives directly, with
 * queues built in memory and the test playing the device. */
#ifndef DRIVERS_VIRTIO_CONSOLE_INTERNAL_H
#define DRIVERS_VIRTIO_CONSOLE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "pci/pci.h"
#include "sched/sched.h"
#include "virtio/console.h"
#include "virtio/virtio.h"

#define VCON_RX_QUEUE   0 /* port 0's receiveq */
#define VCON_TX_QUEUE   1 /* port 0's transmitq */
#define VCON_BUFFER     4096
#define VCON_TX_BUFFERS 64 /* 256 KiB in flight at most */
#define VCON_RX_BUFFERS 16
#define VCON_RX_BUDGET  16 /* buffers per receive pass before the worker yields */

struct vcon_counters {
	uint64_t bytes_out, bytes_in, writes, rx_buffers_dropped;
	uint64_t rx_bad_length; /* used lengths beyond the buffer */
	uint64_t tx_waits;      /* times a writer slept for a free buffer */
	uint64_t interrupts;
};

struct vcon {
	struct virtio_device vdev;
	struct virtqueue rx, tx;
	enum pci_irq_kind irq_kind;
	struct mutex write_lock; /* serialises writers; guards tx */
	struct waitq tx_waiters; /* writers waiting for the device to return a buffer */
	struct waitq worker_queue;
	volatile bool rx_pending;     /* the device may have used receive buffers */
	volatile bool fill_requested; /* a receiver was set: offer the receive buffers */
	bool rx_filled;               /* worker only: the receive buffers were offered */
	volatile bool failed;         /* the device reported NEEDS_RESET or FAILED */
	struct mutex receiver_lock;   /* held by the worker while it delivers */
	vcon_receive_fn receive;
	void *receive_arg;
	struct thread *worker;
	struct vcon_counters counters;
};

/* Initialises the locks and queues of a zeroed vc (no device involved). */
void vcon_init_state(struct vcon *vc);
/* vcon_write on vc.  Returns 0 or -EIO. */
int vcon_send(struct vcon *vc, const void *data, size_t length);
/* vcon_flush on vc.  Returns 0 or -EIO. */
int vcon_drain(struct vcon *vc);
/* What the interrupt does: re-reads the device status and wakes the writers
 * and the receive worker. */
void vcon_notify(struct vcon *vc);
/* Offers every free receive buffer to the device.  Returns how many. */
unsigned vcon_fill_rx(struct vcon *vc);
/* One receive pass: delivers up to budget used buffers (or drops them) and
 * gives them back to the device.  Returns the buffers taken. */
unsigned vcon_receive(struct vcon *vc, unsigned budget);

#endif
