/*
 * The proc_promise suite: what a fork promises.  A page present in a
 * read-only region is never copied while the region stays read-only, so no
 * owner needs a frame of its own for it: a fork must not promise the child
 * the parent's text, constants and read-only mappings again (with little
 * left to promise, such a fork was refused), the one promise of each shared
 * frame must last as long as the frame, whichever owner ends first, and be
 * given back with it, and a read-only mapping made writable again must be
 * promised again first.  Also what a memory costs the kernel beside its
 * pages: its top-level table and its region records are promised too.
 */
#include "arch/x86_64/traps.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "mm/mm.h"
#include "proc/internal.h"

#define TEXT_PAGES 256 /* the read-only program segment: 1 MiB */
#define DATA_PAGES 4   /* a writable one beside it */
#define TEXT_START (EXEC_IMAGE_BASE + 0x100000UL)
#define DATA_START (TEXT_START + TEXT_PAGES * PAGE_SIZE)
#define MAP_PAGES  256 /* a read-only mapping: 1 MiB */
#define MAP_START  USER_MMAP_BASE
#define MAP_END    (MAP_START + MAP_PAGES * PAGE_SIZE)
#define LEFT_OVER  64 /* left to promise: more than the fork needs, less than the text */

/* A memory with a populated read-only text segment and a writable data
 * segment, as exec makes one.  NULL when memory ran out. */
static struct proc_memory *program_memory(void)
{
	struct proc_memory *m = memory_create();
	if (!m)
		return NULL;
	uint64_t text_end = DATA_START, data_end = DATA_START + DATA_PAGES * PAGE_SIZE;
	if (memory_add_program(m, TEXT_START, text_end, VM_EXEC) < 0 ||
	    memory_populate(m, TEXT_START, text_end) < 0 ||
	    memory_add_program(m, DATA_START, data_end, VM_WRITE) < 0 ||
	    memory_populate(m, DATA_START, data_end) < 0) {
		memory_destroy(m);
		return NULL;
	}
	return m;
}

/* A memory with a mapping written, then made read-only.  NULL when memory
 * ran out. */
static struct proc_memory *read_only_mapping_memory(void)
{
	struct proc_memory *m = memory_create();
	if (!m)
		return NULL;
	if (memory_map_anonymous(m, MAP_START, MAP_END, VM_WRITE) < 0 ||
	    memory_populate(m, MAP_START, MAP_END) < 0 ||
	    memory_protect(m, MAP_START, MAP_END, 0) < 0) {
		memory_destroy(m);
		return NULL;
	}
	return m;
}

/* The pages memory holds promises for beside its tables and records. */
static uint64_t pages_held(const struct proc_memory *memory)
{
	return memory->committed - memory->kernel_pages;
}

/* The child is promised its writable pages and its tables, not the text. */
static void a_fork_promises_no_read_only_program_page(struct ktest *t)
{
	struct proc_memory *parent = program_memory();
	ASSERT_TRUE(t, parent != NULL);
	struct proc_memory *child = memory_clone(parent);
	ASSERT_TRUE(t, child != NULL);
	EXPECT_EQ(t, pages_held(child), DATA_PAGES);
	EXPECT_EQ(t, pages_held(parent), DATA_PAGES);
	memory_destroy(child);
	memory_destroy(parent);
}

/* Promises every page it can; returns how many. */
static uint64_t promise_all_left(void)
{
	uint64_t held = 0;
	for (uint64_t chunk = 1UL << 20; chunk; chunk >>= 1)
		while (proc_promise_pages(chunk) == 0)
			held += chunk;
	return held;
}

/* With fewer pages left to promise than the text has, the fork still
 * succeeds: it needs only the data pages and tables. */
