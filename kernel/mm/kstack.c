/*
 * Kernel stacks in their own region of the kernel half.  The region is cut
 * into VM_KSTACK_SLOT_SIZE slots; a stack of n pages occupies the top n pages
 * of a slot and everything below it in the slot stays unmapped, so running off
 * the bottom page-faults in the guard area instead of overwriting a neighbour.
 *
 * Invariant, under `lock`: a slot's bit is set exactly while a stack lives in
 * it, and slot_pages[] holds that stack's size in pages.
 */
#include <stddef.h>
#include <stdint.h>

#include "cpu/spinlock.h"
#include "lib/string.h"
#include "mm/internal.h"
#include "mm/mm.h"
#include "panic/panic.h"

#define MAX_STACK_PAGES (VM_KSTACK_SLOT_SIZE / PAGE_SIZE - 1)

static struct spinlock lock = SPINLOCK_INIT("kstack");
static uint64_t slot_used[VM_KSTACK_SLOTS / 64];
static uint8_t slot_pages[VM_KSTACK_SLOTS];
static unsigned stacks_in_use;

_Static_assert(MAX_STACK_PAGES < 256, "slot_pages holds a byte per slot");

/* Claims a free slot for a stack of pages; returns its index or -1. */
static long claim_slot(size_t pages)
{
	uint64_t irq = spin_lock_irqsave(&lock);
	for (unsigned word = 0; word < VM_KSTACK_SLOTS / 64; word++) {
		if (slot_used[word] == ~0UL)
			continue;
		unsigned bit = (unsigned)__builtin_ctzll(~slot_used[word]);
		unsigned slot = word * 64 + bit;
		slot_used[word] |= 1UL << bit;
		slot_pages[slot] = (uint8_t)pages;
		stacks_in_use++;
		spin_unlock_irqrestore(&lock, irq);
		return slot;
	}
	spin_unlock_irqrestore(&lock, irq);
	return -1;
}

static void release_slot(unsigned slot)
{
	uint64_t irq = spin_lock_irqsave(&lock);
	ASSERT(slot_used[slot / 64] & (1UL << (slot % 64)));
	slot_used[slot / 64] &= ~(1UL << (slot % 64));
	slot_pages[slot] = 0;
	stacks_in_use--;
	spin_unlock_irqrestore(&lock, irq);
}

static uint64_t slot_top(unsigned slot)
{
	return VM_KSTACK_BASE + (uint64_t)(slot + 1) * VM_KSTACK_SLOT_SIZE;
}

/* Unmaps [base, top) and frees the frames behind it. */
static void unmap_stack_pages(uint64_t base, uint64_t top)
{
	for (uint64_t virt = base; virt < top; virt += PAGE_SIZE) {
		int64_t phys = vm_unmap(vm_kernel_space(), virt);
		ASSERT(phys >= 0);
		pmm_free_frame((uint64_t)phys);
	}
}

/* Maps fresh zeroed frames over [base, top); on failure undoes its work. */
static int map_stack_pages(uint64_t base, uint64_t top)
{
	for (uint64_t virt = top; virt > base;) {
		uint64_t frame = pmm_alloc_frame();
		if (!frame) {
			unmap_stack_pages(virt, top);
			return -1;
		}
		memset(phys_to_virt(frame), 0, PAGE_SIZE);
		virt -= PAGE_SIZE;
		if (vm_map(vm_kernel_space(), virt, frame, VM_WRITE)) {
			pmm_free_frame(frame);
			unmap_stack_pages(virt + PAGE_SIZE, top);
			return -1;
		}
	}
	return 0;
}

struct kstack kstack_alloc(size_t pages)
{
	struct kstack stack = {0, 0, 0};
	if (pages == 0 || pages > MAX_STACK_PAGES)
		return stack;
	long slot = claim_slot(pages);
	if (slot < 0)
		return stack;
	uint64_t top = slot_top((unsigned)slot);
	uint64_t base = top - pages * PAGE_SIZE;
	if (map_stack_pages(base, top)) {
		release_slot((unsigned)slot);
		return stack;
	}
	return (struct kstack){base, top, pages};
}

void kstack_free(struct kstack *stack)
{
	ASSERT(stack->base >= VM_KSTACK_BASE && stack->pages);
	unsigned slot = (unsigned)((stack->base - VM_KSTACK_BASE) / VM_KSTACK_SLOT_SIZE);
	ASSERT(stack->top == slot_top(slot) && slot_pages[slot] == stack->pages);
	unmap_stack_pages(stack->base, stack->top);
	release_slot(slot);
	*stack = (struct kstack){0, 0, 0};
}

bool kstack_is_guard(uint64_t address)
{
	if (address < VM_KSTACK_BASE ||
	    address >= VM_KSTACK_BASE + (uint64_t)VM_KSTACK_SLOTS * VM_KSTACK_SLOT_SIZE)
		return false;
	unsigned slot = (unsigned)((address - VM_KSTACK_BASE) / VM_KSTACK_SLOT_SIZE);
	unsigned pages = __atomic_load_n(&slot_pages[slot], __ATOMIC_RELAXED);
	return pages && address < slot_top(slot) - pages * PAGE_SIZE;
}

unsigned kstack_count_in_use(void)
{
	return __atomic_load_n(&stacks_in_use, __ATOMIC_RELAXED);
}
