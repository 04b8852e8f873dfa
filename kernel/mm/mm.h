/*
 * Memory management: physical frames (pmm), address spaces and page tables
 * (vm), the kernel heap (kmalloc and object caches) and guarded kernel stacks.
 * mm_init() runs once at boot; everything else is SMP-safe and may be called
 * from any context except where a function says it may sleep (none do yet).
 *
 *     uint64_t frame = pmm_alloc_frame();            // 0 when memory is exhausted
 *     vm_map(vm_kernel_space(), virt, frame, VM_WRITE);
 *     struct request *r = kzalloc(sizeof *r);  ...  kfree(r);
 *
 * Kernel virtual layout (upper half, shared by every address space):
 *   PHYSMAP_BASE   all RAM, 2 MiB pages where aligned, read-write, no-execute
 *                  (also the first MiB and firmware tables next to RAM)
 *   VM_MMIO_BASE   device memory from vm_map_mmio(), uncached
 *   VM_KSTACK_BASE kernel stacks, each below an unmapped guard area
 *   KERNEL_VMA     the kernel image: text RX, rodata R, data/bss RW+NX
 */
#ifndef KERNEL_MM_MM_H
#define KERNEL_MM_MM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86_64/layout.h"
#include "cpu/percpu.h"

#define VM_MMIO_BASE        0xffffc00000000000UL
#define VM_MMIO_SIZE        (1UL << 40)
#define VM_KSTACK_BASE      0xffffc80000000000UL
#define VM_KSTACK_SLOT_SIZE (256UL * 1024) /* one stack and its guard area */
#define VM_KSTACK_SLOTS     16384
#define PHYSMAP_MAX_BYTES   (64UL << 40) /* RAM above this is not used */

#define PAGE_SHIFT      12
#define LARGE_PAGE_SIZE (2UL << 20)

/* ---- Boot ---------------------------------------------------------------- */

/* Sets up frames, the kernel's own page tables, heap and stacks, and prints
 * the memory map.  Called once on the boot CPU; panics if memory is unusable. */
void mm_init(void);
/* Prints frame counts and per-cache heap statistics (the `meminfo` report). */
void mm_print_stats(void);

/* ---- Physical frames ----------------------------------------------------- */

/* Returns the physical address of a free 4 KiB frame (not zeroed), or 0 when
 * none is left: frame 0 is never handed out (the first MiB is reserved). */
uint64_t pmm_alloc_frame(void);
/* Returns a free frame; panics on a double free or an address that is not an
 * allocated RAM frame. */
void pmm_free_frame(uint64_t phys);
/* Returns the base of count contiguous free frames whose address is a multiple
 * of align (a power of two, at least PAGE_SIZE), or 0 when no run fits or the
 * arguments are invalid.  For DMA buffers and slabs. */
uint64_t pmm_alloc_contiguous(size_t count, uint64_t align);
/* Frees a run from pmm_alloc_contiguous (or count single frames in a row). */
void pmm_free_contiguous(uint64_t phys, size_t count);
/* Frames of usable RAM the loader reported, and frames free right now. */
uint64_t pmm_count_total(void);
uint64_t pmm_count_free(void);

/* ---- Address spaces ------------------------------------------------------ */

enum vm_flags {
	VM_READ = 0, /* every mapping is readable */
	VM_WRITE = 1u << 0,
	VM_EXEC = 1u << 1,
	VM_USER = 1u << 2,    /* user-accessible: lower half only */
	VM_NOCACHE = 1u << 3, /* uncached (device memory) */
	VM_LARGE = 1u << 4,   /* reported by vm_translate for a 2 MiB page */
	VM_NONE = 1u << 5,    /* kept but not present: no access at all (PROT_NONE) */
};

struct address_space;

/* The kernel's address space (upper half, plus any low mappings made in it). */
struct address_space *vm_kernel_space(void);
/* Returns a new user address space sharing the kernel half, or NULL (no memory). */
struct address_space *vm_space_create(void);
/* Frees a user space's page tables (not the frames mapped in it).  The space
 * must not be active on any CPU. */
void vm_space_destroy(struct address_space *space);
/* Loads space into CR3 on this CPU. */
void vm_space_activate(struct address_space *space);
/* vm_space_activate for the scheduler's switch: interrupts off, and space is
 * not this CPU's loaded_space. */
void vm_space_switch(struct address_space *space);

