/*
 * Address spaces.  vm_init builds the kernel's own PML4 and leaves the boot
 * tables behind: the image at KERNEL_VMA with per-section permissions, RAM in
 * the physmap (2 MiB pages where aligned, RW+NX, the kernel's frames too so the
 * weaver can patch text through the alias), and no identity map.  The physmap
 * also holds the first MiB and small firmware regions next to RAM (ACPI
 * tables); other reserved ranges may be devices and need vm_map_mmio.
 *
 * Invariants:
 *  - all 256 kernel-half PML4 entries exist from vm_init on and never change,
 *    so every user space shares the kernel half by copying them once;
 *  - kernel-half tables change only under kernel_space.lock, a user space's
 *    lower half only under its own lock;
 *  - after a leaf changes, vm_tlb_flush_page runs before the lock is dropped,
 *    and vm_tlb_shootdown (other CPUs) after it is dropped, before the call
 *    returns: a caller never frees a frame another CPU can still reach;
 *  - a space's active_cpus has the bit of every CPU whose CR3 holds it (set
 *    before CR3 is loaded, cleared after it is replaced); only a user
 *    space's is asked;
 *  - a CPU may hold a user space none of whose threads runs there: the
 *    scheduler leaves CR3 alone when it switches to a kernel thread (the
 *    kernel half is the same everywhere), so a round trip between a process
 *    and a kernel thread reloads nothing.  vm_space_destroy has every CPU
 *    still holding the space load the kernel's tables first.
 * Until the switch, new page-table frames are written through the boot
 * physmap, which covers only the first 4 GiB: frames come lowest first.
 */
#include <stdint.h>

#include "arch/x86_64/cpu.h"
#include "boot/bootinfo.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "cpu/spinlock.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/internal.h"
#include "mm/mm.h"
#include "panic/panic.h"
#include "smp/smp.h"

#define EFER_NXE              (1UL << 11)
#define BOOT_PHYSMAP_LIMIT    (4UL << 30)
#define LOWER_HALF_END        0x0000800000000000UL
#define FIRMWARE_RESERVED_MAX (16UL << 20)

struct address_space {
	/* vm_space_stamp (first: mm.h reads it in line): new at creation,
	 * unmap and protect */
	uint64_t stamp;
	uint64_t root;        /* physical address of the PML4 */
	uint64_t active_cpus; /* CPUs with this space in CR3 (asked of user spaces only) */
	struct spinlock lock;
};
_Static_assert(offsetof(struct address_space, stamp) == 0, "mm.h's vm_space_stamp reads it first");
_Static_assert(offsetof(struct address_space, root) == VM_SPACE_OFFSET_ROOT &&
		   offsetof(struct address_space, active_cpus) == VM_SPACE_OFFSET_ACTIVE_CPUS,
	       "mm.h's vm_space_switch_on uses them in line");

static struct address_space kernel_space = {0, 0, 0, SPINLOCK_INIT("vm.kernel")};
/* The last stamp given: each is given once, to one space. */
static uint64_t stamps;

static void new_stamp(struct address_space *space)
{
	if (space == &kernel_space)
		return; /* its stamp stays 0: user pages are never found there */
	__atomic_store_n(&space->stamp, __atomic_add_fetch(&stamps, 1, __ATOMIC_RELAXED),
			 __ATOMIC_RELEASE);
}
static bool own_tables_active;

static struct spinlock mmio_lock = SPINLOCK_INIT("vm.mmio");
static uint64_t mmio_next = VM_MMIO_BASE;

extern char __image_start[], __text_end[], __rodata_end[], __image_end[];

/* ---- Environment of the page-table walker ---------------------------------- */

void *pt_table_ptr(uint64_t phys)
{
	return phys_to_virt(phys);
}

uint64_t pt_alloc_table(void)
{
	uint64_t phys = pmm_alloc_frame();
	if (!phys)
		return 0;
	ASSERT(own_tables_active || phys + PAGE_SIZE <= BOOT_PHYSMAP_LIMIT);
	memset(pt_table_ptr(phys), 0, PAGE_SIZE);
	return phys;
}

