/*
 * Bounded decimal parsing (number.h): the bound is checked before each
 * multiplication, so no input overflows.
 */
#include "lib/number.h"

#include "lib/errno.h"

int parse_decimal(const char *text, uint64_t max, uint64_t *value)
{
	uint64_t n = 0;
	if (!text || !*text)
		return -EINVAL;
	for (; *text; text++) {
		uint64_t digit = (uint64_t)(*text - '0');
		if (*text < '0' || *text > '9' || n > (max - digit) / 10)
			return -EINVAL;
		n = n * 10 + digit;
	}
	*value = n;
	return 0;
}
