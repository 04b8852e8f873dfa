/*
 * The Internet checksum that lwIP uses for every header and payload
 * (LWIP_CHKSUM in modules/net/include/arch/cc.h), and drivers that cut TCP
 * segments themselves: eight bytes a turn.
 *
 *     uint16_t sum = net_checksum(segment, length);   // not complemented
 *     header->checksum = (uint16_t)~sum;
 */
#ifndef KERNEL_LIB_CHECKSUM_H
#define KERNEL_LIB_CHECKSUM_H

#include <stdint.h>

/* Returns the folded ones' complement sum of length bytes at data, as 16-bit
 * words in network byte order (lwip_standard_chksum's value; 0 for length
 * <= 0).  Never fails. */
uint16_t net_checksum(const void *data, int length);

#endif
