/*
 * Join-point name patterns: '*' matches any run of characters, dots included
 * ("sched.*", "*.alloc", "*"), '?' one character, anything else itself.
 * The matcher is iterative with one backtrack point (the last '*'), so it runs
 * in O(pattern * name) time and constant space, whatever the input.
 */
#include "joinpoint/joinpoint.h"

#include <stddef.h>

bool jp_pattern_match(const char *pattern, const char *name)
{
	const char *star = NULL, *resume = NULL;

	if (!pattern || !name)
		return false;
	while (*name) {
		if (*pattern == '*') {
			star = pattern++;
			resume = name;
		} else if (*pattern == '?' || *pattern == *name) {
			pattern++;
			name++;
		} else if (star) {
			pattern = star + 1;
			name = ++resume;
		} else {
			return false;
		}
	}
	while (*pattern == '*')
		pattern++;
	return *pattern == '\0';
}