void pt_free_table(uint64_t phys)
{
	pmm_free_frame(phys);
}

/* ---- TLB ------------------------------------------------------------------- */

/*
 * Two places make a changed translation stale in TLBs: vm_tlb_flush_page on
 * this CPU, under the space's lock, and vm_tlb_shootdown on the others, by a
 * waiting cross-CPU call after the lock is dropped (a CPU spinning on that
 * lock with interrupts off could not answer).  Other CPUs that may hold the
 * translation: every one for the kernel's space, the CPUs whose CR3 holds
 * the space for a user space.  The mask is read after a full fence that
 * orders it after the page-table write; a CPU that loads CR3 later sets its
 * bit first and then sees the new entries, so it needs no call.
 */
static void vm_tlb_flush_page(struct address_space *space, uint64_t virt)
{
	bool kernel_half = virt >= LOWER_HALF_END;
	if (kernel_half || space == &kernel_space || (read_cr3() & PTE_ADDRESS_MASK) == space->root)
		invlpg(virt);
}

static void flush_page_here(void *arg)
{
	invlpg(*(const uint64_t *)arg);
}

static void vm_tlb_shootdown(struct address_space *space, uint64_t virt)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	uint64_t targets = smp_online_mask();
	if (space != &kernel_space && virt < LOWER_HALF_END)
		targets = __atomic_load_n(&space->active_cpus, __ATOMIC_SEQ_CST);
	preempt_disable();
	targets &= ~SMP_CPU_BIT(this_cpu_id());
	if (targets && smp_call(targets, flush_page_here, &virt, SMP_CALL_WAIT))
		panic("vm: TLB shootdown of %#lx from an interrupt handler", virt);
	preempt_enable();
}

/* ---- Checks ---------------------------------------------------------------- */

static bool aligned(uint64_t value)
{
	return (value & (PAGE_SIZE - 1)) == 0;
}

/* -EINVAL unless virt is a canonical page address this space may change. */
static int check_virt(struct address_space *space, uint64_t virt, unsigned flags)
{
	if (!aligned(virt) || !pt_is_canonical(virt))
		return -EINVAL;
	if (virt >= LOWER_HALF_END && (space != &kernel_space || (flags & VM_USER)))
		return -EINVAL;
	return 0;
}

/* ---- The address-space API ------------------------------------------------- */

struct address_space *vm_kernel_space(void)
{
	return &kernel_space;
}

int vm_map(struct address_space *space, uint64_t virt, uint64_t phys, unsigned flags)
{
	int error = check_virt(space, virt, flags);
	if (error || !aligned(phys) || (phys & ~PTE_ADDRESS_MASK))
		return error ? error : -EINVAL;
	uint64_t irq = spin_lock_irqsave(&space->lock);
	error = pt_map(space->root, virt, phys, pt_flags_from_vm(flags), PT_PAGE_4K);
	spin_unlock_irqrestore(&space->lock, irq);
	return error;
}

int64_t vm_unmap(struct address_space *space, uint64_t virt)
{
	int error = check_virt(space, virt, 0);
	if (error)
		return error;
	uint64_t old_phys;
	uint64_t irq = spin_lock_irqsave(&space->lock);
	error = pt_unmap(space->root, virt, &old_phys);
	if (!error) {
		new_stamp(space);
		vm_tlb_flush_page(space, virt);
	}
	spin_unlock_irqrestore(&space->lock, irq);
	if (error)
		return error;
	vm_tlb_shootdown(space, virt);
	return (int64_t)old_phys;
}

/* Threads a detached table onto a list through its first entry: the table
 * is empty, and a page-aligned address there reads as "not present" to a
 * CPU that still walks into it before the shootdown. */
static void link_detached_table(uint64_t table, void *ctx)
{
	uint64_t *head = ctx;
	uint64_t *entries = pt_table_ptr(table);
	entries[0] = *head;
	*head = table;
}

static void free_detached_tables(uint64_t table)
{
	while (table) {
		uint64_t *entries = pt_table_ptr(table);
		uint64_t next = entries[0];
		entries[0] = 0;
		pt_free_table(table);
		table = next;
	}
}

