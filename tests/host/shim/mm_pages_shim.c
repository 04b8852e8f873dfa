/*
 * Whole pages for the heap on the host: posix_memalign, with a table of live
 * blocks so mm_pages_in_use answers as the kernel's frame bitmap would and
 * mm_free_pages checks it is given exactly what was handed out.
 */
#include <stdlib.h>

#include "mm/internal.h"
#include "mm/mm.h"
#include "mm_shim.h"
#include "panic/panic.h"

#define MAX_BLOCKS 65536

struct block {
	char *base;
	size_t count;
};

static struct block blocks[MAX_BLOCKS];
static size_t block_count;
static size_t pages_live;

void *mm_alloc_pages(size_t count, size_t align)
{
	if (block_count == MAX_BLOCKS)
		return NULL;
	void *memory;
	if (posix_memalign(&memory, align, count * PAGE_SIZE))
		return NULL;
	char *base = memory;
	blocks[block_count++] = (struct block){base, count};
	pages_live += count;
	return base;
}

void mm_free_pages(void *addr, size_t count)
{
	for (size_t i = 0; i < block_count; i++) {
		if (blocks[i].base == addr) {
			if (blocks[i].count != count)
				panic("mm_free_pages: %p has %zu pages, not %zu", addr,
				      blocks[i].count, count);
			blocks[i] = blocks[--block_count];
			pages_live -= count;
			free(addr);
			return;
		}
	}
	panic("mm_free_pages: %p was not allocated", addr);
}

bool mm_pages_in_use(const void *addr)
{
	const char *p = addr;
	for (size_t i = 0; i < block_count; i++)
		if (p >= blocks[i].base && p < blocks[i].base + blocks[i].count * PAGE_SIZE)
			return true;
	return false;
}

size_t mm_shim_pages_live(void)
{
	return pages_live;
}
