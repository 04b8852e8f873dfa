/*
 * A process's memory: a sorted list of regions over one address space.  The
 * regions say what may be mapped where and with which permissions; the page
 * tables say what is mapped now.  A page in a writable region that is mapped
 * read-only is shared copy-on-write (frameref.c counts its owners): the first
 * write fault gives the writer its own copy, or just the write permission
 * back when it has become the only owner.  A page of a region that is not
 * mapped yet is a zero page on first touch: the stack, the heap and mmap's
 * anonymous memory fill in this way (the program's segments are mapped at
 * exec).  So that running out of memory is still an error from the call
 * (brk, mmap, fork) and not a fault later, the heap's and mmap's pages are
 * committed when asked for: the sum over all processes stays within the
 * frames the kernel left free (commit_limit), and one request may not ask
 * for more than is free now.  The last sixteenth of that is root's
 * (limit_for_caller): users who promised all they could away leave root
 * the pages to log in, fork and kill them with.  The stack's 2 MiB are
 * promised as they are touched instead, from its top down to the lowest
 * page touched (promise_stack_to): promising them at exec would make every
 * exec and fork promise 2 MiB that most programs never use, and promising
 * none let processes recursing to the bottom of their stacks take the
 * frames others were promised.  A touch that cannot be promised is a fault
 * (SIGSEGV), as a stack that cannot grow is on Linux.  The page tables the
 * regions may need are promised with them (promise_tables): a page table
 * per 2 MiB, a directory per 1 GiB and one more level per 512 GiB that
 * some region reaches, and the top level from the start; so are the heap pages their
 * records take (new_record before a region is split).  Sparse pages far
 * apart cost two or three tables each beyond their own frame; unpromised, a
 * process mapping them took frames others had been promised.  A page
 * present in a read-only region is never copied while the region stays so,
 * so fork shares its frame without promising it again: the frame carries
 * the page's one promise from then on (frame_ref_carry_promise,
 * frames_hold_promises, clone_region), and mprotect promises such pages
 * again before it makes them writable.
 * A request beyond the process's address_limit (RLIMIT_AS) fails too.
 * Unmapping walks only what is mapped (vm_next_mapped), so tearing down a
 * process costs what it touched, not what it reserved.  The user clock page
 * is a read-only region whose frame is the kernel's (memory_map_kernel_page):
 * an owner count above the kernel's share keeps frame_ref_put from ever
 * freeing it.  Pages the kernel owns and writes while the process maps them
 * (accounting results, telemetry rings) are REGION_KERNEL regions: never
 * cut, copied or populated here, unmapped without being freed.
 *
 * A shared file mapping (REGION_SHARED_FILE) maps the file's page-cache
 * frames themselves, through the VFS's callbacks (proc_map_*): a page is
 * asked for on first touch and handed back when unmapped; the frames are
 * the cache's, so they are never counted in frameref or freed here.  fork
 * gives the child the region and a reference to the file, not the pages
 * (they come back on its first touch).  mprotect refuses such regions.
 *
 * Only the process's own thread changes its memory (or the thread creating a
 * process, before the process runs), so the region list needs no lock; the
 * page tables have the address space's own.
 */
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/traps.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "proc/internal.h"
#include "uapi/cred.h"

static uint64_t page_down(uint64_t value)
{
	return value & ~(uint64_t)(PAGE_SIZE - 1);
}

static uint64_t page_up(uint64_t value)
{
	return page_down(value + PAGE_SIZE - 1);
}

static unsigned page_flags(const struct proc_region *r)
{
	if (r->flags & REGION_NO_ACCESS)
		return VM_NONE; /* kept, not present: a user copy faults as the user does */
	return VM_USER | r->flags;
}

#define NO_LIMIT UINT64_MAX

static void drop_empty_regions(struct proc_memory *memory);

static uint64_t committed_pages; /* every process's program, heap, mmap and stack pages, atomic */

#define COMMIT_RESERVE_SHIFT      4 /* 1/16 of the frames stay the kernel's */
#define COMMIT_ROOT_RESERVE_SHIFT 4 /* 1/16 of what may be promised is root's */

/* The pages that may be promised to processes in all: the frames free when
 * the first one is promised (what the kernel took by then, its image, heap,
 * caches and the initial RAM disk, is not there to promise), less a
 * sixteenth of the machine kept for what the kernel allocates as processes
 * run: their page tables and kernel stacks, descriptors and the page cache.
 * Promising every frame the machine has, the kernel's too, let a process
 * that took its memory first and touched it after die on a page it had been
 * promised. */
static uint64_t commit_limit(void)
{
	static uint64_t limit; /* 0 until the first promise; atomic */
	uint64_t current = __atomic_load_n(&limit, __ATOMIC_RELAXED);
	if (current)
		return current;
	uint64_t free = pmm_count_free(), reserve = pmm_count_total() >> COMMIT_RESERVE_SHIFT;
	uint64_t first = free > reserve ? free - reserve : 1;
	__atomic_compare_exchange_n(&limit, &current, first, false, __ATOMIC_RELAXED,
				    __ATOMIC_RELAXED);
	return __atomic_load_n(&limit, __ATOMIC_RELAXED);
}

