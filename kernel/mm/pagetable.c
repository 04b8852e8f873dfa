/*
 * The x86_64 four-level page-table walker, free of any global state but the
 * NX switch, so the host tests compile it as it is.  Tables are reached only
 * through the environment's hooks (pt_alloc_table, pt_table_ptr,
 * pt_free_table): the kernel backs them with frames seen through the physmap,
 * the host tests with aligned heap memory.
 *
 * Invariants:
 *  - intermediate entries are present + writable (+ user in the lower half):
 *    the leaf alone decides permissions;
 *  - a leaf is a 4 KiB PTE or a 2 MiB PDE (PTE_LARGE); 1 GiB pages are never
 *    made, and 4 KiB operations inside a 2 MiB page split it first, keeping
 *    every other page's translation and flags;
 *  - tables emptied by unmapping stay until pt_detach_empty_tables takes
 *    those a range covers whole, pt_destroy_user frees them all, or a 2 MiB
 *    map replaces an empty one.
 * Locking and TLB invalidation are the caller's (vm.c).
 */
#include <stdbool.h>
#include <stdint.h>

#include "lib/errno.h"
#include "mm/internal.h"
#include "mm/mm.h"

#define LEVEL_PT       0
#define LEVEL_PD       1
#define LEVEL_PDPT     2
#define LEVEL_PML4     3
#define LOWER_HALF_END 0x0000800000000000UL

static bool nx_supported = true;

void pt_set_nx_supported(bool supported)
{
	nx_supported = supported;
}

bool pt_is_canonical(uint64_t virt)
{
	uint64_t top = virt >> 47;
	return top == 0 || top == 0x1ffff;
}

uint64_t pt_flags_from_vm(unsigned vm_flags)
{
	if (vm_flags & VM_NONE)
		return PTE_PROTNONE | (nx_supported ? PTE_NX : 0);
	uint64_t pte = PTE_PRESENT;
	if (vm_flags & VM_WRITE)
		pte |= PTE_WRITE;
	if (vm_flags & VM_USER)
		pte |= PTE_USER;
	if (vm_flags & VM_NOCACHE)
		pte |= PTE_PCD | PTE_PWT;
	if (!(vm_flags & VM_EXEC) && nx_supported)
		pte |= PTE_NX;
	return pte;
}

unsigned pt_flags_to_vm(uint64_t pte)
{
	unsigned flags = 0;
	if (pte & PTE_WRITE)
		flags |= VM_WRITE;
	if (!(pte & PTE_NX))
		flags |= VM_EXEC;
	if (pte & PTE_USER)
		flags |= VM_USER;
	if (pte & PTE_PCD)
		flags |= VM_NOCACHE;
	if (pte & PTE_LARGE)
		flags |= VM_LARGE;
	if (!(pte & PTE_PRESENT) && (pte & PTE_PROTNONE))
		flags |= VM_NONE;
	return flags;
}

static uint64_t *table_at(uint64_t phys)
{
	return pt_table_ptr(phys);
}

static unsigned index_at(uint64_t virt, int level)
{
	return (virt >> (12 + 9 * level)) & (PT_ENTRIES - 1);
}

/* Whether an entry at level maps something: present, or a kept 4 KiB leaf
 * that is not present (PTE_PROTNONE). */
static bool entry_maps(uint64_t e, int level)
{
	return (e & PTE_PRESENT) || (level == LEVEL_PT && (e & PTE_PROTNONE));
}

/* A leaf's present bit: set unless the leaf is a kept PROT_NONE page. */
static uint64_t leaf_present(uint64_t pte_flags)
{
	return pte_flags & PTE_PROTNONE ? 0 : PTE_PRESENT;
}

static uint64_t intermediate_flags(uint64_t virt)
{
	uint64_t flags = PTE_PRESENT | PTE_WRITE;
	return virt < LOWER_HALF_END ? flags | PTE_USER : flags;
}

/* The entry for virt at `level`, creating missing tables on the way.  Fails
 * with -EEXIST if a 2 MiB leaf sits above level, -ENOMEM if no table frame. */
static int walk_create(uint64_t root, uint64_t virt, int level, uint64_t **entry)
{
	uint64_t table = root;
	for (int at = LEVEL_PML4; at > level; at--) {
		uint64_t *e = &table_at(table)[index_at(virt, at)];
		if (!(*e & PTE_PRESENT)) {
			uint64_t fresh = pt_alloc_table();
			if (!fresh)
				return -ENOMEM;
			*e = fresh | intermediate_flags(virt);
		} else if (*e & PTE_LARGE) {
			return -EEXIST;
		}
		table = *e & PTE_ADDRESS_MASK;
	}
	*entry = &table_at(table)[index_at(virt, level)];
	return 0;
}

