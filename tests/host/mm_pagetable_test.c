// host-test-sources: kernel/mm/pagetable.c tests/host/shim/mm_pt_shim.c tests/host/shim/mm_shim.c
/*
 * The page-table walker against heap-backed tables: map, unmap, protect and
 * translate at both page sizes, splitting 2 MiB pages, -ENOMEM without
 * corruption, freeing a user half, and a random run checked against a model.
 */
#include <stdio.h>
#include <stdlib.h>

#include "lib/errno.h"
#include "mm/internal.h"
#include "mm/mm.h"
#include "mm_shim.h"

#define MiB       (1UL << 20)
#define USER_BASE 0x0000000040000000UL

static uint64_t new_root(void)
{
	return pt_alloc_table();
}

static unsigned vm_flags_at(uint64_t root, uint64_t virt, uint64_t *phys)
{
	uint64_t pte;
	if (pt_lookup(root, virt, phys, &pte))
		return ~0u;
	return pt_flags_to_vm(pte);
}

static void map_translate_unmap(void)
{
	uint64_t root = new_root(), phys;
	uint64_t pte = pt_flags_from_vm(VM_WRITE | VM_USER);
	EXPECT(pt_map(root, USER_BASE, 0x123000, pte, PT_PAGE_4K) == 0);
	EXPECT(vm_flags_at(root, USER_BASE + 0x45, &phys) == (VM_WRITE | VM_USER));
	EXPECT(phys == 0x123045);
	EXPECT(pt_map(root, USER_BASE, 0x456000, pte, PT_PAGE_4K) == -EEXIST);
	EXPECT(pt_lookup(root, USER_BASE + 4096, &phys, &pte) == -ENOENT);
	EXPECT(pt_unmap(root, USER_BASE, &phys) == 0 && phys == 0x123000);
	EXPECT(pt_lookup(root, USER_BASE, &phys, &pte) == -ENOENT);
	EXPECT(pt_unmap(root, USER_BASE, &phys) == -ENOENT);
	EXPECT(pt_protect(root, USER_BASE, pte) == -ENOENT);
	pt_destroy_user(root);
	EXPECT(mm_shim_tables_live() == 0);
}

static void flags_round_trip(void)
{
	for (unsigned flags = 0; flags < 16; flags++)
		EXPECT(pt_flags_to_vm(pt_flags_from_vm(flags)) == flags);
	EXPECT(pt_flags_from_vm(VM_READ) & PTE_NX);
	EXPECT(pt_flags_from_vm(VM_NOCACHE) & PTE_PCD);
	pt_set_nx_supported(false);
	EXPECT(!(pt_flags_from_vm(VM_READ) & PTE_NX));
	pt_set_nx_supported(true);
	EXPECT(pt_is_canonical(0x00007fffffffffffUL) && pt_is_canonical(0xffff800000000000UL));
	EXPECT(!pt_is_canonical(0x0000800000000000UL) && !pt_is_canonical(0xfff0000000000000UL));
}

static void protect_keeps_address(void)
{
	uint64_t root = new_root(), phys;
	EXPECT(pt_map(root, USER_BASE, 0x7000, pt_flags_from_vm(VM_WRITE), PT_PAGE_4K) == 0);
	EXPECT(pt_protect(root, USER_BASE, pt_flags_from_vm(VM_EXEC | VM_USER)) == 0);
	EXPECT(vm_flags_at(root, USER_BASE, &phys) == (VM_EXEC | VM_USER) && phys == 0x7000);
	pt_destroy_user(root);
}

/* A PROT_NONE leaf keeps its frame but is not present: the MMU and the
 * fault-free peek see no page, the walker sees it mapped (lookup, the next
 * mapped page, no map over it, unmap hands its frame back), and protecting
 * it again makes the same frame present. */
