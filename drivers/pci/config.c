/*
 * Configuration space access.  Two methods: ECAM, where each function's 4 KiB
 * of configuration space is memory at base + (bus << 20 | device << 15 |
 * function << 12), the base coming from the ACPI MCFG table (q35 has one, the
 * i440fx "pc" machine does not); and configuration mechanism 1, an address
 * written to port 0xcf8 and the data read or written through 0xcfc, which
 * reaches only the first 256 bytes.  Mechanism 1's two port accesses must not
 * interleave with another CPU's, so they run under a spinlock with interrupts
 * off; ECAM accesses are single loads and stores and need no lock.  ECAM
 * windows are mapped one bus (1 MiB) at a time, on first use, and stay mapped.
 * Only segment 0 is used.
 */
#include "pci/internal.h"

#include "acpi/acpi.h"
#include "arch/x86_64/cpu.h"
#include "console/console.h"
#include "cpu/spinlock.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "lib/unaligned.h"
#include "mm/mm.h"

#define PCI_MECH1_ADDRESS 0xcf8
#define PCI_MECH1_DATA    0xcfc
#define PCI_ECAM_BUS_SIZE (1UL << 20)
#define MCFG_HEADER_SIZE  44 /* ACPI header (36) + 8 reserved */
#define MCFG_ENTRY_SIZE   16

enum pci_access { PCI_ACCESS_NONE, PCI_ACCESS_MECH1, PCI_ACCESS_ECAM };

static enum pci_access pci_access = PCI_ACCESS_NONE;
static struct spinlock pci_mech1_lock = SPINLOCK_INIT("pci.config");
static struct spinlock pci_ecam_lock = SPINLOCK_INIT("pci.ecam");
static struct pci_ecam_region pci_ecam;
static volatile uint8_t *pci_ecam_bus[PCI_MAX_BUSES];

int pci_parse_mcfg(const void *table, uint32_t length, struct pci_ecam_region *regions,
		   unsigned max)
{
	if (!table || length < MCFG_HEADER_SIZE || (length - MCFG_HEADER_SIZE) % MCFG_ENTRY_SIZE)
		return -EBADMSG;
	const uint8_t *entry = (const uint8_t *)table + MCFG_HEADER_SIZE;
	unsigned count = (length - MCFG_HEADER_SIZE) / MCFG_ENTRY_SIZE, stored = 0;
	for (unsigned i = 0; i < count && stored < max; i++, entry += MCFG_ENTRY_SIZE) {
		struct pci_ecam_region region = {
		    .base = read_le64(entry),
		    .segment = read_le16(entry + 8),
		    .start_bus = entry[10],
		    .end_bus = entry[11],
		};
		if (region.end_bus < region.start_bus || region.base == 0)
			continue;
		regions[stored++] = region;
	}
	return (int)stored;
}

/* ---- Mechanism 1 --------------------------------------------------------- */

static uint32_t pci_mech1_address(unsigned bus, unsigned device, unsigned function, unsigned offset)
{
	return 0x80000000u | bus << 16 | device << 11 | function << 8 | (offset & 0xfc);
}

static uint32_t pci_mech1_read(uint32_t address, unsigned offset, unsigned width)
{
	uint64_t flags = spin_lock_irqsave(&pci_mech1_lock);
	outl(PCI_MECH1_ADDRESS, address);
	uint16_t port = PCI_MECH1_DATA + (offset & 3);
	uint32_t value = width == 1 ? inb(port) : width == 2 ? inw(port) : inl(port);
	spin_unlock_irqrestore(&pci_mech1_lock, flags);
	return value;
}

static void pci_mech1_write(uint32_t address, unsigned offset, unsigned width, uint32_t value)
{
	uint64_t flags = spin_lock_irqsave(&pci_mech1_lock);
	outl(PCI_MECH1_ADDRESS, address);
	uint16_t port = PCI_MECH1_DATA + (offset & 3);
	if (width == 1)
		outb(port, (uint8_t)value);
	else if (width == 2)
		outw(port, (uint16_t)value);
	else
		outl(port, value);
	spin_unlock_irqrestore(&pci_mech1_lock, flags);
}

/* Mechanism 1 exists when the address port keeps what was written to it. */
static bool pci_mech1_present(void)
{
	uint64_t flags = spin_lock_irqsave(&pci_mech1_lock);
	uint32_t saved = inl(PCI_MECH1_ADDRESS);
	outl(PCI_MECH1_ADDRESS, 0x80000000u);
	bool present = inl(PCI_MECH1_ADDRESS) == 0x80000000u;
	outl(PCI_MECH1_ADDRESS, saved);
	spin_unlock_irqrestore(&pci_mech1_lock, flags);
	return present;
}

/* ---- ECAM ---------------------------------------------------------------- */

/* The mapping of bus's window, made on first use; NULL outside the region. */
static volatile uint8_t *pci_ecam_window(unsigned bus)
{
	if (bus < pci_ecam.start_bus || bus > pci_ecam.end_bus)
		return NULL;
	volatile uint8_t *window = __atomic_load_n(&pci_ecam_bus[bus], __ATOMIC_ACQUIRE);
	if (window)
		return window;
	uint64_t flags = spin_lock_irqsave(&pci_ecam_lock);
	window = pci_ecam_bus[bus];
	if (!window) {
		uint64_t phys = pci_ecam.base + ((uint64_t)(bus - pci_ecam.start_bus) << 20);
		window = vm_map_mmio(phys, PCI_ECAM_BUS_SIZE);
		__atomic_store_n(&pci_ecam_bus[bus], window, __ATOMIC_RELEASE);
	}
	spin_unlock_irqrestore(&pci_ecam_lock, flags);
	return window;
}

