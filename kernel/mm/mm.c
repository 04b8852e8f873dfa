/*
 * mm_init: the order is the dependency order.  The frame allocator comes
 * first (it needs only the loader's map and the boot physmap), then the
 * kernel's own page tables (their frames come from it), then the heap.  The
 * ranges the allocator must never hand out are the first MiB (BIOS data,
 * the future SMP trampoline), the kernel image and the boot modules.
 */
#include <stdint.h>

#include "boot/bootinfo.h"
#include "console/console.h"
#include "mm/internal.h"
#include "mm/mm.h"
#include "panic/panic.h"

#define MAX_LISTED_REGIONS 20
#define BOOT_PHYSMAP_LIMIT (4UL << 30)

extern char __image_start[], __image_end[];

static const char *region_type_name(uint32_t type)
{
	switch (type) {
	case BOOT_REGION_USABLE: return "usable";
	case BOOT_REGION_ACPI_RECLAIMABLE: return "ACPI reclaimable";
	case BOOT_REGION_ACPI_NVS: return "ACPI NVS";
	case BOOT_REGION_BAD: return "bad";
	default: return "reserved";
	}
}

static void print_memory_map(const struct boot_info *boot)
{
	unsigned listed =
	    boot->region_count < MAX_LISTED_REGIONS ? boot->region_count : MAX_LISTED_REGIONS;
	for (unsigned i = 0; i < listed; i++) {
		const struct boot_region *r = &boot->regions[i];
		pr_info("mm: [%#014lx-%#014lx] %10lu KiB %s\n", r->base, r->base + r->length - 1,
			r->length >> 10, region_type_name(r->type));
	}
	if (boot->region_count > listed) {
		uint64_t rest = 0;
		for (unsigned i = listed; i < boot->region_count; i++)
			rest += boot->regions[i].length;
		pr_info("mm: ... %u more region(s), %lu KiB\n", boot->region_count - listed,
			rest >> 10);
	}
	if (boot->regions_dropped)
		pr_warn("mm: %u region(s) of the loader's memory map past the %u kept (after "
			"merging touching ones) are left out: their memory is not used\n",
			boot->regions_dropped, BOOT_MAX_REGIONS);
}

static void *map_bitmap(uint64_t phys, uint64_t length)
{
	return phys_to_virt(phys);
}

static void setup_frames(const struct boot_info *boot)
{
	struct pmm_range reserved[PMM_MAX_RESERVED];
	unsigned count = 0;
	reserved[count++] = (struct pmm_range){0, 1UL << 20};
	reserved[count++] = (struct pmm_range){(uint64_t)__image_start - KERNEL_VMA,
					       (uint64_t)__image_end - KERNEL_VMA};
	for (unsigned i = 0; i < boot->module_count && count < PMM_MAX_RESERVED; i++)
		reserved[count++] =
		    (struct pmm_range){boot->modules[i].start, boot->modules[i].end};
	int error = pmm_setup(boot->regions, boot->region_count, reserved, count,
			      BOOT_PHYSMAP_LIMIT, map_bitmap);
	if (error)
		panic("mm: cannot use the memory map (%d)", error);
}

void mm_init(void)
{
	const struct boot_info *boot = bootinfo();
	print_memory_map(boot);
	setup_frames(boot);
	vm_init();
	heap_init();
	pr_info("mm: %lu MiB usable, %lu MiB free after boot\n", pmm_count_total() >> 8,
		pmm_count_free() >> 8);
}

void mm_print_stats(void)
{
	pr_info("mm: %lu of %lu frames free (%lu MiB of %lu MiB), %u kernel stack(s)\n",
		pmm_count_free(), pmm_count_total(), pmm_count_free() >> 8, pmm_count_total() >> 8,
		kstack_count_in_use());
	heap_print_stats();
}
