/*
 * The registry is the .joinpoints section: JOINPOINT_DEFINE places one const
 * descriptor there per join point and nothing registers at run time.  Lookups
 * walk the section; there are a few hundred entries at most and lookups happen
 * when weaving, never on a hot path.
 */
#include "joinpoint/internal.h"

#include "lib/string.h"

const struct joinpoint *jp_find(const char *name)
{
	const struct joinpoint *first, *last;
	jp_section_bounds(&first, &last);
	for (const struct joinpoint *jp = first; name && jp < last; jp++) {
		if (!strcmp(jp->name, name))
			return jp;
	}
	return NULL;
}

int jp_for_each(int (*fn)(const struct joinpoint *jp, void *arg), void *arg)
{
	const struct joinpoint *first, *last;
	jp_section_bounds(&first, &last);
	for (const struct joinpoint *jp = first; jp < last; jp++) {
		int result = fn(jp, arg);
		if (result)
			return result;
	}
	return 0;
}

const struct joinpoint *jp_at(unsigned index)
{
	const struct joinpoint *first, *last;
	jp_section_bounds(&first, &last);
	return index < (unsigned)(last - first) ? first + index : NULL;
}

unsigned jp_count(void)
{
	const struct joinpoint *first, *last;
	jp_section_bounds(&first, &last);
	return (unsigned)(last - first);
}
