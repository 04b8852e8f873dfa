/*
 * PCI enumeration and the driver registry.  pci_init scans depth-first from
 * bus 0: every device slot, all eight functions of a multi-function device,
 * and the secondary bus of every PCI-to-PCI bridge (bus numbers as the
 * firmware assigned them; a bus is scanned at most once, so a bridge that
 * claims an already scanned bus cannot make the walk loop).  Each function
 * gets a struct pci_device on one list in scan order; the list is built once
 * at boot by one thread and only read afterwards, so readers take no lock.
 * BARs are sized the classic way (write all ones, read back) with the
 * function's decoding turned off meanwhile, so no half-written BAR ever
 * decodes.  Drivers come from the .pci.drivers section; the first whose ids
 * match and whose probe returns 0 owns the function.
 */
#include "pci/internal.h"

#include "boot/bootinfo.h"
#include "console/console.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"

extern const struct pci_driver __pci_drivers_start[], __pci_drivers_end[];

struct pci_device *pci_device_list;
static struct pci_device **pci_device_tail = &pci_device_list;
static unsigned pci_devices_found;
static uint8_t pci_bus_scanned[PCI_MAX_BUSES / 8];

/* ---- BARs ---------------------------------------------------------------- */

enum pci_bar_kind pci_bar_decode_kind(uint32_t low)
{
	if (low & 1)
		return PCI_BAR_IO;
	return ((low >> 1) & 3) == 2 ? PCI_BAR_MEM64 : PCI_BAR_MEM32;
}

uint64_t pci_bar_decode_base(uint32_t low, uint32_t high, enum pci_bar_kind kind)
{
	if (kind == PCI_BAR_IO)
		return low & ~3u;
	uint64_t base = low & ~0xfu;
	return kind == PCI_BAR_MEM64 ? base | (uint64_t)high << 32 : base;
}

uint64_t pci_bar_decode_size(uint32_t low_probe, uint32_t high_probe, enum pci_bar_kind kind)
{
	if (kind == PCI_BAR_IO) {
		uint32_t mask = low_probe & ~3u;
		if (!mask)
			return 0;
		if (!(mask & 0xffff0000u))
			mask |= 0xffff0000u; /* a 16-bit I/O decoder */
		return (uint32_t)(~mask + 1);
	}
	if (kind == PCI_BAR_MEM32) {
		uint32_t mask = low_probe & ~0xfu;
		return mask ? (uint32_t)(~mask + 1) : 0;
	}
	uint64_t mask = (uint64_t)high_probe << 32 | (low_probe & ~0xfu);
	return mask ? ~mask + 1 : 0;
}

static uint32_t pci_probe_bar_word(struct pci_device *dev, unsigned offset, uint32_t *probe)
{
	uint32_t value = pci_read_config32(dev, offset);
	pci_write_config32(dev, offset, 0xffffffffu);
	*probe = pci_read_config32(dev, offset);
	pci_write_config32(dev, offset, value);
	return value;
}

/* Sizes BAR index; returns how many BAR slots it used (2 for 64-bit). */
static unsigned pci_probe_bar(struct pci_device *dev, unsigned index)
{
	unsigned offset = PCI_BAR0 + 4 * index;
	uint32_t low_probe, high_probe = 0, high = 0;
	uint32_t low = pci_probe_bar_word(dev, offset, &low_probe);
	enum pci_bar_kind kind = pci_bar_decode_kind(low);
	if (kind == PCI_BAR_MEM64 && index + 1 < PCI_BAR_COUNT)
		high = pci_probe_bar_word(dev, offset + 4, &high_probe);
	else if (kind == PCI_BAR_MEM64)
		kind = PCI_BAR_MEM32; /* a 64-bit BAR in the last slot: take the low half */
	uint64_t size = pci_bar_decode_size(low_probe, high_probe, kind);
	struct pci_bar *bar = &dev->bars[index];
	bar->kind = size ? kind : PCI_BAR_NONE;
	bar->size = size;
	bar->base = size ? pci_bar_decode_base(low, high, kind) : 0;
	bar->prefetchable = kind != PCI_BAR_IO && (low & 8);
	return kind == PCI_BAR_MEM64 ? 2 : 1;
}

static void pci_probe_bars(struct pci_device *dev)
{
	unsigned count = dev->header_type == 0 ? 6 : dev->header_type == 1 ? 2 : 0;
	uint16_t command = pci_read_config16(dev, PCI_COMMAND);
	pci_write_config16(dev, PCI_COMMAND, command & ~(PCI_COMMAND_IO | PCI_COMMAND_MEMORY));
	for (unsigned i = 0; i < count;)
		i += pci_probe_bar(dev, i);
	pci_write_config16(dev, PCI_COMMAND, command);
}

/* ---- Scanning ------------------------------------------------------------ */

