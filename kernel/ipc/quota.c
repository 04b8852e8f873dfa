/*
 * What the endpoints a user made hold of the kernel's memory.  An endpoint
 * of capacity 64 is some 23 KiB of kernel memory, and a process may hold 256
 * descriptors: without a bound, one user's processes could fill every frame
 * with endpoints, and then the pages other processes were promised (their
 * commitment, proc/memory.c) and the kernel's own allocations would fail.
 * So every user but root may hold IPC_USER_BYTES_MAX bytes of endpoints at a
 * time, counted here by user id (a few users at once: -ENOMEM past that too)
 * and given back when an endpoint is freed.
 */
#include "ipc/internal.h"

#include "lib/errno.h"

#define QUOTA_USERS 16 /* users holding endpoints at once */

struct user_charge {
	uint32_t uid;
	uint64_t bytes; /* 0: a free entry */
};

static struct spinlock quota_lock = SPINLOCK_INIT("ipc.quota");
static struct user_charge charges[QUOTA_USERS];

/* uid's entry, or a free one to start it in, or NULL.  Lock held. */
static struct user_charge *charge_of_locked(uint32_t uid)
{
	struct user_charge *free_entry = NULL;
	for (unsigned i = 0; i < QUOTA_USERS; i++) {
		if (charges[i].bytes && charges[i].uid == uid)
			return &charges[i];
		if (!charges[i].bytes && !free_entry)
			free_entry = &charges[i];
	}
	if (free_entry)
		free_entry->uid = uid;
	return free_entry;
}

int ipc_quota_charge(uint32_t uid, uint64_t bytes)
{
	uint64_t irq = spin_lock_irqsave(&quota_lock);
	struct user_charge *c = charge_of_locked(uid);
	int error = !c || bytes > IPC_USER_BYTES_MAX - c->bytes ? -ENOMEM : 0;
	if (!error)
		c->bytes += bytes;
	spin_unlock_irqrestore(&quota_lock, irq);
	return error;
}

void ipc_quota_release(uint32_t uid, uint64_t bytes)
{
	uint64_t irq = spin_lock_irqsave(&quota_lock);
	for (unsigned i = 0; i < QUOTA_USERS; i++) {
		if (charges[i].bytes && charges[i].uid == uid) {
			charges[i].bytes -= bytes < charges[i].bytes ? bytes : charges[i].bytes;
			break;
		}
	}
	spin_unlock_irqrestore(&quota_lock, irq);
}
