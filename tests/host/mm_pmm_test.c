// host-test-sources: kernel/mm/pmm.c tests/host/shim/mm_shim.c
/*
 * The frame allocator on made-up memory maps: what is free after set-up,
 * that nothing reserved or outside RAM is ever handed out, exhaustion,
 * contiguous alignment, and that bad frees panic.  Frames are never touched,
 * so a map can describe 8 GiB without having it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot/bootinfo.h"
#include "lib/errno.h"
#include "mm/internal.h"
#include "mm/mm.h"
#include "mm_shim.h"

#define MiB           (1UL << 20)
#define GiB           (1UL << 30)
#define FRAMES(bytes) ((bytes) / PAGE_SIZE)

static void *bitmap_buffer;
static uint64_t bitmap_phys, bitmap_length;

static void *map_bitmap(uint64_t phys, uint64_t length)
{
	free(bitmap_buffer);
	bitmap_buffer = malloc(length);
	bitmap_phys = phys;
	bitmap_length = length;
	return bitmap_buffer;
}

/* QEMU's map for -m 256M: low memory, the BIOS hole, RAM, firmware tables. */
static const struct boot_region qemu_256m[] = {
    {0, 0x9fc00, BOOT_REGION_USABLE},           {0x9fc00, 0x400, BOOT_REGION_RESERVED},
    {0xf0000, 0x10000, BOOT_REGION_RESERVED},   {0x100000, 0xfedf000, BOOT_REGION_USABLE},
    {0xffdf000, 0x21000, BOOT_REGION_RESERVED}, {0xfffc0000, 0x40000, BOOT_REGION_RESERVED},
};
static const struct pmm_range kernel_reserved[] = {
    {0, MiB}, {MiB, 3 * MiB}, /* the kernel image */
};

static int setup(const struct boot_region *regions, unsigned count)
{
	return pmm_setup(regions, count, kernel_reserved, 2, 4 * GiB, map_bitmap);
}

static bool in_range(uint64_t phys, uint64_t base, uint64_t end)
{
	return phys >= base && phys < end;
}

static void counts_after_setup(void)
{
	EXPECT(setup(qemu_256m, 6) == 0);
	uint64_t usable = FRAMES(0x9f000) + FRAMES(0xffdf000 - 0x100000);
	EXPECT(pmm_count_total() == usable);
	/* minus the usable part of the first MiB, the kernel and the bitmap */
	uint64_t expected_free = usable - FRAMES(0x9f000) - FRAMES(2 * MiB) - FRAMES(bitmap_length);
	EXPECT(pmm_count_free() == expected_free);
	EXPECT(bitmap_phys >= 3 * MiB && bitmap_phys + bitmap_length <= 0xffdf000);
	EXPECT(pmm_ram_end() == 0xffdf000);
}

/* Allocates every frame, checks each is legal and unique, frees them all. */
static uint64_t drain_and_check(const struct boot_region *regions, unsigned count,
				uint64_t *highest)
{
	uint64_t frames = pmm_ram_end() / PAGE_SIZE;
	uint8_t *seen = calloc(frames, 1);
	uint64_t *taken = malloc(pmm_count_free() * sizeof(uint64_t) + 8);
	uint64_t n = 0, free_before = pmm_count_free();
	*highest = 0;
	for (uint64_t phys; (phys = pmm_alloc_frame()) != 0; n++) {
		EXPECT(phys % PAGE_SIZE == 0 && phys < pmm_ram_end());
		EXPECT(!seen[phys / PAGE_SIZE]);
		seen[phys / PAGE_SIZE] = 1;
		EXPECT(!in_range(phys, 0, 3 * MiB));
		EXPECT(!in_range(phys, bitmap_phys, bitmap_phys + bitmap_length));
		for (unsigned i = 0; i < count; i++)
			if (regions[i].type != BOOT_REGION_USABLE)
				EXPECT(!in_range(phys, regions[i].base & ~0xfffUL,
						 regions[i].base + regions[i].length));
		EXPECT(pmm_frame_in_use(phys));
		taken[n] = phys;
		if (phys > *highest)
			*highest = phys;
	}
	EXPECT(n == free_before);
	EXPECT(pmm_count_free() == 0);
	EXPECT(pmm_alloc_contiguous(1, PAGE_SIZE) == 0);
	for (uint64_t i = 0; i < n; i++)
		pmm_free_frame(taken[i]);
	EXPECT(pmm_count_free() == free_before);
	free(seen);
	free(taken);
	return n;
}

static void exhaustion_hands_out_only_free_ram(void)
{
	uint64_t highest;
	EXPECT(setup(qemu_256m, 6) == 0);
	drain_and_check(qemu_256m, 6, &highest);
	EXPECT(highest == 0xffdf000 - PAGE_SIZE);
	/* A second drain after the frees finds the same frames again. */
	EXPECT(drain_and_check(qemu_256m, 6, &highest) == pmm_count_free());
}

