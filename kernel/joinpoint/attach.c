/*
 * jp_attach and jp_detach: the writers.  One spinlock serialises writers;
 * readers (the dispatcher) never take it.  Each operation is check, then do:
 * every error is found while nothing has changed yet, including whether the
 * list pool can supply every new list, so the "do" phase cannot fail.  The do
 * phase builds each affected join point's new list, publishes it with a
 * release store, patches the join point's sites when it gains its first or
 * loses its last advice (NOP last, jump first, so a site never jumps to an
 * empty list for long), and chains the old list for retirement.  A join
 * point left without advice gets the shared empty list, never NULL again.
 * After the lock is dropped a grace period passes and the retired lists go
 * back to the pool.
 *
 * Attachment slots remember what each handle attached: entries carry their
 * slot, so detaching one handle removes only its entries even when the same
 * advice was attached under another handle to other join points.  A handle
 * encodes slot and slot generation, so a stale handle is refused.
 */
#include "joinpoint/internal.h"

#include <stddef.h>

#include "cpu/percpu.h"
#include "cpu/spinlock.h"
#include "lib/errno.h"
#include "panic/panic.h"

struct attachment {
	const struct jp_advice *advice; /* NULL: slot free */
	unsigned generation;            /* bumped when the slot is freed */
};

/* Taken without turning interrupts off: patching waits for every CPU to
 * answer a cross-CPU call (patch.c), which a CPU spinning here with
 * interrupts off could not.  No interrupt handler takes it. */
static struct spinlock writer_lock = SPINLOCK_INIT("joinpoint");
static struct attachment attachments[JP_MAX_ATTACHMENTS];
static uint64_t sequence; /* one per update; generations and entry ages */

#define HANDLE_GENERATIONS (0x7fffffff / JP_MAX_ATTACHMENTS)

static int handle_of(unsigned slot)
{
	unsigned generation = attachments[slot].generation % HANDLE_GENERATIONS;
	return (int)(generation * JP_MAX_ATTACHMENTS + slot + 1);
}

/* Returns the slot a live handle names, or -1. */
static int slot_of(int handle)
{
	if (handle <= 0)
		return -1;
	unsigned slot = (unsigned)(handle - 1) % JP_MAX_ATTACHMENTS;
	if (!attachments[slot].advice || handle_of(slot) != handle)
		return -1;
	return (int)slot;
}

static int free_slot(void)
{
	for (unsigned i = 0; i < JP_MAX_ATTACHMENTS; i++) {
		if (!attachments[i].advice)
			return (int)i;
	}
	return -1;
}

static struct jp_list *published(const struct joinpoint *jp)
{
	return jp->state->list;
}

_Static_assert(offsetof(struct cpu, self) == 0,
	       "a scoped site's check with a scope of 0 reads the CPU's self pointer");

/* The struct cpu word every advice on list names for jp (thread_scope), or
 * 0 when one names none or another word. */
static uint32_t list_scope(const struct jp_list *list, const struct joinpoint *jp)
{
	uint32_t scope = 0;
	for (unsigned i = 0; i < jp_list_length(list); i++) {
		const struct jp_advice *advice = list->entries[i].advice;
		uint32_t own = advice->thread_scope ? advice->thread_scope(jp) : 0;
		if (!own || (scope && own != scope))
			return 0;
		scope = own;
	}
	return scope;
}

/* Publishes list with its scope, then gives the sites the form it needs
 * when that changed: woven from nothing, or scoped from plain or back (a list
 * that became empty had its sites turned back to NOPs before). */
static void publish(const struct joinpoint *jp, struct jp_list *list)
{
	bool was_woven = jp_list_length(published(jp)) > 0;
	bool was_scoped = jp->state->scope != 0;
	uint32_t scope = list_scope(list, jp);
	__atomic_store_n(&jp->state->scope, scope, __ATOMIC_RELAXED);
	__atomic_store_n(&jp->state->list, list, __ATOMIC_RELEASE);
	if (jp_list_length(list) && (!was_woven || was_scoped != (scope != 0)))
		jp_patch_sites(jp, scope ? JP_SITE_SCOPED : JP_SITE_JUMP);
}

/* Unpublished lists wait here for a grace period (not the shared empty
 * ones, which are never freed). */
static void retire(struct jp_list **chain, struct jp_list *old)
{
	if (jp_list_length(old)) {
		old->retired_next = *chain;
		*chain = old;
	}
}

static void free_retired(struct jp_list *chain)
{
	if (!chain)
		return;
	jp_synchronize();
	spin_lock(&writer_lock);
	while (chain) {
		struct jp_list *next = chain->retired_next;
		jp_list_free(chain);
		chain = next;
	}
	spin_unlock(&writer_lock);
}

/* The check phase of attach: 0 with *matched set, or the error. */
static bool matches(const struct joinpoint *jp, const char *pattern,
		    bool (*where)(const struct joinpoint *jp))
{
	return jp_pattern_match(pattern, jp->name) && (!where || where(jp));
}

