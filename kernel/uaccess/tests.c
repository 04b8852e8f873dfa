/*
 * The uaccess suite: every kind of bad user pointer is refused with -EFAULT
 * before or during the copy, never a kernel fault: kernel addresses,
 * non-canonical ones, ranges that wrap or run past the end of user space,
 * and unmapped user pages (here, in a kernel thread, every user page is
 * unmapped).  The same questions asked from a real process, where good
 * pointers must work too, are in the proc suite (bad_pointers_give_efault).
 */
#include "ktest/ktest.h"
#include "lib/errno.h"
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

KTEST_SUITE(uaccess, KTEST_CASE(range_check_boundaries), KTEST_CASE(copy_from_bad_pointers),
	    KTEST_CASE(copy_to_bad_pointers), KTEST_CASE(strings_from_bad_pointers),
	    KTEST_CASE(zero_length_copies));
