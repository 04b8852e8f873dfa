/*
 * errno for lwIP's socket layer.  lwIP reports a failed socket call by
 * returning -1 and setting errno; the kernel has no thread-local storage, so
 * each thread's last value sits in a small table keyed by its struct thread,
 * set by set_errno (arch/cc.h) and taken (read and cleared) by the socket
 * layer right after the failed call.  A thread that never takes its value
 * just leaves a stale slot, which the next setter may reuse; a full table
 * overwrites the slot the thread hashes to, so setting never fails.
 */
#include "net/internal.h"

#include "cpu/spinlock.h"
#include "lib/errno.h"
#include "sched/sched.h"

#define ERRNO_SLOTS 128
#define ERRNO_PROBE 8

struct errno_slot {
	struct thread *thread;
	int value;
};

static struct errno_slot slots[ERRNO_SLOTS];
static struct spinlock errno_lock = SPINLOCK_INIT("net.errno");

static unsigned slot_hash(const struct thread *t)
{
	return (unsigned)(((uintptr_t)t >> 4) * 2654435761u) % ERRNO_SLOTS;
}

/* The slot of t, or a free one, or (table full) t's home slot.  Lock held. */
static struct errno_slot *slot_for(struct thread *t, bool claim)
{
	unsigned home = slot_hash(t);
	struct errno_slot *free_slot = NULL;
	for (unsigned i = 0; i < ERRNO_PROBE; i++) {
		struct errno_slot *s = &slots[(home + i) % ERRNO_SLOTS];
		if (s->thread == t)
			return s;
		if (!s->thread && !free_slot)
			free_slot = s;
	}
	if (!claim)
		return NULL;
	return free_slot ? free_slot : &slots[home];
}

void net_port_set_errno(int err)
{
	struct thread *self = thread_current();
	if (!err)
		return;
	uint64_t flags = spin_lock_irqsave(&errno_lock);
	struct errno_slot *s = slot_for(self, true);
	s->thread = self;
	s->value = err;
	spin_unlock_irqrestore(&errno_lock, flags);
}

int net_port_take_errno(void)
{
	struct thread *self = thread_current();
	int value = EIO; /* lwIP failed without saying why */
	uint64_t flags = spin_lock_irqsave(&errno_lock);
	struct errno_slot *s = slot_for(self, false);
	if (s) {
		value = s->value;
		s->thread = NULL;
	}
	spin_unlock_irqrestore(&errno_lock, flags);
	return value;
}
