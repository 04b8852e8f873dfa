/*
 * Object caches (a small slab allocator).  A slab is HEAP_BLOCK_ALIGN bytes of
 * physically contiguous, equally aligned memory: a header (magic, owning cache,
 * an allocation bitmap) followed by equal slots.  Any object finds its slab by
 * rounding its address down, so freeing needs no lookup table.
 *
 * Invariants, under the cache's lock:
 *  - a slab is on exactly one list: partial (some free), full or empty;
 *    at most one empty slab is kept, the others go back at once;
 *  - a bitmap bit is set exactly for the objects handed out, so a double free,
 *    a misaligned pointer or another cache's object is caught and panics;
 *  - free objects hold the poison byte; an allocation that finds it disturbed
 *    panics, naming the cache (a write after free).
 * Lock order: a cache's lock, then the frame allocator's.
 */
#include <stddef.h>
#include <stdint.h>

#include "console/console.h"
#include "cpu/spinlock.h"
#include "lib/align.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/internal.h"
#include "mm/mm.h"
#include "panic/panic.h"

#define SLAB_MAGIC  0x534c4142u /* "SLAB" */
#define SLAB_DEAD   0x44454144u
#define MAX_OBJECTS 1024
#define MIN_STRIDE  16
#define POISON      0x6b

struct slab {
	uint32_t magic;
	uint32_t in_use;
	struct kmem_cache *cache;
	struct slab *next;
	struct slab *prev;
	uint32_t hint; /* bitmap word to search first */
	uint64_t used[MAX_OBJECTS / 64];
};

struct kmem_cache {
	const char *name;
	size_t object_size;
	size_t stride;
	size_t first_offset;
	unsigned capacity;
	struct spinlock lock;
	struct slab *partial;
	struct slab *full;
	struct slab *empty;
	uint64_t objects_in_use;
	uint64_t slab_count;
	struct kmem_cache *next_cache;
};

static struct spinlock caches_lock = SPINLOCK_INIT("kmem.caches");
static struct kmem_cache *all_caches;
static struct kmem_cache cache_of_caches;

/* ---- Slab lists ------------------------------------------------------------- */

static void list_push(struct slab **head, struct slab *slab)
{
	slab->prev = NULL;
	slab->next = *head;
	if (*head)
		(*head)->prev = slab;
	*head = slab;
}

static void list_remove(struct slab **head, struct slab *slab)
{
	if (slab->prev)
		slab->prev->next = slab->next;
	else
		*head = slab->next;
	if (slab->next)
		slab->next->prev = slab->prev;
}

/* ---- Geometry and slabs ------------------------------------------------------ */

static int set_geometry(struct kmem_cache *cache, const char *name, size_t size, size_t align)
{
	if (align == 0)
		align = MIN_STRIDE;
	if (size == 0 || (align & (align - 1)) || align > PAGE_SIZE)
		return -EINVAL;
	if (align < MIN_STRIDE)
		align = MIN_STRIDE;
	cache->name = name;
	cache->object_size = size;
	cache->stride = align_up(size, align);
	cache->first_offset = align_up(sizeof(struct slab), align);
	if (cache->first_offset + cache->stride > HEAP_BLOCK_ALIGN)
		return -EINVAL;
	size_t capacity = (HEAP_BLOCK_ALIGN - cache->first_offset) / cache->stride;
	cache->capacity = capacity > MAX_OBJECTS ? MAX_OBJECTS : (unsigned)capacity;
	spin_init(&cache->lock, "kmem.cache");
	return 0;
}

static void *object_at(const struct kmem_cache *cache, struct slab *slab, unsigned index)
{
	return (char *)slab + cache->first_offset + (size_t)index * cache->stride;
}

static struct slab *slab_create(struct kmem_cache *cache)
{
	struct slab *slab = mm_alloc_pages(HEAP_BLOCK_PAGES, HEAP_BLOCK_ALIGN);
	if (!slab)
		return NULL;
	memset(slab, 0, sizeof *slab);
	memset((char *)slab + sizeof *slab, POISON, HEAP_BLOCK_ALIGN - sizeof *slab);
	slab->magic = SLAB_MAGIC;
	slab->cache = cache;
	cache->slab_count++;
	return slab;
}

static void slab_destroy(struct kmem_cache *cache, struct slab *slab)
{
	slab->magic = SLAB_DEAD;
	cache->slab_count--;
	mm_free_pages(slab, HEAP_BLOCK_PAGES);
}

