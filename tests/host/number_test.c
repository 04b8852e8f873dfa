// host-test-sources: kernel/lib/number.c
/* parse_decimal: digits within the bound are read; empty text, other
 * characters and anything over the bound (overflow included) are refused
 * and leave the value as it was. */
#include <stdint.h>

#include "hosttest.h"
#include "lib/errno.h"
#include "lib/number.h"

static void good_numbers_are_read(void)
{
	uint64_t v = 0;
	CHECK_EQ(parse_decimal("0", 10, &v), 0);
	CHECK_EQ(v, 0);
	CHECK_EQ(parse_decimal("65535", 65535, &v), 0);
	CHECK_EQ(v, 65535);
	CHECK_EQ(parse_decimal("18446744073709551615", UINT64_MAX, &v), 0);
	CHECK_EQ(v, UINT64_MAX);
}

static void bad_numbers_are_refused(void)
{
	uint64_t v = 7;
	const struct {
		const char *text;
		uint64_t max;
	} bad[] = {{"", UINT64_MAX},
		   {"-1", UINT64_MAX},
		   {"12a", UINT64_MAX},
		   {" 1", UINT64_MAX},
		   {"1 ", UINT64_MAX},
		   {"65536", 65535},
		   {"18446744073709551616", UINT64_MAX},
		   {"99999999999999999999999", UINT64_MAX}};
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK_EQ(parse_decimal(bad[i].text, bad[i].max, &v), -EINVAL);
	CHECK_EQ(parse_decimal(NULL, 10, &v), -EINVAL);
	CHECK_EQ(v, 7);
}

HOSTTEST_MAIN(HOSTTEST_CASE(good_numbers_are_read), HOSTTEST_CASE(bad_numbers_are_refused))
