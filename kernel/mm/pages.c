/*
 * Whole pages for the heap and for drivers: runs of frames from the frame
 * allocator, used through their physmap alias.  This file is the heap's only
 * tie to physical memory, so the host tests replace it with aligned_alloc.
 */
#include <stddef.h>
#include <stdint.h>

#include "mm/internal.h"
#include "mm/mm.h"

void *mm_alloc_pages(size_t count, size_t align)
{
	uint64_t phys = pmm_alloc_contiguous(count, align);
	return phys ? phys_to_virt(phys) : NULL;
}

void mm_free_pages(void *addr, size_t count)
{
	pmm_free_contiguous((uint64_t)addr - PHYSMAP_BASE, count);
}

bool mm_pages_in_use(const void *addr)
{
	uint64_t address = (uint64_t)addr;
	if (address < PHYSMAP_BASE || address >= PHYSMAP_BASE + pmm_ram_end())
		return false;
	return pmm_frame_in_use(address - PHYSMAP_BASE);
}
