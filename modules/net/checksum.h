/*
 * The Internet checksum that lwIP uses for every header and payload
 * (LWIP_CHKSUM in arch/cc.h): eight bytes a turn.
 *
 *     uint16_t sum = net_checksum(segment, length);   // not complemented
 *     header->checksum = (uint16_t)~sum;
 */
#ifndef MODULES_NET_CHECKSUM_H
#define MODULES_NET_CHECKSUM_H

#include <stdint.h>

/* Returns the folded ones' complement sum of length bytes at data, as 16-bit
 * words in network byte order (lwip_standard_chksum's value; 0 for length
 * <= 0).  Never fails. */
uint16_t net_checksum(const void *data, int length);

#endif
