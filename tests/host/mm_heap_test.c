// host-test-sources: kernel/mm/cache.c kernel/mm/heap.c tests/host/shim/mm_pages_shim.c tests/host/shim/mm_shim.c
/*
 * kmalloc and object caches on heap-backed pages: contents survive, blocks
 * are aligned, pages come back, statistics are exact, and every misuse the
 * heap promises to catch (double free, foreign or interior pointers, the
 * wrong cache, a write after free) panics instead of corrupting memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/errno.h"
#include "mm/internal.h"
#include "mm/mm.h"
#include "mm_shim.h"

static const size_t sizes[] = {1,    7,    16,   17,   33,   64,    65,    127,   128,  200,
			       256,  300,  511,  512,  513,  1000,  1024,  2000,  2048, 2049,
			       3000, 4000, 4096, 5000, 8192, 12000, 65536, 200000};
#define SIZE_COUNT (sizeof sizes / sizeof sizes[0])
#define COPIES     40

static uint8_t pattern(size_t size, size_t copy, size_t i)
{
	return (uint8_t)(size * 13 + copy * 7 + i);
}

static void many_sizes_round(void)
{
	static uint8_t *blocks[SIZE_COUNT][COPIES];
	for (size_t c = 0; c < COPIES; c++) {
		for (size_t s = 0; s < SIZE_COUNT; s++) {
			uint8_t *b = kmalloc(sizes[s]);
			EXPECT(b && (uintptr_t)b % 16 == 0);
			for (size_t i = 0; i < sizes[s]; i++)
				b[i] = pattern(sizes[s], c, i);
			blocks[s][c] = b;
		}
	}
	for (size_t c = 0; c < COPIES; c++) {
		for (size_t s = 0; s < SIZE_COUNT; s++) {
			for (size_t i = 0; i < sizes[s]; i++)
				if (blocks[s][c][i] != pattern(sizes[s], c, i)) {
					EXPECT(!"block contents changed");
					break;
				}
			kfree(blocks[s][c]);
		}
	}
}

static void kmalloc_many_sizes(void)
{
	many_sizes_round();
	size_t pages = mm_shim_pages_live();
	many_sizes_round();
	EXPECT(mm_shim_pages_live() == pages);
	EXPECT(kmalloc(0) == NULL);
	kfree(NULL);
	uint8_t *z = kzalloc(1500);
	size_t zeros = 0;
	for (size_t i = 0; i < 1500; i++)
		zeros += z[i] == 0;
	EXPECT(zeros == 1500);
	kfree(z);
}

static void krealloc_keeps_contents(void)
{
	char *p = krealloc(NULL, 10);
	strcpy(p, "123456789");
	EXPECT(krealloc(p, 16) == p); /* fits the 16-byte class */
	p = krealloc(p, 3000);
	EXPECT(p && strcmp(p, "123456789") == 0);
	p = krealloc(p, 100000);
	EXPECT(p && strcmp(p, "123456789") == 0);
	EXPECT(krealloc(p, 0) == NULL);
}

static void cache_alignment_and_stats(void)
{
	size_t pages = mm_shim_pages_live();
	struct kmem_cache *caches[3] = {kmem_cache_create("a64", 40, 64),
					kmem_cache_create("a256", 300, 256),
					kmem_cache_create("a4096", 5000, 4096)};
	size_t aligns[3] = {64, 256, 4096};
	static void *objects[3][500];
	for (int c = 0; c < 3; c++) {
		EXPECT(caches[c] != NULL);
		for (int i = 0; i < 500; i++) {
			objects[c][i] = kmem_cache_alloc(caches[c]);
			EXPECT(objects[c][i] && (uintptr_t)objects[c][i] % aligns[c] == 0);
		}
		struct kmem_cache_stats stats;
		kmem_cache_get_stats(caches[c], &stats);
		EXPECT(stats.objects_in_use == 500 && stats.pages == stats.slabs * 4);
		EXPECT(kmem_cache_destroy(caches[c]) == -EBUSY);
	}
	for (int c = 0; c < 3; c++) {
		for (int i = 499; i >= 0; i--)
			kmem_cache_free(caches[c], objects[c][i]);
		EXPECT(kmem_cache_destroy(caches[c]) == 0);
	}
	EXPECT(mm_shim_pages_live() == pages);
	EXPECT(kmem_cache_create("too-big", 16384, 0) == NULL);
	EXPECT(kmem_cache_create("odd-align", 32, 24) == NULL);
	EXPECT(kmem_cache_create("huge-align", 32, 8192) == NULL);
}

static void cache_reuses_freed_object(void)
{
	struct kmem_cache *cache = kmem_cache_create("reuse", 24, 0);
	void *first = kmem_cache_alloc(cache);
	kmem_cache_free(cache, first);
	EXPECT(kmem_cache_alloc(cache) == first);
	kmem_cache_free(cache, first);
	EXPECT(kmem_cache_destroy(cache) == 0);
}

