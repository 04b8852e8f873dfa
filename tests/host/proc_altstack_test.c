// host-test-sources: kernel/proc/altstack.c
/* The alternate signal stack's rules, at their edges: where "on the stack"
 * starts and ends (Linux's bounds, arithmetic that wraps), SS_AUTODISARM,
 * and sigaltstack's checks, which refuse without changing anything. */
#include <stdint.h>

#include "cpu/percpu.h"
#include "hosttest.h"
#include "lib/errno.h"
#include "proc/internal.h"

#define BASE 0x10000UL
#define SIZE 0x4000UL

static struct process process;

static struct proc_altstack stack_with(uint64_t sp, uint64_t size, uint32_t flags)
{
	return (struct proc_altstack){.sp = sp, .size = size, .flags = flags};
}

/* Linux's bounds: above the lowest address, at most size above it. */
static void on_the_stack_is_above_its_base_up_to_its_top(void)
{
	struct proc_altstack stack = stack_with(BASE, SIZE, 0);
	CHECK(!proc_altstack_within(&stack, BASE));
	CHECK(proc_altstack_within(&stack, BASE + 1));
	CHECK(proc_altstack_within(&stack, BASE + SIZE));
	CHECK(!proc_altstack_within(&stack, BASE + SIZE + 1));
	CHECK(!proc_altstack_within(&stack, BASE - 1));
	CHECK_EQ(proc_altstack_state(&stack, BASE + SIZE), PROC_SS_ONSTACK);
	CHECK_EQ(proc_altstack_state(&stack, BASE + SIZE + 1), 0);
	struct proc_altstack none = stack_with(0, 0, PROC_SS_DISABLE);
	CHECK_EQ(proc_altstack_state(&none, 0), PROC_SS_DISABLE);
	CHECK(!proc_altstack_within(&none, 0));
}

/* A stack whose top wraps past the end of the address space holds nothing
 * below its base, however small an address the top became. */
static void a_wrapping_stack_holds_nothing_below_its_base(void)
{
	struct proc_altstack wraps = stack_with(UINT64_MAX - 0xfff, 0x10000, 0);
	CHECK(!proc_altstack_within(&wraps, 0x100));
	CHECK(!proc_altstack_within(&wraps, 0xf000));
	CHECK(proc_altstack_within(&wraps, UINT64_MAX));
	struct proc_altstack everything = stack_with(BASE, UINT64_MAX, 0);
	CHECK(proc_altstack_within(&everything, UINT64_MAX));
	CHECK(!proc_altstack_within(&everything, BASE));
}

static void ss_autodisarm_means_never_on_it(void)
{
	struct proc_altstack stack = stack_with(BASE, SIZE, PROC_SS_AUTODISARM);
	CHECK(proc_altstack_within(&stack, BASE + 8));
	CHECK(!proc_altstack_holds(&stack, BASE + 8));
	CHECK_EQ(proc_altstack_state(&stack, BASE + 8), 0);
	proc_altstack_reset(&stack);
	CHECK(stack.sp == 0 && stack.size == 0 && stack.flags == PROC_SS_DISABLE);
}

static void check_refuses_what_linux_refuses(void)
{
	struct proc_altstack current = stack_with(BASE, SIZE, 0);
	static const uint32_t bad_flags[] = {3,         4, 0x55, 0x7fffffff, PROC_SS_AUTODISARM | 4,
					     UINT32_MAX};
	for (unsigned i = 0; i < sizeof bad_flags / sizeof bad_flags[0]; i++) {
		struct proc_altstack wanted = stack_with(BASE, SIZE, bad_flags[i]);
		CHECK_EQ(proc_altstack_check(&current, &wanted, 0), -EINVAL);
	}
	struct proc_altstack small = stack_with(BASE, 2047, 0);
	CHECK_EQ(proc_altstack_check(&current, &small, 0), -ENOMEM);
	struct proc_altstack enough = stack_with(BASE, 2048, PROC_SS_ONSTACK);
	CHECK_EQ(proc_altstack_check(&current, &enough, 0), 0);
	CHECK(enough.sp == BASE && enough.size == 2048 && enough.flags == PROC_SS_ONSTACK);
	struct proc_altstack off = stack_with(BASE, 1, PROC_SS_DISABLE | PROC_SS_AUTODISARM);
	CHECK_EQ(proc_altstack_check(&current, &off, 0), 0);
	CHECK(off.sp == 0 && off.size == 0 && off.flags == (PROC_SS_DISABLE | PROC_SS_AUTODISARM));
	/* On the stack: even a good change, even SS_DISABLE, is refused. */
	CHECK_EQ(proc_altstack_check(&current, &enough, BASE + 64), -EPERM);
	struct proc_altstack disable = stack_with(0, 0, PROC_SS_DISABLE);
	CHECK_EQ(proc_altstack_check(&current, &disable, BASE + 64), -EPERM);
}

/* sigaltstack's two halves on the calling process: a refusal changes
 * nothing, the old state is reported as Linux reports it. */
static void prepare_reports_and_changes_nothing(void)
{
	this_cpu()->process = &process;
	process.altstack = stack_with(BASE, SIZE, PROC_SS_AUTODISARM);
	struct proc_altstack old, bad = stack_with(BASE, 100, 0);
	CHECK_EQ(proc_altstack_prepare(0x7000000, &bad, &old), -ENOMEM);
	CHECK(process.altstack.sp == BASE && process.altstack.size == SIZE);
	CHECK(old.sp == BASE && old.size == SIZE && old.flags == PROC_SS_AUTODISARM);
	struct proc_altstack good = stack_with(BASE * 2, SIZE, 0);
	CHECK_EQ(proc_altstack_prepare(0x7000000, &good, &old), 0);
	CHECK_EQ(process.altstack.sp, BASE);
	proc_altstack_set(&good);
	CHECK_EQ(process.altstack.sp, BASE * 2);
	CHECK_EQ(proc_altstack_prepare(BASE * 2 + 8, NULL, &old), 0);
	CHECK_EQ(old.flags, PROC_SS_ONSTACK);
	proc_altstack_forget(&process.altstack);
	CHECK(process.altstack.sp == 0 && process.altstack.size == 0 &&
	      process.altstack.flags == 0);
	this_cpu()->process = NULL;
	CHECK_EQ(proc_altstack_prepare(0, NULL, &old), -EINVAL); /* a kernel thread */
}

HOSTTEST_MAIN(HOSTTEST_CASE(on_the_stack_is_above_its_base_up_to_its_top),
	      HOSTTEST_CASE(a_wrapping_stack_holds_nothing_below_its_base),
	      HOSTTEST_CASE(ss_autodisarm_means_never_on_it),
	      HOSTTEST_CASE(check_refuses_what_linux_refuses),
	      HOSTTEST_CASE(prepare_reports_and_changes_nothing))
