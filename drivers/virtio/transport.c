/*
 * The virtio 1.0 PCI transport.  The device's structures (common
 * configuration, notifications, ISR status, device configuration) are
 * described by vendor-specific PCI capabilities naming a BAR, an offset and a
 * length; each is checked to lie inside its BAR before it is used, so a
 * device (or a firmware) that points outside cannot make the driver touch
 * memory it did not map, and the walk over them is bounded as a whole, so a
 * list whose next pointers loop ends.  Initialisation follows the spec's
 * order: reset, ACKNOWLEDGE, DRIVER, features, FEATURES_OK (re-read), queues,
 * DRIVER_OK.  A reset is over when the status reads 0 again; a device that
 * never gets there loses bus mastering.  Only the probing thread touches the
 * common configuration (a failing driver resets the device under its own
 * lock), so it has no lock.
 */
#include "virtio/internal.h"

#include "lib/errno.h"
#include "mm/mm.h"
#include "pci/pci.h"
#include "time/time.h"

/* Common configuration offsets (virtio 1.0, 4.1.4.3). */
#define COMMON_DEVICE_FEATURE_SELECT 0x00
#define COMMON_DEVICE_FEATURE        0x04
#define COMMON_DRIVER_FEATURE_SELECT 0x08
#define COMMON_DRIVER_FEATURE        0x0c
#define COMMON_MSIX_CONFIG           0x10
#define COMMON_NUM_QUEUES            0x12
#define COMMON_DEVICE_STATUS         0x14
#define COMMON_QUEUE_SELECT          0x16
#define COMMON_QUEUE_SIZE            0x18
#define COMMON_QUEUE_MSIX_VECTOR     0x1a
#define COMMON_QUEUE_ENABLE          0x1c
#define COMMON_QUEUE_NOTIFY_OFF      0x1e
#define COMMON_QUEUE_DESC            0x20
#define COMMON_QUEUE_DRIVER          0x28
#define COMMON_QUEUE_DEVICE          0x30
#define COMMON_SIZE                  0x38

#define CAP_COMMON 1
#define CAP_NOTIFY 2
#define CAP_ISR    3
#define CAP_DEVICE 4

static inline void write8(volatile uint8_t *base, unsigned offset, uint8_t value)
{
	*(base + offset) = value;
}

static inline void write16(volatile uint8_t *base, unsigned offset, uint16_t value)
{
	*(volatile uint16_t *)(base + offset) = value;
}

static inline void write32(volatile uint8_t *base, unsigned offset, uint32_t value)
{
	*(volatile uint32_t *)(base + offset) = value;
}

static inline uint16_t read16(volatile uint8_t *base, unsigned offset)
{
	return *(volatile uint16_t *)(base + offset);
}

static inline uint32_t read32(volatile uint8_t *base, unsigned offset)
{
	return *(volatile uint32_t *)(base + offset);
}

/* ---- Capabilities -------------------------------------------------------- */

/* Maps the structure the capability at cap describes; NULL when its BAR is
 * not memory or it does not fit in the BAR (or in minimum bytes). */
static volatile uint8_t *virtio_map_structure(struct pci_device *pci, unsigned cap,
					      uint64_t minimum, uint64_t *length_out)
{
	unsigned bar = pci_read_config8(pci, cap + 4);
	uint64_t offset = pci_read_config32(pci, cap + 8);
	uint64_t length = pci_read_config32(pci, cap + 12);
	if (bar >= PCI_BAR_COUNT || length < minimum || offset + length > pci->bars[bar].size)
		return NULL;
	uint8_t *base = pci_map_bar(pci, bar);
	if (length_out)
		*length_out = length;
	return base ? base + offset : NULL;
}

/* One vendor capability: maps the structure it describes unless one of its
 * kind was found before.  Returns 0: the walk goes on. */
