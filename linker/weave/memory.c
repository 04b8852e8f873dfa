/*
 * Kernel memory for aspects.  Each region of an aspect (text or data) gets a
 * slot of LINKER_SLOT_SIZE in the linker's own kernel virtual area, mapped
 * page by page from fresh frames: writable while the linker fills it in, then
 * text becomes read-only and executable (data is never executable).  The gap
 * after each region stays unmapped, so an aspect running off its end faults
 * instead of reaching its neighbour.  slot_owner[] maps a slot back to its
 * aspect without a lock: the fault and tick handlers read it to decide
 * whether an instruction pointer lies in aspect text; it is set before the
 * aspect's code can run and cleared only after a grace period.
 */
#include "cpu/spinlock.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "linker/weave/internal.h"
#include "mm/mm.h"
#include "panic/panic.h"

static struct spinlock slots_lock = SPINLOCK_INIT("linker slots");
static uint64_t slots_used; /* bit i: slot i holds a region */
static struct aspect *slot_owner[LINKER_SLOTS];

static uint64_t slot_base(int slot)
{
	return LINKER_VM_BASE + (uint64_t)slot * LINKER_SLOT_SIZE;
}

static int slot_of(uint64_t address)
{
	if (address < LINKER_VM_BASE || address >= slot_base(LINKER_SLOTS))
		return -1;
	return (int)((address - LINKER_VM_BASE) / LINKER_SLOT_SIZE);
}

static int take_slot(void)
{
	_Static_assert(LINKER_SLOTS <= 64, "one word of slot bits");
	uint64_t flags = spin_lock_irqsave(&slots_lock);
	int slot = -1;
	for (int i = 0; i < LINKER_SLOTS && slot < 0; i++)
		if (!(slots_used & (1ULL << i)))
			slot = i;
	if (slot >= 0)
		slots_used |= 1ULL << slot;
	spin_unlock_irqrestore(&slots_lock, flags);
	return slot;
}

static void give_slot(int slot)
{
	uint64_t flags = spin_lock_irqsave(&slots_lock);
	slots_used &= ~(1ULL << slot);
	__atomic_store_n(&slot_owner[slot], NULL, __ATOMIC_RELEASE);
	spin_unlock_irqrestore(&slots_lock, flags);
}

static size_t pages_of(size_t size)
{
	return (size + PAGE_SIZE - 1) / PAGE_SIZE;
}

static void unmap_pages(uint64_t base, size_t pages)
{
	for (size_t i = 0; i < pages; i++) {
		int64_t phys = vm_unmap(vm_kernel_space(), base + i * PAGE_SIZE);
		if (phys >= 0)
			pmm_free_frame((uint64_t)phys);
	}
}

static int map_pages(uint64_t base, size_t pages)
{
	for (size_t i = 0; i < pages; i++) {
		uint64_t frame = pmm_alloc_frame();
		if (!frame) {
			unmap_pages(base, i);
			return -ENOMEM;
		}
		memset(phys_to_virt(frame), 0, PAGE_SIZE);
		int err = vm_map(vm_kernel_space(), base + i * PAGE_SIZE, frame, VM_WRITE);
		if (err) {
			pmm_free_frame(frame);
			unmap_pages(base, i);
			return err;
		}
	}
	return 0;
}

static void *alloc_region(void *env, enum linker_region region, size_t size)
{
	if (size == 0 || size > LINKER_SLOT_SIZE - PAGE_SIZE)
		return NULL;
	int slot = take_slot();
	if (slot < 0)
		return NULL;
	if (map_pages(slot_base(slot), pages_of(size))) {
		give_slot(slot);
		return NULL;
	}
	return (void *)slot_base(slot);
}

static void free_region(void *env, enum linker_region region, void *base, size_t size)
{
	int slot = slot_of((uint64_t)base);
	ASSERT(slot >= 0 && (uint64_t)base == slot_base(slot));
	unmap_pages((uint64_t)base, pages_of(size));
	give_slot(slot);
}

static void *alloc_scratch(void *env, size_t size)
{
	return kzalloc(size ? size : 1);
}

static void free_scratch(void *env, void *pointer)
{
	kfree(pointer);
}

static const struct linker_env kernel_env = {
    .alloc_region = alloc_region,
    .free_region = free_region,
    .alloc = alloc_scratch,
    .free = free_scratch,
    .resolve = linker_abi_resolve,
    .env = NULL,
};

const struct linker_env *linker_kernel_env(void)
{
	return &kernel_env;
}

int linker_protect_text(struct aspect *aspect)
{
	uint64_t base = (uint64_t)aspect->object.region[LINKER_REGION_TEXT];
	size_t pages = pages_of(aspect->object.region_size[LINKER_REGION_TEXT]);
	for (size_t i = 0; base && i < pages; i++) {
		int err = vm_protect(vm_kernel_space(), base + i * PAGE_SIZE, VM_EXEC);
		if (err)
			return err;
	}
	return 0;
}

void linker_claim_slots(struct aspect *aspect)
{
	for (int r = 0; r < LINKER_REGION_COUNT; r++) {
		int slot = slot_of((uint64_t)aspect->object.region[r]);
		aspect->slot[r] = slot;
		if (slot >= 0)
			__atomic_store_n(&slot_owner[slot], aspect, __ATOMIC_RELEASE);
	}
}

void linker_free_regions(struct aspect *aspect)
{
	linker_release_object(&aspect->object, &kernel_env, false);
	aspect->slot[LINKER_REGION_TEXT] = aspect->slot[LINKER_REGION_DATA] = -1;
}

struct aspect *linker_text_owner(uint64_t address)
{
	int slot = slot_of(address);
	if (slot < 0)
		return NULL;
	struct aspect *aspect = __atomic_load_n(&slot_owner[slot], __ATOMIC_ACQUIRE);
	if (!aspect || !linker_object_contains(&aspect->object, LINKER_REGION_TEXT, address, 1))
		return NULL;
	return aspect;
}