/* The pages only root may be promised: the last sixteenth of the limit.
 * Once users had promised every page away, no process could be promised a
 * page more: pid 1 and root's shell died (SIGSEGV) on the next stack page
 * they touched, and an administrator could neither log in nor fork a kill.
 * The process table (PROC_ROOT_RESERVED) and the sockets keep root's share
 * the same way. */
static uint64_t limit_for_caller(void)
{
	uint64_t limit = commit_limit();
	if (proc_current_euid() == ROOT_UID)
		return limit;
	return limit - (limit >> COMMIT_ROOT_RESERVE_SHIFT);
}

int proc_promise_pages(uint64_t pages)
{
	uint64_t limit = limit_for_caller();
	uint64_t total = __atomic_add_fetch(&committed_pages, pages, __ATOMIC_RELAXED);
	if (total > limit || pages > pmm_count_free()) {
		__atomic_sub_fetch(&committed_pages, pages, __ATOMIC_RELAXED);
		return -ENOMEM;
	}
	return 0;
}

void proc_release_pages(uint64_t pages)
{
	__atomic_sub_fetch(&committed_pages, pages, __ATOMIC_RELAXED);
}

uint64_t memory_promised_pages(void)
{
	return __atomic_load_n(&committed_pages, __ATOMIC_RELAXED);
}

/* Promises pages more to memory.  Returns 0 or -ENOMEM. */
static int commit(struct proc_memory *memory, uint64_t pages)
{
	int error = proc_promise_pages(pages);
	if (!error)
		memory->committed += pages;
	return error;
}

static void uncommit(struct proc_memory *memory, uint64_t pages)
{
	if (pages > memory->committed)
		pages = memory->committed;
	memory->committed -= pages;
	proc_release_pages(pages);
}

static bool committed_kind(enum region_kind kind)
{
	return kind == REGION_MMAP || kind == REGION_HEAP || kind == REGION_PROGRAM;
}

/* The next mapped page in [page, end), or end. */
static uint64_t next_mapped(struct proc_memory *memory, uint64_t page, uint64_t end)
{
	return page < end ? vm_next_mapped(memory->space, page, end) : end;
}

/* A committed region without write permission (text and constants, a
 * read-only mmap): a page present there is never copied while it stays so,
 * so its one frame is all it needs, and once a fork shares that frame the
 * frame carries the page's promise (frame_ref_carry_promise): the process
 * holds promises for the region's other pages only.  A program region is
 * never made writable (mprotect refuses it); an mmap region made writable
 * is promised those pages again first (memory_protect). */
static bool frames_hold_promises(const struct proc_region *r)
{
	return committed_kind(r->kind) && !(r->flags & VM_WRITE);
}

/* The mapped pages in [start, end) whose frames carry their promise.  The
 * count only grows while they stay mapped: a frame stops carrying only when
 * it is freed. */
static uint64_t carried_pages(struct proc_memory *memory, uint64_t start, uint64_t end)
{
	uint64_t count = 0;
	for (uint64_t page = next_mapped(memory, start, end); page < end;
	     page = next_mapped(memory, page + PAGE_SIZE, end)) {
		uint64_t phys;
		if (vm_translate(memory->space, page, &phys, NULL) == 0 &&
		    frame_ref_carries_promise(page_down(phys)))
			count++;
	}
	return count;
}

/* The pages of stack region r promised so far: from its lowest page touched
 * to its top. */
static uint64_t stack_pages_promised(const struct proc_region *r)
{
	return r->kind == REGION_STACK ? (r->end - r->mapped_low) / PAGE_SIZE : 0;
}

/* Before page of r is mapped: when r is the stack and page is below what
 * it promised, promises the pages from page up to there.  Returns the pages
 * promised (given back if the page cannot be mapped after all) or -ENOMEM. */
static int64_t promise_stack_to(struct proc_memory *memory, const struct proc_region *r,
				uint64_t page)
{
	if (r->kind != REGION_STACK || page >= r->mapped_low)
		return 0;
	uint64_t pages = (r->mapped_low - page) / PAGE_SIZE;
	return commit(memory, pages) < 0 ? -ENOMEM : (int64_t)pages;
}

#define PT_SHIFT   21 /* a page table maps 2 MiB */
#define PD_SHIFT   30 /* a page directory 1 GiB */
#define PDPT_SHIFT 39 /* a page-directory-pointer table 512 GiB */

/* The tables of the level that maps 1 << shift bytes the regions reach:
 * the blocks of that size some region's page is in.  The regions are sorted
 * and apart, so only a region's first block may be its predecessor's last. */
