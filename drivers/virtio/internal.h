/* The virtio drivers' private declarations: the virtio-net state, and the
 * pieces the hostile-device tests drive directly. */
#ifndef DRIVERS_VIRTIO_INTERNAL_H
#define DRIVERS_VIRTIO_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu/spinlock.h"
#include "net/nic.h"
#include "pci/pci.h"
#include "virtio/virtio.h"

#define VIRTIO_NET_F_MAC     (1ull << 5)
#define VIRTIO_NET_F_STATUS  (1ull << 16)
#define VIRTIO_NET_S_LINK_UP 1
#define VIRTIO_NET_HEADER    12 /* struct virtio_net_hdr with num_buffers (VERSION_1) */
#define VIRTIO_NET_BUFFER    2048
#define VIRTIO_NET_RX_QUEUE  0
#define VIRTIO_NET_TX_QUEUE  1

struct virtio_net_counters {
	uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes;
	uint64_t rx_bad_length; /* used lengths beyond the buffer or below a header */
	uint64_t tx_ring_full, interrupts, config_changes;
	uint64_t tx_segmented; /* large TCP frames the driver cut into segments */
};

struct virtio_net {
	struct nic nic;
	struct virtio_device vdev;
	struct virtqueue rx, tx;
	struct spinlock tx_lock;
	enum pci_irq_kind irq_kind;
	volatile bool interrupts_on;
	struct virtio_net_counters counters;
};

/* The queue size to use for a device offering offered (at most max, a power
 * of two); *clamped says whether that differs from what was offered. */
unsigned virtio_choose_queue_size(unsigned offered, unsigned max, bool *clamped);
/* Delivers up to budget received frames to nic_rx and re-offers their
 * buffers.  Returns the frames delivered. */
unsigned virtio_net_receive(struct virtio_net *vn, unsigned budget);
/* Offers every free receive buffer to the device.  Returns how many. */
unsigned virtio_net_fill_rx(struct virtio_net *vn);

#endif
