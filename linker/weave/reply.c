/*
 * Replies that steer a join point's owner, in every binding.  An advice that
 * decides something for the code it watches (a NIC's mode) answers with
 * ms_reply; the answer is posted here under the join point and a key (the
 * join point's first argument, which names the object it acts on: the
 * struct nic), and the owner takes it after the call.  Under `direct` and a
 * synchronous `msg` the reply is here when the join point returns; under
 * `shm` and one-way `msg` the monitor posts it later (ms_scope_reply) and the
 * owner finds it at a later call.  A key is only compared, never followed,
 * so a monitor that posts nonsense can make the owner read a wrong number
 * (which the owner checks), never touch memory.
 *
 * A handful of slots, one per (join point, key), under one spinlock taken
 * with interrupts off: posts come from advice (any context) and system calls.
 */
#include "cpu/spinlock.h"
#include "lib/errno.h"
#include "linker/weave/weave.h"

#define REPLY_SLOTS 16

struct reply_slot {
	const struct joinpoint *joinpoint; /* NULL: free */
	uint64_t key;
	int64_t value;
};

static struct spinlock reply_lock = SPINLOCK_INIT("linker.reply");
static struct reply_slot reply_slots[REPLY_SLOTS];
static unsigned reply_held; /* slots in use: the owner's look-up skips the lock at 0 */
static uint64_t reply_overflows;

static struct reply_slot *reply_find(const struct joinpoint *joinpoint, uint64_t key)
{
	for (unsigned i = 0; i < REPLY_SLOTS; i++)
		if (reply_slots[i].joinpoint == joinpoint && reply_slots[i].key == key)
			return &reply_slots[i];
	return NULL;
}

int aspect_reply_post(const struct joinpoint *joinpoint, uint64_t key, int64_t value)
{
	if (!joinpoint)
		return -EINVAL;
	uint64_t flags = spin_lock_irqsave(&reply_lock);
	struct reply_slot *slot = reply_find(joinpoint, key);
	if (!slot) {
		slot = reply_find(NULL, 0);
		if (slot) {
			slot->joinpoint = joinpoint;
			slot->key = key;
			__atomic_fetch_add(&reply_held, 1, __ATOMIC_RELEASE);
		}
	}
	if (slot)
		slot->value = value; /* a newer answer replaces one not yet taken */
	else
		reply_overflows++;
	spin_unlock_irqrestore(&reply_lock, flags);
	return slot ? 0 : -ENOSPC;
}

int aspect_reply_take(const struct joinpoint *joinpoint, uint64_t key, int64_t *value)
{
	if (!joinpoint || !value || !__atomic_load_n(&reply_held, __ATOMIC_ACQUIRE))
		return 0;
	uint64_t flags = spin_lock_irqsave(&reply_lock);
	struct reply_slot *slot = reply_find(joinpoint, key);
	if (slot) {
		*value = slot->value;
		slot->joinpoint = NULL;
		slot->key = 0;
		__atomic_fetch_sub(&reply_held, 1, __ATOMIC_RELEASE);
	}
	spin_unlock_irqrestore(&reply_lock, flags);
	return slot != NULL;
}

bool aspect_reply_waiting(const struct joinpoint *joinpoint, uint64_t key)
{
	if (!joinpoint || !__atomic_load_n(&reply_held, __ATOMIC_ACQUIRE))
		return false;
	uint64_t flags = spin_lock_irqsave(&reply_lock);
	bool found = reply_find(joinpoint, key) != NULL;
	spin_unlock_irqrestore(&reply_lock, flags);
	return found;
}

/* ---- Device counters ------------------------------------------------------- */

/* The drivers above answer ms_device_counter for their devices through one
 * registered source (drivers/net for NICs); the linker cannot include them. */
static linker_device_source_fn device_source;

void linker_set_device_source(linker_device_source_fn fn)
{
	__atomic_store_n(&device_source, fn, __ATOMIC_RELEASE);
}

int linker_device_source_read(const char *device, const char *counter, uint64_t *value)
{
	linker_device_source_fn fn = __atomic_load_n(&device_source, __ATOMIC_ACQUIRE);
	return fn ? fn(device, counter, value) : -ENOENT;
}