static uint64_t tables_reached(const struct proc_memory *memory, unsigned shift)
{
	uint64_t count = 0, previous_last = 0;
	bool any = false;
	for (const struct proc_region *r = memory->regions; r; r = r->next) {
		if (r->start >= r->end)
			continue;
		uint64_t first = r->start >> shift, last = (r->end - 1) >> shift;
		if (any && first == previous_last)
			first++;
		if (first <= last)
			count += last - first + 1;
		previous_last = last;
		any = true;
	}
	return count;
}

/* The page tables mapping every page of every region would take, the top
 * level made with the space included. */
static uint64_t page_tables_needed(const struct proc_memory *memory)
{
	return 1 + tables_reached(memory, PT_SHIFT) + tables_reached(memory, PD_SHIFT) +
	       tables_reached(memory, PDPT_SHIFT);
}

/* Region records the kernel heap keeps in a page: kmalloc gives a record a
 * block of the power-of-two class that fits it, and a slab page loses one
 * block to its header. */
static uint64_t records_per_page(void)
{
	uint64_t block = 16;
	while (block < sizeof(struct proc_region))
		block <<= 1;
	return PAGE_SIZE / block - 1;
}

/* The heap pages memory's region records take, with more records besides.
 * Unpromised, they were kernel memory any process could take by the
 * thousand (each mprotect of a page in the middle of a mapping, each
 * munmap of one, splits a region in two). */
static uint64_t record_pages_needed(const struct proc_memory *memory, uint64_t more)
{
	uint64_t records = more;
	for (const struct proc_region *r = memory->regions; r; r = r->next)
		records++;
	uint64_t per_page = records_per_page();
	return (records + per_page - 1) / per_page;
}

/* Promises the kernel pages memory's regions need now, with more region
 * records besides (one about to be made), or gives back those they no
 * longer do: page tables and records.  Called after regions were added or
 * grew and before one is split (it may fail: -ENOMEM), and after regions
 * shrank or went and their emptied tables were freed (it cannot: only what
 * nothing needs is given back). */
static int promise_kernel_pages(struct proc_memory *memory, uint64_t more_records)
{
	uint64_t needed = page_tables_needed(memory) + record_pages_needed(memory, more_records);
	if (needed > memory->kernel_pages && commit(memory, needed - memory->kernel_pages) < 0)
		return -ENOMEM;
	if (needed < memory->kernel_pages)
		uncommit(memory, memory->kernel_pages - needed);
	memory->kernel_pages = needed;
	return 0;
}

static int promise_tables(struct proc_memory *memory)
{
	return promise_kernel_pages(memory, 0);
}

/* A region record more, promised before it is made.  NULL when it cannot
 * be promised or allocated (the promise is given back). */
static struct proc_region *new_record(struct proc_memory *memory)
{
	if (promise_kernel_pages(memory, 1) < 0)
		return NULL;
	struct proc_region *record = kzalloc(sizeof *record);
	if (!record)
		promise_tables(memory);
	return record;
}

static struct proc_region *find_region(struct proc_memory *memory, uint64_t address)
{
	for (struct proc_region *r = memory->regions; r; r = r->next)
		if (address >= r->start && address < r->end)
			return r;
	return NULL;
}

struct proc_memory *memory_create(void)
{
	struct proc_memory *memory = kzalloc(sizeof *memory);
	if (!memory)
		return NULL;
	memory->space = vm_space_create();
	if (!memory->space) {
		kfree(memory);
		return NULL;
	}
	memory->address_limit = NO_LIMIT;
	if (promise_tables(memory) < 0) { /* the top level */
		memory_destroy(memory);
		return NULL;
	}
	return memory;
}

static void unmap_pages(struct proc_memory *memory, uint64_t start, uint64_t end)
{
	for (uint64_t page = next_mapped(memory, start, end); page < end;
	     page = next_mapped(memory, page + PAGE_SIZE, end)) {
		int64_t phys = vm_unmap(memory->space, page);
		if (phys >= 0) {
			frame_ref_put(page_down((uint64_t)phys));
			memory->pages--;
		}
	}
}

/* A shared file mapping's frames are the page cache's: each one is handed
 * back as writable as it was mapped. */
static void unmap_file_pages(struct proc_memory *memory, const struct proc_region *r,
			     uint64_t start, uint64_t end)
{
	for (uint64_t page = next_mapped(memory, start, end); page < end;
	     page = next_mapped(memory, page + PAGE_SIZE, end)) {
		uint64_t phys;
		unsigned flags;
		if (vm_translate(memory->space, page, &phys, &flags) < 0 ||
		    vm_unmap(memory->space, page) < 0)
			continue;
		memory->pages--;
		proc_map_unpage(r->file, r->file_offset + (page - r->start),
				(flags & VM_WRITE) != 0, phys);
	}
}

/* A kernel region's frames stay the kernel's: unmapped, never freed. */
static void unmap_kernel_pages(struct proc_memory *memory, uint64_t start, uint64_t end)
{
	for (uint64_t page = next_mapped(memory, start, end); page < end;
	     page = next_mapped(memory, page + PAGE_SIZE, end))
		if (vm_unmap(memory->space, page) >= 0)
			memory->pages--;
}

