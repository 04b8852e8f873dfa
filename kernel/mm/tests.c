/*
 * The mm suite: frames, address spaces, the heap and kernel stacks on the
 * running kernel.  Every case that allocates checks that the frame count
 * comes back exactly; where a cache keeps one empty slab (or a page-table
 * level stays allocated) the case warms up once before measuring.  Nothing
 * here provokes a fault: permissions are checked through vm_translate.
 */
#include <stdint.h>

#include "boot/bootinfo.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"

#define FRAME_BATCH      64
#define USER_TEST_VIRT   0x0000000040000000UL
#define KERNEL_TEST_VIRT (VM_MMIO_BASE + VM_MMIO_SIZE - 16 * PAGE_SIZE)

static const char rodata_probe[] = "read-only";
static uint64_t data_probe = 1;

static void frames_round_trip(struct ktest *t)
{
	static uint64_t frames[FRAME_BATCH];
	uint64_t free_before = pmm_count_free();
	for (unsigned i = 0; i < FRAME_BATCH; i++) {
		frames[i] = pmm_alloc_frame();
		ASSERT_NE(t, frames[i], 0);
		EXPECT_EQ(t, frames[i] % PAGE_SIZE, 0);
		memset(phys_to_virt(frames[i]), (int)i, PAGE_SIZE);
	}
	EXPECT_EQ(t, pmm_count_free(), free_before - FRAME_BATCH);
	for (unsigned i = 0; i < FRAME_BATCH; i++) {
		const uint8_t *bytes = phys_to_virt(frames[i]);
		EXPECT_TRUE(t, bytes[0] == (uint8_t)i && bytes[PAGE_SIZE - 1] == (uint8_t)i);
	}
	for (unsigned i = 0; i < FRAME_BATCH; i++)
		pmm_free_frame(frames[i]);
	EXPECT_EQ(t, pmm_count_free(), free_before);
	EXPECT_TRUE(t, pmm_count_free() < pmm_count_total());
}

static void contiguous_runs_are_aligned(struct ktest *t)
{
	static const uint64_t aligns[] = {PAGE_SIZE, 64 * 1024, LARGE_PAGE_SIZE};
	uint64_t free_before = pmm_count_free();
	for (unsigned i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
		uint64_t run = pmm_alloc_contiguous(5, aligns[i]);
		ASSERT_NE(t, run, 0);
		EXPECT_EQ(t, run % aligns[i], 0);
		EXPECT_EQ(t, pmm_count_free(), free_before - 5);
		pmm_free_contiguous(run, 5);
	}
	EXPECT_EQ(t, pmm_alloc_contiguous(4, 3 * PAGE_SIZE), 0);
	EXPECT_EQ(t, pmm_alloc_contiguous(0, PAGE_SIZE), 0);
	EXPECT_EQ(t, pmm_alloc_contiguous(pmm_count_total() + 1, PAGE_SIZE), 0);
	EXPECT_EQ(t, pmm_count_free(), free_before);
}

static void exercise_user_space(struct ktest *t, struct address_space *space, uint64_t frame)
{
	uint64_t phys = 0;
	unsigned flags = 0;
	EXPECT_EQ(t, vm_map(space, USER_TEST_VIRT, frame, VM_WRITE | VM_USER), 0);
	EXPECT_EQ(t, vm_map(space, USER_TEST_VIRT, frame, VM_WRITE), -EEXIST);
	EXPECT_EQ(t, vm_map(space, USER_TEST_VIRT + 1, frame, 0), -EINVAL);
	EXPECT_EQ(t, vm_map(space, 0x0000800000000000UL, frame, 0), -EINVAL);
	EXPECT_EQ(t, vm_map(space, PHYSMAP_BASE + frame, frame, 0), -EINVAL);
	EXPECT_EQ(t, vm_translate(space, USER_TEST_VIRT + 0x123, &phys, &flags), 0);
	EXPECT_EQ(t, phys, frame + 0x123);
	EXPECT_EQ(t, flags, VM_WRITE | VM_USER);
	EXPECT_EQ(t, vm_protect(space, USER_TEST_VIRT, VM_USER | VM_EXEC), 0);
	EXPECT_EQ(t, vm_translate(space, USER_TEST_VIRT, NULL, &flags), 0);
	EXPECT_EQ(t, flags, VM_USER | VM_EXEC);
	EXPECT_EQ(t, vm_unmap(space, USER_TEST_VIRT), (int64_t)frame);
	EXPECT_EQ(t, vm_translate(space, USER_TEST_VIRT, &phys, NULL), -ENOENT);
	EXPECT_EQ(t, vm_unmap(space, USER_TEST_VIRT), -ENOENT);
	EXPECT_EQ(t, vm_protect(space, USER_TEST_VIRT, 0), -ENOENT);
	EXPECT_EQ(t, vm_translate(space, 0x0000900000000000UL, &phys, NULL), -EINVAL);
	/* The kernel half is shared: the kernel's text is visible here too. */
	EXPECT_EQ(t, vm_translate(space, (uint64_t)frames_round_trip, &phys, NULL), 0);
}