/* The tables are detached under the lock, every CPU that may cache a walk
 * through them is flushed (INVLPG drops the paging-structure caches too),
 * and only then are they freed, as vm_unmap does with a page's frame. */
void vm_free_tables(struct address_space *space, uint64_t start, uint64_t end)
{
	if (space == &kernel_space || start >= end)
		return;
	uint64_t detached = 0;
	uint64_t irq = spin_lock_irqsave(&space->lock);
	pt_detach_empty_tables(space->root, start, end, link_detached_table, &detached);
	if (detached) {
		new_stamp(space);
		vm_tlb_flush_page(space, start & ~(PAGE_SIZE - 1));
	}
	spin_unlock_irqrestore(&space->lock, irq);
	if (!detached)
		return;
	vm_tlb_shootdown(space, start & ~(PAGE_SIZE - 1));
	free_detached_tables(detached);
}

int vm_protect(struct address_space *space, uint64_t virt, unsigned flags)
{
	int error = check_virt(space, virt, flags);
	if (error)
		return error;
	uint64_t irq = spin_lock_irqsave(&space->lock);
	error = pt_protect(space->root, virt, pt_flags_from_vm(flags));
	if (!error) {
		new_stamp(space);
		vm_tlb_flush_page(space, virt);
	}
	spin_unlock_irqrestore(&space->lock, irq);
	if (!error)
		vm_tlb_shootdown(space, virt);
	return error;
}

int vm_translate(struct address_space *space, uint64_t virt, uint64_t *phys, unsigned *flags)
{
	if (!pt_is_canonical(virt))
		return -EINVAL;
	uint64_t found, pte;
	uint64_t irq = spin_lock_irqsave(&space->lock);
	int error = pt_lookup(space->root, virt, &found, &pte);
	spin_unlock_irqrestore(&space->lock, irq);
	if (error)
		return error;
	if (phys)
		*phys = found;
	if (flags)
		*flags = pt_flags_to_vm(pte);
	return 0;
}

const void *vm_user_peek(uint64_t virt)
{
	if (!pt_is_canonical(virt) || virt >= LOWER_HALF_END)
		return NULL;
	/* Interrupts off: vm_free_tables' shootdown waits for this walk to end
	 * before it frees a table the walk may be reading. */
	uint64_t irq = irq_save();
	uint64_t phys = pt_peek_user(read_cr3() & PTE_ADDRESS_MASK, virt);
	irq_restore(irq);
	if (phys == PT_NO_PAGE || (phys & PT_PEEK_DEVICE) || phys >= pmm_ram_end())
		return NULL;
	return phys_to_virt(phys);
}

uint64_t vm_next_mapped(struct address_space *space, uint64_t virt, uint64_t end)
{
	if (!pt_is_canonical(virt) || !pt_is_canonical(end - 1) || (virt & (PAGE_SIZE - 1)))
		return end;
	uint64_t irq = spin_lock_irqsave(&space->lock);
	uint64_t found = pt_next_mapped(space->root, virt, end);
	spin_unlock_irqrestore(&space->lock, irq);
	return found;
}

struct address_space *vm_space_create(void)
{
	struct address_space *space = kzalloc(sizeof *space);
	if (!space)
		return NULL;
	space->root = pt_alloc_table();
	if (!space->root) {
		kfree(space);
		return NULL;
	}
	spin_init(&space->lock, "vm.user");
	new_stamp(space);
	uint64_t *entries = pt_table_ptr(space->root);
	const uint64_t *kernel_entries = pt_table_ptr(kernel_space.root);
	for (unsigned i = PT_KERNEL_FIRST_SLOT; i < PT_ENTRIES; i++)
		entries[i] = kernel_entries[i];
	return space;
}

/* A CPU whose CR3 still holds arg (a kernel thread runs there on it) loads
 * the kernel's tables instead; one running a thread of arg cannot exist,
 * since arg is being destroyed. */
static void drop_space_here(void *arg)
{
	uint64_t irq = irq_save();
	if (this_cpu()->loaded_space == arg)
		vm_space_activate(&kernel_space);
	irq_restore(irq);
}