/* The words of an address space that its switch uses in line
 * (vm_space_switch_on; vm.c checks them): the physical address of its PML4,
 * and the CPUs whose CR3 holds it. */
#define VM_SPACE_OFFSET_ROOT        8
#define VM_SPACE_OFFSET_ACTIVE_CPUS 16

/* vm_space_switch on cpu, the calling CPU, in line: every switch between two
 * processes runs it.  CR3 holds cpu->loaded_space's root (every load goes
 * through here), so it is written without being read first.  The CPU's bit
 * is set in the new space's active_cpus before CR3 is loaded and cleared in
 * the old one's after, each with one locked BTS or BTR by the CPU's index (no
 * mask to make); the kernel's space gets its bit too, where nobody asks,
 * rather than a test for it on every switch.  There is always an old space:
 * vm_init sets every CPU's to the kernel's. */
static inline __attribute__((always_inline)) void vm_space_switch_on(struct cpu *cpu,
								     struct address_space *space)
{
	struct address_space *old = cpu->loaded_space;
	uint64_t index = cpu->id;
	uint64_t *joined = (uint64_t *)((char *)space + VM_SPACE_OFFSET_ACTIVE_CPUS);
	uint64_t root = *(const uint64_t *)((const char *)space + VM_SPACE_OFFSET_ROOT);
	__asm__ volatile("lock btsq %1, %0" : "+m"(*joined) : "r"(index) : "memory", "cc");
	__asm__ volatile("mov %0, %%cr3" : : "r"(root) : "memory");
	cpu->loaded_space = space;
	uint64_t *left = (uint64_t *)((char *)old + VM_SPACE_OFFSET_ACTIVE_CPUS);
	__asm__ volatile("lock btrq %1, %0" : "+m"(*left) : "r"(index) : "memory", "cc");
}

/* Maps one 4 KiB page.  Returns 0, -EINVAL (unaligned or non-canonical virt
 * or phys, VM_USER in the upper half, a user space's upper half), -EEXIST
 * (already mapped) or -ENOMEM (no frame for a page table). */
int vm_map(struct address_space *space, uint64_t virt, uint64_t phys, unsigned flags);
/* Unmaps one 4 KiB page (splitting a 2 MiB page if needed).  Returns the
 * physical address that was mapped, or -EINVAL, -ENOENT (not mapped), -ENOMEM. */
int64_t vm_unmap(struct address_space *space, uint64_t virt);
/* Frees the page tables of a user space that [start, end) covers whole and
 * that map nothing (after munmap: the gap between the regions left), once
 * no CPU can still walk through them.  The kernel's tables stay. */
void vm_free_tables(struct address_space *space, uint64_t start, uint64_t end);
/* Changes the flags of one mapped 4 KiB page.  Returns 0, -EINVAL, -ENOENT,
 * -ENOMEM (splitting a 2 MiB page). */
int vm_protect(struct address_space *space, uint64_t virt, unsigned flags);
/* Looks virt up.  Returns 0 and sets *phys (with virt's page offset) and
 * *flags (either may be NULL), or -EINVAL (non-canonical) or -ENOENT. */
int vm_translate(struct address_space *space, uint64_t virt, uint64_t *phys, unsigned *flags);
/* The first page in [virt, end) that is mapped, or end.  Skips unmapped
 * tables whole: walking a sparse range costs what is mapped in it. */
uint64_t vm_next_mapped(struct address_space *space, uint64_t virt, uint64_t end);

/* Where the byte at user address virt of the address space active on this
 * CPU can be read now, through the physmap (valid to the end of its page), or
 * NULL when its page is not present, not user-accessible or not RAM.  Takes
 * no lock and no fault and never sleeps (the page tables are read as the MMU
 * reads them), so it may run anywhere, interrupts off or locks held; the page
 * is not faulted in.  Only the process's own thread changes its memory, so
 * from that thread the answer holds until it returns to user mode. */
const void *vm_user_peek(uint64_t virt);
/* The stamp of the address space active on this CPU (interrupts off): given
 * once, to this space, and given anew whenever one of its pages is unmapped
 * or its protection changes (vm_unmap, vm_protect; copy-on-write and
 * munmap go through them).  While it is the same, every user page found
 * before (vm_user_peek) is still mapped, at the same frame and as readable:
 * mapping a page where none was changes no translation found before.  0 for
 * the kernel's space.  In line (a traced system call asks for it): the
 * stamp is the first word of the space the CPU has loaded. */
