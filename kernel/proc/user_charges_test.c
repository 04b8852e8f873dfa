/*
 * The user_charges suite: the per-user table every per-user bound counts in
 * (user_charges.c), from the kernel's side.  Many users hold something at
 * once (a fixed table of 16 refused the 17th user whatever it held), a
 * user's bound is its own and per resource, root is never refused, and an
 * entry goes away when its user holds nothing.  The uids are far above any
 * the other suites or usertests use.
 */
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "proc/internal.h"

#define FIRST_UID  700000
#define MANY_USERS 200 /* far past the 16 the table once held */
#define SOME_BYTES 4096

/* Before: charges 17 and on were -ENOMEM (no free entry), though each of
 * those users held 4 KiB of its 1 MiB. */
static void many_users_hold_kernel_memory_at_once(struct ktest *t)
{
	unsigned charged = 0;
	for (uint32_t i = 0; i < MANY_USERS; i++)
		if (proc_user_memory_charge(FIRST_UID + i, SOME_BYTES) == 0)
			charged++;
	EXPECT_EQ(t, charged, MANY_USERS);
	for (uint32_t i = 0; i < MANY_USERS; i++)
		proc_user_memory_release(FIRST_UID + i, SOME_BYTES);
}

static void entries_come_and_go_with_what_users_hold(struct ktest *t)
{
	unsigned before = proc_users_holding();
	for (uint32_t i = 0; i < MANY_USERS; i++)
		ASSERT_EQ(t, proc_user_charge(FIRST_UID + i, PROC_USER_SOCKETS, 1, 80), 0);
	EXPECT_EQ(t, proc_users_holding(), before + MANY_USERS);
	EXPECT_EQ(t, proc_user_held(FIRST_UID + 7, PROC_USER_SOCKETS), 1);
	for (uint32_t i = 0; i < MANY_USERS; i++)
		proc_user_release(FIRST_UID + i, PROC_USER_SOCKETS, 1);
	EXPECT_EQ(t, proc_users_holding(), before);
	EXPECT_EQ(t, proc_user_held(FIRST_UID + 7, PROC_USER_SOCKETS), 0);
}

static void a_bound_is_its_users_and_its_resources(struct ktest *t)
{
	uint32_t full = FIRST_UID, other = FIRST_UID + 1;
	ASSERT_EQ(t, proc_user_charge(full, PROC_USER_SOCKETS, 80, 80), 0);
	EXPECT_EQ(t, proc_user_charge(full, PROC_USER_SOCKETS, 1, 80), -ENOSPC);
	EXPECT_EQ(t, proc_user_held(full, PROC_USER_SOCKETS), 80); /* a refusal takes nothing */
	EXPECT_EQ(t, proc_user_charge(other, PROC_USER_SOCKETS, 80, 80), 0);
	EXPECT_EQ(t, proc_user_memory_charge(full, USER_KMEM_BYTES_MAX), 0);
	EXPECT_EQ(t, proc_user_memory_charge(full, 1), -ENOMEM);
	proc_user_release(full, PROC_USER_SOCKETS, 1);
	EXPECT_EQ(t, proc_user_charge(full, PROC_USER_SOCKETS, 1, 80), 0);
	proc_user_memory_release(full, USER_KMEM_BYTES_MAX);
	proc_user_release(full, PROC_USER_SOCKETS, 80);
	proc_user_release(other, PROC_USER_SOCKETS, 80);
	EXPECT_EQ(t, proc_user_held(full, PROC_USER_KMEM_BYTES), 0);
}

/* A refused charge of a user that held nothing leaves no entry behind. */
static void a_refused_first_charge_leaves_no_entry(struct ktest *t)
{
	unsigned before = proc_users_holding();
	EXPECT_EQ(t, proc_user_charge(FIRST_UID, PROC_USER_SOCKETS, 81, 80), -ENOSPC);
	EXPECT_EQ(t, proc_users_holding(), before);
}

static void root_counts_against_nothing(struct ktest *t)
{
	unsigned before = proc_users_holding();
	EXPECT_EQ(t, proc_user_charge(ROOT_UID, PROC_USER_SOCKETS, 1000, 0), 0);
	EXPECT_EQ(t, proc_user_memory_charge(ROOT_UID, 2 * USER_KMEM_BYTES_MAX), 0);
	EXPECT_EQ(t, proc_user_held(ROOT_UID, PROC_USER_SOCKETS), 0);
	EXPECT_EQ(t, proc_users_holding(), before);
	proc_user_release(ROOT_UID, PROC_USER_SOCKETS, 1000);
	proc_user_memory_release(ROOT_UID, 2 * USER_KMEM_BYTES_MAX);
}

KTEST_SUITE(user_charges, KTEST_CASE(many_users_hold_kernel_memory_at_once),
	    KTEST_CASE(entries_come_and_go_with_what_users_hold),
	    KTEST_CASE(a_bound_is_its_users_and_its_resources),
	    KTEST_CASE(a_refused_first_charge_leaves_no_entry),
	    KTEST_CASE(root_counts_against_nothing));
