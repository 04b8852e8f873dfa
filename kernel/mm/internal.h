/*
 * Private to kernel/mm: the page-table walker (pagetable.c), the frame
 * allocator's set-up entry (pmm.c) and the hooks they need from their
 * environment.  The hooks are what the host unit tests replace with shims.
 */
#ifndef KERNEL_MM_INTERNAL_H
#define KERNEL_MM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "boot/bootinfo.h"

/* ---- Frame allocator set-up ---------------------------------------------- */

struct pmm_range {
	uint64_t base; /* [base, end), physical */
	uint64_t end;
};

#define PMM_MAX_RESERVED 16

/* Maps length bytes at phys for the allocator's bitmap. */
typedef void *(*pmm_map_fn)(uint64_t phys, uint64_t length);

/* Builds the allocator from the loader's regions: usable frames become free,
 * except those in reserved[] and those holding the bitmap, which is placed in
 * usable memory below bitmap_limit.  Returns 0, -EINVAL (no usable RAM,
 * too many ranges) or -ENOMEM (no room for the bitmap). */
int pmm_setup(const struct boot_region *regions, unsigned region_count,
	      const struct pmm_range *reserved, unsigned reserved_count, uint64_t bitmap_limit,
	      pmm_map_fn map);
/* One past the highest usable physical address. */
uint64_t pmm_ram_end(void);
/* True when phys is a usable RAM frame in use (allocated or reserved at boot). */
bool pmm_frame_in_use(uint64_t phys);

/* ---- Page-table walker --------------------------------------------------- */

/* PTE_PROTNONE is a software bit of a 4 KiB leaf that is not present: the
 * page is kept (the entry holds its frame) but nobody, not even the kernel,
 * may touch it (PROT_NONE; Linux's _PAGE_PROTNONE).  A fault on it is the
 * region's to judge, and mprotect makes it present again, same frame. */
#define PTE_PRESENT            (1UL << 0)
#define PTE_WRITE              (1UL << 1)
#define PTE_USER               (1UL << 2)
#define PTE_PWT                (1UL << 3)
#define PTE_PCD                (1UL << 4)
#define PTE_ACCESSED           (1UL << 5)
#define PTE_DIRTY              (1UL << 6)
#define PTE_LARGE              (1UL << 7)
#define PTE_GLOBAL             (1UL << 8)
#define PTE_PROTNONE           (1UL << 9)
#define PTE_NX                 (1UL << 63)
#define PTE_ADDRESS_MASK       0x000ffffffffff000UL
#define PTE_LARGE_ADDRESS_MASK 0x000fffffffe00000UL
#define PTE_FLAGS_MASK         (~PTE_ADDRESS_MASK)

#define PT_ENTRIES           512
#define PT_KERNEL_FIRST_SLOT 256 /* PML4 slots 256..511 are the kernel half */

enum pt_page_size { PT_PAGE_4K, PT_PAGE_2M };

/* Environment hooks: a zeroed page-table frame (0 when none), its release,
 * and a pointer through which a table frame can be read and written. */
uint64_t pt_alloc_table(void);
void pt_free_table(uint64_t phys);
void *pt_table_ptr(uint64_t phys);

/* Whether leaf entries may carry PTE_NX (EFER.NXE is on). */
void pt_set_nx_supported(bool supported);

bool pt_is_canonical(uint64_t virt);
/* PTE bits for enum vm_flags and back. */
uint64_t pt_flags_from_vm(unsigned vm_flags);
unsigned pt_flags_to_vm(uint64_t pte);

/* The walker: each returns 0 or -EINVAL/-EEXIST/-ENOENT/-ENOMEM as the vm_*
 * function of the same name.  Alignment and canonical checks are the
 * caller's.  A 4 KiB operation inside a 2 MiB page splits it first. */
int pt_map(uint64_t root, uint64_t virt, uint64_t phys, uint64_t pte_flags, enum pt_page_size size);
int pt_unmap(uint64_t root, uint64_t virt, uint64_t *old_phys);
int pt_protect(uint64_t root, uint64_t virt, uint64_t pte_flags);
int pt_lookup(uint64_t root, uint64_t virt, uint64_t *phys, uint64_t *pte);
/* The physical address behind user address virt in the tables at root, read
 * without a lock (each entry once, as the MMU would), or PT_NO_PAGE unless
 * every level is present and user-accessible.  PT_PEEK_DEVICE is or'ed in
 * for an uncached leaf (device memory, not in the physmap). */
#define PT_NO_PAGE     ((uint64_t)-1)
#define PT_PEEK_DEVICE (1UL << 62)
uint64_t pt_peek_user(uint64_t root, uint64_t virt);
/* The first address in [virt, end) (virt page aligned) that a leaf maps, or
 * end: absent tables are skipped whole, so the cost is what is mapped, not
 * the size of the range. */
uint64_t pt_next_mapped(uint64_t root, uint64_t virt, uint64_t end);
/* Takes out of the tables at root every table (page table, directory or
 * PDPT, never root) whose whole span lies in [start, end) of the lower half
 * and that maps nothing, children first: its parent entry is cleared and
 * collect(table, ctx) gets it, to free once no CPU can walk into it. */
typedef void (*pt_collect_fn)(uint64_t table, void *ctx);
void pt_detach_empty_tables(uint64_t root, uint64_t start, uint64_t end, pt_collect_fn collect,
			    void *ctx);
/* Frees every table reachable from the lower half of root, and root itself. */
void pt_destroy_user(uint64_t root);

/* ---- Heap backing ---------------------------------------------------------- */

/* Slabs and large kmalloc blocks start on this boundary with a header whose
 * first word is a magic number: a pointer finds its header by rounding down. */
#define HEAP_BLOCK_ALIGN (16UL * 1024)
#define HEAP_BLOCK_PAGES (HEAP_BLOCK_ALIGN / 4096)

/* The cache owning obj, or NULL when obj is not inside a slab. */
struct kmem_cache *kmem_cache_of(const void *obj);
/* Object size of a cache (what an object can hold), and its name. */
size_t kmem_cache_object_size(const struct kmem_cache *cache);
const char *kmem_cache_get_name(const struct kmem_cache *cache);
/* Prints one line per cache. */
void kmem_cache_print_all(void);

/* True when addr lies in a page that mm_alloc_pages handed out: the heap reads
 * a slab header there only then, so foreign pointers panic instead of faulting. */
bool mm_pages_in_use(const void *addr);
/* The same for addr, known to lie at or after base, whose page is in use:
 * an address in base's own page needs no second look. */
static inline bool mm_page_in_use_beside(const void *addr, const void *base)
{
	return (uintptr_t)addr / 4096 == (uintptr_t)base / 4096 || mm_pages_in_use(addr);
}

/* kmalloc's size classes, created by heap_init (called from mm_init). */
void heap_init(void);
/* Prints kmalloc and cache statistics. */
void heap_print_stats(void);
/* Sets up the kernel address space and switches to it. */
void vm_init(void);
/* Stacks currently allocated. */
unsigned kstack_count_in_use(void);

#endif