/* q35 with 6 GiB: 2 GiB low, a PCI hole, 4 GiB above 4 GiB. */
static const struct boot_region q35_6g[] = {
    {0, 0x9fc00, BOOT_REGION_USABLE},
    {0x100000, 2 * GiB - 0x100000, BOOT_REGION_USABLE},
    {0xb0000000, 0x10000000, BOOT_REGION_RESERVED},
    {4 * GiB, 4 * GiB, BOOT_REGION_USABLE},
    {0xfd00000000, 0x300000000, BOOT_REGION_RESERVED},
};

static void memory_above_4g(void)
{
	uint64_t highest;
	EXPECT(setup(q35_6g, 5) == 0);
	EXPECT(pmm_ram_end() == 8 * GiB);
	EXPECT(bitmap_phys + bitmap_length <= 4 * GiB);
	EXPECT(bitmap_length == 8 * GiB / PAGE_SIZE / 8);
	EXPECT(pmm_count_total() == FRAMES(0x9f000) + FRAMES(6 * GiB - 0x100000));
	EXPECT(!pmm_frame_in_use(2 * GiB + PAGE_SIZE)); /* the hole is not RAM */
	drain_and_check(q35_6g, 5, &highest);
	EXPECT(highest == 8 * GiB - PAGE_SIZE);
}

static void contiguous_runs(void)
{
	EXPECT(setup(qemu_256m, 6) == 0);
	uint64_t free_before = pmm_count_free();
	uint64_t aligns[] = {PAGE_SIZE, 16 * 1024, 64 * 1024, 2 * MiB, 64 * MiB};
	uint64_t runs[5];
	for (int i = 0; i < 5; i++) {
		runs[i] = pmm_alloc_contiguous(7, aligns[i]);
		EXPECT(runs[i] != 0 && runs[i] % aligns[i] == 0);
		EXPECT(runs[i] >= 3 * MiB);
		for (int f = 0; f < 7; f++)
			EXPECT(pmm_frame_in_use(runs[i] + f * PAGE_SIZE));
	}
	EXPECT(pmm_count_free() == free_before - 35);
	for (int i = 0; i < 5; i++)
		pmm_free_contiguous(runs[i], 7);
	EXPECT(pmm_count_free() == free_before);
	EXPECT(pmm_alloc_contiguous(1, 3 * PAGE_SIZE) == 0);
	EXPECT(pmm_alloc_contiguous(1, 2048) == 0);
	EXPECT(pmm_alloc_contiguous(0, PAGE_SIZE) == 0);
	EXPECT(pmm_alloc_contiguous(FRAMES(256 * MiB), PAGE_SIZE) == 0);
	/* counts so large that candidate + count wrapped past the end */
	EXPECT(pmm_alloc_contiguous(SIZE_MAX, PAGE_SIZE) == 0);
	EXPECT(pmm_alloc_contiguous(SIZE_MAX - 0x2ff, PAGE_SIZE) == 0);
	EXPECT(pmm_alloc_contiguous(SIZE_MAX / 2, 2 * MiB) == 0);
	EXPECT(pmm_count_free() == free_before);
	/* A run never spans the firmware hole or reserved memory. */
	uint64_t big = pmm_alloc_contiguous(FRAMES(200 * MiB), PAGE_SIZE);
	EXPECT(big >= 3 * MiB && big + 200 * MiB <= 0xffdf000);
	pmm_free_contiguous(big, FRAMES(200 * MiB));
	EXPECT(pmm_count_free() == free_before);
}

/* Runs are first fit: whatever is freed below the search's starting point
 * (a run, or single frames) is what the next run of its size gets. */
static void freed_low_runs_are_found_again(void)
{
	EXPECT(setup(qemu_256m, 6) == 0);
	uint64_t first = pmm_alloc_contiguous(4, PAGE_SIZE);
	uint64_t second = pmm_alloc_contiguous(4, PAGE_SIZE);
	EXPECT(first != 0 && second == first + 4 * PAGE_SIZE);
	pmm_free_contiguous(first, 4);
	EXPECT(pmm_alloc_contiguous(4, PAGE_SIZE) == first);
	EXPECT(pmm_alloc_contiguous(2, PAGE_SIZE) == second + 4 * PAGE_SIZE);
	pmm_free_frame(first + PAGE_SIZE);
	pmm_free_frame(first + 2 * PAGE_SIZE);
	EXPECT(pmm_alloc_contiguous(2, PAGE_SIZE) == first + PAGE_SIZE);
	EXPECT(pmm_alloc_contiguous(1, PAGE_SIZE) == second + 6 * PAGE_SIZE);
}

/* The run freed last is the next run of its size or less, although lower
 * holes would fit; once any of its frames is taken, the search decides. */
