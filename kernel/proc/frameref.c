/*
 * Owner counts of frames shared copy-on-write.  Most frames have exactly one
 * owner, so only the exceptions are stored: a hash table from frame address
 * to the number of owners beyond the first.  A frame that is not in the table
 * has one owner; dropping the last owner frees it to the frame allocator.
 *
 * A frame may also carry the promise of its page (frame_ref_carry_promise):
 * a read-only page shared by a fork is promised once, not by each process
 * mapping it (memory.c), so the promise goes with the frame and is
 * given back (proc_release_pages) when its last owner frees it, whichever
 * process that is.
 *
 * Invariant (under refs_lock): every entry has extra >= 1 or carries a
 * promise.  Entries are allocated in frame_ref_get, the only step that can
 * fail, before anything is shared, so fork can undo cleanly.
 */
#include "cpu/spinlock.h"
#include "lib/errno.h"
#include "mm/mm.h"
#include "proc/internal.h"

#define REF_BUCKETS 1024

struct frame_ref {
	struct frame_ref *next;
	uint64_t phys;
	unsigned extra;       /* owners beyond the first */
	bool carries_promise; /* its page's promise is given back with the frame */
};

static struct spinlock refs_lock = SPINLOCK_INIT("proc.frameref");
static struct frame_ref *buckets[REF_BUCKETS];

static struct frame_ref **bucket_of(uint64_t phys)
{
	return &buckets[(phys >> PAGE_SHIFT) % REF_BUCKETS];
}

static struct frame_ref *find_locked(uint64_t phys)
{
	for (struct frame_ref *ref = *bucket_of(phys); ref; ref = ref->next)
		if (ref->phys == phys)
			return ref;
	return NULL;
}

int frame_ref_get(uint64_t phys)
{
	struct frame_ref *spare = kmalloc(sizeof *spare);
	uint64_t irq = spin_lock_irqsave(&refs_lock);
	struct frame_ref *ref = find_locked(phys);
	if (ref) {
		ref->extra++;
	} else if (spare) {
		*spare = (struct frame_ref){*bucket_of(phys), phys, 1, false};
		*bucket_of(phys) = spare;
		spare = NULL;
	} else {
		spin_unlock_irqrestore(&refs_lock, irq);
		return -ENOMEM;
	}
	spin_unlock_irqrestore(&refs_lock, irq);
	kfree(spare);
	return 0;
}

bool frame_ref_carry_promise(uint64_t phys)
{
	uint64_t irq = spin_lock_irqsave(&refs_lock);
	struct frame_ref *ref = find_locked(phys);
	bool taken = ref && !ref->carries_promise;
	if (taken)
		ref->carries_promise = true;
	spin_unlock_irqrestore(&refs_lock, irq);
	return taken;
}

bool frame_ref_carries_promise(uint64_t phys)
{
	uint64_t irq = spin_lock_irqsave(&refs_lock);
	struct frame_ref *ref = find_locked(phys);
	bool carries = ref && ref->carries_promise;
	spin_unlock_irqrestore(&refs_lock, irq);
	return carries;
}

/* What dropping an owner of a frame does beside the count. */
struct frame_drop {
	struct frame_ref *unused; /* the entry to free, or NULL */
	bool free_frame;          /* it was the last owner */
	bool release_promise;     /* and the frame carried its page's promise */
};

/* Drops one owner of phys.  Lock held. */
static struct frame_drop drop_locked(uint64_t phys)
{
	struct frame_ref **link = bucket_of(phys);
	while (*link && (*link)->phys != phys)
		link = &(*link)->next;
	struct frame_ref *ref = *link;
	if (!ref)
		return (struct frame_drop){NULL, true, false};
	if (ref->extra > 0) {
		ref->extra--;
		if (ref->extra > 0 || ref->carries_promise)
			return (struct frame_drop){NULL, false, false};
		*link = ref->next;
		return (struct frame_drop){ref, false, false};
	}
	*link = ref->next; /* the last owner of a frame carrying its promise */
	return (struct frame_drop){ref, true, true};
}

void frame_ref_put(uint64_t phys)
{
	uint64_t irq = spin_lock_irqsave(&refs_lock);
	struct frame_drop drop = drop_locked(phys);
	spin_unlock_irqrestore(&refs_lock, irq);
	kfree(drop.unused);
	if (drop.free_frame)
		pmm_free_frame(phys);
	if (drop.release_promise)
		proc_release_pages(1);
}

unsigned frame_ref_count(uint64_t phys)
{
	uint64_t irq = spin_lock_irqsave(&refs_lock);
	struct frame_ref *ref = find_locked(phys);
	unsigned count = ref ? ref->extra + 1 : 1;
	spin_unlock_irqrestore(&refs_lock, irq);
	return count;
}