void vm_space_destroy(struct address_space *space)
{
	ASSERT(space != &kernel_space);
	preempt_disable();
	drop_space_here(space);
	uint64_t holders =
	    __atomic_load_n(&space->active_cpus, __ATOMIC_SEQ_CST) & ~SMP_CPU_BIT(this_cpu_id());
	if (holders && smp_call(holders, drop_space_here, space, SMP_CALL_WAIT))
		panic("vm: an address space destroyed from an interrupt handler");
	preempt_enable();
	ASSERT((read_cr3() & PTE_ADDRESS_MASK) != space->root);
	ASSERT(__atomic_load_n(&space->active_cpus, __ATOMIC_SEQ_CST) == 0);
	pt_destroy_user(space->root);
	kfree(space);
}

/* Interrupts off, so the CPU and its loaded_space stay ours; space is not
 * the one loaded. */
void vm_space_switch(struct address_space *space)
{
	vm_space_switch_on(this_cpu(), space);
}

void vm_space_activate(struct address_space *space)
{
	uint64_t irq = irq_save();
	if (space != this_cpu()->loaded_space)
		vm_space_switch(space);
	else if ((read_cr3() & PTE_ADDRESS_MASK) != space->root)
		write_cr3(space->root);
	irq_restore(irq);
}

uint64_t virt_to_phys(const void *virt)
{
	uint64_t address = (uint64_t)virt;
	if (address >= (uint64_t)__image_start && address < (uint64_t)__image_end)
		return address - KERNEL_VMA;
	if (address >= PHYSMAP_BASE && address < PHYSMAP_BASE + PHYSMAP_MAX_BYTES)
		return address - PHYSMAP_BASE;
	uint64_t phys;
	if (vm_translate(&kernel_space, address, &phys, NULL))
		return VM_NO_PHYS;
	return phys;
}

/* ---- Device memory --------------------------------------------------------- */

static uint64_t reserve_mmio_window(uint64_t length)
{
	uint64_t irq = spin_lock_irqsave(&mmio_lock);
	uint64_t virt = mmio_next;
	if (length > VM_MMIO_BASE + VM_MMIO_SIZE - virt)
		virt = 0;
	else
		mmio_next += length + PAGE_SIZE; /* an unmapped page between windows */
	spin_unlock_irqrestore(&mmio_lock, irq);
	return virt;
}

