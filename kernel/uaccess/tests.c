/*
 * The uaccess suite: every kind of bad user pointer is refused with -EFAULT
 * before or during the copy, never a kernel fault: kernel addresses,
 * non-canonical ones, ranges that wrap or run past the end of user space,
 * and unmapped user pages (here, in a kernel thread, every user page is
 * unmapped).  The same questions asked from a real process, where good
 * pointers must work too, are in the proc suite (bad_pointers_give_efault).
 */
#include "arch/x86_64/cpu.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "uaccess/uaccess.h"

static const uint64_t bad_addresses[] = {
    0,                    /* NULL: an unmapped user page */
    0x1000,               /* unmapped */
    0x00007ffffffff000UL, /* the page at the end of user space */
    0x0000800000000000UL, /* non-canonical */
    0xffff800000000000UL, /* the physmap */
    0xffffffff80100000UL, /* the kernel image */
    0xfffffffffffffff8UL, /* the last word */
};

#define COUNT (sizeof bad_addresses / sizeof bad_addresses[0])

/* Does the range check refuse what lies outside user space, or wraps? */
static void range_check_boundaries(struct ktest *t)
{
	EXPECT_TRUE(t, uaccess_range_ok(0x400000, 4096));
	EXPECT_TRUE(t, uaccess_range_ok(USER_SPACE_END - 8, 8));
	EXPECT_TRUE(t, uaccess_range_ok(USER_SPACE_END, 0));
	EXPECT_FALSE(t, uaccess_range_ok(USER_SPACE_END - 8, 9));
	EXPECT_FALSE(t, uaccess_range_ok(USER_SPACE_END, 1));
	EXPECT_FALSE(t, uaccess_range_ok(0x400000, ~0UL));
	EXPECT_FALSE(t, uaccess_range_ok(0x400000, ~0UL - 0x3fffff));
	EXPECT_FALSE(t, uaccess_range_ok(0xffff800000000000UL, 8));
}

/* What if copy_from_user is pointed at kernel or unmapped memory? */
static void copy_from_bad_pointers(struct ktest *t)
{
	uint64_t word = 0x5555;
	for (size_t i = 0; i < COUNT; i++)
		EXPECT_EQ(t, copy_from_user(&word, (const void *)bad_addresses[i], 8), -EFAULT);
	EXPECT_EQ(t, copy_from_user(&word, (const void *)0x400000, ~0UL), -EFAULT);
	EXPECT_EQ(t, get_user_u64(&word, (const uint64_t *)0xffffffff80100000UL), -EFAULT);
}

/* What if copy_to_user is pointed at kernel or unmapped memory?  The kernel
 * word must not change. */
static void copy_to_bad_pointers(struct ktest *t)
{
	static uint64_t target = 0x1234;
	uint64_t value = 0xdead;
	for (size_t i = 0; i < COUNT; i++)
		EXPECT_EQ(t, copy_to_user((void *)bad_addresses[i], &value, 8), -EFAULT);
	EXPECT_EQ(t, copy_to_user(&target, &value, sizeof value), -EFAULT);
	EXPECT_EQ(t, put_user_u64(&target, value), -EFAULT);
	EXPECT_EQ(t, clear_user(&target, sizeof target), -EFAULT);
	EXPECT_EQ(t, target, 0x1234);
}

/* What if a string is read from bad memory? */
static void strings_from_bad_pointers(struct ktest *t)
{
	char buffer[16];
	for (size_t i = 0; i < COUNT; i++)
		EXPECT_EQ(t,
			  strncpy_from_user(buffer, (const char *)bad_addresses[i], sizeof buffer),
			  -EFAULT);
	EXPECT_EQ(t, strncpy_from_user(buffer, "kernel", sizeof buffer), -EFAULT);
	EXPECT_EQ(t, strncpy_from_user(buffer, (const char *)0x1000, 0), -ENAMETOOLONG);
}

/* A zero-length copy touches nothing and succeeds. */
static void zero_length_copies(struct ktest *t)
{
	uint64_t word;
	EXPECT_EQ(t, copy_from_user(&word, (const void *)0x1000, 0), 0);
	EXPECT_EQ(t, copy_to_user((void *)0x1000, &word, 0), 0);
}

/* What if the copy that may not fault is pointed at kernel or unmapped
 * memory? */
static void nofault_copy_from_bad_pointers(struct ktest *t)
{
	uint64_t word = 0x5555;
	struct user_peek peek = {0};
	for (size_t i = 0; i < COUNT; i++) {
		EXPECT_EQ(t, copy_from_user_nofault(&word, (const void *)bad_addresses[i], 8),
			  -EFAULT);
		EXPECT_EQ(t, user_peek_read(&peek, &word, bad_addresses[i], 8), -EFAULT);
	}
	EXPECT_EQ(t, copy_from_user_nofault(&word, (const void *)0x400000, ~0UL), -EFAULT);
	EXPECT_EQ(t, copy_from_user_nofault(&word, (const void *)0x1000, 0), 0);
}

/* A user space of our own, active on this CPU with interrupts off: page
 * 0x400000 and 0x401000 user pages (bytes 1 and 2), 0x402000 not mapped,
 * 0x403000 mapped for the kernel only. */
#define PEEK_BASE 0x400000UL
struct peek_space {
	struct address_space *space;
	uint64_t frames[3];
};

