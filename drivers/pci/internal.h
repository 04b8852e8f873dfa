/* PCI's private declarations, shared by the files of drivers/pci only. */
#ifndef DRIVERS_PCI_INTERNAL_H
#define DRIVERS_PCI_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "boot/bootinfo.h"
#include "pci/pci.h"

/* Raw configuration access by address; width 1, 2 or 4, offset aligned to it.
 * Returns all ones for an address outside what the access method reaches. */
uint32_t pci_config_read(unsigned bus, unsigned device, unsigned function, unsigned offset,
			 unsigned width);
void pci_config_write(unsigned bus, unsigned device, unsigned function, unsigned offset,
		      unsigned width, uint32_t value);
/* Chooses ECAM (MCFG) or mechanism 1.  Returns false when neither works. */
bool pci_config_init(void);
/* The configuration space size the access method reaches (256 or 4096). */
unsigned pci_config_limit(void);

/* One ECAM region of an MCFG table. */
struct pci_ecam_region {
	uint64_t base;
	uint16_t segment;
	uint8_t start_bus, end_bus;
};
/* Parses an MCFG table of length bytes: stores up to max regions.  Returns
 * the number of regions, or -EBADMSG (too short, or entries that do not fit
 * its length). */
int pci_parse_mcfg(const void *table, uint32_t length, struct pci_ecam_region *regions,
		   unsigned max);

/* BAR decoding: the BAR's kind from its low bits; the size from the value
 * read back after writing all ones (the upper half too for 64-bit, else 0). */
enum pci_bar_kind pci_bar_decode_kind(uint32_t low);
uint64_t pci_bar_decode_size(uint32_t low_probe, uint32_t high_probe, enum pci_bar_kind kind);
uint64_t pci_bar_decode_base(uint32_t low, uint32_t high, enum pci_bar_kind kind);

/* Whether a memory BAR at [base, base + size) may be mapped: it has an
 * address (0 is a BAR nobody placed), does not wrap, and overlaps no usable
 * RAM region of the boot memory map (a device mapped there would write into
 * memory the kernel hands out). */
bool pci_bar_range_is_device_memory(uint64_t base, uint64_t size, const struct boot_region *regions,
				    unsigned region_count);

/* The ECAM region's addresses, [*base, *end).  False without ECAM. */
bool pci_ecam_range(uint64_t *base, uint64_t *end);

/* ---- Placing BARs firmware left unassigned (assign.c) ---- */

struct pci_range {
	uint64_t base, end; /* [base, end) */
};
struct pci_placement {
	uint64_t size; /* in: a power of two */
	uint64_t base; /* out: where it goes, 0 when it found no room */
};
/* Places each request in window, aligned to its size (at least min_align),
 * overlapping no taken range and no other request, largest first.  Returns
 * how many were placed. */
unsigned pci_place(struct pci_range window, uint64_t min_align, const struct pci_range *taken,
		   unsigned taken_count, struct pci_placement *requests, unsigned count);
/* When no memory BAR of any function has an address, places and writes
 * those of bus 0.  Returns how many BARs stayed without an address. */
unsigned pci_assign_unassigned(void);

/* The list of functions, in bus order. */
extern struct pci_device *pci_device_list;
/* Enumerates from bus 0 into pci_device_list.  Returns the count. */
unsigned pci_enumerate(void);
/* Runs matching drivers on every unbound function. */
void pci_probe_drivers(void);

/* INTx routing facts: the host bridge's chipset. */
enum pci_chipset { PCI_CHIPSET_UNKNOWN, PCI_CHIPSET_I440FX, PCI_CHIPSET_Q35 };
enum pci_chipset pci_detect_chipset(void);
/* The GSI for INTx pin (1-4) of a function at slot on bus 0 (after bridge
 * swizzling), per chipset; line is the firmware's interrupt line register. */
int pci_route_intx(enum pci_chipset chipset, unsigned slot, unsigned pin, uint8_t line);

#endif
