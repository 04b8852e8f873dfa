// host-test-sources: drivers/pci/assign.c
/* pci_place puts BARs where firmware put none: each naturally aligned (to at
 * least the minimum), inside the window, clear of every taken range and of
 * each other, largest first; a BAR with no room, or a size that is not a
 * power of two, gets 0 and the others are still placed.  The random test
 * checks those properties over many layouts. */
#include <stdlib.h>

#include "hosttest.h"
#include "pci/internal.h"

static const struct pci_range q35_window = {0xc0000000ULL, 0xfec00000ULL};

static int overlapping(uint64_t a, uint64_t a_size, uint64_t b, uint64_t b_end)
{
	return a < b_end && b < a + a_size;
}

static void qemu_q35_devices_are_placed_as_expected(void)
{
	/* VGA's framebuffer and registers, virtio-net's MSI-X table and its
	 * modern registers, AHCI's registers. */
	struct pci_placement bars[] = {
	    {.size = 16 << 20}, {.size = 4096}, {.size = 4096}, {.size = 16384}, {.size = 4096}};
	CHECK_EQ(pci_place(q35_window, 4096, NULL, 0, bars, 5), 5);
	CHECK_EQ(bars[0].base, 0xc0000000ULL); /* the largest goes first */
	CHECK_EQ(bars[3].base, 0xc1000000ULL); /* then 16 KiB, aligned to its size */
	CHECK_EQ(bars[1].base, 0xc1004000ULL); /* then the pages, in their order */
	CHECK_EQ(bars[2].base, 0xc1005000ULL);
	CHECK_EQ(bars[4].base, 0xc1006000ULL);
}

static void taken_ranges_are_stepped_over(void)
{
	struct pci_range taken[] = {{0xc0000000ULL, 0xc0001000ULL}, {0xc0100000ULL, 0xc0200001ULL}};
	struct pci_placement bars[] = {{.size = 1 << 20}, {.size = 4096}};
	CHECK_EQ(pci_place(q35_window, 4096, taken, 2, bars, 2), 2);
	CHECK_EQ(bars[0].base, 0xc0300000ULL); /* 1 MiB aligned, past both */
	CHECK_EQ(bars[1].base, 0xc0001000ULL); /* the first page free */
}

static void io_ports_are_aligned_to_their_size(void)
{
	struct pci_range io = {0xc000, 0x10000};
	struct pci_placement bars[] = {{.size = 32}, {.size = 64}, {.size = 32}};
	CHECK_EQ(pci_place(io, 1, NULL, 0, bars, 3), 3);
	CHECK_EQ(bars[1].base, 0xc000);
	CHECK_EQ(bars[0].base, 0xc040);
	CHECK_EQ(bars[2].base, 0xc060);
}

static void what_does_not_fit_gets_zero_and_the_rest_is_placed(void)
{
	struct pci_range small = {0x10000, 0x14000}; /* 16 KiB */
	struct pci_placement bars[] = {
	    {.size = 32768}, {.size = 4096}, {.size = 3000}, {.size = 0}};
	CHECK_EQ(pci_place(small, 4096, NULL, 0, bars, 4), 1);
	CHECK_EQ(bars[0].base, 0); /* larger than the window */
	CHECK_EQ(bars[1].base, 0x10000);
	CHECK_EQ(bars[2].base, 0); /* not a power of two */
	CHECK_EQ(bars[3].base, 0);
}

static void a_window_at_the_top_of_the_address_space_does_not_wrap(void)
{
	struct pci_range top = {0xfffffffffffff000ULL, 0xffffffffffffffffULL};
	struct pci_placement bars[] = {{.size = 8192}};
	CHECK_EQ(pci_place(top, 4096, NULL, 0, bars, 1), 0);
	CHECK_EQ(bars[0].base, 0);
}

static void random_layouts_keep_every_property(void)
{
	srand(7);
	for (int round = 0; round < 2000; round++) {
		struct pci_range window = {0x100000ULL * (1 + rand() % 64), 0};
		window.end = window.base + 0x100000ULL * (1 + rand() % 64);
		struct pci_range taken[6];
		unsigned taken_count = (unsigned)(rand() % 6);
		for (unsigned i = 0; i < taken_count; i++) {
			uint64_t base = window.base + (uint64_t)(rand() % 0x4000000);
			taken[i] =
			    (struct pci_range){base, base + 1 + (uint64_t)(rand() % 0x400000)};
		}
		struct pci_placement bars[20];
		unsigned count = (unsigned)(1 + rand() % 20);
		for (unsigned i = 0; i < count; i++)
			bars[i].size = 1ULL << (4 + rand() % 20);
		unsigned placed = pci_place(window, 4096, taken, taken_count, bars, count),
			 seen = 0;
		for (unsigned i = 0; i < count; i++) {
			if (!bars[i].base)
				continue;
			seen++;
			uint64_t align = bars[i].size > 4096 ? bars[i].size : 4096;
			CHECK_EQ(bars[i].base % align, 0);
			CHECK(bars[i].base >= window.base &&
			      bars[i].base + bars[i].size <= window.end);
			for (unsigned t = 0; t < taken_count; t++)
				CHECK(!overlapping(bars[i].base, bars[i].size, taken[t].base,
						   taken[t].end));
			for (unsigned j = 0; j < i; j++)
				CHECK(!bars[j].base ||
				      !overlapping(bars[i].base, bars[i].size, bars[j].base,
						   bars[j].base + bars[j].size));
		}
		CHECK_EQ(placed, seen);
	}
}

HOSTTEST_MAIN(HOSTTEST_CASE(qemu_q35_devices_are_placed_as_expected),
	      HOSTTEST_CASE(taken_ranges_are_stepped_over),
	      HOSTTEST_CASE(io_ports_are_aligned_to_their_size),
	      HOSTTEST_CASE(what_does_not_fit_gets_zero_and_the_rest_is_placed),
	      HOSTTEST_CASE(a_window_at_the_top_of_the_address_space_does_not_wrap),
	      HOSTTEST_CASE(random_layouts_keep_every_property))
