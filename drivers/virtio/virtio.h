/*
 * Virtio 1.0 over PCI ("modern" devices: vendor 0x1af4, the transitional ids
 * too when they carry the modern capabilities) and split virtqueues, for the
 * virtio-net driver in this directory and any later virtio device.  A device
 * is opened (capabilities parsed and mapped, reset, ACKNOWLEDGE | DRIVER),
 * its features negotiated, its queues set up, then started (DRIVER_OK).
 *
 *     virtio_open_device(&vdev, pci);
 *     virtio_negotiate_features(&vdev, wanted, VIRTIO_F_VERSION_1);
 *     virtio_setup_queue(&vdev, &queue, 0, 256, 0); virtio_start_device(&vdev);
 */
#ifndef DRIVERS_VIRTIO_VIRTIO_H
#define DRIVERS_VIRTIO_VIRTIO_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu/spinlock.h"

struct pci_device;

#define VIRTIO_VENDOR 0x1af4

#define VIRTIO_STATUS_ACKNOWLEDGE 1
#define VIRTIO_STATUS_DRIVER      2
#define VIRTIO_STATUS_DRIVER_OK   4
#define VIRTIO_STATUS_FEATURES_OK 8
#define VIRTIO_STATUS_NEEDS_RESET 64
#define VIRTIO_STATUS_FAILED      128

#define VIRTIO_F_VERSION_1 (1ull << 32)
#define VIRTIO_NO_VECTOR   0xffff
#define VIRTIO_QUEUE_MAX   256 /* the most descriptors a queue is given */

/* One opened device: where its structures are mapped. */
struct virtio_device {
	struct pci_device *pci;
	volatile uint8_t *common;
	volatile uint8_t *isr;
	volatile uint8_t *device_config;
	volatile uint8_t *notify_base;
	uint32_t notify_multiplier;
	uint64_t notify_length;
	uint64_t device_config_length;
	uint64_t features; /* negotiated */
};

struct virtq_desc {
	uint64_t address;
	uint32_t length;
	uint16_t flags;
	uint16_t next;
};
#define VIRTQ_DESC_F_NEXT  1
#define VIRTQ_DESC_F_WRITE 2

struct virtq_avail {
	uint16_t flags;
	uint16_t index;
	uint16_t ring[];
};
#define VIRTQ_AVAIL_F_NO_INTERRUPT 1

struct virtq_used_elem {
	uint32_t id;
	uint32_t length;
};

struct virtq_used {
	uint16_t flags;
	uint16_t index;
	struct virtq_used_elem ring[];
};
#define VIRTQ_USED_F_NO_NOTIFY 1

/* A split virtqueue whose descriptor i always describes buffer i (fixed
 * buffers: the driver copies in and out), so the queue needs no free list
 * beyond "in flight or not". */
#define VIRTIO_RESET_POLLS 1000 /* 10 ms */

struct virtqueue {
	unsigned index; /* the device's queue number */
	unsigned size;  /* descriptors, a power of two <= VIRTIO_QUEUE_MAX */
	struct virtq_desc *desc;
	struct virtq_avail *avail;
	struct virtq_used *used;
	uint8_t *buffers; /* size * buffer_size bytes */
	uint64_t buffers_phys;
	unsigned buffer_size;
	volatile uint16_t *notify; /* where a kick is written */
	uint16_t last_used;        /* next used entry to read */
	uint16_t next_avail;       /* the avail index the driver publishes next */
	uint8_t *in_flight;        /* per descriptor: owned by the device */
	unsigned free_count;
	unsigned free_cursor; /* where the search for a free descriptor starts */
	uint64_t bad_used;    /* used entries with an id out of range or not in flight */
	uint64_t kicks;
	bool size_clamped; /* the device offered more than VIRTIO_QUEUE_MAX or a non power of two */
	unsigned forgotten; /* buffers virtio_forget_buffer took back that may yet be returned */
	bool broken; /* the used index ran ahead of the buffers in flight: nothing is taken */
};

/* Finds the common, notify, ISR and device capabilities, maps them, resets
 * the device and sets ACKNOWLEDGE | DRIVER.  Returns 0, -ENODEV (a structure
 * missing, out of its BAR, or an unmappable BAR) or -EIO (reset never ends). */
int virtio_open_device(struct virtio_device *vdev, struct pci_device *pci);
/* The features the device offers (before negotiation). */
uint64_t virtio_device_features(struct virtio_device *vdev);
/* Accepts offered & wanted, which must include required; sets FEATURES_OK
 * and checks the device kept it.  Returns 0 or -ENODEV (a required feature
 * missing, or the device refused). */
int virtio_negotiate_features(struct virtio_device *vdev, uint64_t wanted, uint64_t required);
/* Sets up queue index with at most max_size descriptors of buffer_size-byte
 * buffers, interrupting through MSI-X entry msix_entry (VIRTIO_NO_VECTOR:
 * none).  Returns 0, -ENODEV (no such queue, size 0, or the device refused
 * the vector), -ENOMEM. */
int virtio_setup_queue(struct virtio_device *vdev, struct virtqueue *queue, unsigned index,
		       unsigned max_size, unsigned buffer_size, uint16_t msix_entry);