static void pci_read_identity(struct pci_device *dev)
{
	dev->vendor_id = pci_read_config16(dev, PCI_VENDOR_ID);
	dev->device_id = pci_read_config16(dev, PCI_DEVICE_ID);
	uint32_t class = pci_read_config32(dev, PCI_REVISION);
	dev->revision = (uint8_t) class;
	dev->prog_if = (uint8_t)(class >> 8);
	dev->subclass = (uint8_t)(class >> 16);
	dev->class_code = (uint8_t)(class >> 24);
	dev->header_type = pci_read_config8(dev, PCI_HEADER_TYPE) & 0x7f;
	dev->interrupt_pin = pci_read_config8(dev, PCI_INTERRUPT_PIN);
	dev->interrupt_line = pci_read_config8(dev, PCI_INTERRUPT_LINE);
	if (dev->interrupt_pin > 4)
		dev->interrupt_pin = 0;
	if (dev->header_type == 0) {
		dev->subsystem_vendor_id = pci_read_config16(dev, 0x2c);
		dev->subsystem_id = pci_read_config16(dev, 0x2e);
	} else if (dev->header_type == 1) {
		dev->secondary_bus = pci_read_config8(dev, 0x19);
	}
}

static void pci_scan_bus(unsigned bus, struct pci_device *parent);

static void pci_add_function(unsigned bus, unsigned device, unsigned function,
			     struct pci_device *parent)
{
	struct pci_device *dev = kzalloc(sizeof(*dev));
	if (!dev) {
		pr_warn("pci: no memory for %02x:%02x.%u\n", bus, device, function);
		return;
	}
	dev->bus = (uint8_t)bus;
	dev->device = (uint8_t)device;
	dev->function = (uint8_t)function;
	dev->parent = parent;
	dev->irq_vector = -1;
	pci_read_identity(dev);
	pci_probe_bars(dev);
	*pci_device_tail = dev;
	pci_device_tail = &dev->next;
	pci_devices_found++;
	if (dev->header_type == 1 && dev->secondary_bus > bus)
		pci_scan_bus(dev->secondary_bus, dev);
}

static bool pci_function_present(unsigned bus, unsigned device, unsigned function)
{
	return (uint16_t)pci_config_read(bus, device, function, PCI_VENDOR_ID, 2) != 0xffff;
}

static void pci_scan_bus(unsigned bus, struct pci_device *parent)
{
	if (bus >= PCI_MAX_BUSES || (pci_bus_scanned[bus / 8] & (1u << (bus % 8))))
		return;
	pci_bus_scanned[bus / 8] |= (uint8_t)(1u << (bus % 8));
	for (unsigned device = 0; device < 32; device++) {
		if (!pci_function_present(bus, device, 0))
			continue;
		uint8_t header = (uint8_t)pci_config_read(bus, device, 0, PCI_HEADER_TYPE, 1);
		unsigned functions = (header & 0x80) ? 8 : 1;
		for (unsigned function = 0; function < functions; function++)
			if (pci_function_present(bus, device, function))
				pci_add_function(bus, device, function, parent);
	}
}

unsigned pci_enumerate(void)
{
	pci_scan_bus(0, NULL);
	return pci_devices_found;
}

/* ---- Drivers ------------------------------------------------------------- */

static bool pci_driver_matches(const struct pci_driver *driver, const struct pci_device *dev)
{
	return (driver->vendor_id == PCI_ANY_ID || driver->vendor_id == dev->vendor_id) &&
	       (driver->device_id == PCI_ANY_ID || driver->device_id == dev->device_id);
}

static void pci_probe_one(struct pci_device *dev)
{
	for (const struct pci_driver *d = __pci_drivers_start; d < __pci_drivers_end; d++) {
		if (!pci_driver_matches(d, dev))
			continue;
		dev->driver = d;
		int error = d->probe(dev);
		if (error == 0)
			return;
		dev->driver = NULL;
		pr_warn("pci: %02x:%02x.%u: driver %s failed (%d)\n", dev->bus, dev->device,
			dev->function, d->name, error);
	}
}

void pci_probe_drivers(void)
{
	for (struct pci_device *dev = pci_device_list; dev; dev = dev->next)
		if (!dev->driver)
			pci_probe_one(dev);
}

unsigned pci_init(void)
{
	static bool done;
	if (done)
		return pci_devices_found;
	done = true;
	if (!pci_config_init()) {
		pr_info("pci: no configuration access, no PCI\n");
		return 0;
	}
	unsigned count = pci_enumerate();
	pr_info("pci: %u functions via %s\n", count, pci_access_name());
	pci_assign_unassigned();
	pci_print_devices(false);
	pci_probe_drivers();
	return count;
}

/* ---- Capabilities, command register, BAR mappings ------------------------ */

/* Walks the capability list from the one after start (0: the first),
 * calling fn for each capability of id until it returns non-zero; that
 * value, or 0.  One budget of PCI_CAPABILITY_STEPS for the whole walk, so a
 * list whose next pointers loop ends. */