static void space_map_unmap_protect_translate(struct ktest *t)
{
	vm_space_destroy(vm_space_create()); /* warm the heap's cache */
	uint64_t free_before = pmm_count_free();
	struct address_space *space = vm_space_create();
	ASSERT_TRUE(t, space != NULL);
	uint64_t frame = pmm_alloc_frame();
	ASSERT_NE(t, frame, 0);
	exercise_user_space(t, space, frame);
	vm_space_activate(space);
	vm_space_activate(vm_kernel_space());
	pmm_free_frame(frame);
	vm_space_destroy(space);
	EXPECT_EQ(t, pmm_count_free(), free_before);
}

static void kernel_image_permissions(struct ktest *t)
{
	struct address_space *kernel = vm_kernel_space();
	unsigned flags = 0;
	uint64_t phys = 0;
	EXPECT_EQ(t, vm_translate(kernel, (uint64_t)frames_round_trip, &phys, &flags), 0);
	EXPECT_EQ(t, flags & (VM_WRITE | VM_EXEC), VM_EXEC);
	EXPECT_EQ(t, vm_translate(kernel, (uint64_t)rodata_probe, NULL, &flags), 0);
	EXPECT_EQ(t, flags & (VM_WRITE | VM_EXEC), 0);
	EXPECT_EQ(t, vm_translate(kernel, (uint64_t)&data_probe, NULL, &flags), 0);
	EXPECT_EQ(t, flags & (VM_WRITE | VM_EXEC), VM_WRITE);
	/* The physmap alias of text is writable (the weaver patches through it). */
	EXPECT_EQ(t, virt_to_phys((const void *)frames_round_trip), phys);
	EXPECT_EQ(t, vm_translate(kernel, (uint64_t)phys_to_virt(phys), NULL, &flags), 0);
	EXPECT_EQ(t, flags & (VM_WRITE | VM_EXEC), VM_WRITE);
	/* No identity map of low memory, and no user access to the kernel half. */
	EXPECT_EQ(t, vm_translate(kernel, KERNEL_PHYS, NULL, NULL), -ENOENT);
	EXPECT_EQ(t, vm_protect(kernel, (uint64_t)rodata_probe & ~(PAGE_SIZE - 1), VM_USER),
		  -EINVAL);
}

static void protect_makes_page_read_only(struct ktest *t)
{
	struct address_space *kernel = vm_kernel_space();
	uint64_t frame = pmm_alloc_frame();
	ASSERT_NE(t, frame, 0);
	unsigned flags = 0;
	ASSERT_EQ(t, vm_map(kernel, KERNEL_TEST_VIRT, frame, VM_WRITE), 0);
	*(volatile uint64_t *)KERNEL_TEST_VIRT = 0x5a5a;
	EXPECT_EQ(t, vm_protect(kernel, KERNEL_TEST_VIRT, VM_READ), 0);
	EXPECT_EQ(t, vm_translate(kernel, KERNEL_TEST_VIRT, NULL, &flags), 0);
	EXPECT_EQ(t, flags & VM_WRITE, 0);
	EXPECT_EQ(t, *(volatile uint64_t *)KERNEL_TEST_VIRT, 0x5a5a);
	EXPECT_EQ(t, vm_unmap(kernel, KERNEL_TEST_VIRT), (int64_t)frame);
	pmm_free_frame(frame);
}

