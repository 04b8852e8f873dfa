/*
 * The Internet checksum (RFC 1071) for lwIP (LWIP_CHKSUM, see
 * modules/net/include/arch/cc.h) and for NIC drivers that make segments:
 * the ones' complement sum of the data as 16-bit words, folded, in network
 * byte order, exactly what lwIP's lwip_standard_chksum returns (its
 * inet_chksum complements it).  lwIP's own loops take two or four bytes a
 * turn; this one adds eight with a carry, which matters because the checksum
 * is the one pass over every byte that TCP makes in software (under QEMU's TCG
 * each guest instruction costs several host ones).  Summing little-endian
 * words gives the sum of byte-swapped 16-bit words, which is the same value
 * already in network order; 2^16 = 1 (mod 2^16 - 1), so wider words fold to
 * the same 16-bit sum.  No alignment is assumed (x86 loads any address).
 */
#include "lib/checksum.h"

#include <stddef.h>

static inline uint64_t add_carry(uint64_t sum, uint64_t word)
{
	sum += word;
	return sum + (sum < word);
}

static uint64_t load_tail(const uint8_t *bytes, size_t length)
{
	uint64_t word = 0;
	for (size_t i = 0; i < length; i++)
		word |= (uint64_t)bytes[i] << (8 * i);
	return word;
}

uint16_t net_checksum(const void *data, int length)
{
	const uint8_t *bytes = data;
	size_t left = length > 0 ? (size_t)length : 0;
	uint64_t sum = 0;
	for (; left >= 8; left -= 8, bytes += 8) {
		uint64_t word;
		__builtin_memcpy(&word, bytes, sizeof word);
		sum = add_carry(sum, word);
	}
	sum = add_carry(sum, load_tail(bytes, left));
	sum = (sum >> 32) + (sum & 0xffffffffu);
	sum = (sum >> 32) + (sum & 0xffffffffu);
	sum = (sum >> 16) + (sum & 0xffffu);
	sum = (sum >> 16) + (sum & 0xffffu);
	return (uint16_t)sum;
}