static inline uint64_t vm_space_stamp(void)
{
	const uint64_t *stamp = (const uint64_t *)this_cpu()->loaded_space;
	return stamp ? __atomic_load_n(stamp, __ATOMIC_ACQUIRE) : 0;
}
/* vm_space_stamp on cpu (the caller's), known to run a process's system call:
 * its space is the one loaded. */
static inline uint64_t vm_process_space_stamp(const struct cpu *cpu)
{
	return __atomic_load_n((const uint64_t *)cpu->loaded_space, __ATOMIC_ACQUIRE);
}
/* Returns an uncached kernel mapping of [phys, phys + length) of device memory
 * (any alignment), or NULL when length is 0 or mapping failed.  Mappings are
 * permanent. */
void *vm_map_mmio(uint64_t phys, uint64_t length);

/* The physmap alias of a RAM address (any frame, including the kernel image's,
 * which is writable there on purpose: the join-point weaver patches text). */
static inline void *phys_to_virt(uint64_t phys)
{
	return (void *)(PHYSMAP_BASE + phys);
}
#define VM_NO_PHYS ((uint64_t)-1)
/* Physical address behind a kernel pointer (physmap, image or any mapped
 * kernel address), or VM_NO_PHYS when it is not mapped. */
uint64_t virt_to_phys(const void *virt);

/* ---- Kernel heap --------------------------------------------------------- */

/* Returns size bytes, 16-byte aligned, or NULL (size 0 or no memory).
 * Up to 2048 bytes from size-class caches, larger from whole pages. */
void *kmalloc(size_t size);
/* kmalloc, zeroed. */
void *kzalloc(size_t size);
/* Frees a kmalloc block; NULL is ignored.  Panics on a double free or a
 * pointer kmalloc did not return. */
void kfree(void *ptr);
/* Resizes ptr keeping its contents.  Returns the (maybe moved) block, or NULL
 * with ptr untouched when memory ran out; krealloc(NULL, n) is kmalloc(n),
 * krealloc(p, 0) frees p and returns NULL. */
void *krealloc(void *ptr, size_t size);

struct kmem_cache;
/* Returns a cache of object_size-byte objects aligned to align (0 or a power
 * of two up to PAGE_SIZE), or NULL (bad arguments, no memory).  name is kept. */
struct kmem_cache *kmem_cache_create(const char *name, size_t object_size, size_t align);
/* Frees an empty cache.  Returns 0 or -EBUSY (objects still in use). */
int kmem_cache_destroy(struct kmem_cache *cache);
/* Returns an object (not zeroed), or NULL when memory ran out. */
void *kmem_cache_alloc(struct kmem_cache *cache);
/* Returns obj to cache; panics on a double free or an object of another cache. */
void kmem_cache_free(struct kmem_cache *cache, void *obj);
/* Gives the cache's empty slabs back to the frame allocator. */
void kmem_cache_shrink(struct kmem_cache *cache);

struct kmem_cache_stats {
	const char *name;
	size_t object_size;
	uint64_t objects_in_use;
	uint64_t slabs;
	uint64_t pages;
};
/* Fills *stats for cache. */
void kmem_cache_get_stats(struct kmem_cache *cache, struct kmem_cache_stats *stats);

/* Physically contiguous pages at their physmap address (not zeroed), aligned
 * to align bytes (power of two, at least PAGE_SIZE); NULL when none fit. */
void *mm_alloc_pages(size_t count, size_t align);
void mm_free_pages(void *addr, size_t count);

/* ---- Kernel stacks ------------------------------------------------------- */

struct kstack {
	uint64_t base; /* lowest mapped address; 0 when allocation failed */
	uint64_t top;  /* initial stack pointer (one past the highest byte) */
	size_t pages;
	uint32_t generation; /* which of its slot's stacks it is (kstack_free checks) */
};

/* Maps pages (1..63) of fresh frames as a stack with an unmapped guard area
 * below it.  Returns the stack, with base == 0 on failure (bad size, out of
 * memory or out of stack slots). */
struct kstack kstack_alloc(size_t pages);
/* Unmaps a stack and frees its frames; the stack must not be in use.  A
 * stack freed twice (after it was freed, while another CPU frees it, or
 * after its slot went to a newer stack) panics naming the slot, before
 * anything is unmapped. */
void kstack_free(struct kstack *stack);
/* True when address lies in the guard area of a kernel stack slot: a fault
 * there is a kernel stack overflow. */
bool kstack_is_guard(uint64_t address);

#endif