static int virtio_find_structure(unsigned cap, void *arg)
{
	struct virtio_device *vdev = arg;
	struct pci_device *pci = vdev->pci;
	switch (pci_read_config8(pci, cap + 3)) {
	case CAP_COMMON:
		if (!vdev->common)
			vdev->common = virtio_map_structure(pci, cap, COMMON_SIZE, NULL);
		break;
	case CAP_NOTIFY:
		if (!vdev->notify_base) {
			vdev->notify_multiplier = pci_read_config32(pci, cap + 16);
			vdev->notify_base = virtio_map_structure(pci, cap, 2, &vdev->notify_length);
		}
		break;
	case CAP_ISR:
		if (!vdev->isr)
			vdev->isr = virtio_map_structure(pci, cap, 1, NULL);
		break;
	case CAP_DEVICE:
		if (!vdev->device_config)
			vdev->device_config =
			    virtio_map_structure(pci, cap, 1, &vdev->device_config_length);
		break;
	}
	return 0;
}

/* Polls for the status to read 0, which says the reset is over (virtio 1.0,
 * 4.1.4.3.2): at most VIRTIO_RESET_POLLS times, 10 us apart. */
static int virtio_wait_reset(struct virtio_device *vdev)
{
	for (unsigned i = 0; i < VIRTIO_RESET_POLLS; i++) {
		if (virtio_reset_done(vdev))
			return 0;
		clock_delay_ns(10 * NSEC_PER_USEC);
	}
	return -EIO;
}

void virtio_begin_reset(struct virtio_device *vdev)
{
	write8(vdev->common, COMMON_DEVICE_STATUS, 0);
}

bool virtio_reset_done(struct virtio_device *vdev)
{
	return vdev->common[COMMON_DEVICE_STATUS] == 0;
}

void virtio_reset_failed(struct virtio_device *vdev)
{
	pci_disable_device(vdev->pci, PCI_ENABLE_BUS_MASTER);
}

int virtio_reset_device(struct virtio_device *vdev)
{
	virtio_begin_reset(vdev);
	if (virtio_wait_reset(vdev) == 0)
		return 0;
	virtio_reset_failed(vdev);
	return -EIO;
}