/* The leaf entry mapping virt and its level, or -ENOENT. */
static int walk_find(uint64_t root, uint64_t virt, uint64_t **entry, int *level)
{
	uint64_t table = root;
	for (int at = LEVEL_PML4;; at--) {
		uint64_t *e = &table_at(table)[index_at(virt, at)];
		if (!entry_maps(*e, at))
			return -ENOENT;
		if (at == LEVEL_PT || ((*e & PTE_LARGE) && at == LEVEL_PD)) {
			*entry = e;
			*level = at;
			return 0;
		}
		if (*e & PTE_LARGE)
			return -ENOENT; /* 1 GiB pages are never made */
		table = *e & PTE_ADDRESS_MASK;
	}
}

uint64_t pt_peek_user(uint64_t root, uint64_t virt)
{
	uint64_t table = root;
	for (int at = LEVEL_PML4;; at--) {
		uint64_t e =
		    __atomic_load_n(&table_at(table)[index_at(virt, at)], __ATOMIC_RELAXED);
		if ((e & (PTE_PRESENT | PTE_USER)) != (PTE_PRESENT | PTE_USER))
			return PT_NO_PAGE;
		uint64_t device = e & PTE_PCD ? PT_PEEK_DEVICE : 0;
		if (at == LEVEL_PT)
			return (e & PTE_ADDRESS_MASK) | (virt & 0xfff) | device;
		if (e & PTE_LARGE) {
			if (at != LEVEL_PD)
				return PT_NO_PAGE; /* 1 GiB pages are never made */
			return (e & PTE_LARGE_ADDRESS_MASK) | (virt & (LARGE_PAGE_SIZE - 1)) |
			       device;
		}
		table = e & PTE_ADDRESS_MASK;
	}
}

uint64_t pt_next_mapped(uint64_t root, uint64_t virt, uint64_t end)
{
	while (virt < end) {
		uint64_t table = root, span = 0;
		for (int at = LEVEL_PML4; at >= LEVEL_PT; at--) {
			uint64_t e = table_at(table)[index_at(virt, at)];
			if (!entry_maps(e, at)) {
				span = 1ULL << (12 + 9 * at); /* nothing below this entry */
				break;
			}
			if (at == LEVEL_PT || (e & PTE_LARGE))
				return virt;
			table = e & PTE_ADDRESS_MASK;
		}
		uint64_t next = (virt & ~(span - 1)) + span;
		if (next <= virt)
			return end;
		virt = next;
	}
	return end;
}

/* Replaces the 2 MiB leaf *pde by a table of 512 equivalent 4 KiB leaves. */
static int split_large(uint64_t *pde, uint64_t virt)
{
	uint64_t fresh = pt_alloc_table();
	if (!fresh)
		return -ENOMEM;
	uint64_t *pt = table_at(fresh);
	uint64_t base = *pde & PTE_LARGE_ADDRESS_MASK;
	uint64_t flags = (*pde & PTE_FLAGS_MASK & ~PTE_LARGE_ADDRESS_MASK) & ~PTE_LARGE;
	for (unsigned i = 0; i < PT_ENTRIES; i++)
		pt[i] = (base + (uint64_t)i * 4096) | flags;
	*pde = fresh | intermediate_flags(virt);
	return 0;
}

/* The 4 KiB leaf for virt, splitting a 2 MiB page over it. */
static int find_small_leaf(uint64_t root, uint64_t virt, uint64_t **entry)
{
	int level;
	int error = walk_find(root, virt, entry, &level);
	if (error || level == LEVEL_PT)
		return error;
	error = split_large(*entry, virt);
	if (error)
		return error;
	return walk_find(root, virt, entry, &level);
}

static bool table_is_empty(uint64_t table)
{
	const uint64_t *entries = table_at(table);
	for (unsigned i = 0; i < PT_ENTRIES; i++)
		if (entries[i])
			return false;
	return true;
}