static void misuse_panics(void)
{
	struct kmem_cache *cache = kmem_cache_create("victim", 48, 0);
	struct kmem_cache *other = kmem_cache_create("other", 48, 0);
	char *obj = kmem_cache_alloc(cache);
	char on_stack[32];
	void *from_libc = malloc(64);

	EXPECT(MM_SHIM_PANICS(kmem_cache_free(other, obj)));
	EXPECT(MM_SHIM_PANICS(kmem_cache_free(cache, obj + 8)));
	EXPECT(MM_SHIM_PANICS(kfree(obj))); /* not a kmalloc block */
	kmem_cache_free(cache, obj);
	EXPECT(MM_SHIM_PANICS(kmem_cache_free(cache, obj)));
	EXPECT(strstr(mm_shim_last_panic, "double free") != NULL);
	EXPECT(MM_SHIM_PANICS(kfree(on_stack)));
	EXPECT(MM_SHIM_PANICS(kfree(from_libc)));

	char *small = kmalloc(100);
	kfree(small);
	EXPECT(MM_SHIM_PANICS(kfree(small)));
	char *large = kmalloc(10000);
	EXPECT(MM_SHIM_PANICS(kfree(large + 64)));
	kfree(large);
	EXPECT(MM_SHIM_PANICS(kfree(large)));

	/* A write after free is found when the object is handed out again. */
	char *stale = kmem_cache_alloc(cache);
	kmem_cache_free(cache, stale);
	stale[5] = 1;
	EXPECT(MM_SHIM_PANICS(kmem_cache_alloc(cache)));
	EXPECT(strstr(mm_shim_last_panic, "written after") != NULL);
	EXPECT(strstr(mm_shim_last_panic, "(byte 5)") != NULL);
	free(from_libc);
	/* The lock is free again after the caught panics; the object the
	 * panicking allocation took counts as allocated. */
	memset(stale, 0x6b, 48);
	kmem_cache_free(cache, stale);
	EXPECT(kmem_cache_alloc(cache) == stale);
	kmem_cache_free(cache, stale);
	EXPECT(kmem_cache_destroy(other) == 0);
	EXPECT(kmem_cache_destroy(cache) == 0);
}

/* Random allocations and frees with contents checked on free. */
/* A write after free is named by its byte, in a whole word of the object or
 * in the bytes after its last whole word. */
static void write_after_free_names_the_byte(void)
{
	struct kmem_cache *cache = kmem_cache_create("odd-size", 45, 0);
	const size_t bytes[] = {0, 21, 39, 40, 44};
	for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
		char *stale = kmem_cache_alloc(cache);
		kmem_cache_free(cache, stale);
		stale[bytes[i]] = 0;
		EXPECT(MM_SHIM_PANICS(kmem_cache_alloc(cache)));
		char expected[32];
		snprintf(expected, sizeof expected, "(byte %zu)", bytes[i]);
		EXPECT(strstr(mm_shim_last_panic, expected) != NULL);
		memset(stale, 0x6b, 45); /* the panicking allocation took it */
		kmem_cache_free(cache, stale);
	}
	char *object = kmem_cache_alloc(cache);
	kmem_cache_free(cache, object);
	EXPECT(kmem_cache_destroy(cache) == 0);
}

static void random_stress(void)
{
	enum { SLOTS = 512 };
	static uint8_t *ptrs[SLOTS];
	static size_t lengths[SLOTS];
	size_t pages = mm_shim_pages_live();
	srand(99);
	for (int step = 0; step < 100000; step++) {
		int slot = rand() % SLOTS;
		if (ptrs[slot]) {
			for (size_t i = 0; i < lengths[slot]; i += 61)
				if (ptrs[slot][i] != (uint8_t)(slot + i)) {
					EXPECT(!"contents changed");
					break;
				}
			kfree(ptrs[slot]);
			ptrs[slot] = NULL;
		} else {
			lengths[slot] =
			    rand() % 4 ? (size_t)rand() % 2100 + 1 : (size_t)rand() % 20000 + 1;
			ptrs[slot] = kmalloc(lengths[slot]);
			for (size_t i = 0; i < lengths[slot]; i += 61)
				ptrs[slot][i] = (uint8_t)(slot + i);
		}
	}
	for (int slot = 0; slot < SLOTS; slot++)
		kfree(ptrs[slot]);
	EXPECT(mm_shim_pages_live() <= pages + 8 * HEAP_BLOCK_PAGES); /* one empty slab per class */
	heap_print_stats();
}

static const struct mm_test_case cases[] = {
    {"kmalloc_many_sizes", kmalloc_many_sizes},
    {"krealloc_keeps_contents", krealloc_keeps_contents},
    {"cache_alignment_and_stats", cache_alignment_and_stats},
    {"cache_reuses_freed_object", cache_reuses_freed_object},
    {"misuse_panics", misuse_panics},
    {"write_after_free_names_the_byte", write_after_free_names_the_byte},
    {"random_stress", random_stress},
};

int main(void)
{
	heap_init();
	return mm_test_main(cases, sizeof cases / sizeof cases[0]);
}
