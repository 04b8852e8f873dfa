/*
 * The proc_tables suite: munmap gives back the page tables it empties.  A
 * process that maps, touches and unmaps one page at 2 MiB strides needs a
 * new page table each round; once unmapped, nothing is left in it, and the
 * free frame count must come back to where it was, not fall by a table a
 * round.
 */
#include "arch/x86_64/traps.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "mm/mm.h"
#include "proc/internal.h"

#define ROUNDS       1000
#define STRIDE       (2UL << 20)
#define FRAMES_SLACK 16 /* the heap may take or give back a slab meanwhile */

static void unmapped_strides_give_their_tables_back(struct ktest *t)
{
	struct proc_memory *m = memory_create();
	ASSERT_TRUE(t, m != NULL);
	uint64_t before = pmm_count_free();
	for (unsigned i = 0; i < ROUNDS; i++) {
		uint64_t page = USER_MMAP_BASE + (uint64_t)i * STRIDE;
		ASSERT_EQ(t, memory_map_anonymous(m, page, page + PAGE_SIZE, VM_WRITE), 0);
		ASSERT_EQ(t, memory_fault(m, page, PF_ERROR_WRITE | PF_ERROR_USER), 0);
		ASSERT_EQ(t, memory_unmap(m, page, page + PAGE_SIZE), 0);
	}
	uint64_t after = pmm_count_free();
	EXPECT_TRUE(t, after + FRAMES_SLACK >= before);
	memory_destroy(m);
}

/* A table that still maps a page of a region beside the unmapped one stays. */
static void tables_of_a_neighbour_stay(struct ktest *t)
{
	struct proc_memory *m = memory_create();
	ASSERT_TRUE(t, m != NULL);
	uint64_t kept = USER_MMAP_BASE, dropped = USER_MMAP_BASE + PAGE_SIZE;
	ASSERT_EQ(t, memory_map_anonymous(m, kept, kept + 2 * PAGE_SIZE, VM_WRITE), 0);
	ASSERT_EQ(t, memory_fault(m, kept, PF_ERROR_WRITE | PF_ERROR_USER), 0);
	ASSERT_EQ(t, memory_fault(m, dropped, PF_ERROR_WRITE | PF_ERROR_USER), 0);
	ASSERT_EQ(t, memory_unmap(m, dropped, dropped + PAGE_SIZE), 0);
	EXPECT_EQ(t, vm_translate(m->space, kept, NULL, NULL), 0);
	EXPECT_EQ(t, vm_translate(m->space, dropped, NULL, NULL), -ENOENT);
	memory_destroy(m);
}

/* A PROT_NONE page keeps its frame in an entry that is not present (the
 * kernel's own accesses fault on it too); a fork shares it, mprotect gives
 * the same frame back, and munmap and teardown free it: after rounds of
 * it the free frame count is where it was. */
static void prot_none_pages_keep_their_frames(struct ktest *t)
{
	uint64_t before = pmm_count_free(), page = USER_MMAP_BASE;
	for (unsigned i = 0; i < ROUNDS / 10; i++) {
		struct proc_memory *m = memory_create();
		ASSERT_TRUE(t, m != NULL);
		uint64_t frame, kept;
		unsigned flags;
		ASSERT_EQ(t, memory_map_anonymous(m, page, page + 2 * PAGE_SIZE, VM_WRITE), 0);
		ASSERT_EQ(t, memory_fault(m, page, PF_ERROR_WRITE | PF_ERROR_USER), 0);
		ASSERT_EQ(t, vm_translate(m->space, page, &frame, NULL), 0);
		ASSERT_EQ(t, memory_protect(m, page, page + PAGE_SIZE, REGION_NO_ACCESS), 0);
		ASSERT_EQ(t, vm_translate(m->space, page, &kept, &flags), 0);
		EXPECT_EQ(t, kept, frame);
		EXPECT_TRUE(t, flags & VM_NONE);
		EXPECT_EQ(t, memory_fault(m, page, PF_ERROR_USER), -EFAULT);
		struct proc_memory *child = memory_clone(m);
		ASSERT_TRUE(t, child != NULL);
		ASSERT_EQ(t, vm_translate(child->space, page, &kept, &flags), 0);
		EXPECT_EQ(t, kept, frame);
		EXPECT_TRUE(t, flags & VM_NONE);
		memory_destroy(child);
		ASSERT_EQ(t, memory_protect(m, page, page + PAGE_SIZE, VM_WRITE), 0);
		ASSERT_EQ(t, vm_translate(m->space, page, &kept, &flags), 0);
		EXPECT_EQ(t, kept, frame);
		EXPECT_TRUE(t, (flags & (VM_USER | VM_NONE)) == VM_USER);
		if (i % 2)
			ASSERT_EQ(t, memory_protect(m, page, page + PAGE_SIZE, REGION_NO_ACCESS),
				  0);
		if (i % 4 == 1)
			ASSERT_EQ(t, memory_unmap(m, page, page + 2 * PAGE_SIZE), 0);
		memory_destroy(m); /* odd rounds end with the page PROT_NONE */
	}
	EXPECT_TRUE(t, pmm_count_free() + FRAMES_SLACK >= before);
}

KTEST_SUITE(proc_tables, KTEST_CASE(unmapped_strides_give_their_tables_back),
	    KTEST_CASE(tables_of_a_neighbour_stay), KTEST_CASE(prot_none_pages_keep_their_frames));