/* Sets the configuration-change MSI-X entry.  Returns 0 or -ENODEV (refused). */
int virtio_set_config_vector(struct virtio_device *vdev, uint16_t msix_entry);
/* DRIVER_OK: the device may use the queues from now on. */
void virtio_start_device(struct virtio_device *vdev);
/* Resets the device (status 0) and waits, at most VIRTIO_RESET_POLLS times
 * 10 us, for the status to read 0: then it uses no buffer any more.  Returns
 * 0, or -EIO when it never did: bus mastering is then turned off, and the
 * caller must never reuse a buffer the device held (leak it). */
int virtio_reset_device(struct virtio_device *vdev);
/* The same reset in steps, for a caller that may not wait (interrupt or
 * timer context): begin writes status 0; done says whether the status reads
 * 0 (the device uses no buffer any more); failed, once the caller stops
 * waiting, turns bus mastering off (its buffers are then never reused). */
void virtio_begin_reset(struct virtio_device *vdev);
bool virtio_reset_done(struct virtio_device *vdev);
void virtio_reset_failed(struct virtio_device *vdev);
/* The device status (VIRTIO_STATUS_*): NEEDS_RESET or FAILED say it broke. */
uint8_t virtio_read_status(struct virtio_device *vdev);
/* Reads and clears the ISR status (bit 0: queue, bit 1: configuration). */
uint8_t virtio_read_isr(struct virtio_device *vdev);
/* Device configuration at offset; all ones beyond what the device offers. */
uint8_t virtio_read_config8(struct virtio_device *vdev, unsigned offset);
uint16_t virtio_read_config16(struct virtio_device *vdev, unsigned offset);
uint32_t virtio_read_config32(struct virtio_device *vdev, unsigned offset);

/* ---- Queues -------------------------------------------------------------- */

/* Allocates the rings and buffers of a queue of size descriptors (no device
 * involved: tests build queues this way).  Returns 0 or -ENOMEM / -EINVAL. */
int virtio_alloc_queue(struct virtqueue *queue, unsigned size, unsigned buffer_size);
/* Frees what virtio_alloc_queue allocated; the device must not use the
 * queue any more (reset it first). */
void virtio_free_queue(struct virtqueue *queue);
/* The buffer of descriptor id. */
void *virtio_queue_buffer(struct virtqueue *queue, unsigned id);
/* Offers descriptor id (length bytes; device_writes: a receive buffer) to the
 * device.  Returns 0 or -EINVAL (id out of range or already in flight). */
int virtio_offer_buffer(struct virtqueue *queue, unsigned id, uint32_t length, bool device_writes);
/* Offers descriptor id pointing at length bytes of the caller's memory at
 * phys (physically contiguous) for the device to read, instead of the
 * descriptor's own buffer; the memory must stay as it is until the device
 * returns id.  Returns 0 or -EINVAL (id out of range or already in flight). */
int virtio_offer_external(struct virtqueue *queue, unsigned id, uint64_t phys, uint32_t length);
/* One piece of a descriptor chain: a physical range, and whether the device
 * writes it. */
struct virtio_segment {
	uint64_t phys;
	uint32_t length;
	bool device_writes;
};
/* Offers descriptors head .. head + count - 1, chained, describing segments
 * (drivers that give each request a fixed run of descriptors: only head is
 * marked in flight and comes back in a used entry; the caller keeps the rest
 * of the run for head).  Returns 0 or -EINVAL (out of range, head in flight,
 * count 0). */
int virtio_offer_chain(struct virtqueue *queue, unsigned head,
		       const struct virtio_segment *segments, unsigned count);
/* The device will never return descriptor id (it dropped it): counts it
 * free again, and as one the device may still return once (a used entry
 * the queue then skips).  Harmless for one not in flight. */
void virtio_forget_buffer(struct virtqueue *queue, unsigned id);
/* Is descriptor id with the device? */
bool virtio_buffer_in_flight(const struct virtqueue *queue, unsigned id);
/* A descriptor that is not in flight, or -EAGAIN when all are. */
int virtio_find_free_buffer(struct virtqueue *queue);
/* Takes the next used entry: returns true with *id and *length, false when
 * none is pending.  Entries naming a descriptor out of range or not in flight
 * are counted in bad_used and skipped.  A used index further ahead than the
 * buffers in flight sets broken, and a broken queue returns false (and
 * virtio_has_used false) from then on: the caller fails the device. */
bool virtio_take_used(struct virtqueue *queue, unsigned *id, uint32_t *length);
/* Used entries the device returned that virtio_take_used has not taken. */
unsigned virtio_used_pending(struct virtqueue *queue);
/* True when the device has used entries the driver has not taken. */
bool virtio_has_used(struct virtqueue *queue);
/* Notifies the device of new buffers unless it asked not to be. */
void virtio_kick_queue(struct virtqueue *queue);
/* Used-buffer notifications off (a hint to the device) or on. */
void virtio_suppress_interrupts(struct virtqueue *queue);
void virtio_allow_interrupts(struct virtqueue *queue);

#endif