void memory_destroy(struct proc_memory *memory)
{
	struct proc_region *r = memory->regions;
	while (r) {
		struct proc_region *next = r->next;
		if (r->kind == REGION_KERNEL) {
			unmap_kernel_pages(memory, r->start, r->end);
		} else if (r->kind == REGION_SHARED_FILE) {
			unmap_file_pages(memory, r, r->mapped_low, r->end);
			proc_map_put(r->file);
		} else {
			unmap_pages(memory, r->mapped_low, r->end);
		}
		kfree(r);
		r = next;
	}
	uncommit(memory, memory->committed);
	vm_space_destroy(memory->space);
	kfree(memory);
}

static bool overlaps_any(struct proc_memory *memory, uint64_t start, uint64_t end)
{
	for (struct proc_region *r = memory->regions; r; r = r->next)
		if (start < r->end && r->start < end)
			return true;
	return false;
}

static void insert_sorted(struct proc_memory *memory, struct proc_region *region)
{
	struct proc_region **link = &memory->regions;
	while (*link && (*link)->start < region->start)
		link = &(*link)->next;
	region->next = *link;
	*link = region;
}

static void remove_region(struct proc_memory *memory, const struct proc_region *region)
{
	struct proc_region **link = &memory->regions;
	while (*link && *link != region)
		link = &(*link)->next;
	if (*link)
		*link = region->next;
}

struct proc_region *memory_add_region(struct proc_memory *memory, uint64_t start, uint64_t end,
				      unsigned flags, enum region_kind kind, int *error)
{
	*error = -EINVAL;
	if (start != page_down(start) || end != page_down(end) || end < start ||
	    (end == start && kind != REGION_HEAP) || start < EXEC_IMAGE_BASE ||
	    end > USER_SPACE_END || overlaps_any(memory, start, end))
		return NULL;
	struct proc_region *region = kzalloc(sizeof *region);
	*error = -ENOMEM;
	if (!region)
		return NULL;
	*region = (struct proc_region){.start = start,
				       .end = end,
				       .mapped_low = kind == REGION_STACK ? end : start,
				       .flags = flags & (VM_WRITE | VM_EXEC | REGION_NO_ACCESS),
				       .kind = kind};
	insert_sorted(memory, region);
	if (promise_tables(memory) < 0) {
		remove_region(memory, region);
		kfree(region);
		return NULL; /* *error is -ENOMEM */
	}
	*error = 0;
	return region;
}

uint64_t memory_size(const struct proc_memory *memory)
{
	uint64_t bytes = 0;
	for (const struct proc_region *r = memory->regions; r; r = r->next)
		bytes += r->end - r->start;
	return bytes;
}

/* Would length bytes more stay within RLIMIT_AS? */
static bool within_limit(const struct proc_memory *memory, uint64_t length)
{
	uint64_t size = memory_size(memory);
	return length <= memory->address_limit && size <= memory->address_limit - length;
}

/* A region whose pages are promised: within RLIMIT_AS and committed. */
static int add_committed_region(struct proc_memory *memory, uint64_t start, uint64_t end,
				unsigned flags, enum region_kind kind)
{
	if (end < start || !within_limit(memory, end - start))
		return -ENOMEM;
	int error;
	struct proc_region *r = memory_add_region(memory, start, end, flags, kind, &error);
	if (!r)
		return error;
	if (commit(memory, (end - start) / PAGE_SIZE) < 0) {
		r->end = r->start; /* nothing to uncommit or unmap: drop it */
		drop_empty_regions(memory);
		promise_tables(memory); /* gives back its tables: none was made */
		return -ENOMEM;
	}
	return 0;
}

int memory_map_anonymous(struct proc_memory *memory, uint64_t start, uint64_t end, unsigned flags)
{
	return add_committed_region(memory, start, end, flags, REGION_MMAP);
}

int memory_add_program(struct proc_memory *memory, uint64_t start, uint64_t end, unsigned flags)
{
	return add_committed_region(memory, start, end, flags, REGION_PROGRAM);
}

int memory_map_shared_file(struct proc_memory *memory, uint64_t start, uint64_t end, unsigned flags,
			   void *file, uint64_t file_offset)
{
	int error = -ENOMEM;
	struct proc_region *r = NULL;
	if (end >= start && within_limit(memory, end - start))
		r = memory_add_region(memory, start, end, flags, REGION_SHARED_FILE, &error);
	if (!r) {
		proc_map_put(file);
		return error;
	}
	r->file = file;
	r->file_offset = file_offset;
	return 0;
}

/* Maps the file's page at page on first touch.  Sleeps (the page may be
 * read from the disk): a fault from user mode comes with interrupts off,
 * and nothing of the kernel's is held then. */
