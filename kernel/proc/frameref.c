/*
 * Owner counts of frames shared copy-on-write.  Most frames have exactly one
 * owner, so only the exceptions are stored: a hash table from frame address
 * to the number of owners beyond the first.  A frame that is not in the table
 * has one owner; dropping the last owner frees it to the frame allocator.
 *
 * Invariant (under refs_lock): every entry has extra >= 1.  Entries are
 * allocated in frame_ref_get, the only step that can fail, before anything
 * is shared, so fork can undo cleanly.
 */
#include "cpu/spinlock.h"
#include "lib/errno.h"
#include "mm/mm.h"
#include "proc/internal.h"

#define REF_BUCKETS 1024

struct frame_ref {
	struct frame_ref *next;
	uint64_t phys;
	unsigned extra; /* owners beyond the first */
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
		*spare = (struct frame_ref){*bucket_of(phys), phys, 1};
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

/* Drops one extra owner; returns the entry to free when it was the last. */
static struct frame_ref *drop_locked(uint64_t phys, bool *shared)
{
	struct frame_ref **link = bucket_of(phys);
	for (; *link; link = &(*link)->next) {
		struct frame_ref *ref = *link;
		if (ref->phys != phys)
			continue;
		*shared = true;
		if (--ref->extra > 0)
			return NULL;
		*link = ref->next;
		return ref;
	}
	*shared = false;
	return NULL;
}

void frame_ref_put(uint64_t phys)
{
	bool shared;
	uint64_t irq = spin_lock_irqsave(&refs_lock);
	struct frame_ref *unused = drop_locked(phys, &shared);
	spin_unlock_irqrestore(&refs_lock, irq);
	kfree(unused);
	if (!shared)
		pmm_free_frame(phys);
}

unsigned frame_ref_count(uint64_t phys)
{
	uint64_t irq = spin_lock_irqsave(&refs_lock);
	struct frame_ref *ref = find_locked(phys);
	unsigned count = ref ? ref->extra + 1 : 1;
	spin_unlock_irqrestore(&refs_lock, irq);
	return count;
}