/* ---- Allocation --------------------------------------------------------------- */

static unsigned take_free_index(const struct kmem_cache *cache, struct slab *slab)
{
	unsigned words = (cache->capacity + 63) / 64;
	for (unsigned n = 0; n < words; n++) {
		unsigned w = (slab->hint + n) % words;
		uint64_t free_bits = ~slab->used[w];
		if (w == words - 1 && cache->capacity % 64)
			free_bits &= (1UL << (cache->capacity % 64)) - 1;
		if (free_bits) {
			unsigned bit = (unsigned)__builtin_ctzll(free_bits);
			slab->used[w] |= 1UL << bit;
			slab->hint = w;
			return w * 64 + bit;
		}
	}
	panic("kmem: cache '%s' slab %p on the partial list is full", cache->name, (void *)slab);
}

static __attribute__((noreturn, cold)) void
written_after_free(const struct kmem_cache *cache, const unsigned char *obj, size_t from)
{
	size_t byte = from;
	while (byte < cache->object_size - 1 && obj[byte] == POISON)
		byte++;
	panic("kmem: object %p of cache '%s' was written after it was freed (byte %zu)",
	      (const void *)obj, cache->name, byte);
}

/* A word at a time (objects are at least 16-byte aligned), the tail a byte
 * at a time; the byte that differs is looked for only when a word does.
 * (A byte at a time took about 4 instructions a byte: 12,000 of a request
 * on a new connection, whose sockets and buffers are large objects.) */
static void check_poison(const struct kmem_cache *cache, const unsigned char *obj)
{
	const uint64_t pattern = 0x0101010101010101ull * POISON;
	size_t words = cache->object_size / 8;
	for (size_t i = 0; i < words; i++) {
		uint64_t word;
		__builtin_memcpy(&word, obj + i * 8, sizeof word);
		if (word != pattern)
			written_after_free(cache, obj, i * 8);
	}
	for (size_t i = words * 8; i < cache->object_size; i++)
		if (obj[i] != POISON)
			written_after_free(cache, obj, i);
}

/* A slab with a free object, on the partial list; NULL when out of memory. */
static struct slab *slab_with_room(struct kmem_cache *cache)
{
	struct slab *slab = cache->partial;
	if (slab)
		return slab;
	slab = cache->empty;
	if (slab)
		cache->empty = NULL;
	else
		slab = slab_create(cache);
	if (slab)
		list_push(&cache->partial, slab);
	return slab;
}

void *kmem_cache_alloc(struct kmem_cache *cache)
{
	uint64_t irq = spin_lock_irqsave(&cache->lock);
	struct slab *slab = slab_with_room(cache);
	if (!slab) {
		spin_unlock_irqrestore(&cache->lock, irq);
		return NULL;
	}
	void *obj = object_at(cache, slab, take_free_index(cache, slab));
	if (++slab->in_use == cache->capacity) {
		list_remove(&cache->partial, slab);
		list_push(&cache->full, slab);
	}
	cache->objects_in_use++;
	check_poison(cache, obj);
	spin_unlock_irqrestore(&cache->lock, irq);
	return obj;
}

/* ---- Release --------------------------------------------------------------------- */

static struct slab *slab_of(const void *obj)
{
	struct slab *slab = (struct slab *)((uintptr_t)obj & ~(HEAP_BLOCK_ALIGN - 1));
	if (!mm_pages_in_use(slab) || !mm_page_in_use_beside(obj, slab) ||
	    slab->magic != SLAB_MAGIC)
		return NULL;
	return slab;
}

struct kmem_cache *kmem_cache_of(const void *obj)
{
	struct slab *slab = slab_of(obj);
	return slab ? slab->cache : NULL;
}

size_t kmem_cache_object_size(const struct kmem_cache *cache)
{
	return cache->object_size;
}

const char *kmem_cache_get_name(const struct kmem_cache *cache)
{
	return cache->name;
}

/* The object's index in its slab; panics on anything but a live object. */
static unsigned checked_index(struct kmem_cache *cache, struct slab *slab, const void *obj)
{
	size_t offset = (size_t)((const char *)obj - (const char *)slab);
	if (offset < cache->first_offset || (offset - cache->first_offset) % cache->stride)
		panic("kmem: %p is not an object of cache '%s'", obj, cache->name);
	unsigned index = (unsigned)((offset - cache->first_offset) / cache->stride);
	if (index >= cache->capacity)
		panic("kmem: %p is not an object of cache '%s'", obj, cache->name);
	if (!(slab->used[index / 64] & (1UL << (index % 64))))
		panic("kmem: double free of %p in cache '%s'", obj, cache->name);
	return index;
}