static void the_run_freed_last_comes_back_first(void)
{
	EXPECT(setup(qemu_256m, 6) == 0);
	uint64_t low = pmm_alloc_contiguous(4, PAGE_SIZE);
	uint64_t high = pmm_alloc_contiguous(4, PAGE_SIZE);
	EXPECT(low != 0 && high == low + 4 * PAGE_SIZE);
	pmm_free_contiguous(low, 4);
	pmm_free_contiguous(high, 4);
	EXPECT(pmm_alloc_contiguous(3, PAGE_SIZE) == high); /* not low, the lowest fit */
	EXPECT(pmm_alloc_contiguous(3, PAGE_SIZE) == low);  /* taken once, then first fit */
	pmm_free_contiguous(high, 3);
	uint64_t aligned = pmm_alloc_contiguous(2, 8 * PAGE_SIZE); /* the run only if aligned */
	EXPECT(aligned != 0 && aligned % (8 * PAGE_SIZE) == 0);
	EXPECT((aligned == high) == (high % (8 * PAGE_SIZE) == 0));
}

/* The search skips in-use frames a word at a time: it must still find the
 * lowest fitting run, past a hole too small, a hole misaligned, and holes in
 * a later bitmap word. */
static void contiguous_run_is_the_lowest_fit(void)
{
	EXPECT(setup(qemu_256m, 6) == 0);
	uint64_t base = pmm_alloc_contiguous(256, 64 * 1024), below[64], f;
	unsigned filled = 0;
	EXPECT(base != 0);
	/* Whatever is free below base is taken, so the holes are the lowest. */
	while ((f = pmm_alloc_contiguous(1, PAGE_SIZE)) != 0 && f < base && filled < 64)
		below[filled++] = f;
	EXPECT(f > base);
	pmm_free_frame(f);
	uint64_t holes[][2] = {{3, 5}, {70, 74}, {128, 132}};
	for (unsigned h = 0; h < 3; h++)
		for (f = holes[h][0]; f < holes[h][1]; f++)
			pmm_free_frame(base + f * PAGE_SIZE);
	EXPECT(pmm_alloc_contiguous(4, 16 * 1024) == base + 128 * PAGE_SIZE);
	EXPECT(pmm_alloc_contiguous(4, PAGE_SIZE) == base + 70 * PAGE_SIZE);
	EXPECT(pmm_alloc_contiguous(2, PAGE_SIZE) == base + 3 * PAGE_SIZE);
	pmm_free_contiguous(base, 256);
	for (unsigned i = 0; i < filled; i++)
		pmm_free_frame(below[i]);
}

static void bad_frees_panic(void)
{
	EXPECT(setup(qemu_256m, 6) == 0);
	uint64_t frame = pmm_alloc_frame();
	pmm_free_frame(frame);
	EXPECT(MM_SHIM_PANICS(pmm_free_frame(frame)));
	EXPECT(strstr(mm_shim_last_panic, "double free") != NULL);
	EXPECT(MM_SHIM_PANICS(pmm_free_frame(2 * MiB)));   /* the kernel image */
	EXPECT(MM_SHIM_PANICS(pmm_free_frame(0xffe0000))); /* firmware tables */
	EXPECT(MM_SHIM_PANICS(pmm_free_frame(1 * GiB)));   /* past the end of RAM */
	frame = pmm_alloc_frame();
	EXPECT(MM_SHIM_PANICS(pmm_free_frame(frame + 8)));
	pmm_free_frame(frame); /* the lock was released by the caught panic */
	EXPECT(pmm_count_free() ==
	       pmm_count_total() - FRAMES(0x9f000) - FRAMES(2 * MiB) - FRAMES(bitmap_length));
}

static void overlapping_and_empty_maps(void)
{
	static const struct boot_region overlap[] = {
	    {0x100000, 16 * MiB, BOOT_REGION_USABLE},
	    {8 * MiB + 0x800, MiB, BOOT_REGION_ACPI_NVS}, /* inside, unaligned */
	};
	uint64_t highest;
	EXPECT(setup(overlap, 2) == 0);
	EXPECT(pmm_count_total() == FRAMES(16 * MiB) - FRAMES(MiB) - 1);
	drain_and_check(overlap, 2, &highest);

	static const struct boot_region none[] = {{0, 0x9fc00, BOOT_REGION_RESERVED}};
	EXPECT(setup(none, 1) == -EINVAL);
	static const struct boot_region tiny[] = {{MiB, 2 * MiB, BOOT_REGION_USABLE}};
	EXPECT(setup(tiny, 1) == -ENOMEM); /* all of it is the kernel's */
}

static const struct mm_test_case cases[] = {
    {"counts_after_setup", counts_after_setup},
    {"exhaustion_hands_out_only_free_ram", exhaustion_hands_out_only_free_ram},
    {"memory_above_4g", memory_above_4g},
    {"contiguous_runs", contiguous_runs},
    {"freed_low_runs_are_found_again", freed_low_runs_are_found_again},
    {"the_run_freed_last_comes_back_first", the_run_freed_last_comes_back_first},
    {"contiguous_run_is_the_lowest_fit", contiguous_run_is_the_lowest_fit},
    {"bad_frees_panic", bad_frees_panic},
    {"overlapping_and_empty_maps", overlapping_and_empty_maps},
};

int main(void)
{
	int status = mm_test_main(cases, sizeof cases / sizeof cases[0]);
	free(bitmap_buffer);
	return status;
}
