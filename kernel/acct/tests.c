/*
 * The acct suite: what the kernel side does for callers that are not
 * accounted threads (a kernel thread here), and the flag checks.  The user
 * side, with a real results page, is userland/rscfltest.
 */
#include "acct/acct.h"
#include "joinpoint/joinpoint.h"
#include "ktest/ktest.h"
#include "lib/errno.h"

static void kernel_thread_gets_no_page(struct ktest *t)
{
	EXPECT_EQ(t, acct_init_thread(), -EPERM);
}

static void calls_without_init_are_errors(struct ktest *t)
{
	EXPECT_EQ(t, acct_get_token(), -ENOENT);
	EXPECT_EQ(t, acct_free_token(1), -ENOENT);
	EXPECT_EQ(t, acct_control(1, ACCT_START), -ENOENT);
	EXPECT_EQ(t, acct_control(1, ACCT_STOP), -ENOENT);
	EXPECT_EQ(t, acct_switch_token(1), -ENOENT);
}

static void nothing_is_woven_while_idle(struct ktest *t)
{
	struct jp_stats stats;
	const struct joinpoint *jp = jp_find("sched.switch");
	ASSERT_TRUE(t, jp != NULL);
	jp_get_stats(jp, &stats);
	EXPECT_EQ(t, stats.advice, 0);
}

KTEST_SUITE(acct, KTEST_CASE(kernel_thread_gets_no_page), KTEST_CASE(calls_without_init_are_errors),
	    KTEST_CASE(nothing_is_woven_while_idle));