static void physmap_and_mmio(struct ktest *t)
{
	struct address_space *kernel = vm_kernel_space();
	uint64_t frame = pmm_alloc_frame();
	ASSERT_NE(t, frame, 0);
	unsigned flags = 0;
	uint64_t phys = 0;
	EXPECT_EQ(t, vm_translate(kernel, (uint64_t)phys_to_virt(frame), &phys, &flags), 0);
	EXPECT_EQ(t, phys, frame);
	EXPECT_EQ(t, flags & (VM_WRITE | VM_EXEC), VM_WRITE);
	EXPECT_EQ(t, virt_to_phys(phys_to_virt(frame)), frame);
	pmm_free_frame(frame);

	uint8_t *mmio = vm_map_mmio(0xfee00020, 0x10);
	ASSERT_TRUE(t, mmio != NULL);
	EXPECT_EQ(t, (uint64_t)mmio % PAGE_SIZE, 0x20);
	EXPECT_EQ(t, vm_translate(kernel, (uint64_t)mmio, &phys, &flags), 0);
	EXPECT_EQ(t, phys, 0xfee00020);
	EXPECT_TRUE(t, (flags & VM_NOCACHE) && (flags & VM_WRITE) && !(flags & VM_EXEC));
	EXPECT_EQ(t, virt_to_phys(mmio), 0xfee00020);
	EXPECT_TRUE(t, vm_map_mmio(0x1000, 0) == NULL);
}

/* Every usable region, above 4 GiB too, is in the physmap, end to end. */
static void physmap_covers_all_ram(struct ktest *t)
{
	const struct boot_info *boot = bootinfo();
	for (unsigned i = 0; i < boot->region_count; i++) {
		const struct boot_region *r = &boot->regions[i];
		if (r->type != BOOT_REGION_USABLE || r->length < PAGE_SIZE)
			continue;
		uint64_t ends[2] = {(r->base + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1),
				    ((r->base + r->length) & ~(PAGE_SIZE - 1)) - PAGE_SIZE};
		for (unsigned e = 0; e < 2; e++) {
			uint64_t phys = 0;
			unsigned flags = 0;
			EXPECT_EQ(
			    t,
			    vm_translate(vm_kernel_space(), PHYSMAP_BASE + ends[e], &phys, &flags),
			    0);
			EXPECT_EQ(t, phys, ends[e]);
			EXPECT_EQ(t, flags & (VM_WRITE | VM_EXEC), VM_WRITE);
		}
	}
}

static uint8_t pattern_of(size_t size, size_t i)
{
	return (uint8_t)(size * 7 + i);
}

static const size_t heap_sizes[] = {1,    8,    15,   16,   17,   31,    64,   100,  128,
				    255,  256,  500,  512,  777,  1024,  1500, 2047, 2048,
				    2049, 4000, 4096, 5000, 9000, 16384, 70000};
#define HEAP_SIZE_COUNT (sizeof heap_sizes / sizeof heap_sizes[0])
#define HEAP_COPIES     12

static void heap_round(struct ktest *t)
{
	static uint8_t *blocks[HEAP_SIZE_COUNT][HEAP_COPIES];
	for (size_t c = 0; c < HEAP_COPIES; c++) {
		for (size_t s = 0; s < HEAP_SIZE_COUNT; s++) {
			blocks[s][c] = kmalloc(heap_sizes[s]);
			ASSERT_TRUE(t, blocks[s][c] != NULL);
			EXPECT_EQ(t, (uint64_t)blocks[s][c] % 16, 0);
			for (size_t i = 0; i < heap_sizes[s]; i++)
				blocks[s][c][i] = pattern_of(heap_sizes[s] + c, i);
		}
	}
	for (size_t c = 0; c < HEAP_COPIES; c++) {
		for (size_t s = 0; s < HEAP_SIZE_COUNT; s++) {
			bool intact = true;
			for (size_t i = 0; i < heap_sizes[s]; i++)
				intact &= blocks[s][c][i] == pattern_of(heap_sizes[s] + c, i);
			EXPECT_TRUE(t, intact);
			kfree(blocks[s][c]);
		}
	}
}

static void kmalloc_many_sizes(struct ktest *t)
{
	heap_round(t); /* the first round leaves one empty slab per size class */
	uint64_t free_before = pmm_count_free();
	heap_round(t);
	EXPECT_EQ(t, pmm_count_free(), free_before);
	EXPECT_TRUE(t, kmalloc(0) == NULL);
	kfree(NULL);

	uint8_t *zeroed = kzalloc(300);
	ASSERT_TRUE(t, zeroed != NULL);
	bool all_zero = true;
	for (size_t i = 0; i < 300; i++)
		all_zero &= zeroed[i] == 0;
	EXPECT_TRUE(t, all_zero);
	memcpy(zeroed, "keep", 5);
	uint8_t *grown = krealloc(zeroed, 6000);
	ASSERT_TRUE(t, grown != NULL);
	EXPECT_EQ(t, memcmp(grown, "keep", 5), 0);
	kfree(grown);
	EXPECT_EQ(t, pmm_count_free(), free_before);
}

