/*
 * The page-table walker's environment on the host: a table frame is a
 * zeroed, 4 KiB-aligned heap page whose "physical address" is its pointer.
 * Counts live tables (leak checks) and can fail on demand (-ENOMEM paths).
 */
#include <stdlib.h>
#include <string.h>

#include "mm/internal.h"
#include "mm_shim.h"

static size_t tables_live;
static long allocations_allowed = -1;

uint64_t pt_alloc_table(void)
{
	if (allocations_allowed == 0)
		return 0;
	if (allocations_allowed > 0)
		allocations_allowed--;
	void *table = aligned_alloc(4096, 4096);
	if (!table)
		abort();
	memset(table, 0, 4096);
	tables_live++;
	return (uint64_t)(uintptr_t)table;
}

void pt_free_table(uint64_t phys)
{
	tables_live--;
	free((void *)(uintptr_t)phys);
}

void *pt_table_ptr(uint64_t phys)
{
	return (void *)(uintptr_t)phys;
}

size_t mm_shim_tables_live(void)
{
	return tables_live;
}

void mm_shim_fail_tables_after(long allowed)
{
	allocations_allowed = allowed;
}
