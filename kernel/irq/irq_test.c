/*
 * The irq suite: the registration API's rules, one case per rule, including
 * every kind of bad input and its distinct error.  Delivery through the IDT
 * is tested by the traps suite (arch/x86_64/traps_test.c).
 */
#include "irq/irq.h"

#include <stddef.h>

#include "ktest/ktest.h"
#include "lib/errno.h"

static void first_handler(struct trap_frame *frame, void *ctx)
{
}

static void second_handler(struct trap_frame *frame, void *ctx)
{
}

static void bad_vectors_get_distinct_errors(struct ktest *t)
{
	EXPECT_EQ(t, irq_register(IRQ_VECTORS, first_handler, NULL, "x"), -EINVAL);
	EXPECT_EQ(t, irq_register(1000, first_handler, NULL, "x"), -EINVAL);
	EXPECT_EQ(t, irq_register(0, first_handler, NULL, "x"), -EPERM);
	EXPECT_EQ(t, irq_register(14, first_handler, NULL, "x"), -EPERM);
	EXPECT_EQ(t, irq_register(31, first_handler, NULL, "x"), -EPERM);
	EXPECT_EQ(t, irq_register(IRQ_SPURIOUS_VECTOR, first_handler, NULL, "x"), -EPERM);
	EXPECT_EQ(t, irq_register(IRQ_SYSCALL_VECTOR, first_handler, NULL, "x"), -EPERM);
}

static void registering_a_taken_vector_is_busy(struct ktest *t)
{
	int vector = irq_alloc_vector();
	ASSERT_TRUE(t, vector >= 0);
	EXPECT_EQ(t, irq_register(vector, NULL, NULL, "x"), -EINVAL);
	ASSERT_EQ(t, irq_register(vector, first_handler, NULL, "first"), 0);
	EXPECT_EQ(t, irq_register(vector, second_handler, NULL, "second"), -EBUSY);
	EXPECT_EQ(t, irq_register(vector, first_handler, NULL, "again"), -EBUSY);
	EXPECT_TRUE(t, irq_get_name(vector) != NULL);
	EXPECT_EQ(t, irq_unregister(vector, first_handler), 0);
	EXPECT_EQ(t, irq_free_vector(vector), 0);
}

static void unregister_needs_the_registered_handler(struct ktest *t)
{
	int vector = irq_alloc_vector();
	ASSERT_TRUE(t, vector >= 0);
	EXPECT_EQ(t, irq_unregister(vector, first_handler), -ENOENT);
	ASSERT_EQ(t, irq_register(vector, first_handler, NULL, "first"), 0);
	EXPECT_EQ(t, irq_unregister(vector, second_handler), -ENOENT);
	EXPECT_EQ(t, irq_unregister(vector, NULL), -ENOENT);
	EXPECT_EQ(t, irq_unregister(IRQ_VECTORS, first_handler), -EINVAL);
	EXPECT_EQ(t, irq_unregister(vector, first_handler), 0);
	EXPECT_TRUE(t, irq_get_name(vector) == NULL);
	EXPECT_EQ(t, irq_unregister(vector, first_handler), -ENOENT);
	/* free again: a later registration on the same vector works */
	EXPECT_EQ(t, irq_register(vector, second_handler, NULL, "second"), 0);
	EXPECT_EQ(t, irq_unregister(vector, second_handler), 0);
	EXPECT_EQ(t, irq_free_vector(vector), 0);
}

static void alloc_hands_out_each_device_vector_once(struct ktest *t)
{
	int first = irq_alloc_vector(), second = irq_alloc_vector();
	ASSERT_TRUE(t, first >= IRQ_DEVICE_FIRST && first <= IRQ_DEVICE_LAST);
	ASSERT_TRUE(t, second >= IRQ_DEVICE_FIRST && second <= IRQ_DEVICE_LAST);
	EXPECT_NE(t, first, second);
	EXPECT_EQ(t, irq_free_vector(first), 0);
	EXPECT_EQ(t, irq_free_vector(first), -EINVAL);
	EXPECT_EQ(t, irq_free_vector(second), 0);
}

/* ...and never hands out the system-call gate, which the IDT does not route
 * to irq dispatch. */
static void alloc_runs_out_with_enospc(struct ktest *t)
{
	static int taken[IRQ_DEVICE_LAST - IRQ_DEVICE_FIRST + 1];
	unsigned count = 0;
	int vector;
	while ((vector = irq_alloc_vector()) >= 0) {
		EXPECT_NE(t, vector, IRQ_SYSCALL_VECTOR);
		taken[count++] = vector;
	}
	EXPECT_EQ(t, vector, -ENOSPC);
	EXPECT_TRUE(t, count > 0);
	/* with every device vector taken, the system-call gate is still refused */
	EXPECT_EQ(t, irq_register(IRQ_SYSCALL_VECTOR, first_handler, NULL, "x"), -EPERM);
	for (unsigned i = 0; i < count; i++)
		EXPECT_EQ(t, irq_free_vector(taken[i]), 0);
}

static void free_refuses_bad_and_busy_vectors(struct ktest *t)
{
	EXPECT_EQ(t, irq_free_vector(14), -EINVAL);
	EXPECT_EQ(t, irq_free_vector(IRQ_SYSTEM_FIRST), -EINVAL);
	EXPECT_EQ(t, irq_free_vector(IRQ_VECTORS), -EINVAL);
	int vector = irq_alloc_vector();
	ASSERT_TRUE(t, vector >= 0);
	ASSERT_EQ(t, irq_register(vector, first_handler, NULL, "first"), 0);
	EXPECT_EQ(t, irq_free_vector(vector), -EBUSY);
	EXPECT_EQ(t, irq_unregister(vector, first_handler), 0);
	EXPECT_EQ(t, irq_free_vector(vector), 0);
}

static void counts_out_of_range_are_zero(struct ktest *t)
{
	EXPECT_EQ(t, irq_get_count(IRQ_VECTORS), 0);
	EXPECT_TRUE(t, irq_get_name(IRQ_VECTORS) == NULL);
}

KTEST_SUITE(irq, KTEST_CASE(bad_vectors_get_distinct_errors),
	    KTEST_CASE(registering_a_taken_vector_is_busy),
	    KTEST_CASE(unregister_needs_the_registered_handler),
	    KTEST_CASE(alloc_hands_out_each_device_vector_once),
	    KTEST_CASE(alloc_runs_out_with_enospc), KTEST_CASE(free_refuses_bad_and_busy_vectors),
	    KTEST_CASE(counts_out_of_range_are_zero));
