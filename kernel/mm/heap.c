/*
 * kmalloc: power-of-two size classes from 16 to 2048 bytes, each an object
 * cache, and whole pages for anything larger.  A large block is a run of
 * frames aligned like a slab, opening with a header (magic, page count, size),
 * so kfree tells the two apart by the magic at the rounded-down address and
 * refuses anything else with a panic naming the pointer.
 *
 * Every block is at least 16-byte aligned.  The size classes are created once
 * by heap_init; kmalloc before that is a bug and panics.
 *
 * kmalloc and kfree never sleep (interrupt handlers use them): a cache's
 * spinlock with interrupts off, the frame allocator's the same, nothing that
 * waits.  So their join points are _NOSLEEP, the fast path.
 */
#include <stddef.h>
#include <stdint.h>

#include "console/console.h"
#include "joinpoint/joinpoint.h"
#include "lib/string.h"
#include "mm/internal.h"
#include "mm/mm.h"
#include "panic/panic.h"

#define SMALLEST_CLASS_SHIFT 4 /* 16 bytes */
#define CLASS_COUNT          8 /* 16 .. 2048 */
#define LARGEST_CLASS        (1UL << (SMALLEST_CLASS_SHIFT + CLASS_COUNT - 1))
#define LARGE_MAGIC          0x4c415247u /* "LARG" */
#define LARGE_DEAD           0x44454144u

struct large_header {
	uint32_t magic;
	uint32_t pages;
	size_t size;
	uint64_t reserved[6]; /* keeps the block 64-byte aligned */
};

static struct kmem_cache *classes[CLASS_COUNT];
static const char *const class_names[CLASS_COUNT] = {
    "kmalloc-16",  "kmalloc-32",  "kmalloc-64",   "kmalloc-128",
    "kmalloc-256", "kmalloc-512", "kmalloc-1024", "kmalloc-2048",
};
static uint64_t large_blocks;
static uint64_t large_pages;

void heap_init(void)
{
	for (unsigned i = 0; i < CLASS_COUNT; i++) {
		classes[i] =
		    kmem_cache_create(class_names[i], 1UL << (SMALLEST_CLASS_SHIFT + i), 0);
		if (!classes[i])
			panic("kmalloc: cannot create cache %s", class_names[i]);
	}
}

static unsigned class_index(size_t size)
{
	unsigned index = 0;
	while ((1UL << (SMALLEST_CLASS_SHIFT + index)) < size)
		index++;
	return index;
}

static void *large_alloc(size_t size)
{
	size_t pages = (size + sizeof(struct large_header) + PAGE_SIZE - 1) / PAGE_SIZE;
	if (size > (1UL << 40))
		return NULL;
	struct large_header *header = mm_alloc_pages(pages, HEAP_BLOCK_ALIGN);
	if (!header)
		return NULL;
	header->magic = LARGE_MAGIC;
	header->pages = (uint32_t)pages;
	header->size = size;
	__atomic_fetch_add(&large_blocks, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&large_pages, pages, __ATOMIC_RELAXED);
	return header + 1;
}

JOINPOINT_DEFINE_NOSLEEP_AS(mm, kmalloc, kmalloc, void *, size_t, size)
{
	if (size == 0)
		return NULL;
	if (size > LARGEST_CLASS)
		return large_alloc(size);
	ASSERT(classes[0]);
	return kmem_cache_alloc(classes[class_index(size)]);
}

void *kzalloc(size_t size)
{
	void *ptr = kmalloc(size);
	if (ptr)
		memset(ptr, 0, size);
	return ptr;
}

/* The live large block ptr opens, or NULL when ptr is no large block. */
static struct large_header *large_of(void *ptr)
{
	struct large_header *header =
	    (struct large_header *)((uintptr_t)ptr & ~(HEAP_BLOCK_ALIGN - 1));
	if (!mm_pages_in_use(header) || !mm_page_in_use_beside(ptr, header))
		return NULL;
	if (header->magic == LARGE_DEAD && (void *)(header + 1) == ptr)
		panic("kfree: double free of %p (large block)", ptr);
	if (header->magic != LARGE_MAGIC)
		return NULL;
	if ((void *)(header + 1) != ptr)
		panic("kfree: %p points inside the large block at %p", ptr, (void *)(header + 1));
	return header;
}

static void large_free(struct large_header *header)
{
	uint32_t pages = header->pages;
	header->magic = LARGE_DEAD;
	__atomic_fetch_sub(&large_blocks, 1, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&large_pages, pages, __ATOMIC_RELAXED);
	mm_free_pages(header, pages);
}

static bool is_size_class(const struct kmem_cache *cache)
{
	for (unsigned i = 0; i < CLASS_COUNT; i++)
		if (classes[i] == cache)
			return true;
	return false;
}

JOINPOINT_DEFINE_VOID_NOSLEEP_AS(mm, kfree, kfree, void *, ptr)
{
	if (!ptr)
		return;
	struct kmem_cache *cache = kmem_cache_of(ptr);
	if (cache) {
		if (!is_size_class(cache))
			panic("kfree: %p belongs to cache '%s', not to kmalloc", ptr,
			      kmem_cache_get_name(cache));
		kmem_cache_free(cache, ptr);
		return;
	}
	struct large_header *header = large_of(ptr);
	if (!header)
		panic("kfree: %p was not returned by kmalloc", ptr);
	large_free(header);
}

/* Bytes the block at ptr can hold. */
static size_t block_capacity(void *ptr)
{
	struct kmem_cache *cache = kmem_cache_of(ptr);
	if (cache)
		return kmem_cache_object_size(cache);
	struct large_header *header = large_of(ptr);
	if (!header)
		panic("krealloc: %p was not returned by kmalloc", ptr);
	return header->pages * PAGE_SIZE - sizeof *header;
}

void *krealloc(void *ptr, size_t size)
{
	if (!ptr)
		return kmalloc(size);
	if (size == 0) {
		kfree(ptr);
		return NULL;
	}
	size_t capacity = block_capacity(ptr);
	if (size <= capacity)
		return ptr;
	void *fresh = kmalloc(size);
	if (!fresh)
		return NULL;
	memcpy(fresh, ptr, capacity);
	kfree(ptr);
	return fresh;
}

void heap_print_stats(void)
{
	pr_info("heap: %lu large block(s) in %lu page(s); caches:\n",
		__atomic_load_n(&large_blocks, __ATOMIC_RELAXED),
		__atomic_load_n(&large_pages, __ATOMIC_RELAXED));
	kmem_cache_print_all();
}
