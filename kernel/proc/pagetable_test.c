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

KTEST_SUITE(proc_tables, KTEST_CASE(unmapped_strides_give_their_tables_back),
	    KTEST_CASE(tables_of_a_neighbour_stay));