static int walk_capabilities(const struct pci_device *dev, uint8_t id, unsigned start,
			     int (*fn)(unsigned offset, void *arg), void *arg)
{
	if (!(pci_read_config16(dev, PCI_STATUS) & PCI_STATUS_CAPABILITIES))
		return 0;
	unsigned offset =
	    start ? pci_read_config8(dev, start + 1) : pci_read_config8(dev, PCI_CAPABILITIES);
	for (unsigned steps = 0; steps < PCI_CAPABILITY_STEPS; steps++) {
		offset &= 0xfc;
		if (offset < 0x40)
			return 0;
		if (pci_read_config8(dev, offset) == id) {
			int result = fn(offset, arg);
			if (result)
				return result;
		}
		offset = pci_read_config8(dev, offset + 1);
	}
	return 0;
}

int pci_for_each_capability(const struct pci_device *dev, uint8_t id,
			    int (*fn)(unsigned offset, void *arg), void *arg)
{
	return walk_capabilities(dev, id, 0, fn, arg);
}

static int first_offset(unsigned offset, void *arg)
{
	(void)arg;
	return (int)offset; /* >= 0x40: non-zero, ends the walk */
}

unsigned pci_find_capability(const struct pci_device *dev, uint8_t id, unsigned start)
{
	return (unsigned)walk_capabilities(dev, id, start, first_offset, NULL);
}

JOINPOINT_DEFINE(pci, enable_device, int, struct pci_device *, dev, unsigned, flags)
{
	if (!dev)
		return -EINVAL;
	uint16_t command = pci_read_config16(dev, PCI_COMMAND);
	if (flags & PCI_ENABLE_IO)
		command |= PCI_COMMAND_IO;
	if (flags & PCI_ENABLE_MEMORY)
		command |= PCI_COMMAND_MEMORY;
	if (flags & PCI_ENABLE_BUS_MASTER)
		command |= PCI_COMMAND_BUS_MASTER;
	pci_write_config16(dev, PCI_COMMAND, command);
	return 0;
}

void pci_disable_device(struct pci_device *dev, unsigned flags)
{
	uint16_t command = pci_read_config16(dev, PCI_COMMAND);
	if (flags & PCI_ENABLE_IO)
		command &= (uint16_t)~PCI_COMMAND_IO;
	if (flags & PCI_ENABLE_MEMORY)
		command &= (uint16_t)~PCI_COMMAND_MEMORY;
	if (flags & PCI_ENABLE_BUS_MASTER)
		command &= (uint16_t)~PCI_COMMAND_BUS_MASTER;
	pci_write_config16(dev, PCI_COMMAND, command);
}

bool pci_bar_range_is_device_memory(uint64_t base, uint64_t size, const struct boot_region *regions,
				    unsigned region_count)
{
	if (base == 0 || size == 0 || base + size < base)
		return false; /* never placed, or wrapping past the top */
	for (unsigned i = 0; i < region_count; i++) {
		const struct boot_region *r = &regions[i];
		if (r->type == BOOT_REGION_USABLE && base < r->base + r->length &&
		    r->base < base + size)
			return false;
	}
	return true;
}

JOINPOINT_DEFINE(pci, map_bar, void *, struct pci_device *, dev, unsigned, index)
{
	if (!dev || index >= PCI_BAR_COUNT)
		return NULL;
	struct pci_bar *bar = &dev->bars[index];
	if (bar->kind != PCI_BAR_MEM32 && bar->kind != PCI_BAR_MEM64)
		return NULL;
	if (bar->mapped)
		return bar->mapped;
	const struct boot_info *boot = bootinfo();
	if (!pci_bar_range_is_device_memory(bar->base, bar->size, boot->regions,
					    boot->region_count)) {
		pr_warn("pci: %02x:%02x.%u BAR%u at %#lx (%lu bytes) is no device memory: "
			"not mapped\n",
			dev->bus, dev->device, dev->function, index, bar->base, bar->size);
		return NULL;
	}
	bar->mapped = vm_map_mmio(bar->base, bar->size);
	return bar->mapped;
}

/* ---- Finding devices ----------------------------------------------------- */

struct pci_device *pci_find_device(uint16_t vendor_id, uint16_t device_id, unsigned index)
{
	for (struct pci_device *dev = pci_device_list; dev; dev = dev->next) {
		if ((vendor_id != PCI_ANY_ID && dev->vendor_id != vendor_id) ||
		    (device_id != PCI_ANY_ID && dev->device_id != device_id))
			continue;
		if (index-- == 0)
			return dev;
	}
	return NULL;
}

struct pci_device *pci_find_class(uint8_t class_code, uint8_t subclass, unsigned index)
{
	for (struct pci_device *dev = pci_device_list; dev; dev = dev->next) {
		if (dev->class_code != class_code ||
		    (subclass != 0xff && dev->subclass != subclass))
			continue;
		if (index-- == 0)
			return dev;
	}
	return NULL;
}

int pci_for_each_device(int (*fn)(struct pci_device *dev, void *arg), void *arg)
{
	for (struct pci_device *dev = pci_device_list; dev; dev = dev->next) {
		int result = fn(dev, arg);
		if (result)
			return result;
	}
	return 0;
}

unsigned pci_device_count(void)
{
	return pci_devices_found;
}