static int check_attach(const char *pattern, bool (*where)(const struct joinpoint *jp),
			const struct jp_advice *advice, unsigned *matched)
{
	const struct joinpoint *first, *last;
	jp_section_bounds(&first, &last);
	unsigned n = 0;
	int error = 0;
	for (const struct joinpoint *jp = first; jp < last; jp++) {
		if (!matches(jp, pattern, where))
			continue;
		n++;
		if (jp_list_has_advice(published(jp), advice))
			error = -EEXIST;
		else if (jp_list_length(published(jp)) >= JP_MAX_ADVICE && !error)
			error = -ENOSPC;
	}
	if (!n)
		return -ENOENT;
	if (error)
		return error;
	if (free_slot() < 0)
		return -ENOSPC;
	if (jp_list_available() < n)
		return -ENOMEM;
	*matched = n;
	return 0;
}

/* The do phase of attach: cannot fail.  Returns the old lists to retire. */
static struct jp_list *weave(const char *pattern, bool (*where)(const struct joinpoint *jp),
			     const struct jp_entry *entry)
{
	const struct joinpoint *first, *last;
	struct jp_list *retired = NULL;
	jp_section_bounds(&first, &last);
	for (const struct joinpoint *jp = first; jp < last; jp++) {
		if (!matches(jp, pattern, where))
			continue;
		struct jp_list *old = published(jp);
		struct jp_list *list = jp_list_alloc();
		ASSERT(list);
		jp_list_build_with(list, old, entry, entry->since, jp);
		publish(jp, list);
		retire(&retired, old);
	}
	return retired;
}

static bool advice_is_valid(const struct jp_advice *advice)
{
	return advice && (advice->before || advice->after);
}

int jp_attach(const char *pattern, const struct jp_advice *advice)
{
	return jp_attach_where(pattern, NULL, advice);
}

int jp_attach_where(const char *pattern, bool (*where)(const struct joinpoint *jp),
		    const struct jp_advice *advice)
{
	if (!pattern || !advice_is_valid(advice))
		return -EINVAL;
	if (!jp_may_wait())
		return -EDEADLK;

	spin_lock(&writer_lock);
	unsigned matched = 0;
	int error = check_attach(pattern, where, advice, &matched);
	if (error) {
		spin_unlock(&writer_lock);
		return error;
	}
	int slot = free_slot();
	attachments[slot].advice = advice;
	struct jp_entry entry = {
	    .before = advice->before,
	    .after = advice->after,
	    .cookie = advice->cookie,
	    .advice = advice,
	    .since = ++sequence,
	    .priority = advice->priority,
	    .flags = advice->flags,
	    .owner = (unsigned)slot,
	};
	struct jp_list *retired = weave(pattern, where, &entry);
	int handle = handle_of((unsigned)slot);
	spin_unlock(&writer_lock);

	free_retired(retired);
	return handle;
}

/* The do phase of detach, as far as the free lists go: slot's advice comes
 * off every join point where it is alone, and off those that keep other
 * advice while a new list is to be had.  Returns the old lists to retire;
 * *left counts the join points still to do. */
static struct jp_list *unweave(unsigned slot, uint64_t generation, unsigned *left)
{
	const struct joinpoint *first, *last;
	struct jp_list *retired = NULL;
	*left = 0;
	jp_section_bounds(&first, &last);
	for (const struct joinpoint *jp = first; jp < last; jp++) {
		struct jp_list *old = published(jp);
		unsigned own = jp_list_count_owner(old, slot);
		if (!own)
			continue;
		struct jp_list *list = jp_list_empty(jp);
		if (own < jp_list_length(old)) {
			list = jp_list_available() ? jp_list_alloc() : NULL;
			if (!list) {
				(*left)++;
				continue;
			}
			jp_list_build_without(list, old, slot, generation, jp);
		} else {
			jp_patch_sites(jp, JP_SITE_NOP);
		}
		publish(jp, list);
		retire(&retired, old);
	}
	return retired;
}

/* A detach never fails for want of lists: when the pool is short (every
 * join point holds one and attachments share them), it goes in rounds, each
 * retiring the lists it replaced and waiting a grace period for them to be
 * free again.  The pool holds more lists than there are join points, so
 * every round frees some.  The advice may be freed once this returns. */
int jp_detach(int handle)
{
	if (!jp_may_wait())
		return -EDEADLK;

	spin_lock(&writer_lock);
	int slot = slot_of(handle);
	if (slot < 0) {
		spin_unlock(&writer_lock);
		return -EINVAL;
	}
	uint64_t generation = ++sequence;
	unsigned left;
	struct jp_list *retired = unweave((unsigned)slot, generation, &left);
	while (left) {
		spin_unlock(&writer_lock);
		if (retired)
			free_retired(retired);
		else
			jp_synchronize(); /* the lists are another writer's, retired: soon free */
		spin_lock(&writer_lock);
		retired = unweave((unsigned)slot, generation, &left);
	}
	attachments[slot].advice = NULL;
	attachments[slot].generation++;
	spin_unlock(&writer_lock);

	free_retired(retired);
	return 0;
}