static int map_file_page(struct proc_memory *memory, struct proc_region *r, uint64_t page)
{
	if (!irq_enabled())
		irq_enable();
	uint64_t phys;
	bool writable = (r->flags & VM_WRITE) != 0;
	uint64_t offset = r->file_offset + (page - r->start);
	int error = proc_map_page(r->file, offset, writable, &phys);
	if (error)
		return error;
	if (vm_map(memory->space, page, phys, page_flags(r)) < 0) {
		proc_map_unpage(r->file, offset, writable, phys);
		return -ENOMEM;
	}
	memory->pages++;
	return 0;
}

/* Maps a fresh zeroed frame at page.  Returns 0 or -ENOMEM. */
static int map_zero_page(struct proc_memory *memory, struct proc_region *r, uint64_t page)
{
	int64_t promised = promise_stack_to(memory, r, page);
	if (promised < 0)
		return -ENOMEM;
	uint64_t frame = pmm_alloc_frame();
	if (frame)
		memset(phys_to_virt(frame), 0, PAGE_SIZE);
	if (!frame || vm_map(memory->space, page, frame, page_flags(r)) < 0) {
		if (frame)
			pmm_free_frame(frame);
		uncommit(memory, (uint64_t)promised);
		return -ENOMEM;
	}
	memory->pages++;
	if (page < r->mapped_low)
		r->mapped_low = page;
	return 0;
}

int memory_populate(struct proc_memory *memory, uint64_t start, uint64_t end)
{
	for (uint64_t page = page_down(start); page < end; page += PAGE_SIZE) {
		if (vm_translate(memory->space, page, NULL, NULL) == 0)
			continue;
		struct proc_region *r = find_region(memory, page);
		if (!r)
			return -EFAULT;
		if (map_zero_page(memory, r, page) < 0)
			return -ENOMEM;
	}
	return 0;
}

int memory_map_kernel_page(struct proc_memory *memory, uint64_t address, uint64_t phys,
			   enum region_kind kind)
{
	int error;
	if (!memory_add_region(memory, address, address + PAGE_SIZE, 0, kind, &error))
		return error;
	error = frame_ref_get(phys); /* one owner more than the kernel: never the last */
	if (error)
		return error;
	if (vm_map(memory->space, address, phys, VM_USER) < 0) {
		frame_ref_put(phys);
		return -ENOMEM;
	}
	memory->pages++;
	return 0;
}

int memory_add_kernel_region(struct proc_memory *memory, uint64_t start, uint64_t end)
{
	for (struct proc_region *r = memory->regions; r; r = r->next)
		if (r->kind == REGION_KERNEL && r->start == start && r->end == end)
			return 0;
	int error;
	memory_add_region(memory, start, end, 0, REGION_KERNEL, &error);
	return error;
}

int memory_map_kernel_frame(struct proc_memory *memory, uint64_t address, uint64_t phys,
			    bool writable)
{
	struct proc_region *r = find_region(memory, address);
	if (!r || r->kind != REGION_KERNEL || address != page_down(address))
		return -EINVAL;
	int error = vm_map(memory->space, address, phys, VM_USER | (writable ? VM_WRITE : 0));
	if (error == 0)
		memory->pages++;
	return error;
}

/* Cuts [start, end) out of r, which it overlaps.  Returns 0 or -ENOMEM. */
static int cut_region(struct proc_memory *memory, struct proc_region *r, uint64_t start,
		      uint64_t end)
{
	if (start > r->start && end < r->end) {
		struct proc_region *tail = new_record(memory);
		if (!tail)
			return -ENOMEM;
		*tail = (struct proc_region){.next = r->next,
					     .start = end,
					     .end = r->end,
					     .mapped_low = end,
					     .flags = r->flags,
					     .kind = r->kind};
		if (r->kind == REGION_SHARED_FILE) {
			tail->file = r->file;
			tail->file_offset = r->file_offset + (end - r->start);
			proc_map_get(r->file);
		}
		r->next = tail;
	}
	uint64_t from = start > r->start ? start : r->start;
	uint64_t to = end < r->end ? end : r->end;
	uint64_t held = committed_kind(r->kind) ? (to - from) / PAGE_SIZE : 0;
	if (frames_hold_promises(r))
		held -= carried_pages(memory, from, to);
	if (r->kind == REGION_SHARED_FILE)
		unmap_file_pages(memory, r, from, to);
	else
		unmap_pages(memory, from, to);
	uncommit(memory, held);
	if (from == r->start) {
		r->file_offset += to - r->start;
		r->start = to;
		if (r->mapped_low < to)
			r->mapped_low = to;
	} else
		r->end = from;
	return 0;
}

static void drop_empty_regions(struct proc_memory *memory)
{
	struct proc_region **link = &memory->regions;
	while (*link) {
		struct proc_region *r = *link;
		if (r->start >= r->end && r != memory->heap) {
			*link = r->next;
			if (r->kind == REGION_SHARED_FILE)
				proc_map_put(r->file);
			kfree(r);
		} else {
			link = &r->next;
		}
	}
}

