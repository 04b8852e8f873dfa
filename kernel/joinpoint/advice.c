/*
 * Advice lists as values.  A list is built whole into fresh memory and only
 * then published, so a reader that loaded the old pointer keeps a consistent
 * list; nothing here ever changes a list in place.  Order is by priority,
 * lower first; among equal priorities the older attachment comes first, so
 * `before` advice runs in attach order and `after` advice in the reverse.
 * These functions neither lock nor allocate: attach.c does both.
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

void jp_list_build_with(struct jp_list *out, const struct jp_list *old,
			const struct jp_entry *entry, uint64_t generation)
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
	out->generation = generation;
	out->retired_next = NULL;
}

void jp_list_build_without(struct jp_list *out, const struct jp_list *old, unsigned owner,
			   uint64_t generation)
{
	unsigned n = 0;
	for (unsigned i = 0; i < jp_list_length(old); i++) {
		if (old->entries[i].owner != owner)
			out->entries[n++] = old->entries[i];
	}
	out->count = n;
	out->generation = generation;
	out->retired_next = NULL;
}
