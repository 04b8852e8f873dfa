/*
 * Physical frame allocator: one bit per 4 KiB frame from address 0 to the end
 * of the highest usable region, 1 = in use.  The bitmap itself lives in usable
 * RAM found at set-up (32 KiB per GiB), so the allocator needs no memory of its
 * own and never touches the frames it hands out.
 *
 * Invariants, all under `lock`:
 *  - a frame outside every usable region, or in a reserved range (first MiB,
 *    kernel image, boot modules, the bitmap), is in use forever;
 *  - free_frames is the number of zero bits;
 *  - no zero bit lies at or after frame_count.
 * Single frames come from a next-fit scan (word at a time) starting at a hint,
 * so early allocations are the lowest addresses; a contiguous run is the run
 * freed last when it fits (still free, aligned, long enough: no search for the
 * buffer a system call frees and takes again), else comes from a
 * first-fit scan over aligned candidates that starts at the lowest frame that
 * may be free (every frame below first_free_hint is in use: allocations only
 * set bits, and a free lowers the hint) and skips used words whole.  Both are
 * O(frames/64) at worst; the run search no longer walks the used memory at
 * the bottom (kernel, boot modules, long-lived allocations) bit by bit on
 * every large kmalloc.
 * Nothing here sleeps (one spinlock, interrupts off): mm.alloc_frame and
 * mm.free_frame are _NOSLEEP join points.
 */
#include <stddef.h>
#include <stdint.h>

#include "arch/x86_64/layout.h"
#include "cpu/spinlock.h"
#include "joinpoint/joinpoint.h"
#include "lib/align.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/internal.h"
#include "mm/mm.h"
#include "panic/panic.h"

#define BITS_PER_WORD 64

static struct spinlock lock = SPINLOCK_INIT("pmm");
static uint64_t *bitmap;
static uint64_t frame_count;
static uint64_t word_count;
static uint64_t free_frames;
static uint64_t usable_frames;
static uint64_t next_word_hint;
static uint64_t first_free_hint; /* every frame below it is in use */
/* The run pmm_free_contiguous freed last: the next run of its size or less
 * takes it back without a search (a system call's bounce buffer is freed and
 * allocated again at every call). */
static uint64_t recent_run_frame, recent_run_count;

/* Usable frame ranges and reserved ranges, kept to validate frees. */
static struct pmm_range usable[BOOT_MAX_REGIONS];
static unsigned usable_count;
static struct pmm_range reserved_ranges[PMM_MAX_RESERVED + 1];
static unsigned reserved_range_count;

static uint64_t round_down(uint64_t value, uint64_t align)
{
	return value & ~(align - 1);
}

static bool frame_test(uint64_t frame)
{
	return bitmap[frame / BITS_PER_WORD] & (1UL << (frame % BITS_PER_WORD));
}

static void frame_set(uint64_t frame)
{
	bitmap[frame / BITS_PER_WORD] |= 1UL << (frame % BITS_PER_WORD);
}

static void frame_clear(uint64_t frame)
{
	bitmap[frame / BITS_PER_WORD] &= ~(1UL << (frame % BITS_PER_WORD));
}

static bool overlaps(uint64_t base, uint64_t end, const struct pmm_range *r)
{
	return base < r->end && r->base < end;
}

/* ---- Set-up ------------------------------------------------------------- */

static uint64_t region_end(const struct boot_region *r)
{
	uint64_t end = r->base + r->length;
	if (end < r->base || end > PHYSMAP_MAX_BYTES)
		end = PHYSMAP_MAX_BYTES;
	return end;
}

/* Usable regions clipped to whole frames, in the order the loader gave. */
static void collect_usable(const struct boot_region *regions, unsigned count)
{
	usable_count = 0;
	for (unsigned i = 0; i < count; i++) {
		if (regions[i].type != BOOT_REGION_USABLE)
			continue;
		uint64_t base = align_up(regions[i].base, PAGE_SIZE);
		uint64_t end = round_down(region_end(&regions[i]), PAGE_SIZE);
		if (base < end && base < PHYSMAP_MAX_BYTES)
			usable[usable_count++] = (struct pmm_range){base, end};
	}
}

