/*
 * Places the BARs that firmware left unassigned.  A PC's firmware (SeaBIOS,
 * OVMF, a vendor's BIOS) gives every BAR an address; a minimal one places
 * none: QEMU's qboot, which starts a -kernel guest some 50 ms sooner than
 * SeaBIOS, leaves every BAR at 0, and the devices then decode nothing.  When
 * no memory BAR of any function has an address, pci_assign_unassigned
 * places them: memory BARs in the 32-bit window above the RAM and the ECAM
 * region and below the I/O APIC (0xfec00000), I/O BARs in ports
 * 0xc000-0xffff, each naturally aligned (memory ones to at least a page, so
 * no two share a mapping), largest first, around every region of the memory
 * map.  Functions behind a bridge keep their BARs unplaced, and the log says
 * so: their bridge's windows would have to be programmed too.  When firmware
 * placed anything at all, nothing is touched: a real machine's chipset
 * decodes ranges that its memory map need not list.
 *
 * pci_place is the placing itself, a pure function (tests/host/pci_assign_test.c).
 */
#include "pci/internal.h"

#include "boot/bootinfo.h"
#include "console/console.h"
#include "lib/align.h"

#define MEM_WINDOW_END 0xfec00000ULL /* the I/O APIC, HPET and local APIC follow */
#define MEM_MIN_ALIGN  4096ULL       /* a page: no two BARs share a mapping */
#define IO_WINDOW_BASE 0xc000ULL
#define IO_WINDOW_END  0x10000ULL
#define MAX_REQUESTS   64
#define MAX_TAKEN      (BOOT_MAX_REGIONS + 2)
#define FOUR_GIB       (1ULL << 32)

static bool overlaps(uint64_t base, uint64_t size, const struct pci_range *range)
{
	return base < range->end && range->base < base + size;
}

/* The first range of taken[] or of the placed requests that [base, base +
 * size) overlaps, or NULL. */
static const struct pci_range *first_overlap(uint64_t base, uint64_t size,
					     const struct pci_range *taken, unsigned taken_count,
					     const struct pci_range *placed, unsigned placed_count)
{
	for (unsigned i = 0; i < taken_count; i++)
		if (overlaps(base, size, &taken[i]))
			return &taken[i];
	for (unsigned i = 0; i < placed_count; i++)
		if (overlaps(base, size, &placed[i]))
			return &placed[i];
	return NULL;
}

/* The lowest aligned base in window where size bytes touch no range, or 0. */
static uint64_t find_room(struct pci_range window, uint64_t size, uint64_t align,
			  const struct pci_range *taken, unsigned taken_count,
			  const struct pci_range *placed, unsigned placed_count)
{
	uint64_t base = align_up(window.base ? window.base : align, align);
	while (base >= window.base && base + size <= window.end && base + size > base) {
		const struct pci_range *in_the_way =
		    first_overlap(base, size, taken, taken_count, placed, placed_count);
		if (!in_the_way)
			return base;
		base = align_up(in_the_way->end, align);
	}
	return 0;
}

