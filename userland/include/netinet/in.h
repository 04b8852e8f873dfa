/*
 * Internet addresses (IPv4) with Linux's layouts and numbers, and the byte
 * order helpers.  in_addr_t and in_port_t come from newlib's <sys/types.h>.
 *
 *     struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(8080)};
 *     a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
 *     connect(fd, (struct sockaddr *)&a, sizeof(a));
 */
#ifndef _NETINET_IN_H
#define _NETINET_IN_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct in_addr {
	in_addr_t s_addr; /* network byte order */
};

struct sockaddr_in {
	sa_family_t sin_family;
	in_port_t sin_port; /* network byte order */
	struct in_addr sin_addr;
	unsigned char sin_zero[8];
};

#define IPPROTO_IP   0
#define IPPROTO_ICMP 1
#define IPPROTO_TCP  6
#define IPPROTO_UDP  17
#define IPPROTO_RAW  255

#define INADDR_ANY       ((in_addr_t)0x00000000)
#define INADDR_BROADCAST ((in_addr_t)0xffffffff)
#define INADDR_NONE      ((in_addr_t)0xffffffff)
#define INADDR_LOOPBACK  ((in_addr_t)0x7f000001)

#define INET_ADDRSTRLEN 16

/* IPPROTO_IP options. */
#define IP_TOS 1
#define IP_TTL 2

static inline uint16_t htons(uint16_t value)
{
	return __builtin_bswap16(value);
}

static inline uint16_t ntohs(uint16_t value)
{
	return __builtin_bswap16(value);
}

static inline uint32_t htonl(uint32_t value)
{
	return __builtin_bswap32(value);
}

static inline uint32_t ntohl(uint32_t value)
{
	return __builtin_bswap32(value);
}

#ifdef __cplusplus
}
#endif

#endif