void *vm_map_mmio(uint64_t phys, uint64_t length)
{
	uint64_t first = phys & ~(PAGE_SIZE - 1);
	uint64_t end = (phys + length + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	if (length == 0 || end <= first || (end & ~PTE_ADDRESS_MASK))
		return NULL;
	uint64_t window = reserve_mmio_window(end - first);
	if (!window)
		return NULL;
	for (uint64_t offset = 0; offset < end - first; offset += PAGE_SIZE) {
		if (vm_map(&kernel_space, window + offset, first + offset, VM_WRITE | VM_NOCACHE)) {
			while (offset) {
				offset -= PAGE_SIZE;
				vm_unmap(&kernel_space, window + offset);
			}
			return NULL;
		}
	}
	return (void *)(window + (phys - first));
}

/* ---- Building the kernel's tables ------------------------------------------ */

static void map_or_panic(uint64_t virt, uint64_t phys, uint64_t pte, enum pt_page_size size)
{
	int error = pt_map(kernel_space.root, virt, phys, pte, size);
	if (error)
		panic("vm: cannot map %#lx -> %#lx at boot (%d)", virt, phys, error);
}

static void map_image_part(const char *start, const char *end, unsigned flags)
{
	for (uint64_t virt = (uint64_t)start; virt < (uint64_t)end; virt += PAGE_SIZE)
		map_or_panic(virt, virt - KERNEL_VMA, pt_flags_from_vm(flags), PT_PAGE_4K);
}

static void map_physmap_range(uint64_t base, uint64_t end)
{
	uint64_t pte = pt_flags_from_vm(VM_WRITE);
	for (uint64_t phys = base; phys < end;) {
		bool large = (phys & (LARGE_PAGE_SIZE - 1)) == 0 && end - phys >= LARGE_PAGE_SIZE;
		map_or_panic(PHYSMAP_BASE + phys, phys, pte, large ? PT_PAGE_2M : PT_PAGE_4K);
		phys += large ? LARGE_PAGE_SIZE : PAGE_SIZE;
	}
}

static bool is_ram(uint32_t type)
{
	return type == BOOT_REGION_USABLE || type == BOOT_REGION_ACPI_RECLAIMABLE ||
	       type == BOOT_REGION_ACPI_NVS;
}

/* Firmware parks its tables in small reserved regions right next to RAM
 * (QEMU: the top 128 KiB of low memory); those are mapped so phys_to_virt
 * reaches ACPI tables.  Reserved regions away from RAM may be device memory
 * and are left to vm_map_mmio. */
static bool is_firmware_ram(const struct boot_info *boot, const struct boot_region *r)
{
	if (r->type != BOOT_REGION_RESERVED || r->length > FIRMWARE_RESERVED_MAX)
		return false;
	for (unsigned i = 0; i < boot->region_count; i++) {
		const struct boot_region *ram = &boot->regions[i];
		if (ram->type == BOOT_REGION_USABLE &&
		    (ram->base + ram->length == r->base || r->base + r->length == ram->base))
			return true;
	}
	return false;
}

/* RAM and firmware ranges (whole pages, sorted, merged), with the first MiB
 * (BIOS data, the RSDP search area) in front. */
static unsigned collect_physmap_ranges(struct pmm_range *ranges)
{
	const struct boot_info *boot = bootinfo();
	unsigned count = 0;
	ranges[count++] = (struct pmm_range){0, 1UL << 20};
	for (unsigned i = 0; i < boot->region_count; i++) {
		const struct boot_region *r = &boot->regions[i];
		uint64_t base = r->base & ~(PAGE_SIZE - 1);
		uint64_t end = (r->base + r->length + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
		if (end > PHYSMAP_MAX_BYTES)
			end = PHYSMAP_MAX_BYTES;
		if (!(is_ram(r->type) || is_firmware_ram(boot, r)) || end <= base)
			continue;
		unsigned at = count++;
		while (at > 0 && ranges[at - 1].base > base) {
			ranges[at] = ranges[at - 1];
			at--;
		}
		ranges[at] = (struct pmm_range){base, end};
	}
	unsigned merged = 0;
	for (unsigned i = 1; i < count; i++) {
		if (ranges[i].base <= ranges[merged].end) {
			if (ranges[i].end > ranges[merged].end)
				ranges[merged].end = ranges[i].end;
		} else {
			ranges[++merged] = ranges[i];
		}
	}
	return merged + 1;
}

static void build_kernel_half(void)
{
	uint64_t *pml4 = pt_table_ptr(kernel_space.root);
	for (unsigned i = PT_KERNEL_FIRST_SLOT; i < PT_ENTRIES; i++) {
		uint64_t pdpt = pt_alloc_table();
		if (!pdpt)
			panic("vm: no memory for the kernel's page tables");
		pml4[i] = pdpt | PTE_PRESENT | PTE_WRITE;
	}
}

void vm_init(void)
{
	static struct pmm_range ranges[BOOT_MAX_REGIONS + 1];
	pt_set_nx_supported(rdmsr(MSR_EFER) & EFER_NXE);
	kernel_space.root = pt_alloc_table();
	if (!kernel_space.root)
		panic("vm: no memory for the kernel's page tables");
	build_kernel_half();

	map_image_part(__image_start, __text_end, VM_EXEC);
	map_image_part(__text_end, __rodata_end, VM_READ);
	map_image_part(__rodata_end, __image_end, VM_WRITE);
	unsigned count = collect_physmap_ranges(ranges);
	for (unsigned i = 0; i < count; i++)
		map_physmap_range(ranges[i].base, ranges[i].end);

	write_cr3(kernel_space.root);
	own_tables_active = true;
	/* Every CPU starts on the kernel's tables (the others load this one's
	 * CR3 when they come up): the switch then always finds a space to
	 * leave, and tests for none nowhere. */
	for (unsigned i = 0; i < MAX_CPUS; i++)
		cpus[i].loaded_space = &kernel_space;
}
