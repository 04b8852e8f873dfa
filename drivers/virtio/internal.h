/* The virtio drivers' private declarations: the virtio-net and virtio-blk
 * state, and the pieces the hostile-device tests drive directly. */
#ifndef DRIVERS_VIRTIO_INTERNAL_H
#define DRIVERS_VIRTIO_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "block/block.h"
#include "cpu/spinlock.h"
#include "net/nic.h"
#include "pci/pci.h"
#include "sched/sched.h"
#include "time/time.h"
#include "virtio/virtio.h"

#define VIRTIO_NET_F_CSUM      (1ull << 0) /* the device completes a partial checksum */
#define VIRTIO_NET_F_MAC       (1ull << 5)
#define VIRTIO_NET_F_HOST_TSO4 (1ull << 11) /* the device segments TCP/IPv4 frames */
#define VIRTIO_NET_F_STATUS    (1ull << 16)
#define VIRTIO_NET_S_LINK_UP   1
#define VIRTIO_NET_HEADER      12 /* struct virtio_net_hdr with num_buffers (VERSION_1) */
#define VIRTIO_NET_BUFFER      2048
#define VIRTIO_NET_RX_QUEUE    0
#define VIRTIO_NET_TX_QUEUE    1

/* The header in front of every frame, little-endian (virtio 1.0, 5.1.6). */
struct virtio_net_header {
	uint8_t flags;     /* VIRTIO_NET_HDR_F_NEEDS_CSUM */
	uint8_t gso_type;  /* VIRTIO_NET_HDR_GSO_* */
	uint16_t hdr_len;  /* Ethernet + IP + TCP header bytes */
	uint16_t gso_size; /* payload bytes per segment */
	uint16_t csum_start, csum_offset;
	uint16_t num_buffers; /* receive only (mergeable buffers); 0 */
} __attribute__((packed));
_Static_assert(sizeof(struct virtio_net_header) == VIRTIO_NET_HEADER, "virtio-net header");
#define VIRTIO_NET_HDR_F_NEEDS_CSUM 1
#define VIRTIO_NET_HDR_GSO_TCPV4    1

/* Frames the device segments (HOST_TSO4) go whole into an area of their own,
 * one descriptor each, a header and the frame in a run of pages taken for it
 * (large.c): what is in flight is bounded by bytes, not by frames, since
 * TCP's frames are often far below NIC_SEGMENTED_MAX. */
#define VIRTIO_NET_LARGE_PAGES 1024 /* 4 MiB */
#define VIRTIO_NET_PAGE        4096

struct virtio_net_large {
	uint8_t *memory; /* NULL: no offload negotiated, the driver segments */
	uint64_t phys;
	uint64_t taken[VIRTIO_NET_LARGE_PAGES / 64]; /* bit: the page holds a frame */
	unsigned free_pages;
	unsigned cursor; /* the next search starts here: runs come back about in order */
	uint16_t first[VIRTIO_QUEUE_MAX]; /* a descriptor's first page + 1, 0 none */
	uint8_t pages[VIRTIO_QUEUE_MAX];  /* and how many */
};

/* A run of count free pages of the area, taken.  Returns its first page, or
 * -1 when there is none. */
int virtio_net_large_take(struct virtio_net_large *large, unsigned count);
/* Gives back the run of count pages from first. */
void virtio_net_large_give(struct virtio_net_large *large, unsigned first, unsigned count);

struct virtio_net_counters {
	uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes;
	uint64_t rx_bad_length; /* used lengths beyond the buffer or below a header */
	uint64_t tx_ring_full, interrupts, config_changes;
	uint64_t tx_segmented; /* large TCP frames the driver cut into segments */
	uint64_t tx_offloaded; /* large TCP frames handed whole to the device to segment */
	uint64_t tx_lost;      /* frames the device held when it was reset for a broken queue */
};

struct virtio_net {
	struct nic nic;
	struct virtio_device vdev;
	struct virtqueue rx, tx;
	struct spinlock tx_lock;
	enum pci_irq_kind irq_kind;
	volatile bool interrupts_on;
	bool failed; /* a queue broke: the device was reset */
	struct virtio_net_counters counters;
	struct virtio_net_large large;
};