static bool kernel_owned(const struct proc_region *r)
{
	return r->kind == REGION_KERNEL || r->kind == REGION_CLOCK;
}

/* The free gap around [start, end): from the end of the region below it to
 * the start of the region above it.  No region's page is in there, so a
 * table it covers whole maps nothing a region still needs. */
static void gap_around(const struct proc_memory *memory, uint64_t start, uint64_t end,
		       uint64_t *floor, uint64_t *ceiling)
{
	*floor = 0;
	*ceiling = UINT64_MAX;
	for (const struct proc_region *r = memory->regions; r; r = r->next) {
		if (r->end <= start && r->end > *floor)
			*floor = r->end;
		if (r->start >= end && r->start < *ceiling)
			*ceiling = r->start;
	}
}

/* Tables emptied by the unmap go back, as far as the gap reaches: a 4 KiB
 * munmap alone covers no table, yet leaves one holding nothing. */
static void free_unused_tables(struct proc_memory *memory, uint64_t start, uint64_t end)
{
	uint64_t floor, ceiling;
	gap_around(memory, start, end, &floor, &ceiling);
	vm_free_tables(memory->space, floor, ceiling);
}

int memory_unmap(struct proc_memory *memory, uint64_t start, uint64_t end)
{
	int error = 0;
	for (struct proc_region *r = memory->regions; r; r = r->next)
		if (kernel_owned(r) && start < r->end && r->start < end)
			return -EINVAL; /* the kernel's pages stay while it writes them */
	for (struct proc_region *r = memory->regions; r && !error; r = r->next)
		if ((r->kind == REGION_MMAP || r->kind == REGION_SHARED_FILE) && start < r->end &&
		    r->start < end)
			error = cut_region(memory, r, start, end);
	drop_empty_regions(memory);
	free_unused_tables(memory, start, end);
	promise_tables(memory); /* gives back the tables just freed */
	return error;
}

int memory_sync(struct proc_memory *memory, uint64_t start, uint64_t end)
{
	uint64_t covered = start;
	for (struct proc_region *r = memory->regions; r && covered < end; r = r->next) {
		if (r->end <= covered)
			continue;
		if (r->start > covered)
			return -ENOMEM;
		covered = r->end;
	}
	if (covered < end)
		return -ENOMEM;
	int first_error = 0;
	for (struct proc_region *r = memory->regions; r; r = r->next) {
		if (r->kind != REGION_SHARED_FILE || r->end <= start || r->start >= end)
			continue;
		int error = proc_map_sync(r->file);
		if (error && !first_error)
			first_error = error;
	}
	return first_error;
}

/* Splits the mmap region holding address (not at its start) in two at it.
 * Returns 0 or -ENOMEM. */
static int split_at(struct proc_memory *memory, uint64_t address)
{
	struct proc_region *r = find_region(memory, address);
	if (!r || r->start == address || r->kind != REGION_MMAP)
		return 0;
	struct proc_region *tail = new_record(memory);
	if (!tail)
		return -ENOMEM;
	uint64_t mapped_low = address > r->mapped_low ? address : r->mapped_low;
	*tail = (struct proc_region){.next = r->next,
				     .start = address,
				     .end = r->end,
				     .mapped_low = mapped_low,
				     .flags = r->flags,
				     .kind = r->kind};
	r->next = tail;
	r->end = address;
	return 0;
}

/* Checks that [start, end) is covered by mmap regions only.  Returns 0,
 * -EPERM (a kernel region or the clock page), -EINVAL (another kind) or
 * -ENOMEM (a hole). */
static int check_protectable(struct proc_memory *memory, uint64_t start, uint64_t end)
{
	uint64_t covered = start;
	for (struct proc_region *r = memory->regions; r; r = r->next) {
		if (r->end <= start || r->start >= end)
			continue;
		if (kernel_owned(r))
			return -EPERM;
		if (r->kind != REGION_MMAP)
			return -EINVAL;
		if (r->start > covered)
			return -ENOMEM;
		covered = r->end;
	}
	return covered >= end ? 0 : -ENOMEM;
}

/* New permissions for the mapped pages of r; a page shared copy-on-write
 * stays read-only (its first write copies it). */
static void reprotect_pages(struct proc_memory *memory, const struct proc_region *r)
{
	for (uint64_t page = next_mapped(memory, r->mapped_low, r->end); page < r->end;
	     page = next_mapped(memory, page + PAGE_SIZE, r->end)) {
		uint64_t phys;
		unsigned flags = page_flags(r);
		if (vm_translate(memory->space, page, &phys, NULL) < 0)
			continue;
		if (frame_ref_count(page_down(phys)) > 1)
			flags &= ~VM_WRITE;
		vm_protect(memory->space, page, flags);
	}
}

/* Promises again the pages of the read-only regions in [start, end) that
 * become writable whose frames carried their promise: each may now be
 * copied on its first write.  Returns 0 or -ENOMEM (nothing changed). */