unsigned pci_place(struct pci_range window, uint64_t min_align, const struct pci_range *taken,
		   unsigned taken_count, struct pci_placement *requests, unsigned count)
{
	unsigned order[MAX_REQUESTS], placed_count = 0,
				      n = count < MAX_REQUESTS ? count : MAX_REQUESTS;
	struct pci_range placed[MAX_REQUESTS];
	for (unsigned i = 0; i < count; i++)
		requests[i].base = 0;
	for (unsigned i = 0; i < n; i++) { /* largest first, equal sizes in their order */
		unsigned j = i;
		for (; j > 0 && requests[order[j - 1]].size < requests[i].size; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	for (unsigned k = 0; k < n; k++) {
		struct pci_placement *request = &requests[order[k]];
		uint64_t size = request->size;
		if (!size || (size & (size - 1)))
			continue; /* a BAR's size is a power of two */
		uint64_t align = size > min_align ? size : min_align;
		uint64_t base =
		    find_room(window, size, align, taken, taken_count, placed, placed_count);
		if (!base)
			continue;
		request->base = base;
		placed[placed_count++] = (struct pci_range){base, base + size};
	}
	return placed_count;
}

#ifndef HOST_TEST

/* One BAR to place: its function and its index there. */
struct bar_ref {
	struct pci_device *dev;
	unsigned index;
};

static bool any_memory_bar_placed(void)
{
	for (struct pci_device *dev = pci_device_list; dev; dev = dev->next)
		for (unsigned i = 0; i < PCI_BAR_COUNT; i++)
			if ((dev->bars[i].kind == PCI_BAR_MEM32 ||
			     dev->bars[i].kind == PCI_BAR_MEM64) &&
			    dev->bars[i].base)
				return true;
	return false;
}

/* Every region of the memory map below 4 GiB, the ECAM region and all from
 * the I/O APIC up: the memory window's obstacles.  Sets *ram_top to the end
 * of the highest region below 4 GiB that is not above MEM_WINDOW_END. */
static unsigned memory_obstacles(struct pci_range *taken, uint64_t *top)
{
	const struct boot_info *boot = bootinfo();
	unsigned count = 0;
	*top = 0;
	for (unsigned i = 0; i < boot->region_count; i++) {
		const struct boot_region *r = &boot->regions[i];
		if (r->base >= FOUR_GIB || !r->length)
			continue;
		taken[count++] = (struct pci_range){r->base, r->base + r->length};
		if (r->base < MEM_WINDOW_END && r->base + r->length > *top)
			*top = r->base + r->length;
	}
	uint64_t ecam_base, ecam_end;
	if (pci_ecam_range(&ecam_base, &ecam_end)) {
		taken[count++] = (struct pci_range){ecam_base, ecam_end};
		if (ecam_end <= MEM_WINDOW_END && ecam_end > *top)
			*top = ecam_end;
	}
	taken[count++] = (struct pci_range){MEM_WINDOW_END, FOUR_GIB};
	return count;
}

/* Writes base into BAR index of dev (both halves of a 64-bit one) with
 * decoding off, and notes it. */
static void write_bar(struct pci_device *dev, unsigned index, uint64_t base)
{
	struct pci_bar *bar = &dev->bars[index];
	unsigned offset = PCI_BAR0 + 4 * index;
	uint16_t command = pci_read_config16(dev, PCI_COMMAND);
	pci_write_config16(dev, PCI_COMMAND, command & ~(PCI_COMMAND_IO | PCI_COMMAND_MEMORY));
	uint32_t low = pci_read_config32(dev, offset);
	uint32_t keep = bar->kind == PCI_BAR_IO ? low & 0x3 : low & 0xf;
	pci_write_config32(dev, offset, (uint32_t)base | keep);
	if (bar->kind == PCI_BAR_MEM64)
		pci_write_config32(dev, offset + 4, (uint32_t)(base >> 32));
	pci_write_config16(dev, PCI_COMMAND, command);
	bar->base = base;
}

/* Gathers the unplaced BARs of kind io or memory on bus 0 into refs and
 * requests; counts the ones behind bridges in *skipped. */
static unsigned gather(bool io, struct bar_ref *refs, struct pci_placement *requests,
		       unsigned *skipped)
{
	unsigned count = 0;
	for (struct pci_device *dev = pci_device_list; dev; dev = dev->next)
		for (unsigned i = 0; i < PCI_BAR_COUNT; i++) {
			const struct pci_bar *bar = &dev->bars[i];
			if (bar->kind == PCI_BAR_NONE || bar->base || !bar->size ||
			    (bar->kind == PCI_BAR_IO) != io)
				continue;
			if (dev->parent || count == MAX_REQUESTS) {
				(*skipped)++;
				continue;
			}
			refs[count] = (struct bar_ref){dev, i};
			requests[count++] = (struct pci_placement){.size = bar->size};
		}
	return count;
}

/* Places and writes one kind of BAR.  Returns how many stayed unplaced. */
static unsigned assign_kind(bool io, struct pci_range window, uint64_t min_align,
			    const struct pci_range *taken, unsigned taken_count)
{
	static struct bar_ref refs[MAX_REQUESTS];
	static struct pci_placement requests[MAX_REQUESTS];
	unsigned unplaced = 0;
	unsigned count = gather(io, refs, requests, &unplaced);
	pci_place(window, min_align, taken, taken_count, requests, count);
	for (unsigned i = 0; i < count; i++) {
		struct pci_device *dev = refs[i].dev;
		if (!requests[i].base) {
			unplaced++;
			continue;
		}
		write_bar(dev, refs[i].index, requests[i].base);
		pr_info("pci: %02x:%02x.%u BAR%u placed at %#lx (%lu bytes)\n", dev->bus,
			dev->device, dev->function, refs[i].index, requests[i].base,
			requests[i].size);
	}
	return unplaced;
}

unsigned pci_assign_unassigned(void)
{
	if (any_memory_bar_placed())
		return 0;
	struct pci_range taken[MAX_TAKEN];
	uint64_t top;
	unsigned taken_count = memory_obstacles(taken, &top);
	struct pci_range memory = {align_up(top, 1ULL << 20), MEM_WINDOW_END};
	struct pci_range io = {IO_WINDOW_BASE, IO_WINDOW_END};
	unsigned unplaced = assign_kind(false, memory, MEM_MIN_ALIGN, taken, taken_count) +
			    assign_kind(true, io, 1, NULL, 0);
	if (unplaced)
		pr_warn("pci: %u BAR(s) left without an address (behind a bridge, or no room)\n",
			unplaced);
	return unplaced;
}

#endif