static bool hits_unusable(uint64_t base, uint64_t end, const struct boot_region *regions,
			  unsigned count)
{
	for (unsigned i = 0; i < count; i++) {
		struct pmm_range r = {round_down(regions[i].base, PAGE_SIZE),
				      align_up(region_end(&regions[i]), PAGE_SIZE)};
		if (regions[i].type != BOOT_REGION_USABLE && overlaps(base, end, &r))
			return true;
	}
	return false;
}

static bool span_is_free(uint64_t base, uint64_t length, uint64_t limit,
			 const struct boot_region *regions, unsigned count)
{
	uint64_t end = base + length;
	if (end > limit)
		return false;
	for (unsigned i = 0; i < reserved_range_count; i++)
		if (overlaps(base, end, &reserved_ranges[i]))
			return false;
	for (unsigned i = 0; i < usable_count; i++)
		if (base >= usable[i].base && end <= usable[i].end)
			return !hits_unusable(base, end, regions, count);
	return false;
}

/* The lowest usable span of length bytes below limit that is not reserved:
 * candidates are region starts and the ends of reserved ranges. */
static uint64_t find_bitmap_home(uint64_t length, uint64_t limit, const struct boot_region *regions,
				 unsigned count)
{
	uint64_t best = 0;
	for (unsigned i = 0; i < usable_count + reserved_range_count; i++) {
		uint64_t candidate =
		    i < usable_count ? usable[i].base
				     : align_up(reserved_ranges[i - usable_count].end, PAGE_SIZE);
		if (candidate && (!best || candidate < best) &&
		    span_is_free(candidate, length, limit, regions, count))
			best = candidate;
	}
	return best;
}

static void mark_range(uint64_t base, uint64_t end, bool in_use)
{
	uint64_t frame = base / PAGE_SIZE;
	uint64_t last = end / PAGE_SIZE;
	if (last > frame_count)
		last = frame_count;
	while (frame < last) {
		if (frame % BITS_PER_WORD == 0 && last - frame >= BITS_PER_WORD) {
			bitmap[frame / BITS_PER_WORD] = in_use ? ~0UL : 0;
			frame += BITS_PER_WORD;
			continue;
		}
		if (in_use)
			frame_set(frame);
		else
			frame_clear(frame);
		frame++;
	}
}

/* Without libgcc (no __popcountdi2) and without POPCNT on every CPU. */
static unsigned zero_bits(uint64_t word)
{
	unsigned count = 0;
	if (word == 0)
		return BITS_PER_WORD;
	for (word = ~word; word; word &= word - 1)
		count++;
	return count;
}

static uint64_t count_free_bits(void)
{
	uint64_t count = 0;
	for (uint64_t i = 0; i < word_count; i++)
		count += zero_bits(bitmap[i]);
	return count;
}

static void fill_bitmap(const struct boot_region *regions, unsigned count)
{
	memset(bitmap, 0xff, word_count * sizeof(uint64_t));
	for (unsigned i = 0; i < usable_count; i++)
		mark_range(usable[i].base, usable[i].end, false);
	for (unsigned i = 0; i < count; i++)
		if (regions[i].type != BOOT_REGION_USABLE)
			mark_range(round_down(regions[i].base, PAGE_SIZE),
				   align_up(region_end(&regions[i]), PAGE_SIZE), true);
	usable_frames = count_free_bits();
	frame_set(0); /* 0 means "no frame" to callers */
	for (unsigned i = 0; i < reserved_range_count; i++)
		mark_range(round_down(reserved_ranges[i].base, PAGE_SIZE),
			   align_up(reserved_ranges[i].end, PAGE_SIZE), true);
	free_frames = count_free_bits();
	next_word_hint = 0;
	first_free_hint = 0;
	recent_run_count = 0;
}