static void protnone_keeps_the_frame(void)
{
	uint64_t root = new_root(), phys, pte;
	EXPECT(pt_map(root, USER_BASE, 0x123000, pt_flags_from_vm(VM_WRITE | VM_USER),
		      PT_PAGE_4K) == 0);
	EXPECT(pt_protect(root, USER_BASE, pt_flags_from_vm(VM_NONE)) == 0);
	EXPECT(pt_lookup(root, USER_BASE, &phys, &pte) == 0 && !(pte & PTE_PRESENT));
	EXPECT(phys == 0x123000 && pt_flags_to_vm(pte) == VM_NONE);
	EXPECT(pt_peek_user(root, USER_BASE) == PT_NO_PAGE);
	EXPECT(pt_next_mapped(root, USER_BASE - 4096, USER_BASE + 4096) == USER_BASE);
	EXPECT(pt_map(root, USER_BASE, 0x456000, pt_flags_from_vm(VM_USER), PT_PAGE_4K) == -EEXIST);
	EXPECT(pt_protect(root, USER_BASE, pt_flags_from_vm(VM_WRITE | VM_USER)) == 0);
	EXPECT(vm_flags_at(root, USER_BASE, &phys) == (VM_WRITE | VM_USER) && phys == 0x123000);
	EXPECT(pt_peek_user(root, USER_BASE) == 0x123000);
	EXPECT(pt_map(root, USER_BASE + 4096, 0x789000, pt_flags_from_vm(VM_NONE), PT_PAGE_4K) ==
	       0);
	EXPECT(vm_flags_at(root, USER_BASE + 4096, &phys) == VM_NONE && phys == 0x789000);
	EXPECT(pt_unmap(root, USER_BASE + 4096, &phys) == 0 && phys == 0x789000);
	EXPECT(pt_lookup(root, USER_BASE + 4096, &phys, &pte) == -ENOENT);
	pt_destroy_user(root);
	EXPECT(mm_shim_tables_live() == 0);
}

static void large_pages_split(void)
{
	uint64_t root = new_root(), phys;
	uint64_t virt = USER_BASE + 2 * MiB, frame = 0x40000000;
	EXPECT(pt_map(root, virt, frame, pt_flags_from_vm(VM_WRITE), PT_PAGE_2M) == 0);
	EXPECT(vm_flags_at(root, virt + 0x12345, &phys) == (VM_WRITE | VM_LARGE));
	EXPECT(phys == frame + 0x12345);
	EXPECT(pt_map(root, virt + 4096, 0x1000, 0, PT_PAGE_4K) == -EEXIST);
	/* Unmapping one 4 KiB page splits the 2 MiB page around it. */
	EXPECT(pt_unmap(root, virt + 5 * 4096, &phys) == 0 && phys == frame + 5 * 4096);
	EXPECT(vm_flags_at(root, virt + 5 * 4096, &phys) == ~0u);
	for (unsigned i = 0; i < 512; i++) {
		if (i == 5)
			continue;
		EXPECT(vm_flags_at(root, virt + i * 4096UL, &phys) == VM_WRITE);
		EXPECT(phys == frame + i * 4096UL);
	}
	/* Protecting one page of another 2 MiB page splits it too. */
	EXPECT(pt_map(root, virt + 2 * MiB, frame + 2 * MiB, pt_flags_from_vm(0), PT_PAGE_2M) == 0);
	EXPECT(pt_protect(root, virt + 2 * MiB, pt_flags_from_vm(VM_WRITE)) == 0);
	EXPECT(vm_flags_at(root, virt + 2 * MiB, &phys) == VM_WRITE);
	EXPECT(vm_flags_at(root, virt + 2 * MiB + 4096, &phys) == 0);
	pt_destroy_user(root);
	EXPECT(mm_shim_tables_live() == 0);
}

