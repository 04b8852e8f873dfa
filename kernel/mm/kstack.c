/*
 * Kernel stacks in their own region of the kernel half.  The region is cut
 * into VM_KSTACK_SLOT_SIZE slots; a stack of n pages occupies the top n pages
 * of a slot and everything below it in the slot stays unmapped, so running off
 * the bottom page-faults in the guard area instead of overwriting a neighbour.
 *
 * Invariant, under `lock`: a slot's bit is set exactly while a stack lives in
 * it, and slot_pages[] holds that stack's size in pages; its freeing bit is
 * set while kstack_free unmaps it; slot_generation[] counts the stacks the
 * slot has held, and a stack carries the count it was given.  So a second
 * free of a stack is caught before it unmaps anything, whether the first is
 * done (the slot is free, or holds a newer stack of the same size, whose
 * pages it would otherwise unmap) or still running on another CPU.
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
static uint64_t slot_freeing[VM_KSTACK_SLOTS / 64];
static uint8_t slot_pages[VM_KSTACK_SLOTS];
static uint32_t slot_generation[VM_KSTACK_SLOTS];
static unsigned stacks_in_use;

_Static_assert(MAX_STACK_PAGES < 256, "slot_pages holds a byte per slot");

static bool bit_test(const uint64_t *bits, unsigned slot)
{
	return bits[slot / 64] & (1UL << (slot % 64));
}

/* Claims a free slot for a stack of pages; returns its index or -1, and
 * the slot's new generation in *generation. */
static long claim_slot(size_t pages, uint32_t *generation)
{
	uint64_t irq = spin_lock_irqsave(&lock);
	for (unsigned word = 0; word < VM_KSTACK_SLOTS / 64; word++) {
		if (slot_used[word] == ~0UL)
			continue;
		unsigned bit = (unsigned)__builtin_ctzll(~slot_used[word]);
		unsigned slot = word * 64 + bit;
		slot_used[word] |= 1UL << bit;
		slot_pages[slot] = (uint8_t)pages;
		*generation = ++slot_generation[slot];
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
	ASSERT(bit_test(slot_used, slot));
	slot_used[slot / 64] &= ~(1UL << (slot % 64));
	slot_freeing[slot / 64] &= ~(1UL << (slot % 64));
	slot_pages[slot] = 0;
	stacks_in_use--;
	spin_unlock_irqrestore(&lock, irq);
}

/* Why stack, in slot, may not be freed now, or NULL; lock held. */
static const char *free_refused_locked(const struct kstack *stack, unsigned slot)
{
	if (!bit_test(slot_used, slot))
		return "the slot is free: freed twice";
	if (stack->generation != slot_generation[slot])
		return "the slot holds a newer stack: a stale free";
	if (bit_test(slot_freeing, slot))
		return "another CPU is freeing it: freed twice at once";
	if (slot_pages[slot] != stack->pages)
		return "its size is not the slot's";
	return NULL;
}

/* Marks stack's slot as being freed, or panics saying why it may not be. */
static void begin_free(const struct kstack *stack, unsigned slot)
{
	uint64_t irq = spin_lock_irqsave(&lock);
	const char *refused = free_refused_locked(stack, slot);
	if (!refused)
		slot_freeing[slot / 64] |= 1UL << (slot % 64);
	uint32_t generation = slot_generation[slot];
	spin_unlock_irqrestore(&lock, irq);
	if (refused)
		panic("kstack: free of %#lx-%#lx (slot %u, generation %u; the slot's: %u): %s",
		      stack->base, stack->top, slot, stack->generation, generation, refused);
}

static uint64_t slot_top(unsigned slot)
{
	return VM_KSTACK_BASE + (uint64_t)(slot + 1) * VM_KSTACK_SLOT_SIZE;
}

/* A page of a live stack was found unmapped: says which of its pages still
 * are, which tells a page unmapped behind kstack's back (one) from a stack
 * freed twice (from its first page up). */
static __attribute__((noreturn)) void lost_page(uint64_t virt, uint64_t base, uint64_t top,
						int64_t error)
{
	char mapped[MAX_STACK_PAGES + 1];
	unsigned count = 0;
	for (uint64_t page = base; page < top && count < MAX_STACK_PAGES; page += PAGE_SIZE)
		mapped[count++] =
		    vm_translate(vm_kernel_space(), page, NULL, NULL) == 0 ? 'm' : '-';
	mapped[count] = '\0';
	panic("kstack: page %#lx of the stack %#lx-%#lx (slot %lu) is not mapped (%ld); its "
	      "pages from the lowest, m mapped: %s",
	      virt, base, top, (base - VM_KSTACK_BASE) / VM_KSTACK_SLOT_SIZE, (long)error, mapped);
}

/* Unmaps [base, top) and frees the frames behind it. */
static void unmap_stack_pages(uint64_t base, uint64_t top)
{
	for (uint64_t virt = base; virt < top; virt += PAGE_SIZE) {
		int64_t phys = vm_unmap(vm_kernel_space(), virt);
		if (phys < 0)
			lost_page(virt, base, top, phys);
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
	struct kstack stack = {0, 0, 0, 0};
	if (pages == 0 || pages > MAX_STACK_PAGES)
		return stack;
	uint32_t generation;
	long slot = claim_slot(pages, &generation);
	if (slot < 0)
		return stack;
	uint64_t top = slot_top((unsigned)slot);
	uint64_t base = top - pages * PAGE_SIZE;
	if (map_stack_pages(base, top)) {
		release_slot((unsigned)slot);
		return stack;
	}
	return (struct kstack){base, top, pages, generation};
}

void kstack_free(struct kstack *stack)
{
	if (stack->base < VM_KSTACK_BASE || !stack->pages)
		panic("kstack: free of %#lx-%#lx (%lu pages): no stack (freed already?)",
		      stack->base, stack->top, (unsigned long)stack->pages);
	unsigned slot = (unsigned)((stack->base - VM_KSTACK_BASE) / VM_KSTACK_SLOT_SIZE);
	ASSERT(slot < VM_KSTACK_SLOTS && stack->top == slot_top(slot));
	begin_free(stack, slot);
	unmap_stack_pages(stack->base, stack->top);
	release_slot(slot);
	*stack = (struct kstack){0, 0, 0, 0};
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