int pmm_setup(const struct boot_region *regions, unsigned region_count,
	      const struct pmm_range *reserved, unsigned reserved_count, uint64_t bitmap_limit,
	      pmm_map_fn map)
{
	if (reserved_count > PMM_MAX_RESERVED || region_count > BOOT_MAX_REGIONS)
		return -EINVAL;
	collect_usable(regions, region_count);
	uint64_t ram_end = 0;
	for (unsigned i = 0; i < usable_count; i++)
		if (usable[i].end > ram_end)
			ram_end = usable[i].end;
	if (!ram_end)
		return -EINVAL;
	memcpy(reserved_ranges, reserved, reserved_count * sizeof *reserved);
	reserved_range_count = reserved_count;

	uint64_t frames = ram_end / PAGE_SIZE;
	uint64_t bytes = align_up(align_up(frames, BITS_PER_WORD) / 8, PAGE_SIZE);
	uint64_t home = find_bitmap_home(bytes, bitmap_limit, regions, region_count);
	if (!home)
		return -ENOMEM;
	reserved_ranges[reserved_range_count++] = (struct pmm_range){home, home + bytes};

	bitmap = map(home, bytes);
	frame_count = frames;
	word_count = align_up(frames, BITS_PER_WORD) / BITS_PER_WORD;
	fill_bitmap(regions, region_count);
	return 0;
}

/* ---- Allocation ----------------------------------------------------------- */

/* First free frame at or after word `start` and before `end`, or frame_count. */
static uint64_t scan_words(uint64_t start, uint64_t end)
{
	for (uint64_t i = start; i < end; i++) {
		if (bitmap[i] != ~0UL) {
			uint64_t frame = i * BITS_PER_WORD + __builtin_ctzll(~bitmap[i]);
			return frame < frame_count ? frame : frame_count;
		}
	}
	return frame_count;
}

JOINPOINT_DEFINE_NOSLEEP_AS(mm, alloc_frame, pmm_alloc_frame, uint64_t)
{
	uint64_t flags = spin_lock_irqsave(&lock);
	uint64_t frame = scan_words(next_word_hint, word_count);
	if (frame == frame_count)
		frame = scan_words(0, next_word_hint);
	if (frame == frame_count || frame == 0) {
		spin_unlock_irqrestore(&lock, flags);
		return 0;
	}
	frame_set(frame);
	free_frames--;
	next_word_hint = frame / BITS_PER_WORD;
	spin_unlock_irqrestore(&lock, flags);
	return frame * PAGE_SIZE;
}

/* The first free frame at or after frame from, or frame_count. */
static uint64_t next_free(uint64_t from)
{
	if (from >= frame_count)
		return frame_count;
	uint64_t word = from / BITS_PER_WORD;
	uint64_t free_bits = ~bitmap[word] & (~0UL << (from % BITS_PER_WORD));
	if (free_bits) {
		uint64_t frame = word * BITS_PER_WORD + __builtin_ctzll(free_bits);
		return frame < frame_count ? frame : frame_count;
	}
	return scan_words(word + 1, word_count);
}

static void lower_first_free_hint(uint64_t frame)
{
	if (frame < first_free_hint)
		first_free_hint = frame;
}

/* Index of the first in-use frame in [first, first + count), or first + count. */
static uint64_t first_used(uint64_t first, uint64_t count)
{
	for (uint64_t frame = first; frame < first + count; frame++)
		if (frame_test(frame))
			return frame;
	return first + count;
}

static uint64_t find_run(uint64_t count, uint64_t align_frames)
{
	if (count > frame_count)
		return 0; /* and candidate + count below cannot wrap */
	first_free_hint = next_free(first_free_hint);
	uint64_t candidate = first_free_hint;
	for (;;) {
		candidate = align_up(next_free(candidate), align_frames);
		if (candidate < align_frames)
			candidate = align_frames; /* frame 0 means "none" */
		if (candidate > frame_count - count)
			return 0;
		uint64_t used = first_used(candidate, count);
		if (used == candidate + count)
			return candidate;
		candidate = used + 1;
	}
}