static void large_map_over_emptied_table(void)
{
	uint64_t root = new_root(), phys;
	EXPECT(pt_map(root, USER_BASE, 0x5000, pt_flags_from_vm(0), PT_PAGE_4K) == 0);
	EXPECT(pt_map(root, USER_BASE, 0x200000, pt_flags_from_vm(0), PT_PAGE_2M) == -EEXIST);
	EXPECT(pt_unmap(root, USER_BASE, &phys) == 0);
	size_t live = mm_shim_tables_live();
	EXPECT(pt_map(root, USER_BASE, 0x200000, pt_flags_from_vm(0), PT_PAGE_2M) == 0);
	EXPECT(mm_shim_tables_live() == live - 1); /* the empty table went */
	pt_destroy_user(root);
}

static void free_collected(uint64_t table, void *ctx)
{
	(*(unsigned *)ctx)++;
	pt_free_table(table);
}

/* Empty tables a range covers whole go (page table, directory, PDPT), from
 * the bottom up; one that still maps a page, or that the range only partly
 * covers, stays. */
static void detach_takes_only_covered_empty_tables(void)
{
	uint64_t root = new_root(), phys, pte;
	uint64_t flags = pt_flags_from_vm(VM_USER);
	EXPECT(pt_map(root, USER_BASE, 0x5000, flags, PT_PAGE_4K) == 0);
	EXPECT(pt_map(root, USER_BASE + 2 * MiB, 0x6000, flags, PT_PAGE_4K) == 0);
	EXPECT(mm_shim_tables_live() == 5); /* root, PDPT, PD, two PTs */
	EXPECT(pt_unmap(root, USER_BASE + 2 * MiB, &phys) == 0);
	unsigned freed = 0;
	pt_detach_empty_tables(root, USER_BASE + 2 * MiB, USER_BASE + 2 * MiB + 4096,
			       free_collected, &freed);
	EXPECT(freed == 0); /* a page of its 2 MiB: not covered */
	pt_detach_empty_tables(root, USER_BASE, USER_BASE + 4 * MiB, free_collected, &freed);
	EXPECT(freed == 1); /* the second PT; the first still maps a page */
	EXPECT(pt_lookup(root, USER_BASE, &phys, &pte) == 0 && phys == 0x5000);
	EXPECT(pt_unmap(root, USER_BASE, &phys) == 0);
	pt_detach_empty_tables(root, 0, UINT64_MAX, free_collected, &freed);
	EXPECT(freed == 4); /* PT, PD and PDPT; the root stays */
	EXPECT(mm_shim_tables_live() == 1);
	EXPECT(pt_map(root, USER_BASE, 0x5000, flags, PT_PAGE_4K) == 0);
	pt_destroy_user(root);
	EXPECT(mm_shim_tables_live() == 0);
}

static void out_of_tables(void)
{
	uint64_t root = new_root(), phys, pte;
	mm_shim_fail_tables_after(1); /* the PDPT, then nothing */
	EXPECT(pt_map(root, USER_BASE, 0x1000, pt_flags_from_vm(0), PT_PAGE_4K) == -ENOMEM);
	EXPECT(pt_lookup(root, USER_BASE, &phys, &pte) == -ENOENT);
	mm_shim_fail_tables_after(-1);
	EXPECT(pt_map(root, USER_BASE, 0x1000, pt_flags_from_vm(0), PT_PAGE_4K) == 0);
	EXPECT(pt_map(root, USER_BASE + 4 * MiB, 0x400000, pt_flags_from_vm(0), PT_PAGE_2M) == 0);
	mm_shim_fail_tables_after(0);
	EXPECT(pt_unmap(root, USER_BASE + 4 * MiB, &phys) == -ENOMEM); /* cannot split */
	EXPECT(vm_flags_at(root, USER_BASE + 4 * MiB + 4096, &phys) == VM_LARGE);
	mm_shim_fail_tables_after(-1);
	pt_destroy_user(root);
	EXPECT(mm_shim_tables_live() == 0);
}