int virtio_open_device(struct virtio_device *vdev, struct pci_device *pci)
{
	*vdev = (struct virtio_device){.pci = pci};
	pci_enable_device(pci, PCI_ENABLE_MEMORY | PCI_ENABLE_BUS_MASTER);
	pci_for_each_capability(pci, PCI_CAP_VENDOR, virtio_find_structure, vdev);
	if (!vdev->common || !vdev->notify_base || !vdev->isr || !vdev->device_config)
		return -ENODEV;
	if (virtio_reset_device(vdev))
		return -EIO;
	write8(vdev->common, COMMON_DEVICE_STATUS, VIRTIO_STATUS_ACKNOWLEDGE);
	write8(vdev->common, COMMON_DEVICE_STATUS,
	       VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	return 0;
}

/* ---- Features, queues, start --------------------------------------------- */

uint64_t virtio_device_features(struct virtio_device *vdev)
{
	write32(vdev->common, COMMON_DEVICE_FEATURE_SELECT, 0);
	uint64_t low = read32(vdev->common, COMMON_DEVICE_FEATURE);
	write32(vdev->common, COMMON_DEVICE_FEATURE_SELECT, 1);
	uint64_t high = read32(vdev->common, COMMON_DEVICE_FEATURE);
	return high << 32 | low;
}

int virtio_negotiate_features(struct virtio_device *vdev, uint64_t wanted, uint64_t required)
{
	uint64_t accepted = virtio_device_features(vdev) & (wanted | required);
	if ((accepted & required) != required)
		return -ENODEV;
	write32(vdev->common, COMMON_DRIVER_FEATURE_SELECT, 0);
	write32(vdev->common, COMMON_DRIVER_FEATURE, (uint32_t)accepted);
	write32(vdev->common, COMMON_DRIVER_FEATURE_SELECT, 1);
	write32(vdev->common, COMMON_DRIVER_FEATURE, (uint32_t)(accepted >> 32));
	uint8_t status = vdev->common[COMMON_DEVICE_STATUS];
	write8(vdev->common, COMMON_DEVICE_STATUS, status | VIRTIO_STATUS_FEATURES_OK);
	if (!(vdev->common[COMMON_DEVICE_STATUS] & VIRTIO_STATUS_FEATURES_OK))
		return -ENODEV;
	vdev->features = accepted;
	return 0;
}

unsigned virtio_choose_queue_size(unsigned offered, unsigned max, bool *clamped)
{
	unsigned limit = offered < max ? offered : max, size = 1;
	while (size * 2 <= limit)
		size *= 2;
	*clamped = size != offered;
	return limit ? size : 0;
}

static void write64(volatile uint8_t *base, unsigned offset, uint64_t value)
{
	write32(base, offset, (uint32_t)value);
	write32(base, offset + 4, (uint32_t)(value >> 32));
}

int virtio_setup_queue(struct virtio_device *vdev, struct virtqueue *queue, unsigned index,
		       unsigned max_size, unsigned buffer_size, uint16_t msix_entry)
{
	volatile uint8_t *common = vdev->common;
	if (index >= read16(common, COMMON_NUM_QUEUES))
		return -ENODEV;
	write16(common, COMMON_QUEUE_SELECT, (uint16_t)index);
	unsigned offered = read16(common, COMMON_QUEUE_SIZE);
	if (offered == 0 || read16(common, COMMON_QUEUE_ENABLE))
		return -ENODEV;
	bool clamped;
	unsigned size = virtio_choose_queue_size(offered, max_size, &clamped);
	int error = virtio_alloc_queue(queue, size, buffer_size);
	if (error)
		return error;
	queue->index = index;
	queue->size_clamped = clamped;
	uint64_t notify =
	    (uint64_t)read16(common, COMMON_QUEUE_NOTIFY_OFF) * vdev->notify_multiplier;
	if (notify + 2 > vdev->notify_length)
		return -ENODEV;
	queue->notify = (volatile uint16_t *)(vdev->notify_base + notify);
	write16(common, COMMON_QUEUE_SIZE, (uint16_t)size);
	write64(common, COMMON_QUEUE_DESC, virt_to_phys(queue->desc));
	write64(common, COMMON_QUEUE_DRIVER, virt_to_phys(queue->avail));
	write64(common, COMMON_QUEUE_DEVICE, virt_to_phys(queue->used));
	write16(common, COMMON_QUEUE_MSIX_VECTOR, msix_entry);
	if (read16(common, COMMON_QUEUE_MSIX_VECTOR) != msix_entry)
		return -ENODEV;
	write16(common, COMMON_QUEUE_ENABLE, 1);
	return 0;
}

int virtio_set_config_vector(struct virtio_device *vdev, uint16_t msix_entry)
{
	write16(vdev->common, COMMON_MSIX_CONFIG, msix_entry);
	return read16(vdev->common, COMMON_MSIX_CONFIG) == msix_entry ? 0 : -ENODEV;
}

void virtio_start_device(struct virtio_device *vdev)
{
	uint8_t status = vdev->common[COMMON_DEVICE_STATUS];
	write8(vdev->common, COMMON_DEVICE_STATUS, status | VIRTIO_STATUS_DRIVER_OK);
}

uint8_t virtio_read_status(struct virtio_device *vdev)
{
	return vdev->common[COMMON_DEVICE_STATUS];
}

uint8_t virtio_read_isr(struct virtio_device *vdev)
{
	return *vdev->isr;
}

uint8_t virtio_read_config8(struct virtio_device *vdev, unsigned offset)
{
	return offset < vdev->device_config_length ? vdev->device_config[offset] : 0xff;
}

uint16_t virtio_read_config16(struct virtio_device *vdev, unsigned offset)
{
	if (offset % 2 || offset + 2 > vdev->device_config_length)
		return 0xffff;
	return read16(vdev->device_config, offset);
}

uint32_t virtio_read_config32(struct virtio_device *vdev, unsigned offset)
{
	if (offset % 4 || offset + 4 > vdev->device_config_length)
		return 0xffffffff;
	return read32(vdev->device_config, offset);
}