static void a_fork_with_a_large_text_fits_what_is_left(struct ktest *t)
{
	struct proc_memory *parent = program_memory();
	ASSERT_TRUE(t, parent != NULL);
	uint64_t held = promise_all_left();
	proc_release_pages(LEFT_OVER);
	struct proc_memory *child = memory_clone(parent);
	proc_release_pages(held - LEFT_OVER);
	EXPECT_TRUE(t, held > LEFT_OVER);
	EXPECT_TRUE(t, child != NULL);
	if (child)
		memory_destroy(child);
	memory_destroy(parent);
}

/* The promise of the shared text stays while any owner maps it, and is
 * given back once with the frames, in either order of ending. */
static void shared_text_stays_promised_until_its_last_owner_ends(struct ktest *t)
{
	for (unsigned parent_first = 0; parent_first < 2; parent_first++) {
		uint64_t before = memory_promised_pages();
		struct proc_memory *parent = program_memory();
		ASSERT_TRUE(t, parent != NULL);
		struct proc_memory *child = memory_clone(parent);
		ASSERT_TRUE(t, child != NULL);
		struct proc_memory *grandchild = memory_clone(child);
		ASSERT_TRUE(t, grandchild != NULL);
		memory_destroy(parent_first ? parent : grandchild);
		EXPECT_TRUE(t, memory_promised_pages() >= before + TEXT_PAGES);
		memory_destroy(child);
		EXPECT_TRUE(t, memory_promised_pages() >= before + TEXT_PAGES);
		memory_destroy(parent_first ? grandchild : parent);
		EXPECT_EQ(t, memory_promised_pages(), before);
	}
}

/* A read-only mapping is not promised to the child; made writable, it is
 * promised again (a write copies a page); made read-only again, its pages
 * whose frames carry their promise are given back; unmapped, what it held;
 * ended, everything. */
static void a_read_only_mapping_is_promised_again_when_made_writable(struct ktest *t)
{
	uint64_t before = memory_promised_pages();
	struct proc_memory *parent = read_only_mapping_memory();
	ASSERT_TRUE(t, parent != NULL);
	EXPECT_EQ(t, pages_held(parent), MAP_PAGES);
	struct proc_memory *child = memory_clone(parent);
	ASSERT_TRUE(t, child != NULL);
	EXPECT_EQ(t, pages_held(child), 0);
	EXPECT_EQ(t, pages_held(parent), 0);
	EXPECT_EQ(t, memory_protect(child, MAP_START, MAP_END, VM_WRITE), 0);
	EXPECT_EQ(t, pages_held(child), MAP_PAGES);
	EXPECT_EQ(t, memory_fault(child, MAP_START, PF_ERROR_WRITE | PF_ERROR_USER), 0);
	EXPECT_EQ(t, memory_protect(child, MAP_START, MAP_END, 0), 0);
	EXPECT_EQ(t, pages_held(child), 1); /* the copy: its frame is the child's alone */
	EXPECT_EQ(t, memory_unmap(child, MAP_START, MAP_START + 2 * PAGE_SIZE), 0);
	EXPECT_EQ(t, pages_held(child), 0);
	memory_destroy(parent);
	EXPECT_TRUE(t, memory_promised_pages() >= before + MAP_PAGES - 2);
	memory_destroy(child);
	EXPECT_EQ(t, memory_promised_pages(), before);
}

/* With nothing left to promise, a shared read-only mapping cannot be made
 * writable (-ENOMEM), and stays read-only; with room again, it can. */
static void making_a_shared_mapping_writable_needs_room(struct ktest *t)
{
	struct proc_memory *parent = read_only_mapping_memory();
	ASSERT_TRUE(t, parent != NULL);
	struct proc_memory *child = memory_clone(parent);
	ASSERT_TRUE(t, child != NULL);
	uint64_t held = promise_all_left();
	int refused = memory_protect(child, MAP_START, MAP_END, VM_WRITE);
	int written = memory_fault(child, MAP_START, PF_ERROR_WRITE | PF_ERROR_USER);
	proc_release_pages(held);
	EXPECT_EQ(t, refused, -ENOMEM);
	EXPECT_EQ(t, written, -EFAULT);
	EXPECT_EQ(t, memory_protect(child, MAP_START, MAP_END, VM_WRITE), 0);
	EXPECT_EQ(t, memory_fault(child, MAP_START, PF_ERROR_WRITE | PF_ERROR_USER), 0);
	memory_destroy(child);
	memory_destroy(parent);
}