/* The run freed last, if it holds count frames aligned to align_frames and
 * they are all still free (single frames may have been taken from it); else 0. */
static uint64_t take_recent_run(uint64_t count, uint64_t align_frames)
{
	uint64_t first = recent_run_frame;
	if (count > recent_run_count || first % align_frames ||
	    first_used(first, count) != first + count)
		return 0;
	recent_run_count = 0;
	return first;
}

uint64_t pmm_alloc_contiguous(size_t count, uint64_t align)
{
	if (count == 0 || align < PAGE_SIZE || (align & (align - 1)))
		return 0;
	uint64_t flags = spin_lock_irqsave(&lock);
	uint64_t first = take_recent_run(count, align / PAGE_SIZE);
	if (!first)
		first = find_run(count, align / PAGE_SIZE);
	if (first) {
		mark_range(first * PAGE_SIZE, (first + count) * PAGE_SIZE, true);
		free_frames -= count;
	}
	spin_unlock_irqrestore(&lock, flags);
	return first * PAGE_SIZE;
}

/* ---- Release -------------------------------------------------------------- */

static bool is_usable_frame(uint64_t phys)
{
	bool usable_ram = false;
	for (unsigned i = 0; i < usable_count && !usable_ram; i++)
		usable_ram = phys >= usable[i].base && phys < usable[i].end;
	for (unsigned i = 0; i < reserved_range_count && usable_ram; i++)
		usable_ram = !(phys >= reserved_ranges[i].base && phys < reserved_ranges[i].end);
	return usable_ram;
}

static void free_one_locked(uint64_t phys)
{
	uint64_t frame = phys / PAGE_SIZE;
	if ((phys & (PAGE_SIZE - 1)) || frame >= frame_count || !is_usable_frame(phys))
		panic("pmm: free of %#lx, which is not an allocatable RAM frame", phys);
	if (!frame_test(frame))
		panic("pmm: double free of frame %#lx", phys);
	frame_clear(frame);
	free_frames++;
}

JOINPOINT_DEFINE_VOID_NOSLEEP_AS(mm, free_frame, pmm_free_frame, uint64_t, phys)
{
	uint64_t flags = spin_lock_irqsave(&lock);
	free_one_locked(phys);
	if (phys / PAGE_SIZE / BITS_PER_WORD < next_word_hint)
		next_word_hint = phys / PAGE_SIZE / BITS_PER_WORD;
	lower_first_free_hint(phys / PAGE_SIZE);
	spin_unlock_irqrestore(&lock, flags);
}

void pmm_free_contiguous(uint64_t phys, size_t count)
{
	uint64_t flags = spin_lock_irqsave(&lock);
	for (size_t i = 0; i < count; i++)
		free_one_locked(phys + i * PAGE_SIZE);
	lower_first_free_hint(phys / PAGE_SIZE);
	recent_run_frame = phys / PAGE_SIZE;
	recent_run_count = count;
	spin_unlock_irqrestore(&lock, flags);
}

/* ---- Queries -------------------------------------------------------------- */

uint64_t pmm_count_total(void)
{
	return usable_frames;
}

uint64_t pmm_count_free(void)
{
	return __atomic_load_n(&free_frames, __ATOMIC_RELAXED);
}

uint64_t pmm_ram_end(void)
{
	return frame_count * PAGE_SIZE;
}

bool pmm_frame_in_use(uint64_t phys)
{
	uint64_t frame = phys / PAGE_SIZE;
	bool usable_ram = false;
	for (unsigned i = 0; i < usable_count && !usable_ram; i++)
		usable_ram = phys >= usable[i].base && phys < usable[i].end;
	if (frame >= frame_count || !usable_ram)
		return false;
	uint64_t word = __atomic_load_n(&bitmap[frame / BITS_PER_WORD], __ATOMIC_RELAXED);
	return word & (1UL << (frame % BITS_PER_WORD));
}
