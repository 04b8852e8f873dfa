/*
 * What the kernel memory made for a user's processes holds, by user id.  An
 * endpoint of capacity 64 is some 23 KiB of kernel memory and a process may
 * hold 256 descriptors; a pipe's ring is 16 KiB and a process may hold 128
 * pipes.  Without a bound, one user's processes could fill every frame with
 * them, and then the pages other processes were promised (their commitment,
 * memory.c) and the kernel's own allocations would fail.  So every user but
 * root may hold USER_KMEM_BYTES_MAX bytes of endpoints and pipes together,
 * counted here (a few users at once: -ENOMEM past that too) and given back as
 * they are freed.  One budget for both: a user who holds its share in one
 * kind has none left for the other.
 */
#include "proc/internal.h"

#include "lib/errno.h"
#include "uapi/cred.h"

#define CHARGED_USERS 16 /* users holding kernel memory at once */

struct user_charge {
	uint32_t uid;
	uint64_t bytes; /* 0: a free entry */
};

static struct spinlock charge_lock = SPINLOCK_INIT("proc.user_memory");
static struct user_charge charges[CHARGED_USERS];

/* uid's entry, or a free one to start it in, or NULL.  Lock held. */
static struct user_charge *charge_of_locked(uint32_t uid)
{
	struct user_charge *free_entry = NULL;
	for (unsigned i = 0; i < CHARGED_USERS; i++) {
		if (charges[i].bytes && charges[i].uid == uid)
			return &charges[i];
		if (!charges[i].bytes && !free_entry)
			free_entry = &charges[i];
	}
	if (free_entry)
		free_entry->uid = uid;
	return free_entry;
}

int proc_user_memory_charge(uint32_t uid, uint64_t bytes)
{
	if (uid == ROOT_UID)
		return 0;
	uint64_t irq = spin_lock_irqsave(&charge_lock);
	struct user_charge *c = charge_of_locked(uid);
	int error = !c || bytes > USER_KMEM_BYTES_MAX - c->bytes ? -ENOMEM : 0;
	if (!error)
		c->bytes += bytes;
	spin_unlock_irqrestore(&charge_lock, irq);
	return error;
}

void proc_user_memory_release(uint32_t uid, uint64_t bytes)
{
	if (uid == ROOT_UID)
		return;
	uint64_t irq = spin_lock_irqsave(&charge_lock);
	for (unsigned i = 0; i < CHARGED_USERS; i++) {
		if (charges[i].bytes && charges[i].uid == uid) {
			charges[i].bytes -= bytes < charges[i].bytes ? bytes : charges[i].bytes;
			break;
		}
	}
	spin_unlock_irqrestore(&charge_lock, irq);
}