static int promise_for_writing(struct proc_memory *memory, uint64_t start, uint64_t end,
			       unsigned flags)
{
	uint64_t pages = 0;
	if (!(flags & VM_WRITE))
		return 0;
	for (struct proc_region *r = memory->regions; r; r = r->next)
		if (r->start >= start && r->end <= end && frames_hold_promises(r))
			pages += carried_pages(memory, r->start, r->end);
	return commit(memory, pages);
}

int memory_protect(struct proc_memory *memory, uint64_t start, uint64_t end, unsigned flags)
{
	int error = check_protectable(memory, start, end);
	if (!error)
		error = split_at(memory, start);
	if (!error)
		error = split_at(memory, end);
	if (!error)
		error = promise_for_writing(memory, start, end, flags);
	if (error)
		return error;
	for (struct proc_region *r = memory->regions; r; r = r->next) {
		if (r->start >= start && r->end <= end) {
			bool was_writable = !frames_hold_promises(r);
			r->flags = flags & (VM_WRITE | VM_EXEC | REGION_NO_ACCESS);
			if (was_writable && frames_hold_promises(r))
				uncommit(memory, carried_pages(memory, r->start, r->end));
			reprotect_pages(memory, r);
		}
	}
	return 0;
}

int memory_write(struct proc_memory *memory, uint64_t address, const void *src, size_t length)
{
	const uint8_t *from = src;
	while (length > 0) {
		uint64_t phys;
		if (vm_translate(memory->space, address, &phys, NULL) < 0)
			return -EFAULT;
		size_t chunk = PAGE_SIZE - (address & (PAGE_SIZE - 1));
		if (chunk > length)
			chunk = length;
		memcpy(phys_to_virt(phys), from, chunk);
		address += chunk;
		from += chunk;
		length -= chunk;
	}
	return 0;
}

/* Shares one mapped page of parent's with child, read-only in both when the
 * region is writable.  A read-only page's frame takes over its promise
 * from the parent, which held it, unless it carries it already (an earlier
 * fork).  Returns 1 (shared), 0 (not mapped) or -ENOMEM. */
static int share_page(struct proc_memory *child, struct proc_memory *parent,
		      const struct proc_region *r, uint64_t page)
{
	uint64_t phys;
	unsigned flags;
	if (vm_translate(parent->space, page, &phys, &flags) < 0)
		return 0;
	flags &= VM_USER | VM_WRITE | VM_EXEC;
	phys = page_down(phys);
	if (frame_ref_get(phys) < 0)
		return -ENOMEM;
	if (flags & VM_WRITE)
		vm_protect(parent->space, page, flags & ~VM_WRITE);
	if (vm_map(child->space, page, phys, page_flags(r) & ~VM_WRITE) < 0) {
		frame_ref_put(phys);
		return -ENOMEM;
	}
	child->pages++;
	if (frames_hold_promises(r) && frame_ref_carry_promise(phys) && parent->committed > 0)
		parent->committed--; /* the frame holds the page's promise now */
	return 1;
}

/* The child is promised every page of the parent's committed regions that
 * may be written, not only those the parent touched: a page present in the
 * parent becomes copy-on-write, and each owner may end up with a frame of
 * its own (the first writer's copy, the last one's original); a page
 * neither touched is a fresh frame on the child's first touch.  So a fork
 * of usertests promises its 2.8 MiB of bss, though its parent touched
 * little of it: the child may touch all of it.  A never-written program
 * page present in the parent (text, constants: 300 KiB of usertests) can
 * never cost the child a frame, nor can a page present in a read-only
 * mmap region while it stays read-only: its one frame carries its promise
 * from the first fork on (frame_ref_carry_promise), given back when its
 * last owner frees it, so it stays promised whichever owner ends first; the
 * child is promised only such pages the parent has not mapped.  The stack is
 * promised down to the parent's lowest page touched, as the parent's is. */
static int clone_region(struct proc_memory *child, struct proc_memory *parent,
			const struct proc_region *r)
{
	int error;
	struct proc_region *copy =
	    memory_add_region(child, r->start, r->end, r->flags, r->kind, &error);
	if (!copy)
		return error;
	uint64_t pages = (r->end - r->start) / PAGE_SIZE, shared = 0;
	if (committed_kind(r->kind) && !frames_hold_promises(r) && commit(child, pages) < 0)
		return -ENOMEM;
	if (r->kind == REGION_STACK && commit(child, stack_pages_promised(r)) < 0)
		return -ENOMEM;
	if (r == parent->heap)
		child->heap = copy;
	if (r->kind == REGION_SHARED_FILE) {
		copy->file = r->file; /* the pages come on the child's first touch */
		copy->file_offset = r->file_offset;
		proc_map_get(r->file);
		return 0;
	}
	copy->mapped_low = r->mapped_low;
	for (uint64_t page = next_mapped(parent, r->mapped_low, r->end); page < r->end;
	     page = next_mapped(parent, page + PAGE_SIZE, r->end)) {
		int result = share_page(child, parent, r, page);
		if (result < 0)
			return -ENOMEM;
		shared += (uint64_t)result;
	}
	if (frames_hold_promises(r) && commit(child, pages - shared) < 0)
		return -ENOMEM;
	return 0;
}