static void destroy_spares_the_kernel_half(void)
{
	uint64_t root = new_root(), shared = pt_alloc_table(), phys;
	((uint64_t *)pt_table_ptr(root))[PT_KERNEL_FIRST_SLOT] = shared | PTE_PRESENT | PTE_WRITE;
	EXPECT(pt_map(root, 0xffff800000200000UL, 0x200000, pt_flags_from_vm(0), PT_PAGE_2M) == 0);
	EXPECT(pt_map(root, 0x1000, 0x1000, pt_flags_from_vm(VM_USER), PT_PAGE_4K) == 0);
	EXPECT(pt_map(root, 0x7fffffe00000UL, 0x1000, pt_flags_from_vm(VM_USER), PT_PAGE_4K) == 0);
	EXPECT(vm_flags_at(root, 0xffff800000200000UL, &phys) == VM_LARGE);
	size_t kernel_tables = 2; /* the shared PDPT and the PD below it */
	pt_destroy_user(root);
	EXPECT(mm_shim_tables_live() == kernel_tables);
	uint64_t pd = ((uint64_t *)pt_table_ptr(shared))[0] & PTE_ADDRESS_MASK;
	pt_free_table(pd);
	pt_free_table(shared);
	EXPECT(mm_shim_tables_live() == 0);
}

/* Random 4 KiB operations over 3 MiB (crossing a 2 MiB boundary) and a far
 * page, checked against an array model after every step. */
#define MODEL_PAGES 768
static void random_against_model(void)
{
	static uint64_t model_phys[MODEL_PAGES + 1];
	static unsigned model_flags[MODEL_PAGES + 1];
	uint64_t root = new_root(), phys;
	srand(1234);
	for (int step = 0; step < 20000; step++) {
		unsigned page = (unsigned)rand() % (MODEL_PAGES + 1);
		uint64_t virt =
		    page == MODEL_PAGES ? 0x00007ffffffff000UL : USER_BASE + page * 4096UL;
		unsigned flags = (unsigned)rand() % 8;
		uint64_t frame = ((uint64_t)rand() % 100000 + 1) * 4096;
		int op = rand() % 3, result;
		if (op == 0) {
			result = pt_map(root, virt, frame, pt_flags_from_vm(flags), PT_PAGE_4K);
			EXPECT(result == (model_phys[page] ? -EEXIST : 0));
			if (!result) {
				model_phys[page] = frame;
				model_flags[page] = flags;
			}
		} else if (op == 1) {
			result = pt_unmap(root, virt, &phys);
			EXPECT(result == (model_phys[page] ? 0 : -ENOENT));
			EXPECT(result || phys == model_phys[page]);
			model_phys[page] = 0;
		} else {
			result = pt_protect(root, virt, pt_flags_from_vm(flags));
			EXPECT(result == (model_phys[page] ? 0 : -ENOENT));
			if (!result)
				model_flags[page] = flags;
		}
		unsigned seen = vm_flags_at(root, virt + 8, &phys);
		if (model_phys[page])
			EXPECT(seen == model_flags[page] && phys == model_phys[page] + 8);
		else
			EXPECT(seen == ~0u);
	}
	pt_destroy_user(root);
	EXPECT(mm_shim_tables_live() == 0);
}

static const struct mm_test_case cases[] = {
    {"map_translate_unmap", map_translate_unmap},
    {"flags_round_trip", flags_round_trip},
    {"protect_keeps_address", protect_keeps_address},
    {"large_pages_split", large_pages_split},
    {"large_map_over_emptied_table", large_map_over_emptied_table},
    {"detach_takes_only_covered_empty_tables", detach_takes_only_covered_empty_tables},
    {"out_of_tables", out_of_tables},
    {"destroy_spares_the_kernel_half", destroy_spares_the_kernel_half},
    {"random_against_model", random_against_model},
    {"protnone_keeps_the_frame", protnone_keeps_the_frame},
};

int main(void)
{
	return mm_test_main(cases, sizeof cases / sizeof cases[0]);
}
