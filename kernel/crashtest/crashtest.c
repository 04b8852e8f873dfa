/*
 * The crash tests.  Each crash is a function whose name is what the report
 * must show; noipa keeps the compiler from inlining, cloning or renaming it.
 * The page fault writes through a pointer near NULL, which mm leaves unmapped
 * (checked first, so a mapping there is reported rather than silently
 * written).  The stack overflow recurses on a fresh kernel stack from mm into
 * the guard area below it: the CPU cannot push the #PF frame there and raises
 * a double fault, which runs on its own IST stack and is reported as
 * "kernel stack overflow".  The stale stack free frees a stack, has its slot
 * taken by a newer one and frees the old one again: kstack must refuse.
 */
#include "crashtest/crashtest.h"

#include <stdint.h>

#include "boot/cmdline.h"
#include "console/console.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "panic/panic.h"

#define NULL_FIELD_ADDRESS   0x18 /* a field of a struct reached through NULL */
#define OVERFLOW_STACK_PAGES 2
#define STALE_FREE_TRIES     64 /* stacks taken until one lands in the freed slot */

struct crash {
	const char *name;
	void (*run)(void);
};

static const struct crash *selected_crash;

__attribute__((noipa, used)) static void crashtest_fault_page(volatile uint64_t *target)
{
	*target = 0xdead;
}

static void crash_page_fault(void)
{
	uint64_t address = NULL_FIELD_ADDRESS;
	if (vm_translate(vm_kernel_space(), address, NULL, NULL) != -ENOENT)
		panic("crashtest: %#lx is mapped, cannot fault there", address);
	crashtest_fault_page((volatile uint64_t *)address);
}

__attribute__((noipa, used)) static void crashtest_divide_by_zero(void)
{
	uint64_t dividend = 1, divisor = 0;
	__asm__ volatile("xor %%edx, %%edx\n\tdivq %[divisor]"
			 : "+a"(dividend)
			 : [divisor] "r"(divisor)
			 : "rdx", "cc");
}

__attribute__((noipa, used)) static void crashtest_invalid_opcode(void)
{
	__asm__ volatile("ud2");
}

/* Each level keeps a buffer live across the call, so the recursion can be
 * neither a loop nor a tail call; the depth limit is far beyond the stack. */
__attribute__((noipa, used)) static unsigned crashtest_overflow_stack(unsigned depth)
{
	volatile uint8_t buffer[256];
	if (depth > (1u << 30))
		return 0;
	buffer[0] = (uint8_t)depth;
	unsigned deeper = crashtest_overflow_stack(depth + 1);
	return deeper + buffer[0];
}

__attribute__((noipa, used)) static void crashtest_stack_overflow(void)
{
	struct kstack stack = kstack_alloc(OVERFLOW_STACK_PAGES);
	if (!stack.base)
		panic("crashtest: no kernel stack to overflow");
	__asm__ volatile("mov %[top], %%rsp\n\t"
			 "xor %%edi, %%edi\n\t"
			 "call crashtest_overflow_stack"
			 :
			 : [top] "r"(stack.top)
			 : "memory");
	__builtin_unreachable();
}

/* A non-canonical address: the CPU raises #GP, not #PF, and gives no CR2. */
__attribute__((noipa, used)) static void crashtest_general_protection(void)
{
	volatile uint64_t *non_canonical = (volatile uint64_t *)0x8000000000000000UL;
	*non_canonical = 1;
}

/* A stray int3 outside any join-point patch site is a kernel bug. */
__attribute__((noipa, used)) static void crashtest_breakpoint(void)
{
	__asm__ volatile("int3");
}

__attribute__((noipa, used)) static void crashtest_assert_fails(void)
{
	volatile int two = 2;
	ASSERT(two + two == 5);
}

/* A stack freed again after its slot went to a newer stack of its size:
 * kstack refuses before it unmaps the newer stack's pages. */
__attribute__((noipa, used)) static void crashtest_kstack_stale_free(void)
{
	struct kstack stack = kstack_alloc(OVERFLOW_STACK_PAGES);
	if (!stack.base)
		panic("crashtest: no kernel stack to free");
	struct kstack stale = stack, others[STALE_FREE_TRIES], newer = {0, 0, 0, 0};
	kstack_free(&stack);
	unsigned taken = 0;
	while (taken < STALE_FREE_TRIES && newer.base != stale.base) {
		newer = kstack_alloc(OVERFLOW_STACK_PAGES);
		others[taken++] = newer;
	}
	if (newer.base != stale.base)
		panic("crashtest: the freed stack's slot was not taken again");
	for (unsigned i = 0; i + 1 < taken; i++)
		kstack_free(&others[i]);
	kstack_free(&stale);
}

static const struct crash crashes[] = {
    {"page_fault", crash_page_fault},
    {"divide_error", crashtest_divide_by_zero},
    {"invalid_opcode", crashtest_invalid_opcode},
    {"stack_overflow", crashtest_stack_overflow},
    {"assert", crashtest_assert_fails},
    {"general_protection", crashtest_general_protection},
    {"breakpoint", crashtest_breakpoint},
    {"kstack_stale_free", crashtest_kstack_stale_free},
};

static int set_crashtest(const char *value)
{
	if (!value)
		return -1;
	for (size_t i = 0; i < sizeof crashes / sizeof crashes[0]; i++) {
		if (!strcmp(value, crashes[i].name)) {
			selected_crash = &crashes[i];
			return 0;
		}
	}
	return -1;
}
KERNEL_PARAM(crashtest, set_crashtest,
	     "page_fault|divide_error|invalid_opcode|stack_overflow|assert|general_protection|"
	     "breakpoint|kstack_stale_free: crash after boot");

void crashtest_run(void)
{
	if (!selected_crash)
		return;
	pr_info("crashtest: %s: crashing on purpose now\n", selected_crash->name);
	selected_crash->run();
	panic("crashtest: %s did not crash", selected_crash->name);
}
