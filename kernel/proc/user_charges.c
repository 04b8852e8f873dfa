/*
 * What each user other than root holds of the resources the kernel bounds
 * per user, by user id: one table for all of them, so that every bound
 * counts the same way and a new one is one more enum proc_user_resource.
 *
 * Kernel memory (PROC_USER_KMEM_BYTES).  An endpoint of capacity 64 is some
 * 23 KiB of kernel memory and a process may hold 256 descriptors; a pipe's
 * ring is 16 KiB and a process may hold 128 pipes.  Without a bound, one
 * user's processes could fill every frame with them, and then the pages
 * other processes were promised (their commitment, memory.c) and the
 * kernel's own allocations would fail.  So every user but root may hold
 * USER_KMEM_BYTES_MAX bytes of endpoints and pipes together (one budget for
 * both: a user who holds its share in one kind has none left for the other).
 *
 * Sockets (PROC_USER_SOCKETS): modules/net counts a user's sockets and its
 * listeners' queues here against its own bound (user_sockets.c).
 *
 * Processes (PROC_USER_PROCESSES): process.c counts each process to its
 * real uid from fork until it is reaped against USER_PROC_MAX; a setuid to
 * another real uid moves the count (cred.c).
 *
 * A user's entry is made when it first holds something and freed when it
 * holds nothing again, so any number of users may hold something at once:
 * a charge is refused for its user's bound only (or when not even the
 * entry's few bytes can be allocated).  Root has no entry and is never
 * refused.
 */
#include "proc/internal.h"

#include "lib/errno.h"
#include "mm/mm.h"
#include "uapi/cred.h"

#define USER_BUCKETS 64 /* a power of two: users hash by uid */

struct user_charges {
	struct user_charges *next; /* in its bucket */
	uint32_t uid;
	uint64_t held[PROC_USER_RESOURCES];
};

static struct spinlock charges_lock = SPINLOCK_INIT("proc.user_charges");
static struct user_charges *buckets[USER_BUCKETS];
static unsigned users_holding; /* entries in the table */

static struct user_charges **bucket_of(uint32_t uid)
{
	return &buckets[(uid * 2654435761u) >> 26 & (USER_BUCKETS - 1)];
}

/* uid's entry, or NULL.  Lock held. */
static struct user_charges *find_locked(uint32_t uid)
{
	struct user_charges *c = *bucket_of(uid);
	while (c && c->uid != uid)
		c = c->next;
	return c;
}

static bool holds_nothing(const struct user_charges *c)
{
	for (unsigned r = 0; r < PROC_USER_RESOURCES; r++)
		if (c->held[r])
			return false;
	return true;
}

/* Takes c out of the table.  Lock held; the caller frees it. */
static void unlink_locked(struct user_charges *c)
{
	struct user_charges **link = bucket_of(c->uid);
	while (*link != c)
		link = &(*link)->next;
	*link = c->next;
	users_holding--;
}

/* Adds amount to c's count of resource if it stays within limit.  Lock held. */
static bool add_within_limit_locked(struct user_charges *c, enum proc_user_resource resource,
				    uint64_t amount, uint64_t limit)
{
	if (c->held[resource] > limit || amount > limit - c->held[resource])
		return false;
	c->held[resource] += amount;
	return true;
}

/* uid's entry, with spare put in the table for it when it had none (spare
 * is then used: *spare becomes NULL).  Lock held. */
static struct user_charges *find_or_insert_locked(uint32_t uid, struct user_charges **spare)
{
	struct user_charges *c = find_locked(uid);
	if (c || !*spare)
		return c;
	c = *spare;
	*spare = NULL;
	c->uid = uid;
	c->next = *bucket_of(uid);
	*bucket_of(uid) = c;
	users_holding++;
	return c;
}

/* One attempt with the lock held: 0, -ENOSPC (over the limit) or -EAGAIN
 * (uid has no entry and spare is NULL: allocate one and try again). */
static int charge_once(uint32_t uid, enum proc_user_resource resource, uint64_t amount,
		       uint64_t limit, struct user_charges **spare)
{
	uint64_t irq = spin_lock_irqsave(&charges_lock);
	struct user_charges *c = find_or_insert_locked(uid, spare);
	int error = -EAGAIN;
	if (c) {
		error = add_within_limit_locked(c, resource, amount, limit) ? 0 : -ENOSPC;
		if (error && holds_nothing(c)) { /* just made for this charge */
			unlink_locked(c);
			*spare = c;
		}
	}
	spin_unlock_irqrestore(&charges_lock, irq);
	return error;
}

int proc_user_charge(uint32_t uid, enum proc_user_resource resource, uint64_t amount,
		     uint64_t limit)
{
	if (uid == ROOT_UID || resource >= PROC_USER_RESOURCES || !amount)
		return 0;
	struct user_charges *spare = NULL;
	int error = charge_once(uid, resource, amount, limit, &spare);
	if (error == -EAGAIN) { /* allocated outside the lock: kmalloc takes its own */
		spare = kzalloc(sizeof *spare);
		error = spare ? charge_once(uid, resource, amount, limit, &spare) : -ENOMEM;
	}
	kfree(spare); /* not needed: another charge made uid's entry meanwhile */
	return error;
}

void proc_user_release(uint32_t uid, enum proc_user_resource resource, uint64_t amount)
{
	if (uid == ROOT_UID || resource >= PROC_USER_RESOURCES)
		return;
	struct user_charges *emptied = NULL;
	uint64_t irq = spin_lock_irqsave(&charges_lock);
	struct user_charges *c = find_locked(uid);
	if (c) {
		c->held[resource] -= amount < c->held[resource] ? amount : c->held[resource];
		if (holds_nothing(c)) {
			unlink_locked(c);
			emptied = c;
		}
	}
	spin_unlock_irqrestore(&charges_lock, irq);
	kfree(emptied);
}

uint64_t proc_user_held(uint32_t uid, enum proc_user_resource resource)
{
	if (resource >= PROC_USER_RESOURCES)
		return 0;
	uint64_t irq = spin_lock_irqsave(&charges_lock);
	struct user_charges *c = find_locked(uid);
	uint64_t held = c ? c->held[resource] : 0;
	spin_unlock_irqrestore(&charges_lock, irq);
	return held;
}

unsigned proc_users_holding(void)
{
	uint64_t irq = spin_lock_irqsave(&charges_lock);
	unsigned users = users_holding;
	spin_unlock_irqrestore(&charges_lock, irq);
	return users;
}

int proc_user_memory_charge(uint32_t uid, uint64_t bytes)
{
	int error = proc_user_charge(uid, PROC_USER_KMEM_BYTES, bytes, USER_KMEM_BYTES_MAX);
	return error ? -ENOMEM : 0;
}

void proc_user_memory_release(uint32_t uid, uint64_t bytes)
{
	proc_user_release(uid, PROC_USER_KMEM_BYTES, bytes);
}