/* The queue size to use for a device offering offered (at most max, a power
 * of two); *clamped says whether that differs from what was offered. */
unsigned virtio_choose_queue_size(unsigned offered, unsigned max, bool *clamped);
/* Delivers up to budget received frames to nic_rx and re-offers their
 * buffers.  Returns the frames delivered. */
unsigned virtio_net_receive(struct virtio_net *vn, unsigned budget);
/* Offers every free receive buffer to the device.  Returns how many. */
unsigned virtio_net_fill_rx(struct virtio_net *vn);
/* Sets up the buffers for frames the device segments when CSUM and
 * HOST_TSO4 were negotiated.  Returns true when the device will segment
 * (else the driver does, as without the features). */
bool virtio_net_setup_offload(struct virtio_net *vn);
/* transmit_segmented through the device's segmentation (setup_offload said
 * yes): the whole frame behind one header, one descriptor.  Returns 0,
 * -EINVAL (not a TCP/IPv4 frame of that size) or -EAGAIN (no descriptor or
 * run of pages free). */
int virtio_net_transmit_offloaded(struct virtio_net *vn, const void *frame, size_t length,
				  size_t header_length);
/* transmit_segmented: the device's segmentation where set up, the driver's
 * where not or when the device's area has no room for the frame. */
int virtio_net_transmit_large(struct virtio_net *vn, const void *frame, size_t length,
			      size_t header_length);
/* Takes back the transmit descriptors the device has finished with, and the
 * pages of the area they held.  tx_lock held. */
void virtio_net_reclaim_tx(struct virtio_net *vn);
/* After a poll: a queue that broke fails the NIC (no frame is offered from
 * then on), counts the transmit frames the device held in tx_lost (never
 * confirmed sent) and resets the device, once. */
void virtio_net_check_queues(struct virtio_net *vn);

/* ---- virtio-blk (blk.c) --------------------------------------------------- */

struct virtio_blk_header {
	uint32_t type;
	uint32_t reserved;
	uint64_t sector;
};

/* Device-visible: the header and status of one request in flight. */
struct virtio_blk_slot {
	struct virtio_blk_header header;
	volatile uint8_t status;
	struct block_request *request; /* NULL: the slot is free */
};

struct virtio_blk {
	struct block_device block;
	struct virtio_device vdev;
	struct virtqueue queue;
	struct spinlock lock; /* the queue and the slots */
	struct semaphore free_slots;
	struct virtio_blk_slot *slots; /* slot_count, in one DMA page */
	unsigned slot_count;
	enum pci_irq_kind irq_kind;
	volatile bool io_ready; /* the queue and slots exist: interrupts are served */
	uint64_t interrupts;
	struct timer_oneshot watchdog;
	bool watching;              /* the watchdog is armed */
	bool dead;                  /* timed out or broken: every request is refused */
	bool resetting;             /* dead, and the reset is not over: the watchdog polls it */
	int ending_status;          /* what the requests in flight end with: -ETIMEDOUT, -EIO */
	uint64_t reset_deadline_ns; /* past it, a reset not over has failed */
};

#define VIRTIO_BLK_F_BLK_SIZE (1ull << 6)

/* What a finished request ends with: 0, or -EIO for a status other than OK
 * and for a read whose used length is not its bytes plus the status byte. */
int virtio_blk_request_status(const struct block_request *request, uint8_t status,
			      uint32_t used_length);
/* Whether the device's block size (BLK_SIZE in features) is 512 bytes, the
 * only size the block layer addresses. */
bool virtio_blk_block_size_usable(uint64_t features, uint32_t block_size);
/* The device's interrupt: ends every finished request.  Ignored (the ISR
 * read on INTx, nothing else) until io_ready. */
void virtio_blk_irq(struct trap_frame *frame, void *ctx);
/* The watchdog's timer callback: declares a device dead when a request is
 * older than its timeout, and steps the reset of a dead one (never waiting
 * for the device: the next step is a timer later). */
void virtio_blk_watchdog(struct timer_oneshot *timer, void *ctx);

#endif