static volatile uint8_t *pci_ecam_address(unsigned bus, unsigned device, unsigned function,
					  unsigned offset)
{
	volatile uint8_t *window = pci_ecam_window(bus);
	return window ? window + (device << 15 | function << 12 | offset) : NULL;
}

bool pci_ecam_range(uint64_t *base, uint64_t *end)
{
	if (pci_access != PCI_ACCESS_ECAM)
		return false;
	*base = pci_ecam.base;
	*end = pci_ecam.base + ((uint64_t)(pci_ecam.end_bus - pci_ecam.start_bus + 1) << 20);
	return true;
}

static bool pci_ecam_setup(void)
{
	const struct acpi_table *mcfg = acpi_find_table("MCFG");
	struct pci_ecam_region regions[8];
	int count = mcfg ? pci_parse_mcfg(mcfg->data, mcfg->length, regions, 8) : 0;
	for (int i = 0; i < count; i++) {
		if (regions[i].segment != 0)
			continue;
		pci_ecam = regions[i];
		pr_info("pci: ECAM at %#lx, buses %u-%u (MCFG)\n", pci_ecam.base,
			pci_ecam.start_bus, pci_ecam.end_bus);
		return pci_ecam_window(pci_ecam.start_bus) != NULL;
	}
	return false;
}

/* ---- The methods behind one interface ------------------------------------ */

static bool pci_address_valid(unsigned bus, unsigned device, unsigned function, unsigned offset,
			      unsigned width)
{
	return bus < PCI_MAX_BUSES && device < 32 && function < 8 &&
	       (width == 1 || width == 2 || width == 4) && offset % width == 0 &&
	       offset + width <= pci_config_limit();
}

uint32_t pci_config_read(unsigned bus, unsigned device, unsigned function, unsigned offset,
			 unsigned width)
{
	uint32_t ones = width == 4 ? 0xffffffffu : (1u << (8 * width)) - 1;
	if (!pci_address_valid(bus, device, function, offset, width))
		return ones;
	if (pci_access == PCI_ACCESS_MECH1)
		return pci_mech1_read(pci_mech1_address(bus, device, function, offset), offset,
				      width);
	volatile uint8_t *address = pci_ecam_address(bus, device, function, offset);
	if (!address)
		return ones;
	if (width == 1)
		return *address;
	if (width == 2)
		return *(volatile uint16_t *)address;
	return *(volatile uint32_t *)address;
}

void pci_config_write(unsigned bus, unsigned device, unsigned function, unsigned offset,
		      unsigned width, uint32_t value)
{
	if (!pci_address_valid(bus, device, function, offset, width))
		return;
	if (pci_access == PCI_ACCESS_MECH1) {
		pci_mech1_write(pci_mech1_address(bus, device, function, offset), offset, width,
				value);
		return;
	}
	volatile uint8_t *address = pci_ecam_address(bus, device, function, offset);
	if (!address)
		return;
	if (width == 1)
		*address = (uint8_t)value;
	else if (width == 2)
		*(volatile uint16_t *)address = (uint16_t)value;
	else
		*(volatile uint32_t *)address = value;
}

unsigned pci_config_limit(void)
{
	return pci_access == PCI_ACCESS_ECAM    ? PCI_CONFIG_MAX
	       : pci_access == PCI_ACCESS_MECH1 ? 256
						: 0;
}

bool pci_config_init(void)
{
	if (pci_ecam_setup())
		pci_access = PCI_ACCESS_ECAM;
	else if (pci_mech1_present())
		pci_access = PCI_ACCESS_MECH1;
	else
		pci_access = PCI_ACCESS_NONE;
	return pci_access != PCI_ACCESS_NONE;
}

const char *pci_access_name(void)
{
	return pci_access == PCI_ACCESS_ECAM    ? "ECAM"
	       : pci_access == PCI_ACCESS_MECH1 ? "mechanism 1"
						: "none";
}

/* ---- Accessors by device ------------------------------------------------- */

uint8_t pci_read_config8(const struct pci_device *dev, unsigned offset)
{
	return (uint8_t)pci_config_read(dev->bus, dev->device, dev->function, offset, 1);
}

uint16_t pci_read_config16(const struct pci_device *dev, unsigned offset)
{
	return (uint16_t)pci_config_read(dev->bus, dev->device, dev->function, offset, 2);
}

uint32_t pci_read_config32(const struct pci_device *dev, unsigned offset)
{
	return pci_config_read(dev->bus, dev->device, dev->function, offset, 4);
}

void pci_write_config8(const struct pci_device *dev, unsigned offset, uint8_t value)
{
	pci_config_write(dev->bus, dev->device, dev->function, offset, 1, value);
}

void pci_write_config16(const struct pci_device *dev, unsigned offset, uint16_t value)
{
	pci_config_write(dev->bus, dev->device, dev->function, offset, 2, value);
}

void pci_write_config32(const struct pci_device *dev, unsigned offset, uint32_t value)
{
	pci_config_write(dev->bus, dev->device, dev->function, offset, 4, value);
}
