/*
 * The pages of virtio-net's large-frame area (frames the device segments):
 * runs of pages taken for a frame and given back when its descriptor comes
 * back.  Next fit from where the last run was taken, since frames come back
 * in about the order they went, so the free pages ahead are usually one run.
 */
#include "virtio/internal.h"

static bool page_taken(const struct virtio_net_large *large, unsigned page)
{
	return large->taken[page / 64] >> (page % 64) & 1;
}

static void mark(struct virtio_net_large *large, unsigned first, unsigned count, bool taken)
{
	for (unsigned page = first; page < first + count; page++) {
		uint64_t bit = 1ull << (page % 64);
		if (taken)
			large->taken[page / 64] |= bit;
		else
			large->taken[page / 64] &= ~bit;
	}
}

/* The first run of count free pages that starts at or after from and ends
 * before the area's end, or -1. */
static int run_from(const struct virtio_net_large *large, unsigned from, unsigned count)
{
	unsigned length = 0;
	for (unsigned page = from; page < VIRTIO_NET_LARGE_PAGES; page++) {
		length = page_taken(large, page) ? 0 : length + 1;
		if (length == count)
			return (int)(page + 1 - count);
	}
	return -1;
}

int virtio_net_large_take(struct virtio_net_large *large, unsigned count)
{
	if (count == 0 || count > large->free_pages)
		return -1;
	int first = run_from(large, large->cursor, count);
	if (first < 0)
		first = run_from(large, 0, count); /* wrap around */
	if (first < 0)
		return -1;
	mark(large, (unsigned)first, count, true);
	large->free_pages -= count;
	large->cursor = ((unsigned)first + count) % VIRTIO_NET_LARGE_PAGES;
	return first;
}

void virtio_net_large_give(struct virtio_net_large *large, unsigned first, unsigned count)
{
	mark(large, first, count, false);
	large->free_pages += count;
}
