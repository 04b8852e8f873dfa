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

/* VIRTIO_CONSOLE_F_MULTIPORT (virtio 1.x, 5.3): control queues 2 and 3, and
 * port N >= 1 on queues 2(N+1) (receiveq) and 2(N+1)+1 (transmitq).  The
 * driver uses one port: VCON_PORT, which the device must name VCON_PORT_NAME
 * (QEMU: -device virtserialport,nr=1,name=org.microscope.trace). */
#define VIRTIO_CONSOLE_F_MULTIPORT (1ull << 1)
#define VCON_CONTROL_RX_QUEUE      2
#define VCON_CONTROL_TX_QUEUE      3
#define VCON_PORT                  1
#define VCON_PORT_RX_QUEUE         (2 * (VCON_PORT + 1))
#define VCON_PORT_TX_QUEUE         (2 * (VCON_PORT + 1) + 1)
#define VCON_PORT_NAME             "org.microscope.trace"
#define VCON_CONTROL_BUFFER        128 /* a message and a port name */
#define VCON_CONTROL_RX_BUFFERS    32
#define VCON_CONTROL_TX_BUFFERS    8
#define VCON_NO_PORT               0xffffffffu /* the id of a message about no port */
#define VCON_CONFIG_MAX_NR_PORTS   4           /* device configuration: le32 max_nr_ports */

/* A control message (le32 id, le16 event, le16 value; PORT_NAME: the name follows). */
struct vcon_control {
	uint32_t id;
	uint16_t event;
	uint16_t value;
};

enum vcon_control_event {
	VCON_MSG_DEVICE_READY = 0, /* driver: ready for ports (value 1) */
	VCON_MSG_DEVICE_ADD = 1,   /* device: port id exists */
	VCON_MSG_DEVICE_REMOVE = 2,
	VCON_MSG_PORT_READY = 3,   /* driver: port id is set up (value 1) */
	VCON_MSG_CONSOLE_PORT = 4, /* device: port id is a console */
	VCON_MSG_RESIZE = 5,
	VCON_MSG_PORT_OPEN = 6, /* either side: its end of port id opened (1) or closed (0) */
	VCON_MSG_PORT_NAME = 7, /* device: port id's name */
};

struct vcon_counters {
	uint64_t bytes_out, bytes_in, writes, rx_buffers_dropped;
	uint64_t rx_bad_length; /* used lengths beyond the buffer */
	uint64_t tx_waits;      /* times a writer slept for a free buffer */
	uint64_t host_waits;    /* times a writer slept for the host to connect */
	uint64_t interrupts;
	uint64_t control_in;     /* control messages taken from the device */
	uint64_t control_bad;    /* ... too short or too long: ignored */
	uint64_t control_unsent; /* replies lost: every control buffer with the device */
	uint64_t tx_lost;        /* transmit buffers the device kept when a host left */
};

struct vcon {
	struct virtio_device vdev;
	struct virtqueue rx, tx; /* port 0's, or VCON_PORT's with MULTIPORT */
	bool multiport;          /* MULTIPORT negotiated: the control queues exist */
	struct virtqueue control_rx, control_tx;
	struct mutex control_lock; /* guards the control queues */
	volatile bool port_added;  /* the device announced VCON_PORT */
	volatile bool port_named;  /* ... and named it VCON_PORT_NAME: the port is used */
	volatile bool host_open;   /* the host's end is connected (always, without MULTIPORT) */
	/* Counts the host's departures.  A transmit descriptor remembers the
	 * count it was offered under: one the device held, throttled, when the
	 * host left may never come back (QEMU drops such an element without
	 * returning it), so flushes wait only for this host's descriptors, and
	 * an older one still out once the device returns a newer is counted
	 * lost and free again. */
	volatile uint32_t host_epoch;
	uint32_t tx_epoch[VCON_TX_BUFFERS];
	/* The epoch at which a walk last forgot every older descriptor: while
	 * host_epoch equals it, every descriptor in flight is this host's and
	 * nothing needs the walks (under write_lock). */
	uint32_t clean_epoch;
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
/* vcon_write and vcon_write_lent on vc.  Return 0 or -EIO. */
int vcon_send(struct vcon *vc, const void *data, size_t length);
int vcon_send_lent(struct vcon *vc, const void *data, size_t length);
/* vcon_flush on vc.  Returns 0 or -EIO. */
int vcon_drain(struct vcon *vc);
/* vcon_flushed on vc. */
bool vcon_taken(struct vcon *vc);
/* What the interrupt does: re-reads the device status and wakes the writers
 * and the receive worker. */
void vcon_notify(struct vcon *vc);
/* Offers every free receive buffer to the device.  Returns how many. */
unsigned vcon_fill_rx(struct vcon *vc);
/* One receive pass: delivers up to budget used buffers (or drops them) and
 * gives them back to the device.  Returns the buffers taken. */
unsigned vcon_receive(struct vcon *vc, unsigned budget);
/* Offers every free control receive buffer to the device and kicks. */
void vcon_fill_control(struct vcon *vc);
/* Sends one control message.  Returns 0 or -EAGAIN (every control transmit
 * buffer is with the device; counted in control_unsent). */
int vcon_send_control(struct vcon *vc, uint32_t id, uint16_t event, uint16_t value);
/* Acts on every control message the device has sent (answering DEVICE_ADD
 * and PORT_NAME of VCON_PORT, following PORT_OPEN) and gives the buffers
 * back.  Returns the messages taken. */
unsigned vcon_poll_control(struct vcon *vc);

#endif
