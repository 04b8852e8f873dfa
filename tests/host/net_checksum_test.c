// host-test-sources: kernel/lib/checksum.c
/* net_checksum gives lwIP's lwip_standard_chksum value (RFC 1071's sum of
 * big-endian 16-bit words, an odd last byte padded with zero, returned in
 * network order) for every length and every start address: the reference
 * below is RFC 1071's byte loop. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hosttest.h"
#include "lib/checksum.h"

static uint16_t reference_checksum(const uint8_t *data, int length)
{
	uint32_t sum = 0;
	for (int i = 0; i + 1 < length; i += 2)
		sum += (uint32_t)data[i] << 8 | data[i + 1];
	if (length & 1)
		sum += (uint32_t)data[length - 1] << 8;
	while (sum >> 16)
		sum = (sum >> 16) + (sum & 0xffff);
	return (uint16_t)(sum >> 8 | (sum & 0xff) << 8); /* network order in memory */
}

static void every_length_and_offset_matches_rfc1071(void)
{
	static uint8_t buffer[2100];
	srand(1071);
	for (size_t i = 0; i < sizeof buffer; i++)
		buffer[i] = (uint8_t)rand();
	for (int offset = 0; offset < 8; offset++)
		for (int length = 0; length <= 2048; length++)
			if (net_checksum(buffer + offset, length) !=
			    reference_checksum(buffer + offset, length)) {
				CHECK_EQ(net_checksum(buffer + offset, length),
					 reference_checksum(buffer + offset, length));
				return;
			}
}

static void carries_wrap_around(void)
{
	uint8_t ones[1500];
	memset(ones, 0xff, sizeof ones);
	CHECK_EQ(net_checksum(ones, sizeof ones), 0xffff);
	CHECK_EQ(net_checksum(ones, 1), reference_checksum(ones, 1));
	CHECK_EQ(net_checksum(ones, 0), 0);
	CHECK_EQ(net_checksum(ones, -4), 0);
}

/* RFC 1071's own example: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2. */
static void rfc1071_example(void)
{
	const uint8_t example[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
	uint16_t sum = net_checksum(example, sizeof example);
	CHECK_EQ(((const uint8_t *)&sum)[0], 0xdd);
	CHECK_EQ(((const uint8_t *)&sum)[1], 0xf2);
}

HOSTTEST_MAIN(HOSTTEST_CASE(every_length_and_offset_matches_rfc1071),
	      HOSTTEST_CASE(carries_wrap_around), HOSTTEST_CASE(rfc1071_example))
