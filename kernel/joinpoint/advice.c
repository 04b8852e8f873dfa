/*
 * Advice lists as values.  A list is built whole into fresh memory and only
 * then published, so a reader that loaded the old pointer keeps a consistent
 * list; nothing here ever changes a list in place.  Order is by priority,
 * lower first; among equal priorities the older attachment comes first, so
 * `before` advice runs in attach order and `after` advice in the reverse.
 * Each build ends by compiling the entries into the two arrays the
 * dispatcher walks (before calls forwards, after calls already reversed), so
 * the hot path never skips a NULL or reverses anything, and by choosing the
 * fast path's code for the list's shape (jp_shape_select).  These functions
 * neither lock nor allocate: attach.c does both.
 */
#include "joinpoint/internal.h"

#include <stddef.h>

#include "panic/panic.h"

bool jp_list_has_advice(const struct jp_list *list, const struct jp_advice *advice)
{
	for (unsigned i = 0; i < jp_list_length(list); i++) {
		if (list->entries[i].advice == advice)
			return true;
	}
	return false;
}

unsigned jp_list_count_owner(const struct jp_list *list, unsigned owner)
{
	unsigned n = 0;
	for (unsigned i = 0; i < jp_list_length(list); i++)
		n += list->entries[i].owner == owner;
	return n;
}

/* Fills before[], after[], flags, generation, call and shape from out's
 * entries. */
static void compile(struct jp_list *out, uint64_t generation, const struct joinpoint *jp)
{
	out->before_count = out->after_count = out->flags = 0;
	for (unsigned i = 0; i < out->count; i++) {
		const struct jp_entry *entry = &out->entries[i];
		out->flags |= entry->flags;
		if (entry->before)
			out->before[out->before_count++] =
			    (struct jp_call){entry->before, entry->cookie, entry->since};
	}
	for (unsigned i = out->count; i-- > 0;) {
		const struct jp_entry *entry = &out->entries[i];
		if (entry->after)
			out->after[out->after_count++] =
			    (struct jp_call){entry->after, entry->cookie, entry->since};
	}
	out->generation = generation;
	out->retired_next = NULL;
	out->fast.call = jp->call;
	out->fast.index = jp_index(jp);
	out->fast.shape = jp_shape_select(out, jp);
	const struct jp_advice *alone = out->count == 1 ? out->entries[0].advice : NULL;
	bool native = alone && (alone->flags & JP_ADVICE_NATIVE);
	out->fast.word = alone && alone->fast_word ? alone->fast_word(jp) : 0;
	out->around = alone && jp->may_sleep ? alone->around : NULL;
	out->fast.cookie = alone ? out->entries[0].cookie : NULL;
	out->nested_call = native ? alone->nested_call : NULL;
}

struct jp_list *jp_list_empty(const struct joinpoint *jp)
{
	static struct jp_list empty[2]; /* without and with arguments */
	struct jp_list *list = &empty[jp->argc > 0];
	if (!list->fast.shape)
		__atomic_store_n(&list->fast.shape, jp_shape_select(list, jp), __ATOMIC_RELEASE);
	return list;
}

void jp_list_build_with(struct jp_list *out, const struct jp_list *old,
			const struct jp_entry *entry, uint64_t generation,
			const struct joinpoint *jp)
{
	unsigned length = jp_list_length(old);
	ASSERT(length < JP_MAX_ADVICE);

	unsigned n = 0, i = 0;
	while (i < length && old->entries[i].priority <= entry->priority)
		out->entries[n++] = old->entries[i++];
	out->entries[n++] = *entry;
	while (i < length)
		out->entries[n++] = old->entries[i++];
	out->count = n;
	compile(out, generation, jp);
}

void jp_list_build_without(struct jp_list *out, const struct jp_list *old, unsigned owner,
			   uint64_t generation, const struct joinpoint *jp)
{
	unsigned n = 0;
	for (unsigned i = 0; i < jp_list_length(old); i++) {
		if (old->entries[i].owner != owner)
			out->entries[n++] = old->entries[i];
	}
	out->count = n;
	compile(out, generation, jp);
}