static bool peek_space_make(struct peek_space *s)
{
	s->space = vm_space_create();
	if (!s->space)
		return false;
	for (unsigned i = 0; i < 3; i++) {
		s->frames[i] = pmm_alloc_frame();
		if (!s->frames[i])
			return false;
		memset(phys_to_virt(s->frames[i]), (int)i + 1, PAGE_SIZE);
	}
	return !vm_map(s->space, PEEK_BASE, s->frames[0], VM_USER) &&
	       !vm_map(s->space, PEEK_BASE + PAGE_SIZE, s->frames[1], VM_USER) &&
	       !vm_map(s->space, PEEK_BASE + 3 * PAGE_SIZE, s->frames[2], VM_READ);
}

static void peek_space_drop(struct peek_space *s)
{
	if (s->space)
		vm_space_destroy(s->space);
	for (unsigned i = 0; i < 3; i++)
		if (s->frames[i])
			pmm_free_frame(s->frames[i]);
}

/* Does the copy that may not fault read present user pages, across a page
 * boundary, and refuse (without mapping it) a page that is not present and
 * one the user may not read? */
static void nofault_copy_reads_present_pages_only(struct ktest *t)
{
	struct peek_space s = {0};
	ASSERT_TRUE(t, peek_space_make(&s));
	uint64_t irq = irq_save();
	vm_space_activate(s.space);
	uint8_t bytes[16], word[8] = {0}, scratch[16];
	struct user_peek peek = {0};
	int across = copy_from_user_nofault(bytes, (const void *)(PEEK_BASE + PAGE_SIZE - 8), 16);
	int cached = user_peek_read(&peek, word, PEEK_BASE + 8, 8);
	cached |= user_peek_read(&peek, word, PEEK_BASE + PAGE_SIZE + 16, 8); /* peek's pages */
	int absent = copy_from_user_nofault(scratch, (const void *)(PEEK_BASE + 2 * PAGE_SIZE), 8);
	int straddle = user_peek_read(&peek, scratch, PEEK_BASE + 2 * PAGE_SIZE - 8, 16);
	int kernel_only =
	    copy_from_user_nofault(scratch, (const void *)(PEEK_BASE + 3 * PAGE_SIZE), 8);
	vm_space_activate(vm_kernel_space());
	irq_restore(irq);
	EXPECT_EQ(t, across, 0);
	EXPECT_EQ(t, cached, 0);
	EXPECT_EQ(t, bytes[0], 1);
	EXPECT_EQ(t, bytes[7], 1);
	EXPECT_EQ(t, bytes[8], 2);
	EXPECT_EQ(t, bytes[15], 2);
	EXPECT_EQ(t, word[7], 2);
	EXPECT_EQ(t, absent, -EFAULT);
	EXPECT_EQ(t, straddle, -EFAULT);
	EXPECT_EQ(t, kernel_only, -EFAULT);
	EXPECT_EQ(t, vm_translate(s.space, PEEK_BASE + 2 * PAGE_SIZE, NULL, NULL), -ENOENT);
	peek_space_drop(&s);
}

/* Is the active space's stamp the same while no translation found before
 * can have changed (a page mapped where none was), new after an unmap and
 * after a change of protection, unlike any other space's, and 0 for the
 * kernel's? */
static void space_stamp_changes_with_the_mappings(struct ktest *t)
{
	struct peek_space s = {0}, other = {0};
	ASSERT_TRUE(t, peek_space_make(&s));
	ASSERT_TRUE(t, peek_space_make(&other));
	uint64_t frame = pmm_alloc_frame();
	ASSERT_TRUE(t, frame != 0);
	uint64_t irq = irq_save();
	vm_space_activate(s.space);
	uint64_t first = vm_space_stamp();
	int mapped = vm_map(s.space, PEEK_BASE + 2 * PAGE_SIZE, frame, VM_USER);
	uint64_t after_map = vm_space_stamp();
	int64_t unmapped = vm_unmap(s.space, PEEK_BASE + 2 * PAGE_SIZE);
	uint64_t after_unmap = vm_space_stamp();
	int protected = vm_protect(s.space, PEEK_BASE, VM_READ);
	uint64_t after_protect = vm_space_stamp();
	vm_space_activate(other.space);
	uint64_t of_other = vm_space_stamp();
	vm_space_activate(vm_kernel_space());
	uint64_t of_kernel = vm_space_stamp();
	irq_restore(irq);
	EXPECT_EQ(t, mapped, 0);
	EXPECT_TRUE(t, unmapped >= 0);
	EXPECT_EQ(t, protected, 0);
	EXPECT_TRUE(t, first != 0);
	EXPECT_EQ(t, after_map, first);
	EXPECT_TRUE(t, after_unmap != first);
	EXPECT_TRUE(t, after_protect != after_unmap && after_protect != first);
	EXPECT_TRUE(t, of_other != first && of_other != after_unmap && of_other != after_protect);
	EXPECT_EQ(t, of_kernel, 0);
	pmm_free_frame(frame);
	peek_space_drop(&other);
	peek_space_drop(&s);
}

KTEST_SUITE(uaccess, KTEST_CASE(range_check_boundaries), KTEST_CASE(copy_from_bad_pointers),
	    KTEST_CASE(copy_to_bad_pointers), KTEST_CASE(strings_from_bad_pointers),
	    KTEST_CASE(zero_length_copies), KTEST_CASE(nofault_copy_from_bad_pointers),
	    KTEST_CASE(nofault_copy_reads_present_pages_only),
	    KTEST_CASE(space_stamp_changes_with_the_mappings));