static void slab_became_empty(struct kmem_cache *cache, struct slab *slab)
{
	list_remove(&cache->partial, slab);
	if (cache->empty)
		slab_destroy(cache, slab);
	else
		cache->empty = slab;
}

void kmem_cache_free(struct kmem_cache *cache, void *obj)
{
	struct slab *slab = slab_of(obj);
	if (!slab)
		panic("kmem: free of %p to cache '%s': not a heap object", obj, cache->name);
	if (slab->cache != cache)
		panic("kmem: object %p of cache '%s' freed to cache '%s'", obj, slab->cache->name,
		      cache->name);
	uint64_t irq = spin_lock_irqsave(&cache->lock);
	unsigned index = checked_index(cache, slab, obj);
	slab->used[index / 64] &= ~(1UL << (index % 64));
	memset(obj, POISON, cache->object_size);
	cache->objects_in_use--;
	if (slab->in_use-- == cache->capacity) {
		list_remove(&cache->full, slab);
		list_push(&cache->partial, slab);
	}
	if (slab->in_use == 0)
		slab_became_empty(cache, slab);
	spin_unlock_irqrestore(&cache->lock, irq);
}

void kmem_cache_shrink(struct kmem_cache *cache)
{
	uint64_t irq = spin_lock_irqsave(&cache->lock);
	if (cache->empty)
		slab_destroy(cache, cache->empty);
	cache->empty = NULL;
	spin_unlock_irqrestore(&cache->lock, irq);
}

/* ---- Creating and destroying caches ---------------------------------------------- */

static void link_cache(struct kmem_cache *cache)
{
	uint64_t irq = spin_lock_irqsave(&caches_lock);
	if (!cache_of_caches.name) {
		set_geometry(&cache_of_caches, "kmem_cache", sizeof(struct kmem_cache), 0);
		cache_of_caches.next_cache = all_caches;
		all_caches = &cache_of_caches;
	}
	if (cache) {
		cache->next_cache = all_caches;
		all_caches = cache;
	}
	spin_unlock_irqrestore(&caches_lock, irq);
}

struct kmem_cache *kmem_cache_create(const char *name, size_t object_size, size_t align)
{
	struct kmem_cache probe;
	if (set_geometry(&probe, name, object_size, align))
		return NULL;
	link_cache(NULL);
	struct kmem_cache *cache = kmem_cache_alloc(&cache_of_caches);
	if (!cache)
		return NULL;
	memset(cache, 0, sizeof *cache);
	set_geometry(cache, name, object_size, align);
	link_cache(cache);
	return cache;
}

int kmem_cache_destroy(struct kmem_cache *cache)
{
	uint64_t irq = spin_lock_irqsave(&caches_lock);
	if (cache->objects_in_use) {
		spin_unlock_irqrestore(&caches_lock, irq);
		return -EBUSY;
	}
	struct kmem_cache **link = &all_caches;
	while (*link != cache)
		link = &(*link)->next_cache;
	*link = cache->next_cache;
	spin_unlock_irqrestore(&caches_lock, irq);
	kmem_cache_shrink(cache);
	kmem_cache_free(&cache_of_caches, cache);
	return 0;
}

/* ---- Statistics ------------------------------------------------------------------- */

void kmem_cache_get_stats(struct kmem_cache *cache, struct kmem_cache_stats *stats)
{
	uint64_t irq = spin_lock_irqsave(&cache->lock);
	stats->name = cache->name;
	stats->object_size = cache->object_size;
	stats->objects_in_use = cache->objects_in_use;
	stats->slabs = cache->slab_count;
	stats->pages = cache->slab_count * HEAP_BLOCK_PAGES;
	spin_unlock_irqrestore(&cache->lock, irq);
}

void kmem_cache_print_all(void)
{
	uint64_t irq = spin_lock_irqsave(&caches_lock);
	for (struct kmem_cache *cache = all_caches; cache; cache = cache->next_cache) {
		struct kmem_cache_stats s;
		kmem_cache_get_stats(cache, &s);
		pr_info("  %-16s %6zu B  %8lu in use  %5lu slabs  %6lu KiB\n", s.name,
			s.object_size, s.objects_in_use, s.slabs, s.pages * 4);
	}
	spin_unlock_irqrestore(&caches_lock, irq);
}