int pt_map(uint64_t root, uint64_t virt, uint64_t phys, uint64_t pte_flags, enum pt_page_size size)
{
	uint64_t *entry;
	int level = size == PT_PAGE_2M ? LEVEL_PD : LEVEL_PT;
	int error = walk_create(root, virt, level, &entry);
	if (error)
		return error;
	if (level == LEVEL_PD && (*entry & PTE_PRESENT) && !(*entry & PTE_LARGE) &&
	    table_is_empty(*entry & PTE_ADDRESS_MASK)) {
		pt_free_table(*entry & PTE_ADDRESS_MASK);
		*entry = 0;
	}
	if (entry_maps(*entry, level))
		return -EEXIST;
	uint64_t leaf = phys | (pte_flags & PTE_FLAGS_MASK) | leaf_present(pte_flags);
	*entry = level == LEVEL_PD ? leaf | PTE_LARGE : leaf & ~PTE_LARGE;
	return 0;
}

int pt_unmap(uint64_t root, uint64_t virt, uint64_t *old_phys)
{
	uint64_t *entry;
	int error = find_small_leaf(root, virt, &entry);
	if (error)
		return error;
	*old_phys = *entry & PTE_ADDRESS_MASK;
	*entry = 0;
	return 0;
}

int pt_protect(uint64_t root, uint64_t virt, uint64_t pte_flags)
{
	uint64_t *entry;
	int error = find_small_leaf(root, virt, &entry);
	if (error)
		return error;
	uint64_t kept = *entry & (PTE_ADDRESS_MASK | PTE_ACCESSED | PTE_DIRTY);
	*entry = kept | (pte_flags & PTE_FLAGS_MASK & ~PTE_LARGE) | leaf_present(pte_flags);
	return 0;
}

int pt_lookup(uint64_t root, uint64_t virt, uint64_t *phys, uint64_t *pte)
{
	uint64_t *entry;
	int level;
	int error = walk_find(root, virt, &entry, &level);
	if (error)
		return error;
	uint64_t mask = level == LEVEL_PD ? PTE_LARGE_ADDRESS_MASK : PTE_ADDRESS_MASK;
	uint64_t page_size = level == LEVEL_PD ? (2UL << 20) : 4096;
	*phys = (*entry & mask) | (virt & (page_size - 1));
	*pte = *entry;
	return 0;
}

/* Bytes one entry of a table at level maps. */
static uint64_t entry_span(int level)
{
	return 1ULL << (12 + 9 * level);
}

/* Detaches, below the table at level that maps from table_base, every table
 * that [start, end) covers whole and that is empty once its own children
 * were looked at. */
static void detach_below(uint64_t table, int level, uint64_t table_base, uint64_t start,
			 uint64_t end, pt_collect_fn collect, void *ctx)
{
	uint64_t *entries = table_at(table);
	uint64_t span = entry_span(level);
	unsigned first = start > table_base ? (unsigned)((start - table_base) / span) : 0;
	for (unsigned i = first; i < PT_ENTRIES; i++) {
		uint64_t base = table_base + i * span;
		if (base >= end)
			break;
		uint64_t e = entries[i];
		if (!(e & PTE_PRESENT) || (e & PTE_LARGE))
			continue;
		uint64_t child = e & PTE_ADDRESS_MASK;
		if (level - 1 > LEVEL_PT)
			detach_below(child, level - 1, base, start, end, collect, ctx);
		if (base >= start && end - base >= span && table_is_empty(child)) {
			entries[i] = 0;
			collect(child, ctx);
		}
	}
}

void pt_detach_empty_tables(uint64_t root, uint64_t start, uint64_t end, pt_collect_fn collect,
			    void *ctx)
{
	if (end > LOWER_HALF_END)
		end = LOWER_HALF_END;
	if (start < end)
		detach_below(root, LEVEL_PML4, 0, start, end, collect, ctx);
}

static void destroy_table(uint64_t table, int level)
{
	if (level > LEVEL_PT) {
		const uint64_t *entries = table_at(table);
		for (unsigned i = 0; i < PT_ENTRIES; i++)
			if ((entries[i] & PTE_PRESENT) && !(entries[i] & PTE_LARGE))
				destroy_table(entries[i] & PTE_ADDRESS_MASK, level - 1);
	}
	pt_free_table(table);
}

void pt_destroy_user(uint64_t root)
{
	uint64_t *entries = table_at(root);
	for (unsigned i = 0; i < PT_KERNEL_FIRST_SLOT; i++)
		if (entries[i] & PTE_PRESENT)
			destroy_table(entries[i] & PTE_ADDRESS_MASK, LEVEL_PDPT);
	pt_free_table(root);
}