/* A fork of a process with a read-only mapping larger than what is left to
 * promise succeeds. */
static void a_fork_with_a_large_read_only_mapping_fits_what_is_left(struct ktest *t)
{
	struct proc_memory *parent = read_only_mapping_memory();
	ASSERT_TRUE(t, parent != NULL);
	uint64_t held = promise_all_left();
	proc_release_pages(LEFT_OVER);
	struct proc_memory *child = memory_clone(parent);
	proc_release_pages(held - LEFT_OVER);
	EXPECT_TRUE(t, child != NULL);
	if (child)
		memory_destroy(child);
	memory_destroy(parent);
}

#define SPLIT_PAGES 1024 /* a mapping split page by page: as many region records */

/* Makes every other page of the SPLIT_PAGES mapping at MAP_START read-only:
 * a region each.  Returns 0 or the first error. */
static int split_page_by_page(struct proc_memory *m)
{
	int error = 0;
	for (unsigned i = 0; i < SPLIT_PAGES && !error; i += 2)
		error = memory_protect(m, MAP_START + i * PAGE_SIZE,
				       MAP_START + (i + 1) * PAGE_SIZE, 0);
	return error;
}

/* A memory is promised its top-level table from the start, and the heap
 * pages its region records take as a mapping is split into a region a
 * page; all of it goes back with the memory. */
static void the_top_table_and_region_records_are_promised(struct ktest *t)
{
	uint64_t before = memory_promised_pages();
	struct proc_memory *m = memory_create();
	ASSERT_TRUE(t, m != NULL);
	EXPECT_EQ(t, m->committed, 1);
	EXPECT_EQ(t, memory_map_anonymous(m, MAP_START, MAP_START + SPLIT_PAGES * PAGE_SIZE, 0), 0);
	uint64_t whole = m->committed;
	EXPECT_EQ(t, split_page_by_page(m), 0);
	EXPECT_TRUE(t,
		    m->committed >= whole + SPLIT_PAGES / (PAGE_SIZE / sizeof(struct proc_region)));
	memory_destroy(m);
	EXPECT_EQ(t, memory_promised_pages(), before);
}

/* With nothing left to promise, splitting a mapping stops at -ENOMEM
 * instead of taking heap pages for records unpromised. */
static void splitting_a_mapping_needs_room_for_its_records(struct ktest *t)
{
	struct proc_memory *m = memory_create();
	ASSERT_TRUE(t, m != NULL);
	EXPECT_EQ(t, memory_map_anonymous(m, MAP_START, MAP_START + SPLIT_PAGES * PAGE_SIZE, 0), 0);
	uint64_t held = promise_all_left();
	int error = split_page_by_page(m);
	proc_release_pages(held);
	EXPECT_EQ(t, error, -ENOMEM);
	memory_destroy(m);
}

KTEST_SUITE(proc_promise, KTEST_CASE(a_fork_promises_no_read_only_program_page),
	    KTEST_CASE(a_fork_with_a_large_text_fits_what_is_left),
	    KTEST_CASE(shared_text_stays_promised_until_its_last_owner_ends),
	    KTEST_CASE(a_read_only_mapping_is_promised_again_when_made_writable),
	    KTEST_CASE(making_a_shared_mapping_writable_needs_room),
	    KTEST_CASE(a_fork_with_a_large_read_only_mapping_fits_what_is_left),
	    KTEST_CASE(the_top_table_and_region_records_are_promised),
	    KTEST_CASE(splitting_a_mapping_needs_room_for_its_records));