static void cache_reuses_objects(struct ktest *t)
{
	static void *objects[300];
	uint64_t free_before = pmm_count_free();
	struct kmem_cache *cache = kmem_cache_create("mm-test", 100, 64);
	ASSERT_TRUE(t, cache != NULL);
	void *first = kmem_cache_alloc(cache);
	ASSERT_TRUE(t, first != NULL);
	EXPECT_EQ(t, (uint64_t)first % 64, 0);
	kmem_cache_free(cache, first);
	EXPECT_TRUE(t, kmem_cache_alloc(cache) == first);
	kmem_cache_free(cache, first);

	for (unsigned i = 0; i < 300; i++) {
		objects[i] = kmem_cache_alloc(cache);
		ASSERT_TRUE(t, objects[i] != NULL);
		memset(objects[i], 0xc3, 100);
	}
	struct kmem_cache_stats stats;
	kmem_cache_get_stats(cache, &stats);
	EXPECT_EQ(t, stats.objects_in_use, 300);
	EXPECT_TRUE(t, stats.slabs >= 2);
	EXPECT_EQ(t, kmem_cache_destroy(cache), -EBUSY);
	for (unsigned i = 0; i < 300; i++)
		kmem_cache_free(cache, objects[i]);
	kmem_cache_get_stats(cache, &stats);
	EXPECT_EQ(t, stats.objects_in_use, 0);
	EXPECT_TRUE(t, stats.slabs <= 1);
	kmem_cache_shrink(cache);
	kmem_cache_get_stats(cache, &stats);
	EXPECT_EQ(t, stats.pages, 0);
	EXPECT_EQ(t, kmem_cache_destroy(cache), 0);
	EXPECT_EQ(t, pmm_count_free(), free_before);
	EXPECT_TRUE(t, kmem_cache_create("bad", 16, 3) == NULL);
	EXPECT_TRUE(t, kmem_cache_create("bad", 0, 0) == NULL);
}

static void stack_alloc_free(struct ktest *t)
{
	struct kstack warm = kstack_alloc(1); /* the region's page tables stay */
	ASSERT_NE(t, warm.base, 0);
	kstack_free(&warm);
	uint64_t free_before = pmm_count_free();
	struct kstack stack = kstack_alloc(4);
	ASSERT_NE(t, stack.base, 0);
	EXPECT_EQ(t, stack.top - stack.base, 4 * PAGE_SIZE);
	EXPECT_EQ(t, pmm_count_free(), free_before - 4);
	((volatile uint64_t *)stack.base)[0] = 1;
	((volatile uint64_t *)stack.top)[-1] = 2;
	EXPECT_TRUE(t, kstack_is_guard(stack.base - 1));
	EXPECT_TRUE(t, kstack_is_guard(stack.base - PAGE_SIZE));
	EXPECT_FALSE(t, kstack_is_guard(stack.base));
	EXPECT_FALSE(t, kstack_is_guard(stack.top - 1));
	EXPECT_FALSE(t, kstack_is_guard((uint64_t)&free_before));
	EXPECT_EQ(t, vm_translate(vm_kernel_space(), stack.base - PAGE_SIZE, NULL, NULL), -ENOENT);
	uint64_t guard = stack.base - PAGE_SIZE;
	kstack_free(&stack);
	EXPECT_EQ(t, stack.base, 0);
	EXPECT_FALSE(t, kstack_is_guard(guard));
	EXPECT_EQ(t, pmm_count_free(), free_before);
	EXPECT_EQ(t, kstack_alloc(0).base, 0);
	EXPECT_EQ(t, kstack_alloc(64).base, 0);
}

KTEST_SUITE(mm, KTEST_CASE(frames_round_trip), KTEST_CASE(contiguous_runs_are_aligned),
	    KTEST_CASE(space_map_unmap_protect_translate), KTEST_CASE(kernel_image_permissions),
	    KTEST_CASE(protect_makes_page_read_only), KTEST_CASE(physmap_and_mmio),
	    KTEST_CASE(physmap_covers_all_ram), KTEST_CASE(kmalloc_many_sizes),
	    KTEST_CASE(cache_reuses_objects), KTEST_CASE(stack_alloc_free));