struct proc_memory *memory_clone(struct proc_memory *parent)
{
	struct proc_memory *child = memory_create();
	if (!child)
		return NULL;
	for (struct proc_region *r = parent->regions; r; r = r->next) {
		if (r->kind == REGION_KERNEL)
			continue; /* the parent's results and rings are not the child's */
		if (clone_region(child, parent, r) < 0) {
			memory_destroy(child);
			return NULL;
		}
	}
	child->brk = parent->brk;
	child->address_limit = parent->address_limit;
	return child;
}

/* A write to a shared page: own it, copying it unless nobody else has it. */
static int break_cow(struct proc_memory *memory, const struct proc_region *r, uint64_t page,
		     uint64_t phys)
{
	if (frame_ref_count(phys) == 1)
		return vm_protect(memory->space, page, page_flags(r)) < 0 ? -EFAULT : 0;
	uint64_t copy = pmm_alloc_frame();
	if (!copy)
		return -EFAULT;
	memcpy(phys_to_virt(copy), phys_to_virt(phys), PAGE_SIZE);
	vm_unmap(memory->space, page);
	if (vm_map(memory->space, page, copy, page_flags(r)) < 0) {
		pmm_free_frame(copy);
		memory->pages--;
		frame_ref_put(phys);
		return -EFAULT;
	}
	frame_ref_put(phys);
	return 0;
}

/* A mapped file that cannot give its page (past its end, a disk error) is
 * -EIO, which the fault handler makes SIGBUS, as Linux; a page the kernel
 * has no memory for stays -EFAULT. */
static int file_fault_result(int error)
{
	if (error == -ENOMEM)
		return -EFAULT;
	return error < 0 ? -EIO : 0;
}

int memory_fault(struct proc_memory *memory, uint64_t address, unsigned error)
{
	struct proc_region *r = find_region(memory, address);
	if (!r || r->kind == REGION_KERNEL || (r->flags & REGION_NO_ACCESS) ||
	    ((error & PF_ERROR_WRITE) && !(r->flags & VM_WRITE)) ||
	    ((error & PF_ERROR_FETCH) && !(r->flags & VM_EXEC)))
		return -EFAULT;
	uint64_t page = page_down(address), phys;
	unsigned flags;
	if (vm_translate(memory->space, page, &phys, &flags) < 0 && r->kind == REGION_SHARED_FILE)
		return file_fault_result(map_file_page(memory, r, page));
	if (vm_translate(memory->space, page, &phys, &flags) < 0)
		return map_zero_page(memory, r, page) < 0 ? -EFAULT : 0;
	if (!(error & PF_ERROR_WRITE) || (flags & VM_WRITE))
		return -EFAULT; /* present and allowed: the fault was something else */
	return break_cow(memory, r, page, page_down(phys));
}

uint64_t memory_find_free(struct proc_memory *memory, uint64_t length)
{
	uint64_t candidate = USER_MMAP_BASE;
	if (length == 0 || length > USER_MMAP_END - USER_MMAP_BASE)
		return 0;
	for (struct proc_region *r = memory->regions; r; r = r->next) {
		if (r->end <= candidate)
			continue;
		if (r->start >= candidate + length)
			break;
		candidate = r->end;
	}
	return candidate <= USER_MMAP_END - length ? candidate : 0;
}

static bool heap_may_grow(struct proc_memory *memory, uint64_t new_end)
{
	const struct proc_region *heap = memory->heap;
	if (new_end > USER_HEAP_MAX)
		return false;
	for (const struct proc_region *r = memory->regions; r; r = r->next)
		if (r != heap && heap->end < r->end && r->start < new_end)
			return false;
	return true;
}

uint64_t memory_set_brk(struct proc_memory *memory, uint64_t brk)
{
	struct proc_region *heap = memory->heap;
	if (!heap || brk < heap->start || brk > USER_HEAP_MAX)
		return memory->brk;
	uint64_t old_end = heap->end, new_end = page_up(brk);
	if (new_end > old_end) {
		if (!heap_may_grow(memory, new_end) || !within_limit(memory, new_end - old_end) ||
		    commit(memory, (new_end - old_end) / PAGE_SIZE) < 0)
			return memory->brk;
		heap->end = new_end; /* its pages come on first touch */
		if (promise_tables(memory) < 0) {
			heap->end = old_end;
			uncommit(memory, (new_end - old_end) / PAGE_SIZE);
			return memory->brk;
		}
	} else if (new_end < old_end) {
		unmap_pages(memory, new_end, old_end);
		uncommit(memory, (old_end - new_end) / PAGE_SIZE);
		heap->end = new_end;
		free_unused_tables(memory, new_end, old_end);
		promise_tables(memory); /* gives back the tables just freed */
	}
	memory->brk = brk;
	return brk;
}
