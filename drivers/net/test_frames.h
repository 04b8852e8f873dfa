/* Frames for the NIC drivers' ktests (the e1000's and virtio's tests.c): an Ethernet +
 * IPv4 + TCP frame, no options, 10.0.2.1:80 -> 10.0.2.2:40000, whose payload
 * counts bytes up from 0 and whose checksum field holds a marker the stack
 * would have filled (a driver that makes the checksum replaces it). */
#ifndef DRIVERS_NET_TEST_FRAMES_H
#define DRIVERS_NET_TEST_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "lib/string.h"
#include "lib/unaligned.h"

#define TEST_TCP_HEADERS   54 /* Ethernet 14, IPv4 20, TCP 20 */
#define TEST_TCP_START     34 /* where the TCP header starts */
#define TEST_CHECKSUM_MARK 0xdead

static inline void test_tcp_frame(uint8_t *frame, size_t length)
{
	memset(frame, 0, TEST_TCP_HEADERS);
	frame[12] = 0x08; /* IPv4 */
	uint8_t *ip = frame + 14, *tcp = ip + 20;
	ip[0] = 0x45;
	write_be16(ip + 2, (uint16_t)(length - 14));
	ip[8] = 64;
	ip[9] = 6;
	write_be32(ip + 12, 0x0a000201);
	write_be32(ip + 16, 0x0a000202);
	write_be16(tcp, 80);
	write_be16(tcp + 2, 40000);
	write_be32(tcp + 4, 1000);
	tcp[12] = 5 << 4;
	tcp[13] = 0x18; /* PSH, ACK */
	write_be16(tcp + 16, TEST_CHECKSUM_MARK);
	for (size_t i = TEST_TCP_HEADERS; i < length; i++)
		frame[i] = (uint8_t)(i - TEST_TCP_HEADERS);
}

#endif
